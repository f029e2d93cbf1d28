"""``python -m faasprof.localwhisk serve ...``: run one localwhisk instance in the foreground.

The instance locks its data directory (one instance per directory), writes
``<data-dir>/localwhisk.json`` (pid, port, apihost) once the API answers and, with
``--port-file F``, the chosen port to F (for ``--port 0``). SIGTERM or SIGINT stop it cleanly:
outstanding activations are recorded as whisk errors, records are flushed, sandboxes and their
cgroups are removed. With ``--parent-pid P`` it also stops when process P is gone, so an embedded
instance never outlives the faasprof run that started it.
"""

from __future__ import annotations

import argparse
import asyncio
import fcntl
import json
import logging
import os
import resource
import signal
import sys
import time
from pathlib import Path

try:  # uvloop: the event loop in C, several times cheaper per request than asyncio's (bench/bench_localwhisk.py)
    import uvloop

    HAVE_UVLOOP = True
except ImportError:  # pragma: no cover - a dependency everywhere but Windows
    HAVE_UVLOOP = False
from aiohttp import web

from faasprof.localwhisk.config import (
    AUTH_ENV,
    GUEST_AUTH,
    Settings,
    add_auth_file_argument,
    add_settings_arguments,
    is_loopback,
    settings_from_args,
    validate_settings,
)
from faasprof.localwhisk.docker_sandbox import DockerUnavailable
from faasprof.localwhisk.keys import data_dir_key
from faasprof.localwhisk.private import private_dir, private_file
from faasprof.localwhisk.server import Localwhisk

STATE_FILE = "localwhisk.json"
STOP_DRAIN_S = 2.0
LOCK_FILE = "localwhisk.lock"


def _write_json_atomic(path: Path, obj: dict) -> None:
    tmp = private_file(path.with_name(path.name + f".tmp{os.getpid()}"))
    tmp.write_text(json.dumps(obj, indent=2) + "\n")
    os.replace(tmp, path)


def lock_data_dir(data_dir: Path):
    """Hold an exclusive lock on the data directory (private: 0700) for the life of the process."""
    private_dir(data_dir)
    handle = open(private_file(data_dir / LOCK_FILE), "a+")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        state = {}
        try:
            state = json.loads((data_dir / STATE_FILE).read_text())
        except (OSError, ValueError):
            pass
        raise SystemExit(
            f"localwhisk: {data_dir} is in use by another localwhisk (pid {state.get('pid', '?')}, port {state.get('port', '?')}); "
            f"stop it with `faasprof local stop --data-dir {data_dir}` or choose another --data-dir"
        ) from None
    return handle


def _bound_port(site: web.TCPSite) -> int:
    """The port a started site listens on (port 0 asks the kernel for one)."""
    sockets = getattr(site._server, "sockets", None) or []
    return int(sockets[0].getsockname()[1])


async def _listen_on_bridge(runner, gateway: str, port: int) -> int | None:
    """Serve the API on the bridge gateway too (the same port when free); its port, or None."""
    for candidate in (port, 0):
        site = web.TCPSite(runner, gateway, candidate, backlog=2048, reuse_address=True)
        try:
            await site.start()
        except OSError as error:
            logging.getLogger("localwhisk").warning(
                "cannot listen on the docker bridge %s:%s: %s", gateway, candidate, error.strerror
            )
            continue
        return _bound_port(site)
    return None


async def _reach_from_containers(lw: Localwhisk, runner: web.AppRunner, host: str, port: int) -> str | None:
    """Isolation docker: serve the API at the bridge gateway too (a container's loopback is its
    own); why it cannot, or None."""
    docker_host = lw.pool.docker if lw.pool else None
    if docker_host is None:
        return None
    bridge_port: int | None = port
    if host not in ("0.0.0.0", "::"):
        bridge_port = await _listen_on_bridge(runner, docker_host.gateway, port)
    if bridge_port is None:
        return (
            f"isolation docker: cannot listen on the docker bridge {docker_host.gateway}, so containers could not "
            "reach the API; check that docker0 is up (restart dockerd) or use isolation process"
        )
    docker_host.container_apihost = f"http://{docker_host.gateway}:{bridge_port}"
    return None


async def _watch_parent(parent_pid: int, stop: asyncio.Event) -> None:
    """Stop the server once the process that started it (``--parent-pid``) is gone."""
    while not stop.is_set():
        await asyncio.sleep(1.0)
        try:
            os.kill(parent_pid, 0)
        except ProcessLookupError:
            logging.getLogger("localwhisk").info("parent %s is gone; stopping", parent_pid)
            stop.set()
        except PermissionError:
            pass


DOCKER_GUEST_KEY = (
    "isolation docker: the API listens on the Docker bridge too, which every container on this host reaches; "
    "it does not accept OpenWhisk's public guest key there: leave --auth out (the data directory's own key is used) "
    "or give another key (--auth-file F)"
)


