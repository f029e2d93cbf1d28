"""``activations.jsonl`` read back flat: one typed row per activation record.

The flat columns and their meaning for one record are ``faasprof.rundir.record_fields``'s
(``RECORD_COLUMNS``, ``flatten_record``; see also docs/ and the analyzer's README); every reader
here gives exactly its answer.

Three readers, one result:

* the column index ``activations.columns.npz`` (``faasprof.rundir.record_columns``), written
  beside the file by the writers as they save records (and by ``read_records(refresh_index=True)``
  after a parse): used when it still describes the file (unchanged since, or a prefix of it whose
  CRC-32 matches, the lines after it parsed in Python); no JSON parsed at all;
* DuckDB (a dependency since the 10-million-row target of the analyzer), when there is no index
  that describes the file: its JSON reader parses the file in native code on every core and
  extracts only the fields the columns need; no Python object per record. Records whose shape
  is unusual (an id or label that is not a string, annotations not a list, a response that is
  not an object, a status code that is not an integer) send the file to ``read_records_python``;
  failed records' error texts are finished in Python, so the answer is the same.
* ``read_records_python``: orjson and ``flatten_record``, record by record; the reference the
  tests hold the other two to, and the reader where DuckDB cannot be imported.

``read_records`` picks among them. Writing the file (and its index) is
``faasprof.rundir.write_records``/``append_records``.
"""

from __future__ import annotations

import gc
import json
import os
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from faasprof.errors import FormatError
from faasprof.outcomes import refined_outcome

# The column tuples are read as record_fields.X when used, never copied here, so a column added
# there (ARCHITECTURE.md's metric recipe) reaches every reader; the names below are for callers.
from faasprof.rundir import record_columns, record_fields
from faasprof.rundir.record_fields import (  # noqa: F401  (the names the readers' callers use)
    CATEGORY_COLUMNS,
    ERROR_TEXT_CHARS,
    FLOAT_COLUMNS,
    RECORD_COLUMNS,
    STATUS_CODES,
    TEXT_COLUMNS,
    error_text,
    flatten_fast,
    flatten_line,
    flatten_record,
    outcome_and_error,
)

try:  # parses and extracts in native code, on every core; without it the Python reader is used
    import duckdb
except ImportError:  # pragma: no cover - duckdb is a declared dependency
    duckdb = None  # type: ignore[assignment]  # the module or None: the readers ask which before using it

# The ids as Arrow-backed strings (the dtype of ``invocations.csv``'s ``activation_id``): a tenth
# of the memory of a Python string per id, and matched in Arrow without a conversion.
TEXT_DTYPE = pd.StringDtype("pyarrow", na_value=np.nan)

CHUNK_RECORDS = 65_536


# -- the typed frame ----------------------------------------------------------------------------


def records_frame(columns: dict[str, list] | list[tuple]) -> pd.DataFrame:
    """Flattened records (columns by name, or ``flatten_record`` tuples) as a typed frame, one row
    per activation id (the last record of an id wins)."""
    if isinstance(columns, list):
        rows = columns
        columns = {name: list(values) for name, values in zip(record_fields.RECORD_COLUMNS, zip(*rows))} if rows else {}
    data = {}
    for name in record_fields.RECORD_COLUMNS:
        values = columns.get(name, [])
        if name == "activation_id":
            data[name] = pd.Series(np.array(values, dtype=object), dtype=TEXT_DTYPE)
        elif name in record_fields.TEXT_COLUMNS:
            data[name] = pd.Series(np.array(values, dtype=object), dtype=object)
        elif name in record_fields.CATEGORY_COLUMNS:
            try:
                data[name] = pd.Categorical(values)  # few distinct values: small and fast
            except TypeError:  # a list or an object where a label belongs: labelled by its JSON text
                data[name] = pd.Categorical(
                    [json.dumps(v, sort_keys=True) if isinstance(v, (list, dict)) else v for v in values]
                )
        elif name == "timed_out":
            data[name] = np.asarray(values, dtype=bool)
        else:
            data[name] = _to_float(values)
    frame = pd.DataFrame(data)
    if frame["activation_id"].duplicated().any():
        frame = frame.drop_duplicates("activation_id", keep="last").reset_index(drop=True)
    return frame


