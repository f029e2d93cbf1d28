"""Actions and packages as stored entities: list, create or update (PUT), read, delete.

OpenWhisk's rules for an action document: its kind among the runtimes, its code within the exec
size limit (source text or a base64 zip), its limits within the instance's bounds, parameters
and annotations as lists of ``{key, value}``, a version bumped on every update and a fresh
``rev`` on every PUT (a sandbox serves only the revision it was initialised for). A packaged
action ``pkg/name`` lives in namespace ``ns/pkg``. Invoking an action is ``api_invoke``'s.
"""

from __future__ import annotations

import sys
import time
import uuid

from aiohttp import web

from faasprof.localwhisk.api_base import (
    ALREADY_EXISTS,
    BASE64_RE,
    ENTITY_NAME_ILLEGAL,
    RESOURCE_DOES_NOT_EXIST,
    UNSUPPORTED,
    ApiBase,
    limit_skip,
    name_problem,
    parse_json_body,
)
from faasprof.localwhisk.archives import ArchiveRefused, check_archive, decode_code

MALFORMED = "The request content was malformed:\n"


class Entities(ApiBase):
    """The handlers of ``.../actions`` and ``.../packages`` (GET, PUT, DELETE)."""

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
            return self.error(
                403, f"The supplied authentication is not authorized to access '{request.match_info['ns']}'."
            )
        return self.list_actions(request, ns)

    def list_actions(self, request: web.Request, ns: str, package: str | None = None) -> web.Response:
        """The namespace's actions, or with ``package`` those of that package only (OpenWhisk lists
        a package's actions at ``actions/PACKAGE/``, as ``wsk action list PACKAGE`` asks)."""
        limit, skip, problem = limit_skip(request.query, "actions")
        if problem:
            return self.error(400, problem)
        if package is None:
            docs = [
                self._public_action(d, code=False)
                for (n, _), d in self.actions.items()
                if n == ns or n.startswith(ns + "/")
            ]
        else:
            docs = [self._public_action(d, code=False) for (n, _), d in self.actions.items() if n == f"{ns}/{package}"]
        docs.sort(key=lambda d: d.get("updated", 0), reverse=True)
        return self.ok(docs[skip : skip + limit])

    async def put_action(self, request: web.Request, doc_ns: str, name: str) -> web.Response:
        """Create or update an action in four steps: parse the body, validate its exec, merge and
        check its limits and lists, store the document; each refusal is OpenWhisk's answer."""
        try:
            body = _object_body(await request.read())
            existing = self.actions.get((doc_ns, name))
            if existing is not None and request.query.get("overwrite", "false") != "true":
                raise Refused(409, ALREADY_EXISTS)
            exec_doc = self._exec_doc(body.get("exec"), existing)
            limits, problems = self._merged_limits(body.get("limits"), existing)
            parameters, annotations, list_problems = _entity_lists(body, existing)
            problems += list_problems
            if problems:
                raise Refused(400, MALFORMED + "; ".join(problems))
        except Refused as refused:
            return self.error(refused.status, refused.message)
        doc = _action_doc(doc_ns, name, body, existing, exec_doc, limits, parameters, annotations)
        await self.store.put_action(doc_ns, name, doc)
        self.actions[(doc_ns, name)] = doc
        return self.ok(self._public_action(doc))

    def _exec_doc(self, exec_in: object, existing: dict | None) -> dict:
        """The stored ``exec`` of a PUT: the body's, checked (kind, code, size, archive), or the
        existing action's when the body has none."""
        if exec_in is None:
            if existing is None:
                raise Refused(400, "exec undefined")  # OpenWhisk's words, without the malformed prefix
            return existing["exec"]
        if not isinstance(exec_in, dict):
            raise Refused(400, MALFORMED + "JSON object expected")
        if not isinstance(exec_in.get("kind"), str):
            raise Refused(400, MALFORMED + "'kind' must be a string defined in 'exec'")
        given = exec_in["kind"].strip().lower()
        if given == "sequence":
            raise Refused(400, UNSUPPORTED["sequence"])
        kind = self.resolve_kind(given)
        if kind is None:
            known = "', '".join(sorted({self.python_kind, self.node_kind, f"python:3.{sys.version_info.minor}"}))
            raise Refused(
                400,
                MALFORMED + f"The specified runtime '{given}' is not supported by this platform. Valid values are: "
                f"'{known}'.",
            )
        code = exec_in.get("code")
        if not isinstance(code, str):
            raise Refused(
                400, MALFORMED + f"'code' must be a string or attachment object defined in 'exec' for '{given}' actions"
            )
        code_bytes = len(code.encode("utf-8"))
        if code_bytes > self.settings.max_action_code_bytes:
            raise Refused(413, f"exec larger than allowed: {code_bytes} > {self.settings.max_action_code_bytes} bytes.")
        binary = self._is_archive(code, exec_in.get("binary"))
        exec_doc: dict = {"kind": kind, "code": code, "binary": binary}
        if exec_in.get("main"):
            exec_doc["main"] = str(exec_in["main"])
        return exec_doc

    def _is_archive(self, code: str, declared: object) -> bool:
        """Whether ``code`` is a base64 zip: as declared by ``exec.binary`` (refused when it is not
        base64 or unpacks beyond the caps), else guessed from its text as OpenWhisk's CLI does."""
        if declared is True:
            try:
                data = decode_code(code)
                if data[:2] == b"PK":  # a zip; other binary code (a jar, a native binary) is passed as is
                    check_archive(data, self.settings.max_unpacked_code_bytes, self.settings.max_archive_entries)
            except ArchiveRefused as refused:
                raise Refused(400, MALFORMED + str(refused)) from None
            return True
        binary = bool(code.strip()) and BASE64_RE.match("".join(code.split())) is not None
        if binary:
            try:
                check_archive(
                    decode_code(code), self.settings.max_unpacked_code_bytes, self.settings.max_archive_entries
                )
            except ArchiveRefused as refused:
                if "unpacks to" in str(refused) or "entries" in str(refused):
                    raise Refused(400, MALFORMED + str(refused)) from None
        return binary

    def _merged_limits(self, given: object, existing: dict | None) -> tuple[dict, list[str]]:
        """The action's limits (the existing action's or the defaults, updated by the body's) and
        what is wrong with them, in OpenWhisk's words."""
        s = self.settings
        limits = (
            dict(existing["limits"])
            if existing
            else {"timeout": s.std_action_timeout_ms, "memory": s.std_action_memory_mb, "logs": 10, "concurrency": 1}
        )
        problems = []
        for key, value in (given if isinstance(given, dict) else {}).items():
            if key not in ("timeout", "memory", "logs", "concurrency"):
                continue
            if not isinstance(value, int) or isinstance(value, bool):
                problems.append(f"{key} must be an integer")
                continue
            limits[key] = value
        return limits, problems + self._limit_problems(limits)

    def _limit_problems(self, limits: dict) -> list[str]:
        s = self.settings
        problems = []
        if not s.min_action_memory_mb <= limits["memory"] <= self.max_memory_mb:
            which = "below" if limits["memory"] < s.min_action_memory_mb else "exceeds"
            bound = s.min_action_memory_mb if which == "below" else self.max_memory_mb
            problems.append(f"memory size {limits['memory']} MB {which} allowed threshold of {bound} MB")
        if not s.min_action_timeout_ms <= limits["timeout"] <= s.max_action_timeout_ms:
            which = "below" if limits["timeout"] < s.min_action_timeout_ms else "exceeds"
            bound = s.min_action_timeout_ms if which == "below" else s.max_action_timeout_ms
            problems.append(
                f"duration {limits['timeout']} milliseconds {which} allowed threshold of {bound} milliseconds"
            )
        if limits["concurrency"] != 1:
            problems.append(f"concurrency {limits['concurrency']} exceeds allowed threshold of 1")
        if not 0 <= limits["logs"] <= 10:
            problems.append(f"log size {limits['logs']} MB exceeds allowed threshold of 10 MB")
        return problems

    def _package_actions(self, name: str) -> list[dict]:
        return [d for (n, _), d in self.actions.items() if n == f"{self.namespace}/{name}"]

    async def packages_list(self, request: web.Request) -> web.Response:
        if self.resolve_namespace(request.match_info["ns"]) is None:
            return self.error(
                403, f"The supplied authentication is not authorized to access '{request.match_info['ns']}'."
            )
        limit, skip, problem = limit_skip(request.query, "packages")
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
            return self.error(
                403, f"The supplied authentication is not authorized to access '{request.match_info['ns']}'."
            )
        name = request.match_info["name"]
        problem = name_problem(name)
        if problem or "/" in name:
            return self.error(400, problem or ENTITY_NAME_ILLEGAL)
        existing = self.packages.get((ns, name))
        if request.method == "GET":
            return self._package_get(name, existing)
        if request.method == "DELETE":
            return await self._package_delete(request, ns, name, existing)
        if request.method != "PUT":
            return self.error(405, "HTTP method not allowed, supported methods: GET, PUT, DELETE")
        try:
            return await self._package_put(request, ns, name, existing)
        except Refused as refused:
            return self.error(refused.status, refused.message)

    def _package_get(self, name: str, existing: dict | None) -> web.Response:
        if existing is None:
            return self.error(404, RESOURCE_DOES_NOT_EXIST)
        actions = [
            {"name": d["name"], "version": d["version"], "annotations": d["annotations"]}
            for d in self._package_actions(name)
        ]
        return self.ok({**existing, "actions": actions, "feeds": []})

    async def _package_delete(self, request: web.Request, ns: str, name: str, existing: dict | None) -> web.Response:
        if existing is None:
            return self.error(404, RESOURCE_DOES_NOT_EXIST)
        contents = self._package_actions(name)
        if contents and request.query.get("force") != "true":
            return self.error(
                409,
                f"Package not empty (contains {len(contents)} {'entity' if len(contents) == 1 else 'entities'}). "
                "Set force param or delete package contents.",
            )
        for doc in contents:
            self.actions.pop((doc["namespace"], doc["name"]), None)
            await self.store.delete_action(doc["namespace"], doc["name"])
        self.packages.pop((ns, name), None)
        await self.store.delete_package(ns, name)
        return self.ok(existing)

    async def _package_put(self, request: web.Request, ns: str, name: str, existing: dict | None) -> web.Response:
        body = _object_body(await request.read())
        if existing is not None and request.query.get("overwrite", "false") != "true":
            raise Refused(409, ALREADY_EXISTS)
        if body.get("binding"):
            raise Refused(400, UNSUPPORTED["bindings"])
        parameters = body.get("parameters", existing["parameters"] if existing else [])
        annotations = body.get("annotations", existing["annotations"] if existing else [])
        for label, items in (("parameters", parameters), ("annotations", annotations)):
            if not isinstance(items, list) or not all(isinstance(p, dict) and "key" in p for p in items):
                raise Refused(400, MALFORMED + f"{label} must be a list of {{key, value}} objects")
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


