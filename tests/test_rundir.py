"""The run-directory contract: creation never overwrites, manifests are versioned, rows are durable."""

from __future__ import annotations

import datetime as dt
import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from faasprof import rundir
from faasprof.errors import FolderKindError, FormatError


def test_create_never_reuses_a_path(tmp_path):
    when = dt.datetime(2026, 11, 21, 2, 20, 30, tzinfo=dt.timezone.utc)
    first = rundir.create_run_dir(tmp_path, "my test/1", when)
    second = rundir.create_run_dir(tmp_path, "my test/1", when)
    assert first.name == "my_test_1-20261121T022030"
    assert second.name == "my_test_1-20261121T022030-2"
    assert (first / "monitors").is_dir()


def test_manifest_roundtrip_and_version_check(tmp_path):
    clock = rundir.ClockAnchor(1_000, 5_000)
    manifest = rundir.new_manifest("t", {"test_name": "t"}, clock)
    rundir.write_manifest(tmp_path, manifest)
    loaded = rundir.read_manifest(tmp_path).to_json()
    assert loaded["format_version"] == rundir.FORMAT_VERSION
    assert rundir.ClockAnchor.from_json(loaded["clock"]).wall_ns_at(10) == 5_010
    loaded["format_version"] = 99
    (tmp_path / "manifest.json").write_text(json.dumps(loaded))
    with pytest.raises(FormatError, match="format_version 99 is not supported"):
        rundir.read_manifest(tmp_path)


def test_missing_manifest_is_a_clear_error(tmp_path):
    with pytest.raises(FormatError, match="not a faasprof run directory"):
        rundir.read_manifest(tmp_path)


def test_invocation_log_writes_columns_and_rows(tmp_path):
    log = rundir.InvocationLog(tmp_path, flush_interval_s=0.05)
    log.append((0, "i0", "f", 10, 12, 30, "ok", 202, "abc", None))
    log.append((1, "i0", "f", 20, None, None, "not_sent", None, None, "run interrupted"))
    log.close()
    rows = rundir.read_invocations(tmp_path)
    assert [r["outcome"] for r in rows] == ["ok", "not_sent"]
    assert rows[1]["sent_ns"] == "" and rows[0]["http_status"] == "202"
    with pytest.raises(FileExistsError):
        rundir.InvocationLog(tmp_path)


