"""Benchmark: five capacity searches in a row on a host with one core hogged (issue 43).

Starts ``taskset -c 1 python3 -c 'while 1: pass'`` (one CPU busy with other work for the whole
bench; ``--no-hog`` leaves it out), then runs ``faasprof.experiments.capacity.find_capacity`` on
``--function`` ``--searches`` times, each on a fresh embedded localwhisk, with short searches
(``--max-runs``, ``--repeats``). Prints each search's interval (and the probes' own, before the
host's noise widened it), its contention line, the 1-minute load, and then for every pair whether
the intervals overlap or both searches said that their host was contended. Never passes or fails:
the figures go to the issue's note.

    .venv/bin/python bench/bench_capacity_repeat.py [--function json_dumps] [--searches 5] [--out /tmp/capbench]
"""

from __future__ import annotations

import argparse
import itertools
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from faasprof.experiments.capacity import find_capacity


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--function", default="json_dumps")
    parser.add_argument("--searches", type=int, default=5)
    parser.add_argument("--max-runs", type=int, default=6)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--out", help="where the probe runs go (default: a temporary folder, removed)")
    parser.add_argument("--no-hog", action="store_true", help="no CPU hog (the quiet-host comparison)")
    args = parser.parse_args()
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="capbench-"))
    out.mkdir(parents=True, exist_ok=True)
    hog = None
    if not args.no_hog and shutil.which("taskset"):
        hog = subprocess.Popen(["taskset", "-c", "1", sys.executable, "-c", "while 1: pass"])
        time.sleep(2.0)
    results = []
    try:
        for index in range(args.searches):
            started = time.monotonic()
            result = find_capacity(args.function, out_dir=out, max_runs=args.max_runs, repeats=args.repeats)
            wall_s = time.monotonic() - started
            results.append(result)
            interval = result.get("interval_rps") or [None, None]
            probes = result.get("probes_interval_rps") or interval
            load = result.get("load_1min") or {}
            print(
                f"search {index + 1}: {result['capacity_text']}  interval {_rate(interval[0])}–{_rate(interval[1])}/s "
                f"(probes' {_rate(probes[0])}–{_rate(probes[1])}/s)  load {load.get('before')}→{load.get('peak')}  "
                f"{wall_s:.0f} s  {result.get('contention') or 'host not contended'}",
                flush=True,
            )
    finally:
        if hog is not None:
            hog.kill()
            hog.wait()
        if not args.out:
            shutil.rmtree(out, ignore_errors=True)
    holds = 0
    pairs = list(itertools.combinations(range(len(results)), 2))
    for a, b in pairs:
        ia, ib = results[a].get("interval_rps"), results[b].get("interval_rps")
        overlap = bool(ia and ib and None not in ia and None not in ib and ia[0] <= ib[1] and ib[0] <= ia[1])
        said = bool(results[a].get("contention") and results[b].get("contention"))
        holds += overlap or said
        print(f"  {a + 1}–{b + 1}: {'overlap' if overlap else 'apart'}{'; both said contended' if said else ''}")
    overlapping = sum(
        1
        for a, b in pairs
        if results[a].get("interval_rps")
        and results[b].get("interval_rps")
        and results[a]["interval_rps"][0] <= results[b]["interval_rps"][1]
        and results[b]["interval_rps"][0] <= results[a]["interval_rps"][1]
    )
    print(
        f"pairs: {len(pairs)}, intervals overlap in {overlapping}, overlap or both said contended in {holds}; "
        f"hog: {'one core' if hog else 'none'}; {os.cpu_count()} CPUs; load now {os.getloadavg()[0]:.2f}"
    )
    return 0


def _rate(value) -> str:
    return "-" if value is None else f"{value:.3g}"


if __name__ == "__main__":
    sys.exit(main())
