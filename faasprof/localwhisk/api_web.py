"""Web actions (``/api/v1/web/<ns>/<pkg>/<action>[.json|.http|.text|.html|.svg]``): an HTTP request
turned into an action's parameters, and the action's result turned into an HTTP response.

As OpenWhisk: only actions annotated ``web-export`` answer; ``require-whisk-auth`` asks for the
key; ``raw-http`` passes the query and body untouched (``__ow_query``, ``__ow_body``); the request's
method, headers and extra path come as ``__ow_method``, ``__ow_headers``, ``__ow_path``. The
extension picks the response: a JSON body, one property as text, or (``.http``, none) the
result's ``statusCode``, ``headers`` and ``body``, a binary body given in base64.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import logging
import re
import time
import urllib.parse

from aiohttp import web

from faasprof.localwhisk.api_base import JSON, RESOURCE_DOES_NOT_EXIST, STOPPING, parse_json_body
from faasprof.localwhisk.api_invoke import Invocations, wait_capped
from faasprof.localwhisk.fastjson import dumps

log = logging.getLogger("faasprof.localwhisk.web")

ACTIVATION_HEADER = "x-openwhisk-activation-id"
INVALID_WEB_RESPONSE = "The action did not produce a valid HTTP response."
# RFC 9110 token characters: a header name is nothing else.
HEADER_NAME_RE = re.compile(r"\A[!#$%&'*+\-.^_`|~0-9A-Za-z]+\Z")
# CR, LF, NUL and the other control characters but tab end a header line or break the framing.
FORBIDDEN_IN_VALUE_RE = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
# Framing and hop-by-hop headers (RFC 9110 7.6.1, 9112): the server's, never an application's.
FRAMING_HEADERS = frozenset(
    ("content-length", "transfer-encoding", "connection", "keep-alive", "proxy-connection", "te", "trailer", "upgrade")
)


class WebActions(Invocations):
    """The handler of ``/api/v1/web/...``, on the invocation path of ``api_invoke``."""

    async def web_action(self, request: web.Request) -> web.Response:
        accepted_ns = time.monotonic_ns()
        ns = self.resolve_namespace(request.match_info["ns"])
        rest = request.match_info["rest"].split("/")
        if ns is None or len(rest) < 2:
            return self.error(404, RESOURCE_DOES_NOT_EXIST)
        package, (name, ext), extra_path = rest[0], _split_extension(rest[1]), "/".join(rest[2:])
        doc = self.actions.get((ns if package == "default" else f"{ns}/{package}", name))
        annotations = {a.get("key"): a.get("value") for a in (doc or {}).get("annotations") or []}
        if doc is None or not annotations.get("web-export"):
            return self.error(404, RESOURCE_DOES_NOT_EXIST)
        if annotations.get("require-whisk-auth"):
            denied = self.auth_problem(request)
            if denied is not None:
                return denied
        raw = await request.read()
        if len(raw) > self.settings.max_payload_bytes:
            return self.error(
                413, f"Request larger than allowed: {len(raw)} > {self.settings.max_payload_bytes} bytes."
            )
        request_params = _request_params(request, raw, bool(annotations.get("raw-http")), extra_path)
        if isinstance(request_params, str):
            return self.error(400, request_params)
        params = self._params(doc, request_params)
        if isinstance(params, str):
            return self.error(400, params)
        future = asyncio.get_running_loop().create_future()
        job = self._accept(doc, params, accepted_ns, future)
        if isinstance(job, str):
            return self.error(503 if job is STOPPING else 429, job)
        extra = {ACTIVATION_HEADER: job.activation_id}
        record = await wait_capped(future, self.settings.max_blocking_wait_ms / 1000.0)
        if record is None:
            return self.ok({"activationId": job.activation_id}, status=202, headers=extra)
        response = record["response"]
        result = response["result"]
        if not response["success"]:
            message = result.get("error") if isinstance(result, dict) else result
            status = 400 if response["status"] == "application error" else 502
            return web.Response(
                status=status,
                body=dumps({"error": message, "code": job.transaction_id}),
                content_type=JSON,
                headers=extra,
            )
        return _web_response(result, ext, extra)


def _split_extension(action_part: str) -> tuple[str, str]:
    """``name.ext`` → (name, ext) for the extensions web actions know; else (action_part, "")."""
    for candidate in (".json", ".http", ".text", ".html", ".svg"):
        if action_part.endswith(candidate):
            return action_part[: -len(candidate)], candidate[1:]
    return action_part, ""


def _request_params(request: web.Request, raw: bytes, raw_http: bool, extra_path: str) -> dict | str:
    """The action's parameters from the HTTP request (query, body, ``__ow_*``), or OpenWhisk's
    400 message for a JSON body that does not parse."""
    content_type = request.content_type or ""
    params: dict = dict(request.query)
    if raw_http:
        params = {"__ow_query": request.query_string}
        if raw:
            params["__ow_body"] = _web_body(raw, content_type, raw_http=True)
    elif raw and content_type == JSON:
        body, problem = parse_json_body(raw)
        if problem:
            return problem
        if isinstance(body, dict):
            params.update(body)
        else:
            params["__ow_body"] = _web_body(raw, content_type, raw_http=False)
    elif raw and content_type == "application/x-www-form-urlencoded":
        params.update(urllib.parse.parse_qsl(raw.decode("utf-8", "replace")))
    elif raw:
        params["__ow_body"] = _web_body(raw, content_type, raw_http=False)
    params.update(
        {
            "__ow_method": request.method.lower(),
            "__ow_headers": {k.lower(): v for k, v in request.headers.items()},
            "__ow_path": ("/" + extra_path) if extra_path else "",
        }
    )
    return params


def _is_binary_type(content_type: str) -> bool:
    if content_type.startswith("text/") or content_type in (
        "application/json",
        "application/xml",
        "application/javascript",
        "application/x-www-form-urlencoded",
    ):
        return False
    return True


def _web_body(raw: bytes, content_type: str, raw_http: bool) -> str:
    if content_type == JSON and raw_http:
        return base64.b64encode(raw).decode()
    if _is_binary_type(content_type):
        return base64.b64encode(raw).decode()
    return raw.decode("utf-8", "replace")


def _web_response(result: object, ext: str, headers: dict[str, str]) -> web.Response:
    if ext == "json":
        return web.Response(status=200, body=dumps(result), content_type=JSON, headers=headers)
    if ext in ("text", "html", "svg"):
        value = result.get(ext) if isinstance(result, dict) else None
        if value is None:
            return web.Response(
                status=400,
                body=dumps({"error": "Response does not include requested property."}),
                content_type=JSON,
                headers=headers,
            )
        ctype = {"text": "text/plain", "html": "text/html", "svg": "image/svg+xml"}[ext]
        return web.Response(status=200, text=str(value), content_type=ctype, headers=headers)
    if not isinstance(result, dict) or not ({"body", "statusCode", "headers"} & set(result)):
        return web.Response(status=200, body=dumps(result), content_type=JSON, headers=headers)
    try:
        return _http_response(result, headers)
    except InvalidWebResponse as problem:
        # OpenWhisk answers an action's malformed HTTP response with 502 and an error JSON.
        log.warning("web action response refused: %s", problem)
        return web.Response(
            status=502,
            body=dumps({"error": f"{INVALID_WEB_RESPONSE} ({problem})", "code": headers.get(ACTIVATION_HEADER, "")}),
            content_type=JSON,
            headers=headers,
        )


class InvalidWebResponse(ValueError):
    """An action's HTTP response (``statusCode``, ``headers``) that HTTP cannot carry."""


