"""``activations.jsonl`` read back flat: one typed row per activation record.

A record's ``start`` and ``end`` are epoch milliseconds of the invoker's clock; ``duration``
includes ``initTime``; ``waitTime`` runs from the controller accepting the request to the start of
``/init`` (or ``/run`` when the container was already initialised), so container creation and
resume-from-pause costs are inside it (see docs/ and the analyzer's README). ``RECORD_COLUMNS``
names the flat columns (units in the names); ``flatten_record`` states their meaning for one
record, and every reader here gives exactly its answer.

Two readers, one result:

* ``read_records`` with DuckDB (a dependency since the 10-million-row target of the analyzer):
  its JSON reader parses the file in native code on every core and extracts only the fields the
  columns need; no Python object per record. Records whose shape is unusual (annotations not a
  list, a response that is not an object, a status code that is not an integer) and failed
  records' error texts are finished in Python by ``flatten_record``, so the answer is the same.
* ``read_records_python``: orjson and ``flatten_record``, record by record; the reference the
  tests hold the fast reader to, and the reader where DuckDB cannot be imported.

Writing the file is ``faasprof.rundir.write_records``/``append_records``.
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
from faasprof.outcomes import TIMEOUT_MESSAGE_FRAGMENT, record_outcome

try:  # parses and extracts in native code, on every core; without it the Python reader is used
    import duckdb
except ImportError:  # pragma: no cover - duckdb is a declared dependency
    duckdb = None

try:  # orjson parses a million records several times faster; the standard library is the fallback
    from orjson import loads as _loads
except ImportError:  # pragma: no cover
    _loads = json.loads

# ``statusCode`` (DB document, ``docs=false`` summaries) to ``response.status`` (extended JSON).
STATUS_CODES = {0: "success", 1: "application error", 2: "action developer error", 3: "whisk internal error"}

RECORD_COLUMNS = (
    "activation_id",
    "name",
    "namespace",
    "start_ms",
    "end_ms",
    "duration_ms",
    "wait_ms",
    "init_ms",
    "kind",
    "memory_mb",
    "timeout_limit_ms",
    "timed_out",
    "status",
    "container_state",
    "record_outcome",
    "error_text",
)
CATEGORY_COLUMNS = ("name", "namespace", "kind", "status", "container_state", "record_outcome")
TEXT_COLUMNS = ("activation_id", "error_text")
FLOAT_COLUMNS = tuple(c for c in RECORD_COLUMNS if c not in CATEGORY_COLUMNS + TEXT_COLUMNS + ("timed_out",))

# The ids as Arrow-backed strings (the dtype of ``invocations.csv``'s ``activation_id``): a tenth
# of the memory of a Python string per id, and matched in Arrow without a conversion.
TEXT_DTYPE = pd.StringDtype("pyarrow", na_value=np.nan)

ERROR_TEXT_CHARS = 200  # enough to recognise the error; the full text stays in activations.jsonl
CHUNK_RECORDS = 65_536


# -- one record ---------------------------------------------------------------------------------


def _annotation_map(annotations: Any) -> dict:
    if isinstance(annotations, list):
        return {a.get("key"): a.get("value") for a in annotations if isinstance(a, dict)}
    if isinstance(annotations, dict):
        return annotations
    return {}


def _number(value: Any) -> float:
    if isinstance(value, bool) or value is None:
        return np.nan
    try:
        return float(value)
    except (TypeError, ValueError):
        return np.nan


def flatten_record(record: dict) -> tuple:
    """One raw record as a tuple in ``RECORD_COLUMNS`` order (NaN/None where a field is absent)."""
    ann = _annotation_map(record.get("annotations"))
    limits = ann.get("limits") if isinstance(ann.get("limits"), dict) else {}
    response = record.get("response") if isinstance(record.get("response"), dict) else {}
    status = response.get("status")
    if status is None:
        code = record.get("statusCode", response.get("statusCode"))
        status = STATUS_CODES.get(code, None if code is None else f"status {code}")
    start, end = _number(record.get("start")), _number(record.get("end"))
    duration = _number(record.get("duration"))
    if np.isnan(duration) and not (np.isnan(start) or np.isnan(end)):
        duration = end - start
    return (
        record.get("activationId"),
        record.get("name"),
        record.get("namespace"),
        start,
        end,
        duration,
        _number(ann.get("waitTime")),
        _number(ann.get("initTime")),  # absent = no /init for this activation
        ann.get("kind"),
        _number(limits.get("memory")),
        _number(limits.get("timeout")),
        bool(ann.get("timeout", False)),
        status,
        ann.get("containerState"),  # not in OpenWhisk's records (only its invoker log); localwhisk adds it
        *_outcome_and_error(record),
    )


def _outcome_and_error(record: dict) -> tuple[str, str | None]:
    """The record's final outcome (``faasprof.outcomes.record_outcome``) and, unless it is a
    success, the start of its error text (what the report shows beside the failure counts)."""
    response = record.get("response")
    annotations = record.get("annotations")
    if not isinstance(response, dict) or not isinstance(annotations, (list, type(None))):
        # A malformed record still counts, as whatever its well-formed fields say.
        record = {k: v for k, v in record.items() if k not in ("response", "annotations")}
        if isinstance(response, dict):
            record["response"] = response
        if isinstance(annotations, dict):  # the {key: value} form flatten_record accepts too
            record["annotations"] = [{"key": k, "value": v} for k, v in annotations.items()]
    outcome = record_outcome(record)
    if outcome == "success":
        return outcome, None
    result = response.get("result") if isinstance(response, dict) else None
    return outcome, error_text(result.get("error") if isinstance(result, dict) else None)


def error_text(error: Any) -> str | None:
    """The start of a record's ``response.result.error`` as the frames show it."""
    if error is None:
        return None
    text = error if isinstance(error, str) else json.dumps(error, sort_keys=True, default=str)
    return text[:ERROR_TEXT_CHARS]


