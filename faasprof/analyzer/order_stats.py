"""Exact order statistics out of core, in memory bounded by a setting and not by the rows: the
values at a few chosen ranks of each group of a DuckDB table expression, without sorting (or
holding) any group whole.

A window ``row_number() OVER (PARTITION BY group ORDER BY value)`` gives the same values, but
DuckDB holds a whole partition to sort it: 25 million rows of one instance needed 2 GB. Here each
group is narrowed in passes instead:

1. One aggregate over the rows: per group and *bin*, the rows, their sum, min and max. A bin is a
   slice of the value axis, ``floor(ln |v| · BINS_PER_E)`` with the sign kept (about 0.1 %
   relative width), so a group holds a few thousand bins at most however many rows it has (an
   aggregate of bounded size, which DuckDB spills anyway). Narrow enough that a latency spread
   over ±10 % leaves about 1 % of a group's rows per bin (few bins need cutting, step 3).
2. The counts, summed in order of the bins (the bin is monotone in the value), say which bin holds
   each wanted rank and how many of the group's rows lie below it.
3. A bin of one value answers at once; a bin of more than ``SORT_ROWS`` rows is cut again, into
   ``SPLIT_BINS`` equal slices between its min and max, by another aggregate over its rows only
   (repeated until it is small or of one value); the rest are read and sorted, only their rows.
   A row is matched to a first-pass bin by its bin's number (an equality: a hash join), to a
   slice by its range (compared with each slice of its group: kept for the few slices of big bins).

The ranks are exact order statistics, so a figure built from them is the in-memory one to the last
bit: no sketch, no error bound. Memory: the bins' aggregate (groups × occupied bins) and at most
``SORT_ROWS`` rows per bin read, none of which grows with the rows of a group.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Sequence

import duckdb
import pandas as pd

BINS_PER_E = 1024  # bins per factor e of |value|: about 0.1 % of the value wide
SORT_ROWS = 1_000_000  # a bin with more rows than this is cut again before its rows are read
SPLIT_BINS = 4096  # the equal slices a big bin is cut into
_SIDE_OFFSET = 2_000_000  # keeps the positive and negative values' bins apart (|ln v|·64 < 50,000)

GroupKey = tuple  # the values of a group's columns


@dataclass
class _Bin:
    """A value range of one group holding some of the wanted ranks."""

    key: GroupKey
    low: float  # the least and greatest values of the rows in it
    high: float
    below: int  # the group's rows under ``low``
    rows: int
    ranks: list[int] = field(default_factory=list)  # the wanted ranks (0-based, in the group) inside
    first_bin: int | None = None  # the first pass's bin (``bin_sql``) it is; None for a slice cut later


@dataclass(frozen=True)
class GroupFigures:
    """One group's row count, sum (for the mean) and values at the wanted ranks."""

    n: int
    total: float
    at: dict[int, float]


def bin_sql(value: str) -> str:
    """The first pass's bin of ``value`` (a DOUBLE expression): monotone non-decreasing in it."""
    return (
        f"(CASE WHEN {value} > 0 THEN {_SIDE_OFFSET} + CAST(floor(ln({value}) * {BINS_PER_E}) AS BIGINT) "
        f"WHEN {value} < 0 THEN -{_SIDE_OFFSET} - CAST(floor(ln(-{value}) * {BINS_PER_E}) AS BIGINT) ELSE 0 END)"
    )


def order_statistics(
    connection: duckdb.DuckDBPyConnection,
    rows_sql: str,
    width: int,
    wanted: Callable[[int], Sequence[int]],
    bin_edges: bool = False,
) -> dict[GroupKey, GroupFigures]:
    """Per group of ``rows_sql`` (a table expression with columns ``_g0`` … ``_g{width-1}``, the
    group, and ``_v``, a finite DOUBLE), its rows, their sum and the values at the ranks
    ``wanted(n)`` of its ``n`` rows (0-based, ascending order). With ``bin_edges`` also the order
    statistics the first pass finds for free: each bin's least and greatest value, at the ranks of
    its first and last row (an empirical CDF's exact points, a bin apart: about 0.1 % of the value)."""
    keys = [f"_g{k}" for k in range(width)]
    histogram = connection.execute(
        f"SELECT {', '.join(keys)}, {bin_sql('_v')} AS _b, count(*), sum(_v), min(_v), max(_v) "
        f"FROM ({rows_sql}) GROUP BY ALL"
    ).fetchall()
    by_group: dict[GroupKey, list[tuple]] = {}
    for row in histogram:
        by_group.setdefault(tuple(row[:width]), []).append(row[width:])
    figures: dict[GroupKey, GroupFigures] = {}
    pending: list[_Bin] = []
    for key, bins in by_group.items():
        bins.sort(key=lambda b: b[0])
        n = sum(int(b[1]) for b in bins)
        figures[key] = GroupFigures(n, math.fsum(float(b[2]) for b in bins), {})
        if bin_edges:
            start = 0
            for _, rows, _, least, greatest in bins:
                figures[key].at.update({start: float(least), start + int(rows) - 1: float(greatest)})
                start += int(rows)
        pending.extend(_place(key, [(int(b[1]), float(b[3]), float(b[4]), int(b[0])) for b in bins], 0, wanted(n)))
    while pending:
        small = [b for b in pending if b.low == b.high or b.rows <= SORT_ROWS]
        for b in small:
            if b.low == b.high:  # every row of the bin has this value
                figures[b.key].at.update({rank: b.low for rank in b.ranks})
        _read_and_sort(connection, rows_sql, keys, [b for b in small if b.low != b.high], figures)
        pending = _split(connection, rows_sql, keys, [b for b in pending if b.low != b.high and b.rows > SORT_ROWS])
    return figures


