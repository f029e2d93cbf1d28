"""A process's start time, read from ``/proc/PID/stat``: with the pid it names one process for good.

Pids are reused; a pid and its start time are not. Whoever leaves a pid behind to be checked after
a crash (localwhisk's sandbox pid files and container labels, the cache allocation's state file)
stores both and reads them back through this one reader; and the one spawn of a session leader
whose setsid a reused pid can refuse. Standard library only (layer 0).
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


SPAWN_ATTEMPTS = 3


def spawn_session_leader(argv: list[str], env: dict[str, str], file_actions: list) -> int:
    """``posix_spawn`` of ``argv`` in a session of its own; its pid. The child's setsid fails with
    EPERM when a process group numbered as the new pid still exists (its leader gone, members
    left: pids wrap at pid_max, 32768 by default, within a long day of sandboxes); the next spawn
    gets another pid, so that failure is tried again, a few times."""
    for attempt in range(1, SPAWN_ATTEMPTS + 1):
        try:
            return os.posix_spawn(argv[0], argv, env, file_actions=file_actions, setsid=True)
        except PermissionError:
            if attempt == SPAWN_ATTEMPTS:
                raise
    raise AssertionError("unreachable")
