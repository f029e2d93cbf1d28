"""Final outcomes: every invocation's HTTP outcome joined with its activation record.

A non-blocking 202 only says the platform accepted the call; the record says whether the function
succeeded. These tests pin that a failed activation is counted as what its record says, shown
first in the report, and kept out of every latency figure of successful work: with synthetic runs
for each record outcome (application error, developer error, whisk internal error, action
timeout, no record), blocking and non-blocking, and with a real localwhisk run of an action that
raises on every call.
"""

from __future__ import annotations

import itertools
import json

import numpy as np
import pandas as pd
import pytest
from test_analyzer_synthetic import FAILURE_RECORDS, record, write_synthetic_run

from faasprof import rundir
from faasprof.analyzer import analyze_run, outcome_columns
from faasprof.analyzer import records as records_mod
from faasprof.analyzer.analysis import load_run
from faasprof.outcomes import (
    FINAL_OUTCOMES,
    HTTP_OUTCOMES,
    PUSHBACK_KINDS,
    final_outcome,
    pushback_kind,
    pushback_line,
    record_outcome,
)

RATE = {"i0": {"application": "fn", "distribution": "Uniform", "rate": 20.0}}


def _sample_records():
    """One raw record per record-level outcome, plus odd shapes seen in the wild."""
    out = {"success": record("a" * 32, "fn", 1_000, 1, 0, 5)}
    for name, (status, error, timed_out) in FAILURE_RECORDS.items():
        out[name] = record("b" * 32, "fn", 1_000, 1, 0, 5, status=status, error=error, timed_out=timed_out)
    out["docs_false_summary_code_1"] = {"activationId": "c" * 32, "statusCode": 1, "start": 1, "end": 2}
    out["code_2_timeout_message"] = {
        "activationId": "d" * 32,
        "response": {
            "statusCode": 2,
            "result": {"error": "The action exceeded its time limits of 60000 milliseconds during initialization."},
        },
    }
    out["no_response"] = {"activationId": "e" * 32}
    out["response_not_a_dict"] = {"activationId": "f" * 32, "response": "garbage", "annotations": {"timeout": True}}
    return out


def test_flattened_record_outcome_is_the_vocabularys():
    for label, raw in _sample_records().items():
        row = dict(zip(records_mod.RECORD_COLUMNS, records_mod.flatten_record(raw)))
        fast = dict(zip(records_mod.RECORD_COLUMNS, records_mod.flatten_fast(raw)))
        expected = record_outcome(raw) if isinstance(raw.get("response", {}), dict) else "action_timeout"
        assert row["record_outcome"] == fast["record_outcome"] == expected, label
        assert row["error_text"] == fast["error_text"]
        if expected == "success":
            assert row["error_text"] is None
    long_error = record("a" * 32, "fn", 1_000, 1, 0, 5, status="application error", error="x" * 5000)
    assert len(records_mod.flatten_record(long_error)[-1]) == records_mod.ERROR_TEXT_CHARS


def test_column_join_equals_the_scalar_final_outcome_for_every_combination():
    samples = {k: v for k, v in _sample_records().items() if k != "response_not_a_dict"}
    cases = [(http, None) for http in HTTP_OUTCOMES] + [
        (http, raw) for http, raw in itertools.product(HTTP_OUTCOMES, samples.values())
    ]
    http = np.array([c[0] for c in cases], dtype=object)
    has = np.array([c[1] is not None for c in cases])
    rec = np.array([record_outcome(c[1]) if c[1] is not None else None for c in cases], dtype=object)
    got = outcome_columns.final_outcomes(http, rec, has)
    expected = [final_outcome(h, r) for h, r in cases]
    assert list(got) == expected
    assert list(got.categories) == list(FINAL_OUTCOMES)


def _failures_every(n, kind, every=4):
    return {seq: kind for seq in range(n) if seq % every == 1}


