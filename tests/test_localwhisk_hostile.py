"""localwhisk against hostile actions and requests (issue 44): text JSON carries but UTF-8 cannot,
exceptions inside the pool, malformed web responses, zip bombs, process limits, private files."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import ctypes
import io
import json
import logging
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import time
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import AsyncIterator

import pytest
import requests
from aiohttp import web

from faasprof import procfs
from faasprof.commands import doctor as cmd_doctor
from faasprof.errors import NotReadyError
from faasprof.localwhisk import archives, sandbox_users
from faasprof.localwhisk import pool as pool_mod
from faasprof.localwhisk.archives import ArchiveRefused, extract_archive
from faasprof.localwhisk.config import GUEST_AUTH, Settings
from faasprof.localwhisk.embedded import start_embedded
from faasprof.localwhisk.runtimes import launcher
from faasprof.localwhisk.server import Localwhisk
from faasprof.localwhisk.store import Store
from tests.helpers import process_alive
from tests.localwhisk_driver import Lw

pytestmark = pytest.mark.timeout(120)

# Every third call answers a lone surrogate: valid JSON (JSON.stringify escapes it), no valid UTF-8.
SURROGATE_JS = "let n = 0;\nfunction main(a) { n += 1; return n % 3 === 0 ? {s: '\\udc00', n: n} : {s: 'ok', n: n}; }\n"
NOOP_PY = "def main(args):\n    return {'ok': True, 'a': args.get('a')}\n"


@pytest.fixture(scope="module")
def lw(tmp_path_factory):
    with start_embedded(data_dir=tmp_path_factory.mktemp("lwhostile"), max_blocking_wait_ms=30000) as handle:
        driver = Lw(handle)
        yield driver
        driver.client.close()
        driver.session.close()


def _ids(lw: Lw, name: str) -> set[str]:
    response = lw.session.get(f"{lw.base}/activations", params={"name": name, "limit": 200}, timeout=10)
    assert response.status_code == 200, response.text
    return {record["activationId"] for record in response.json()}


def test_a_lone_surrogate_in_results_loses_no_record_of_any_action(lw):
    lw.put("surrogate", SURROGATE_JS, kind="nodejs:default")
    lw.put("bystander", NOOP_PY)

    def call(i: int) -> str:
        name = "surrogate" if i % 2 else "bystander"
        response = lw.session.post(f"{lw.base}/actions/{name}", params={"blocking": "true"}, json={}, timeout=30)
        assert response.status_code in (200, 502), response.text
        return response.json()["activationId"]

    with ThreadPoolExecutor(4) as executor:
        answered = list(executor.map(call, range(36)))
    assert len(answered) == 36
    time.sleep(0.2)  # past a store flush: the batches are written, not only held in memory
    stored = _ids(lw, "surrogate") | _ids(lw, "bystander")
    assert set(answered) <= stored
    records = [lw.record(activation_id) for activation_id in answered]
    results = [r["response"]["result"] for r in records if r["name"] == "surrogate"]
    assert {"s": "\ufffd", "n": 3} in results  # made safe where it entered, nothing else changed
    assert all(r["response"]["success"] for r in records)


def test_a_lone_surrogate_in_invoke_bodies_leaks_no_sandbox(lw):
    lw.put("echo_a", NOOP_PY)
    body = b'{"a":"\\ud800"}'
    headers = {"Content-Type": "application/json"}
    ids = []
    for _ in range(16):
        response = lw.session.post(f"{lw.base}/actions/echo_a", data=body, headers=headers, timeout=10)
        assert response.status_code == 202, response.text
        ids.append(response.json()["activationId"])
    records = [lw.record(activation_id, timeout_s=30) for activation_id in ids]
    assert [r["response"]["result"] for r in records] == [{"ok": True, "a": "\ufffd"}] * 16
    assert lw.wait_for(lambda: all(sb["state"] != "busy" for sb in lw.sandboxes("echo_a")), 5.0)
    blocking = lw.session.post(f"{lw.base}/actions/echo_a", params={"blocking": "true"}, json={"a": 1}, timeout=10)
    assert blocking.status_code == 200, blocking.text


def test_web_actions_take_lone_surrogates_in_bodies_and_raw_header_bytes(lw):
    lw.put("web_echo", NOOP_PY, annotations=[{"key": "web-export", "value": True}])
    url = lw.handle.apihost + "/api/v1/web/guest/default/web_echo.json"
    response = requests.post(url, data=b'{"a":"\\udc00"}', headers={"Content-Type": "application/json"}, timeout=10)
    assert response.status_code == 200, response.text
    assert response.json()["a"] == "\ufffd"
    # A header value that is not UTF-8 reaches the action as __ow_headers (aiohttp decodes it with
    # surrogateescape): the call is answered, not lost in the pool.
    host, port = lw.handle.apihost.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as conn:
        conn.sendall(b"GET /api/v1/web/guest/default/web_echo.json HTTP/1.1\r\nHost: x\r\nX-Bad: \xff\xfe\r\n\r\n")
        head = conn.recv(65536)
    assert head.startswith(b"HTTP/1.1 200"), head[:200]


@contextlib.asynccontextmanager
async def _served(settings: Settings, owns_process: bool = False) -> AsyncIterator[tuple[Localwhisk, int]]:
    """One localwhisk served in this process on a port of its own: (the instance, its port)."""
    instance = Localwhisk(settings)
    instance.owns_process = owns_process
    await instance.open()
    runner = web.AppRunner(instance.app(), access_log=None, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    instance.set_apihost(f"http://127.0.0.1:{port}")
    try:
        yield instance, port
    finally:
        await instance.close()
        await runner.cleanup()


def _serve_in_process(tmp_path: Path, monkeypatch, body):
    """Run one localwhisk in this process (so that a test can patch the pool), call ``body(lw)``."""

    async def main():
        async with _served(Settings(data_dir=str(tmp_path / "lw"), port=0)) as (instance, port):
            return await asyncio.get_running_loop().run_in_executor(None, body, instance, port)

    return asyncio.run(main())


def test_an_exception_inside_a_pool_task_ends_its_activation_with_a_record_and_frees_the_sandbox(tmp_path, monkeypatch):
    real_run = pool_mod.Pool._run

    async def failing_run(self, sb, job, out, timeout_s):
        if job.params.get("fail"):
            raise RuntimeError("injected")
        await real_run(self, sb, job, out, timeout_s)

    monkeypatch.setattr(pool_mod.Pool, "_run", failing_run)

    def body(instance, port):
        base = f"http://127.0.0.1:{port}/api/v1/namespaces/_"
        with requests.Session() as session:
            session.auth = tuple(instance.settings.auth.split(":", 1))
            put = session.put(
                f"{base}/actions/inj",
                json={"exec": {"kind": "python:3", "code": NOOP_PY}, "limits": {"memory": 256}},
                timeout=10,
            )
            assert put.status_code == 200, put.text
            failed = session.post(f"{base}/actions/inj", params={"blocking": "true"}, json={"fail": 1}, timeout=30)
            assert failed.status_code == 500, failed.text  # a whisk internal error, as OpenWhisk answers it
            record = failed.json()
            assert record["response"]["status"] == "whisk internal error"
            assert "RuntimeError: injected" in record["response"]["result"]["error"]
            assert instance.pool.used_mb == 0 or all(sb.state != "busy" for sb in instance.pool.sandboxes.values())
            # The pool is not held: later calls run.
            for _ in range(3):
                ok = session.post(f"{base}/actions/inj", params={"blocking": "true"}, json={}, timeout=30)
                assert ok.status_code == 200, ok.text
            listed = session.get(f"{base}/activations", params={"name": "inj"}, timeout=10)
            assert listed.status_code == 200 and len(listed.json()) == 4

    _serve_in_process(tmp_path, monkeypatch, body)


def test_one_record_that_cannot_be_encoded_never_stops_its_batch(tmp_path):
    def record(activation_id: str, result: object) -> dict:
        return {
            "namespace": "guest",
            "name": "a",
            "activationId": activation_id,
            "start": 1,
            "end": 2,
            "response": {"result": result},
        }

    async def main():
        store = Store(tmp_path / "s.sqlite", flush_ms=1)
        await store.open()
        store.put_activation(record("good1", {"s": "\udc00"}), "a", 0)
        store.put_activation(record("bad", {"set": {1, 2}}), "a", 0)  # no JSON for a set
        store.put_activation(record("good2", {}), "a", 0)
        await store.flush()
        listed = await store.list_activations("guest", None, None, None, 10, 0)
        await store.close()
        return {doc["activationId"]: doc for doc, _ in listed}

    stored = asyncio.run(main())
    assert set(stored) == {"good1", "bad", "good2"}
    assert stored["good1"]["response"]["result"] == {"s": "\ufffd"}
    assert "could not store" in stored["bad"]["response"]["result"]["error"]


# The action answers whatever HTTP response the request asks for (as a hostile action could).
ANSWER_PY = "def main(a):\n    return a['resp']\n"
INJECTED = "HTTP/1.1 200 OK\r\nX-Injected: yes\r\nContent-Length: 2\r\n\r\nno"


@pytest.fixture(scope="module")
def answer(lw):
    lw.put("answer", ANSWER_PY, annotations=[{"key": "web-export", "value": True}])
    return lw


def _read_response(conn: socket.socket) -> tuple[int, dict[str, str], bytes]:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        assert chunk, f"connection closed after {data[:200]!r}"
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    assert "transfer-encoding" not in headers, headers
    length = int(headers["content-length"])
    while len(body) < length:
        chunk = conn.recv(65536)
        assert chunk, "connection closed mid-body"
        body += chunk
    assert len(body) == length, f"more bytes than the response's length: {body[length:]!r}"
    return status, headers, body


def _post(conn: socket.socket, path: str, payload: object) -> tuple[int, dict[str, str], bytes]:
    raw = json.dumps(payload).encode()
    conn.sendall(
        f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {len(raw)}\r\n\r\n".encode()
        + raw
    )
    return _read_response(conn)


@pytest.mark.parametrize(
    "resp, status",
    [
        ({"headers": {"Content-Length": "5"}, "body": "hello" + INJECTED}, 200),
        ({"headers": {"Transfer-Encoding": "chunked", "Connection": "close"}, "body": "plain"}, 200),
        ({"statusCode": "abc", "body": "x"}, 400),
        ({"headers": ["x"], "body": "x"}, 400),
        ({"statusCode": 99999, "body": "x"}, 400),
        ({"statusCode": 1.5, "body": "x"}, 400),
        ({"statusCode": True, "body": "x"}, 400),
        ({"headers": {"X Bad": "1"}, "body": "x"}, 400),
        ({"headers": {"X-Split": "a\r\nX-Injected: yes"}, "body": "x"}, 400),
        ({"headers": {"X-Obj": {"a": 1}}, "body": "x"}, 400),
        ({"statusCode": 201, "headers": {"X-Num": 1, "X-Flag": False}, "body": "made"}, 201),
    ],
)
def test_web_action_responses_are_validated_and_never_break_the_connection(answer, resp, status):
    lw = answer
    host, port = lw.handle.apihost.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as conn:
        got, headers, body = _post(conn, "/api/v1/web/guest/default/answer.http", {"resp": resp})
        assert got == status, body
        if status == 400:  # OpenWhisk 2.0.0's answer (WebActions.scala, resultAsHttp)
            assert json.loads(body)["error"] == "Response is not valid 'message/http'."
        else:
            assert body == str(resp["body"]).encode()
            assert "x-injected" not in headers
        if status == 201:
            assert headers["x-num"] == "1" and headers["x-flag"] == "false"
        # The connection still carries the next request, and its answer is its own.
        again, headers, body = _post(conn, "/api/v1/web/guest/default/answer.http", {"resp": {"body": "second"}})
        assert (again, body) == (200, b"second")
        assert "x-injected" not in headers


def _zip(files: dict[str, bytes]) -> str:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return base64.b64encode(buffer.getvalue()).decode()


def test_a_zip_bomb_is_refused_at_put_and_never_unpacked(tmp_path):
    # 64 MiB of zeros compress to about 64 KiB; the cap here is 16 MiB.
    bomb = _zip({"__main__.py": b"def main(a):\n    return {}\n", "zeros.bin": bytes(64 * 1024 * 1024)})
    assert len(bomb) < 200_000
    with start_embedded(data_dir=tmp_path / "lw", max_unpacked_code_bytes=16 * 1024 * 1024) as handle:
        lw = Lw(handle)
        response = lw.session.put(
            f"{lw.base}/actions/bomb",
            json={"exec": {"kind": "python:3", "code": bomb, "binary": True}},
            timeout=30,
        )
        assert response.status_code == 400, response.text
        assert "max_unpacked_code_bytes 16777216" in response.json()["error"]
        many = _zip({f"f{i}": b"" for i in range(40)})
        response = lw.session.put(
            f"{lw.base}/actions/many", json={"exec": {"kind": "python:3", "code": many}}, timeout=30
        )
        assert response.status_code == 200  # under the default entry cap
        small = _zip({"__main__.py": b"def main(a):\n    return {'ok': 1}\n"})
        response = lw.session.put(
            f"{lw.base}/actions/small", json={"exec": {"kind": "python:3", "code": small}}, timeout=30
        )
        assert response.status_code == 200, response.text
        assert lw.invoke("small").json()["response"]["result"] == {"ok": 1}
        lw.session.close()
        lw.client.close()


def test_unpacking_stops_at_the_cap_even_when_the_directory_understates_it(tmp_path, monkeypatch):
    code = _zip({"a.bin": bytes(3 * 1024 * 1024), "b.bin": bytes(3 * 1024 * 1024)})
    with pytest.raises(ArchiveRefused, match="unpacks to 6291456 bytes"):
        extract_archive(code, tmp_path / "x", 4 * 1024 * 1024, 10)
    # As if the directory had lied: only the bytes counted while writing stop it.
    monkeypatch.setattr(archives, "check_archive", lambda data, max_bytes, max_entries: None)
    with pytest.raises(ArchiveRefused, match="more than max_unpacked_code_bytes"):
        extract_archive(code, tmp_path / "x", 4 * 1024 * 1024, 10)
    assert not (tmp_path / "x").exists()
    monkeypatch.undo()
    with pytest.raises(ArchiveRefused, match="entries"):
        extract_archive(code, tmp_path / "y", 64 * 1024 * 1024, 1)
    extract_archive(_zip({"../../evil": b"x", "ok/f": b"y"}), tmp_path / "z", 1024, 10)
    assert (tmp_path / "z" / "evil").read_bytes() == b"x" and not (tmp_path.parent / "evil").exists()


def test_binary_code_that_is_not_base64_is_refused(lw):
    response = lw.session.put(
        f"{lw.base}/actions/notb64",
        json={"exec": {"kind": "python:3", "code": "def main(a): return {}", "binary": True}},
        timeout=10,
    )
    assert response.status_code == 400, response.text
    assert (
        response.json()["error"]
        == "The request content was malformed:\nexec.code is not valid base64 (exec.binary is true)"
    )


def test_the_data_directory_store_and_log_are_private(tmp_path):
    data_dir = tmp_path / "lw"
    data_dir.mkdir(mode=0o755)
    with start_embedded(data_dir=data_dir) as handle:
        Lw(handle).put("p", NOOP_PY)
        assert stat.S_IMODE(data_dir.stat().st_mode) == 0o700
        for name in ("localwhisk.sqlite", "localwhisk.sqlite-wal", "localwhisk.log"):
            if (data_dir / name).exists() or name != "localwhisk.sqlite-wal":
                assert stat.S_IMODE((data_dir / name).stat().st_mode) == 0o600, name


# Starts up to 200 processes and a double-forked daemon (which leaves the sandbox's process group
# and session); returns how many started and the daemon's pid.
FORKER_PY = """import os, subprocess, time
def main(a):
    started = 0
    children = []
    for _ in range(200):
        try:
            children.append(subprocess.Popen(["sleep", "30"]))
            started += 1
        except OSError:
            break
    for child in children:
        child.kill()
        child.wait()
    read_fd, write_fd = os.pipe()
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            os.write(write_fd, str(os.getpid()).encode())
            time.sleep(300)
        os._exit(0)
    daemon = int(os.read(read_fd, 32))
    return {"started": started, "daemon": daemon}
