"""``faasprof local start|stop|status``: run localwhisk in the background and look at its pool.

``start`` launches ``python -m localwhisk serve`` in its own session and returns once ``GET /``
answers, printing the API host (stdout) and how to point ``wsk``/faasprof at it (stderr).
``stop`` and ``status`` find the instance through ``<data-dir>/localwhisk.json`` (same
``--data-dir``, default ``~/.local/share/faasprof/localwhisk``; ``--port`` must match if given).
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import signal
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from faasprof.errors import ConfigError, NotReadyError, RunError
from localwhisk.config import (AUTH_ENV, DEFAULT_DATA_DIR, GUEST_AUTH, add_auth_file_argument, add_settings_arguments, is_loopback,
                               read_auth_file, settings_argv, settings_from_args, validate_settings)
from localwhisk.cgroups import pid_alive as _pid_alive
from localwhisk.embedded import launch_server

STATE_FILE = "localwhisk.json"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="local_command", metavar="{start,stop,status}", required=True)
    start = sub.add_parser("start", help="start localwhisk in the background; returns once its API answers")
    add_settings_arguments(start)
    add_auth_file_argument(start)
    stop = sub.add_parser("stop", help="stop the localwhisk of --data-dir (and --port)")
    status = sub.add_parser("status", help="show the pool of the localwhisk of --data-dir: warm, paused, busy per action")
    for p in (stop, status):
        p.add_argument("--data-dir", help=f"the instance's data directory (default {DEFAULT_DATA_DIR})")
        p.add_argument("--port", type=int, help="the instance's port (checked against the data directory's instance)")
    status.add_argument("--auth", help=f"the key the instance accepts (default: --auth-file, ${AUTH_ENV}, OpenWhisk's guest key)")
    add_auth_file_argument(status)
    status.add_argument("--json", action="store_true", help="print the raw pool JSON")
    stop.add_argument("--timeout", type=float, default=15.0, help="seconds to wait for a clean stop before SIGKILL (default 15)")


def main(args: argparse.Namespace) -> int:
    return {"start": _start, "stop": _stop, "status": _status}[args.local_command](args)


def _data_dir(args) -> Path:
    return Path(args.data_dir or DEFAULT_DATA_DIR).expanduser().resolve()



def _read_state(data_dir: Path, port: int | None) -> dict:
    path = data_dir / STATE_FILE
    try:
        state = json.loads(path.read_text())
    except FileNotFoundError:
        raise NotReadyError(f"{data_dir}: no localwhisk is running for this data directory; start one with `faasprof local start --data-dir {data_dir}`") from None
    except (OSError, ValueError) as error:
        raise NotReadyError(f"{path}: unreadable ({error}); remove it if no localwhisk runs there") from None
    if not _pid_alive(int(state.get("pid", 0))):
        raise NotReadyError(f"{data_dir}: the localwhisk recorded there (pid {state.get('pid')}) is not running; start one with `faasprof local start`")
    if port is not None and int(state.get("port", -1)) != port:
        raise ConfigError(f"--port {port}: the localwhisk of {data_dir} listens on port {state.get('port')}; pass --port {state.get('port')} or the other instance's --data-dir")
    return state


def _get_json(url: str, auth: str | None = None, timeout: float = 5.0) -> dict:
    request = urllib.request.Request(url)
    if auth:
        request.add_header("Authorization", "Basic " + base64.b64encode(auth.encode()).decode())
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return json.loads(response.read())


def _start(args) -> int:
    try:
        settings = settings_from_args(args)
    except ValueError as error:
        raise ConfigError(f"faasprof local start: {error}") from None
    problems = validate_settings(settings)
    if problems:
        raise ConfigError(f"faasprof local start: {problems[0]}", problems=[f"faasprof local start: {p}" for p in problems])
    data_dir = Path(settings.data_dir).expanduser().resolve()
    settings.data_dir = str(data_dir)
    state_path = data_dir / STATE_FILE
    if state_path.exists():
        try:
            state = json.loads(state_path.read_text())
        except (OSError, ValueError):
            state = {}
        if state.get("pid") and _pid_alive(int(state["pid"])):
            if args.port is not None and int(state.get("port", -1)) != args.port:
                raise ConfigError(f"--data-dir {data_dir}: a localwhisk already runs there on port {state.get('port')}; stop it first or choose another --data-dir")
            print(f"localwhisk already running at {state.get('apihost')} (pid {state['pid']}, data dir {data_dir})", file=sys.stderr)
            print(state.get("apihost"))
            return 0
    data_dir.mkdir(parents=True, exist_ok=True)
    values = {k: v for k, v in settings.__dict__.items()}
    values.pop("auth")
    argv = settings_argv({k: v for k, v in values.items() if v not in ("",)})
    if not is_loopback(settings.host):
        print(f"faasprof local start: WARNING: --host {settings.host} exposes localwhisk to the network; anyone holding the key "
              f"can run code on this machine", file=sys.stderr)
    log_path = Path(settings.log_file) if settings.log_file else data_dir / "localwhisk.log"
    _, state, _ = launch_server(argv, data_dir, log_path, auth=settings.auth)
    print(f"localwhisk running at {state['apihost']} (pid {state['pid']}, data dir {data_dir}, log {log_path})", file=sys.stderr)
    print(f"use it with: faasprof run WORKLOAD --apihost {state['apihost']} --auth <the guest key>  (stop: faasprof local stop --data-dir {data_dir})",
          file=sys.stderr)
    print(state["apihost"])
    return 0


def _stop(args) -> int:
    data_dir = _data_dir(args)
    state = _read_state(data_dir, args.port)
    pid = int(state["pid"])
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + args.timeout
    while time.monotonic() < deadline:
        if not _pid_alive(pid):
            print(f"localwhisk stopped (pid {pid}, port {state.get('port')})", file=sys.stderr)
            return 0
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)
    raise RunError(f"localwhisk (pid {pid}) did not stop within {args.timeout:g} s and was killed; its sandboxes' cgroups are removed at the next start")


def _status_auth(args) -> str:
    if args.auth:
        return args.auth
    if args.auth_file:
        try:
            return read_auth_file(args.auth_file)
        except ValueError as error:
            raise ConfigError(str(error)) from None
    return os.environ.get(AUTH_ENV) or GUEST_AUTH


def _status(args) -> int:
    data_dir = _data_dir(args)
    state = _read_state(data_dir, args.port)
    try:
        status = _get_json(state["apihost"] + "/localwhisk/v1/pool", auth=_status_auth(args))
    except urllib.error.HTTPError as error:
        if error.code == 401:
            raise ConfigError("--auth: the localwhisk rejected the key (401); pass the key it was started with") from None
        raise RunError(f"{state['apihost']}: GET /localwhisk/v1/pool answered {error.code}") from None
    except (OSError, ValueError) as error:
        raise NotReadyError(f"{state['apihost']}: no answer ({error}); is localwhisk (pid {state['pid']}) hung?") from None
    if args.json:
        print(json.dumps(status, indent=2))
        return 0
    lw, pool = status["localwhisk"], status["pool"]
    print(f"localwhisk {lw['apihost']}  pid {lw['pid']}  isolation {lw['isolation']}  pause grace {lw['pause_grace_ms']} ms  data {lw['data_dir']}")
    print(f"memory {pool['used_memory_mb']}/{pool['user_memory_mb']} MB  running {pool['running']}  queued {pool['queued']}  "
          f"records written {status['records_written']}")
    if pool["actions"]:
        print(f"{'action':<32} {'warm':>5} {'paused':>6} {'busy':>5} {'starting':>8}")
        for name, counts in sorted(pool["actions"].items()):
            print(f"{name:<32} {counts.get('warm', 0):>5} {counts.get('paused', 0):>6} {counts.get('busy', 0):>5} {counts.get('starting', 0):>8}")
    else:
        print("no action sandboxes")
    for p in pool["prewarm"]:
        print(f"prewarm {p['kind']} {p['memory_mb']} MB ({p['state']})")
    return 0
