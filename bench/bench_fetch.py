"""Benchmark: how fast a run's activation records are fetched (records/s), against OpenWhisk or localwhisk.

Creates a no-op Python action, invokes it ``--count`` times non-blocking at ``--rate`` calls/s,
waits until the platform has stored every record, then fetches them the two ways
``faasprof.platforms.openwhisk.records.fetch_records`` does: by listing the run's window (pages of
200, sliding ``upto``) and by id (one ``GET`` per record). Each is timed on its own, ``--repeat``
times (the fastest is printed with the slowest). Never passes or fails.

    .venv/bin/python bench/bench_fetch.py                     # the platform `faasprof local start` left running
    .venv/bin/python bench/bench_fetch.py --embedded          # a localwhisk started for the bench
    .venv/bin/python bench/bench_fetch.py --apihost URL --auth UUID:KEY [--count 600 --rate 20]
"""

from __future__ import annotations

import argparse
import sys
import time
from contextlib import ExitStack
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from faasprof.localwhisk.embedded import start_embedded  # noqa: E402
from faasprof.platforms.openwhisk.client import OpenWhiskClient  # noqa: E402
from faasprof.platforms.openwhisk.connection import Connection, resolve_connection  # noqa: E402
from faasprof.platforms.openwhisk.records import fetch_records  # noqa: E402

ACTION = "bench_fetch_noop"
NOOP = {
    "exec": {"kind": "python:3", "code": "def main(args):\n    return {}\n"},
    "limits": {"memory": 128, "timeout": 10_000},
}
STORE_WAIT_S = 120.0


def _invoke(client: OpenWhiskClient, count: int, rate_per_s: float) -> tuple[list[str], int, int]:
    """``count`` non-blocking calls at ``rate_per_s``; (activation ids, since ms, upto ms)."""
    since_ms = time.time_ns() // 1_000_000 - 1000
    ids, start = [], time.monotonic()
    for index in range(count):
        delay = start + index / rate_per_s - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        response = client.invoke(ACTION, blocking=False)
        if response.status_code == 202:
            ids.append(response.json()["activationId"])
    return ids, since_ms, time.time_ns() // 1_000_000 + 1000


def _wait_stored(client: OpenWhiskClient, ids: list[str], since_ms: int) -> int:
    deadline = time.monotonic() + STORE_WAIT_S
    while True:
        records, report = fetch_records(client, ids, since_ms, time.time_ns() // 1_000_000 + 1000, retry_delays_s=())
        if not report.missing_ids or time.monotonic() >= deadline:
            return len(records)
        time.sleep(1.0)


def _timed(
    client: OpenWhiskClient, ids: list[str], since_ms: int, upto_ms: int, list_first: bool, repeat: int
) -> list[tuple[float, int, int]]:
    """(seconds, records found, requests) per repeat."""
    runs = []
    for _ in range(repeat):
        started = time.perf_counter()
        records, report = fetch_records(client, ids, since_ms, upto_ms, retry_delays_s=(), list_first=list_first)
        runs.append((time.perf_counter() - started, len(records), report.listed_pages + report.id_lookups))
    return runs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--apihost")
    parser.add_argument("--auth")
    parser.add_argument("--namespace")
    parser.add_argument("--insecure", action="store_true", default=None)
    parser.add_argument("--embedded", action="store_true", help="start a localwhisk (process isolation) for the bench")
    parser.add_argument("--count", type=int, default=400, help="activations to create (default 400)")
    parser.add_argument("--rate", type=float, default=20.0, help="calls per second while creating them (default 20)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with ExitStack() as stack:
        if args.embedded:
            handle = stack.enter_context(start_embedded())
            connection = Connection(
                apihost=handle.apihost, auth=handle.auth, namespace=handle.namespace, source="embedded"
            )
        else:
            connection = resolve_connection(args, {}, origin="bench_fetch")
            if connection is None:
                parser.error("no platform: pass --apihost/--auth, --embedded, or start one with faasprof local start")
        client = stack.enter_context(OpenWhiskClient(connection))
        platform = client.api_info().get("description") or client.api_info().get("build") or "?"
        client.put_action(ACTION, NOOP)
        ids, since_ms, upto_ms = _invoke(client, args.count, args.rate)
        stored = _wait_stored(client, ids, since_ms)
        print(f"{connection.apihost} ({platform}): {len(ids)} activations accepted, {stored} stored")
        for label, list_first in (("list (pages of 200)", True), ("by id (one GET each)", False)):
            runs = _timed(client, ids, since_ms, upto_ms, list_first, args.repeat)
            best, worst = min(runs), max(runs)
            print(
                f"  {label:<22} {best[1] / best[0]:8.0f} records/s (best of {args.repeat}: {best[0]:.2f} s for {best[1]} records, "
                f"{best[2]} requests; slowest {best[1] / worst[0]:.0f}/s)"
            )
        client.delete_action(ACTION)
    return 0


if __name__ == "__main__":
    sys.exit(main())