@pytest.mark.parametrize(
    "kind, blocking",
    [
        (kind, blocking)
        for kind in ("application_error", "developer_error", "internal_error", "action_timeout", "no_record")
        for blocking in (False, True)
        if (kind, blocking) != ("no_record", True)
    ],
)
def test_each_record_outcome_is_counted_and_kept_out_of_the_latency_figures(tmp_path, kind, blocking):
    failures = _failures_every(60, kind)
    run_dir, _ = write_synthetic_run(
        tmp_path, duration_s=3.0, instances=RATE, blocking=blocking, failures=failures, service_ms=5.0
    )
    summary = analyze_run(run_dir, plots=False)
    finals = summary["run"]["final_outcomes"]
    assert finals[kind] == len(failures) == 15
    assert finals["success"] == 45
    assert sum(finals.values()) == 60
    # The HTTP outcome column stays what the invoker saw.
    http = summary["run"]["outcomes"]
    if blocking and kind != "no_record":
        assert http["app_error"] == 15 and http["ok"] == 45
    else:
        assert http["ok"] == 60 and http["app_error"] == 0
    frame = load_run(run_dir).invocations
    bad = frame["seq"].isin(list(failures)).to_numpy()
    assert (frame.loc[bad, "final_outcome"].astype(object) == kind).all()
    assert (frame.loc[~bad, "final_outcome"].astype(object) == "success").all()
    assert not frame.loc[bad, "successful"].any() and frame.loc[~bad, "successful"].all()
    function = summary["functions"][0]
    assert function["successful"] == 45 and function["failures"] == 15 and function[f"final_{kind}"] == 15
    good = frame[~bad]
    assert function["completion_latency_ms_n"] == 45
    if blocking:
        assert function["client_latency_ms_n"] == 45
        assert function["client_latency_ms_max"] == pytest.approx(good["client_latency_ms"].max(), rel=1e-5)
        assert function["corrected_latency_ms_p50"] == pytest.approx(
            float(np.median(good["corrected_latency_ms"])), rel=1e-5
        )
    else:  # the answers are 202s: no latency of the function's (function_stats keeps blocking calls' only)
        assert function["client_latency_ms_n"] == function["corrected_latency_ms_n"] == 0
    assert function["platform_latency_ms_n"] == 45
    assert summary["failures"]["total"] == 15
    (group,) = summary["failures"]["by_function"]
    assert group["final_outcome"] == kind and group["count"] == 15
    if kind in FAILURE_RECORDS:
        assert group["example_error"] == FAILURE_RECORDS[kind][1]
        assert function["failure_completion_latency_ms_n"] == 15


def test_blocking_200_without_its_record_is_still_a_latency_sample(tmp_path):
    failures = _failures_every(60, "no_record")
    run_dir, _ = write_synthetic_run(tmp_path, duration_s=3.0, instances=RATE, blocking=True, failures=failures)
    summary = analyze_run(run_dir, plots=False)
    function = summary["functions"][0]
    assert summary["run"]["final_outcomes"]["no_record"] == 15
    assert function["client_latency_ms_n"] == 60  # the 200 says the function succeeded
    assert function["wait_ms_mean"] is not None and function["with_record"] == 45


def test_non_blocking_202_without_its_record_is_not_a_latency_sample(tmp_path):
    failures = _failures_every(60, "no_record")
    run_dir, _ = write_synthetic_run(tmp_path, duration_s=3.0, instances=RATE, blocking=False, failures=failures)
    summary = analyze_run(run_dir, plots=False)
    assert summary["functions"][0]["completion_latency_ms_n"] == 45
    assert summary["functions"][0]["client_latency_ms_n"] == 0  # a 202 is no answer of the function's


def test_function_stats_keep_client_latency_for_blocking_calls_only(tmp_path):
    """One function called blocking by one instance (answer after ~6 ms) and non-blocking by another
    (a 202 after 0.5 ms): the function's client latency is the blocking calls' alone, never a pool of
    answers and acknowledgements; its completion latency covers both."""
    instances = {
        "sync": {"application": "fn", "distribution": "Uniform", "rate": 20.0, "blocking": True},
        "async": {"application": "fn", "distribution": "Uniform", "rate": 20.0, "blocking": False},
    }
    run_dir, _ = write_synthetic_run(
        tmp_path, duration_s=3.0, instances=instances, blocking=True, pause_grace_ms=10_000.0
    )
    analyze_run(run_dir, plots=False)
    run = load_run(run_dir)
    frame = run.invocations
    sync = frame[(frame["instance"].astype(str) == "sync") & frame["successful"]]
    (function,) = run.function_stats.to_dict("records")
    assert function["calls"] == "mixed"
    assert function["client_latency_ms_n"] == len(sync) == 60
    assert function["client_latency_ms_p50"] == pytest.approx(float(np.median(sync["client_latency_ms"])), rel=1e-6)
    assert function["corrected_latency_ms_n"] == 60 and function["completion_latency_ms_n"] == 120
    assert function["client_latency_ms_p50"] > 5  # the pool with the 0.5 ms acknowledgements had its median near 3 ms


