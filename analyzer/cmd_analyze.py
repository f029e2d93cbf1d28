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
                return "-" if v is None else f"{v:.4g}{unit}"

            # A non-blocking call answers at acceptance: its latency is the platform's (wait + duration).
            kind = "client" if phase.get("blocking", True) else "platform"
            print(
                f"  {instance['instance']:<16} phase {phase['phase']} {phase['mode']:<13} "
                f"offered {f(phase['offered_rps'], '/s')} achieved {f(phase['achieved_rps'], '/s')} "
                f"{kind} latency p50 {f(phase[f'{kind}_latency_ms_p50'], ' ms')} p99 {f(phase[f'{kind}_latency_ms_p99'], ' ms')} "
                f"cold {f(phase['cold_fraction'])} resumed {f(phase['resumed_fraction'])}",
                file=out,
            )


def main(args: argparse.Namespace) -> int:
    from analyzer.analysis import analyze_run
    from analyzer.records import stderr_progress
    from invoker.connection import resolve_connection

    run_dir = Path(args.run_dir)
    manifest = rundir.load_manifest(run_dir)
    connection = None
    # Records are fetched when the run has none saved, or (with explicit flags) to complete them.
    if not args.no_fetch and (not (run_dir / rundir.ACTIVATIONS).exists() or args.apihost):
        workload = manifest.get("workload") or {}
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
    summary = analyze_run(run_dir, connection, plots=not args.no_plots, progress=stderr_progress)
    for warning in summary["warnings"]:
        print(f"warning: {warning}", file=sys.stderr)
    print_summary(summary)
    print(run_dir / rundir.ANALYSIS)
    return 0
