"""Benchmark: ``faasprof analyze`` on a run of 1 to 10 million invocations with records and
monitoring data, and ``faasprof compare`` over many runs.

Generates a synthetic run directory (``tests/test_analyzer_synthetic.py``'s queue model: four
instances of four functions, Uniform arrivals, OpenWhisk-shaped records for every invocation) plus
a ``perf stat -I 100`` monitor output built by repeating the intervals of a recorded real sample
(``tests/data/monitoring/perf/perf_stat_system_interval.csv``) over the whole run, then times
``faasprof analyze RUN_DIR`` as a subprocess and reports its wall time and peak RSS (its own
``ru_maxrss``, read at exit by the child). Runs longer than ``BLOCK_ROWS`` are generated as one
block of the queue model repeated later in time (fresh activation ids), so 10 million rows need
no more memory to generate than one million. The records are saved as a run saves them, through
``faasprof.rundir.write_records`` (which writes their column index, ``activations.columns.npz``).

``--compare-runs N`` then analyses one run of ``--compare-rows`` rows, copies it N−1 times (the
analysis included, as a cached summary would be) and times ``faasprof compare`` over all N.

Targets (issue 22): 10 million invocations in at most 60 s and 4 GiB; compare over 100 runs of
100,000 rows in at most 30 s. Prints each figure next to its target; never passes or fails.

Each size is analysed three times: as ``faasprof analyze`` (with plots: the target's path), with
``--no-plots``, and as ``faasprof analyze`` again with the column index deleted first (records
saved by another tool: the JSON lines are parsed, with DuckDB, and the index written). Several sizes (``--rows 1000000,10000000``) also print how wall time and peak RSS
grew from the smallest to the largest beside the growth in rows (memory should grow less than
linearly).

    .venv/bin/python bench/bench_analyzer.py [--rows 1000000[,10000000]] [--keep DIR] [--compare-runs 100 --compare-rows 100000]
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

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from test_analyzer_synthetic import write_synthetic_run  # noqa: E402

from faasprof import rundir  # noqa: E402
from faasprof.rundir import record_columns  # noqa: E402

# `faasprof ARGS...` in a fresh interpreter that reports its own peak RSS as its last stderr line.
MEASURED_CLI = (
    "import resource, sys; from faasprof.cli import main; rc = main(sys.argv[1:]); "
    "print(f'maxrss_kib={resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}', file=sys.stderr); sys.exit(rc)"
)
PERF_SAMPLE = ROOT / "tests" / "data" / "monitoring" / "perf" / "perf_stat_system_interval.csv"


def write_perf_monitor(run_dir: Path, duration_s: float) -> int:
    """Repeat the recorded sample's intervals (100 ms each) to cover the run; returns the lines."""
    lines = [line for line in PERF_SAMPLE.read_text().splitlines() if line.strip() and not line.startswith("#")]
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
    (directory / "meta.json").write_text(
        json.dumps({"monotonic_ns_at_start": 0, "wall_ns_at_start": 0, "layout": {"sep": ","}})
    )
    return len(out)


ANALYZE_TARGET = {10_000_000: (60.0, 4.0)}  # rows: (seconds, GiB), issue 22
COMPARE_TARGET_S = 30.0  # 100 runs of 100,000 rows
BLOCK_ROWS = 1_000_000  # the queue model is generated for at most this many rows, then repeated


