"""Ctrl-C while ``faasprof`` is still loading its modules is ``interrupted`` and exit 1, like one at
any later point (it was a KeyboardInterrupt traceback from inside an import and death by SIGINT,
seen under load in test_invoker_pushback's first-second case)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _loading_numpy(pid: int) -> bool:
    """Whether the process has mapped numpy's core extension: faasprof.cli's imports are under way."""
    try:
        return "_multiarray_umath" in Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return False


def test_ctrl_c_while_the_modules_load_is_one_line_and_exit_1(tmp_path):
    # An empty bytecode cache and none written: every module is compiled from source, as on a
    # first run, so the imports take long enough to be interrupted in the middle.
    env = {**os.environ, "PYTHONPYCACHEPREFIX": str(tmp_path / "pycache"), "PYTHONDONTWRITEBYTECODE": "1"}
    workload = REPO / "faasprof" / "workload_configs" / "paper_listing1.json"
    proc = subprocess.Popen(
        [sys.executable, "-m", "faasprof", "validate", str(workload)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        env=env,
    )
    try:
        deadline = time.monotonic() + 60
        while not _loading_numpy(proc.pid) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.002)
        assert proc.poll() is None, "faasprof ended before its imports could be interrupted"
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert (proc.returncode, stderr, stdout) == (1, "interrupted\n", "")
