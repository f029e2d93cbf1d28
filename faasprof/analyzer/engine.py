"""The analyzer's out-of-core engine: exact percentiles with their 95 % intervals, counts and
per-minute series computed by DuckDB over Parquet files, in memory bounded by a setting.

Why DuckDB (ARCHITECTURE.md says it too): it is already a dependency (the records' reader), it
scans Parquet row groups in pieces, and its joins and aggregates spill to ``temp_directory`` when
they pass ``memory_limit``. Polars' streaming engine would add a dependency; a sketch (DDSketch,
t-digest) would trade exactness for one pass.

A percentile block here is ``faasprof.analyzer.stats.percentile_block``'s: the same keys, the same
estimate (linear interpolation between the two order statistics around ``p·(n−1)``) and the same
interval ends (the order statistics at ``stats``' distribution-free ranks), so the figures are the
in-memory analyzer's to the last bit (no error bound to print). Which ranks those figures read is
worked out per group (a handful), and ``faasprof.analyzer.order_stats`` finds the values at them
without sorting any group whole (binned counts first, then only the rows of the bins that hold
them), in memory bounded by the setting and not by the rows.

Settings (environment, read by ``EngineSettings.from_environment``):
  FAASPROF_ENGINE_MEMORY  DuckDB's memory_limit, e.g. ``2GB`` (default ``1GB``)
  FAASPROF_ENGINE_TEMP    where it spills (default ``<tmp>/faasprof-engine``)
  FAASPROF_ENGINE_THREADS threads (default: the CPUs)
"""

from __future__ import annotations

import math
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

import duckdb
import pandas as pd

from faasprof.analyzer import order_stats
from faasprof.analyzer import stats as stats_mod
from faasprof.errors import ConfigError
from faasprof.rundir import columnar

MEMORY_ENV = "FAASPROF_ENGINE_MEMORY"
TEMP_ENV = "FAASPROF_ENGINE_TEMP"
THREADS_ENV = "FAASPROF_ENGINE_THREADS"
DEFAULT_MEMORY_LIMIT = "1GB"
_MEMORY = re.compile(r"^\s*\d+(\.\d+)?\s*(KB|MB|GB|TB|KiB|MiB|GiB|TiB)\s*$")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

GroupKey = tuple  # the values of a group's columns, in the order asked for


@dataclass(frozen=True)
class EngineSettings:
    """How much the engine may hold in memory, where it spills, and on how many threads."""

    memory_limit: str = DEFAULT_MEMORY_LIMIT
    temp_directory: Path = Path(tempfile.gettempdir()) / "faasprof-engine"
    threads: int = max(1, os.cpu_count() or 1)

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> "EngineSettings":
        """The settings from ``FAASPROF_ENGINE_*`` (module docstring); ``ConfigError`` names a bad one."""
        env = os.environ if environ is None else environ
        memory = env.get(MEMORY_ENV, DEFAULT_MEMORY_LIMIT)
        if not _MEMORY.match(memory):
            raise ConfigError(f"{MEMORY_ENV}={memory!r}: not a size; set it to a number and a unit, e.g. 2GB or 512MiB")
        threads_text = env.get(THREADS_ENV, "")
        if threads_text and not (threads_text.isdigit() and int(threads_text) >= 1):
            raise ConfigError(f"{THREADS_ENV}={threads_text!r}: not a count of threads; set it to 1 or more")
        default = cls()
        return cls(
            memory_limit=memory.replace(" ", ""),
            temp_directory=Path(env.get(TEMP_ENV) or default.temp_directory),
            threads=int(threads_text) if threads_text else default.threads,
        )


def connect(settings: EngineSettings | None = None) -> duckdb.DuckDBPyConnection:
    """An in-process DuckDB bounded by ``settings`` (``from_environment`` when None)."""
    settings = settings or EngineSettings.from_environment()
    settings.temp_directory.mkdir(parents=True, exist_ok=True)
    connection = duckdb.connect(
        config={
            "memory_limit": settings.memory_limit,
            "temp_directory": os.fspath(settings.temp_directory),
            "threads": settings.threads,
            # Order does not matter to any figure here; keeping it would hold rows back.
            "preserve_insertion_order": False,
        }
    )
    # Its progress bar writes to stdout, whose last line is a command's answer (the run directory).
    connection.execute("SET enable_progress_bar = false")
    return connection


def parquet_source(paths: str | os.PathLike | Sequence[str | os.PathLike]) -> str:
    """A table expression scanning one Parquet file or several (a run's pieces) as one table."""
    items = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    quoted = ", ".join("'" + os.fspath(p).replace("'", "''") + "'" for p in items)
    return f"read_parquet([{quoted}], union_by_name = true)"


def _column(name: str) -> str:
    if not _NAME.match(name):  # names come from code, never from a file; a bad one is a bug
        raise ValueError(f"not a column name: {name!r}")
    return f'"{name}"'


