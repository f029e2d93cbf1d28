"""The invoker's HTTP/1.1 response parser (``faasprof.invoker.http_response``): message framing exactly
as RFC 9112 §6.3 says, byte by byte and all at once, and bodiless answers from a real server."""

from __future__ import annotations

import asyncio
import socket
import threading
import time

import numpy as np
import pytest
from test_invoker_dispatch import instance

from faasprof.invoker.dispatch import WARM_CONNECTIONS, Dispatcher, DispatchOptions, new_event_loop
from faasprof.invoker.http_response import LlhttpResponse, PyResponse
from faasprof.invoker.sender import Sender
from faasprof.outcomes import pushback_kind
from faasprof.platforms.openwhisk.connection import Connection
from faasprof.platforms.registry import prepare_request

# Both implementations must frame exactly the same way (llhttp is used when httptools is installed).
PARSERS = [PyResponse, LlhttpResponse]


def feed_all(parser, raw: bytes, split: int | None = None, head_request: bool = False):
    """Feed ``raw`` in pieces of ``split`` bytes (None: at once); the body and the index it completed at."""
    response = parser(head_request)
    step = split or len(raw)
    for start in range(0, len(raw), step):
        body = response.feed(raw[start : start + step])
        if body is not None:
            return response, body, start + step
    return response, None, -1


