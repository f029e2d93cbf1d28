"""Figure 14 (interference): the rate at 80 % of capacity, the panels on recorded real perf outputs
(missing counters stated, never drawn as zero), and the command end to end on localwhisk."""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from faasprof.analyzer.analysis import analyze_run
from faasprof.analyzer.run_stats import ONE_RUN_NOTE
from faasprof.commands import interference as interference_command
from faasprof.errors import ConfigError, FormatError
from faasprof.experiments.interference import (
    REPORT_BEGIN,
    add_to_report,
    capacity_from_file,
    panel_series,
    plot_fig14,
    resolve_rate,
    window_effect,
)
from faasprof.experiments.interference_repeats import compare_windows, comparison_lines, run_latency, write_result
from faasprof.monitoring.derived import add_perf_metrics
from faasprof.monitoring.parsers.perf import parse_perf_stat, perf_wide

REPO = Path(__file__).resolve().parent.parent
PERF = REPO / "tests" / "data" / "monitoring" / "perf"
WORKLOAD = REPO / "faasprof" / "workload_configs" / "fig14_interference.json"


def _perf(name: str) -> pd.DataFrame:
    wide = add_perf_metrics(perf_wide(parse_perf_stat((PERF / name).read_text())))
    wide.insert(0, "t_s", wide["time_s"])
    return wide


def test_rate_is_fraction_of_capacity_and_stored_rate_is_said():
    data = json.loads(WORKLOAD.read_text())
    resolved, rate = resolve_rate(data, "json_dumps", 20.0, 0.8, "--capacity-rps")
    assert resolved["instances"]["json_dumps"]["rate"] == 16.0
    assert data["instances"]["json_dumps"]["rate"] != 16.0  # the input is left as it was
    assert rate == {
        "victim": "json_dumps",
        "rate_rps": 16.0,
        "capacity_rps": 20.0,
        "fraction": 0.8,
        "source": "--capacity-rps",
    }
    same, stored = resolve_rate(data, "json_dumps", None, 0.8, "")
    assert same["instances"]["json_dumps"]["rate"] == data["instances"]["json_dumps"]["rate"]
    assert stored["capacity_rps"] is None and "stored absolute rate" in stored["source"]
    with pytest.raises(ConfigError, match="no instance 'nope'"):
        resolve_rate(data, "nope", 20.0, 0.8, "")
    with pytest.raises(ConfigError, match="--fraction"):
        resolve_rate(data, "json_dumps", 20.0, 1.5, "")


def test_capacity_file(tmp_path):
    good = tmp_path / "capacity.json"
    good.write_text(json.dumps({"format_version": 1, "capacity_rps": 12.5}))
    assert capacity_from_file(good) == 12.5
    none = tmp_path / "none.json"
    none.write_text(
        json.dumps(
            {"format_version": 1, "capacity_rps": None, "stopped_because": "over-invoked already at the start rate"}
        )
    )
    with pytest.raises(ConfigError, match="over-invoked already"):
        capacity_from_file(none)
    future = tmp_path / "future.json"
    future.write_text(json.dumps({"format_version": 99, "capacity_rps": 3}))
    with pytest.raises(FormatError, match="format_version"):
        capacity_from_file(future)
    with pytest.raises(ConfigError, match="no such capacity result"):
        capacity_from_file(tmp_path / "absent.json")


def test_software_only_host_states_missing_counters():
    """The development VM (no PMU): IPC and LLC MPKI missing with perf's reason; faults, context
    switches (per second) and task-clock shown."""
    perf = _perf("perf_stat_system_interval.csv")
    dropped = {
        "cycles": "not supported here",
        "instructions": "not supported here",
        "LLC-load-misses": "not supported here",
    }
    panels = {p["panel"]: p for p in panel_series(perf, dropped)}
    assert panels["IPC"]["missing"] == "cycles: not supported here; instructions: not supported here"
    assert "LLC-load-misses: not supported here" in panels["LLC MPKI"]["missing"]
    assert panels["page faults"]["column"] == "page_faults_per_s" and panels["page faults"]["missing"] is None
    assert panels["page faults"]["values"][0] == pytest.approx(2280 / 0.100159811)
    assert panels["context switches"]["column"] == "context_switches_per_s"
    assert panels["CPU"]["values"][0] == pytest.approx(200.77 / 100.159811)


