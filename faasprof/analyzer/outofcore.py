"""The figures of ``summary.json`` that read the invocation frame, computed out of core by DuckDB over
``analysis/invocations.parquet`` (``faasprof.analyzer.engine``), and when ``faasprof analyze``
takes that path (``FAASPROF_ENGINE_ROWS``).

``analysis.analyze_run`` reads a run of more planned invocations than the setting this way: the
rows are written to Parquet first, then every figure is an aggregate or an exact order statistic
over that file (``ooc_groups`` for the two tables, ``frame_figures`` here for the summary's
counts, failures, pushback, start classes, tail ratios and cost), so memory is bounded by
``FAASPROF_ENGINE_MEMORY``, not by the rows. The in-memory path (``load_run``) gives the same
figures: percentiles exactly, means and slopes to 1e-9 relative (another summation order).

Settings (environment):
  FAASPROF_ENGINE_ROWS    analyse out of core above this many planned invocations (0: always;
                          default ``DEFAULT_ENGINE_ROWS``)
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import duckdb

from faasprof import rundir
from faasprof.analyzer import chains as chains_mod
from faasprof.analyzer import engine, ooc_groups, trace_fidelity
from faasprof.analyzer import stats as stats_mod
from faasprof.analyzer import tails as tails_mod
from faasprof.analyzer.failures import failures_of
from faasprof.analyzer.frames import START_CLASSES, instance_answers_at_end
from faasprof.analyzer.ooc_groups import among, number, text
from faasprof.analyzer.outcome_columns import pushback_counts_of
from faasprof.analyzer.summary import FailureGroup, Failures, Pushback, RecordsInfo
from faasprof.errors import ConfigError
from faasprof.outcomes import ACCEPTED_HTTP_OUTCOMES, FAILURE_OUTCOMES, FINAL_OUTCOMES, HTTP_OUTCOMES, pushback_line
from faasprof.rundir import columnar

ROWS_ENV = "FAASPROF_ENGINE_ROWS"
# Measured (docs/out-of-core.md): the out-of-core path is 2.5 to 3 times slower than the in-memory
# one at 1 and 10 million rows (4.1 GiB in memory at 10 million); above 5 million the in-memory
# peak passes 2 GiB, and the rows builder (rows_sql) keeps 1.4-1.7 GiB up to 100 million.
DEFAULT_ENGINE_ROWS = 5_000_000
CSV_BYTES_PER_ROW = 90  # an invocations.csv line is 80 to 100 bytes: the rows of a run with no count


def rows_threshold(environ: Mapping[str, str] | None = None) -> int:
    """``FAASPROF_ENGINE_ROWS``: above this many planned invocations ``analyze`` goes out of core."""
    env = os.environ if environ is None else environ
    value = env.get(ROWS_ENV, "").strip()
    if not value:
        return DEFAULT_ENGINE_ROWS
    if not value.isdigit():
        raise ConfigError(f"{ROWS_ENV}={value!r}: not a count of rows; set it to 0 (always out of core) or more")
    return int(value)


def planned_rows(run_dir: Path, manifest: rundir.Manifest) -> int:
    """The run's planned invocations: the manifest's count, else estimated from the log's size."""
    planned = (manifest.counts or {}).get("planned")
    if isinstance(planned, int) and planned >= 0:
        return planned
    path = columnar.invocations_csv_path(run_dir)
    return path.stat().st_size // CSV_BYTES_PER_ROW if path.exists() else 0


def out_of_core(
    run_dir: Path, manifest: rundir.Manifest, rows: int | None = None, environ: Mapping[str, str] | None = None
) -> bool:
    """Whether ``analyze`` takes the out-of-core path for this run (``ROWS_ENV``); ``rows``: its
    planned invocations when the caller has counted them (else ``planned_rows``)."""
    threshold = rows_threshold(environ)
    return threshold == 0 or (planned_rows(run_dir, manifest) if rows is None else rows) > threshold


def source(path: Path) -> str:
    """The invocation frame's Parquet as a table expression, with ``file_row_number`` (its row order)."""
    return f"read_parquet('{os.fspath(path).replace(chr(39), chr(39) * 2)}', file_row_number = true)"