def _place(
    key: GroupKey, bins: Sequence[tuple[int, float, float, int | None]], below: int, ranks: Sequence[int]
) -> list[_Bin]:
    """The bins (rows, min, max, first-pass bin or None; in value order, the first ``below`` rows
    of the group under them) that hold ``ranks``, each with the ranks it holds."""
    out: list[_Bin] = []
    remaining = sorted(set(ranks))
    start = below
    for rows, low, high, first_bin in bins:
        inside = [r for r in remaining if start <= r < start + rows]
        if inside:
            out.append(_Bin(key, low, high, start, rows, inside, first_bin))
        start += rows
    return out


def _targets_frame(bins: Sequence[_Bin], width: int) -> pd.DataFrame:
    return pd.DataFrame(
        [(*b.key, k, b.low, b.high, b.first_bin if b.first_bin is not None else -1) for k, b in enumerate(bins)],
        columns=[*(f"_g{k}" for k in range(width)), "_t", "_lo", "_hi", "_b"],
    )


def _joined(rows_sql: str, keys: Sequence[str], by_first_bin: bool = False) -> str:
    """The rows of ``rows_sql`` inside the registered target bins. A first-pass bin is matched by
    its number (an equality: a hash join, however many bins a group has), a slice by its range
    (a group's rows compared with each of its slices: kept for the few slices of big bins)."""
    inside = f"{bin_sql('r._v')} = t._b" if by_first_bin else "r._v BETWEEN t._lo AND t._hi"
    on = " AND ".join([*(f"r.{k} IS NOT DISTINCT FROM t.{k}" for k in keys), inside])
    return f"({rows_sql}) r JOIN _faasprof_bins t ON {on}"


def _read_and_sort(
    connection: duckdb.DuckDBPyConnection,
    rows_sql: str,
    keys: Sequence[str],
    bins: Sequence[_Bin],
    figures: dict[GroupKey, GroupFigures],
) -> None:
    """Read each bin's rows (at most ``SORT_ROWS`` each), sort them and keep the wanted ranks."""
    for by_first_bin in (True, False):
        chosen = [b for b in bins if (b.first_bin is not None) == by_first_bin]
        if not chosen:
            continue
        wanted = pd.DataFrame([(k, r - b.below) for k, b in enumerate(chosen) for r in b.ranks], columns=["_t", "_r"])
        connection.register("_faasprof_bins", _targets_frame(chosen, len(keys)))
        connection.register("_faasprof_ranks", wanted)
        try:
            found = connection.execute(
                f"SELECT s._t, s._r, s._v FROM (SELECT t._t, r._v, row_number() OVER (PARTITION BY t._t ORDER BY r._v) - 1 AS _r "
                f"FROM {_joined(rows_sql, keys, by_first_bin)}) s JOIN _faasprof_ranks w ON s._t = w._t AND s._r = w._r"
            ).fetchall()
        finally:
            connection.unregister("_faasprof_bins")
            connection.unregister("_faasprof_ranks")
        for target, local, value in found:
            b = chosen[int(target)]
            figures[b.key].at[b.below + int(local)] = float(value)


def _split(
    connection: duckdb.DuckDBPyConnection, rows_sql: str, keys: Sequence[str], bins: Sequence[_Bin]
) -> list[_Bin]:
    """Cut each big bin into ``SPLIT_BINS`` equal slices of its value range; the slices that hold
    its ranks."""
    out: list[_Bin] = []
    for by_first_bin in (True, False):
        chosen = [b for b in bins if (b.first_bin is not None) == by_first_bin]
        if not chosen:
            continue
        connection.register("_faasprof_bins", _targets_frame(chosen, len(keys)))
        try:
            slices = connection.execute(
                f"SELECT t._t, least(CAST(floor((r._v - t._lo) / (t._hi - t._lo) * {SPLIT_BINS}) AS BIGINT), {SPLIT_BINS - 1}) AS _s, "
                f"count(*), min(r._v), max(r._v) FROM {_joined(rows_sql, keys, by_first_bin)} GROUP BY ALL"
            ).fetchall()
        finally:
            connection.unregister("_faasprof_bins")
        by_bin: dict[int, list[tuple]] = {}
        for target, piece, count, low, high in slices:
            by_bin.setdefault(int(target), []).append((int(piece), int(count), float(low), float(high)))
        for k, b in enumerate(chosen):
            pieces = sorted(by_bin.get(k, []))
            out.extend(_place(b.key, [(*p[1:], None) for p in pieces], b.below, b.ranks))
    return out
