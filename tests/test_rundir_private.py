"""Run directories are private and their atomic writes leave nothing behind (issue 44, items 11, 13).

A run directory holds the workload's parameters, the functions' results and the embedded
platform's action code: created 0700 with its files 0600 whatever the umask; a write that fails
on a full disk (ENOSPC, injected) removes its temporary file and passes the error on.
"""

from __future__ import annotations

import errno
import os
import stat

import pytest

from faasprof import rundir
from faasprof.rundir import layout


@pytest.fixture
def open_umask():
    """The umask most users have (022): what faasprof creates must not rely on a stricter one."""
    old = os.umask(0o022)
    yield
    os.umask(old)


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_a_run_directory_and_its_files_are_created_private(tmp_path, open_umask):
    run_dir = rundir.create_run_dir(tmp_path / "runs", "t")
    assert _mode(run_dir) == 0o700 and _mode(run_dir / rundir.MONITORS) == 0o700
    rundir.write_json_atomic(run_dir / "x.json", {"params": {"secret": 1}})
    assert _mode(run_dir / "x.json") == 0o600
    rundir.write_records(rundir.activations_path(run_dir), [{"activationId": "a", "response": {"result": {}}}])
    assert _mode(rundir.activations_path(run_dir)) == 0o600
    log = rundir.InvocationLog(run_dir)
    log.close()
    assert _mode(run_dir / rundir.INVOCATIONS) == 0o600
    rundir.write_plan(run_dir, b"", b"", ["i"], ["f"])
    assert _mode(run_dir / rundir.PLAN) == 0o600
    assert _mode(rundir.monitor_dir(run_dir, "perf")) == 0o700
    assert _mode(rundir.host_monitor_dir(run_dir, "node1", "perf")) == 0o700


def _full_disk(*_args, **_kwargs):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def test_a_json_write_on_a_full_disk_leaves_no_temporary_file(tmp_path, monkeypatch):
    target = tmp_path / rundir.MANIFEST
    target.write_text('{"old": true}\n')
    monkeypatch.setattr(layout.os, "fsync", _full_disk)
    with pytest.raises(OSError) as raised:
        rundir.write_json_atomic(target, {"new": True})
    assert raised.value.errno == errno.ENOSPC
    assert sorted(p.name for p in tmp_path.iterdir()) == [rundir.MANIFEST]
    assert target.read_text() == '{"old": true}\n'


def test_a_records_write_on_a_full_disk_leaves_no_temporary_file(tmp_path, monkeypatch):
    path = rundir.activations_path(tmp_path)
    monkeypatch.setattr(os, "fsync", _full_disk)
    with pytest.raises(OSError):
        rundir.write_records(path, [{"activationId": "a"}])
    assert list(tmp_path.iterdir()) == []
