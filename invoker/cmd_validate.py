"""``faasprof validate CONFIG...``: check workloads and report every problem, one line each."""

from __future__ import annotations

import argparse
import sys

from faasprof.errors import EXIT_BAD_INPUT, ConfigError
from invoker.workload import load_workload


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("configs", nargs="+", metavar="CONFIG", help="workload JSON file(s)")
    parser.add_argument("--quiet", "-q", action="store_true", help="print nothing for valid workloads")


def main(args: argparse.Namespace) -> int:
    status = 0
    for config in args.configs:
        try:
            workload = load_workload(config)
        except ConfigError as error:
            for line in error.problems:
                print(line, file=sys.stderr)
            status = EXIT_BAD_INPUT
            continue
        if not args.quiet:
            count = len(workload.instances)
            print(f"{config}: ok ({count} instance{'s' if count != 1 else ''}, {workload.duration_s:g} s)")
    return status
