"""A run's success criteria (``faasprof.invoker.verdict``), and ``faasprof run`` exiting 1 on a run that
completed but measured only failures: all 429, all refused, all timed out, all 413."""

from __future__ import annotations

import json

import pytest
from run_harness import run_against, run_dirs, write_workload
from test_invoker_fakeserver import AUTH, FakeOpenWhisk

from faasprof import rundir
from faasprof.errors import ConfigError
from faasprof.invoker.verdict import check_thresholds, evaluate, parse_thresholds
from faasprof.localwhisk.activation import shared_tmp_hint
from tests.helpers import run_cli


def row(seq, outcome="ok", status=202, sent=100, done=5_000_100, error="", intended=0):
    return {
        "seq": str(seq),
        "intended_ns": str(intended),
        "sent_ns": "" if sent is None else str(sent),
        "done_ns": "" if done is None else str(done),
        "outcome": outcome,
        "http_status": "" if status is None else str(status),
        "error": error,
    }


def test_default_passes_a_healthy_run():
    verdict = evaluate([row(i) for i in range(10)])
    assert verdict["passed"] and verdict["dominant_failure"] is None
    assert verdict["message"] == "passed: 10 of 10 attempted invocations succeeded"


def test_most_failed_fails_at_the_boundary():
    half = [row(i) for i in range(5)] + [row(i, "throttled", 429, error="Too many requests") for i in range(5, 10)]
    assert evaluate(half)["passed"]  # exactly half failed: not "most"
    most = half + [row(10, "throttled", 429, error="Too many requests")]
    verdict = evaluate(most)
    assert not verdict["passed"]
    assert verdict["dominant_failure"]["outcome"] == "throttled" and verdict["dominant_failure"]["count"] == 6
    assert (
        "dominant failure: throttled (HTTP 429) in 6 of 11" in verdict["message"]
        and "lower the workload's rate" in verdict["message"]
    )


def test_no_success_fails_and_not_sent_is_not_a_failure():
    verdict = evaluate(
        [row(0, "failed", None, sent=None, done=10, error="cannot connect to 127.0.0.1:9 (Connection refused)")]
        + [row(i, "not_sent", None, sent=None, done=None) for i in range(1, 50)]
    )
    assert not verdict["passed"] and verdict["attempted"] == 1
    assert verdict["message"].startswith("failed: no invocation succeeded")
    assert "refused connections" in verdict["dominant_failure"]["fix"]


def test_an_instance_whose_every_call_failed_fails_the_run():
    """A function given the wrong input fails 100 % while the others carry the failure rate."""
    rows = (
        [dict(row(i), instance="dumps") for i in range(8)]
        + [dict(row(i, "app_error", 502, error="no document: pass 'text'"), instance="md") for i in range(8, 10)]
        + [dict(row(10, "not_sent", None, sent=None, done=None), instance="later")]
    )  # never sent: not judged
    verdict = evaluate(rows)
    assert not verdict["passed"]
    assert verdict["message"].startswith(
        "failed: instance md: none of its 2 attempted invocations succeeded (first error: app_error (HTTP 502): no document: pass 'text')"
    )
    check = next(c for c in verdict["thresholds"] if c["name"] == "min_successes_per_instance")
    assert check["instance"] == "md" and check["value"] == 0 and check["source"] == "default"
    assert evaluate(rows, {"min_successes_per_instance": 0})["passed"]
    assert evaluate([dict(r, instance="dumps") for r in rows[:10]])["passed"]  # one instance, 80 % succeeded


REFUSED = "cannot connect to 127.0.0.1:9 (Connection refused)"


def _refused(seq, at_s):
    return row(seq, "failed", None, sent=None, done=None, error=REFUSED, intended=int(at_s * 1e9))


def test_refusals_between_answers_are_an_over_invoked_platform_not_a_wrong_port():
    """A platform whose accept queue filled refused calls while it answered the rest: the fix is
    about the rate (or that it is the measurement), never a port or a platform that is down."""
    rows = [row(i, intended=int(i * 1e8)) for i in range(0, 40, 4)]
    rows += [_refused(i, i / 10) for i in range(40) if i % 4]
    verdict = evaluate(rows)
    assert not verdict["passed"] and verdict["dominant_failure"]["count"] == 30
    fix = verdict["dominant_failure"]["fix"]
    assert "over-invoked" in fix and "lower the workload's rate" in fix and "measurement" in fix
    assert "wrong port" not in fix and "wrong port" not in verdict["message"]


def test_refusals_only_after_the_last_answer_are_a_platform_that_went_away():
    rows = [row(i, intended=int(i * 1e8)) for i in range(5)] + [_refused(i, i / 10) for i in range(5, 20)]
    fix = evaluate(rows)["dominant_failure"]["fix"]
    assert "answered 5 calls, then refused every connection from 0.5 s" in fix and "went down" in fix
    assert "wrong port" not in fix


