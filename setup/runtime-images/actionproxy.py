"""faasprof's action proxy: the HTTP side of OpenWhisk's action-container protocol, inside a container.

It is the entry point (PID 1) of faasprof's runtime images and knows nothing of faasprof itself
(only the Python standard library, so it starts in a few tens of milliseconds):

- listens on 0.0.0.0:8080 (HTTP/1.1, keep-alive, requests with a Content-Length);
- at start it spawns the language launcher (``$FAASPROF_LAUNCHER``: localwhisk's launcher.py or
  launcher.js, copied into the image) with a stdin pipe and a reply pipe on fd 3, the same pipe
  protocol localwhisk's process sandboxes use, so both isolations run an action the same way;
- ``POST /init`` ``{"value": {"code", "main", "binary", "env", "name", ...}}``: a binary action is a
  base64 zip, unpacked into /action (Python: ``__main__.py``, optional ``virtualenv/``; Node.js:
  ``package.json``/``index.js``); the launcher loads it once. 200 ``{"ok": true}``; an init failure
  is 502 ``{"error": ...}``; a second /init is 403;
- ``POST /run`` ``{"value": ..., "namespace", "action_name", "activation_id", "deadline",
  "api_key", ...}``: the launcher exports every key but ``value`` as ``__OW_<KEY>``, calls the
  action and prints ``XXX_THE_END_OF_A_WHISK_ACTIVATION_XXX`` on stdout and stderr; the result
  object (or array) is answered with 200, a developer error with 502 ``{"error": ...}``;
- the launcher's stdout and stderr are the container's, so ``docker logs`` shows the action's
  output. When the launcher dies (a crash, the OOM killer) the proxy exits too, without answering:
  the invoker sees the connection drop and asks Docker why (OOMKilled), as OpenWhisk's does.
"""

import base64
import io
import json
import os
import socket
import sys
import threading
import zipfile

PORT = int(os.environ.get("FAASPROF_PROXY_PORT", "8080"))
ACTION_DIR = os.environ.get("FAASPROF_ACTION_DIR", "/action")
MAX_BODY_BYTES = 64 * 1024 * 1024


class Launcher:
    """The long-lived launcher process and its two pipes; one request at a time."""

    def __init__(self, argv):
        in_r, in_w = os.pipe()
        rep_r, rep_w = os.pipe()
        env = dict(os.environ)
        env["__LW_FD"] = "3"
        # posix_spawn's dup2 file actions put the pipe ends at 0 and 3 in the child only.
        self.pid = os.posix_spawn(
            argv[0],
            argv,
            env,
            file_actions=[
                (os.POSIX_SPAWN_DUP2, in_r, 0),
                (os.POSIX_SPAWN_DUP2, rep_w, 3),
                (os.POSIX_SPAWN_CLOSE, in_w),
                (os.POSIX_SPAWN_CLOSE, rep_r),
            ],
        )
        os.close(in_r)
        os.close(rep_w)
        self.stdin = os.fdopen(in_w, "wb", buffering=0)
        self.replies = os.fdopen(rep_r, "rb")
        self.lock = threading.Lock()
        self.ready = threading.Event()
        self.initialized = False
        self.start_reply = None

    def wait_ready(self):
        """The launcher's first line ({"ok": true}) says it is up."""
        with self.lock:
            if self.start_reply is None:
                self.start_reply = self._read()
        return self.start_reply

    def call(self, message):
        with self.lock:
            self.stdin.write(json.dumps(message, separators=(",", ":")).encode("utf-8") + b"\n")
            return self._read()

    def _read(self):
        line = self.replies.readline()
        if not line:
            return None
        try:
            return json.loads(line)
        except ValueError:
            return {"developer_error": "The action did not produce a valid JSON response."}


def launcher_argv():
    path = os.environ.get("FAASPROF_LAUNCHER", "/faasprof/launcher.py")
    if path.endswith(".js"):
        return [os.environ.get("FAASPROF_NODE", "/usr/local/bin/node"), path]
    # -S -s: no site processing, no user site (the launcher adds site-packages itself).
    return [os.environ.get("FAASPROF_PYTHON", "/usr/bin/python3"), "-s", "-S", path]


def unpack(code, directory):
    data = base64.b64decode(code, validate=False)
    os.makedirs(directory, exist_ok=True)
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        archive.extractall(directory)


