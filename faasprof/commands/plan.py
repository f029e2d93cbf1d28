"""``faasprof plan CONFIG``: the dry run. Builds the merged schedule without contacting any platform,
prints per-instance counts, rates and windows (and a sweep's points with its estimated wall time),
and with ``--out`` writes the schedule as ``seq,instance,function,intended_s``.

A plan never refuses for what only a run needs: a function outside the catalogue (it may be on
the platform), a parameter, data or script file that is not there yet. Those are warnings on
stderr; a trace file that is missing plans no invocation for its instance (warned too).

A rate given as ``{"capacity_fraction": F}`` is resolved from the stored capacity of this host and
platform (``faasprof.experiments.capacity_store``), as ``run`` would; without one, the instance is shown as
F × capacity with its counts unknown (``run`` measures the capacity first). An instance at rate 0
is muted: it plans nothing. ``faasprof/workload_configs/schema.json`` is recognised and skipped."""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace

from faasprof.errors import ConfigError
from faasprof.experiments import capacity_store
from faasprof.experiments.sweep_plan import describe_plan
from faasprof.invoker.preflight import check_out_file
from faasprof.platforms.openwhisk.connection import resolve_connection
from faasprof.workload.access import add_access_arguments, grants_from
from faasprof.workload.jsonread import is_schema_document, parse_workload_file
from faasprof.workload.schedule import build_schedule
from faasprof.workload.shipped import find_workload
from faasprof.workload.spec import workload_from_parsed


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("config", metavar="CONFIG", help="workload JSON file")
    parser.add_argument("--out", metavar="CSV", help="write the merged schedule here (never overwritten)")
    parser.add_argument("--seed", type=int, help="use this seed instead of the workload's random_seed")
    add_access_arguments(parser)


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
    args.config = str(find_workload(args.config))  # a shipped workload's bare name: its file
    parsed = parse_workload_file(args.config)
    if is_schema_document(parsed.data):
        print(f"{args.config}: skipped (the JSON Schema of workloads, not a workload)")
        return 0
    given = workload_from_parsed(parsed, args.config, seed=args.seed, missing_files_warn=True, grants=grants_from(args))
    capacities: dict[str, dict] = {}
    bands: list[str] = []
    empty_bands: list[str] = []
    if given.needs_capacity():
        connection = resolve_connection(
            None, given.platform, origin=args.config
        )  # reads files only: no platform is asked
        capacities = capacity_store.stored_capacities(given, connection, given.platform.get("localwhisk"))
        # Which band of the platform each stored capacity's fraction falls in, as run says before it starts.
        empty_bands, bands = capacity_store.band_lines(
            given, capacities, capacity_store.pause_grace_of(connection, given.platform.get("localwhisk"))
        )
    workload = given.with_capacities(capacities, partial=True, missing_files_warn=True) if capacities else given
    for line in workload.warnings:
        print(f"warning: {line}", file=sys.stderr)
    unknown = {instance.name for instance in workload.needs_capacity()}
    started = time.perf_counter()
    # Instances whose capacity is not measured yet plan nothing here; the others' streams do not
    # depend on them (each instance draws from its own stream).
    schedule = build_schedule(
        replace(workload, instances=tuple(i for i in workload.instances if i.name not in unknown))
    )
    build_s = time.perf_counter() - started
    counts = schedule.counts()

    rows = []
    for instance in workload.instances:
        start_s, end_s = instance.window_s
        if instance.name in unknown:
            offered, achieved, planned = f"{instance.capacity_fraction:g} × capacity", "?", "?"
        else:
            n = counts[instance.name]
            offered = "-" if instance.rate is None else ("0 (muted)" if instance.rate == 0 else f"{instance.rate:g}")
            achieved = f"{n / instance.window_length_s if instance.window_length_s > 0 else 0.0:.3g}"
            planned = str(n)
        rows.append(
            [
                instance.name,
                instance.function,
                instance.distribution,
                offered,
                achieved,
                f"[{start_s:g}, {end_s:g})",
                planned,
            ]
        )
    print(
        format_table(rows, ["instance", "function", "distribution", "rate/s", "planned/s", "window_s", "invocations"])
    )
    for line in capacity_store.describe_fractions(given, capacities) + bands:
        print(line)
    for line in empty_bands:
        print(f"warning: {line}", file=sys.stderr)
    seed_note = " (fresh: random_seed is null; pass --seed to repeat it)" if workload.seed_was_null else ""
    unknown_note = (
        f" and an unknown number for {len(unknown)} instance{'s' if len(unknown) != 1 else ''} whose capacity is not measured yet"
        if unknown
        else ""
    )
    print(
        f"total {len(schedule)} invocations{unknown_note} over {workload.duration_s:g} s; seed {workload.seed}{seed_note}"
    )
    if workload.sweep:
        print(describe_plan(workload))
    if args.out:
        schedule.write_csv(args.out)
        left_out = f" (without {', '.join(sorted(unknown))}: capacity not measured yet)" if unknown else ""
        print(f"schedule written to {args.out}{left_out}", file=sys.stderr)
    print(f"schedule built in {build_s:.2f} s", file=sys.stderr)
    return 0
