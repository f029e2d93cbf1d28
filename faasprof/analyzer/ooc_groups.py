"""``phase_stats`` and ``function_stats`` out of core: every column ``analysis._group_tables`` gives,
computed by DuckDB over ``analysis/invocations.parquet`` (``faasprof.analyzer.engine``) instead of
one in-memory frame, so a run of any length is analysed in memory bounded by the engine's setting.

Each figure is ``stats.group_stats``' own, reached another way: counts and sums by one aggregate
per grouping; the percentile blocks, medians and lateness quantiles by the engine's exact order
statistics (``order_stats``: no group sorted whole); the trend's slope by DuckDB's ``regr_slope``
(the same least-squares slope, summed in another order: equal to 1e-9 relative). The mode, its
margin and the stability warnings are then decided by ``stats``' own functions on those figures.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import duckdb
import pandas as pd

from faasprof.analyzer import engine
from faasprof.analyzer import stats as stats_mod
from faasprof.analyzer.frames import WAIT_EXPIRED_STATUS
from faasprof.analyzer.metrics import METRICS
from faasprof.outcomes import FAILURE_OUTCOMES, FINAL_OUTCOMES, HTTP_OUTCOMES

LATENCIES = ("client_latency_ms", "corrected_latency_ms", "platform_latency_ms", "completion_latency_ms")
BREAKDOWN = ("wait_ms", "init_ms", "execution_ms", "duration_ms", "overhead_ms")
CLASSES = ("cold", "resumed", "warm")
COSTS = ("gb_s", "gb_s_1ms", "gb_s_100ms")
Key = tuple  # a group's values: (instance, phase) or (function,)


def text(value: object) -> str:
    """``value`` as an SQL string literal."""
    return "'" + str(value).replace("'", "''") + "'"


def number(value: float) -> str:
    """``value`` as an SQL DOUBLE, to the last bit (a decimal literal would round through DECIMAL)."""
    return f"'{float(value)!r}'::DOUBLE"


def literal(value: object) -> str:
    """``value`` as an SQL literal of its type (an integer as one, the rest as text)."""
    if isinstance(value, (int,)) or type(value).__name__.startswith("int"):
        return str(int(value))  # type: ignore[call-overload]
    return text(value)


def among(column: str, names: Sequence[object]) -> str:
    """SQL: ``column``'s text is one of ``names`` (false for none)."""
    return f"{column}::VARCHAR IN ({', '.join(text(n) for n in names)})" if names else "false"


def window_case(expression: str, windows: Sequence[tuple[float, float, Any]]) -> str:
    """SQL: the label of the window [start, end) that ``expression`` falls in (NULL for none);
    the windows do not overlap."""
    if not windows:
        return "NULL"
    arms = " ".join(
        f"WHEN {expression} >= {number(start)} AND {expression} < {number(end)} THEN {label!r}"
        for start, end, label in windows
    )
    return f"(CASE {arms} END)"


def done_s_sql(blocking: bool, any_record: bool) -> str:
    """SQL of ``stats.end_times_s``: an invocation's end on the run clock (NULL: it did not end)."""
    answered = among("outcome", stats_mod.ANSWERED)
    answer_s = "(done_ns::DOUBLE / 1e9)"
    if not any_record:
        return f"(CASE WHEN {answered} THEN {answer_s} END)"
    if blocking:
        at_end = f"(http_status IS DISTINCT FROM {WAIT_EXPIRED_STATUS})"
        return f"(CASE WHEN {answered} THEN (CASE WHEN {at_end} THEN {answer_s} ELSE platform_end_s END) END)"
    return "platform_end_s"


def _counted_as(
    outcome: str | None, final: str | None, success: bool, with_id: bool, recorded: bool, start_class: str | None
) -> list[str]:
    """The counts of ``stats.group_stats`` a row of these labels adds one to."""
    names = ["planned"]
    if outcome is not None:
        names += [outcome, *(["answered"] if outcome in stats_mod.ANSWERED else [])]
    if final is not None:
        names.append(f"final_{final}")
        names += ["failures"] if final in FAILURE_OUTCOMES else []
        names += ["rejected"] if final in stats_mod.REJECTED_FINAL else []
    flags = {
        "successful": success,
        "with_activation_id": with_id,
        "with_record": recorded,
        "successful_with_record": success and recorded,
        "missing_records": with_id and not recorded,
    }
    names += [name for name, on in flags.items() if on]
    if success and recorded and start_class in CLASSES:
        names.append(f"{start_class}_count")
    return names


