"""``faasprof local start|stop|status``: run localwhisk (or OpenWhisk standalone) in the background and look at its pool.

``start`` launches ``python -m faasprof.localwhisk serve`` in its own session and returns once ``GET /``
answers, printing the API host (stdout), the key it accepts and how to point ``wsk`` at it (stderr).
It records the connection in ``faasprof.platforms.openwhisk.connection.local_props_path()``, where every
faasprof command finds it when nothing else names a platform (a user's ``~/.wskprops`` is never
written); a second instance leaves the first one's record alone. ``stop`` and ``status`` find the
instance through ``<data-dir>/localwhisk.json`` (same ``--data-dir``, default
``~/.local/share/faasprof/localwhisk``; ``--port`` must match if given); ``stop`` removes the
record, and stopping what is not running says so and succeeds.

``start --platform openwhisk`` starts Apache OpenWhisk 2.0.0 standalone instead, as ``./setup.sh
--openwhisk`` built it (``faasprof.platforms.openwhisk.standalone``), and records its connection the
same way, so every command finds it; ``stop`` (no flag needed while it is the one recorded, else
``--platform openwhisk``) stops it and removes its action containers.
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
from faasprof.localwhisk.config import (
    AUTH_ENV,
    DEFAULT_DATA_DIR,
    GUEST_AUTH,
    SETTING_NAMES,
    add_auth_file_argument,
    add_settings_arguments,
    is_loopback,
    read_auth_file,
    settings_argv,
    settings_from_args,
    validate_settings,
)
from faasprof.localwhisk.embedded import launch_server
from faasprof.localwhisk.keys import data_dir_key, existing_key, key_path
from faasprof.localwhisk.watchdog import launch as launch_watchdog
from faasprof.platforms.openwhisk import standalone
from faasprof.platforms.openwhisk.connection import (
    LOCAL_DATA_DIR_KEY,
    LOCAL_PID_KEY,
    forget_local_props,
    local_platform_name,
    local_props_path,
    read_local_props,
    read_wskprops,
    write_local_props,
)
from faasprof.procfs import pid_alive

STATE_FILE = "localwhisk.json"
PLATFORMS = ("localwhisk", "openwhisk")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="local_command", metavar="{start,stop,status}", required=True)
    start = sub.add_parser(
        "start", help="start localwhisk (or OpenWhisk standalone) in the background; returns once its API answers"
    )
    start.add_argument(
        "--platform",
        choices=PLATFORMS,
        default="localwhisk",
        help="localwhisk, unless openwhisk: Apache OpenWhisk 2.0.0 standalone as ./setup.sh --openwhisk built it "
        "(takes --port, --pause-grace-ms, --idle-timeout-s, --user-memory-mb, --invokes-per-minute, --concurrent-invokes, "
        "--max-action-memory-mb)",
    )
    add_settings_arguments(start)
    add_auth_file_argument(start)
    stop = sub.add_parser("stop", help="stop the localwhisk of --data-dir (and --port)")
    status = sub.add_parser(
        "status", help="show the pool of the localwhisk of --data-dir: warm, paused, busy per action"
    )
    for p in (stop, status):
        p.add_argument("--data-dir", help=f"the instance's data directory (default {DEFAULT_DATA_DIR})")
        p.add_argument("--port", type=int, help="the instance's port (checked against the data directory's instance)")
    status.add_argument(
        "--auth", help=f"the key the instance accepts (default: --auth-file, ${AUTH_ENV}, OpenWhisk's guest key)"
    )
    add_auth_file_argument(status)
    status.add_argument("--json", action="store_true", help="print the raw pool JSON")
    stop.add_argument(
        "--timeout", type=float, default=15.0, help="seconds to wait for a clean stop before SIGKILL (default 15)"
    )
    stop.add_argument(
        "--platform",
        choices=PLATFORMS,
        help="which to stop (default: the one `local start` recorded, else localwhisk); openwhisk also removes its action containers",
    )


def main(args: argparse.Namespace) -> int:
    return {"start": _start, "stop": _stop, "status": _status}[args.local_command](args)


def _data_dir(args) -> Path:
    return Path(args.data_dir or DEFAULT_DATA_DIR).expanduser().resolve()


def _read_state(data_dir: Path, port: int | None) -> dict:
    state = _recorded_state(data_dir)
    if state is None:
        raise NotReadyError(
            f"{data_dir}: no localwhisk is running for this data directory; start one with `faasprof local start --data-dir {data_dir}`"
        )
    if not pid_alive(int(state.get("pid", 0))):
        raise NotReadyError(
            f"{data_dir}: the localwhisk recorded there (pid {state.get('pid')}) is not running; start one with `faasprof local start`"
        )
    _check_port(state, data_dir, port)
    return state


def _recorded_state(data_dir: Path) -> dict | None:
    """``<data_dir>/localwhisk.json`` as the server wrote it; None when there is none."""
    path = data_dir / STATE_FILE
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as error:
        raise NotReadyError(f"{path}: unreadable ({error}); remove it if no localwhisk runs there") from None


def _check_port(state: dict, data_dir: Path, port: int | None) -> None:
    if port is not None and int(state.get("port", -1)) != port:
        raise ConfigError(
            f"--port {port}: the localwhisk of {data_dir} listens on port {state.get('port')}; pass --port {state.get('port')} or the other instance's --data-dir"
        )


def _get_json(url: str, auth: str | None = None, timeout: float = 5.0) -> dict:
    request = urllib.request.Request(url)
    if auth:
        request.add_header("Authorization", "Basic " + base64.b64encode(auth.encode()).decode())
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return json.loads(response.read())


def _start(args) -> int:
    if args.platform == "openwhisk":
        return _start_openwhisk(args)
    try:
        settings = settings_from_args(args)
    except ValueError as error:
        raise ConfigError(f"faasprof local start: {error}") from None
    problems = validate_settings(settings)
    if problems:
        raise ConfigError(
            f"faasprof local start: {problems[0]}", problems=[f"faasprof local start: {p}" for p in problems]
        )
    data_dir = Path(settings.data_dir).expanduser().resolve()
    settings.data_dir = str(data_dir)
    if _given_key_origin(args) is None:  # no key given: the data directory's own, not the public guest key
        settings.auth = data_dir_key(data_dir)
    state_path = data_dir / STATE_FILE
    if state_path.exists():
        try:
            state = json.loads(state_path.read_text())
        except (OSError, ValueError):
            state = {}
        if state.get("pid") and pid_alive(int(state["pid"])):
            if args.port is not None and int(state.get("port", -1)) != args.port:
                raise ConfigError(
                    f"--data-dir {data_dir}: a localwhisk already runs there on port {state.get('port')}; stop it first or choose another --data-dir"
                )
            print(
                f"localwhisk already running at {state.get('apihost')} (pid {state['pid']}, data dir {data_dir})",
                file=sys.stderr,
            )
            recorded = read_local_props()
            if recorded.get(LOCAL_PID_KEY) == str(state["pid"]):
                _say_connection(recorded["APIHOST"], recorded["AUTH"], recorded["NAMESPACE"], _key_origin(args))
            print(state.get("apihost"))
            return 0
    data_dir.mkdir(parents=True, exist_ok=True)
    values = {k: v for k, v in settings.__dict__.items()}
    values.pop("auth")
    argv = settings_argv({k: v for k, v in values.items() if v not in ("",)})
    if not is_loopback(settings.host):
        print(
            f"faasprof local start: WARNING: --host {settings.host} exposes localwhisk to the network; anyone holding the key "
            f"can run code on this machine",
            file=sys.stderr,
        )
    log_path = Path(settings.log_file) if settings.log_file else data_dir / "localwhisk.log"
    _, state, info = launch_server(argv, data_dir, log_path, auth=settings.auth)
    apihost, pid = state["apihost"], int(state["pid"])
    # Nobody waits on a server left running: should it be killed, its watchdog stops its sandboxes.
    launch_watchdog(pid, data_dir, log_path)
    print(f"localwhisk running at {apihost} (pid {pid}, data dir {data_dir}, log {log_path})", file=sys.stderr)
    other = read_local_props()
    if other and other.get(LOCAL_PID_KEY) != str(pid):
        # Another instance is the one faasprof finds; this one is reached with flags.
        print(
            f"faasprof commands keep using the localwhisk at {other.get('APIHOST')} (pid {other.get(LOCAL_PID_KEY)}); "
            f"reach this one with --apihost {apihost} --auth KEY, the key below",
            file=sys.stderr,
        )
        _say_key(settings.auth, settings.namespace, _key_origin(args))
    else:
        served = (info or {}).get("localwhisk") or {}
        write_local_props(
            apihost,
            settings.auth,
            settings.namespace,
            pid,
            data_dir,
            {"pause_grace_ms": served.get("pause_grace_ms"), "user_memory_mb": served.get("user_memory_mb")},
        )
        _say_connection(apihost, settings.auth, settings.namespace, _key_origin(args))
    print(
        "stop it with: faasprof local stop"
        + ("" if data_dir == DEFAULT_DATA_DIR.resolve() else f" --data-dir {data_dir}"),
        file=sys.stderr,
    )
    print(apihost)
    return 0


def _key_origin(args) -> tuple[str, str] | None:
    """Where the key came from (named instead of printed) and a shell expression that gives it:
    the user's, else the data directory's own (localwhisk/keys.py)."""
    given = _given_key_origin(args)
    if given is not None or getattr(args, "platform", "localwhisk") == "openwhisk":
        return given
    path = key_path(_data_dir(args))
    return f"the key of this data directory, in {path}", f'"$(cat {path})"'


def _given_key_origin(args) -> tuple[str, str] | None:
    """A key the user gave: where it came from and a shell expression that gives it."""
    if getattr(args, "auth", None):
        return "the key given with --auth", "KEY"
    if getattr(args, "auth_file", None):
        return f"the key in {args.auth_file}", f'"$(cat {args.auth_file})"'
    if os.environ.get(AUTH_ENV):
        return f"the key in ${AUTH_ENV}", f'"${AUTH_ENV}"'
    return None


def _say_key(auth: str, namespace: str, origin: tuple[str, str] | None) -> None:
    # OpenWhisk's guest key is public, so it is shown; a key of the user's own is only named.
    key = f"{auth} (OpenWhisk's guest key)" if auth == GUEST_AUTH else (origin or ("the key it was started with",))[0]
    print(f"it accepts {key}, namespace {namespace}", file=sys.stderr)


def _say_connection(apihost: str, auth: str, namespace: str, origin: tuple[str, str] | None) -> None:
    """The key, how faasprof finds this localwhisk, and the lines that point ``wsk`` at it."""
    _say_key(auth, namespace, origin)
    path = local_props_path()
    print(
        f"faasprof run, deploy, analyze ... use it until `faasprof local stop` (its connection: {path})",
        file=sys.stderr,
    )
    shadowing = read_wskprops().get("APIHOST")
    if shadowing:
        where = os.environ.get("WSK_CONFIG_FILE") or "~/.wskprops"
        print(
            f"note: {where} names {shadowing}, which faasprof uses first: pass --apihost {apihost} --auth KEY, "
            "or move that file aside",
            file=sys.stderr,
        )
    key = auth if auth == GUEST_AUTH else (origin or ("", "KEY"))[1]
    print(f"for the wsk CLI: export WSK_CONFIG_FILE={path}", file=sys.stderr)
    print(
        f"            or: wsk property set --apihost {apihost} --auth {key} --namespace {namespace}   (rewrites ~/.wskprops)",
        file=sys.stderr,
    )


def _start_openwhisk(args) -> int:
    if args.auth or args.auth_file:
        raise ConfigError(
            "--auth/--auth-file: OpenWhisk standalone accepts only its guest key; leave them out with --platform openwhisk"
        )
    given = {name: getattr(args, name) for name in sorted(SETTING_NAMES) if getattr(args, name, None) is not None}
    server, already = standalone.start_standalone(given)
    state = "already running" if already else "running"
    print(
        f"OpenWhisk 2.0.0 standalone {state} at {server.apihost} (pid {server.pid}, pause grace {server.pause_grace_ms:g} ms, "
        f"idle timeout {server.idle_timeout_s:g} s, user memory {server.user_memory_mb:g} MB, log {server.log_path})",
        file=sys.stderr,
    )
    other = read_local_props()
    if other and other.get(LOCAL_PID_KEY) != str(server.pid):
        print(
            f"faasprof commands keep using the {local_platform_name(other)} at {other.get('APIHOST')} (pid {other.get(LOCAL_PID_KEY)}); "
            f"reach this one with --apihost {server.apihost} --auth KEY, the key below",
            file=sys.stderr,
        )
        _say_key(standalone.GUEST_AUTH, standalone.GUEST_NAMESPACE, None)
    else:
        write_local_props(
            server.apihost,
            standalone.GUEST_AUTH,
            standalone.GUEST_NAMESPACE,
            server.pid,
            server.state_dir,
            server.platform_settings,
            platform="openwhisk",
        )
        _say_connection(server.apihost, standalone.GUEST_AUTH, standalone.GUEST_NAMESPACE, None)
    print("stop it with: faasprof local stop (it removes its action containers too)", file=sys.stderr)
    print(server.apihost)
    return 0


def _stop_platform(args) -> str:
    """``--platform``, else the platform whose connection ``local start`` recorded, else localwhisk."""
    if args.platform:
        return args.platform
    if args.data_dir is None and read_wskprops(local_props_path()).get(LOCAL_DATA_DIR_KEY) == str(
        standalone.state_dir()
    ):
        return "openwhisk"
    return "localwhisk"


def _stop_openwhisk(args) -> int:
    if args.data_dir or args.port is not None:
        raise ConfigError(
            "--data-dir/--port: OpenWhisk standalone is found in its build folder; leave them out with --platform openwhisk"
        )
    for line in standalone.stop_standalone():
        print(line, file=sys.stderr)
    forget_local_props(standalone.state_dir())
    return 0


def _stop(args) -> int:
    if _stop_platform(args) == "openwhisk":
        return _stop_openwhisk(args)
    data_dir = _data_dir(args)
    state = _recorded_state(data_dir)
    if state is None or not pid_alive(int(state.get("pid", 0))):
        # Stopping is idempotent: what is not running is already stopped.
        forget_local_props(data_dir)
        gone = f" (pid {state.get('pid')} had exited)" if state else ""
        print(f"localwhisk not running for data dir {data_dir}{gone}; nothing to stop", file=sys.stderr)
        return 0
    _check_port(state, data_dir, args.port)
    pid = int(state["pid"])
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + args.timeout
    while time.monotonic() < deadline:
        if not pid_alive(pid):
            forget_local_props(data_dir)
            print(f"localwhisk stopped (pid {pid}, port {state.get('port')})", file=sys.stderr)
            return 0
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)
    forget_local_props(data_dir)
    raise RunError(
        f"localwhisk (pid {pid}) did not stop within {args.timeout:g} s and was killed; its sandboxes' cgroups are removed at the next start"
    )


def _status_auth(args) -> str:
    if args.auth:
        return args.auth
    if args.auth_file:
        try:
            return read_auth_file(args.auth_file)
        except ValueError as error:
            raise ConfigError(str(error)) from None
    return os.environ.get(AUTH_ENV) or existing_key(_data_dir(args)) or GUEST_AUTH


def _status(args) -> int:
    data_dir = _data_dir(args)
    state = _read_state(data_dir, args.port)
    try:
        status = _get_json(state["apihost"] + "/localwhisk/v1/pool", auth=_status_auth(args))
    except urllib.error.HTTPError as error:
        if error.code == 401:
            raise ConfigError(
                "--auth: the localwhisk rejected the key (401); pass the key it was started with"
            ) from None
        raise RunError(f"{state['apihost']}: GET /localwhisk/v1/pool answered {error.code}") from None
    except (OSError, ValueError) as error:
        raise NotReadyError(
            f"{state['apihost']}: no answer ({error}); is localwhisk (pid {state['pid']}) hung?"
        ) from None
    if args.json:
        print(json.dumps(status, indent=2))
        return 0
    lw, pool = status["localwhisk"], status["pool"]
    print(
        f"localwhisk {lw['apihost']}  pid {lw['pid']}  isolation {lw['isolation']}  pause grace {lw['pause_grace_ms']} ms  data {lw['data_dir']}"
    )
    print(
        f"memory {pool['used_memory_mb']}/{pool['user_memory_mb']} MB  running {pool['running']}  queued {pool['queued']}  "
        f"records written {status['records_written']}"
    )
    if pool["actions"]:
        print(f"{'action':<32} {'warm':>5} {'paused':>6} {'busy':>5} {'starting':>8}")
        for name, counts in sorted(pool["actions"].items()):
            print(
                f"{name:<32} {counts.get('warm', 0):>5} {counts.get('paused', 0):>6} {counts.get('busy', 0):>5} {counts.get('starting', 0):>8}"
            )
    else:
        print("no action sandboxes")
    for p in pool["prewarm"]:
        print(f"prewarm {p['kind']} {p['memory_mb']} MB ({p['state']})")
    return 0
