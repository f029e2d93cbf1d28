"""``faasprof analyze`` of what a run saved, whatever happened to it after (issue 44, items 11, 12, 14).

- ``activations.jsonl`` cut mid-line after the run: every whole line is kept and the records it
  lacks come from the embedded platform's store, the cut lines counted and said.
- A full disk while the records are saved: one line and exit 3, no traceback, no temporary file.
- A run made with ``--apihost``/``--auth`` whose platform is gone (the key rightly not stored):
  nothing is fetched, one line says why, and the records it lacks are counted as missing with
  that reason; exit 0.
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import shutil

import pytest
from run_harness import ok_and_norecord, short_records_wait
from test_invoker_fakeserver import AUTH, FakeOpenWhisk

from faasprof import rundir
from faasprof.commands import analyze as analyze_command
from faasprof.errors import NotReadyError
from faasprof.invoker.run import execute
from faasprof.platforms.openwhisk.connection import Connection
from faasprof.progress import Progress
from faasprof.workload.spec import workload_from_dict
from tests.helpers import run_cli


class _Quiet:
    def write(self, text: str) -> None:
        pass

    def flush(self) -> None:
        pass


@pytest.fixture(scope="module")
def embedded_run(tmp_path_factory):
    """One embedded run of 20 non-blocking calls, every record saved; each test copies it."""
    base = tmp_path_factory.mktemp("embedded")
    home = base / "home"
    home.mkdir()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HOME", str(home))
        patch.setenv("FAASPROF_TEST_HOME", str(home))
        patch.delenv("WSK_CONFIG_FILE", raising=False)
        workload = workload_from_dict(
            {
                "test_name": "cut",
                "test_duration_in_seconds": 1.0,
                "random_seed": 3,
                "blocking_cli": False,
                "instances": {
                    "s": {"application": "spin", "distribution": "Uniform", "rate": 20, "params": {"service_ms": 1}}
                },
            },
            origin=str(base / "cut.json"),
            path=base / "cut.json",
        )
        run_dir = execute(
            workload, base / "runs", local_settings={"isolation": "rlimit"}, progress=Progress.to(_Quiet())
        )
    saved = rundir.read_manifest(run_dir).activations
    assert saved["missing"] == 0 and saved["saved"] == 20, saved
    return run_dir


def _copy(run_dir, tmp_path):
    return shutil.copytree(run_dir, tmp_path / run_dir.name, symlinks=True)


def _cut_mid_line(run_dir) -> None:
    """Cut ``activations.jsonl`` in the middle of a line, about halfway through the file."""
    path = rundir.activations_path(run_dir)
    data = path.read_bytes()
    middle = data.index(b"\n", len(data) // 2) + 10
    path.write_bytes(data[:middle])
    for index in path.parent.glob(f".{path.name}*"):
        index.unlink()  # no column index may vouch for the file as it was


def test_a_records_file_cut_mid_line_is_completed_from_the_store(embedded_run, tmp_path, isolated_home):
    run_dir = _copy(embedded_run, tmp_path)
    _cut_mid_line(run_dir)
    result = run_cli("analyze", run_dir, "--no-plots")
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert "1 line(s) cut short or unreadable; every whole line was kept" in result.stderr, result.stderr
    summary = json.loads((run_dir / rundir.ANALYSIS / "summary.json").read_text())
    assert summary["records"]["missing"] == 0 and summary["records"]["found"] == 20, summary["records"]
    assert len(rundir.read_record_ids(rundir.activations_path(run_dir))) == 20


def test_a_full_disk_while_saving_the_records_is_one_line_and_exit_3(
    embedded_run, tmp_path, isolated_home, monkeypatch
):
    run_dir = _copy(embedded_run, tmp_path)
    rundir.activations_path(run_dir).unlink()  # lost: the store gives them all back
    before = sorted(p.name for p in run_dir.iterdir())

    def full_disk(*_args, **_kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full_disk)
    parser = argparse.ArgumentParser()
    analyze_command.add_arguments(parser)
    args = parser.parse_args([str(run_dir), "--no-plots"])
    with pytest.raises(NotReadyError) as raised:
        analyze_command.main(args)
    message = str(raised.value)
    assert raised.value.exit_code == 3 and "\n" not in message
    assert "No space left on device" in message and "free space there" in message, message
    assert sorted(p.name for p in run_dir.iterdir()) == before


def test_a_run_whose_platform_is_gone_is_analysed_without_its_key(tmp_path, isolated_home, monkeypatch):
    short_records_wait(monkeypatch)
    with FakeOpenWhisk() as server:
        run_dir = execute(
            ok_and_norecord(4),
            tmp_path / "runs",
            connection=Connection(apihost=server.apihost, auth=AUTH, namespace="_"),
            save_records=True,
        )
    assert AUTH not in (run_dir / rundir.MANIFEST).read_text()
    result = run_cli("analyze", run_dir, "--no-plots")
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert f"no auth key to fetch records from {server.apihost}: pass --auth" in result.stderr, result.stderr
    summary = json.loads((run_dir / rundir.ANALYSIS / "summary.json").read_text())
    assert summary["records"]["found"] == 4 and summary["records"]["missing"] == 4, summary["records"]
    activations = rundir.read_manifest(run_dir).activations
    assert activations["missing"] == 4 and activations["missing_why"].startswith("no auth key to fetch records")


def test_a_run_whose_every_call_was_refused_needs_no_key_to_be_analysed(tmp_path, isolated_home, monkeypatch):
    """All 429: no activation id, so nothing to fetch; the run is analysed without --auth."""
    short_records_wait(monkeypatch)
    workload = workload_from_dict(
        {
            "test_name": "refused",
            "test_duration_in_seconds": 1.0,
            "random_seed": 1,
            "blocking_cli": False,
            "platform": {"actions_deployed": True},
            "instances": {"t": {"application": "throttled", "distribution": "Uniform", "rate": 5}},
        },
        origin="w",
    )
    with FakeOpenWhisk() as server:
        run_dir = execute(
            workload,
            tmp_path / "runs",
            connection=Connection(apihost=server.apihost, auth=AUTH, namespace="_"),
            save_records=False,
        )
    result = run_cli("analyze", run_dir, "--no-plots")
    assert result.returncode == 0, result.stderr
    assert "nothing to fetch" in result.stderr and "no auth key" not in result.stderr, result.stderr
    summary = json.loads((run_dir / rundir.ANALYSIS / "summary.json").read_text())
    assert summary["records"]["missing"] == 0, summary["records"]
