"""Benchmark: the out-of-core engine (``faasprof.analyzer.engine``) over an invocation frame of 10 to
100 million rows written as Parquet, with peak RSS and wall time, and its figures checked against
the in-memory statistics (``stats.percentile_block``) where those fit.

The frame is generated vectorised (numpy, one block of ``BLOCK_ROWS`` at a time, each block a row
group of one Parquet file): four instances at 500/s each, lognormal completion latencies with a
slow minute every ten, 2 % failures, start classes; 100 million rows take minutes, not hours.
Generation runs in this process; each analysis in a fresh child that reports its own peak RSS
(``ru_maxrss``), so the generator's memory is never charged to it.

The analysis is what ``phase_stats`` holds per instance × steady phase: the percentile blocks
(p50/p90/p99/p99.9 with 95 % intervals, mean, max, n) of completion latency over successful
invocations, the start-class counts and the per-minute series.

    .venv/bin/python bench/bench_engine.py [--rows 10000000[,100000000]] [--memory 1GB] [--check]
    .venv/bin/python bench/bench_engine.py --analyzer-rows 1000000 --keep DIR
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from faasprof import rundir  # noqa: E402
from faasprof.analyzer import engine  # noqa: E402
from faasprof.analyzer import stats as stats_mod  # noqa: E402
from faasprof.analyzer.analysis import analyze_run  # noqa: E402

BLOCK_ROWS = 4_000_000
INSTANCES = ("i0", "i1", "i2", "i3")
RATE_EACH_RPS = 500.0
START_CLASSES = ("cold", "resumed", "warm")
TARGETS = {10_000_000: (20.0, 4.0), 100_000_000: (300.0, 4.0)}  # rows: (seconds, GiB), issue 46


def generate(rows: int, path: Path, seed: int = 7) -> float:
    """Write ``rows`` invocations to ``path``; returns the seconds it took."""
    t0 = time.perf_counter()
    rng = np.random.default_rng(seed)
    schema = pa.schema(
        [
            ("instance", pa.dictionary(pa.int8(), pa.string())),
            ("intended_s", pa.float64()),
            ("successful", pa.bool_()),
            ("completion_latency_ms", pa.float64()),
            ("start_class", pa.dictionary(pa.int8(), pa.string())),
        ]
    )
    step_s = 1.0 / (RATE_EACH_RPS * len(INSTANCES))
    with pq.ParquetWriter(path, schema, compression="zstd") as writer:
        for first in range(0, rows, BLOCK_ROWS):
            n = min(BLOCK_ROWS, rows - first)
            seq = np.arange(first, first + n, dtype=np.int64)
            intended = seq * step_s
            latency = rng.lognormal(np.log(20.0), 0.6, n)
            latency[(intended // 60) % 10 == 9] *= 3.0  # a slow minute every ten
            klass = rng.choice(3, n, p=[0.001, 0.05, 0.949]).astype(np.int8)
            table = pa.table(
                {
                    "instance": pa.DictionaryArray.from_arrays((seq % len(INSTANCES)).astype(np.int8), list(INSTANCES)),
                    "intended_s": intended,
                    "successful": rng.random(n) >= 0.02,
                    "completion_latency_ms": latency,
                    "start_class": pa.DictionaryArray.from_arrays(klass, list(START_CLASSES)),
                },
                schema=schema,
            )
            writer.write_table(table, row_group_size=1_048_576)
    return time.perf_counter() - t0


def phases_of(rows: int) -> list[dict]:
    """One phase over the whole run, its first 5 % the warm-up (as ``stats.phases`` cuts it)."""
    end_s = rows / (RATE_EACH_RPS * len(INSTANCES))
    return [{"phase": 0, "steady_start_s": end_s * 0.05, "end_s": end_s, "instances": list(INSTANCES)}]


def analyse(path: Path, rows: int, memory: str, temp: Path) -> None:
    """The child: the engine's figures, printed one line each, then its peak RSS."""
    con = engine.connect(engine.EngineSettings(memory_limit=memory, temp_directory=temp))
    source = engine.parquet_source(path)
    t0 = time.perf_counter()
    blocks = engine.steady_phase_blocks(con, source, phases_of(rows))
    classes = engine.class_counts(con, source, ["instance"])
    series = engine.per_minute_series(con, source)
    wall = time.perf_counter() - t0
    for (instance, phase), block in sorted(blocks.items()):
        print(
            f"figures {instance} phase {phase}: n={block['completion_latency_ms_n']} "
            + " ".join(
                f"{k.removeprefix('completion_latency_ms_')}={block[k]!r}"
                for k in block
                if k.startswith("completion_latency_ms_p")
            )
        )
    print(f"classes {int(classes['count'].sum())} rows, series {len(series)} instance-minutes")
    print(f"wall_s={wall:.2f} maxrss_kib={resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}")


