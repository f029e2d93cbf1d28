"""A run's activation records, fetched over the REST API, so this works the same against a real
OpenWhisk and against localwhisk:

1. ``GET .../activations?docs=true&since=&upto=&limit=200&skip=`` over the run's wall-clock window.
   OpenWhisk lists newest first and filters ``since``/``upto`` (inclusive) against a record's
   ``start``; pages slide ``upto`` down to the oldest ``start`` of each full page and skip the
   records already seen at exactly that millisecond, so records stored while we page shift nothing
   and ``skip`` stays small.
2. ``GET .../activations/{id}`` for every activation id of the run still missing, in rounds with a
   growing delay, because OpenWhisk stores a record only after it has answered the client (a 404
   right after the answer is normal).

Only records whose ``activationId`` the run itself received are kept: other actions, other tenants
and other runs in the same window are never mixed in. ``activations.jsonl`` is written and read by
``faasprof.rundir``.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from faasprof import rundir
from faasprof.platforms.openwhisk.client import ACTIVATIONS_PAGE_LIMIT

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
        page = client.list_activations(since_ms=since_ms, upto_ms=upto, limit=ACTIVATIONS_PAGE_LIMIT, skip=skip)
        if report is not None:
            report.listed_pages += 1
            report.listed_records += len(page)
        yield from page
        if len(page) < ACTIVATIONS_PAGE_LIMIT:
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
            progress(
                f"listed {report.listed_records} records in {report.listed_pages} pages; {len(found)}/{len(wanted)} belong to this run"
            )
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
    return rundir.sort_records(found.values()), report


# -- waiting for a run's records ------------------------------------------------------------------

DEFAULT_ACTION_TIMEOUT_MS = 60_000  # OpenWhisk's default action time limit
RECORD_STORE_MARGIN_S = 15.0  # after an action's time limit: the platform's own delay in storing it
WAIT_POLL_S = 1.0
WAIT_PROGRESS_S = 5.0
WINDOW_MARGIN_MS = 1_000


def action_time_limits_ms(client, functions: Iterable[str]) -> dict[str, int]:
    """Each action's time limit (``limits.timeout``), OpenWhisk's default where it cannot be read."""
    limits: dict[str, int] = {}
    for name in sorted(set(functions)):
        timeout = None
        try:
            action = client.get_action(name)
        except Exception:  # a control-plane hiccup costs only precision in the deadline
            action = None
        if isinstance(action, dict):
            timeout = (action.get("limits") or {}).get("timeout")
        limits[name] = int(timeout) if isinstance(timeout, (int, float)) and timeout > 0 else DEFAULT_ACTION_TIMEOUT_MS
    return limits


def wait_for_records(
    client,
    wanted: Iterable[str],
    since_ms: int,
    deadline_monotonic_s: float,
    found: dict[str, dict],
    say: Callable[[str], None] | None = None,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    wall_ms: Callable[[], int] = lambda: time.time_ns() // 1_000_000,
) -> set[str]:
    """Poll until every wanted activation has a record or the deadline passes; returns the missing ids.

    Records go into ``found`` as they arrive, so a caller interrupted (Ctrl-C) still holds every
    record fetched so far. The window is listed first; afterwards only what is missing is asked
    for (by id when few are, else by listing the window again). Progress goes to ``say``.
    """
    wanted = {i for i in wanted if i}
    list_first = True
    next_progress = clock() + WAIT_PROGRESS_S
    announced = False
    while True:
        missing = wanted - found.keys()
        if not missing:
            return set()
        records, _ = fetch_records(
            client,
            missing,
            since_ms,
            wall_ms() + WINDOW_MARGIN_MS,
            retry_delays_s=(),
            list_first=list_first,
            progress=say if list_first and not announced else None,
        )
        found.update((record["activationId"], record) for record in records)
        missing = wanted - found.keys()
        now = clock()
        if not missing or now >= deadline_monotonic_s:
            return missing
        list_first = len(missing) > MAX_ID_LOOKUPS_PER_ROUND
        if say and (not announced or now >= next_progress):
            say(
                f"waiting for activation records: {len(wanted) - len(missing):,} of {len(wanted):,} stored, "
                f"{len(missing):,} still running or being stored; giving up in {deadline_monotonic_s - now:.0f} s (Ctrl-C saves what was fetched)"
            )
            announced = True
            next_progress = now + WAIT_PROGRESS_S
        sleep(min(WAIT_POLL_S, max(0.0, deadline_monotonic_s - now)))


def save_run_records(
    run_dir: str | os.PathLike,
    client,
    say: Callable[[str], None] | None = None,
    wait: bool = True,
    clock: Callable[[], float] = time.monotonic,
    report: dict | None = None,
) -> dict:
    """Fetch every record of a run into its ``activations.jsonl``, waiting for activations still running.

    The deadline is derived from the run, not fixed: the last send plus the longest time limit of
    the run's actions plus ``RECORD_STORE_MARGIN_S`` (nothing can still be running after that).
    Records already saved are kept; the file is written (atomically) on every exit path, a
    Ctrl-C included, before the interrupt goes on. Returns the report for the manifest/summary
    (filled into ``report`` when given, so an interrupted caller has it too): expected, saved,
    missing, the deadline and why records are missing.
    """
    run_dir = Path(run_dir)
    manifest = rundir.read_manifest(run_dir)
    rows = rundir.read_invocations(run_dir)
    wanted = {row["activation_id"] for row in rows if row["activation_id"]}
    functions = {row["function"] for row in rows if row["activation_id"]}
    sent = [int(row["sent_ns"]) for row in rows if row["sent_ns"]]
    wall_zero_ns = manifest.wall_ns_at_zero
    since_ms = (wall_zero_ns + (min(sent) if sent else 0)) // 1_000_000 - WINDOW_MARGIN_MS
    last_sent_wall_ms = (wall_zero_ns + (max(sent) if sent else 0)) // 1_000_000
    path = rundir.activations_path(run_dir)
    found = {key: value for key, value in rundir.read_record_ids(path).items() if key in wanted}
    limits = action_time_limits_ms(client, functions) if wanted - found.keys() else {}
    longest_ms = max(limits.values(), default=DEFAULT_ACTION_TIMEOUT_MS)
    deadline_wall_ms = last_sent_wall_ms + longest_ms + int(RECORD_STORE_MARGIN_S * 1000)
    remaining_s = max(0.0, (deadline_wall_ms - time.time_ns() // 1_000_000) / 1000) if wait else 0.0
    report = {} if report is None else report
    report.update(
        expected=len(wanted), deadline_s_after_last_send=longest_ms / 1000 + RECORD_STORE_MARGIN_S, interrupted=False
    )
    missing: set[str] = wanted - found.keys()
    try:
        if missing:
            missing = wait_for_records(client, wanted, since_ms, clock() + remaining_s, found, say=say, clock=clock)
    except KeyboardInterrupt:
        report["interrupted"] = True
        missing = wanted - found.keys()
        raise
    finally:
        report["saved"] = rundir.write_records(path, rundir.sort_records(found.values()))
        report["missing"] = len(missing)
        report["file"] = rundir.ACTIVATIONS
        if missing:
            if report["interrupted"]:
                why = "waiting was interrupted (Ctrl-C); fetch them later with faasprof analyze RUN_DIR and the platform's --apihost/--auth"
            elif not wait:
                why = "not waited for"
            else:
                why = (
                    f"not stored by the platform {report['deadline_s_after_last_send']:g} s after the last send "
                    f"(the actions' longest time limit, {longest_ms / 1000:g} s, plus {RECORD_STORE_MARGIN_S:g} s): still queued there "
                    "(an over-invoked platform) or lost by it; fetch them later with faasprof analyze RUN_DIR and the platform's --apihost/--auth"
                )
            report["missing_why"] = why
            report["missing_ids_sample"] = sorted(missing)[:20]
    return report
