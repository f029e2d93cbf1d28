"""Benchmark: how long ``faasprof.analyzer.plots.write_plots`` takes on one run directory, in total and per
plot function.

Loads the run once (``faasprof.analyzer.analysis.load_run``, not timed), then times each plot function on
its own into a temporary directory, then the whole ``write_plots`` call. matplotlib is imported
before any timing (the first plot would otherwise pay for the import). Prints wall and CPU seconds
(the fastest of ``--repeat`` calls; CPU time is the steadier figure on a shared host); never passes
or fails. A run to measure on: ``bench/bench_analyzer.py --rows 2000000 --generate-only DIR``.

    .venv/bin/python bench/bench_plots.py RUN_DIR [--repeat 1]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from faasprof.analyzer import plots  # noqa: E402
from faasprof.analyzer.analysis import load_run  # noqa: E402

FUNCTIONS = (
    ("latency_over_time.png", plots.latency_over_time),
    ("breakdown.png", plots.breakdown),
    ("cdf.png", plots.cdf),
    ("throughput.png", plots.throughput),
    ("monitors.png", plots.monitors),
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--repeat", type=int, default=1, help="time each step this many times and print the fastest")
    args = parser.parse_args(argv)
    plots.new_figure(figsize=(1, 1))  # the import is not what is measured
    started = time.perf_counter()
    run = load_run(args.run_dir)
    print(
        f"load_run: {time.perf_counter() - started:.2f} s, {len(run.invocations):,} invocations (not part of the figures below)"
    )
    with tempfile.TemporaryDirectory(prefix="bench-plots-") as tmp:
        out = Path(tmp)
        for name, function in FUNCTIONS:
            wall_s, cpu_s = min(_timed(function, run, out / name) for _ in range(args.repeat))
            print(f"  {name:<22} {wall_s:6.2f} s wall {cpu_s:6.2f} s CPU")
        wall_s, cpu_s = min(_timed(plots.write_plots, run, out / "all") for _ in range(args.repeat))
        print(f"write_plots total:       {wall_s:6.2f} s wall {cpu_s:6.2f} s CPU")
    return 0


def _timed(function, *args) -> tuple[float, float]:
    """(wall s, CPU s of this process) of one call; CPU time is the steadier figure on a shared host."""
    started, cpu_started = time.perf_counter(), time.process_time()
    function(*args)
    return time.perf_counter() - started, time.process_time() - cpu_started


if __name__ == "__main__":
    sys.exit(main())
