"""The plots' data (``plot_inputs.PlotInputs``) of a run analysed out of core, computed by DuckDB over
``analysis/invocations.parquet`` so that no plot reads the rows.

Each piece is what ``faasprof.analyzer.plots`` computes from a frame in memory, or the same figure
from other exact points: a CDF curve passes through exact order statistics of its group (each
first-pass bin's least and greatest value, about 0.1 % apart in value, where the in-memory curve
takes 2,000 evenly spaced ranks; the top 1,000 ranks and the marked percentiles' neighbours as in
memory, so the marks are the same values), found by ``order_stats`` without sorting a group; the throughput's
counts per bin exactly (each value's bin found as ``np.searchsorted`` finds it), the mode shading
and the breakdown from the tables. The scatter plots' subsample keeps, as in memory, every point
above its group's 99th percentile and about ``plots.MAX_POINTS`` others per group, taken evenly
through the file's row order (``file_row_number`` modulo a step) rather than through the group's own
order, which would need a sort of the whole group: the same density of points, not the same points.
Memory: the points drawn, never the rows.
"""

from __future__ import annotations

import math
from typing import Sequence

import duckdb
import numpy as np

from faasprof.analyzer import engine, order_stats
from faasprof.analyzer import plots as plots_mod
from faasprof.analyzer.ooc_groups import among, done_s_sql, number, text
from faasprof.analyzer.plot_inputs import (
    CdfCurve,
    ClassPoints,
    LatencyPoints,
    PlotInputs,
    ScatterGroup,
    ThroughputCounts,
    marked,
    throughput_edges,
)


def plot_inputs(
    connection: duckdb.DuckDBPyConnection, frame: str, specs: list[dict], phase_stats_rows: list[dict]
) -> PlotInputs:
    """``PlotInputs`` of the invocation frame ``frame`` (a table expression with ``file_row_number``);
    ``phase_stats_rows``: the phase table's rows (instance, phase, mode), the CDFs' curves."""
    overview_t, overview_lat = _points(connection, frame, "successful", None)[None]
    return PlotInputs(
        latency=_latency(connection, frame),
        cdf=_cdf(connection, frame, phase_stats_rows),
        throughput=_throughput(connection, frame, specs),
        overview_t_s=overview_t,
        overview_latency_ms=overview_lat,
    )


def _points(
    connection: duckdb.DuckDBPyConnection, frame: str, where: str, group: str | None
) -> dict[object, tuple[np.ndarray, np.ndarray]]:
    """Per value of ``group`` (SQL; None: one group) among the rows ``where`` with a finite
    completion latency: the subsample's (planned s, latency ms)."""
    key = group or "NULL"
    rows = (
        f"(SELECT {key} AS _g, intended_s AS _t, completion_latency_ms AS _v, file_row_number AS _r FROM {frame} "
        f"WHERE ({where}) AND isfinite(completion_latency_ms))"
    )
    tails = engine.linear_quantiles(connection, rows, "_v", ["_g"], [0.99])
    if not tails:
        return {None: (np.zeros(0), np.zeros(0))} if group is None else {}
    # Every step-th row of the file within the group (about MAX_POINTS of it) and its tail.
    arms = " ".join(
        f"WHEN _g IS NOT DISTINCT FROM {_literal(g)} THEN (_r % {max(1, math.ceil(n / plots_mod.MAX_POINTS))} = 0 "
        f"OR {n} <= {plots_mod.MAX_POINTS} OR _v >= {number(p99)})"
        for (g,), (n, _total, (p99,)) in tails.items()
    )
    found = connection.execute(f"SELECT _g, _t, _v FROM {rows} WHERE (CASE {arms} END) ORDER BY _g, _r").df()
    out: dict[object, tuple[np.ndarray, np.ndarray]] = {}
    for g, part in found.groupby("_g", dropna=False, sort=False) if len(found) else []:
        out[None if group is None else g] = (part["_t"].to_numpy("float64"), part["_v"].to_numpy("float64"))
    if group is None and None not in out:
        out[None] = (np.zeros(0), np.zeros(0))
    return out


def _literal(value: object) -> str:
    return "NULL" if value is None else text(value)


def _latency(connection: duckdb.DuckDBPyConnection, frame: str) -> LatencyPoints:
    """``plots.latency_points`` in SQL: classes in legend order, the busiest functions, failures."""
    counts = connection.execute(
        f"SELECT start_class::VARCHAR, function::VARCHAR, count(*) FROM {frame} WHERE successful GROUP BY ALL"
    ).fetchall()
    per_function: dict[str, int] = {}
    per_class: dict[str, int] = {}
    for start_class, function, n in counts:
        if function is not None:
            per_function[str(function)] = per_function.get(str(function), 0) + int(n)
        if start_class is not None:
            per_class[str(start_class)] = per_class.get(str(start_class), 0) + int(n)
    busiest = sorted(per_function.items(), key=lambda item: (-item[1], item[0]))[: plots_mod.MAX_FUNCTIONS]
    functions = sorted(name for name, _ in busiest)
    points = _points(
        connection,
        frame,
        f"successful AND {among('function', functions)}",
        "start_class::VARCHAR || chr(31) || function::VARCHAR",
    )
    classes = []
    for name in plots_mod.CLASS_COLOURS:
        if not per_class.get(name):
            continue
        entry = ClassPoints(name, per_class[name])
        for function in functions:
            found = points.get(f"{name}\x1f{function}")
            if found is not None and len(found[0]):
                entry.groups.append(ScatterGroup(function, *found))
        classes.append(entry)
    (failed_count,) = connection.execute(
        f"SELECT count(*) FROM {frame} WHERE NOT successful AND isfinite(completion_latency_ms)"
    ).fetchone() or (0,)
    failed_t, failed_lat = _points(connection, frame, "NOT successful", None)[None]
    return LatencyPoints(classes, functions, int(failed_count), failed_t, failed_lat)