def check(path: Path, rows: int, out: str) -> int:
    """The engine's figures against ``stats.percentile_block`` in memory; returns the mismatches."""
    table = pq.read_table(path)
    intended = table["intended_s"].to_numpy()
    ok = table["successful"].to_numpy(zero_copy_only=False)
    latency = table["completion_latency_ms"].to_numpy()
    instance = table["instance"].combine_chunks().indices.to_numpy()
    phase = phases_of(rows)[0]
    steady = (intended >= phase["steady_start_s"]) & (intended < phase["end_s"]) & ok
    figures = {line.split(":")[0]: line for line in out.splitlines() if line.startswith("figures ")}
    bad = 0
    for k, name in enumerate(INSTANCES):
        block = stats_mod.percentile_block(latency[steady & (instance == k)], "completion_latency_ms")
        line = f"figures {name} phase 0: n={block['completion_latency_ms_n']} " + " ".join(
            f"{key.removeprefix('completion_latency_ms_')}={block[key]!r}"
            for key in block
            if key.startswith("completion_latency_ms_p")
        )
        if figures.get(f"figures {name} phase 0") != line:
            bad += 1
            print(f"MISMATCH in memory: {line}\n          engine:    {figures.get(f'figures {name} phase 0')}")
    return bad


def check_analyzer_run(rows: int, base: Path) -> int:
    """``faasprof analyze``'s own frame and ``phase_stats`` of a run of ``rows`` invocations
    (``bench_analyzer``'s generator: records, start classes, four instances) against the engine's
    blocks over ``analysis/invocations.parquet``; prints and returns the figures that differ."""
    if not any(base.glob("bench-*")):
        subprocess.run(
            [
                sys.executable,
                str(ROOT / "bench" / "bench_analyzer.py"),
                "--rows",
                str(rows),
                "--generate-only",
                str(base),
            ],
            check=True,
        )
    run_dir = next(base.glob("bench-*"))
    analyze_run(run_dir, fetch=False, plots=False)
    phase_stats = pd.read_parquet(run_dir / rundir.ANALYSIS / "phase_stats.parquet")
    summary = json.loads((run_dir / rundir.ANALYSIS / "summary.json").read_text())
    con = engine.connect(engine.EngineSettings.from_environment())
    source = engine.parquet_source(run_dir / rundir.ANALYSIS / "invocations.parquet")
    bad = compared = 0
    for column in ("completion_latency_ms", "corrected_latency_ms", "client_latency_ms", "platform_latency_ms"):
        blocks = engine.steady_phase_blocks(con, source, summary["run"]["phases"], column)
        for row in phase_stats.to_dict("records"):
            got = blocks[(row["instance"], row["phase"])]
            for key, value in got.items():
                compared += 1
                expected = float(row[key])
                equal = math.isclose(value, expected, rel_tol=1e-12) if key.endswith("_mean") else value == expected
                if not (equal or (math.isnan(value) and math.isnan(expected))):
                    bad += 1
                    print(
                        f"MISMATCH {row['instance']} phase {row['phase']} {key}: engine {value!r}, analyze {expected!r}"
                    )
    print(
        f"analyze's phase_stats vs the engine, {rows:,} invocations: {compared} figures compared "
        f"(percentiles and intervals exact, means to 1e-12), {bad} differ"
    )
    return bad


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="10000000", help="rows, or several sizes separated by commas")
    parser.add_argument(
        "--memory",
        default=engine.DEFAULT_MEMORY_LIMIT,
        help=f"the engine's memory_limit (default {engine.DEFAULT_MEMORY_LIMIT})",
    )
    parser.add_argument("--check", action="store_true", help="compare with the in-memory statistics")
    parser.add_argument("--keep", metavar="DIR", help="generate into DIR and keep it (reused by a later call)")
    parser.add_argument(
        "--analyzer-rows", type=int, metavar="ROWS", help="check the engine against faasprof analyze on a run of ROWS"
    )
    parser.add_argument("--child", nargs=3, metavar=("PATH", "ROWS", "TEMP"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        analyse(Path(args.child[0]), int(args.child[1]), args.memory, Path(args.child[2]))
        return 0
    base = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench-engine-"))
    base.mkdir(parents=True, exist_ok=True)
    if args.analyzer_rows:
        return 1 if check_analyzer_run(args.analyzer_rows, base / f"analyzer-{args.analyzer_rows}") else 0
    for rows in (int(v) for v in args.rows.split(",") if v.strip()):
        path = base / f"frame-{rows}.parquet"
        if not path.exists():
            seconds = generate(rows, path)
            print(
                f"generated {rows:,} rows in {seconds:.1f} s ({path.stat().st_size / 2**20:.0f} MiB Parquet)",
                flush=True,
            )
        t = time.perf_counter()
        result = subprocess.run(
            [sys.executable, __file__, "--memory", args.memory, "--child", str(path), str(rows), str(base / "spill")],
            capture_output=True,
            text=True,
        )
        total = time.perf_counter() - t
        if result.returncode != 0:
            print(result.stderr[-3000:])
            return 1
        last = result.stdout.strip().splitlines()[-1]
        peak_gib = int(last.split("maxrss_kib=")[1]) / 2**20
        target_s, target_gib = TARGETS.get(rows, (20.0 * rows / 10_000_000, 4.0))
        load = ", ".join(f"{v:.2f}" for v in os.getloadavg())
        print(result.stdout.strip())
        print(
            f"engine, {rows:,} rows, memory_limit {args.memory}: {total:.1f} s wall with start-up [target <= {target_s:g} s], "
            f"peak RSS {peak_gib:.2f} GiB [target <= {target_gib:g} GiB] ({os.cpu_count()} CPUs, load average {load})",
            flush=True,
        )
        if args.check:
            bad = check(path, rows, result.stdout)
            print(f"check against the in-memory statistics: {'equal' if bad == 0 else f'{bad} groups differ'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
