"""The connection to an OpenWhisk (or localwhisk): where its API host, key and namespace come from.

Settings come from, in this order: command-line flags (``--apihost``, ``--auth``, ``--namespace``,
``--insecure``), the workload's ``platform`` block, then ``~/.wskprops`` (``APIHOST``, ``AUTH``,
``NAMESPACE`` and faasprof's ``INSECURE=true``), each key on its own, and last the localwhisk that
``faasprof local start`` left running (``local_props_path()``: a wskprops that start writes and
stop removes, ignored once its ``LOCALWHISK_PID`` has exited; a user's own ``~/.wskprops`` is never
written). When none of them names an API host, the caller uses the embedded localwhisk. The auth
key never appears in ``repr``, logs, the manifest or errors. A wskprops written by a testbed set-up
(or by ``local start``) may also state the platform's settings in faasprof's own keys
(``PAUSE_GRACE_MS``, ``USER_MEMORY_MB``, ``IDLE_TIMEOUT_S``; ``wsk`` ignores them). They are kept only when that file
names the API host in use, and the manifest records them as ``platform.settings``.
"""

from __future__ import annotations

import argparse
import os
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from faasprof.addresses import redact_url, url_has_credentials
from faasprof.errors import ConfigError
from faasprof.procfs import process_start_ticks

DEFAULT_NAMESPACE = "_"
# faasprof's own wskprops keys for the platform's settings, and their names in platform.settings.
SETTING_KEYS = {
    "PAUSE_GRACE_MS": "pause_grace_ms",
    "USER_MEMORY_MB": "user_memory_mb",
    "IDLE_TIMEOUT_S": "idle_timeout_s",
}


@dataclass(frozen=True)
class Connection:
    apihost: str  # normalised: scheme://host[:port], no trailing slash
    auth: str = field(repr=False)
    namespace: str = DEFAULT_NAMESPACE
    insecure: bool = False
    source: str = "flags"  # where apihost came from: flags | workload | wskprops | local (``local start``) | embedded
    settings: dict = field(default_factory=dict, hash=False)  # the set-up's PAUSE_GRACE_MS... (wskprops)
    served_by: str = ""  # for source "local": what `local start` started there (localwhisk, OpenWhisk standalone)

    @property
    def auth_pair(self) -> tuple[str, str]:
        user, _, password = self.auth.partition(":")
        return user, password

    def describe(self) -> dict:
        """What may be recorded in a manifest: everything but the key."""
        return {
            "apihost": self.apihost,
            "namespace": self.namespace,
            "insecure": self.insecure,
            "source": self.source,
            "auth_user": self.auth_pair[0][:8] + "…" if self.auth else None,
            **({"settings": dict(self.settings)} if self.settings else {}),
        }


def normalise_apihost(apihost: str) -> str:
    """OpenWhisk's APIHOST may lack a scheme (``172.17.0.1``); like ``wsk``, that means https."""
    host = apihost.strip().rstrip("/")
    if not host.startswith(("http://", "https://")):
        host = "https://" + host
    return host


def read_wskprops(path: str | os.PathLike | None = None) -> dict[str, str]:
    """Parse ``~/.wskprops`` (KEY=VALUE lines); a missing file is an empty dict."""
    path = Path(path) if path else Path(os.environ.get("WSK_CONFIG_FILE", Path.home() / ".wskprops"))
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as error:
        raise ConfigError(
            f"{path}: cannot read ({error.strerror}); fix its permissions or set WSK_CONFIG_FILE"
        ) from None
    props = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.partition("=")
        props[key.strip().upper()] = value.strip()
    return props


