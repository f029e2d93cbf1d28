"""The run's warm-up (a trace sample's warm-up minutes, the self-check's ``warmup_s``) is run, kept
and counted, and left out of every figure of analyze: percentiles, breakdown, modes, the function
table, start classes and tail ratios (issue 45)."""

from __future__ import annotations

import pytest
from test_analyzer_synthetic import write_synthetic_run

from faasprof import rundir
from faasprof.analyzer import analyze_run
from faasprof.analyzer.analysis import build_summary, load_run
from faasprof.analyzer.report import summary_lines
from faasprof.analyzer.stats import phases


def test_the_warm_up_is_kept_and_counted_but_in_no_figure(tmp_path):
    # Calls every 0.1 s; the first is cold (init 120 ms, a 300 ms wait), so it sits in the warm-up.
    run_dir, _ = write_synthetic_run(tmp_path, duration_s=20.0, pause_grace_ms=1000.0)
    rundir.update_manifest(run_dir, self_check={"limits": {"warmup_s": 10.0}})
    run = load_run(run_dir)
    intended = run.invocations["intended_s"].to_numpy()
    in_warmup = intended < 10.0
    assert (run.invocations["warmup"].to_numpy() == in_warmup).all() and 0 < in_warmup.sum() < len(intended)
    assert not run.invocations["steady"].to_numpy()[in_warmup].any()
    assert (run.phase_stats["steady_start_s"] >= 10.0).all()
    after = int((~in_warmup).sum())
    function = run.function_stats.iloc[0]
    assert function["planned"] == function["completion_latency_ms_n"] == after

    summary = build_summary(run)
    assert summary["run"]["warmup"]["warmup_s"] == 10.0 and summary["run"]["warmup"]["invocations"] == in_warmup.sum()
    # Reconciled: every planned row is counted among the outcomes, warm-up included.
    assert sum(summary["run"]["final_outcomes"].values()) == summary["run"]["planned"] == len(intended)
    classes = summary["start_classes"]
    assert classes["counts"]["cold"] == 0  # the one cold start was in the warm-up
    assert sum(classes["counts"].values()) + classes["warmup_left_out"] == len(intended)
    tails = [row for row in summary["tail_ratios"]["rows"] if row["start_class"] == "all"]
    assert sum(row["n"] for row in tails) == after

    # Without a warm-up the same run's cold start is counted and the figures cover everything.
    rundir.update_manifest(run_dir, self_check={"limits": {"warmup_s": 0.0}})
    plain = build_summary(load_run(run_dir))
    assert plain["start_classes"]["counts"]["cold"] == 1 and plain["run"]["warmup"]["invocations"] == 0


def test_the_warm_up_is_stated_in_the_report_and_the_summary_lines(tmp_path):
    run_dir, _ = write_synthetic_run(tmp_path, duration_s=6.0)
    rundir.update_manifest(run_dir, self_check={"limits": {"warmup_s": 3.0}})
    summary = analyze_run(run_dir, plots=False)
    stated = "the first 3 s (30 invocations) were run, are counted among the outcomes and left out of every figure"
    assert f"Warm-up: {stated}" in (run_dir / "analysis" / "report.html").read_text()
    assert f"  warm-up: {stated} (percentiles, breakdown, modes, start classes, tails)" in summary_lines(summary)


@pytest.mark.parametrize(
    ("warmup_s", "expected"),
    [(0.0, [(0.0, 1.0, 5.0, False)]), (3.0, [(0.0, 3.0, 5.0, False)]), (5.0, [(0.0, 5.0, 5.0, True)])],
)
def test_phases_begin_their_steady_part_after_the_runs_warm_up(warmup_s, expected):
    specs = [{"instance": "a", "window_s": (0.0, 5.0)}]
    got = [
        (p["start_s"], p["steady_start_s"], p["end_s"], bool(p.get("in_warmup")))
        for p in phases(specs, 5.0, None, warmup_s)
    ]
    assert got == expected
