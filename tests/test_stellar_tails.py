"""Tail-to-median ratios (faasprof/analyzer/tails.py) in summary.json, report.html and compare."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from faasprof import rundir
from faasprof.analyzer import tails
from faasprof.analyzer.analysis import analyze_run
from faasprof.analyzer.compare import compare_runs
from tests.test_analyzer_synthetic import write_synthetic_run


def test_ratio_block_known_values():
    values = np.arange(1, 1001, dtype="float64")  # p50 500.5, p99 990.01, p99.9 999.001
    block = tails.ratio_block(values)
    assert block["n"] == 1000
    assert block["p50_ms"] == pytest.approx(500.5)
    assert block["p99_over_p50"] == pytest.approx(990.01 / 500.5)
    assert block["p99_9_over_p50"] == pytest.approx(999.001 / 500.5)


def test_ratio_block_too_few_samples_has_no_ratio():
    block = tails.ratio_block(np.array([1.0, 2.0, 3.0]))
    assert block["n"] == 3 and block["p50_ms"] == pytest.approx(2.0)
    assert block["p99_over_p50"] is None and block["p99_9_over_p50"] is None


def test_warm_and_cold_tails_are_separated():
    # 100 warm at 10 ms with one 30 ms straggler, 20 cold at 200..219 ms: the mixed tail is the cold one.
    warm = [10.0] * 99 + [30.0]
    cold = [200.0 + k for k in range(20)]
    frame = pd.DataFrame(
        {
            "instance": ["i0"] * 120,
            "function": ["fn"] * 120,
            "outcome": ["ok"] * 120,
            "phase": [0] * 120,
            "start_class": ["warm"] * 100 + ["cold"] * 20,
            "client_latency_ms": warm + cold,
            "platform_latency_ms": [np.nan] * 120,
        }
    )
    rows = {
        (r["phase"], r["start_class"]): r
        for r in tails.tail_ratios(
            frame, rundir.new_manifest("t", {"instances": {"i0": {"blocking": True}}}, rundir.ClockAnchor(0, 0))
        )["rows"]
    }
    assert rows[(0, "warm")]["p99_over_p50"] == pytest.approx(np.quantile(warm, 0.99) / 10.0)
    assert rows[(0, "cold")]["p50_ms"] == pytest.approx(209.5)
    assert rows[(0, "all")]["p99_over_p50"] > 15  # mixed: the cold starts are the tail
    assert (0, "resumed") not in rows
    assert not any(phase == "all" for phase, _ in rows)  # phases never pooled


def test_two_instances_of_a_function_and_two_phases_are_never_pooled():
    """One function, a fast blocking instance and a slow non-blocking one, over two phases whose
    latencies differ: each instance × phase has its own row, with its own latency kind."""
    n = 40
    frame = pd.DataFrame(
        {
            "instance": ["fast"] * (2 * n) + ["slow"] * (2 * n),
            "function": ["fn"] * (4 * n),
            "outcome": ["ok"] * (4 * n),
            "phase": ([0] * n + [1] * n) * 2,
            "start_class": ["warm"] * (4 * n),
            "client_latency_ms": [10.0 + k % 10 for k in range(n)]
            + [20.0 + k % 10 for k in range(n)]
            + [1.0] * (2 * n),
            "platform_latency_ms": [np.nan] * (2 * n) + [500.0 + k % 10 for k in range(2 * n)],
        }
    )
    manifest = rundir.new_manifest(
        "t", {"instances": {"fast": {"blocking": True}, "slow": {"blocking": False}}}, rundir.ClockAnchor(0, 0)
    )
    rows = {(r["instance"], r["phase"], r["start_class"]): r for r in tails.tail_ratios(frame, manifest)["rows"]}
    assert set(rows) == {(i, p, c) for i in ("fast", "slow") for p in (0, 1) for c in ("warm", "all")}
    assert rows[("fast", 0, "warm")]["n"] == n and rows[("fast", 0, "warm")]["p50_ms"] == pytest.approx(14.5)
    assert rows[("fast", 1, "warm")]["p50_ms"] == pytest.approx(24.5)
    assert rows[("slow", 0, "warm")]["p50_ms"] == pytest.approx(504.5)
    assert rows[("fast", 0, "all")]["latency"] == "client (send → answer)"
    assert rows[("slow", 1, "all")]["latency"] == "wait + duration"
    assert all(r["function"] == "fn" for r in rows.values())
    summary = {"tail_ratios": {"rows": list(rows.values())}}
    assert (
        tails.phase_columns(summary, "fast", 1)["tail_p99_over_p50_warm"] == rows[("fast", 1, "warm")]["p99_over_p50"]
    )
    assert (
        tails.phase_columns(summary, "slow", 0)["tail_p99_over_p50_warm"] == rows[("slow", 0, "warm")]["p99_over_p50"]
    )


def test_summary_report_and_compare_carry_ratios(tmp_path):
    run_a, _ = write_synthetic_run(
        tmp_path / "a", duration_s=6.0, instances={"i0": {"application": "fn", "distribution": "Uniform", "rate": 40.0}}
    )
    run_b, _ = write_synthetic_run(
        tmp_path / "b",
        duration_s=6.0,
        instances={"i0": {"application": "fn", "distribution": "Uniform", "rate": 2.0}},
        seed=2,
    )
    summary = analyze_run(run_a, None, fetch=False, plots=False)
    rows = summary["tail_ratios"]["rows"]
    warm_all = next(r for r in rows if r["instance"] == "i0" and r["phase"] == 0 and r["start_class"] == "warm")
    frame = pd.read_parquet(run_a / "analysis" / "invocations.parquet")
    warm = frame.loc[(frame["start_class"] == "warm") & (frame["outcome"] == "ok"), "client_latency_ms"].to_numpy(
        dtype="float64"
    )
    assert warm_all["n"] == len(warm) > 100
    assert warm_all["p99_over_p50"] == pytest.approx(np.quantile(warm, 0.99) / np.quantile(warm, 0.5))
    cold_all = next(r for r in rows if r["phase"] == 0 and r["start_class"] == "cold")
    assert cold_all["n"] == 1 and cold_all["p99_over_p50"] is None  # one cold start: no tail to speak of
    assert any(r["start_class"] == "cold" for r in rows)
    html = (run_a / "analysis" / "report.html").read_text()
    assert "Tail-to-median ratio (STeLLAR)" in html and "p99.9/p50" in html
    analyze_run(run_b, None, fetch=False, plots=False)
    frame = compare_runs([run_a, run_b])["frame"]
    assert "tail_p99_over_p50_warm" in frame.columns and "tail_p99_9_over_p50_all" in frame.columns
    assert frame.loc[frame["run"].isin([run_a.name, str(run_a)]), "tail_p99_over_p50_warm"].iloc[0] == pytest.approx(
        warm_all["p99_over_p50"]
    )
