"""``monitors/<name>/``: where each collector writes its raw output and ``meta.json``.

The raw output's format is the collector's (``faasprof.monitoring.collectors``); this module only says
where it is. A remote host's collectors are under ``monitors/<host>/`` (``faasprof.rundir.hosts``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from faasprof.errors import FormatError
from faasprof.rundir.hosts import is_host_dir
from faasprof.rundir.layout import MONITORS, make_private_dir
from faasprof.rundir.monitor_files import MONITOR_META


def monitor_dir(run_dir: str | os.PathLike, name: str) -> Path:
    """``monitors/<name>/`` (created): where collector ``name`` writes its raw output."""
    return make_private_dir(Path(run_dir) / MONITORS / name, exist_ok=True)


def monitor_dirs(run_dir: str | os.PathLike) -> dict[str, Path]:
    """``{name: monitors/<name>/}`` for every local monitor that left a directory, by name (a remote
    host's directory, which holds ``host.json``, is ``host_dirs``'s)."""
    base = Path(run_dir) / MONITORS
    if not base.is_dir():
        return {}
    return {path.name: path for path in sorted(base.iterdir()) if path.is_dir() and not is_host_dir(path)}


def read_monitor_meta(directory: str | os.PathLike) -> dict:
    """A monitor directory's ``meta.json`` ({} when the collector wrote none)."""
    path = Path(directory) / MONITOR_META
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except json.JSONDecodeError as error:
        raise FormatError(
            f"{path}: not valid JSON ({error.msg}); the collector was interrupted while writing it"
        ) from None
    return data if isinstance(data, dict) else {}


def monitor_file(run_dir: str | os.PathLike, collector: str, name: str) -> Path:
    """The file ``name`` of collector ``collector``'s raw output (it may not exist)."""
    return Path(run_dir) / MONITORS / collector / name