def _flatten_fast(record: dict) -> tuple:
    """``flatten_record`` for the common case (annotations as a list of {key, value})."""
    annotations = record.get("annotations")
    if type(annotations) is not list:
        return flatten_record(record)
    wait = init = kind = memory = timeout_limit = state = None
    timed_out = False
    for item in annotations:
        try:
            key = item["key"]
        except (KeyError, TypeError):
            continue
        if key == "waitTime":
            wait = item.get("value")
        elif key == "initTime":
            init = item.get("value")
        elif key == "limits":
            limits = item.get("value")
            if type(limits) is dict:
                memory, timeout_limit = limits.get("memory"), limits.get("timeout")
        elif key == "kind":
            kind = item.get("value")
        elif key == "timeout":
            timed_out = item.get("value") is True
        elif key == "containerState":
            state = item.get("value")
    response = record.get("response")
    status = response.get("status") if type(response) is dict else None
    if status is None:
        code = record.get("statusCode", response.get("statusCode") if type(response) is dict else None)
        status = STATUS_CODES.get(code, None if code is None else f"status {code}")
    start, end, duration = record.get("start"), record.get("end"), record.get("duration")
    if duration is None and start is not None and end is not None:
        duration = _number(end) - _number(start)
    # The common case, a success, is settled here; anything else asks faasprof.outcomes (the same
    # answer, several times slower).
    code = response.get("statusCode", record.get("statusCode")) if type(response) is dict else record.get("statusCode")
    if not timed_out and ((code is None and status == "success") or (code == 0 and type(code) is int)):
        outcome = ("success", None)
    else:
        outcome = _outcome_and_error(record)
    return (record.get("activationId"), record.get("name"), record.get("namespace"), start, end, duration, wait, init, kind, memory, timeout_limit, timed_out, status, state, *outcome)


# -- the typed frame ----------------------------------------------------------------------------


def records_frame(columns: dict[str, list] | list[tuple]) -> pd.DataFrame:
    """Flattened records (columns by name, or ``flatten_record`` tuples) as a typed frame, one row
    per activation id (the last record of an id wins)."""
    if isinstance(columns, list):
        rows = columns
        columns = {name: list(values) for name, values in zip(RECORD_COLUMNS, zip(*rows))} if rows else {}
    data = {}
    for name in RECORD_COLUMNS:
        values = columns.get(name, [])
        if name == "activation_id":
            data[name] = pd.Series(np.array(values, dtype=object), dtype=TEXT_DTYPE)
        elif name in TEXT_COLUMNS:
            data[name] = pd.Series(np.array(values, dtype=object), dtype=object)
        elif name in CATEGORY_COLUMNS:
            data[name] = pd.Categorical(values)  # few distinct values: small and fast
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
    for name in CATEGORY_COLUMNS:  # concat turns categoricals with different categories into objects
        frame[name] = frame[name].astype("category")
    if frame["activation_id"].duplicated().any():
        frame = frame.drop_duplicates("activation_id", keep="last").reset_index(drop=True)
    return frame


# -- reading the file ---------------------------------------------------------------------------