class Refused(Exception):
    """A request refused with OpenWhisk's status and message."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


def _object_body(raw: bytes) -> dict:
    body, problem = parse_json_body(raw or b"{}")
    if problem:
        raise Refused(400, problem)
    if not isinstance(body, dict):
        raise Refused(400, MALFORMED + "expected a JSON object")
    return body


def _entity_lists(body: dict, existing: dict | None) -> tuple[list, list, list[str]]:
    """The action's parameters and annotations (the body's, else the existing action's), what is
    wrong with them, and the annotations as stored (``provide-api-key`` false unless set, ``exec``)."""
    parameters = body.get("parameters", existing["parameters"] if existing else [])
    annotations = body.get("annotations", existing["annotations"] if existing else None) or []
    problems = [
        f"{label} must be a list of {{key, value}} objects"
        for label, items in (("parameters", parameters), ("annotations", annotations))
        if not isinstance(items, list) or not all(isinstance(p, dict) and "key" in p for p in items)
    ]
    if problems:
        return parameters, annotations, problems
    annotations = [a for a in annotations if a.get("key") != "exec"]
    if not any(a.get("key") == "provide-api-key" for a in annotations):
        annotations.insert(0, {"key": "provide-api-key", "value": False})
    return parameters, annotations, []


def _action_doc(
    doc_ns: str,
    name: str,
    body: dict,
    existing: dict | None,
    exec_doc: dict,
    limits: dict,
    parameters: list,
    annotations: list,
) -> dict:
    version = _bump(existing["version"]) if existing else str(body.get("version") or "0.0.1")
    return {
        "namespace": doc_ns,
        "name": name,
        "version": version,
        "publish": bool(body.get("publish", False)),
        "exec": exec_doc,
        "annotations": annotations + [{"key": "exec", "value": exec_doc["kind"]}],
        "parameters": parameters,
        "limits": limits,
        "updated": time.time_ns() // 1_000_000,
        # A fresh revision on every PUT, also after a delete: a sandbox serves only the
        # revision it was initialised for, so a re-created action never meets old code.
        "rev": uuid.uuid4().hex,
    }


def _bump(version: str) -> str:
    parts = (version.split(".") + ["0", "0", "0"])[:3]
    try:
        return f"{int(parts[0])}.{int(parts[1])}.{int(parts[2]) + 1}"
    except ValueError:
        return "0.0.1"
