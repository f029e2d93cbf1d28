"""Native execution time of every available catalogue function with its sample input (figures only).

    .venv/bin/python bench/bench_functions.py [--repeat N]

One warm worker per function (as ``faasprof native`` uses); prints the cold call, the median and
min of the warm calls in ms, and the archive size. The spread (about 1 ms to several hundred ms)
is what the branch-MPKI-vs-execution-time and slowdown-vs-execution-time studies need.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from faasprof.experiments import native  # noqa: E402
from faasprof.functions.catalogue import entries  # noqa: E402
from faasprof.functions.package import build_archive  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(f"{'function':<14} {'kind':<9} {'cold ms':>9} {'warm median':>12} {'warm min':>9} {'archive KiB':>12}")
    for entry in entries():
        if entry.missing():
            print(f"{entry.name:<14} unavailable: {entry.missing()[0]}")
            continue
        worker = native.Worker(entry)
        worker.start()
        try:
            params = entry.sample_params()
            times = [worker.call(params, entry.timeout_ms / 1000)["exec_ns"] / 1e6 for _ in range(args.repeat + 1)]
        finally:
            worker.stop()
        warm = times[1:]
        size_kib = len(build_archive(entry)) / 1024
        print(
            f"{entry.name:<14} {entry.kind:<9} {times[0]:>9.2f} {statistics.median(warm):>12.2f} {min(warm):>9.2f} {size_kib:>12.1f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
