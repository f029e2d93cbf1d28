"""``faasprof analyze RUN_DIR``: fetch a run's activation records if needed, then analyze offline.

Writes ``RUN_DIR/analysis/`` (see ``faasprof.analyzer.analysis``), prints the failures first (when any), the
final outcome counts, then one line per instance and steady phase (mode, throughput, percentiles
of successful work) to stdout, warnings with advice to stderr, and the analysis
directory as the last line of stdout.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from faasprof import rundir
from faasprof.analyzer.analysis import analyze_run
from faasprof.analyzer.records import stderr_progress
from faasprof.analyzer.report import summary_lines
from faasprof.errors import FaasprofError, NotReadyError
from faasprof.localwhisk.run_records import StoreReadError, save_store_records, store_path
from faasprof.platforms import registry
from faasprof.platforms.openwhisk.connection import (
    NoAuthKeyError,
    add_connection_arguments,
    known_key_for,
    resolve_connection,
)
from faasprof.progress import Progress
from faasprof.rundir import tables
from faasprof.workload.schedule import build_schedule
from faasprof.workload.spec import workload_from_dict


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", metavar="RUN_DIR", help="a run directory (runs/<test>-<stamp>)")
    parser.add_argument(
        "--no-fetch", action="store_true", help="never contact the platform; analyze what the run directory holds"
    )
    parser.add_argument(
        "--no-plots", action="store_true", help="skip the PNG plots (faster; report.html then has only tables)"
    )
    add_connection_arguments(
        parser,
        default="none: the records saved in RUN_DIR; missing ones are fetched from the platform "
        "of the run's workload, ~/.wskprops or `faasprof local start`",
    )


def main(args: argparse.Namespace) -> int:
    run_dir = Path(args.run_dir)
    progress = Progress.to(sys.stderr)
    manifest = rundir.read_manifest(run_dir)
    # Read once, here: the torn-run tally is stated first, and the frame is what is analysed.
    invocations, completeness = tables.read_invocations_and_completeness(run_dir, manifest)
    if completeness.uncounted and _rederive_plan(run_dir, manifest, progress):
        del invocations
        invocations, completeness = tables.read_invocations_and_completeness(run_dir, manifest)
    torn = completeness.describe()
    if torn:
        # Stated before anything else: the rows present are not the plan.
        progress.warn(f"{run_dir}: {torn}; status {manifest.status}")
    try:
        _complete_records(run_dir, manifest, args, invocations, progress)
    except OSError as error:
        raise NotReadyError(
            f"analyze: cannot write the activation records into {run_dir} ({error.strerror or error}); the run's files "
            f"are as they were: free space there (or fix its permissions) and run faasprof analyze {run_dir} again"
        ) from None
    try:
        summary = analyze_run(run_dir, None, plots=not args.no_plots, progress=stderr_progress, invocations=invocations)
    except OSError as error:
        # The run's own files are only read; what failed is a file of analysis/, which is derived.
        # A full disk or a permission is the environment's (exit 3, as run's full --out at start).
        raise NotReadyError(
            f"analyze: cannot write {run_dir / rundir.ANALYSIS} ({error.strerror or error}); the run itself is unchanged: "
            f"free space there (or fix its permissions) and run faasprof analyze {run_dir} again"
        ) from None
    for warning in summary["warnings"]:
        progress.warn(warning)
    for line in summary_lines(summary):
        print(line)
    print(run_dir / rundir.ANALYSIS)
    return 0


def _complete_records(
    run_dir: Path, manifest: rundir.Manifest, args: argparse.Namespace, invocations: pd.DataFrame, progress: Progress
) -> None:
    """Save the records ``activations.jsonl`` lacks, from where the run's platform kept them."""
    platform_block = manifest.platform
    # A native run had no platform: its rows are the results, and there are no records to fetch.
    fetch = not args.no_fetch and not manifest.native_run
    if rundir.raw_records_gone(run_dir):
        return  # activations.parquet is the records: nothing is fetched or read over them
    if platform_block.get("embedded") and not args.apihost:
        # The embedded platform's store, kept in the run directory, is the source of its records:
        # read whenever activations.jsonl lacks one (a crash, a killed localwhisk, an older faasprof).
        _read_embedded_store(run_dir, platform_block, manifest, progress)
    elif fetch and (not rundir.has_records(run_dir) or args.apihost or (manifest.activations or {}).get("missing")):
        # Records are fetched when the run has none saved, when some were still missing when it
        # saved them (activations still running, a Ctrl-C), or (with explicit flags) to complete them.
        _fetch_from_platforms(run_dir, manifest, args, invocations, progress)


