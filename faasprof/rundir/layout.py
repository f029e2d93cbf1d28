"""Where things are in a run directory: its file names, its creation, and the atomic JSON write.

The names are spelled here and nowhere else in faasprof (``tests/test_architecture.py`` fails on a
module outside ``faasprof/rundir`` that names one); every other module reaches a file through a
function of ``faasprof.rundir``.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import re
from pathlib import Path
from typing import Any

from faasprof.errors import ConfigError

MANIFEST = "manifest.json"
INVOCATIONS = "invocations.csv"
# The columnar copy of the invocation log (``columnar``): Parquet row groups a reader scans in pieces.
INVOCATIONS_PARQUET = "invocations.columnar.parquet"
PLAN = "plan.bin"
SENDS = "sends.csv"
ACTIVATIONS = "activations.jsonl"
MONITORS = "monitors"
ANALYSIS = "analysis"

_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


def safe_name(name: str) -> str:
    """A test name made safe for a directory name (other characters become ``_``)."""
    cleaned = _UNSAFE_NAME.sub("_", name).strip("._")
    return cleaned or "run"


def utc_stamp(when: _dt.datetime | None = None) -> str:
    when = when or _dt.datetime.now(_dt.timezone.utc)
    return when.astimezone(_dt.timezone.utc).strftime("%Y%m%dT%H%M%S")


def create_run_dir(
    out_dir: str | os.PathLike, test_name: str, when: _dt.datetime | None = None, monitors: bool = True
) -> Path:
    """Create ``<out_dir>/<test_name>-<stamp>`` (and ``monitors/``); never reuse an existing path."""
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ConfigError(
            f"{out}: cannot create the output directory ({error.strerror}); pass --out DIR with a writable directory"
        ) from error
    base = f"{safe_name(test_name)}-{utc_stamp(when)}"
    for attempt in range(1, 1000):
        path = out / (base if attempt == 1 else f"{base}-{attempt}")
        try:
            path.mkdir()
        except FileExistsError:
            continue
        if monitors:
            (path / MONITORS).mkdir()
        return path
    raise ConfigError(f"{out}: could not find a free run directory name for {base}; clean up {out}")


def write_json_atomic(path: str | os.PathLike, data: Any) -> None:
    """Write JSON through a temporary file, fsync, then rename: readers never see half a file."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    with open(tmp, "w", encoding="utf-8") as handle:
        json.dump(data, handle, indent=2, sort_keys=False, default=_json_default)
        handle.write("\n")
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def _json_default(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    if hasattr(value, "tolist"):  # numpy scalars and arrays
        return value.tolist()
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    raise TypeError(f"cannot store {type(value).__name__} in JSON")


def manifest_path(run_dir: str | os.PathLike) -> Path:
    """The run's ``manifest.json`` (for messages that name it; ``read_manifest`` reads it)."""
    return Path(run_dir) / MANIFEST


def is_run_dir(path: str | os.PathLike) -> bool:
    """Whether ``path`` holds a manifest (a run directory, or a study folder: ``read_manifest``'s
    ``kind`` tells them apart)."""
    return manifest_path(path).is_file()
