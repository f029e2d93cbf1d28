"""What a workload may read and where it may send, unless the user says more on the command line.

A workload may come from someone else. By itself it reads only files in its own folder (or the
files faasprof ships: the catalogue's inputs, the ready workloads' traces) and sends only to this
machine's loopback. Anything else needs the user's word on the command line (``Grants``):

- a file outside the workload's folder (``param_file``, ``data_file``, ``source``, a path in
  ``application``, a distribution's ``*_file`` keys, the perf-monitoring scripts, the
  ``monitoring.hosts`` inventory; symbolic links
  followed): ``--allow-file PATH`` (that file, or every file under that folder), or
  ``--allow-outside-files``;
- a platform or URL that is not loopback (``platform.apihost``, a generic instance's ``url``):
  ``--apihost`` on the command line (the user names the platform, and the workload's is not used)
  or ``--allow-remote``;
- inventory options under which ssh runs a local command (``faasprof.monitoring.hosts.inventory``):
  ``--allow-ssh-commands``.

Each refusal is one line naming the file or URL, the field and the flag. ``reach_lines`` says what
a workload would read and where it would send, for ``validate``.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator

from faasprof.addresses import is_loopback, redact_url, url_host
from faasprof.errors import ConfigError
from faasprof.monitoring.hosts import hosts_option
from faasprof.paths import DATA_ROOT
from faasprof.workload.messages import Problems

ALLOW_FILE_FLAG = "--allow-file"
ALLOW_OUTSIDE_FILES_FLAG = "--allow-outside-files"
ALLOW_REMOTE_FLAG = "--allow-remote"
ALLOW_SSH_COMMANDS_FLAG = "--allow-ssh-commands"


@dataclass(frozen=True)
class Grants:
    """What the user allowed on the command line beyond a workload's folder and this machine."""

    allow_files: tuple[Path, ...] = ()  # --allow-file: these files, or the files under these folders
    allow_outside_files: bool = False  # --allow-outside-files: any file
    allow_remote: bool = False  # --allow-remote: any host
    apihost_from_flags: bool = False  # --apihost given: the user named the platform
    allow_ssh_commands: bool = False  # --allow-ssh-commands: inventory options that run local commands


@dataclass(frozen=True)
class Reach:
    """One thing a workload reads or sends to: ``field`` (``instances.i0.data_file``) and what."""

    field: str
    target: str  # a resolved path, or a URL with its credentials redacted
    sends: bool  # a destination, not a file


def add_access_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags by which the user lets a workload read outside its folder or send off this machine."""
    group = parser.add_argument_group("what the workload may reach (a workload may come from someone else)")
    group.add_argument(
        ALLOW_FILE_FLAG,
        action="append",
        default=[],
        metavar="PATH",
        help="let the workload read this file (or the files under this folder) outside its own folder (repeatable)",
    )
    group.add_argument(
        ALLOW_OUTSIDE_FILES_FLAG, action="store_true", help="let the workload read any file it names, anywhere"
    )
    group.add_argument(
        ALLOW_REMOTE_FLAG,
        action="store_true",
        help="let the workload send to the hosts it names (platform.apihost, generic urls) when they are not this machine",
    )
    group.add_argument(
        ALLOW_SSH_COMMANDS_FLAG,
        action="store_true",
        help="let the hosts inventory use ssh options that run a local command (ProxyCommand, LocalCommand, -F)",
    )


def grants_from(args: argparse.Namespace) -> Grants:
    """The grants a command's parsed flags give (a command without some flag grants nothing by it)."""
    return Grants(
        allow_files=tuple(Path(os.path.expanduser(p)).resolve() for p in getattr(args, "allow_file", None) or ()),
        allow_outside_files=bool(getattr(args, "allow_outside_files", False)),
        allow_remote=bool(getattr(args, "allow_remote", False)),
        apihost_from_flags=bool(getattr(args, "apihost", None)),
        allow_ssh_commands=bool(getattr(args, "allow_ssh_commands", False)),
    )


