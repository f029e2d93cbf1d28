"""The dispatcher and sender against a real HTTP server on 127.0.0.1 (tests/test_invoker_fakeserver.py).

Every scenario checks the contract's first rule: exactly one row per planned invocation, whatever
the server does. Timing is never asserted as pass/fail beyond "sent after its intended instant".
"""

from __future__ import annotations

import base64
import json
import os
import socket
import threading
import time
from types import SimpleNamespace

import numpy as np
import pytest
from test_invoker_fakeserver import AUTH, THROTTLE_MESSAGE, FakeOpenWhisk

from faasprof.invoker.dispatch import Dispatcher, DispatchOptions, new_event_loop
from faasprof.invoker.http_response import Response
from faasprof.invoker.run_collectors import collector_check
from faasprof.platforms.openwhisk.connection import Connection
from faasprof.platforms.openwhisk.platform import classify
from faasprof.platforms.registry import prepare_request
from faasprof.progress import Progress
from faasprof.rundir import InvocationLog


def instance(name: str, function: str, **extra):
    base = dict(
        name=name,
        function=function,
        endpoint="local_openwhisk",
        blocking=False,
        params=None,
        data_file=None,
        data_mode="web",
        content_type=None,
        url=None,
        data=None,
        memory_mb=None,
    )
    base.update(extra)
    return SimpleNamespace(**base)


def run(server_or_apihost, instances, intended_ms, which, options=None, before=None, max_connections=None):
    """Dispatch ``which[i]`` (index into instances) at ``intended_ms[i]``; return (rows, result, dispatcher)."""
    apihost = server_or_apihost if isinstance(server_or_apihost, str) else server_or_apihost.apihost
    connection = Connection(apihost=apihost, auth=AUTH, namespace="_")
    requests = [prepare_request(i, connection, web_namespace="guest") for i in instances]
    rows: list[tuple] = []
    options = options or DispatchOptions(lateness_warn_ms=None, progress_interval_s=3600)
    if max_connections:
        options.max_connections = max_connections
    dispatcher = Dispatcher(
        np.asarray(intended_ms, dtype=np.int64) * 1_000_000,
        np.asarray(which, dtype=np.int32),
        [(i.name, i.function) for i in instances],
        requests,
        rows.append,
        options,
    )
    loop = new_event_loop()
    try:
        if before:
            before(loop, dispatcher)
        result = loop.run_until_complete(dispatcher.run(time.monotonic_ns() + 20_000_000))
    finally:
        loop.close()
    return rows, result, dispatcher


def by_seq(rows):
    seqs = [row[0] for row in rows]
    assert sorted(seqs) == list(range(len(seqs))), "exactly one row per planned invocation"
    return {row[0]: row for row in rows}


def test_ok_rows_carry_times_status_and_activation_ids():
    with FakeOpenWhisk() as server:
        rows, result, _ = run(
            server,
            [instance("i0", "ok"), instance("i1", "noheader"), instance("i2", "chunked")],
            list(range(0, 300, 10)),
            [k % 3 for k in range(30)],
        )
    table = by_seq(rows)
    assert result.status == "complete" and result.sent == 30 and result.outcomes == {"ok": 30}
    for seq, row in table.items():
        _, name, function, intended, sent, done, outcome, status, aid, error = row
        assert (name, function) == (["i0", "i1", "i2"][seq % 3], ["ok", "noheader", "chunked"][seq % 3])
        assert intended == seq * 10_000_000
        assert sent >= intended and done >= sent
        assert outcome == "ok" and status == 202 and error is None
        assert aid and len(aid) == 32
    assert len({row[8] for row in rows}) == 30
    assert len(server.requests) == 30
    assert all(r["query"] == "blocking=false" for r in server.requests)


def test_throttled_app_error_failed_and_dropped_are_rows_not_exceptions():
    kinds = ["throttled", "apperr", "boom", "drop"]
    with FakeOpenWhisk() as server:
        rows, result, _ = run(
            server, [instance(k, k) for k in kinds], [0, 5, 10, 15, 20, 25, 30, 35], [0, 1, 2, 3, 0, 1, 2, 3]
        )
    table = by_seq(rows)
    assert result.outcomes == {"throttled": 2, "app_error": 2, "failed": 4}
    throttled = table[0]
    assert throttled[6:8] == ("throttled", 429) and throttled[9] == THROTTLE_MESSAGE
    apperr = table[1]
    assert apperr[6:8] == ("app_error", 502) and apperr[8] and "the function failed" in apperr[9]
    assert table[2][6:8] == ("failed", 500) and "internal error" in table[2][9]
    dropped = table[3]
    assert dropped[6] == "failed" and dropped[7] is None and dropped[4] is not None
    assert dropped[9].startswith("connection closed before any response")
    assert result.pushback == {"reset": 2, "throttled": 2}  # the 500 and the 502s are not pushback
    # No hidden retries: the server saw each invocation exactly once.
    assert len(server.requests) == 8


