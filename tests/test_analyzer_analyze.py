"""The analysis of synthetic run directories whose latency modes and records are known by construction."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from test_analyzer_synthetic import write_synthetic_run

from faasprof import analyzer, rundir
from faasprof.analyzer import frames as frames_mod
from faasprof.analyzer import stats as stats_mod
from faasprof.analyzer import tails
from faasprof.analyzer.analysis import analyze_run, load_summary
from faasprof.analyzer.summary import ModeEvidence, mode_evidence
from faasprof.errors import FormatError

ONE = {"i0": {"application": "fn", "distribution": "Uniform", "rate": 10.0}}
PERF_SAMPLE = "tests/data/monitoring/perf/perf_stat_system_interval.csv"


def _mode(summary, instance="i0", phase=0):
    return next(i for i in summary["instances"] if i["instance"] == instance)["phases"][phase]


@pytest.mark.parametrize(
    "rate, expected",
    [(8.0, "under-invoked"), (60.0, "balanced"), (400.0, "over-invoked")],
)
def test_modes_known_by_construction(tmp_path, rate, expected):
    # One container serving ~5.25 ms per activation (capacity ~190/s), paused after 50 ms idle.
    run_dir, _ = write_synthetic_run(
        tmp_path, duration_s=8.0, instances={"i0": {"application": "fn", "distribution": "Uniform", "rate": rate}}
    )
    summary = analyze_run(run_dir, plots=False)
    phase = _mode(summary)
    assert phase["mode"] == expected, phase["mode_reasons"]
    evidence = phase["mode_evidence"]
    assert list(evidence) == list(ModeEvidence.__annotations__)
    assert evidence["offered_rps"] == pytest.approx(rate, rel=0.05)
    if expected == "under-invoked":
        assert evidence["resumed_fraction"] > 0.9
    if expected == "balanced":
        assert evidence["achieved_over_offered"] > 0.95 and evidence["warm_fraction"] > 0.9
    if expected == "over-invoked":
        assert evidence["achieved_rps"] < 0.6 * rate
        assert evidence["trend_last_third_median_ms"] > 2 * evidence["trend_first_third_median_ms"]


def test_mode_evidence_copies_its_typed_keys_in_order():
    keys = list(ModeEvidence.__annotations__)
    assert len(keys) == 32 and keys[16:22] == [f"final_{name}" for name in stats_mod.REJECTED_FINAL]
    row = {**{key: index for index, key in enumerate(keys)}, "mode": "balanced", "instance": "i0"}
    assert list(mode_evidence(row).items()) == [(key, index) for index, key in enumerate(keys)]
    assert mode_evidence({}) == dict.fromkeys(keys)


def test_invocation_frame_columns_breakdown_and_cost(tmp_path):
    run_dir, records = write_synthetic_run(
        tmp_path, duration_s=3.0, instances=ONE, service_ms=150.0, pause_grace_ms=1e9
    )
    run = analyzer.load_run(run_dir)
    frame = run.invocations
    first = frame.iloc[0]
    assert first["start_class"] == "cold" and first["init_ms"] == 120
    assert first["wait_ms"] == pytest.approx(300, abs=1)
    assert first["execution_ms"] == pytest.approx(first["duration_ms"] - 120)
    assert first["client_latency_ms"] == pytest.approx(first["wait_ms"] + first["duration_ms"] + first["overhead_ms"])
    assert first["corrected_latency_ms"] == pytest.approx(first["client_latency_ms"] + 0.2)
    assert frame.loc[1:, "start_class"].eq("warm").all()
    # 256 MB for ~270 ms: 0.0675 GB-s as recorded, rounded up to 300 ms for 100 ms billing.
    assert first["gb_s"] == pytest.approx(0.25 * first["duration_ms"] / 1000)
    assert first["gb_s_100ms"] == pytest.approx(0.25 * math.ceil(first["duration_ms"] / 100) * 0.1)
    assert first["gb_s_1ms"] == pytest.approx(first["gb_s"])
    assert str(frame["intended_ns"].dtype) == "Int64" and str(frame["start_class"].dtype) == "category"
    parquet = pd.read_parquet(run_dir / "analysis" / "invocations.parquet") if (run_dir / "analysis").exists() else None
    assert parquet is None  # load_run never writes
    analyze_run(run_dir, plots=False)
    parquet = pd.read_parquet(run_dir / "analysis" / "invocations.parquet")
    assert list(parquet.columns) == list(frame.columns)
    assert parquet["client_latency_ms"].dtype == np.float64


def test_classify_starts_resumed_needs_every_container_idle_past_the_grace():
    function = np.array(["a", "a", "a", "a", "b"], dtype=object)
    start = np.array([0.0, 100.0, 130.0, 400.0, 10.0])
    end = np.array([90.0, 120.0, 390.0, 410.0, 20.0])
    init = np.array([5.0, np.nan, np.nan, np.nan, np.nan])
    classes = frames_mod.classify_starts(function, start, end, init, grace_ms=50.0)
    # 100 starts 10 ms after the first ended (warm); 130 starts 10 ms after 120 (warm); 400 after
    # 390 (warm); "b"'s first activation has no earlier one (warm).
    assert classes.tolist() == ["cold", "warm", "warm", "warm", "warm"]
    classes = frames_mod.classify_starts(function, start, end, init, grace_ms=5.0)
    assert classes.tolist() == ["cold", "resumed", "resumed", "resumed", "warm"]
    start[1] = np.nan
    assert frames_mod.classify_starts(function, start, end, init, 5.0)[1] == "unknown"


OPENWHISK_STARTS = Path(__file__).parent / "data" / "openwhisk" / "start_classes.csv"


def _openwhisk_classes(run: str) -> tuple[np.ndarray, np.ndarray]:
    """The inferred and the log's start class of each activation of one recorded run."""
    sample = pd.read_csv(OPENWHISK_STARTS).query("run == @run")
    start, end, init, wait = (
        sample[name].to_numpy(dtype="float64") for name in ("start_ms", "end_ms", "init_ms", "wait_ms")
    )
    function = np.zeros(len(sample), dtype=np.int8)
    classes = frames_mod.classify_starts(function, start, end, init, 50.0, wait_ms=wait)
    return np.asarray(classes.astype(str)), sample["log_class"].to_numpy(dtype=str)


