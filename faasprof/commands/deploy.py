"""``faasprof deploy [FUNCTION|PATH...] [--memory MB] [--all]``: package catalogue functions, or
functions of your own, and create or update their actions on the configured platform (a real
OpenWhisk or a running localwhisk).

A PATH is a Python file, a folder with ``__main__.py`` (and an optional ``requirements.txt``,
installed into the archive's ``virtualenv/``), a Node.js file, or a folder with ``package.json``
(its dependencies installed when it has no ``node_modules``); see ``faasprof.functions.own``. ``--name``,
``--kind``, ``--timeout`` and default parameters (``--param K V``, ``--param-file``) apply to it.
Deploying the same code and settings again changes nothing (``unchanged``).

The platform comes from the same flags and settings as ``run`` (``--apihost``/``--auth``, then
``~/.wskprops``, then the localwhisk of ``faasprof local start``); unlike ``run``, deploy does not
start an embedded localwhisk, because the actions would vanish with it: with no platform it says
how to start one (exit 3). One line per action on stdout: name, what happened, kind, memory, archive size.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from faasprof.errors import ConfigError, NotReadyError
from faasprof.functions.catalogue import entries, known_functions_text, load_params_file, lookup, require
from faasprof.functions.own import looks_like_path, own_entry
from faasprof.platforms.openwhisk.client import require_platform
from faasprof.platforms.openwhisk.connection import add_connection_arguments, resolve_connection
from faasprof.platforms.openwhisk.deploy import deploy_entries
from faasprof.progress import Progress


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "functions",
        nargs="*",
        metavar="FUNCTION|PATH",
        help="catalogue functions or memory variants such as markdown-256 (see --list), or your own function: "
        "a .py/.js file or a folder with __main__.py or package.json",
    )
    parser.add_argument("--all", action="store_true", help="every catalogue function available on this machine")
    parser.add_argument(
        "--memory", type=int, metavar="MB", help="memory limit for these actions (default: each function's own)"
    )
    parser.add_argument(
        "--list", action="store_true", help="list the catalogue (and what each function lacks here), contact nothing"
    )
    own = parser.add_argument_group("your own function (a PATH)")
    own.add_argument("--name", help="action name (default: the file's stem or the folder's name); one PATH only")
    own.add_argument(
        "--kind", help="action kind such as python:3 or nodejs:20 (default: the platform's for the language)"
    )
    own.add_argument(
        "--timeout", type=int, metavar="MS", help="time limit of one activation in milliseconds (default 60000)"
    )
    own.add_argument("--main", default="main", help="name of the function to call (default main)")
    own.add_argument(
        "--param",
        nargs=2,
        action="append",
        default=[],
        metavar=("KEY", "VALUE"),
        help="default parameter bound to the action (VALUE is parsed as JSON when it can be, as wsk -p)",
    )
    own.add_argument(
        "--param-file",
        metavar="FILE",
        help="JSON object of default parameters (as wsk -P); --param entries override it",
    )
    add_connection_arguments(parser, default="the localwhisk of `faasprof local start`; deploy never starts one")


def _list() -> int:
    for entry in entries():
        missing = entry.missing()
        state = "available" if not missing else "unavailable: " + missing[0]
        print(f"{entry.name:<14} {entry.kind:<9} {entry.memory_mb:>5} MB  {entry.category:<15} {state}")
    return 0


def _parameters(args: argparse.Namespace) -> dict | None:
    params: dict = {}
    if args.param_file:
        params.update(load_params_file(Path(args.param_file)))
    for key, value in args.param:
        try:
            params[key] = json.loads(value)
        except ValueError:
            params[key] = value
    return params or None


def _entries(args: argparse.Namespace) -> list:
    """The entries to deploy: catalogue names and own functions, in the order given."""
    chosen = []
    paths = [name for name in args.functions if lookup(name) is None and looks_like_path(name)]
    if args.name and len(paths) != 1:
        raise ConfigError(f"--name: names one action, so give exactly one PATH (got {len(paths)})")
    for name in args.functions:
        if lookup(name) is not None:
            entry = require(name, where="FUNCTION")
            chosen.append(entry.with_memory(args.memory) if args.memory is not None else entry)
        elif looks_like_path(name):
            chosen.append(
                own_entry(
                    name, name=args.name, kind=args.kind, memory_mb=args.memory, timeout_ms=args.timeout, main=args.main
                )
            )
        else:
            raise ConfigError(
                f"FUNCTION: {name!r} is neither a catalogue function nor a file or folder; "
                f"give the path of your function (./{name}) or one of: {known_functions_text()}"
            )
    return chosen


def _installable(chosen: list, progress: Progress) -> list:
    """``--all``: the functions whose npm packages are installed (now, on first use, said with how
    long); one that cannot have them (no npm) is skipped with the reason."""
    ready = []
    for entry in chosen:
        try:
            entry.install_packages(progress)
        except NotReadyError as error:
            print(f"skipping {entry.name}: {error}", file=sys.stderr)
        else:
            ready.append(entry)
    return ready


def main(args: argparse.Namespace) -> int:
    if args.list:
        return _list()
    if args.memory is not None and args.memory <= 0:
        raise ConfigError(f"--memory: must be a positive number of MB (got {args.memory})")
    if args.all and args.functions:
        raise ConfigError("--all: given with function names; pass either names or --all")
    progress = Progress.to(sys.stderr)
    if args.all:
        chosen = [entry.with_memory(args.memory) if args.memory is not None else entry for entry in entries()]
    elif args.functions:
        chosen = _entries(args)
    else:
        raise ConfigError(
            f"FUNCTION: name the functions to deploy (or the path of your own) or pass --all; known functions: {known_functions_text()}"
        )
    parameters = _parameters(args)

    connection = resolve_connection(args)
    if connection is None:
        raise NotReadyError(
            "no platform configured: start localwhisk with `faasprof local start` (deploy then finds it), "
            "or pass --apihost/--auth for your OpenWhisk (or set APIHOST and AUTH in ~/.wskprops)"
        )
    if args.all:
        chosen = _installable(chosen, progress)
    with require_platform(connection) as client:
        print(
            f"deploying {len(chosen)} action(s) to {connection.apihost} (namespace {connection.namespace})",
            file=sys.stderr,
        )

        def report(name: str, status: str) -> None:
            action = client.get_action(name) or {}
            limits = action.get("limits") or {}
            kind = (action.get("exec") or {}).get("kind", "?")
            print(
                f"{name:<16} {status:<9} {kind:<12} {limits.get('memory', '?')} MB  timeout {limits.get('timeout', '?')} ms",
                flush=True,
            )

        deploy_entries(client, chosen, parameters=parameters, report=report, progress=progress)
    return 0