def _to_float(values: list) -> np.ndarray:
    try:
        return np.asarray(values, dtype="float64")  # None becomes NaN
    except (TypeError, ValueError):
        return pd.to_numeric(pd.Series(values, dtype=object), errors="coerce").to_numpy(dtype="float64")


def _concat(chunks: list[pd.DataFrame]) -> pd.DataFrame:
    frame = pd.concat(chunks, ignore_index=True)
    for name in record_fields.CATEGORY_COLUMNS:  # concat turns categoricals with different categories into objects
        frame[name] = frame[name].astype("category")
    if frame["activation_id"].duplicated().any():
        frame = frame.drop_duplicates("activation_id", keep="last").reset_index(drop=True)
    return frame


# -- reading the file ---------------------------------------------------------------------------


def read_records(
    path: str | os.PathLike, keep_ids: set[str] | None = None, refresh_index: bool = False
) -> tuple[pd.DataFrame, int]:
    """Flattened records from ``activations.jsonl``; returns (typed frame, number of bad lines).

    A line cut short by a crash, or any line that is not a JSON object, is counted, not fatal.
    With ``keep_ids`` only records of those activations are kept. Reads the column index when it
    still describes the file, else parses it with DuckDB when it can be imported, else with
    ``read_records_python`` (see the module docstring). With ``refresh_index`` the index is
    rewritten after a parse, so that the next read is fast (nothing fails when it cannot be).
    """
    if not os.path.exists(path):
        raise FormatError(f"{path}: missing")
    frame, bad, parsed = _read_indexed(path)
    if frame is None:
        frame, bad = _parse(path)
    if refresh_index and parsed:
        write_index(path, frame, bad)
    if keep_ids is not None:
        frame = frame[frame["activation_id"].isin(keep_ids).to_numpy()].reset_index(drop=True)
    return frame, bad


def _parse(path: str | os.PathLike) -> tuple[pd.DataFrame, int]:
    result = _read_records_duckdb(os.fspath(path)) if duckdb is not None else None
    return result if result is not None else read_records_python(path)


def _read_indexed(path: str | os.PathLike) -> tuple[pd.DataFrame | None, int, bool]:
    """(frame, bad lines, whether any JSON was parsed) from the column index; (None, 0, True) when
    there is no index that describes the file."""
    index = record_columns.load(path)
    if index is None:
        return None, 0, True
    try:
        state = index.state(path)
        if state == "stale":
            return None, 0, True
        frame, bad = index_frame(index), index.bad_lines
        covers = index.covers_bytes
    finally:
        index.close()
    if state == "current":
        return frame, bad, False
    # Appended to since (or copied): the lines after the covered bytes, parsed.
    tail, tail_bad = read_records_python(path, offset=covers)
    return (_concat([frame, tail]) if len(tail) else frame), bad + tail_bad, True


def index_frame(index: record_columns.ColumnIndex) -> pd.DataFrame:
    """The typed frame ``records_frame`` makes, from an index's columns (one row per id)."""
    data: dict[str, Any] = {}
    rows = index.rows
    data["activation_id"] = pd.Series(
        pd.arrays.ArrowStringArray(_arrow_strings(index, "activation_id", rows)), dtype=TEXT_DTYPE
    )
    for name in record_fields.CATEGORY_COLUMNS:
        data[name] = _joined_categorical([(index.labels(name), index.array(f"{name}.codes"))])
    for name in record_fields.FLOAT_COLUMNS:
        data[name] = index.array(name)
    data["timed_out"] = index.array("timed_out")
    data["error_text"] = pd.Series(_object_strings(index, "error_text", rows), dtype=object)
    frame = pd.DataFrame({name: data[name] for name in record_fields.RECORD_COLUMNS}, copy=False)
    return _dedupe(frame)


