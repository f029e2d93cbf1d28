"""A real HTTP server on 127.0.0.1 that answers like OpenWhisk, for the invoker's tests.

The action name chooses the behaviour (the invoker cannot tell it is not OpenWhisk):

- ``ok*``: 202 + activation id (header and body); blocking: 200 + the activation;
- ``noheader``: 202 with the id only in the body;
- ``throttled``: 429 with OpenWhisk's per-minute message and an activation-less error body;
- ``apperr``: 502 with an activation whose result has an error (and the id header);
- ``slow``: answers after ``server.slow_s`` seconds;
- ``drop``: closes the connection without answering;
- ``chunked``: 202 with a chunked body;
- ``boom``: 500;
- ``norecord``: 202 like ``ok``, but its activation record never appears;
- ``toolarge``: 413, OpenWhisk's answer to a body over its payload limit.

``die_after_preflight``: the server stops listening 0.1 s after the first ``GET`` of an action
(the invoker's last pre-flight check), so every call of the run is refused.

Accepted activations of the other actions get a record (success; ``apperr``: application
error), served by ``GET .../activations`` (``since``/``upto``, newest first) and
``GET .../activations/{id}`` from ``server.record_delay_s`` after the call.

``kill()`` stops the listener and cuts every open connection (a platform dying mid-run).
An over-invoked platform, each on the same port and for a while: ``refuse_for(s)`` closes the
listener and cuts every open connection (new connections are refused), then listens again;
``stop_accepting()`` leaves the listener open but accepts nothing (once its small backlog is
full, new connections hang: their SYNs are dropped, as with a full accept queue);
``shed_status`` (429 or 503), while set, answers every invocation with that status.
The tests in this file check the server itself, so that the other tests can trust it.
"""

from __future__ import annotations

import json
import socket
import threading
import time
import urllib.request
import uuid
from base64 import b64encode
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

