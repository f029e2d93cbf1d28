"""``faasprof compare RUN_DIR... [--label KEY] [--out DIR]``: several runs in one frame and plots.

Prints the frame (one row per run × function) to stdout, warnings to stderr, and the output
directory as the last line of stdout.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from faasprof import rundir
from analyzer.compare import compare_runs
from analyzer.records import stderr_progress


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", help="run directories to compare")
    parser.add_argument("--label", metavar="KEY", help="manifest key (dotted path, e.g. workload.instances.i0.rate) that names each run; default: the one setting that differs")
    parser.add_argument("--out", metavar="DIR", help="output directory (default: ./compare-<UTC time>)")


def main(args: argparse.Namespace) -> int:
    out = Path(args.out) if args.out else Path(f"compare-{rundir.utc_stamp()}")
    result = compare_runs(args.run_dirs, label=args.label, out_dir=out, progress=stderr_progress)
    for warning in result["warnings"]:
        print(f"warning: {warning}", file=sys.stderr)
    frame = result["frame"]
    columns = [c for c in ("label", "function", "mode", "offered_rps", "achieved_rps", "client_latency_ms_p50", "client_latency_ms_p99", "cold_fraction", "gb_s") if c in frame.columns]
    with pd.option_context("display.width", 200, "display.max_columns", 20, "display.float_format", "{:.4g}".format):
        print(frame[columns].to_string(index=False) if len(frame) else "(no rows)")
    if result["parameter"]:
        print(f"parameter: {result['parameter']}")
    print(out)
    return 0
