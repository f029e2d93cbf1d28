"""Settings of one localwhisk instance, declared once.

Each setting has a default, a type and a help line; the ``serve`` command line, ``start_embedded``
keyword arguments and ``faasprof local start`` flags are all derived from ``SETTINGS`` so that the
three cannot drift apart. Defaults follow OpenWhisk 1.0.0 (classic invoker) unless the README says
otherwise.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass, field, fields
from pathlib import Path

from faasprof.addresses import is_loopback  # noqa: F401  (its callers import it from here)
from faasprof.docker import parse_images
from faasprof.localwhisk import delays as delays_mod

# OpenWhisk's well-known guest key (ansible/files/auth.guest; also in standalone.conf).
GUEST_AUTH = "23bc46b1-71f6-4ed5-8c54-816aa4f8c502:123zO3xZCLrMN6v2BKK1dXYFpXlPkccOFqm12CdAsMgRU4VrNZ9lyGVCGuMDGIwP"
GUEST_NAMESPACE = "guest"

# The key reaches a server process through this environment variable (or --auth-file), never its
# command line: anything on a command line is readable by every user (ps, /proc/*/cmdline).
AUTH_ENV = "LOCALWHISK_AUTH"

DEFAULT_DATA_DIR = Path.home() / ".local" / "share" / "faasprof" / "localwhisk"


@dataclass
class Settings:
    host: str = field(
        default="127.0.0.1",
        metadata={"help": "address to listen on (default loopback only; others need --allow-remote)"},
    )
    allow_remote: bool = field(
        default=False, metadata={"help": "allow a non-loopback --host (needs a non-default key)"}
    )
    port: int = field(default=3233, metadata={"help": "TCP port; 0 picks a free one (OpenWhisk standalone uses 3233)"})
    data_dir: str = field(
        default=str(DEFAULT_DATA_DIR), metadata={"help": "where the database, logs and pid file live"}
    )
    auth: str = field(
        default=GUEST_AUTH,
        metadata={
            "help": "accepted key UUID:KEY (default: OpenWhisk's guest key); visible to "
            "ps: prefer --auth-file or the LOCALWHISK_AUTH environment variable"
        },
    )
    namespace: str = field(default=GUEST_NAMESPACE, metadata={"help": "the namespace of that key"})
    user_memory_mb: int = field(
        default=4096, metadata={"help": "pool capacity in MB (whisk.container-pool.user-memory)"}
    )
    pause_grace_ms: int = field(
        default=50, metadata={"help": "pause an idle warm sandbox after this many ms (1.0.0: 50; 2.x: 10000)"}
    )
    idle_timeout_s: float = field(
        default=600.0, metadata={"help": "remove a paused sandbox after this many s (idle-container)"}
    )
    parallel_runs: int = field(
        default=10, metadata={"help": "cap on sandbox creations in parallel (docker parallel-runs)"}
    )
    invokes_per_minute: int = field(
        default=999999, metadata={"help": "per-namespace invocations per minute (OpenWhisk ansible: 60)"}
    )
    concurrent_invokes: int = field(
        default=999999, metadata={"help": "per-namespace in-flight activations (OpenWhisk ansible: 30)"}
    )
    min_action_memory_mb: int = field(default=128, metadata={"help": "smallest allowed limits.memory"})
    max_action_memory_mb: int = field(default=2048, metadata={"help": "largest allowed limits.memory (OpenWhisk: 512)"})
    std_action_memory_mb: int = field(default=256, metadata={"help": "default limits.memory"})
    min_action_timeout_ms: int = field(default=100, metadata={"help": "smallest allowed limits.timeout"})
    max_action_timeout_ms: int = field(default=300000, metadata={"help": "largest allowed limits.timeout"})
    std_action_timeout_ms: int = field(default=60000, metadata={"help": "default limits.timeout"})
    max_blocking_wait_ms: int = field(default=60000, metadata={"help": "blocking invokes answer 202 after this wait"})
    max_payload_bytes: int = field(default=1048576, metadata={"help": "largest request body and result"})
    max_action_code_bytes: int = field(
        default=48 * 1024 * 1024,
        metadata={
            "help": "largest exec.code of an action, base64 included: a zip of about 3/4 of it (whisk.exec.size-limit 48 MB)"
        },
    )
    max_unpacked_code_bytes: int = field(
        default=512 * 1024 * 1024,
        metadata={
            "help": "most bytes an action's zip may unpack to (checked at PUT and while unpacking; OpenWhisk has no such cap)"
        },
    )
    max_sandbox_processes: int = field(
        default=512,
        metadata={
            "help": "most processes (and threads) one sandbox may run: its pids cgroup, else RLIMIT_NPROC of its own user "
            "(without root: on top of what the server's user runs) "
            "(docker: --pids-limit 1024)"
        },
    )
    max_archive_entries: int = field(
        default=65536,
        metadata={"help": "most entries (files and folders) in an action's zip"},
    )
    prewarm: str = field(
        default="", metadata={"help": "stem cells, e.g. 'python:3=2,nodejs:20=1' (256 MB each) or 'nodejs:20=2@256'"}
    )
    isolation: str = field(
        default="auto",
        metadata={
            "help": "auto | cgroup | rlimit | docker (auto: cgroups if writable, else SIGSTOP + rlimits; docker: one container per sandbox)"
        },
    )
    docker_pause: str = field(
        default="api",
        metadata={
            "help": "isolation docker: api (docker pause/unpause, shows in docker ps) | freezer (direct cgroup freezer write: faster, invisible to Docker)"
        },
    )
    docker_images: str = field(
        default="",
        metadata={
            "help": "isolation docker: images per family, e.g. 'python=openwhisk/action-python-v3.11:nightly' (default faasprof's own)"
        },
    )
    cpu_policy: str = field(
        default="shares", metadata={"help": "shares (OpenWhisk cpu-shares ∝ memory) | quota (CPU quota ∝ memory)"}
    )
    user_cpus: float = field(
        default=0.0, metadata={"help": "CPUs for all actions under the quota policy (0 = all cores)"}
    )
    python: str = field(
        default="", metadata={"help": "Python interpreter for python actions (default: the one running localwhisk)"}
    )
    node: str = field(default="", metadata={"help": "Node.js binary for nodejs actions (default: node on PATH)"})
    store_flush_ms: int = field(default=50, metadata={"help": "activation records reach sqlite within this many ms"})
    log_file: str = field(default="", metadata={"help": "server log file (default: <data-dir>/localwhisk.log)"})
    control_plane: str = field(
        default="",
        metadata={
            "help": "OpenWhisk control-plane model: a preset (openwhisk-2.0.0-standalone) or cold=MS,resumed=MS,warm=MS,reuse=newest|oldest (faasprof/localwhisk/delays.py; default off)"
        },
    )

    def to_dict(self) -> dict:
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out.pop("auth")
        return out


SETTING_NAMES = {f.name for f in fields(Settings)}
ISOLATIONS = ("auto", "cgroup", "rlimit", "docker")


def duration_ms(text: str) -> int:
    """``50``, ``50ms``, ``10s``, ``2m`` → milliseconds (argparse type)."""
    value = str(text).strip().lower()
    for suffix, factor in (("ms", 1), ("s", 1000), ("m", 60000)):
        if value.endswith(suffix) and value[: -len(suffix)].replace(".", "", 1).isdigit():
            return int(float(value[: -len(suffix)]) * factor)
    if value.replace(".", "", 1).isdigit():
        return int(round(float(value)))  # "50.0" from a JSON number; sub-ms grace is not meaningful
    raise argparse.ArgumentTypeError(f"{text!r} is not a duration such as 50, 50ms or 10s")


# Short spellings used in the issue and the README (``--user-memory 4096 --pause-grace 10s``).
ALIASES = {"user_memory_mb": ["--user-memory"], "pause_grace_ms": ["--pause-grace"], "data_dir": [], "port": []}
TYPES = {"pause_grace_ms": duration_ms}


def add_settings_arguments(parser: argparse.ArgumentParser, skip: tuple[str, ...] = ()) -> None:
    """One ``--flag`` per setting (``user_memory_mb`` → ``--user-memory-mb``), default None = unset."""
    for f in fields(Settings):
        if f.name in skip:
            continue
        flag = "--" + f.name.replace("_", "-")
        if (f.type if isinstance(f.type, str) else f.type.__name__) == "bool":
            parser.add_argument(flag, dest=f.name, action="store_true", default=None, help=f.metadata["help"])
            continue
        kind = (
            TYPES.get(f.name)
            or {"int": int, "float": float, "str": str}[f.type if isinstance(f.type, str) else f.type.__name__]
        )
        if f.name == "auth":
            help_text = f.metadata["help"]
        elif "(default" in f.metadata["help"]:  # the help already says its default in words
            help_text = f.metadata["help"]
        else:
            help_text = f"{f.metadata['help']} (default {f.default!r})"
        parser.add_argument(flag, *ALIASES.get(f.name, []), dest=f.name, type=kind, default=None, help=help_text)


def add_auth_file_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--auth-file",
        type=Path,
        help=f"read the key UUID:KEY from this file (or set {AUTH_ENV}); keeps it off the command line",
    )


def read_auth_file(path: Path) -> str:
    """The key in ``path`` (first line, stripped); raises ValueError naming the file and the fix."""
    try:
        text = Path(path).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as error:
        raise ValueError(f"--auth-file {path}: unreadable ({error}); give a file holding UUID:KEY") from None
    key = text.splitlines()[0].strip() if text else ""
    if ":" not in key:
        raise ValueError(f"--auth-file {path}: the first line must be UUID:KEY")
    return key


def settings_from_args(args: argparse.Namespace, **overrides) -> Settings:
    """Settings from parsed flags; the key from --auth, else --auth-file, else $LOCALWHISK_AUTH."""
    values = {name: getattr(args, name) for name in SETTING_NAMES if getattr(args, name, None) is not None}
    if "auth" not in values and getattr(args, "auth_file", None):
        values["auth"] = read_auth_file(args.auth_file)
    if "auth" not in values and os.environ.get(AUTH_ENV):
        values["auth"] = os.environ[AUTH_ENV]
    values.update({k: v for k, v in overrides.items() if v is not None})
    return Settings(**values)


def settings_argv(settings: dict) -> list[str]:
    """The ``serve`` command-line flags for a dict of settings (unknown names raise ValueError).

    ``auth`` is left out: it travels in the environment (:func:`server_env`).
    """
    argv: list[str] = []
    for name, value in settings.items():
        if name not in SETTING_NAMES:
            raise ValueError(f"unknown localwhisk setting {name!r}; known: {', '.join(sorted(SETTING_NAMES))}")
        if value is None or name == "auth" or value is False:
            continue
        argv += ["--" + name.replace("_", "-")] + ([] if value is True else [str(value)])
    return argv


def server_env(settings: dict) -> dict[str, str]:
    """Environment entries a ``serve`` process needs beside its argv: the key, if one is set."""
    return {AUTH_ENV: str(settings["auth"])} if settings.get("auth") else {}


POSITIVE_SETTINGS = (
    "user_memory_mb",
    "parallel_runs",
    "min_action_memory_mb",
    "max_action_memory_mb",
    "std_action_memory_mb",
    "max_blocking_wait_ms",
    "max_payload_bytes",
    "max_action_code_bytes",
    "max_unpacked_code_bytes",
    "max_archive_entries",
    "max_sandbox_processes",
    "store_flush_ms",
)


def validate_settings(settings: "Settings") -> list[str]:
    """Every problem with a Settings, one line each naming the setting and the fix."""
    return _choice_problems(settings) + _number_problems(settings) + _access_problems(settings)


def _choice_problems(settings: "Settings") -> list[str]:
    problems = []
    if settings.isolation not in ISOLATIONS:
        problems.append(f"isolation: must be auto, cgroup, rlimit or docker (got {settings.isolation!r})")
    if settings.docker_pause not in ("api", "freezer"):
        problems.append(f"docker_pause: must be api or freezer (got {settings.docker_pause!r})")
    if settings.cpu_policy not in ("shares", "quota"):
        problems.append(f"cpu_policy: must be shares or quota (got {settings.cpu_policy!r})")
    for check, value in ((parse_images, settings.docker_images), (parse_prewarm, settings.prewarm)):
        try:
            check(value)
        except ValueError as error:
            problems.append(str(error))
    try:
        delays_mod.parse(settings.control_plane)
    except ValueError as error:
        problems.append(str(error))
    return problems


def _number_problems(settings: "Settings") -> list[str]:
    problems = [
        f"{name}: must be > 0 (got {getattr(settings, name)})"
        for name in POSITIVE_SETTINGS
        if getattr(settings, name) <= 0
    ]
    if settings.pause_grace_ms < 0 or settings.idle_timeout_s <= 0:
        problems.append("pause_grace_ms must be >= 0 and idle_timeout_s > 0")
    if settings.invokes_per_minute <= 0 or settings.concurrent_invokes <= 0:
        problems.append("invokes_per_minute and concurrent_invokes: must be > 0")
    if settings.user_memory_mb < settings.min_action_memory_mb:
        problems.append(
            f"user_memory_mb: {settings.user_memory_mb} is below min_action_memory_mb {settings.min_action_memory_mb}; no action could run"
        )
    if not 0 <= settings.port <= 65535:
        problems.append(f"port: must be 0..65535 (got {settings.port})")
    return problems


def _access_problems(settings: "Settings") -> list[str]:
    if ":" not in settings.auth:
        return ["auth: must be UUID:KEY"]
    if is_loopback(settings.host):
        return []
    if not settings.allow_remote:
        return [
            f"host: {settings.host} is not a loopback address; listening there exposes the API to the network: "
            f"pass --allow-remote and a key of your own (--auth-file), or use --host 127.0.0.1"
        ]
    if settings.auth == GUEST_AUTH:
        return [
            f"auth: --host {settings.host} with --allow-remote needs a key other than OpenWhisk's public guest key "
            f"(--auth-file F with UUID:KEY)"
        ]
    return []


def parse_prewarm(spec: str) -> list[tuple[str, int, int]]:
    """``'python:3=2,nodejs:20=1@512'`` → [(kind, count, memory_mb), ...]; raises ValueError."""
    out = []
    for part in filter(None, (p.strip() for p in spec.split(","))):
        kind, _, rest = part.partition("=")
        count_s, _, mem_s = rest.partition("@")
        try:
            count = int(count_s)
            memory = int(mem_s) if mem_s else 256
        except ValueError:
            raise ValueError(f"prewarm: {part!r} is not KIND=COUNT[@MB], e.g. python:3=2") from None
        if not kind or count < 0 or memory <= 0:
            raise ValueError(f"prewarm: {part!r} is not KIND=COUNT[@MB], e.g. python:3=2")
        out.append((kind.strip(), count, memory))
    return out