def test_rows_survive_kill_9(tmp_path):
    """Rows appended more than a flush interval before a SIGKILL are on disk."""
    script = textwrap.dedent(
        f"""
        import sys, time
        sys.path.insert(0, {str(rundir.__file__.rsplit("/faasprof/", 1)[0])!r})
        from faasprof import rundir
        log = rundir.InvocationLog({str(tmp_path)!r}, flush_interval_s=0.1)
        for i in range(100):
            log.append((i, "i0", "f", i, i, i, "ok", 202, "a", None))
        print("ready", flush=True)
        time.sleep(60)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(0.5)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=10)
    assert len(rundir.read_invocations(tmp_path)) == 100


def test_truncated_last_line_is_dropped(tmp_path):
    (tmp_path / "invocations.csv").write_text(
        ",".join(rundir.INVOCATION_COLUMNS) + "\n0,i0,f,1,2,3,ok,202,a,\n1,i0,f,4,5"
    )
    assert len(rundir.read_invocations(tmp_path)) == 1


# -- the plan, the send journal and torn runs ------------------------------------------------------


def _torn_run(tmp_path, planned=10, rows=range(0, 4), sends=range(0, 7)):
    """A run directory as a kill -9 leaves it: plan and manifest written, some sends, some rows."""
    from array import array

    clock = rundir.ClockAnchor(0, 1_000)
    manifest = rundir.new_manifest("t", {"test_name": "t"}, clock)
    manifest.counts["planned"] = planned
    rundir.write_manifest(tmp_path, manifest)
    rundir.write_plan(
        tmp_path,
        array("q", [i * 100 for i in range(planned)]),
        array("i", [i % 2 for i in range(planned)]),
        ["a", "b"],
        ["fa", "fb"],
    )
    log = rundir.InvocationLog(tmp_path, flush_interval_s=0.05)
    for seq in sends:
        log.sent(seq, seq * 100 + 5)
    for seq in rows:
        log.append(
            (
                seq,
                "ab"[seq % 2],
                ("fa", "fb")[seq % 2],
                seq * 100,
                seq * 100 + 5,
                seq * 100 + 50,
                "ok",
                202,
                f"id{seq}",
                None,
            )
        )
    log.close()
    return tmp_path


def test_plan_roundtrip(tmp_path):
    from array import array

    rundir.write_plan(tmp_path, array("q", [5, 7, 2**40]), array("i", [0, 1, 0]), ["x", "y"], ["f", "g"])
    plan = rundir.read_plan(tmp_path)
    assert list(plan.intended_ns) == [5, 7, 2**40] and list(plan.instance_idx) == [0, 1, 0]
    assert plan.instance_names == ["x", "y"] and plan.functions == ["f", "g"] and len(plan) == 3
    with pytest.raises(FileExistsError):  # never overwritten
        rundir.write_plan(tmp_path, array("q", [1]), array("i", [0]), ["x"], ["f"])
    (tmp_path / rundir.PLAN).write_bytes((tmp_path / rundir.PLAN).read_bytes()[:-3])
    with pytest.raises(FormatError, match="plan.bin: unreadable"):
        rundir.read_plan(tmp_path)


def test_send_journal_has_a_line_per_send(tmp_path):
    log = rundir.InvocationLog(tmp_path, flush_interval_s=0.05)
    log.sent(3, 1234)
    log.sent(1, 99)
    time.sleep(0.3)  # the flush thread, not close(), makes them durable
    assert (tmp_path / rundir.SENDS).read_text() == "seq,sent_ns\n3,1234\n1,99\n"
    log.close()
    assert rundir.read_sends(tmp_path) == {3: 1234, 1: 99}


def test_torn_run_is_reconstructed_from_plan_journal_and_rows(tmp_path):
    run = _torn_run(tmp_path)
    rows = rundir.read_invocations(run)
    assert [int(r["seq"]) for r in rows] == list(range(10))
    assert [r["outcome"] for r in rows] == ["ok"] * 4 + ["unanswered"] * 3 + ["unrecorded"] * 3
    assert (
        rows[5]["sent_ns"] == "505"
        and rows[5]["instance"] == "b"
        and rows[5]["function"] == "fb"
        and rows[5]["intended_ns"] == "500"
    )
    assert rows[8]["sent_ns"] == "" and rows[8]["done_ns"] == ""
    report = rundir.completeness(run)
    assert (report.planned, report.rows, report.unanswered, report.unrecorded, report.missing) == (10, 4, 3, 3, 6)
    assert report.describe().startswith(
        "torn run: 6 of 10 planned invocations have no row: 3 sent without a recorded answer"
    )
    assert len(rundir.read_invocations(run, reconstruct=False)) == 4


def test_whole_run_needs_no_reconstruction(tmp_path):
    run = _torn_run(tmp_path, planned=5, rows=range(5), sends=range(5))
    assert rundir.completeness(run).describe() is None
    assert [r["outcome"] for r in rundir.read_invocations(run)] == ["ok"] * 5


def test_format_1_torn_run_is_counted_from_the_manifest(tmp_path):
    clock = rundir.ClockAnchor(0, 1_000)
    manifest = rundir.new_manifest("t", {"test_name": "t"}, clock)
    manifest.format_version = 1
    manifest.counts["planned"] = 8
    rundir.write_manifest(tmp_path, manifest)
    (tmp_path / "invocations.csv").write_text(
        ",".join(rundir.INVOCATION_COLUMNS) + "\n0,i0,f,1,2,3,ok,202,a,\n1,i0,f,4,5,6,ok,202,b,\n"
    )
    assert rundir.read_manifest(tmp_path).format_version == 1
    assert len(rundir.read_invocations(tmp_path)) == 2
    report = rundir.completeness(tmp_path)
    assert (report.planned, report.uncounted, report.plan_source) == (8, 6, "manifest counts")
    assert "6 that cannot be reconstructed" in report.describe()


def test_a_failed_write_stops_writing_and_keeps_what_was_written(tmp_path):
    log = rundir.InvocationLog(tmp_path, flush_interval_s=60)
    log.append((0, "i0", "f", 1, 2, 3, "ok", 202, "a", None))
    log.flush()
    full = os.open("/dev/full", os.O_WRONLY)
    os.dup2(full, log._fd)  # every later write fails with ENOSPC, as on a full disk
    os.close(full)
    log.append((1, "i0", "f", 4, 5, 6, "ok", 202, "b", None))
    log.flush()
    assert log.error and "No space left on device" in log.error and "--out" in log.error
    log.append((2, "i0", "f", 7, 8, 9, "ok", 202, "c", None))
    log.close()
    assert log.lost == 2
    assert [r["seq"] for r in rundir.read_invocations(tmp_path)] == ["0"]


def test_typed_manifest_reads_every_field_and_keeps_the_rest(tmp_path):
    clock = rundir.ClockAnchor(1_000, 5_000)
    manifest = rundir.new_manifest(
        "t", {"instances": {"i0": {"function": "f", "blocking": False}}}, clock, platform={"kind": "localwhisk"}
    )
    manifest.counts["planned"] = 7
    manifest.update(
        monitors=[{"name": "perf", "status": "stopped", "events": ["cycles"]}, {"name": "rdt", "status": "failed"}]
    )
    manifest.update(something_new={"kept": True})
    rundir.write_manifest(tmp_path, manifest)
    typed = rundir.read_manifest(tmp_path)
    assert (typed.format_version, typed.test_name, typed.status) == (rundir.FORMAT_VERSION, "t", "running")
    assert typed.wall_ns_at_zero == 5_000 and typed.monotonic_zero_ns == 1_000
    assert typed.planned == 7 and typed.instances["i0"]["function"] == "f"
    assert typed.platform == {"kind": "localwhisk"} and typed.host == {}
    assert sorted(typed.monitors) == ["perf", "rdt"] and typed.monitors["perf"]["events"] == ["cycles"]
    assert typed.extra == {"something_new": {"kept": True}}
    assert typed.to_json() == json.loads((tmp_path / "manifest.json").read_text())  # written back exactly as read
    rundir.write_manifest(tmp_path, typed)
    assert rundir.read_manifest(tmp_path) == manifest


def test_monitors_are_one_shape_whatever_the_file_holds(tmp_path):
    as_list = rundir.Manifest.from_json({"format_version": 2, "monitors": [{"name": "perf", "status": "stopped"}]})
    as_dict = rundir.Manifest.from_json({"format_version": 2, "monitors": {"perf": {"status": "stopped"}}})
    assert as_list.monitors == as_dict.monitors == {"perf": {"name": "perf", "status": "stopped"}}
    assert rundir.Manifest.from_json({"format_version": 2}).monitors == {}


@pytest.mark.parametrize(
    "change, message",
    [
        ({"format_version": 3}, "format_version 3 is not supported"),
        ({"format_version": None}, "format_version None is not supported"),
        ({"clock": [1, 2]}, "clock is list, expected an object"),
        ({"clock": {"wall_ns_at_zero": "soon"}}, "clock.wall_ns_at_zero is 'soon'"),
        ({"monitors": "perf"}, "monitors is str"),
        ({"status": 3}, "status 3 is not text"),
    ],
)
def test_a_damaged_or_unknown_manifest_is_rejected_naming_the_field(tmp_path, change, message):
    manifest = rundir.new_manifest("t", {}, rundir.ClockAnchor(1, 2)).to_json()
    manifest.update(change)
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(FormatError, match=message) as raised:
        rundir.read_manifest(tmp_path)
    assert str(raised.value).startswith(str(tmp_path / "manifest.json"))


def test_a_study_folder_is_refused_where_a_run_directory_is_read_and_read_as_its_kind(tmp_path):
    rundir.write_manifest(tmp_path, rundir.study_manifest("slowdown", 2, status="complete", fits={"exec_warm": None}))
    assert json.loads((tmp_path / "manifest.json").read_text()) == {
        "format_version": 2,
        "kind": "slowdown",
        "status": "complete",
        "fits": {"exec_warm": None},
    }
    with pytest.raises(FolderKindError) as raised:
        rundir.read_manifest(tmp_path)
    assert str(raised.value) == (
        f"{tmp_path} is a `faasprof slowdown` folder, not a run directory (its manifest says kind 'slowdown'); "
        "its results are slowdown.csv and calls.csv in it, as `faasprof slowdown` wrote them"
    )
    study = rundir.read_manifest(tmp_path, kind="slowdown")
    assert (study.kind, study.status, study.extra) == ("slowdown", "complete", {"fits": {"exec_warm": None}})
    assert rundir.read_manifest(tmp_path, kind=None).kind == "slowdown"


def test_a_run_directory_without_kind_reads_as_a_run_and_is_not_a_study_folder(tmp_path):
    (tmp_path / "manifest.json").write_text(json.dumps({"format_version": 1, "test_name": "old", "status": "complete"}))
    assert rundir.read_manifest(tmp_path).kind == "run"
    with pytest.raises(FolderKindError) as raised:
        rundir.read_manifest(tmp_path, kind="mpki")
    assert (
        str(raised.value)
        == f"{tmp_path} is a run directory, not a `faasprof mpki` folder (its manifest says kind 'run'); read it with `faasprof analyze {tmp_path}`"
    )
    (tmp_path / "manifest.json").write_text(json.dumps({"format_version": 1, "kind": "sweep-of-the-future"}))
    with pytest.raises(
        FormatError, match="kind 'sweep-of-the-future' is not one faasprof .* knows .*; upgrade faasprof to read it"
    ):
        rundir.read_manifest(tmp_path)


def test_a_typed_manifest_written_back_keeps_the_files_keys_and_adds_what_was_set(tmp_path):
    (tmp_path / "manifest.json").write_text(
        json.dumps({"format_version": 1, "status": "running", "test_name": "old", "monitors": []})
    )
    manifest = rundir.read_manifest(tmp_path)
    manifest.status = "complete"
    manifest.update(sweep_point={"values": {"rate": 2}}, note="kept")
    rundir.write_manifest(tmp_path, manifest)
    assert list(json.loads((tmp_path / "manifest.json").read_text()).items()) == [
        ("format_version", 1),
        ("status", "complete"),
        ("test_name", "old"),
        ("monitors", []),
        ("sweep_point", {"values": {"rate": 2}}),
        ("note", "kept"),
    ]
    assert (
        rundir.update_manifest(tmp_path, analysis_error="boom").analysis_error
        == rundir.read_manifest(tmp_path).analysis_error
        == "boom"
    )


def test_format_1_manifest_reads_typed(tmp_path):
    (tmp_path / "manifest.json").write_text(
        json.dumps(
            {
                "format_version": 1,
                "test_name": "old",
                "status": "complete",
                "clock": {"monotonic_zero_ns": 3, "wall_ns_at_zero": 9},
                "monitors": [],
            }
        )
    )
    typed = rundir.read_manifest(tmp_path)
    assert (typed.format_version, typed.status, typed.wall_ns_at_zero, typed.planned, typed.monitors) == (
        1,
        "complete",
        9,
        None,
        {},
    )


def test_activation_records_file_write_append_and_read_back(tmp_path):
    path = tmp_path / rundir.ACTIVATIONS
    records = [{"activationId": "b", "start": 2}, {"activationId": "a", "start": 2}, {"activationId": "c", "start": 1}]
    assert rundir.write_records(path, rundir.sort_records(records)) == 3
    assert [json.loads(line)["activationId"] for line in path.read_text().splitlines()] == ["c", "a", "b"]
    with open(path, "ab") as handle:
        handle.write(b'{"activationId": "cut sho')  # a line cut short by a crash
    assert rundir.append_records(path, [{"activationId": "d", "start": 3}]) == 1
    assert sorted(rundir.read_record_ids(path)) == ["a", "b", "c", "d"]
    assert rundir.read_record_ids(tmp_path / "absent.jsonl") == {}


def test_monitor_locations(tmp_path):
    perf = rundir.monitor_dir(tmp_path, "perf")
    (perf / rundir.MONITOR_META).write_text(json.dumps({"monotonic_ns_at_start": 5}))
    rundir.monitor_dir(tmp_path, "rdt")
    assert list(rundir.monitor_dirs(tmp_path)) == ["perf", "rdt"]
    assert rundir.read_monitor_meta(perf) == {"monotonic_ns_at_start": 5}
    assert rundir.read_monitor_meta(tmp_path / "monitors" / "rdt") == {}


def test_a_run_status_is_its_word_in_the_manifest_in_text_and_in_comparisons(tmp_path):
    assert rundir.STATUSES == ("running", "complete", "interrupted", "aborted")
    status = rundir.RunStatus.INTERRUPTED
    assert status == "interrupted" and f"run {status}: why" == "run interrupted: why" and str(status) == "interrupted"
    assert json.dumps({"status": status}) == '{"status": "interrupted"}'
    manifest = rundir.new_manifest("t", {}, rundir.ClockAnchor())
    manifest.status = rundir.RunStatus.ABORTED
    rundir.write_manifest(tmp_path, manifest)
    assert json.loads((tmp_path / "manifest.json").read_text())["status"] == "aborted"
    assert rundir.read_manifest(tmp_path).status == rundir.RunStatus.ABORTED