def columns_of(connection: duckdb.DuckDBPyConnection, frame: str) -> list[str]:
    """The columns of ``frame`` (a table expression)."""
    return [row[0] for row in connection.execute(f"DESCRIBE SELECT * FROM {frame}").fetchall()]


@dataclass(frozen=True)
class RowsBuilt:
    """What writing a run's invocation frame to Parquet found (``analysis.build_rows``)."""

    records_info: RecordsInfo  # the records' source, found, missing … (``summary.records``)
    warnings: list[str]  # the records' warnings (unreadable lines, foreign and missing records)
    metric_problems: list[str]  # the plug-ins' metrics that failed
    host_attribution: dict | None  # activations per host by container spans (``hosts.apply_containers``)


@dataclass(frozen=True)
class RunFacts:
    """What ``load_run`` reads off the whole frame before any statistic: the instances, the
    workload's duration, where a stopped run stopped, the frame's columns."""

    specs: list[dict]
    duration_s: float
    end_s: float | None
    columns: list[str]


def run_facts(connection: duckdb.DuckDBPyConnection, frame: str, manifest: rundir.Manifest) -> RunFacts:
    """``stats.instance_specs``, ``stats._workload_duration`` and ``stats.run_end_s`` in SQL."""
    appearance = connection.execute(
        f"SELECT instance::VARCHAR, count(*), arg_min(function::VARCHAR, file_row_number) FROM {frame} "
        "WHERE instance IS NOT NULL GROUP BY 1 ORDER BY min(file_row_number)"
    ).fetchall()
    last, last_sent = connection.execute(
        f"SELECT max(intended_s), max(intended_s) FILTER (WHERE sent_ns IS NOT NULL) FROM {frame}"
    ).fetchone() or (None, None)
    duration = stats_mod.workload_duration(manifest, None if last is None else float(last))
    last_sent_s = -math.inf if last_sent is None else float(last_sent)
    (cut_off,) = connection.execute(
        f"SELECT min(intended_s) FROM {frame} WHERE outcome::VARCHAR = 'not_sent' AND intended_s > {number(last_sent_s)}"
    ).fetchone() or (None,)
    end_s = stats_mod.run_end_from(manifest, last_sent_s, None if cut_off is None else float(cut_off))
    specs = stats_mod.specs_of(manifest, duration, [(name, int(n), function) for name, n, function in appearance])
    return RunFacts(specs, duration, end_s, columns_of(connection, frame))


@dataclass(frozen=True)
class FrameFigures:
    """The summary's figures of the whole invocation frame (``analysis.build_summary``)."""

    planned: int
    outcomes: dict[str, int]
    final_outcomes: dict[str, int]  # less those planned after a stopped run's end
    not_sent_interrupted: int
    warmup_invocations: int
    start_classes: dict[str, int]  # after the warm-up
    pushback: Pushback
    failures: Failures
    tail_ratios: dict
    cost_gb_s: dict[str, Any]  # GB-s totals; None where not finite (frames.cost_totals)


def _unsent_after(end_s: float | None) -> str:
    if end_s is None:
        return "false"
    return f"(outcome::VARCHAR = 'not_sent' AND intended_s >= {number(end_s)})"