def _arrow_strings(index: record_columns.ColumnIndex, name: str, rows: int) -> pa.Array:
    offsets, data, valid = (index.array(f"{name}.{part}") for part in ("offsets", "data", "valid"))
    nulls = rows - int(valid.sum())
    bitmap = pa.py_buffer(np.packbits(valid, bitorder="little")) if nulls else None
    return pa.LargeStringArray.from_buffers(rows, pa.py_buffer(offsets), pa.py_buffer(data), bitmap, nulls)


def _object_strings(index: record_columns.ColumnIndex, name: str, rows: int) -> np.ndarray:
    offsets, data, valid = (index.array(f"{name}.{part}") for part in ("offsets", "data", "valid"))
    out = np.full(rows, None, dtype=object)
    raw = data.tobytes()
    for row in np.flatnonzero(valid):
        out[row] = raw[offsets[row] : offsets[row + 1]].decode("utf-8")
    return out


def write_index(path: str | os.PathLike, frame: pd.DataFrame, bad: int) -> bool:
    """Write the column index of ``path`` from its parsed frame; False when it cannot hold the
    frame exactly (a label that is not a string), the file ends in a torn line, or the disk
    refuses (the index only saves time: reading never depends on it)."""
    arrays: dict[str, np.ndarray] = {}
    labels: dict[str, list[str]] = {}
    for name in record_fields.CATEGORY_COLUMNS:
        column = frame[name].array
        categories = list(column.categories)
        if any(type(label) is not str for label in categories):
            return False
        labels[name] = categories
        arrays[f"{name}.codes"] = np.asarray(column.codes, dtype=np.int32)
    for name in record_fields.FLOAT_COLUMNS:
        arrays[name] = frame[name].to_numpy(dtype="float64")
    arrays["timed_out"] = frame["timed_out"].to_numpy(dtype=bool)
    ids = arrow_strings(frame["activation_id"], large=True)
    validity, offsets, data = ids.buffers()
    count = len(ids)
    offsets = (
        np.frombuffer(offsets, dtype=np.int64, count=count + 1, offset=ids.offset * 8)
        if count
        else np.zeros(1, dtype=np.int64)
    )
    arrays["activation_id.offsets"] = offsets - offsets[0]
    arrays["activation_id.data"] = (
        np.frombuffer(data, dtype=np.uint8)[offsets[0] : offsets[-1]]
        if data is not None and count
        else np.zeros(0, dtype=np.uint8)
    )
    arrays["activation_id.valid"] = ids.is_valid().to_numpy(zero_copy_only=False)
    texts = frame["error_text"].to_numpy(dtype=object)
    if any(value is not None and type(value) is not str for value in texts[pd.notna(texts)]):
        return False
    arrays.update(
        record_columns.encode_strings("error_text", [value if type(value) is str else None for value in texts])
    )
    try:
        return record_columns.write_from_arrays(path, arrays, labels, rows=len(frame), bad_lines=bad)
    except OSError:
        record_columns.remove(path)
        return False


def arrow_strings(values, large: bool = False) -> pa.Array:
    """A column of strings (a Series, an ``ArrowStringArray``, an Arrow array or anything
    ``pa.array`` takes) as one Arrow array: zero-copy when it is Arrow-backed in one chunk, as both
    readers give ids; with ``large``, as ``large_string`` (64-bit offsets)."""
    if isinstance(values, pd.Series):
        values = values.array
    array = values._pa_array if isinstance(values, pd.arrays.ArrowStringArray) else values
    if isinstance(array, pa.ChunkedArray):
        array = array.chunk(0) if array.num_chunks == 1 else array.combine_chunks()
    if not isinstance(array, pa.Array):
        array = pa.array(np.asarray(array, dtype=object), type=pa.large_string(), from_pandas=True)
    return array.cast(pa.large_string()) if large and array.type != pa.large_string() else array


