"""The open-loop send path: prepared HTTP/1.1 requests on bounded keep-alive connection pools.

``faasprof run`` must put thousands of requests per second on the wire at their planned instants
from one Python process, so this module is a deliberately small HTTP/1.1 client on asyncio
protocols (run under uvloop when available) instead of a general-purpose library:

- every instance's request is formatted once by its platform (``faasprof.platforms.base.PreparedRequest``),
  so sending is one ``transport.write`` of ready bytes, and each response, framed by
  ``faasprof.invoker.http_response``, is read by the platform's ``classify``;
- each origin (scheme, host, port) has a ``ConnectionPool`` of at most ``max_connections``
  keep-alive sockets, each carrying one request at a time (no pipelining). Requests beyond the
  open connections wait in a FIFO for the next free one; the number of requests in flight is
  bounded only by the pool size, never by a small worker pool, and file descriptors stay bounded.
  A request's ``sent_ns`` is taken when its bytes are written, so waiting for a connection shows
  up as lateness instead of hiding;
- completions are callbacks, not tasks: one response parsed, one row recorded, the connection
  handed to the next waiting request.

There are no retries: a request that fails is a row with outcome ``failed`` (or ``throttled``,
``timeout``, ``app_error``) and a short error. A platform that refuses connections or lets them
time out is measured, not given up on: each queued request gets its own connection attempt, and
the one that fails is that request's row (``faasprof.outcomes.pushback_kind`` reads it back). The
auth key lives only inside the prepared request bytes; no message built here contains it.

Closing (``Sender.aclose``) cancels the connection attempts still under way and waits for them
and for the sockets' ends, so that nothing is left for an event loop that is about to close.
"""

from __future__ import annotations

import asyncio
import collections
import resource
import socket
import ssl
import time
from typing import Callable, Sequence, cast

from faasprof.errors import ConfigError
from faasprof.invoker.http_response import Response, ResponseParser
from faasprof.outcomes import CONNECT_FAILED_TEXT, CONNECT_TIMEOUT_TEXT, CUT_OFF_TEXTS, REQUEST_TIMEOUT_TEXT
from faasprof.platforms.base import Classifier, Origin, PreparedRequest
from faasprof.platforms.base import shorten as _shorten

# OpenWhisk's controller answers a blocking call within 60 s (then 202); nginx in front of it
# gives up after 75 s, so a response slower than that is not coming.
DEFAULT_REQUEST_TIMEOUT_S = 75.0
DEFAULT_CONNECT_TIMEOUT_S = 10.0
# OpenWhisk's nginx keeps 512 upstream keep-alive connections; more sockets than that only add
# file descriptors without adding concurrency at the controller.
DEFAULT_MAX_CONNECTIONS = 512
# The longest a keep-alive socket may sit idle and still be reused, unless a request's platform
# says less (``PreparedRequest.idle_reuse_max_s``).
DEFAULT_IDLE_REUSE_MAX_S = 30.0
# How long closing waits for the sockets' ends (their connection_lost) before aborting the rest.
CLOSE_WAIT_S = 1.0

# -- the connection pool ---------------------------------------------------------------------------

# Completion callback: (seq, sent_ns, done_ns, outcome, http_status, activation_id, error).
Completion = Callable[[int, "int | None", "int | None", str, "int | None", "str | None", "str | None"], None]