# The localwhisk of ``faasprof local start``: its connection as a wskprops (so that ``wsk`` can use
# it too, through WSK_CONFIG_FILE), with the server's pid and data directory in faasprof's own keys.
LOCAL_PID_KEY = "LOCALWHISK_PID"
LOCAL_DATA_DIR_KEY = "LOCALWHISK_DATA_DIR"
# With the pid, the server process for good: after a reboot the pid may name another process.
LOCAL_START_KEY = "LOCALWHISK_START"
# Which platform `local start` started: localwhisk (absent) or OpenWhisk standalone, for messages.
LOCAL_PLATFORM_KEY = "FAASPROF_LOCAL_PLATFORM"
LOCAL_PLATFORM_NAMES = {"localwhisk": "localwhisk", "openwhisk": "OpenWhisk standalone"}


def local_props_path() -> Path:
    """Where ``faasprof local start`` leaves the connection of the localwhisk it started."""
    return Path.home() / ".local" / "share" / "faasprof" / "localwhisk.wskprops"


def read_local_props(path: str | os.PathLike | None = None) -> dict[str, str]:
    """The props of the localwhisk ``faasprof local start`` left running; {} when its server has
    exited (a crash or a reboot leaves the file behind) or there is none."""
    props = read_wskprops(path or local_props_path())
    pid = props.get(LOCAL_PID_KEY, "")
    if not pid.isdigit():
        return {}
    started = process_start_ticks(int(pid))
    if started is None or props.get(LOCAL_START_KEY, str(started)) != str(started):
        return {}
    return props


def local_platform_name(props: dict[str, str]) -> str:
    """What ``local start`` started, as the messages name it: localwhisk or OpenWhisk standalone."""
    return LOCAL_PLATFORM_NAMES.get(props.get(LOCAL_PLATFORM_KEY, "localwhisk"), "localwhisk")


def write_local_props(
    apihost: str,
    auth: str,
    namespace: str,
    pid: int,
    data_dir: Path,
    settings: Mapping[str, float | None],
    platform: str = "localwhisk",
) -> Path:
    """Record a started localwhisk (or OpenWhisk standalone, ``platform="openwhisk"``) where
    ``resolve_connection`` finds it: a wskprops (mode 0600: it holds the key, as ``~/.wskprops``
    does), written through a temporary file and a rename."""
    if platform not in LOCAL_PLATFORM_NAMES:
        raise ValueError(f"unknown local platform {platform!r}; one of {', '.join(LOCAL_PLATFORM_NAMES)}")
    path = local_props_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [
        f"# faasprof local start: the {LOCAL_PLATFORM_NAMES[platform]} at {apihost}; faasprof uses it when no flag, workload platform",
        "# block or ~/.wskprops names an API host, `faasprof local stop` removes this file, and",
        "# the wsk CLI uses it when WSK_CONFIG_FILE names it.",
        f"APIHOST={apihost}",
        f"AUTH={auth}",
        f"NAMESPACE={namespace}",
        *(f"{key}={settings[name]:g}" for key, name in SETTING_KEYS.items() if settings.get(name) is not None),
        f"{LOCAL_PID_KEY}={pid}",
        f"{LOCAL_START_KEY}={process_start_ticks(pid)}",
        f"{LOCAL_DATA_DIR_KEY}={data_dir}",
        *([f"{LOCAL_PLATFORM_KEY}={platform}"] if platform != "localwhisk" else []),
    ]
    tmp = path.with_name(f"{path.name}.tmp{os.getpid()}")
    with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")
    os.replace(tmp, path)
    return path


def forget_local_props(data_dir: Path) -> bool:
    """Remove the record of the localwhisk of ``data_dir`` once its server has exited; True if removed."""
    path = local_props_path()
    props = read_wskprops(path)
    if props.get(LOCAL_DATA_DIR_KEY) != str(data_dir) or read_local_props(path):
        return False
    path.unlink(missing_ok=True)
    return True


