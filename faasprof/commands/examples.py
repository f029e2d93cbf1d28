"""``faasprof examples [list | copy NAME [DEST]]``: the workloads shipped with faasprof.

``list`` (the default) prints each shipped workload's name and the first sentence of its
description; every command that takes a workload file takes such a name too (``faasprof run
first_run_modes``, from any folder). ``copy NAME [DEST]`` writes the shipped JSON to ``DEST``
(default ``NAME.json`` in the current folder; a folder: ``NAME.json`` in it) to edit, and never
overwrites a file (exit 2, nothing written).
"""

from __future__ import annotations

import argparse

from faasprof.errors import ConfigError
from faasprof.workload.shipped import copy_workload, shipped_workloads


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "action",
        nargs="?",
        choices=("list", "copy"),
        default="list",
        help="list (default): the shipped workloads; copy NAME [DEST]: copy one here to edit",
    )
    parser.add_argument("name", nargs="?", metavar="NAME", help="with copy: a shipped workload's name")
    parser.add_argument("dest", nargs="?", metavar="DEST", help="with copy: a file or folder (default ./NAME.json)")


def main(args: argparse.Namespace) -> int:
    if args.action == "list":
        if args.name is not None:
            raise ConfigError(f"{args.name}: list takes no name; faasprof examples copy {args.name} copies it")
        workloads = shipped_workloads()
        width = max((len(workload.name) for workload in workloads), default=0)
        for workload in workloads:
            print(f"{workload.name:<{width}}  {workload.description}".rstrip())
        print(
            f"{len(workloads)} workloads; run one by name (faasprof run NAME) or copy it here to edit "
            "(faasprof examples copy NAME [DEST])"
        )
        return 0
    if args.name is None:
        raise ConfigError("copy: name the shipped workload to copy (faasprof examples lists them)")
    target = copy_workload(args.name, args.dest)
    print(f"{target}: copied from the shipped {args.name.removesuffix('.json')}; faasprof validate {target}")
    return 0
