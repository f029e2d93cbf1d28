"""The REST API: OpenWhisk's paths, bodies, status codes and messages, served with aiohttp.

Covered: ``GET /``, ``GET /api/v1/namespaces``, ``.../limits``, actions (list, PUT, GET, DELETE,
POST to invoke: blocking, non-blocking, ``result``, ``timeout``), web actions
(``/api/v1/web/<ns>/<pkg>/<action>[.json|.http|.text|.html]``), activations (list with
``since``/``upto``/``limit``/``skip``/``docs``/``name``/``count``, one record, ``/result``,
``/logs``). Basic auth with one key; throttles per namespace as OpenWhisk's classic controller
(fixed wall-clock minute counter, in-flight counter including queued work). localwhisk's own
``GET /localwhisk/v1/pool`` lists the pool for ``faasprof local status``.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import logging
import os
import random
import re
import shutil
import sys
import time
import urllib.parse
import uuid
from pathlib import Path

from aiohttp import web

from localwhisk import __version__, fastjson
from localwhisk.cgroups import CgroupManager, detect
from localwhisk.config import Settings, parse_prewarm
from localwhisk.pool import STATUS_NAMES, Action, Job, Outcome, Pool
from localwhisk.sandbox import SANDBOXES_DIR, TIMER_SLACK_S, reap_orphans, runtime_family
from localwhisk.store import Store

log = logging.getLogger("localwhisk.server")

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
BUILD_DATE = "2026-11-01T00:00:00Z"
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
ACTION_CODE_MAX_BYTES = 48 * 1024 * 1024  # OpenWhisk's exec size limit (whisk.exec.size-limit 48 MB)
LIST_DEFAULT = 30
SNAPSHOTS_MAX = 4096  # cached Action snapshots (one per action revision); the cache is emptied past this
# Activation and transaction ids: 128 random bits from a generator seeded from os.urandom, a tenth
# of uuid4's cost on the invoke path (no system call, no UUID object); 32 hex digits as OpenWhisk's.
_IDS = random.Random()


def _new_id() -> str:
    return "%032x" % _IDS.getrandbits(128)


def _dumps(obj) -> bytes:
    return fastjson.dumps(obj)


def _node_major(node: str = "") -> str:
    try:
        import subprocess

        out = subprocess.run([node or "node", "--version"], capture_output=True, text=True, timeout=10).stdout.strip()
        return out.lstrip("v").split(".")[0] or "20"
    except (OSError, subprocess.SubprocessError):
        return "20"


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


class Localwhisk:
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
        self.store = Store(self.data_dir / "localwhisk.sqlite", settings.store_flush_ms)
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
        self.started_wall_ms = self.wall_anchor_ns // 1_000_000
        self.closing = False  # set first thing on stop: every request from then on gets 503

    # -- lifecycle --------------------------------------------------------------------------------

    async def open(self) -> None:
        s = self.settings
        prewarm = [(self.resolve_kind(kind) or kind, count, memory) for kind, count, memory in parse_prewarm(s.prewarm)]
        mode, roots = detect()
        if s.isolation == "docker":  # containers get their cgroups from Docker
            mode, roots = "rlimit", {}
        elif s.isolation == "rlimit" or (s.isolation == "cgroup" and mode == "rlimit"):
            if s.isolation == "cgroup":
                raise RuntimeError("isolation cgroup asked for, but no writable cgroup hierarchy was found under /sys/fs/cgroup")
            mode, roots = "rlimit", {}
        self.isolation = "docker" if s.isolation == "docker" else mode
        self.cgroups = CgroupManager(mode, roots, str(os.getpid()), s.user_memory_mb, s.cpu_policy, s.user_cpus)
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
            log.warning("killed %d sandbox(es) left by a crashed instance: pids %s", len(self.reaped_sandboxes), self.reaped_sandboxes)
        shutil.rmtree(workroot, ignore_errors=True)
        workroot.mkdir(parents=True, exist_ok=True)
        self.pool = Pool(s, self.cgroups, workroot, self.apihost, self._complete, prewarm)
        await self.pool.open()

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

    def wall_ms(self, mono_ns: int) -> int:
        """Epoch ms of a monotonic instant; the anchor follows the wall clock (NTP) every 10 s."""
        now_mono = time.monotonic_ns()
        if now_mono - self.mono_anchor_ns > 10_000_000_000:
            self.wall_anchor_ns, self.mono_anchor_ns = time.time_ns(), time.monotonic_ns()
        return (self.wall_anchor_ns + mono_ns - self.mono_anchor_ns) // 1_000_000

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
            "cpu_policy": s.cpu_policy if self.isolation == "docker" or (self.cgroups and self.cgroups.enabled) else "none (rlimit mode)",
            "pause_mechanism": _pause_mechanism(self.isolation, self.cgroups, s.docker_pause),
            "cgroup_parents": self.pool.docker.cgroup_parents() if self.pool and self.pool.docker else (self.cgroups.describe() if self.cgroups else {}),
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

    # -- helpers ------------------------------------------------------------------------------------

    def error(self, status: int, message: str, headers: dict | None = None) -> web.Response:
        return web.Response(status=status, body=_dumps({"error": message, "code": uuid.uuid4().hex}), content_type=JSON, headers=headers)

    def ok(self, obj, status: int = 200, headers: dict | None = None) -> web.Response:
        return web.Response(status=status, body=_dumps(obj), content_type=JSON, headers=headers)

    def auth_problem(self, request: web.Request) -> web.Response | None:
        """None when the request carries the key; else OpenWhisk's 401 (missing or invalid)."""
        if "Authorization" not in request.headers:
            return self.error(401, AUTH_MISSING, headers=AUTH_CHALLENGE)
        if not self.authorized(request):
            return self.error(401, AUTH_INVALID, headers=AUTH_CHALLENGE)
        return None

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

    # -- GET / ------------------------------------------------------------------------------------

    async def info(self, request: web.Request) -> web.Response:
        s = self.settings
        py = f"python:3.{sys.version_info.minor}"
        runtimes = {
            "nodejs": [{"kind": self.node_kind, "default": True, "deprecated": False, "attached": False, "requireMain": False}],
            "python": [
                {"kind": self.python_kind, "default": True, "deprecated": False, "attached": False, "requireMain": False},
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
        return self.ok({
            "description": "OpenWhisk API (localwhisk)",
            "api_version": "1.0.0",
            "api_version_path": "v1",
            "build": BUILD_DATE,
            "buildno": f"localwhisk-{__version__}",
            "swagger_paths": {"ui": "/api/v1/docs", "api-docs": "/api/v1/api-docs"},
        })

    async def namespaces(self, request: web.Request) -> web.Response:
        return self.ok([self.namespace])

    async def limits(self, request: web.Request) -> web.Response:
        if self.resolve_namespace(request.match_info["ns"]) is None:
            return self.error(403, f"The supplied authentication is not authorized to access '{request.match_info['ns']}'.")
        s = self.settings
        return self.ok({"invocationsPerMinute": s.invokes_per_minute, "concurrentInvocations": s.concurrent_invokes, "firesPerMinute": s.invokes_per_minute})

    async def pool_status(self, request: web.Request) -> web.Response:
        return self.ok({"localwhisk": self.describe(), "pool": self.pool.describe(), "records_written": self.store.written})

    # -- actions ----------------------------------------------------------------------------------

    def _split_name(self, ns: str, name: str) -> tuple[str, str]:
        """``pkg/action`` lives in namespace ``ns/pkg`` (OpenWhisk's path), plain names in ``ns``."""
        if "/" in name:
            package, _, simple = name.rpartition("/")
            return f"{ns}/{package}", simple
        return ns, name

    def _public_action(self, doc: dict, code: bool = True) -> dict:
        out = {k: v for k, v in doc.items() if k != "rev"}
        out["exec"] = dict(doc["exec"])
        if not code:
            out["exec"].pop("code", None)
        return out

    async def actions_list(self, request: web.Request) -> web.Response:
        ns = self.resolve_namespace(request.match_info["ns"])
        if ns is None:
            return self.error(403, f"The supplied authentication is not authorized to access '{request.match_info['ns']}'.")
        limit, skip, problem = _limit_skip(request.query, "actions")
        if problem:
            return self.error(400, problem)
        docs = [self._public_action(d, code=False) for (n, _), d in self.actions.items() if n == ns or n.startswith(ns + "/")]
        docs.sort(key=lambda d: d.get("updated", 0), reverse=True)
        return self.ok(docs[skip : skip + limit])

    async def action(self, request: web.Request) -> web.Response:
        ns = self.resolve_namespace(request.match_info["ns"])
        if ns is None:
            return self.error(403, f"The supplied authentication is not authorized to access '{request.match_info['ns']}'.")
        raw_name = urllib.parse.unquote(request.match_info["name"])
        problem = _name_problem(raw_name)
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

    async def put_action(self, request: web.Request, doc_ns: str, name: str) -> web.Response:
        body, problem = parse_json_body(await request.read() or b"{}")
        if problem:
            return self.error(400, problem)
        if not isinstance(body, dict):
            return self.error(400, "The request content was malformed:\nexpected a JSON object")
        overwrite = request.query.get("overwrite", "false") == "true"
        existing = self.actions.get((doc_ns, name))
        if existing is not None and not overwrite:
            return self.error(409, ALREADY_EXISTS)
        s = self.settings
        problems = []
        exec_in = body.get("exec")
        if exec_in is None and existing is None:
            return self.error(400, "The request content was malformed:\nexec undefined")
        if exec_in is not None:
            if not isinstance(exec_in, dict):
                return self.error(400, "The request content was malformed:\nexec must be an object")
            if exec_in.get("kind") == "sequence":
                return self.error(400, UNSUPPORTED["sequence"])
            kind = self.resolve_kind(str(exec_in.get("kind", "")))
            if kind is None:
                known = ", ".join(sorted({self.python_kind, self.node_kind, f"python:3.{sys.version_info.minor}"}))
                return self.error(400, f"The request content was malformed:\nkind '{exec_in.get('kind')}' not in Set({known})")
            code = exec_in.get("code")
            if not isinstance(code, str):
                return self.error(400, "The request content was malformed:\nexec.code must be a string (source text or base64 zip)")
            code_bytes = len(code.encode("utf-8"))
            if code_bytes > ACTION_CODE_MAX_BYTES:
                return self.error(413, f"exec larger than allowed: {code_bytes} > {ACTION_CODE_MAX_BYTES} bytes.")
            binary = bool(code.strip()) and BASE64_RE.match("".join(code.split())) is not None
            exec_doc = {"kind": kind, "code": code, "binary": binary}
            if exec_in.get("main"):
                exec_doc["main"] = str(exec_in["main"])
        else:
            exec_doc = existing["exec"]
        limits = dict(existing["limits"]) if existing else {
            "timeout": s.std_action_timeout_ms, "memory": s.std_action_memory_mb, "logs": 10, "concurrency": 1}
        for key, value in (body.get("limits") or {}).items():
            if key not in ("timeout", "memory", "logs", "concurrency"):
                continue
            if not isinstance(value, int) or isinstance(value, bool):
                problems.append(f"{key} must be an integer")
                continue
            limits[key] = value
        if not s.min_action_memory_mb <= limits["memory"] <= self.max_memory_mb:
            which = "below" if limits["memory"] < s.min_action_memory_mb else "exceeds"
            bound = s.min_action_memory_mb if which == "below" else self.max_memory_mb
            problems.append(f"memory size {limits['memory']} MB {which} allowed threshold of {bound} MB")
        if not s.min_action_timeout_ms <= limits["timeout"] <= s.max_action_timeout_ms:
            which = "below" if limits["timeout"] < s.min_action_timeout_ms else "exceeds"
            bound = s.min_action_timeout_ms if which == "below" else s.max_action_timeout_ms
            problems.append(f"duration {limits['timeout']} milliseconds {which} allowed threshold of {bound} milliseconds")
        if limits["concurrency"] != 1:
            problems.append(f"concurrency {limits['concurrency']} exceeds allowed threshold of 1")
        if not 0 <= limits["logs"] <= 10:
            problems.append(f"log size {limits['logs']} MB exceeds allowed threshold of 10 MB")
        parameters = body.get("parameters", existing["parameters"] if existing else [])
        annotations = body.get("annotations", existing["annotations"] if existing else None)
        for label, items in (("parameters", parameters), ("annotations", annotations or [])):
            if not isinstance(items, list) or not all(isinstance(p, dict) and "key" in p for p in items):
                problems.append(f"{label} must be a list of {{key, value}} objects")
        if problems:
            return self.error(400, "The request content was malformed:\n" + "; ".join(problems))
        annotations = [a for a in (annotations or []) if a.get("key") != "exec"]
        if not any(a.get("key") == "provide-api-key" for a in annotations):
            annotations.insert(0, {"key": "provide-api-key", "value": False})
        annotations.append({"key": "exec", "value": exec_doc["kind"]})
        version = _bump(existing["version"]) if existing else str(body.get("version") or "0.0.1")
        doc = {
            "namespace": doc_ns,
            "name": name,
            "version": version,
            "publish": bool(body.get("publish", False)),
            "exec": exec_doc,
            "annotations": annotations,
            "parameters": parameters,
            "limits": limits,
            "updated": time.time_ns() // 1_000_000,
            # A fresh revision on every PUT, also after a delete: a sandbox serves only the
            # revision it was initialised for, so a re-created action never meets old code.
            "rev": uuid.uuid4().hex,
        }
        await self.store.put_action(doc_ns, name, doc)
        self.actions[(doc_ns, name)] = doc
        return self.ok(self._public_action(doc))

    # -- packages ---------------------------------------------------------------------------------

    def _package_actions(self, name: str) -> list[dict]:
        return [d for (n, _), d in self.actions.items() if n == f"{self.namespace}/{name}"]

    async def packages_list(self, request: web.Request) -> web.Response:
        if self.resolve_namespace(request.match_info["ns"]) is None:
            return self.error(403, f"The supplied authentication is not authorized to access '{request.match_info['ns']}'.")
        limit, skip, problem = _limit_skip(request.query, "packages")
        if problem:
            return self.error(400, problem)
        docs = sorted(self.packages.values(), key=lambda d: d.get("updated", 0), reverse=True)
        if request.query.get("count") == "true":
            return self.ok({"packages": len(docs)})
        return self.ok([{k: v for k, v in d.items() if k != "parameters"} for d in docs[skip : skip + limit]])

    async def package(self, request: web.Request) -> web.Response:
        """One package: GET (with its actions), PUT (create, or update with overwrite), DELETE."""
        ns = self.resolve_namespace(request.match_info["ns"])
        if ns is None:
            return self.error(403, f"The supplied authentication is not authorized to access '{request.match_info['ns']}'.")
        name = request.match_info["name"]
        problem = _name_problem(name)
        if problem or "/" in name:
            return self.error(400, problem or ENTITY_NAME_ILLEGAL)
        existing = self.packages.get((ns, name))
        if request.method == "GET":
            if existing is None:
                return self.error(404, RESOURCE_DOES_NOT_EXIST)
            actions = [{"name": d["name"], "version": d["version"], "annotations": d["annotations"]} for d in self._package_actions(name)]
            return self.ok({**existing, "actions": actions, "feeds": []})
        if request.method == "DELETE":
            if existing is None:
                return self.error(404, RESOURCE_DOES_NOT_EXIST)
            contents = self._package_actions(name)
            if contents and request.query.get("force") != "true":
                return self.error(409, f"Package not empty (contains {len(contents)} {'entity' if len(contents) == 1 else 'entities'}). "
                                       "Set force param or delete package contents.")
            for doc in contents:
                self.actions.pop((doc["namespace"], doc["name"]), None)
                await self.store.delete_action(doc["namespace"], doc["name"])
            self.packages.pop((ns, name), None)
            await self.store.delete_package(ns, name)
            return self.ok(existing)
        if request.method != "PUT":
            return self.error(405, "HTTP method not allowed, supported methods: GET, PUT, DELETE")
        body, problem = parse_json_body(await request.read() or b"{}")
        if problem:
            return self.error(400, problem)
        if not isinstance(body, dict):
            return self.error(400, "The request content was malformed:\nexpected a JSON object")
        if existing is not None and request.query.get("overwrite", "false") != "true":
            return self.error(409, ALREADY_EXISTS)
        if body.get("binding"):
            return self.error(400, UNSUPPORTED["bindings"])
        parameters = body.get("parameters", existing["parameters"] if existing else [])
        annotations = body.get("annotations", existing["annotations"] if existing else [])
        for label, items in (("parameters", parameters), ("annotations", annotations)):
            if not isinstance(items, list) or not all(isinstance(p, dict) and "key" in p for p in items):
                return self.error(400, f"The request content was malformed:\n{label} must be a list of {{key, value}} objects")
        doc = {
            "namespace": ns,
            "name": name,
            "version": _bump(existing["version"]) if existing else "0.0.1",
            "publish": bool(body.get("publish", existing["publish"] if existing else False)),
            "annotations": annotations,
            "parameters": parameters,
            "binding": {},
            "updated": time.time_ns() // 1_000_000,
        }
        await self.store.put_package(ns, name, doc)
        self.packages[(ns, name)] = doc
        return self.ok(doc)

    # -- invoke -----------------------------------------------------------------------------------

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
        full_name = doc["name"] if doc["namespace"] == self.namespace else doc["namespace"].split("/", 1)[1] + "/" + doc["name"]
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

    def _accept(self, doc: dict, params: dict, accepted_ns: int, future=None) -> tuple[Job | None, str | None]:
        if self.closing:  # the request passed the gate before the stop began, its body arrived after
            return None, STOPPING
        problem = self.throttles.check(self.namespace)
        if problem:
            return None, problem
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
        self.pool.submit(job)
        return job, None

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
                return self.error(400, f"Timeout must be number of milliseconds up to {self.settings.max_blocking_wait_ms}.")
        raw = await request.read()
        if len(raw) > self.settings.max_payload_bytes:
            return self.error(413, f"Request larger than allowed: {len(raw)} > {self.settings.max_payload_bytes} bytes.")
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
        job, problem = self._accept(doc, params, accepted_ns, future)
        if problem:
            return self.error(503 if problem is STOPPING else 429, problem)
        headers = {"x-openwhisk-activation-id": job.activation_id}
        if not blocking:
            return self.ok({"activationId": job.activation_id}, status=202, headers=headers)
        record = await _wait_capped(future, wait_ms / 1000.0)
        if record is None:
            return self.ok({"activationId": job.activation_id}, status=202, headers=headers)
        response = record["response"]
        status = 200 if response["success"] else (500 if response["status"] == "whisk internal error" else 502)
        return self.ok(response["result"] if result_only else record, status=status, headers=headers)

    def _complete(self, job: Job, out: Outcome) -> None:
        """Build the activation record (localwhisk/README.md, "Records"), store it, answer the waiter."""
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

    # -- web actions ------------------------------------------------------------------------------

    async def web_action(self, request: web.Request) -> web.Response:
        accepted_ns = time.monotonic_ns()
        ns = self.resolve_namespace(request.match_info["ns"])
        rest = request.match_info["rest"].split("/")
        if ns is None or len(rest) < 2:
            return self.error(404, RESOURCE_DOES_NOT_EXIST)
        package, action_part, extra_path = rest[0], rest[1], "/".join(rest[2:])
        name, ext = action_part, ""
        for candidate in (".json", ".http", ".text", ".html", ".svg"):
            if action_part.endswith(candidate):
                name, ext = action_part[: -len(candidate)], candidate[1:]
                break
        doc_ns = ns if package == "default" else f"{ns}/{package}"
        doc = self.actions.get((doc_ns, name))
        annotations = {a.get("key"): a.get("value") for a in (doc or {}).get("annotations") or []}
        if doc is None or not annotations.get("web-export"):
            return self.error(404, RESOURCE_DOES_NOT_EXIST)
        if annotations.get("require-whisk-auth"):
            problem = self.auth_problem(request)
            if problem is not None:
                return problem
        raw = await request.read()
        if len(raw) > self.settings.max_payload_bytes:
            return self.error(413, f"Request larger than allowed: {len(raw)} > {self.settings.max_payload_bytes} bytes.")
        content_type = request.content_type or ""
        headers = {k.lower(): v for k, v in request.headers.items()}
        ctx = {"__ow_method": request.method.lower(), "__ow_headers": headers, "__ow_path": ("/" + extra_path) if extra_path else ""}
        request_params: dict = dict(request.query)
        if annotations.get("raw-http"):
            request_params = {"__ow_query": request.query_string}
            if raw:
                request_params["__ow_body"] = _web_body(raw, content_type, raw_http=True)
        elif raw:
            if content_type == JSON:
                body, problem = parse_json_body(raw)
                if problem:
                    return self.error(400, problem)
                if isinstance(body, dict):
                    request_params.update(body)
                else:
                    request_params["__ow_body"] = _web_body(raw, content_type, raw_http=False)
            elif content_type == "application/x-www-form-urlencoded":
                request_params.update(urllib.parse.parse_qsl(raw.decode("utf-8", "replace")))
            else:
                request_params["__ow_body"] = _web_body(raw, content_type, raw_http=False)
        request_params.update(ctx)
        params = self._params(doc, request_params)
        if isinstance(params, str):
            return self.error(400, params)
        future = asyncio.get_running_loop().create_future()
        job, problem = self._accept(doc, params, accepted_ns, future)
        if problem:
            return self.error(503 if problem is STOPPING else 429, problem)
        extra = {"x-openwhisk-activation-id": job.activation_id}
        record = await _wait_capped(future, self.settings.max_blocking_wait_ms / 1000.0)
        if record is None:
            return self.ok({"activationId": job.activation_id}, status=202, headers=extra)
        response = record["response"]
        result = response["result"]
        if not response["success"]:
            message = result.get("error") if isinstance(result, dict) else result
            status = 400 if response["status"] == "application error" else 502
            return web.Response(status=status, body=_dumps({"error": message, "code": job.transaction_id}), content_type=JSON, headers=extra)
        return _web_response(result, ext, extra)

    # -- activations ------------------------------------------------------------------------------

    async def activations_list(self, request: web.Request) -> web.Response:
        ns = self.resolve_namespace(request.match_info["ns"])
        if ns is None:
            return self.error(403, f"The supplied authentication is not authorized to access '{request.match_info['ns']}'.")
        q = request.query
        limit, skip, problem = _limit_skip(q, "activations")
        if problem:
            return self.error(400, problem)
        docs = q.get("docs", "false") == "true"
        count = q.get("count", "false") == "true"
        if docs and count:
            return self.error(400, "The parameter 'docs' is not permitted with 'count'.")
        bounds = {}
        for key in ("since", "upto"):
            if key in q:
                try:
                    bounds[key] = int(q[key])
                except ValueError:
                    return self.error(400, f"Parameter is not a valid value for epoch seconds: {q[key]}")
        name = q.get("name")
        if name is not None and (name.count("/") > 1 or not name.strip("/")):
            return self.error(400, f"Parameter may be a 'simple' name or 'package-name/simple' name: {name}")
        rows = await self.store.list_activations(ns, name.strip("/") if name else None, bounds.get("since"), bounds.get("upto"), limit, skip, count)
        if count:
            return self.ok({"activations": rows})
        if docs:
            return self.ok([doc for doc, _ in rows])
        return self.ok([_summary(doc, code) for doc, code in rows])

    async def activation(self, request: web.Request) -> web.Response:
        ns = self.resolve_namespace(request.match_info["ns"])
        if ns is None:
            return self.error(403, f"The supplied authentication is not authorized to access '{request.match_info['ns']}'.")
        activation_id = request.match_info["id"]
        if not re.fullmatch(r"[0-9a-fA-F]{32}", activation_id):
            return self.error(400, "The activation id is not valid.")
        record = await self.store.get_activation(ns, activation_id.lower())
        if record is None:
            return self.error(404, RESOURCE_DOES_NOT_EXIST)
        what = request.match_info.get("what")
        if what is None:
            return self.ok(record)
        if what == "result":
            return self.ok(record["response"])
        if what == "logs":
            return self.ok({"logs": record["logs"]})
        return self.error(404, RESOURCE_DOES_NOT_EXIST)

    # -- application ------------------------------------------------------------------------------

    def app(self) -> web.Application:
        # Action PUTs may carry a 48 MB archive (base64); invoke bodies are checked against
        # max_payload_bytes in the handlers, with OpenWhisk's 413 message.
        app = web.Application(middlewares=[self.gate], client_max_size=max(self.settings.max_payload_bytes, ACTION_CODE_MAX_BYTES * 4 // 3) + 65536)
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
        r.add_route("*", "/{tail:.*}", self.not_found)
        return app

    async def empty_collection(self, request: web.Request) -> web.Response:
        """Triggers and rules: always none here (``wsk list``, ``namespaces.get`` need 200 [])."""
        if self.resolve_namespace(request.match_info["ns"]) is None:
            return self.error(403, f"The supplied authentication is not authorized to access '{request.match_info['ns']}'.")
        limit, skip, problem = _limit_skip(request.query, request.path.rsplit("/", 1)[-1])
        if problem:
            return self.error(400, problem)
        if request.query.get("count") == "true":
            return self.ok({request.path.rsplit("/", 1)[-1]: 0})
        return self.ok([])

    async def unsupported_entity(self, request: web.Request) -> web.Response:
        """One trigger or rule: none exists (404); creating or firing one is refused (400)."""
        collection = request.path.split("/")[5]
        if self.resolve_namespace(request.match_info["ns"]) is None:
            return self.error(403, f"The supplied authentication is not authorized to access '{request.match_info['ns']}'.")
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
        return "docker pause (Engine API: runc, cgroup freezer)" if docker_pause == "api" else "container's cgroup freezer, written directly"
    return "cgroup freezer" if cgroups and cgroups.enabled else "SIGSTOP/SIGCONT"


async def _wait_capped(future: asyncio.Future, wait_s: float):
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
    return any(a.get("key") == key and a.get("value") not in (False, None, "false", 0) for a in doc.get("annotations") or [])


def _bump(version: str) -> str:
    parts = (version.split(".") + ["0", "0", "0"])[:3]
    try:
        return f"{int(parts[0])}.{int(parts[1])}.{int(parts[2]) + 1}"
    except ValueError:
        return "0.0.1"


def _limit_skip(query, collection: str) -> tuple[int, int, str | None]:
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


def _summary(doc: dict, status_code: int) -> dict:
    """The ``docs=false`` list entry (OpenWhisk's activations view)."""
    out = {k: doc[k] for k in ("namespace", "name", "version", "publish", "annotations", "activationId", "start", "end", "duration") if k in doc}
    if "cause" in doc:
        out["cause"] = doc["cause"]
    out["statusCode"] = status_code
    return out


def _is_binary_type(content_type: str) -> bool:
    if content_type.startswith("text/") or content_type in ("application/json", "application/xml", "application/javascript",
                                                             "application/x-www-form-urlencoded"):
        return False
    return True


def _web_body(raw: bytes, content_type: str, raw_http: bool) -> str:
    if content_type == JSON and raw_http:
        return base64.b64encode(raw).decode()
    if _is_binary_type(content_type):
        return base64.b64encode(raw).decode()
    return raw.decode("utf-8", "replace")


def _web_response(result, ext: str, headers: dict) -> web.Response:
    if ext == "json":
        return web.Response(status=200, body=_dumps(result), content_type=JSON, headers=headers)
    if ext in ("text", "html", "svg"):
        value = result.get(ext) if isinstance(result, dict) else None
        if value is None:
            return web.Response(status=400, body=_dumps({"error": "Response does not include requested property."}), content_type=JSON, headers=headers)
        ctype = {"text": "text/plain", "html": "text/html", "svg": "image/svg+xml"}[ext]
        return web.Response(status=200, text=str(value), content_type=ctype, headers=headers)
    if not isinstance(result, dict) or not ({"body", "statusCode", "headers"} & set(result)):
        return web.Response(status=200, body=_dumps(result), content_type=JSON, headers=headers)
    out_headers = dict(headers)
    out_headers.update({str(k): str(v) for k, v in (result.get("headers") or {}).items()})
    status = int(result.get("statusCode") or 200)
    body = result.get("body")
    ctype = next((v for k, v in out_headers.items() if k.lower() == "content-type"), None)
    if body is None:
        data = b""
    elif isinstance(body, (dict, list)):
        data = _dumps(body)
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
        return None, f"The request content was malformed:\nJSON nested {depth} levels deep; at most {JSON_MAX_DEPTH} are accepted"
    try:
        return fastjson.loads(raw), None
    except (ValueError, RecursionError) as error:
        return None, f"The request content was malformed:\n{error}"


def _name_problem(name: str) -> str | None:
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
