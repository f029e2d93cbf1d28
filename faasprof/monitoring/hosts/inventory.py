"""The hosts of a run, read from an ansible INI inventory (the testbed's, ``setup/inventory/*.ini``).

Only what ssh needs is read: per host ``ansible_host`` (the address; default the host's name),
``ansible_port`` (22), ``ansible_user``, ``ansible_ssh_private_key_file`` and
``ansible_ssh_common_args``, from the host's line or its groups' ``[G:vars]`` (``all`` included),
and faasprof's own ``faasprof_cgroup_parent`` (the cgroup, under each controller, that holds the
host's sandboxes; default Docker's). ``[G:children]`` makes G hold its children's hosts. A host
pattern (``node[1:3]``), a host of ``ansible_connection=local`` (this machine: its collectors run
here already) or a name that cannot be a folder of the run directory is refused in one line.

An inventory is someone's file, read to start ssh: a host name or ``ansible_host`` beginning with
``-`` (ssh would take it for an option) is refused, and ``ansible_ssh_common_args`` /
``ansible_ssh_extra_args`` holding an ssh option that runs a command on this machine
(``COMMAND_OPTIONS``: ``-o ProxyCommand=…``, ``LocalCommand``, …, or ``-F`` another config file)
is refused in one line unless the user allows it on the command line (``allow_ssh_commands``:
``faasprof run --allow-ssh-commands``), as ansible would run it without a word.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from faasprof.bounded import MAX_INVENTORY_BYTES, BoundedReadError, read_bounded_text
from faasprof.errors import ConfigError

DEFAULT_GROUP = "openwhisk_invokers"
# ssh options (lower case, as ssh matches them) under which ssh runs a command on this machine.
COMMAND_OPTIONS = ("proxycommand", "localcommand", "permitlocalcommand", "knownhostscommand", "match")
ALLOW_SSH_COMMANDS_FLAG = "--allow-ssh-commands"
HOST_NAME = re.compile(r"^[A-Za-z0-9._-]+$")


@dataclass(frozen=True)
class Host:
    """One host to measure, as ssh reaches it."""

    name: str
    address: str
    port: int = 22
    user: str | None = None
    key_file: str | None = None
    common_args: tuple[str, ...] = ()
    cgroup_parent: str | None = None  # None: Docker's cgroups

    def describe(self) -> dict:
        return {"host": self.name, "address": self.address, "port": self.port}


@dataclass
class _Inventory:
    hosts: dict[str, dict[str, str]] = field(default_factory=dict)  # host → its own vars
    groups: dict[str, list[str]] = field(default_factory=dict)  # group → its hosts, in order
    children: dict[str, list[str]] = field(default_factory=dict)
    group_vars: dict[str, dict[str, str]] = field(default_factory=dict)


def _pairs(words: list[str], where: str) -> dict[str, str]:
    values = {}
    for word in words:
        key, sep, value = word.partition("=")
        if not sep or not key:
            raise ConfigError(f"{where}: {word!r} is not key=value; write each variable as key=value")
        values[key] = value
    return values


def _parse(path: Path, text: str) -> _Inventory:
    inventory = _Inventory()
    section, kind = "ungrouped", "hosts"
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        where = f"{path}:{number}"
        if not line or line[0] in "#;":
            continue
        if line.startswith("["):
            if not line.endswith("]"):
                raise ConfigError(f"{where}: {line!r}: a section header ends with ]; write [group]")
            section, _, kind = line[1:-1].partition(":")
            kind = kind or "hosts"
            if kind not in ("hosts", "vars", "children"):
                raise ConfigError(f"{where}: [{line[1:-1]}]: unknown section kind {kind!r}; use :vars or :children")
            inventory.groups.setdefault(section, [])
            continue
        try:
            words = shlex.split(line, comments=True)
        except ValueError as error:
            raise ConfigError(f"{where}: {error}; close the quote") from None
        if kind == "vars":
            inventory.group_vars.setdefault(section, {}).update(_pairs(words, where))
        elif kind == "children":
            inventory.children.setdefault(section, []).append(words[0])
        else:
            name = words[0]
            if "[" in name:
                raise ConfigError(
                    f"{where}: host pattern {name!r} is not supported by faasprof; list each host on its own line"
                )
            inventory.hosts.setdefault(name, {}).update(_pairs(words[1:], where))
            inventory.groups.setdefault(section, []).append(name)
    return inventory


def _members(inventory: _Inventory, group: str, seen: set[str] | None = None) -> list[str]:
    """The hosts of ``group`` and of its children, each once, in the file's order."""
    seen = seen if seen is not None else set()
    if group in seen:
        return []
    seen.add(group)
    names = list(inventory.groups.get(group, []))
    for child in inventory.children.get(group, []):
        names += _members(inventory, child, seen)
    return list(dict.fromkeys(names))


