"""Checks made before anything starts, shared by ``validate``, ``plan`` and ``run``.

- ``check_out_dir``/``check_out_file``: an output folder (``run --out``) or file (``plan --out``)
  that can be written, probed by creating a file (permission bits say nothing for root or a
  read-only mount).
- ``embedded_limits``: what the embedded localwhisk a run would start refuses (memory limits,
  request size), from its settings and the workload's ``platform.localwhisk`` block, without
  starting it.
- ``embedded_missing``: actions a run on the embedded localwhisk could not have (it starts empty:
  only catalogue functions and instances with a ``source`` are deployed there).
- ``platform_check``: the same questions asked of a named platform (``GET /``, the actions).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Protocol, Sequence

from faasprof.errors import ConfigError, NotReadyError
from faasprof.functions import catalogue
from faasprof.functions.own import looks_like_path, own_entry, stage
from faasprof.localwhisk.config import Settings
from faasprof.platforms.base import PlatformLimits
from faasprof.platforms.openwhisk.client import require_platform
from faasprof.platforms.openwhisk.connection import Connection
from faasprof.platforms.openwhisk.deploy import missing_actions_error, platform_action_names
from faasprof.platforms.openwhisk.platform import OpenWhiskPlatform
from faasprof.workload.spec import Workload, unknown_function

# Below this much free space the disk is full: the run would fail at its first write (and the
# embedded platform could not even write its log). A disk that fills later stops the run at the
# first failed write, with what was recorded kept.
MIN_FREE_BYTES = 64 * 1024


def _probe_writable(folder: Path) -> str | None:
    """None when a file can be created in ``folder``; else the reason."""
    try:
        handle, name = tempfile.mkstemp(prefix=".faasprof-probe-", dir=folder)
    except OSError as error:
        return error.strerror or str(error)
    os.close(handle)
    os.unlink(name)
    return None


def _require_space(folder: Path, flag: str) -> None:
    """NotReadyError (one line) when the disk holding ``folder`` is (nearly) full."""
    try:
        free = shutil.disk_usage(folder).free
    except OSError:
        return
    if free < MIN_FREE_BYTES:
        raise NotReadyError(
            f"{flag}: the disk holding {folder} is full ({free // 1024} KiB free); free space there or choose another folder"
        )


def check_out_dir(path: str | os.PathLike, flag: str = "--out") -> None:
    """``path`` is (or can be created as) a writable folder; ConfigError with the fix otherwise.

    A missing folder is created by the run when its parent exists; a missing parent is taken for
    a typo and refused."""
    path = Path(path)
    if path.exists():
        if not path.is_dir():
            raise ConfigError(f"{flag}: {path} is a file, not a folder; choose a folder for the run directories")
        reason = _probe_writable(path)
        if reason:
            raise ConfigError(
                f"{flag}: cannot write in {path} ({reason}); choose a writable folder or fix its permissions"
            )
        _require_space(path, flag)
        return
    parent = path.absolute().parent
    if parent.exists() and not parent.is_dir():
        raise ConfigError(f"{flag}: cannot create {path}: {parent} is a file, not a folder; choose a writable folder")
    if not parent.is_dir():
        raise ConfigError(
            f"{flag}: neither {path} nor its parent {parent} exists; create it (mkdir -p {path}) or choose another folder"
        )
    reason = _probe_writable(parent)
    if reason:
        raise ConfigError(f"{flag}: cannot create {path} in {parent} ({reason}); choose a writable folder")
    _require_space(parent, flag)


def check_out_file(path: str | os.PathLike, flag: str = "--out") -> None:
    """``path`` does not exist yet and its folder can be written."""
    path = Path(path)
    if path.exists():
        raise ConfigError(f"{flag}: {path} already exists; choose another path or delete it")
    parent = path.absolute().parent
    if not parent.is_dir():
        raise ConfigError(
            f"{flag}: the folder {parent} does not exist; create it (mkdir -p {parent}) or choose another path"
        )
    reason = _probe_writable(parent)
    if reason:
        raise ConfigError(f"{flag}: cannot write in {parent} ({reason}); choose a writable folder")


def embedded_limits(platform_block: dict | None, overrides: dict | None = None) -> PlatformLimits:
    """The limits of the embedded localwhisk a run would start with these settings."""
    defaults = Settings()
    local = dict(((platform_block or {}).get("localwhisk") or {}) if isinstance(platform_block, dict) else {})
    local.update(overrides or {})
    user_memory_mb = local.get("user_memory_mb", defaults.user_memory_mb)
    if not isinstance(user_memory_mb, int) or isinstance(user_memory_mb, bool):
        user_memory_mb = defaults.user_memory_mb  # reported by the schema
    high = min(defaults.max_action_memory_mb, user_memory_mb)
    fix = (
        f"lower memory_mb to at most {high}"
        + (
            ", or raise platform.localwhisk.user_memory_mb (or --user-memory)"
            if high < defaults.max_action_memory_mb
            else ""
        )
        + " (or run on an OpenWhisk with --apihost)"
    )
    return PlatformLimits(
        description="the embedded localwhisk",
        min_memory_mb=defaults.min_action_memory_mb,
        max_memory_mb=high,
        max_payload_bytes=defaults.max_payload_bytes,
        memory_fix=fix,
        payload_fix="send a smaller file (OpenWhisk's default limit is 1 MiB too), or start localwhisk yourself with a larger --max-payload-bytes and pass --apihost",
    )


class NamedFunction(Protocol):
    """What ``embedded_missing`` reads of an instance (a ``Workload``'s, or one of a file that did
    not validate: ``validate`` still tells which of its functions the embedded platform lacks)."""

    @property
    def name(self) -> str: ...
    @property
    def function(self) -> str: ...
    @property
    def source(self) -> object: ...
    @property
    def endpoint(self) -> object: ...


class FunctionsNamed(Protocol):
    """A workload as far as ``embedded_missing`` goes: where it came from and its instances."""

    @property
    def origin(self) -> str: ...
    @property
    def path(self) -> Path | None: ...
    @property
    def instances(self) -> Sequence[NamedFunction]: ...


def embedded_missing(workload: FunctionsNamed) -> list[str]:
    """One line per action a fresh embedded localwhisk cannot have (it starts empty: only catalogue
    functions and instances with a ``source`` are deployed there), at the first instance naming it.

    ``validate`` and ``run`` both refuse with these lines, so the two never disagree."""
    lines = []
    seen: set[str] = set()
    base_dir = workload.path.parent if workload.path else None
    for instance in workload.instances:
        if not OpenWhiskPlatform.serves(instance) or instance.source is not None or instance.function in seen:
            continue
        seen.add(instance.function)
        if catalogue.lookup(instance.function.strip("/").split("/")[-1]) is not None:
            continue
        why = unknown_function(instance.function, base_dir)
        if looks_like_path(instance.function):
            fix = "fix the path to your function's file or folder"
        else:
            fix = (
                'the embedded localwhisk starts empty: fix the name, give the instance a "source" (your function\'s file or folder), '
                "or deploy it to a running platform (`faasprof local start`, `faasprof deploy`) and pass its --apihost/--auth"
            )
        lines.append(f"{workload.origin}: instances.{instance.name}.application: {why}; {fix}")
    return lines


def check_embedded(workload: Workload, overrides: dict | None = None) -> None:
    """What a run on the embedded localwhisk would refuse, raised before localwhisk starts.

    Functions given by ``source`` are staged here (their requirements installed, once per change),
    so a requirement that cannot be installed is reported before anything starts."""
    lines = workload.check_limits(embedded_limits(workload.platform, overrides)) + embedded_missing(workload)
    if lines:
        raise ConfigError(lines[0], problems=lines)
    stage_sources(workload)


def stage_sources(workload: Workload) -> None:
    """Stage every ``source`` of the workload; ConfigError naming the instance when one fails."""
    for instance in workload.instances:
        if instance.source is None or not OpenWhiskPlatform.serves(instance):
            continue
        try:
            stage(own_entry(instance.source, name=instance.function, kind=instance.kind, memory_mb=instance.memory_mb))
        except ConfigError as error:
            raise ConfigError(f"{workload.origin}: instances.{instance.name}.source: {error}") from None


def platform_check(workload: Workload, connection: Connection) -> tuple[list[str], list[str]]:
    """Ask the platform: limits it would refuse, and actions missing (that faasprof would not deploy).

    Returns (bad-input lines, missing-action lines), both empty when a run would be accepted;
    NotReadyError when the platform does not answer."""
    with require_platform(connection) as client:
        lines = workload.check_limits(client.limits())
        deployed_only = bool((workload.platform or {}).get("actions_deployed"))
        missing = []
        seen: set[str] = set()
        for instance in workload.instances:
            if not OpenWhiskPlatform.serves(instance) or instance.source is not None or instance.function in seen:
                continue
            seen.add(instance.function)
            if client.get_action(instance.function) is not None:
                continue
            if not deployed_only and catalogue.lookup(instance.function) is not None:
                continue  # the run deploys it
            missing.append((instance.function, f"instances.{instance.name}.application"))
        missing_lines = (
            missing_actions_error(workload.origin, missing, connection, platform_action_names(client)).problems
            if missing
            else []
        )
    return lines, missing_lines