def _rederive_plan(run_dir: Path, manifest: rundir.Manifest, progress: Progress) -> bool:
    """A torn run without ``plan.bin`` (format 1): re-derive the plan from the manifest's resolved
    workload and seed (the schedule is a pure function of both), check it against the planned
    count, and save it so that every reader reconstructs the run. False when it cannot be done."""
    resolved = manifest.workload
    given = resolved.get("as_given")
    source = resolved.get("source")
    if not isinstance(given, dict):
        return False
    try:
        workload = workload_from_dict(
            given,
            origin=str(rundir.manifest_path(run_dir)),
            path=Path(source) if source else None,
            check_catalogue=False,
        )
        schedule = build_schedule(workload)
    except (FaasprofError, OSError, ValueError) as error:
        progress.warn(
            f"{run_dir}: cannot re-derive the plan from the manifest ({error}); the missing rows are only counted"
        )
        return False
    planned = manifest.planned
    if len(schedule) != planned:
        progress.warn(
            f"{run_dir}: the plan re-derived from the manifest has {len(schedule):,} invocations, the run planned {planned}; not used"
        )
        return False
    rundir.write_plan(run_dir, schedule.intended_ns, schedule.instance_idx, schedule.instance_names, schedule.functions)
    progress.say(
        f"re-derived the plan of {run_dir} from its manifest (workload and seed {workload.seed}) into {rundir.PLAN}"
    )
    return True


def _fetch_from_platforms(
    run_dir: Path, manifest: rundir.Manifest, args: argparse.Namespace, invocations: pd.DataFrame, progress: Progress
) -> None:
    """Save the run's records from each platform of its instances that keeps records (the platform
    registry, by the manifest's endpoints), waiting for activations still running (deadline: the
    actions' time limits). A platform reached through a connection is asked on the API host the run
    recorded (``_manifest_platform``) unless flags name another; without one it is skipped, with a
    line saying so. The manifest's ``activations`` then says what is still missing and why.

    A platform that cannot be asked (no key: the run's came from flags and was rightly not stored)
    fetches nothing: one line says so, and the records the run lacks are counted as missing with
    that reason; a run whose calls got no activation id (all refused, all timed out) needs none."""
    keepers = registry.record_keepers(manifest.instances)
    if not keepers:
        return  # a generic endpoint keeps no records to fetch
    lacking = _lacking_ids(run_dir, invocations)
    if not lacking:
        if not rundir.has_records(run_dir):
            rundir.write_records(rundir.activations_path(run_dir), [])
        progress.say(
            f"analyze: {run_dir} saved a record of every activation id its calls got (none lacks one): nothing to fetch"
        )
        return
    connection = None
    if any(cls.reached_by_connection for cls in keepers):
        try:
            connection = resolve_connection(
                args, _manifest_platform(manifest), origin=str(rundir.manifest_path(run_dir))
            )
        except NoAuthKeyError:
            _count_unfetchable(run_dir, manifest, invocations, lacking, progress)
            return
    for cls in keepers:
        if cls.reached_by_connection and connection is None:
            progress.say(
                f"analyze: {run_dir} has no {rundir.ACTIVATIONS} and no platform is configured to fetch them from "
                "(pass --apihost/--auth); analyzing client-side data only"
            )
            continue
        with cls.for_workload(None, connection) as keeper:
            report = keeper.fetch_records(run_dir, say=progress.say)
        rundir.update_manifest(run_dir, activations=report)
        _report(
            report,
            f"platform {connection.apihost}"
            if connection is not None and cls.reached_by_connection
            else f"the {cls.endpoint} platform",
            progress,
        )


def _lacking_ids(run_dir: Path, invocations: pd.DataFrame) -> set[str]:
    """The activation ids the run's calls got that ``activations.jsonl`` holds no record of."""
    ids = invocations["activation_id"].dropna()
    wanted = {str(value) for value in ids.tolist() if value}
    return wanted - rundir.read_record_ids(rundir.activations_path(run_dir)).keys()


