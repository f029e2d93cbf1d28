"""Per-invocation metrics that installed packages add (entry-point group ``faasprof.metrics``).

A plug-in metric is a ``Metric``: a column of the invocation frame computed from the frame's other
columns (vectorised: the frame in, one value per row out), named with its unit at the end
(``faasprof.analyzer.units``: ``queue_share_ratio`` is no unit, ``cold_penalty_ms`` is ms). The
frame builder adds the columns (``metric_columns``, after every built-in column exists), and
``group_stats`` gives each its percentile block over the successful invocations, so it reaches
``phase_stats``, ``function_stats``, ``summary.json`` and the Parquet files as a built-in metric
does (ARCHITECTURE.md, "Add a metric", for one in the tree).

A metric that raises, or returns the wrong number of values, is a column of NaN with one line in
``frame.attrs["metric_problems"]``: a plug-in never stops an analysis.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import pandas as pd

from faasprof import plugins
from faasprof.analyzer.units import unit_of

PLUGIN_GROUP = "faasprof.metrics"


@dataclass(frozen=True)
class Metric:
    """One plug-in metric: its column ``name`` (ending in its unit), a one-line ``summary``, and
    ``compute(frame)``: one float per row of the invocation frame (NaN where it has no value)."""

    name: str
    summary: str
    compute: Callable[[pd.DataFrame], Any]


def accept_plugin(name: str, loaded: object) -> tuple[Metric | None, str | None]:
    """A plug-in metric as ``faasprof.plugins.load_group`` asks: a ``Metric`` named as its entry
    point, whose name says its unit."""
    if not isinstance(loaded, Metric):
        return None, f"{loaded!r} is not a faasprof.analyzer.metrics.Metric"
    if loaded.name != name:
        return None, f"its name is {loaded.name!r}; set name={name!r} (the entry point's name)"
    if unit_of(name, np.dtype("float64")) is None:
        return None, f"{name!r} does not end in its unit (_ms, _s, _mb, _n, _over_...: faasprof.analyzer.units)"
    return loaded, None


METRICS: tuple[Metric, ...] = tuple(plugin.value for plugin in plugins.load_group(PLUGIN_GROUP, accept_plugin))


def metric_columns(frame: pd.DataFrame, metrics: tuple[Metric, ...] | None = None) -> tuple[dict, list[str]]:
    """``({name: float64 array}, problems)``: each plug-in metric computed on ``frame`` (a name the
    frame already has is a problem and left out; a failure is NaN and a problem)."""
    columns: dict[str, np.ndarray] = {}
    problems: list[str] = []
    for metric in METRICS if metrics is None else metrics:
        if metric.name in frame.columns:
            problems.append(f"metric {metric.name}: the frame already has this column; the plug-in's is left out")
            continue
        try:
            values = np.asarray(metric.compute(frame), dtype="float64")
            if values.shape != (len(frame),):
                raise ValueError(f"{values.shape[0] if values.ndim else 1} values for {len(frame)} invocations")
        except Exception as error:  # a plug-in's bug must not stop the analysis
            problems.append(f"metric {metric.name}: not computed ({type(error).__name__}: {error}); its column is NaN")
            values = np.full(len(frame), np.nan)
        columns[metric.name] = values
    return columns, problems
