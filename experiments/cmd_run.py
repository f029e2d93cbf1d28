"""``faasprof run CONFIG``: run a workload open-loop and write a run directory.

    faasprof run workload_configs/json_dumps.json                 # on the embedded localwhisk
    faasprof run my.json --apihost https://172.17.0.1 --auth UUID:KEY --insecure --analyze

A workload may give a rate as ``{"capacity_fraction": F}`` (``experiments.capacity_store``):
resolving it may need a capacity search, which runs workloads and analyses them, so this command
sits above the invoker: it resolves such rates (from the store, else by measuring), runs the
workload (``invoker.run.execute``) and, with ``--analyze``, analyzes it (``experiments.analyzed``).
The arguments are ``invoker.cmd_run``'s.

Progress and warnings go to stderr; the last line of stdout is the run directory. Exit status:
0 the run completed and met its thresholds (``invoker.verdict``: by default at least one
invocation succeeded and no more than half failed), 1 it was interrupted or aborted (analysed all
the same with ``--analyze``, else the command to analyse it is printed), or completed but failed
its thresholds (the run directory is still complete and readable; the manifest's ``verdict`` names
the dominant failure and its fix), 2 bad input, 3 the platform or a required collector is not
ready (nothing created).
"""

from __future__ import annotations

import argparse
import sys

from experiments import capacity_store
from experiments.analyzed import execute_analyzed
from experiments.capacity import find_capacity
from faasprof.progress import Progress
from faasprof.rundir import manifest_path, read_manifest
from invoker import cmd_run as invoker_run
from invoker.preflight import check_embedded, check_out_dir
from invoker.verdict import parse_thresholds
from monitoring.allocation import cleanup_leftovers
from platforms.openwhisk.connection import resolve_connection
from workload.spec import load_workload


def add_arguments(parser: argparse.ArgumentParser) -> None:
    invoker_run.add_arguments(parser)


def _restore_leftover_allocations() -> None:
    """A sweep that crashed may have left its cache allocation behind: undo it before measuring."""
    try:
        messages = cleanup_leftovers()
    except Exception as error:  # a measurement must not fail for this; the doctor reports it
        messages = [f"warning: could not check for leftover cache allocations ({error})"]
    for line in messages:
        print(line, file=sys.stderr)


def main(args: argparse.Namespace) -> int:
    workload = load_workload(args.config, seed=args.seed)
    progress = Progress.to(sys.stderr, quiet=args.quiet)
    if workload.needs_capacity():
        connection = resolve_connection(args, workload.platform, origin=args.config)
        settings = invoker_run.local_settings(args, workload.platform)
        workload = capacity_store.resolve_workload(workload, connection, settings, args.out, measure=find_capacity, progress=progress)
    _restore_leftover_allocations()
    options = invoker_run.dispatch_options(args)
    thresholds = parse_thresholds(args.threshold)
    check_out_dir(args.out)
    connection = resolve_connection(args, workload.platform, origin=args.config)
    settings = invoker_run.local_settings(args, workload.platform)
    if connection is None:
        check_embedded(workload, settings)  # what the embedded localwhisk would refuse, before it starts
    if connection is not None and connection.source == "local":
        print(f"using the localwhisk of `faasprof local start` at {connection.apihost} (`faasprof local stop` to run on an embedded one)", file=sys.stderr)
    if connection is not None and (args.user_memory is not None or args.pause_grace is not None or args.isolation is not None):
        print(f"warning: --user-memory/--pause-grace/--isolation only apply to the embedded localwhisk; {connection.apihost} is used", file=sys.stderr)
    elif connection is not None and connection.source == "local" and settings:
        print(f"warning: {args.config}: platform.localwhisk only applies to the embedded localwhisk; the running one at "
              f"{connection.apihost} keeps the settings it was started with", file=sys.stderr)
    run_dir = execute_analyzed(workload, args.out, connection=connection, local_settings=settings, progress=progress, analyze=args.analyze,
                               options=options, thresholds=thresholds)
    manifest = read_manifest(run_dir)
    status = manifest.status
    print(run_dir, flush=True)
    if status != "complete":
        # What it sent is measured all the same: the analysis ends its phases where it stopped.
        suggestion = "" if args.analyze else f"; analyze what it sent: faasprof analyze {run_dir}"
        print(f"run {status}: {manifest.status_reason} (see {manifest_path(run_dir)}){suggestion}", file=sys.stderr)
        return 1
    verdict = manifest.verdict or {}
    if verdict.get("passed") is False:
        # Without --quiet the run has already said which threshold failed, and why.
        what = "failed its thresholds" if not args.quiet else verdict["message"]
        print(f"run complete but {what} (see {manifest_path(run_dir)}, verdict)", file=sys.stderr)
        return 1
    if manifest.analysis_error:
        return 1
    return 0
