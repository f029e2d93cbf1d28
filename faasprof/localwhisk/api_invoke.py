"""An invocation from request to record: the throttles, the job handed to the pool, the blocking
wait, and the activation record built when the pool reports the outcome.

The hot path of localwhisk (``POST .../actions/NAME``): a request is checked, its parameters
merged over the action's, counted against the namespace's throttles and submitted to the pool as
a ``Job`` carrying a snapshot of the action revision (built once per revision). A blocking
request waits for the record, at most ``max_blocking_wait_ms`` (then 202 with the id, as
OpenWhisk). ``_complete`` is the pool's callback: it times the activation on the wall clock,
builds the record (faasprof/localwhisk/README.md, "Records"), stores it and answers the waiter.
"""

from __future__ import annotations

import asyncio
import json
import random
import time

from aiohttp import web

from faasprof.localwhisk.activation import STATUS_NAMES, Action, Job, Outcome
from faasprof.localwhisk.api_base import RESOURCE_DOES_NOT_EXIST, STOPPING, ApiBase, parse_json_body
from faasprof.localwhisk.sandbox import TIMER_SLACK_S

SNAPSHOTS_MAX = 4096  # cached Action snapshots (one per action revision); the cache is emptied past this
# Activation and transaction ids: 128 random bits from a generator seeded from os.urandom, a tenth
# of uuid4's cost on the invoke path (no system call, no UUID object); 32 hex digits as OpenWhisk's.
_IDS = random.Random()


def _new_id() -> str:
    return "%032x" % _IDS.getrandbits(128)


