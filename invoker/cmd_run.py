"""``faasprof run CONFIG``: its arguments and settings. The command itself, its examples and its
exit statuses are ``experiments.cmd_run``'s (it resolves capacity-relative rates first)."""

from __future__ import annotations

import argparse

from faasprof.errors import ConfigError
from platforms.openwhisk.connection import add_connection_arguments
from invoker.dispatch import DEFAULT_INTERRUPT_GRACE_S, DEFAULT_LATENESS_WARN_MS, DEFAULT_REALTIME_PRIORITY, DispatchOptions
from invoker.sender import DEFAULT_MAX_CONNECTIONS, DEFAULT_REQUEST_TIMEOUT_S
from invoker.shards import AUTO_RATE_PER_PROCESS, resolve_processes
from localwhisk.config import duration_ms


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("config", metavar="CONFIG", help="workload JSON (FaaSProfiler's format, or with faasprof's extensions)")
    parser.add_argument("--out", metavar="DIR", default="runs", help="where the run directory is created (default: runs/)")
    parser.add_argument("--seed", type=int, help="override the workload's random_seed")
    parser.add_argument("--analyze", action="store_true", help="analyze the run when it ends, also when interrupted (same as `faasprof analyze RUN_DIR`)")
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr (warnings are still printed)")
    parser.add_argument("--threshold", action="append", default=[], metavar="NAME=VALUE",
                        help="a success criterion (repeatable; overrides the workload's thresholds block): "
                             "min_successes (default 1), min_successes_per_instance (default 1), max_failure_rate (default 0.5), max_client_latency_ms_p50, "
                             "max_client_latency_ms_p99, max_lateness_ms_p99; a run that misses one exits 1")
    add_connection_arguments(parser)
    tuning = parser.add_argument_group("invoker")
    tuning.add_argument("--lateness-warn-ms", type=float, default=DEFAULT_LATENESS_WARN_MS, metavar="MS",
                        help=f"warn when the p99 lateness of a progress interval passes this (default {DEFAULT_LATENESS_WARN_MS:g}; 0 = never)")
    tuning.add_argument("--lateness-abort-ms", type=float, default=None, metavar="MS",
                        help="stop the run (status aborted) when the p99 lateness of a progress interval passes this (default: never)")
    tuning.add_argument("--max-connections", type=int, default=DEFAULT_MAX_CONNECTIONS, metavar="N",
                        help=f"keep-alive connections per host; requests beyond them wait for one (default {DEFAULT_MAX_CONNECTIONS})")
    tuning.add_argument("--request-timeout-s", type=float, default=DEFAULT_REQUEST_TIMEOUT_S, metavar="S",
                        help=f"give up on a response after this long (outcome timeout; default {DEFAULT_REQUEST_TIMEOUT_S:g})")
    # A flag without a value: with an optional value, `run --realtime CONFIG` read CONFIG as the priority.
    tuning.add_argument("--realtime", action="store_true",
                        help="send under SCHED_FIFO so other processes on the host cannot delay sends; "
                             "needs root or CAP_SYS_NICE (see bench/bench_invoker.py for its effect)")
    tuning.add_argument("--realtime-priority", type=int, default=DEFAULT_REALTIME_PRIORITY, metavar="N",
                        help=f"the SCHED_FIFO priority of --realtime, 1..99 (default {DEFAULT_REALTIME_PRIORITY})")
    tuning.add_argument("--send-processes", default="auto", metavar="N|auto",
                        help="send from N processes on this host, the plan split between them by instance (a hot instance "
                             f"alternating) and merged into one run directory; auto (the default): one per {AUTO_RATE_PER_PROCESS:,} invocations in "
                             "the plan's busiest second, at most the cores; the manifest's invoker.send_processes_choice says "
                             "why (see bench/bench_invoker.py --find-max)")
    tuning.add_argument("--interrupt-grace-s", type=float, default=DEFAULT_INTERRUPT_GRACE_S, metavar="S",
                        help=f"after Ctrl-C, wait this long for responses in flight (default {DEFAULT_INTERRUPT_GRACE_S:g})")
    local = parser.add_argument_group("embedded localwhisk (used when no platform is configured)")
    local.add_argument("--user-memory", type=int, metavar="MB", help="memory budget of its container pool (default 4096, or platform.localwhisk.user_memory_mb)")
    local.add_argument("--pause-grace", type=duration_ms, metavar="DURATION", help="idle time before a warm sandbox is paused: 50, 50ms, 10s (default 50 ms, or platform.localwhisk.pause_grace_ms)")
    local.add_argument("--isolation", choices=("auto", "cgroup", "rlimit", "docker"),
                       help="sandboxes as processes (auto/cgroup/rlimit) or Docker containers (docker); default auto, or platform.localwhisk.isolation")


def dispatch_options(args: argparse.Namespace) -> DispatchOptions:
    """The dispatcher options of the flags, validated (ConfigError naming the flag)."""
    for flag, value, low in (("--max-connections", args.max_connections, 1), ("--request-timeout-s", args.request_timeout_s, 0.001)):
        if value < low:
            raise ConfigError(f"{flag}: must be at least {low:g} (got {value:g})")
    if not 1 <= args.realtime_priority <= 99:
        raise ConfigError(f"--realtime-priority: the SCHED_FIFO priority must be 1..99 (got {args.realtime_priority})")
    if args.lateness_abort_ms is not None and args.lateness_abort_ms <= 0:
        raise ConfigError(f"--lateness-abort-ms: must be > 0 (got {args.lateness_abort_ms:g}); leave it out to never abort")
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