def test_refusals_without_any_answer_are_a_platform_not_there():
    fix = evaluate([_refused(i, i / 10) for i in range(5)])["dominant_failure"]["fix"]
    assert "down or --apihost names the wrong port" in fix


@pytest.mark.parametrize(
    "outcome, status, error, fix",
    [
        ("failed", 413, "The request content was too large", "payload limit"),
        ("timeout", None, "no response within 1 s", "--request-timeout-s"),
        # Cut off by a Ctrl-C: the fix said to raise --request-timeout-s or lower the rate.
        ("timeout", None, "no response before the run stopped (Ctrl-C (SIGINT) received)", "let the run finish"),
        ("app_error", 502, "boom", "the action itself failed"),
        ("failed", 401, "invalid", "--auth"),
        ("failed", 404, "does not exist", "faasprof deploy"),
    ],
)
def test_dominant_failure_names_its_fix(outcome, status, error, fix):
    verdict = evaluate([row(i, outcome, status, error=error) for i in range(3)])
    assert fix in verdict["dominant_failure"]["fix"] and fix in verdict["message"]


def test_user_thresholds_at_their_boundaries():
    rows = [row(i, done=100 + (i + 1) * 1_000_000) for i in range(100)]  # latencies 1..100 ms
    assert evaluate(rows, {"max_client_latency_ms_p50": 50.5})["passed"]
    failed = evaluate(rows, {"max_client_latency_ms_p50": 50.49})
    assert not failed["passed"] and "client_latency_ms_p50 is 50.5 (threshold 50.49)" in failed["message"]
    assert evaluate(rows, {"min_successes": 100})["passed"] and not evaluate(rows, {"min_successes": 101})["passed"]
    assert evaluate(rows + [row(100, "timeout", None)], {"max_failure_rate": 0})["passed"] is False
    late = [row(i, intended=0, sent=(i + 1) * 1_000_000) for i in range(100)]
    assert (
        not evaluate(late, {"max_lateness_ms_p99": 99})["passed"]
        and evaluate(late, {"max_lateness_ms_p99": 100})["passed"]
    )


def test_threshold_input_is_checked():
    assert parse_thresholds(["max_failure_rate=0.1", "min_successes=3"]) == {
        "max_failure_rate": 0.1,
        "min_successes": 3,
    }
    for bad in (["nope=1"], ["max_failure_rate"], ["max_failure_rate=2"], ["min_successes=nan"], ["min_successes=-1"]):
        with pytest.raises(ConfigError):
            parse_thresholds(bad)
    with pytest.raises(ConfigError, match=r"w.json: thresholds.latency: unknown threshold"):
        check_thresholds({"latency": 3}, "w.json")


def _run(tmp_path, application, *extra, server_setup=None, **workload):
    config = write_workload(
        tmp_path,
        duration=1.5,
        instances={"a": {"application": application, "distribution": "Uniform", "rate": 8}},
        **workload,
    )
    out = tmp_path / "runs"
    with FakeOpenWhisk() as server:
        if server_setup:
            server_setup(server)
        done = run_against(server, config, out, *extra, timeout=120)
    (run_dir,) = run_dirs(out)
    return done, rundir.read_manifest(run_dir).to_json()


@pytest.mark.parametrize(
    "application, extra, setup, expect_status, expect",
    [
        ("throttled", (), None, "complete", "throttled (HTTP 429) in 12 of 12"),
        ("toolarge", (), None, "complete", "payload limit"),
        (
            "slow",
            ("--request-timeout-s", "0.3"),
            lambda s: setattr(s, "slow_s", 3.0),
            "complete",
            "timeout in 12 of 12",
        ),
        ("ok", (), lambda s: setattr(s, "die_after_preflight", True), "complete", "refused connections"),
    ],
)
@pytest.mark.slow
def test_all_failing_platform_exits_1_naming_the_failure_and_fix(
    tmp_path, isolated_home, application, extra, setup, expect_status, expect
):
    done, manifest = _run(tmp_path, application, *extra, server_setup=setup)
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert manifest["status"] == expect_status
    verdict = manifest["verdict"]
    assert verdict["passed"] is False and expect in verdict["message"], verdict["message"]
    assert expect in done.stderr