def handle_init(launcher, body):
    if launcher.initialized:
        return 403, {"error": "Cannot initialize the action more than once."}
    value = body.get("value") if isinstance(body, dict) else None
    if not isinstance(value, dict) or not isinstance(value.get("code"), str):
        return 403, {"error": "Missing main/no code to execute."}
    init = {"main": value.get("main") or "main", "env": value.get("env") or {}, "code": None, "dir": None}
    if value.get("binary"):
        try:
            unpack(value["code"], ACTION_DIR)
        except (ValueError, zipfile.BadZipFile, OSError) as error:
            return 502, {"error": "Invalid action archive: %s" % error}
        init["dir"] = ACTION_DIR
    else:
        init["code"] = value["code"]
    if launcher.wait_ready() is None:
        die()
    reply = launcher.call({"init": init})
    if reply is None:
        die()
    if "ok" in reply:
        launcher.initialized = True
        return 200, {"ok": True}
    return 502, {"error": reply.get("init_error") or reply.get("developer_error") or "The action failed to initialize."}


def handle_run(launcher, body):
    if not launcher.initialized:
        return 403, {"error": "The action was not initialized."}
    if not isinstance(body, dict):
        return 400, {"error": "The request body is not a JSON object."}
    body.setdefault("value", {})
    reply = launcher.call(body)
    if reply is None:
        die()
    if "result" in reply:
        return 200, reply["result"]
    return 502, {"error": reply.get("developer_error") or "The action did not return a dictionary or array."}


def die():
    # The launcher is gone: end the container without an answer (the invoker inspects its state).
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(1)


REASONS = {
    200: "OK",
    400: "Bad Request",
    403: "Forbidden",
    404: "Not Found",
    411: "Length Required",
    413: "Payload Too Large",
    502: "Bad Gateway",
}


def serve_connection(conn, launcher):
    reader = conn.makefile("rb")
    try:
        while True:
            request_line = reader.readline(65537)
            if not request_line:
                return
            if request_line in (b"\r\n", b"\n"):
                continue
            parts = request_line.split()
            if len(parts) != 3:
                return
            method, target, version = parts
            headers = {}
            while True:
                line = reader.readline(65537)
                if line in (b"\r\n", b"\n", b""):
                    break
                key, _, val = line.partition(b":")
                headers[key.strip().lower()] = val.strip()
            keep_alive = version == b"HTTP/1.1" and headers.get(b"connection", b"").lower() != b"close"
            length = headers.get(b"content-length")
            if headers.get(b"transfer-encoding"):
                status, payload, keep_alive = 411, {"error": "Send a Content-Length."}, False
            elif length is not None and int(length) > MAX_BODY_BYTES:
                status, payload, keep_alive = 413, {"error": "The request is too large."}, False
            else:
                raw = reader.read(int(length)) if length else b""
                status, payload = dispatch(launcher, method, target.split(b"?", 1)[0], raw)
            data = json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
            head = "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n%s\r\n" % (
                status,
                REASONS.get(status, "Error"),
                len(data),
                "" if keep_alive else "Connection: close\r\n",
            )
            conn.sendall(head.encode("ascii") + data)
            if not keep_alive:
                return
    except (OSError, ValueError):
        return
    finally:
        try:
            reader.close()
            conn.close()
        except OSError:
            pass


def dispatch(launcher, method, path, raw):
    if method != b"POST" or path not in (b"/init", b"/run"):
        return 404, {"error": "Only POST /init and POST /run are served."}
    try:
        body = json.loads(raw) if raw else {}
    except ValueError:
        return 400, {"error": "The request body is not valid JSON."}
    if path == b"/init":
        return handle_init(launcher, body)
    return handle_run(launcher, body)


def main():
    launcher = Launcher(launcher_argv())
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("0.0.0.0", PORT))
    listener.listen(128)
    threading.Thread(target=reap, args=(launcher,), daemon=True).start()
    while True:
        conn, _ = listener.accept()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        threading.Thread(target=serve_connection, args=(conn, launcher), daemon=True).start()


def reap(launcher):
    # As PID 1 the proxy must reap its child; the launcher's exit ends the container.
    os.waitpid(launcher.pid, 0)
    die()


if __name__ == "__main__":
    main()