def _host_vars(inventory: _Inventory, name: str) -> dict[str, str]:
    """``all``'s vars, then each group's holding the host, then the host's own line."""
    values = dict(inventory.group_vars.get("all", {}))
    for group in inventory.group_vars:
        if group != "all" and name in _members(inventory, group):
            values.update(inventory.group_vars[group])
    values.update(inventory.hosts.get(name, {}))
    return values


def _ssh_args(where: str, values: dict[str, str], allow_commands: bool) -> tuple[str, ...]:
    """The inventory's extra ssh arguments (common, then extra), with every option that would run a
    command on this machine refused unless ``allow_commands``."""
    args: list[str] = []
    for key in ("ansible_ssh_common_args", "ansible_ssh_extra_args"):
        try:
            words = shlex.split(values.get(key, ""))
        except ValueError as error:
            raise ConfigError(f"{where}: {key}: {error}; close the quote") from None
        runs = _command_option(words)
        if runs is not None and not allow_commands:
            raise ConfigError(
                f"{where}: {key} holds {runs}, under which ssh runs a command on this machine during pre-flight; "
                f"remove it, or pass {ALLOW_SSH_COMMANDS_FLAG} if you trust this inventory"
            )
        args += words
    return tuple(args)


def _command_option(words: list[str]) -> str | None:
    """The first of ``words`` (ssh arguments) that makes ssh run a local command, as written; None."""
    for index, word in enumerate(words):
        if word == "-F" or (word.startswith("-F") and len(word) > 2):
            return f"{word!r} (another ssh config file, which may hold a ProxyCommand)"
        if word.startswith("-o"):
            option = word[2:] or (words[index + 1] if index + 1 < len(words) else "")
            name = option.strip().replace("=", " ").split(" ", 1)[0].lower()
            if name in COMMAND_OPTIONS:
                return f"-o {option!r}"
    return None


def _host(
    path: Path, name: str, values: dict[str, str], reserved: tuple[str, ...], allow_commands: bool = False
) -> Host:
    where = f"{path}: host {name}"
    if not HOST_NAME.match(name) or name.startswith("-"):
        raise ConfigError(
            f"{where}: the name must be letters, digits, '.', '_' or '-', not beginning with '-'; rename the host"
        )
    address = values.get("ansible_host") or name
    if address.startswith("-") or any(ch.isspace() for ch in address):
        raise ConfigError(
            f"{where}: ansible_host={address!r} begins with '-' or holds a space (ssh would read it as an option); "
            "write the host's address or name"
        )
    if name in reserved:
        raise ConfigError(f"{where}: the name is a collector's (monitors/{name}/ is taken); rename the host")
    if name == "unknown":  # the analyzer's host column says "unknown" where no host is certain
        raise ConfigError(f"{where}: 'unknown' marks activations whose host is not known; rename the host")
    if values.get("ansible_connection") == "local":
        raise ConfigError(
            f"{where}: ansible_connection=local is this machine, whose collectors already run here; list only remote hosts in the group"
        )
    port_text = values.get("ansible_port", "22")
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise ConfigError(f"{where}: ansible_port={port_text!r} is not a port; give a number 1-65535")
    key_file = values.get("ansible_ssh_private_key_file")
    if key_file:
        key_file = os.path.expanduser(key_file)
        if not os.path.isabs(key_file):
            key_file = str(path.parent / key_file)
        if not os.access(key_file, os.R_OK):
            raise ConfigError(
                f"{where}: ansible_ssh_private_key_file={values['ansible_ssh_private_key_file']}: not a readable file; fix the path"
            )
    common = _ssh_args(where, values, allow_commands)
    return Host(
        name=name,
        address=address,
        port=int(port_text),
        user=values.get("ansible_user") or None,
        key_file=key_file or None,
        common_args=common,
        cgroup_parent=values.get("faasprof_cgroup_parent") or None,
    )


def read_inventory(
    path: str | os.PathLike,
    group: str = DEFAULT_GROUP,
    reserved: tuple[str, ...] = (),
    allow_ssh_commands: bool = False,
) -> list[Host]:
    """The hosts of ``group`` in the inventory at ``path``; ConfigError (one line naming the file,
    the host or line, and the fix) when it cannot be read or a host cannot be reached as written.
    ``reserved``: names a host may not take (the collectors'). ``allow_ssh_commands``: the user
    allowed ssh options that run a local command (module docstring)."""
    path = Path(path)
    try:
        text = read_bounded_text(path, MAX_INVENTORY_BYTES, "inventory")
    except BoundedReadError as error:
        raise ConfigError(str(error)) from None
    inventory = _parse(path, text)
    names = _members(inventory, group)
    if not names:
        known = ", ".join(sorted(g for g in inventory.groups if _members(inventory, g))) or "none"
        raise ConfigError(
            f"{path}: group {group!r} has no host (groups with hosts: {known}); name another group (--hosts-group)"
        )
    return [_host(path, name, _host_vars(inventory, name), reserved, allow_ssh_commands) for name in names]