def measured(args: list[str]) -> tuple[float, float, subprocess.CompletedProcess]:
    """Run ``faasprof ARGS`` in a fresh interpreter: (wall s, peak RSS GiB, the result)."""
    t = time.perf_counter()
    result = subprocess.run([sys.executable, "-c", MEASURED_CLI, *args], cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - t
    peak_kib = int(result.stderr.strip().splitlines()[-1].split("=")[1]) if "maxrss_kib=" in result.stderr else -1
    return wall, peak_kib / 2**20, result


def machine() -> str:
    load = ", ".join(f"{v:.2f}" for v in os.getloadavg())
    return f"{os.cpu_count()} CPUs, load average {load}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--rows", default="1000000", help="invocations, or several sizes separated by commas (default 1000000)"
    )
    parser.add_argument(
        "--keep", metavar="DIR", help="generate into DIR and keep it (a run kept there by an earlier call is reused)"
    )
    parser.add_argument(
        "--compare-runs", type=int, default=0, metavar="N", help="also time faasprof compare over N runs"
    )
    parser.add_argument(
        "--compare-rows", type=int, default=100_000, metavar="ROWS", help="rows of each compared run (default 100,000)"
    )
    parser.add_argument("--skip-analyze", action="store_true", help="only the compare benchmark")
    parser.add_argument("--generate-only", metavar="DIR", help=argparse.SUPPRESS)
    args = parser.parse_args()
    sizes = [int(value) for value in str(args.rows).split(",") if value.strip()]
    if args.generate_only:
        return generate(sizes[0], Path(args.generate_only))
    base = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench-analyzer-"))
    print(f"machine: {machine()}", flush=True)
    rc = 0
    if not args.skip_analyze:
        figures = {}
        for rows in sizes:
            rc = rc or bench_analyze(base / f"analyze-{rows}", rows, figures)
        if rc == 0 and len(figures) > 1:
            small, large = min(figures), max(figures)
            (s_wall, s_peak), (l_wall, l_peak) = figures[small], figures[large]
            print(
                f"growth {small:,} -> {large:,} invocations (rows x{large / small:g}): wall x{l_wall / s_wall:.2f}, "
                f"peak RSS x{l_peak / s_peak:.2f} [target: peak RSS grows less than x{large / small:g}]",
                flush=True,
            )
    if rc == 0 and args.compare_runs:
        rc = bench_compare(base / "compare", args.compare_runs, args.compare_rows)
    if not args.keep:
        shutil.rmtree(base, ignore_errors=True)
    return rc


def generate_in_child(rows: int, directory: Path) -> Path:
    # A child process: the analyze child must not inherit (and be charged for) the generator's
    # memory through fork.
    subprocess.run([sys.executable, __file__, "--rows", str(rows), "--generate-only", str(directory)], check=True)
    return next(directory.glob("bench-*"))


def bench_analyze(base: Path, rows: int, figures: dict) -> int:
    """Analyse a generated run of ``rows`` invocations as ``faasprof analyze`` would (with plots),
    then with ``--no-plots``; ``figures[rows]`` gets the first's (wall s, peak GiB)."""
    kept = sorted(base.glob("bench-*")) if base.is_dir() else []  # --keep DIR from an earlier call: analysed again
    run_dir = kept[0] if kept else generate_in_child(rows, base)
    target_s, target_gib = ANALYZE_TARGET.get(rows, (60.0 * rows / 10_000_000, 4.0))
    measurements = (
        ("analyze", [], False),
        ("analyze --no-plots", ["--no-plots"], False),
        # Records saved by another tool (or the index deleted): the JSON is parsed, and the index
        # written for the next analysis.
        ("analyze, records without their column index", [], True),
    )
    for label, flags, without_index in measurements:
        if without_index:
            record_columns.remove(rundir.activations_path(run_dir))
        wall, peak_gib, result = measured(["analyze", *flags, str(run_dir)])
        if result.returncode != 0:
            print(f"{label}: exit {result.returncode}\n{result.stderr}")
            return 1
        figures.setdefault(rows, (wall, peak_gib))
        print(
            f"{label}, {rows:,} invocations: {wall:.1f} s wall [target <= {target_s:g} s], peak RSS {peak_gib:.2f} GiB [target <= {target_gib:g} GiB]"
            f"  ({machine()})",
            flush=True,
        )
    summary = json.loads((run_dir / "analysis" / "summary.json").read_text())
    print(
        "modes:",
        ", ".join(f"{i['instance']}={i['phases'][0]['mode']}" for i in summary["instances"]),
        f"| records found {summary['records']['found']:,}, missing {summary['records']['missing']}",
        f"| monitors: {', '.join(summary['monitors'])}",
    )
    return 0


