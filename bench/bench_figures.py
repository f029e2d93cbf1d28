"""Benchmark: the out-of-core figures of ``faasprof analyze`` alone (``FAASPROF_ENGINE_ROWS=0``: the
tables, the summary, the plots and the report from ``analysis/invocations.parquet``), at sizes the
in-memory row builder cannot reach yet: 100 million rows.

Takes a run that ``bench/bench_analyzer.py --keep DIR`` generated and analysed (its
``analysis/invocations.parquet``, the 45-column frame), and writes a run K times as long: the frame
repeated K times by DuckDB (streaming, in bounded memory), each copy's times shifted by the run's
duration, its ``phase``/``steady``/``warmup`` columns recomputed for the longer run, the manifest's
duration, instance windows and planned count scaled; only the columns the figures read are kept. Then a fresh child runs ``faasprof analyze``
out of core on it with the row builder replaced by a link to that file (the rows' build is
``rows_sql``'s part of issue 46, measured by its own benchmark), and reports its wall time and peak
RSS (``ru_maxrss``). Prints each figure beside the issue's target (the whole analyze: 100 million
in 5 minutes and 4 GiB); never passes or fails.

    .venv/bin/python bench/bench_analyzer.py --rows 10000000 --only-analyze --keep /tmp/bench-analyzer
    .venv/bin/python bench/bench_figures.py --source /tmp/bench-analyzer/analyze-10000000 --times 10 --keep /tmp/bench-figures
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from faasprof import rundir  # noqa: E402
from faasprof.analyzer import engine  # noqa: E402
from faasprof.analyzer import stats as stats_mod  # noqa: E402

# The child: analyze out of core with the rows already written (linked in place of build_rows).
CHILD = """
import json, os, resource, sys, time
from pathlib import Path
from faasprof.analyzer import analysis, outofcore
run_dir, frame, records = Path(sys.argv[1]), Path(sys.argv[2]), json.loads(sys.argv[3])
def linked(run_dir, manifest, out_path):
    os.link(frame, out_path)
    return outofcore.RowsBuilt(records_info=records, warnings=[], metric_problems=[], host_attribution=None)
