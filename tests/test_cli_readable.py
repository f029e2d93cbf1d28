"""CLI details a researcher meets first: durations with units for --pause-grace, help that states
each default once."""

from __future__ import annotations

import subprocess
import sys


def _cli(*args, timeout=60):
    return subprocess.run([sys.executable, "-m", "faasprof", *args], capture_output=True, text=True, timeout=timeout)


def test_run_pause_grace_takes_a_duration_with_a_unit(tmp_path):
    bad = _cli("run", str(tmp_path / "missing.json"), "--pause-grace", "soon")
    assert bad.returncode == 2 and "not a duration such as 50, 50ms or 10s" in bad.stderr
    # 10s parses; what fails next is the missing workload file, not the flag.
    good = _cli("run", str(tmp_path / "missing.json"), "--pause-grace", "10s")
    assert good.returncode == 2 and "pause-grace" not in good.stderr and "missing.json" in good.stderr


def test_local_start_help_states_each_default_once():
    done = _cli("local", "start", "--help")
    assert done.returncode == 0
    block = done.stdout[done.stdout.index("--host HOST"):done.stdout.index("--allow-remote  ")]
    assert block.count("(default") == 1