def _status_code(value: object) -> int:
    if value is None:
        return 200
    if isinstance(value, bool) or not isinstance(value, int) or not 100 <= value <= 599:
        raise InvalidWebResponse(f"statusCode {str(value)[:40]!r} is not an integer from 100 to 599")
    return value


def _action_headers(value: object) -> dict[str, str]:
    """The action's headers as HTTP can carry them; framing and hop-by-hop headers are the
    server's own and never taken from the action (as an HTTP server refuses them from its app)."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InvalidWebResponse("headers is not an object")
    out: dict[str, str] = {}
    for name, raw in value.items():
        if not isinstance(name, str) or not HEADER_NAME_RE.match(name):
            raise InvalidWebResponse(f"header name {str(name)[:40]!r} is not an HTTP token")
        if isinstance(raw, bool):
            text = "true" if raw else "false"
        elif isinstance(raw, (str, int, float)):
            text = str(raw)
        else:
            raise InvalidWebResponse(f"header {name}: value is not a string, number or boolean")
        if FORBIDDEN_IN_VALUE_RE.search(text):
            raise InvalidWebResponse(f"header {name}: value holds a line break or control character")
        if name.lower() in FRAMING_HEADERS:
            log.info("web action header %s dropped: the server frames its responses", name)
            continue
        out[name] = text
    return out


def _http_response(result: dict, headers: dict[str, str]) -> web.Response:
    status = _status_code(result.get("statusCode"))
    out_headers = dict(headers)
    out_headers.update(_action_headers(result.get("headers")))
    body = result.get("body")
    ctype = next((v for k, v in out_headers.items() if k.lower() == "content-type"), None)
    if body is None:
        data = b""
    elif isinstance(body, (dict, list)):
        data = dumps(body)
        ctype = ctype or JSON
    elif ctype and _is_binary_type(ctype.split(";")[0].strip()):
        try:
            data = base64.b64decode(str(body))
        except binascii.Error:
            data = str(body).encode()
    else:
        data = str(body).encode()
        ctype = ctype or "text/html"
    out_headers = {k: v for k, v in out_headers.items() if k.lower() != "content-type"}
    response = web.Response(status=status, body=data, headers=out_headers)
    if ctype:
        response.headers["Content-Type"] = ctype
    return response
