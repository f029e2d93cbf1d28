"""One activation record flattened: the columns every reader of ``activations.jsonl`` gives.

A record's ``start`` and ``end`` are epoch milliseconds of the invoker's clock; ``duration``
includes ``initTime``; ``waitTime`` runs from the controller accepting the request to the start of
``/init`` (or ``/run`` when the container was already initialised), so container creation and
resume-from-pause costs are inside it. ``RECORD_COLUMNS`` names the flat columns (units in the
names); ``flatten_record`` states their meaning for one record.

Only the standard library: the record writers (``faasprof.rundir``, used by the invoker) flatten
records as they save them, without loading pandas or Arrow (``faasprof.rundir.record_columns``).
"""

from __future__ import annotations

import json
import math
from typing import Any

from faasprof.outcomes import record_outcome

try:  # orjson parses a million records several times faster; the standard library is the fallback
    from orjson import loads as _loads
except ImportError:  # pragma: no cover
    _loads = json.loads  # type: ignore[assignment]  # one str or bytes in, its value out: the same call here


# ``statusCode`` (DB document, ``docs=false`` summaries) to ``response.status`` (extended JSON).
STATUS_CODES: dict[Any, str] = {
    0: "success",
    1: "application error",
    2: "action developer error",
    3: "whisk internal error",
}

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

CHAIN_RESULT_KEY = b'"hops"'  # the key of a chain head's result (analyzer.chains): the bytes its record holds
# Byte strings whose lines the column index counts as it is written, for readers that would
# otherwise scan the whole file to learn that none holds them.
COUNTED_MENTIONS = (CHAIN_RESULT_KEY,)

ERROR_TEXT_CHARS = 200  # enough to recognise the error; the full text stays in activations.jsonl


# -- one record ---------------------------------------------------------------------------------


def _dict(value: Any) -> dict:
    """``value`` if it is a JSON object, else an empty one (a field of the wrong shape reads as absent)."""
    return value if isinstance(value, dict) else {}


def _annotation_map(annotations: Any) -> dict:
    if isinstance(annotations, list):
        return {a.get("key"): a.get("value") for a in annotations if isinstance(a, dict)}
    if isinstance(annotations, dict):
        return annotations
    return {}


def _number(value: Any) -> float:
    if isinstance(value, bool) or value is None:
        return math.nan
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def flatten_record(record: dict) -> tuple:
    """One raw record as a tuple in ``RECORD_COLUMNS`` order (NaN/None where a field is absent)."""
    ann = _annotation_map(record.get("annotations"))
    limits = _dict(ann.get("limits"))
    response = _dict(record.get("response"))
    status = response.get("status")
    if status is None:
        code = record.get("statusCode", response.get("statusCode"))
        status = STATUS_CODES.get(code, None if code is None else f"status {code}")
    start, end = _number(record.get("start")), _number(record.get("end"))
    duration = _number(record.get("duration"))
    if math.isnan(duration) and not (math.isnan(start) or math.isnan(end)):
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
        *outcome_and_error(record),
    )


def outcome_and_error(record: dict) -> tuple[str, str | None]:
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


def flatten_fast(record: dict) -> tuple:
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
        outcome: tuple[str, str | None] = ("success", None)
    else:
        outcome = outcome_and_error(record)
    return (
        record.get("activationId"),
        record.get("name"),
        record.get("namespace"),
        start,
        end,
        duration,
        wait,
        init,
        kind,
        memory,
        timeout_limit,
        timed_out,
        status,
        state,
        *outcome,
    )


def flatten_line(line: bytes) -> tuple | None:
    """One line of ``activations.jsonl`` flattened (``flatten_fast``); None for a line that is
    not a JSON object (a bad line, when it is not blank)."""
    try:
        record = _loads(line)
    except ValueError:
        return None
    return flatten_fast(record) if type(record) is dict else None