def known_key_for(apihost: str, wskprops_path: str | os.PathLike | None = None) -> dict[str, str]:
    """The key and namespace that ``~/.wskprops`` or ``local start``'s record hold for ``apihost``
    ({} when neither names it): a run's manifest names its API host but never its key."""
    wanted = normalise_apihost(apihost)
    for props in (read_wskprops(wskprops_path), read_local_props()):
        if props.get("APIHOST") and normalise_apihost(props["APIHOST"]) == wanted and props.get("AUTH"):
            return {"auth": props["AUTH"], **({"namespace": props["NAMESPACE"]} if props.get("NAMESPACE") else {})}
    return {}


def apihost_problem(apihost: str) -> str | None:
    """Why ``apihost`` cannot name a platform (with the fix), or None when it can."""
    text = apihost.strip()
    if not text:
        return "is empty; write the API host, e.g. https://172.17.0.1 or http://127.0.0.1:3233"
    if url_has_credentials(text):
        # OpenWhisk takes its key as --auth; a password in the URL would be printed and stored.
        return f"{redact_url(text)!r} holds credentials (user:password@); write the API host without them and pass the key with --auth"
    if any(ch.isspace() for ch in text):
        return f"{apihost!r} contains spaces; write one host such as https://172.17.0.1 or http://127.0.0.1:3233"
    scheme, sep, _ = text.partition("://")
    if sep and scheme not in ("http", "https"):
        return f"{apihost!r} has the scheme {scheme}://; use http:// or https://"
    url = text if sep else "https://" + text
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port
    except ValueError:
        return f"{apihost!r} has a bad port; write HOST:PORT with PORT in 1..65535"
    if not parts.hostname:
        return f"{apihost!r} has no host; write it as https://HOST[:PORT]"
    if port == 0:
        return f"{apihost!r} has port 0; use a port in 1..65535"
    return None


def add_connection_arguments(parser: argparse.ArgumentParser, default: str = "the embedded localwhisk") -> None:
    """The connection flags; ``default`` says what the command uses when nothing names a platform."""
    group = parser.add_argument_group(f"platform connection (default: {default})")
    fallback = "else the workload's platform block, else ~/.wskprops, else the localwhisk of `faasprof local start`"
    group.add_argument("--apihost", help=f"OpenWhisk API host, e.g. https://172.17.0.1 ({fallback})")
    group.add_argument("--auth", help=f"auth key UUID:KEY ({fallback})")
    group.add_argument("--namespace", help=f"namespace (default {DEFAULT_NAMESPACE})")
    group.add_argument(
        "--insecure", action="store_true", default=None, help="do not verify the platform's TLS certificate"
    )


class NoAuthKeyError(ConfigError):
    """An API host is named and no key for it is: a command that can go on without the platform
    (``analyze`` of what a run saved) tells it apart from a key that is malformed."""


def resolve_connection(
    args: argparse.Namespace | None = None,
    platform: dict | None = None,
    wskprops_path: str | os.PathLike | None = None,
    origin: str = "workload",
) -> Connection | None:
    """The connection to use, or None when nothing names an API host (use the embedded platform).

    ``origin`` names the workload file in error messages.
    """
    sources = _Sources.read(args, platform or {}, wskprops_path)
    apihost, source = sources.pick("apihost")
    if apihost is None:
        if getattr(args, "auth", None):
            raise ConfigError(
                "--auth: given without an API host; add --apihost (or drop --auth to use the embedded localwhisk)"
            )
        return None
    reason = apihost_problem(str(apihost))
    if reason:
        raise ConfigError(f"{sources.where(source, origin)}: {reason}")
    return _connection(sources, normalise_apihost(str(apihost)), source, origin)


# The sources of a connection's keys, in the order they win.
_SOURCE_ORDER = ("flags", "workload", "wskprops", "local")


