"""The invocation frame of an analysed run, loaded on demand and in part: only the columns asked
for, one phase or one time window, and never more than a stated size (``read_frame``).

``load_run`` builds the whole frame in memory, which at tens of millions of invocations is
gigabytes. A notebook that wants one column of one phase reads ``analysis/invocations.parquet``
(written by ``faasprof analyze``) instead: Arrow prunes row groups by their statistics, so a
window or a phase reads only the row groups it overlaps. Before loading, the rows the filter keeps
are counted and their size estimated from the file's own column sizes; a request over
``max_bytes`` is refused in one line that says how to narrow it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Sequence

import pandas as pd
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from faasprof import rundir
from faasprof.errors import ConfigError, FormatError

DEFAULT_MAX_BYTES = 2 * 2**30  # what a notebook may load without asking (``max_bytes``)
FRAME_FILE = "invocations.parquet"  # in ``analysis/`` (``analysis.analyze_run`` writes it)


def frame_path(run_dir: str | os.PathLike) -> Path:
    return Path(run_dir) / rundir.ANALYSIS / FRAME_FILE


def _filter(phase: int | None, window_s: tuple[float, float] | None) -> ds.Expression | None:
    expression: ds.Expression | None = None
    parts = []
    if phase is not None:
        parts.append(ds.field("phase") == int(phase))
    if window_s is not None:
        start_s, end_s = window_s
        parts.append((ds.field("intended_s") >= float(start_s)) & (ds.field("intended_s") < float(end_s)))
    for part in parts:
        expression = part if expression is None else expression & part
    return expression


def estimated_bytes(path: Path, columns: Sequence[str], rows: int) -> int:
    """In-memory bytes of ``rows`` rows of ``columns``, from the file's uncompressed column sizes
    (at least 8 bytes a value: a float64 or an index)."""
    meta = pq.read_metadata(path)
    if meta.num_rows == 0:
        return 0
    sizes = dict.fromkeys(columns, 0)
    for group in range(meta.num_row_groups):
        row_group = meta.row_group(group)
        for k in range(row_group.num_columns):
            chunk = row_group.column(k)
            if chunk.path_in_schema in sizes:
                sizes[chunk.path_in_schema] += chunk.total_uncompressed_size
    per_row = sum(max(size / meta.num_rows, 8.0) for size in sizes.values())
    return int(per_row * rows)


def read_frame(
    run_dir: str | os.PathLike,
    columns: Sequence[str] | None = None,
    phase: int | None = None,
    window_s: tuple[float, float] | None = None,
    max_bytes: int | None = DEFAULT_MAX_BYTES,
) -> pd.DataFrame:
    """The analysed run's invocation frame, only ``columns`` (None: all), only rows of ``phase``
    (the frame's ``phase`` column) and/or planned in ``window_s`` = [start, end) seconds of the
    run. ``ConfigError`` before loading more than ``max_bytes`` (None: no limit) or for a column the
    frame lacks; ``FormatError`` when the run was not analysed."""
    path = frame_path(run_dir)
    if not path.is_file():
        raise FormatError(f"{path}: missing; run faasprof analyze {run_dir} first")
    dataset = ds.dataset(path, format="parquet")
    names = list(dataset.schema.names)
    wanted = list(columns) if columns is not None else [n for n in names if not n.startswith("__")]
    unknown = [c for c in wanted if c not in names]
    if unknown:
        raise ConfigError(f"{path}: no column {', '.join(unknown)}; the frame's columns are {', '.join(names[:40])}")
    expression = _filter(phase, window_s)
    rows = dataset.count_rows(filter=expression)
    size = estimated_bytes(path, wanted, rows)
    if max_bytes is not None and size > max_bytes:
        raise ConfigError(
            f"{path}: {rows:,} rows of {len(wanted)} columns need about {size / 2**30:.2f} GiB in memory, over "
            f"max_bytes={max_bytes / 2**30:.2f} GiB; ask for fewer columns (columns=[...]), one phase (phase=N) "
            "or a window (window_s=(start, end)), or raise max_bytes"
        )
    # pandas' reader keeps the frame's dtypes (categories, nullable ints) from the file's metadata.
    filters = expression if expression is not None else None
    return pd.read_parquet(path, columns=wanted, filters=filters)