@pytest.mark.slow
def test_run_with_one_always_failing_instance_exits_1_naming_it(tmp_path, isolated_home):
    config = write_workload(
        tmp_path,
        duration=1.5,
        instances={
            "a": {"application": "ok", "distribution": "Uniform", "rate": 8},
            "b": {"application": "apperr", "distribution": "Uniform", "rate": 2},
        },
    )
    out = tmp_path / "runs"
    with FakeOpenWhisk() as server:
        done = run_against(server, config, out, "--quiet", timeout=120)
    assert done.returncode == 1, done.stderr
    (line,) = [line for line in done.stderr.splitlines() if "instance b" in line]
    assert line.startswith(
        "run complete but failed: instance b: none of its 3 attempted invocations succeeded (first error: app_error (HTTP 502)"
    )
    assert "the function failed" in line
    (run_dir,) = run_dirs(out)
    assert rundir.read_manifest(run_dir).to_json()["verdict"]["passed"] is False


@pytest.mark.slow
def test_a_failed_verdict_is_told_once_without_quiet(tmp_path, isolated_home):
    config = write_workload(
        tmp_path,
        duration=1.5,
        instances={
            "a": {"application": "ok", "distribution": "Uniform", "rate": 8},
            "b": {"application": "apperr", "distribution": "Uniform", "rate": 2},
        },
    )
    with FakeOpenWhisk() as server:
        done = run_against(server, config, tmp_path / "runs", timeout=120)
    assert done.returncode == 1, done.stderr
    assert done.stderr.count("none of its 3 attempted invocations succeeded") == 1, done.stderr
    assert done.stderr.rstrip().splitlines()[-1].startswith("run complete but failed its thresholds (see ")


@pytest.mark.slow
def test_thresholds_from_workload_and_command_line(tmp_path, isolated_home):
    done, manifest = _run(tmp_path, "ok", thresholds={"max_client_latency_ms_p99": 0.000001})
    assert done.returncode == 1 and "client_latency_ms_p99" in done.stderr
    assert manifest["status"] == "complete" and manifest["verdict"]["thresholds"][-1]["source"] == "user"
    (tmp_path / "runs2").mkdir()
    done = run_cli(
        "run",
        write_workload(tmp_path, duration=1.0, thresholds={"max_client_latency_ms_p99": 0.000001}),
        "--out",
        tmp_path / "runs2",
        "--apihost",
        "http://127.0.0.1:9",
        "--auth",
        AUTH,
        "--threshold",
        "bogus=1",
        timeout=60,
    )
    assert done.returncode == 2 and done.stderr.strip().startswith("--threshold bogus=1:")
    with FakeOpenWhisk() as server:
        done = run_cli(
            "run",
            write_workload(tmp_path, duration=1.0, thresholds={"max_client_latency_ms_p99": 0.000001}),
            "--out",
            tmp_path / "runs2",
            "--apihost",
            server.apihost,
            "--auth",
            AUTH,
            "--threshold",
            "max_client_latency_ms_p99=100000",
            timeout=60,
        )
    assert done.returncode == 0, done.stderr


def record(activation_id, status_code, error=None, timeout=False):
    response = {"statusCode": status_code, "result": {"error": error} if error else {"ok": True}}
    return {"activationId": activation_id, "response": response, "annotations": [{"key": "timeout", "value": timeout}]}


def test_records_refine_accepted_calls_to_their_final_outcome():
    rows = [dict(row(i), activation_id=f"a{i}") for i in range(10)]
    # Accepted (202) but the function raised in 6 of 10: most failed, by the records.
    records = {f"a{i}": record(f"a{i}", 1, "boom") for i in range(6)} | {
        f"a{i}": record(f"a{i}", 0) for i in range(6, 10)
    }
    assert evaluate(rows)["passed"], "without records the 202s pass"
    verdict = evaluate(rows, records=records)
    assert not verdict["passed"] and verdict["outcomes"] == {"application_error": 6, "ok": 4}
    assert (
        verdict["dominant_failure"]["outcome"] == "application_error" and verdict["dominant_failure"]["error"] == "boom"
    )
    assert "fix the function or its parameters" in verdict["message"]
    # A call without its record is no success (no_record); a timeout record is an action_timeout.
    timed_out = {
        f"a{i}": record(f"a{i}", 2, "The action exceeded its time limits of 100 milliseconds.", timeout=True)
        for i in range(6)
    }
    verdict = evaluate(rows, records=timed_out)
    assert (
        verdict["outcomes"] == {"action_timeout": 6, "no_record": 4}
        and "raise the action's timeout" in verdict["dominant_failure"]["fix"]
    )