def needed_ranks(n: int, ps: Sequence[float]) -> list[int]:
    """The 0-based order statistics ``stats.percentile_block`` reads for quantiles ``ps`` of ``n``
    samples (the estimates' two neighbours, the intervals' ends, the maximum)."""
    ranks = {n - 1}
    for p in ps:
        below, above, _ = stats_mod._interpolation(n, p)
        j, k = stats_mod._ci_ranks(n, p)
        ranks.update(r for r in (below, above, j - 1, k - 1) if 0 <= r < n)
    return sorted(ranks)


def _block_from_ranks(n: int, mean: float, at: dict[int, float], prefix: str) -> dict:
    """``stats.percentile_block``'s dict from the order statistics ``at`` (rank → value)."""
    out: dict = {f"{prefix}_n": int(n), f"{prefix}_mean": float(mean) if n else math.nan}
    for pct in stats_mod.PERCENTILES:
        tag = f"p{pct:g}".replace(".", "_")
        p = pct / 100.0
        if n == 0:
            estimate, low, high = math.nan, math.nan, math.nan
        else:
            below, above, weight = stats_mod._interpolation(n, p)
            estimate = at[below] if n < 2 else at[below] * (1.0 - weight) + at[above] * weight
            j, k = stats_mod._ci_ranks(n, p)
            low = at[j - 1] if 1 <= j <= n else math.nan
            high = at[k - 1] if 1 <= k <= n else math.nan
        out[f"{prefix}_{tag}"] = float(estimate)
        out[f"{prefix}_{tag}_ci_low"] = float(low)
        out[f"{prefix}_{tag}_ci_high"] = float(high)
    out[f"{prefix}_max"] = float(at[n - 1]) if n else math.nan
    return out


def empty_block(prefix: str) -> dict:
    """``stats.percentile_block``'s dict of no samples (NaN figures, ``_n`` 0)."""
    return _block_from_ranks(0, math.nan, {}, prefix)


def _rows_sql(source: str, column: str, groups: Sequence[str], where: str) -> str:
    """``order_stats``' input: the groups as ``_g0`` …, ``column``'s finite values as ``_v``."""
    keys = [f"{_column(g)} AS _g{k}" for k, g in enumerate(groups)] or ["0 AS _g0"]
    value = f"{_column(column)}::DOUBLE"
    return f"SELECT {', '.join(keys)}, {value} AS _v FROM {source} WHERE ({where}) AND isfinite({value})"


def percentile_blocks(
    connection: duckdb.DuckDBPyConnection,
    source: str,
    column: str,
    groups: Sequence[str],
    where: str = "true",
    prefix: str | None = None,
) -> dict[GroupKey, dict]:
    """Per group of ``groups`` (column names), ``stats.percentile_block`` of ``column``'s finite
    values among the rows where ``where`` (SQL over ``source``) holds, computed out of core
    (``order_stats``: no group is sorted whole). Groups with no finite value are left out."""
    ps = [pct / 100.0 for pct in stats_mod.PERCENTILES]
    figures = order_stats.order_statistics(
        connection, _rows_sql(source, column, groups, where), max(len(groups), 1), lambda n: needed_ranks(n, ps)
    )
    return {
        key: _block_from_ranks(found.n, found.total / found.n, found.at, prefix or column)
        for key, found in figures.items()
    }


def linear_quantiles(
    connection: duckdb.DuckDBPyConnection,
    source: str,
    column: str,
    groups: Sequence[str],
    ps: Sequence[float],
    where: str = "true",
) -> dict[GroupKey, tuple[int, float, list[float]]]:
    """Per group: the finite values' count, their sum and quantiles ``ps`` by linear interpolation between
    order statistics (numpy's default; ``quantile_cont``'s), exact and out of core."""

    def ranks(n: int) -> list[int]:
        return [r for p in ps for r in stats_mod._interpolation(n, p)[:2]]

    figures = order_stats.order_statistics(
        connection, _rows_sql(source, column, groups, where), max(len(groups), 1), ranks
    )
    out: dict[GroupKey, tuple[int, float, list[float]]] = {}
    for key, found in figures.items():
        values = []
        for p in ps:
            below, above, weight = stats_mod._interpolation(found.n, p)
            values.append(found.at[below] * (1.0 - weight) + found.at[above] * weight)
        out[key] = (found.n, found.total, values)
    return out


