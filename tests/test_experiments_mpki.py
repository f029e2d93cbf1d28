"""``faasprof mpki`` (Figs 6, 7): counting and plotting on recorded real perf outputs
(tests/data/monitoring/perf, see its README), the exit 3 explanation on a host without hardware
counters, and ``--from-runs`` on a real analysed run carrying a recorded hardware perf output."""

from __future__ import annotations

import csv
import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from faasprof import rundir
from faasprof.analyzer.analysis import analyze_run
from faasprof.experiments.mpki import counts_from_perf, plot_mpki
from faasprof.experiments.summary_phase import SummaryPhase
from faasprof.monitoring.tools import probe_perf_events

REPO = Path(__file__).resolve().parent.parent
PERF = REPO / "tests" / "data" / "monitoring" / "perf"


def _faasprof(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "faasprof", *args], capture_output=True, text=True, timeout=timeout, cwd=REPO
    )


def test_counts_on_intel_hardware_output():
    counts = counts_from_perf((PERF / "perf_stat_intel_hw_lkml.csv").read_text())
    assert counts["branch_mpki"] == pytest.approx(1000 * 12439843 / 4380820799)
    assert counts["branch_miss_rate"] == pytest.approx(12439843 / 809865653)
    assert counts["ipc"] == pytest.approx(4380820799 / 2953214077)
    assert counts["missing"] == "" and counts["min_running_pct"] == 100.0


def test_counts_on_multiplexed_user_mode_output():
    counts = counts_from_perf((PERF / "perf_stat_multiplexed.csv").read_text())
    assert counts["branch_mpki"] == pytest.approx(1000 * 1042705531 / 319218186844)  # ":u" events match
    assert counts["min_running_pct"] == 85.0  # multiplexed: perf scaled the values
    assert math.isnan(counts["branch_miss_rate"])  # no branches event in that output: NaN, not 0


def test_counts_on_software_only_host_are_missing_never_zero():
    counts = counts_from_perf((PERF / "perf_stat_system_interval.csv").read_text())
    assert math.isnan(counts["branch_mpki"]) and math.isnan(counts["instructions"])
    assert counts["missing"] == "instructions: not supported; branch-misses: not supported"
    cgroup = counts_from_perf((PERF / "perf_stat_cgroup_interval.csv").read_text())
    assert cgroup["missing"] == "instructions: not in the output; branch-misses: not in the output"


def test_plot(tmp_path):
    rows = [
        {"function": "a", "execution_ms_p50": 3.0, "branch_mpki": 2.84, "mode": "balanced", "per": "cgroup"},
        {"function": "b", "execution_ms_p50": 400.0, "branch_mpki": 0.5, "mode": "under-invoked", "per": "cgroup"},
        {"function": "c", "execution_ms_p50": 10.0, "branch_mpki": math.nan, "mode": "balanced", "per": "cgroup"},
    ]
    assert plot_mpki(rows, tmp_path / "f.png") is True
    assert (tmp_path / "f.png").stat().st_size > 10_000
    assert plot_mpki(rows[2:], tmp_path / "g.png") is False  # nothing to show, and the figure says why
    assert (tmp_path / "g.png").exists()


@pytest.mark.slow
def test_cli_bad_input_and_no_counters(tmp_path):
    result = _faasprof("mpki", "no_such_function", "--out", str(tmp_path))
    assert result.returncode == 2 and "no_such_function" in result.stderr
    supported, _, error = (
        probe_perf_events(["instructions", "branch-misses"]) if shutil.which("perf") else ([], {}, "no perf")
    )
    if not error and len(supported) == 2:
        pytest.skip("this host counts instructions and branch-misses: the exit 3 path does not apply")
    result = _faasprof("mpki", "json_dumps", "nbody", "--out", str(tmp_path))
    assert result.returncode == 3, result.stderr
    assert "would run each of json_dumps, nbody" in result.stderr and "hardware PMU" in result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith("perf: instructions, branch-misses cannot be counted")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_cli_from_runs_refuses_an_mpki_folder_saying_where_its_runs_are(tmp_path):
    folder = tmp_path / "mpki-20260101T000000"
    (folder / "runs").mkdir(parents=True)
    (folder / "manifest.json").write_text(
        json.dumps({"format_version": 1, "kind": "mpki", "functions": ["nqueens"], "settings": {}, "runs": {}})
    )
    result = _faasprof("mpki", "--from-runs", str(folder), "--out", str(tmp_path / "out"))
    assert result.returncode == 2, result.stdout
    assert result.stderr.strip() == (
        f"{folder} is a `faasprof mpki` folder, not a run directory (its manifest says kind 'mpki'); its runs are in "
        f"{folder}/runs/: pass one of those, or recompute its table with `faasprof mpki --from-runs {folder}/runs/*`"
    )