"""
OTHER_PYTHON = "/usr/bin/python3"  # readable by a sandbox's own user, unlike a python under /root


@pytest.mark.skipif(os.geteuid() != 0 or not os.path.exists(OTHER_PYTHON), reason="needs root and /usr/bin/python3")
@pytest.mark.parametrize("isolation", ["rlimit", "auto"])
def test_sandboxes_have_a_process_limit_and_nothing_they_start_outlives_stop(tmp_path, isolation):
    with start_embedded(
        data_dir=tmp_path / "lw", isolation=isolation, python=OTHER_PYTHON, max_sandbox_processes=40
    ) as handle:
        lw = Lw(handle)
        lw.put("forker", FORKER_PY, timeout=120000)
        result = lw.invoke("forker").json()["response"]["result"]
        lw.session.close()
        lw.client.close()
        assert 0 < result["started"] < 40, result
        assert process_alive(result["daemon"])
    deadline = time.monotonic() + 5
    while process_alive(result["daemon"]) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not process_alive(result["daemon"]), "a daemon an action started outlived the server's stop"


@pytest.mark.skipif(os.geteuid() != 0 or not os.path.exists(OTHER_PYTHON), reason="needs root and /usr/bin/python3")
def test_a_daemon_outlives_no_stop_even_without_a_user_of_its_own(tmp_path):
    """A server that is not root (no user per sandbox) in a process of its own, as ``serve``:
    it adopts what an action left (a child subreaper) and kills it at stop."""
    data_dir = Path(tempfile.mkdtemp(prefix="lw-nobody-"))
    os.chown(data_dir, NOBODY, NOBODY)

    def body(session: requests.Session, base: str) -> dict:
        code = FORKER_PY.replace("range(200)", "range(2)")
        put = session.put(f"{base}/actions/forker", json={"exec": {"kind": "python:3", "code": code}}, timeout=30)
        assert put.status_code == 200, put.text
        done = session.post(f"{base}/actions/forker", params={"blocking": "true"}, json={}, timeout=60)
        result = done.json()["response"]["result"]
        return {"daemon": result["daemon"], "alive": process_alive(result["daemon"])}

    try:
        out = _as_nobody_in_process(
            data_dir / "lw", {"isolation": "rlimit", "python": OTHER_PYTHON}, body, owns_process=True
        )
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)
    assert "child_error" not in out and out["alive"], out
    deadline = time.monotonic() + 5
    while process_alive(out["daemon"]) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not process_alive(out["daemon"])
    assert any("run as the server's own user (it is not root)" in line for line in out["warnings"]), out


SNOOP_PY = """import os
def main(a):
    out = {"uid": os.getuid(), "pid": os.getpid()}
    if a.get("write"):
        with open("/tmp/secret", "w") as handle:
            handle.write("mine")
    paths = ["/etc/shadow", "/proc/%d/environ" % os.getppid()]
    if a.get("peer"):
        paths.append("/proc/%d/root/tmp/secret" % a["peer"])
    for path in paths:
        try:
            with open(path, "rb") as handle:
                handle.read(1)
            out[path] = "read"
        except OSError as error:
            out[path] = type(error).__name__
    return out