def read_records_python(
    path: str | os.PathLike, keep_ids: set[str] | None = None, offset: int = 0
) -> tuple[pd.DataFrame, int]:
    """``read_records`` record by record (orjson and ``flatten_record``), converted to typed
    columns every ``CHUNK_RECORDS`` records so memory stays near the size of the result. With
    ``offset``, the lines from that byte on (the start of a line)."""
    chunks = []
    rows: list[tuple] = []
    bad = 0
    try:
        handle = open(path, "rb")
    except FileNotFoundError:
        raise FormatError(f"{path}: missing") from None
    # Millions of short-lived dicts would trigger the cyclic garbage collector over and over;
    # nothing here creates cycles.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        with handle:
            handle.seek(offset)
            for line in handle:
                row = flatten_line(line)
                if row is None:
                    if line.strip():
                        bad += 1
                    continue
                if keep_ids is not None and row[0] not in keep_ids:
                    continue
                rows.append(row)
                if len(rows) >= CHUNK_RECORDS:
                    chunks.append(records_frame(rows))
                    rows = []
    finally:
        if gc_was_enabled:
            gc.enable()
    if rows or not chunks:
        chunks.append(records_frame(rows))
    frame = chunks[0] if len(chunks) == 1 else _concat(chunks)
    return frame, bad


# The fields the columns need, typed as a regular record has them; the id and the labels, the
# annotations' values and the response's fields stay JSON so that their types can be checked.
_DUCKDB_COLUMNS = (
    "{activationId: 'JSON', name: 'JSON', namespace: 'JSON', \"start\": 'DOUBLE', \"end\": 'DOUBLE', duration: 'DOUBLE', "
    "statusCode: 'JSON', annotations: 'STRUCT(\"key\" VARCHAR, \"value\" JSON)[]', "
    "response: 'STRUCT(status JSON, statusCode JSON, success JSON, result STRUCT(error JSON))'}"
)

