"""Benchmark: ``faasprof analyze`` on a run of 1 to 10 million invocations with records and
monitoring data, and ``faasprof compare`` over many runs.

Generates a synthetic run directory vectorised, a million rows at a time (``generate``: the queue
model of ``tests/test_analyzer_synthetic.py`` solved with numpy, four instances of four functions
at 500/s each, Uniform arrivals, an OpenWhisk-shaped record for every invocation serialised by
Arrow as ``json.dumps`` writes ``test_analyzer_synthetic.record``; 10 million rows in a few
minutes, most of it the one DuckDB parse that writes the records' column index,
``activations.columns.npz``, as a run that saved its records has it) plus a ``perf stat -I 100``
monitor output built by repeating the intervals of a recorded real sample
(``tests/data/monitoring/perf/perf_stat_system_interval.csv``) over the whole run, then times
``faasprof analyze RUN_DIR`` as a subprocess and reports its wall time and peak RSS (its own
``ru_maxrss``, read at exit by the child).

``--compare-runs N`` then analyses one run of ``--compare-rows`` rows, copies it N−1 times (the
analysis included, as a cached summary would be) and times ``faasprof compare`` over all N.

Targets (issue 46, which tightened issue 22's 60 s): 10 million invocations in at most 20 s, 100
million in at most 5 minutes, both in at most 4 GiB; compare over 100 runs of 100,000 rows in at
most 30 s (issue 22). Prints each figure next to its target; never passes or fails.

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

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.compute as pc  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
from test_analyzer_synthetic import WALL_ZERO_NS  # noqa: E402

from faasprof import rundir  # noqa: E402
from faasprof.rundir import record_columns  # noqa: E402
from faasprof.rundir.records import read_records  # noqa: E402

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


ANALYZE_TARGET = {10_000_000: (20.0, 4.0), 100_000_000: (300.0, 4.0)}  # rows: (seconds, GiB), issue 46
COMPARE_TARGET_S = 30.0  # 100 runs of 100,000 rows
GENERATE_BLOCK_ROWS = 1_000_000  # rows generated and written at a time
# The queue model's constants (``test_analyzer_synthetic.write_synthetic_run``'s, service 1 ms).
PAUSE_GRACE_MS, LATENESS_MS, ACCEPT_MS, SERVICE_MS = 50.0, 0.2, 0.5, 1.0
COLD_WAIT_MS, INIT_MS, WARM_GAP_MS = 300.0, 120.0, 0.3


def measured(
    args: list[str], environ: dict[str, str] | None = None
) -> tuple[float, float, subprocess.CompletedProcess]:
    """Run ``faasprof ARGS`` in a fresh interpreter: (wall s, peak RSS GiB, the result)."""
    t = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-c", MEASURED_CLI, *args], cwd=ROOT, capture_output=True, text=True, env=environ
    )
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
    parser.add_argument(
        "--engine",
        choices=("auto", "memory", "outofcore"),
        default="auto",
        help="analyze in memory, out of core (FAASPROF_ENGINE_ROWS 0), or as the setting chooses (default)",
    )
    parser.add_argument(
        "--only-analyze",
        action="store_true",
        help="time plain `faasprof analyze` only (not --no-plots, nor without the index)",
    )
    parser.add_argument(
        "--rows-only",
        action="store_true",
        help="time the out-of-core row builder alone (analyzer.rows_sql) on columnar runs (bench/columnar_run.py)",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="with --rows-only: compare its rows with load_run's frame (up to 10 million)",
    )
    parser.add_argument("--generate-only", metavar="DIR", help=argparse.SUPPRESS)
    args = parser.parse_args()
    sizes = [int(value) for value in str(args.rows).split(",") if value.strip()]
    if args.generate_only:
        return generate(sizes[0], Path(args.generate_only))
    base = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench-analyzer-"))
    print(f"machine: {machine()}", flush=True)
    rc = 0
    if args.rows_only:
        for rows in sizes:
            rc = rc or bench_rows(base / f"rows-{rows}", rows, args.check)
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
        return rc
    if not args.skip_analyze:
        figures = {}
        for rows in sizes:
            rc = rc or bench_analyze(base / f"analyze-{rows}", rows, figures, ENGINES[args.engine], args.only_analyze)
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


# FAASPROF_ENGINE_ROWS for each --engine (None: as the environment has it).
ENGINES = {"auto": None, "memory": str(2**62), "outofcore": "0"}


def bench_analyze(base: Path, rows: int, figures: dict, engine_rows: str | None = None, only: bool = False) -> int:
    """Analyse a generated run of ``rows`` invocations as ``faasprof analyze`` would (with plots),
    then with ``--no-plots``; ``figures[rows]`` gets the first's (wall s, peak GiB)."""
    environ = dict(os.environ)
    if engine_rows is not None:
        environ["FAASPROF_ENGINE_ROWS"] = engine_rows
    kept = sorted(base.glob("bench-*")) if base.is_dir() else []  # --keep DIR from an earlier call: analysed again
    run_dir = kept[0] if kept else generate_in_child(rows, base)
    target_s, target_gib = ANALYZE_TARGET.get(rows, (20.0 * rows / 10_000_000, 4.0))
    measurements = (
        ("analyze", [], False),
        ("analyze --no-plots", ["--no-plots"], False),
        # Records saved by another tool (or the index deleted): the JSON is parsed, and the index
        # written for the next analysis.
        ("analyze, records without their column index", [], True),
    )
    for label, flags, without_index in measurements[:1] if only else measurements:
        label += f" (FAASPROF_ENGINE_ROWS={environ.get('FAASPROF_ENGINE_ROWS', 'default')})"
        if without_index:
            record_columns.remove(rundir.activations_path(run_dir))
        wall, peak_gib, result = measured(["analyze", *flags, str(run_dir)], environ)
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


