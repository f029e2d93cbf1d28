"""``monitors/<host>/``: what a remote host's collectors left, beside its ``host.json``.

A folder under ``monitors/`` that holds ``host.json`` is a host's (named as in the inventory);
its collector folders hold what a local collector's does (``monitors.py``), their ``meta.json``
anchors read on that host's clocks. ``host.json`` says how the host was reached, what it is,
which collectors ran there and which it skipped (and why), its clock's offset to the invoker's at
the start and the end, and whether it was lost during the run.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from faasprof.errors import FormatError
from faasprof.rundir.layout import MONITORS, write_json_atomic

HOST_JSON = "host.json"
HOST_FORMAT_VERSION = 1


def host_dir(run_dir: str | os.PathLike, host: str) -> Path:
    """``monitors/<host>/`` (created)."""
    path = Path(run_dir) / MONITORS / host
    path.mkdir(parents=True, exist_ok=True)
    return path


def host_monitor_dir(run_dir: str | os.PathLike, host: str, collector: str) -> Path:
    """``monitors/<host>/<collector>/`` (created): where that collector's raw output goes."""
    path = host_dir(run_dir, host) / collector
    path.mkdir(exist_ok=True)
    return path


def write_host_json(run_dir: str | os.PathLike, host: str, data: dict) -> Path:
    """``monitors/<host>/host.json``, written atomically with its ``format_version``."""
    path = host_dir(run_dir, host) / HOST_JSON
    write_json_atomic(path, {"format_version": HOST_FORMAT_VERSION, **data})
    return path


def read_host_json(directory: str | os.PathLike) -> dict | None:
    """A host folder's ``host.json`` (None when the folder is a local collector's); a file of
    another format version or not JSON is a FormatError naming it and the fix."""
    path = Path(directory) / HOST_JSON
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except json.JSONDecodeError as error:
        raise FormatError(f"{path}: not valid JSON ({error.msg}); faasprof was stopped while writing it") from None
    if not isinstance(data, dict) or data.get("format_version") != HOST_FORMAT_VERSION:
        version = data.get("format_version") if isinstance(data, dict) else None
        raise FormatError(
            f"{path}: format_version {version!r} is not {HOST_FORMAT_VERSION}; upgrade faasprof to read this run"
        )
    return data
