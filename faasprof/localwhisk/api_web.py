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
import json
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
# OpenWhisk 2.0.0's answers to a web action it cannot answer with (ErrorResponse.scala's Messages).
PROPERTY_NOT_FOUND = "Response does not include requested property."
ERROR_PROCESSING_REQUEST = "There was an error processing your request."
HTTP_CONTENT_TYPE_ERROR = "Response type in header did not match generated content type."
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
        if response["status"] == "application error":
            # OpenWhisk answers the result's "error" as the response, through the same extension.
            if not isinstance(result, dict) or "error" not in result:
                return self.error(404, PROPERTY_NOT_FOUND, headers=extra)
            result = result["error"]
        elif not response["success"]:
            return self.error(400, ERROR_PROCESSING_REQUEST, headers=extra)
        answer = _web_response(result, ext, extra)
        if isinstance(answer, web.Response):
            return answer
        return self.error(answer[0], answer[1], headers=extra)


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


def _web_response(result: object, ext: str, headers: dict[str, str]) -> web.Response | tuple[int, str]:
    """The answer for a web action's result through its extension, as OpenWhisk 2.0.0 transcodes
    it (WebActions.scala), or the (status, message) of OpenWhisk's refusal."""
    if ext == "json":
        if isinstance(result, (dict, list)):
            return web.Response(status=200, body=dumps(result), content_type=JSON, headers=headers)
        return 400, invalid_media("application/json")
    if ext == "text":
        if isinstance(result, dict) and "body" not in result and "text" not in result:
            return 404, PROPERTY_NOT_FOUND
        value = result.get("body", result.get("text")) if isinstance(result, dict) else result
        return web.Response(status=200, text=_as_text(value), content_type="text/plain", headers=headers)
    if ext in ("html", "svg"):
        value = result.get("body", result.get(ext)) if isinstance(result, dict) else result
        ctype = "text/html" if ext == "html" else "image/svg+xml"
        if not isinstance(value, str):
            return 400, invalid_media(ctype)
        return web.Response(status=200, text=value, content_type=ctype, headers=headers)
    if not isinstance(result, dict):
        return 400, invalid_media("message/http")
    try:
        return _http_response(result, headers)
    except InvalidWebResponse as problem:
        # OpenWhisk answers an action's malformed HTTP response with 400 and this message; why
        # goes to the log.
        log.warning("web action response refused: %s", problem)
        return 400, problem.answer


def _as_text(value: object) -> str:
    """A JSON value as OpenWhisk's .text extension writes it."""
    if isinstance(value, (dict, list)):
        return json.dumps(value, indent=2)
    if isinstance(value, bool):
        return "true" if value else "false"
    return "null" if value is None else str(value)


def invalid_media(media_type: str) -> str:
    return f"Response is not valid '{media_type}'."


class InvalidWebResponse(ValueError):
    """An action's HTTP response (``statusCode``, ``headers``, content type) that HTTP cannot
    carry; ``answer`` is OpenWhisk's message for it."""

    def __init__(self, problem: str, answer: str = ""):
        super().__init__(problem)
        self.answer = answer or invalid_media("message/http")


def _status_code(value: object, empty: bool) -> int:
    """The response's status: OpenWhisk takes a whole number or a string of one; without one,
    200, or 204 for an empty body."""
    if value is None:
        return 204 if empty else 200
    code = value
    if isinstance(value, str) and value.strip().lstrip("+-").isdigit():
        code = int(value)
    elif isinstance(value, float) and value.is_integer():
        code = int(value)
    if isinstance(code, bool) or not isinstance(code, int) or not 100 <= code <= 599:
        raise InvalidWebResponse(f"statusCode {str(value)[:40]!r} is not a whole number from 100 to 599")
    return code


def _action_headers(value: object) -> list[tuple[str, str]]:
    """The action's headers as HTTP can carry them (an array value: the header once per item, as
    OpenWhisk); framing and hop-by-hop headers are the server's own and never taken from the
    action (as an HTTP server refuses them from its app)."""
    if value is None:
        return []
    if not isinstance(value, dict):
        raise InvalidWebResponse("headers is not an object")
    out: list[tuple[str, str]] = []
    for name, raw in value.items():
        if not isinstance(name, str) or not HEADER_NAME_RE.match(name):
            raise InvalidWebResponse(f"header name {str(name)[:40]!r} is not an HTTP token")
        for text in _header_values(name, raw):
            if FORBIDDEN_IN_VALUE_RE.search(text):
                raise InvalidWebResponse(f"header {name}: value holds a line break or control character")
            if name.lower() in FRAMING_HEADERS:
                log.info("web action header %s dropped: the server frames its responses", name)
                continue
            out.append((name, text))
    return out


def _header_values(name: str, raw: object) -> list[str]:
    if isinstance(raw, bool):
        return ["true" if raw else "false"]
    if isinstance(raw, (str, int, float)):
        return [str(raw)]
    if isinstance(raw, list):
        return [text for item in raw for text in _header_values(name, item)]
    raise InvalidWebResponse(f"header {name}: value is not a string, number, boolean or array")


def _http_response(result: dict, headers: dict[str, str]) -> web.Response:
    """The .http answer: OpenWhisk's statusCode, headers and body, the body by its content type
    (a JSON value as JSON, a string as text/html or, for a binary type, base64-decoded)."""
    body = result.get("body")
    status = _status_code(result.get("statusCode"), body is None or body == "")
    action_headers = _action_headers(result.get("headers"))
    ctype = next((v for k, v in action_headers if k.lower() == "content-type"), None)
    if body is None or body == "":
        data, ctype = b"", None  # an empty entity carries no content type
    elif not isinstance(body, str):
        if ctype and not _json_family(ctype):
            raise InvalidWebResponse(f"a JSON body with Content-Type {ctype[:40]!r}", HTTP_CONTENT_TYPE_ERROR)
        data, ctype = dumps(body), ctype or JSON
    elif ctype and _is_binary_type(ctype.split(";")[0].strip()):
        try:
            data = base64.b64decode(body, validate=True)
        except binascii.Error:
            raise InvalidWebResponse(
                "a binary Content-Type with a body that is not base64", HTTP_CONTENT_TYPE_ERROR
            ) from None
    else:
        data, ctype = body.encode(), ctype or "text/html"
    response = web.Response(status=status, body=data, headers=headers)
    for name, text in action_headers:
        if name.lower() != "content-type":
            response.headers.add(name, text)
    if ctype:
        response.headers["Content-Type"] = ctype
    return response


def _json_family(ctype: str) -> bool:
    media = ctype.split(";")[0].strip().lower()
    return media == JSON or media.endswith("+json")
