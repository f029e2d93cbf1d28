"""``activations.parquet``: the activation records' flat columns as Parquet row groups, which an
out-of-core reader (``faasprof.analyzer.rows_sql``) scans in pieces.

One row per record line of ``activations.jsonl``, in file order, with ``record_fields.RECORD_COLUMNS``
exactly as ``records.read_records`` gives them (the DuckDB reader's columns, failed records' error
texts and refined outcomes finished in Python; the Python reader for a file of unusual records),
plus ``record_seq``, the record's place among the file's records: readers keep the last record of
an id, as ``records._dedupe`` does. A torn or non-object line is counted in the footer, not kept.

Written by the analyzer from the JSONL when it first needs it (``ensure_records_parquet``, through
DuckDB's streaming JSON reader and a Parquet writer a row group at a time, so memory is bounded
however many records), never by the run: the invoker saves records without loading Arrow, and the
send path is untouched. While ``activations.jsonl`` exists the Parquet file is used only while it
describes it (the JSONL's size and mtime are in its footer) and is rebuilt when it does not;
``write_records`` and ``append_records`` remove it.

A run whose raw ``activations.jsonl`` was removed (or compressed away) to save disk keeps its
records in this file: then it *is* the records (``records_source`` says ``parquet``), the analyzer
reads it and warns that the raw records are gone (the chain and I/O figures, which need the raw
JSON, are left out; no record is fetched again).

Format versions (``RECORDS_PARQUET_VERSION``, the footer key ``faasprof_records_version``; a reader
refuses a file of another version in one line):
  1: ``record_seq`` (int64) then ``RECORD_COLUMNS`` (strings, float64 with null for none, bool
     ``timed_out``), zstd, row groups of ``ROW_GROUP_ROWS``; footer keys ``faasprof_source_identity``
     (the JSONL's ``size:mtime_ns``) and ``faasprof_unreadable_lines``.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any, Iterable

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from faasprof.errors import FormatError
from faasprof.outcomes import refined_outcome
from faasprof.rundir import record_fields, records
from faasprof.rundir.columnar import _identity  # the same source identity as the log's copy
from faasprof.rundir.layout import ACTIVATIONS, ACTIVATIONS_PARQUET, remove_quietly

RECORDS_PARQUET_VERSION = 1
SUPPORTED_RECORDS_VERSIONS = (1,)
VERSION_KEY = "faasprof_records_version"
SOURCE_KEY = "faasprof_source_identity"
BAD_LINES_KEY = "faasprof_unreadable_lines"
ORDER_COLUMN = "record_seq"
ROW_GROUP_ROWS = 1_048_576
PYTHON_CHUNK_ROWS = 65_536


def _field_type(name: str) -> pa.DataType:
    if name == "timed_out":
        return pa.bool_()
    if name in record_fields.FLOAT_COLUMNS:
        return pa.float64()
    return pa.string()


SCHEMA = pa.schema([(ORDER_COLUMN, pa.int64())] + [(name, _field_type(name)) for name in record_fields.RECORD_COLUMNS])


def records_parquet_path(run_dir: str | os.PathLike) -> Path:
    return Path(run_dir) / ACTIVATIONS_PARQUET


def _jsonl(run_dir: str | os.PathLike) -> Path:
    return Path(run_dir) / ACTIVATIONS


def footer(path: str | os.PathLike) -> dict[str, str]:
    """The faasprof keys of a records Parquet file's footer (``{}`` for another file)."""
    meta = pq.read_metadata(path).metadata or {}
    return {key.decode(): value.decode() for key, value in meta.items() if key.startswith(b"faasprof_")}


def check_version(path: str | os.PathLike) -> dict[str, str]:
    """The footer, or ``FormatError`` (one line: file, field, fix) for a version this faasprof does not read."""
    keys = footer(path)
    version = keys.get(VERSION_KEY)
    if version is None or not version.isdigit() or int(version) not in SUPPORTED_RECORDS_VERSIONS:
        raise FormatError(
            f"{path}: {VERSION_KEY} {version!r} is not supported (this faasprof reads {list(SUPPORTED_RECORDS_VERSIONS)}); "
            "upgrade faasprof, or delete the file if activations.jsonl is still beside it (it is rebuilt from it)"
        )
    return keys


def is_current(run_dir: str | os.PathLike) -> bool:
    """Whether the Parquet file exists, is of a supported version and describes today's JSONL."""
    parquet, jsonl = records_parquet_path(run_dir), _jsonl(run_dir)
    if not parquet.is_file() or not jsonl.is_file():
        return False
    try:
        keys = footer(parquet)
    except (OSError, ValueError, pa.ArrowException):  # cut short or not Parquet: rebuilt
        return False
    version = keys.get(VERSION_KEY, "")
    return version.isdigit() and int(version) in SUPPORTED_RECORDS_VERSIONS and keys.get(SOURCE_KEY) == _identity(jsonl)


