"""A platform that refuses, stalls or sheds calls is measured, not given up on.

``faasprof run`` as a subprocess against the fake OpenWhisk of tests/test_invoker_fakeserver.py:
a run whose platform stops accepting connections, or answers 503/429, for a while mid-run
completes with one row per planned call, counts the calls turned away by kind of pushback
(``faasprof.outcomes.PUSHBACK_KINDS``) and says so in one line (on stderr, in the analysis); only a
platform that never took a call stops the run early (exit 3, one line); nothing on the way out, nor a
Ctrl-C before the send loop, prints a traceback.
"""

from __future__ import annotations

import json
import signal
import threading
import time

import pytest
from run_harness import run_against, run_dirs, start_run, write_workload
from test_invoker_fakeserver import AUTH, FakeOpenWhisk

from faasprof import rundir
from faasprof.errors import EXIT_NOT_READY
from faasprof.invoker.run import execute
from faasprof.platforms.openwhisk.connection import Connection
from faasprof.workload.spec import load_workload
from tests.helpers import run_cli

# What an event loop closed with work still pending, or an interrupt at the wrong moment, prints.
SHUTDOWN_NOISE = ("Traceback", "Event loop is closed", "Task was destroyed", "KeyboardInterrupt")


def assert_quiet_shutdown(stderr: str) -> None:
    for text in SHUTDOWN_NOISE:
        assert text not in stderr, stderr


def after_invocations(server: FakeOpenWhisk, count: int, *steps) -> threading.Thread:
    """Once ``count`` invocations have arrived, do each ``(delay_s, action)`` in turn (a thread)."""

    def follow() -> None:
        deadline = time.monotonic() + 60
        while len(server.requests) < count and time.monotonic() < deadline:
            time.sleep(0.01)
        for delay_s, action in steps:
            time.sleep(delay_s)
            action()

    thread = threading.Thread(target=follow, daemon=True)
    thread.start()
    return thread


def run_rows(run_dir):
    return rundir.read_invocations(run_dir, reconstruct=False)


@pytest.mark.slow
def test_a_platform_refusing_connections_for_5_s_mid_run_is_measured_to_the_end(tmp_path, isolated_home):
    rate, duration = 20, 9
    config = write_workload(
        tmp_path, duration=duration, instances={"a": {"application": "ok", "distribution": "Uniform", "rate": rate}}
    )
    out = tmp_path / "runs"
    with FakeOpenWhisk() as server:
        after_invocations(server, 20, (0.0, lambda: server.refuse_for(5.0)))
        done = run_against(server, config, out, "--threshold", "max_failure_rate=1", timeout=120)
    assert done.returncode == 0, done.stderr
    assert_quiet_shutdown(done.stderr)
    (run_dir,) = run_dirs(out)
    manifest = rundir.read_manifest(run_dir)
    assert manifest.status == "complete" and manifest.status_reason is None
    rows = run_rows(run_dir)
    assert sorted(int(r["seq"]) for r in rows) == list(range(rate * duration))  # planned = rows
    refused = [r for r in rows if r["outcome"] == "failed" and not r["sent_ns"]]
    assert all("Connection refused" in r["error"] for r in refused)
    # 5 s of refusals at 20/s: about 100 calls, each with its own row at its own time (the bounds
    # leave a loaded host's timer a second either way).
    assert 50 <= len(refused) <= 140, len(refused)
    assert sum(r["outcome"] == "ok" for r in rows) >= 50
    assert manifest.invoker["pushback"]["refused"] == len(refused)
    line = next(line for line in done.stderr.splitlines() if "over-invoked" in line)
    assert (
        line.startswith(f"warning: over-invoked: of {rate * duration} planned calls, ")
        and f"refused at connect ({len(refused)})" in line
    )
    assert line.removeprefix("warning: ") in manifest.warnings  # kept with the run
    # The platform answered before and after its refusals: the fix is about the rate, not a port.
    fix = manifest.verdict["dominant_failure"]["fix"]
    assert "while it answered others" in fix and "wrong port" not in fix, fix


