"""Benchmark: the quick start's modes predicted before each run against the modes found after it (issue 43).

Runs the README's quick start (``faasprof run faasprof/workload_configs/first_run_modes.json
--analyze``) ``--runs`` times in a row as subprocesses, the first on a fresh capacity store (so it
includes the capacity search, as a first run on a fresh machine does: its wall time is the
done-when's 90 s figure), the rest reusing what the store holds unless the host's noise moved
(then they search again, and say so). For each run it prints the band each phase was placed in
before the run (``capacity_store.band_lines``' "in the ... band" line) beside the mode the
analyzer found after it, the wall time and the 1-minute load; where they disagree, the phase's
rate, warm rate, cold and resumed shares and the analyzer's reasons, so the report can say why.
Then: how many runs agree in all three phases, and how many phases agree. Never passes or fails.

    .venv/bin/python bench/bench_modes_predicted.py [--runs 10] [--out /tmp/modesbench]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
QUICK_START = REPO / "faasprof" / "workload_configs" / "first_run_modes.json"
BAND_LINE = re.compile(r"instances\.([\w-]+): .*?, in the ([a-z -]+?) band of ")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--out", help="run directories and the capacity store (default: a temporary folder, removed)")
    args = parser.parse_args()
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="modesbench-"))
    out.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "FAASPROF_CAPACITY_STORE": str(out / "capacity.json")}
    agree_runs = agree_phases = phases = 0
    try:
        for index in range(args.runs):
            load_before = os.getloadavg()[0]
            started = time.monotonic()
            done = subprocess.run(
                [sys.executable, "-m", "faasprof", "run", str(QUICK_START), "--analyze", "--out", str(out / "runs")],
                cwd=REPO,
                env=env,
                capture_output=True,
                text=True,
                check=False,
            )
            wall_s = time.monotonic() - started
            predicted = dict(BAND_LINE.findall(done.stderr))
            searched = "measuring it" in done.stderr
            run_dir = Path(done.stdout.strip().splitlines()[-1]) if done.stdout.strip() else None
            summary_path = run_dir / "analysis" / "summary.json" if run_dir else None
            if done.returncode != 0 or summary_path is None or not summary_path.is_file():
                print(f"run {index + 1}: exit {done.returncode}, no analysis: {done.stderr.strip()[-400:]}", flush=True)
                continue
            summary = json.loads(summary_path.read_text())
            found = {i["instance"]: i["phases"][-1] for i in summary["instances"] if i["phases"]}
            cells, all_agree = [], True
            for name in ("under", "balanced", "over"):
                phase = found.get(name) or {}
                mode = phase.get("mode", "-")
                agrees = predicted.get(name) == mode
                all_agree &= agrees
                phases += 1
                agree_phases += agrees
                cells.append(f"{name}: {predicted.get(name, '-')} → {mode}{'' if agrees else ' ✗'}")
            agree_runs += all_agree
            print(
                f"run {index + 1}: {'; '.join(cells)}  ({wall_s:.0f} s, load {load_before:.1f}→{os.getloadavg()[0]:.1f}"
                f"{', capacity searched' if searched else ''})",
                flush=True,
            )
            for name in ("under", "balanced", "over"):
                phase = found.get(name) or {}
                if predicted.get(name) != phase.get("mode"):
                    print(
                        f"    {name}: offered {phase.get('offered_rps', float('nan')):.3g}/s, warm rate "
                        f"{phase.get('warm_rate_rps') or float('nan'):.3g}/s, cold {phase.get('cold_fraction') or 0:.1%}, "
                        f"resumed {phase.get('resumed_fraction') or 0:.1%}, duration p50 "
                        f"{phase.get('duration_ms_p50') or float('nan'):.3g} ms: {phase.get('mode_reasons')}",
                        flush=True,
                    )
    finally:
        if not args.out:
            shutil.rmtree(out, ignore_errors=True)
    print(
        f"runs agreeing in all three phases: {agree_runs} of {args.runs}; phases agreeing: {agree_phases} of {phases}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
