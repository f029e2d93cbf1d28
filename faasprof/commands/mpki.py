"""``faasprof mpki FUNCTION...``: branch MPKI against median execution time (Figs 6, 7).

Each function runs alone at ``--rate`` for ``--duration`` seconds with perf counting instructions and
branch misses (see ``faasprof.experiments.mpki``). On a host whose perf cannot count them, the command
says what it would measure and exits 3 before running anything. ``--from-runs RUN...`` recomputes
the table and the plot from runs that already ran, a row per instance × phase with the counts of
its own window; runs whose perf had no hardware counters give the table and exit 3, runs without a
perf monitor exit 2. The last line of stdout is the output directory.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from faasprof import rundir
from faasprof.errors import EXIT_BAD_INPUT, EXIT_NOT_READY, ConfigError, NotReadyError
from faasprof.experiments.analyzed import execute_analyzed
from faasprof.experiments.mpki import (
    EVENTS,
    NO_PERF_OUTPUT,
    REQUIRED_EVENTS,
    explain,
    mpki_workload,
    new_manifest,
    rows_for_run,
    write_results,
)
from faasprof.functions.catalogue import require
from faasprof.invoker.preflight import check_out_dir
from faasprof.monitoring.collectors.perf import perf_readiness
from faasprof.platforms.openwhisk.connection import add_connection_arguments, resolve_connection
from faasprof.progress import Progress
from faasprof.workload.spec import workload_from_dict


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "functions", nargs="*", metavar="FUNCTION", help="catalogue functions or deployed actions, each measured alone"
    )
    parser.add_argument(
        "--rate",
        type=float,
        default=2.0,
        metavar="RPS",
        help="invocations per second, a balanced load for every function (default 2; see `faasprof capacity`)",
    )
    parser.add_argument(
        "--duration", type=float, default=20.0, metavar="S", help="length of each function's run (default 20)"
    )
    parser.add_argument(
        "--per",
        choices=("auto", "cgroup", "system"),
        default="auto",
        help="perf aggregation: per cgroup of the sandboxes, system-wide, or auto (cgroup where the host allows it; default)",
    )
    parser.add_argument(
        "--out", default="runs", metavar="DIR", help="where the mpki-<stamp>/ directory goes (default runs/)"
    )
    parser.add_argument(
        "--from-runs",
        nargs="+",
        metavar="RUN_DIR",
        help="do not run: compute the table and plot from these analysed runs",
    )
    local = parser.add_argument_group("embedded localwhisk only")
    local.add_argument(
        "--isolation",
        choices=("auto", "cgroup", "rlimit", "docker"),
        help="sandboxes as processes or Docker containers (default auto)",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    add_connection_arguments(parser)


def main(args: argparse.Namespace) -> int:
    if args.from_runs:
        if args.functions:
            raise ConfigError("FUNCTION: --from-runs takes the functions from the runs; drop the names")
        check_out_dir(args.out)
        rows = []
        for run in args.from_runs:
            rows.extend(rows_for_run(run))
        out = rundir.create_run_dir(args.out, "mpki", monitors=False)
        manifest = new_manifest(sorted({r["function"] for r in rows}), {"from_runs": list(args.from_runs)})
        manifest.update(runs={f"{r['instance']} phase {r['phase']}": r["run_dir"] for r in rows})
        write_results(out, rows, manifest)
        code = _show(rows, out)
        no_counters = sorted({r["run_dir"] for r in rows if r["no_counters"]})
        if no_counters:
            print(
                f"perf: {', '.join(REQUIRED_EVENTS)} were not supported in {', '.join(no_counters)}: those runs' host had no hardware counters; "
                "measure on a host with a hardware PMU (`faasprof doctor` says what this one can count)",
                file=sys.stderr,
            )
            return EXIT_NOT_READY
        no_perf = sorted({r["run_dir"] for r in rows if r["missing"] == NO_PERF_OUTPUT})
        if no_perf:
            print(
                f"--from-runs: {', '.join(no_perf)}: no perf output (the run had no perf monitor); run the workload "
                'with "monitoring": {"perf": true} on a host with hardware counters',
                file=sys.stderr,
            )
            return EXIT_BAD_INPUT
        return code

    if not args.functions:
        raise ConfigError("FUNCTION: name at least one function (or pass --from-runs RUN_DIR...)")
    if args.rate <= 0 or args.duration <= 0:
        raise ConfigError(f"--rate/--duration: must be > 0 (got {args.rate:g}/s for {args.duration:g} s)")
    for name in args.functions:
        require(name, where="FUNCTION")
    check_out_dir(args.out)
    ready = perf_readiness(REQUIRED_EVENTS)
    problem = ready.problem("use a host that has it", require_all=True)
    if problem is not None:
        dropped = ready.dropped or {"perf": problem}
        print(explain(dropped, list(args.functions)), file=sys.stderr)
        raise NotReadyError(
            f"perf: {', '.join(REQUIRED_EVENTS)} cannot be counted on this host ({'; '.join(f'{k}: {v}' for k, v in dropped.items())}); run on a host with a hardware PMU"
        )
    connection = resolve_connection(args, None, origin="faasprof mpki")
    settings = {"isolation": args.isolation} if args.isolation else {}
    out = rundir.create_run_dir(args.out, "mpki", monitors=False)
    progress = Progress.to(sys.stderr, quiet=args.quiet)
    manifest = new_manifest(
        list(args.functions),
        {"rate_rps": args.rate, "duration_s": args.duration, "per": args.per, "events": list(EVENTS)},
    )
    rows = []
    for name in args.functions:
        per = "cgroup" if args.per in ("auto", "cgroup") else "system"
        try:
            workload = workload_from_dict(mpki_workload(name, args.rate, args.duration, per), origin=f"mpki {name}")
            run_dir = execute_analyzed(
                workload, out / "runs", connection=connection, local_settings=settings, progress=progress, analyze=True
            )
        except NotReadyError as problem:
            if args.per != "auto" or "per cgroup" not in str(problem):
                raise
            progress.say(f"{name}: per-cgroup counting unavailable here, counting system-wide ({problem})")
            workload = workload_from_dict(
                mpki_workload(name, args.rate, args.duration, "system"), origin=f"mpki {name}"
            )
            run_dir = execute_analyzed(
                workload, out / "runs", connection=connection, local_settings=settings, progress=progress, analyze=True
            )
        rows.extend(rows_for_run(run_dir, args.rate))
        manifest.extra["runs"][name] = str(Path(run_dir).relative_to(out))
    write_results(out, rows, manifest)
    return _show(rows, out)


def _show(rows: list[dict], out: Path) -> int:
    for row in rows:
        mpki, exec_ms = row["branch_mpki"], row["execution_ms_p50"]
        where = (
            f" {row['instance']} phase {row['phase']} [{row['window_start_s']:g}, {row['window_end_s']:g}) s"
            if len(rows) > 1
            else ""
        )
        print(
            f"{row['function']}{where}: branch MPKI {'-' if not math.isfinite(mpki) else f'{mpki:.3f}'}; median execution "
            f"{'-' if not math.isfinite(exec_ms) else f'{exec_ms:.1f}'} ms; mode {row['mode']}; perf per {row['per']}"
            + (f"; missing: {row['missing']}" if row["missing"] else "")
        )
    print(out)
    return 0 if all(math.isfinite(r["branch_mpki"]) for r in rows) else 1