"""


@pytest.mark.skipif(os.geteuid() != 0 or not os.path.exists(OTHER_PYTHON), reason="needs root and /usr/bin/python3")
def test_process_sandboxes_cannot_read_each_other_the_server_environment_or_shadow(tmp_path):
    with start_embedded(data_dir=tmp_path / "lw", python=OTHER_PYTHON) as handle:
        lw = Lw(handle)
        lw.put("owner", SNOOP_PY)
        lw.put("snoop", SNOOP_PY)
        owner = lw.invoke("owner", {"write": True}).json()["response"]["result"]
        snoop = lw.invoke("snoop", {"peer": owner["pid"]}).json()["response"]["result"]
        lw.session.close()
        lw.client.close()
    assert owner["uid"] != 0 and snoop["uid"] != 0 and owner["uid"] != snoop["uid"]
    denied = {key: value for key, value in snoop.items() if key.startswith("/")}
    assert set(denied.values()) == {"PermissionError"}, denied


def test_a_data_directory_gets_a_key_of_its_own_and_the_guest_key_is_refused(tmp_path):
    data_dir = tmp_path / "lw"
    with start_embedded(data_dir=data_dir) as handle:
        assert handle.auth != GUEST_AUTH and ":" in handle.auth
        guest = requests.get(
            handle.apihost + "/api/v1/namespaces/_/actions", auth=tuple(GUEST_AUTH.split(":", 1)), timeout=5
        )
        assert guest.status_code == 401
        own = requests.get(
            handle.apihost + "/api/v1/namespaces/_/actions", auth=tuple(handle.auth.split(":", 1)), timeout=5
        )
        assert own.status_code == 200
        first = handle.auth
    key_file = data_dir / "auth.key"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    with start_embedded(data_dir=data_dir) as handle:
        assert handle.auth == first  # the same data directory keeps its key
    with start_embedded(data_dir=tmp_path / "other") as handle:
        assert handle.auth != first


def test_docker_isolation_refuses_the_guest_key(tmp_path):
    with pytest.raises(NotReadyError, match="does not accept OpenWhisk's public guest key"):
        with start_embedded(data_dir=tmp_path / "lw", isolation="docker", auth=GUEST_AUTH):
            pass


def test_an_archive_over_the_cap_is_refused_at_cold_start_too(tmp_path):
    """An action stored under a larger cap (or before there was one) is not unpacked either."""
    code = _zip({"__main__.py": b"def main(a):\n    return {}\n", "zeros.bin": bytes(12 * 1024 * 1024)})
    data_dir = tmp_path / "lw"
    with start_embedded(data_dir=data_dir, max_unpacked_code_bytes=64 * 1024 * 1024) as handle:
        lw = Lw(handle)
        response = lw.session.put(
            f"{lw.base}/actions/big", json={"exec": {"kind": "python:3", "code": code}}, timeout=30
        )
        assert response.status_code == 200, response.text
        lw.session.close()
        lw.client.close()
    with start_embedded(data_dir=data_dir, max_unpacked_code_bytes=8 * 1024 * 1024) as handle:
        lw = Lw(handle)
        record = lw.invoke("big").json()
        lw.session.close()
        lw.client.close()
    assert record["response"]["status"] == "action developer error"
    assert "max_unpacked_code_bytes 8388608" in record["response"]["result"]["error"]
    assert not list((data_dir / "sandboxes").glob("*/action/zeros.bin"))


# A bounded fork loop: processes it starts until the first refusal (at most 200), then a pid.
FORK_LOOP_PY = """import subprocess
def main(a):
    children = []
    refused = ""
    for _ in range(200):
        try:
            children.append(subprocess.Popen(["sleep", "30"]))
        except OSError as error:
            refused = type(error).__name__
            break
    for child in children:
        child.kill()
        child.wait()
    return {"started": len(children), "refused": refused}
