"""Fetching activation records over the REST API: paging, foreign records, late and missing records.

A real HTTP server on 127.0.0.1 port 0 serves ``GET /api/v1/namespaces/guest/activations`` with
OpenWhisk's semantics (faasprof/platforms/openwhisk/records.py): newest first by ``start``, ``since``/``upto``
inclusive epoch ms against ``start``, ``limit`` at most 200 (more is a 400), ``skip``; and
``GET .../activations/{id}`` with a 404 until a record is "stored".
"""

from __future__ import annotations

import json
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from test_analyzer_synthetic import WALL_ZERO_NS, record, write_synthetic_run

from faasprof import rundir
from faasprof.analyzer import records as records_mod
from faasprof.analyzer.analysis import analyze_run, load_run
from faasprof.platforms.openwhisk.client import OpenWhiskClient
from faasprof.platforms.openwhisk.connection import Connection
from faasprof.platforms.openwhisk.records import fetch_records
from tests.helpers import send_json

AUTH = "23bc46b1-71f6-4ed5-8c54-816aa4f8c502:123zO3xZCLrMN6v2BKK1dXYFpXlPkccOFqm12CdAsMgRU4VrNZ9lyGVCGuMDGIwP"


class FakeActivations:
    """The platform's activation store: listed records, and records only visible by id later."""

    def __init__(self, records, hidden_until_lookup=None, never=()):
        self.records = list(records)
        self.hidden = dict(hidden_until_lookup or {})  # id -> number of 404s before it is stored
        self.never = set(never)
        self.list_calls = []
        self.lookups = {}

    def visible(self):
        return [r for r in self.records if r["activationId"] not in self.hidden and r["activationId"] not in self.never]


def make_handler(store: FakeActivations):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def _send(self, status, body):
            send_json(self, status, body)

        def do_GET(self):
            url = urllib.parse.urlsplit(self.path)
            query = dict(urllib.parse.parse_qsl(url.query))
            prefix = "/api/v1/namespaces/guest/activations"
            if self.headers.get("Authorization") is None:
                return self._send(401, {"error": "The supplied authentication is invalid", "code": "x"})
            if url.path == prefix:
                limit = int(query.get("limit", 30))
                if limit > 200:
                    return self._send(
                        400, {"error": "The value '%d' is not in the range of 0 to 200." % limit, "code": "x"}
                    )
                limit = limit or 200
                skip = int(query.get("skip", 0))
                since, upto = int(query.get("since", 0)), int(query.get("upto", 2**62))
                store.list_calls.append((since, upto, limit, skip))
                chosen = [r for r in store.visible() if since <= r["start"] <= upto]
                chosen.sort(key=lambda r: (r["start"], r["activationId"]), reverse=True)
                return self._send(200, chosen[skip : skip + limit])
            if url.path.startswith(prefix + "/"):
                activation_id = url.path[len(prefix) + 1 :]
                store.lookups[activation_id] = store.lookups.get(activation_id, 0) + 1
                if activation_id in store.hidden:
                    store.hidden[activation_id] -= 1
                    if store.hidden[activation_id] < 0:
                        del store.hidden[activation_id]
                    else:
                        return self._send(404, {"error": "The requested resource does not exist.", "code": "x"})
                for r in store.records:
                    if r["activationId"] == activation_id and activation_id not in store.never:
                        return self._send(200, r)
                return self._send(404, {"error": "The requested resource does not exist.", "code": "x"})
            return self._send(404, {"error": "The requested resource does not exist.", "code": "x"})

    return Handler


@pytest.fixture
def platform():
    servers = []

    def start(store):
        server = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(store))
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        servers.append(server)
        return Connection(apihost=f"http://127.0.0.1:{server.server_address[1]}", auth=AUTH, namespace="guest")

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def _foreign(n, start_ms, name="other-action"):
    return [record(f"f{k:031x}", name, start_ms + k, 1, 0, 3) for k in range(n)]


