"""The REST API's common ground: OpenWhisk's messages, the JSON error and success responses, Basic
auth, namespace and runtime-kind names, list paging, and request bodies parsed as OpenWhisk does.

``ApiBase`` is the base of the API's parts (``api_entities``, ``api_invoke``, ``api_web``,
``api_activations``), which ``server.Localwhisk`` combines into one instance; it names the state
they share, which ``Localwhisk.__init__`` sets. The parts are methods of that one object, so a
request reaches its handler with no extra hop.
"""

from __future__ import annotations

import base64
import binascii
import re
import urllib.parse
import uuid

from aiohttp import web

from faasprof.localwhisk import fastjson
from faasprof.localwhisk.activation import Action
from faasprof.localwhisk.config import Settings
from faasprof.localwhisk.fastjson import dumps
from faasprof.localwhisk.pool import Pool
from faasprof.localwhisk.sandbox import runtime_family
from faasprof.localwhisk.store import Store

RESOURCE_DOES_NOT_EXIST = "The requested resource does not exist."
ALREADY_EXISTS = "resource already exists"  # OpenWhisk's 409 for a PUT without overwrite (ApiUtils.scala)
AUTH_INVALID = "The supplied authentication is invalid"
AUTH_MISSING = "The resource requires authentication, which was not supplied with the request"
AUTH_CHALLENGE = {"WWW-Authenticate": 'Basic realm="OpenWhisk secure realm"'}
ENTITY_NAME_ILLEGAL = "The name of the entity contains illegal characters."
STOPPING = "localwhisk is stopping and accepts no more requests; start it again (faasprof local start) and retry."
# OpenWhisk's EntityName.REGEX: a word character first, then up to 255 of [\w@ .&-], never ending in
# a space; ASCII word characters (Java's \w). "..", " x" and "x " are therefore illegal.
ENTITY_NAME_RE = re.compile(r"\A(\w|\w[\w@ .&-]{0,254}[\w@.&-])\Z", re.ASCII)
ENTITY_NAME_MAX = 256
JSON_MAX_DEPTH = 256  # deeper request bodies are refused with 400 (json.loads would raise RecursionError near 1000)
# What localwhisk deliberately lacks: creating these answers 400 (OpenWhisk's code for a runtime the
# platform does not support), naming the alternative.
UNSUPPORTED = {
    "triggers": "localwhisk does not support triggers (nor feeds, which need them); invoke actions directly "
    "(POST /api/v1/namespaces/_/actions/NAME) or run Apache OpenWhisk (./setup.sh --testbed) for triggers",
    "rules": "localwhisk does not support rules; invoke actions directly (POST /api/v1/namespaces/_/actions/NAME) "
    "or run Apache OpenWhisk (./setup.sh --testbed) for rules",
    "bindings": "localwhisk does not support package bindings; create a package of its own with the parameters "
    "(PUT /api/v1/namespaces/_/packages/NAME), or run Apache OpenWhisk (./setup.sh --testbed) for bindings",
    "sequence": "localwhisk does not support sequences (exec kind 'sequence'); compose in one action "
    "or run Apache OpenWhisk (./setup.sh --testbed) for sequences",
    "apis": "localwhisk does not support API routes (API gateway); call web actions at /api/v1/web/_/default/NAME "
    "or run Apache OpenWhisk with its API gateway",
}
BASE64_RE = re.compile(r"^([A-Za-z0-9+/]{4})*([A-Za-z0-9+/]{4}|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{2}==)$")
JSON = "application/json"
LIST_MAX = 200
LIST_DEFAULT = 30


