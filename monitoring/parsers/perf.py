"""Parse ``perf stat -x SEP`` output (interval or not; system-wide, per CPU, per core/socket/die/node,
per thread, per cgroup) into a tidy frame.

Every counter row ends with the same fields, so rows are read **from the right**:
``value, unit, event, [cgroup | variance], runtime_ns, running_pct, metric, metric_unit``; whatever
is left at the front is ``[timestamp] [aggregation id] [number of CPUs]``. The layout is detected
per row (an 8-field tail when the field before ``runtime`` is a cgroup name or a ``-r`` variance),
so hand-collected files parse without flags.

* ``<not supported>`` and ``<not counted>`` become NaN with ``status`` saying which; never 0.
* Metric-only continuation rows (empty event field), ``# started on`` headers, blank lines,
  ``summary`` rows and free-text lines (``Events disabled``, warnings) are skipped; the number of
  skipped free-text lines is kept in ``frame.attrs["noise_lines"]``.
* A last line without its newline (perf was still writing, or was killed) is dropped.
* ``running_pct`` < 100 means the kernel multiplexed the counter and perf scaled the value up.
* The final interval of a run is usually shorter than the others (the SIGINT or the end of the
  workload cuts it): use ``interval_s`` from :func:`perf_wide`, not the nominal interval.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Iterator

COLUMNS = (
    "time_s",  # perf's interval timestamp: seconds since perf started (NaN without -I)
    "agg",  # aggregation kind: system | cpu | core | socket | die | node | thread | cgroup
    "unit_id",  # CPU0, S0-D0-C0, S0, N0, comm-pid, the cgroup name, or "" for system-wide
    "n_cpus",  # CPUs aggregated into the row (--per-core/socket/die/node), else NaN
    "event",  # event name exactly as printed (modifiers included)
    "value",  # the count (float); NaN when not supported / not counted
    "status",  # ok | not_supported | not_counted
    "unit",  # msec for clock events, else ""
    "runtime_ns",
    "running_pct",
    "variance_pct",
    "metric_value",
    "metric_unit",
)

NOT_SUPPORTED = "<not supported>"
NOT_COUNTED = "<not counted>"

_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")
_CORE_ID = re.compile(r"^S(\d+)(?:-D(\d+))?-C(\d+)$")
_DIE_ID = re.compile(r"^S(\d+)-D(\d+)$")
_SOCKET_ID = re.compile(r"^S(\d+)$")
_NODE_ID = re.compile(r"^N(\d+)$")
_CPU_ID = re.compile(r"^CPU(\d+)$")
# The modifiers perf may append (and the unprivileged fallback appends ``:u`` by itself).
_MODIFIERS = re.compile(r":[ukhGHpPSDIW]+$")


@dataclass
class PerfRow:
    time_s: float | None
    agg: str
    unit_id: str
    n_cpus: int | None
    event: str
    value: float | None
    status: str
    unit: str
    runtime_ns: int | None
    running_pct: float | None
    variance_pct: float | None
    metric_value: float | None
    metric_unit: str

    def as_tuple(self) -> tuple:
        return tuple(getattr(self, name) for name in COLUMNS)


def base_event(name: str) -> str:
    """``cycles:u`` → ``cycles``: the event without its modifiers."""
    return _MODIFIERS.sub("", name)


_match_number = _NUMBER.match


def _is_number(text: str) -> bool:
    return _match_number(text.strip()) is not None


def _is_value(text: str) -> bool:
    return _is_number(text) or text.strip() in (NOT_SUPPORTED, NOT_COUNTED)


def _float(text: str) -> float | None:
    text = text.strip()
    return float(text) if _match_number(text) is not None else None


@functools.lru_cache(maxsize=4096)  # a run has few distinct labels, repeated every interval
def _agg_of(label: str) -> str:
    if _CPU_ID.match(label):
        return "cpu"
    if _CORE_ID.match(label):
        return "core"
    if _DIE_ID.match(label):
        return "die"
    if _SOCKET_ID.match(label):
        return "socket"
    if _NODE_ID.match(label):
        return "node"
    return "thread"


def parse_perf_line(line: str, sep: str = ",") -> PerfRow | None:
    """One counter row, or None for anything that is not one (header, noise, metric-only row)."""
    fields = _perf_fields(line, sep)
    return PerfRow(*fields) if fields is not None else None


def _perf_fields(line: str, sep: str = ",") -> tuple | None:
    """``parse_perf_line``'s row as a tuple in ``COLUMNS`` order (what the frame is built from,
    without a ``PerfRow`` per line)."""
    stripped = line.strip()
    if not stripped or stripped.startswith("#"):
        return None
    fields = line.rstrip("\r\n").split(sep)
    if len(fields) < 7:
        return None
    # Normal rows have the value 7 fields from the right; cgroup (-G) and repeat (-r) rows carry
    # one more field after the event name, which pushes the value to 8 from the right.
    extra: str | None = None
    if _is_value(fields[-7]):
        tail_len = 7
    elif len(fields) >= 8 and _is_value(fields[-8]):
        tail_len = 8
    else:
        return None
    tail = fields[-tail_len:]
    prefix = [field.strip() for field in fields[:-tail_len]]
    value_text, unit, event = tail[0].strip(), tail[1].strip(), tail[2].strip()
    if tail_len == 8:
        extra = tail[3].strip()
    runtime_text, pct_text, metric_text, metric_unit = (t.strip() for t in tail[-4:])
    if not event:
        return None  # metric-only continuation row
    if not _is_number(runtime_text) and runtime_text != "":
        return None
    time_s = None
    if prefix and _is_number(prefix[0]):
        time_s = float(prefix[0])
        prefix = prefix[1:]
    if prefix and prefix[0] == "summary":
        return None
    agg, unit_id, n_cpus = "system", "", None
    if prefix:
        unit_id = prefix[0]
        agg = _agg_of(unit_id)
        if len(prefix) > 1 and prefix[1].isdigit():
            n_cpus = int(prefix[1])
        if len(prefix) > 2:
            return None  # more label columns than any perf layout has: not a counter row
    variance = None
    if extra is not None:
        if extra.endswith("%") and _is_number(extra[:-1]):
            variance = float(extra[:-1])
        else:
            if agg == "system":
                agg = "cgroup"
                unit_id = extra
            else:  # per-CPU and per-cgroup at once: keep both labels
                unit_id = f"{unit_id}/{extra}"
    if value_text == NOT_SUPPORTED:
        value, status = None, "not_supported"
    elif value_text == NOT_COUNTED:
        value, status = None, "not_counted"
    else:
        value, status = float(value_text), "ok"
    runtime = _float(runtime_text)
    return (time_s, agg, unit_id, n_cpus, event, value, status, unit, int(runtime) if runtime is not None else None,
            _float(pct_text), variance, _float(metric_text), metric_unit)


def iter_perf_rows(text: str, sep: str = ",") -> Iterator[PerfRow | str]:
    """Counter rows, and the free-text lines that were not rows (as strings)."""
    for row in _iter_perf_fields(text, sep):
        yield PerfRow(*row) if isinstance(row, tuple) else row


def _iter_perf_fields(text: str, sep: str = ",") -> Iterator[tuple | str]:
    """``iter_perf_rows`` with each counter row as a ``COLUMNS``-ordered tuple."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    elif lines:
        lines.pop()  # no newline at the end: perf was cut off mid-line
    for line in lines:
        row = _perf_fields(line, sep)
        if row is not None:
            yield row
        else:
            stripped = line.strip()
            # Rows with a full set of fields that are not counters are metric-only continuations.
            if stripped and not stripped.startswith("#") and len(line.split(sep)) < 7:
                yield line


