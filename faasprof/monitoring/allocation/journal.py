"""The state file that lets an allocation be undone after a crash: where it lives, how it is written.

An allocation writes its intent (``allocation-<pid>-<name>.json`` in ``default_state_dir()``)
BEFORE it touches the host, records what it applied, and deletes the file LAST, after the
restore; a file whose owner is dead is therefore the complete recipe for putting the host back
(``restore.cleanup_leftovers``). Each backend adds what its restore needs to the intent
(resctrl: the group and the CPUs taken from other groups; pqos: the class and the values it
overwrites).
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path
from typing import Any

from faasprof.errors import RunError
from faasprof.procfs import process_start_ticks

# State file format versions:
#   1: first version.
STATE_FORMAT_VERSION = 1


def default_state_dir() -> Path:
    """``$FAASPROF_STATE_DIR``, else ``$XDG_STATE_HOME/faasprof``, else ``~/.local/state/faasprof``."""
    if os.environ.get("FAASPROF_STATE_DIR"):
        return Path(os.environ["FAASPROF_STATE_DIR"])
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(base) / "faasprof"


def write_state(path: Path, state: dict) -> None:
    """Write the state file atomically (temp file, fsync, rename): a crash never leaves half of it."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp")
        with open(tmp, "w", encoding="utf-8") as handle:
            json.dump(state, handle, indent=2)
            handle.write("\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        raise RunError(
            f"{path}: cannot write the allocation state file ({exc.strerror}); set FAASPROF_STATE_DIR to a"
            " writable directory"
        ) from None


class Journal:
    """The state file of one allocation, from its intent to its removal after the restore.

    ``state`` is None while nothing is on the host that faasprof must undo.
    """

    def __init__(self, path: Path, *, interface: str | None, name: str, plan: dict[str, Any]):
        self.path = path
        self.interface = interface
        self.name = name
        self.plan = plan
        self.state: dict[str, Any] | None = None

    def intend(self, **fields: Any) -> None:
        """Write the intent, with the backend's ``fields``, before the host is changed."""
        state = {
            "format_version": STATE_FORMAT_VERSION,
            "pid": os.getpid(),
            "pid_start_ticks": process_start_ticks(os.getpid()),
            "created_unix_s": time.time(),
            "interface": self.interface,
            "name": self.name,
            "stage": "intent",
            "plan": self.plan,
            **fields,
        }
        write_state(self.path, state)
        self.state = state

    def forget(self) -> None:
        """The backend changed nothing after all: drop the intent."""
        self.path.unlink()
        self.state = None

    def applied(self, applied: dict[str, Any]) -> None:
        """Record what the hardware took (the state file then also says how far the apply got)."""
        assert self.state is not None
        self.state["stage"] = "applied"
        self.state["applied"] = applied
        write_state(self.path, self.state)

    def close(self) -> None:
        """The previous allocation is back: delete the file (last, so a crash before is finished later)."""
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        self.state = None
