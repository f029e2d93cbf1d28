"""Benchmark: a 200-function, 30-minute sample of a trace day run on the embedded localwhisk with its
fidelity report (issue 45).

Generates a day in the Azure Functions 2019 layout (``faasprof.workload.trace_synth``; seeded,
``--functions`` functions, durations around ``--median-duration-ms``), then, each as a subprocess:

1. ``faasprof trace sample DAY -n N --minutes A-B [--scale-to RATE] --no-alloc``: its wall time and
   peak RSS (the day's file is streamed: memory should not grow with the file), the sample's
   stated distances and scaling;
2. ``faasprof run WORKLOAD --analyze`` on the embedded localwhisk (``--user-memory`` large enough
   for the sample's sandboxes): wall time, planned invocations, the self-check's worst shares,
   and the fidelity totals (sent against trace, exact or not, arrivals within a minute, median KS
   of durations, cold share).

Prints the figures and the host's load (the host may be shared: say so with the figures); never
passes or fails. ``--sample-only`` stops after step 1 (a quick check of the sampler at scale).

    .venv/bin/python bench/bench_trace_sample.py [--functions 5000] [-n 200] [--minutes 600-629]
        [--scale-to RATE] [--sample-only] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from faasprof.workload.trace_synth import write_day


def _timed(argv: list[str], env: dict) -> tuple[float, float, subprocess.CompletedProcess]:
    """Wall seconds, the children's peak RSS in MiB so far, and the finished process."""
    start = time.monotonic()
    done = subprocess.run(argv, capture_output=True, text=True, env=env)
    wall = time.monotonic() - start
    peak_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return wall, peak_mib, done


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--functions", type=int, default=5000)
    parser.add_argument("-n", type=int, default=200)
    parser.add_argument("--minutes", default="600-629")
    parser.add_argument("--median-duration-ms", type=float, default=5.0)
    parser.add_argument("--median-rate-per-min", type=float, default=0.5)
    parser.add_argument("--scale-to", type=float, default=60.0, help="invocations/s in all (60: 108,000 in 30 min)")
    parser.add_argument("--user-memory", type=int, default=32768, help="localwhisk's pool, MB")
    parser.add_argument("--sample-only", action="store_true")
    parser.add_argument("--keep", type=Path, help="keep the day, the sample and the run here")
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="faasprof-bench-trace-"))
    work.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "FAASPROF_CACHE_DIR": os.environ.get("FAASPROF_CACHE_DIR", str(work / "cache"))}
    faasprof = [sys.executable, "-m", "faasprof"]
    try:
        start = time.monotonic()
        day = write_day(
            work / "day", args.functions, seed=1, median_rate_per_min=args.median_rate_per_min,
            median_duration_ms=args.median_duration_ms,
        )  # fmt: skip
        size_mib = day.invocations.stat().st_size / 2**20
        print(f"day: {day.functions:,} functions, {day.total_invocations:,} invocations, invocations file "
              f"{size_mib:.1f} MiB, written in {time.monotonic() - start:.1f} s")  # fmt: skip
        sample = work / "sample"
        argv = [*faasprof, "trace", "sample", str(day.invocations.parent), "-n", str(args.n), "--minutes",
                args.minutes, "--no-alloc", "--seed", "1", "--out", str(sample)]  # fmt: skip
        if args.scale_to:
            argv += ["--scale-to", str(args.scale_to)]
        wall, peak, done = _timed(argv, env)
        if done.returncode:
            print(done.stderr, file=sys.stderr)
            return done.returncode
        print(f"trace sample: {wall:.1f} s wall, peak RSS of the children so far {peak:.0f} MiB")
        print(done.stdout.rstrip())
        if args.sample_only:
            return 0
        runs = work / "runs"
        argv = [*faasprof, "run", str(sample / "workload.json"), "--out", str(runs), "--analyze", "--quiet",
                "--user-memory", str(args.user_memory)]  # fmt: skip
        load_before = os.getloadavg()
        wall, peak, done = _timed(argv, env)
        load_after = os.getloadavg()
        run_dir = next(runs.iterdir())
        manifest = json.loads((run_dir / "manifest.json").read_text())
        print(f"run --analyze: {wall:.0f} s wall, status {manifest['status']} ({manifest.get('status_reason')}), "
              f"planned {manifest['counts']['planned']:,}, outcomes {manifest['counts']['outcomes']}")  # fmt: skip
        check = manifest.get("self_check") or {}
        print(f"self-check: worst behind {check.get('worst_behind')}, worst failure {check.get('worst_failure')}, "
              f"aborted {check.get('aborted')}")  # fmt: skip
        summary_path = run_dir / "analysis" / "summary.json"
        if summary_path.exists():
            total = json.loads(summary_path.read_text()).get("trace_fidelity", {}).get("total", {})
            print(f"fidelity: {json.dumps(total)}")
        print(f"host load (1-min) before {load_before[0]:.1f}, after {load_after[0]:.1f}; {os.cpu_count()} CPUs")
        return 0
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
