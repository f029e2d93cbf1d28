"""The invocation log in columnar form: ``invocations.columnar.parquet``, Parquet row groups that an
out-of-core reader (``faasprof.analyzer.engine``) scans in pieces.

The file is derived from ``invocations.csv``: written by the analyzer when it first reads a run
(never by the send path, so a run's lateness cannot depend on it), through DuckDB's streaming CSV
reader and Parquet writer, so that converting a log of any length needs memory bounded by the
engine's setting rather than by its rows. Like ``activations.columns.npz`` it is used only while it
describes its source (the CSV's size and mtime are in its key-value metadata), is rebuilt when it
does not, and is safe to delete. Runs without it (every run before it existed) are read from the
CSV directly.

Columnar format versions (``COLUMNAR_FORMAT_VERSION``, the ``faasprof_columnar_version`` key of
the Parquet footer; a reader refuses a file of another version and rebuilds it from the CSV):
  1: ``INVOCATION_COLUMNS`` in order, times int64 ns since the run's monotonic zero, text as
     strings (NULL for empty fields), row groups of ``ROW_GROUP_ROWS`` rows.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import duckdb
import pyarrow.parquet as pq

from faasprof.errors import FormatError
from faasprof.rundir.invocation_log import INVOCATION_COLUMNS
from faasprof.rundir.layout import INVOCATIONS, INVOCATIONS_PARQUET

COLUMNAR_FORMAT_VERSION = 1
SUPPORTED_COLUMNAR_VERSIONS = (1,)
VERSION_KEY = "faasprof_columnar_version"
SOURCE_KEY = "faasprof_source_identity"  # "size:mtime_ns" of the CSV it was made from
ROW_GROUP_ROWS = 1_048_576

# DuckDB's types for the log's columns (``rundir.tables.INVOCATION_DTYPES`` is pandas' view).
INVOCATION_SQL_TYPES: dict[str, str] = {
    "seq": "BIGINT",
    "instance": "VARCHAR",
    "function": "VARCHAR",
    "intended_ns": "BIGINT",
    "sent_ns": "BIGINT",
    "done_ns": "BIGINT",
    "outcome": "VARCHAR",
    "http_status": "BIGINT",
    "activation_id": "VARCHAR",
    "error": "VARCHAR",
}
assert tuple(INVOCATION_SQL_TYPES) == INVOCATION_COLUMNS  # one column list, two type views


def invocations_csv_path(run_dir: str | os.PathLike) -> Path:
    return Path(run_dir) / INVOCATIONS


def invocations_parquet_path(run_dir: str | os.PathLike) -> Path:
    return Path(run_dir) / INVOCATIONS_PARQUET


def _identity(path: Path) -> str:
    stat = path.stat()
    return f"{stat.st_size}:{stat.st_mtime_ns}"


def _sql_string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def csv_scan_sql(run_dir: str | os.PathLike) -> str:
    """A DuckDB table expression reading ``invocations.csv`` as it is (streamed, typed; a line cut
    short by a kill is skipped, as the other readers skip it)."""
    columns = ", ".join(f"{_sql_string(name)}: {_sql_string(kind)}" for name, kind in INVOCATION_SQL_TYPES.items())
    path = _sql_string(os.fspath(invocations_csv_path(run_dir)))
    return f"read_csv({path}, header = true, columns = {{{columns}}}, ignore_errors = true, parallel = false)"


def parquet_version(path: str | os.PathLike) -> tuple[int | None, str | None]:
    """A columnar file's (format version, source identity) from its footer; (None, None) when it
    was not written by this module."""
    meta = pq.read_metadata(path).metadata or {}
    version = meta.get(VERSION_KEY.encode())
    source = meta.get(SOURCE_KEY.encode())
    return (int(version) if version is not None else None, source.decode() if source is not None else None)


def check_parquet(path: str | os.PathLike) -> None:
    """Raise ``FormatError`` (one line: file, field, fix) for a columnar file of an unknown version."""
    version, _ = parquet_version(path)
    if version not in SUPPORTED_COLUMNAR_VERSIONS:
        raise FormatError(
            f"{path}: {VERSION_KEY} {version!r} is not supported (this faasprof reads {list(SUPPORTED_COLUMNAR_VERSIONS)}); "
            "delete the file: it is derived from invocations.csv and rebuilt by faasprof analyze"
        )


def is_current(run_dir: str | os.PathLike) -> bool:
    """Whether the columnar file exists, is of a supported version and describes today's CSV."""
    parquet, csv_path = invocations_parquet_path(run_dir), invocations_csv_path(run_dir)
    if not parquet.is_file() or not csv_path.is_file():
        return False
    try:
        version, source = parquet_version(parquet)
    except (OSError, ValueError):  # cut short or not Parquet: rebuilt
        return False
    return version in SUPPORTED_COLUMNAR_VERSIONS and source == _identity(csv_path)


def write_invocations_parquet(run_dir: str | os.PathLike, connection: Any) -> Path:
    """Convert ``invocations.csv`` into ``invocations.columnar.parquet`` with the DuckDB
    ``connection`` (whose memory limit bounds the conversion), through a temporary file renamed
    into place; returns its path."""
    csv_path = invocations_csv_path(run_dir)
    if not csv_path.is_file():
        raise FormatError(f"{csv_path}: missing; a run directory holds its invocation log there")
    identity = _identity(csv_path)
    out = invocations_parquet_path(run_dir)
    tmp = out.with_name(f".{out.name}.tmp{os.getpid()}")
    metadata = f"{{{VERSION_KEY}: '{COLUMNAR_FORMAT_VERSION}', {SOURCE_KEY}: {_sql_string(identity)}}}"
    connection.execute(
        f"COPY (SELECT * FROM {csv_scan_sql(run_dir)}) TO {_sql_string(os.fspath(tmp))} "
        f"(FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE {ROW_GROUP_ROWS}, KV_METADATA {metadata})"
    )
    os.replace(tmp, out)
    return out


def invocations_scan_sql(run_dir: str | os.PathLike, connection: Any) -> str:
    """A DuckDB table expression over the run's invocations, columnar: the Parquet file, written
    first when it is missing or stale (a read-only run directory is read from its CSV instead)."""
    if not is_current(run_dir):
        try:
            write_invocations_parquet(run_dir, connection)
        except (OSError, duckdb.IOException):  # a read-only run directory
            return csv_scan_sql(run_dir)
    path = invocations_parquet_path(run_dir)
    check_parquet(path)
    return f"read_parquet({_sql_string(os.fspath(path))})"
