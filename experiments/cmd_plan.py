"""``faasprof plan CONFIG``: the dry run. Builds the merged schedule without contacting any platform,
prints per-instance counts, rates and windows (and a sweep's points with its estimated wall time),
and with ``--out`` writes the schedule as ``seq,instance,function,intended_s``.

A plan never refuses for what only a run needs: a function outside the catalogue (it may be on
the platform), a parameter, data or script file that is not there yet. Those are warnings on
stderr; a trace file that is missing plans no invocation for its instance (warned too)."""

from __future__ import annotations

import argparse
import sys
import time

from faasprof.errors import ConfigError
from invoker.preflight import check_out_file
from workload.schedule import build_schedule
from workload.spec import load_workload
from experiments.sweep import describe_plan


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("config", metavar="CONFIG", help="workload JSON file")
    parser.add_argument("--out", metavar="CSV", help="write the merged schedule here (never overwritten)")
    parser.add_argument("--seed", type=int, help="use this seed instead of the workload's random_seed")


def format_table(rows: list[list[str]], header: list[str]) -> str:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(header, widths)).rstrip()]
    lines += ["  ".join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip() for row in rows]
    return "\n".join(lines)


def main(args: argparse.Namespace) -> int:
    if args.seed is not None and args.seed < 0:
        raise ConfigError(f"--seed: must be an integer >= 0 (got {args.seed})")
    if args.out:
        check_out_file(args.out)
    workload = load_workload(args.config, seed=args.seed, missing_files_warn=True)
    for line in workload.warnings:
        print(f"warning: {line}", file=sys.stderr)
    started = time.perf_counter()
    schedule = build_schedule(workload)
    build_s = time.perf_counter() - started
    counts = schedule.counts()

    rows = []
    for instance in workload.instances:
        n = counts[instance.name]
        start_s, end_s = instance.window_s
        offered = f"{instance.rate:g}" if instance.rate else "-"
        achieved = n / instance.window_length_s if instance.window_length_s > 0 else 0.0
        rows.append([instance.name, instance.function, instance.distribution, offered, f"{achieved:.3g}", f"[{start_s:g}, {end_s:g})", str(n)])
    print(format_table(rows, ["instance", "function", "distribution", "rate/s", "planned/s", "window_s", "invocations"]))
    seed_note = " (fresh: random_seed is null; pass --seed to repeat it)" if workload.seed_was_null else ""
    print(f"total {len(schedule)} invocations over {workload.duration_s:g} s; seed {workload.seed}{seed_note}")
    if workload.sweep:
        print(describe_plan(workload))
    if args.out:
        schedule.write_csv(args.out)
        print(f"schedule written to {args.out}", file=sys.stderr)
    print(f"schedule built in {build_s:.2f} s", file=sys.stderr)
    return 0