def probe_support(text: str, sep: str = ",") -> dict[str, str]:
    """``event → status`` from the output of a short ``perf stat -x, -e ... -- true`` probe."""
    result: dict[str, str] = {}
    for row in iter_perf_rows(text if text.endswith("\n") else text + "\n", sep):
        if isinstance(row, PerfRow):
            result[row.event] = row.status
    return result


def perf_counts(text: str, sep: str = ",") -> dict[str, dict]:
    """``{event: {"value": float | None, "unit": str}}`` of a non-interval ``perf stat -x`` output
    (one count per event; ``<not supported>``/``<not counted>`` give None). Without pandas."""
    counts: dict[str, dict] = {}
    for row in iter_perf_rows(text, sep):
        if isinstance(row, PerfRow):
            counts[row.event] = {"value": row.value, "unit": row.unit}
    return counts


def parse_perf_stat(text: str, sep: str = ","):
    """The tidy long frame (``COLUMNS``), one row per counter row of the output."""
    import pandas as pd

    rows, noise = [], 0
    for row in _iter_perf_fields(text, sep):
        if type(row) is tuple:
            rows.append(row)
        else:
            noise += 1
    frame = pd.DataFrame(rows, columns=list(COLUMNS))
    for column in ("time_s", "n_cpus", "value", "runtime_ns", "running_pct", "variance_pct", "metric_value"):
        frame[column] = pd.to_numeric(frame[column], errors="coerce").astype("float64")
    frame.attrs["noise_lines"] = noise
    return frame


def perf_wide(long):
    """One row per (interval, unit): event values as columns, plus ``interval_s`` (the real length
    of each interval, from consecutive timestamps) and ``min_running_pct`` (the lowest %-running of
    the row's counters: below ~95 the values are multiplexing estimates)."""
    import numpy as np
    import pandas as pd

    if long.empty:
        return pd.DataFrame(columns=["time_s", "unit_id", "interval_s", "min_running_pct"])
    frame = long.copy()
    frame["time_s"] = frame["time_s"].fillna(0.0)
    # A pivot would fail on duplicates (an event requested twice); keep the first.
    wide = frame.pivot_table(index=["time_s", "unit_id"], columns="event", values="value", aggfunc="first", dropna=False)
    wide = wide.reset_index()
    wide.columns.name = None
    # Events absent from pivot because all values are NaN still deserve a column.
    for event in frame["event"].unique():
        if event not in wide.columns:
            wide[event] = np.nan
    counted = frame[frame["status"] == "ok"]
    pct = counted.groupby(["time_s", "unit_id"])["running_pct"].min().rename("min_running_pct")
    wide = wide.merge(pct, how="left", left_on=["time_s", "unit_id"], right_index=True)
    times = np.sort(frame["time_s"].unique())
    previous = dict(zip(times, np.concatenate([[0.0], times[:-1]])))
    wide["interval_s"] = wide["time_s"] - wide["time_s"].map(previous)
    wide = wide.sort_values(["time_s", "unit_id"], kind="stable").reset_index(drop=True)
    return wide