@pytest.mark.parametrize("run", ["r5", "r10", "r20"])
def test_classify_starts_finds_the_resumes_openwhisks_log_shows(run):
    """Real OpenWhisk 2.0.0 standalone records (50 ms grace, json_dumps at 5, 10 and 20/s) against
    the start class its own log gives each (see tests/data/openwhisk/README.md): with the waitTime
    the inferred resumes are within 5 % of the log's, and 90 % of activations get the log's class.
    On the grace rule alone, 10/s gave 93 resumes against the log's 122 (47 % resumed where 61 %
    were) and 20/s 4 against 20."""
    inferred, truth = _openwhisk_classes(run)
    assert abs((inferred == "resumed").sum() - (truth == "resumed").sum()) <= 0.05 * len(truth)
    assert (inferred == truth).mean() >= 0.9


def test_classify_starts_takes_no_queueing_on_openwhisk_for_resumes():
    """At 40/s the standalone queues calls (waits of 300 ms and more, warm or not): the wait rule
    must not count those as resumes, so the inferred resumes stay at most the log's."""
    inferred, truth = _openwhisk_classes("r40")
    assert 0 < (inferred == "resumed").sum() <= (truth == "resumed").sum()
    assert ((inferred == "warm") & (truth == "warm")).sum() >= 0.95 * (truth == "warm").sum()


def test_quantile_confidence_intervals_bracket_the_estimate():
    rng = np.random.default_rng(3)
    data = np.sort(rng.lognormal(3, 0.5, 50_000))
    for p in (0.5, 0.9, 0.99, 0.999):
        estimate, low, high = stats_mod.quantile_ci(data, p)
        assert estimate == pytest.approx(np.quantile(data, p))
        assert low <= estimate <= high
    estimate, low, high = stats_mod.quantile_ci(data[:50], 0.999)
    assert math.isnan(high)  # too few samples for the tail: no upper bound, never a made-up one


