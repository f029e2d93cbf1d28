"""The platform interface: what the invoker, the analyzer and the doctor ask of a FaaS platform.

A platform serves the workload instances whose ``endpoint`` is its own (``Platform.endpoint``). It
owns the shape of those instances in a workload: whether they name a function the platform hosts
(``names_functions``: an OpenWhisk action, from the catalogue or deployed) or a URL, the keys only
its instances take (``instance_keys``, of them ``required_keys``) and their checks
(``validate_instance``); the workload model asks ``faasprof.platforms.registry`` for them, and checks an
instance against what its platform refuses (``PlatformLimits``). It answers six questions:

- ``check(instances)``: is it there? (its description, e.g. OpenWhisk's ``GET /``), raising
  NotReadyError when it does not answer;
- ``ensure_deployed(workload)``: make every function the workload invokes exist there;
- ``prepare_request(instance, origin_name)``: the complete HTTP/1.1 request of one instance,
  formatted once (``PreparedRequest``), which the sender writes as it is;
- ``classify(status, activation_id, body)``: one response as an HTTP-level outcome of
  ``faasprof.outcomes``;
- ``fetch_records(run_dir, ...)``: the platform's own records of the run's invocations (OpenWhisk's
  activation records) into the run directory, waiting for those still due; ``find_records(ids, ...)``
  the records of given invocations, for the analyzer to save or append;
- ``describe()``: the platform's block of the run manifest (never a secret).

The HTTP message helpers shared by every implementation live here too.
"""

from __future__ import annotations

import base64
import json
import os
import urllib.parse
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Collection, Sequence

from faasprof.addresses import redact_url, url_has_credentials
from faasprof.bounded import LIMITS, BoundedReadError, read_bounded
from faasprof.errors import ConfigError, NotReadyError, RunError

ERROR_MAX_CHARS = 200

Origin = tuple  # (scheme, host, port)
# (status, activation id from the headers or None, body) -> (outcome, activation id, error)
Classifier = Callable[[int, "str | None", bytes], "tuple[str, str | None, str | None]"]


class PlatformError(RunError):
    """The platform answered with an error status; ``status`` holds it."""

    def __init__(self, message: str, status: int | None = None, body: Any = None):
        super().__init__(message)
        self.status = status
        self.body = body


class PlatformUnreachable(NotReadyError):
    """No answer from the platform at all (refused, timed out, TLS failed); ``reason`` says which."""

    def __init__(self, message: str, url: str, reason: str):
        super().__init__(message)
        self.url = url
        self.reason = reason


@dataclass(frozen=True)
class PreparedRequest:
    """One instance's request, formatted once: ``payload`` is the complete HTTP/1.1 message.

    ``classify`` is the platform's reading of a response to it; ``idle_reuse_max_s`` the longest
    a keep-alive socket to its origin may sit idle and still be reused (servers close idle
    connections at their own pace, and a request written as the server closes is lost)."""

    kind: str
    origin: Origin
    payload: bytes
    description: str  # "POST http://host/path" without credentials, for messages
    classify: Classifier
    idle_reuse_max_s: float

    def __repr__(self) -> str:  # the payload holds the auth header: never show it
        return f"PreparedRequest({self.kind}, {self.description})"


@dataclass(frozen=True)
class PlatformLimits:
    """What a platform refuses: memory limits outside [min, max], request bodies above a size.

    ``None`` means unknown (not checked). ``description`` names the platform in messages."""

    description: str
    min_memory_mb: int | None = None
    max_memory_mb: int | None = None
    max_payload_bytes: int | None = None
    memory_fix: str = "lower memory_mb"
    payload_fix: str = "send a smaller file"