def _cdf(connection: duckdb.DuckDBPyConnection, frame: str, rows: Sequence[dict]) -> list[CdfCurve]:
    """``plots.cdf_curves`` in SQL: the same order statistics of each instance × phase."""
    wanted = [(str(r["instance"]), int(r["phase"]), str(r["mode"])) for r in rows]
    if not wanted:
        return []
    values = (
        f"SELECT instance::VARCHAR AS _g0, phase::BIGINT AS _g1, completion_latency_ms::DOUBLE AS _v FROM {frame} "
        "WHERE successful AND steady AND isfinite(completion_latency_ms)"
    )
    pcts = plots_mod.MARKED_PERCENTILES

    def ranks(n: int) -> list[int]:
        # The top 1,000 (the tail, drawn point by point) and the marks' two neighbours each.
        exact = [pct / 100 * (n - 1) for pct in pcts]
        return sorted({*range(max(0, n - 1000), n), *(math.floor(e) for e in exact), *(math.ceil(e) for e in exact)})

    found = order_stats.order_statistics(connection, values, 2, ranks, bin_edges=True)
    curves = []
    for instance, phase, mode in wanted:
        group = found.get((instance, phase))
        if group is None:
            continue
        n = group.n
        idx = np.array(sorted(group.at), dtype=np.int64)
        x = np.array([group.at[int(r)] for r in idx], dtype="float64")
        marks = []
        for pct in marked(n, pcts):
            position = pct / 100 * (n - 1)
            below, above = math.floor(position), math.ceil(position)
            weight = position - below
            low, high = group.at[below], group.at[above]
            # numpy's linear interpolation, to the bit: from the nearer end of the two
            value = high - (high - low) * (1 - weight) if weight >= 0.5 else low + (high - low) * weight
            marks.append((pct, float(value)))
        curves.append(CdfCurve(instance, phase, mode, n, x, (idx + 1) / n, marks))
    return curves[: plots_mod.MAX_CDF_CURVES]


def _bin(value: str, width: float) -> str:
    """SQL: the throughput bin of ``value`` as ``np.searchsorted(edges, value, 'right') - 1`` gives
    it for ``edges = np.arange(0, end + width, width)`` (``k·width``): the floor, corrected by one
    either way where the division rounded across an edge."""
    k = f"CAST(floor({value} / {number(width)}) AS BIGINT)"
    return (
        f"(CASE WHEN {k} * {number(width)} > {value} THEN {k} - 1 "
        f"WHEN ({k} + 1) * {number(width)} <= {value} THEN {k} + 1 ELSE {k} END)"
    )


def _throughput(connection: duckdb.DuckDBPyConnection, frame: str, specs: list[dict]) -> ThroughputCounts:
    """``plots.throughput_counts`` in SQL: the counts per bin of planned sends, ends, failed ends."""
    present = [r[0] for r in connection.execute(f"SELECT DISTINCT instance::VARCHAR FROM {frame}").fetchall()]
    names = [s["instance"] for s in specs if s["instance"] in present]
    blocking = {s["instance"]: bool(s["blocking"]) for s in specs}

    def ends(where: str) -> str:
        # Each instance's ends as ``stats.end_times_s`` of its rows ``where`` (its records or not).
        with_record = dict(
            connection.execute(
                f"SELECT instance::VARCHAR, bool_or(has_record) FROM {frame} WHERE {where} GROUP BY 1"
            ).fetchall()
        )
        arms = " ".join(
            f"WHEN instance::VARCHAR = {text(n)} THEN {done_s_sql(blocking[n], bool(with_record.get(n)))}"
            for n in names
        )
        return f"(SELECT (CASE {arms} END) AS _e FROM {frame} WHERE ({where}) AND {among('instance', names)})"

    all_ends, failed_ends = ends("true"), ends("NOT successful")
    (last_planned,) = connection.execute(f"SELECT max(intended_s) FROM {frame}").fetchone() or (None,)
    (last_end,) = connection.execute(f"SELECT max(_e) FROM {all_ends} WHERE isfinite(_e)").fetchone() or (None,)
    known = [float(v) for v in (last_planned, last_end) if v is not None and not math.isnan(v)]
    end = max(known) if known else 1.0
    edges, width = throughput_edges(end)
    bins = len(edges) - 1

    def counts(values: str, column: str) -> np.ndarray:
        slot = _bin(column, width)
        last = f"(CASE WHEN {column} = {number(float(edges[-1]))} THEN {bins - 1} ELSE {slot} END)"
        found = connection.execute(
            f"SELECT _s, count(*) FROM (SELECT {last} AS _s FROM {values} WHERE isfinite({column})) "
            f"WHERE _s >= 0 AND _s < {bins} GROUP BY _s"
        ).fetchall()
        out = np.zeros(max(bins, 0), dtype=np.int64)
        for s, n in found:
            out[int(s)] = int(n)
        return out

    (any_failed,) = connection.execute(f"SELECT count(*) FROM {failed_ends} WHERE isfinite(_e)").fetchone() or (0,)
    return ThroughputCounts(
        edges,
        counts(f"(SELECT intended_s FROM {frame})", "intended_s"),
        counts(all_ends, "_e"),
        counts(failed_ends, "_e") if any_failed else None,
    )