def test_failures_in_sandboxes_sharing_tmp_say_so_in_the_verdict():
    """FunctionBench's fixed /tmp names collided between concurrent process sandboxes (40 of 57
    failed) and the verdict said only 'fix the function': where localwhisk's record says the
    sandbox shares /tmp, the fix names that cause."""
    rows = [dict(row(i), activation_id=f"a{i}") for i in range(10)]
    hint = shared_tmp_hint("shared: unshare failed (Operation not permitted)", "No such file: '/tmp/fb.jpg'")
    collided = {
        f"a{i}": dict(record(f"a{i}", 1, "[Errno 2] No such file or directory: '/tmp/fb.jpg'"), logs=[hint])
        for i in range(7)
    } | {f"a{i}": record(f"a{i}", 0) for i in range(7, 10)}
    verdict = evaluate(rows, records=collided)
    assert not verdict["passed"] and verdict["dominant_failure"]["count"] == 7
    assert "share the host's /tmp" in verdict["dominant_failure"]["fix"] and "--isolation docker" in verdict["message"]
    plain = {f"a{i}": record(f"a{i}", 1, "[Errno 2] No such file or directory: '/tmp/fb.jpg'") for i in range(10)}
    assert "/tmp" not in evaluate(rows, records=plain)["dominant_failure"]["fix"]


def test_calls_without_a_record_are_not_successes_and_fail_their_instance_in_one_line():
    """Issue 34: ``paper_listing1 --analyze`` passed "1,149 of 1,149" while 1,023 had no record."""
    why = "the platform answered each with an activation id, but its store holds no record of it after it stopped: lost by the platform"
    rows = [dict(row(i), instance="small", activation_id=f"s{i}") for i in range(20)] + [
        dict(row(i), instance="big", activation_id=f"b{i}") for i in range(20, 120)
    ]
    records = {f"s{i}": record(f"s{i}", 0) for i in range(20)} | {
        f"b{i}": record(f"b{i}", 0) for i in range(20, 60)
    }  # 60 of big's 100 missing
    verdict = evaluate(rows, records=records, missing_why=why)
    assert not verdict["passed"] and verdict["outcomes"] == {"no_record": 60, "ok": 60}
    # One line, first: which instance, how many without a record, why.
    assert verdict["message"].startswith(
        f"failed: instance big: 60 of its 100 accepted invocations have no activation record (threshold 50%): {why}"
    )
    assert "\n" not in verdict["message"] and "dominant failure: no_record" not in verdict["message"]
    check = next(c for c in verdict["thresholds"] if c["name"] == "max_no_record_rate_per_instance")
    assert check["instance"] == "big" and check["value"] == 0.6 and check["no_record"] == 60 and check["why"] == why
    # Half of an instance's calls unrecorded is not "mostly"; overall 40 of 120 failed: the run passes.
    records[f"b{60}"] = record("b60", 0)
    records.update({f"b{i}": record(f"b{i}", 0) for i in range(61, 70)})
    assert evaluate(rows, records=records, missing_why=why)["passed"]
    # A record saying the platform was stopped under it is its own outcome, with its reason.
    stopped = {f"s{i}": record(f"s{i}", 3, "localwhisk stopped before the activation completed.") for i in range(20)}
    verdict = evaluate(rows[:20], records=stopped)
    assert (
        verdict["outcomes"] == {"platform_stopped": 20}
        and "stopped before these activations completed" in verdict["dominant_failure"]["fix"]
    )
    # No records saved at all (a platform the run did not start, no --analyze): the HTTP outcomes decide.
    assert evaluate(rows)["passed"] and evaluate(rows)["outcomes"] == {"ok": 120}
    # Nor is a record due from a generic endpoint beside the platform: its answers are final.
    generic = [dict(row(i), instance="web") for i in range(200, 230)]
    verdict = evaluate(rows[:20] + generic, records=stopped, recorded_instances={"small"})
    assert verdict["outcomes"] == {"ok": 30, "platform_stopped": 20}


@pytest.mark.slow
def test_non_blocking_run_of_an_always_raising_function_fails(tmp_path, isolated_home):
    folder = tmp_path / "raiser"
    folder.mkdir()
    (folder / "__main__.py").write_text("def main(args):\n    raise RuntimeError('always fails')\n")
    workload = tmp_path / "raising.json"
    workload.write_text(
        json.dumps(
            {
                "test_name": "raising",
                "test_duration_in_seconds": 2,
                "random_seed": 5,
                "blocking_cli": False,
                "instances": {"r": {"application": "raiser", "source": "raiser", "distribution": "Uniform", "rate": 4}},
            }
        )
    )
    done = run_cli("run", workload, "--out", tmp_path / "runs", "--quiet", timeout=240)
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    (run_dir,) = run_dirs(tmp_path / "runs")
    manifest = rundir.read_manifest(run_dir).to_json()
    assert manifest["status"] == "complete"
    assert {r["outcome"] for r in rundir.read_invocations(run_dir)} == {"ok"}, "HTTP says every call was accepted"
    verdict = manifest["verdict"]
    assert not verdict["passed"] and verdict["dominant_failure"]["outcome"] in (
        "application_error",
        "developer_error",
    ), verdict
    assert "no invocation succeeded" in done.stderr