def test_paging_across_many_pages_with_ties_and_foreign_records(platform):
    start = WALL_ZERO_NS // 1_000_000
    ours = [record(f"{k:032x}", "fn", start + k // 3, 2, 0, 5) for k in range(650)]  # three per ms
    ours += [record(f"a{k:031x}", "fn", start + 500, 2, 0, 5) for k in range(450)]  # > 2 pages in one ms
    foreign = _foreign(300, start + 10)
    store = FakeActivations(ours + foreign)
    connection = platform(store)
    with OpenWhiskClient(connection) as client:
        found, report = fetch_records(
            client,
            [r["activationId"] for r in ours],
            start - 1000,
            start + 5000,
            retry_delays_s=(),
            sleep=lambda s: None,
        )
    assert len(found) == len(ours) and report.missing_ids == []
    assert {r["activationId"] for r in found} == {r["activationId"] for r in ours}
    assert report.foreign_records > 0 and report.listed_pages >= 7
    assert all(limit == 200 for _, _, limit, _ in store.list_calls)
    assert report.id_lookups == 0
    assert found == rundir.sort_records(found)


def test_late_records_are_found_by_id_and_never_stored_ones_are_reported(platform):
    start = WALL_ZERO_NS // 1_000_000
    ours = [record(f"{k:032x}", "fn", start + k, 2, 0, 5) for k in range(30)]
    late = {ours[3]["activationId"]: 2, ours[7]["activationId"]: 0}
    never = {ours[11]["activationId"]}
    store = FakeActivations(ours, hidden_until_lookup=late, never=never)
    connection = platform(store)
    sleeps = []
    with OpenWhiskClient(connection) as client:
        found, report = fetch_records(
            client,
            [r["activationId"] for r in ours],
            start - 10,
            start + 100,
            retry_delays_s=(0.5, 1.0, 2.0),
            sleep=sleeps.append,
        )
    assert report.missing_ids == [ours[11]["activationId"]]
    assert len(found) == 29
    assert sleeps == [0.5, 1.0, 2.0]  # bounded: one round per delay, then give up
    assert store.lookups[ours[11]["activationId"]] == 4


def test_analyze_fetches_writes_raw_records_and_counts_missing(tmp_path, platform):
    run_dir, records = write_synthetic_run(
        tmp_path,
        duration_s=25.0,
        instances={"i0": {"application": "fn", "distribution": "Uniform", "rate": 10.0}},
        save_records=False,
    )
    assert len(records) == 250
    never = {records[5]["activationId"], records[100]["activationId"]}
    store = FakeActivations(records + _foreign(50, records[0]["start"], name="fn"), never=never)
    connection = platform(store)
    summary = analyze_run(run_dir, connection, retry_delays_s=(0.01,), plots=False)
    saved = [json.loads(line) for line in (run_dir / rundir.ACTIVATIONS).read_text().splitlines()]
    assert len(saved) == 248
    assert saved[0] == records[0]  # raw, exactly as the platform returned it
    assert summary["records"]["found"] == 248
    assert summary["records"]["missing"] == 2
    assert sorted(summary["records"]["missing_ids_sample"]) == sorted(never)
    assert summary["records"]["fetch"]["foreign_records_ignored"] == 50
    assert any("2 of 250 activation records are missing" in w for w in summary["warnings"])
    # From now on offline: without a connection the platform is not asked again.
    calls, lookups = len(store.list_calls), sum(store.lookups.values())
    load_run(run_dir)
    analyze_run(run_dir, None, plots=False)
    assert len(store.list_calls) == calls and sum(store.lookups.values()) == lookups


def test_flatten_record_reads_docs_false_summaries_and_extended_json():
    summary_form = {
        "activationId": "x" * 32,
        "name": "fn",
        "namespace": "guest",
        "start": 1000,
        "end": 1010,
        "duration": 10,
        "statusCode": 2,
        "annotations": [
            {"key": "waitTime", "value": 4},
            {"key": "limits", "value": {"memory": 512, "timeout": 3000}},
            {"key": "timeout", "value": True},
        ],
    }
    row = dict(zip(records_mod.RECORD_COLUMNS, records_mod.flatten_record(summary_form)))
    assert row["status"] == "action developer error"
    assert row["wait_ms"] == 4 and row["memory_mb"] == 512 and row["timed_out"] is True
    assert row["init_ms"] != row["init_ms"]  # NaN: no initTime annotation
    full = record("y" * 32, "fn", 2000, 300, 120, 15)
    row = dict(zip(records_mod.RECORD_COLUMNS, records_mod.flatten_record(full)))
    assert row["init_ms"] == 120 and row["duration_ms"] == 135 and row["status"] == "success"


def test_records_missing_from_a_saved_file_are_asked_for_again_and_appended(tmp_path, platform):
    run_dir, kept = write_synthetic_run(
        tmp_path,
        duration_s=3.0,
        instances={"i0": {"application": "fn", "distribution": "Uniform", "rate": 10.0}},
        missing_every=10,
    )
    assert len(kept) == 27
    everything = write_synthetic_run(
        tmp_path / "twin",
        duration_s=3.0,
        instances={"i0": {"application": "fn", "distribution": "Uniform", "rate": 10.0}},
    )[1]
    store = FakeActivations(everything)
    summary = analyze_run(run_dir, platform(store), retry_delays_s=(), plots=False)
    assert summary["records"]["missing"] == 0 and summary["records"]["found"] == 30
    assert store.list_calls == []  # three stragglers: asked for by id, no window listing
    assert len((run_dir / rundir.ACTIVATIONS).read_text().splitlines()) == 30