@pytest.mark.parametrize("parser", PARSERS)
@pytest.mark.parametrize("split", [None, 1, 3])
@pytest.mark.parametrize(
    "raw, body, close",
    [
        (b"HTTP/1.1 204 No Content\r\nX-OpenWhisk-Activation-Id: a1\r\n\r\n", b"", False),
        (b"HTTP/1.1 304 Not Modified\r\nContent-Length: 120\r\nETag: x\r\n\r\n", b"", False),
        (b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n", b"", False),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;ext=1\r\nabc\r\nA\r\n0123456789\r\n0\r\nX-T: 1\r\nX-U: 2\r\n\r\n",
            b"abc0123456789",
            False,
        ),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n", b"hi", False),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 99\r\n\r\n2\r\nhi\r\n0\r\n\r\n",
            None,
            None,
        ),  # smuggling
        (b"HTTP/1.1 200 OK\r\nX-Note: chunked\r\nContent-Length: 2\r\n\r\nhi", b"hi", False),
        (b"HTTP/1.1 200 OK\r\ncontent-length : 2\r\n\r\nhi", None, None),  # whitespace before the colon: malformed
        (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nhi", None, None),  # repeated: refused
        (b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nhi", b"hi", True),
        (b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nhi", b"hi", False),
        (b"HTTP/1.1 200 OK\r\nConnection: Keep-Alive, Close\r\nContent-Length: 2\r\n\r\nhi", b"hi", True),
        (
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 102 Processing\r\n\r\nHTTP/1.1 202 Accepted\r\nContent-Length: 2\r\n\r\n{}",
            b"{}",
            False,
        ),
    ],
)
def test_framing(parser, raw, body, close, split):
    if body is None:
        with pytest.raises(ValueError):
            feed_all(parser, raw, split)
        return
    response, got, at = feed_all(parser, raw, split)
    assert got == body and at >= len(raw)
    assert response.close is close


@pytest.mark.parametrize("parser", PARSERS)
def test_head_response_has_no_body_whatever_its_length_says(parser):
    response, body, _ = feed_all(parser, b"HTTP/1.1 200 OK\r\nContent-Length: 1234\r\n\r\n", head_request=True)
    assert body == b"" and response.status == 200


@pytest.mark.parametrize("parser", PARSERS)
def test_body_until_close(parser):
    response = parser()
    assert response.feed(b"HTTP/1.1 200 OK\r\nX-A: 1\r\n\r\nso") is None
    assert response.feed(b"me") is None
    assert response.until_close_body() == b"some"
    unframed = parser()
    assert unframed.feed(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nso") is None
    assert unframed.until_close_body() is None  # cut short: not a complete body


@pytest.mark.parametrize(
    "raw",
    [
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nhi",
        b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhiXX0\r\n\r\n",
        b"HTTX/1.1 200 OK\r\n\r\n",
        b"HTTP/1.1 2x0 OK\r\n\r\n",
    ],
)
@pytest.mark.parametrize("parser", PARSERS)
def test_malformed_messages_raise(parser, raw):
    with pytest.raises(ValueError):
        parser().feed(raw)


@pytest.mark.parametrize("parser", PARSERS)
def test_extra_bytes_after_the_message_forbid_reuse(parser):
    response = parser()
    assert response.feed(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhiHTTP/1.1 200") == b"hi"
    assert response.close


class _RawServer:
    """Answers every request on a keep-alive socket with the given raw bytes (no Content-Length for 204)."""

    def __init__(self, answer: bytes):
        self.answer = answer
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn: socket.socket) -> None:
        buf = b""
        with conn:
            while True:
                try:
                    data = conn.recv(65536)
                except OSError:
                    return
                if not data:
                    return
                buf += data
                while b"\r\n\r\n" in buf:
                    head, _, rest = buf.partition(b"\r\n\r\n")
                    length = int(
                        next(
                            (
                                line.split(b":")[1]
                                for line in head.split(b"\r\n")
                                if line.lower().startswith(b"content-length")
                            ),
                            b"0",
                        )
                    )
                    if len(rest) < length:
                        break
                    buf = rest[length:]
                    conn.sendall(self.answer)

    def close(self) -> None:
        self.sock.close()


@pytest.mark.parametrize(
    "answer",
    [
        b"HTTP/1.1 204 No Content\r\nX-OpenWhisk-Activation-Id: abc\r\n\r\n",
        b'HTTP/1.1 202 Accepted\r\nTransfer-Encoding: chunked\r\nX-OpenWhisk-Activation-Id: abc\r\n\r\n5\r\n{"a":\r\n2\r\n1}\r\n0\r\n\r\n',
    ],
)
def test_bodiless_and_chunked_answers_complete_at_once_on_a_real_socket(answer):
    server = _RawServer(answer)
    try:
        generic = instance("g", "-", endpoint="generic", url=f"http://127.0.0.1:{server.port}/x", data={"k": 1})
        request = prepare_request(generic, None)
        rows = []
        intended = np.arange(5, dtype=np.int64) * 20_000_000
        dispatcher = Dispatcher(
            intended,
            np.zeros(5, dtype=np.int32),
            [("g", "-")],
            [request],
            rows.append,
            DispatchOptions(lateness_warn_ms=None, progress_interval_s=3600, request_timeout_s=5),
        )
        loop = new_event_loop()
        try:
            result = loop.run_until_complete(dispatcher.run(time.monotonic_ns() + 20_000_000))
        finally:
            loop.close()
    finally:
        server.close()
    assert result.outcomes == {"ok": 5}
    # Answered at once, not at the request timeout or the connection's end; the sockets opened
    # ahead of the run are reused (a response read wrongly would close or confuse them).
    assert all((row[5] - row[4]) < 1_000_000_000 for row in rows)
    assert result.peak_connections <= WARM_CONNECTIONS


def test_a_connect_that_times_out_counts_as_failing_from_its_start():
    """A listener whose accept queue is full drops new connections' SYNs, as an overloaded
    platform does: the connect times out, and every attempt has been failing since the attempt
    began (the reason names the timeout), not since it gave up. A platform that never answered
    (nothing but a full queue) is never reached; the request's row is a connect timeout."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        port = listener.getsockname()[1]
        fillers = [socket.socket() for _ in range(3)]  # never accepted: the queue stays full
        try:
            for filler in fillers:
                filler.setblocking(False)
                try:
                    filler.connect(("127.0.0.1", port))
                except BlockingIOError:
                    pass
            time.sleep(0.2)
            connection = Connection(apihost=f"http://127.0.0.1:{port}", auth="u:k", namespace="_")
            rows: list[tuple] = []
            loop = new_event_loop()
            try:
                sender = Sender(
                    loop,
                    [prepare_request(instance("o", "ok"), connection)],
                    lambda *row: rows.append(row),
                    lambda *a: None,
                    connect_timeout_s=0.5,
                )
                started_ns = time.monotonic_ns()
                sender.submit(0, 0)
                loop.run_until_complete(asyncio.sleep(0.8))
                span_s, why = sender.failing_for_s()
                never_s, _ = sender.never_reached_for_s()
                loop.run_until_complete(sender.aclose())
            finally:
                loop.close()
        finally:
            for filler in fillers:
                filler.close()
    assert why == f"connect to 127.0.0.1:{port} timed out after 0.5 s"
    # Counted from the attempt (0.8 s ago), not from the timeout (0.3 s ago).
    assert span_s >= 0.7 and span_s <= (time.monotonic_ns() - started_ns) / 1e9
    assert len(rows) == 1 and rows[0][0] == 0 and rows[0][3] == "failed"
    assert never_s >= span_s  # the same span, read a moment later
    assert pushback_kind(rows[0][3], rows[0][4], rows[0][1] is not None, rows[0][6]) == "connect_timeout"
