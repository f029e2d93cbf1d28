"""``OpenWhiskPlatform``, the ``faasprof.platforms.base.Platform`` a run uses for OpenWhisk (and localwhisk):
its instances name actions (FaaSProfiler's ``endpoint: "local_openwhisk"``, the default), each
request is formatted once (an action call, or a web action call with the raw bytes of its
``data_file``) and OpenWhisk's responses are read.
"""

from __future__ import annotations

import base64
import json
import mimetypes
import os
import urllib.parse
from typing import Any, Callable, Collection, Sequence

from faasprof.errors import FaasprofError, NotReadyError
from faasprof.platforms.base import (
    Platform,
    PreparedRequest,
    classify_status,
    format_request,
    parse_json,
    read_request_file,
    split_origin,
)
from faasprof.platforms.openwhisk.client import DEFAULT_TIMEOUT_S, OpenWhiskClient, quote_name
from faasprof.platforms.openwhisk.connection import Connection
from faasprof.platforms.openwhisk.deploy import ensure_workload_actions
from faasprof.platforms.openwhisk.records import (
    DEFAULT_RETRY_DELAYS_S,
    MAX_ID_LOOKUPS_PER_ROUND,
    fetch_records,
    save_run_records,
)

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
    return (
        "/api/v1/web/"
        + urllib.parse.quote(namespace, safe="")
        + "/"
        + "/".join(urllib.parse.quote(p, safe="") for p in parts)
    )


def prepare_action_request(
    instance: Any, connection: Connection, web_namespace: str | None = None, origin_name: str = "<workload>"
) -> PreparedRequest:
    """Format the request of one OpenWhisk instance (``faasprof.workload.spec.Instance``).

    ``web_namespace`` is the concrete namespace for web action URLs (web URLs carry no
    credentials, so ``_`` cannot be resolved there); it defaults to the connection's namespace.
    """
    api_origin, base = split_origin(connection.apihost)
    base = base.rstrip("/")
    if instance.data_file is not None and instance.data_mode == "web":
        data = read_request_file(instance, "data_file", origin_name)
        content_type = (
            instance.content_type or mimetypes.guess_type(str(instance.data_file))[0] or "application/octet-stream"
        )
        path = base + _web_path(web_namespace or connection.namespace, instance.function)
        # A web action call is anonymous, as OpenWhisk's web URLs are; the key stays private.
        payload = format_request(api_origin, path, data, content_type, host=getattr(instance, "host", None))
        return PreparedRequest(
            KIND_WEB, api_origin, payload, f"POST {connection.apihost}{path}", classify, IDLE_REUSE_MAX_S
        )

    params = dict(instance.params or {})
    if instance.data_file is not None:  # data_mode "base64": the bytes as the parameter `data`
        params["data"] = base64.b64encode(read_request_file(instance, "data_file", origin_name)).decode("ascii")
    body = json.dumps(params).encode()
    namespace = urllib.parse.quote(connection.namespace, safe="")
    blocking = "true" if instance.blocking else "false"
    path = f"{base}/api/v1/namespaces/{namespace}/actions/{quote_name(instance.function)}?blocking={blocking}"
    payload = format_request(
        api_origin, path, body, "application/json", auth=connection.auth, host=getattr(instance, "host", None)
    )
    return PreparedRequest(
        KIND_ACTION, api_origin, payload, f"POST {connection.apihost}{path}", classify, IDLE_REUSE_MAX_S
    )


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

    endpoint = "local_openwhisk"  # FaaSProfiler's name for OpenWhisk actions
    names_functions = True
    # A function of the researcher's own (a file or folder) that faasprof deploys, and its action kind.
    instance_keys = ("source", "kind")
    reached_by_connection = True
    keeps_records = True
    answers_early = True  # a non-blocking call is answered 202 before its function runs

    def __init__(self, connection: Connection, timeout_s: float = DEFAULT_TIMEOUT_S):
        self.connection = connection
        self.client = OpenWhiskClient(connection, timeout_s=timeout_s)
        self.info: dict = {}
        self.web_namespace: str | None = None

    @classmethod
    def validate_instance(cls, spec: dict) -> list[tuple[str, str]]:
        if "kind" in spec and "source" not in spec:
            return [
                ("kind", "only used with source (a function of yours that faasprof deploys); add source or remove it")
            ]
        return []

    @classmethod
    def for_workload(
        cls,
        workload: Any = None,
        connection: Connection | None = None,
        web_namespace: str | None = None,
        **settings: Any,
    ) -> "OpenWhiskPlatform":
        """The OpenWhisk of ``connection``; ``web_namespace`` names the namespace of web action URLs
        (else ``ensure_deployed`` resolves it)."""
        if connection is None:
            raise ValueError("an OpenWhisk instance needs a connection")
        platform = cls(connection)
        platform.web_namespace = web_namespace
        return platform

    def close(self) -> None:
        self.client.close()

    def check(self, instances: Sequence[Any] = ()) -> dict:
        """``GET /``: the platform's description, runtimes and limits (kept in ``info``)."""
        self.info = self.client.info()
        return self.info

    def ensure_deployed(self, workload: Any) -> dict[str, str]:
        """Every action the workload invokes here exists (see ``deploy.ensure_workload_actions``);
        the namespace of web action URLs is resolved too."""
        actions = ensure_workload_actions(self.client, workload, self.serves)
        self.resolve_web_namespace(
            any(i.data_file is not None and i.data_mode == "web" and self.serves(i) for i in workload.instances)
        )
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
            raise NotReadyError(
                f"{self.connection.apihost}: cannot find the namespace for web action calls; pass --namespace NAME"
            )
        self.web_namespace = str(names[0])

    def prepare_request(self, instance: Any, origin_name: str = "<workload>") -> PreparedRequest:
        return prepare_action_request(instance, self.connection, self.web_namespace, origin_name)

    def fetch_records(
        self,
        run_dir: str | os.PathLike,
        say: Callable[[str], None] | None = None,
        wait: bool = True,
        report: dict | None = None,
    ) -> dict:
        return save_run_records(run_dir, self.client, say=say, wait=wait, report=report)

    def find_records(
        self,
        activation_ids: Collection[str],
        since_ms: int,
        upto_ms: int,
        retry_delays_s: Sequence[float] | None = None,
        say: Callable[[str], None] | None = None,
        stragglers: bool = False,
    ) -> tuple[list[dict], dict]:
        """The window listed page by page, then the ids still missing asked for one by one
        (``records.fetch_records``); a few stragglers are asked for by id alone."""
        list_first = not stragglers or len(activation_ids) > MAX_ID_LOOKUPS_PER_ROUND
        delays = DEFAULT_RETRY_DELAYS_S if retry_delays_s is None else retry_delays_s
        records, report = fetch_records(
            self.client, activation_ids, since_ms, upto_ms, retry_delays_s=delays, progress=say, list_first=list_first
        )
        return records, report.to_json()

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