def _count_unfetchable(
    run_dir: Path, manifest: rundir.Manifest, invocations: pd.DataFrame, lacking: set[str], progress: Progress
) -> None:
    """No key to ask the run's platform: nothing is fetched, and the records the run lacks are
    counted as missing, the reason in the manifest's ``activations`` block (a later analyze with
    ``--auth`` fetches them)."""
    apihost = _manifest_platform(manifest).get("apihost") or "the run's API host"
    why = f"no auth key to fetch records from {apihost}: pass --auth UUID:KEY (or set AUTH in ~/.wskprops)"
    path = rundir.activations_path(run_dir)
    if not path.exists():
        rundir.write_records(path, [])
    expected = len({str(value) for value in invocations["activation_id"].dropna().tolist() if value})
    report = {
        "source": str(apihost),
        "file": rundir.ACTIVATIONS,
        "expected": expected,
        "saved": expected - len(lacking),
        "missing": len(lacking),
        "interrupted": False,
        "missing_why": why,
        "missing_ids_sample": sorted(lacking)[:20],
    }
    rundir.update_manifest(run_dir, activations=report)
    progress.warn(
        f"analyze: {why}; analyzing what {run_dir} saved, its {len(lacking):,} records not saved counted as missing"
    )


def _manifest_platform(manifest: rundir.Manifest) -> dict:
    """The platform block to fetch from: the workload's, on the API host the run recorded (never
    whatever platform is configured now), with the key that a wskprops or ``local start`` holds for it."""
    workload = manifest.workload
    platform = dict((workload.get("as_given") or workload).get("platform") or {})
    if platform.get("auth") == "(redacted)":
        platform.pop("auth")  # the manifest never holds the key: flags or ~/.wskprops give it
    recorded = manifest.platform or {}
    if recorded.get("apihost") and not recorded.get("embedded") and not platform.get("apihost"):
        platform["apihost"] = recorded["apihost"]
        for key, value in known_key_for(recorded["apihost"]).items():
            platform.setdefault(key, value)
    return platform


def _read_embedded_store(run_dir: Path, platform_block: dict, manifest: rundir.Manifest, progress: Progress) -> None:
    """The records ``activations.jsonl`` lacks, read from the store the embedded platform left in the
    run directory (no server is started: it is a file); the manifest's ``activations`` block updated."""
    store = store_path(run_dir, platform_block.get("data_dir"))
    if not store.exists():
        progress.warn(
            f"{run_dir}: the embedded platform's store {store} is missing; analyzing without the records it held"
        )
        return
    saved = manifest.activations or {}
    if saved.get("missing") == 0 and _records_file_whole(run_dir, saved):
        return  # the run saved every record of its activations when it ended, and the file still holds them
    progress.say(f"reading activation records from the embedded platform's store {store}")
    exited = "embedded localwhisk exited during the run" in (manifest.status_reason or "")
    try:
        report = save_store_records(run_dir, store, platform_exit="exited during the run" if exited else None)
    except StoreReadError as error:
        progress.warn(f"{run_dir}: cannot read the embedded platform's store ({error}); analyzing without its records")
        return
    rundir.update_manifest(run_dir, activations=report)
    _report(report, f"the store {store}", progress)


def _records_file_whole(run_dir: Path, saved: dict) -> bool:
    """Whether ``activations.jsonl`` still holds as many whole lines as the run saved records, none
    cut short (a copy or a crash can cut it after the run: the store then gives the rest)."""
    if not rundir.has_records(run_dir):
        return False
    lines, cut = rundir.whole_lines(rundir.activations_path(run_dir))
    return not cut and lines >= int(saved.get("saved") or 0)


def _report(report: dict, source: str, progress: Progress) -> None:
    if report.get("torn_lines"):
        progress.warn(
            f"{rundir.ACTIVATIONS} held {report['torn_lines']:,} line(s) cut short or unreadable; every whole line was "
            f"kept, and the records they lacked were taken from {source}"
        )
    progress.say(
        f"saved {report.get('saved', 0):,} of {report.get('expected', 0):,} activation records from {source} to {rundir.ACTIVATIONS}"
    )
    if report.get("missing"):
        progress.warn(f"{report['missing']:,} activation records missing: {report['missing_why']}")
