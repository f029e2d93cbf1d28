"""Deploying catalogue functions as actions through the OpenWhisk REST API.

``deploy(client, names, memory_mb)`` creates or updates each action from its reproducible archive
and reports ``created``, ``updated`` or ``unchanged`` per name: an action whose
``faasprof-code-sha256`` annotation, kind and limits already match is not written again, so
deploying twice changes nothing. ``ensure_actions(client, names, memory_mb)`` is what ``faasprof
run`` uses: an action that exists on the platform is left alone (``existing``), a missing catalogue
function is deployed (``deployed``), and a name that is neither raises ConfigError listing the
known functions, before anything is written.

A memory variant (``markdown-256``) deploys the catalogue code under that name with that memory
limit; an explicit ``memory_mb`` overrides both the variant's and the catalogue's memory.
The kind comes from the platform's ``GET /`` runtimes: the manifest's kind when the platform
lists it (``python:3``), else the family's default (``nodejs:20``).
"""

from __future__ import annotations

import base64
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from faasprof.errors import ConfigError, NotReadyError, RunError
from faasprof.functions.catalogue import FunctionEntry, did_you_mean, lookup, unknown_function_error
from faasprof.functions.own import looks_like_path, own_entry, stage
from faasprof.functions.package import build_archive, sha256
from faasprof.platforms.base import PlatformError
from faasprof.progress import QUIET, Progress

CODE_DIGEST_ANNOTATION = "faasprof-code-sha256"
FUNCTION_ANNOTATION = "faasprof-function"
FALLBACK_KINDS = {"python": "python:default", "nodejs": "nodejs:default"}
OWN_CATEGORY = "own"  # FunctionEntry.category of a researcher's function (functions.own)


@dataclass
class PlannedAction:
    entry: FunctionEntry
    kind: str
    memory_mb: int
    archive: bytes
    digest: str
    parameters: dict | None = None  # default parameters bound to the action (wsk -p)

    def parameter_list(self) -> list[dict]:
        return [{"key": key, "value": value} for key, value in sorted((self.parameters or {}).items())]

    def body(self) -> dict:
        code = base64.b64encode(self.archive).decode("ascii")
        if self.entry.openwhisk_image:
            exec_doc = {
                "kind": "blackbox",
                "image": self.entry.openwhisk_image,
                "code": code,
                "binary": True,
                "main": self.entry.main,
            }
        else:
            exec_doc = {"kind": self.kind, "code": code, "binary": True, "main": self.entry.main}
        annotations: list[dict[str, Any]] = [
            {"key": CODE_DIGEST_ANNOTATION, "value": self.digest},
            {"key": FUNCTION_ANNOTATION, "value": self.entry.base},
            {"key": "description", "value": self.entry.description},
        ]
        if (
            self.entry.category == OWN_CATEGORY
        ):  # a researcher's function may call the platform (chains): OpenWhisk passes __OW_API_KEY only with this
            annotations.append({"key": "provide-api-key", "value": True})
        if self.entry.web == "raw":
            annotations += [
                {"key": "web-export", "value": True},
                {"key": "raw-http", "value": True},
                {"key": "final", "value": True},
            ]
        return {
            "exec": exec_doc,
            "limits": {"memory": self.memory_mb, "timeout": self.entry.timeout_ms},
            "annotations": annotations,
            "parameters": self.parameter_list(),
        }

    def matches(self, existing: dict) -> bool:
        """Whether the action on the platform is this one already (code digest, kind, limits)."""
        annotations = {a.get("key"): a.get("value") for a in existing.get("annotations") or [] if isinstance(a, dict)}
        limits = existing.get("limits") or {}
        want_kind = "blackbox" if self.entry.openwhisk_image else self.kind
        return (
            annotations.get(CODE_DIGEST_ANNOTATION) == self.digest
            and (existing.get("exec") or {}).get("kind") == want_kind
            and limits.get("memory") == self.memory_mb
            and limits.get("timeout") == self.entry.timeout_ms
            and bool(annotations.get("web-export")) == (self.entry.web == "raw")
            and bool(annotations.get("provide-api-key")) == (self.entry.category == OWN_CATEGORY)
            and _parameters_of(existing) == {item["key"]: item["value"] for item in self.parameter_list()}
        )


def _parameters_of(action: dict) -> dict:
    return {p.get("key"): p.get("value") for p in action.get("parameters") or [] if isinstance(p, dict)}