def steady_phase_blocks(
    connection: duckdb.DuckDBPyConnection,
    source: str,
    phases: Sequence[Mapping],
    column: str = "completion_latency_ms",
    where: str = "successful",
) -> dict[tuple[str, int], dict]:
    """``percentile_blocks`` of ``column`` per instance × steady phase (``stats.phases``' dicts:
    ``phase``, ``steady_start_s``, ``end_s``, ``instances``) over the invocation frame ``source``
    (``analysis/invocations.parquet``'s columns), successful invocations only, as ``phase_stats``."""
    out: dict[tuple[str, int], dict] = {}
    for phase in phases:
        names = ", ".join("'" + str(n).replace("'", "''") + "'" for n in phase["instances"])
        if not names:
            continue
        window = (
            f"intended_s >= {float(phase['steady_start_s'])!r} AND intended_s < {float(phase['end_s'])!r} "
            f"AND instance::VARCHAR IN ({names}) AND ({where})"
        )
        for (instance,), block in percentile_blocks(connection, source, column, ["instance"], window).items():
            out[(str(instance), int(phase["phase"]))] = block
    return out


def class_counts(
    connection: duckdb.DuckDBPyConnection, source: str, groups: Sequence[str], column: str = "start_class"
) -> pd.DataFrame:
    """Rows per group and value of ``column`` (start classes, outcomes), as a tidy frame."""
    keys = [_column(g) for g in groups]
    value = _column(column)
    return connection.execute(
        f"SELECT {', '.join(f'{k}::VARCHAR AS {k}' for k in keys)}{',' if keys else ''} {value}::VARCHAR AS {value}, "
        f"count(*) AS count FROM {source} GROUP BY ALL ORDER BY ALL"
    ).df()


def per_minute_series(
    connection: duckdb.DuckDBPyConnection,
    source: str,
    column: str = "completion_latency_ms",
    where: str = "successful",
    time_column: str = "intended_s",
) -> pd.DataFrame:
    """Per instance and minute of the run (``minute``: 0 for [0, 60) s): invocations, their mean
    and exact median of ``column`` (linear interpolation, numpy's), computed out of core."""
    value, t = _column(column), _column(time_column)
    minutes = (
        f"(SELECT instance::VARCHAR AS instance, CAST(floor({t} / 60) AS BIGINT) AS minute, {value} "
        f"FROM {source} WHERE {where})"
    )
    found = linear_quantiles(connection, minutes, column, ["instance", "minute"], [0.5])
    frame = pd.DataFrame(
        [(instance, minute, n, total / n, p50) for (instance, minute), (n, total, (p50,)) in sorted(found.items())],
        columns=["instance", "minute", "count", f"{column}_mean", f"{column}_p50"],
    )
    frame["count"] = frame["count"].astype("int64")
    return frame


def log_figures(
    connection: duckdb.DuckDBPyConnection, run_dir: str | os.PathLike, phases: Sequence[Mapping]
) -> dict[tuple[str, int], dict]:
    """Figures of the invocation log alone, per instance × steady phase, out of core over its
    columnar copy (``rundir.columnar``, written on first use): ``planned``, the rows of each HTTP
    outcome (``outcome_<name>``), ``lateness_ms`` (send − plan) p50/p99/max over the rows sent,
    and the percentile blocks of ``client_latency_ms`` (send → answer) and ``corrected_latency_ms``
    (plan → answer) over the calls answered ``ok``. No record is read: these are the client's
    figures of a run of any length, before (or without) its records."""
    source = columnar.invocations_scan_sql(run_dir, connection)
    derived = (
        f"(SELECT instance, outcome, intended_ns / 1e9 AS intended_s, (sent_ns - intended_ns) / 1e6 AS lateness_ms, "
        f"(done_ns - sent_ns) / 1e6 AS client_latency_ms, (done_ns - intended_ns) / 1e6 AS corrected_latency_ms "
        f"FROM {source})"
    )
    out: dict[tuple[str, int], dict] = {}
    for phase in phases:
        window = f"intended_s >= {float(phase['steady_start_s'])!r} AND intended_s < {float(phase['end_s'])!r}"
        names = [str(n) for n in phase["instances"]]
        for instance, outcome, count in connection.execute(
            f"SELECT instance, outcome, count(*) FROM {derived} WHERE {window} GROUP BY ALL"
        ).fetchall():
            if instance in names:
                entry = out.setdefault((instance, int(phase["phase"])), {"planned": 0})
                entry["planned"] += int(count)
                entry[f"outcome_{outcome}"] = int(count)
        lateness = linear_quantiles(connection, derived, "lateness_ms", ["instance"], [0.5, 0.99, 1.0], window)
        for (instance,), (_n, _total, (p50, p99, top)) in lateness.items():
            if (instance, int(phase["phase"])) in out:
                out[(instance, int(phase["phase"]))].update(
                    {"lateness_ms_p50": p50, "lateness_ms_p99": p99, "lateness_ms_max": top}
                )
        for column in ("client_latency_ms", "corrected_latency_ms"):
            blocks = percentile_blocks(connection, derived, column, ["instance"], f"{window} AND outcome = 'ok'")
            for (instance,), block in blocks.items():
                if (instance, int(phase["phase"])) in out:
                    out[(instance, int(phase["phase"]))].update(block)
    return out
