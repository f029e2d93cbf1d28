"""Benchmark: how often ``faasprof compare``'s run-level verdict calls identical workloads different
(the A/A check), and how often it finds a known effect (issue 43).

Both on the embedded localwhisk, with short runs (``--duration`` s of ``spin`` at ``--rate``/s,
blocking, a pause grace long enough to stay warm), each made by ``faasprof run --repeats`` as a
user makes them:

- **A/A**: one workload (``spin`` with ``service_ms`` 100, ``--service-ms``) run ``2 × pairs × repeats`` times,
  alternating sides A and A' (two copies of one workload: ``faasprof run A.json --vs A2.json
  --repeats N``). The runs are cut into ``--pairs`` disjoint comparisons of ``--aa-repeats`` runs a
  side, in the order they ran; each comparison is ``compare_runs`` with those sides. The
  false-positive rate is the share of comparisons with any figure called different (slower,
  faster, higher, lower, more or fewer cold starts); the issue's target: at most 1 in 20.
- **Known effect**: the same function with 25 % more work (``service_ms`` 125 against 100: 1.25
  times ``--service-ms``), run
  alternating, ``--effects × --effect-repeats`` runs a side, cut into ``--effects`` disjoint
  comparisons; found = the completion p50 called ``slower``; the issue's target: at least 9 of 10.

Each run is analysed without plots; the figures are printed with the command, the host's load
(``/proc/loadavg`` before and after) and the runs' own measure of the host's noise (``host_noise``).
Never passes or fails.

    .venv/bin/python bench/bench_aa.py [--pairs 20 --aa-repeats 3] [--effects 10 --effect-repeats 5] [--duration 4] [--rate 5] [--service-ms 100] [--skip-aa] [--skip-effect] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from faasprof import rundir
from faasprof.analyzer.analysis import analyze_run
from faasprof.analyzer.compare import compare_runs
from faasprof.analyzer.compare_sides import Side, read_repeats

ROOT = Path(__file__).resolve().parents[1]
FAASPROF = [sys.executable, "-m", "faasprof"]


def workload(name: str, service_ms: float, duration_s: float, rate: float) -> dict:
    return {
        "test_name": name,
        "test_duration_in_seconds": duration_s,
        "random_seed": 1,
        "blocking_cli": True,
        "platform": {"localwhisk": {"pause_grace_ms": 2000}},
        "instances": {
            "spin": {
                "application": "spin",
                "distribution": "Uniform",
                "rate": rate,
                "params": {"service_ms": service_ms},
            }
        },
    }


def repeated(configs: list[Path], repeats: int, out: Path) -> tuple[list[Side], str]:
    """``faasprof run A --vs B --repeats N``; its sides, each run analysed (no plots)."""
    command = [*FAASPROF, "run", str(configs[0]), *[a for c in configs[1:] for a in ("--vs", str(c))]]
    command += ["--repeats", str(repeats), "--out", str(out), "--quiet"]
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
    if done.returncode not in (0, 1):
        sys.exit(f"{' '.join(command)}: exit {done.returncode}\n{done.stderr[-3000:]}")
    folder = Path(done.stdout.strip().splitlines()[-1])
    sides = read_repeats(folder)
    for side in sides:
        for run in side.runs:
            analyze_run(run, plots=False)
    return sides, " ".join(command[2:])


def comparisons(sides: list[Side], per_side: int, count: int) -> list[list[Side]]:
    """``count`` disjoint comparisons of ``per_side`` consecutive runs a side."""
    return [
        [Side(s.name, s.runs[k * per_side : (k + 1) * per_side]) for s in sides]
        for k in range(count)
        if all(len(s.runs) >= (k + 1) * per_side for s in sides)
    ]


def verdicts(sides: list[Side]) -> dict[str, str]:
    result = compare_runs([], sides=sides)
    (effect,) = result["run_level"]
    return {f["figure"]: f["verdict"] for f in effect["figures"]} | {
        "_significant": ",".join(f["figure"] for f in effect["figures"] if f["significant"])
    }


def noise_of(sides: list[Side]) -> str:
    shares = [
        (rundir.read_manifest(run).extra.get("host_noise") or {}).get("other_cpu_share")
        for side in sides
        for run in side.runs
    ]
    shares = sorted(s for s in shares if isinstance(s, (int, float)))
    if not shares:
        return "not measured"
    return f"other processes' CPU share per run: median {100 * shares[len(shares) // 2]:.0f} %, range {100 * shares[0]:.0f}–{100 * shares[-1]:.0f} %"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=20)
    parser.add_argument("--aa-repeats", type=int, default=3)
    parser.add_argument("--effects", type=int, default=10)
    parser.add_argument("--effect-repeats", type=int, default=5)
    parser.add_argument("--duration", type=float, default=4.0)
    parser.add_argument("--rate", type=float, default=5.0)
    parser.add_argument(
        "--service-ms", type=float, default=100.0, help="spin's service time; the effect's is 1.25 times it"
    )
    parser.add_argument("--skip-aa", action="store_true")
    parser.add_argument("--skip-effect", action="store_true")
    parser.add_argument("--keep", metavar="DIR", help="keep the runs there (default: a temporary folder, removed)")
    args = parser.parse_args()
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench-aa-"))
    work.mkdir(parents=True, exist_ok=True)
    configs = {}
    base = args.service_ms
    for name, service_ms in (("base", base), ("base_b", base), ("more", 1.25 * base)):
        configs[name] = work / f"{name}.json"
        configs[name].write_text(json.dumps(workload(name, service_ms, args.duration, args.rate)))
    print(f"load before: {Path('/proc/loadavg').read_text().strip()} on {os.cpu_count()} CPUs", flush=True)
    started = time.monotonic()
    try:
        if not args.skip_aa:
            sides, command = repeated([configs["base"], configs["base_b"]], args.pairs * args.aa_repeats, work / "aa")
            found = [verdicts(c) for c in comparisons(sides, args.aa_repeats, args.pairs)]
            called = [v for v in found if v["_significant"]]
            print(f"A/A: {command}", flush=True)
            print(
                f"A/A: {len(called)} of {len(found)} identical comparisons ({args.aa_repeats} runs a side) called different "
                f"({', '.join(v['_significant'] for v in called) or 'none'}); p50 alone: "
                f"{sum(1 for v in found if 'completion_latency_ms_p50' in v['_significant'])} of {len(found)}; {noise_of(sides)}",
                flush=True,
            )
        if not args.skip_effect:
            sides, command = repeated(
                [configs["base"], configs["more"]], args.effects * args.effect_repeats, work / "effect"
            )
            found = [verdicts(c) for c in comparisons(sides, args.effect_repeats, args.effects)]
            slower = sum(1 for v in found if v["completion_latency_ms_p50"] == "slower")
            print(f"known effect: {command}", flush=True)
            print(
                f"known effect (service_ms {1.25 * base:g} against {base:g}, {args.effect_repeats} runs a side): p50 slower in {slower} of {len(found)} comparisons "
                f"(verdicts: {', '.join(v['completion_latency_ms_p50'] for v in found)}); {noise_of(sides)}",
                flush=True,
            )
    finally:
        print(
            f"load after: {Path('/proc/loadavg').read_text().strip()}; {time.monotonic() - started:.0f} s in all",
            flush=True,
        )
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
