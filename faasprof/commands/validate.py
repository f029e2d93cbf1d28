"""``faasprof validate CONFIG...``: check workloads and report every problem, one line each.

Everything ``run`` would refuse is caught here, in one pass per file: syntax and encoding,
duplicate keys, the schema, the files a workload names, sizes beyond what a machine can plan,
and what the platform would refuse. The platform is the one ``run`` would use: with none named
(no --apihost, platform block or ~/.wskprops) the embedded localwhisk is checked without starting
it, by the very checks ``run`` makes before starting it (``faasprof.invoker.preflight``: its limits, and a
function outside the catalogue without a ``source`` is refused with ``run``'s line, since it starts
empty); with a platform named, it is asked (``GET /`` and each action) and a missing action is an
error listing the deploy commands (exit 3: the file is right, the platform is not ready for it),
unless ``--offline``, which checks the file alone (functions outside the catalogue are warnings).
A rate given as a fraction of a capacity is shown resolved from the stored capacity, or as not
measured yet (``run`` measures it first). ``faasprof/workload_configs/schema.json`` (the JSON Schema) is
recognised and skipped.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

from faasprof.errors import EXIT_BAD_INPUT, EXIT_NOT_READY, ConfigError, FaasprofError
from faasprof.experiments import capacity_store
from faasprof.invoker.preflight import embedded_limits, embedded_missing, platform_check, stage_sources
from faasprof.platforms import registry
from faasprof.platforms.openwhisk.connection import add_connection_arguments, resolve_connection
from faasprof.workload.access import add_access_arguments, grants_from, reach_lines
from faasprof.workload.jsonread import is_schema_document, parse_workload_file
from faasprof.workload.schedule import empty_plan_problem
from faasprof.workload.shipped import find_workload
from faasprof.workload.spec import workload_from_dict


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("configs", nargs="+", metavar="CONFIG", help="workload JSON file(s)")
    parser.add_argument("--quiet", "-q", action="store_true", help="print nothing for valid workloads")
    parser.add_argument(
        "--offline",
        action="store_true",
        help="contact no platform: check the files alone (functions outside the catalogue are warnings)",
    )
    add_connection_arguments(parser)
    add_access_arguments(parser)


@dataclass(frozen=True)
class _GivenInstance:
    name: str
    function: str
    source: object
    endpoint: object  # as the file gives it: a platform serves the instance only when it is its endpoint


@dataclass(frozen=True)
class _GivenWorkload:
    origin: str
    path: Path | None
    instances: list[_GivenInstance]


def _as_given(data: object, config: str) -> _GivenWorkload:
    """The instances of a workload that did not validate, as far as their names and functions go:
    enough for ``embedded_missing`` to tell which functions the embedded platform cannot have."""
    raw = data.get("instances") if isinstance(data, dict) else None
    default_endpoint = (
        data.get("endpoint", registry.DEFAULT_ENDPOINT) if isinstance(data, dict) else registry.DEFAULT_ENDPOINT
    )
    instances = [
        _GivenInstance(
            name=name,
            function=spec["application"],
            source=spec.get("source"),
            endpoint=spec.get("endpoint", default_endpoint),
        )
        for name, spec in (raw.items() if isinstance(raw, dict) else ())
        if isinstance(spec, dict) and isinstance(spec.get("application"), str) and spec["application"].strip()
    ]
    return _GivenWorkload(origin=config, path=Path(config).resolve(), instances=instances)


def _check(config: str, args: argparse.Namespace) -> tuple[list[str], list[str], list[str], str | None]:
    """(problems, missing actions, warnings, ok-line) of one file; raises FaasprofError for what stops the check."""
    config = str(find_workload(config))  # a shipped workload's bare name: its file
    parsed = parse_workload_file(config)
    if is_schema_document(parsed.data):
        return [], [], [], f"{config}: skipped (the JSON Schema of workloads, not a workload)"
    data = parsed.data
    platform_block = data.get("platform") if isinstance(data, dict) else None
    if not isinstance(platform_block, dict):
        platform_block = {}
    connection = None
    connection_problems: list[str] = []
    if not args.offline:
        try:
            connection = resolve_connection(args, platform_block, origin=config)
        except ConfigError as error:
            connection_problems = error.problems  # reported with the file's other problems
    limits = (
        embedded_limits(platform_block) if connection is None and not args.offline and not connection_problems else None
    )
    try:
        workload = workload_from_dict(
            data,
            origin=config,
            path=Path(config).resolve(),
            parse_problems=parsed.problems,
            non_finite=parsed.non_finite,
            limits=limits,
            grants=grants_from(args),
        )
    except ConfigError as error:
        # Everything at once: the functions the embedded platform cannot have are told beside the
        # file's other problems, not only once those are fixed.
        unknown = embedded_missing(_as_given(data, config)) if limits is not None else []
        lines = error.problems + [line for line in connection_problems + unknown if line not in error.problems]
        said = error.warnings
        combined = ConfigError(
            lines[0],
            problems=lines,
            warnings=[w for w in said if "in the function catalogue" not in w] if limits is not None else said,
        )  # told as problems
        raise combined from None
    if connection_problems:
        raise ConfigError(connection_problems[0], problems=connection_problems)
    problems: list[str] = []
    missing: list[str] = []
    warnings = list(workload.warnings)
    if not args.offline:
        # The platform answers what the catalogue could only guess: no warning, a definite answer
        # (the embedded localwhisk starts empty: run refuses what it cannot deploy, and so does this).
        problems, missing = (
            platform_check(workload, connection) if connection is not None else (embedded_missing(workload), [])
        )
        warnings = [w for w in warnings if "in the function catalogue" not in w]
    if not args.offline and not problems:
        # A function given by "source" is staged as run stages it (its requirements installed, once
        # per change, into the cache): a requirement that cannot install is told here, not by run.
        try:
            stage_sources(workload)
        except ConfigError as error:
            problems.extend(error.problems)
    capacities = {}
    if workload.needs_capacity():
        identity = (
            connection if not args.offline else resolve_connection(args, platform_block, origin=config)
        )  # reads files only
        capacities = capacity_store.stored_capacities(workload, identity, platform_block.get("localwhisk"))
    resolved = workload.with_capacities(capacities, partial=True) if capacities else workload
    empty = empty_plan_problem(resolved)
    if empty:
        problems.append(empty)
        warnings = [w for w in warnings if "every instance is muted" not in w]  # said once, as the problem
    count = len(workload.instances)
    where = (
        "offline"
        if args.offline
        else ("for the embedded localwhisk" if connection is None else f"on {connection.apihost}")
    )
    ok_line = f"{config}: ok ({count} instance{'s' if count != 1 else ''}, {workload.duration_s:g} s; checked {where})"
    details = [
        *capacity_store.describe_fractions(workload, capacities),
        *reach_lines(workload.reach()),  # what it would read and where it would send, as allowed
    ]
    return (problems, missing, warnings, "\n".join([ok_line, *(f"  {line}" for line in details)]))


def main(args: argparse.Namespace) -> int:
    status = 0
    for config in args.configs:
        try:
            problems, missing, warnings, ok_line = _check(config, args)
        except ConfigError as error:
            for line in getattr(error, "warnings", ()):
                print(f"warning: {line}", file=sys.stderr)
            for line in error.problems:
                print(line, file=sys.stderr)
            status = max(status, EXIT_BAD_INPUT)
            continue
        except FaasprofError as error:
            print(f"{config}: {error}", file=sys.stderr)
            status = max(status, error.exit_code)
            continue
        for line in warnings:
            print(f"warning: {line}", file=sys.stderr)
        for line in problems + missing:
            print(line, file=sys.stderr)
        if problems:
            status = max(status, EXIT_BAD_INPUT)
        elif missing:
            status = max(status, EXIT_NOT_READY)  # the file is right; the platform lacks actions
        elif not args.quiet:
            print(ok_line)
    return status