@pytest.mark.slow
def test_slow_responses_do_not_delay_later_sends():
    with FakeOpenWhisk() as server:
        server.slow_s = 1.0
        # 20 slow blocking requests 20 ms apart: a small worker pool would serialise them.
        rows, result, _ = run(server, [instance("s", "slow", blocking=True)], [k * 20 for k in range(20)], [0] * 20)
    table = by_seq(rows)
    assert result.outcomes == {"ok": 20}
    last_sent_s = max(row[4] for row in rows) / 1e9
    assert last_sent_s < 0.38 + 0.9  # sent on schedule, not after earlier responses (20 × 1 s)
    assert result.peak_connections >= 10
    assert all(row[5] - row[4] >= 0.9e9 for row in table.values())


def test_connection_cap_queues_requests_and_lateness_shows_it():
    with FakeOpenWhisk() as server:
        server.slow_s = 0.3
        rows, result, _ = run(server, [instance("s", "slow")], [0, 0, 0, 0], [0, 0, 0, 0], max_connections=2)
    table = by_seq(rows)
    assert result.outcomes == {"ok": 4}
    assert result.peak_connections == 2
    lateness_ms = sorted((row[4] - row[3]) / 1e6 for row in table.values())
    assert lateness_ms[2] >= 250  # the third request waited for a free connection


def test_timeout_is_recorded_and_the_request_released():
    with FakeOpenWhisk() as server:
        server.slow_s = 3.0
        options = DispatchOptions(lateness_warn_ms=None, progress_interval_s=3600, request_timeout_s=0.5)
        rows, result, _ = run(server, [instance("s", "slow"), instance("o", "ok")], [0, 10], [0, 1], options=options)
    table = by_seq(rows)
    assert table[0][6] == "timeout" and table[0][5] is None and "0.5 s" in table[0][9]
    assert table[1][6] == "ok"


@pytest.mark.slow
def test_a_platform_dying_after_answering_is_measured_to_the_planned_end():
    """Refusals after the platform has answered are data, not a reason to stop: every later call is
    a row refused at connect, at its own time, and the run completes."""
    server = FakeOpenWhisk().start()
    intended = list(range(0, 3000, 10))  # 300 invocations over 3 s

    def kill_later(loop, dispatcher):
        loop.call_later(0.7, server.kill)

    options = DispatchOptions(lateness_warn_ms=None, progress_interval_s=3600, never_reached_s=0.5)
    rows, result, _ = run(
        server, [instance("o", "ok")], intended, [0] * len(intended), options=options, before=kill_later
    )
    table = by_seq(rows)
    assert result.status == "complete" and result.reason is None and result.never_reached is None
    outcomes = [row[6] for row in table.values()]
    assert outcomes.count("ok") >= 10 and "not_sent" not in outcomes
    refused = [row for row in table.values() if row[6] == "failed" and row[4] is None]
    assert len(refused) > 150 and all("Connection refused" in row[9] for row in refused)
    assert result.pushback["refused"] == len(refused)
    assert result.total_wall_s >= 2.9  # to the planned end


@pytest.mark.slow
def test_a_platform_that_took_calls_but_never_answered_before_refusing_is_measured():
    """Slow calls whose connections were accepted, then refusals: the platform was there (it took
    connections), so the run goes on; the calls it held are cut off, the later ones refused."""
    server = FakeOpenWhisk().start()
    server.slow_s = 5.0  # nothing is answered before the kill

    def kill_later(loop, dispatcher):
        loop.call_later(0.4, server.kill)

    options = DispatchOptions(lateness_warn_ms=None, progress_interval_s=3600, never_reached_s=0.5)
    intended = list(range(0, 2000, 20))
    rows, result, _ = run(
        server, [instance("s", "slow")], intended, [0] * len(intended), options=options, before=kill_later
    )
    assert result.status == "complete" and result.never_reached is None
    assert len(rows) == len(intended) and "ok" not in result.outcomes
    assert result.pushback["reset"] >= 5 and result.pushback["refused"] >= 50


