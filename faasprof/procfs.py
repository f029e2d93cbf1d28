"""A process's start time, read from ``/proc/PID/stat``: with the pid it names one process for good.

Pids are reused; a pid and its start time are not. Whoever leaves a pid behind to be checked after
a crash (localwhisk's sandbox pid files and container labels, the cache allocation's state file)
stores both and reads them back through this one reader. Standard library only (layer 0).
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Iterable

PROC_ROOT = Path("/proc")
# starttime is field 22 of proc(5)'s stat line; the fields after comm (field 2) start at 3.
_START_FIELD_AFTER_COMM = 22 - 3


def process_start_ticks(pid: int, proc_root: Path = PROC_ROOT) -> int | None:
    """Process ``pid``'s start time in clock ticks after boot; None when it is gone or unreadable.

    The stat line is read as bytes and split after its LAST ``)``: comm, the second field, is the
    executable's name in parentheses and may itself hold spaces, parentheses and bytes that are
    not UTF-8."""
    try:
        stat = (proc_root / str(pid) / "stat").read_bytes()
    except OSError:
        return None
    end_of_comm = stat.rfind(b")")
    if end_of_comm < 0:
        return None
    fields = stat[end_of_comm + 1 :].split()
    try:
        return int(fields[_START_FIELD_AFTER_COMM])
    except (IndexError, ValueError):
        return None


def pid_alive(pid: int) -> bool:
    """Whether a process ``pid`` exists (one of another user's counts: signal 0 was refused, not
    unanswered). A pid alone may be reused: pair it with ``process_start_ticks`` where it matters."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def owner_alive(pid: int, start_ticks: int | None) -> bool:
    """Whether the process that left ``pid`` and its start time ``start_ticks`` behind still runs:
    the pid exists and, where the start time was recorded (not None) and can be read now, it is the
    same, so a pid reused by another process is not the owner. A pid of 0 or below names no one
    process (``kill`` would ask a process group): never alive."""
    if pid <= 0 or not pid_alive(pid):
        return False
    if start_ticks is not None:
        now = process_start_ticks(pid)
        if now is not None and now != start_ticks:
            return False  # the pid was reused by another process
    return True


def kill_all(pids: Iterable[int]) -> int:
    """SIGKILL to each of ``pids``; how many were sent (a pid gone meanwhile, or not ours, is skipped)."""
    killed = 0
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
            killed += 1
        except OSError:
            pass
    return killed