def test_hardware_host_uses_per_kilo_instruction():
    perf = _perf("perf_stat_intel_hw_lkml.csv")
    panels = {p["panel"]: p for p in panel_series(perf, {})}
    assert panels["IPC"]["values"][0] == pytest.approx(4380820799 / 2953214077)
    assert panels["page faults"]["column"] == "page_faults_pki"
    assert panels["page faults"]["values"][0] == pytest.approx(1000 * 13244 / 4380820799)
    assert panels["LLC MPKI"]["missing"] == "LLC-load-misses: not counted"  # not requested in that recording


def test_plot_marks_missing_panels(tmp_path):
    perf = _perf("perf_stat_system_interval.csv")
    t = np.linspace(0, 0.35, 30)
    invocations = pd.DataFrame(
        {
            "instance": ["json_dumps"] * 30,
            "outcome": ["ok"] * 30,
            "status": ["success"] * 29 + ["application error"],
            "intended_s": t,
            "completion_latency_ms": np.full(30, 40.0),
        }
    )
    panels = plot_fig14(
        invocations, "json_dumps", perf, {"cycles": "not supported here"}, (0.1, 0.2), tmp_path / "f.png", "test"
    )
    assert (tmp_path / "f.png").stat().st_size > 10_000
    assert [p["panel"] for p in panels] == ["IPC", "LLC MPKI", "page faults", "context switches", "CPU"]
    assert panels[0]["missing"] and panels[2]["missing"] is None


def test_the_figure_goes_into_the_report_once(tmp_path):
    figure = tmp_path / "fig14_interference.png"
    figure.write_bytes(b"\x89PNG fake")
    report = tmp_path / "report.html"
    report.write_text("<html><body><h1>run</h1><h2>Plots</h2><img alt='plots/cdf.png'></body></html>")
    assert add_to_report(report, figure, "IPC cannot be shown & why")
    assert add_to_report(report, figure, "again")  # --report a second time: replaced, not repeated
    text = report.read_text()
    assert text.count(REPORT_BEGIN) == 1 and "again" in text and "IPC cannot" not in text
    assert text.index("alt='fig14_interference.png'") < text.index("<h2>Plots</h2>") < text.index("cdf.png")
    assert not add_to_report(tmp_path / "none.html", figure, "")


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("perf") is None, reason="needs perf for the workload's monitoring block")
def test_cli_interference_short_run(tmp_path):
    pytest.importorskip("faasprof.localwhisk.embedded")
    data = json.loads(WORKLOAD.read_text())
    data["test_duration_in_seconds"] = 6
    data["instances"]["deltablue"]["activity_window"] = [2, 4]
    workload = tmp_path / "short.json"
    workload.write_text(json.dumps(data))
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "faasprof",
            "interference",
            str(workload),
            "--capacity-rps",
            "5",
            "--out",
            str(tmp_path / "runs"),
            "--repeats",
            "2",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    # --repeats 2: two runs, each with its figure, and the slowdown over them (run_stats, each run one sample).
    folder = Path(result.stdout.strip().splitlines()[-1])
    compared = json.loads((folder / "interference_repeats.json").read_text())
    assert compared["format_version"] == 1 and len(compared["runs"]) == 2
    during = compared["comparisons"][0]
    assert during["window"] == "during" and during["n_runs"] == 2 and during["note"] is None
    assert len(during["figures"][0]["values"]) == 2 and during["figures"][0]["verdict"] in (
        "slower",
        "faster",
        "no significant difference",
    )
    assert "json_dumps with the aggressor, over 2 runs" in result.stdout
    run_dir = folder / compared["runs"][0]
    stored = json.loads((run_dir / "analysis" / "interference.json").read_text())
    assert stored["format_version"] == 2 and stored["rate"]["rate_rps"] == 4.0
    assert stored["aggressor_window_s"] == [2, 4]
    panels = {p["panel"]: p for p in stored["panels"]}
    assert panels["page faults"]["missing"] is None or "page-faults" in panels["page faults"]["missing"]
    assert (run_dir / "analysis" / "plots" / "fig14_interference.png").stat().st_size > 10_000
    assert "alt='fig14_interference.png'" in (run_dir / "analysis" / "report.html").read_text()
    assert "json_dumps: 4.0/s (--capacity-rps)" in result.stderr