class _Connection(asyncio.Protocol):
    """One keep-alive socket carrying at most one request at a time."""

    def __init__(self, pool: "ConnectionPool"):
        self.pool = pool
        self.transport: asyncio.Transport | None = None
        self.seq = -1  # the request in flight, -1 when idle
        self.classify: Classifier | None = None
        self.sent_ns = 0
        self.response: ResponseParser | None = None
        self.used = False
        self.closed = False
        self.idle_since_ns = 0

    def _transport(self) -> asyncio.Transport:
        """The socket's transport: set by connection_made, before any use."""
        assert self.transport is not None, "used before the connection was made"
        return self.transport

    def close(self) -> None:
        self._transport().close()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # A stream connection's transport (loop.create_connection): the write side is there.
        self.transport = cast(asyncio.Transport, transport)
        sock = transport.get_extra_info("socket")
        if sock is not None:
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:
                pass

    def send(self, seq: int, classify: Classifier, payload: bytes) -> None:
        self.seq = seq
        self.classify = classify
        self.response = Response(payload.startswith(b"HEAD "))
        self.used = True
        self.sent_ns = time.monotonic_ns()
        self._transport().write(payload)
        self.pool.on_sent(seq, self.sent_ns)

    def data_received(self, data: bytes) -> None:
        response = self.response
        if response is None:  # bytes nobody asked for: the server is confused; drop the socket
            self._transport().close()
            return
        try:
            body = response.feed(data)
        except (ValueError, IndexError):
            self._finish_error("malformed HTTP response")
            self._transport().close()
            return
        if body is not None:
            self._finish(response, body)

    def _finish(self, response: ResponseParser, body: bytes) -> None:
        done_ns = time.monotonic_ns()
        seq, sent_ns, classify = self.seq, self.sent_ns, self.classify
        assert classify is not None  # set by send() with the response
        self.seq = -1
        self.response = None
        outcome, activation_id, error = classify(response.status, response.activation_id, body)
        pool = self.pool
        pool.reached = True
        pool.complete(seq, sent_ns, done_ns, outcome, response.status, activation_id, error)
        if response.close or self.closed:
            self._transport().close()
        else:
            pool.release(self)

    def _finish_error(self, error: str, outcome: str = "failed") -> None:
        if self.seq < 0:
            return
        seq, sent_ns = self.seq, self.sent_ns
        self.seq = -1
        self.response = None
        # A timeout has no done time: nothing arrived (an error that arrived has one).
        done_ns = None if outcome == "timeout" else time.monotonic_ns()
        self.pool.complete(seq, sent_ns, done_ns, outcome, None, None, error)

    def eof_received(self) -> bool | None:
        return None  # close the transport; connection_lost follows

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        response = self.response
        body = response.until_close_body() if self.seq >= 0 and response is not None else None
        if body is not None and response is not None:
            # A body delimited by the end of the connection is complete now.
            self._finish(response, body)
        elif self.seq >= 0:
            reason = f"{type(exc).__name__}: {exc}" if exc else "the server closed the connection"
            closed_before, lost_mid_answer = CUT_OFF_TEXTS
            if response is not None and response.head is not None:
                reason = f"{lost_mid_answer} ({reason})"
            else:
                reason = f"{closed_before} ({reason})"
            self._finish_error(_shorten(reason))
        self.pool.forget(self)

    def abort_timeout(self, timeout_s: float) -> None:
        self._finish_error(f"{REQUEST_TIMEOUT_TEXT}{timeout_s:g} s", outcome="timeout")
        self._transport().abort()


