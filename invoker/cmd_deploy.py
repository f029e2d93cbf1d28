"""``faasprof deploy [FUNCTION...] [--memory MB] [--all]``: package catalogue functions and create or
update their actions on the configured platform (a real OpenWhisk or a running localwhisk).

The platform comes from the same flags and settings as ``run`` (``--apihost``/``--auth``, then
``~/.wskprops``); unlike ``run``, deploy does not start an embedded localwhisk, because the actions
would vanish with it. One line per action on stdout: name, what happened, kind, memory, archive size.
"""

from __future__ import annotations

import argparse
import sys

from faasprof.errors import ConfigError, NotReadyError
from invoker.connection import add_connection_arguments, resolve_connection


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("functions", nargs="*", metavar="FUNCTION",
                        help="catalogue functions or memory variants such as markdown-256 (see --list)")
    parser.add_argument("--all", action="store_true", help="every catalogue function available on this machine")
    parser.add_argument("--memory", type=int, metavar="MB", help="memory limit for these actions (default: each function's own)")
    parser.add_argument("--list", action="store_true", help="list the catalogue (and what each function lacks here), contact nothing")
    add_connection_arguments(parser)


def _list() -> int:
    from functions.catalogue import entries  # noqa: PLC0415

    for entry in entries():
        missing = entry.missing()
        state = "available" if not missing else "unavailable: " + missing[0]
        print(f"{entry.name:<14} {entry.kind:<9} {entry.memory_mb:>5} MB  {entry.category:<15} {state}")
    return 0


def main(args: argparse.Namespace) -> int:
    from functions.catalogue import entries, known_functions_text, require  # noqa: PLC0415

    if args.list:
        return _list()
    if args.memory is not None and args.memory <= 0:
        raise ConfigError(f"--memory: must be a positive number of MB (got {args.memory})")
    if args.all and args.functions:
        raise ConfigError("--all: given with function names; pass either names or --all")
    if args.all:
        names = []
        for entry in entries():
            problems = entry.packaging_missing()
            if problems:
                print(f"skipping {entry.name}: {problems[0]}", file=sys.stderr)
            else:
                names.append(entry.name)
    elif args.functions:
        names = [require(name, where="FUNCTION").name for name in args.functions]
    else:
        raise ConfigError(f"FUNCTION: name the functions to deploy or pass --all; known functions: {known_functions_text()}")

    connection = resolve_connection(args)
    if connection is None:
        raise NotReadyError(
            "no platform configured: start localwhisk with `faasprof local start` and pass the --apihost/--auth it prints, "
            "or pass --apihost/--auth for your OpenWhisk (or set APIHOST and AUTH in ~/.wskprops)"
        )
    from invoker.client import require_platform  # noqa: PLC0415
    from invoker.deploy import deploy  # noqa: PLC0415

    with require_platform(connection) as client:
        print(f"deploying {len(names)} action(s) to {connection.apihost} (namespace {connection.namespace})", file=sys.stderr)

        def report(name: str, status: str) -> None:
            action = client.get_action(name) or {}
            limits = action.get("limits") or {}
            kind = (action.get("exec") or {}).get("kind", "?")
            print(f"{name:<16} {status:<9} {kind:<12} {limits.get('memory', '?')} MB  timeout {limits.get('timeout', '?')} ms", flush=True)

        deploy(client, names, memory_mb=args.memory, report=report)
    return 0
