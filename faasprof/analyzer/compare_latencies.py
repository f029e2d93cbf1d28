"""What ``compare`` reads of each run beyond its summary, in memory that does not grow with the
number of runs.

The percentiles and their 95 % intervals of an instance × phase (the percentile verdicts) are the
run's own ``phase_stats`` figures, over the same rows (successful invocations planned in the
phase's steady window), so they come from ``analysis/phase_stats.parquet`` (a row per instance ×
phase; ``summary.json`` holds the same figures rounded) and no invocation is read for them.
Only the Mann-Whitney test and the overlaid CDFs need the latencies themselves; those are read from
``analysis/invocations.parquet`` one run at a time (the baseline's kept while the others pass),
three columns of the steady, successful rows only (``READ_COLUMNS``, filtered by Arrow as it
reads), and a run's CDF is kept as the thinned points a plot draws, never as its samples.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping

import numpy as np
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from faasprof import rundir
from faasprof.analyzer import frame_loader
from faasprof.analyzer.plots import _ecdf_points
from faasprof.errors import FormatError

Key = tuple[str, int]  # (instance, phase)
READ_COLUMNS = ("instance", "phase", "completion_latency_ms")
FILTER_COLUMNS = ("steady", "successful")
METRIC = "completion_latency_ms"
PHASE_STATS = "phase_stats.parquet"  # in ``analysis/``: one row per instance × steady phase


def read_latencies(run_dir: str | os.PathLike) -> dict[Key, np.ndarray]:
    """Per instance × phase, the completion latencies (ms, finite) of the successful invocations
    planned in the phase's steady window, of one analysed run: ``READ_COLUMNS`` of the rows that
    pass ``FILTER_COLUMNS``, nothing else."""
    path = frame_loader.frame_path(run_dir)
    if not path.is_file():
        raise FormatError(f"{path}: missing; run faasprof analyze {run_dir} first")
    table = ds.dataset(path, format="parquet").to_table(
        columns=list(READ_COLUMNS),
        filter=(ds.field("steady") == True) & (ds.field("successful") == True),  # noqa: E712
    )
    frame = table.to_pandas()
    del table
    values = frame[METRIC].to_numpy(dtype="float64")
    groups = frame.groupby([frame["instance"].astype(str), frame["phase"].astype("int64")], sort=True).indices
    out: dict[Key, np.ndarray] = {}
    for (instance, phase), positions in groups.items():
        group = values[positions]
        out[(str(instance), int(phase))] = group[np.isfinite(group)]
    return out


def phase_blocks(run_dir: str | os.PathLike, prefix: str = "v") -> dict[Key, dict[str, float]]:
    """Per instance × phase, the run's completion latency figures (its ``phase_stats``, at full
    precision: the summary rounds them) as ``stats.percentile_block`` keys with ``prefix``."""
    path = Path(run_dir) / rundir.ANALYSIS / PHASE_STATS
    if not path.is_file():
        raise FormatError(f"{path}: missing; run faasprof analyze {run_dir} first")
    names = pq.read_schema(path).names
    columns = ["instance", "phase", *(name for name in names if name.startswith(METRIC + "_"))]
    frame = pq.read_table(path, columns=columns).to_pandas()
    out: dict[Key, dict[str, float]] = {}
    for row in frame.to_dict("records"):
        block = {
            prefix + key[len(METRIC) :]: float(value) for key, value in row.items() if key.startswith(METRIC + "_")
        }
        out[(str(row["instance"]), int(row["phase"]))] = block
    return out


def cdf_points(latencies: Mapping[Key, np.ndarray]) -> dict[Key, tuple[np.ndarray, np.ndarray]]:
    """The thinned empirical CDF of each instance × phase, as the overlaid plot draws it."""
    return {key: _ecdf_points(values) for key, values in latencies.items()}
