"""Issue 12: records of activations still running are waited for (with progress), `--realtime` is
never silently ignored, and `execute` failing mid-run still leaves one row per planned invocation."""

from __future__ import annotations

import json

import pytest
from run_harness import ok_and_norecord, run_against, run_dirs, short_records_wait, write_workload
from test_invoker_fakeserver import AUTH, FakeOpenWhisk

from faasprof import rundir
from faasprof.errors import RunError
from faasprof.experiments.analyzed import execute_analyzed
from faasprof.invoker import sender
from faasprof.invoker.run import execute
from faasprof.platforms.openwhisk import records as activations
from faasprof.platforms.openwhisk.client import OpenWhiskClient
from faasprof.platforms.openwhisk.connection import Connection
from faasprof.progress import Progress
from faasprof.workload.spec import workload_from_dict
from tests.helpers import run_cli


def _saved_ids(run_dir):
    return {json.loads(line)["activationId"] for line in (run_dir / rundir.ACTIVATIONS).read_text().splitlines()}


@pytest.mark.slow
def test_run_analyze_waits_for_records_still_being_stored(tmp_path, isolated_home):
    config = write_workload(
        tmp_path, duration=1.0, instances={"a": {"application": "ok", "distribution": "Uniform", "rate": 10}}
    )
    out = tmp_path / "runs"
    with FakeOpenWhisk() as server:
        server.record_delay_s = 3.0  # the platform stores each record 3 s after the call
        done = run_against(server, config, out, "--analyze", "--quiet", timeout=120)
    assert done.returncode == 0, done.stderr
    (run_dir,) = run_dirs(out)
    manifest = rundir.read_manifest(run_dir).to_json()
    ids = {r["activation_id"] for r in rundir.read_invocations(run_dir)}
    assert len(ids) == 10 and _saved_ids(run_dir) == ids
    assert manifest["activations"]["missing"] == 0 and manifest["activations"]["expected"] == 10
    summary = json.loads((run_dir / "analysis" / "summary.json").read_text())
    assert summary["records"]["missing"] == 0


@pytest.mark.slow
def test_analyze_waits_with_progress_then_reports_what_is_missing_and_why(tmp_path, isolated_home, monkeypatch):
    workload = ok_and_norecord(2)
    short_records_wait(monkeypatch, time_limit_ms=1000, margin_s=2.0)
    monkeypatch.setattr(activations, "WAIT_PROGRESS_S", 0.5)
    lines = []
    with FakeOpenWhisk() as server:
        server.record_delay_s = 1.5
        connection = Connection(apihost=server.apihost, auth=AUTH, namespace="_")
        run_dir = execute(workload, tmp_path / "runs", connection=connection)
        assert not (run_dir / rundir.ACTIVATIONS).exists()  # nothing fetched without --analyze
        with OpenWhiskClient(connection) as client:
            report = activations.save_run_records(run_dir, client, say=lines.append)
    rows = rundir.read_invocations(run_dir)
    ok_ids = {r["activation_id"] for r in rows if r["instance"] == "a"}
    assert _saved_ids(run_dir) == ok_ids and len(ok_ids) == 4
    assert report["expected"] == 6 and report["saved"] == 4 and report["missing"] == 2
    assert "not stored by the platform 3 s after the last send" in report["missing_why"]
    assert any(line.startswith("waiting for activation records:") and "giving up in" in line for line in lines)


@pytest.mark.slow
def test_run_analyze_asks_once_more_for_the_records_its_wait_did_not_find(tmp_path, isolated_home, monkeypatch):
    """The run waited until nothing could still be running; its analysis asks for the records still
    missing once, without the retries of ``faasprof analyze`` (7.5 s that found nothing)."""
    short_records_wait(monkeypatch)
    workload = ok_and_norecord(2)
    with FakeOpenWhisk() as server:
        analysis_from = []  # how many record reads the run made before its analysis began

        def line(text: str) -> None:
            if text == "analyzing":
                analysis_from.append(len(server.record_reads))

        connection = Connection(apihost=server.apihost, auth=AUTH, namespace="_")
        run_dir = execute_analyzed(workload, tmp_path / "runs", connection=connection, progress=Progress(line))
        (start,) = analysis_from
        asked = [read["path"].split("?")[0].rsplit("/", 1)[-1] for read in server.record_reads[start:]]
    missing = {r["activation_id"] for r in rundir.read_invocations(run_dir) if r["instance"] == "b"}
    assert len(missing) == 2 and rundir.read_manifest(run_dir).activations["missing"] == 2
    assert sorted(a for a in asked if a in missing) == sorted(missing), asked


@pytest.mark.slow
def test_realtime_flag_before_the_workload_is_not_taken_for_a_priority(tmp_path, isolated_home):
    config = write_workload(tmp_path, duration=0.5)
    out = tmp_path / "runs"
    with FakeOpenWhisk() as server:
        done = run_cli(
            "run", "--realtime", config, "--out", out, "--apihost", server.apihost, "--auth", AUTH, timeout=120
        )
    assert done.returncode == 0, done.stderr
    (run_dir,) = run_dirs(out)
    invoker = rundir.read_manifest(run_dir).to_json()["invoker"]
    assert invoker["realtime_priority"] == 10
    # Applied, or said not to be: never silently ignored.
    assert invoker["realtime_applied"] is True or "--realtime: could not use SCHED_FIFO" in done.stderr
    done = run_cli("run", config, "--realtime-priority", "0", "--realtime", "--out", out, timeout=60)
    assert done.returncode == 2 and done.stderr.strip().startswith(
        "--realtime-priority: the SCHED_FIFO priority must be 1..99"
    )


def test_execute_raising_mid_run_still_leaves_one_row_per_planned_invocation(tmp_path, monkeypatch):
    workload = workload_from_dict(
        {
            "test_name": "boom",
            "test_duration_in_seconds": 1.0,
            "random_seed": 1,
            "blocking_cli": True,
            "platform": {"actions_deployed": True},
            "instances": {"a": {"application": "slow", "distribution": "Uniform", "rate": 40}},
        },
        origin="boom",
    )
    real_submit = sender.Sender.submit
    calls = {"n": 0}

    def failing_submit(self, seq, request_index):
        calls["n"] += 1
        if calls["n"] == 15:
            raise RuntimeError("a bug in the send path")
        real_submit(self, seq, request_index)

    monkeypatch.setattr(sender.Sender, "submit", failing_submit)
    with FakeOpenWhisk() as server:
        server.slow_s = 5.0  # answers still outstanding when the send path fails
        connection = Connection(apihost=server.apihost, auth=AUTH, namespace="_")
        with pytest.raises(RunError, match="faasprof failed: RuntimeError: a bug in the send path"):
            execute(workload, tmp_path / "runs", connection=connection)
    (run_dir,) = run_dirs(tmp_path / "runs")
    manifest = rundir.read_manifest(run_dir).to_json()
    assert manifest["status"] == "interrupted" and "RuntimeError" in manifest["status_reason"]
    rows = rundir.read_invocations(run_dir, reconstruct=False)  # the rows written, not reconstructed ones
    assert sorted(int(r["seq"]) for r in rows) == list(range(manifest["counts"]["planned"])) and len(rows) == 40
    sent = [r for r in rows if r["sent_ns"]]
    assert len(sent) == 14 and all(r["outcome"] == "timeout" for r in sent), [(r["outcome"], r["error"]) for r in sent][
        :3
    ]  # written, answer given up on
    assert all(r["outcome"] == "not_sent" for r in rows if not r["sent_ns"])
