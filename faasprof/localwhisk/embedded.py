"""Start localwhisk as a child process and get a handle (interface 2 of the team brief).

``start_embedded`` runs ``python -m faasprof.localwhisk serve --port-file F ...`` in its own session,
waits until ``GET /`` answers and returns a :class:`LocalwhiskHandle` with the API host, the auth
key, the namespace and the settings that belong in a run manifest (read back from ``GET /`` so
they are what the server actually uses: isolation mode, cgroup parents, ...). ``stop()`` sends
SIGTERM (the server then records unfinished activations, flushes the store and removes its
sandboxes and cgroups), waits, and kills only if it must.

Usage::

    with start_embedded(user_memory_mb=4096, pause_grace_ms=50) as lw:
        client = OpenWhiskClient(Connection(lw.apihost, lw.auth, lw.namespace, source="embedded"))
"""

from __future__ import annotations

import base64
import ctypes
import ctypes.util
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from dataclasses import fields
from pathlib import Path

from faasprof.docker import LABEL_OWNER_PID, remove_labelled_containers
from faasprof.errors import ConfigError, NotReadyError
from faasprof.localwhisk.config import (
    GUEST_AUTH,
    GUEST_NAMESPACE,
    SETTING_NAMES,
    Settings,
    server_env,
    settings_argv,
    validate_settings,
)
from faasprof.localwhisk.keys import data_dir_key
from faasprof.localwhisk.private import private_dir
from faasprof.localwhisk.sandbox import SANDBOXES_DIR
from faasprof.localwhisk.sandbox_users import reap_orphans

