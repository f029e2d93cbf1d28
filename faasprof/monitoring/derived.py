"""Derived per-interval hardware metrics, computed from raw counts of the same interval.

perf's own metric column is not used: it is rescaled (``K/sec`` vs ``/sec``), sometimes empty, and
its format changed across versions. A metric whose inputs are missing (not supported, not counted,
not requested) is NaN, never 0; so is any ratio with a zero denominator.

=====================  ==================================================================
column                 formula (perf event names; aliases accepted)
=====================  ==================================================================
ipc                    instructions / cycles
branch_mpki            1000 · branch-misses / instructions
branch_miss_rate       branch-misses / branches
llc_mpki               1000 · LLC-load-misses / instructions (else cache-misses)
llc_miss_rate          LLC-load-misses / LLC-loads (else cache-misses / cache-references)
page_faults_pki        1000 · page-faults / instructions
context_switches_pki   1000 · context-switches / instructions
kernel_cycle_share     cycles:k / (cycles:u + cycles:k) (else cycles:k / cycles)
cpu_utilization        task-clock (ms) / interval (ms): busy CPUs, 0..n_cpus
page_faults_per_s,     count / interval_s
context_switches_per_s,
cpu_migrations_per_s
mem_bw_share           mem_bw_mbps / peak_mbps (``add_bandwidth_share``)
=====================  ==================================================================
"""

from __future__ import annotations

ALIASES: dict[str, tuple[str, ...]] = {
    "cycles": ("cycles", "cpu-cycles"),
    "instructions": ("instructions",),
    "branches": ("branches", "branch-instructions"),
    "branch-misses": ("branch-misses",),
    "LLC-load-misses": ("LLC-load-misses",),
    "LLC-loads": ("LLC-loads",),
    "cache-misses": ("cache-misses",),
    "cache-references": ("cache-references",),
    "page-faults": ("page-faults", "faults"),
    "context-switches": ("context-switches", "cs"),
    "cpu-migrations": ("cpu-migrations", "migrations"),
    "task-clock": ("task-clock", "cpu-clock"),
    "cycles:u": ("cycles:u", "cpu-cycles:u"),
    "cycles:k": ("cycles:k", "cpu-cycles:k"),
}

DERIVED_COLUMNS = (
    "ipc",
    "branch_mpki",
    "branch_miss_rate",
    "llc_mpki",
    "llc_miss_rate",
    "page_faults_pki",
    "context_switches_pki",
    "kernel_cycle_share",
    "cpu_utilization",
    "page_faults_per_s",
    "context_switches_per_s",
    "cpu_migrations_per_s",
)


def _column(frame, name: str):
    """The first alias of ``name`` present in ``frame`` as floats, or None."""
    for alias in ALIASES.get(name, (name,)):
        if alias in frame.columns:
            return frame[alias].astype("float64")
    return None


def _ratio(numerator, denominator, scale: float = 1.0):
    import numpy as np

    if numerator is None or denominator is None:
        return None
    return scale * numerator / denominator.where(denominator != 0, np.nan)


def add_perf_metrics(wide):
    """Add ``DERIVED_COLUMNS`` to a wide perf frame (one column per event, plus ``interval_s``).

    Returns a new frame; every derived column is present (NaN where inputs are missing).
    """
    import numpy as np

    frame = wide.copy()
    nan = np.full(len(frame), np.nan)
    cycles, instructions = _column(frame, "cycles"), _column(frame, "instructions")
    misses = _column(frame, "LLC-load-misses")
    loads = _column(frame, "LLC-loads")
    if misses is None or misses.isna().all():
        misses, loads = _column(frame, "cache-misses"), _column(frame, "cache-references")
    user, kernel = _column(frame, "cycles:u"), _column(frame, "cycles:k")
    kernel_share = _ratio(kernel, user + kernel) if user is not None and kernel is not None else _ratio(kernel, cycles)
    interval = frame["interval_s"].astype("float64") if "interval_s" in frame.columns else None
    task_clock = _column(frame, "task-clock")
    values = {
        "ipc": _ratio(instructions, cycles),
        "branch_mpki": _ratio(_column(frame, "branch-misses"), instructions, 1000.0),
        "branch_miss_rate": _ratio(_column(frame, "branch-misses"), _column(frame, "branches")),
        "llc_mpki": _ratio(misses, instructions, 1000.0),
        "llc_miss_rate": _ratio(misses, loads),
        "page_faults_pki": _ratio(_column(frame, "page-faults"), instructions, 1000.0),
        "context_switches_pki": _ratio(_column(frame, "context-switches"), instructions, 1000.0),
        "kernel_cycle_share": kernel_share,
        # task-clock is in msec; interval in s.
        "cpu_utilization": _ratio(task_clock, interval * 1000.0) if interval is not None else None,
        "page_faults_per_s": _ratio(_column(frame, "page-faults"), interval),
        "context_switches_per_s": _ratio(_column(frame, "context-switches"), interval),
        "cpu_migrations_per_s": _ratio(_column(frame, "cpu-migrations"), interval),
    }
    for name in DERIVED_COLUMNS:
        value = values[name]
        frame[name] = nan if value is None else value.to_numpy(dtype="float64")
    return frame


def add_bandwidth_share(frame, peak_mbps: float | None, column: str = "mem_bw_mbps"):
    """Add ``mem_bw_share`` = ``column`` / ``peak_mbps`` (NaN when no peak is stated)."""
    import numpy as np

    frame = frame.copy()
    if peak_mbps and peak_mbps > 0 and column in frame.columns:
        frame["mem_bw_share"] = frame[column].astype("float64") / float(peak_mbps)
    else:
        frame["mem_bw_share"] = np.nan
    return frame