def _counts(
    connection: duckdb.DuckDBPyConnection, source: str, keys: Sequence[str], latency_of: str
) -> dict[Key, dict]:
    """Per group: ``stats.group_stats``' counts and cost sums, the planned times' span and the
    trend's slope. The counts come from one aggregate per group and combination of labels (a few
    dozen rows, summed here): one comparison of strings per label, not per figure."""
    group = ", ".join(keys)
    labels = connection.execute(
        f"SELECT {group}, outcome::VARCHAR, final_outcome::VARCHAR, successful, has_activation_id, has_record, "
        f"start_class::VARCHAR, count(*), "
        + ", ".join(f"sum({c}) FILTER (WHERE NOT isnan({c}))" for c in COSTS)
        + f" FROM {source} GROUP BY ALL"
    ).fetchall()
    width = len(keys)
    out: dict[Key, dict] = {}
    for row in labels:
        key = tuple(row[:width])
        outcome, final, success, with_id, recorded, start_class, n, *costs = row[width:]
        c = out.setdefault(key, {"planned": 0, **{name: 0.0 for name in COSTS}})
        for name in _counted_as(outcome, final, bool(success), bool(with_id), bool(recorded), start_class):
            c[name] = c.get(name, 0) + int(n)
        for name, value in zip(COSTS, costs):
            c[name] += float(value) if value is not None else 0.0
    trend = f"successful AND isfinite({latency_of})"
    for row in connection.execute(
        f"SELECT {group}, min(intended_s), max(intended_s), count(*) FILTER (WHERE {trend}), "
        f"regr_slope({latency_of}, intended_s) FILTER (WHERE {trend}), min(intended_s) FILTER (WHERE {trend}), "
        f"max(intended_s) FILTER (WHERE {trend}) FROM {source} GROUP BY ALL"
    ).fetchall():
        c = out.setdefault(tuple(row[:width]), {"planned": 0})
        c["_t_min"], c["_t_max"], c["_trend_n"], c["_trend_slope"], c["_trend_t_min"], c["_trend_t_max"] = row[width:]
    return out


