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

``parse_perf_stat`` reads the lines in perf's usual ``-x, -I`` layout all at once with Arrow (a
long run's monitor has hundreds of thousands) and the others through ``_perf_fields``; its frame
is exactly ``parse_perf_stat_reference``'s (every line through ``_perf_fields``), which
tests/test_monitoring_perf_fastpath.py holds it to.
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


def _tail_length(fields: list[str]) -> int | None:
    """How many fields from the right a counter row's value and what follows it take: normal rows
    have the value 7 fields from the right; cgroup (-G) and repeat (-r) rows carry one more field
    after the event name, which pushes the value to 8. None: no value there (not a counter row)."""
    if _is_value(fields[-7]):
        return 7
    if len(fields) >= 8 and _is_value(fields[-8]):
        return 8
    return None


def _variance_or_cgroup(extra: str | None) -> tuple[float | None, str | None]:
    """The field after the event name: a repeat run's variance (``0.12%``), else the cgroup."""
    if extra is None:
        return None, None
    if extra.endswith("%") and _is_number(extra[:-1]):
        return float(extra[:-1]), None
    return None, extra


def _value_and_status(value_text: str) -> tuple[float | None, str]:
    if value_text == NOT_SUPPORTED:
        return None, "not_supported"
    if value_text == NOT_COUNTED:
        return None, "not_counted"
    return float(value_text), "ok"


def _perf_fields(line: str, sep: str = ",") -> tuple | None:
    """``parse_perf_line``'s row as a tuple in ``COLUMNS`` order (what the frame is built from,
    without a ``PerfRow`` per line)."""
    stripped = line.strip()
    if not stripped or stripped.startswith("#"):
        return None
    fields = line.rstrip("\r\n").split(sep)
    if len(fields) < 7:
        return None
    tail_len = _tail_length(fields)
    if tail_len is None:
        return None
    tail = fields[-tail_len:]
    prefix = [field.strip() for field in fields[:-tail_len]]
    value_text, unit, event = tail[0].strip(), tail[1].strip(), tail[2].strip()
    extra = tail[3].strip() if tail_len == 8 else None
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
    n_cpus = None
    if len(prefix) > 2:
        return None  # more label columns than any perf layout has: not a counter row
    if len(prefix) > 1 and prefix[1].isdigit():
        n_cpus = int(prefix[1])
    variance, cgroup = _variance_or_cgroup(extra)
    agg, unit_id = _labels(prefix[0] if prefix else None, cgroup)
    value, status = _value_and_status(value_text)
    runtime = _float(runtime_text)
    return (
        time_s,
        agg,
        unit_id,
        n_cpus,
        event,
        value,
        status,
        unit,
        int(runtime) if runtime is not None else None,
        _float(pct_text),
        variance,
        _float(metric_text),
        metric_unit,
    )


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


# The fast path of ``parse_perf_stat``: one RE2 pattern (run by Arrow over all lines at once) for
# the layout perf writes with -I: ``TIME,[LABEL,[N_CPUS,]]VALUE,UNIT,EVENT,[CGROUP,]RUNTIME,PCT,
# METRIC,METRIC_UNIT``. It is deliberately narrower than ``_perf_fields`` so that every line it
# matches gets the very row ``_perf_fields`` would give: fields are printable ASCII without blanks
# (so ``str.strip`` has nothing to remove; only the metric unit may hold spaces, which are trimmed
# as spaces), numbers are plain decimals (which Arrow and ``float`` round alike), and the unit may
# hold letters only, so the field 7 from the right is a value exactly when there is no cgroup field
# (``_perf_fields``'s 7- versus 8-field tail rule). Anything else (noise, headers, metric-only and
# ``summary`` rows, ``-r`` variances, odd spacing, another separator) goes through ``_perf_fields``.
_FAST_NUMBER = r"-?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?"
_FAST_TOKEN = r"[!-+\--~]"  # printable ASCII but the space and the comma
_FAST_ROW = (
    rf"^ *(?P<time>{_FAST_NUMBER}),(?:(?P<label>{_FAST_TOKEN}+),(?:(?P<n_cpus>[0-9]{{1,18}}),)?)?"  # int() refuses very long digit strings
    rf"(?P<value>{_FAST_NUMBER}|<not supported>|<not counted>),(?P<unit>[A-Za-z]*),(?P<event>{_FAST_TOKEN}+),"
    rf"(?:(?P<cgroup>[!-$&-+\--~]+),)?"  # no '%': a -r variance takes the general path
    rf"(?P<runtime>{_FAST_NUMBER}|),(?P<running>{_FAST_NUMBER}|),(?P<metric>{_FAST_NUMBER}|),"
    rf"(?P<metric_unit>[ !-+\--~]*)\r?$"
)
_NUMERIC_COLUMNS = ("time_s", "n_cpus", "value", "runtime_ns", "running_pct", "variance_pct", "metric_value")


def _is_noise(line: str, sep: str) -> bool:
    """A line that is not a counter row and not a header, blank or metric-only row."""
    stripped = line.strip()
    return bool(stripped) and not stripped.startswith("#") and len(line.split(sep)) < 7