def test_phases_from_activity_windows(tmp_path):
    instances = {
        "a": {"application": "fa", "distribution": "Uniform", "rate": 20.0, "activity_window": [0, 10]},
        "b": {"application": "fb", "distribution": "Uniform", "rate": 400.0, "activity_window": [5, 10]},
    }
    run_dir, _ = write_synthetic_run(tmp_path, duration_s=10.0, instances=instances)
    summary = analyze_run(run_dir, plots=False)
    assert [(p["start_s"], p["end_s"], p["instances"]) for p in summary["run"]["phases"]] == [
        (0.0, 5.0, ["a"]),
        (5.0, 10.0, ["a", "b"]),
    ]
    a_phases = next(i for i in summary["instances"] if i["instance"] == "a")["phases"]
    assert [p["mode"] for p in a_phases] == ["balanced", "balanced"]
    assert _mode(summary, "b")["mode"] == "over-invoked"
    assert {f["function"] for f in summary["functions"]} == {"fa", "fb"}


def test_interrupted_run_counts_not_sent_and_warns(tmp_path):
    run_dir, _ = write_synthetic_run(tmp_path, duration_s=10.0, instances=ONE, interrupt_at_s=4.0)
    summary = analyze_run(run_dir, plots=False)
    assert summary["run"]["status"] == "interrupted"
    assert summary["run"]["outcomes"]["not_sent"] == 60
    assert summary["records"]["missing"] == 0  # not_sent rows have no id, so no record is missing
    assert any("interrupted" in w for w in summary["warnings"])
    assert any("never sent" in w for w in summary["warnings"])
    # The phase ends at the stop (4 s): its offered rate is what was due while the run ran, and
    # the 60 never sent after the stop are counted apart, not as failures.
    phase = _mode(summary)
    assert phase["phase_end_s"] == summary["run"]["end_s"] and 4.0 <= summary["run"]["end_s"] < 4.1
    assert phase["planned"] == 20 and phase["not_sent"] == 0 and abs(phase["offered_rps"] - 10) < 0.5
    assert summary["run"]["not_sent_interrupted"] == 60 and summary["failures"]["total"] == 0


def test_what_fell_due_between_the_ctrl_c_and_the_loops_stop_is_not_offered(tmp_path):
    # The send loop stopped 0.25 s after the last send (it noticed the Ctrl-C then): the rows due
    # in between were stopped by the user, not left behind by a slow invoker (a CI run failed on one).
    run_dir, _ = write_synthetic_run(tmp_path, duration_s=10.0, instances=ONE, interrupt_at_s=4.0)
    rundir.update_manifest(run_dir, invoker={"send_wall_s": 4.25})
    summary = analyze_run(run_dir, plots=False)
    phase = _mode(summary)
    assert 4.0 <= summary["run"]["end_s"] < 4.1 and phase["phase_end_s"] == summary["run"]["end_s"]
    assert phase["not_sent"] == 0 and phase["planned"] == 20 and summary["failures"]["total"] == 0
    assert summary["run"]["not_sent_interrupted"] == 60


def test_missing_records_are_counted_not_dropped(tmp_path):
    run_dir, _ = write_synthetic_run(tmp_path, duration_s=5.0, instances=ONE, missing_every=5)
    summary = analyze_run(run_dir, plots=False)
    assert summary["records"]["missing"] == 10 and summary["records"]["found"] == 40
    assert summary["start_classes"]["counts"]["unknown"] == 10
    assert summary["run"]["planned"] == 50  # every invocation stays a row
    assert any("10 of 50 activation records are missing" in w for w in summary["warnings"])


def test_a_blocking_call_answered_202_when_the_wait_ran_out_completes_at_its_record_end(tmp_path):
    """paper_listing1 on a busy host: img-resize's blocking calls queued for minutes and were
    answered 202 when the platform's blocking wait (60 s) ran out; their completion latency read
    60 s (the answer), not the function's end minutes later, and achieved counted the answers."""
    instances = {"b": {"application": "fn", "distribution": "Uniform", "rate": 4.0, "blocking": True}}
    run_dir, _ = write_synthetic_run(
        tmp_path, duration_s=6.0, instances=instances, service_ms=400.0, blocking_wait_ms=1500.0
    )
    frame = analyzer.load_run(run_dir).invocations
    capped = (frame["http_status"] == 202).to_numpy(dtype=bool)
    assert 10 < capped.sum() < len(frame)  # the queue grows past the wait: the later calls are capped
    end_ms = frame["platform_end_s"].to_numpy() * 1e3 - frame["intended_s"].to_numpy() * 1e3
    completion = frame["completion_latency_ms"].to_numpy()
    assert np.allclose(completion[capped], end_ms[capped]) and (completion[capped] > 1501.0).all()
    assert np.isnan(frame["overhead_ms"].to_numpy()[capped]).all()
    answered = ~capped
    assert np.allclose(completion[answered], frame["corrected_latency_ms"].to_numpy()[answered])
    # Achieved counts each capped call at its function's end, not at its 202.
    ends = stats_mod.end_times_s(frame[list(stats_mod.END_COLUMNS)], True)
    expected = np.where(capped, frame["platform_end_s"], frame["done_ns"].to_numpy(dtype="float64") / 1e9)
    assert np.allclose(np.sort(ends), np.sort(expected))
    summary = analyze_run(run_dir, plots=False)
    assert _mode(summary, "b")["completion_latency_ms_p50"] > 1600  # the queue (minutes there), not the wait


