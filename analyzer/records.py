"""Activation records: fetching them from the platform, saving them raw, reading them back flat.

Fetching (``fetch_records``) talks only the OpenWhisk REST API, so it works the same against a real
OpenWhisk and against localwhisk:

1. ``GET .../activations?docs=true&since=&upto=&limit=200&skip=`` over the run's wall-clock window
   (first send − ``margin``, last answer + ``margin``). OpenWhisk lists newest first and filters
   ``since``/``upto`` (inclusive) against a record's ``start``; we page by sliding ``upto`` down to
   the oldest ``start`` of each full page and skipping the records already seen at exactly that
   millisecond, so records stored while we page shift nothing and ``skip`` stays small.
2. ``GET .../activations/{id}`` for every activation id of the run still missing, in rounds with a
   growing delay, because OpenWhisk stores a record only after it has answered the client (a 404
   right after the answer is normal).

Only records whose ``activationId`` the run itself received are kept: other actions, other tenants
and other runs in the same window are never mixed in. What is still missing after the last round is
counted and reported by the analyzer, never dropped silently.

Records are written to ``activations.jsonl`` exactly as the platform returned them (one JSON object
per line, ordered by ``start`` then id, written through a temporary file and a rename).

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
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

import numpy as np

from faasprof.errors import FormatError

try:  # orjson parses a million records several times faster; the standard library is the fallback
    from orjson import loads as _loads
except ImportError:  # pragma: no cover
    _loads = json.loads

PAGE_LIMIT = 200  # OpenWhisk's maximum ``limit`` for GET .../activations
DEFAULT_MARGIN_MS = 60_000  # clock skew allowance between the client host and the invoker host
DEFAULT_RETRY_DELAYS_S = (0.5, 1.0, 2.0, 4.0)
MAX_ID_LOOKUPS_PER_ROUND = 2000

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
)


@dataclass
class FetchReport:
    """What ``fetch_records`` did, for the summary."""

    wanted: int = 0
    found: int = 0
    listed_pages: int = 0
    listed_records: int = 0
    foreign_records: int = 0  # records in the window that belong to something else
    id_lookups: int = 0
    rounds: int = 0
    missing_ids: list[str] = field(default_factory=list)
    window_ms: tuple[int, int] | None = None

    def to_json(self) -> dict:
        return {
            "wanted": self.wanted,
            "found": self.found,
            "missing": len(self.missing_ids),
            "listed_pages": self.listed_pages,
            "listed_records": self.listed_records,
            "foreign_records_ignored": self.foreign_records,
            "id_lookups": self.id_lookups,
            "lookup_rounds": self.rounds,
            "window_ms": list(self.window_ms) if self.window_ms else None,
        }


def list_window(client, since_ms: int, upto_ms: int, report: FetchReport | None = None) -> Iterable[dict]:
    """Every record whose ``start`` is in [since_ms, upto_ms], newest first, paging by upto/skip."""
    upto, skip = int(upto_ms), 0
    while True:
        page = client.list_activations(since_ms=since_ms, upto_ms=upto, limit=PAGE_LIMIT, skip=skip)
        if report is not None:
            report.listed_pages += 1
            report.listed_records += len(page)
        yield from page
        if len(page) < PAGE_LIMIT:
            return
        oldest = min(int(record.get("start", upto)) for record in page)
        at_oldest = sum(1 for record in page if int(record.get("start", upto)) == oldest)
        if oldest == upto:
            skip += len(page)  # a whole page in one millisecond: keep the window, skip further
        else:
            upto, skip = oldest, at_oldest


def fetch_records(
    client,
    activation_ids: Iterable[str],
    since_ms: int,
    upto_ms: int,
    retry_delays_s: Iterable[float] = DEFAULT_RETRY_DELAYS_S,
    sleep: Callable[[float], None] = time.sleep,
    progress: Callable[[str], None] | None = None,
    list_first: bool = True,
) -> tuple[list[dict], FetchReport]:
    """The records of ``activation_ids`` (see the module docstring); returns (records, report).

    ``list_first=False`` skips the window listing and asks by id only (a few stragglers).
    """
    wanted = {i for i in activation_ids if i}
    report = FetchReport(wanted=len(wanted), window_ms=(int(since_ms), int(upto_ms)))
    found: dict[str, dict] = {}
    if list_first:
        for record in list_window(client, since_ms, upto_ms, report):
            activation_id = record.get("activationId")
            if activation_id in wanted:
                found[activation_id] = record
            else:
                report.foreign_records += 1
        if progress:
            progress(f"listed {report.listed_records} records in {report.listed_pages} pages; {len(found)}/{len(wanted)} belong to this run")
    for delay in [0.0, *retry_delays_s]:
        missing = sorted(wanted - found.keys())
        if not missing:
            break
        if delay:
            sleep(delay)
        report.rounds += 1
        for activation_id in missing[:MAX_ID_LOOKUPS_PER_ROUND]:
            report.id_lookups += 1
            record = client.get_activation(activation_id)
            if record is not None and record.get("activationId", activation_id) == activation_id:
                found[activation_id] = record
        if progress:
            progress(f"lookup round {report.rounds}: {len(wanted) - len(found)} records still missing")
    report.found = len(found)
    report.missing_ids = sorted(wanted - found.keys())
    return sort_records(found.values()), report


def sort_records(records: Iterable[dict]) -> list[dict]:
    return sorted(records, key=lambda r: (int(r.get("start") or 0), str(r.get("activationId"))))


def append_records(path: str | os.PathLike, records: Iterable[dict]) -> int:
    """Append raw records to an existing ``activations.jsonl`` (after a line cut short, if any)."""
    path = Path(path)
    count = 0
    with open(path, "rb+") as handle:
        handle.seek(0, os.SEEK_END)
        if handle.tell():
            handle.seek(-1, os.SEEK_END)
            if handle.read(1) != b"\n":
                handle.write(b"\n")
        for record in records:
            handle.write(json.dumps(record, separators=(",", ":")).encode("utf-8") + b"\n")
            count += 1
        handle.flush()
        os.fsync(handle.fileno())
    return count


def write_records(path: str | os.PathLike, records: Iterable[dict]) -> int:
    """Write raw records as JSON lines atomically; returns the count."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    count = 0
    with open(tmp, "w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record, separators=(",", ":")))
            handle.write("\n")
            count += 1
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    return count


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
    )


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
    return (record.get("activationId"), record.get("name"), record.get("namespace"), start, end, duration, wait, init, kind, memory, timeout_limit, timed_out, status, state)


def stderr_progress(message: str) -> None:
    print(f"analyze: {message}", file=sys.stderr, flush=True)