# One row per line, in file order. ``unusual`` says the record is not of the regular shape (then
# the whole file goes to the Python reader): the checks are on the JSON text of small values, so
# they cost no parsing. ``error_json`` is kept for failed records only.
_DUCKDB_QUERY = """
WITH raw AS (
  SELECT *, list_reverse(annotations) AS rev
  FROM read_json({path}, format = 'newline_delimited', ignore_errors = true, maximum_object_size = {max_object},
                 columns = {columns})
), keyed AS (
  SELECT *, list_transform(rev, lambda a: a.key) AS rkeys FROM raw
), picked AS (
  SELECT *,
    CAST(rev[list_position(rkeys, 'waitTime')].value AS VARCHAR) AS wait_text,
    CAST(rev[list_position(rkeys, 'initTime')].value AS VARCHAR) AS init_text,
    rev[list_position(rkeys, 'kind')].value AS kind_json,
    rev[list_position(rkeys, 'limits')].value AS limits_json,
    CAST(rev[list_position(rkeys, 'timeout')].value AS VARCHAR) AS timeout_text,
    rev[list_position(rkeys, 'containerState')].value AS state_json,
    CAST(coalesce(response.statusCode, statusCode) AS VARCHAR) AS code_text,
    CAST(coalesce(statusCode, response.statusCode) AS VARCHAR) AS status_code_text,
    CAST(response.status AS VARCHAR) AS status_text
  FROM keyed
), decided AS (
  SELECT *,
    CASE
      WHEN timeout_text = 'true' THEN 'action_timeout'
      WHEN code_text IN ('0', '1', '2', '3')
        THEN ['success', 'application_error', 'developer_error', 'internal_error'][CAST(code_text AS INTEGER) + 1]
      WHEN lower(status_text) = '"success"' THEN 'success'
      WHEN lower(status_text) = '"application error"' THEN 'application_error'
      WHEN lower(status_text) = '"action developer error"' THEN 'developer_error'
      WHEN lower(status_text) = '"whisk internal error"' THEN 'internal_error'
      WHEN CAST(response.success AS VARCHAR) = 'true' THEN 'success'
      ELSE 'internal_error'
    END AS outcome
  FROM picked
)
SELECT
  activationId ->> '$' AS activation_id, name ->> '$' AS name, namespace ->> '$' AS namespace, "start" AS start_ms, "end" AS end_ms,
  coalesce(duration, "end" - "start") AS duration_ms,
  TRY_CAST(wait_text AS DOUBLE) AS wait_ms, TRY_CAST(init_text AS DOUBLE) AS init_ms,
  kind_json ->> '$' AS kind,
  TRY_CAST(limits_json -> '$.memory' AS DOUBLE) AS memory_mb,
  TRY_CAST(limits_json -> '$.timeout' AS DOUBLE) AS timeout_limit_ms,
  coalesce(timeout_text = 'true', false) AS timed_out,
  CASE WHEN status_text IS NOT NULL AND status_text <> 'null' THEN response.status ->> '$'
       WHEN status_code_text IN ('0', '1', '2', '3')
         THEN ['success', 'application error', 'action developer error', 'whisk internal error'][CAST(status_code_text AS INTEGER) + 1]
       WHEN status_code_text IS NOT NULL AND status_code_text <> 'null' THEN 'status ' || status_code_text
  END AS status,
  state_json ->> '$' AS container_state,
  outcome AS record_outcome,
  CASE WHEN outcome <> 'success' THEN CAST(response.result.error AS VARCHAR) END AS error_json,
  (activationId IS NULL AND name IS NULL AND namespace IS NULL AND "start" IS NULL AND "end" IS NULL AND duration IS NULL
   AND statusCode IS NULL AND annotations IS NULL AND response IS NULL) AS empty,
  coalesce(annotations IS NULL OR response IS NULL
   OR (activationId IS NOT NULL AND NOT starts_with(CAST(activationId AS VARCHAR), '"') AND CAST(activationId AS VARCHAR) <> 'null')
   OR (name IS NOT NULL AND NOT starts_with(CAST(name AS VARCHAR), '"') AND CAST(name AS VARCHAR) <> 'null')
   OR (namespace IS NOT NULL AND NOT starts_with(CAST(namespace AS VARCHAR), '"') AND CAST(namespace AS VARCHAR) <> 'null')
   OR wait_text IN ('true', 'false') OR init_text IN ('true', 'false')
   OR (kind_json IS NOT NULL AND NOT starts_with(CAST(kind_json AS VARCHAR), '"') AND CAST(kind_json AS VARCHAR) <> 'null')
   OR (state_json IS NOT NULL AND NOT starts_with(CAST(state_json AS VARCHAR), '"') AND CAST(state_json AS VARCHAR) <> 'null')
   OR (status_text IS NOT NULL AND NOT starts_with(status_text, '"') AND status_text <> 'null')
   OR (code_text IS NOT NULL AND code_text <> 'null' AND NOT regexp_full_match(code_text, '-?[0-9]+'))
   OR (status_code_text IS NOT NULL AND status_code_text <> 'null' AND NOT regexp_full_match(status_code_text, '-?[0-9]+')), false) AS unusual
FROM decided
"""


def _read_records_duckdb(path: str) -> tuple[pd.DataFrame, int] | None:
    """The fast reader; None when a record is not of the regular shape (the caller then reads the
    file with ``read_records_python``).

    The query's result is streamed in batches of ``BATCH_ROWS`` and each batch is reduced at once
    to what the frame keeps (float arrays, the ids as Arrow strings, the repeated strings as
    dictionary codes), so neither DuckDB nor Arrow ever holds the whole result as strings.

    DuckDB's JSON reader sizes its read buffers from ``maximum_object_size`` (twice it, per
    thread), so it is given ``MAX_OBJECT_BYTES``, not 1 GiB (0.5 GiB less at its peak); a larger
    record is still read whole (DuckDB 1.x/2.0 grows the buffer; checked with a 5 MB record
    against a 1 MiB setting)."""
    parts = _query_parts(path, MAX_OBJECT_BYTES)
    if parts is None:
        return None
    frame = parts.frame()
    bad, failed, errors = parts.bad, parts.failed_rows(), parts.errors
    del parts
    if len(failed):
        _finish_failed(frame, failed, errors)
    frame = _dedupe(frame)
    pa.default_memory_pool().release_unused()  # Arrow's allocator keeps freed blocks otherwise
    return frame, bad