def test_missing_records_say_why_as_their_save_found_it(tmp_path):
    """A killed embedded localwhisk: its store is final, so the warning says why the records are
    missing (the save's missing_why), not 'not stored by the platform, or not yet'."""
    run_dir, _ = write_synthetic_run(tmp_path, duration_s=5.0, instances=ONE, missing_every=5)
    why = "the embedded localwhisk exited during the run: it could not record what it still held"
    rundir.update_manifest(run_dir, activations={"missing": 10, "missing_why": why})
    summary = analyze_run(run_dir, plots=False)
    assert f"10 of 50 activation records are missing ({why})" in summary["warnings"]


def test_foreign_and_unreadable_records_are_ignored(tmp_path):
    run_dir, records = write_synthetic_run(tmp_path, duration_s=2.0, instances=ONE)
    other = dict(records[0], activationId="f" * 32, name="someone-else")
    with open(run_dir / rundir.ACTIVATIONS, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(other) + "\n")
        handle.write('{"activationId": "cut sh')
    run = analyzer.load_run(run_dir)
    assert len(run.records) == 20
    assert run.records_info["foreign_ignored"] == 1 and run.records_info["unreadable_lines"] == 1
    assert "someone-else" not in set(run.records["name"])


def test_without_records_the_client_side_is_still_analyzed(tmp_path):
    run_dir, _ = write_synthetic_run(
        tmp_path,
        duration_s=4.0,
        instances={"i0": {"application": "fn", "distribution": "Uniform", "rate": 60.0}},
        save_records=False,
    )
    summary = analyze_run(run_dir, plots=False)
    assert summary["records"]["source"] == "none"
    phase = _mode(summary)
    assert phase["mode"] == "unknown" and "no activation records" in phase["mode_reasons"]
    assert phase["client_latency_ms_p50"] > 0
    assert any("no activations.jsonl" in w for w in summary["warnings"])


def test_newer_run_format_is_refused(tmp_path):
    run_dir, _ = write_synthetic_run(tmp_path, duration_s=1.0, instances=ONE, format_version=99)
    with pytest.raises(FormatError, match="format_version 99 is not supported"):
        analyze_run(run_dir)


def test_newer_summary_format_is_refused(tmp_path):
    run_dir, _ = write_synthetic_run(tmp_path, duration_s=1.0, instances=ONE)
    analyze_run(run_dir, plots=False)
    path = run_dir / "analysis" / "summary.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "format_version": 7}))
    with pytest.raises(FormatError, match="summary format_version 7"):
        load_summary(run_dir)


@pytest.mark.slow
def test_rerunning_gives_identical_files(tmp_path):
    run_dir, _ = write_synthetic_run(tmp_path, duration_s=3.0, instances=ONE)
    monitor = run_dir / "monitors" / "perf"
    monitor.mkdir(parents=True)
    shutil.copy(PERF_SAMPLE, monitor / "perf_stat.csv")
    (monitor / "meta.json").write_text(
        json.dumps({"monotonic_ns_at_start": 0, "wall_ns_at_start": 0, "layout": {"sep": ","}})
    )
    analyze_run(run_dir)
    out = run_dir / "analysis"
    first = {p.relative_to(out): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}
    (out / "stale.txt").write_text("left over")
    analyze_run(run_dir)
    second = {p.relative_to(out): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}
    assert first.keys() == second.keys()
    assert [str(k) for k in first if first[k] != second[k]] == []
    names = {str(k) for k in first}
    assert {
        "summary.json",
        "report.html",
        "invocations.parquet",
        "monitor_perf.parquet",
        "plots/monitors.png",
        "plots/breakdown.png",
        "plots/cdf.png",
    } <= names
    report = (out / "report.html").read_text()
    assert "data:image/png;base64," in report and "src='http" not in report
    text = (out / "summary.json").read_text()
    summary = json.loads(text, parse_constant=lambda name: pytest.fail(f"summary.json holds {name}: not valid JSON"))
    assert summary["format_version"] == 2
    assert "perf" in summary["monitors"] and "mean" in summary["monitors"]["perf"]


