"""``faasprof reproduce``: regenerate the MICRO'19 paper's figures on this host, each beside the
paper's finding with a verdict (reproduced / not reproduced / not measurable here).

    faasprof reproduce --quick                      # about 10 minutes on 2 cores
    faasprof reproduce --figures 4,5,15-16 --isolation process

Figures the host cannot make (no PMU, no RDT: ``faasprof doctor`` says why) are listed with the
reason and the hardware they need; nothing is drawn for them. Rates are fractions of the
function's capacity on this host and platform (stored, else measured first). On the embedded
localwhisk the sandboxes are Docker containers when Docker works (the paper's containers), else
processes, and the page says which. Before starting it states the expected time; progress with an
ETA goes to stderr. stdout: one line per figure and the output directory (``report.html``,
``reproduce.json``, the runs under ``runs/``) as the last line. Exit 0 when every experiment ran
(whatever the verdicts), 1 when one failed, 2 bad input, 3 the platform or Docker asked for is missing.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from faasprof import rundir
from faasprof.docker import docker_problem
from faasprof.errors import NotReadyError
from faasprof.experiments import capacity_store
from faasprof.experiments import reproduce as plan
from faasprof.experiments import reproduce_report as report
from faasprof.experiments import reproduce_rules as rules
from faasprof.experiments import reproduce_runs as runs
from faasprof.invoker.preflight import check_out_dir
from faasprof.monitoring.host import Root, collect_host
from faasprof.platforms.openwhisk.connection import add_connection_arguments, resolve_connection
from faasprof.progress import Progress


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--figures",
        metavar="LIST",
        help=f"figure numbers and ranges, e.g. 4,5,15-16 (default: all; {', '.join(map(str, plan.known_numbers()))})",
    )
    parser.add_argument(
        "--quick", action="store_true", help="short runs and fewer functions: about 10 minutes on a 2-core host"
    )
    parser.add_argument(
        "--out", default="runs", metavar="DIR", help="where the reproduce-<stamp>/ directory goes (default runs/)"
    )
    parser.add_argument("--tiny", action="store_true", help=argparse.SUPPRESS)  # tests: every step, seconds each
    local = parser.add_argument_group("embedded localwhisk only")
    local.add_argument(
        "--isolation",
        choices=("process", "docker"),
        help="sandboxes as processes or Docker containers (default docker when Docker works, else process)",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    add_connection_arguments(parser)


def choose_isolation(asked: str | None, connection, problem: str | None) -> tuple[str, str]:
    """(isolation, why): a named platform is itself; else what was asked, else Docker when it works."""
    if connection is not None:
        return "openwhisk", f"the platform at {connection.apihost} (its own containers)"
    if asked == "docker" and problem:
        raise NotReadyError(f"--isolation docker: {problem}")
    if asked:
        return asked, f"--isolation {asked}"
    if problem is None:
        return "docker", "Docker works here: the paper's containers (resume and cold-start costs are real)"
    return "process", f"process sandboxes, not the paper's containers: Docker is unavailable ({problem})"


def main(args: argparse.Namespace) -> int:
    figures, not_judged = plan.parse_figures(args.figures)
    check_out_dir(args.out)
    connection = resolve_connection(args, None, origin="faasprof reproduce")
    isolation, why = choose_isolation(args.isolation, connection, None if connection is not None else docker_problem())
    progress = Progress(lambda line: print(f"reproduce: {line}", file=sys.stderr, flush=True), quiet=args.quiet)
    if connection is not None and args.isolation:
        print(
            f"warning: --isolation only applies to the embedded localwhisk; {connection.apihost} is used",
            file=sys.stderr,
        )
    host = collect_host()
    gaps = plan.requirement_gaps(Root("/"), host)
    measurable = [f for f in figures if plan.unmet(f, gaps) is None]
    profile = plan.PROFILES["tiny" if args.tiny else "quick" if args.quick else "full"]
    ctx = runs.Context(
        out=Path(),
        connection=connection,
        isolation=isolation,
        profile=profile,
        monitoring={"rdt": True} if "rdt" not in gaps and any("rdt" in f.needs for f in measurable) else {},
        progress=progress,
    )
    store_key = capacity_store.key(
        capacity_store.host_identity(),
        capacity_store.platform_identity(connection, ctx.settings()),
        plan.MODES_FUNCTION,
        None,
    )
    known = capacity_store.lookup(store_key)
    expected = plan.expected_seconds(
        measurable, profile, known is not None, (known or {}).get("capacity_rps") or 10.0, isolation == "docker"
    )
    _announce(progress, figures, measurable, gaps, expected, profile, isolation, why)
    load_start = os.getloadavg()[0]
    started = time.monotonic()
    ctx.out = rundir.create_run_dir(args.out, "reproduce", monitors=False)
    results = runs.run_experiments(ctx, measurable, expected, time.monotonic)
    entries = [_entry(f, gaps, results, ctx) for f in figures]
    context = {
        "created_utc": rundir.utc_stamp(),
        "profile": profile.name,
        "expected_s": sum(expected.values()),
        "wall_s": time.monotonic() - started,
        "host": {
            "cpu_model": host.get("cpu_model"),
            "logical_cpus": host.get("logical_cpus"),
            "load_start": load_start,
            "load_end": os.getloadavg()[0],
        },
        "platform": runs.platform_label(ctx),
        "isolation": {"chosen": isolation, "why": why},
    }
    doc = report.document(entries, not_judged, context)
    report.write_json(doc, ctx.out)
    report.write_report(doc, ctx.out)
    for entry in doc["figures"]:
        number = "" if entry["verdict"] == rules.NOT_MEASURABLE else f"{report.host_text(entry)}; "
        print(f"Fig {entry['figure']} ({entry['title']}): {entry['verdict']}: {number}{entry['reason']}")
    for item in doc["not_judged"]:
        print(f"Fig {item['figure']} ({item['what']}): not judged: {item['command']}")
    print(ctx.out)
    return 1 if any(r.get("error") for r in results.values()) else 0


def _announce(progress: Progress, figures, measurable, gaps, expected, profile, isolation, why) -> None:
    skipped = [f"Fig {f.key}" for f in figures if f not in measurable]
    progress.say(
        f"{len(measurable)} figure(s) to measure ({', '.join('Fig ' + f.key for f in measurable) or 'none'})"
        + (
            f"; not measurable here: {', '.join(skipped)} ({'; '.join(f'{k}: {v}' for k, v in gaps.items())})"
            if skipped
            else ""
        )
    )
    progress.say(
        f"profile {profile.name}, isolation {isolation} ({why}); expected about {plan.clock_text(sum(expected.values()))} (min:s) on this host: "
        + ", ".join(f"{k} {plan.clock_text(v)}" for k, v in expected.items())
    )


def _entry(figure: plan.Figure, gaps: dict, results: dict, ctx: runs.Context) -> dict:
    reason = plan.unmet(figure, gaps)
    if reason:
        return report.figure_entry(figure, rules.not_measurable(reason), results, runs.platform_label(ctx), ctx.out, {})
    verdict = plan.judge(figure, results)
    beside = None
    found = (results.get("slowdown") or {}).get("by_isolation") or {}
    if figure.key in ("15", "16") and "process" in found and ctx.isolation != "process":
        other = plan.judge(figure, results, "process")
        beside = {"platform": found["process"]["platform"], **other.to_json()}
    return report.figure_entry(
        figure, verdict, results, runs.platform_label(ctx), ctx.out, report.comparison_items(), beside
    )
