"""The REST API served with aiohttp: one localwhisk instance, its lifecycle, and its routes.

Covered: ``GET /``, ``GET /api/v1``, ``GET /api/v1/namespaces``, ``.../limits``, actions (list, PUT,
GET, DELETE, POST to invoke: blocking, non-blocking, ``result``, ``timeout``), packages, web actions
(``/api/v1/web/<ns>/<pkg>/<action>[.json|.http|.text|.html]``), activations (list with
``since``/``upto``/``limit``/``skip``/``docs``/``name``/``count``, one record, ``/result``,
``/logs``). Basic auth with one key; throttles per namespace as OpenWhisk's classic controller
(fixed wall-clock minute counter, in-flight counter including queued work). localwhisk's own
``GET /localwhisk/v1/pool`` lists the pool for ``faasprof local status``.

``Localwhisk`` combines the API's parts, one module a job: ``api_base`` (messages, responses,
auth, body parsing), ``api_entities`` (actions and packages stored), ``api_invoke`` (an
invocation from request to record), ``api_web`` (web actions), ``api_activations`` (records read
back). This module holds what is the instance's own: settings, start and stop, what it describes
of itself, the gate every request passes, and the routing table.
"""

from __future__ import annotations

import base64
import logging
import os
import shutil
import sys
import time
import urllib.parse
from pathlib import Path

from aiohttp import web

from faasprof.localwhisk import __version__, sandbox_users
from faasprof.localwhisk.activation import Action
from faasprof.localwhisk.api_activations import Activations
from faasprof.localwhisk.api_base import RESOURCE_DOES_NOT_EXIST, STOPPING, UNSUPPORTED, limit_skip, name_problem
from faasprof.localwhisk.api_entities import Entities
from faasprof.localwhisk.api_invoke import Throttles
from faasprof.localwhisk.api_web import WebActions
from faasprof.localwhisk.cgroups import CgroupManager, detect
from faasprof.localwhisk.config import Settings, parse_prewarm
from faasprof.localwhisk.pool import Pool
from faasprof.localwhisk.private import private_dir
from faasprof.localwhisk.sandbox import SANDBOXES_DIR
from faasprof.localwhisk.sandbox_users import SandboxUsers, reap_orphans
from faasprof.localwhisk.store import STORE_FILE, Store

log = logging.getLogger("faasprof.localwhisk.server")

BUILD_DATE = "2026-11-01T00:00:00Z"


def _node_major(node: str = "") -> str:
    try:
        import subprocess

        out = subprocess.run([node or "node", "--version"], capture_output=True, text=True, timeout=10).stdout.strip()
        return out.lstrip("v").split(".")[0] or "20"
    except (OSError, subprocess.SubprocessError):
        return "20"