class ApiBase:
    """Responses, auth and names for every part of the API; the state the parts share."""

    settings: Settings
    namespace: str
    subject: str
    expected_auth: str
    auth_pair: tuple[str, str]
    max_memory_mb: int
    actions: dict[tuple[str, str], dict]  # (namespace or namespace/package, name) -> action doc
    packages: dict[tuple[str, str], dict]  # (namespace, name) -> package doc
    _snapshots: dict[str, Action]  # action revision -> its Action (docs never change in place)
    store: Store
    pool: Pool | None
    node_kind: str
    python_kind: str
    closing: bool

    def running_pool(self) -> Pool:
        """The pool, which exists from ``open`` on (no request is served before)."""
        if self.pool is None:
            raise RuntimeError("localwhisk is not open: it has no pool yet")
        return self.pool

    def error(self, status: int, message: str, headers: dict | None = None) -> web.Response:
        return web.Response(
            status=status, body=dumps({"error": message, "code": uuid.uuid4().hex}), content_type=JSON, headers=headers
        )

    def ok(self, obj, status: int = 200, headers: dict | None = None) -> web.Response:
        return web.Response(status=status, body=dumps(obj), content_type=JSON, headers=headers)

    def auth_problem(self, request: web.Request) -> web.Response | None:
        """None when the request carries the key; else OpenWhisk's 401 (missing or invalid)."""
        if "Authorization" not in request.headers:
            return self.error(401, AUTH_MISSING, headers=AUTH_CHALLENGE)
        if not self.authorized(request):
            return self.error(401, AUTH_INVALID, headers=AUTH_CHALLENGE)
        return None

    def authorized(self, request: web.Request) -> bool:
        header = request.headers.get("Authorization", "")
        if header == self.expected_auth:
            return True
        if header[:6].lower() != "basic ":
            return False
        try:
            user, _, key = base64.b64decode(header[6:].strip()).decode().partition(":")
        except (binascii.Error, UnicodeDecodeError):
            return False
        return (user, key) == self.auth_pair

    def resolve_namespace(self, ns: str) -> str | None:
        ns = urllib.parse.unquote(ns)
        if ns in ("_", self.namespace):
            return self.namespace
        return None

    def resolve_kind(self, kind: str) -> str | None:
        family = runtime_family(kind)
        if family is None:
            return None
        if kind in ("python", "python:default"):
            return self.python_kind
        if kind in ("nodejs", "nodejs:default"):
            return self.node_kind
        return kind


def limit_skip(query, collection: str) -> tuple[int, int, str | None]:
    """``limit`` and ``skip`` of a list request, or OpenWhisk's 400 message (``limit=0`` means the most)."""
    try:
        limit = int(query.get("limit", LIST_DEFAULT))
    except ValueError:
        return 0, 0, f"The value '{query.get('limit')}' is not an integer for {collection}."
    try:
        skip = int(query.get("skip", 0))
    except ValueError:
        return 0, 0, f"The value '{query.get('skip')}' is not an integer for {collection}."
    if limit == 0:
        limit = LIST_MAX
    if not 0 <= limit <= LIST_MAX:
        return 0, 0, f"The value '{limit}' is not in the range of 0 to {LIST_MAX} for {collection}."
    if skip < 0:
        return 0, 0, f"The value '{skip}' is not greater than or equal to 0 for {collection}."
    return limit, skip, None


_JSON_STRING_RE = re.compile(rb'"(?:[^"\\]|\\.)*"')
_JSON_BRACKET_RE = re.compile(rb"[\[\]{}]")


def json_depth(raw: bytes) -> int:
    """The deepest nesting of arrays and objects in a JSON text (strings skipped); cheap in C."""
    if raw.count(b"[") + raw.count(b"{") <= JSON_MAX_DEPTH:
        return 0  # cannot be deeper than the limit: spare the scan on the invoke path
    depth = deepest = 0
    for bracket in _JSON_BRACKET_RE.findall(_JSON_STRING_RE.sub(b'""', raw)):
        if bracket in (b"[", b"{"):
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth -= 1
    return deepest


def parse_json_body(raw: bytes) -> tuple[object, str | None]:
    """A request body as JSON, or OpenWhisk's 400 message (malformed, or nested too deeply)."""
    depth = json_depth(raw)
    if depth > JSON_MAX_DEPTH:
        return (
            None,
            f"The request content was malformed:\nJSON nested {depth} levels deep; at most {JSON_MAX_DEPTH} are accepted",
        )
    try:
        return fastjson.loads(raw), None
    except (ValueError, RecursionError) as error:
        return None, f"The request content was malformed:\n{error}"


def name_problem(name: str) -> str | None:
    """OpenWhisk's check of an action name ``[package/]name``: each segment an EntityName."""
    segments = name.split("/")
    if len(segments) > 2:
        return ENTITY_NAME_ILLEGAL
    for segment in segments:
        if len(segment) > ENTITY_NAME_MAX:
            return f"Name segement longer than allowed: {len(segment)} > {ENTITY_NAME_MAX}."  # OpenWhisk's spelling
        if not ENTITY_NAME_RE.match(segment):
            return ENTITY_NAME_ILLEGAL
    return None
