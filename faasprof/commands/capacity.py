"""``faasprof capacity FUNCTION``: find the highest rate at which a function stays balanced.

Steps the rate up, then bisects, with short runs (see ``faasprof.experiments.capacity``; its
``SEARCH_DEFAULTS`` are the options' defaults, the same search ``faasprof run`` makes for a capacity
fraction); every run directory is kept in ``<--out>/capacity/`` for ``faasprof compare``. Progress
(one line per probe) goes to stderr; stdout gets the capacity with its interval ("59 ± 6/s, 7
probes": the midpoint between the highest rate kept up and the lowest over-invoked, repeats
included; "≥ N/s" when the search never found the function over-invoked), the host's 1-minute
load before and at its peak during the search, the host's contention (the CPUs other work took,
where that was half a CPU or more), where it was stored, the probes (each with the load as it
ended and the other work's CPUs while it ran), and the result file as the last line. These lines
are ``capacity_store.search_lines``: ``faasprof run``'s own search prints the same (on stderr).
"""

from __future__ import annotations

import argparse
import json
import sys

from faasprof.errors import ConfigError
from faasprof.experiments import capacity_store
from faasprof.experiments.capacity import SEARCH_DEFAULTS, find_capacity
from faasprof.platforms.openwhisk.connection import Connection, add_connection_arguments, resolve_connection
from faasprof.progress import Progress
from faasprof.workload.arrivals import rated_distributions


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "function",
        metavar="FUNCTION",
        help="action name (a catalogue function such as json_dumps, or an action already deployed)",
    )
    parser.add_argument(
        "--memory", type=int, metavar="MB", help="memory limit to deploy the function with (default: its manifest's)"
    )
    parser.add_argument(
        "--duration",
        type=float,
        default=SEARCH_DEFAULTS["duration_s"],
        metavar="S",
        help="length of each probe run (default %(default)g)",
    )
    parser.add_argument(
        "--out", default="runs", metavar="DIR", help="the probe runs and the result go to DIR/capacity/ (default runs/)"
    )
    parser.add_argument(
        "--start-rate",
        type=float,
        default=SEARCH_DEFAULTS["start_rate"],
        metavar="RPS",
        help="first rate (default %(default)g/s)",
    )
    parser.add_argument(
        "--max-rate",
        type=float,
        default=SEARCH_DEFAULTS["max_rate"],
        metavar="RPS",
        help="the ceiling: highest rate tried; kept up there, the capacity is a lower bound (default %(default)g/s)",
    )
    parser.add_argument(
        "--factor",
        type=float,
        default=SEARCH_DEFAULTS["factor"],
        help="step factor while the function keeps up (default %(default)g)",
    )
    parser.add_argument(
        "--tolerance",
        type=float,
        default=SEARCH_DEFAULTS["tolerance"],
        help="stop bisecting when the bounds are this close, relative (default %(default)g)",
    )
    parser.add_argument(
        "--max-runs",
        type=int,
        default=SEARCH_DEFAULTS["max_runs"],
        metavar="N",
        help="at most this many probe runs (default %(default)d)",
    )
    parser.add_argument(
        "--distribution",
        choices=rated_distributions(),
        default="Uniform",
        help="arrival process of the probes, one driven by a rate (default Uniform)",
    )
    parser.add_argument("--params", metavar="JSON", help="parameters passed to every invocation, as a JSON object")
    parser.add_argument("--seed", type=int, default=1, help="random seed of the probes (default 1)")
    parser.add_argument(
        "--repeats",
        type=int,
        default=SEARCH_DEFAULTS["repeats"],
        metavar="N",
        help="probe each end of the bracket up to N more times, until two probes agree (default %(default)d)",
    )
    parser.add_argument(
        "--budget-s",
        type=float,
        default=SEARCH_DEFAULTS["budget_s"],
        metavar="S",
        help="once a rate kept up below one that did not, start no probe that would end after S seconds "
        "of search; the interval is then the bracket as it stood (default %(default)g; 0: no budget)",
    )
    parser.add_argument(
        "--cooldown",
        type=float,
        default=SEARCH_DEFAULTS["cooldown_s"],
        metavar="S",
        help="pause between probes (default %(default)g)",
    )
    parser.add_argument(
        "--pause-grace",
        type=float,
        metavar="MS",
        help="embedded localwhisk: idle time before a sandbox is paused (default 50)",
    )
    parser.add_argument(
        "--user-memory", type=int, metavar="MB", help="embedded localwhisk: memory budget of the pool (default 4096)"
    )
    parser.add_argument(
        "--isolation",
        choices=("auto", "cgroup", "rlimit", "docker"),
        help="embedded localwhisk: sandboxes as processes (auto/cgroup/rlimit) or Docker containers (docker); default auto",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    add_connection_arguments(parser)


def main(args: argparse.Namespace) -> int:
    params = _checked_options(args)
    connection = resolve_connection(args, None, origin="faasprof capacity")
    settings = {
        key: value
        for key, value in (
            ("pause_grace_ms", args.pause_grace),
            ("user_memory_mb", args.user_memory),
            ("isolation", args.isolation),
        )
        if value is not None
    }
    result = find_capacity(
        args.function,
        out_dir=args.out,
        duration_s=args.duration,
        memory_mb=args.memory,
        connection=connection,
        local_settings=settings,
        seed=args.seed,
        distribution=args.distribution,
        params=params,
        start_rate=args.start_rate,
        max_rate=args.max_rate,
        factor=args.factor,
        tolerance=args.tolerance,
        max_runs=args.max_runs,
        cooldown_s=args.cooldown,
        repeats=args.repeats,
        budget_s=args.budget_s or None,
        progress=Progress.to(sys.stderr, quiet=args.quiet),
    )
    capacity = result["capacity_rps"]
    entry = _store(args, result, connection, settings) if capacity is not None else None  # for workloads' fractions
    for line in capacity_store.search_lines(args.function, result, entry):
        print(line)
    return 0 if capacity is not None else 1


def _checked_options(args: argparse.Namespace) -> dict | None:
    """The search options checked, one line for the first wrong one; the ``--params`` object (or None)."""
    if args.duration <= 0:
        raise ConfigError(f"--duration: must be > 0 s (got {args.duration:g})")
    if args.repeats < 0:
        raise ConfigError(f"--repeats: must be >= 0 (got {args.repeats})")
    if args.max_runs < 1:
        raise ConfigError(f"--max-runs: must be at least 1 (got {args.max_runs})")
    if not args.params:
        return None
    try:
        params = json.loads(args.params)
    except json.JSONDecodeError as error:
        raise ConfigError(
            f"--params: not valid JSON ({error.msg}); pass an object such as '{{\"service_ms\": 5}}'"
        ) from None
    if not isinstance(params, dict):
        raise ConfigError("--params: must be a JSON object such as '{\"service_ms\": 5}'")
    return params


def _store(args: argparse.Namespace, result: dict, connection: Connection | None, settings: dict) -> dict:
    """The capacity found, stored for this host and platform: the store's entry."""
    store_key = capacity_store.key(
        capacity_store.host_identity(),
        capacity_store.platform_identity(connection, settings),
        args.function,
        args.memory,
    )
    return capacity_store.record(store_key, result)