MAX_OBJECT_BYTES = 64 * 2**20  # OpenWhisk's result limit is 1 MiB: a record fits many times over


def _query_parts(path: str, max_object_bytes: int) -> "_Parts | None":
    query = _DUCKDB_QUERY.format(
        path="'" + path.replace("'", "''") + "'", columns=_DUCKDB_COLUMNS, max_object=int(max_object_bytes)
    )
    connection = duckdb.connect(config={"threads": max(1, os.cpu_count() or 1)})
    parts = _Parts()
    try:
        for batch in connection.sql(query).to_arrow_reader(BATCH_ROWS):
            if not parts.add(batch):
                return None
    finally:
        connection.close()
    return parts


BATCH_ROWS = 1 << 20  # rows of one streamed batch: bounded memory, few Python steps


class _Parts:
    """The streamed batches of ``_DUCKDB_QUERY``, kept as the typed pieces of the records frame."""

    def __init__(self) -> None:
        self.bad = 0
        self.rows = 0
        self.ids: list[pa.Array] = []
        self.floats: dict[str, list[np.ndarray]] = {name: [] for name in record_fields.FLOAT_COLUMNS}
        self.timed_out: list[np.ndarray] = []
        self.codes: dict[str, list[tuple[list, np.ndarray]]] = {name: [] for name in record_fields.CATEGORY_COLUMNS}
        self.failed: list[np.ndarray] = []
        self.errors: list = []

    def add(self, batch: pa.RecordBatch) -> bool:
        """Keep one batch; False when a record in it is not of the regular shape."""
        # A line that is not a JSON object (or one cut short) comes back with every field empty.
        empty = batch.column("empty").to_numpy(zero_copy_only=False)
        bad = int(empty.sum())
        if bad:
            self.bad += bad
            batch = batch.filter(pa.array(~empty))
        if not batch.num_rows:
            return True
        if pc.any(batch.column("unusual")).as_py():
            return False
        # Copies, never views: a column imported from DuckDB keeps its whole batch (every column of
        # the result) alive for as long as any of its buffers is referenced.
        self.ids.append(pa.concat_arrays([batch.column("activation_id").cast(pa.large_string())]))
        for name in record_fields.FLOAT_COLUMNS:
            self.floats[name].append(
                np.array(batch.column(name).to_numpy(zero_copy_only=False), dtype="float64", copy=True)
            )
        self.timed_out.append(batch.column("timed_out").to_numpy(zero_copy_only=False).astype(bool, copy=False))
        for name in record_fields.CATEGORY_COLUMNS:
            encoded = pc.dictionary_encode(batch.column(name))
            codes = pc.fill_null(encoded.indices, -1).to_numpy(zero_copy_only=False).astype(np.int32, copy=False)
            self.codes[name].append((encoded.dictionary.to_pylist(), codes))
        failed = np.flatnonzero(pc.not_equal(batch.column("record_outcome"), "success").to_numpy(zero_copy_only=False))
        if len(failed):
            self.failed.append(failed + self.rows)
            self.errors.extend(batch.column("error_json").take(pa.array(failed)).to_pylist())
        self.rows += batch.num_rows
        return True

    def failed_rows(self) -> np.ndarray:
        return np.concatenate(self.failed) if self.failed else np.zeros(0, dtype=np.int64)

    def frame(self) -> pd.DataFrame:
        """The typed columns ``records_frame`` makes (no Python object per row but the error texts'
        empty slots); the pieces are released as they are joined."""
        data: dict[str, Any] = {}
        ids = (
            pa.chunked_array(self.ids, type=pa.large_string()).combine_chunks()
            if self.ids
            else pa.array([], type=pa.large_string())
        )
        self.ids = []
        data["activation_id"] = pd.Series(pd.arrays.ArrowStringArray(ids), dtype=TEXT_DTYPE)
        for name in record_fields.CATEGORY_COLUMNS:
            data[name] = _joined_categorical(self.codes.pop(name))
        for name in record_fields.FLOAT_COLUMNS:
            data[name] = np.concatenate(self.floats.pop(name)) if self.rows else np.zeros(0)
        data["timed_out"] = np.concatenate(self.timed_out) if self.rows else np.zeros(0, dtype=bool)
        self.timed_out = []
        data["error_text"] = pd.Series(np.full(self.rows, None, dtype=object), dtype=object)
        # copy=False: the columns stay the arrays just made (no consolidating copy of the float columns)
        return pd.DataFrame({name: data[name] for name in record_fields.RECORD_COLUMNS}, copy=False)