analysis.build_rows = linked
t = time.perf_counter()
analysis.analyze_run(run_dir, fetch=False, plots=True)
print(f"wall_s={time.perf_counter() - t:.1f} maxrss_kib={resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}")
"""
TIME_COLUMNS_S = ("intended_s", "platform_start_s", "platform_end_s")
TIME_COLUMNS_NS = ("intended_ns", "sent_ns", "done_ns")


def machine() -> str:
    return f"{os.cpu_count()} CPUs, load average " + ", ".join(f"{v:.2f}" for v in os.getloadavg())


def repeat_run(source: Path, times: int, out: Path) -> tuple[Path, Path, dict]:
    """The run ``times`` as long: (run dir, its frame's Parquet, its records' figures)."""
    manifest = json.loads(rundir.manifest_path(source).read_text())
    summary = json.loads((source / rundir.ANALYSIS / "summary.json").read_text())
    duration = float(manifest["workload"]["test_duration_in_seconds"])
    run_dir = out / "run"
    frame = out / "invocations.parquet"
    records = {
        k: v * times if isinstance(v, int) and k in ("found", "with_activation_id") else v
        for k, v in summary["records"].items()
        if k != "monitors"
    }
    written = out / "written"
    if frame.exists() and written.exists() and written.read_text() == f"{source} x {times}":
        print(f"reusing {frame} ({source} x {times}, --keep of an earlier call)", flush=True)
        return run_dir, frame, records
    if run_dir.exists():
        shutil.rmtree(run_dir)
    run_dir.mkdir(parents=True)
    manifest["workload"]["test_duration_in_seconds"] = duration * times
    for spec in manifest["workload"]["instances"].values():
        if "activity_window" in spec:
            spec["activity_window"] = [spec["activity_window"][0], spec["activity_window"][1] * times]
    manifest["counts"] = {k: v * times for k, v in (manifest.get("counts") or {}).items()}
    rundir.manifest_path(run_dir).write_text(json.dumps(manifest))
    (run_dir / rundir.INVOCATIONS).write_text(",".join(rundir.INVOCATION_COLUMNS) + "\n")
    # The generator's own connection, not the measured child's: 1GB ran out writing ten copies.
    connection = engine.connect(engine.EngineSettings(memory_limit="6GB", threads=2))
    columns = [
        r[0]
        for r in connection.execute(
            f"DESCRIBE SELECT * FROM read_parquet('{source / rundir.ANALYSIS / 'invocations.parquet'}')"
        ).fetchall()
    ]
    shift_s, shift_ns = f"(k * {duration!r})", f"(k * {int(duration * 1e9)}::BIGINT)"  # k: the copy
    steady_from = min(2.0, 0.2 * duration * times)
    replaced = {
        **{c: f"{c} + {shift_s} AS {c}" for c in TIME_COLUMNS_S if c in columns},
        **{c: f"{c} + {shift_ns} AS {c}" for c in TIME_COLUMNS_NS if c in columns},
        "phase": "0::BIGINT AS phase",
        "steady": f"(intended_s + {shift_s}) >= {steady_from} AS steady",
        "warmup": "false AS warmup",
    }
    # The columns the out-of-core figures read (the ids, timestamps and texts of the rest would
    # only make the copy slower to write: 200 MB a minute here with all 45).
    read = {*stats_mod.STATS_COLUMNS, *TIME_COLUMNS_NS, "phase", "steady", "warmup", "error", "error_text", "seq"}
    select = ", ".join(replaced.get(c, f'"{c}"') for c in columns if c in read)
    t = time.perf_counter()
    connection.execute(
        # One streamed copy per k (a cross join with range() would first hold the whole source).
        "COPY ("
        + " UNION ALL ".join(
            f"SELECT {select.replace('k *', f'{k} *')} FROM read_parquet('{source / rundir.ANALYSIS / 'invocations.parquet'}')"
            for k in range(times)
        )
        + f") TO '{frame}' (FORMAT PARQUET, ROW_GROUP_SIZE 1048576)"
    )
    (rows,) = connection.execute(f"SELECT count(*) FROM read_parquet('{frame}')").fetchone() or (0,)
    connection.close()
    print(f"wrote {rows:,} rows ({times} x {source.name}) in {time.perf_counter() - t:.1f} s ({machine()})", flush=True)
    (out / "written").write_text(f"{source} x {times}")
    return run_dir, frame, records


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--source", required=True, help="bench_analyzer's kept folder of one size (analyze-N) or its run"
    )
    parser.add_argument("--times", type=int, default=10, help="how many times the run is repeated (default 10)")
    parser.add_argument("--keep", required=True, metavar="DIR", help="where the long run is written")
    args = parser.parse_args()
    source = Path(args.source)
    if not rundir.manifest_path(source).exists():
        source = next(source.glob("bench-*"))
    run_dir, frame, records = repeat_run(source, args.times, Path(args.keep))
    environ = {**os.environ, "FAASPROF_ENGINE_ROWS": "0"}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(run_dir), str(frame), json.dumps(records)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=environ,
    )
    if done.returncode != 0:
        print(done.stderr)
        return 1
    figures = dict(item.split("=") for item in done.stdout.split()[-2:])
    rows = json.loads((run_dir / rundir.ANALYSIS / "summary.json").read_text())["run"]["planned"]
    print(
        f"analyze out of core, figures alone, {rows:,} invocations: {figures['wall_s']} s wall [target <= 300 s], "
        f"peak RSS {int(figures['maxrss_kib']) / 2**20:.2f} GiB [target <= 4 GiB]  ({machine()})",
        flush=True,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
