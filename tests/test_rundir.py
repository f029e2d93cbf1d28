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
from faasprof.errors import FormatError


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
    loaded = rundir.load_manifest(tmp_path)
    assert loaded["format_version"] == rundir.FORMAT_VERSION
    assert rundir.ClockAnchor.from_json(loaded["clock"]).wall_ns_at(10) == 5_010
    loaded["format_version"] = 99
    (tmp_path / "manifest.json").write_text(json.dumps(loaded))
    with pytest.raises(FormatError, match="format_version 99 is not supported"):
        rundir.load_manifest(tmp_path)


def test_missing_manifest_is_a_clear_error(tmp_path):
    with pytest.raises(FormatError, match="not a faasprof run directory"):
        rundir.load_manifest(tmp_path)


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
        sys.path.insert(0, {str(rundir.__file__.rsplit('/faasprof/', 1)[0])!r})
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
    (tmp_path / "invocations.csv").write_text(",".join(rundir.INVOCATION_COLUMNS) + "\n0,i0,f,1,2,3,ok,202,a,\n1,i0,f,4,5")
    assert len(rundir.read_invocations(tmp_path)) == 1