def resolve_kind(entry: FunctionEntry, platform_info: dict | None) -> str:
    """The action kind to use on this platform for ``entry``."""
    runtimes = (platform_info or {}).get("runtimes") or {}
    family = runtimes.get(entry.runtime) or []
    # A runtime listed without a kind names nothing to deploy with: it is skipped.
    listed = [item for item in family if isinstance(item, dict) and isinstance(item.get("kind"), str)]
    kinds = [item["kind"] for item in listed]
    if entry.kind in kinds:
        return entry.kind
    defaults = [item["kind"] for item in listed if item.get("default")]
    if defaults:
        return defaults[0]
    if kinds:
        return kinds[-1]
    return entry.kind if ":" in entry.kind else FALLBACK_KINDS[entry.runtime]


def _entries(names: list[str], memory_mb: int | None) -> list[FunctionEntry]:
    found = {name: lookup(name) for name in dict.fromkeys(names)}
    unknown = [name for name, entry in found.items() if entry is None]
    if unknown:
        raise unknown_function_error(unknown[0], where="deploy")
    if memory_mb is not None and (not isinstance(memory_mb, int) or memory_mb <= 0):
        raise ConfigError(f"--memory: must be a positive number of MB (got {memory_mb!r})")
    return [
        entry.with_memory(memory_mb) if memory_mb is not None else entry
        for entry in found.values()
        if entry is not None
    ]


def plan_actions(
    client, entries: list[FunctionEntry], parameters: dict | None = None, progress: Progress = QUIET
) -> list[PlannedAction]:
    """Archives and kinds for ``entries``; everything that can fail locally fails here, before any write.

    A researcher's function (category ``own``) is staged first: its requirements.txt or
    package.json dependencies are installed into the archive. A catalogue function's npm packages
    are installed into the user's cache on first use, said on ``progress``."""
    info = client.info() if entries else {}
    archives: dict[tuple[str, Path], bytes] = {}
    planned = []
    for entry in entries:
        if entry.category == OWN_CATEGORY:
            entry = stage(entry)
            key = (entry.base, entry.directory)
            if key not in archives:
                archives[key] = build_archive(entry, cache_dir=entry.directory.parent)
        else:
            key = (entry.base, entry.directory)
            if key not in archives:
                archives[key] = build_archive(entry, progress=progress)
        archive = archives[key]
        planned.append(
            PlannedAction(entry, resolve_kind(entry, info), entry.memory_mb, archive, sha256(archive), parameters)
        )
    return planned


def _put(client, action: PlannedAction) -> None:
    try:
        client.put_action(action.entry.name, action.body(), overwrite=True)
    except PlatformError as error:
        if error.status == 413:
            encoded_mb = math.ceil(len(action.archive) * 4 / 3) / 1e6  # the code travels base64-encoded
            said = error.body.get("error") if isinstance(error.body, dict) else None
            raise RunError(
                f"{action.entry.name}: {client.connection.apihost} refused the {len(action.archive) / 1e6:.1f} MB archive ({encoded_mb:.1f} MB as "
                f"base64 code) as too large (413{': ' + said if said else ''}); make the archive smaller, or raise the platform's action code limit "
                "(localwhisk, whose default is 48 MiB of base64: start it yourself with `faasprof local start "
                "--max-action-code-bytes N` and run against it; OpenWhisk: whisk.exec.size-limit, and nginx's client_max_body_size)"
            ) from None
        raise


def deploy(
    client, names: list[str], memory_mb: int | None = None, report: Callable[[str, str], None] | None = None
) -> dict[str, str]:
    """Create or update the actions for ``names``; returns {name: "created" | "updated" | "unchanged"}.

    Raises ConfigError for an unknown name and NotReadyError when a function cannot be packaged
    here (an npm package missing), both before anything is written. ``report(name, status)`` is
    called after each action, so a caller can show progress before a later action fails."""
    return deploy_entries(client, _entries(list(names), memory_mb), report=report)


def deploy_entries(
    client,
    entries: list[FunctionEntry],
    parameters: dict | None = None,
    report: Callable[[str, str], None] | None = None,
    progress: Progress = QUIET,
) -> dict[str, str]:
    """Create or update one action per entry (catalogue or own function); idempotent like ``deploy``."""
    planned = plan_actions(client, entries, parameters, progress)
    results: dict[str, str] = {}
    for action in planned:
        existing = client.get_action(action.entry.name)
        if existing is not None and action.matches(existing):
            status = "unchanged"
        else:
            _put(client, action)
            status = "created" if existing is None else "updated"
        results[action.entry.name] = status
        if report is not None:
            report(action.entry.name, status)
    return results