@pytest.mark.slow
def test_a_platform_answering_503_then_429_for_a_while_is_measured_and_analysed(tmp_path, isolated_home):
    rate, duration = 20, 6
    config = write_workload(
        tmp_path, duration=duration, instances={"a": {"application": "ok", "distribution": "Uniform", "rate": rate}}
    )
    out = tmp_path / "runs"
    with FakeOpenWhisk() as server:
        after_invocations(
            server,
            20,
            (0.0, lambda: setattr(server, "shed_status", 503)),
            (1.5, lambda: setattr(server, "shed_status", 429)),
            (1.5, lambda: setattr(server, "shed_status", None)),
        )
        done = run_against(server, config, out, "--threshold", "max_failure_rate=1", timeout=120)
    assert done.returncode == 0, done.stderr
    assert_quiet_shutdown(done.stderr)
    (run_dir,) = run_dirs(out)
    manifest = rundir.read_manifest(run_dir)
    assert manifest.status == "complete"
    rows = run_rows(run_dir)
    assert len(rows) == rate * duration
    unavailable = sum(r["http_status"] == "503" for r in rows)
    throttled = sum(r["outcome"] == "throttled" for r in rows)
    assert unavailable >= 15 and throttled >= 15, (unavailable, throttled)
    assert manifest.invoker["pushback"] == {"throttled": throttled, "unavailable": unavailable}
    line = next(line for line in done.stderr.splitlines() if "over-invoked" in line)
    assert (
        f"throttled with 429 Too Many Requests ({throttled})" in line
        and f"answered 503 Service Unavailable ({unavailable})" in line
    )
    analysed = run_cli("analyze", run_dir, "--no-fetch", "--no-plots", timeout=180)
    assert analysed.returncode == 0, analysed.stderr
    summary = json.loads((run_dir / "analysis" / "summary.json").read_text())
    assert summary["run"]["pushback"]["counts"] == {"throttled": throttled, "unavailable": unavailable}
    said = summary["run"]["pushback"]["line"]
    assert said == line.removeprefix("warning: ")
    assert f"  {said}" in analysed.stdout.splitlines()
    assert said in (run_dir / "analysis" / "report.html").read_text()


@pytest.mark.slow
def test_send_processes_count_the_pushback_of_their_merged_rows(tmp_path, isolated_home):
    """Two send processes, every call shed with 503: the parent counts what the children's rows
    say, and a platform that took no call is not called over-invoked."""
    config = write_workload(
        tmp_path,
        duration=2,
        instances={
            "a": {"application": "ok", "distribution": "Uniform", "rate": 10},
            "b": {"application": "ok2", "distribution": "Uniform", "rate": 10},
        },
    )
    out = tmp_path / "runs"
    with FakeOpenWhisk() as server:
        server.shed_status = 503
        done = run_against(server, config, out, "--send-processes", "2", timeout=120)
    assert done.returncode == 1, done.stderr  # nothing succeeded: the verdict fails the run
    assert_quiet_shutdown(done.stderr)
    (run_dir,) = run_dirs(out)
    manifest = rundir.read_manifest(run_dir)
    assert manifest.status == "complete" and manifest.invoker["send_processes"] == 2
    assert manifest.invoker["pushback"] == {"unavailable": 40}
    assert (
        "warning: the platform took none of the calls: of 40 planned calls, 100 % answered 503 Service Unavailable (40)"
        in done.stderr.splitlines()
    )


