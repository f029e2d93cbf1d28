"""Activation records read back flat, for the frames.

Fetching them from the platform lives with the REST client (``faasprof run`` fetches records
too); reading and writing ``activations.jsonl`` lives in ``faasprof.rundir``.

``flatten_records`` turns raw records into plain columns (units in the names). A record's ``start``
and ``end`` are epoch milliseconds of the invoker's clock; ``duration`` includes ``initTime``;
``waitTime`` runs from the controller accepting the request to the start of ``/init`` (or ``/run``
when the container was already initialised), so container creation and resume-from-pause costs are
inside it (research/openwhisk.md §3).
"""

from __future__ import annotations

import gc
import json
import os
import sys
from typing import Any

import numpy as np

from faasprof.errors import FormatError
from faasprof.outcomes import record_outcome

# Fetching and saving live with the REST client (``faasprof run`` saves records too); the analyzer
# uses them through this module.
from invoker.activations import (  # noqa: F401
    DEFAULT_RETRY_DELAYS_S,
    MAX_ID_LOOKUPS_PER_ROUND,
    PAGE_LIMIT,
    FetchReport,
    fetch_records,
    list_window,
)
from faasprof.rundir import append_records, sort_records, write_records  # noqa: F401

try:  # orjson parses a million records several times faster; the standard library is the fallback
    from orjson import loads as _loads
except ImportError:  # pragma: no cover
    _loads = json.loads

DEFAULT_MARGIN_MS = 60_000  # clock skew allowance between the client host and the invoker host

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

ERROR_TEXT_CHARS = 200  # enough to recognise the error; the full text stays in activations.jsonl


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
    error = result.get("error") if isinstance(result, dict) else None
    if error is None:
        return outcome, None
    text = error if isinstance(error, str) else json.dumps(error, sort_keys=True, default=str)
    return outcome, text[:ERROR_TEXT_CHARS]


CHUNK_RECORDS = 65_536


def read_records(path: str | os.PathLike, keep_ids: set[str] | None = None):
    """Flattened records from ``activations.jsonl``; returns (typed frame, number of bad lines).

    Same fields as ``flatten_record``, unrolled for speed (a million records is a normal run) and
    converted to typed columns every ``CHUNK_RECORDS`` records, so memory stays near the size of
    the result. With ``keep_ids`` only records of those activations are kept. A line cut short by
    a crash, or any line that is not a JSON object, is counted, not fatal.
    """
    from analyzer.frames import records_frame

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


def _concat(chunks):
    import pandas as pd

    from analyzer.frames import CATEGORY_COLUMNS

    frame = pd.concat(chunks, ignore_index=True)
    for name in CATEGORY_COLUMNS:  # concat turns categoricals with different categories into objects
        frame[name] = frame[name].astype("category")
    if frame["activation_id"].duplicated().any():
        frame = frame.drop_duplicates("activation_id", keep="last").reset_index(drop=True)
    return frame


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


def stderr_progress(message: str) -> None:
    print(f"analyze: {message}", file=sys.stderr, flush=True)