def _joined_categorical(pieces: list[tuple[list, np.ndarray]]) -> pd.Categorical:
    """Per-batch (dictionary, codes) as one ``pd.Categorical`` with sorted categories, as
    ``pd.Categorical(values)`` makes it."""
    categories = sorted({value for dictionary, _ in pieces for value in dictionary if value is not None})
    if not categories:
        return pd.Categorical([None] * sum(len(codes) for _, codes in pieces))
    where = {value: k for k, value in enumerate(categories)}
    code_type = np.int8 if len(categories) < 127 else np.int32
    out = []
    for dictionary, codes in pieces:
        remap = np.array([where[value] for value in dictionary] + [-1], dtype=code_type)  # code -1 (no value) stays -1
        out.append(remap[codes])
    return pd.Categorical.from_codes(np.concatenate(out), categories=pd.Index(categories))


def categorical(column: pa.ChunkedArray | pa.Array) -> pd.Categorical:
    """A string column as ``pd.Categorical(values)`` makes it: the sorted distinct values."""
    encoded = pc.dictionary_encode(column)
    encoded = encoded.combine_chunks() if isinstance(encoded, pa.ChunkedArray) else encoded
    categories = encoded.dictionary.to_pylist()
    if not categories:
        return pd.Categorical([None] * len(encoded))
    codes = pc.fill_null(encoded.indices, -1).to_numpy(zero_copy_only=False).astype(np.int64)
    order = sorted(range(len(categories)), key=lambda k: categories[k])
    remap = np.empty(len(categories) + 1, dtype=np.int64)
    remap[-1] = -1  # code -1 (no value) stays -1
    remap[np.asarray(order, dtype=np.int64)] = np.arange(len(order), dtype=np.int64)
    return pd.Categorical.from_codes(remap[codes], categories=pd.Index([categories[k] for k in order]))


def _finish_failed(frame: pd.DataFrame, rows: np.ndarray, errors: list) -> None:
    """Failed records (``rows``, with their ``error_json``): the error text, and the outcome it
    refines (``faasprof.outcomes.refined_outcome``: an action timeout, a stopped platform)."""
    outcomes = frame["record_outcome"].to_numpy(dtype=object).copy()
    texts = frame["error_text"].to_numpy(dtype=object).copy()
    changed = False
    for row, raw in zip(rows, errors):
        error = json.loads(raw) if raw is not None else None
        texts[row] = error_text(error)
        if outcomes[row] in ("developer_error", "internal_error"):
            refined = refined_outcome(outcomes[row], error if isinstance(error, str) else str(error or ""))
            changed = changed or refined != outcomes[row]
            outcomes[row] = refined
    if changed:
        frame["record_outcome"] = pd.Categorical(outcomes)
    frame["error_text"] = pd.Series(texts, dtype=object)


