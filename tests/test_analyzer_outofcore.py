"""``faasprof analyze`` out of core (``FAASPROF_ENGINE_ROWS``; ``faasprof.analyzer.outofcore``,
``ooc_groups``) against the in-memory analyzer on synthetic runs: ``summary.json``,
``phase_stats.parquet`` and ``function_stats.parquet`` equal, percentiles and counts exactly,
means, sums and slopes to 1e-9 relative."""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
import sys

import doc_commands
import numpy as np
import pandas as pd
import pytest
from test_analyzer_synthetic import write_synthetic_run

from faasprof.analyzer import analysis, engine, ooc_groups, ooc_plots, outofcore
from faasprof.analyzer import plots as plots_mod
from faasprof.errors import ConfigError

REL = 1e-9
SLOPE_ABS = 1e-12  # ms/s: a trend's slope also passes within this (below: no trend at all)
# Order statistics (percentiles, their interval ends, maxima, medians): the same values exactly.
EXACT = re.compile(r"(_p\d+(_\d+)?(_ci_(low|high))?|_max|median_ms|_p50_ms|_p99_ms|_p99_9_ms)$")
TWO = {
    "i0": {"application": "fn0", "distribution": "Uniform", "rate": 20.0, "activity_window": [0, 12]},
    "i1": {
        "application": "fn1",
        "distribution": "Poisson",
        "rate": 30.0,
        "activity_window": [4, 12],
        "blocking": False,
    },
}


def _close(a, b, where: str) -> None:
    """Equal, NaN to NaN, floats to ``REL`` (exact where the float is an order statistic)."""
    if isinstance(a, dict) and isinstance(b, dict):
        assert list(a) == list(b), f"{where}: keys differ: {sorted(set(a) ^ set(b))}"
        for key in a:
            _close(a[key], b[key], f"{where}.{key}")
    elif isinstance(a, list) and isinstance(b, list):
        assert len(a) == len(b), f"{where}: {len(a)} items against {len(b)}"
        for k, (x, y) in enumerate(zip(a, b)):
            _close(x, y, f"{where}[{k}]")
    elif isinstance(a, float) or isinstance(b, float):
        if a is None or b is None:
            assert a is b, f"{where}: {a!r} != {b!r}"
        elif math.isnan(a) or math.isnan(b):
            assert math.isnan(a) and math.isnan(b), f"{where}: {a!r} != {b!r}"
        else:
            leaf = where.rsplit(".", 1)[-1]
            tolerance = 0.0 if EXACT.search(leaf) else REL * max(abs(a), abs(b))
            if leaf.endswith("slope_ms_per_s"):
                # A least-squares slope near zero is a difference of nearly equal sums: its relative
                # error grows as it shrinks (ten million rows: -4.64e-9 ms/s, 4e-9 apart).
                tolerance = max(tolerance, SLOPE_ABS)
            if where.startswith("summary") and not EXACT.search(leaf) and a != 0:
                # summary.json rounds to 6 significant digits (stats.clean): two values 1e-9 apart
                # across a rounding boundary (a sum of 0.025 GB-s each, 6250.025) differ by a unit there.
                tolerance = max(tolerance, 10 ** (math.floor(math.log10(abs(a))) - 5) * 1.000001)
            assert abs(a - b) <= tolerance, f"{where}: {a!r} != {b!r}"
    else:
        assert a == b, f"{where}: {a!r} != {b!r}"


def _records(path) -> list[dict]:
    frame = pd.read_parquet(path)
    return frame.drop(columns=["run"], errors="ignore").astype(object).to_dict("records")


def _analyze_both(run_dir, monkeypatch) -> tuple[dict, dict, dict]:
    """The analysis in memory, then out of core: (summary, phase_stats, function_stats) of each."""
    out: dict = {}
    for name, rows in (("memory", "1000000000"), ("engine", "0")):
        monkeypatch.setenv(outofcore.ROWS_ENV, rows)
        summary = analysis.analyze_run(run_dir, fetch=False, plots=name == "engine")
        assert summary["records"]["source"]
        out[name] = (
            json.loads((run_dir / "analysis" / "summary.json").read_text()),
            _records(run_dir / "analysis" / "phase_stats.parquet"),
            _records(run_dir / "analysis" / "function_stats.parquet"),
        )
    return out["memory"], out["engine"], out


