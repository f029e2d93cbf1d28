"""``faasprof compare RUN_DIR... [--label KEY] [--out DIR]``: several runs in one frame and plots.

Prints the frame (one row per run × instance × phase; completion latency first, client latency only
for blocking calls) and each run's verdict per percentile against the first run to stdout, warnings
and where the output goes to stderr, and the output directory as the last line of stdout.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from faasprof.analyzer.compare import compare_runs, default_out_dir, summary_table, verdict_lines
from faasprof.analyzer.records import stderr_progress


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", help="run directories to compare")
    parser.add_argument(
        "--label",
        metavar="KEY",
        help="manifest key (dotted path, e.g. workload.instances.i0.rate) that names each run; default: the one setting that differs",
    )
    parser.add_argument(
        "--out", metavar="DIR", help="output directory (default: compare-<UTC time> beside the first run)"
    )


def main(args: argparse.Namespace) -> int:
    out = Path(args.out) if args.out else default_out_dir(args.run_dirs)
    print(f"compare: writing {out}", file=sys.stderr)
    result = compare_runs(args.run_dirs, label=args.label, out_dir=out, progress=stderr_progress)
    for warning in result["warnings"]:
        print(f"warning: {warning}", file=sys.stderr)
    table = summary_table(result["frame"])
    print(table.to_string(index=False) if len(table) else "(no rows)")
    for line in verdict_lines(result):
        print(line)
    if result["parameter"]:
        print(f"parameter: {result['parameter']}")
    print(out)
    return 0