@pytest.mark.slow
def test_cli_from_runs_on_a_real_run(tmp_path):
    pytest.importorskip("faasprof.localwhisk.embedded")
    workload = tmp_path / "w.json"
    workload.write_text(
        json.dumps(
            {
                "test_name": "mpki-spin",
                "test_duration_in_seconds": 3,
                "random_seed": 1,
                "blocking_cli": True,
                "instances": {
                    "spin": {"application": "spin", "distribution": "Uniform", "rate": 3, "params": {"service_ms": 5}}
                },
            }
        )
    )
    run = _faasprof("run", str(workload), "--out", str(tmp_path / "runs"), "--analyze", timeout=240)
    assert run.returncode == 0, run.stderr[-2000:]
    run_dir = Path(run.stdout.strip().splitlines()[-1])
    # The recorded hardware output stands in for the counters this host lacks.
    (run_dir / "monitors" / "perf").mkdir(parents=True, exist_ok=True)
    shutil.copy(PERF / "perf_stat_intel_hw_lkml.csv", run_dir / "monitors" / "perf" / "perf_stat.csv")
    result = _faasprof("mpki", "--from-runs", str(run_dir), "--out", str(tmp_path / "mpki"))
    assert result.returncode == 0, result.stderr
    out = Path(result.stdout.strip().splitlines()[-1])
    assert json.loads((out / "manifest.json").read_text())["format_version"] == 2
    with open(out / "mpki.csv", newline="") as handle:
        (row,) = list(csv.DictReader(handle))
    assert (
        row["perf_start_s"] == row["perf_end_s"] == ""
    )  # no meta.json: the whole output's counts, and the row says so
    assert row["function"] == "spin" and float(row["branch_mpki"]) == pytest.approx(
        1000 * 12439843 / 4380820799, rel=1e-6
    )
    assert float(row["execution_ms_p50"]) >= 5 and float(row["rate_rps"]) == 3
    assert (out / "fig6_7_branch_mpki_vs_exec.png").stat().st_size > 10_000
    assert "spin: branch MPKI 2.840" in result.stdout


def _three_rate_run(tmp_path, perf_text: str | None = None):
    """One function at 5, 20 and 60/s in [0, 6), [6, 12), [12, 18) s (the quick start's shape),
    analysed, with ``perf_text`` as its perf output started 0.5 s after the run's zero."""
    from test_analyzer_synthetic import write_synthetic_run

    instances = {
        name: {"application": "fn", "distribution": "Uniform", "rate": rate, "activity_window": [6 * k, 6 * k + 6]}
        for k, (name, rate) in enumerate((("low", 5.0), ("mid", 20.0), ("high", 60.0)))
    }
    run_dir, _ = write_synthetic_run(tmp_path / "runs", test_name="rates", duration_s=18.0, instances=instances)
    analyze_run(run_dir, None, fetch=False, plots=False)
    if perf_text is not None:
        perf = run_dir / "monitors" / "perf"
        perf.mkdir(parents=True)
        clock = rundir.read_manifest(run_dir).clock
        (perf / "meta.json").write_text(
            json.dumps(
                {
                    "monotonic_ns_at_start": clock["monotonic_zero_ns"] + 500_000_000,
                    "layout": {"per": "system", "sep": ","},
                }
            )
        )
        (perf / "perf_stat.csv").write_text(perf_text)
    return run_dir