def frame_figures(
    connection: duckdb.DuckDBPyConnection, frame: str, manifest: rundir.Manifest, end_s: float | None, warmup_s: float
) -> FrameFigures:
    """``FrameFigures`` out of core: a few aggregates and exact medians over ``frame``."""
    after = _unsent_after(end_s)
    warm_up = f"intended_s < {number(warmup_s)}"
    totals = connection.execute(
        f"SELECT count(*), count(*) FILTER (WHERE {after}), count(*) FILTER (WHERE {warm_up}), "
        + ", ".join(f"sum({c}) FILTER (WHERE NOT isnan({c}))" for c in ooc_groups.COSTS)
        + f" FROM {frame}"
    ).fetchone()
    assert totals is not None  # an aggregate without GROUP BY has its row
    planned, unsent_after, warmup_rows, *costs = totals
    outcomes = _label_counts(connection, frame, "outcome", "true")
    finals = _label_counts(connection, frame, "final_outcome", "true")
    classes = _label_counts(connection, frame, "start_class", f"NOT ({warm_up})")
    final_counts = {name: finals.get(name, 0) for name in FINAL_OUTCOMES}
    final_counts["not_sent"] -= int(unsent_after)
    outcome_counts = {name: outcomes.get(name, 0) for name in HTTP_OUTCOMES}
    pushback_rows = connection.execute(
        f"SELECT outcome::VARCHAR, http_status, sent_ns IS NOT NULL, error::VARCHAR, count(*) FROM {frame} "
        "WHERE outcome::VARCHAR IS DISTINCT FROM 'ok' GROUP BY ALL"
    ).fetchall()
    counts = pushback_counts_of(pushback_rows)
    accepted = sum(outcome_counts.get(name, 0) for name in ACCEPTED_HTTP_OUTCOMES)
    return FrameFigures(
        planned=int(planned),
        outcomes=outcome_counts,
        final_outcomes=final_counts,
        not_sent_interrupted=int(unsent_after),
        warmup_invocations=int(warmup_rows),
        start_classes={name: classes.get(name, 0) for name in START_CLASSES},
        pushback={"counts": counts, "line": pushback_line(counts, int(planned), accepted)},
        failures=_failures(connection, frame, after),
        tail_ratios=_tail_ratios(connection, frame, manifest, warm_up),
        cost_gb_s={
            c: round(float(v), 6) if v is not None and math.isfinite(v) else (0.0 if v is None else None)
            for c, v in zip(ooc_groups.COSTS, costs)
        },
    )


def _label_counts(connection: duckdb.DuckDBPyConnection, frame: str, column: str, where: str) -> dict[str, int]:
    found = connection.execute(f"SELECT {column}::VARCHAR, count(*) FROM {frame} WHERE {where} GROUP BY 1")
    return {str(label): int(n) for label, n in found.fetchall() if label is not None}


def _failures(connection: duckdb.DuckDBPyConnection, frame: str, unsent_after: str) -> Failures:
    """``failures.failure_summary`` out of core."""
    failed = f"{among('final_outcome', FAILURE_OUTCOMES)} AND NOT {unsent_after}"
    (total,) = connection.execute(f"SELECT count(*) FROM {frame} WHERE {failed}").fetchone() or (0,)
    text_of = "CASE WHEN {0} IS NOT NULL AND {0}::VARCHAR <> '' THEN {0}::VARCHAR END"
    rows = connection.execute(
        f"SELECT function::VARCHAR AS _f, final_outcome::VARCHAR AS _o, count(*), "
        f"arg_min({text_of.format('error_text')}, file_row_number) FILTER (WHERE {text_of.format('error_text')} IS NOT NULL), "
        f"arg_min({text_of.format('error')}, file_row_number) FILTER (WHERE {text_of.format('error')} IS NOT NULL) "
        f"FROM {frame} WHERE {failed} AND function IS NOT NULL GROUP BY ALL"
    ).fetchall()
    grouped = f"(SELECT *, function::VARCHAR AS _f, final_outcome::VARCHAR AS _o FROM {frame} WHERE {failed})"
    medians = engine.linear_quantiles(connection, grouped, "completion_latency_ms", ["_f", "_o"], [0.5, 1.0])
    groups: list[FailureGroup] = []
    for function, outcome, count, record_error, http_error in rows:
        n, _total, (p50, top) = medians.get((function, outcome), (0, 0.0, [math.nan, math.nan]))
        groups.append(
            {
                "function": str(function),
                "final_outcome": str(outcome),
                "count": int(count),
                "completion_latency_ms_p50": float(p50) if n else None,
                "completion_latency_ms_max": float(top) if n else None,
                "example_error": record_error if record_error is not None else http_error,
            }
        )
    return failures_of(groups, int(total))