def test_before_during_and_after_the_aggressor_stay_apart():
    """The victim takes 10 ms before the aggressor, 40 ms while it runs and 20 ms after it (still
    recovering): three windows, three figures; a median "outside" would pool 10 and 20 ms."""
    t = np.arange(0.0, 12.0, 0.1)
    latency = np.where(t < 4, 10.0, np.where(t < 6, 40.0, 20.0))
    invocations = pd.DataFrame(
        {"instance": "json_dumps", "final_outcome": "success", "intended_s": t, "completion_latency_ms": latency}
    )
    panel = {
        "panel": "CPU",
        "column": "cpu_utilization",
        "missing": None,
        "t_s": np.arange(0.5, 12.0, 1.0),
        "values": np.where(np.arange(0.5, 12.0, 1.0) < 4, 1.0, np.where(np.arange(0.5, 12.0, 1.0) < 6, 2.0, 1.5)),
    }
    effect = window_effect(
        invocations, "json_dumps", (4.0, 6.0), [panel, {"panel": "IPC", "column": "ipc", "missing": "no PMU"}]
    )
    assert [effect[w]["n"] for w in ("before", "during", "after")] == [40, 20, 60]
    assert [effect[w]["completion_latency_ms_p50"] for w in ("before", "during", "after")] == [10.0, 40.0, 20.0]
    assert effect["during_over_before"] == 4.0 and effect["after_over_before"] == 2.0
    assert effect["counters"] == {"cpu_utilization": {"before": 1.0, "during": 2.0, "after": 1.5}}
    assert effect["windows_s"] == {"before": [None, 4.0], "during": [4.0, 6.0], "after": [6.0, None]}


