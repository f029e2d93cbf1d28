"""Benchmark: loading the perf monitor of a 10-million-invocation run (issue 22); prints figures,
never passes or fails.

Builds ``monitors/perf/perf_stat.csv`` exactly as ``bench/bench_analyzer.py`` does (its
``write_perf_monitor``: the recorded ``perf stat -x, -I 100`` sample repeated with shifted
timestamps; 5,000 s of it is ~600,000 lines), then times, best of ``--repeat``:

* ``parse_perf_stat`` (the Arrow fast path), in seconds and lines/s;
* ``parse_perf_stat_reference`` (``_perf_fields`` line by line: the parser before the fast path),
  for the before/after figure;
* ``PerfCollector.load_frame`` (parse + ``perf_wide`` + derived metrics: what ``faasprof analyze``
  pays for the monitor).

    .venv/bin/python bench/bench_perf_parse.py [--duration-s 5000] [--repeat 3] [--skip-reference]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests"))

from bench_analyzer import write_perf_monitor  # noqa: E402

from faasprof import rundir  # noqa: E402
from faasprof.monitoring.collectors.perf import PerfCollector  # noqa: E402
from faasprof.monitoring.parsers.perf import parse_perf_stat, parse_perf_stat_reference  # noqa: E402


def best_s(repeat: int, work) -> float:
    """The fastest of ``repeat`` runs of ``work()`` (the machine is shared: the minimum is the
    least disturbed figure)."""
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        work()
        times.append(time.perf_counter() - started)
    return min(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--duration-s",
        type=float,
        default=5000.0,
        help="run length the monitor covers (default 5000 s: ~600,000 lines)",
    )
    parser.add_argument("--repeat", type=int, default=3, help="timings per figure; the best is printed (default 3)")
    parser.add_argument("--skip-reference", action="store_true", help="do not time the line-by-line reference parser")
    args = parser.parse_args()
    load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
    print(f"machine: {os.cpu_count()} CPUs, load average {load}", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-perf-parse-") as temp:
        run_dir = Path(temp)
        lines = write_perf_monitor(run_dir, args.duration_s)
        directory = run_dir / "monitors" / "perf"
        text = (directory / "perf_stat.csv").read_text()
        print(
            f"perf_stat.csv: {lines:,} lines, {len(text) / 2**20:.1f} MiB ({args.duration_s:g} s of 100 ms intervals)",
            flush=True,
        )
        fast_s = best_s(args.repeat, lambda: parse_perf_stat(text))
        print(f"{'parse_perf_stat (fast path):':38} {fast_s:7.2f} s  {lines / fast_s:12,.0f} lines/s", flush=True)
        if not args.skip_reference:
            slow_s = best_s(args.repeat, lambda: parse_perf_stat_reference(text))
            print(
                f"{'parse_perf_stat_reference (per line):':38} {slow_s:7.2f} s  {lines / slow_s:12,.0f} lines/s  (fast path x{slow_s / fast_s:.1f})",
                flush=True,
            )
        meta = {"layout": {"sep": ","}}
        manifest = rundir.new_manifest("bench", {}, rundir.ClockAnchor(0, 0))
        frame_s = best_s(args.repeat, lambda: PerfCollector.load_frame(directory, meta, 0.0, manifest))
        print(f"PerfCollector.load_frame (read, parse, wide, metrics): {frame_s:.2f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