def _tail_ratios(connection: duckdb.DuckDBPyConnection, frame: str, manifest: rundir.Manifest, warm_up: str) -> dict:
    """``tails.tail_ratios`` out of core: per instance × phase × start class (and ``all``)."""
    answers_at_end = instance_answers_at_end(manifest)
    names = [r[0] for r in connection.execute(f"SELECT DISTINCT instance::VARCHAR FROM {frame}").fetchall() if r[0]]
    blocking = [name for name in names if answers_at_end(name)]
    latency = f"(CASE WHEN {among('instance', blocking)} THEN client_latency_ms ELSE platform_latency_ms END)"
    answered = (
        f"{among('outcome', stats_mod.ANSWERED)} AND NOT ({warm_up}) AND instance IS NOT NULL AND phase IS NOT NULL"
    )
    rows = (
        f"(SELECT instance::VARCHAR AS _i, phase::BIGINT AS _p, start_class::VARCHAR AS _c, {latency} AS _lat, "
        f"function::VARCHAR AS _f, file_row_number FROM {frame} WHERE {answered})"
    )
    heads = dict(connection.execute(f"SELECT _i, arg_min(_f, file_row_number) FROM {rows} GROUP BY _i").fetchall())
    present = connection.execute(f"SELECT _i, _p, _c, count(*) FROM {rows} GROUP BY ALL").fetchall()
    ps = [0.5, 0.99, 0.999]
    by_class = engine.linear_quantiles(connection, rows, "_lat", ["_i", "_p", "_c"], ps)
    by_phase = engine.linear_quantiles(connection, rows, "_lat", ["_i", "_p"], ps)
    seen: dict[tuple[str, int], set[str]] = {}
    for instance, phase, start_class, _count in present:
        seen.setdefault((str(instance), int(phase)), set()).add("all" if start_class is None else str(start_class))
        seen[(str(instance), int(phase))].add("all")
    out = []
    for instance, phase in sorted(seen, key=lambda k: (k[0], k[1])):
        head = {"instance": instance, "function": str(heads.get(instance))}
        kind = tails_mod.LATENCY_KINDS[bool(answers_at_end(instance))]
        for start_class in tails_mod.CLASSES:
            if start_class not in seen[(instance, phase)]:
                continue
            found = (
                by_phase.get((instance, phase))
                if start_class == "all"
                else by_class.get((instance, phase, start_class))
            )
            n, _total, values = found if found is not None else (0, 0.0, [math.nan] * 3)
            out.append(
                {
                    **head,
                    "phase": phase,
                    "start_class": start_class,
                    "latency": kind,
                    **tails_mod.ratio_figures(int(n), *values),
                }
            )
    return {"rule": tails_mod.RULE, "rows": out}


def slim_frame(connection: duckdb.DuckDBPyConnection, frame: str, columns: list[str], where: str = "true") -> Any:
    """Some columns of the rows ``where`` as a pandas frame, labels as categoricals (for the few
    figures of special runs that still read rows: chains, a trace run's fidelity)."""
    available = set(columns_of(connection, frame))
    kept = [c for c in columns if c in available]
    data = connection.execute(f"SELECT {', '.join(kept)} FROM {frame} WHERE {where} ORDER BY file_row_number").df()
    for column in ("instance", "function", "outcome", "final_outcome", "start_class"):
        if column in data.columns:
            data[column] = data[column].astype("category")
    return data


def text_list(names: list[str]) -> str:
    """``names`` as an SQL list of strings."""
    return ", ".join(text(n) for n in names)


# The columns of the invocation frame a chain run's figures and a trace run's fidelity read as rows.
CHAIN_COLUMNS = ("instance", "function", "activation_id", "client_latency_ms")
TRACE_COLUMNS = ("instance", "intended_s", "lateness_ms", "final_outcome", "execution_ms", "memory_mb", "start_class")
FRAME_COLUMNS = ("instance", "function", "intended_s", "successful", "completion_latency_ms")  # a frame's least


def row_columns(run_dir: Path, manifest: rundir.Manifest) -> tuple[list[str], bool]:
    """The columns ``analyze`` out of core still reads as rows, and whether any rows are needed at
    all (a chain run's figures, a trace run's fidelity); without, no row is read."""
    columns = list(FRAME_COLUMNS)
    needed = False
    if chains_mod.holds_chains(run_dir):
        columns += CHAIN_COLUMNS
        needed = True
    if trace_fidelity.is_trace_run(manifest):
        columns += TRACE_COLUMNS
        needed = True
    return list(dict.fromkeys(columns)), needed