def records_source(run_dir: str | os.PathLike) -> str | None:
    """Where the run's records are: ``jsonl`` (the raw file, the Parquet derived from it),
    ``parquet`` (the raw file is gone and the Parquet stands for it), or None (no records saved)."""
    if _jsonl(run_dir).exists():
        return "jsonl"
    if records_parquet_path(run_dir).is_file():
        return "parquet"
    return None


def remove_derived(jsonl_path: str | os.PathLike) -> None:
    """Remove the Parquet beside a records file about to change (it would describe the old one)."""
    remove_quietly(Path(jsonl_path).with_name(ACTIVATIONS_PARQUET))


class RecordsWriter:
    """A records Parquet file written a table of ``SCHEMA`` at a time (``record_seq`` filled here)
    through a temporary beside it, renamed into place by ``finish``."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.tmp = out.with_name(f".{out.name}.tmp{os.getpid()}")
        self.writer = pq.ParquetWriter(self.tmp, SCHEMA, compression="zstd")
        self.rows = 0

    def write(self, table: pa.Table) -> None:
        if table.num_rows:
            table = table.set_column(0, ORDER_COLUMN, pa.array(np.arange(self.rows, self.rows + table.num_rows)))
            self.writer.write_table(table, row_group_size=ROW_GROUP_ROWS)
            self.rows += table.num_rows

    def finish(self, source_identity: str, bad_lines: int) -> Path:
        """Close the file with its footer keys (``source_identity``: the JSONL's, "" for none)."""
        keys = {VERSION_KEY: str(RECORDS_PARQUET_VERSION), SOURCE_KEY: source_identity, BAD_LINES_KEY: str(bad_lines)}
        self.writer.add_key_value_metadata(keys)
        self.writer.close()
        os.replace(self.tmp, self.out)
        return self.out

    def abandon(self) -> None:
        try:
            self.writer.close()
        finally:
            remove_quietly(self.tmp)


def _label(value: Any) -> str | None:
    """A label as the Parquet file holds it (text; a list or object by its JSON, as ``records_frame``)."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, float) and math.isnan(value):
        return None
    return json.dumps(value, sort_keys=True) if isinstance(value, (list, dict)) else str(value)


def _rows_table(rows: list[tuple]) -> pa.Table:
    """``flatten_record`` tuples as a table of ``SCHEMA`` (``record_seq`` filled by the writer)."""
    columns: dict[str, pa.Array] = {ORDER_COLUMN: pa.nulls(len(rows), pa.int64())}
    by_name = dict(zip(record_fields.RECORD_COLUMNS, zip(*rows))) if rows else {}
    for name in record_fields.RECORD_COLUMNS:
        values = by_name.get(name, ())
        if name == "timed_out":
            columns[name] = pa.array([bool(v) for v in values], pa.bool_())
        elif name in record_fields.FLOAT_COLUMNS:
            floats = records._to_float(list(values))
            columns[name] = pa.array(floats, pa.float64(), from_pandas=True)  # NaN: null
        else:
            columns[name] = pa.array([_label(v) for v in values], pa.string())
    return pa.table(columns, schema=SCHEMA)


def _python_rows(path: Path, writer: RecordsWriter) -> int:
    """The file parsed record by record (``flatten_line``, the readers' reference); returns the bad lines."""
    bad = 0
    rows: list[tuple] = []
    with open(path, "rb") as handle:
        for line in handle:
            row = record_fields.flatten_line(line)
            if row is None:
                bad += bool(line.strip())
                continue
            rows.append(row)
            if len(rows) >= PYTHON_CHUNK_ROWS:
                writer.write(_rows_table(rows))
                rows = []
    writer.write(_rows_table(rows))
    return bad


def _finished(batch: pa.RecordBatch) -> pa.Table:
    """A batch of ``records._DUCKDB_QUERY`` as ``SCHEMA``: failed records' error texts and refined
    outcomes finished as ``records._finish_failed`` finishes them."""
    outcome = batch.column("record_outcome")
    error_text = pa.nulls(batch.num_rows, pa.string())
    failed = np.flatnonzero(pc.not_equal(outcome, "success").to_numpy(zero_copy_only=False))
    if len(failed):
        outcomes = outcome.to_pylist()
        texts: list[str | None] = [None] * batch.num_rows
        for row, raw in zip(failed, batch.column("error_json").take(pa.array(failed)).to_pylist()):
            error = json.loads(raw) if raw is not None else None
            texts[row] = record_fields.error_text(error)
            if outcomes[row] in ("developer_error", "internal_error"):
                outcomes[row] = refined_outcome(outcomes[row], error if isinstance(error, str) else str(error or ""))
        outcome, error_text = pa.array(outcomes, pa.string()), pa.array(texts, pa.string())
    columns: dict[str, Any] = {ORDER_COLUMN: pa.nulls(batch.num_rows, pa.int64())}
    for name in record_fields.RECORD_COLUMNS:
        if name == "record_outcome":
            columns[name] = outcome
        elif name == "error_text":
            columns[name] = error_text
        else:
            columns[name] = batch.column(name).cast(_field_type(name))
    return pa.table(columns, schema=SCHEMA)


def _duckdb_rows(path: Path, writer: RecordsWriter, connection: Any) -> int | None:
    """The file through DuckDB's JSON reader, a batch at a time; the bad lines, or None when a record
    is not of the regular shape (then nothing was kept: the caller starts again in Python)."""
    query = records._DUCKDB_QUERY.format(
        path="'" + os.fspath(path).replace("'", "''") + "'",
        columns=records._DUCKDB_COLUMNS,
        max_object=int(records.MAX_OBJECT_BYTES),
    )
    bad = 0
    kept = connection.execute("SELECT current_setting('preserve_insertion_order')").fetchall()[0][0]
    connection.execute("SET preserve_insertion_order = true")  # record_seq is the file's order
    reader = None
    try:
        reader = connection.sql(query).to_arrow_reader(records.BATCH_ROWS)
        for batch in reader:
            empty = batch.column("empty").to_numpy(zero_copy_only=False)
            if empty.any():
                bad += int(empty.sum())
                batch = batch.filter(pa.array(~empty))
            if not batch.num_rows:
                continue
            if pc.any(batch.column("unusual")).as_py():
                return None
            writer.write(_finished(batch))
    finally:
        if reader is not None:
            reader.close()  # a result left unread keeps the connection busy
        connection.execute(f"SET preserve_insertion_order = {'true' if kept else 'false'}")
    return bad


def write_records_parquet(run_dir: str | os.PathLike, connection: Any = None) -> Path:
    """Write ``activations.parquet`` from ``activations.jsonl`` (DuckDB through ``connection``,
    whose memory limit bounds it; a connection of its own when None), through a temporary file
    renamed into place; returns its path."""
    jsonl = _jsonl(run_dir)
    if not jsonl.is_file():
        raise FormatError(f"{jsonl}: missing; the records' Parquet file is made from it")
    identity = _identity(jsonl)
    own = connection is None
    connection = duckdb.connect() if own else connection
    out = records_parquet_path(run_dir)
    writer = RecordsWriter(out)
    try:
        bad = _duckdb_rows(jsonl, writer, connection)
        if bad is None:
            writer.abandon()
            writer = RecordsWriter(out)
            bad = _python_rows(jsonl, writer)
        return writer.finish(identity, bad)
    except BaseException:
        writer.abandon()
        raise
    finally:
        if own:
            connection.close()


def write_records_table(out: str | os.PathLike, tables: Iterable[pa.Table], bad_lines: int = 0) -> Path:
    """Records given as tables of ``SCHEMA`` (``record_seq`` is filled here) written as a records
    Parquet file standing alone (no JSONL: what a run whose raw records were removed keeps, and
    what a benchmark generates)."""
    writer = RecordsWriter(Path(out))
    try:
        for table in tables:
            writer.write(table.select(SCHEMA.names).cast(SCHEMA))
        return writer.finish("", bad_lines)
    except BaseException:
        writer.abandon()
        raise


def ensure_records_parquet(run_dir: str | os.PathLike, connection: Any = None) -> Path | None:
    """The records Parquet file to read: written first when the JSONL has none that describes it
    (into a temporary directory when the run directory is read-only); the file itself when the
    raw records are gone; None when the run saved no records. ``FormatError`` for a version this
    faasprof does not read."""
    source = records_source(run_dir)
    if source is None:
        return None
    path = records_parquet_path(run_dir)
    if source == "jsonl" and not is_current(run_dir):
        try:
            path = write_records_parquet(run_dir, connection)
        except OSError:
            raise FormatError(
                f"{path}: cannot be written beside {ACTIVATIONS} (a read-only run directory?); copy the run somewhere writable"
            ) from None
    check_version(path)
    return path


def bad_lines(path: str | os.PathLike) -> int:
    """The unreadable lines of the JSONL the file was made from (0 when not recorded)."""
    value = footer(path).get(BAD_LINES_KEY, "0")
    return int(value) if value.isdigit() else 0


def read_records_frame(path: str | os.PathLike) -> tuple[pd.DataFrame, int]:
    """The typed frame ``records.read_records`` gives, from a records Parquet file (one row per id,
    the last record of an id winning), and the unreadable lines."""
    check_version(path)
    table = pq.read_table(path)
    data: dict[str, Any] = {
        "activation_id": pd.Series(
            pd.arrays.ArrowStringArray(records.arrow_strings(table.column("activation_id"), large=True)),
            dtype=records.TEXT_DTYPE,
        )
    }
    for name in record_fields.CATEGORY_COLUMNS:
        data[name] = records.categorical(table.column(name))
    for name in record_fields.FLOAT_COLUMNS:
        data[name] = table.column(name).to_numpy().astype("float64")
    data["timed_out"] = table.column("timed_out").to_numpy().astype(bool)
    data["error_text"] = pd.Series(np.asarray(table.column("error_text").to_pylist(), dtype=object), dtype=object)
    del table
    frame = pd.DataFrame({name: data[name] for name in record_fields.RECORD_COLUMNS}, copy=False)
    return records._dedupe(frame), bad_lines(path)
