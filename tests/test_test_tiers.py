"""The test tiers: the full command (`pytest -q`) leaves out the testbed's tests (hardware,
openwhisk) unless -m names them, and so does the quick tier (`pytest -m "not slow"`), which a
second -m in addopts would have let through."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.helpers import REPO_ROOT

# The third file has a slow test and a quick one, and imports little: each collection below starts
# a pytest (test_schedule.py, which imports scipy.stats, made each 1.3 s longer).
FILES = ("tests/test_io_nfs.py", "tests/test_setup_openwhisk_live.py", "tests/test_validate_like_run.py")


def _collected(*args: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-n", "0", "-p", "no:randomly", *args, *FILES],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO_ROOT,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return [line for line in done.stdout.splitlines() if "::" in line]


@pytest.mark.slow
def test_the_testbed_tests_run_only_when_asked_for_in_every_tier():
    full, quick = _collected(), _collected("-m", "not slow")
    for ids in (full, quick):
        assert ids and not [
            i for i in ids if i.startswith(("tests/test_io_nfs.py", "tests/test_setup_openwhisk_live.py"))
        ]
    slow = "tests/test_validate_like_run.py::test_a_workload_that_plans_nothing_is_refused_by_validate_and_run_alike"
    assert slow in full and slow not in quick
    assert set(quick) < set(full)
    hardware = _collected("-m", "hardware")
    assert hardware and all(i.startswith("tests/test_io_nfs.py") for i in hardware)
    openwhisk = _collected("-m", "openwhisk")
    assert openwhisk and all(i.startswith("tests/test_setup_openwhisk_live.py") for i in openwhisk)
