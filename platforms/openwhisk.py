"""OpenWhisk (and localwhisk, which is one): the REST client, the connection, activation records,
and ``OpenWhiskPlatform``, the ``platforms.base.Platform`` that a run uses.

**Connection.** Settings come from, in this order: command-line flags (``--apihost``, ``--auth``,
``--namespace``, ``--insecure``), the workload's ``platform`` block, then ``~/.wskprops``
(``APIHOST``, ``AUTH``, ``NAMESPACE`` and faasprof's ``INSECURE=true``), each key on its own, and
last the localwhisk that ``faasprof local start`` left running (``local_props_path()``: a wskprops
that start writes and stop removes, ignored once its ``LOCALWHISK_PID`` has exited; a user's own
``~/.wskprops`` is never written). When none of them names an API host, the caller uses the
embedded localwhisk. The auth key never appears in ``repr``, logs, the manifest or errors. A
wskprops written by a testbed set-up (or by ``local start``) may also state the platform's
settings in faasprof's own keys (``PAUSE_GRACE_MS``, ``USER_MEMORY_MB``; ``wsk`` ignores them).
They are kept only when that file names the API host in use, and the manifest records them as
``platform.settings``.

**Client.** A small synchronous REST client for the control plane: checking a platform before a run
(``GET /``), creating and reading actions, reading activation records. The open-loop send path does
not go through it: ``prepare_request`` formats each instance's request once and the invoker's
asynchronous sender writes it. Errors are typed and never carry the auth key.

**Activation records.** A run's records are fetched over the REST API, so this works the same
against a real OpenWhisk and against localwhisk:

1. ``GET .../activations?docs=true&since=&upto=&limit=200&skip=`` over the run's wall-clock window.
   OpenWhisk lists newest first and filters ``since``/``upto`` (inclusive) against a record's
   ``start``; pages slide ``upto`` down to the oldest ``start`` of each full page and skip the
   records already seen at exactly that millisecond, so records stored while we page shift nothing
   and ``skip`` stays small.
2. ``GET .../activations/{id}`` for every activation id of the run still missing, in rounds with a
   growing delay, because OpenWhisk stores a record only after it has answered the client (a 404
   right after the answer is normal).

Only records whose ``activationId`` the run itself received are kept: other actions, other tenants
and other runs in the same window are never mixed in. ``activations.jsonl`` is written and read by
``faasprof.rundir``.
"""

from __future__ import annotations

import argparse
import base64
import json
import mimetypes
import os
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

import requests
import urllib3

from faasprof import rundir
from faasprof.errors import ConfigError, FaasprofError, NotReadyError
from platforms.base import (
    Platform,
    PlatformError,
    PlatformUnreachable,
    PreparedRequest,
    classify_status,
    format_request,
    parse_json,
    read_request_file,
    split_origin,
)
from platforms.openwhisk_deploy import ensure_workload_actions
from workload.spec import OPENWHISK_ENDPOINT, apihost_problem


# -- connection ---------------------------------------------------------------------------------

DEFAULT_NAMESPACE = "_"
# faasprof's own wskprops keys for the platform's settings, and their names in platform.settings.
SETTING_KEYS = {"PAUSE_GRACE_MS": "pause_grace_ms", "USER_MEMORY_MB": "user_memory_mb"}


@dataclass(frozen=True)
class Connection:
    apihost: str  # normalised: scheme://host[:port], no trailing slash
    auth: str = field(repr=False)
    namespace: str = DEFAULT_NAMESPACE
    insecure: bool = False
    source: str = "flags"  # where apihost came from: flags | workload | wskprops | local (``local start``) | embedded
    settings: dict = field(default_factory=dict, hash=False)  # the set-up's PAUSE_GRACE_MS... (wskprops)

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
        raise ConfigError(f"{path}: cannot read ({error.strerror}); fix its permissions or set WSK_CONFIG_FILE") from None
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
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return {}
    except PermissionError:
        pass  # alive, owned by another user
    return props


