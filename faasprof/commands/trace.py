"""``faasprof trace sample|calibrate``: representative samples of the Azure Functions traces as workloads.

``faasprof trace sample DAY_DIR_OR_FILES -n N [--seed S] [--minutes A-B] [--scale-to RATE |
--fraction F] [--map spin|nearest] --out DIR`` reads a day of the 2019 release (a folder holding
its three files, or the files; InVitro's samples and the 2021 per-invocation trace too), picks N
of its functions by the seeded nested order of ``faasprof.workload.trace_sample``, prints the
sample's distance from the whole (Wasserstein and Kolmogorov-Smirnov, per feature), scales the
rates when asked (to RATE invocations/s in all, or to F times spin's capacity measured on this
host and platform by ``faasprof capacity``) and says what that does, maps each function onto this
host (``faasprof.workload.trace_workload``, with the calibration of
``faasprof.experiments.trace_calibration``), and writes DIR/workload.json with the sampled trace
files beside it: ``faasprof validate|plan|run DIR/workload.json`` take it.

The calibration is measured through the platform the workload will run on (the connection flags,
as ``faasprof run`` resolves them: ``--apihost``, ``~/.wskprops``, the platform of ``faasprof
local start``, else the embedded localwhisk) and stored per host and platform.

``faasprof trace calibrate [--catalogue]`` measures this host's calibration on that platform again
and says where it is stored.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from faasprof.errors import ConfigError
from faasprof.experiments import capacity_store
from faasprof.experiments.capacity_store import platform_identity
from faasprof.experiments.trace_calibration import calibrate, calibration_path, current_calibration
from faasprof.platforms.openwhisk.connection import Connection, add_connection_arguments, resolve_connection
from faasprof.progress import Progress
from faasprof.workload.azure_files import find_day
from faasprof.workload.trace_sample import distances, load_population, sample_order, sampled_counts, scale_effect
from faasprof.workload.trace_workload import Mapping, SampleSpec, write_sample


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="trace_command", metavar="ACTION", required=True)
    sample = sub.add_parser("sample", help="write a workload of N representative functions of a trace day")
    sample.add_argument("day", nargs="+", metavar="DAY_DIR_OR_FILES", help="a day's folder, or its trace files")
    sample.add_argument("-n", type=int, required=True, help="how many functions")
    sample.add_argument("--seed", type=int, default=0, help="the order's seed (same seed: nested samples)")
    sample.add_argument("--minutes", metavar="A-B", help="the window, by the files' minute labels (default: all)")
    sample.add_argument(
        "--warmup-minutes", type=int, default=1, help="trace minutes before A run as warm-up (default 1)"
    )
    scale = sample.add_mutually_exclusive_group()
    scale.add_argument("--scale-to", type=float, metavar="RATE", help="scale the rates to RATE invocations/s in all")
    scale.add_argument(
        "--fraction",
        type=float,
        metavar="F",
        help="scale the rates to F x spin's capacity on this host (faasprof capacity)",
    )
    sample.add_argument("--map", choices=[m.value for m in Mapping], default="spin", help="how functions are mapped")
    sample.add_argument(
        "--spread", choices=["uniform", "equidistant"], default="uniform", help="arrivals within a minute"
    )
    sample.add_argument(
        "--no-alloc",
        action="store_true",
        help="spin allocates nothing (else the app's average memory, with the action's limit above it)",
    )
    sample.add_argument(
        "--recalibrate", action="store_true", help="measure this host's calibration on the platform again first"
    )
    sample.add_argument("--name", default="trace_sample", help="the workload's test_name")
    sample.add_argument("--out", required=True, metavar="DIR", help="a new folder for the workload and its trace files")
    _platform_arguments(sample)
    cal = sub.add_parser("calibrate", help="measure how long spin and the catalogue take on this host and platform")
    cal.add_argument("--catalogue", action="store_true", help="also the catalogue's Python functions (nearest mapping)")
    _platform_arguments(cal)


def _platform_arguments(parser: argparse.ArgumentParser) -> None:
    """Where the calibration is measured: the platform the workload will run on."""
    parser.add_argument(
        "--isolation",
        choices=("auto", "cgroup", "rlimit", "docker"),
        help="embedded localwhisk: the sandboxes the run will use (default auto)",
    )
    add_connection_arguments(parser)


def _platform(args: argparse.Namespace) -> tuple[Connection | None, dict | None]:
    connection = resolve_connection(args, None, origin=f"faasprof trace {args.trace_command}")
    settings = {"isolation": args.isolation} if args.isolation and connection is None else None
    return connection, settings


def _minutes(text: str | None) -> tuple[int, int] | None:
    if text is None:
        return None
    found = re.fullmatch(r"\s*(\d+)\s*-\s*(\d+)\s*", text)
    if not found or int(found.group(1)) > int(found.group(2)) or int(found.group(1)) < 1:
        raise ConfigError(f"--minutes {text!r}: give A-B, whole minutes with 1 <= A <= B (e.g. 600-629)")
    return int(found.group(1)), int(found.group(2))


def _check(args: argparse.Namespace) -> None:
    if args.n < 1:
        raise ConfigError(f"-n: must be at least 1 (got {args.n})")
    if args.seed < 0:
        raise ConfigError(f"--seed: must be >= 0 (got {args.seed})")
    if args.warmup_minutes < 0:
        raise ConfigError(f"--warmup-minutes: must be >= 0 (got {args.warmup_minutes})")
    for flag, value in (("--scale-to", args.scale_to), ("--fraction", args.fraction)):
        if value is not None and not value > 0:
            raise ConfigError(f"{flag}: must be > 0 (got {value:g})")
    if Path(args.out).exists():
        raise ConfigError(f"--out {args.out}: already exists; name a new folder (nothing is overwritten)")


def _spin_capacity_rps() -> float:
    store_key = capacity_store.key(
        capacity_store.host_identity(), capacity_store.platform_identity(None, None), "spin", None
    )
    entry = capacity_store.lookup(store_key)
    if entry is None:
        raise ConfigError(
            "--fraction: spin's capacity on this host and the embedded localwhisk is not measured; "
            "run `faasprof capacity spin` first, or give --scale-to RATE"
        )
    return float(entry["capacity_rps"])


def sample_main(args: argparse.Namespace) -> int:
    _check(args)
    connection, settings = _platform(args)  # a bad connection flag is one line before any work
    progress = Progress.to(sys.stderr)
    day = find_day(args.day)
    population = load_population(day, _minutes(args.minutes), args.seed)
    first, last = population.minutes
    labels_first = day.minute_labels[0] if day.minute_labels else 1
    warmup = min(args.warmup_minutes, first - labels_first)
    if warmup < args.warmup_minutes:
        progress.warn(f"--warmup-minutes {args.warmup_minutes}: only {warmup} minute(s) before {first} in the trace")
    chosen = sample_order(population, args.n, args.seed)
    if len(chosen) < args.n:
        progress.warn(f"-n {args.n}: the day has only {len(chosen)} functions with invocations in the window")
    counts = sampled_counts(population, chosen, (first - warmup, last))
    window_counts = [c[warmup:] for c in counts]
    total = sum(int(c.sum()) for c in window_counts)
    rate_per_s = total / (60.0 * population.window_minutes)
    target = args.scale_to if args.scale_to is not None else (
        args.fraction * _spin_capacity_rps() if args.fraction is not None else None
    )  # fmt: skip
    factor = target / rate_per_s if target is not None else 1.0
    effect = scale_effect(population, chosen, window_counts, factor) if target is not None else None
    calibration = current_calibration(
        Mapping(args.map) is Mapping.NEAREST, args.recalibrate, connection, settings, progress
    )
    found = distances(population, chosen)
    spec = SampleSpec(
        len(chosen),
        args.seed,
        (first, last),
        warmup,
        factor,
        Mapping(args.map),
        args.spread,
        args.name,
        not args.no_alloc,
    )
    path, mapped = write_sample(Path(args.out), population, chosen, counts, spec, calibration, found, effect)
    excluded = ", ".join(f"{n:,} {why}" for why, n in population.excluded.items()) or "none"
    print(
        f"{len(chosen)} of {len(population.keys):,} functions (left out: {excluded}); minutes {first}-{last} "
        f"(+{warmup} warm-up); {total:,} invocations, {rate_per_s:.2f}/s"
    )
    for name, distance in found.items():
        print(
            f"  {name:13s} Wasserstein {distance.wasserstein_log10:.4f} (log10 units)  KS {distance.ks_statistic:.4f}"
            f" (p {distance.ks_pvalue:.3g})"
        )
    if effect is not None:
        print("  " + effect.describe())
    errors = sorted(abs(f.error) for f in mapped)
    print(
        f"  mapping {args.map}: |error| median {errors[len(errors) // 2]:.1%}, max {errors[-1]:.1%} "
        f"(per function in the workload's notes and trace.functions; calibrated on {calibration.platform}, "
        f"{calibration_path(calibration.platform)}, {calibration.measured_utc})"
    )
    print(path)
    return 0


def main(args: argparse.Namespace) -> int:
    if args.trace_command == "calibrate":
        connection, settings = _platform(args)
        calibration = calibrate(args.catalogue, connection, settings, Progress.to(sys.stderr))
        print(
            f"spin on {calibration.platform}: executed = {calibration.spin_offset_ms:.3f} ms + "
            f"{calibration.spin_slope:.4f} x requested; {len(calibration.catalogue_median_ms)} catalogue function(s); "
            f"stored in {calibration_path(platform_identity(connection, settings))}"
        )
        return 0
    return sample_main(args)
