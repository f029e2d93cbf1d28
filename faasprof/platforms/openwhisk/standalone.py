"""Apache OpenWhisk 2.0.0 standalone, started and stopped for ``faasprof local start|stop --platform openwhisk``.

``./setup.sh --openwhisk`` builds it once into faasprof's cache (``standalone_home()``:
``$OPENWHISK_STANDALONE_HOME``, else ``<cache>/openwhisk-standalone``) and copies its launchers,
``start.sh`` and ``stop.sh`` of ``setup/openwhisk-standalone/``, beside the build, so an installed
faasprof finds them without a checkout. Starting runs ``start.sh`` (faasprof's runtime images, its
pool and throttle settings; it returns once the API serves) and reads back the
``run/settings.json`` it wrote; stopping runs ``stop.sh``, which ends the JVM and removes every
action container of its runtime images, so nothing stays behind. Both scripts answer in one line
and an exit status (2 bad input, 3 a missing build or tool), which become typed errors here.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from faasprof.errors import ConfigError, NotReadyError, RunError
from faasprof.paths import cache_root
from faasprof.procfs import pid_alive

HOME_ENV = "OPENWHISK_STANDALONE_HOME"
HOME_FOLDER = "openwhisk-standalone"
# The state folder start.sh uses under its build folder: pid, log, settings, runtimes manifest.
STATE_FOLDER = "run"
# The guest key the standalone server bootstraps (its standalone.conf), and that user's namespace.
GUEST_AUTH = "23bc46b1-71f6-4ed5-8c54-816aa4f8c502:123zO3xZCLrMN6v2BKK1dXYFpXlPkccOFqm12CdAsMgRU4VrNZ9lyGVCGuMDGIwP"
GUEST_NAMESPACE = "guest"
# localwhisk's settings that start.sh takes too, and its flag for each.
START_FLAGS = {
    "port": "--port",
    "pause_grace_ms": "--pause-grace",
    "idle_timeout_s": "--idle-container",
    "user_memory_mb": "--user-memory",
    "invokes_per_minute": "--invokes-per-minute",
    "concurrent_invokes": "--concurrent",
    "max_action_memory_mb": "--max-action-memory",
}
DEFAULT_WAIT_S = 180
DEFAULT_IDLE_CONTAINER_S = 600  # OpenWhisk's idle-container: a paused container is removed after it
STOP_TIMEOUT_S = 120  # stop.sh waits 30 s for the JVM, then removes containers (a few seconds each)


@dataclass(frozen=True)
class StandaloneServer:
    """A running standalone server, as start.sh recorded it in ``run/settings.json``."""

    apihost: str
    pid: int
    state_dir: Path
    pause_grace_ms: float
    user_memory_mb: float
    idle_timeout_s: float
    log_path: Path

    @property
    def platform_settings(self) -> dict[str, float]:
        return {
            "pause_grace_ms": self.pause_grace_ms,
            "user_memory_mb": self.user_memory_mb,
            "idle_timeout_s": self.idle_timeout_s,
        }


def standalone_home(environ: Mapping[str, str] | None = None) -> Path:
    """The build folder: ``$OPENWHISK_STANDALONE_HOME``, else ``<faasprof cache>/openwhisk-standalone``."""
    env = os.environ if environ is None else environ
    chosen = env.get(HOME_ENV, "").strip()
    return Path(chosen).expanduser().absolute() if chosen else cache_root(env) / HOME_FOLDER


def state_dir(home: Path | None = None) -> Path:
    return (home or standalone_home()) / STATE_FOLDER


def start_arguments(settings: Mapping[str, object]) -> list[str]:
    """start.sh's flags for the given settings; a setting start.sh does not take is a ConfigError."""
    argv: list[str] = []
    for name, value in settings.items():
        if value is None:
            continue
        flag = START_FLAGS.get(name)
        if flag is None:
            takes = ", ".join("--" + key.replace("_", "-") for key in START_FLAGS)
            raise ConfigError(
                f"--{name.replace('_', '-')}: a localwhisk setting that OpenWhisk standalone does not take; "
                f"with --platform openwhisk pass only {takes}"
            )
        argv += [flag, f"{value:g}" if isinstance(value, float) else str(value)]
    return argv


def _launcher(home: Path, name: str) -> Path:
    if not (home / "build.env").is_file():
        raise NotReadyError(
            f"{home}: OpenWhisk standalone is not built there; run ./setup.sh --openwhisk "
            f"(or set {HOME_ENV} to its build folder)"
        )
    script = home / name
    if not os.access(script, os.X_OK):
        raise NotReadyError(
            f"{script}: missing; run ./setup.sh --openwhisk again (it copies the launchers beside the build)"
        )
    return script


def _run_script(script: Path, argv: list[str], timeout_s: float) -> str:
    """Run a launcher; its stdout on success, else its last line of stderr as a typed error."""
    try:
        done = subprocess.run(
            [str(script), *argv], capture_output=True, text=True, timeout=timeout_s, stdin=subprocess.DEVNULL
        )
    except subprocess.TimeoutExpired:
        raise RunError(
            f"{script.name} did not finish within {timeout_s:g} s; see {state_dir(script.parent)}/standalone.log"
        ) from None
    if done.returncode == 0:
        return done.stdout
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    message = lines[-1] if lines else f"{script.name} exited with status {done.returncode} and said nothing"
    if done.returncode == 2:
        raise ConfigError(message)
    if done.returncode == 3:
        raise NotReadyError(message)
    raise RunError(message)


def read_server(home: Path | None = None) -> StandaloneServer | None:
    """The server start.sh left running in ``home``; None when there is none or it has exited."""
    folder = state_dir(home)
    try:
        pid = int((folder / "standalone.pid").read_text().strip())
        recorded = json.loads((folder / "settings.json").read_text())
    except (OSError, ValueError):
        return None
    if not pid_alive(pid) or int(recorded.get("pid", -1)) != pid:
        return None
    return StandaloneServer(
        apihost=str(recorded["apihost"]),
        pid=pid,
        state_dir=folder,
        pause_grace_ms=float(recorded["pause_grace_ms"]),
        user_memory_mb=float(recorded["user_memory_mb"]),
        idle_timeout_s=float(recorded.get("idle_container_s", DEFAULT_IDLE_CONTAINER_S)),
        log_path=folder / "standalone.log",
    )


def start_standalone(
    settings: Mapping[str, object], home: Path | None = None, wait_s: int = DEFAULT_WAIT_S
) -> tuple[StandaloneServer, bool]:
    """Start the built server (or find it running); returns (server, already_running)."""
    home = home or standalone_home()
    argv = start_arguments(settings)
    script = _launcher(home, "start.sh")
    running = read_server(home)
    if running is not None:
        return running, True
    _run_script(script, ["--build-dir", str(home), "--wait", str(wait_s), *argv], timeout_s=wait_s + 60)
    server = read_server(home)
    if server is None:
        raise RunError(
            f"{home / STATE_FOLDER}: start.sh reported success but no running server is recorded there; see its standalone.log"
        )
    return server, False


def stop_standalone(home: Path | None = None) -> list[str]:
    """Stop the server and remove its action containers; what stop.sh said, line by line.

    Stopping what is not running succeeds (and still removes containers a killed server left)."""
    home = home or standalone_home()
    script = _launcher(home, "stop.sh")
    said = _run_script(script, ["--build-dir", str(home)], timeout_s=STOP_TIMEOUT_S)
    return [line for line in said.splitlines() if line.strip()]
