"""``faasprof run`` as the invoker's tests drive it, against a platform at an API host (usually the
fake OpenWhisk of test_invoker_fakeserver.py) or the embedded localwhisk.

A workload file in the test's folder (``write_workload``); the command run to its end
(``run_against``) or started to be signalled or killed (``start_run``); the wait until the run has
journaled some lines (``wait_for_lines``); the run directories under ``--out`` (``run_dirs``); and
what a run stopped by a signal must show (``assert_interrupted_with_a_row_each``): the run
directory on stdout, its status and why, one row per planned invocation, those never sent
without a send time and counted apart. For the wait for records: a workload with calls whose
record is never stored (``ok_and_norecord``) and a wait of about a second (``short_records_wait``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from test_invoker_fakeserver import AUTH

from faasprof import rundir
from faasprof.platforms.openwhisk import records as activations
from faasprof.workload.spec import Workload, workload_from_dict
from tests.helpers import REPO_ROOT, run_cli


def write_workload(
    tmp_path: Path, name: str = "t", duration: float = 1.5, instances: dict | None = None, **top
) -> Path:
    data = {
        "test_name": name,
        "test_duration_in_seconds": duration,
        "random_seed": 7,
        "blocking_cli": False,
        "platform": {"actions_deployed": True},
        "instances": instances or {"a": {"application": "ok", "distribution": "Poisson", "rate": 40}},
        **top,
    }
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(data))
    return path


def ok_and_norecord(norecord_rate: float, ok_rate: float = 4) -> Workload:
    """One second of calls to the fake's ``ok`` and ``norecord`` (answered 202, its record never
    stored), Uniform: ``ok_rate`` and ``norecord_rate`` calls."""
    instances = {
        "a": {"application": "ok", "distribution": "Uniform", "rate": ok_rate},
        "b": {"application": "norecord", "distribution": "Uniform", "rate": norecord_rate},
    }
    data = {
        "test_name": "w",
        "test_duration_in_seconds": 1.0,
        "random_seed": 1,
        "blocking_cli": False,
        "platform": {"actions_deployed": True},
        "instances": instances,
    }
    return workload_from_dict(data, origin="w")


def short_records_wait(monkeypatch, time_limit_ms: int = 500, margin_s: float = 0.5) -> None:
    """The record wait as if the actions' time limit were ``time_limit_ms`` (the fake's actions
    declare none: 60 s) and the platform stored a record within ``margin_s`` after it."""
    monkeypatch.setattr(activations, "RECORD_STORE_MARGIN_S", margin_s)
    monkeypatch.setattr(activations, "DEFAULT_ACTION_TIMEOUT_MS", time_limit_ms)


def run_dirs(out: Path) -> list[Path]:
    return sorted(p for p in out.iterdir() if p.is_dir()) if out.exists() else []


def run_against(server, config: Path, out: Path, *extra, timeout: float = 60):
    """``faasprof run`` of ``config`` into ``out`` against ``server`` (its ``apihost``), to its end."""
    return run_cli("run", config, "--out", out, "--apihost", server.apihost, "--auth", AUTH, *extra, timeout=timeout)


def start_run(config: Path, out: Path, server, home: Path, *extra: str, output=subprocess.PIPE) -> subprocess.Popen:
    """``faasprof run`` started in the background (text pipes, or ``output`` for both) with ``home``
    as its HOME, against ``server`` (its ``apihost``), or the embedded localwhisk when it is None."""
    platform = ["--apihost", server.apihost, "--auth", AUTH] if server is not None else []
    return subprocess.Popen(
        [sys.executable, "-m", "faasprof", "run", str(config), "--out", str(out), *platform, *extra],
        cwd=REPO_ROOT,
        stdout=output,
        stderr=output,
        text=True,
        env={**os.environ, "HOME": str(home)},
    )


def wait_for_lines(
    out: Path, proc: subprocess.Popen, more_than: int = 20, name: str = rundir.INVOCATIONS, timeout_s: float = 20.0
) -> Path:
    """The run directory once its file ``name`` holds more than ``more_than`` lines; the run
    ending first, or ``timeout_s`` passing (the run is then killed), fails the test."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for run_dir in run_dirs(out):
            path = run_dir / name
            if path.exists() and path.read_text().count("\n") > more_than:
                return run_dir
        if proc.poll() is not None:
            raise AssertionError(f"faasprof run ended early: {proc.communicate()}")
        time.sleep(0.1)
    proc.kill()
    proc.communicate()
    raise AssertionError(f"no more than {more_than} lines appeared in {name} in {timeout_s:g} s")


def assert_interrupted_with_a_row_each(
    out: Path, stdout: str, planned: int, reason: str, reconstruct: bool = True
) -> tuple[Path, dict, list[dict]]:
    """The one run directory under ``out``, stopped by a signal (``reason`` in its status reason)
    with a row for each of its ``planned`` invocations; returns it, its manifest and its rows."""
    (run_dir,) = run_dirs(out)
    assert stdout.strip().splitlines()[-1] == str(run_dir)
    manifest = rundir.read_manifest(run_dir).to_json()
    assert manifest["status"] == "interrupted" and reason in manifest["status_reason"], manifest["status_reason"]
    rows = rundir.read_invocations(run_dir, reconstruct=reconstruct)
    assert sorted(int(r["seq"]) for r in rows) == list(range(planned))
    not_sent = [r for r in rows if r["outcome"] == "not_sent"]
    assert len(not_sent) > planned // 2 and all(r["sent_ns"] == "" for r in not_sent)
    assert all(r["outcome"] == "ok" for r in rows if r["sent_ns"])
    assert manifest["counts"]["not_sent"] == len(not_sent)
    return run_dir, manifest, rows