"""
NOBODY = 65534


def _as_nobody_in_process(data_dir: Path, settings: dict, body, owns_process: bool = False) -> dict:
    """Run ``body(session, base)`` against a localwhisk served in a forked child that runs as
    nobody (a server that is not root: no user per sandbox, its sandboxes nobody's too); returns
    what ``body`` returned, and the warnings logged as ``warnings``. ``owns_process``: the child is the server's alone, as under ``serve``."""
    read_fd, write_fd = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child's outcome travels through the pipe
        out: dict = {}
        try:
            os.close(read_fd)
            # This interpreter's modules may lie under /root, closed to nobody: they are reached
            # in a mount namespace of the child's own, as a sandbox's launcher reaches them.
            libc = ctypes.CDLL(None, use_errno=True)
            assert libc.unshare(launcher.CLONE_NEWNS) == 0
            assert libc.mount(b"none", b"/", None, launcher.MS_REC | launcher.MS_PRIVATE, None) == 0
            folders = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix)}
            held = [(folder, os.open(folder, os.O_PATH)) for folder in sorted(folders)]
            assert launcher.reach_interpreter(held, NOBODY) is None
            os.setgroups([])
            os.setresgid(NOBODY, NOBODY, NOBODY)
            os.setresuid(NOBODY, NOBODY, NOBODY)

            async def main() -> dict:
                served = _served(Settings(data_dir=str(data_dir), port=0, **settings), owns_process)
                async with served as (instance, port):
                    base = f"http://127.0.0.1:{port}/api/v1/namespaces/_"

                    def call() -> dict:
                        with requests.Session() as session:
                            session.auth = tuple(instance.settings.auth.split(":", 1))
                            return body(session, base)

                    return await asyncio.get_running_loop().run_in_executor(None, call)

            warnings: list[str] = []
            handler = logging.Handler(logging.WARNING)
            handler.emit = lambda record: warnings.append(record.getMessage())  # type: ignore[method-assign]
            logging.getLogger().addHandler(handler)
            out = asyncio.run(main())
            out["warnings"] = warnings
        except BaseException as error:
            out = {"child_error": repr(error)}
        os.write(write_fd, json.dumps(out).encode())
        os._exit(0)
    os.close(write_fd)
    chunks = []
    while chunk := os.read(read_fd, 65536):
        chunks.append(chunk)
    os.close(read_fd)
    os.waitpid(child, 0)
    return json.loads(b"".join(chunks) or b'{"child_error": "no answer"}')


