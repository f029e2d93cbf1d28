"""What the plots of a run draw, apart from how it was computed: the points of the latency scatter,
the CDF curves with their marked percentiles, the throughput's counts per time bin, the overview
latency above the monitors. ``faasprof.analyzer.plots`` computes them from the invocation frame of a
run loaded in memory; ``faasprof.analyzer.ooc_plots`` computes the same with DuckDB over
``analysis/invocations.parquet`` for a run analysed out of core, so no plot needs the rows."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class ScatterGroup:
    """The drawn points of one function within one start class (a deterministic subsample)."""

    function: str
    t_s: np.ndarray  # planned send, s since the run's zero
    latency_ms: np.ndarray  # completion latency


@dataclass
class ClassPoints:
    """One start class of the latency scatter: its successful invocations and their drawn points."""

    name: str
    count: int
    groups: list[ScatterGroup] = field(default_factory=list)


@dataclass
class LatencyPoints:
    """``latency_over_time.png``'s data: the classes in legend order, the functions (at most
    ``plots.MAX_FUNCTIONS``, by name) and the failures' points."""

    classes: list[ClassPoints]
    functions: list[str]
    failed_count: int
    failed_t_s: np.ndarray
    failed_latency_ms: np.ndarray


@dataclass
class CdfCurve:
    """One curve of ``cdf.png``: an instance × steady phase's successful completion latencies as
    the points of its empirical CDF, with the marked percentiles (of all its values)."""

    instance: str
    phase: int
    mode: str
    n: int
    x_ms: np.ndarray
    y: np.ndarray
    marks: list[tuple[float, float]]  # (percentile, value ms)


@dataclass
class ThroughputCounts:
    """``throughput.png``'s data: invocations per time bin planned, ended, ended but failed (None:
    none did)."""

    edges_s: np.ndarray
    offered: np.ndarray
    achieved: np.ndarray
    failed: np.ndarray | None


@dataclass
class PlotInputs:
    """Everything the plots read of the invocations, computed before they are drawn."""

    latency: LatencyPoints
    cdf: list[CdfCurve]
    throughput: ThroughputCounts
    overview_t_s: np.ndarray  # the successful invocations' points above the monitors' panels
    overview_latency_ms: np.ndarray


def throughput_edges(end_s: float) -> tuple[np.ndarray, float]:
    """The throughput plot's bin edges (about 200 bins, at least 1 s wide) up to ``end_s``."""
    width = max(1.0, end_s / 200)
    return np.arange(0.0, end_s + width, width), width


def ecdf_ranks(n: int, percentiles) -> np.ndarray:
    """The 0-based ranks a CDF curve is drawn through: 2,000 evenly spaced, the last 1,000, and the
    two either side of each marked percentile (so the curve passes through the order statistics
    the marks are interpolated from)."""
    exact = np.asarray(percentiles, dtype="float64") / 100 * (n - 1)
    return np.unique(
        np.concatenate(
            [
                np.linspace(0, n - 1, min(n, 2000)).astype(int),
                np.arange(max(0, n - 1000), n),
                np.floor(exact).astype(int),
                np.ceil(exact).astype(int),
            ]
        )
    )


def marked(n: int, percentiles) -> list[float]:
    """The marked percentiles a curve of ``n`` values shows (those with a sample above them)."""
    return [pct for pct in percentiles if n * (1 - pct / 100) >= 1]