class Platform(ABC):
    """One FaaS platform a run talks to (see the module docstring)."""

    endpoint: ClassVar[str] = ""  # the workload's ``endpoint`` value this platform serves
    # Whether an instance names a function the platform hosts (``application``: catalogue functions
    # get their sample input, a memory limit and the platform's limits apply) rather than a URL.
    names_functions: ClassVar[bool] = False
    instance_keys: ClassVar[tuple[str, ...]] = ()  # instance keys only this platform takes
    required_keys: ClassVar[tuple[str, ...]] = ()  # of those, the ones every instance gives
    # A plug-in's (faasprof.platforms entry point): the JSON Schema of each of its instance_keys,
    # added to the workload schema (the built-ins' stand in schema.json).
    instance_key_schemas: ClassVar[dict[str, dict]] = {}
    # Reached through the connection a command resolves (flags, the workload's platform block,
    # ~/.wskprops); with none, a run starts the embedded localwhisk and reaches it as this platform.
    reached_by_connection: ClassVar[bool] = False
    # Has records of its own that ``fetch_records`` saves and ``find_records`` finds (a platform that
    # has implements both); without, the analyzer takes each answer
    # as the call's final outcome (``faasprof.analyzer.outcome_columns.records_due``) instead of a missing record.
    keeps_records: ClassVar[bool] = False
    # Whether a call may be answered before its function ends (OpenWhisk's non-blocking calls get a
    # 202 at once); without, every answer comes at the function's end, whatever ``blocking`` says.
    answers_early: ClassVar[bool] = False
    info: dict = {}  # what ``check`` learnt (OpenWhisk: ``GET /``); replaced, never changed in place

    @classmethod
    def serves(cls, instance: Any) -> bool:
        """Whether ``instance`` (a ``faasprof.workload.spec.Instance``) is invoked on this kind of platform."""
        return getattr(instance, "endpoint", None) == cls.endpoint

    @classmethod
    def validate_instance(cls, spec: dict) -> list[tuple[str, str]]:
        """``(key, problem)`` for each of this platform's keys that one instance's JSON (valid against
        the schema) gets wrong, beyond what the schema says: a missing ``required_keys`` entry by
        default; a subclass adds its own checks. The problem names the fix."""
        return [
            (key, f'required when endpoint is "{cls.endpoint}"; add it') for key in cls.required_keys if key not in spec
        ]

    @classmethod
    def for_workload(cls, workload: Any = None, connection: Any = None, **settings: Any) -> "Platform":
        """The platform a run of ``workload`` uses. ``connection`` is what the command resolved (or
        the invoker started) for a platform ``reached_by_connection``; ``settings`` are a platform's
        own (OpenWhisk: ``web_namespace``); both are ignored by a platform that takes none."""
        return cls()

    @abstractmethod
    def check(self, instances: Sequence[Any] = ()) -> dict:
        """The platform's description when it answers; NotReadyError naming the fix otherwise."""

    @abstractmethod
    def ensure_deployed(self, workload: Any) -> dict[str, str]:
        """Make every function ``workload`` invokes here exist; returns {function: status}."""

    @abstractmethod
    def prepare_request(self, instance: Any, origin_name: str = "<workload>") -> PreparedRequest:
        """The request of one instance, formatted once."""

    @abstractmethod
    def fetch_records(
        self,
        run_dir: str | os.PathLike,
        say: Callable[[str], None] | None = None,
        wait: bool = True,
        report: dict | None = None,
    ) -> dict:
        """Save the platform's records of the run's invocations into ``run_dir``; returns the report."""

    def find_records(
        self,
        activation_ids: Collection[str],
        since_ms: int,
        upto_ms: int,
        retry_delays_s: Sequence[float] | None = None,
        say: Callable[[str], None] | None = None,
        stragglers: bool = False,
    ) -> tuple[list[dict], dict]:
        """The records of ``activation_ids`` (their ``start`` within ``[since_ms, upto_ms]``, epoch
        ms) that the platform holds, ordered by ``start``, and a report of the search for the
        summary (``found`` and ``missing`` counts at least). Ids still missing are asked again after
        each of ``retry_delays_s`` (None: the platform's own delays); ``stragglers``: a few records
        missing from a saved file. A platform that keeps no records (``keeps_records``) finds none."""
        wanted = {i for i in activation_ids if i}
        return [], {"wanted": len(wanted), "found": 0, "missing": len(wanted)}

    @abstractmethod
    def describe(self) -> dict:
        """The manifest's ``platform`` block for this platform (never a secret)."""

    def close(self) -> None:  # noqa: B027 (a default, not abstract: most platforms hold nothing to release)
        """Release what the platform object holds (sessions); safe twice."""

    def __enter__(self) -> "Platform":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


# -- HTTP message helpers ------------------------------------------------------------------------