def test_nothing_listening_stops_the_run_as_never_reached():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    options = DispatchOptions(lateness_warn_ms=None, progress_interval_s=3600, never_reached_s=0.5)
    rows, result, _ = run(
        f"http://127.0.0.1:{port}", [instance("o", "ok")], list(range(0, 3000, 10)), [0] * 300, options=options
    )
    table = by_seq(rows)
    assert {row[6] for row in table.values()} == {"failed", "not_sent"}
    assert all(row[4] is None for row in table.values())
    assert result.status == "interrupted" and result.reason == result.never_reached
    assert result.never_reached.startswith("the platform never took a call: every connection attempt failed for")
    assert "Connection refused" in result.never_reached
    assert result.total_wall_s < 2.0


def test_request_stop_leaves_not_sent_rows_and_waits_for_in_flight():
    with FakeOpenWhisk() as server:
        server.slow_s = 0.4

        def stop_later(loop, dispatcher):
            loop.call_later(0.25, dispatcher.request_stop, "interrupted", "Ctrl-C (SIGINT) received")

        rows, result, _ = run(server, [instance("s", "slow")], list(range(0, 2000, 50)), [0] * 40, before=stop_later)
    table = by_seq(rows)
    assert result.status == "interrupted" and result.reason == "Ctrl-C (SIGINT) received"
    sent = [row for row in table.values() if row[4] is not None]
    assert sent and all(row[6] == "ok" for row in sent)  # in-flight requests were waited for
    not_sent = [row for row in table.values() if row[6] == "not_sent"]
    assert len(not_sent) == 40 - len(sent) and all("Ctrl-C" in row[9] for row in not_sent)


