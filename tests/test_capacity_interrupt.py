"""Ctrl-C during a capacity search, as a user presses it: ``faasprof capacity`` and the search
``faasprof run`` makes for a capacity fraction both end ``interrupted``, exit 1 (run's ended exit 2
with advice to change --start-rate), and run's search printed the lines ``faasprof capacity``
prints. Subprocesses on the embedded localwhisk: slow."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from run_harness import wait_for_lines

from tests.helpers import REPO_ROOT

pytest.importorskip("faasprof.localwhisk.embedded")


def _start(args: list[str], home: Path, store: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "faasprof", *args],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "HOME": str(home), "FAASPROF_CAPACITY_STORE": str(store)},
    )


def _interrupt_in_a_probe(proc: subprocess.Popen, out: Path) -> tuple[str, str]:
    try:
        wait_for_lines(out / "capacity", proc, 5, timeout_s=90)  # a probe is sending
        proc.send_signal(signal.SIGINT)
        return proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


@pytest.mark.slow
def test_ctrl_c_in_runs_capacity_search_exits_interrupted(tmp_path, isolated_home):
    config = tmp_path / "modes.json"
    config.write_text(
        json.dumps(
            {
                "test_name": "modes",
                "test_duration_in_seconds": 10,
                "random_seed": 1,
                "instances": {
                    "a": {
                        "application": "json_dumps",
                        "distribution": "Uniform",
                        "rate": {"capacity_fraction": 0.5},
                        "activity_window": [0, 10],
                    }
                },
            }
        )
    )
    out = tmp_path / "runs"
    started = time.monotonic()
    proc = _start(["run", str(config), "--out", str(out)], isolated_home, tmp_path / "store.json")
    _, stderr = _interrupt_in_a_probe(proc, out)
    assert proc.returncode == 1, stderr[-3000:]
    assert stderr.strip().splitlines()[-1] == "interrupted", stderr[-3000:]
    assert "--start-rate" not in stderr and "none found" not in stderr
    assert not (tmp_path / "store.json").exists()  # an interrupted search stores nothing
    assert time.monotonic() - started < 150


@pytest.mark.slow
def test_ctrl_c_in_faasprof_capacity_exits_interrupted(tmp_path, isolated_home):
    out = tmp_path / "runs"
    proc = _start(["capacity", "json_dumps", "--out", str(out)], isolated_home, tmp_path / "store.json")
    stdout, stderr = _interrupt_in_a_probe(proc, out)
    assert proc.returncode == 1, stderr[-3000:]
    assert stderr.strip().splitlines()[-1] == "interrupted" and stdout == ""
    assert not (tmp_path / "store.json").exists()