def write_local_props(apihost: str, auth: str, namespace: str, pid: int, data_dir: Path, settings: dict[str, float | None]) -> Path:
    """Record a started localwhisk where ``resolve_connection`` finds it: a wskprops (mode 0600: it
    holds the key, as ``~/.wskprops`` does), written through a temporary file and a rename."""
    path = local_props_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [
        f"# faasprof local start: the localwhisk at {apihost}; faasprof uses it when no flag, workload platform",
        "# block or ~/.wskprops names an API host, `faasprof local stop` removes this file, and",
        "# the wsk CLI uses it when WSK_CONFIG_FILE names it.",
        f"APIHOST={apihost}", f"AUTH={auth}", f"NAMESPACE={namespace}",
        *(f"{key}={settings[name]:g}" for key, name in SETTING_KEYS.items() if settings.get(name) is not None),
        f"{LOCAL_PID_KEY}={pid}", f"{LOCAL_DATA_DIR_KEY}={data_dir}",
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


def add_connection_arguments(parser: argparse.ArgumentParser, default: str = "the embedded localwhisk") -> None:
    """The connection flags; ``default`` says what the command uses when nothing names a platform."""
    group = parser.add_argument_group(f"platform connection (default: {default})")
    fallback = "else the workload's platform block, else ~/.wskprops, else the localwhisk of `faasprof local start`"
    group.add_argument("--apihost", help=f"OpenWhisk API host, e.g. https://172.17.0.1 ({fallback})")
    group.add_argument("--auth", help=f"auth key UUID:KEY ({fallback})")
    group.add_argument("--namespace", help=f"namespace (default {DEFAULT_NAMESPACE})")
    group.add_argument("--insecure", action="store_true", default=None, help="do not verify the platform's TLS certificate")


def resolve_connection(
    args: argparse.Namespace | None = None,
    platform: dict | None = None,
    wskprops_path: str | os.PathLike | None = None,
    origin: str = "workload",
) -> Connection | None:
    """The connection to use, or None when nothing names an API host (use the embedded platform).

    ``origin`` names the workload file in error messages.
    """
    platform = platform or {}
    flags = {
        "apihost": getattr(args, "apihost", None),
        "auth": getattr(args, "auth", None),
        "namespace": getattr(args, "namespace", None),
        "insecure": getattr(args, "insecure", None),
    }
    props = read_wskprops(wskprops_path)
    # INSECURE is faasprof's own key (wsk has only its -i flag): the testbed's OpenWhisk has a
    # self-signed certificate, and setup writes INSECURE=true so that no command needs --insecure.
    wsk = {
        "apihost": props.get("APIHOST"),
        "auth": props.get("AUTH"),
        "namespace": props.get("NAMESPACE"),
        "insecure": props.get("INSECURE", "").lower() in ("1", "true", "yes") or None,
    }

    # The localwhisk of `faasprof local start` comes last, and whole: only when nothing else names an API host.
    named = any(values.get("apihost") not in (None, "") for values in (flags, platform, wsk))
    local_props = {} if named else read_local_props()
    local = {"apihost": local_props.get("APIHOST"), "auth": local_props.get("AUTH"), "namespace": local_props.get("NAMESPACE")}

    def pick(key: str):
        for source, values in (("flags", flags), ("workload", platform), ("wskprops", wsk), ("local", local)):
            value = values.get(key)
            if value not in (None, ""):
                return value, source
        return None, None

    apihost, source = pick("apihost")
    if apihost is not None:
        reason = apihost_problem(str(apihost))
        if reason:
            where = {"flags": "--apihost", "workload": f"{origin}: platform.apihost", "wskprops": f"{wskprops_path or os.environ.get('WSK_CONFIG_FILE') or Path.home() / '.wskprops'}: APIHOST",
                     "local": f"{local_props_path()}: APIHOST"}[source]
            raise ConfigError(f"{where}: {reason}")
    if apihost is None:
        if flags["auth"]:
            raise ConfigError("--auth: given without an API host; add --apihost (or drop --auth to use the embedded localwhisk)")
        return None
    auth, _ = pick("auth")
    if not auth:
        raise ConfigError(f"{origin}: platform.auth: no auth key for {apihost}; pass --auth UUID:KEY, set platform.auth, or AUTH in ~/.wskprops")
    if ":" not in auth:
        raise ConfigError(f"{origin}: platform.auth: must look like UUID:KEY (the value has no ':'); copy it from `wsk property get --auth`")
    namespace, _ = pick("namespace")
    insecure, _ = pick("insecure")
    apihost = normalise_apihost(apihost)
    describes_this_host = bool(props.get("APIHOST")) and normalise_apihost(props["APIHOST"]) == apihost
    if describes_this_host:
        settings = _wskprops_settings(props, wskprops_path)
    else:
        settings = _wskprops_settings(local_props, local_props_path()) if source == "local" else {}
    return Connection(
        apihost=apihost,
        auth=auth,
        namespace=namespace or DEFAULT_NAMESPACE,
        insecure=bool(insecure),
        source=source,
        settings=settings,
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


# -- REST client ----------------------------------------------------------------------------------

DEFAULT_TIMEOUT_S = 30.0
ACTIVATIONS_PAGE_LIMIT = 200  # OpenWhisk's maximum ``limit`` for GET .../activations


def quote_name(name: str) -> str:
    """An action name as a URL path: packages keep their ``/``, everything else is escaped."""
    return "/".join(urllib.parse.quote(part, safe="") for part in name.strip("/").split("/"))


class OpenWhiskClient:
    """The control-plane REST client of one connection (a keep-alive session; close it, or use ``with``)."""

    def __init__(self, connection: Connection, timeout_s: float = DEFAULT_TIMEOUT_S):
        self.connection = connection
        self.timeout_s = timeout_s
        self.session = requests.Session()
        self.session.auth = connection.auth_pair
        self.session.verify = not connection.insecure
        self.session.headers["User-Agent"] = "faasprof"
        if connection.insecure:
            urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)

    def close(self) -> None:
        self.session.close()

    def __enter__(self) -> "OpenWhiskClient":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- plumbing ---------------------------------------------------------------------------

    def namespace_url(self, *parts: str) -> str:
        ns = urllib.parse.quote(self.connection.namespace, safe="")
        return "/".join([self.connection.apihost, "api/v1/namespaces", ns, *parts])

    def request(self, method: str, url: str, expect: tuple[int, ...] = (200,), **kwargs) -> requests.Response:
        kwargs.setdefault("timeout", self.timeout_s)
        try:
            response = self.session.request(method, url, **kwargs)
        except requests.exceptions.SSLError as error:
            raise PlatformUnreachable(
                f"{self.connection.apihost}: TLS verification failed ({type(error).__name__}); "
                "pass --insecure (or platform.insecure: true) for a self-signed OpenWhisk",
                url, _os_reason(error),
            ) from None
        except requests.exceptions.ConnectionError as error:
            raise PlatformUnreachable(
                f"{self.connection.apihost}: cannot connect; is OpenWhisk running there? "
                "(check --apihost, the workload's platform block or APIHOST in ~/.wskprops)",
                url, _os_reason(error),
            ) from None
        except requests.exceptions.Timeout:
            raise PlatformUnreachable(f"{self.connection.apihost}: no answer within {self.timeout_s:g} s to {method} {_path(url)}", url, "timed out") from None
        if response.status_code == 401:
            raise NotReadyError(
                f"{self.connection.apihost}: the auth key was rejected (401); check --auth, platform.auth or AUTH in ~/.wskprops"
            )
        if response.status_code not in expect:
            raise PlatformError(
                f"{self.connection.apihost}: {method} {_path(url)} answered {response.status_code}: {_error_text(response)}",
                status=response.status_code,
                body=_json_or_text(response),
            )
        return response

    # -- platform ---------------------------------------------------------------------------

    def info(self) -> dict:
        """``GET /``: the platform's description, runtimes and limits."""
        response = self.request("GET", self.connection.apihost + "/", timeout=min(self.timeout_s, 10.0))
        try:
            return response.json()
        except ValueError:
            raise NotReadyError(f"{self.connection.apihost}: GET / did not answer JSON; is this an OpenWhisk API host?") from None

    def api_info(self, timeout_s: float = 5.0) -> dict:
        """``GET /api/v1``: the API's description (the doctor's probe: is the REST API there?)."""
        response = self.request("GET", self.connection.apihost + "/api/v1", timeout=min(self.timeout_s, timeout_s))
        try:
            return response.json() if response.content else {}
        except ValueError:
            raise NotReadyError(f"{self.connection.apihost}: GET /api/v1 did not answer JSON; is this an OpenWhisk API host?") from None

    # -- actions ----------------------------------------------------------------------------

    def get_action(self, name: str) -> dict | None:
        """The action, or None when it does not exist."""
        try:
            return self.request("GET", self.namespace_url("actions", quote_name(name)), params={"code": "false"}).json()
        except PlatformError as error:
            if error.status == 404:
                return None
            raise

    def action_names(self, limit: int = 200) -> list[str]:
        """The names of the namespace's actions (the first ``limit``, most recently updated first)."""
        docs = self.request("GET", self.namespace_url("actions"), params={"limit": limit}).json()
        return [doc["name"] for doc in docs if isinstance(doc, dict) and isinstance(doc.get("name"), str)] if isinstance(docs, list) else []

    def put_action(self, name: str, action: dict, overwrite: bool = True) -> dict:
        url = self.namespace_url("actions", quote_name(name))
        return self.request("PUT", url, expect=(200,), params={"overwrite": str(overwrite).lower()}, json=action).json()

    def delete_action(self, name: str) -> bool:
        try:
            self.request("DELETE", self.namespace_url("actions", quote_name(name)))
            return True
        except PlatformError as error:
            if error.status == 404:
                return False
            raise

    def invoke(self, name: str, params: dict | None = None, blocking: bool = True, result: bool = False) -> requests.Response:
        """One invocation (control plane use: smoke tests, capacity probes). Any status is returned."""
        url = self.namespace_url("actions", quote_name(name))
        query = {"blocking": str(blocking).lower(), "result": str(result).lower()}
        return self.request("POST", url, expect=tuple(range(100, 600)), params=query, json=params or {})

    # -- activations ------------------------------------------------------------------------

    def list_activations(
        self,
        since_ms: int | None = None,
        upto_ms: int | None = None,
        limit: int = ACTIVATIONS_PAGE_LIMIT,
        skip: int = 0,
        name: str | None = None,
        docs: bool = True,
    ) -> list[dict]:
        """One page of ``GET .../activations`` (newest first, as OpenWhisk returns them)."""
        params: dict[str, Any] = {"limit": min(limit, ACTIVATIONS_PAGE_LIMIT), "skip": skip, "docs": str(docs).lower()}
        if since_ms is not None:
            params["since"] = int(since_ms)
        if upto_ms is not None:
            params["upto"] = int(upto_ms)
        if name:
            params["name"] = name
        return self.request("GET", self.namespace_url("activations"), params=params).json()

    def iter_activations(self, since_ms: int | None = None, upto_ms: int | None = None, name: str | None = None) -> Iterator[dict]:
        """Every record in the window, paging by ``skip``."""
        skip = 0
        while True:
            page = self.list_activations(since_ms=since_ms, upto_ms=upto_ms, skip=skip, name=name)
            yield from page
            if len(page) < ACTIVATIONS_PAGE_LIMIT:
                return
            skip += len(page)

    def get_activation(self, activation_id: str) -> dict | None:
        """One record by id, or None while the platform has not stored it (404)."""
        try:
            return self.request("GET", self.namespace_url("activations", activation_id)).json()
        except PlatformError as error:
            if error.status == 404:
                return None
            raise


def _os_reason(error: BaseException) -> str:
    """The operating system's words for a failed connection ("Connection refused"), found in the
    chain of wrapped exceptions, else the exception's type."""
    seen: set[int] = set()
    pending: list[Any] = [error]
    while pending:
        item = pending.pop(0)
        if id(item) in seen or not isinstance(item, BaseException):
            continue
        seen.add(id(item))
        if isinstance(item, OSError) and item.strerror:
            return item.strerror
        pending.extend([*item.args, item.__cause__, item.__context__, getattr(item, "reason", None)])
    return type(error).__name__


def _path(url: str) -> str:
    return urllib.parse.urlsplit(url).path


def _json_or_text(response: requests.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return response.text[:500]


def _error_text(response: requests.Response) -> str:
    body = _json_or_text(response)
    if isinstance(body, dict) and "error" in body:
        return str(body["error"])
    return (body if isinstance(body, str) else json.dumps(body))[:200].strip() or response.reason


def require_platform(connection: Connection) -> OpenWhiskClient:
    """A client whose platform answered ``GET /``; raises NotReadyError otherwise."""
    client = OpenWhiskClient(connection)
    try:
        client.info()
    except Exception:
        client.close()
        raise
    return client


# -- activation records ---------------------------------------------------------------------------

DEFAULT_RETRY_DELAYS_S = (0.5, 1.0, 2.0, 4.0)
MAX_ID_LOOKUPS_PER_ROUND = 2000


@dataclass
class FetchReport:
    """What ``fetch_records`` did, for the summary."""

    wanted: int = 0
    found: int = 0
    listed_pages: int = 0
    listed_records: int = 0
    foreign_records: int = 0  # records in the window that belong to something else
    id_lookups: int = 0
    rounds: int = 0
    missing_ids: list[str] = field(default_factory=list)
    window_ms: tuple[int, int] | None = None

    def to_json(self) -> dict:
        return {
            "wanted": self.wanted,
            "found": self.found,
            "missing": len(self.missing_ids),
            "listed_pages": self.listed_pages,
            "listed_records": self.listed_records,
            "foreign_records_ignored": self.foreign_records,
            "id_lookups": self.id_lookups,
            "lookup_rounds": self.rounds,
            "window_ms": list(self.window_ms) if self.window_ms else None,
        }


def list_window(client, since_ms: int, upto_ms: int, report: FetchReport | None = None) -> Iterable[dict]:
    """Every record whose ``start`` is in [since_ms, upto_ms], newest first, paging by upto/skip."""
    upto, skip = int(upto_ms), 0
    while True:
        page = client.list_activations(since_ms=since_ms, upto_ms=upto, limit=ACTIVATIONS_PAGE_LIMIT, skip=skip)
        if report is not None:
            report.listed_pages += 1
            report.listed_records += len(page)
        yield from page
        if len(page) < ACTIVATIONS_PAGE_LIMIT:
            return
        oldest = min(int(record.get("start", upto)) for record in page)
        at_oldest = sum(1 for record in page if int(record.get("start", upto)) == oldest)
        if oldest == upto:
            skip += len(page)  # a whole page in one millisecond: keep the window, skip further
        else:
            upto, skip = oldest, at_oldest


def fetch_records(
    client,
    activation_ids: Iterable[str],
    since_ms: int,
    upto_ms: int,
    retry_delays_s: Iterable[float] = DEFAULT_RETRY_DELAYS_S,
    sleep: Callable[[float], None] = time.sleep,
    progress: Callable[[str], None] | None = None,
    list_first: bool = True,
) -> tuple[list[dict], FetchReport]:
    """The records of ``activation_ids`` (see the module docstring); returns (records, report).

    ``list_first=False`` skips the window listing and asks by id only (a few stragglers).
    """
    wanted = {i for i in activation_ids if i}
    report = FetchReport(wanted=len(wanted), window_ms=(int(since_ms), int(upto_ms)))
    found: dict[str, dict] = {}
    if list_first:
        for record in list_window(client, since_ms, upto_ms, report):
            activation_id = record.get("activationId")
            if activation_id in wanted:
                found[activation_id] = record
            else:
                report.foreign_records += 1
        if progress:
            progress(f"listed {report.listed_records} records in {report.listed_pages} pages; {len(found)}/{len(wanted)} belong to this run")
    for delay in [0.0, *retry_delays_s]:
        missing = sorted(wanted - found.keys())
        if not missing:
            break
        if delay:
            sleep(delay)
        report.rounds += 1
        for activation_id in missing[:MAX_ID_LOOKUPS_PER_ROUND]:
            report.id_lookups += 1
            record = client.get_activation(activation_id)
            if record is not None and record.get("activationId", activation_id) == activation_id:
                found[activation_id] = record
        if progress:
            progress(f"lookup round {report.rounds}: {len(wanted) - len(found)} records still missing")
    report.found = len(found)
    report.missing_ids = sorted(wanted - found.keys())
    return rundir.sort_records(found.values()), report


# -- waiting for a run's records ------------------------------------------------------------------

DEFAULT_ACTION_TIMEOUT_MS = 60_000  # OpenWhisk's default action time limit
RECORD_STORE_MARGIN_S = 15.0  # after an action's time limit: the platform's own delay in storing it
WAIT_POLL_S = 1.0
WAIT_PROGRESS_S = 5.0
WINDOW_MARGIN_MS = 1_000


def action_time_limits_ms(client, functions: Iterable[str]) -> dict[str, int]:
    """Each action's time limit (``limits.timeout``), OpenWhisk's default where it cannot be read."""
    limits: dict[str, int] = {}
    for name in sorted(set(functions)):
        timeout = None
        try:
            action = client.get_action(name)
        except Exception:  # a control-plane hiccup costs only precision in the deadline
            action = None
        if isinstance(action, dict):
            timeout = (action.get("limits") or {}).get("timeout")
        limits[name] = int(timeout) if isinstance(timeout, (int, float)) and timeout > 0 else DEFAULT_ACTION_TIMEOUT_MS
    return limits


def wait_for_records(
    client,
    wanted: Iterable[str],
    since_ms: int,
    deadline_monotonic_s: float,
    found: dict[str, dict],
    say: Callable[[str], None] | None = None,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    wall_ms: Callable[[], int] = lambda: time.time_ns() // 1_000_000,
) -> set[str]:
    """Poll until every wanted activation has a record or the deadline passes; returns the missing ids.

    Records go into ``found`` as they arrive, so a caller interrupted (Ctrl-C) still holds every
    record fetched so far. The window is listed first; afterwards only what is missing is asked
    for (by id when few are, else by listing the window again). Progress goes to ``say``.
    """
    wanted = {i for i in wanted if i}
    list_first = True
    next_progress = clock() + WAIT_PROGRESS_S
    announced = False
    while True:
        missing = wanted - found.keys()
        if not missing:
            return set()
        records, _ = fetch_records(client, missing, since_ms, wall_ms() + WINDOW_MARGIN_MS, retry_delays_s=(), list_first=list_first,
                                   progress=say if list_first and not announced else None)
        found.update((record["activationId"], record) for record in records)
        missing = wanted - found.keys()
        now = clock()
        if not missing or now >= deadline_monotonic_s:
            return missing
        list_first = len(missing) > MAX_ID_LOOKUPS_PER_ROUND
        if say and (not announced or now >= next_progress):
            say(f"waiting for activation records: {len(wanted) - len(missing):,} of {len(wanted):,} stored, "
                f"{len(missing):,} still running or being stored; giving up in {deadline_monotonic_s - now:.0f} s (Ctrl-C saves what was fetched)")
            announced = True
            next_progress = now + WAIT_PROGRESS_S
        sleep(min(WAIT_POLL_S, max(0.0, deadline_monotonic_s - now)))


def save_run_records(run_dir: str | os.PathLike, client, say: Callable[[str], None] | None = None, wait: bool = True,
                     clock: Callable[[], float] = time.monotonic, report: dict | None = None) -> dict:
    """Fetch every record of a run into its ``activations.jsonl``, waiting for activations still running.

    The deadline is derived from the run, not fixed: the last send plus the longest time limit of
    the run's actions plus ``RECORD_STORE_MARGIN_S`` (nothing can still be running after that).
    Records already saved are kept; the file is written (atomically) on every exit path, a
    Ctrl-C included, before the interrupt goes on. Returns the report for the manifest/summary
    (filled into ``report`` when given, so an interrupted caller has it too): expected, saved,
    missing, the deadline and why records are missing.
    """
    run_dir = Path(run_dir)
    manifest = rundir.read_manifest(run_dir)
    rows = rundir.read_invocations(run_dir)
    wanted = {row["activation_id"] for row in rows if row["activation_id"]}
    functions = {row["function"] for row in rows if row["activation_id"]}
    sent = [int(row["sent_ns"]) for row in rows if row["sent_ns"]]
    wall_zero_ns = manifest.wall_ns_at_zero
    since_ms = (wall_zero_ns + (min(sent) if sent else 0)) // 1_000_000 - WINDOW_MARGIN_MS
    last_sent_wall_ms = (wall_zero_ns + (max(sent) if sent else 0)) // 1_000_000
    path = rundir.activations_path(run_dir)
    found = {key: value for key, value in rundir.read_record_ids(path).items() if key in wanted}
    limits = action_time_limits_ms(client, functions) if wanted - found.keys() else {}
    longest_ms = max(limits.values(), default=DEFAULT_ACTION_TIMEOUT_MS)
    deadline_wall_ms = last_sent_wall_ms + longest_ms + int(RECORD_STORE_MARGIN_S * 1000)
    remaining_s = max(0.0, (deadline_wall_ms - time.time_ns() // 1_000_000) / 1000) if wait else 0.0
    report = {} if report is None else report
    report.update(expected=len(wanted), deadline_s_after_last_send=longest_ms / 1000 + RECORD_STORE_MARGIN_S, interrupted=False)
    missing: set[str] = wanted - found.keys()
    try:
        if missing:
            missing = wait_for_records(client, wanted, since_ms, clock() + remaining_s, found, say=say, clock=clock)
    except KeyboardInterrupt:
        report["interrupted"] = True
        missing = wanted - found.keys()
        raise
    finally:
        report["saved"] = rundir.write_records(path, rundir.sort_records(found.values()))
        report["missing"] = len(missing)
        report["file"] = rundir.ACTIVATIONS
        if missing:
            if report["interrupted"]:
                why = "waiting was interrupted (Ctrl-C); fetch them later with faasprof analyze RUN_DIR and the platform's --apihost/--auth"
            elif not wait:
                why = "not waited for"
            else:
                why = (f"not stored by the platform {report['deadline_s_after_last_send']:g} s after the last send "
                       f"(the actions' longest time limit, {longest_ms / 1000:g} s, plus {RECORD_STORE_MARGIN_S:g} s): lost by the platform")
            report["missing_why"] = why
            report["missing_ids_sample"] = sorted(missing)[:20]
    return report


# -- requests and responses -----------------------------------------------------------------------

KIND_ACTION = "action"  # POST /api/v1/namespaces/{ns}/actions/{name}?blocking=...
KIND_WEB = "web"  # POST /api/v1/web/{ns}/default/{name} with the raw bytes of data_file
# OpenWhisk's nginx and localwhisk keep idle connections for over a minute.
IDLE_REUSE_MAX_S = 30.0
APP_ERROR_STATUS = 502  # OpenWhisk's answer when the action itself failed


def _web_path(namespace: str, name: str) -> str:
    """Web actions live at /api/v1/web/{ns}/{package}/{action}; an unpackaged action is in "default"."""
    parts = name.strip("/").split("/")
    if len(parts) >= 3:  # "/ns/pkg/action" given in full
        namespace, parts = parts[0], parts[1:]
    if len(parts) == 1:
        parts = ["default", parts[0]]
    return "/api/v1/web/" + urllib.parse.quote(namespace, safe="") + "/" + "/".join(urllib.parse.quote(p, safe="") for p in parts)


def prepare_action_request(instance: Any, connection: Connection, web_namespace: str | None = None, origin_name: str = "<workload>") -> PreparedRequest:
    """Format the request of one OpenWhisk instance (``workload.spec.Instance``).

    ``web_namespace`` is the concrete namespace for web action URLs (web URLs carry no
    credentials, so ``_`` cannot be resolved there); it defaults to the connection's namespace.
    """
    if connection is None:
        raise ValueError("an OpenWhisk instance needs a connection")
    api_origin, base = split_origin(connection.apihost)
    base = base.rstrip("/")
    if instance.data_file is not None and instance.data_mode == "web":
        data = read_request_file(instance, "data_file", origin_name)
        content_type = instance.content_type or mimetypes.guess_type(str(instance.data_file))[0] or "application/octet-stream"
        path = base + _web_path(web_namespace or connection.namespace, instance.function)
        # A web action call is anonymous, as OpenWhisk's web URLs are; the key stays private.
        payload = format_request(api_origin, path, data, content_type, host=getattr(instance, "host", None))
        return PreparedRequest(KIND_WEB, api_origin, payload, f"POST {connection.apihost}{path}", classify, IDLE_REUSE_MAX_S)

    params = dict(instance.params or {})
    if instance.data_file is not None:  # data_mode "base64": the bytes as the parameter `data`
        params["data"] = base64.b64encode(read_request_file(instance, "data_file", origin_name)).decode("ascii")
    body = json.dumps(params).encode()
    namespace = urllib.parse.quote(connection.namespace, safe="")
    blocking = "true" if instance.blocking else "false"
    path = f"{base}/api/v1/namespaces/{namespace}/actions/{quote_name(instance.function)}?blocking={blocking}"
    payload = format_request(api_origin, path, body, "application/json", auth=connection.auth, host=getattr(instance, "host", None))
    return PreparedRequest(KIND_ACTION, api_origin, payload, f"POST {connection.apihost}{path}", classify, IDLE_REUSE_MAX_S)


def classify(status: int, activation_id: str | None, body: bytes) -> tuple[str, str | None, str | None]:
    """``(outcome, activation_id, error)`` of one OpenWhisk response.

    - 2xx: ``ok`` (a non-blocking 202, a blocking 200, or a blocking call still running: 202);
    - 502: ``app_error`` (the action failed: application or developer error, with its message);
    - 429: ``throttled`` with OpenWhisk's message (per-minute or concurrent limit);
    - 408, 504: ``timeout``; anything else: ``failed`` with the status and message.

    The activation id comes from the ``x-openwhisk-activation-id`` header, else from the body.
    """
    parsed = None
    if activation_id is None and body[:1] == b"{":
        parsed = parse_json(body)
        if isinstance(parsed, dict):
            found = parsed.get("activationId")
            activation_id = found if isinstance(found, str) else None
    return classify_status(status, activation_id, body, parsed, APP_ERROR_STATUS)


# -- the platform ---------------------------------------------------------------------------------


class OpenWhiskPlatform(Platform):
    """An OpenWhisk (or localwhisk) reached through ``connection``."""

    endpoint = OPENWHISK_ENDPOINT

    def __init__(self, connection: Connection, timeout_s: float = DEFAULT_TIMEOUT_S):
        self.connection = connection
        self.client = OpenWhiskClient(connection, timeout_s=timeout_s)
        self.info: dict = {}
        self.web_namespace: str | None = None

    def close(self) -> None:
        self.client.close()

    def check(self, instances: Sequence[Any] = ()) -> dict:
        """``GET /``: the platform's description, runtimes and limits (kept in ``info``)."""
        self.info = self.client.info()
        return self.info

    def ensure_deployed(self, workload: Any) -> dict[str, str]:
        """Every action the workload invokes here exists (see ``openwhisk_deploy.ensure_workload_actions``);
        the namespace of web action URLs is resolved too."""
        actions = ensure_workload_actions(self.client, workload, self.serves)
        self.resolve_web_namespace(any(i.data_file is not None and i.data_mode == "web" and self.serves(i) for i in workload.instances))
        return actions

    def resolve_web_namespace(self, needed: bool) -> None:
        """Web URLs carry the namespace by name; ``_`` (the key's default) is looked up once."""
        namespace = self.connection.namespace
        if not needed or namespace != "_":
            self.web_namespace = namespace
            return
        try:
            names = self.client.request("GET", self.connection.apihost + "/api/v1/namespaces").json()
        except (FaasprofError, ValueError):
            names = None
        if not names or not isinstance(names, list):
            raise NotReadyError(f"{self.connection.apihost}: cannot find the namespace for web action calls; pass --namespace NAME")
        self.web_namespace = str(names[0])

    def prepare_request(self, instance: Any, origin_name: str = "<workload>") -> PreparedRequest:
        return prepare_action_request(instance, self.connection, self.web_namespace, origin_name)

    def fetch_records(self, run_dir: str | os.PathLike, say: Callable[[str], None] | None = None, wait: bool = True,
                      report: dict | None = None) -> dict:
        return save_run_records(run_dir, self.client, say=say, wait=wait, report=report)

    def describe(self) -> dict:
        info = self.info or {}
        described = {
            "kind": "localwhisk" if "localwhisk" in info else "openwhisk",
            **self.connection.describe(),
            "version": info.get("build") or info.get("version") or info.get("description"),
            "limits": info.get("limits"),
            "info": info,
        }
        if "localwhisk" in info:
            described["localwhisk"] = info["localwhisk"]
        return described