class Throttles:
    """OpenWhisk's classic entitlement: RateThrottler (fixed minute) and ActivationThrottler."""

    def __init__(self, per_minute: int, concurrent: int):
        self.per_minute = per_minute
        self.concurrent = concurrent
        self.minute: dict[str, int] = {}
        self.count: dict[str, int] = {}
        self.inflight: dict[str, int] = {}

    def check(self, namespace: str) -> str | None:
        minute = int(time.time() // 60)
        if self.minute.get(namespace) != minute:
            self.minute[namespace] = minute
            self.count[namespace] = 0
        count = self.count[namespace] + 1
        self.count[namespace] = count
        if count > self.per_minute:
            return f"Too many requests in the last minute (count: {count}, allowed: {self.per_minute})."
        inflight = self.inflight.get(namespace, 0)
        if inflight >= self.concurrent:
            return f"Too many concurrent requests in flight (count: {inflight}, allowed: {self.concurrent})."
        return None


class Invocations(ApiBase):
    """Accept, submit and record activations; ``invoke`` is the handler of ``POST .../actions/NAME``."""

    throttles: Throttles
    mono_anchor_ns: int  # the monotonic and wall-clock instants of the last anchoring (wall_ms)
    wall_anchor_ns: int

    def _snapshot(self, doc: dict) -> Action:
        """The pool's view of an action revision, built once per revision (a PUT makes a new doc
        with a new ``rev``; nothing changes a doc in place) and shared by its jobs, which only read it."""
        action = self._snapshots.get(doc["rev"])
        if action is None:
            if len(self._snapshots) >= SNAPSHOTS_MAX:
                self._snapshots.clear()
            action = self._snapshots[doc["rev"]] = self._build_snapshot(doc)
        return action

    def _build_snapshot(self, doc: dict) -> Action:
        exec_doc = doc["exec"]
        limits = doc["limits"]
        init_env = {}
        for p in doc.get("parameters") or []:
            if p.get("init"):
                value = p.get("value")
                init_env[p["key"]] = value if isinstance(value, str) else json.dumps(value)
        full_name = (
            doc["name"] if doc["namespace"] == self.namespace else doc["namespace"].split("/", 1)[1] + "/" + doc["name"]
        )
        return Action(
            namespace=self.namespace,
            name=full_name,
            version=doc["version"],
            rev=doc["rev"],
            kind=exec_doc["kind"],
            code=exec_doc["code"],
            binary=exec_doc["binary"],
            main=exec_doc.get("main", "main"),
            memory_mb=limits["memory"],
            timeout_ms=limits["timeout"],
            logs_mb=limits["logs"],
            concurrency=limits["concurrency"],
            init_env=init_env,
            api_key=self.settings.auth if _truthy_annotation(doc, "provide-api-key") else None,
        )

    def _params(self, doc: dict, request_params: dict) -> dict | str:
        """Action parameters overlaid with the request's; a request may not override ``final`` ones."""
        params = {}
        if "/" in doc["namespace"]:  # a packaged action: the package's parameters come first
            package = self.packages.get((self.namespace, doc["namespace"].split("/", 1)[1])) or {}
            params.update({p["key"]: p.get("value") for p in package.get("parameters") or []})
        final_keys = set()
        is_final = any(a.get("key") == "final" and a.get("value") for a in doc.get("annotations") or [])
        for p in doc.get("parameters") or []:
            if p.get("init"):
                continue
            params[p["key"]] = p.get("value")
            if is_final:
                final_keys.add(p["key"])
        if final_keys & set(request_params):
            return "Request defines parameters that are not allowed (e.g., reserved properties)."
        params.update(request_params)
        return params

    def _accept(self, doc: dict, params: dict, accepted_ns: int, future: asyncio.Future | None = None) -> Job | str:
        """The job handed to the pool, or why it was refused (STOPPING, or a throttle's message)."""
        if self.closing:  # the request passed the gate before the stop began, its body arrived after
            return STOPPING
        problem = self.throttles.check(self.namespace)
        if problem:
            return problem
        action = self._snapshot(doc)
        job = Job(
            activation_id=_new_id(),
            action=action,
            params=params,
            accepted_ns=accepted_ns,
            transaction_id=_new_id(),
            subject=self.subject,
            future=future,
        )
        self.throttles.inflight[self.namespace] = self.throttles.inflight.get(self.namespace, 0) + 1
        self.running_pool().submit(job)
        return job

    async def invoke(self, request: web.Request, ns: str, doc_ns: str, name: str) -> web.Response:
        accepted_ns = time.monotonic_ns()
        doc = self.actions.get((doc_ns, name))
        if doc is None:
            return self.error(404, RESOURCE_DOES_NOT_EXIST)
        query = request.query
        blocking = query.get("blocking") == "true"
        result_only = query.get("result") == "true"
        wait_ms = self.settings.max_blocking_wait_ms
        if "timeout" in query:
            try:
                wait_ms = int(query["timeout"])
                if not 0 < wait_ms <= self.settings.max_blocking_wait_ms:
                    raise ValueError
            except ValueError:
                return self.error(
                    400, f"Timeout must be number of milliseconds up to {self.settings.max_blocking_wait_ms}."
                )
        raw = await request.read()
        if len(raw) > self.settings.max_payload_bytes:
            return self.error(
                413, f"Request larger than allowed: {len(raw)} > {self.settings.max_payload_bytes} bytes."
            )
        if raw.strip():
            request_params, problem = parse_json_body(raw)
            if problem:
                return self.error(400, problem)
            if not isinstance(request_params, dict):
                return self.error(400, "The request content was malformed:\nexpected a JSON object")
        else:
            request_params = {}
        params = self._params(doc, request_params)
        if isinstance(params, str):
            return self.error(400, params)
        if blocking:
            future = asyncio.get_running_loop().create_future()
        else:
            future = None
        job = self._accept(doc, params, accepted_ns, future)
        if isinstance(job, str):
            return self.error(503 if job is STOPPING else 429, job)
        headers = {"x-openwhisk-activation-id": job.activation_id}
        if future is None:  # not blocking
            return self.ok({"activationId": job.activation_id}, status=202, headers=headers)
        record = await wait_capped(future, wait_ms / 1000.0)
        if record is None:
            return self.ok({"activationId": job.activation_id}, status=202, headers=headers)
        response = record["response"]
        status = 200 if response["success"] else (500 if response["status"] == "whisk internal error" else 502)
        return self.ok(response["result"] if result_only else record, status=status, headers=headers)

    def wall_ms(self, mono_ns: int) -> int:
        """Epoch ms of a monotonic instant; the anchor follows the wall clock (NTP) every 10 s."""
        now_mono = time.monotonic_ns()
        if now_mono - self.mono_anchor_ns > 10_000_000_000:
            self.wall_anchor_ns, self.mono_anchor_ns = time.time_ns(), time.monotonic_ns()
        return (self.wall_anchor_ns + mono_ns - self.mono_anchor_ns) // 1_000_000

    def _complete(self, job: Job, out: Outcome) -> None:
        """Build the activation record (faasprof/localwhisk/README.md, "Records"), store it, answer the waiter."""
        self.throttles.inflight[self.namespace] = max(self.throttles.inflight.get(self.namespace, 1) - 1, 0)
        action = job.action
        wait_end = out.wait_end_ns if out.wait_end_ns is not None else time.monotonic_ns()
        wait_ms = max((wait_end - job.accepted_ns) // 1_000_000, 0)
        init_ms = None
        if out.init_start_ns is not None:
            init_end = out.init_end_ns if out.init_end_ns is not None else time.monotonic_ns()
            init_ms = (init_end - out.init_start_ns) // 1_000_000
        if out.run_start_ns is not None:
            start = self.wall_ms(out.run_start_ns) - (init_ms or 0)
            end = self.wall_ms(out.run_end_ns if out.run_end_ns is not None else time.monotonic_ns())
        elif out.init_start_ns is not None:
            start = self.wall_ms(out.init_start_ns)
            end = start + (init_ms or 0)
        else:
            start = end = self.wall_ms(wait_end)
        annotations = [
            {"key": "path", "value": action.path},
            {"key": "waitTime", "value": wait_ms},
            {"key": "kind", "value": action.kind},
            {"key": "timeout", "value": out.timed_out},
            {"key": "limits", "value": action.limits},
        ]
        if init_ms is not None:
            annotations.append({"key": "initTime", "value": init_ms})
        if out.run_start_ns is not None and out.run_end_ns is not None:
            # localwhisk's own, finer than the record's whole milliseconds (pool module docstring).
            annotations.append({"key": "runTimeUs", "value": (out.run_end_ns - out.run_start_ns) // 1000})
            if out.run_cpu_ns is not None:
                annotations.append({"key": "runCpuTimeUs", "value": out.run_cpu_ns // 1000})
        annotations.append({"key": "containerState", "value": job.container_state or "none"})
        status_code = out.status_code
        response = {"result": out.result, "status": STATUS_NAMES[status_code], "success": status_code == 0}
        if out.size is not None:
            response["size"] = out.size
        # OpenWhisk records a packaged action's activation under the invoking namespace, with the
        # package only in the ``path`` annotation (guest/pkg/name).
        simple_name = action.name.rsplit("/", 1)[-1]
        record = {
            "namespace": action.namespace,
            "name": simple_name,
            "version": action.version,
            "subject": job.subject,
            "activationId": job.activation_id,
            "start": start,
            "end": end,
            "duration": end - start,
            "response": response,
            "logs": out.logs,
            "annotations": annotations,
            "publish": False,
        }
        self.store.put_activation(record, action.name, status_code)
        if job.future is not None and not job.future.done():
            job.future.set_result(record)


async def wait_capped(future: asyncio.Future, wait_s: float):
    """The record, or None once ``wait_s`` passed (the activation goes on; the client gets 202).

    Cheaper than ``wait_for(shield(...))`` on the warm path: one timer, no extra task. The waiter
    future belongs to this request alone, so resolving it with None on timeout is safe: the
    pool's completion then finds it done and only stores the record.
    """
    handle = asyncio.get_running_loop().call_later(wait_s + TIMER_SLACK_S, _resolve_none, future)
    try:
        return await future
    finally:
        handle.cancel()


def _resolve_none(future: asyncio.Future) -> None:
    if not future.done():
        future.set_result(None)


def _truthy_annotation(doc: dict, key: str) -> bool:
    return any(
        a.get("key") == key and a.get("value") not in (False, None, "false", 0) for a in doc.get("annotations") or []
    )
