"""The control-plane REST client of an OpenWhisk (or localwhisk).

A small synchronous client: checking a platform before a run (``GET /``), creating and reading
actions, reading activation records. The open-loop send path does not go through it:
``faasprof.platforms.openwhisk.platform.prepare_action_request`` formats each instance's request once and
the invoker's asynchronous sender writes it. Errors are typed and never carry the auth key.
"""

from __future__ import annotations

import json
import urllib.parse
from typing import Any, Iterator

import requests
import urllib3

from faasprof.errors import NotReadyError
from faasprof.platforms.base import PlatformError, PlatformLimits, PlatformUnreachable
from faasprof.platforms.openwhisk.connection import Connection

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
                url,
                _os_reason(error),
            ) from None
        except requests.exceptions.ConnectionError as error:
            raise PlatformUnreachable(
                f"{self.connection.apihost}: cannot connect; is OpenWhisk running there? "
                "(check --apihost, the workload's platform block or APIHOST in ~/.wskprops)",
                url,
                _os_reason(error),
            ) from None
        except requests.exceptions.Timeout:
            raise PlatformUnreachable(
                f"{self.connection.apihost}: no answer within {self.timeout_s:g} s to {method} {_path(url)}",
                url,
                "timed out",
            ) from None
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
            raise NotReadyError(
                f"{self.connection.apihost}: GET / did not answer JSON; is this an OpenWhisk API host?"
            ) from None

    def limits(self) -> PlatformLimits:
        """What the platform refuses, from ``GET /`` (OpenWhisk reports action memory limits in bytes,
        localwhisk its request size in its settings)."""
        info = self.info() or {}
        limits = info.get("limits") or {}
        local = info.get("localwhisk") or {}
        settings = local.get("settings") if isinstance(local.get("settings"), dict) else local

        def megabytes(key: str) -> int | None:
            value = limits.get(key)
            return int(value) // 1048576 if isinstance(value, (int, float)) and value > 0 else None

        payload = settings.get("max_payload_bytes") if isinstance(settings, dict) else None
        return PlatformLimits(
            description=self.connection.apihost,
            min_memory_mb=megabytes("min_action_memory"),
            max_memory_mb=megabytes("max_action_memory"),
            max_payload_bytes=int(payload) if isinstance(payload, int) and payload > 0 else None,
            memory_fix="lower memory_mb, or raise the platform's limit (OpenWhisk: limit_action_memory_max)",
            payload_fix="send a smaller file, or raise the platform's limit (localwhisk: --max-payload-bytes)",
        )

    def api_info(self, timeout_s: float = 5.0) -> dict:
        """``GET /api/v1``: the API's description (the doctor's probe: is the REST API there?)."""
        response = self.request("GET", self.connection.apihost + "/api/v1", timeout=min(self.timeout_s, timeout_s))
        try:
            return response.json() if response.content else {}
        except ValueError:
            raise NotReadyError(
                f"{self.connection.apihost}: GET /api/v1 did not answer JSON; is this an OpenWhisk API host?"
            ) from None

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
        return (
            [doc["name"] for doc in docs if isinstance(doc, dict) and isinstance(doc.get("name"), str)]
            if isinstance(docs, list)
            else []
        )

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

    def invoke(
        self, name: str, params: dict | None = None, blocking: bool = True, result: bool = False
    ) -> requests.Response:
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

    def iter_activations(
        self, since_ms: int | None = None, upto_ms: int | None = None, name: str | None = None
    ) -> Iterator[dict]:
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
