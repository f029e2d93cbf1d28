"""A generic HTTP endpoint: any server that takes ``POST url`` with a JSON body (FaaSProfiler's
``endpoint: "generic"``).

The platform is not ours to manage: nothing is deployed, its functions keep no records faasprof
could fetch, and a 502 is just a failed request (only OpenWhisk means "the action failed" by it).
Credentials are never sent to a generic URL.
"""

from __future__ import annotations

import json
import os
import socket
from typing import Any, Callable, Sequence

from faasprof.errors import NotReadyError
from faasprof.platforms.base import (
    Platform,
    PreparedRequest,
    classify_status,
    format_request,
    split_origin,
    url_problem,
)

KIND = "generic"  # the request kind: POST url with the JSON data
# Generic servers may close idle connections after 2 s (gunicorn) or 5 s (Node.js).
IDLE_REUSE_MAX_S = 1.5
CONNECT_CHECK_TIMEOUT_S = 5.0


def classify(status: int, activation_id: str | None, body: bytes) -> tuple[str, str | None, str | None]:
    """A generic server's answer by its status alone (no activation ids in its bodies)."""
    return classify_status(status, activation_id, body, None, app_error_status=None)


class GenericPlatform(Platform):
    endpoint = "generic"
    instance_keys = ("url", "data")  # each instance posts its data to its url
    required_keys = ("url", "data")

    @classmethod
    def validate_instance(cls, spec: dict) -> list[tuple[str, str]]:
        problems = super().validate_instance(spec)
        reason = url_problem(spec["url"]) if "url" in spec else None
        return problems + ([("url", reason)] if reason else [])

    def check(self, instances: Sequence[Any] = ()) -> dict:
        """Every origin the instances post to accepts a TCP connection; NotReadyError otherwise."""
        seen = set()
        for instance in instances:
            if not self.serves(instance):
                continue
            origin, _ = split_origin(instance.url)
            if origin in seen:
                continue
            seen.add(origin)
            _, host, port = origin
            try:
                socket.create_connection((host, port), timeout=CONNECT_CHECK_TIMEOUT_S).close()
            except OSError as error:
                raise NotReadyError(
                    f"{instance.url}: cannot connect ({error.strerror or error}); is the server at {host}:{port} running?"
                ) from None
        return {}

    def ensure_deployed(self, workload: Any) -> dict[str, str]:
        return {}  # the server's functions are its own

    def prepare_request(self, instance: Any, origin_name: str = "<workload>") -> PreparedRequest:
        origin, path = split_origin(instance.url)
        body = json.dumps(instance.data).encode()
        payload = format_request(origin, path, body, "application/json", host=getattr(instance, "host", None))
        return PreparedRequest(KIND, origin, payload, f"POST {instance.url}", classify, IDLE_REUSE_MAX_S)

    def fetch_records(
        self,
        run_dir: str | os.PathLike,
        say: Callable[[str], None] | None = None,
        wait: bool = True,
        report: dict | None = None,
    ) -> dict:
        return {} if report is None else report  # a generic server keeps no records faasprof can read

    def describe(self) -> dict:
        return {"kind": "none", "note": "only generic endpoints: no OpenWhisk API was used"}