@pytest.mark.skipif(os.geteuid() != 0 or not os.path.exists(OTHER_PYTHON), reason="needs root and /usr/bin/python3")
def test_a_fork_loop_ends_at_a_process_limit_without_a_user_per_sandbox(tmp_path):
    """Issue 44 item 6, isolation rlimit and a server that is not root: RLIMIT_NPROC counts per
    user, so the sandbox gets a limit shared with the server's user; the loop fails inside the
    sandbox, and the server keeps answering."""
    data_dir = Path(tempfile.mkdtemp(prefix="lw-nobody-"))  # nobody cannot pass /tmp/pytest-of-root
    os.chown(data_dir, NOBODY, NOBODY)

    def body(session: requests.Session, base: str) -> dict:
        for name, code in (("forks", FORK_LOOP_PY), ("noop", NOOP_PY)):
            put = session.put(f"{base}/actions/{name}", json={"exec": {"kind": "python:3", "code": code}}, timeout=30)
            assert put.status_code == 200, put.text
        forks = session.post(f"{base}/actions/forks", params={"blocking": "true"}, json={}, timeout=60)
        noop = session.post(f"{base}/actions/noop", params={"blocking": "true"}, json={"a": 1}, timeout=60)
        return {"forks": forks.json(), "noop": noop.status_code, "noop_result": noop.json()["response"]["result"]}

    try:
        out = _as_nobody_in_process(
            data_dir / "lw", {"isolation": "rlimit", "python": OTHER_PYTHON, "max_sandbox_processes": 40}, body
        )
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)
    assert "child_error" not in out, out
    result = out["forks"]["response"]["result"]
    assert result.get("refused") == "BlockingIOError" and 0 < result["started"] <= 40, out
    assert out["noop"] == 200 and out["noop_result"] == {"ok": True, "a": 1}


