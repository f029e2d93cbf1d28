"""Benchmark: how long building (and writing) a 10-million-invocation schedule takes.

    .venv/bin/python bench/bench_schedule.py [--invocations 10000000] [--write]

Prints the build time, the peak RSS and, with --write, the CSV write time. Figures, not a test.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from faasprof.workload.schedule import build_schedule  # noqa: E402
from faasprof.workload.spec import workload_from_dict  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--invocations", type=int, default=10_000_000)
    parser.add_argument("--write", action="store_true", help="also write the schedule CSV")
    args = parser.parse_args()
    duration_s = 1000.0
    # Four Poisson instances, one Uniform and one Burst, sharing the total.
    share = args.invocations / 6 / duration_s
    instances = {f"p{i}": {"application": "noop", "distribution": "Poisson", "rate": share} for i in range(4)}
    instances["u"] = {"application": "noop", "distribution": "Uniform", "rate": share}
    instances["b"] = {"application": "noop", "distribution": "Burst", "burst_size": 100, "burst_gap_s": 100 / share}
    workload = workload_from_dict(
        {"test_name": "bench", "test_duration_in_seconds": duration_s, "random_seed": 1, "instances": instances},
        check_catalogue=False,
    )
    started = time.perf_counter()
    schedule = build_schedule(workload)
    build_s = time.perf_counter() - started
    rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"invocations planned: {len(schedule):,}")
    print(f"build time: {build_s:.2f} s  ({len(schedule) / build_s / 1e6:.1f} M invocations/s)")
    print(f"peak RSS: {rss_mib:.0f} MiB")
    if args.write:
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "schedule.csv")
            started = time.perf_counter()
            schedule.write_csv(path)
            write_s = time.perf_counter() - started
            print(f"CSV write time: {write_s:.2f} s  ({os.path.getsize(path) / 2**20:.0f} MiB)")


if __name__ == "__main__":
    main()