class Localwhisk(Entities, WebActions, Activations):
    """One instance: settings, store, pool, throttles and the aiohttp application."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self.data_dir = Path(settings.data_dir)
        self.namespace = settings.namespace
        user, _, key = settings.auth.partition(":")
        self.subject = settings.namespace
        self.expected_auth = "Basic " + base64.b64encode(f"{user}:{key}".encode()).decode()
        self.auth_pair = (user, key)
        self.max_memory_mb = min(settings.max_action_memory_mb, settings.user_memory_mb)
        self.throttles = Throttles(settings.invokes_per_minute, settings.concurrent_invokes)
        self.actions: dict[tuple[str, str], dict] = {}
        self.packages: dict[tuple[str, str], dict] = {}  # (namespace, name) -> package doc
        self._snapshots: dict[str, Action] = {}  # action revision -> its Action (docs never change in place)
        self.store = Store(self.data_dir / STORE_FILE, settings.store_flush_ms)
        self.mono_anchor_ns = time.monotonic_ns()
        self.wall_anchor_ns = time.time_ns()
        self.node_kind = "nodejs:" + _node_major(settings.node)
        self.python_kind = "python:3"
        self.pool: Pool | None = None
        self.apihost = ""
        self.isolation = "rlimit"
        self.cgroups: CgroupManager | None = None
        self.stale_cgroups: list[str] = []
        self.reaped_sandboxes: list[int] = []
        self.closing = False  # set first thing on stop: every request from then on gets 503
        self.owns_process = False  # set by `serve`: this process is the server's alone

    # -- lifecycle --------------------------------------------------------------------------------

    async def open(self) -> None:
        s = self.settings
        prewarm = [(self.resolve_kind(kind) or kind, count, memory) for kind, count, memory in parse_prewarm(s.prewarm)]
        mode, roots = detect()
        if s.isolation == "docker":  # containers get their cgroups from Docker
            mode, roots = "rlimit", {}
        elif s.isolation == "rlimit" or (s.isolation == "cgroup" and mode == "rlimit"):
            if s.isolation == "cgroup":
                raise RuntimeError(
                    "isolation cgroup asked for, but no writable cgroup hierarchy was found under /sys/fs/cgroup"
                )
            mode, roots = "rlimit", {}
        self.isolation = "docker" if s.isolation == "docker" else mode
        self.cgroups = CgroupManager(
            mode, roots, str(os.getpid()), s.user_memory_mb, s.cpu_policy, s.user_cpus, s.max_sandbox_processes
        )
        if self.cgroups.enabled:
            self.stale_cgroups = self.cgroups.cleanup_stale()
            self.cgroups.setup()
        await self.store.open()
        for doc in await self.store.load_actions():
            self.actions[(doc["namespace"], doc["name"])] = doc
        for doc in await self.store.load_packages():
            self.packages[(doc["namespace"], doc["name"])] = doc
        workroot = self.data_dir / SANDBOXES_DIR
        self.reaped_sandboxes = reap_orphans(workroot)
        if self.reaped_sandboxes:
            log.warning(
                "killed %d sandbox(es) left by a crashed instance: pids %s",
                len(self.reaped_sandboxes),
                self.reaped_sandboxes,
            )
        shutil.rmtree(workroot, ignore_errors=True)
        private_dir(workroot)
        users = self._sandbox_users()
        self.pool = Pool(s, self.cgroups, workroot, self.apihost, self._complete, prewarm, users)
        # Only a server in a process of its own adopts what actions leave (and kills it at stop).
        self.pool.adopts = self.owns_process and sandbox_users.become_subreaper()
        await self.pool.open()

    def _sandbox_users(self) -> SandboxUsers | None:
        """A user per process sandbox where the server is root; otherwise say once why not."""
        if self.settings.isolation == "docker":
            return None
        if not sandbox_users.available():
            log.warning("%s", sandbox_users.NOT_ROOT_WARNING)
            return None
        users = SandboxUsers(self.settings.python or sys.executable)
        if users.python_refused:
            log.warning("%s", users.python_refused)
        return users

    def set_apihost(self, apihost: str) -> None:
        self.apihost = apihost
        if self.pool:
            self.pool.apihost = apihost

    async def close(self) -> None:
        """Refuse new requests (503), fail queued and running activations (recorded), flush records."""
        self.closing = True
        if self.pool:
            await self.pool.close()
        await self.store.close()
        if self.cgroups and self.cgroups.enabled:
            self.cgroups.teardown()

    def describe(self) -> dict:
        s = self.settings
        return {
            "version": __version__,
            "pid": os.getpid(),
            "data_dir": str(self.data_dir),
            "apihost": self.apihost,
            "user_memory_mb": s.user_memory_mb,
            "pause_grace_ms": s.pause_grace_ms,
            "idle_timeout_s": s.idle_timeout_s,
            "parallel_runs": s.parallel_runs,
            "prewarm": s.prewarm,
            "isolation": self.isolation,
            "cpu_policy": s.cpu_policy
            if self.isolation == "docker" or (self.cgroups and self.cgroups.enabled)
            else "none (rlimit mode)",
            "pause_mechanism": _pause_mechanism(self.isolation, self.cgroups, s.docker_pause),
            "cgroup_parents": self.pool.docker.cgroup_parents()
            if self.pool and self.pool.docker
            else (self.cgroups.describe() if self.cgroups else {}),
            "invokes_per_minute": s.invokes_per_minute,
            "concurrent_invokes": s.concurrent_invokes,
            "store_flush_ms": s.store_flush_ms,
            "max_blocking_wait_ms": s.max_blocking_wait_ms,
            "control_plane": s.control_plane,
            "stale_cgroups_removed": self.stale_cgroups,
            "stale_containers_removed": self.pool.docker.reaped if self.pool and self.pool.docker else [],
            "orphan_sandboxes_killed": self.reaped_sandboxes,
            "python": s.python or sys.executable,
            "node": s.node or shutil.which("node") or "",
        }

    # -- the gate ---------------------------------------------------------------------------------

    @web.middleware
    async def gate(self, request: web.Request, handler):
        """503 once stopping; Basic auth on every path but ``/``, ``/api/v1`` and web actions.

        One place for the check, so that no route can be added without it (OpenWhisk, too,
        authenticates every ``/api/v1`` route but the info path, web actions decide themselves).
        """
        if self.closing:
            return self.error(503, STOPPING, headers={"Connection": "close"})
        path = request.path
        if path not in ("/", "/api/v1", "/api/v1/") and not path.startswith("/api/v1/web/"):
            problem = self.auth_problem(request)
            if problem is not None:
                return problem
        return await handler(request)

    # -- GET / ------------------------------------------------------------------------------------

    async def info(self, request: web.Request) -> web.Response:
        s = self.settings
        py = f"python:3.{sys.version_info.minor}"
        runtimes = {
            "nodejs": [
                {"kind": self.node_kind, "default": True, "deprecated": False, "attached": False, "requireMain": False}
            ],
            "python": [
                {
                    "kind": self.python_kind,
                    "default": True,
                    "deprecated": False,
                    "attached": False,
                    "requireMain": False,
                },
                {"kind": py, "default": False, "deprecated": False, "attached": False, "requireMain": False},
            ],
        }
        body = {
            "api_paths": ["/api/v1"],
            "description": "OpenWhisk (localwhisk: an embedded single-machine stand-in)",
            "limits": {
                "actions_per_minute": s.invokes_per_minute,
                "concurrent_actions": s.concurrent_invokes,
                "triggers_per_minute": s.invokes_per_minute,
                "max_action_duration": s.max_action_timeout_ms,
                "min_action_duration": s.min_action_timeout_ms,
                "std_action_duration": s.std_action_timeout_ms,
                "max_action_memory": self.max_memory_mb * 1048576,
                "min_action_memory": s.min_action_memory_mb * 1048576,
                "std_action_memory": s.std_action_memory_mb * 1048576,
                "max_action_logs": 10 * 1048576,
                "min_action_logs": 0,
                "max_action_concurrency": 1,
                "min_action_concurrency": 1,
                "sequence_length": 50,
            },
            "runtimes": runtimes,
            "support": {"github": "https://github.com/apache/openwhisk/issues"},
        }
        # The instance's details (data directory, PID, interpreter, cgroup paths) only for the key
        # holder: a listener reachable by others must not tell them about the host.
        if self.authorized(request):
            body["localwhisk"] = self.describe()
        return self.ok(body)

    async def api_info(self, request: web.Request) -> web.Response:
        """``GET /api/v1`` as OpenWhisk's RestAPIs.info (``build``/``buildno`` identify the server)."""
        return self.ok(
            {
                "description": "OpenWhisk API (localwhisk)",
                "api_version": "1.0.0",
                "api_version_path": "v1",
                "build": BUILD_DATE,
                "buildno": f"localwhisk-{__version__}",
                "swagger_paths": {"ui": "/api/v1/docs", "api-docs": "/api/v1/api-docs"},
            }
        )

    async def namespaces(self, request: web.Request) -> web.Response:
        return self.ok([self.namespace])

    async def limits(self, request: web.Request) -> web.Response:
        if self.resolve_namespace(request.match_info["ns"]) is None:
            return self.error(
                403, f"The supplied authentication is not authorized to access '{request.match_info['ns']}'."
            )
        s = self.settings
        return self.ok(
            {
                "invocationsPerMinute": s.invokes_per_minute,
                "concurrentInvocations": s.concurrent_invokes,
                "firesPerMinute": s.invokes_per_minute,
            }
        )

    async def pool_status(self, request: web.Request) -> web.Response:
        return self.ok(
            {
                "localwhisk": self.describe(),
                "pool": self.running_pool().describe(),
                "records_written": self.store.written,
            }
        )

    async def in_flight(self, request: web.Request) -> web.Response:
        """Activations accepted and not yet recorded, as OpenWhisk's controller counts them against
        ``concurrentInvocations`` (queued ones included): what a client that started this instance
        waits for before stopping it, so that no accepted activation is cut short."""
        in_flight = self.throttles.inflight.get(self.namespace, 0)
        queued = len(self.pool.buffer) if self.pool else 0
        return self.ok(
            {
                "namespace": self.namespace,
                "inFlight": in_flight,
                "queued": queued,
                "running": max(in_flight - queued, 0),
                "recordsWritten": self.store.written,
            }
        )

    # -- routing ----------------------------------------------------------------------------------

    async def action(self, request: web.Request) -> web.Response:
        ns = self.resolve_namespace(request.match_info["ns"])
        if ns is None:
            return self.error(
                403, f"The supplied authentication is not authorized to access '{request.match_info['ns']}'."
            )
        raw_name = urllib.parse.unquote(request.match_info["name"])
        if (
            request.method == "GET"
            and raw_name.endswith("/")
            and not name_problem(raw_name[:-1])
            and "/" not in raw_name[:-1]
        ):
            return self.list_actions(request, ns, package=raw_name[:-1])
        problem = name_problem(raw_name)
        if problem:
            return self.error(400, problem)
        doc_ns, name = self._split_name(ns, raw_name)
        method = request.method
        if method == "POST":
            return await self.invoke(request, ns, doc_ns, name)
        if method == "GET":
            doc = self.actions.get((doc_ns, name))
            if doc is None:
                return self.error(404, RESOURCE_DOES_NOT_EXIST)
            return self.ok(self._public_action(doc, code=request.query.get("code", "true") != "false"))
        if method == "DELETE":
            doc = self.actions.pop((doc_ns, name), None)
            if doc is None:
                return self.error(404, RESOURCE_DOES_NOT_EXIST)
            await self.store.delete_action(doc_ns, name)
            return self.ok(self._public_action(doc, code=False))
        if method == "PUT":
            return await self.put_action(request, doc_ns, name)
        return self.error(405, "HTTP method not allowed, supported methods: GET, PUT, DELETE, POST")

    def app(self) -> web.Application:
        # Action PUTs may carry max_action_code_bytes of code (base64); invoke bodies are checked against
        # max_payload_bytes in the handlers, with OpenWhisk's 413 message.
        app = web.Application(
            middlewares=[self.gate],
            client_max_size=max(self.settings.max_payload_bytes, self.settings.max_action_code_bytes) + 65536,
        )
        r = app.router
        r.add_get("/", self.info)
        r.add_get("/api/v1", self.api_info)
        r.add_get("/api/v1/", self.api_info)
        r.add_get("/api/v1/namespaces", self.namespaces)
        # The invoke path first: aiohttp tries the routes under /api/v1/namespaces in this order,
        # and none of the others matches an /actions/NAME path.
        r.add_route("*", "/api/v1/namespaces/{ns}/actions/{name:.+}", self.action)
        r.add_get("/api/v1/namespaces/{ns}/limits", self.limits)
        r.add_get("/api/v1/namespaces/{ns}/actions", self.actions_list)
        r.add_get("/api/v1/namespaces/{ns}/activations", self.activations_list)
        r.add_get("/api/v1/namespaces/{ns}/activations/{id}", self.activation)
        r.add_get("/api/v1/namespaces/{ns}/activations/{id}/{what}", self.activation)
        r.add_get("/api/v1/namespaces/{ns}/packages", self.packages_list)
        r.add_route("*", "/api/v1/namespaces/{ns}/packages/{name}", self.package)
        for collection in ("triggers", "rules"):
            r.add_get(f"/api/v1/namespaces/{{ns}}/{collection}", self.empty_collection)
            r.add_route("*", f"/api/v1/namespaces/{{ns}}/{collection}/{{name:.+}}", self.unsupported_entity)
        r.add_route("*", "/api/v1/web/whisk.system/apimgmt/{rest:.*}", self.unsupported_apis)
        r.add_route("*", "/api/v1/web/{ns}/{rest:.+}", self.web_action)
        r.add_get("/localwhisk/v1/pool", self.pool_status)
        r.add_get("/localwhisk/v1/activations", self.in_flight)
        r.add_route("*", "/{tail:.*}", self.not_found)
        return app

    async def empty_collection(self, request: web.Request) -> web.Response:
        """Triggers and rules: always none here (``wsk list``, ``namespaces.get`` need 200 [])."""
        if self.resolve_namespace(request.match_info["ns"]) is None:
            return self.error(
                403, f"The supplied authentication is not authorized to access '{request.match_info['ns']}'."
            )
        limit, skip, problem = limit_skip(request.query, request.path.rsplit("/", 1)[-1])
        if problem:
            return self.error(400, problem)
        if request.query.get("count") == "true":
            return self.ok({request.path.rsplit("/", 1)[-1]: 0})
        return self.ok([])

    async def unsupported_entity(self, request: web.Request) -> web.Response:
        """One trigger or rule: none exists (404); creating or firing one is refused (400)."""
        collection = request.path.split("/")[5]
        if self.resolve_namespace(request.match_info["ns"]) is None:
            return self.error(
                403, f"The supplied authentication is not authorized to access '{request.match_info['ns']}'."
            )
        if request.method in ("GET", "DELETE", "HEAD"):
            return self.error(404, RESOURCE_DOES_NOT_EXIST)
        return self.error(400, UNSUPPORTED[collection])

    async def unsupported_apis(self, request: web.Request) -> web.Response:
        """``wsk api`` and the JS client's routes call OpenWhisk's apimgmt web actions."""
        return self.error(400, UNSUPPORTED["apis"])

    async def not_found(self, request: web.Request) -> web.Response:
        return self.error(404, RESOURCE_DOES_NOT_EXIST)


def _pause_mechanism(isolation: str, cgroups: CgroupManager | None, docker_pause: str = "api") -> str:
    if isolation == "docker":
        return (
            "docker pause (Engine API: runc, cgroup freezer)"
            if docker_pause == "api"
            else "container's cgroup freezer, written directly"
        )
    return "cgroup freezer" if cgroups and cgroups.enabled else "SIGSTOP/SIGCONT"