@pytest.mark.slow
def test_report_of_a_finished_run_prints_each_window(tmp_path):
    from test_analyzer_synthetic import write_synthetic_run

    instances = {
        "json_dumps": {"application": "json_dumps", "distribution": "Uniform", "rate": 20.0},
        "deltablue": {"application": "deltablue", "distribution": "Uniform", "rate": 5.0, "activity_window": [3, 5]},
    }
    run_dir, _ = write_synthetic_run(tmp_path, test_name="fig14", duration_s=8.0, instances=instances)
    analyze_run(run_dir, None, fetch=False, plots=False)
    result = subprocess.run(
        [sys.executable, "-m", "faasprof", "interference", "--report", str(run_dir)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    line = next(x for x in result.stdout.splitlines() if x.startswith("json_dumps median completion latency"))
    assert (
        "before the aggressor (n 60" in line
        and "during the aggressor (n 40, ×" in line
        and "after the aggressor (n 60, ×" in line
    )
    # One run: its figures and their ratio, and no verdict (the run-to-run variation is unknown).
    assert f"during the aggressor against before it; {ONE_RUN_NOTE}" in result.stdout
    assert "no verdict" in result.stdout and not any(w in result.stdout for w in (" slower", " faster"))
    stored = json.loads((run_dir / "analysis" / "interference.json").read_text())
    assert stored["format_version"] == 2 and stored["aggressor_window_s"] == [3, 5]
    assert "median_latency_ms_outside" not in stored["latency"] and stored["latency"]["counters"] == {}


def _latency(before: float, during: float, after: float, ipc: tuple[float, float, float] | None = None) -> dict:
    block = {
        name: {"n": 40, "completion_latency_ms_p50": p50, "completion_latency_ms_p99": 2 * p50}
        for name, p50 in (("before", before), ("during", during), ("after", after))
    }
    block["counters"] = {"ipc": dict(zip(("before", "during", "after"), ipc))} if ipc else {}
    return block


def test_repeated_runs_state_the_slowdown_with_an_interval_over_runs_and_one_run_gives_no_verdict():
    """Each run's window figure is one sample (run_stats, as compare): five runs whose victim is ×2
    slower during the aggressor are called slower with the interval over runs; the window after it,
    back within a few %, is no significant difference; one run gives its figures and no verdict."""
    runs = [
        _latency(10.0 * k, 20.0 * k * j, 10.3 * k, (1.0, 0.7 * j, 1.0))
        for k, j in ((1.0, 1.0), (1.1, 0.97), (0.9, 1.02), (1.05, 1.0), (0.95, 0.99))
    ]
    during, after = compare_windows(runs)
    assert during.window == "during" and during.n_runs == 5 and during.note is None
    p50, p99, ipc = during.figures
    assert p50["name"] == "completion p50" and p50["verdict"] == "slower" and p50["significant"]
    assert 1.9 < p50["effect"] < 2.1 and p50["effect_ci"][0] > 1.05 and len(p50["values"]) == 5
    assert ipc["figure"] == "ipc" and ipc["verdict"] == "lower" and ipc["effect"] < 0.75
    assert after.figures[0]["verdict"] == "no significant difference"
    lines = comparison_lines("json_dumps", [during, after], 0.05)
    assert "over 5 runs" in lines[0] and any("completion p50" in x and "slower" in x for x in lines)
    (one,) = compare_windows(runs[:1])[:1]
    assert one.note == ONE_RUN_NOTE and {f["verdict"] for f in one.figures} == {"no verdict"}
    assert one.figures[0]["effect"] == pytest.approx(2.0) and one.figures[0]["effect_ci"] is None
    assert not any(word in " ".join(comparison_lines("json_dumps", [one], 0.05)) for word in (" slower", " faster"))


def test_the_repeats_comparison_reads_each_runs_result_and_refuses_an_unknown_version(tmp_path):
    run = tmp_path / "run"
    (run / "analysis").mkdir(parents=True)
    (run / "analysis" / "interference.json").write_text(json.dumps({"format_version": 2, "latency": _latency(1, 2, 1)}))
    assert run_latency(run)["during"]["completion_latency_ms_p50"] == 2
    (run / "analysis" / "interference.json").write_text(json.dumps({"format_version": 9, "latency": {}}))
    with pytest.raises(FormatError, match="format_version 9 is not 2"):
        run_latency(run)
    path = write_result(tmp_path, [run], compare_windows([_latency(1, 2, 1)] * 2), 0.05)
    stored = json.loads(path.read_text())
    assert stored["format_version"] == 1 and stored["runs"] == ["run"] and len(stored["comparisons"]) == 2


def test_interference_refuses_repeats_below_one_and_a_bad_min_effect_before_anything(tmp_path):
    """In process (a CLI subprocess costs the import, 16-40 s on the loaded host): the command's
    checks come first, also for --report, and say the flag and the fix in one line."""
    parser = argparse.ArgumentParser()
    interference_command.add_arguments(parser)
    args = parser.parse_args(["--repeats", "0", "--out", str(tmp_path)])
    with pytest.raises(ConfigError, match=r"^--repeats 0: give at least 1"):
        interference_command.main(args)
    args = parser.parse_args(["--min-effect", "5", "--report", str(tmp_path)])
    with pytest.raises(ConfigError, match=r"^--min-effect 5: give a share in \[0, 1\)"):
        interference_command.main(args)
    assert list(tmp_path.iterdir()) == []
