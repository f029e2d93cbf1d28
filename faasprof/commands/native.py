"""``faasprof native FUNCTION|PATH``: run a benchmark function, or a function of your own (a file or
folder, as ``faasprof deploy PATH`` takes), natively (no platform) and write a run directory, so the
slowdown a platform adds can be measured for it.

The same function body as the action, under the same interpreter family (this Python for Python
functions, ``node`` for Node.js ones), in ``--concurrency`` long-lived worker processes that each
import the function once. Per-call execution time is measured inside the worker; see
``faasprof.experiments.native`` for the files written. Progress goes to stderr; the last line of stdout is
the run directory. Exit 0 when every call succeeded, 1 when any did not (the rows say why).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from faasprof.errors import ConfigError
from faasprof.experiments import native
from faasprof.functions.catalogue import load_params_file, lookup, require
from faasprof.functions.checks import check_result
from faasprof.functions.own import looks_like_path, own_entry, stage


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "function",
        metavar="FUNCTION|PATH",
        help="a catalogue function (faasprof deploy --list lists them), or your own: a .py/.js file or a folder "
        "with __main__.py (and requirements.txt) or package.json",
    )
    parser.add_argument("--repeat", type=int, default=10, metavar="N", help="calls to measure (default 10)")
    parser.add_argument(
        "--concurrency", type=int, default=1, metavar="K", help="worker processes calling in parallel (default 1)"
    )
    parser.add_argument(
        "--warmup",
        type=int,
        default=0,
        metavar="W",
        help="unrecorded calls per worker before measuring (default 0: the first call is cold)",
    )
    parser.add_argument(
        "--params", type=Path, metavar="FILE", help="JSON object of parameters (default: the function's sample input)"
    )
    parser.add_argument(
        "--out", type=Path, default=Path("runs"), metavar="DIR", help="where the run directory goes (default runs/)"
    )
    parser.add_argument(
        "--timeout-s", type=float, metavar="S", help="per-call time limit (default: the function's timeout)"
    )
    parser.add_argument(
        "--perf", action="store_true", help="count software events with perf stat per worker (fails if perf cannot)"
    )
    parser.add_argument(
        "--perf-events",
        metavar="LIST",
        help="comma-separated perf events (default task-clock,context-switches,cpu-migrations,page-faults,minor-faults,major-faults)",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="with the sample input, compare each result with the function's expected.json",
    )


def main(args: argparse.Namespace) -> int:
    if lookup(args.function) is None and looks_like_path(args.function):
        entry = stage(own_entry(args.function))  # installs requirements.txt / package.json dependencies once
    else:
        entry = require(args.function, where="FUNCTION")
    params = None
    source = "sample"
    if args.params is not None:
        params = load_params_file(args.params)
        source = str(args.params)
        if args.check:
            raise ConfigError("--check: compares against the sample input's expected result; drop --params or --check")
    options = native.NativeOptions(
        repeat=args.repeat,
        concurrency=args.concurrency,
        warmup=args.warmup,
        params=params,
        params_source=source,
        perf=args.perf,
        timeout_s=args.timeout_s,
    )
    if args.perf_events:
        options.perf_events = tuple(event.strip() for event in args.perf_events.split(",") if event.strip())
    if args.timeout_s is not None and args.timeout_s <= 0:
        raise ConfigError(f"--timeout-s: must be > 0 (got {args.timeout_s:g})")

    progress = lambda message: print(message, file=sys.stderr, flush=True)  # noqa: E731
    run_dir, summary = native.run_native(entry, args.out, options, progress=progress)

    status = 0
    if args.check:
        expected = entry.expected()
        if expected is None:
            print(f"{entry.base}: no expected.json to check against", file=sys.stderr)
        else:
            answer = native.call_once(entry)
            problems = check_result(answer.get("result"), expected)
            for line in problems:
                print(f"{entry.name}: check: {line}", file=sys.stderr)
            print(f"{entry.name}: check {'failed' if problems else 'passed'}", file=sys.stderr)
            status = 1 if problems else 0
    outcomes = summary.get("outcomes", {})
    timing = summary.get("exec_ms")
    if timing:
        print(
            f"{entry.name}: {outcomes.get('ok', 0)}/{summary['calls']} ok; exec ms median {timing['median']:.3f} "
            f"mean {timing['mean']:.3f} min {timing['min']:.3f} max {timing['max']:.3f}",
            file=sys.stderr,
        )
    failures = {outcome: count for outcome, count in outcomes.items() if outcome != "ok"}
    if failures:
        print(
            f"{entry.name}: not ok: {json.dumps(failures)}; see {run_dir / 'native.csv'} and {run_dir / 'native'}/",
            file=sys.stderr,
        )
        status = 1
    print(run_dir)
    return status