def split_origin(url: str) -> tuple[Origin, str]:
    """``(scheme, host, port)`` and the path+query of an http(s) URL."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"not an http(s) URL: {url}")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    return (parts.scheme, parts.hostname, port), path


def _host_header(origin: Origin) -> str:
    scheme, host, port = origin
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    default = 443 if scheme == "https" else 80
    return host if port == default else f"{host}:{port}"


def format_request(
    origin: Origin, path: str, body: bytes, content_type: str, auth: str | None = None, host: str | None = None
) -> bytes:
    """A complete ``POST`` message with a fixed Content-Length (keep-alive, no chunking).

    ``host`` replaces the Host header (FaaSProfiler's ``instances.*.host``: an ingress routes by it)."""
    lines = [
        f"POST {path} HTTP/1.1",
        f"Host: {host or _host_header(origin)}",
        "User-Agent: faasprof",
        "Accept: application/json",
        f"Content-Type: {content_type}",
        f"Content-Length: {len(body)}",
    ]
    if auth is not None:
        lines.append("Authorization: Basic " + base64.b64encode(auth.encode()).decode("ascii"))
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def url_problem(url: str) -> str | None:
    """Why ``url`` cannot be sent to (with the fix), or None when it is a usable http(s) URL."""
    shown = json.dumps(redact_url(url))
    shown = shown if len(shown) <= 40 else shown[:37] + "..."
    if url_has_credentials(url):
        # faasprof sends no credentials to a generic URL, and a password written here would be shown and stored.
        return f"{shown} holds credentials (user:password@), which faasprof never sends nor stores; remove them"
    if not url.startswith(("http://", "https://")):
        return f"{shown} is not an http:// or https:// URL; write it as http://HOST[:PORT]/PATH"
    if any(ch.isspace() for ch in url):
        return f"{shown} contains spaces; percent-encode them (%20) or remove them"
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port
    except ValueError as error:
        return f"{shown} has a bad port ({error}); write it as http://HOST:PORT/PATH with PORT in 1..65535"
    if not parts.hostname:
        return f"{shown} has no host; write it as http://HOST[:PORT]/PATH"
    if port == 0:
        return f"{shown} has port 0; use a port in 1..65535"
    return None


def read_request_file(instance: Any, key: str, origin: str) -> bytes:
    """The bytes of an instance's ``param_file``/``data_file``; ConfigError naming the field."""
    path = getattr(instance, key)
    try:
        return read_bounded(path, LIMITS[key], key)
    except BoundedReadError as error:
        raise ConfigError(f"{origin}: instances.{instance.name}.{key}: {error}") from None


def shorten(text: str) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= ERROR_MAX_CHARS else text[: ERROR_MAX_CHARS - 1] + "…"


def parse_json(body: bytes) -> Any:
    try:
        return json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return None


def error_text(body: bytes, parsed: Any) -> str:
    """A response's error message: ``{"error": ...}``, an activation's ``response.result.error``, or the body."""
    if isinstance(parsed, dict):
        if "error" in parsed:
            return shorten(parsed["error"] if isinstance(parsed["error"], str) else json.dumps(parsed["error"]))
        response = parsed.get("response")
        if isinstance(response, dict):
            result = response.get("result")
            if isinstance(result, dict) and "error" in result:
                error = result["error"]
                return shorten(error if isinstance(error, str) else json.dumps(error))
            if response.get("status"):
                return shorten(str(response["status"]))
    text = body[:ERROR_MAX_CHARS].decode("utf-8", "replace")
    return shorten(text) if text.strip() else ""


def classify_status(
    status: int, activation_id: str | None, body: bytes, parsed: Any, app_error_status: int | None
) -> tuple[str, str | None, str | None]:
    """The outcome of one response by its status (see ``faasprof.outcomes``):

    - 2xx: ``ok``;
    - ``app_error_status`` (OpenWhisk: 502): ``app_error`` (the function failed, with its message);
    - 429: ``throttled`` with the platform's message;
    - 408, 504: ``timeout``; anything else: ``failed`` with the status and message.
    """
    if 200 <= status < 300:
        return "ok", activation_id, None
    if parsed is None:
        parsed = parse_json(body) if body[:1] in (b"{", b"[") else None
    message = error_text(body, parsed)
    if status == 429:
        return "throttled", activation_id, message or "429 Too Many Requests"
    if app_error_status is not None and status == app_error_status:
        return "app_error", activation_id, message or f"{status} action error"
    if status in (408, 504):
        return "timeout", activation_id, f"HTTP {status}" + (f": {message}" if message else "")
    return "failed", activation_id, f"HTTP {status}" + (f": {message}" if message else "")