def test_container_state_annotation_decides_the_class_when_present():
    function = np.array([0, 0, 0])
    start = np.array([0.0, 100.0, 200.0])
    end = np.array([50.0, 110.0, 210.0])
    init = np.array([10.0, np.nan, np.nan])
    # Gaps of 50 and 90 ms with a 1 s grace would be "warm"; localwhisk's annotation says resumed.
    states = np.array(["cold", "resumed", None], dtype=object)
    classes = frames_mod.classify_starts(function, start, end, init, 1000.0, states)
    assert classes.tolist() == ["cold", "resumed", "warm"]


def test_a_run_with_no_invocation_rows_still_analyzes(tmp_path):
    run_dir, _ = write_synthetic_run(tmp_path, duration_s=2.0, instances=ONE, save_records=False)
    (run_dir / rundir.INVOCATIONS).write_text(",".join(rundir.INVOCATION_COLUMNS) + "\n")
    summary = analyze_run(run_dir)
    assert summary["run"]["planned"] == 0 and summary["functions"] == []
    assert (run_dir / "analysis" / "report.html").exists()


def test_non_blocking_overload_is_seen_on_the_platform_clock(tmp_path):
    # The client sees only quick 202s; the records show the queue growing.
    run_dir, _ = write_synthetic_run(
        tmp_path,
        duration_s=6.0,
        instances={"i0": {"application": "fn", "distribution": "Uniform", "rate": 400.0}},
        blocking=False,
    )
    summary = analyze_run(run_dir, plots=False)
    phase = _mode(summary)
    assert phase["client_latency_ms_p99"] < 5
    assert phase["mode"] == "over-invoked", phase["mode_reasons"]
    assert "platform latency grew" in phase["mode_reasons"]
    assert phase["platform_latency_ms_p50"] > 100


@pytest.mark.parametrize("blocking_cli", [False, True])
def test_an_instance_without_blocking_takes_the_workloads_default_everywhere(blocking_cli):
    # FaaSProfiler's files name blocking_cli once, not per instance: the frames (completion
    # latency), the phase statistics and the tail table must read the same default.
    manifest = rundir.Manifest.from_json(
        {
            "format_version": 2,
            "workload": {
                "blocking_cli": blocking_cli,
                "instances": {"plain": {"application": "fn"}, "web": {"application": "fn", "data_file": "x.bin"}},
            },
        }
    )
    answers = frames_mod.instance_answers_at_end(manifest)
    assert (answers("plain"), answers("web")) == (blocking_cli, True)
    frame = pd.DataFrame({"instance": ["plain", "web"], "function": ["fn", "fn"], "intended_s": [0.0, 1.0]})
    assert list(tails._blocking(frame, manifest)) == [blocking_cli, True]
    specs = {s["instance"]: s["blocking"] for s in stats_mod.instance_specs(manifest, frame)}
    assert specs == {"plain": blocking_cli, "web": True}


def test_classify_starts_counts_no_wait_as_a_resume_before_a_grace_has_passed():
    """2.0's 10 s grace, calls 1 s apart for 8 s, each waiting 40 ms: no container of the run can
    have idled 10 s, so none resumed (the tier's start-class check); with a 50 ms grace they are."""
    start = np.arange(8) * 1000.0
    end, init, wait = start + 20.0, np.array([300.0] + [np.nan] * 7), np.full(8, 40.0)
    function = np.zeros(8, dtype=np.int8)
    classes = frames_mod.classify_starts(function, start, end, init, 10_000.0, wait_ms=wait)
    assert classes.tolist() == ["cold"] + ["warm"] * 7
    classes = frames_mod.classify_starts(function, start, end, init, 50.0, wait_ms=wait)
    assert classes.tolist() == ["cold"] + ["resumed"] * 7