def _same_analysis(run_dir, monkeypatch) -> dict:
    memory, engine_side, _ = _analyze_both(run_dir, monkeypatch)
    for k, what in enumerate(("summary", "phase_stats", "function_stats")):
        left, right = memory[k], engine_side[k]
        if what == "summary":
            left = {key: value for key, value in left.items() if key != "outputs"}
            right = {key: value for key, value in right.items() if key != "outputs"}
        _close(left, right, what)
    return engine_side[0]


def test_two_instances_blocking_and_not_with_failures_and_missing_records(tmp_path, monkeypatch):
    failures = {7: "application_error", 30: "developer_error", 31: "no_record", 90: "action_timeout"}
    run_dir, _ = write_synthetic_run(tmp_path, duration_s=12.0, instances=TWO, failures=failures, missing_every=17)
    summary = _same_analysis(run_dir, monkeypatch)
    assert summary["failures"]["total"] >= 3
    assert len(summary["instances"][0]["phases"]) >= 2  # several phases: i1 joins at 4 s
    assert any(row["latency"] == "wait + duration" for row in summary["tail_ratios"]["rows"])
    assert (run_dir / "analysis" / "plots" / "cdf.png").exists()


def test_an_interrupted_run_with_a_warmup(tmp_path, monkeypatch):
    run_dir, _ = write_synthetic_run(tmp_path, duration_s=10.0, instances=TWO, interrupt_at_s=7.0)
    manifest = json.loads((run_dir / "manifest.json").read_text())
    manifest["workload"]["as_given"] = {"self_check": {"warmup_s": 2.5}}
    (run_dir / "manifest.json").write_text(json.dumps(manifest))
    summary = _same_analysis(run_dir, monkeypatch)
    assert summary["run"]["not_sent_interrupted"] > 0
    assert summary["run"]["warmup"]["invocations"] > 0


def test_a_run_without_records(tmp_path, monkeypatch):
    run_dir, _ = write_synthetic_run(tmp_path, duration_s=6.0, save_records=False)
    _same_analysis(run_dir, monkeypatch)


def test_a_broken_figure_is_caught(tmp_path, monkeypatch):
    """The comparison fails when one figure of the out-of-core path is off (here the breakdown's
    wait median), so the equality above is not vacuous."""
    run_dir, _ = write_synthetic_run(tmp_path, duration_s=6.0)
    original = ooc_groups.GroupFigures.block

    def off(self, key, start_s, end_s, ended):
        out = original(self, key, start_s, end_s, ended)
        out["wait_ms_p50"] = out["wait_ms_p50"] * (1 + 1e-6)
        return out

    monkeypatch.setattr(ooc_groups.GroupFigures, "block", off)
    with pytest.raises(AssertionError, match="wait_ms_p50"):
        _same_analysis(run_dir, monkeypatch)


@pytest.mark.slow
def test_the_shown_command_analyses_out_of_core_and_the_report_names_the_engine(tmp_path):
    run_dir, _ = write_synthetic_run(tmp_path, duration_s=4.0)
    done = doc_commands.sh_shown(
        "FAASPROF_ENGINE_ROWS=0 faasprof analyze runs/big-20261128T100000",
        cwd=tmp_path,
        substitute={"runs/big-20261128T100000": str(run_dir)},
    )
    assert done.returncode == 0, done.stderr
    assert "out of core: DuckDB" in (run_dir / "analysis" / "report.html").read_text()
    assert (run_dir / "analysis" / "plots" / "cdf.png").exists()


def test_rows_threshold_setting():
    assert outofcore.rows_threshold({}) == outofcore.DEFAULT_ENGINE_ROWS
    assert outofcore.rows_threshold({outofcore.ROWS_ENV: "0"}) == 0
    with pytest.raises(ConfigError, match="FAASPROF_ENGINE_ROWS='many'"):
        outofcore.rows_threshold({outofcore.ROWS_ENV: "many"})