AUTH = "23bc46b1-71f6-4ed5-8c54-816aa4f8c502:S3cr3tK3yNeverLeak0123456789abcdefghijklmnopqrstuvwxyzABCDEFGH"
THROTTLE_MESSAGE = "Too many requests in the last minute (count: 61, allowed: 60)."
LIMITS = {"actions_per_minute": 100000, "concurrent_actions": 1000, "triggers_per_minute": 60}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: "FakeOpenWhisk"

    def log_message(self, *args) -> None:  # keep test output clean
        pass

    def setup(self) -> None:
        super().setup()
        self.server.track(self.connection)

    def _send(self, status: int, body: object, headers: dict | None = None, chunked: bool = False) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            half = len(data) // 2
            for piece in (data[:half], data[half:]):
                self.wfile.write(b"%x\r\n" % len(piece) + piece + b"\r\n")
            self.wfile.write(b"0\r\n\r\n")
        else:
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    def _authorized(self) -> bool:
        expected = "Basic " + b64encode(self.server.auth.encode()).decode()
        if self.headers.get("Authorization") != expected:
            self._send(401, {"error": "The supplied authentication is invalid", "code": "x"})
            return False
        return True

    def do_GET(self) -> None:
        path = self.path.split("?")[0]
        if path == "/":
            self._send(
                200, {"description": "fake OpenWhisk for faasprof tests", "limits": self.server.limits, "runtimes": {}}
            )
            return
        if not self._authorized():
            return
        if path == "/api/v1/namespaces":
            self._send(200, ["guest"])
            return
        parts = path.split("/")
        if len(parts) >= 6 and parts[5] == "activations":
            self._activations(parts[6] if len(parts) == 7 else None)
            return
        if len(parts) == 7 and parts[5] == "actions":
            name = parts[6]
            if self.server.die_after_preflight:
                threading.Timer(0.1, self.server.kill).start()
            if name in self.server.known_actions:
                self._send(200, {"name": name, "namespace": "guest", "exec": {"kind": "python:3"}})
            else:
                self._send(404, {"error": "The requested resource does not exist.", "code": "x"})
            return
        self._send(404, {"error": "The requested resource does not exist.", "code": "x"})

    def _activations(self, activation_id: str | None) -> None:
        server = self.server
        now_ms = time.time() * 1000
        with server.lock:
            server.record_reads.append({"path": self.path, "t": time.monotonic()})
        with server.lock:
            visible = [r for r in server.records.values() if r["_visible_ms"] <= now_ms]
        if activation_id is not None:
            record = next((r for r in visible if r["activationId"] == activation_id), None)
            if record is None:
                self._send(404, {"error": "The requested resource does not exist.", "code": "x"})
            else:
                self._send(200, {k: v for k, v in record.items() if not k.startswith("_")})
            return
        query = dict(p.split("=", 1) for p in self.path.partition("?")[2].split("&") if "=" in p)
        since, upto = int(query.get("since", 0)), int(query.get("upto", 2**62))
        limit, skip = int(query.get("limit", 30)), int(query.get("skip", 0))
        chosen = sorted((r for r in visible if since <= r["start"] <= upto), key=lambda r: -r["start"])[
            skip : skip + limit
        ]
        self._send(200, [{k: v for k, v in r.items() if not k.startswith("_")} for r in chosen])

    def _record(self, aid: str, name: str, success: bool = True) -> None:
        server = self.server
        start = int(time.time() * 1000)
        record = {
            "activationId": aid,
            "name": name,
            "namespace": "guest",
            "start": start,
            "end": start + 5,
            "duration": 5,
            "response": {
                "status": "success" if success else "application error",
                "statusCode": 0 if success else 1,
                "success": success,
                "result": {} if success else {"error": "the function failed"},
            },
            "annotations": [
                {"key": "waitTime", "value": 1},
                {"key": "limits", "value": {"memory": 256, "timeout": 60000}},
            ],
            "_visible_ms": start + server.record_delay_s * 1000,
        }
        with server.lock:
            server.records[aid] = record

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        path, _, query = self.path.partition("?")
        server = self.server
        with server.lock:
            server.requests.append(
                {
                    "path": path,
                    "query": query,
                    "headers": dict(self.headers),
                    "body": body,
                    "t": time.monotonic(),
                    "client": self.client_address,
                }
            )
        if path.startswith("/api/v1/web/"):
            name = path.rsplit("/", 1)[-1]
            aid = uuid.uuid4().hex
            self._send(200, {"size": len(body)}, {"x-openwhisk-activation-id": aid})
            return
        if path.startswith("/generic"):
            self._send(200, {"echo": json.loads(body or b"null")})
            return
        if not self._authorized():
            return
        shed = server.shed_status
        if shed is not None:  # overloaded: the call is turned away, no activation
            self._send(
                shed,
                {"error": THROTTLE_MESSAGE if shed == 429 else "The server is currently unavailable.", "code": "tid"},
            )
            return
        name = path.rsplit("/", 1)[-1]
        blocking = "blocking=true" in query
        aid = uuid.uuid4().hex
        header = {"x-openwhisk-activation-id": aid}
        if name == "drop":
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        if name == "slow":
            time.sleep(server.slow_s)
        if name == "toolarge":
            self._send(
                413,
                {
                    "error": "The request content was too large (1048577 bytes); the limit is 1048576 bytes.",
                    "code": "tid",
                },
            )
            return
        if name not in ("throttled", "boom", "norecord"):
            self._record(aid, name, success=name != "apperr")
        if name == "throttled":
            self._send(429, {"error": THROTTLE_MESSAGE, "code": "tid"})
        elif name == "apperr":
            self._send(
                502,
                {
                    "activationId": aid,
                    "response": {
                        "status": "application error",
                        "success": False,
                        "result": {"error": "the function failed"},
                    },
                },
                header,
            )
        elif name == "boom":
            self._send(500, {"error": "internal error", "code": "tid"})
        elif name == "noheader":
            self._send(202, {"activationId": aid})
        elif name == "chunked":
            self._send(202, {"activationId": aid}, header, chunked=True)
        elif blocking:
            self._send(
                200, {"activationId": aid, "response": {"status": "success", "success": True, "result": {}}}, header
            )
        else:
            self._send(202, {"activationId": aid}, header)