# The row builder alone in a fresh interpreter (``engine.connect()``'s settings from the
# environment), reporting its wall time and its own peak RSS; the rows' file at argv[2].
MEASURED_ROWS = (
    "import resource, sys, time; from pathlib import Path; from faasprof import rundir; "
    "from faasprof.analyzer import engine, rows_sql; run = Path(sys.argv[1]); t = time.perf_counter(); "
    "con = engine.connect(); con.execute('SET enable_progress_bar = false'); info = rows_sql.write_invocation_rows(run, rundir.read_manifest(run), Path(sys.argv[2]), con); "
    'print(f\'rows={info.rows} found={info.records_info["found"]} wall_s={time.perf_counter() - t:.2f} '
    "maxrss_kib={resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}')"
)
# load_run's frame written as analyze writes it, for --check.
PANDAS_ROWS = (
    "import sys; from faasprof.analyzer import analysis, frames; run = analysis.load_run(sys.argv[1]); "
    "frames.write_parquet(run.invocations, __import__('pathlib').Path(sys.argv[2]), kind='invocations')"
)
ROWS_SHARE_S = {10_000_000: 10.0, 100_000_000: 150.0}  # half of analyze's targets, the rest the figures'
CHECK_MAX_ROWS = 10_000_000


def bench_rows(base: Path, rows: int, check: bool) -> int:
    """Generate a columnar run of ``rows`` (a child: ``columnar_run.py``), time the row builder in
    another, and with ``check`` compare its file with ``load_run``'s frame column by column."""
    kept = sorted(base.glob("bench-*")) if base.is_dir() else []
    if kept:
        run_dir = kept[0]
    else:
        t = time.perf_counter()
        subprocess.run([sys.executable, str(ROOT / "bench" / "columnar_run.py"), str(rows), str(base)], check=True)
        run_dir = next(base.glob("bench-*"))
        print(f"generation: {time.perf_counter() - t:.1f} s wall ({machine()})", flush=True)
    out = base / "rows.parquet"
    t = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-c", MEASURED_ROWS, str(run_dir), str(out)], cwd=ROOT, capture_output=True, text=True
    )
    wall = time.perf_counter() - t
    if result.returncode != 0:
        print(f"row builder: exit {result.returncode}\n{result.stderr[-3000:]}")
        return 1
    line = next((line for line in reversed(result.stdout.splitlines()) if line.startswith("rows=")), "")
    if not line:
        print(f"row builder: no figures in its output\n{result.stdout[-2000:]}\n{result.stderr[-2000:]}")
        return 1
    figures = dict(item.split("=") for item in line.split())
    peak_gib = int(figures["maxrss_kib"]) / 2**20
    share = ROWS_SHARE_S.get(rows, 10.0 * rows / 10_000_000)
    print(
        f"row builder, {rows:,} invocations ({int(figures['found']):,} records): {float(figures['wall_s']):.1f} s "
        f"({wall:.1f} s with the interpreter) [its share of analyze's target: <= {share:g} s], peak RSS {peak_gib:.2f} GiB "
        f"[analyze's target <= 4 GiB, the figures' included]  ({machine()}, FAASPROF_ENGINE_MEMORY="
        f"{os.environ.get('FAASPROF_ENGINE_MEMORY', '1GB (default)')})",
        flush=True,
    )
    if check and rows <= CHECK_MAX_ROWS:
        return check_rows(run_dir, out, base / "pandas.parquet")
    return 0