# The snoop above, in a module that imports the venv's own package and a stdlib extension module.
VENV_SNOOP_PY = "import decimal, venvmod\n" + SNOOP_PY.replace(
    '"pid": os.getpid()}', '"pid": os.getpid(), "venvmod": venvmod.WHERE, "seventh": str(decimal.Decimal(1) / 7)[:5]}'
)


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0 or not os.path.exists(OTHER_PYTHON), reason="needs root and /usr/bin/python3")
def test_a_venv_under_a_folder_closed_to_others_still_gets_a_user_per_sandbox(tmp_path):
    """Issue 44 item 9: a checkout under /root (0700) whose venv runs the actions. The sandbox
    reaches the venv and its base interpreter through its mount namespace and runs as its own
    user, not as root; the venv's packages and the stdlib's extension modules import."""
    closed = tmp_path / "root"
    closed.mkdir(mode=0o700)
    venv = closed / "checkout" / ".venv"
    # --copies: the interpreter itself lies under the closed folder, as a pyenv or uv python does.
    subprocess.run([OTHER_PYTHON, "-m", "venv", "--copies", "--without-pip", str(venv)], check=True, timeout=60)
    next((venv / "lib").glob("python3*/site-packages")).joinpath("venvmod.py").write_text("WHERE = 'venv'\n")
    with start_embedded(data_dir=tmp_path / "lw", python=str(venv / "bin" / "python")) as handle:
        lw = Lw(handle)
        lw.put("snoop", VENV_SNOOP_PY)
        response = lw.invoke("snoop").json()["response"]
        lw.session.close()
        lw.client.close()
    assert response["status"] == "success", response
    result = response["result"]
    assert result["uid"] >= sandbox_users.UID_BASE and result["venvmod"] == "venv" and result["seventh"] == "0.142"
    assert {value for key, value in result.items() if key.startswith("/")} == {"PermissionError"}, result
    log = (tmp_path / "lw" / "localwhisk.log").read_text()
    assert "server's user" not in log and "cannot start" not in log


