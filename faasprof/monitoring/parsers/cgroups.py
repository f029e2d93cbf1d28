"""Parse the cgroup samples written by the cgroups collector: cumulative CPU counters → rates.

Raw file (``monitors/cgroups/samples.csv``), one line per sandbox cgroup per sample; empty cells
are values the cgroup version or controller does not provide::

    elapsed_ns,sandbox,cpu_usage_ns,cpu_user_ns,cpu_system_ns,nr_periods,nr_throttled,throttled_ns,
    memory_usage_bytes,memory_limit_bytes,memory_rss_bytes,memory_cache_bytes,memory_failcnt,oom_kills,
    frozen

``frozen`` is 1 while the sandbox is paused (freezer). The sandbox ``.`` is the parent cgroup
itself (all sandboxes together). CPU time and throttling are
cumulative: rates come from consecutive samples of the same sandbox, and a sandbox's first sample
has none. A counter that goes backwards (a new sandbox reusing a name) gives a missing interval.
"""

from __future__ import annotations

import csv
import io

from faasprof.monitoring.parsers.samples import require_header
from faasprof.monitoring.sampling import CGROUP_COLUMNS

RAW_COLUMNS = CGROUP_COLUMNS  # samples.csv, as the collector writes it
_NUMERIC = RAW_COLUMNS[2:]
FRAME_COLUMNS = (
    "elapsed_s",
    "interval_s",
    "sandbox",
    "cpu_cores",
    "cpu_user_cores",
    "cpu_system_cores",
    "throttled_share",
    "throttled_ms_per_s",
    "memory_usage_bytes",
    "memory_limit_bytes",
    "memory_rss_bytes",
    "memory_cache_bytes",
    "memory_failcnt",
    "oom_kills",
    "frozen",
)


def parse_cgroup_samples(text: str):
    """Frame (``FRAME_COLUMNS``), one row per sandbox per sample; rates are NaN on first samples."""
    import pandas as pd

    if not text.endswith("\n"):
        text = text[: text.rfind("\n") + 1]
    reader = csv.reader(io.StringIO(text))
    header = next(reader, None)
    if header is None:
        return pd.DataFrame(columns=list(FRAME_COLUMNS))
    require_header(header, ("elapsed_ns", "sandbox", "cpu_usage_ns"), "the cgroups collector's samples.csv")
    rows = [row for row in reader if len(row) == len(header)]
    raw = pd.DataFrame(rows, columns=header)
    raw["elapsed_ns"] = pd.to_numeric(raw["elapsed_ns"], errors="coerce")
    raw = raw[raw["elapsed_ns"].notna()]
    for name in _NUMERIC:
        raw[name] = pd.to_numeric(raw[name], errors="coerce").astype("float64") if name in raw else float("nan")
    raw = raw.sort_values(["sandbox", "elapsed_ns"], kind="stable")
    by = raw.groupby("sandbox", sort=False)
    dt_ns = by["elapsed_ns"].diff().astype("float64")

    def rate(name: str):
        delta = by[name].diff()
        return delta.where(delta >= 0) / dt_ns

    out = pd.DataFrame(
        {
            "elapsed_s": raw["elapsed_ns"].astype("float64") / 1e9,
            "interval_s": dt_ns / 1e9,
            "sandbox": raw["sandbox"],
            "cpu_cores": rate("cpu_usage_ns"),
            "cpu_user_cores": rate("cpu_user_ns"),
            "cpu_system_cores": rate("cpu_system_ns"),
        }
    )
    periods = by["nr_periods"].diff()
    throttled = by["nr_throttled"].diff()
    out["throttled_share"] = (throttled / periods.where(periods > 0)).where(throttled >= 0)
    out["throttled_ms_per_s"] = rate("throttled_ns") * 1e3
    for name in (
        "memory_usage_bytes",
        "memory_limit_bytes",
        "memory_rss_bytes",
        "memory_cache_bytes",
        "memory_failcnt",
        "oom_kills",
        "frozen",
    ):
        out[name] = raw[name]
    return out[list(FRAME_COLUMNS)].sort_values(["elapsed_s", "sandbox"], kind="stable").reset_index(drop=True)
