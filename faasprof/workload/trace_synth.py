"""Made-up days in the Azure Functions 2019 layout, seeded, for tests and benchmarks.

Nothing is downloaded: the three files of a day (``invocations_per_function_md.anon.d01.csv``,
``function_durations_percentiles.anon.d01.csv``, ``app_memory_percentiles.anon.d01.csv``) are
written with the shapes the paper reports (rates spanning orders of magnitude, most functions
rare, a few very busy; durations log-normal around ``median_duration_ms``; an application's
functions sharing its memory), a day-long swell on every rate, and one to four functions per
application. ``python -m faasprof.workload.trace_synth OUT_DIR --functions 5000`` writes one.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from faasprof.workload.azure_files import (
    DURATION_COLUMNS,
    DURATION_PERCENTILES,
    KEY_COLUMNS,
    MEMORY_COLUMNS,
    MEMORY_PERCENTILES,
    MINUTES_PER_DAY,
)

# Standard normal quantiles of the published percentiles, for a log-normal's percentiles.
_Z = {0: -3.09, 1: -2.326, 5: -1.645, 25: -0.674, 50: 0.0, 75: 0.674, 95: 1.645, 99: 2.326, 100: 3.09}
TRIGGERS = ("http", "timer", "queue", "event", "storage", "orchestration", "others")


@dataclass(frozen=True)
class SynthDay:
    invocations: Path
    durations: Path
    memory: Path
    functions: int
    total_invocations: int


def _hash(rng: np.random.Generator) -> str:
    return "".join(f"{value:02x}" for value in rng.integers(0, 256, 16))


def write_day(
    out_dir: str | Path,
    functions: int = 2000,
    seed: int = 1,
    minutes: int = MINUTES_PER_DAY,
    median_rate_per_min: float = 0.1,
    median_duration_ms: float = 300.0,
    day: int = 1,
) -> SynthDay:
    """Write one day's three files into ``out_dir``; returns their paths and the total count."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    owners = [_hash(rng) for _ in range(max(functions // 8, 1))]
    apps: list[tuple[str, str]] = []
    function_app: list[int] = []
    while len(function_app) < functions:
        apps.append((owners[int(rng.integers(0, len(owners)))], _hash(rng)))
        function_app += [len(apps) - 1] * int(rng.integers(1, 5))
    function_app = function_app[:functions]
    # Rates: log-normal over ~8 orders of magnitude (the paper's figure 5), capped at 5,000 a minute.
    log_rates = rng.normal(math.log10(median_rate_per_min), 1.6, functions)
    rates = np.minimum(10.0**log_rates, 5000.0)
    swell = 1.0 + 0.5 * np.sin(2 * math.pi * (np.arange(minutes) / MINUTES_PER_DAY - 0.25))
    name = f"d{day:02d}"
    paths = SynthDay(
        out / f"invocations_per_function_md.anon.{name}.csv",
        out / f"function_durations_percentiles.anon.{name}.csv",
        out / f"app_memory_percentiles.anon.{name}.csv",
        functions,
        0,
    )
    total = 0
    hashes = [_hash(rng) for _ in range(functions)]
    with open(paths.invocations, "w", encoding="utf-8", newline="") as handle:
        handle.write(",".join((*KEY_COLUMNS, *map(str, range(1, minutes + 1)))) + "\n")
        for index in range(functions):
            counts = rng.poisson(rates[index] * swell)
            total += int(counts.sum())
            owner, app = apps[function_app[index]]
            trigger = TRIGGERS[int(rng.integers(0, len(TRIGGERS)))]
            handle.write(f"{owner},{app},{hashes[index]},{trigger}," + ",".join(map(str, counts.tolist())) + "\n")
    log_medians = rng.normal(math.log(median_duration_ms), 1.4, functions)
    spreads = rng.uniform(0.1, 0.8, functions)
    with open(paths.durations, "w", encoding="utf-8", newline="") as handle:
        handle.write(",".join(DURATION_COLUMNS) + "\n")
        for index in range(functions):
            owner, app = apps[function_app[index]]
            values = {p: math.exp(log_medians[index] + spreads[index] * _Z[p]) for p in DURATION_PERCENTILES}
            average = math.exp(log_medians[index] + spreads[index] ** 2 / 2)
            count = int(rng.integers(1, 10_000))
            row = [average, count, values[0], values[100], *(values[p] for p in DURATION_PERCENTILES)]
            handle.write(
                f"{owner},{app},{hashes[index]},"
                + ",".join(f"{v:.3f}" if isinstance(v, float) else str(v) for v in row)
                + "\n"
            )
    with open(paths.memory, "w", encoding="utf-8", newline="") as handle:
        handle.write(",".join(MEMORY_COLUMNS) + "\n")
        for owner, app in apps:
            median_mb = float(np.clip(math.exp(rng.normal(math.log(150.0), 0.4)), 20.0, 1500.0))
            spread = float(rng.uniform(0.02, 0.2))
            memory_values = [median_mb * math.exp(spread * _Z[p]) for p in MEMORY_PERCENTILES]
            handle.write(
                f"{owner},{app},{int(rng.integers(1, 5000))},{median_mb:.1f},"
                + ",".join(f"{v:.1f}" for v in memory_values)
                + "\n"
            )
    return SynthDay(paths.invocations, paths.durations, paths.memory, functions, total)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir")
    parser.add_argument("--functions", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--median-rate-per-min", type=float, default=0.1)
    parser.add_argument("--median-duration-ms", type=float, default=300.0)
    args = parser.parse_args(argv)
    day = write_day(
        args.out_dir,
        args.functions,
        args.seed,
        median_rate_per_min=args.median_rate_per_min,
        median_duration_ms=args.median_duration_ms,
    )
    print(f"{day.invocations}: {day.functions:,} functions, {day.total_invocations:,} invocations")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