class FakeOpenWhisk(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(
        self,
        auth: str = AUTH,
        known_actions=(
            "ok",
            "ok2",
            "slow",
            "drop",
            "throttled",
            "apperr",
            "boom",
            "noheader",
            "chunked",
            "norecord",
            "toolarge",
        ),
    ):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.auth = auth
        self.known_actions = set(known_actions)
        self.limits = dict(LIMITS)
        self.slow_s = 1.0
        self.record_delay_s = 0.0
        self.die_after_preflight = False
        self.shed_status: int | None = None
        self._reopen: threading.Timer | None = None
        self.records: dict[str, dict] = {}
        self.requests: list[dict] = []
        self.record_reads: list[dict] = []  # GET .../activations[/{id}]: path and monotonic time
        self.lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._killed = False
        self._thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def port(self) -> int:
        return self.server_address[1]

    @property
    def apihost(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def handle_error(self, request, client_address) -> None:
        pass  # a client that went away mid-answer (the tests kill it on purpose) is not news

    def track(self, sock: socket.socket) -> None:
        with self.lock:
            self._sockets.append(sock)

    def start(self) -> "FakeOpenWhisk":
        self._thread.start()
        return self

    def kill(self) -> None:
        """Stop listening and cut every open connection (safe twice)."""
        if self._killed:
            return
        self._killed = True
        if self._reopen is not None:
            self._reopen.cancel()
            self._reopen.join()  # a reopen under way ends first: its listener is closed below
        self.shutdown()
        self.server_close()
        self._cut_connections()

    def _cut_connections(self) -> None:
        with self.lock:
            for sock in self._sockets:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def stop_accepting(self) -> None:
        """Accept nothing more and cut the open connections; the listener stays open (its backlog fills)."""
        self.shutdown()
        self._cut_connections()

    def refuse_for(self, seconds: float) -> None:
        """Refuse connections for ``seconds`` (listener closed, open connections cut), then serve
        again on the same port. Returns at once; the server comes back on its own."""
        port = self.port
        self.shutdown()
        self.socket.close()
        self._cut_connections()

        def reopen() -> None:
            listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            listener.bind(("127.0.0.1", port))
            listener.listen(128)
            self.socket = listener
            self._thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
            self._thread.start()

        self._reopen = threading.Timer(seconds, reopen)
        self._reopen.daemon = True
        self._reopen.start()

    def __enter__(self) -> "FakeOpenWhisk":
        return self.start()

    def __exit__(self, *exc) -> None:
        if self._thread.is_alive() or self._reopen is not None:
            self.kill()


def _post(server: FakeOpenWhisk, name: str) -> tuple[int, dict, dict]:
    request = urllib.request.Request(
        f"{server.apihost}/api/v1/namespaces/_/actions/{name}?blocking=false",
        data=b"{}",
        headers={
            "Authorization": "Basic " + b64encode(server.auth.encode()).decode(),
            "Content-Type": "application/json",
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, dict(response.headers), json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), json.loads(error.read())


def test_fake_server_answers_like_openwhisk():
    with FakeOpenWhisk() as server:
        status, headers, body = _post(server, "ok")
        assert status == 202 and body["activationId"] == headers["x-openwhisk-activation-id"]
        status, _, body = _post(server, "throttled")
        assert status == 429 and body["error"] == THROTTLE_MESSAGE
        status, _, body = _post(server, "apperr")
        assert status == 502 and body["response"]["result"]["error"]


def test_fake_server_kill_refuses_new_connections():
    server = FakeOpenWhisk().start()
    port = server.port
    server.kill()
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        refused = False
    except OSError:
        refused = True
    assert refused


def test_fake_server_refuses_for_a_while_then_serves_on_the_same_port():
    with FakeOpenWhisk() as server:
        port = server.port
        server.refuse_for(0.5)
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
        time.sleep(0.8)
        assert server.port == port and _post(server, "ok")[0] == 202


def test_fake_server_sheds_calls_with_429_or_503_while_told():
    with FakeOpenWhisk() as server:
        server.shed_status = 503
        assert _post(server, "ok")[0] == 503
        server.shed_status = 429
        status, _, body = _post(server, "ok")
        assert status == 429 and body["error"] == THROTTLE_MESSAGE
        server.shed_status = None
        assert _post(server, "ok")[0] == 202


def test_fake_server_that_stops_accepting_lets_new_connections_hang():
    with FakeOpenWhisk() as server:
        server.stop_accepting()
        pending = []
        try:
            for _ in range(20):  # past the backlog: the kernel drops the SYNs of the rest
                sock = socket.socket()
                sock.settimeout(0.3)
                pending.append(sock)
                sock.connect(("127.0.0.1", server.port))
            hung = False
        except (socket.timeout, TimeoutError):
            hung = True
        finally:
            for sock in pending:
                sock.close()
        assert hung