def test_lateness_abort_threshold_aborts():
    with FakeOpenWhisk() as server:
        # Everything is due at once at 4,000 per "instant" on 1 connection: lateness grows fast.
        options = DispatchOptions(
            lateness_warn_ms=None, lateness_abort_ms=0.001, progress_interval_s=0.25, max_connections=1
        )
        rows, result, _ = run(
            server, [instance("o", "ok")], [k // 10 for k in range(6000)], [0] * 6000, options=options
        )
    by_seq(rows)
    assert result.status == "aborted" and "abort threshold" in result.reason


def test_web_base64_and_generic_requests():
    with FakeOpenWhisk() as server, open(__file__, "rb") as handle:
        data = handle.read()
        import os
        import tempfile

        with tempfile.NamedTemporaryFile(suffix=".png", delete=False) as tmp:
            tmp.write(data)
        try:
            instances = [
                instance("web", "img", data_file=tmp.name, data_mode="web"),
                instance("b64", "ok", data_file=tmp.name, data_mode="base64", params={"size": 3}),
                instance("gen", "generic-label", endpoint="generic", url=f"{server.apihost}/generic/x", data={"n": 1}),
            ]
            rows, result, _ = run(server, instances, [0, 10, 20], [0, 1, 2])
        finally:
            os.unlink(tmp.name)
    table = by_seq(rows)
    assert result.outcomes == {"ok": 3}
    # Told apart by path, not arrival order: the big web body may be read after the others.
    (web,) = [r for r in server.requests if r["path"].startswith("/api/v1/web/")]
    (b64,) = [r for r in server.requests if "/actions/" in r["path"]]
    (gen,) = [r for r in server.requests if r["path"].startswith("/generic")]
    assert web["path"] == "/api/v1/web/guest/default/img" and web["body"] == data
    assert web["headers"]["Content-Type"] == "image/png" and "Authorization" not in web["headers"]
    assert table[0][8]  # the id header of a web call
    body = json.loads(b64["body"])
    assert body["size"] == 3 and base64.b64decode(body["data"]) == data
    assert gen["path"] == "/generic/x" and json.loads(gen["body"]) == {"n": 1} and "Authorization" not in gen["headers"]
    assert table[2][6] == "ok" and table[2][8] is None


def test_empty_schedule():
    with FakeOpenWhisk() as server:
        rows, result, _ = run(server, [instance("o", "ok")], [], [])
    assert rows == [] and result.status == "complete" and result.planned == 0


def test_response_parser_handles_split_chunked_and_headers():
    response = Response()
    raw = b'HTTP/1.1 202 Accepted\r\nX-OpenWhisk-Activation-Id: abc\r\nTransfer-Encoding: chunked\r\n\r\n4\r\n{"a"\r\n3\r\n:1}\r\n0\r\n\r\n'
    body = None
    for i in range(len(raw)):
        body = response.feed(raw[i : i + 1])
        if body is not None:
            assert i == len(raw) - 1
    assert body == b'{"a":1}' and response.status == 202 and response.header(b"x-openwhisk-activation-id") == "abc"


@pytest.mark.parametrize(
    "status, aid, body, expected",
    [
        (202, None, b'{"activationId":"x1"}', ("ok", "x1", None)),
        (
            429,
            None,
            b'{"error":"Too many concurrent requests in flight (count: 3, allowed: 2).","code":"t"}',
            ("throttled", None, "Too many concurrent requests in flight (count: 3, allowed: 2)."),
        ),
        (502, "x2", b'{"response":{"result":{"error":"boom"}}}', ("app_error", "x2", "boom")),
        (504, None, b"", ("timeout", None, "HTTP 504")),
        (
            404,
            None,
            b'{"error":"The requested resource does not exist."}',
            ("failed", None, "HTTP 404: The requested resource does not exist."),
        ),
    ],
)
def test_classify(status, aid, body, expected):
    assert classify(status, aid, body) == expected


def test_prepared_request_repr_hides_the_key():
    connection = Connection(apihost="https://example.org", auth=AUTH)
    request = prepare_request(instance("o", "ok"), connection)
    assert AUTH.split(":")[1] not in repr(request) and AUTH.split(":")[1] not in request.description


@pytest.mark.slow
def test_lateness_warning_says_why_and_what_to_do():
    said: list[str] = []
    with FakeOpenWhisk() as server:
        server.slow_s = 0.2
        options = DispatchOptions(lateness_warn_ms=1.0, progress_interval_s=0.25, max_connections=1)
        connection = Connection(apihost=server.apihost, auth=AUTH)
        dispatcher = Dispatcher(
            np.arange(0, 10) * 50_000_000,
            np.zeros(10, np.int32),
            [("s", "slow")],
            [prepare_request(instance("s", "slow"), connection)],
            lambda row: None,
            options,
            progress=Progress(said.append),
        )
        loop = new_event_loop()
        try:
            result = loop.run_until_complete(dispatcher.run(time.monotonic_ns() + 20_000_000))
        finally:
            loop.close()
    assert any(line.startswith("[") and "lateness p50" in line and "cpu" in line for line in said)
    warnings = [line for line in said if line.startswith("warning: lateness p99")]
    assert warnings and "--max-connections" in warnings[0]
    assert result.warnings and result.status == "complete"


def test_a_failing_check_stops_the_run():
    alive = {"value": True}
    collectors = [
        SimpleNamespace(name="perf", required=True, alive=lambda: alive["value"]),
        SimpleNamespace(name="cgroups", required=False, alive=lambda: False),
    ]
    warnings: list[str] = []
    check = collector_check(collectors, warnings.append)
    with FakeOpenWhisk() as server:

        def die_later(loop, dispatcher):
            dispatcher.checks.append(check)
            loop.call_later(0.3, alive.__setitem__, "value", False)

        rows, result, _ = run(server, [instance("o", "ok")], list(range(0, 3000, 20)), [0] * 150, before=die_later)
    by_seq(rows)
    assert result.status == "interrupted" and "required collector perf stopped" in result.reason
    assert warnings and "cgroups" in warnings[0] and "optional" in warnings[0]


@pytest.mark.slow
def test_keep_alive_reuse_and_no_reuse_of_long_idle_generic_sockets():
    with FakeOpenWhisk() as server:
        generic = instance("g", "label", endpoint="generic", url=f"{server.apihost}/generic/x", data={})
        # Three quick requests share a socket; one after 1.8 s idle (> 1.5 s for generic) gets a new one.
        rows, result, _ = run(server, [generic], [0, 100, 200, 2000], [0, 0, 0, 0])
        clients = [r["client"] for r in sorted(server.requests, key=lambda r: r["t"])]
    assert result.outcomes == {"ok": 4}
    assert clients[0] == clients[1] == clients[2]
    assert clients[3] != clients[2]


@pytest.fixture
def tls_server(tmp_path):
    """The fake OpenWhisk behind TLS with a self-signed certificate (made by openssl for this test)."""
    import shutil
    import ssl
    import subprocess

    if shutil.which("openssl") is None:
        pytest.skip("openssl not installed")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            str(key),
            "-out",
            str(cert),
            "-days",
            "1",
            "-subj",
            "/CN=127.0.0.1",
        ],
        check=True,
        capture_output=True,
    )
    server = FakeOpenWhisk()
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    server.start()
    yield server
    server.kill()


