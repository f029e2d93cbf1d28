"""A command whose stdout reader has gone (``faasprof plan W --out S | true``) still does its work
and exits with its own status (issue 34: it exited 1 with no file and no message)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_plan_into_a_closed_pipe_still_writes_the_schedule_and_exits_0(tmp_path):
    out = tmp_path / "schedule.csv"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "faasprof",
            "plan",
            str(REPO / "faasprof" / "workload_configs" / "paper_listing1.json"),
            "--out",
            str(out),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
    )
    proc.stdout.close()  # the reader is gone before the command prints its first line
    try:
        _, stderr = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 0, stderr.decode()
    assert b"Traceback" not in stderr and b"schedule written to" in stderr
    assert out.read_text().startswith("seq,") and len(out.read_text().splitlines()) > 1000


@pytest.mark.slow
def test_a_reader_that_stops_after_one_line_gets_it_and_the_command_finishes(tmp_path):
    done = subprocess.run(
        f"{sys.executable} -m faasprof plan {REPO / 'faasprof' / 'workload_configs' / 'paper_listing1.json'} | head -1; echo status=${{PIPESTATUS[0]}}",
        shell=True,
        executable="/bin/bash",
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    lines = done.stdout.splitlines()
    assert lines[0].startswith("instance") and lines[-1] == "status=0", done.stdout + done.stderr
    assert "Traceback" not in done.stderr and "Broken pipe" not in done.stderr
