"""Benchmark: ``faasprof analyze`` on a run of 1,000,000 invocations with records and monitoring data.

Generates a synthetic run directory (``tests/test_analyzer_synthetic.py``'s queue model: four
instances of four functions, Uniform arrivals, OpenWhisk-shaped records for every invocation) plus
a ``perf stat -I 100`` monitor output built by repeating the intervals of a recorded real sample
(``tests/data/monitoring/perf/perf_stat_system_interval.csv``) over the whole run, then times
``faasprof analyze RUN_DIR`` as a subprocess and reports its wall time and peak RSS (its own
``ru_maxrss``, read at exit). Target: under 30 s and 2 GiB. Prints figures; never passes or fails.

    .venv/bin/python bench/bench_analyzer.py [--rows 1000000] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from test_analyzer_synthetic import write_synthetic_run  # noqa: E402

# `faasprof ARGS...` in a fresh interpreter that reports its own peak RSS as its last stderr line.
MEASURED_CLI = (
    "import resource, sys; from faasprof.cli import main; rc = main(sys.argv[1:]); "
    "print(f'maxrss_kib={resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}', file=sys.stderr); sys.exit(rc)"
)
PERF_SAMPLE = ROOT / "tests" / "data" / "monitoring" / "perf" / "perf_stat_system_interval.csv"


def write_perf_monitor(run_dir: Path, duration_s: float) -> int:
    """Repeat the recorded sample's intervals (100 ms each) to cover the run; returns the lines."""
    lines = [l for l in PERF_SAMPLE.read_text().splitlines() if l.strip() and not l.startswith("#")]
    first_t = {}
    for line in lines:
        first_t.setdefault(line.split(",", 1)[0].strip(), []).append(line)
    intervals = list(first_t.values())
    out = [f"# started on (benchmark, repeated from {PERF_SAMPLE.name})", ""]
    count = int(duration_s / 0.1)
    for k in range(count):
        block = intervals[k % len(intervals)]
        stamp = f"{(k + 1) * 0.1 + 0.000159811:.9f}"
        for line in block:
            out.append(f"{stamp:>16}," + line.split(",", 1)[1])
    directory = run_dir / "monitors" / "perf"
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "perf_stat.csv").write_text("\n".join(out) + "\n")
    (directory / "meta.json").write_text(json.dumps({"monotonic_ns_at_start": 0, "wall_ns_at_start": 0, "layout": {"sep": ","}}))
    return len(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--keep", metavar="DIR", help="generate into DIR and keep it")
    parser.add_argument("--generate-only", metavar="DIR", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.generate_only:
        return generate(args.rows, Path(args.generate_only))
    base = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench-analyzer-"))
    # Generate in a child process: the analyze child must not inherit (and be charged for) the
    # generator's memory through fork.
    subprocess.run([sys.executable, __file__, "--rows", str(args.rows), "--generate-only", str(base)], check=True)
    run_dir = next(base.glob("bench-*"))
    for label in ("analyze (first)", "analyze (re-run)"):
        t = time.perf_counter()
        result = subprocess.run([sys.executable, "-c", MEASURED_CLI, "analyze", str(run_dir)], cwd=ROOT, capture_output=True, text=True)
        wall = time.perf_counter() - t
        peak_kib = int(result.stderr.strip().splitlines()[-1].split("=")[1]) if "maxrss_kib=" in result.stderr else -1
        if result.returncode != 0:
            print(f"{label}: exit {result.returncode}\n{result.stderr}")
            return 1
        print(f"{label}: {wall:.1f} s wall, peak RSS {peak_kib / 2**20:.2f} GiB  [targets: < 30 s, < 2 GiB]")
    summary = json.loads((run_dir / "analysis" / "summary.json").read_text())
    print("modes:", ", ".join(f"{i['instance']}={i['phases'][0]['mode']}" for i in summary["instances"]),
          f"| records found {summary['records']['found']:,}, missing {summary['records']['missing']}",
          f"| monitors: {', '.join(summary['monitors'])}")
    if not args.keep:
        shutil.rmtree(base, ignore_errors=True)
    return 0


def generate(rows: int, base: Path) -> int:
    rate_each = 500.0
    duration_s = rows / (4 * rate_each)
    instances = {f"i{k}": {"application": f"fn{k}", "distribution": "Uniform", "rate": rate_each} for k in range(4)}
    t0 = time.perf_counter()
    run_dir, records = write_synthetic_run(base, test_name="bench", duration_s=duration_s, instances=instances, service_ms=1.0, seed=5)
    perf_lines = write_perf_monitor(run_dir, duration_s)
    generated_s = time.perf_counter() - t0
    sizes = {name: (run_dir / name).stat().st_size for name in ("invocations.csv", "activations.jsonl")}
    print(f"generated {len(records):,} records over {duration_s:g} s, {perf_lines:,} perf lines in {generated_s:.1f} s "
          f"(invocations.csv {sizes['invocations.csv'] / 2**20:.0f} MiB, activations.jsonl {sizes['activations.jsonl'] / 2**20:.0f} MiB)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