@pytest.mark.slow
def test_connections_still_pending_at_the_end_leave_nothing_to_the_closed_loop(tmp_path, isolated_home):
    """The platform stops accepting near the end: connection attempts hang (its backlog is full)
    when the run ends; they are cancelled and awaited, not destroyed pending with the loop."""
    rate, duration = 20, 3
    config = write_workload(
        tmp_path, duration=duration, instances={"a": {"application": "ok", "distribution": "Uniform", "rate": rate}}
    )
    out = tmp_path / "runs"
    with FakeOpenWhisk() as server:
        after_invocations(server, 30, (0.0, server.stop_accepting))
        done = run_against(
            server, config, out, "--request-timeout-s", "1", "--threshold", "max_failure_rate=1", timeout=120
        )
    assert_quiet_shutdown(done.stderr)
    assert done.returncode == 0, done.stderr
    (run_dir,) = run_dirs(out)
    manifest = rundir.read_manifest(run_dir)
    assert manifest.status == "complete" and len(run_rows(run_dir)) == rate * duration
    assert manifest.invoker["pushback"].get("no_connection", 0) > 0, manifest.invoker["pushback"]
    assert "never sent for want of a free connection" in done.stderr


@pytest.mark.slow
def test_a_port_where_nothing_ever_listened_fails_fast_in_one_line(tmp_path, isolated_home):
    config = write_workload(tmp_path, duration=30)
    with FakeOpenWhisk() as server:
        port = server.port  # a free port: its listener goes now
    started = time.monotonic()
    done = run_cli(
        "run", config, "--out", tmp_path / "runs", "--apihost", f"http://127.0.0.1:{port}", "--auth", AUTH, timeout=120
    )
    assert done.returncode == EXIT_NOT_READY, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "cannot connect" in done.stderr
    assert_quiet_shutdown(done.stderr)
    assert time.monotonic() - started < 25 and run_dirs(tmp_path / "runs") == []


@pytest.mark.slow
def test_a_platform_that_never_takes_a_call_stops_the_run_early_with_exit_3(tmp_path, isolated_home):
    """Pre-flight passes, then nothing listens: no call was ever answered, so the run stops after
    ``never_reached_s`` (a row for every planned call) instead of sending into nothing for 20 s."""
    config = write_workload(
        tmp_path, duration=20, instances={"a": {"application": "ok", "distribution": "Uniform", "rate": 8}}
    )
    out = tmp_path / "runs"
    with FakeOpenWhisk() as server:
        server.die_after_preflight = True
        done = run_against(server, config, out, "--quiet", timeout=120)
    assert done.returncode == EXIT_NOT_READY, done.stderr
    assert_quiet_shutdown(done.stderr)
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("run interrupted: the platform never took a call: every connection attempt failed for "), (
        line
    )
    (run_dir,) = run_dirs(out)
    manifest = rundir.read_manifest(run_dir)
    assert manifest.status == "interrupted" and manifest.invoker["never_reached"] == manifest.status_reason
    assert manifest.invoker["send_wall_s"] < 8
    rows = run_rows(run_dir)
    assert len(rows) == 160 and {r["outcome"] for r in rows} <= {"failed", "not_sent"}


@pytest.mark.slow
@pytest.mark.parametrize("delay_s", [0.2, 0.7])
def test_ctrl_c_in_the_first_second_is_one_line_and_exit_1(tmp_path, isolated_home, delay_s):
    config = write_workload(tmp_path, duration=5)
    out = tmp_path / "runs"
    with FakeOpenWhisk() as server:
        proc = start_run(config, out, server, isolated_home)
        time.sleep(delay_s)
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=60)
        posts = [r for r in server.requests if r["path"].startswith("/api/v1/namespaces/")]
    assert proc.returncode == 1, stderr
    assert stderr == "interrupted\n" and stdout == ""
    assert posts == [] and run_dirs(out) == []  # nothing was sent, nothing half-made is left


def test_ctrl_c_while_the_run_directory_is_prepared_leaves_none(tmp_path, isolated_home, monkeypatch):
    """The manifest written, the plan not yet: nothing was sent, and no torn run of nothing stays."""
    config = write_workload(tmp_path, duration=1)

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(rundir, "write_plan", interrupted)
    out = tmp_path / "runs"
    out.mkdir()
    with FakeOpenWhisk() as server, pytest.raises(KeyboardInterrupt):
        execute(load_workload(config), out, connection=Connection(apihost=server.apihost, auth=AUTH, namespace="_"))
    assert run_dirs(out) == []