def test_cli_refuses_a_bad_threshold_in_one_line(tmp_path):
    run_dir, _ = write_synthetic_run(tmp_path, duration_s=2.0)
    faasprof = shutil.which("faasprof", path=str(__import__("pathlib").Path(sys.executable).parent))
    done = subprocess.run(
        [faasprof or "faasprof", "analyze", str(run_dir), "--no-plots"],
        capture_output=True,
        text=True,
        env={**__import__("os").environ, outofcore.ROWS_ENV: "many"},
        timeout=120,
    )
    assert done.returncode != 0
    assert "FAASPROF_ENGINE_ROWS='many'" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_plots_data_out_of_core_is_the_frames(tmp_path, monkeypatch):
    """CDF curves and throughput counts equal to the in-memory plots' to the bit; the scatter has
    the same classes, counts, functions and tail points, and about as many points."""
    failures = {5: "application_error", 40: "developer_error"}
    run_dir, _ = write_synthetic_run(tmp_path, duration_s=12.0, instances=TWO, failures=failures, seed=5)
    monkeypatch.setenv(outofcore.ROWS_ENV, "0")
    analysis.analyze_run(run_dir, fetch=False, plots=True)
    for name in ("latency_over_time", "breakdown", "cdf", "throughput"):
        assert (run_dir / "analysis" / "plots" / f"{name}.png").stat().st_size > 1000
    run = analysis.load_run(run_dir)
    connection = engine.connect()
    try:
        got = ooc_plots.plot_inputs(
            connection,
            outofcore.source(run_dir / "analysis" / "invocations.parquet"),
            run.specs,
            run.phase_stats.to_dict("records"),
        )
    finally:
        connection.close()
    expected = plots_mod.cdf_curves(run)
    assert [(c.instance, c.phase, c.mode, c.n) for c in got.cdf] == [
        (c.instance, c.phase, c.mode, c.n) for c in expected
    ]
    for mine, theirs in zip(got.cdf, expected):
        assert np.array_equal(mine.x_ms, theirs.x_ms) and np.array_equal(mine.y, theirs.y)
        assert mine.marks == theirs.marks
    counts = plots_mod.throughput_counts(run)
    assert np.array_equal(got.throughput.edges_s, counts.edges_s)
    for field in ("offered", "achieved", "failed"):
        assert np.array_equal(getattr(got.throughput, field), getattr(counts, field)), field
    points = plots_mod.latency_points(run)
    assert [(c.name, c.count) for c in got.latency.classes] == [(c.name, c.count) for c in points.classes]
    assert got.latency.functions == points.functions and got.latency.failed_count == points.failed_count
    for mine, theirs in zip(got.latency.classes, points.classes):
        for a, b in zip(mine.groups, theirs.groups):
            assert a.function == b.function
            assert set(b.latency_ms[b.latency_ms >= np.percentile(b.latency_ms, 99)]) <= set(a.latency_ms)
            assert len(a.latency_ms) == len(b.latency_ms)  # under MAX_POINTS: every point


def test_the_scatter_subsample_keeps_the_tail_and_about_max_points(tmp_path, monkeypatch):
    run_dir, _ = write_synthetic_run(tmp_path, duration_s=30.0, seed=6)  # 300 invocations
    monkeypatch.setattr(plots_mod, "MAX_POINTS", 40)
    run = analysis.load_run(run_dir)
    path = tmp_path / "frame.parquet"
    run.invocations.to_parquet(path)
    connection = engine.connect()
    try:
        got = ooc_plots.plot_inputs(connection, outofcore.source(path), run.specs, [])
    finally:
        connection.close()
    latency = run.invocations["completion_latency_ms"][run.invocations["successful"]].to_numpy()
    drawn = got.overview_latency_ms
    assert set(latency[latency >= np.percentile(latency, 99)]) <= set(drawn)
    assert 30 <= len(drawn) <= 40 + 10  # every 8th row of 300, and the top 1 %
