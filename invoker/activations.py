"""Fetching a run's activation records from the platform and saving them raw.

Shared by ``faasprof run`` (when it owns the platform it saves the records before stopping it)
and ``faasprof analyze`` (which fetches them later). Only the OpenWhisk REST API is used, so it
works the same against a real OpenWhisk and against localwhisk:

1. ``GET .../activations?docs=true&since=&upto=&limit=200&skip=`` over the run's wall-clock window.
   OpenWhisk lists newest first and filters ``since``/``upto`` (inclusive) against a record's
   ``start``; pages slide ``upto`` down to the oldest ``start`` of each full page and skip the
   records already seen at exactly that millisecond, so records stored while we page shift nothing
   and ``skip`` stays small.
2. ``GET .../activations/{id}`` for every activation id of the run still missing, in rounds with a
   growing delay, because OpenWhisk stores a record only after it has answered the client (a 404
   right after the answer is normal).

Only records whose ``activationId`` the run itself received are kept: other actions, other tenants
and other runs in the same window are never mixed in. Records are written to ``activations.jsonl``
exactly as the platform returned them (one JSON object per line, ordered by ``start`` then id,
through a temporary file and a rename).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

PAGE_LIMIT = 200  # OpenWhisk's maximum ``limit`` for GET .../activations
DEFAULT_RETRY_DELAYS_S = (0.5, 1.0, 2.0, 4.0)
MAX_ID_LOOKUPS_PER_ROUND = 2000


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