def test_python_sandboxes_refuse_to_start_where_their_interpreter_cannot_be_reached(tmp_path, monkeypatch):
    """Where the host refuses a mount namespace, a closed interpreter cannot be reached by a
    sandbox user: localwhisk does not fall back to root but says why in one line."""
    closed = tmp_path / "root"
    closed.mkdir(mode=0o700)
    python = closed / "python3"
    python.write_text("")
    python.chmod(0o755)
    monkeypatch.setattr(sandbox_users, "mount_namespace_allowed", lambda: False)
    why = sandbox_users.python_refused(str(python))
    assert why is not None and "\n" not in why
    assert f"lies under {sandbox_users.closed_to_others(str(python))}, which other users cannot reach" in why
    assert "never runs an action as root" in why and "--python" in why
    assert sandbox_users.python_refused(OTHER_PYTHON) is None
    monkeypatch.setattr(sandbox_users, "mount_namespace_allowed", lambda: True)
    assert sandbox_users.python_refused(str(python)) is None


def test_doctor_says_in_one_line_whom_process_sandboxes_run_as(tmp_path, monkeypatch):
    (not_root,) = cmd_doctor.check_sandboxes(None, is_root=False)
    assert not_root.state == cmd_doctor.WARN and "run as the server's own user" in not_root.text
    assert cmd_doctor.check_sandboxes({"platform": {"localwhisk": {"isolation": "docker"}}}, is_root=True) == []
    closed = tmp_path / "root"
    closed.mkdir(mode=0o700)
    (closed / "python3").write_text("")
    workload = {"platform": {"localwhisk": {"python": str(closed / "python3")}}}
    (ok,) = cmd_doctor.check_sandboxes(workload, is_root=True)
    assert ok.state == cmd_doctor.OK and "users of their own" in ok.text
    monkeypatch.setattr(sandbox_users, "mount_namespace_allowed", lambda: False)
    (refused,) = cmd_doctor.check_sandboxes(workload, is_root=True)
    assert refused.state == cmd_doctor.WARN and "python sandboxes cannot start" in refused.text
    assert "\n" not in refused.line()


# OpenWhisk 2.0.0's answers, item by item of the issue (apache/openwhisk at 2.0.0: the controller's
# Actions.scala doInvoke and make, Entities.scala validateSize, WebActions.scala; the messages in
# common/.../http/ErrorResponse.scala, the record's in ActivationResult.scala), each as a request,
# the status OpenWhisk answers and the start of its "error" text (or of the record's result's).
OW_ANSWERS_PY = """import time
def main(a):
    if a.get("sleep"):
        time.sleep(a["sleep"])
    if a.get("big"):
        return {"s": "x" * a["big"]}
    if a.get("fail"):
        raise ValueError("boom")
    if "web_error" in a:
        return {"error": a["web_error"]}
    return a.get("resp", {"ok": True})
"""
RESULT_LIMIT = 1048576  # OpenWhisk's and localwhisk's default limit on a result (max_payload_bytes)


def _ow_put(lw: Lw, name: str, body: object) -> requests.Response:
    return lw.session.put(f"{lw.base}/actions/{name}", json=body, timeout=60)


def _ow_invoke(lw: Lw, params: dict, result: bool = False) -> requests.Response:
    query = {"blocking": "true", "result": "true" if result else "false"}
    return lw.session.post(f"{lw.base}/actions/ow_answers", params=query, json=params, timeout=60)


def _ow_web(lw: Lw, ext: str, params: dict) -> requests.Response:
    return requests.post(f"{lw.handle.apihost}/api/v1/web/guest/default/ow_web{ext}", json=params, timeout=60)