def _within(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def file_allowed(path: Path, base_dir: Path, grants: Grants) -> bool:
    """Whether the workload in ``base_dir`` may read ``path`` (links followed on both sides)."""
    real = path.resolve()
    if grants.allow_outside_files or _within(real, base_dir.resolve()) or _within(real, DATA_ROOT.resolve()):
        return True
    return any(_within(real, allowed) for allowed in grants.allow_files)


def _files(instances: Iterable[Any], runtime_script: Path | None, post_script: Path | None) -> Iterator[Reach]:
    for instance in instances:
        where = f"instances.{instance.name}"
        for key in ("param_file", "data_file"):
            value = getattr(instance, key)
            if value is not None:
                yield Reach(f"{where}.{key}", str(value), sends=False)
        if instance.source is not None:
            yield Reach(f"{where}.source", str(instance.source), sends=False)
        for key, value in instance.arrival_keys.items():
            if isinstance(value, Path):
                yield Reach(f"{where}.{key}", str(value), sends=False)
    for key, script in (("runtime_script", runtime_script), ("post_script", post_script)):
        if script is not None:
            yield Reach(f"perf_monitoring.{key}", str(script), sends=False)


def _inventory(monitoring: dict, base_dir: Path | None) -> Iterator[Reach]:
    """The hosts inventory the workload's ``monitoring.hosts`` names (its form is the schema's and
    ``hosts_option``'s to check)."""
    try:
        option = hosts_option(monitoring, "", base_dir)
    except ConfigError:
        return
    if option is not None:
        yield Reach("monitoring.hosts", str(option.inventory.resolve()), sends=False)


def _destinations(instances: Iterable[Any], platform: dict) -> Iterator[Reach]:
    apihost = platform.get("apihost")
    if isinstance(apihost, str) and apihost.strip():
        yield Reach("platform.apihost", redact_url(apihost.strip()), sends=True)
    for instance in instances:
        if instance.url:
            yield Reach(f"instances.{instance.name}.url", redact_url(instance.url), sends=True)


def reach(
    instances: Iterable[Any],
    platform: dict,
    runtime_script: Path | None = None,
    post_script: Path | None = None,
    monitoring: dict | None = None,
    base_dir: Path | None = None,
) -> list[Reach]:
    """Every file the workload names (its hosts inventory too) and every host it names, in the
    workload's order."""
    instances = list(instances)
    return [
        *_files(instances, runtime_script, post_script),
        *_inventory(monitoring or {}, base_dir),
        *_destinations(instances, platform),
    ]


def access_problems(reached: Iterable[Reach], base_dir: Path | None, grants: Grants, problems: Problems) -> None:
    """A problem for each file outside the workload's folder (the current folder for a workload
    given as a dict) and each non-loopback host the user did not allow."""
    folder = base_dir if base_dir is not None else Path.cwd()
    for item in reached:
        if item.sends:
            _destination_problem(item, grants, problems)
        elif not file_allowed(Path(item.target), folder, grants):
            problems.add(
                item.field,
                f"{item.target} is outside the workload's folder {folder}; a workload reads only its own files unless you "
                f"say so: pass {ALLOW_FILE_FLAG} {item.target} (or {ALLOW_OUTSIDE_FILES_FLAG})",
            )


def _destination_problem(item: Reach, grants: Grants, problems: Problems) -> None:
    host = url_host(item.target)
    if host is None or is_loopback(host) or grants.allow_remote:
        return
    if item.field == "platform.apihost":
        if grants.apihost_from_flags:
            return  # the user named the platform: the workload's is not used
        fix = f"pass --apihost {item.target} (with --auth) if you mean to run there, or {ALLOW_REMOTE_FLAG}"
    else:
        fix = f"pass {ALLOW_REMOTE_FLAG} if you mean the workload to send there"
    problems.add(
        item.field, f"{item.target} is not this machine; a workload sends off this machine only when you say so: {fix}"
    )


def reach_lines(reached: Iterable[Reach]) -> list[str]:
    """``reads FILE (field)`` and ``sends to URL (field)`` lines, for ``validate``: what the
    workload names, not faasprof's own files (a catalogue function's sample input)."""
    ours = DATA_ROOT.resolve()
    return [
        f"{'sends to' if item.sends else 'reads'} {item.target} ({item.field})"
        for item in reached
        if item.sends or not _within(Path(item.target).resolve(), ours)
    ]
