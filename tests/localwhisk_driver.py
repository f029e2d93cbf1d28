"""A small test driver over a running localwhisk: the project's REST client plus raw requests."""

from __future__ import annotations

import time

import requests

from faasprof.platforms.openwhisk.client import OpenWhiskClient
from faasprof.platforms.openwhisk.connection import Connection

# What the pool lists for every sandbox (GET /localwhisk/v1/pool); a docker sandbox adds container, container_id, ip.
SANDBOX_KEYS = ["name", "kind", "memory_mb", "state", "action", "pid", "activations", "memory_usage_bytes"]


def annotation(record, key, default=None):
    for item in record.get("annotations", []):
        if item["key"] == key:
            return item["value"]
    return default


class Lw:
    def __init__(self, handle):
        self.handle = handle
        self.client = OpenWhiskClient(Connection(handle.apihost, handle.auth, "_", source="embedded"))
        self.base = handle.apihost + "/api/v1/namespaces/_"
        self.session = requests.Session()
        self.session.auth = tuple(handle.auth.split(":", 1))

    def put(self, name, code, kind="python:3", memory=256, timeout=60000, **extra):
        body = {"exec": {"kind": kind, "code": code}, "limits": {"memory": memory, "timeout": timeout}, **extra}
        return self.client.put_action(name, body)

    def invoke(self, name, params=None, blocking=True, result=False):
        return self.client.invoke(name, params or {}, blocking=blocking, result=result)

    def record(self, activation_id, timeout_s=15.0):
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            record = self.client.get_activation(activation_id)
            if record is not None:
                return record
            time.sleep(0.02)
        raise AssertionError(f"no record for {activation_id}")

    def pool(self):
        return self.session.get(self.handle.apihost + "/localwhisk/v1/pool", timeout=5).json()["pool"]

    def sandboxes(self, action):
        return [sb for sb in self.pool()["sandboxes"] if sb["action"] == action]

    def wait_for(self, predicate, timeout_s=5.0):
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if predicate():
                return True
            time.sleep(0.02)
        return predicate()