def _interval_lines(seconds: int, misses_per_s) -> str:
    """``perf stat -I 1000 -x,`` lines: 1e9 instructions per second, ``misses_per_s(t)`` branch misses."""
    lines = []
    for k in range(1, seconds + 1):
        t = k + 0.000838
        lines.append(f"{t:.9f},1000000000,,instructions,1000000000,100.00,1.0,insn per cycle")
        lines.append(f"{t:.9f},{misses_per_s(k)},,branch-misses,1000000000,100.00,1.0,of all branches")
    return "\n".join(lines) + "\n"


@pytest.mark.slow
def test_from_runs_gives_each_rate_its_own_window(tmp_path):
    # Branch misses per second: 1e6 in the first phase, 2e6 in the second, 4e6 in the third (run clock).
    run_dir = _three_rate_run(
        tmp_path,
        _interval_lines(18, lambda k: 1_000_000 if k + 0.5 <= 6 else 2_000_000 if k + 0.5 <= 12 else 4_000_000),
    )
    result = _faasprof("mpki", "--from-runs", str(run_dir), "--out", str(tmp_path / "mpki"))
    assert result.returncode == 0, result.stderr
    out = Path(result.stdout.strip().splitlines()[-1])
    with open(out / "mpki.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [(r["instance"], r["phase"], float(r["rate_rps"])) for r in rows] == [
        ("low", "0", 5.0),
        ("mid", "1", 20.0),
        ("high", "2", 60.0),
    ]
    assert [float(r["branch_mpki"]) for r in rows] == [1.0, 2.0, 4.0]  # not three copies of the whole run's 2.33
    assert [r["mode"] for r in rows] == ["under-invoked", "balanced", "balanced"]
    for row in rows:  # the perf intervals that counted lie inside the phase's steady window
        assert (
            float(row["window_start_s"])
            <= float(row["perf_start_s"])
            < float(row["perf_end_s"])
            <= float(row["window_end_s"]) + 0.5
        )
    assert "low phase 0 [1.2, 6) s: branch MPKI 1.000" in result.stdout


@pytest.mark.slow
def test_from_runs_without_hardware_counters_writes_the_table_and_exits_3(tmp_path):
    run_dir = _three_rate_run(tmp_path, (PERF / "perf_stat_system_interval.csv").read_text())
    result = _faasprof("mpki", "--from-runs", str(run_dir), "--out", str(tmp_path / "mpki"))
    assert result.returncode == 3, result.stderr
    assert (
        result.stderr.strip()
        .splitlines()[-1]
        .startswith(f"perf: instructions, branch-misses were not supported in {run_dir}")
    )
    out = Path(result.stdout.strip().splitlines()[-1])
    with open(out / "mpki.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 3 and all(r["branch_mpki"] == "" and r["no_counters"] == "True" for r in rows)


@pytest.mark.slow
def test_from_runs_of_a_run_without_perf_says_so_in_one_line_and_exits_2(tmp_path):
    """It printed a table of '-' and exited 1 with nothing on stderr (tried on two quick-start runs)."""
    run_dir = _three_rate_run(tmp_path)
    result = _faasprof("mpki", "--from-runs", str(run_dir), "--out", str(tmp_path / "mpki"))
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip() == (
        f"--from-runs: {run_dir}: no perf output (the run had no perf monitor); run the workload with "
        '"monitoring": {"perf": true} on a host with hardware counters'
    )
    assert len(result.stdout.strip().splitlines()) == 4  # a row per phase, then the folder


def test_a_summary_phase_is_read_typed_with_none_for_what_the_summary_lacks():
    phase = SummaryPhase.of({"phase": 1, "steady_start_s": 2, "phase_end_s": 9.5, "mode": "balanced", "other": 3})
    assert (phase.phase, phase.steady_start_s, phase.phase_end_s, phase.mode) == (1, 2.0, 9.5, "balanced")
    assert phase.with_record is None and phase.execution_ms_p50 is None