class GroupFigures:
    """The engine's figures of a grouping of the invocation frame (``source``: a table expression
    with the group columns ``keys``), read back per group as ``stats.group_stats`` and
    ``stats.latency_trend`` give them."""

    def __init__(
        self,
        connection: duckdb.DuckDBPyConnection,
        source: str,
        keys: Sequence[str],
        latency_of: str,
        columns: Sequence[str],
    ) -> None:
        self.connection, self.source, self.keys = connection, source, list(keys)
        self.latency_of = latency_of  # SQL: the trend's latency per row (by instance)
        self.metrics = [m.name for m in METRICS if m.name in columns]
        self.counts = _counts(connection, source, self.keys, latency_of)
        ok = "successful"
        self.blocks = {c: self._blocks(c, ok) for c in (*LATENCIES, *self.metrics)}
        failed = f"{among('final_outcome', FAILURE_OUTCOMES)} AND NOT successful"
        self.blocks["failure_completion_latency_ms"] = self._blocks(
            "completion_latency_ms", failed, "failure_completion_latency_ms"
        )
        self.lateness = engine.linear_quantiles(connection, source, "lateness_ms", self.keys, [0.5, 0.99, 1.0])
        self.medians = {
            c: engine.linear_quantiles(connection, source, c, self.keys, [0.5], "successful AND has_record")
            for c in BREAKDOWN
        }
        self.memory = engine.linear_quantiles(connection, source, "memory_mb", self.keys, [0.5], "has_record")

    def _blocks(self, column: str, where: str, prefix: str | None = None) -> dict[Key, dict]:
        return engine.percentile_blocks(self.connection, self.source, column, self.keys, where, prefix)

    def thirds(self, column: str, windows: Mapping[Key, tuple[float, float]]) -> dict[Key, tuple[float, float]]:
        """Per group, the median of ``column`` (successful) in the first and the last third of its
        window (``stats.latency_trend``)."""
        arms = []
        for key, (start, end) in windows.items():
            third = (end - start) / 3.0
            match = " AND ".join(f"{k} IS NOT DISTINCT FROM {literal(v)}" for k, v in zip(self.keys, key))
            arms.append(
                f"WHEN {match} AND intended_s < {number(start + third)} THEN 0 "
                f"WHEN {match} AND intended_s >= {number(end - third)} THEN 1"
            )
        if not arms:
            return {}
        which = f"(CASE {' '.join(arms)} END)"
        rows = f"(SELECT *, {which} AS _third FROM {self.source})"
        found = engine.linear_quantiles(
            self.connection, rows, column, [*self.keys, "_third"], [0.5], "successful AND _third IS NOT NULL"
        )
        out: dict[Key, list[float]] = {}
        for group, (_n, _total, (median,)) in found.items():
            out.setdefault(tuple(group[:-1]), [math.nan, math.nan])[int(group[-1])] = median
        return {k: (v[0], v[1]) for k, v in out.items()}

    def block(self, key: Key, start_s: float, end_s: float, ended: float | None) -> dict:
        """``stats.group_stats``' dict of one group (``ended``: the ends counted in its window)."""
        c = self.counts.get(key) or {}
        length = max(end_s - start_s, 1e-9)
        planned = int(c.get("planned", 0))
        counts = {n: int(c.get(n, 0)) for n in HTTP_OUTCOMES}
        out: dict = {
            "window_s": [start_s, end_s],
            "planned": planned,
            "sent": planned - counts["not_sent"],
            **counts,
            "answered": int(c.get("answered", 0)),
            **{f"final_{n}": int(c.get(f"final_{n}", 0)) for n in FINAL_OUTCOMES},
            **{
                k: int(c.get(k, 0))
                for k in (
                    "successful",
                    "failures",
                    "rejected",
                    "with_activation_id",
                    "with_record",
                    "successful_with_record",
                    "missing_records",
                )
            },
            "offered_rps": planned / length,
        }
        ended = float(out["answered"]) if ended is None else ended
        out["achieved_rps"] = min(ended, float(planned)) / length
        out["achieved_over_offered"] = out["achieved_rps"] / out["offered_rps"] if out["offered_rps"] > 0 else math.nan
        for column in LATENCIES:
            out.update(self._block_of(column, key))
        out.update(self._block_of("failure_completion_latency_ms", key))
        for metric in self.metrics:
            out.update(self._block_of(metric, key))
        n, _total, (p50, p99, top) = self.lateness.get(key, (0, 0.0, [math.nan] * 3))
        out["lateness_ms_p50"], out["lateness_ms_p99"], out["lateness_ms_max"] = (
            (p50, p99, top) if n else (math.nan,) * 3
        )
        for column in BREAKDOWN:
            n, total, (median,) = self.medians[column].get(key, (0, 0.0, [math.nan]))
            out[f"{column}_mean"] = total / n if n else math.nan
            out[f"{column}_p50"] = median if n else math.nan
        recorded = out["successful_with_record"]
        for name in CLASSES:
            out[f"{name}_count"] = int(c.get(f"{name}_count", 0))
            out[f"{name}_fraction"] = out[f"{name}_count"] / recorded if recorded else math.nan
        for column in COSTS:
            out[column] = float(c.get(column, 0.0))
        n, _total, (median,) = self.memory.get(key, (0, 0.0, [math.nan]))
        out["memory_mb"] = median if n else math.nan
        return out

    def _block_of(self, column: str, key: Key) -> dict:
        found = self.blocks[column].get(key)
        return found if found is not None else engine.empty_block(column)

    def slope(self, key: Key) -> float:
        """``stats.latency_trend``'s least-squares slope of one group (NaN under 3 samples or one instant)."""
        c = self.counts.get(key) or {}
        n = int(c.get("_trend_n", 0) or 0)
        if n < 3 or not (c.get("_trend_t_max", 0) > c.get("_trend_t_min", 0)):
            return math.nan
        value = c.get("_trend_slope")
        return float(value) if value is not None and not pd.isna(value) else math.nan


def trend(median_first: float, median_last: float, slope: float) -> dict:
    """``stats.latency_trend``'s dict from its figures."""
    return {
        "first_third_median_ms": median_first,
        "last_third_median_ms": median_last,
        "last_over_first": median_last / median_first if median_first and median_first > 0 else math.nan,
        "slope_ms_per_s": slope,
    }