async def serve(settings: Settings, port_file: Path | None, parent_pid: int | None) -> int:
    data_dir = Path(settings.data_dir)
    if settings.isolation == "docker" and settings.auth == GUEST_AUTH:
        # The API also listens on the Docker bridge, which every container on this host reaches.
        print(f"localwhisk: {DOCKER_GUEST_KEY}", file=sys.stderr)
        return 2
    lw = Localwhisk(settings)
    lw.owns_process = True
    try:
        await lw.open()
    except DockerUnavailable as error:
        await lw.close()
        print(f"localwhisk: {error}", file=sys.stderr)
        return 3
    # A short shutdown: by the time the listener closes, every activation has been failed and
    # recorded (lw.close), so in-flight handlers only have their answers left to write.
    runner = web.AppRunner(lw.app(), access_log=None, handle_signals=False, shutdown_timeout=STOP_DRAIN_S)
    await runner.setup()
    site = web.TCPSite(runner, settings.host, settings.port, backlog=2048, reuse_address=True)
    try:
        await site.start()
    except OSError as error:
        await lw.close()
        await runner.cleanup()
        print(
            f"localwhisk: cannot listen on {settings.host}:{settings.port}: {error.strerror}; choose another --port",
            file=sys.stderr,
        )
        return 3
    port = _bound_port(site)
    host = settings.host if settings.host not in ("0.0.0.0", "::") else "127.0.0.1"
    lw.set_apihost(f"http://{host}:{port}")
    problem = await _reach_from_containers(lw, runner, settings.host, port)
    if problem:
        await lw.close()
        await runner.cleanup()
        print(f"localwhisk: {problem}", file=sys.stderr)
        return 3
    lw.running_pool().start_prewarm()
    state = {
        "pid": os.getpid(),
        "port": port,
        "host": settings.host,
        "apihost": lw.apihost,
        "started_ms": int(time.time() * 1000),
        "data_dir": str(data_dir),
    }
    _write_json_atomic(data_dir / STATE_FILE, state)
    if port_file:
        _write_json_atomic(port_file, state)
    logging.getLogger("localwhisk").info("listening on %s (isolation %s)", lw.apihost, lw.isolation)

    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        loop.add_signal_handler(sig, stop.set)

    watcher = loop.create_task(_watch_parent(parent_pid, stop)) if parent_pid else None
    await stop.wait()
    if watcher:
        watcher.cancel()
    logging.getLogger("localwhisk").info("stopping")
    # Order matters for a client that keeps sending: first refuse (503) everything new, then fail
    # queued and running activations (recorded as whisk errors; blocking callers get them), then
    # close the listener and connections.
    await lw.close()
    await site.stop()
    await runner.cleanup()
    try:
        if json.loads((data_dir / STATE_FILE).read_text()).get("pid") == os.getpid():
            (data_dir / STATE_FILE).unlink()
    except (OSError, ValueError):
        pass
    logging.getLogger("localwhisk").info("stopped")
    return 0


def _run(coro):
    """Run the server's coroutine on uvloop when installed, else on asyncio's default loop."""
    if HAVE_UVLOOP:
        return uvloop.run(coro)
    return asyncio.run(coro)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m faasprof.localwhisk", description="localwhisk, an embedded OpenWhisk stand-in"
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("serve", help="run the server in the foreground")
    add_settings_arguments(p)
    p.add_argument("--port-file", type=Path, help="write {pid, port, apihost} JSON here once listening")
    p.add_argument("--parent-pid", type=int, help="stop when this process is gone")
    add_auth_file_argument(p)
    args = parser.parse_args(argv)
    key_given = bool(getattr(args, "auth", None) or getattr(args, "auth_file", None) or os.environ.get(AUTH_ENV))
    try:
        settings = settings_from_args(args)
    except ValueError as error:
        print(f"localwhisk: {error}", file=sys.stderr)
        return 2
    os.environ.pop(AUTH_ENV, None)  # read once; nothing started from here inherits it
    problems = validate_settings(settings)
    if problems:
        for problem in problems:
            print(f"localwhisk: {problem}", file=sys.stderr)
        return 2
    if not is_loopback(settings.host):
        print(
            f"localwhisk: WARNING: listening on {settings.host}: anyone who can reach it and holds the key can run code on this machine",
            file=sys.stderr,
        )
    data_dir = Path(settings.data_dir).expanduser().resolve()
    settings.data_dir = str(data_dir)
    lock = lock_data_dir(data_dir)
    if not key_given:  # the data directory's own key, never OpenWhisk's public guest key unless asked
        settings.auth = data_dir_key(data_dir)
    # Five descriptors per sandbox (four pipes and a pidfd) plus client sockets: lift the soft limit.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        try:
            resource.setrlimit(
                resource.RLIMIT_NOFILE, (hard if hard != resource.RLIM_INFINITY else max(soft, 65536), hard)
            )
        except (ValueError, OSError):
            pass
    log_file = Path(settings.log_file) if settings.log_file else data_dir / "localwhisk.log"
    private_file(log_file)
    logging.basicConfig(
        filename=str(log_file), level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s"
    )
    try:
        return _run(serve(settings, args.port_file, args.parent_pid))
    except RuntimeError as error:
        print(f"localwhisk: {error}", file=sys.stderr)
        return 3
    finally:
        lock.close()


if __name__ == "__main__":
    sys.exit(main())