def test_tls_is_verified_unless_insecure(tls_server):
    apihost = f"https://127.0.0.1:{tls_server.port}"
    options = DispatchOptions(lateness_warn_ms=None, progress_interval_s=3600, never_reached_s=0.5)
    rows, result, _ = run(apihost, [instance("o", "ok")], list(range(0, 1500, 20)), [0] * 75, options=options)
    table = by_seq(rows)
    failed = [row for row in table.values() if row[6] == "failed"]
    assert failed and "TLS handshake" in failed[0][9] and "--insecure" in failed[0][9]
    assert not [row for row in table.values() if row[6] == "ok"]
    insecure = DispatchOptions(lateness_warn_ms=None, progress_interval_s=3600, insecure=True)
    rows, result, _ = run(apihost, [instance("o", "ok")], [0, 10, 20], [0, 0, 0], options=insecure)
    assert result.outcomes == {"ok": 3}


def test_response_parser_waits_for_the_end_of_chunked_trailers():
    response = Response()
    assert (
        response.feed(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\nX-Trailer: 1\r\n") is None
    )
    assert response.feed(b"\r\n") == b"ok"
    interim = Response()
    assert interim.feed(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 202 Accepted\r\nContent-Length: 2\r\n\r\n{}") == b"{}"
    assert interim.status == 202


def test_realtime_send_thread_is_opt_in_and_restored():
    import os

    before = os.sched_getscheduler(0)
    options = DispatchOptions(lateness_warn_ms=None, progress_interval_s=3600, realtime_priority=5)
    with FakeOpenWhisk() as server:
        rows, result, _ = run(server, [instance("o", "ok")], [0, 10, 20], [0, 0, 0], options=options)
    assert result.outcomes == {"ok": 3}
    assert os.sched_getscheduler(0) == before
    # Without the privilege the run goes on with a warning that says what is needed.
    assert not result.warnings or "CAP_SYS_NICE" in result.warnings[0]


def test_realtime_also_covers_the_invocation_log_thread_and_is_restored(tmp_path):
    """The log's flush thread holds the GIL while formatting rows: under --realtime it gets the
    send thread's policy for the run (else a loaded host preempts it while it holds the GIL)."""
    log = InvocationLog(tmp_path, flush_interval_s=0.05)
    (flush_thread,) = [
        t for t in threading.enumerate() if t.name == "invocation-log" and t.native_id is not None and t.is_alive()
    ][-1:]
    before = os.sched_getscheduler(flush_thread.native_id)
    seen: list[int] = []

    def before_run(loop, dispatcher):
        dispatcher.row_sink = lambda row: (seen.append(os.sched_getscheduler(flush_thread.native_id)), log.append(row))

    options = DispatchOptions(lateness_warn_ms=None, progress_interval_s=3600, realtime_priority=5)
    try:
        with FakeOpenWhisk() as server:
            rows, result, _ = run(
                server, [instance("o", "ok")], [0, 10, 20], [0, 0, 0], options=options, before=before_run
            )
        after = os.sched_getscheduler(flush_thread.native_id)
    finally:
        log.close()
    assert after == before
    assert result.outcomes == {"ok": 3} and len(seen) == 3
    if result.realtime_applied:  # root or CAP_SYS_NICE
        assert set(seen) == {os.SCHED_FIFO}
    else:
        assert set(seen) == {before}


def test_a_dispatcher_that_never_ran_closes_with_one_row_per_invocation():
    # What `faasprof run` does when something fails between the dispatcher's creation and its
    # first send: every planned invocation gets its not_sent row, naming why.
    rows: list[tuple] = []
    connection = Connection(apihost="http://127.0.0.1:9", auth=AUTH, namespace="_")
    dispatcher = Dispatcher(
        np.asarray([0, 5_000_000, 9_000_000], dtype=np.int64),
        np.asarray([0, 1, 0], dtype=np.int32),
        [("a", "fa"), ("b", "fb")],
        [prepare_request(instance(n, n), connection) for n in ("a", "b")],
        rows.append,
    )
    dispatcher.close_after_failure("interrupted", "faasprof failed: OSError: boom")
    assert [(row[0], row[1], row[6], row[9]) for row in rows] == [
        (seq, name, "not_sent", "run interrupted: faasprof failed: OSError: boom") for seq, name in enumerate("aba")
    ]
    dispatcher.close_after_failure("interrupted", "again")  # a row is never written twice
    assert len(rows) == 3 and dispatcher.outcomes == {"not_sent": 3}