@pytest.mark.slow
def test_failures_lead_the_report_and_are_absent_when_everything_succeeded(tmp_path):
    run_dir, _ = write_synthetic_run(
        tmp_path / "bad",
        duration_s=3.0,
        instances=RATE,
        blocking=False,
        failures=_failures_every(60, "application_error"),
    )
    analyze_run(run_dir)
    report = (run_dir / "analysis" / "report.html").read_text()
    failures_at = report.index("Failures: 15 of 60 invocations did not succeed")
    assert failures_at < report.index("Latency modes per instance")
    assert failures_at < report.index("Warnings")
    assert "application_error" in report[failures_at : report.index("Latency modes per instance")]
    good_dir, _ = write_synthetic_run(tmp_path / "good", duration_s=3.0, instances=RATE, blocking=False)
    analyze_run(good_dir, plots=False)
    assert "Failures:" not in (good_dir / "analysis" / "report.html").read_text()


def test_every_invocation_failing_leaves_no_latency_and_no_mode(tmp_path):
    every = {seq: "application_error" for seq in range(60)}
    run_dir, _ = write_synthetic_run(tmp_path, duration_s=3.0, instances=RATE, blocking=False, failures=every)
    summary = analyze_run(run_dir, plots=False)
    phase = summary["instances"][0]["phases"][0]
    assert phase["mode"] == "unknown" and "0 successful" in phase["mode_reasons"]
    assert phase["client_latency_ms_p50"] is None and phase["client_latency_ms_n"] == 0
    assert any("did not succeed (" in w and "application_error" in w for w in summary["warnings"])


def test_summary_final_outcomes_survive_json(tmp_path):
    run_dir, _ = write_synthetic_run(
        tmp_path, duration_s=2.0, instances=RATE, blocking=False, failures={3: "action_timeout", 5: "internal_error"}
    )
    analyze_run(run_dir, plots=False)
    summary = json.loads((run_dir / "analysis" / "summary.json").read_text())
    assert list(summary["run"]["final_outcomes"]) == list(FINAL_OUTCOMES)
    assert (
        summary["run"]["final_outcomes"]["action_timeout"] == 1
        and summary["run"]["final_outcomes"]["internal_error"] == 1
    )
    # Failures in display order: the vocabulary's order (action timeout before internal error).
    assert [g["final_outcome"] for g in summary["failures"]["by_function"]] == ["action_timeout", "internal_error"]


@pytest.mark.parametrize(
    "raw",
    [
        {"response": {"status": "success", "statusCode": 1}},  # the code wins over the text
        {"response": {"status": "success"}, "statusCode": 2},
        {"statusCode": 0, "response": {"status": "application error"}},
        {"response": {"statusCode": 0}, "annotations": [{"key": "timeout", "value": True}]},
        {"response": {"status": "Success"}},
        {"response": {"statusCode": True}},  # a bool is not a status code
        {"response": {"status": "success", "success": False}},
    ],
)
def test_fast_flattening_agrees_with_the_vocabulary_on_odd_records(raw):
    raw = {"activationId": "a" * 32, "annotations": [], **raw}
    row = dict(zip(records_mod.RECORD_COLUMNS, records_mod.flatten_fast(raw)))
    assert row["record_outcome"] == record_outcome(raw)


def test_records_due_per_row_takes_a_recordless_platforms_answer_as_final():
    """A mixed run: the OpenWhisk rows without a record are no_record, the generic endpoint's
    answers (a platform that keeps no records) are final."""
    http = ["ok", "ok", "app_error", "ok", "timeout"]
    has = np.array([True, False, False, False, False])
    due = np.array([True, True, True, False, False])
    got = outcome_columns.final_outcomes(http, ["success", None, None, None, None], has, records_due=due)
    assert list(got) == ["success", "no_record", "no_record", "success", "timeout"]


def test_a_generic_endpoints_instance_owes_no_record():
    manifest = rundir.Manifest.from_json(
        {
            "format_version": rundir.FORMAT_VERSION,
            "test_name": "mixed",
            "platform": {"kind": "openwhisk"},
            "workload": {
                "instances": {
                    "ow": {"function": "f", "endpoint": "openwhisk"},
                    "gen": {"function": "g", "endpoint": "generic"},
                }
            },
        }
    )
    invocations = pd.DataFrame({"instance": pd.Categorical(["ow", "gen", "gen", "ow"])})
    assert list(outcome_columns.records_due(invocations, manifest)) == [True, False, False, True]
    only_ow = rundir.Manifest.from_json({**manifest.to_json(), "workload": {"instances": {"ow": {"function": "f"}}}})
    assert outcome_columns.records_due(invocations[invocations["instance"] == "ow"], only_ow) is True