def _any_record(connection: duckdb.DuckDBPyConnection, source: str, keys: Sequence[str], where: str) -> dict[Key, bool]:
    group = ", ".join(keys)
    found = connection.execute(f"SELECT {group}, bool_or(has_record) FROM {source} WHERE {where} GROUP BY {group}")
    return {tuple(row[:-1]): bool(row[-1]) for row in found.fetchall()}


def _ends_in(
    connection: duckdb.DuckDBPyConnection,
    source: str,
    done: Mapping[str, str],
    windows: Sequence[tuple[float, float, Any]],
    where: str,
) -> dict[tuple[str, Any], int]:
    """Per instance and window label: the invocations (of rows ``where``) that ended inside it,
    each instance's end by its SQL in ``done`` (``done_s_sql``)."""
    if not done or not windows:
        return {}
    arms = " ".join(f"WHEN instance::VARCHAR = {text(name)} THEN {sql}" for name, sql in done.items())
    ends = f"(SELECT instance::VARCHAR AS _i, (CASE {arms} END) AS _d FROM {source} WHERE {where})"
    found = connection.execute(
        f"SELECT _i, {window_case('_d', windows)} AS _w, count(*) FROM {ends} WHERE isfinite(_d) GROUP BY ALL"
    ).fetchall()
    return {(str(i), w): int(count) for i, w, count in found if w is not None}


def tables(
    connection: duckdb.DuckDBPyConnection,
    source: str,
    columns: Sequence[str],
    specs: list[dict],
    phase_list: list[dict],
    references: dict[str, dict],
    end_s: float | None,
    pause_grace_ms: float | None,
    warmup_s: float,
    row: Any,
) -> tuple[pd.DataFrame, pd.DataFrame, list[str]]:
    """``analysis._group_tables``' three results, out of core over ``source`` (the invocation
    frame's Parquet; ``columns``: its columns). ``row(spec, phase, block, trend, reference, mode,
    reasons, margin)`` makes one ``phase_stats`` row (``analysis.phase_row``), so both paths give
    the same columns in the same order."""
    spec_of = {s["instance"]: s for s in specs}
    present = [r[0] for r in connection.execute(f"SELECT DISTINCT instance::VARCHAR FROM {source}").fetchall()]
    steady = [p for p in phase_list if not p.get("in_warmup")]
    windows = [(p["steady_start_s"], p["end_s"], int(p["phase"])) for p in steady]
    any_record = {k[0]: v for k, v in _any_record(connection, source, ["instance::VARCHAR"], "true").items()}
    blocking_of = {name: bool(spec_of[name]["blocking"]) for name in present if name in spec_of}
    trend_column = {
        name: "corrected_latency_ms"
        if blocking_of.get(name, True) or not any_record.get(name)
        else "platform_latency_ms"
        for name in present
    }
    latency = " ".join(f"WHEN instance::VARCHAR = {text(n)} THEN {c}" for n, c in trend_column.items())
    lat = f"(CASE {latency} END)" if latency else "NULL::DOUBLE"
    phased = (
        f"(SELECT *, instance::VARCHAR AS _i, {window_case('intended_s', windows)} AS _p, {lat} AS _lat "
        f"FROM {source}) WHERE _p IS NOT NULL"
    )
    phased = f"(SELECT * FROM {phased})"
    figures = GroupFigures(connection, phased, ["_i", "_p"], "_lat", columns)
    by_window = {(str(n), int(p["phase"])): (p["steady_start_s"], p["end_s"]) for p in steady for n in p["instances"]}
    thirds = figures.thirds("_lat", by_window)
    completion = figures.thirds("completion_latency_ms", by_window)
    done = {n: done_s_sql(blocking_of.get(n, True), any_record.get(n, False)) for n in present}
    ended = _ends_in(connection, source, done, windows, "true")
    warnings: list[str] = []
    phase_rows = []
    for phase in steady:
        for name in phase["instances"]:
            if name not in present:
                continue
            key = (name, int(phase["phase"]))
            block = figures.block(key, phase["steady_start_s"], phase["end_s"], float(ended.get(key, 0)))
            first, last = thirds.get(key, (math.nan, math.nan))
            found = trend(first, last, figures.slope(key))
            found["latency"] = trend_column[name].removesuffix("_ms").replace("_", " ")
            found["completion_last_third_median_ms"] = completion.get(key, (math.nan, math.nan))[1]
            spec = spec_of[name]
            reference = references.get(spec["function"])
            mode, reasons = stats_mod.decide_mode(block, found, reference, pause_grace_ms)
            margin = stats_mod.mode_margin(stats_mod.over_scores(block, found, reference))
            warnings.extend(stats_mod.stability_warnings(f"{name} phase {phase['phase']}", block))
            phase_rows.append(row(spec, phase, block, found, reference, mode, reasons, margin, pause_grace_ms))
    phase_stats = pd.DataFrame(phase_rows)
    function_stats = _function_table(connection, source, columns, specs, phase_stats, end_s, warmup_s)
    return phase_stats, function_stats, warnings