def check_rows(run_dir: Path, rows_file: Path, pandas_file: Path) -> int:
    """Compare the row builder's file with load_run's frame (written by a child), a column at a
    time: the same names, dtypes and values, bit for bit."""
    t = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", PANDAS_ROWS, str(run_dir), str(pandas_file)], cwd=ROOT, capture_output=True, text=True
    )
    if done.returncode != 0:
        print(f"load_run: exit {done.returncode}\n{done.stderr[-3000:]}")
        return 1
    want_schema, got_schema = pq.read_schema(pandas_file), pq.read_schema(rows_file)
    differ = [] if got_schema.equals(want_schema, check_metadata=False) else ["the Arrow schema"]
    for name in want_schema.names:
        want = pq.read_table(pandas_file, columns=[name]).to_pandas()[name]
        got = pq.read_table(rows_file, columns=[name]).to_pandas()[name]
        try:
            pd.testing.assert_series_equal(got, want, check_exact=True)
        except AssertionError:
            differ.append(name)
    print(
        f"check: {len(want_schema.names)} columns compared with load_run's frame in {time.perf_counter() - t:.1f} s: "
        + ("all equal" if not differ else f"DIFFERENT: {', '.join(differ)}"),
        flush=True,
    )
    return 1 if differ else 0


RATE_EACH = 500.0  # calls per second of each of the four instances