# Below this many free bytes a disk counts as full: the server cannot write its store or its log.
FULL_DISK_BYTES = 1024 * 1024
START_TIMEOUT_S = 30.0
IN_FLIGHT_PATH = "/localwhisk/v1/activations"  # localwhisk's own: activations accepted, not yet recorded
PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def _load_prctl():
    """libc's ``prctl``, looked up once in the parent: the child between fork and exec must not load libraries."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        return libc.prctl
    except (OSError, AttributeError):
        return None


_PRCTL = _load_prctl()


def _die_with(parent_pid: int):
    """A ``preexec_fn`` that makes the child get SIGTERM when its parent dies (even by kill -9).

    The kernel sends it when the *thread* that forked the child exits, so this is only used from
    the main thread; the server's own parent-pid watchdog (``--parent-pid``, polled every second)
    covers every case. SIGTERM lets the server stop in order: unfreeze and remove its sandboxes,
    record unfinished activations, flush its store.
    """
    prctl = _PRCTL

    def preexec() -> None:
        if prctl is not None:
            prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
        if os.getppid() != parent_pid:  # the parent died before prctl took effect
            os.kill(os.getpid(), signal.SIGTERM)

    return preexec


class LocalwhiskHandle:
    """A running localwhisk child process. ``stop()`` is safe to call twice."""

    def __init__(
        self,
        process: subprocess.Popen,
        apihost: str,
        auth: str,
        namespace: str,
        settings: dict,
        data_dir: Path,
        owns_data_dir: bool,
        log_path: Path,
    ):
        self.process = process
        self.apihost = apihost
        self.auth = auth
        self.namespace = namespace
        self.settings = settings
        self.data_dir = data_dir
        self.log_path = log_path
        self._owns_data_dir = owns_data_dir
        self._stopped = False
        self.reaped = 0  # sandboxes a dead server left behind, killed by stop()

    @property
    def pid(self) -> int:
        return self.process.pid

    def alive(self) -> bool:
        return self.process.poll() is None

    def in_flight(self, timeout_s: float = 5.0) -> dict:
        """``GET /localwhisk/v1/activations``: the activations accepted and not yet recorded
        (``inFlight``, ``queued``, ``running``). Raises OSError when the server does not answer."""
        request = urllib.request.Request(self.apihost + IN_FLIGHT_PATH, headers={"Authorization": _basic(self.auth)})
        try:
            with urllib.request.urlopen(request, timeout=timeout_s) as response:
                return json.loads(response.read())
        except ValueError as error:  # an answer that is not JSON: as unusable as none
            raise OSError(f"GET {IN_FLIGHT_PATH}: {error}") from None

    def stop(self, timeout_s: float = 10) -> int | None:
        """SIGTERM, wait up to ``timeout_s``, then SIGKILL. Returns the exit status."""
        if self._stopped:
            return self.process.returncode
        self._stopped = True
        if self.process.poll() is None:
            try:
                self.process.send_signal(signal.SIGTERM)
                self.process.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)
        # A server that was killed (or had to be) could not stop its sandboxes: do it for it,
        # its containers too (else they would wait for the next localwhisk on this host to reap them).
        # One that stopped cleanly may still leave a container whose removal Docker had not finished
        # within its 5 s on a loaded host: asking Docker costs one call, so it is always asked.
        self.reaped = len(reap_orphans(self.data_dir / SANDBOXES_DIR))
        self.reaped += len(remove_labelled_containers(LABEL_OWNER_PID, str(self.process.pid)))
        if self._owns_data_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)
        return self.process.returncode

    def __enter__(self) -> "LocalwhiskHandle":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"LocalwhiskHandle(apihost={self.apihost!r}, pid={self.process.pid})"


def start_embedded(
    data_dir: Path | None = None,
    port: int = 0,
    user_memory_mb: int = 4096,
    pause_grace_ms: int = 50,
    log_dir: Path | None = None,
    **settings,
) -> LocalwhiskHandle:
    """Start localwhisk on 127.0.0.1 and return once ``GET /`` answers.

    ``data_dir`` None uses a fresh temporary directory, removed by ``stop()`` (save the records
    first). ``log_dir`` receives ``localwhisk.log`` (server log and stderr); default the data dir.
    Other keyword arguments are settings of :class:`faasprof.localwhisk.config.Settings` (e.g.
    ``idle_timeout_s``, ``prewarm``, ``isolation``, ``cpu_policy``, ``invokes_per_minute``).
    Raises ConfigError for an unknown setting, NotReadyError (one line) if it does not come up.
    """
    given = {"port": port, "user_memory_mb": user_memory_mb, "pause_grace_ms": pause_grace_ms, **settings}
    unknown = sorted(set(given) - SETTING_NAMES)
    if unknown:
        raise ConfigError(
            f"localwhisk settings: unknown setting(s) {', '.join(unknown)}; known: {', '.join(sorted(SETTING_NAMES))}"
        )
    given = {k: v for k, v in given.items() if v is not None}
    problems = []
    for f in fields(Settings):
        if f.name not in given:
            continue
        value, kind = given[f.name], f.type if isinstance(f.type, str) else f.type.__name__
        if kind == "int" and isinstance(value, float) and value.is_integer():
            given[f.name] = int(value)
        elif kind == "int" and (not isinstance(value, int) or isinstance(value, bool)):
            problems.append(f"{f.name}: must be an integer (got {value!r})")
        elif kind == "float" and (not isinstance(value, (int, float)) or isinstance(value, bool)):
            problems.append(f"{f.name}: must be a number (got {value!r})")
        elif kind == "str":
            given[f.name] = str(value)
    settings = {k: v for k, v in given.items() if k not in ("port", "user_memory_mb", "pause_grace_ms")}
    port, user_memory_mb, pause_grace_ms = (
        given.get("port", 0),
        given.get("user_memory_mb", 4096),
        given.get("pause_grace_ms", 50),
    )
    if not problems:
        problems = validate_settings(Settings(**given))
    if problems:
        raise ConfigError(
            f"localwhisk settings: {problems[0]}", problems=[f"localwhisk settings: {p}" for p in problems]
        )
    owns = data_dir is None
    if data_dir is None:
        data_dir = Path(tempfile.mkdtemp(prefix="localwhisk-"))
    else:
        data_dir = Path(data_dir).expanduser().resolve()
    private_dir(data_dir)
    # Resolved like data_dir: the server runs in data_dir, where a relative log path would point elsewhere.
    log_dir = Path(log_dir).expanduser().resolve() if log_dir else data_dir
    log_dir.mkdir(parents=True, exist_ok=True)
    log_path = log_dir / "localwhisk.log"
    all_settings = {
        "port": port,
        "user_memory_mb": user_memory_mb,
        "pause_grace_ms": pause_grace_ms,
        "data_dir": str(data_dir),
        "log_file": str(log_path),
        **settings,
    }
    try:
        argv = settings_argv(all_settings)
    except ValueError as error:
        raise ConfigError(f"localwhisk settings: {error}") from None
    auth = settings.get("auth") or data_dir_key(data_dir)  # never the public guest key unless asked
    namespace = settings.get("namespace") or GUEST_NAMESPACE
    try:
        process, state, info = launch_server(argv, data_dir, log_path, parent_pid=os.getpid(), auth=auth)
    except BaseException:
        if owns:
            shutil.rmtree(data_dir, ignore_errors=True)
        raise
    described = dict(info.get("localwhisk") or {})
    described["limits"] = info.get("limits")
    return LocalwhiskHandle(process, state["apihost"], auth, namespace, described, data_dir, owns, log_path)


def launch_server(
    argv: list[str], data_dir: Path, log_path: Path, parent_pid: int | None = None, auth: str = GUEST_AUTH
) -> tuple[subprocess.Popen, dict, dict]:
    """Start ``python -m faasprof.localwhisk serve ARGV`` in its own session and wait until ``GET /`` answers.

    Returns the process, the state it wrote to its port file (apihost, port, pid) and ``GET /``.
    With ``parent_pid`` the server exits when that process does (the embedded case): at once
    through PR_SET_PDEATHSIG when started from the main thread, else within a second through its
    watchdog. On failure
    the process is killed and NotReadyError says why in one line.
    """
    port_file = data_dir / f"port-{os.getpid()}-{time.monotonic_ns()}.json"
    command = [sys.executable, "-m", "faasprof.localwhisk", "serve", *argv, "--port-file", str(port_file)]
    if parent_pid is not None:
        command += ["--parent-pid", str(parent_pid)]
    env = dict(os.environ)
    env.update(server_env({"auth": auth}))  # the key by environment: a command line is public (ps)
    preexec = (
        _die_with(parent_pid)
        if parent_pid is not None and threading.current_thread() is threading.main_thread()
        else None
    )
    with open(log_path, "ab") as log_handle:
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=log_handle,
            stderr=log_handle,
            start_new_session=True,
            env=env,
            cwd=str(data_dir),
            preexec_fn=preexec,
        )
    deadline = time.monotonic() + START_TIMEOUT_S
    try:
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise NotReadyError(
                    f"localwhisk exited with status {process.returncode} while starting: {_last_line(log_path)}{_disk_note(data_dir)} (log: {log_path})"
                )
            if port_file.exists():
                try:
                    state = json.loads(port_file.read_text())
                    return process, state, _get_info(state["apihost"], auth)
                except (ValueError, KeyError, OSError):
                    pass
            time.sleep(0.02)
        raise NotReadyError(f"localwhisk did not answer GET / within {START_TIMEOUT_S:g} s (log: {log_path})")
    except BaseException:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=5)
        raise
    finally:
        try:
            port_file.unlink()
        except OSError:
            pass


def _disk_note(folder: Path) -> str:
    """Why a server that wrote nothing may have died: its folder's disk is full."""
    try:
        free = shutil.disk_usage(folder).free
    except OSError:
        return ""
    return (
        f"; the disk holding {folder} is full ({free // 1024} KiB free): free space or choose another --out"
        if free < FULL_DISK_BYTES
        else ""
    )


def _basic(auth: str) -> str:
    return "Basic " + base64.b64encode(auth.encode()).decode()


def _get_info(apihost: str, auth: str) -> dict:
    request = urllib.request.Request(apihost + "/", headers={"Authorization": _basic(auth)})
    with urllib.request.urlopen(request, timeout=5) as response:
        return json.loads(response.read())


def _last_line(path: Path) -> str:
    try:
        lines = [line for line in path.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return "no log"
    if not lines:
        return "no output"
    line = lines[-1]
    # Both ends kept: errors name the cause first and the fix last (a long path must not cut the fix).
    return line if len(line) <= LAST_LINE_CHARS else f"{line[: LAST_LINE_CHARS // 2]} … {line[-LAST_LINE_CHARS // 2 :]}"


LAST_LINE_CHARS = 400
