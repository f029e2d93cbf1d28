"""``faasprof run`` as a subprocess against a real HTTP server on 127.0.0.1 (and the embedded localwhisk).

Checked: the run directory and manifest contents, one row per planned invocation, pre-flight
failures leave nothing behind, SIGINT and kill -9 mid-run, the FaaSProfiler scripts, generic
endpoints, required collectors, and that the auth key appears nowhere.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
from run_harness import (
    assert_interrupted_with_a_row_each,
    run_against,
    run_dirs,
    start_run,
    wait_for_lines,
    write_workload,
)
from test_invoker_fakeserver import AUTH, FakeOpenWhisk

from faasprof.invoker.run import execute
from faasprof.platforms.openwhisk.connection import Connection
from faasprof.rundir import INVOCATION_COLUMNS, read_invocations, read_manifest
from faasprof.workload.spec import workload_from_dict
from tests.helpers import not_private, run_cli

SECRET = AUTH.split(":", 1)[1]


def assert_no_secret(*texts_or_dirs) -> None:
    for item in texts_or_dirs:
        if isinstance(item, Path):
            for path in item.rglob("*"):
                if path.is_file():
                    data = path.read_bytes()
                    assert SECRET.encode() not in data, f"auth key found in {path}"
        else:
            assert SECRET not in item


@pytest.mark.slow
def test_run_writes_a_complete_run_directory(tmp_path, isolated_home):
    config = write_workload(
        tmp_path,
        instances={
            "a": {"application": "ok", "distribution": "Poisson", "rate": 40},
            "b": {"application": "throttled", "distribution": "Uniform", "rate": 4},
            "c": {"application": "apperr", "distribution": "Uniform", "rate": 2, "blocking": True},
        },
        monitoring={"perf": {"interval_ms": 200}},
    )
    out = tmp_path / "runs"
    with FakeOpenWhisk() as server:
        # b and c fail on purpose, which by default fails the verdict (an instance without a success).
        done = run_against(server, config, out, "--threshold", "min_successes_per_instance=0")
    assert done.returncode == 0, done.stderr
    (run_dir,) = run_dirs(out)
    assert done.stdout.strip().splitlines()[-1] == str(run_dir)
    assert run_dir.name.startswith("t-")

    manifest = read_manifest(run_dir).to_json()
    assert manifest["status"] == "complete"
    assert manifest["workload"]["seed"] == 7 and set(manifest["workload"]["instances"]) == {"a", "b", "c"}
    platform = manifest["platform"]
    assert platform["apihost"] == server.apihost and platform["limits"]["actions_per_minute"] == 100000
    assert platform["actions"] == {"ok": "existing", "throttled": "existing", "apperr": "existing"}
    assert manifest["clock"]["wall_ns_at_zero"] > 0 and manifest["clock"]["monotonic_zero_ns"] > 0
    assert manifest["host"]["logical_cpus"] and "python" in manifest["tools"]
    assert manifest["faasprof"]["version"]
    if shutil.which("perf"):
        (perf,) = manifest["monitors"]  # collectors: started at test start, stopped, described
        assert perf["name"] == "perf" and perf["status"] == "stopped" and perf["command"].startswith("perf stat")
        assert (run_dir / "monitors" / "perf" / "stderr.log").exists()
    else:  # an optional collector that cannot run is a recorded warning, not a failure
        assert manifest["monitors"] == [] and any(
            w.startswith("monitoring.perf: unavailable") for w in manifest["warnings"]
        )

    rows = read_invocations(run_dir)
    assert (run_dir / "invocations.csv").read_text().splitlines()[0] == ",".join(INVOCATION_COLUMNS)
    assert sorted(int(r["seq"]) for r in rows) == list(range(manifest["counts"]["planned"]))
    outcomes = {r["instance"]: r["outcome"] for r in rows}
    assert outcomes == {"a": "ok", "b": "throttled", "c": "app_error"}
    counts = manifest["counts"]
    assert counts["sent"] == counts["planned"] == len(rows)
    assert counts["failed"] == sum(1 for r in rows if r["outcome"] != "ok")
    assert manifest["invoker"]["lateness_ms"]["count"] == len(rows)
    assert all(r["activation_id"] for r in rows if r["instance"] in ("a", "c"))
    assert all(int(r["sent_ns"]) >= int(r["intended_ns"]) for r in rows)
    assert (run_dir / "monitors").is_dir()
    assert_no_secret(run_dir, done.stdout, done.stderr)


@pytest.mark.slow
def test_preflight_failures_leave_no_run_directory(tmp_path, isolated_home):
    out = tmp_path / "runs"
    config = write_workload(tmp_path)
    # Nothing listening.
    done = run_cli("run", config, "--out", out, "--apihost", "http://127.0.0.1:9", "--auth", AUTH)
    assert done.returncode == 3 and "cannot connect" in done.stderr and len(done.stderr.strip().splitlines()) == 1
    missing = write_workload(
        tmp_path, name="m", instances={"a": {"application": "nosuchaction", "distribution": "Poisson", "rate": 5}}
    )
    wrong_key = AUTH.split(":")[0] + ":wrong"
    with FakeOpenWhisk() as server:
        done_missing = run_against(server, missing, out)
        done_key = run_cli("run", config, "--out", out, "--apihost", server.apihost, "--auth", wrong_key)
        required = write_workload(tmp_path, name="r", monitoring={"blktrace": {"required": True}})
        done_required = run_against(server, required, out)
    assert done_missing.returncode == 3 and "nosuchaction does not exist" in done_missing.stderr
    assert done_key.returncode == 3 and "401" in done_key.stderr and "wrong" not in done_key.stderr
    assert done_required.returncode == 3 and "blktrace" in done_required.stderr
    assert run_dirs(out) == []
    for finished in (done, done_missing, done_key, done_required):
        assert_no_secret(finished.stdout, finished.stderr)


@pytest.mark.slow
def test_bad_data_file_and_bad_flag_exit_2(tmp_path, isolated_home):
    config = write_workload(
        tmp_path, instances={"a": {"application": "ok", "distribution": "Poisson", "rate": 5, "data_file": "nope.bin"}}
    )
    done = run_cli("run", config, "--out", tmp_path / "runs", "--apihost", "http://127.0.0.1:9", "--auth", AUTH)
    assert done.returncode == 2 and "data_file" in done.stderr
    good = write_workload(tmp_path, name="g")
    done = run_cli(
        "run",
        good,
        "--out",
        tmp_path / "runs",
        "--max-connections",
        "0",
        "--apihost",
        "http://127.0.0.1:9",
        "--auth",
        AUTH,
    )
    assert done.returncode == 2 and "--max-connections" in done.stderr
    assert run_dirs(tmp_path / "runs") == []


@pytest.mark.slow
@pytest.mark.parametrize("sig, label", [(signal.SIGINT, "SIGINT"), (signal.SIGTERM, "SIGTERM")])
def test_signal_mid_run_interrupts_with_a_row_for_every_invocation(tmp_path, isolated_home, sig, label):
    config = write_workload(
        tmp_path, duration=20, instances={"a": {"application": "ok", "distribution": "Uniform", "rate": 50}}
    )
    out = tmp_path / "runs"
    with FakeOpenWhisk() as server:
        proc = start_run(config, out, server, isolated_home)
        wait_for_lines(out, proc)
        proc.send_signal(sig)
        stdout, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 1, stderr
    run_dir, _, _ = assert_interrupted_with_a_row_each(out, stdout, 1000, label)
    # Without --analyze, the one line about the interruption says how to analyse what was sent.
    assert f"faasprof analyze {run_dir}" in stderr.strip().splitlines()[-1]
    assert_no_secret(run_dir, stdout, stderr)


@pytest.mark.slow
def test_sigint_with_analyze_analyses_what_was_sent_on_localwhisk(tmp_path, isolated_home):
    """Ctrl-C in ``faasprof run --analyze`` of a healthy 10/s stream: the run is still analysed, its
    phase ends at the stop (offered ≈ achieved), and what was planned after the stop is neither
    offered nor failed."""
    config = tmp_path / "stream.json"
    config.write_text(
        json.dumps(
            {
                "test_name": "stopped",
                "test_duration_in_seconds": 30,
                "random_seed": 3,
                "blocking_cli": True,
                "instances": {"stream": {"application": "json_dumps", "distribution": "Uniform", "rate": 10}},
            }
        )
    )
    out = tmp_path / "runs"
    proc = start_run(config, out, None, isolated_home, "--analyze")
    try:
        wait_for_lines(out, proc, 40, timeout_s=60)
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 1, stderr  # interrupted, analysed all the same
    (run_dir,) = run_dirs(out)
    assert stdout.strip().splitlines()[-1] == str(run_dir)
    manifest = read_manifest(run_dir).to_json()
    assert manifest["status"] == "interrupted" and "SIGINT" in manifest["status_reason"], stderr
    assert f"report: {run_dir / 'analysis' / 'report.html'}" in stderr
    summary = json.loads((run_dir / "analysis" / "summary.json").read_text())
    assert summary["run"]["status"] == "interrupted"
    (phase,) = summary["instances"][0]["phases"]
    end_s = summary["run"]["end_s"]
    assert phase["phase_end_s"] == end_s < 30 and summary["run"]["phases"][0]["planned_end_s"] == 30
    assert abs(phase["offered_rps"] - 10) < 1, phase
    assert phase["achieved_rps"] >= 0.8 * phase["offered_rps"], phase  # the healthy stream is not over-invoked
    assert phase["not_sent"] == 0 and phase["failures"] == 0
    # Never sent because of the stop: counted apart, not as failures.
    rows = read_invocations(run_dir)
    after_stop = [r for r in rows if r["outcome"] == "not_sent" and int(r["intended_ns"]) / 1e9 >= end_s]
    assert len(after_stop) > 100
    assert summary["run"]["not_sent_interrupted"] == len(after_stop)
    assert summary["failures"]["total"] == 0 and summary["run"]["final_outcomes"]["not_sent"] == 0
    # Reconciliation: planned = rows = final outcomes + not sent: interrupted; every activation id
    # has its record or is counted missing, and every row without one says why.
    planned = manifest["counts"]["planned"]
    assert planned == 300 == len(rows) == sum(summary["run"]["final_outcomes"].values()) + len(after_stop)
    records = summary["records"]
    assert (
        records["found"] + records["missing"]
        == records["with_activation_id"]
        == sum(1 for r in rows if r["activation_id"])
    )
    assert all(r["error"] for r in rows if not r["activation_id"])


@pytest.mark.slow
def test_kill_9_loses_at_most_the_last_second(tmp_path, isolated_home):
    config = write_workload(
        tmp_path, duration=20, instances={"a": {"application": "ok", "distribution": "Uniform", "rate": 50}}
    )
    out = tmp_path / "runs"
    with FakeOpenWhisk() as server:
        proc = start_run(config, out, server, isolated_home, "--quiet", output=subprocess.DEVNULL)
        run_dir = wait_for_lines(out, proc)
        time.sleep(2.0)
        proc.kill()
        killed_wall_ns = time.time_ns()
        proc.wait(10)
    manifest = read_manifest(run_dir).to_json()
    assert manifest["status"] == "running"  # nobody could finish it
    rows = read_invocations(run_dir)
    assert rows
    killed_at_ns = killed_wall_ns - manifest["clock"]["wall_ns_at_zero"]
    seqs = {int(r["seq"]) for r in rows}
    # Every invocation answered more than a second (plus scheduling slack) before the kill is on disk.
    expected = {seq for seq in range(1000) if seq * 20_000_000 + 10_000_000 < killed_at_ns - 1_500_000_000}
    assert expected and expected <= seqs


@pytest.mark.slow
def test_scripts_run_with_argv_and_failures_are_reported(tmp_path, isolated_home):
    runtime = tmp_path / "runtime monitor.sh"  # a space in the path: argv lists, not shell strings
    runtime.write_text('echo "runtime args: $@"\necho "cwd: $(pwd)"\necho oops >&2\n')
    post = tmp_path / "post.sh"
    post.write_text('echo "post args: $@"\nexit 3\n')
    config = write_workload(tmp_path, perf_monitoring={"runtime_script": str(runtime), "post_script": str(post)})
    out = tmp_path / "runs"
    with FakeOpenWhisk() as server:
        done = run_against(server, config, out)
    assert done.returncode == 0, done.stderr
    (run_dir,) = run_dirs(out)
    runtime_dir = run_dir / "monitors" / "runtime_script"
    assert "runtime args: 1.5" in (runtime_dir / "stdout.log").read_text()
    assert (runtime_dir / "stderr.log").read_text() == "oops\n"
    assert str(runtime) in (runtime_dir / "command.txt").read_text()
    post_dir = run_dir / "monitors" / "post_script"
    assert f"post args: {run_dir}" in (post_dir / "stdout.log").read_text()
    manifest = read_manifest(run_dir).to_json()
    assert manifest["scripts"]["runtime_script"]["returncode"] == 0
    assert manifest["scripts"]["post_script"]["returncode"] == 3
    assert any("post_script" in w and "status 3" in w for w in manifest["warnings"])
    assert "post_script" in done.stderr and "status 3" in done.stderr


@pytest.mark.slow
def test_generic_endpoint_needs_no_platform(tmp_path, isolated_home):
    with FakeOpenWhisk() as server:
        config = write_workload(
            tmp_path,
            endpoint="generic",
            instances={
                "g": {
                    "application": "label",
                    "distribution": "Uniform",
                    "rate": 10,
                    "url": f"{server.apihost}/generic/fn",
                    "data": {"k": [1, 2]},
                }
            },
        )
        out = tmp_path / "runs"
        done = run_cli("run", config, "--out", out, "--analyze")
        bodies = [json.loads(r["body"]) for r in server.requests]
    assert done.returncode == 0, done.stderr
    (run_dir,) = run_dirs(out)
    rows = read_invocations(run_dir)
    assert rows and all(r["outcome"] == "ok" and r["activation_id"] == "" and r["http_status"] == "200" for r in rows)
    assert bodies and all(b == {"k": [1, 2]} for b in bodies)
    assert read_manifest(run_dir).to_json()["platform"]["kind"] == "none"
    # A generic server keeps no records: its answers are the final outcomes, not missing records.
    summary = json.loads((run_dir / "analysis" / "summary.json").read_text())
    assert {k: v for k, v in summary["run"]["final_outcomes"].items() if v} == {"success": len(rows)}
    assert "no_record" not in done.stdout and "FAILURES" not in done.stdout


@pytest.mark.slow
def test_end_to_end_on_the_embedded_localwhisk(tmp_path, isolated_home):
    data = {
        "test_name": "embedded",
        "test_duration_in_seconds": 2,
        "random_seed": 3,
        "blocking_cli": False,
        "instances": {"j": {"application": "json_dumps", "distribution": "Uniform", "rate": 5}},
    }
    config = tmp_path / "e.json"
    config.write_text(json.dumps(data))
    out = tmp_path / "runs"
    umask = os.umask(0o022)
    try:
        done = run_cli("run", config, "--out", out, "--pause-grace", "50", "--analyze", timeout=180)
    finally:
        os.umask(umask)
    assert done.returncode == 0, done.stderr
    (run_dir,) = run_dirs(out)
    manifest = read_manifest(run_dir).to_json()
    assert manifest["platform"]["embedded"] is True and manifest["platform"]["localwhisk"]["pause_grace_ms"] == 50
    assert manifest["platform"]["actions"]["json_dumps"] in ("deployed", "existing")
    rows = read_invocations(run_dir)
    assert len(rows) == 10 and all(r["outcome"] == "ok" for r in rows)
    records = [json.loads(line) for line in (run_dir / "activations.jsonl").read_text().splitlines()]
    assert {r["activationId"] for r in records} >= {r["activation_id"] for r in rows}
    assert manifest["activations"]["missing"] == 0
    assert (run_dir / "analysis" / "summary.json").exists()
    assert (run_dir / "localwhisk" / "localwhisk.log").is_file() and manifest["platform"]["data_dir"] == "localwhisk"
    # Every run keeps its host's noise, in the manifest and the summary, and says it after its
    # result line and again in the analysis's lines.
    noise = manifest["host_noise"]
    assert noise["format_version"] == 1 and noise["samples"] >= 4 and noise["window_s"] > 1
    assert 0 <= noise["other_cpu_share"] <= 1 and noise["cores"] >= 1
    summary = json.loads((run_dir / "analysis" / "summary.json").read_text())
    assert summary["host_noise"] == noise
    assert done.stderr.count("host noise: other CPU ") == 2
    # Every file and folder the run wrote (the analysis, the monitors, the embedded localwhisk's
    # data directory) is private, whoever wrote it, under the umask most users have (issue 44).
    assert not_private(run_dir) == []


@pytest.mark.slow
def test_sigint_during_post_script_stops_it_and_marks_the_run(tmp_path, isolated_home):
    post = tmp_path / "post.sh"
    post.write_text("echo started\nsleep 60\n")
    config = write_workload(tmp_path, duration=0.5, perf_monitoring={"post_script": str(post)})
    out = tmp_path / "runs"
    with FakeOpenWhisk() as server:
        proc = start_run(config, out, server, isolated_home)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            logs = list(out.glob("*/monitors/post_script/stdout.log"))
            if logs and logs[0].read_text().strip() == "started":
                break
            time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 1, stderr
    (run_dir,) = run_dirs(out)
    manifest = read_manifest(run_dir).to_json()
    assert manifest["status"] == "interrupted" and "post_script" in manifest["status_reason"]
    assert manifest["scripts"]["post_script"]["stopped_by_faasprof"] is True
    assert len(read_invocations(run_dir)) == manifest["counts"]["planned"]


def test_execute_api_in_process_and_from_a_thread(tmp_path):
    import threading

    workload = workload_from_dict(
        {
            "test_name": "api",
            "test_duration_in_seconds": 0.5,
            "random_seed": 1,
            "blocking_cli": False,
            "platform": {"actions_deployed": True},
            "instances": {"a": {"application": "ok", "distribution": "Uniform", "rate": 20}},
        },
        origin="api",
    )
    results = {}
    handlers_before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    with FakeOpenWhisk() as server:
        connection = Connection(apihost=server.apihost, auth=AUTH, namespace="_")
        results["main"] = execute(workload, tmp_path / "main", connection=connection)
        thread = threading.Thread(
            target=lambda: results.__setitem__("thread", execute(workload, tmp_path / "thread", connection=connection))
        )
        thread.start()
        thread.join(30)
    for run_dir in results.values():
        manifest = read_manifest(run_dir).to_json()
        assert manifest["status"] == "complete" and manifest["counts"]["sent"] == manifest["counts"]["planned"] == 10
    assert set(results) == {"main", "thread"}
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == handlers_before
