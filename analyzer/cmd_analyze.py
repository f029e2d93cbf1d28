"""``faasprof analyze RUN_DIR``: fetch a run's activation records if needed, then analyze offline.

Writes ``RUN_DIR/analysis/`` (see ``analyzer.analysis``), prints the failures first (when any), the
final outcome counts, then one line per instance and steady phase (mode, throughput, percentiles
of successful work) to stdout, warnings with advice to stderr, and the analysis
directory as the last line of stdout.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from faasprof import rundir
from faasprof.rundir import tables
from analyzer import report as report_mod


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from invoker.connection import add_connection_arguments

    parser.add_argument("run_dir", metavar="RUN_DIR", help="a run directory (runs/<test>-<stamp>)")
    parser.add_argument("--no-fetch", action="store_true", help="never contact the platform; analyze what the run directory holds")
    parser.add_argument("--no-plots", action="store_true", help="skip the PNG plots (faster; report.html then has only tables)")
    add_connection_arguments(parser)


def print_summary(summary: dict, out=sys.stdout) -> None:
    records = summary["records"]
    print(
        f"{summary['run']['dir']}: {summary['run']['planned']} planned, status {summary['run']['status']}; "
        f"records {records['found']} found, {records['missing']} missing (source {records['source']})",
        file=out,
    )
    failures = summary["failures"]
    finals = summary["run"]["final_outcomes"]
    if failures["total"]:
        kinds = ", ".join(f"{count} {name}" for name, count in finals.items() if count and name != "success")
        print(f"  FAILURES: {failures['total']} of {summary['run']['planned']} did not succeed ({kinds}); kept out of the latency figures", file=out)
    print(f"  outcomes: {finals['success']} success" + "".join(f", {count} {name}" for name, count in finals.items() if count and name != "success"), file=out)
    for instance in summary["instances"]:
        for phase in instance["phases"]:
            def f(v, unit=""):
                return "-" if v is None else f"{v:.3g}{unit}"

            # Completion latency for every call (planned send → function end); the client's own
            # latency is added for blocking calls only, whose answer comes at the function's end.
            client = f" (client p50 {report_mod.ms(phase['client_latency_ms_p50'])})" if phase.get("blocking") else ""
            print(
                f"  {instance['instance']:<16} phase {phase['phase']} {phase['mode']:<13} "
                f"offered {f(phase['offered_rps'], '/s')} achieved {f(phase['achieved_rps'], '/s')} "
                f"completion latency p50 {report_mod.ms(phase.get('completion_latency_ms_p50'))} p99 {report_mod.ms(phase.get('completion_latency_ms_p99'))}{client} "
                f"cold {report_mod.pct(phase['cold_fraction'])} resumed {report_mod.pct(phase['resumed_fraction'])}",
                file=out,
            )


def main(args: argparse.Namespace) -> int:
    from analyzer.analysis import analyze_run
    from analyzer.records import stderr_progress
    from invoker.connection import resolve_connection

    run_dir = Path(args.run_dir)
    manifest = rundir.read_manifest(run_dir)
    completeness = tables.completeness(run_dir, manifest)
    if completeness.uncounted:
        completeness = _rederive_plan(run_dir, manifest) or completeness
    torn = completeness.describe()
    if torn:
        # Stated before anything else: the rows present are not the plan.
        print(f"warning: {run_dir}: {torn}; status {manifest.status}", file=sys.stderr)
    platform_block = manifest.platform
    saved = (run_dir / rundir.ACTIVATIONS).exists()
    if not args.no_fetch and platform_block.get("embedded") and not args.apihost:
        # The embedded platform kept its store in the run directory: a crashed run's records are
        # there, served again by a localwhisk started on that store (the same REST path).
        if not saved or manifest.status == "running":
            _fetch_from_embedded_store(run_dir, platform_block)
    elif not args.no_fetch and (not saved or args.apihost):
        # Records are fetched when the run has none saved, or (with explicit flags) to complete them.
        workload = manifest.workload
        platform = dict((workload.get("as_given") or workload).get("platform") or {})
        if platform.get("auth") == "(redacted)":
            platform.pop("auth")  # the manifest never holds the key: flags or ~/.wskprops give it
        connection = resolve_connection(args, platform, origin=str(run_dir / rundir.MANIFEST))
        if connection is None:
            print(
                f"analyze: {run_dir} has no {rundir.ACTIVATIONS} and no platform is configured to fetch them from "
                "(pass --apihost/--auth); analyzing client-side data only",
                file=sys.stderr,
            )
        else:
            _fetch_from_platform(run_dir, connection)
    summary = analyze_run(run_dir, None, plots=not args.no_plots, progress=stderr_progress)
    for warning in summary["warnings"]:
        print(f"warning: {warning}", file=sys.stderr)
    print_summary(summary)
    print(run_dir / rundir.ANALYSIS)
    return 0


def _rederive_plan(run_dir: Path, manifest: rundir.Manifest):
    """A torn run without ``plan.bin`` (format 1): re-derive the plan from the manifest's resolved
    workload and seed (the schedule is a pure function of both), check it against the planned
    count, and save it so that every reader reconstructs the run. None when it cannot be done."""
    from faasprof.errors import FaasprofError
    from invoker.schedule import build_schedule
    from invoker.workload import workload_from_dict

    resolved = manifest.workload
    given = resolved.get("as_given")
    source = resolved.get("source")
    if not isinstance(given, dict):
        return None
    try:
        workload = workload_from_dict(given, origin=str(run_dir / rundir.MANIFEST), path=Path(source) if source else None, check_catalogue=False)
        schedule = build_schedule(workload)
    except (FaasprofError, OSError, ValueError) as error:
        print(f"warning: {run_dir}: cannot re-derive the plan from the manifest ({error}); the missing rows are only counted", file=sys.stderr)
        return None
    planned = manifest.planned
    if len(schedule) != planned:
        print(f"warning: {run_dir}: the plan re-derived from the manifest has {len(schedule):,} invocations, the run planned {planned}; not used", file=sys.stderr)
        return None
    rundir.write_plan(run_dir, schedule.intended_ns, schedule.instance_idx, schedule.instance_names, schedule.functions)
    _say(f"re-derived the plan of {run_dir} from its manifest (workload and seed {workload.seed}) into {rundir.PLAN}")
    return tables.completeness(run_dir, manifest)


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _fetch_from_platform(run_dir: Path, connection) -> None:
    """Save the run's records, waiting for activations still running (deadline: the actions' time limits)."""
    from invoker.activations import save_run_records
    from invoker.client import OpenWhiskClient

    with OpenWhiskClient(connection) as client:
        report = save_run_records(run_dir, client, say=_say)
    _report(report, f"platform {connection.apihost}")


def _fetch_from_embedded_store(run_dir: Path, platform_block: dict) -> None:
    from faasprof.errors import FaasprofError
    from invoker.activations import save_run_records
    from invoker.client import OpenWhiskClient
    from invoker.connection import Connection
    from localwhisk.embedded import start_embedded

    data_dir = run_dir / str(platform_block.get("data_dir") or "localwhisk")
    if not (data_dir / "localwhisk.sqlite").exists():
        print(f"warning: {run_dir}: the embedded platform's store {data_dir / 'localwhisk.sqlite'} is missing; analyzing without the records it held", file=sys.stderr)
        return
    _say(f"reading activation records from the embedded platform's store in {data_dir}")
    try:
        with start_embedded(data_dir=data_dir, log_dir=data_dir) as handle:
            connection = Connection(apihost=handle.apihost, auth=handle.auth, namespace=handle.namespace, source="embedded")
            with OpenWhiskClient(connection) as client:
                # Nothing can still be running there: the server that ran them is gone.
                report = save_run_records(run_dir, client, say=_say, wait=False)
    except FaasprofError as error:
        print(f"warning: {run_dir}: cannot read the embedded platform's store ({error}); analyzing without its records", file=sys.stderr)
        return
    _report(report, f"the store in {data_dir}")


def _report(report: dict, source: str) -> None:
    _say(f"saved {report.get('saved', 0):,} of {report.get('expected', 0):,} activation records from {source} to {rundir.ACTIVATIONS}")
    if report.get("missing"):
        print(f"warning: {report['missing']:,} activation records missing: {report['missing_why']}", file=sys.stderr)