def ensure_actions(client, names: list[str], memory_mb: int | None = None) -> dict[str, str]:
    """Make sure every action in ``names`` exists; returns {name: "existing" | "deployed"}.

    An action already on the platform is left as it is (whatever its code or limits). A missing
    one is deployed from the catalogue; names neither on the platform nor in the catalogue raise
    one NotReadyError listing them all, before anything is deployed."""
    results: dict[str, str] = {}
    missing: list[str] = []
    absent: list[str] = []
    for name in dict.fromkeys(names):
        if client.get_action(name) is not None:
            results[name] = "existing"
        elif lookup(name) is None:
            absent.append(name)
        else:
            missing.append(name)
    if absent:
        raise missing_actions_error(
            "deploy", [(name, "action") for name in absent], client.connection, platform_action_names(client)
        )
    if missing:
        for action in plan_actions(client, _entries(missing, memory_mb)):
            _put(client, action)
            results[action.entry.name] = "deployed"
    return results


def connection_flags(connection) -> str:
    """The flags that name ``connection``'s platform on a command line (never the key itself)."""
    if connection is None or connection.source == "embedded":
        return " --apihost APIHOST --auth UUID:KEY"
    if connection.source in ("wskprops", "local"):  # found again without flags
        return ""
    return f" --apihost {connection.apihost} --auth UUID:KEY" + (" --insecure" if connection.insecure else "")


def platform_action_names(client) -> list[str]:
    """The names of the actions on ``client``'s platform, for suggestions; empty when it will not list them."""
    try:
        return client.action_names()
    except (RunError, NotReadyError, ValueError):  # the suggestion is a courtesy; the error it helps must still be said
        return []


def missing_actions_error(
    origin: str, missing: list[tuple[str, str]], connection, known: Sequence[str] = ()
) -> NotReadyError:
    """One NotReadyError (the platform lacks what the workload needs: exit 3) with one line per
    missing action (``problems``): the closest name of the catalogue or of ``known`` (the
    platform's actions), and the command that deploys it.

    ``missing``: (action name, field path naming it)."""
    where = f"{connection.apihost} (namespace {connection.namespace})" if connection is not None else "the platform"
    lines = []
    seen: set[str] = set()
    for name, field_path in missing:
        if name in seen:
            continue  # said once, at the first field naming it
        seen.add(name)
        if looks_like_path(name):  # a path that is not there, or a fully qualified name: no command fits both
            fix = "fix the path to your function's file or folder, or deploy the action under this name"
        else:
            fix = f"deploy your function under this name: faasprof deploy PATH --name {name}{connection_flags(connection)}"
            fix += (
                ', or give the instance a "source" (your function\'s file or folder)'
                if field_path.startswith("instances.")
                else ""
            )
        lines.append(
            f"{origin}: {field_path}: action {name} does not exist on {where}{did_you_mean(name, known)}; {fix}"
        )
    return NotReadyError(lines[0], problems=lines)


def ensure_workload_actions(client, workload, serves: Callable[[object], bool]) -> dict[str, str]:
    """Every action ``workload`` invokes exists on ``client``'s platform; returns {name: status}.

    ``serves(instance)`` says which instances are invoked there (``OpenWhiskPlatform.serves``).

    - an instance with a ``source`` (a researcher's function) is deployed from it, idempotently
      (``created``, ``updated`` or ``unchanged``);
    - an action already on the platform is used as it is (``existing``);
    - a missing catalogue function is deployed (``deployed``);
    - anything else is missing: one NotReadyError lists every such action with its deploy command;
      memory limits or request sizes the platform would refuse (``workload.check_limits``) are a
      ConfigError; both before anything is written.
    """
    connection = client.connection
    refused = workload.check_limits(client.limits())
    if refused:
        raise ConfigError(refused[0], problems=refused)
    results: dict[str, str] = {}
    own: dict[str, FunctionEntry] = {}
    catalogue_missing: dict[int | None, list[str]] = {}
    absent: list[tuple[str, str]] = []
    deployed_only = bool((workload.platform or {}).get("actions_deployed"))
    for instance in workload.instances:
        if not serves(instance) or instance.function in results or instance.function in own:
            continue
        if instance.source is not None:
            own[instance.function] = own_entry(
                instance.source, name=instance.function, kind=instance.kind, memory_mb=instance.memory_mb
            )
            continue
        if client.get_action(instance.function) is not None:
            results[instance.function] = "existing"
        elif not deployed_only and lookup(instance.function) is not None:
            catalogue_missing.setdefault(instance.memory_mb, []).append(instance.function)
            results[instance.function] = "deployed"
        else:
            absent.append((instance.function, f"instances.{instance.name}.application"))
    if absent:
        raise missing_actions_error(workload.origin, absent, connection, platform_action_names(client))
    for memory_mb, names in catalogue_missing.items():
        for action in plan_actions(client, _entries(names, memory_mb)):
            _put(client, action)
    if own:
        results.update(deploy_entries(client, list(own.values())))
    return results
