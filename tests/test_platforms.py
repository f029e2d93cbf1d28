"""The platform layer: each platform reads its own responses, the registry routes instances by
their endpoint, and an unreachable platform is reported with the operating system's reason."""

from __future__ import annotations

import json
import socket

import pytest
from test_invoker_dispatch import instance

from faasprof.errors import NotReadyError
from faasprof.platforms import generic
from faasprof.platforms.base import PlatformUnreachable
from faasprof.platforms.generic import GenericPlatform
from faasprof.platforms.openwhisk import platform as openwhisk
from faasprof.platforms.openwhisk.client import OpenWhiskClient
from faasprof.platforms.openwhisk.connection import Connection
from faasprof.platforms.openwhisk.platform import OpenWhiskPlatform
from faasprof.platforms.registry import platform_class, prepare_request

AUTH = "u:k"


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_only_openwhisk_reads_502_as_the_function_failing_and_ids_from_the_body():
    body = json.dumps({"activationId": "a1", "response": {"result": {"error": "boom"}}}).encode()
    assert openwhisk.classify(502, None, body) == ("app_error", "a1", "boom")
    assert generic.classify(502, None, body) == ("failed", None, "HTTP 502: boom")
    assert openwhisk.classify(202, None, b'{"activationId": "a2"}') == ("ok", "a2", None)
    assert generic.classify(200, None, b'{"activationId": "a2"}') == ("ok", None, None)
    assert generic.classify(429, None, b"") == ("throttled", None, "429 Too Many Requests")


def test_the_registry_routes_by_endpoint_and_each_request_carries_its_platform():
    action = instance("a", "echo")
    url = instance("g", "-", endpoint="generic", url="http://127.0.0.1:9/x", data={"k": 1})
    assert platform_class(action) is OpenWhiskPlatform and platform_class(url) is GenericPlatform
    with pytest.raises(ValueError, match="instances.k.endpoint: 'knative' names no platform"):
        platform_class(instance("k", "-", endpoint="knative"))
    request = prepare_request(url)
    assert request.classify is generic.classify and request.idle_reuse_max_s == generic.IDLE_REUSE_MAX_S
    assert b"Authorization" not in request.payload
    request = prepare_request(action, Connection("http://127.0.0.1:9", AUTH, "guest"))
    assert request.classify is openwhisk.classify and b"Authorization: Basic " in request.payload


def test_an_unreachable_generic_endpoint_is_not_ready_with_its_url():
    port = _closed_port()
    url = instance("g", "-", endpoint="generic", url=f"http://127.0.0.1:{port}/x", data={})
    with pytest.raises(
        NotReadyError,
        match=rf"http://127.0.0.1:{port}/x: cannot connect \(.*\); is the server at 127.0.0.1:{port} running\?",
    ):
        GenericPlatform().check([instance("a", "echo"), url])
    assert GenericPlatform().describe() == {"kind": "none", "note": "only generic endpoints: no OpenWhisk API was used"}


def test_an_unreachable_openwhisk_names_the_reason_and_the_url():
    port = _closed_port()
    with OpenWhiskClient(Connection(f"http://127.0.0.1:{port}", AUTH), timeout_s=5) as client:
        with pytest.raises(PlatformUnreachable) as caught:
            client.api_info()
    assert caught.value.url == f"http://127.0.0.1:{port}/api/v1"
    assert caught.value.reason == "Connection refused"
    assert str(caught.value).startswith(f"http://127.0.0.1:{port}: cannot connect; is OpenWhisk running there?")