def read_records(path: str | os.PathLike, keep_ids: set[str] | None = None) -> tuple[pd.DataFrame, int]:
    """Flattened records from ``activations.jsonl``; returns (typed frame, number of bad lines).

    A line cut short by a crash, or any line that is not a JSON object, is counted, not fatal.
    With ``keep_ids`` only records of those activations are kept. Uses DuckDB when it can be
    imported (see the module docstring), else ``read_records_python``.
    """
    if not os.path.exists(path):
        raise FormatError(f"{path}: missing")
    if duckdb is None:
        return read_records_python(path, keep_ids)
    result = _read_records_duckdb(os.fspath(path))
    if result is None:
        return read_records_python(path, keep_ids)
    frame, bad = result
    if keep_ids is not None:
        frame = frame[frame["activation_id"].isin(keep_ids).to_numpy()].reset_index(drop=True)
    return frame, bad


def read_records_python(path: str | os.PathLike, keep_ids: set[str] | None = None) -> tuple[pd.DataFrame, int]:
    """``read_records`` record by record (orjson and ``flatten_record``), converted to typed
    columns every ``CHUNK_RECORDS`` records so memory stays near the size of the result."""
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
            for line in handle:
                try:
                    record = _loads(line)
                except ValueError:
                    if line.strip():
                        bad += 1
                    continue
                if type(record) is not dict:
                    bad += 1
                    continue
                if keep_ids is not None and record.get("activationId") not in keep_ids:
                    continue
                rows.append(_flatten_fast(record))
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


# The fields the columns need, typed as a regular record has them; the annotations' values and the
# response's fields stay JSON so that their types can be checked.
_DUCKDB_COLUMNS = (
    "{activationId: 'VARCHAR', name: 'VARCHAR', namespace: 'VARCHAR', \"start\": 'DOUBLE', \"end\": 'DOUBLE', duration: 'DOUBLE', "
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
  activationId AS activation_id, name, namespace, "start" AS start_ms, "end" AS end_ms,
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
    query = _DUCKDB_QUERY.format(path="'" + path.replace("'", "''") + "'", columns=_DUCKDB_COLUMNS, max_object=int(max_object_bytes))
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
        self.floats: dict[str, list[np.ndarray]] = {name: [] for name in FLOAT_COLUMNS}
        self.timed_out: list[np.ndarray] = []
        self.codes: dict[str, list[tuple[list, np.ndarray]]] = {name: [] for name in CATEGORY_COLUMNS}
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
        for name in FLOAT_COLUMNS:
            self.floats[name].append(np.array(batch.column(name).to_numpy(zero_copy_only=False), dtype="float64", copy=True))
        self.timed_out.append(batch.column("timed_out").to_numpy(zero_copy_only=False).astype(bool, copy=False))
        for name in CATEGORY_COLUMNS:
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
        ids = pa.chunked_array(self.ids, type=pa.large_string()).combine_chunks() if self.ids else pa.array([], type=pa.large_string())
        self.ids = []
        data["activation_id"] = pd.Series(pd.arrays.ArrowStringArray(ids), dtype=TEXT_DTYPE)
        for name in CATEGORY_COLUMNS:
            data[name] = _joined_categorical(self.codes.pop(name))
        for name in FLOAT_COLUMNS:
            data[name] = np.concatenate(self.floats.pop(name)) if self.rows else np.zeros(0)
        data["timed_out"] = np.concatenate(self.timed_out) if self.rows else np.zeros(0, dtype=bool)
        self.timed_out = []
        data["error_text"] = pd.Series(np.full(self.rows, None, dtype=object), dtype=object)
        # copy=False: the columns stay the arrays just made (no consolidating copy of the float columns)
        return pd.DataFrame({name: data[name] for name in RECORD_COLUMNS}, copy=False)


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
    """Failed records (``rows``, with their ``error_json``): the error text, and OpenWhisk's
    time-limit message turning a developer error into an action timeout
    (``faasprof.outcomes.record_outcome``)."""
    outcomes = frame["record_outcome"].to_numpy(dtype=object).copy()
    texts = frame["error_text"].to_numpy(dtype=object).copy()
    changed = False
    for row, raw in zip(rows, errors):
        error = json.loads(raw) if raw is not None else None
        texts[row] = error_text(error)
        if outcomes[row] == "developer_error":
            message = error if isinstance(error, str) else str(error or "")
            if TIMEOUT_MESSAGE_FRAGMENT in message:
                outcomes[row] = "action_timeout"
                changed = True
    if changed:
        frame["record_outcome"] = pd.Categorical(outcomes)
    frame["error_text"] = pd.Series(texts, dtype=object)


def _dedupe(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per activation id, the last record of an id winning (as ``records_frame``)."""
    ids = frame["activation_id"].array
    if len(frame) and pc.count_distinct(ids._pa_array, mode="all").as_py() != len(ids):
        frame = frame.drop_duplicates("activation_id", keep="last").reset_index(drop=True)
    return frame
