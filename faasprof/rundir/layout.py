"""Where things are in a run directory: its file names, its creation, and the atomic JSON write.

The names are spelled here and nowhere else in faasprof (``tests/test_architecture.py`` fails on a
module outside ``faasprof/rundir`` that names one); every other module reaches a file through a
function of ``faasprof.rundir``.

A run directory holds the workload's parameters, the functions' results and, for the embedded
platform, action code: it is created private (``PRIVATE_DIR_MODE``, whatever the umask), and the
files faasprof writes into it are created ``PRIVATE_FILE_MODE`` (``open_private``); a command that
writes run directories runs under ``private_files`` (umask 077), so that what other writers (a
library given a path, a tool a run starts) create there is private too. An atomic write
that fails (a full disk) leaves no temporary file behind.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import os
import re
from pathlib import Path
from typing import IO, Any, Iterator

from faasprof.errors import ConfigError

MANIFEST = "manifest.json"
INVOCATIONS = "invocations.csv"
# The columnar copy of the invocation log (``columnar``): Parquet row groups a reader scans in pieces.
INVOCATIONS_PARQUET = "invocations.columnar.parquet"
PLAN = "plan.bin"
SENDS = "sends.csv"
ACTIVATIONS = "activations.jsonl"
# The records' flat columns as Parquet (``record_parquet``): the records themselves once the raw file is gone.
ACTIVATIONS_PARQUET = "activations.parquet"
MONITORS = "monitors"
ANALYSIS = "analysis"

PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600

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
            path.mkdir(mode=PRIVATE_DIR_MODE)
        except FileExistsError:
            continue
        # mkdir's mode passes through the umask: chmod says it whatever the umask is.
        path.chmod(PRIVATE_DIR_MODE)
        if monitors:
            make_private_dir(path / MONITORS)
        return path
    raise ConfigError(f"{out}: could not find a free run directory name for {base}; clean up {out}")


# The umask under which every file and folder comes out PRIVATE_FILE_MODE / PRIVATE_DIR_MODE.
PRIVATE_UMASK = 0o077


@contextlib.contextmanager
def private_files() -> Iterator[None]:
    """While a command writes run directories, everything it creates is private to its user,
    whoever writes it: faasprof's own writers (which also say their modes), the libraries that
    take a path (pandas, pyarrow, DuckDB, matplotlib) and the tools a run starts (perf, pqos, a
    post_script), which all create files through the process umask. The umask is the process's:
    commands set it (``faasprof.cli``), library callers may too."""
    previous = os.umask(PRIVATE_UMASK)
    try:
        yield
    finally:
        os.umask(previous)


def make_private_dir(path: str | os.PathLike, exist_ok: bool = False) -> Path:
    """Create the folder ``path`` (and its missing parents inside an existing run directory) readable
    by its owner only."""
    path = Path(path)
    path.mkdir(mode=PRIVATE_DIR_MODE, parents=True, exist_ok=exist_ok)
    path.chmod(PRIVATE_DIR_MODE)
    return path


def open_private(
    path: str | os.PathLike, mode: str = "wb", encoding: str | None = None, newline: str | None = None
) -> IO:
    """``open(path, mode)`` for writing a run's file: created ``PRIVATE_FILE_MODE`` (``w``, ``x`` or
    ``a``; an existing file keeps its mode)."""
    flags = os.O_WRONLY | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)
    if "x" in mode:
        flags |= os.O_EXCL
    elif "a" in mode:
        flags |= os.O_APPEND
    elif "w" in mode:
        flags |= os.O_TRUNC
    if "+" in mode:
        flags = (flags & ~os.O_WRONLY) | os.O_RDWR
    fd = os.open(path, flags, PRIVATE_FILE_MODE)
    try:
        return open(fd, mode.replace("x", "w"), encoding=encoding, newline=newline)
    except BaseException:
        os.close(fd)
        raise


def temporary_beside(path: Path) -> Path:
    """The temporary name an atomic write of ``path`` uses (hidden, one per process)."""
    return path.with_name(f".{path.name}.tmp{os.getpid()}")


def remove_quietly(path: Path) -> None:
    """Remove a temporary file a failed write left (nothing when it is gone)."""
    try:
        path.unlink()
    except FileNotFoundError:
        pass


def write_json_atomic(path: str | os.PathLike, data: Any) -> None:
    """Write JSON through a temporary file, fsync, then rename: readers never see half a file, and a
    write that fails (ENOSPC) removes its temporary file before the error passes on."""
    path = Path(path)
    tmp = temporary_beside(path)
    try:
        with open_private(tmp, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=2, sort_keys=False, default=_json_default)
            handle.write("\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        remove_quietly(tmp)
        raise


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
