"""A synthetic run directory as a run leaves it once its files are columnar, for the row builder's
benchmark (``bench_analyzer.py --rows-only``): ``invocations.csv`` with its columnar copy
``invocations.columnar.parquet`` (written from the same arrays, the CSV's identity in its footer, as
``rundir.columnar`` would have converted it) and the records as ``activations.parquet`` alone (a run
whose raw ``activations.jsonl`` was removed: ``rundir.record_parquet``). The calls and records are
``bench_analyzer.synthetic_block``'s queue model, a million rows at a time; nothing is parsed.

    .venv/bin/python bench/columnar_run.py ROWS DIR
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import bench_analyzer as base  # noqa: E402  (bench/ is the script's directory)
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from faasprof import rundir
from faasprof.rundir import columnar, record_fields, record_parquet

TYPES = {"BIGINT": pa.int64(), "VARCHAR": pa.string()}
LOG_SCHEMA = pa.schema([(name, TYPES[kind]) for name, kind in columnar.INVOCATION_SQL_TYPES.items()])


def _log_table(block: dict[str, np.ndarray]) -> pa.Table:
    function = pa.array(block["function"])
    n = len(block["seq"])
    return pa.table(
        {
            "seq": block["seq"],
            "instance": pa.array([f"i{f}" for f in range(4)]).take(function),
            "function": pa.array([f"fn{f}" for f in range(4)]).take(function),
            "intended_ns": block["intended_ns"],
            "sent_ns": block["sent_ns"].astype(np.int64),
            "done_ns": block["done_ns"].astype(np.int64),
            "outcome": pa.array(np.full(n, "ok", dtype=object), pa.string()),
            "http_status": np.full(n, 200, dtype=np.int64),
            "activation_id": pa.array(block["id"], pa.string()),
            "error": pa.nulls(n, pa.string()),
        },
        schema=LOG_SCHEMA,
    )


def _records_table(block: dict[str, np.ndarray]) -> pa.Table:
    """The flat columns ``records.read_records`` gives of ``bench_analyzer._record_fields``' JSON."""
    n = len(block["seq"])
    function = pa.array(block["function"])

    def constant(value, kind):
        return pa.array([value], kind).take(pa.array(np.zeros(n, dtype=np.int32)))

    columns = {
        "record_seq": pa.nulls(n, pa.int64()),
        "activation_id": pa.array(block["id"], pa.string()),
        "name": pa.array([f"fn{f}" for f in range(4)]).take(function),
        "namespace": constant("guest", pa.string()),
        "start_ms": block["start"].astype(np.float64),
        "end_ms": block["end"].astype(np.float64),
        "duration_ms": block["duration"].astype(np.float64),
        "wait_ms": block["wait_ms"].astype(np.float64),
        "init_ms": pa.array(np.where(block["init"], base.INIT_MS, np.nan), pa.float64(), from_pandas=True),
        "kind": constant("python:3.11", pa.string()),
        "memory_mb": np.full(n, 256.0),
        "timeout_limit_ms": np.full(n, 60000.0),
        "timed_out": np.zeros(n, dtype=bool),
        "status": constant("success", pa.string()),
        "container_state": pa.nulls(n, pa.string()),
        "record_outcome": constant("success", pa.string()),
        "error_text": pa.nulls(n, pa.string()),
    }
    assert tuple(columns)[1:] == record_fields.RECORD_COLUMNS
    return pa.table(columns, schema=record_parquet.SCHEMA)


def generate_columnar(rows: int, directory: Path) -> Path:
    """A run of ``rows`` invocations (four instances at 500/s each, a record for every one) in a
    new run directory under ``directory``; returns it."""
    t0 = time.perf_counter()
    run_dir, steps, _ = base.new_run(rows, directory)
    rate_each, per_block = base.RATE_EACH, base.GENERATE_BLOCK_ROWS // 4
    rng = np.random.default_rng(5)
    queue, served = np.full(4, -np.inf), np.zeros(4)
    log_parquet = columnar.invocations_parquet_path(run_dir)
    records = record_parquet.RecordsWriter(record_parquet.records_parquet_path(run_dir))
    with (
        open(run_dir / rundir.INVOCATIONS, "wb") as log,
        pq.ParquetWriter(log_parquet, LOG_SCHEMA, compression="zstd") as log_columns,
    ):
        log.write((",".join(rundir.INVOCATION_COLUMNS) + "\n").encode())
        for first_step in range(0, steps, per_block):
            block = base.synthetic_block(rng, first_step, min(per_block, steps - first_step), rate_each, queue, served)
            block = {k: v[: max(0, rows - 4 * first_step)] for k, v in block.items()}
            log.writelines(base._joined_lines(base._invocation_fields(block)))
            log_columns.write_table(_log_table(block), row_group_size=columnar.ROW_GROUP_ROWS)
            records.write(_records_table(block))
        log.flush()
        os.fsync(log.fileno())
        log.close()
        stat = (run_dir / rundir.INVOCATIONS).stat()
        # The footer names the CSV it describes, as columnar.write_invocations_parquet's does.
        log_columns.add_key_value_metadata(
            {
                columnar.VERSION_KEY: str(columnar.COLUMNAR_FORMAT_VERSION),
                columnar.SOURCE_KEY: f"{stat.st_size}:{stat.st_mtime_ns}",
            }
        )
    records.finish("", 0)
    assert columnar.is_current(run_dir)
    print(
        f"generated {rows:,} invocations with their records (columnar) in {time.perf_counter() - t0:.1f} s "
        f"(invocations.csv {stat.st_size / 2**20:.0f} MiB, invocations.columnar.parquet "
        f"{log_parquet.stat().st_size / 2**20:.0f} MiB, activations.parquet "
        f"{record_parquet.records_parquet_path(run_dir).stat().st_size / 2**20:.0f} MiB)",
        flush=True,
    )
    return run_dir


if __name__ == "__main__":
    generate_columnar(int(sys.argv[1]), Path(sys.argv[2]))