class ConnectionPool:
    """Keep-alive connections to one origin, at most ``max_connections`` open at once."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        origin: Origin,
        complete: Completion,
        on_sent: Callable[[int, int], None],
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        ssl_context: ssl.SSLContext | None = None,
        connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S,
        idle_reuse_max_s: float = DEFAULT_IDLE_REUSE_MAX_S,
    ):
        self.loop = loop
        self.origin = origin
        self.idle_reuse_max_ns = int(idle_reuse_max_s * 1e9)
        self.complete = complete
        self.on_sent = on_sent
        self.max_connections = max_connections
        self.ssl_context = ssl_context
        self.connect_timeout_s = connect_timeout_s
        self.idle: list[_Connection] = []  # a stack: the most recently used socket is reused first
        self.busy: set[_Connection] = set()
        self.waiting: collections.deque = collections.deque()  # (seq, classify, payload)
        self.connecting = 0
        self.open_count = 0
        self.peak_open = 0
        self.saturated = 0  # requests that had to wait because every allowed connection was busy
        self.connect_failures = 0  # consecutive, reset by any connection that opens
        self.first_failure_ns: int | None = None
        self.last_connect_error: str | None = None
        # Something listens there: a call's connection opened, or an answer came (on a connection
        # opened ahead of the run, perhaps). Whatever the platform does later is then measured.
        self.reached = False
        self.closing = False
        self.connects: set[asyncio.Task] = set()  # attempts under way, cancelled by aclose

    # submit() and release() are the hot path: keep them short.
    def submit(self, seq: int, classify: Classifier, payload: bytes) -> None:
        idle = self.idle
        while idle:
            conn = idle.pop()
            if time.monotonic_ns() - conn.idle_since_ns > self.idle_reuse_max_ns:
                # Servers close idle keep-alive sockets (gunicorn after 2 s, Node.js after 5 s);
                # a request written just as that happens is lost. Old idle sockets are not reused.
                conn.close()
                continue
            self.busy.add(conn)
            conn.send(seq, classify, payload)
            return
        self.waiting.append((seq, classify, payload))
        if self.open_count + self.connecting >= self.max_connections:
            self.saturated += 1
        elif self.connecting < len(self.waiting):
            self._open()

    def release(self, conn: _Connection) -> None:
        if self.waiting and not self.closing:
            seq, classify, payload = self.waiting.popleft()
            conn.send(seq, classify, payload)
            return
        self.busy.discard(conn)
        conn.idle_since_ns = time.monotonic_ns()
        self.idle.append(conn)

    def forget(self, conn: _Connection) -> None:
        self.busy.discard(conn)
        try:
            self.idle.remove(conn)
        except ValueError:
            pass
        self.open_count -= 1
        # Requests that were waiting for a socket need someone to open a new one.
        if (
            self.waiting
            and not self.closing
            and self.connecting < len(self.waiting)
            and self.open_count + self.connecting < self.max_connections
        ):
            self._open()

    def _open(self) -> None:
        self.connecting += 1
        task = self.loop.create_task(self._connect())
        self.connects.add(task)
        task.add_done_callback(self.connects.discard)

    async def _connect(self) -> None:
        scheme, host, port = self.origin
        attempt_ns = time.monotonic_ns()
        try:
            _, conn = await asyncio.wait_for(
                self.loop.create_connection(
                    lambda: _Connection(self),
                    host,
                    port,
                    ssl=self.ssl_context,
                    server_hostname=host if self.ssl_context else None,
                ),
                self.connect_timeout_s,
            )
        except (OSError, asyncio.TimeoutError, ssl.SSLError) as error:
            self.connecting -= 1
            self._connect_failed(error, attempt_ns)
            return
        self.connecting -= 1
        self.open_count += 1
        self.peak_open = max(self.peak_open, self.open_count)
        self.connect_failures = 0
        self.first_failure_ns = None
        self.reached = True
        if self.closing:
            conn.close()
            return
        self.busy.add(conn)
        self.release(conn)

    async def warm(self, count: int) -> None:
        """Open idle connections ahead of the first request (a failure here is not a row)."""
        scheme, host, port = self.origin

        async def one() -> None:
            try:
                _, conn = await self.loop.create_connection(
                    lambda: _Connection(self),
                    host,
                    port,
                    ssl=self.ssl_context,
                    server_hostname=host if self.ssl_context else None,
                )
            except (OSError, ssl.SSLError):
                return
            self.open_count += 1
            self.peak_open = max(self.peak_open, self.open_count)
            conn.idle_since_ns = time.monotonic_ns()
            self.idle.append(conn)

        await asyncio.gather(*(one() for _ in range(min(count, self.max_connections))))

    def _connect_failed(self, error: BaseException, attempt_ns: int) -> None:
        if isinstance(error, asyncio.TimeoutError):
            text = f"connect to {self.origin[1]}:{self.origin[2]} {CONNECT_TIMEOUT_TEXT} {self.connect_timeout_s:g} s"
        elif isinstance(error, ssl.SSLError):
            text = f"TLS handshake with {self.origin[1]}:{self.origin[2]} failed ({error.reason or error}); pass --insecure for a self-signed certificate"
        else:
            text = (
                f"{CONNECT_FAILED_TEXT}{self.origin[1]}:{self.origin[2]} ({getattr(error, 'strerror', None) or error})"
            )
        self.last_connect_error = text
        self.connect_failures += 1
        if self.first_failure_ns is None:
            # From the failed attempt's start: a connect that timed out after 10 s means the
            # platform accepted nothing for those 10 s already.
            self.first_failure_ns = attempt_ns
        # The request at the head of the queue gets this attempt's failure as its row: it was
        # due, it was attempted, and it cannot be sent. The next one gets its own attempt.
        if self.waiting:
            seq, _, _ = self.waiting.popleft()
            self.complete(seq, None, time.monotonic_ns(), "failed", None, None, _shorten(text))
        if (
            self.waiting
            and not self.closing
            and self.connecting < len(self.waiting)
            and self.open_count + self.connecting < self.max_connections
        ):
            self._open()

    def sweep_timeouts(self, now_ns: int, timeout_ns: int) -> None:
        """Give up on requests older than the timeout (checked a few times a second, not per request)."""
        timeout_s = timeout_ns / 1e9
        for conn in [c for c in self.busy if c.seq >= 0 and now_ns - c.sent_ns > timeout_ns]:
            conn.abort_timeout(timeout_s)

    def drop_waiting(self) -> list[int]:
        """Take the requests still waiting for a socket out of the queue (they were never sent)."""
        seqs = [item[0] for item in self.waiting]
        self.waiting.clear()
        return seqs

    def abort_in_flight(self, error: str) -> None:
        for conn in list(self.busy):
            if conn.seq >= 0:
                conn._finish_error(error, outcome="timeout")
            if conn.transport is not None:
                conn.transport.abort()

    def close(self) -> None:
        self.closing = True
        for conn in list(self.busy):
            if conn.seq >= 0:  # faasprof gives up on these (the run is ending), not the server
                conn._finish_error("no answer recorded: faasprof stopped waiting when the run ended", outcome="timeout")
        for conn in list(self.idle) + list(self.busy):
            if conn.transport is not None:
                conn.transport.close()
        self.idle.clear()
        for task in self.connects:
            task.cancel()

    def failing_for_s(self, now_ns: int) -> float:
        """How long every connection attempt has been failing (0: the last one opened)."""
        if self.first_failure_ns is None or self.connect_failures == 0:
            return 0.0
        return (now_ns - self.first_failure_ns) / 1e9


def ensure_fd_budget(max_connections: int, origins: int = 1, spare: int = 128) -> None:
    """Raise the soft open-files limit so that every allowed connection can open; ConfigError if it cannot."""
    needed = max_connections * max(origins, 1) + spare
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= needed:
        return
    if hard != resource.RLIM_INFINITY and hard < needed:
        raise ConfigError(
            f"--max-connections: {max_connections} connections per host need about {needed} file descriptors "
            f"but the hard limit is {hard}; lower --max-connections or raise the limit (ulimit -Hn)"
        )
    resource.setrlimit(
        resource.RLIMIT_NOFILE, (needed if hard == resource.RLIM_INFINITY else max(needed, min(hard, 65536)), hard)
    )


def make_ssl_context(insecure: bool) -> ssl.SSLContext:
    context = ssl.create_default_context()
    if insecure:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context


class Sender:
    """Routes each prepared request to its origin's pool; reports sends and completions."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        requests: Sequence[PreparedRequest],
        complete: Completion,
        on_sent: Callable[[int, int], None],
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        insecure: bool = False,
        connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S,
    ):
        self.pools: dict[Origin, ConnectionPool] = {}
        self._routes: list[tuple[ConnectionPool, Classifier, bytes]] = []
        for request in requests:
            pool = self.pools.get(request.origin)
            if pool is None:
                context = make_ssl_context(insecure) if request.origin[0] == "https" else None
                pool = ConnectionPool(
                    loop,
                    request.origin,
                    complete,
                    on_sent,
                    max_connections,
                    context,
                    connect_timeout_s,
                    request.idle_reuse_max_s,
                )
                self.pools[request.origin] = pool
            pool.idle_reuse_max_ns = min(pool.idle_reuse_max_ns, int(request.idle_reuse_max_s * 1e9))
            self._routes.append((pool, request.classify, request.payload))

    def submit(self, seq: int, request_index: int) -> None:
        pool, classify, payload = self._routes[request_index]
        pool.submit(seq, classify, payload)

    @property
    def in_flight(self) -> int:
        return sum(len(pool.busy) for pool in self.pools.values())

    @property
    def waiting(self) -> int:
        return sum(len(pool.waiting) for pool in self.pools.values())

    @property
    def saturated(self) -> int:
        return sum(pool.saturated for pool in self.pools.values())

    @property
    def peak_connections(self) -> int:
        return sum(pool.peak_open for pool in self.pools.values())

    async def warm(self, per_pool: int, until_ns: int) -> None:
        """Open up to ``per_pool`` idle connections per origin before the run's zero (never after)."""
        budget_s = (until_ns - time.monotonic_ns()) / 1e9
        if budget_s <= 0.005:
            return
        tasks = [pool.loop.create_task(pool.warm(per_pool)) for pool in self.pools.values()]
        done, pending = await asyncio.wait(tasks, timeout=budget_s - 0.005)
        for task in pending:
            task.cancel()
        if pending:  # awaited, so that no cancelled attempt outlives the loop
            await asyncio.gather(*pending, return_exceptions=True)

    def sweep_timeouts(self, timeout_s: float) -> None:
        now = time.monotonic_ns()
        for pool in self.pools.values():
            pool.sweep_timeouts(now, int(timeout_s * 1e9))

    def never_reached_for_s(self) -> tuple[float, str | None]:
        """How long every connection attempt to an origin never reached (``ConnectionPool.reached``)
        has been failing, and why (the longest such span): nothing listening, not a busy platform."""
        return self._failing(lambda pool: not pool.reached)

    def failing_for_s(self) -> tuple[float, str | None]:
        """How long every connection attempt to some origin has been failing, and why (the
        longest such span; 0.0, None when every origin takes connections)."""
        return self._failing(lambda pool: True)

    def _failing(self, which: Callable[[ConnectionPool], bool]) -> tuple[float, str | None]:
        worst, why = 0.0, None
        now = time.monotonic_ns()
        for pool in self.pools.values():
            span = pool.failing_for_s(now) if which(pool) else 0.0
            if span > worst:
                worst, why = span, pool.last_connect_error
        return worst, why

    def drop_waiting(self) -> list[int]:
        seqs: list[int] = []
        for pool in self.pools.values():
            seqs.extend(pool.drop_waiting())
        return seqs

    def abort_in_flight(self, error: str) -> None:
        for pool in self.pools.values():
            pool.abort_in_flight(error)

    def close(self) -> None:
        """Every pool closed now: rows for the requests in flight, sockets closing, attempts cancelled."""
        for pool in self.pools.values():
            pool.close()

    async def aclose(self) -> None:
        """``close``, then wait for the cancelled connection attempts and (up to ``CLOSE_WAIT_S``)
        for the sockets' ends, aborting any still open: the loop can close with nothing pending."""
        self.close()
        attempts = [task for pool in self.pools.values() for task in pool.connects]
        if attempts:
            await asyncio.gather(*attempts, return_exceptions=True)
        deadline = time.monotonic() + CLOSE_WAIT_S
        while any(pool.open_count > 0 for pool in self.pools.values()) and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        for pool in self.pools.values():
            for conn in list(pool.idle) + list(pool.busy):
                if conn.transport is not None:
                    conn.transport.abort()
        await asyncio.sleep(0)  # the aborted sockets' connection_lost
