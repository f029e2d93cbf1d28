"""Benchmark: validating a workload whose trace is hostile (issue 44, item 4): time and peak memory.

    .venv/bin/python bench/bench_hostile_trace.py [--columns 10000000] [--rows 1] [--root CHECKOUT]

Writes a trace of ``--columns`` minute columns (about 99 MB at ten million) beside a workload that
names it, then runs ``faasprof validate --offline`` on it in a child process and prints its wall
time, its peak RSS and its exit status with the first line it wrote. Figures, not a test: before
the bounded reader this took 18.6 s and 1.7 GB; now the header is refused after at most
``MAX_TRACE_LINE_CHARS`` bytes.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHUNK = 100_000


def write_trace(path: Path, columns: int, rows: int) -> int:
    """A trace in the Azure layout with ``columns`` minute columns; returns its size in bytes."""
    with open(path, "w", encoding="utf-8") as handle:
        handle.write("HashOwner,HashApp,HashFunction,Trigger")
        for start in range(1, columns + 1, CHUNK):  # in chunks: this process stays small
            handle.write("".join(f",{minute}" for minute in range(start, min(start + CHUNK, columns + 1))))
        handle.write("\n")
        for row in range(rows):
            handle.write(f"o,a,f{row},http")
            for start in range(0, columns, CHUNK):
                handle.write(",1" * min(CHUNK, columns - start))
            handle.write("\n")
    return path.stat().st_size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--columns", type=int, default=10_000_000)
    parser.add_argument("--rows", type=int, default=1)
    parser.add_argument("--root", type=Path, default=ROOT, help="the faasprof checkout to run (to compare commits)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        trace = Path(folder) / "wide.csv"
        size = write_trace(trace, args.columns, args.rows)
        workload = Path(folder) / "w.json"
        instance = {"application": "json_dumps", "distribution": "Trace", "trace_file": "wide.csv"}
        workload.write_text(
            json.dumps(
                {"test_name": "wide", "test_duration_in_seconds": 60, "random_seed": 1, "instances": {"i0": instance}}
            )
        )
        env = {**os.environ, "PYTHONPATH": str(args.root)}
        started = time.monotonic()
        result = subprocess.run(
            [sys.executable, "-m", "faasprof", "validate", "--offline", str(workload)],
            capture_output=True,
            text=True,
            env=env,
            cwd=args.root,
        )
        wall_s = time.monotonic() - started
        peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    first = (result.stderr or result.stdout).strip().splitlines()[:1]
    print(f"trace: {args.columns:,} columns, {args.rows} row(s), {size / 1e6:.1f} MB")
    print(f"validate: {wall_s:.2f} s wall, peak RSS {peak_mb:.0f} MB, exit {result.returncode}")
    print(f"first line: {first[0] if first else ''}")


if __name__ == "__main__":
    main()