def new_run(rows: int, base: Path) -> tuple[Path, int, float]:
    """A new run directory under ``base`` with the manifest of ``rows`` invocations of four
    instances of four functions at ``RATE_EACH`` each; returns it, the planned instants per
    instance (the last may plan fewer than four) and the duration."""
    instances = {f"i{k}": {"application": f"fn{k}", "distribution": "Uniform", "rate": RATE_EACH} for k in range(4)}
    steps = -(-rows // 4)
    duration_s = steps / RATE_EACH
    run_dir = rundir.create_run_dir(base, "bench")
    workload = {
        "test_name": "bench",
        "test_duration_in_seconds": duration_s,
        "random_seed": 5,
        "blocking_cli": True,
        "instances": instances,
        "platform": {"localwhisk": {"pause_grace_ms": PAUSE_GRACE_MS}},
    }
    manifest = rundir.new_manifest("bench", workload, rundir.ClockAnchor(0, WALL_ZERO_NS))
    manifest.status = "complete"
    manifest.platform = {"kind": "synthetic", "settings": {"pause_grace_ms": PAUSE_GRACE_MS}}
    manifest.counts = {"planned": rows, "sent": rows, "failed": 0}
    rundir.write_manifest(run_dir, manifest)
    return run_dir, steps, duration_s


def generate(rows: int, base: Path) -> int:
    """Write a run of ``rows`` invocations (four instances of four functions at 500/s each, a
    record for every one) into a new run directory under ``base``, vectorised block by block."""
    t0 = time.perf_counter()
    run_dir, steps, duration_s = new_run(rows, base)
    rate_each, per_block = RATE_EACH, GENERATE_BLOCK_ROWS // 4
    rng = np.random.default_rng(5)
    queue = np.full(4, -np.inf)  # per function: the running maximum of Lindley's recursion
    served = np.zeros(4)  # per function: service time summed over the blocks before
    with open(run_dir / rundir.INVOCATIONS, "wb") as log, open(rundir.activations_path(run_dir), "wb") as records:
        log.write((",".join(rundir.INVOCATION_COLUMNS) + "\n").encode())
        for first_step in range(0, steps, per_block):
            block = synthetic_block(rng, first_step, min(per_block, steps - first_step), rate_each, queue, served)
            block = {k: v[: max(0, rows - 4 * first_step)] for k, v in block.items()}
            log.writelines(_joined_lines(_invocation_fields(block)))
            records.writelines(_joined_lines(_record_fields(block)))
    # The records' column index, as a run that saved them has it (parsed once, with DuckDB).
    read_records(rundir.activations_path(run_dir), refresh_index=True)
    perf_lines = write_perf_monitor(run_dir, duration_s)
    sizes = {name: (run_dir / name).stat().st_size for name in ("invocations.csv", "activations.jsonl")}
    print(
        f"generated {rows:,} invocations and records over {duration_s:g} s, {perf_lines:,} perf lines in "
        f"{time.perf_counter() - t0:.1f} s (invocations.csv {sizes['invocations.csv'] / 2**20:.0f} MiB, "
        f"activations.jsonl {sizes['activations.jsonl'] / 2**20:.0f} MiB)",
        flush=True,
    )
    return 0


def synthetic_block(
    rng: np.random.Generator, first_step: int, steps: int, rate: float, queue: np.ndarray, served: np.ndarray
) -> dict[str, np.ndarray]:
    """``steps`` planned instants of the four instances from ``first_step`` on, in time order (the
    four of an instant in instance order, as ``synthetic_plan`` sorts them), with the queue model of
    ``test_analyzer_synthetic`` (one container per function, FIFO; the first call cold; 0.3 ms
    between calls; service 1 ms + up to 10 %) solved vectorised: each call ends at
    ``max over earlier j (accepted_j + the services from j on)`` (Lindley's recursion), carried
    from block to block in ``queue`` and ``served``. A container is never idle for the pause
    grace at this rate, so no call is resumed."""
    n = steps * 4
    seq = np.arange(4 * first_step, 4 * first_step + n, dtype=np.int64)
    function = (seq % 4).astype(np.int64)
    intended_ns = ((seq // 4).astype(np.float64) * 1e9 / rate + 0.5e9 / rate).astype(np.int64)
    accepted_ms = intended_ns / 1e6 + LATENESS_MS + ACCEPT_MS
    exec_ms = SERVICE_MS * (1.0 + 0.1 * rng.random(n))
    cold = seq < 4
    init_ms = np.where(cold, INIT_MS, 0.0)
    # Time a call holds its container after it may start: the wait to get it, its init, its work.
    service = np.where(cold, COLD_WAIT_MS, WARM_GAP_MS) + init_ms + exec_ms
    end_ms = np.empty(n)
    for f in range(4):
        mine = np.nonzero(function == f)[0]
        total = served[f] + np.cumsum(service[mine])
        # end_i = S_i + max_{j<=i}(accepted_j - S_{j-1}), S the running sum of the services.
        lead = accepted_ms[mine] - (total - service[mine])
        running = np.maximum.accumulate(np.maximum(lead, queue[f]))
        end_ms[mine] = total + running
        queue[f], served[f] = running[-1], total[-1]
    ready_ms = end_ms - exec_ms - init_ms
    start_ms = (WALL_ZERO_NS // 1_000_000 + np.floor(ready_ms)).astype(np.int64)
    duration = np.round(init_ms + exec_ms).astype(np.int64)
    raw = rng.integers(0, 256, size=(n, 16), dtype=np.uint8)
    ids = np.frombuffer(raw.tobytes().hex().encode(), dtype="S32").astype(str)
    return {
        "seq": seq,
        "function": function,
        "intended_ns": intended_ns,
        "sent_ns": (intended_ns / 1e6 + LATENESS_MS) * 1e6,
        "done_ns": (end_ms + 1.0) * 1e6,
        "id": ids,
        "wait_ms": np.round(ready_ms - accepted_ms).astype(np.int64),
        "init": cold,
        "duration": duration,
        "start": start_ms,
        "end": start_ms + duration,
    }


def _text(values: np.ndarray) -> pa.Array:
    return pc.cast(pa.array(values), pa.string())


def _joined_lines(pieces: list) -> list[memoryview]:
    """Rows of text joined from ``pieces`` (arrays, or constant strings), a line each, as the bytes
    Arrow laid them out in (no copy per row), a piece per chunk."""
    lines = pc.binary_join_element_wise(*pieces, "\n", "")  # the last argument: the separator
    out = []
    for chunk in lines.chunks if isinstance(lines, pa.ChunkedArray) else [lines]:
        if len(chunk):
            offsets = np.frombuffer(chunk.buffers()[1], dtype=np.int32)[chunk.offset : chunk.offset + len(chunk) + 1]
            out.append(memoryview(chunk.buffers()[2])[offsets[0] : offsets[-1]])
    return out


def _invocation_fields(block: dict[str, np.ndarray]) -> list:
    """``invocations.csv``'s fields (``rundir.INVOCATION_COLUMNS``): every call answered 200."""
    names = pa.array([f"i{f}" for f in range(4)]).take(pa.array(block["function"]))
    functions = pa.array([f"fn{f}" for f in range(4)]).take(pa.array(block["function"]))
    sent = block["sent_ns"].astype(np.int64)
    done = block["done_ns"].astype(np.int64)
    return [
        _text(block["seq"]), ",", names, ",", functions, ",", _text(block["intended_ns"]), ",", _text(sent),
        ",", _text(done), ",ok,200,", pa.array(block["id"]), ",",
    ]  # fmt: skip


def _record_fields(block: dict[str, np.ndarray]) -> list:
    """Each call's activation record as ``test_analyzer_synthetic.record`` shapes it, serialised
    as ``json.dumps`` would (the same keys in the same order)."""
    functions = pa.array([f"fn{f}" for f in range(4)]).take(pa.array(block["function"]))
    init = pa.array(np.where(block["init"], f', {{"key": "initTime", "value": {int(INIT_MS)}}}', ""))
    return [
        '{"activationId": "', pa.array(block["id"]), '", "annotations": [{"key": "path", "value": "guest/', functions,
        '"}, {"key": "waitTime", "value": ', _text(block["wait_ms"]),
        '}, {"key": "kind", "value": "python:3.11"}, {"key": "timeout", "value": false}, {"key": "limits", "value": '
        '{"concurrency": 1, "logs": 10, "memory": 256, "timeout": 60000}}', init,
        '], "duration": ', _text(block["duration"]), ', "end": ', _text(block["end"]),
        ', "logs": [], "name": "', functions, '", "namespace": "guest", "publish": false, "response": {"result": '
        '{"ok": true}, "size": 11, "status": "success", "success": true}, "start": ', _text(block["start"]),
        ', "subject": "guest", "version": "0.0.1"}',
    ]  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