@dataclass(frozen=True)
class _Sources:
    """What each source says of the connection keys (apihost, auth, namespace, insecure), and the
    two files read: ``~/.wskprops`` and the record of ``faasprof local start``."""

    values: dict[str, Mapping]  # by source, as _SOURCE_ORDER names them
    props: dict[str, str]
    local_props: dict[str, str]  # {} when another source names an API host: the local one comes last, and whole
    wskprops_path: str | os.PathLike | None

    @classmethod
    def read(
        cls, args: argparse.Namespace | None, platform: Mapping, wskprops_path: str | os.PathLike | None
    ) -> _Sources:
        flags = {key: getattr(args, key, None) for key in ("apihost", "auth", "namespace", "insecure")}
        props = read_wskprops(wskprops_path)
        # INSECURE is faasprof's own key (wsk has only its -i flag): the testbed's OpenWhisk has a
        # self-signed certificate, and setup writes INSECURE=true so that no command needs --insecure.
        wsk = {
            "apihost": props.get("APIHOST"),
            "auth": props.get("AUTH"),
            "namespace": props.get("NAMESPACE"),
            "insecure": props.get("INSECURE", "").lower() in ("1", "true", "yes") or None,
        }
        named = any(values.get("apihost") not in (None, "") for values in (flags, platform, wsk))
        local_props = {} if named else read_local_props()
        local = {key.lower(): local_props.get(key) for key in ("APIHOST", "AUTH", "NAMESPACE")}
        return cls(
            {"flags": flags, "workload": platform, "wskprops": wsk, "local": local}, props, local_props, wskprops_path
        )

    def pick(self, key: str) -> tuple[object, str]:
        """The first source's value of ``key``, and that source; (None, "") when none has one."""
        for source in _SOURCE_ORDER:
            value = self.values[source].get(key)
            if value not in (None, ""):
                return value, source
        return None, ""

    def where(self, source: str, origin: str) -> str:
        """Where ``source``'s API host was written, for an error line."""
        return {
            "flags": "--apihost",
            "workload": f"{origin}: platform.apihost",
            "wskprops": f"{self.wskprops_path or os.environ.get('WSK_CONFIG_FILE') or Path.home() / '.wskprops'}: APIHOST",
            "local": f"{local_props_path()}: APIHOST",
        }[source]


def _connection(sources: _Sources, apihost: str, source: str, origin: str) -> Connection:
    """The connection to ``apihost`` (named by ``source``): its key checked, the other keys and the
    set-up's settings from the sources."""
    auth, _ = sources.pick("auth")
    if not auth:
        raise NoAuthKeyError(
            f"{origin}: platform.auth: no auth key for {apihost}; pass --auth UUID:KEY, set platform.auth, or AUTH in ~/.wskprops"
        )
    if not isinstance(auth, str) or ":" not in auth:
        raise ConfigError(
            f"{origin}: platform.auth: must look like UUID:KEY (the value has no ':'); copy it from `wsk property get --auth`"
        )
    namespace, _ = sources.pick("namespace")
    insecure, _ = sources.pick("insecure")
    props, local_props = sources.props, sources.local_props
    if props.get("APIHOST") and normalise_apihost(props["APIHOST"]) == apihost:  # the wskprops describe this host
        settings = _wskprops_settings(props, sources.wskprops_path)
    else:
        settings = _wskprops_settings(local_props, local_props_path()) if source == "local" else {}
    return Connection(
        apihost=apihost,
        auth=auth,
        namespace=str(namespace) if namespace else DEFAULT_NAMESPACE,
        insecure=bool(insecure),
        source=source,
        settings=settings,
        served_by=local_platform_name(local_props) if source == "local" else "",
    )


def _wskprops_settings(props: dict[str, str], path: str | os.PathLike | None) -> dict[str, float]:
    """The platform settings a set-up recorded in the wskprops (non-negative numbers)."""
    settings = {}
    for key, name in SETTING_KEYS.items():
        if props.get(key, "") == "":
            continue
        try:
            value = float(props[key])
        except ValueError:
            value = -1.0
        if not value >= 0:
            where = path or os.environ.get("WSK_CONFIG_FILE") or "~/.wskprops"
            raise ConfigError(f"{where}: {key}: {props[key]!r} is not a non-negative number; fix it or remove the line")
        settings[name] = value
    return settings