def _dedupe(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per activation id, the last record of an id winning (as ``records_frame``)."""
    if len(frame) and not ids_unique(frame["activation_id"].array):
        frame = frame.drop_duplicates("activation_id", keep="last").reset_index(drop=True)
    return frame


_HASH_MULTIPLIERS = np.array(
    [0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0xD6E8FEB86659FD93], dtype=np.uint64
)


def ids_unique(ids) -> bool:
    """Whether no id repeats (an ``ArrowStringArray``, or anything ``pa.array`` takes).

    Ids of one length (OpenWhisk's are 32 hex digits) are hashed as 64-bit words in NumPy and the
    sorted hashes compared (half a second for ten million, where Arrow's distinct count takes ten);
    only equal hashes are settled exactly. Ids of mixed lengths are counted by Arrow."""
    array = arrow_strings(ids, large=True)
    count = len(array)
    if count < 2:
        return True
    words = _id_words(array)
    if words is None:
        return len(pc.unique(array)) == count
    hashes = np.sort(_hash_words(words[0]))
    if not (hashes[1:] == hashes[:-1]).any():
        return True
    return len(pc.unique(array)) == count


def match_positions(ids, values) -> np.ndarray | None:
    """For each of ``ids``, the row of the same id among ``values`` (ids without repeats), −1 for
    none: what ``pyarrow.compute.index_in`` gives. None when it cannot be told this way (ids of
    several lengths, empty ones aside, or two values hashing alike): then ask Arrow.

    Each id's 64-bit words are hashed in NumPy, the hashes looked up in pandas' integer hash table,
    and every hit compared word by word: about half of Arrow's string hash join at ten million."""
    ids, values = arrow_strings(ids, large=True), arrow_strings(values, large=True)
    position = np.full(len(ids), -1, dtype=np.int64)
    if not len(values) or not len(ids):
        return position
    found = _id_words(values)
    if found is None:
        return None
    value_words, width = found
    found = _id_words(ids, width=width, allow_empty=True)
    if found is None:
        return None
    probe_words, present = found
    table = pd.Index(_hash_words(value_words))
    if not table.is_unique:
        return None
    rows = table.get_indexer(_hash_words(probe_words))
    hit = np.flatnonzero(rows >= 0)
    same = (probe_words[hit] == value_words[rows[hit]]).all(axis=1)
    position[present[hit[same]]] = rows[hit[same]]
    return position


def _id_words(array: pa.LargeStringArray, width: int | None = None, allow_empty: bool = False):
    """Ids of one byte length (``width``, else the first id's) as rows of 64-bit words
    (zero-padded): (words, width), or with ``allow_empty`` (words, rows of the non-empty ids),
    empty ids left out. None when a length differs or an id is null."""
    if array.null_count or not len(array):
        return None
    count = len(array)
    offsets = np.frombuffer(array.buffers()[1], dtype=np.int64, count=count + 1, offset=array.offset * 8)
    lengths = np.diff(offsets)
    width = int(lengths[0]) if width is None else width
    empty = lengths == 0
    if width == 0 or not ((lengths == width) | (empty & allow_empty)).all():
        return None
    present = np.flatnonzero(~empty) if allow_empty else None
    rows = count if present is None else len(present)
    words_per_id = -(-width // 8)
    if not rows:
        return np.zeros((0, words_per_id), dtype=np.uint64), present
    # Empty ids take no bytes: the others' bytes are contiguous, ``width`` each.
    data = np.frombuffer(array.buffers()[2], dtype=np.uint8)[offsets[0] : offsets[0] + rows * width].reshape(
        rows, width
    )
    if width % 8:
        padded = np.zeros((rows, words_per_id * 8), dtype=np.uint8)
        padded[:, :width] = data
        data = padded
    return np.ascontiguousarray(data).view(np.uint64), (width if present is None else present)


def _hash_words(words: np.ndarray) -> np.ndarray:
    hashes = np.zeros(len(words), dtype=np.uint64)
    for k in range(words.shape[1]):
        hashes = (hashes ^ words[:, k]) * _HASH_MULTIPLIERS[k % len(_HASH_MULTIPLIERS)]  # wraps: a hash
    return hashes
