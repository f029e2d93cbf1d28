"""The unit of each column of the analysis frames, the long view and the Parquet metadata.

House style puts a column's unit at the end of its name (``latency_ms``, ``intended_s``,
``rate_rps``); a statistic of a column keeps the column's unit (``completion_latency_ms_p99``,
its ``_ci_low``/``_ci_high``, ``_mean``, ``_max``), except its sample count ``_n``, which is a
count. Read in this order, first match wins:

1. ``NO_UNIT``: identifiers and codes (``seq``, ``phase``, ``http_status``, ``sweep_repeat``); and any column of
   labels, flags, text or time types (categorical, boolean, string, ``datetime64``,
   ``timedelta64``: Arrow's own type carries the time unit), whatever its name.
2. ``COUNTS``: the tallies named after what they count (``planned``, ``ok``, ``final_no_record``),
   and every name ending ``_n`` or ``_count``: ``count``. ``NAMED``: the monitors' columns named
   after what they measure (``ipc``, ``cpu_utilization``, ``procs_running``), and the settings a
   comparison or sweep varies (``rate``, ``llc_ways``).
3. A ratio of two like quantities (``achieved_over_offered``, ``tail_p99_over_p50_warm``):
   ``ratio``.
4. Cost: ``gb_s``, ``gb_s_1ms``, ``gb_s_100ms`` (the ``1ms``/``100ms`` say the billing
   granularity, not the unit): ``GB·s``.
5. The statistic's suffix is dropped, then ``SUFFIX_UNITS`` (longest suffix first: ``_ms_per_s``
   is ms/s, not s).

A column none of these name takes the unit its frame's ``attrs["units"]`` gives: a perf event's
column is named after the event (``instructions``, ``task-clock``) and perf says its unit
(``faasprof.monitoring.parsers.perf.event_units``). Else it has no unit (``None``);
``tests/test_units.py`` checks every column of every frame, long view and Parquet file against
its own table, so a new numeric column must be named with its unit (or entered here) to pass.
"""

from __future__ import annotations

import pandas as pd

from faasprof.outcomes import FINAL_OUTCOMES, HTTP_OUTCOMES

NO_UNIT = frozenset({"seq", "phase", "http_status", "sweep_repeat"})
COUNTS = frozenset(
    {
        "planned",
        "sent",
        "answered",
        "successful",
        "failures",
        "rejected",
        "with_activation_id",
        "with_record",
        "successful_with_record",
        "missing_records",
        "records",
        *HTTP_OUTCOMES,
        *(f"final_{name}" for name in FINAL_OUTCOMES),
    }
)
NAMED = {
    "ipc": "instructions/cycle",
    "branch_miss_rate": "ratio",
    "llc_miss_rate": "ratio",
    "cpu_utilization": "CPUs",
    "llc_misses": "count",
    "llc_references": "count",
    "completions": "count",
    "procs_running": "count",
    "procs_blocked": "count",
    "memory_failcnt": "count",
    "oom_kills": "count",
    "frozen": "1",
    "sample": None,
    # A workload's or sweep's settings (compare's parameter_value, the sweep's sweep_<name>).
    "rate": "1/s",
    "rate_scale": "ratio",
    "llc_ways": "ways",
    "mba_percent": "%",
}
COST_COLUMNS = frozenset({"gb_s", "gb_s_1ms", "gb_s_100ms"})
STATISTIC_SUFFIXES = ("_ci_low", "_ci_high", "_mean", "_median", "_max", "_min", "_p50", "_p90", "_p99_9", "_p99")
SUFFIX_UNITS = (
    ("_ms_per_s", "ms/s"),
    ("_kib_per_s", "KiB/s"),
    ("_pages_per_s", "pages/s"),
    ("_per_s", "1/s"),
    ("_rps", "1/s"),
    ("_iops", "1/s"),
    ("_mbps", "MB/s"),
    ("_mibps", "MiB/s"),
    ("_mpki", "1/kinstr"),
    ("_pki", "1/kinstr"),
    ("_fraction", "1"),
    ("_share", "1"),
    ("_pct", "%"),
    ("_cores", "CPUs"),
    ("_ms", "ms"),
    ("_ns", "ns"),
    ("_s", "s"),
    ("_mb", "MB"),
    ("_kib", "KiB"),
    ("_bytes", "B"),
)


def _dimensionless_or_count(name: str) -> str | None:
    if name in COUNTS or name.endswith(("_n", "_count")):
        return "count"
    if "_over_" in name:
        return "ratio"
    if name in COST_COLUMNS or name.endswith("_gb_s"):
        return "GB·s"
    return None


def unit_of(column: str, dtype=None) -> str | None:
    """The unit of ``column`` (module docstring); ``dtype``: the column's, when known (labels,
    flags, text and time types have none)."""
    name = str(column)
    if name in NO_UNIT or (dtype is not None and not _quantity(dtype)):
        return None
    if name in NAMED:
        return NAMED[name]
    unit = _dimensionless_or_count(name)
    if unit is not None:
        return unit
    stripped = True
    while stripped:
        stripped = False
        for suffix in STATISTIC_SUFFIXES:
            if name.endswith(suffix):
                name, stripped = name.removesuffix(suffix), True
                break
    unit = _dimensionless_or_count(name)
    if unit is not None:
        return unit
    return next((unit for suffix, unit in SUFFIX_UNITS if name.endswith(suffix)), None)


def _quantity(dtype) -> bool:
    """Whether a column of ``dtype`` can hold a quantity (numbers, or Python objects that may be
    numbers or None), not labels, flags, text or times."""
    if (
        isinstance(dtype, pd.CategoricalDtype)
        or pd.api.types.is_bool_dtype(dtype)
        or pd.api.types.is_string_dtype(dtype)
        and not pd.api.types.is_object_dtype(dtype)
    ):
        return False
    return not (pd.api.types.is_datetime64_any_dtype(dtype) or pd.api.types.is_timedelta64_dtype(dtype))


def frame_units(frame: pd.DataFrame) -> dict[str, str]:
    """``{column: unit}`` for every column of ``frame`` that has one (the Parquet metadata's
    ``units``): from its name, else from the frame's ``attrs["units"]`` (module docstring)."""
    given = frame.attrs.get("units") or {}
    out = {}
    for column, dtype in frame.dtypes.items():
        unit = unit_of(str(column), dtype)
        if unit is None and _quantity(dtype) and str(column) not in NO_UNIT and str(column) not in NAMED:
            unit = given.get(str(column))
        if unit is not None:
            out[str(column)] = unit
    return out
