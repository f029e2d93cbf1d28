"""Putting a previous allocation back from its state file: after a point, and after a crash.

``restore_from_state`` hands a state file's contents to the backend that wrote it;
``Allocation.restore`` calls it for its own allocation, ``cleanup_leftovers`` at the start of
every sweep for the allocations of faasprof processes that died (their state files, then any
``faasprof-<pid>`` resctrl group no state file described).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from faasprof.errors import NotReadyError, RunError
from faasprof.monitoring import host
from faasprof.monitoring.allocation import pqos, resctrl
from faasprof.monitoring.allocation.journal import STATE_FORMAT_VERSION, default_state_dir
from faasprof.monitoring.allocation.model import (
    GROUP_PREFIX,
    PQOS_TIMEOUT_S,
    RESCTRL_MOUNTPOINT,
    Runner,
    run_subprocess,
)
from faasprof.procfs import owner_alive


def restore_from_state(state: dict[str, Any], *, fs: resctrl.ResctrlFs, runner: Runner, timeout_s: float) -> list[str]:
    """Undo the allocation a state file describes; one message per action (none for an unknown interface)."""
    if state.get("interface") == "resctrl":
        return resctrl.restore(state, fs)
    if state.get("interface") == "pqos":
        return pqos.restore(state, runner, timeout_s)
    return []


def cleanup_leftovers(
    root: str | os.PathLike = "/",
    *,
    state_dir: str | os.PathLike | None = None,
    fs: resctrl.ResctrlFs | None = None,
    runner: Runner | None = None,
    timeout_s: float = PQOS_TIMEOUT_S,
) -> list[str]:
    """Undo allocations left by faasprof processes that died; returns one message per action.

    Reads the state files (``allocation-<pid>-<name>.json``) of dead owners and restores from
    them, then removes any ``faasprof-<pid>`` group under the resctrl mount whose process is gone
    and that no state file described. Allocations of live faasprof processes are left alone.
    Failures are reported as messages (with the command to finish by hand), never raised.
    """
    fs = fs or resctrl.ResctrlFs()
    runner = runner or run_subprocess
    state_dir = Path(state_dir or default_state_dir())
    messages: list[str] = []
    handled: set[Path] = set()
    for path in sorted(state_dir.glob("allocation-*.json")):
        try:
            state = json.loads(path.read_text())
            pid = int(state["pid"])
        except (OSError, ValueError, KeyError, TypeError):
            messages.append(
                f"{path}: unreadable allocation state file; delete it after checking {RESCTRL_MOUNTPOINT} and pqos -s"
            )
            continue
        if state.get("format_version") != STATE_FORMAT_VERSION:
            messages.append(
                f"{path}: allocation state format version {state.get('format_version')} not supported; delete it by hand"
            )
            continue
        if state.get("resctrl_path"):
            handled.add(Path(state["resctrl_path"]) / str(state.get("group")))
        if owner_alive(pid, state.get("pid_start_ticks")):
            continue  # a running faasprof (possibly this one) restores its own allocation
        try:
            done = restore_from_state(state, fs=fs, runner=runner, timeout_s=timeout_s)
        except (OSError, RunError, NotReadyError) as exc:
            where = state.get("group") or f"COS{state.get('cos')}"
            messages.append(
                f"could not undo the allocation {where} left by faasprof pid {pid}: {exc}; fix it by hand, then delete {path}"
            )
            continue
        for line in done:
            messages.append(f"leftover of faasprof pid {pid} (no longer running): {line}")
        path.unlink()
    reader = host.Root(root)
    mount = host.mount_of(reader, "resctrl")
    if mount is not None:
        mount_dir = reader.path(mount[0])
        for name in resctrl.groups(mount_dir):
            match = re.fullmatch(re.escape(GROUP_PREFIX) + r"(\d+)(?:\D.*)?", name)
            if not match or (mount_dir / name) in handled:
                continue
            pid = int(match.group(1))
            if pid == os.getpid() or owner_alive(pid, None):
                continue
            try:
                with resctrl.locked(mount_dir):
                    fs.rmdir(mount_dir / name)
            except OSError as exc:
                messages.append(
                    f"could not remove leftover resctrl group {mount_dir / name}: {exc.strerror}; run: rmdir {mount_dir / name}"
                )
                continue
            messages.append(
                f"removed leftover resctrl group {mount_dir / name} (faasprof pid {pid} is gone; no state file)"
            )
    return messages
