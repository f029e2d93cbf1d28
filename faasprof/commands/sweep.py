"""``faasprof sweep CONFIG``: run a workload at every point of its sweep block, then compare."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace

from faasprof.analyzer.run_stats import effect_lines
from faasprof.errors import ConfigError
from faasprof.experiments.sweep import run_sweep
from faasprof.experiments.sweep_report import sweep_effects
from faasprof.platforms.openwhisk.connection import add_connection_arguments, resolve_connection
from faasprof.progress import Progress
from faasprof.workload.access import add_access_arguments, grants_from
from faasprof.workload.spec import load_workload


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("config", metavar="CONFIG", help="workload JSON with a sweep block")
    parser.add_argument(
        "--out", default="sweeps", metavar="DIR", help="where the sweep directory goes (default: sweeps/)"
    )
    parser.add_argument(
        "--no-analyze", action="store_true", help="only run the points; analyse later with faasprof analyze/compare"
    )
    parser.add_argument("--quiet", action="store_true", help="no progress on stderr")
    parser.add_argument(
        "--repeats",
        type=int,
        metavar="N",
        help="runs per point (overrides the sweep block's repeat; 2 or more give each point's effect an interval over runs, 5 is a good start)",
    )
    parser.add_argument("--root", default="/", help=argparse.SUPPRESS)  # a fake /sys tree, for tests
    add_connection_arguments(parser)
    add_access_arguments(parser)


def main(args: argparse.Namespace) -> int:
    workload = load_workload(args.config, grants=grants_from(args))
    if not workload.sweep:
        raise ConfigError(
            f"{args.config}: sweep: the workload has no sweep block; add sweep.parameters (see the README) or use faasprof run"
        )
    if args.repeats is not None:
        if args.repeats < 1:
            raise ConfigError(f"--repeats {args.repeats}: give at least 1 run per point")
        workload = replace(workload, sweep={**workload.sweep, "repeat": args.repeats})
    connection = resolve_connection(args, workload.platform, origin=args.config)
    sweep_dir = run_sweep(
        workload,
        args.out,
        connection=connection,
        analyze=not args.no_analyze,
        progress=Progress.to(sys.stderr, quiet=args.quiet),
        root=args.root,
    )
    if not args.no_analyze:
        for line in effect_lines(sweep_effects(sweep_dir)):
            print(line)
    print(sweep_dir)
    sys.stdout.flush()
    return 0
