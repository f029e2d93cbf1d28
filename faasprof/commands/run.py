"""``faasprof run CONFIG``: run a workload open-loop and write a run directory.

    faasprof run faasprof/workload_configs/json_dumps.json                 # on the embedded localwhisk
    faasprof run my.json --apihost https://172.17.0.1 --auth UUID:KEY --insecure --analyze

A workload may give a rate as ``{"capacity_fraction": F}`` (``faasprof.experiments.capacity_store``):
resolving it may need a capacity search, which runs workloads and analyses them, so this command
sits above the invoker: it resolves such rates (from the store, else by measuring), runs the
workload (``faasprof.invoker.run.execute``) and, with ``--analyze``, analyzes it (``faasprof.experiments.analyzed``).

Progress and warnings go to stderr; the last line of stdout is the run directory. Exit status:
0 the run completed and met its thresholds (``faasprof.invoker.verdict``: by default at least one
invocation succeeded and no more than half failed), 1 it was interrupted or aborted (analysed all
the same with ``--analyze``, else the command to analyse it is printed), or completed but failed
its thresholds (the run directory is still complete and readable; the manifest's ``verdict`` names
the dominant failure and its fix), 2 bad input, 3 the platform or a required collector is not
ready (nothing created; or, where the platform passed pre-flight but then never took a call, the
run stopped early with a row for every invocation). A platform that answered and then refused,
stalled or shed calls does not stop the run: those calls are its data.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from dataclasses import replace

from faasprof.errors import EXIT_FAILURE, EXIT_NOT_READY, ConfigError
from faasprof.experiments import capacity_store
from faasprof.experiments.analyzed import execute_analyzed
from faasprof.experiments.capacity import find_capacity
from faasprof.experiments.repeat import Order, check_repeats, run_repeats
from faasprof.functions.catalogue import lookup
from faasprof.invoker.dispatch import (
    DEFAULT_INTERRUPT_GRACE_S,
    DEFAULT_LATENESS_WARN_MS,
    DEFAULT_REALTIME_PRIORITY,
    DispatchOptions,
)
from faasprof.invoker.preflight import check_embedded, check_out_dir
from faasprof.invoker.selfcheck import parse_self_check
from faasprof.invoker.sender import DEFAULT_MAX_CONNECTIONS, DEFAULT_REQUEST_TIMEOUT_S
from faasprof.invoker.shards import AUTO_RATE_PER_PROCESS, resolve_processes
from faasprof.invoker.verdict import parse_thresholds
from faasprof.localwhisk.config import duration_ms
from faasprof.monitoring.allocation import cleanup_leftovers
from faasprof.monitoring.hosts import hosts_option
from faasprof.monitoring.hosts.inventory import DEFAULT_GROUP
from faasprof.platforms.openwhisk.connection import (
    LOCAL_PLATFORM_NAMES,
    add_connection_arguments,
    local_platform_name,
    read_local_props,
    resolve_connection,
)
from faasprof.progress import Progress
from faasprof.rundir import RunStatus, manifest_path, read_manifest
from faasprof.workload.access import add_access_arguments, grants_from
from faasprof.workload.shipped import find_workload
from faasprof.workload.spec import load_workload


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "config", metavar="CONFIG", help="workload JSON (FaaSProfiler's format, or with faasprof's extensions)"
    )
    parser.add_argument(
        "--out", metavar="DIR", default="runs", help="where the run directory is created (default: runs/)"
    )
    parser.add_argument("--seed", type=int, help="override the workload's random_seed")
    parser.add_argument(
        "--analyze",
        action="store_true",
        help="analyze the run when it ends, also when interrupted (same as `faasprof analyze RUN_DIR`)",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr (warnings are still printed)")
    parser.add_argument(
        "--threshold",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a success criterion (repeatable; overrides the workload's thresholds block): "
        "min_successes (default 1), min_successes_per_instance (default 1), max_failure_rate (default 0.5), "
        "max_no_record_rate_per_instance (default 0.5), max_client_latency_ms_p50, "
        "max_client_latency_ms_p99, max_lateness_ms_p99; a run that misses one exits 1",
    )
    parser.add_argument(
        "--self-check",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="the run's self-check (repeatable; overrides the workload's self_check block): behind_warn, "
        "behind_abort, failure_warn, failure_abort (shares 0..1, or none), warmup_s, min_intended; defaults warn at "
        "0.1, abort at 0.2 for a trace workload",
    )
    _add_repeat_arguments(parser)
    add_connection_arguments(parser)
    add_access_arguments(parser)
    _add_hosts_arguments(parser)
    _add_invoker_arguments(parser)
    _add_localwhisk_arguments(parser)


def _add_repeat_arguments(parser: argparse.ArgumentParser) -> None:
    repeat = parser.add_argument_group(
        "repeats (the run is the sample: faasprof compare FOLDER states an effect over runs)"
    )
    repeat.add_argument(
        "--repeats",
        type=int,
        default=1,
        metavar="N",
        help="run the workload N times (each --vs workload too) into one folder <out>/repeats-<time> (default 1)",
    )
    repeat.add_argument(
        "--vs",
        action="append",
        default=[],
        metavar="CONFIG",
        help="a workload to compare against, run interleaved with CONFIG (repeatable; needs --repeats)",
    )
    repeat.add_argument(
        "--order",
        choices=[o.value for o in Order],
        default=Order.ALTERNATE.value,
        help="alternate: A B A B …; shuffled: a random order seeded by --order-seed (default alternate)",
    )
    repeat.add_argument("--order-seed", type=int, default=1, metavar="N", help="the shuffled order's seed (default 1)")


def _add_hosts_arguments(parser: argparse.ArgumentParser) -> None:
    """The remote hosts the collectors also run on (the workload's monitoring.hosts)."""
    hosts = parser.add_argument_group("remote hosts (collectors where the sandboxes run)")
    hosts.add_argument(
        "--hosts",
        metavar="INVENTORY",
        help="also run the monitoring block's collectors on the hosts of this ansible INI inventory, over ssh "
        "(replaces the workload's monitoring.hosts); a host that cannot be reached stops the run before it starts",
    )
    hosts.add_argument(
        "--hosts-group",
        metavar="GROUP",
        help=f"the inventory's group of hosts to measure (default {DEFAULT_GROUP}, or monitoring.hosts.group)",
    )


def with_hosts(workload, args: argparse.Namespace):
    """``workload`` with ``--hosts``/``--hosts-group`` in its monitoring block (ConfigError for a
    group without an inventory)."""
    if args.hosts is None and args.hosts_group is None:
        return workload
    current = hosts_option(workload.monitoring, workload.origin, workload.path.parent if workload.path else None)
    if args.hosts is not None:
        inventory, group = os.path.abspath(args.hosts), args.hosts_group or DEFAULT_GROUP
    elif current is not None:
        inventory, group = str(current.inventory), args.hosts_group
    else:
        raise ConfigError("--hosts-group: no inventory to take the group from; pass --hosts INVENTORY as well")
    return replace(workload, monitoring={**workload.monitoring, "hosts": {"inventory": inventory, "group": group}})


def _add_invoker_arguments(parser: argparse.ArgumentParser) -> None:
    """How the invoker sends: lateness, connections, time limits, real-time priority, processes."""
    tuning = parser.add_argument_group("invoker")
    tuning.add_argument(
        "--lateness-warn-ms",
        type=float,
        default=DEFAULT_LATENESS_WARN_MS,
        metavar="MS",
        help=f"warn when the p99 lateness of a progress interval passes this (default {DEFAULT_LATENESS_WARN_MS:g}; 0 = never)",
    )
    tuning.add_argument(
        "--lateness-abort-ms",
        type=float,
        default=None,
        metavar="MS",
        help="stop the run (status aborted) when the p99 lateness of a progress interval passes this (default: never)",
    )
    tuning.add_argument(
        "--max-connections",
        type=int,
        default=DEFAULT_MAX_CONNECTIONS,
        metavar="N",
        help=f"keep-alive connections per host; requests beyond them wait for one (default {DEFAULT_MAX_CONNECTIONS})",
    )
    tuning.add_argument(
        "--request-timeout-s",
        type=float,
        default=DEFAULT_REQUEST_TIMEOUT_S,
        metavar="S",
        help=f"give up on a response after this long (outcome timeout; default {DEFAULT_REQUEST_TIMEOUT_S:g})",
    )
    # A flag without a value: with an optional value, `run --realtime CONFIG` read CONFIG as the priority.
    tuning.add_argument(
        "--realtime",
        action="store_true",
        help="send under SCHED_FIFO so other processes on the host cannot delay sends; "
        "needs root or CAP_SYS_NICE (see bench/bench_invoker.py for its effect)",
    )
    tuning.add_argument(
        "--realtime-priority",
        type=int,
        default=DEFAULT_REALTIME_PRIORITY,
        metavar="N",
        help=f"the SCHED_FIFO priority of --realtime, 1..99 (default {DEFAULT_REALTIME_PRIORITY})",
    )
    tuning.add_argument(
        "--send-processes",
        default="auto",
        metavar="N|auto",
        help="send from N processes on this host, the plan split between them by instance (a hot instance "
        f"alternating) and merged into one run directory; auto (the default): one per {AUTO_RATE_PER_PROCESS:,} invocations in "
        "the plan's busiest second, at most the cores; the manifest's invoker.send_processes_choice says "
        "why (see bench/bench_invoker.py --find-max)",
    )
    tuning.add_argument(
        "--interrupt-grace-s",
        type=float,
        default=DEFAULT_INTERRUPT_GRACE_S,
        metavar="S",
        help=f"after Ctrl-C, wait this long for responses in flight (default {DEFAULT_INTERRUPT_GRACE_S:g})",
    )


def _add_localwhisk_arguments(parser: argparse.ArgumentParser) -> None:
    """The embedded localwhisk's settings, when the run starts one."""
    local = parser.add_argument_group("embedded localwhisk (used when no platform is configured)")
    local.add_argument(
        "--user-memory",
        type=int,
        metavar="MB",
        help="memory budget of its container pool (default 4096, or platform.localwhisk.user_memory_mb)",
    )
    local.add_argument(
        "--pause-grace",
        type=duration_ms,
        metavar="DURATION",
        help="idle time before a warm sandbox is paused: 50, 50ms, 10s (default 50 ms, or platform.localwhisk.pause_grace_ms)",
    )
    local.add_argument(
        "--isolation",
        choices=("auto", "cgroup", "rlimit", "docker"),
        help="sandboxes as processes (auto/cgroup/rlimit) or Docker containers (docker); default auto, or platform.localwhisk.isolation",
    )


def dispatch_options(args: argparse.Namespace) -> DispatchOptions:
    """The dispatcher options of the flags, validated (ConfigError naming the flag)."""
    for flag, value, low in (
        ("--max-connections", args.max_connections, 1),
        ("--request-timeout-s", args.request_timeout_s, 0.001),
    ):
        if value < low:
            raise ConfigError(f"{flag}: must be at least {low:g} (got {value:g})")
    if not 1 <= args.realtime_priority <= 99:
        raise ConfigError(f"--realtime-priority: the SCHED_FIFO priority must be 1..99 (got {args.realtime_priority})")
    if args.lateness_abort_ms is not None and args.lateness_abort_ms <= 0:
        raise ConfigError(
            f"--lateness-abort-ms: must be > 0 (got {args.lateness_abort_ms:g}); leave it out to never abort"
        )
    processes = args.send_processes.strip().lower()
    if processes != "auto":
        processes = resolve_processes(processes, 0)  # a count: checked here (ConfigError, exit 2)
    return DispatchOptions(
        send_processes=processes,
        max_connections=args.max_connections,
        request_timeout_s=args.request_timeout_s,
        lateness_warn_ms=args.lateness_warn_ms if args.lateness_warn_ms and args.lateness_warn_ms > 0 else None,
        lateness_abort_ms=args.lateness_abort_ms,
        interrupt_grace_s=max(0.0, args.interrupt_grace_s),
        realtime_priority=args.realtime_priority if args.realtime else None,
        self_check=parse_self_check(args.self_check),
    )


def local_settings(args: argparse.Namespace, platform: dict) -> dict:
    """``start_embedded`` keyword arguments: the workload's platform.localwhisk, then the flags."""
    settings = dict((platform or {}).get("localwhisk") or {})
    if getattr(args, "user_memory", None) is not None:
        if args.user_memory < 128:
            raise ConfigError(f"--user-memory: must be at least 128 MB (got {args.user_memory})")
        settings["user_memory_mb"] = args.user_memory
    if getattr(args, "pause_grace", None) is not None:
        if args.pause_grace < 0:
            raise ConfigError(f"--pause-grace: must be >= 0 ms (got {args.pause_grace})")
        settings["pause_grace_ms"] = args.pause_grace
    if getattr(args, "isolation", None) is not None:
        settings["isolation"] = args.isolation
    return settings


def _restore_leftover_allocations() -> None:
    """A sweep that crashed may have left its cache allocation behind: undo it before measuring."""
    try:
        messages = cleanup_leftovers()
    except Exception as error:  # a measurement must not fail for this; the doctor reports it
        messages = [f"warning: could not check for leftover cache allocations ({error})"]
    for line in messages:
        print(line, file=sys.stderr)


def install_function_packages(workload, progress: Progress) -> None:
    """The npm packages of the catalogue functions the workload invokes, installed into the cache
    on first use: said here, before the run starts, rather than silently while it deploys. Without
    npm nothing is installed; the deploy says so if a function needs it."""
    if shutil.which("npm") is None:
        return
    for name in dict.fromkeys(instance.function for instance in workload.instances if instance.source is None):
        entry = lookup(name)
        if entry is not None and entry.packaging_missing():
            entry.install_packages(progress)


def main(args: argparse.Namespace) -> int:
    if args.repeats != 1 or args.vs:
        return main_repeated(args)
    return run_once(args)


def main_repeated(args: argparse.Namespace) -> int:
    """``--repeats N`` (``faasprof.experiments.repeat``): each run is ``run_once``; the folder is
    the last line of stdout."""
    configs = [str(find_workload(config)) for config in (args.config, *args.vs)]  # bare names: their files
    check_repeats(args.repeats, configs)
    for config in configs:
        load_workload(config, seed=args.seed, grants=grants_from(args))  # bad input in any, before the first run
    progress = Progress.to(sys.stderr, quiet=args.quiet)

    def run_one(config: str, folder) -> int:
        return run_once(argparse.Namespace(**{**vars(args), "config": config, "out": str(folder)}))

    result = run_repeats(
        configs, args.repeats, args.out, run_one, Order(args.order), args.order_seed, progress=progress
    )
    print(
        f"repeats: {result.runs} runs in {result.folder}; compare them: faasprof compare {result.folder}",
        file=sys.stderr,
    )
    print(result.folder, flush=True)
    return result.exit_status


def run_once(args: argparse.Namespace) -> int:
    args.config = str(find_workload(args.config))  # a shipped workload's bare name: its file
    workload = with_hosts(load_workload(args.config, seed=args.seed, grants=grants_from(args)), args)
    progress = Progress.to(sys.stderr, quiet=args.quiet)
    if workload.needs_capacity():
        connection = resolve_connection(args, workload.platform, origin=args.config)
        settings = local_settings(args, workload.platform)
        workload = capacity_store.resolve_workload(
            workload, connection, settings, args.out, measure=find_capacity, progress=progress
        )
    _restore_leftover_allocations()
    options = dispatch_options(args)
    thresholds = parse_thresholds(args.threshold)
    check_out_dir(args.out)
    install_function_packages(workload, progress)
    connection = resolve_connection(args, workload.platform, origin=args.config)
    settings = local_settings(args, workload.platform)
    if connection is None:
        check_embedded(workload, settings)  # what the embedded localwhisk would refuse, before it starts
    # OpenWhisk standalone keeps its records in memory until `local stop`: the run saves them.
    save_records = False
    if connection is not None and connection.source == "local":
        started = local_platform_name(read_local_props())
        save_records = started == LOCAL_PLATFORM_NAMES["openwhisk"]
        print(
            f"using the {started} of `faasprof local start` at {connection.apihost} (`faasprof local stop` to run on an embedded localwhisk)",
            file=sys.stderr,
        )
    if connection is not None and (
        args.user_memory is not None or args.pause_grace is not None or args.isolation is not None
    ):
        print(
            f"warning: --user-memory/--pause-grace/--isolation only apply to the embedded localwhisk; {connection.apihost} is used",
            file=sys.stderr,
        )
    elif connection is not None and connection.source == "local" and settings:
        print(
            f"warning: {args.config}: platform.localwhisk only applies to the embedded localwhisk; the running one at "
            f"{connection.apihost} keeps the settings it was started with",
            file=sys.stderr,
        )
    run_dir = execute_analyzed(
        workload,
        args.out,
        connection=connection,
        local_settings=settings,
        progress=progress,
        analyze=args.analyze,
        save_records=save_records,
        options=options,
        thresholds=thresholds,
    )
    manifest = read_manifest(run_dir)
    status = manifest.status
    print(run_dir, flush=True)
    if status != RunStatus.COMPLETE:
        # What it sent is measured all the same: the analysis ends its phases where it stopped.
        suggestion = "" if args.analyze else f"; analyze what it sent: faasprof analyze {run_dir}"
        print(f"run {status}: {manifest.status_reason} (see {manifest_path(run_dir)}){suggestion}", file=sys.stderr)
        # Nothing listening is the environment's fault, as when pre-flight finds it.
        return EXIT_NOT_READY if (manifest.invoker or {}).get("never_reached") else EXIT_FAILURE
    verdict = manifest.verdict or {}
    if verdict.get("passed") is False:
        # Without --quiet the run has already said which threshold failed, and why.
        what = "failed its thresholds" if not args.quiet else verdict["message"]
        print(f"run complete but {what} (see {manifest_path(run_dir)}, verdict)", file=sys.stderr)
        return 1
    if manifest.analysis_error:
        return 1
    return 0