def _reference_frame(rows: list[tuple]):
    """The frame of ``_perf_fields`` tuples, built the way the line-by-line parser always has."""
    import pandas as pd

    frame = pd.DataFrame(rows, columns=list(COLUMNS))
    for column in _NUMERIC_COLUMNS:
        frame[column] = pd.to_numeric(frame[column], errors="coerce").astype("float64")
    return frame


def parse_perf_stat_reference(text: str, sep: str = ","):
    """``parse_perf_stat`` line by line through ``_perf_fields`` (no fast path): the definition the
    fast path is held to."""
    rows, noise = [], 0
    for row in _iter_perf_fields(text, sep):
        if type(row) is tuple:
            rows.append(row)
        else:
            noise += 1
    frame = _reference_frame(rows)
    frame.attrs["noise_lines"] = noise
    return frame


def _perf_lines(text: str):
    """The complete lines of ``text`` as an Arrow array (a last line without its newline, where
    perf was cut off, is dropped; after a final newline that last piece is "")."""
    import pyarrow as pa
    import pyarrow.compute as pc

    pieces = pc.split_pattern(pa.array([text], type=pa.large_string()), "\n").flatten()
    return pieces.slice(0, len(pieces) - 1)


def _fast_columns(lines):
    """``(matched, columns)``: which lines the fast pattern takes, and their ``COLUMNS`` in line
    order (numbers as float64 numpy arrays, strings as Arrow arrays)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    # Matching without captures runs as a DFA; the fields are then cut at the commas and picked by
    # their position from the right, as _perf_fields does.
    every = lines if isinstance(lines, pa.Array) else pa.array(lines, type=pa.large_string())
    matched = pc.match_substring_regex(every, _FAST_ROW).to_numpy(zero_copy_only=False)
    parts = pc.split_pattern(every.filter(pa.array(matched)), ",")
    flat = parts.flatten()
    offsets = parts.offsets.to_numpy()
    starts, ends = offsets[:-1], offsets[1:]
    # The cgroup field is there exactly when the field 7 from the right is not a value.
    tail = np.where(
        pc.match_substring_regex(flat.take(pa.array(ends - 7)), r"^[-0-9<]").to_numpy(zero_copy_only=False), 7, 8
    )
    prefix = ends - starts - tail  # time, [label, [n_cpus]]
    empty = pa.scalar("", flat.type)

    def field(index, present=None):
        picked = flat.take(pa.array(index))
        return picked if present is None else pc.if_else(pa.array(present), picked, empty)

    def numbers(text):
        blank = pc.if_else(pc.equal(text, ""), pa.scalar(None, text.type), text)
        return pc.cast(blank, pa.float64()).to_numpy(zero_copy_only=False)

    label = field(starts + 1, prefix >= 2)
    runtime = numbers(field(ends - 4))
    # Left to _perf_fields: summary rows (not counters: it skips them) and runtimes beyond a float
    # (its int() of them raises, and so must this parser).
    reject = pc.equal(label, "summary").to_numpy(zero_copy_only=False) | np.isinf(runtime)
    if reject.any():
        matched[np.flatnonzero(matched)[reject]] = False
        keep = ~reject
        starts, ends, tail, prefix, runtime = starts[keep], ends[keep], tail[keep], prefix[keep], runtime[keep]
        label = label.filter(pa.array(keep))
    count = len(starts)

    def distinct(array):
        encoded = array.dictionary_encode()
        return encoded.dictionary.to_pylist(), encoded.indices.to_numpy(zero_copy_only=False)

    # agg and unit_id once per distinct (label, cgroup): a run has few of them.
    label_names, label_codes = distinct(label)
    cgroup_names, cgroup_codes = distinct(field(ends - 5, tail == 8))
    keys, inverse = np.unique(label_codes.astype(np.int64) * len(cgroup_names) + cgroup_codes, return_inverse=True)
    # The pattern makes a present label or cgroup field non-empty: "" is an absent one.
    pairs = [
        _labels(label_names[key // len(cgroup_names)] or None, cgroup_names[key % len(cgroup_names)] or None)
        for key in keys.tolist()
    ]
    rows = pa.array(inverse.reshape(-1))
    agg = pa.array([pair[0] for pair in pairs], type=pa.large_string()).take(rows)
    unit_id = pa.array([pair[1] for pair in pairs], type=pa.large_string()).take(rows)

    value_text = field(ends - tail)
    not_supported = pc.equal(value_text, NOT_SUPPORTED).to_numpy(zero_copy_only=False)
    not_counted = pc.equal(value_text, NOT_COUNTED).to_numpy(zero_copy_only=False)
    values = pc.if_else(pc.starts_with(value_text, "<"), pa.scalar(None, value_text.type), value_text)
    status_codes = not_supported.astype(np.int64) + 2 * not_counted.astype(np.int64)
    status = pa.array(["ok", "not_supported", "not_counted"], type=pa.large_string()).take(pa.array(status_codes))
    columns = {
        "time_s": numbers(pc.utf8_ltrim(field(starts), " ")),
        "agg": agg,
        "unit_id": unit_id,
        "n_cpus": numbers(field(starts + 2, prefix == 3)),
        "event": field(ends - tail + 2),
        "value": pc.cast(values, pa.float64()).to_numpy(zero_copy_only=False),
        "status": status,
        "unit": field(ends - tail + 1),
        # _perf_fields keeps int(float(runtime)): the truncated value, exact in a float64.
        "runtime_ns": np.trunc(runtime),
        "running_pct": numbers(field(ends - 3)),
        "variance_pct": np.full(count, np.nan),
        "metric_value": numbers(field(ends - 2)),
        # The pattern lets only a final \r and spaces around it: what rstrip + strip remove.
        "metric_unit": pc.utf8_trim(field(ends - 1), " \r"),
    }
    return matched, columns


@functools.cache
def _string_dtype():
    """The dtype pandas gives a column of Python strings (``str`` on pandas 3, object before)."""
    import pandas as pd

    return pd.DataFrame([("x",)]).dtypes.iloc[0]


def _pandas_values(values):
    """A fast-path column as the frame takes it: strings in the dtype the reference frame infers
    (straight from Arrow when that dtype is Arrow-backed), numbers as they are."""
    import numpy as np
    import pandas as pd

    if isinstance(values, np.ndarray):
        return values
    dtype = _string_dtype()
    if isinstance(dtype, pd.StringDtype) and dtype.storage == "pyarrow":
        return pd.array(values, dtype=dtype)
    return values.to_numpy(zero_copy_only=False)


def _labels(label: str | None, cgroup: str | None) -> tuple[str, str]:
    """``(agg, unit_id)`` of a counter row from its label column (None: none, system-wide) and its
    cgroup field (-G; None: none)."""
    agg, unit_id = ("system", "") if label is None else (_agg_of(label), label)
    if cgroup is not None:
        if agg == "system":
            return "cgroup", cgroup
        return agg, f"{unit_id}/{cgroup}"  # per-CPU and per-cgroup at once: both labels kept
    return agg, unit_id


def parse_perf_stat(text: str, sep: str = ","):
    """The tidy long frame (``COLUMNS``), one row per counter row of the output.

    The same frame as ``parse_perf_stat_reference``; the lines in perf's usual layout are parsed
    together by Arrow (a 10-million-invocation run's monitor has ~600,000 of them), the rest one
    by one."""
    import numpy as np
    import pandas as pd
    import pyarrow as pa

    if sep != "," or "\n" not in text:
        return parse_perf_stat_reference(text, sep)
    try:
        lines = _perf_lines(text)
    except UnicodeEncodeError:  # lone surrogates (text not decoded from a file): no UTF-8 for Arrow
        return parse_perf_stat_reference(text, sep)
    matched, columns = _fast_columns(lines)
    rest = np.flatnonzero(~matched)
    slow_rows, slow_positions, noise = [], [], 0
    for position, line in zip(rest.tolist(), lines.take(pa.array(rest)).to_pylist()):
        row = _perf_fields(line, sep)
        if row is not None:
            slow_rows.append(row)
            slow_positions.append(position)
        elif _is_noise(line, sep):
            noise += 1
    if not len(columns["time_s"]):  # (also the empty frame, whose dtypes pandas decides alone)
        frame = _reference_frame(slow_rows)
    elif not slow_rows:
        frame = pd.DataFrame({name: _pandas_values(values) for name, values in columns.items()})
    else:
        # Both parts in line order: the fast rows at their lines, the others at theirs.
        slow = _reference_frame(slow_rows)
        order = np.argsort(np.concatenate([np.flatnonzero(matched), np.asarray(slow_positions)]), kind="stable")
        merged = {}
        for column in COLUMNS:
            if column in _NUMERIC_COLUMNS:
                both = np.concatenate([columns[column], slow[column].to_numpy(dtype="float64")])
            else:
                both = np.concatenate(
                    [columns[column].to_numpy(zero_copy_only=False), slow[column].to_numpy(dtype=object)]
                )
            merged[column] = both[order]
        frame = pd.DataFrame(merged)
    frame.attrs["noise_lines"] = noise
    return frame


PERF_UNITS = {"": "count", "msec": "ms"}  # perf's unit field (empty: a count), as the units tables write them


def event_units(long) -> dict[str, str]:
    """``{event: unit}`` of a parsed ``perf stat`` output, from perf's own unit field: a count
    unless perf names a unit (``msec`` for the clock events; others, such as ``Joules``, as given)."""
    if long.empty:
        return {}
    first = long.drop_duplicates("event")
    return {
        str(event): PERF_UNITS.get(str(unit or ""), str(unit)) for event, unit in zip(first["event"], first["unit"])
    }


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
    wide = frame.pivot_table(
        index=["time_s", "unit_id"], columns="event", values="value", aggfunc="first", dropna=False
    )
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