OW_CASES = {
    # Action too large (Entities.validateSize: 413 entityTooBig(SizeError("exec", ...))) is pinned by
    # test_localwhisk_api.py's test_action_code_over_48_mb_is_refused, which sends the 48 MiB once.
    # No code, no exec, an unknown kind: Exec's reader (a malformed body) and make's "exec undefined".
    "missing code": (
        lambda lw: _ow_put(lw, "no_code", {"exec": {"kind": "python:3"}}),
        400,
        "The request content was malformed:\n'code' must be a string or attachment object defined in 'exec' "
        "for 'python:3' actions",
    ),
    "missing exec": (lambda lw: _ow_put(lw, "no_exec", {}), 400, "exec undefined"),
    "unknown kind": (
        lambda lw: _ow_put(lw, "no_kind", {"exec": {"kind": "cobol:1", "code": "x"}}),
        400,
        "The request content was malformed:\nThe specified runtime 'cobol:1' is not supported by this platform. "
        "Valid values are: '",
    ),
    # Bad JSON in a request: akka-http's rejection, 400.
    "bad JSON": (
        lambda lw: lw.session.post(
            f"{lw.base}/actions/ow_answers",
            data=b'{"a": ',
            headers={"Content-Type": "application/json"},
            params={"blocking": "true"},
            timeout=30,
        ),
        400,
        "The request content was malformed:\n",
    ),
    # A blocking invoke: 502 for an application or developer error, with the record.
    "action error": (lambda lw: _ow_invoke(lw, {"fail": 1}), 502, "result:boom"),
    "action error, result only": (lambda lw: _ow_invoke(lw, {"fail": 1}, result=True), 502, "boom"),
    "timeout": (
        lambda lw: _ow_invoke(lw, {"sleep": 1.0}),
        502,
        "result:The action exceeded its time limits of 300 milliseconds.",
    ),
    "result too large": (
        lambda lw: _ow_invoke(lw, {"big": RESULT_LIMIT}),
        502,
        f"result:The action produced a response that exceeded the allowed length: {RESULT_LIMIT + 8} > "
        f'{RESULT_LIMIT} bytes. The truncated response was: {{"s":"xxx',
    ),
    # Web actions: an application error's "error" is the response; a developer error is 400.
    "web action error": (lambda lw: _ow_web(lw, ".http", {"fail": 1}), 400, "Response is not valid 'message/http'."),
    "web error as response": (
        lambda lw: _ow_web(lw, ".http", {"web_error": {"statusCode": 409, "body": "taken"}}),
        409,
        "",
    ),
    "web timeout": (
        lambda lw: _ow_web(lw, ".json", {"sleep": 1.0}),
        400,
        "There was an error processing your request.",
    ),
    "web json array": (lambda lw: _ow_web(lw, ".json", {"resp": ["ok"]}), 200, ""),
    "web json not an object": (
        lambda lw: _ow_web(lw, ".json", {"web_error": "nope"}),
        400,
        "Response is not valid 'application/json'.",
    ),
    "web text without the property": (
        lambda lw: _ow_web(lw, ".text", {"resp": {"other": 1}}),
        404,
        "Response does not include requested property.",
    ),
    "web html not a string": (
        lambda lw: _ow_web(lw, ".html", {"resp": {"html": 5}}),
        400,
        "Response is not valid 'text/html'.",
    ),
    "web malformed status": (
        lambda lw: _ow_web(lw, ".http", {"resp": {"statusCode": "abc", "body": "x"}}),
        400,
        "Response is not valid 'message/http'.",
    ),
    "web JSON body of another type": (
        lambda lw: _ow_web(lw, ".http", {"resp": {"headers": {"Content-Type": "text/plain"}, "body": {"a": 1}}}),
        400,
        "Response type in header did not match generated content type.",
    ),
}


@pytest.fixture(scope="module")
def ow_answers(lw):
    for name, marks in (("ow_answers", []), ("ow_web", [{"key": "web-export", "value": True}])):
        lw.put(name, OW_ANSWERS_PY, timeout=300, annotations=marks)
    return lw


@pytest.mark.parametrize("case", OW_CASES)
def test_localwhisk_answers_what_openwhisk_answers(ow_answers, case):
    send, status, error = OW_CASES[case]
    response = send(ow_answers)
    assert response.status_code == status, response.text[:300]
    if not error:
        return
    body = response.json()
    if error.startswith("result:"):  # the record's result: a blocking invoke answers the record
        assert body["response"]["result"]["error"].startswith(error[len("result:") :]), str(body)[:300]
    elif isinstance(body, dict) and "code" in body:
        assert body["error"].startswith(error), body
    else:
        assert body == {"error": error}, body


def test_a_sandbox_spawn_refused_by_a_lingering_process_group_of_its_pid_is_tried_again(monkeypatch, tmp_path):
    """The launcher's setsid fails with EPERM when a process group numbered as its new pid lingers
    (its leader gone, members left; pids wrap at 32768 during the suite): seen once as a sandbox
    that 'failed to start: [Errno 1] Operation not permitted'. The spawn is tried again; only a
    refusal every time is an error."""
    real_spawn = os.posix_spawn
    calls = []

    def refused_once(path, argv, env, **kwargs):
        calls.append(argv)
        if len(calls) == 1:
            raise PermissionError(1, "Operation not permitted")
        return real_spawn(path, argv, env, **kwargs)

    monkeypatch.setattr(procfs.os, "posix_spawn", refused_once)
    pid = procfs.spawn_session_leader(["/bin/true"], {}, [])
    assert len(calls) == 2 and os.waitpid(pid, 0)[0] == pid

    def refused(path, argv, env, **kwargs):
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(procfs.os, "posix_spawn", refused)
    with pytest.raises(PermissionError):
        procfs.spawn_session_leader(["/bin/true"], {}, [])