@pytest.mark.parametrize(
    "outcome, status, written, error, kind",
    [
        ("failed", None, False, "cannot connect to 10.0.0.1:443 (Connection refused)", "refused"),
        ("failed", None, False, "cannot connect to 10.0.0.1:443 (Connection reset by peer)", "refused"),
        ("failed", None, False, "connect to 10.0.0.1:443 timed out after 10 s", "connect_timeout"),
        ("failed", None, True, "connection closed before any response (the server closed the connection)", "reset"),
        ("failed", None, True, "connection lost in the middle of the response (ConnectionResetError: x)", "reset"),
        ("throttled", 429, True, "Too many requests in the last minute (count: 61, allowed: 60).", "throttled"),
        ("failed", 503, True, "HTTP 503: The server is currently unavailable.", "unavailable"),
        ("timeout", None, True, "no response within 75 s", "timeout"),
        ("timeout", 504, True, "HTTP 504: gateway timeout", "timeout"),
        ("not_sent", None, False, "still waiting for a free connection when the run ended", "no_connection"),
        # Not the platform's doing: a TLS misconfiguration, a stop of the run, an action's failure.
        (
            "failed",
            None,
            False,
            "TLS handshake with 10.0.0.1:443 failed (CERTIFICATE_VERIFY_FAILED); pass --insecure",
            None,
        ),
        ("timeout", None, True, "no answer recorded: faasprof stopped waiting when the run ended", None),
        ("timeout", None, True, "no response before the run stopped (Ctrl-C (SIGINT) received)", None),
        ("not_sent", None, False, "waiting for a connection when the run stopped (Ctrl-C (SIGINT) received)", None),
        ("failed", None, True, "malformed HTTP response", None),
        ("failed", 500, True, "HTTP 500: internal error", None),
        ("app_error", 502, True, "the function failed", None),
        ("ok", 202, True, None, None),
    ],
)
def test_pushback_kind_reads_what_the_platform_did(outcome, status, written, error, kind):
    assert pushback_kind(outcome, status, written, error) == kind


def test_pushback_line_names_each_kind_with_its_share_and_count():
    line = pushback_line({"refused": 1407, "unavailable": 12, "timeout": 3}, 2372, accepted=900)
    assert line == (
        "over-invoked: of 2,372 planned calls, 59 % refused at connect (1,407), 0.5 % answered 503 Service Unavailable (12), "
        "0.1 % timed out waiting for the answer (3)"
    )
    assert (
        pushback_line({"throttled": 40}, 40, accepted=0)
        == "the platform took none of the calls: of 40 planned calls, 100 % throttled with 429 Too Many Requests (40)"
    )
    assert pushback_line({}, 40, accepted=40) is None
    # A stray reset in a large run is pushback, not a finding about the rate.
    assert (
        pushback_line({"reset": 1}, 1000, accepted=999)
        == "platform pushback: of 1,000 planned calls, 0.1 % cut off by a closed or reset connection (1)"
    )
    assert pushback_line({"reset": 10}, 1000, accepted=990).startswith("over-invoked: ")
    assert list(PUSHBACK_KINDS)[0] == "refused"


def test_pushback_counts_of_a_frame_are_the_rows_kinds():
    rows = [
        ("ok", 202, 1, None),
        ("failed", np.nan, np.nan, "cannot connect to h:1 (Connection refused)"),
        ("failed", np.nan, np.nan, "cannot connect to h:1 (Connection refused)"),
        ("failed", 503, 5, "HTTP 503: busy"),
        ("throttled", 429, 6, "Too many"),
        ("timeout", np.nan, 7, "no response within 1 s"),
        ("app_error", 502, 8, "boom"),
    ]
    frame = pd.DataFrame(rows, columns=["outcome", "http_status", "sent_ns", "error"])
    frame["outcome"] = frame["outcome"].astype("category")
    frame["http_status"] = frame["http_status"].astype("Int64")
    frame["sent_ns"] = frame["sent_ns"].astype("Int64")
    assert outcome_columns.pushback_counts(frame) == {"refused": 2, "throttled": 1, "unavailable": 1, "timeout": 1}
    assert outcome_columns.pushback_counts(frame[frame["outcome"] == "ok"]) == {}
