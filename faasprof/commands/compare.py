"""``faasprof compare``: runs in one frame and plots, and the effect of each side against the first.

    faasprof compare A B                         # one run a side: figures and ratios, no verdict
    faasprof compare A1 A2 A3 -- B1 B2 B3        # repeats a side: an effect with its interval over runs
    faasprof compare --a A1 A2 A3 --b B1 B2 B3   # the same
    faasprof compare runs/repeats-<time>         # the folder of `faasprof run A.json --vs B.json --repeats N`

Prints the frame (one row per run × instance × phase; completion latency first, client latency only
for blocking calls), the run-level comparison (``faasprof.analyzer.run_stats``: a verdict only with
two runs or more a side), and, where every side is one run, the per-invocation view labelled as
describing those runs only, to stdout; warnings and where the output goes to stderr, and the
output directory as the last line of stdout. Fewer than two runs, or runs on one side only: one
line, exit 2.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from faasprof.analyzer.compare import compare_runs, default_out_dir, summary_table, verdict_lines
from faasprof.analyzer.compare_sides import Side, check_sides, sides_from_groups
from faasprof.analyzer.records import stderr_progress
from faasprof.analyzer.run_stats import add_min_effect_argument, effect_lines
from faasprof.errors import ConfigError

SEPARATOR = "--"


def _add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--label",
        metavar="KEY",
        help="manifest key (dotted path, e.g. workload.instances.i0.rate) that names each run; default: the one setting that differs, or the functions when they differ",
    )
    parser.add_argument(
        "--out", metavar="DIR", help="output directory (default: compare-<UTC time> beside the first run)"
    )
    parser.add_argument("--a", nargs="+", metavar="RUN_DIR", help="side A's runs (repeats of one workload)")
    parser.add_argument("--b", nargs="+", metavar="RUN_DIR", help="side B's runs, compared against side A's")
    add_min_effect_argument(parser)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    _add_options(parser)
    # REMAINDER keeps the "--" between the sides (argparse drops it otherwise); options after the
    # runs are parsed again in main.
    parser.add_argument(
        "run_dirs",
        nargs=argparse.REMAINDER,
        metavar="RUN_DIR",
        help="run directories (each its own side), or two sides split by --, or a folder of faasprof run --repeats",
    )


def _split(tokens: list[str], args: argparse.Namespace) -> list[list[str]]:
    """The positional groups (split at ``--``); options met among them are parsed into ``args``."""
    groups: list[list[str]] = [[]]
    options: list[str] = []
    taking = 0  # values the last option still takes: 1 for --label/--out/--min-effect, many for --a/--b
    for token in tokens:
        if token == SEPARATOR:
            groups.append([])
            taking = 0
        elif token.startswith("-") and len(token) > 1:
            options.append(token)
            taking = 0 if "=" in token else -1 if token in ("--a", "--b") else 1
        elif taking:
            options.append(token)
            taking = taking - 1 if taking > 0 else taking
        else:
            groups[-1].append(token)
    if options:
        parser = argparse.ArgumentParser(prog="faasprof compare", add_help=False, exit_on_error=False)
        _add_options(parser)
        try:
            parser.parse_args(options, namespace=args)
        except argparse.ArgumentError as error:
            raise ConfigError(f"compare: {error}") from None
    return [group for group in groups if group] or [[]]


def sides_of(args: argparse.Namespace) -> list[Side]:
    """The sides the arguments name (module docstring); one line on a mix of forms."""
    groups = _split(list(args.run_dirs or []), args)
    if args.a or args.b:
        if any(groups[0]):
            raise ConfigError("compare: give the runs either as --a ... --b ... or as positional RUN_DIRs, not both")
        groups = [list(args.a or []), list(args.b or [])]
    return sides_from_groups(groups)


def main(args: argparse.Namespace) -> int:
    sides = sides_of(args)
    check_sides(sides)
    if not 0 <= args.min_effect < 1:
        raise ConfigError(f"--min-effect {args.min_effect}: give a fraction in [0, 1), e.g. 0.05 for 5 %")
    runs: list[str | os.PathLike] = [run for side in sides for run in side.runs]
    out = Path(args.out) if args.out else default_out_dir(runs)
    print(f"compare: writing {out}", file=sys.stderr)
    result = compare_runs(
        runs, label=args.label, out_dir=out, progress=stderr_progress, sides=sides, min_effect=args.min_effect
    )
    for warning in result["warnings"]:
        print(f"warning: {warning}", file=sys.stderr)
    table = summary_table(result["frame"])
    print(table.to_string(index=False) if len(table) else "(no rows)")
    for line in effect_lines(result["run_level"], args.min_effect):
        print(line)
    for line in verdict_lines(result):
        print(line)
    if result["parameter"]:
        print(f"parameter: {result['parameter']}")
    print(out)
    return 0