def bench_compare(base: Path, runs: int, rows: int) -> int:
    first = generate_in_child(rows, base / "run-000")
    wall, peak_gib, result = measured(["analyze", "--no-plots", str(first)])
    if result.returncode != 0:
        print(f"analyze {first}: exit {result.returncode}\n{result.stderr}")
        return 1
    run_dirs = [first]
    for k in range(1, runs):
        copy = base / f"run-{k:03d}" / f"{first.name}-{k:03d}"
        shutil.copytree(first, copy, copy_function=os.link)  # hard links: compare only reads
        run_dirs.append(copy)
    print(
        f"compare: {runs} runs of {rows:,} invocations (one analysed in {wall:.1f} s, copied with its analysis)",
        flush=True,
    )
    wall, peak_gib, result = measured(["compare", *map(str, run_dirs), "--out", str(base / "compared")])
    if result.returncode != 0:
        print(f"compare: exit {result.returncode}\n{result.stderr[-2000:]}")
        return 1
    print(
        f"compare, {runs} runs x {rows:,} invocations: {wall:.1f} s wall [target <= {COMPARE_TARGET_S:g} s], peak RSS {peak_gib:.2f} GiB  ({machine()})",
        flush=True,
    )
    return 0


def generate(rows: int, base: Path) -> int:
    rate_each = 500.0
    block_rows = min(rows, BLOCK_ROWS)
    copies = -(-rows // block_rows)
    block_s = block_rows / (4 * rate_each)
    instances = {f"i{k}": {"application": f"fn{k}", "distribution": "Uniform", "rate": rate_each} for k in range(4)}
    t0 = time.perf_counter()
    run_dir, records = write_synthetic_run(
        base, test_name="bench", duration_s=block_s, instances=instances, service_ms=1.0, seed=5, save_records=False
    )
    if copies > 1:
        repeat_invocations(run_dir, copies, block_s)
    # As a run saves them: through faasprof's record writer, which also writes their column index.
    rundir.write_records(rundir.activations_path(run_dir), repeated_records(records, copies, block_s))
    duration_s = block_s * copies
    perf_lines = write_perf_monitor(run_dir, duration_s)
    generated_s = time.perf_counter() - t0
    sizes = {name: (run_dir / name).stat().st_size for name in ("invocations.csv", "activations.jsonl")}
    print(
        f"generated {len(records) * copies:,} records over {duration_s:g} s, {perf_lines:,} perf lines in {generated_s:.1f} s "
        f"(invocations.csv {sizes['invocations.csv'] / 2**20:.0f} MiB, activations.jsonl {sizes['activations.jsonl'] / 2**20:.0f} MiB)",
        flush=True,
    )
    return 0


def copy_prefix(k: int) -> str:
    return f"x{k:03d}"  # not hex: never the id of another copy or of the first block


def repeat_invocations(run_dir: Path, copies: int, block_s: float) -> None:
    """Append ``copies - 1`` copies of the generated block's rows, each ``block_s`` later, with
    activation ids made unique by a non-hex prefix naming the copy; the manifest then plans the
    whole run."""
    lines = (run_dir / rundir.INVOCATIONS).read_text().splitlines()[1:]
    rows = [line.split(",") for line in lines]
    block_ns = int(block_s * 1e9)
    with open(run_dir / rundir.INVOCATIONS, "a", encoding="utf-8") as csv_out:
        for k in range(1, copies):
            prefix = copy_prefix(k)
            out = []
            for fields in rows:
                shifted = list(fields)
                shifted[0] = str(int(fields[0]) + k * len(rows))
                for column in (3, 4, 5):
                    if fields[column]:
                        shifted[column] = str(int(fields[column]) + k * block_ns)
                if fields[8]:
                    shifted[8] = prefix + fields[8][len(prefix) :]
                out.append(",".join(shifted))
            csv_out.write("\n".join(out) + "\n")
    manifest = rundir.read_manifest(run_dir)
    manifest.workload["test_duration_in_seconds"] = block_s * copies
    manifest.counts = {"planned": len(rows) * copies, "sent": len(rows) * copies, "failed": 0}
    rundir.write_manifest(run_dir, manifest)


def repeated_records(records: list[dict], copies: int, block_s: float):
    """The block's records, then ``copies - 1`` copies matching ``repeat_invocations``' rows."""
    yield from records
    block_ms = int(block_s * 1e3)
    for k in range(1, copies):
        prefix = copy_prefix(k)
        for r in records:
            yield {
                **r,
                "activationId": prefix + r["activationId"][len(prefix) :],
                "start": r["start"] + k * block_ms,
                "end": r["end"] + k * block_ms,
            }


if __name__ == "__main__":
    sys.exit(main())