def _function_table(
    connection: duckdb.DuckDBPyConnection,
    source: str,
    columns: Sequence[str],
    specs: list[dict],
    phase_stats: pd.DataFrame,
    end_s: float | None,
    warmup_s: float,
) -> pd.DataFrame:
    """``function_stats``: one row per function over the run after its warm-up (up to ``end_s``)."""
    functions = [
        r[0]
        for r in connection.execute(
            f"SELECT DISTINCT function::VARCHAR FROM {source} WHERE function IS NOT NULL"
        ).fetchall()
    ]
    kept = f"intended_s >= {number(warmup_s)}" + (f" AND intended_s < {number(end_s)}" if end_s is not None else "")
    rows = f"(SELECT *, function::VARCHAR AS _f FROM {source} WHERE {kept})"
    figures = GroupFigures(connection, rows, ["_f"], "corrected_latency_ms", columns)
    blocking_of = {s["instance"]: bool(s["blocking"]) for s in specs}
    blocking = [name for name, answers in blocking_of.items() if answers]
    windows: dict[str, tuple[float, float]] = {}
    for function in functions:
        c = figures.counts.get((function,)) or {}
        start = float(c["_t_min"]) if c.get("planned") else 0.0
        end = float(c["_t_max"]) if c.get("planned") else 0.0
        windows[function] = (start, max(end, start + 1e-9) + 1e-9)
    # The ends per function: each instance's part of it ends as that instance's calls do.
    parts = _any_record(connection, rows, ["_f", "instance::VARCHAR"], "true")
    arms = " ".join(
        f"WHEN _f = {text(f)} AND instance::VARCHAR = {text(i)} THEN {done_s_sql(blocking_of.get(i, True), has)}"
        for (f, i), has in parts.items()
    )
    ended: dict[str, int] = {}
    if arms:
        inside = " OR ".join(
            f"(_f = {text(f)} AND _d >= {number(a)} AND _d < {number(b)})" for f, (a, b) in windows.items()
        )
        ends = f"(SELECT _f, (CASE {arms} END) AS _d FROM {rows})"
        found = connection.execute(
            f"SELECT _f, count(*) FROM {ends} WHERE isfinite(_d) AND ({inside}) GROUP BY _f"
        ).fetchall()
        ended = {str(f): int(n) for f, n in found}
    calls = {
        str(f): (bool(all_b), bool(any_b))
        for f, all_b, any_b in connection.execute(
            f"SELECT _f, bool_and({among('instance', blocking)}), bool_or({among('instance', blocking)}) "
            f"FROM {rows} GROUP BY _f"
        ).fetchall()
    }
    # A function whose every call is blocking has these blocks already (the same rows); the
    # others' are computed over their blocking calls only.
    mixed = [f for f in functions if not calls.get(f, (True, False))[0]]
    answers = {
        column: engine.percentile_blocks(
            connection, rows, column, ["_f"], f"successful AND {among('instance', blocking)} AND {among('_f', mixed)}"
        )
        if mixed
        else {}
        for column in ("client_latency_ms", "corrected_latency_ms")
    }
    out = []
    for function in sorted(functions):
        start, end = windows[function]
        block = figures.block((function,), start, end, float(ended.get(function, 0)))
        for column, blocks in answers.items():
            own = figures.blocks[column].get((function,)) if function not in mixed else blocks.get((function,))
            block.update(own or engine.empty_block(column))
        all_b, any_b = calls.get(function, (True, False))
        modes = phase_stats[phase_stats["function"] == function]["mode"].tolist() if len(phase_stats) else []
        out.append(
            {
                "function": function,
                "calls": "blocking" if all_b else "non-blocking" if not any_b else "mixed",
                "modes": ",".join(sorted(set(modes))),
                **{k: v for k, v in block.items() if k != "window_s"},
            }
        )
    return pd.DataFrame(out)
