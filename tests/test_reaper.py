"""The reaper (faasprof/monitoring/reaper.py): a collector's tool, in a session of its own, is
stopped when faasprof dies without stopping it (kill -9), and left alone once faasprof stopped it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from faasprof.monitoring import reaper

# A faasprof stand-in: two tools in sessions of their own, both announced, the second withdrawn
# (as faasprof does once it stopped a tool), their pids printed; then it waits to be killed.
PARENT = textwrap.dedent(
    """
    import subprocess, sys, time
    from faasprof.monitoring.reaper import REAPER
    tools = [subprocess.Popen(["sleep", "120"], start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for _ in range(2)]
    for tool in tools:
        REAPER.watch(tool.pid)
    REAPER.unwatch(tools[1].pid)
    print(tools[0].pid, tools[1].pid, REAPER.pid, flush=True)
    time.sleep(120)
    """
)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    state = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
    return state != "Z"


def _wait_gone(pid: int, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.05)
    return False


def test_kill_9_of_faasprof_stops_its_announced_tools_and_leaves_the_others():
    parent = subprocess.Popen([sys.executable, "-c", PARENT], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    watched = withdrawn = keeper = 0
    try:
        watched, withdrawn, keeper = (int(word) for word in parent.stdout.readline().split())
        assert _alive(watched) and _alive(withdrawn) and _alive(keeper)
        parent.kill()
        parent.wait(10)
        # sleep ends on SIGINT: the tool's own signal was enough, and the reaper said so.
        assert _wait_gone(watched, 8.0), "the announced tool outlived faasprof"
        assert _wait_gone(keeper, 8.0), "the reaper did not exit"
        assert _alive(withdrawn)  # faasprof had stopped it (here: said so): never the reaper's to stop
        assert f"process group {watched} of a collector was still running" in parent.stderr.read()
    finally:
        parent.kill()
        for pid in (watched, withdrawn):
            if pid:
                try:
                    os.killpg(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass


def test_a_faasprof_that_stopped_its_tools_leaves_the_reaper_nothing_to_do():
    assert reaper.serve(["watch 4000000 2\n", "unwatch 4000000\n", "garbage\n", "watch x 2\n"]) == {}


def test_a_tool_that_ignores_its_signal_is_escalated_to_sigterm(monkeypatch):
    tool = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import signal, time; signal.signal(signal.SIGINT, signal.SIG_IGN); print(1, flush=True); time.sleep(60)",
        ],
        start_new_session=True,
        stdout=subprocess.PIPE,
    )
    try:
        tool.stdout.readline()  # its handler is in place
        monkeypatch.setattr(reaper, "_ESCALATION_WAIT_S", (0.5, 2.0, 2.0))
        stopped = reaper.serve([f"watch {tool.pid} {int(signal.SIGINT)}\n"])
        tool.wait(5)
        assert stopped == {tool.pid: "SIGTERM"}
    finally:
        tool.kill()


@pytest.mark.parametrize("line", ["watch 1", "unwatch", "watch 1 2 3"])
def test_lines_not_of_faasprofs_shape_are_ignored(line):
    assert reaper.serve([line]) == {}
