"""The analysed invocation rows built out of core: ``analysis/invocations.parquet`` from DuckDB SQL
over the run's columnar files, with the columns, dtypes and values of ``load_run``'s frame.

``write_invocation_rows(run_dir, manifest, out_path, con)`` reads the invocation log's columnar copy
(``rundir.columnar``) and the records' (``rundir.record_parquet``) and joins them as
``analysis.load_run`` does in pandas, in three statements whose memory DuckDB bounds by the
connection's ``memory_limit`` (``engine.connect``), spilling past it:

1. ``inv``: the log's rows by ``seq`` (a row written twice: the last one; a torn run's missing rows
   reconstructed from the plan, ``tables``' rule), stored sorted so that the last statement streams
   them in order;
2. ``rec``: each invocation's record, joined by activation id from the records' side (so the
   records no invocation sent, ``foreign``, are counted in the same pass), the last record of an id
   kept (``records._dedupe``), with its start class (``start_classes.classify_starts``: window
   functions over the earlier activations of the invocation's function, in (start, end, seq)
   order: the latest earlier end, the previous wait, the function's first start);
3. the rows: every derived column of ``frames.build_from_aligned`` (times, latencies, outcomes and
   final outcomes by ``outcome_columns``' rule, cost, phase, steady, warm-up) computed in SQL and
   streamed as Arrow batches (``rows_arrow``), where what SQL does not give is added a batch at a
   time: the pandas time columns (``frames.time_columns``), where each activation ran (the hosts'
   container watches, ``hosts.apply_containers``, where the run had them) and the plug-ins' metrics
   (``metrics``: computed on each batch; a metric is a function of its row).

Floating-point columns are the same IEEE operations in the same order as NumPy's, so the values are
equal bit for bit (tests/test_rows_sql.py holds them to the pandas frame column by column).
``RowsInfo`` carries what ``load_run`` says beside the frame: ``records_info``'s figures and its
warnings, in load_run's order.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import numpy as np
import pandas as pd

from faasprof import rundir
from faasprof.analyzer import frames as frames_mod
from faasprof.analyzer import hosts as hosts_mod
from faasprof.analyzer import rows_arrow
from faasprof.analyzer import stats as stats_mod
from faasprof.analyzer.outcome_columns import _ANSWER_IS_FINAL, _RECORD_DECIDES_IF_PRESENT, records_due
from faasprof.analyzer.start_classes import CONTAINER_STATE_CLASS, RESUME_WAIT_MS
from faasprof.analyzer.summary import RecordsInfo
from faasprof.errors import FormatError
from faasprof.outcomes import ACCEPTED_HTTP_OUTCOMES, FINAL_OUTCOMES
from faasprof.rundir import columnar, record_fields, record_parquet, tables
from faasprof.rundir.columnar import INVOCATION_SQL_TYPES

MISSING_IDS_IN_SUMMARY = 50  # as analysis.MISSING_IDS_IN_SUMMARY
BATCH_ROWS = 1 << 19
BLOCK_ROWS = 1 << 20  # seqs sorted at a time (in memory under the engine's default 1GB)


@dataclass
class RowsInfo:
    """What the row builder found, as ``load_run`` reports it beside its frame."""

    rows: int
    records_info: RecordsInfo  # load_run's, without ``monitors``, ``pause_grace_*`` (figures' own)
    # load_run's warnings in its order: ``records_warnings``, then the phases' stability warnings
    # (figures), then ``run_warnings``, the monitors' (figures), then ``grace_warnings``.
    records_warnings: list[str] = field(default_factory=list)
    run_warnings: list[str] = field(default_factory=list)
    grace_warnings: list[str] = field(default_factory=list)
    specs: list[dict] = field(default_factory=list)  # stats.instance_specs
    phases: list[dict] = field(default_factory=list)  # stats.phases
    end_s: float | None = None
    warmup_s: float = 0.0
    not_sent_interrupted: int = 0  # planned after the stop (stats.unsent_after_end)
    attrs: dict[str, Any] = field(default_factory=dict)  # the frame's attrs (completeness, host_attribution, ...)


def _q(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _f(value: float) -> str:
    """A float as a DuckDB DOUBLE literal, exactly (a bare ``0.1`` would be a DECIMAL)."""
    return f"CAST({_q(repr(float(value)))} AS DOUBLE)"


def _in(column: str, names: Iterable[str]) -> str:
    names = list(names)
    return f"({column} IN ({', '.join(_q(str(n)) for n in names)}))" if names else "false"


def _scalar(con, sql: str) -> Any:
    rows = con.execute(sql).fetchall()
    return rows[0][0] if rows else None


def _load_invocations(con, run_dir: Path, manifest: rundir.Manifest) -> rundir.Completeness:
    """Table ``inv``: the log's rows, one per seq (the last written), missing ones reconstructed,
    sorted by seq; returns the torn-run tally ``tables`` gives."""
    scan = columnar.invocations_scan_sql(run_dir, con)
    if scan.startswith("read_parquet("):
        scan = scan[:-1] + ", file_row_number = true)"
    else:
        scan = f"(SELECT *, row_number() OVER () AS file_row_number FROM {scan})"
    con.execute(f"CREATE OR REPLACE TEMP VIEW raw_inv AS SELECT * FROM {scan}")
    n, in_order, low, high, total, squares = con.execute(
        "SELECT count(*), bool_and(seq = file_row_number), min(seq), max(seq), sum(seq::HUGEINT), "
        "sum(seq::HUGEINT * seq) FROM raw_inv"
    ).fetchall()[0]
    # 0..n-1 each once (the count, the ends and two power sums agree): no row written twice.
    unique = n == 0 or (
        low == 0 and high == n - 1 and total == n * (n - 1) // 2 and squares == (n - 1) * n * (2 * n - 1) // 6
    )
    columns = ", ".join(rundir.INVOCATION_COLUMNS)
    if n == 0 or in_order:  # seq 0, 1, 2 ... in file order (a run's log as its rows came in order): read as it is
        con.execute(f"CREATE OR REPLACE TEMP VIEW inv AS SELECT {columns} FROM raw_inv")
    else:
        source = (
            "raw_inv"
            if unique
            else "(SELECT * FROM raw_inv QUALIFY row_number() OVER (PARTITION BY seq ORDER BY file_row_number DESC) = 1)"
        )
        con.execute(f"CREATE OR REPLACE TEMP TABLE inv AS SELECT {columns} FROM {source} ORDER BY seq")
    plan = rundir.read_plan(run_dir)
    if unique and plan is not None and n == len(plan):
        return rundir.Completeness(len(plan), n)
    if unique and plan is None:  # only counted against the manifest: no seq needed (tables' rule)
        return rundir.reconstruct_missing(run_dir, range(n), manifest, distinct=True)[1]
    seqs = con.execute("SELECT seq FROM inv ORDER BY seq").fetchnumpy()["seq"]
    missing, completeness = tables._reconstruct(run_dir, np.asarray(seqs, dtype=np.int64), n, manifest)
    if missing:
        extra = rows_arrow.invocation_rows_table(missing)  # noqa: F841 (read by DuckDB by name)
        con.execute(
            f"CREATE OR REPLACE TEMP TABLE inv_whole AS SELECT {columns} FROM "
            f"(SELECT * FROM inv UNION ALL SELECT * FROM extra) ORDER BY seq"
        )
        con.execute(f"DROP {'VIEW' if in_order else 'TABLE'} inv")
        con.execute("ALTER TABLE inv_whole RENAME TO inv")
    return completeness


def _load_records(con, run_dir: Path, grace_ms: float, dedupe: bool) -> tuple[int, str, int]:
    """View ``matched``: each invocation's record (``record_seq``) by seq (the last record of an id)
    with the columns of its start class, and table ``classes``: the class; returns (foreign
    records, the records' source, unreadable lines). ``joined`` is in the records' order, which is
    nearly the log's (records by start, the log by planned time), so a block of seqs is read from
    a few of its row groups, and its records from a few of the Parquet file's (``_block_sql``)."""
    path = record_parquet.ensure_records_parquet(run_dir, con)
    if path is None:
        empty = ", ".join(f"NULL::{_record_type(n)} AS {n}" for n in record_fields.RECORD_COLUMNS)
        con.execute(f"CREATE OR REPLACE TEMP VIEW rec_all AS SELECT 0::BIGINT AS record_seq, {empty} LIMIT 0")
        source = "none"
    else:
        con.execute(f"CREATE OR REPLACE TEMP VIEW rec_all AS SELECT * FROM read_parquet({_q(os.fspath(path))})")
        source = rundir.ACTIVATIONS_PARQUET if rundir.raw_records_gone(run_dir) else rundir.ACTIVATIONS
    # The records' side probes the log's ids: the records no invocation sent are counted in the same
    # pass. Only what the start classes need is kept (the rest is read a block at a time, by
    # record_seq, from the Parquet file: ``_block_sql``), and a foreign record's id.
    con.execute(
        """CREATE OR REPLACE TEMP TABLE joined AS
        SELECT r.record_seq, i.seq, i.function AS inv_function, r.start_ms, r.end_ms, r.init_ms, r.wait_ms,
          r.container_state, CASE WHEN i.seq IS NULL THEN r.activation_id END AS foreign_id,
          i.seq IS NULL AND r.activation_id IS NULL AS foreign_null
        FROM rec_all r
        LEFT JOIN (SELECT seq, function, activation_id FROM inv WHERE activation_id IS NOT NULL AND activation_id <> '') i
        ON r.activation_id = i.activation_id"""
    )
    foreign = con.execute(  # the few records no invocation sent: a null id counts once (records._dedupe)
        "SELECT count(DISTINCT foreign_id) + coalesce(bool_or(foreign_null), false)::INT FROM joined WHERE seq IS NULL"
    ).fetchall()[0][0]
    # With ``dedupe``, an id recorded twice gives its last record (records._dedupe).
    last = (
        "(SELECT * FROM joined WHERE seq IS NOT NULL QUALIFY row_number() OVER (PARTITION BY seq ORDER BY record_seq DESC) = 1)"
        if dedupe
        else "(SELECT * FROM joined WHERE seq IS NOT NULL)"
    )
    con.execute(f"CREATE OR REPLACE TEMP VIEW matched AS SELECT * FROM {last}")
    con.execute(f"CREATE OR REPLACE TEMP TABLE classes AS {_classes_sql(grace_ms)}")
    bad = record_parquet.bad_lines(path) if path is not None else 0
    return int(foreign or 0), source, bad


def _classes_sql(grace_ms: float) -> str:
    """Each matched record's start class (``start_classes.classify_starts``) over its narrow
    columns: in the order classify_starts sorts in (its stable sorts: the invocation's function,
    start, end, then row order), the latest end among the earlier rows (NULL after a row without
    an end, as its running maximum is), the previous wait and the function's first start."""
    states = " ".join(
        f"WHEN container_state = {_q(state)} THEN {_q(name)}" for state, name in CONTAINER_STATE_CLASS.items()
    )
    grace, resume = _f(grace_ms), _f(RESUME_WAIT_MS)
    return f"""
    WITH ordered AS (
      SELECT seq, start_ms, init_ms, wait_ms, container_state,
        CASE WHEN lag(end_ms) OVER w IS NOT NULL
             THEN max(end_ms) OVER (w ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) END AS previous_end,
        lag(wait_ms) OVER w AS previous_wait,
        first_value(start_ms) OVER w AS first_start
      FROM (SELECT seq, inv_function, start_ms, end_ms, init_ms, wait_ms, container_state FROM matched)
      WINDOW w AS (PARTITION BY inv_function, start_ms IS NULL ORDER BY start_ms, end_ms NULLS LAST, seq)
    ), gaps AS (
      SELECT *, start_ms - previous_end AS gap_ms FROM ordered
    )
    SELECT seq,
      CASE
        WHEN start_ms IS NULL THEN 'unknown'
        {states}
        WHEN init_ms IS NOT NULL THEN 'cold'
        WHEN coalesce(gap_ms >= {grace}, false)
          OR (coalesce(wait_ms >= {resume}, false)
              AND (coalesce(gap_ms >= 0, false) OR coalesce(previous_wait < {resume}, false))
              AND coalesce(start_ms - first_start >= {grace}, false)) THEN 'resumed'
        ELSE 'warm'
      END AS start_class
    FROM gaps"""


def _record_type(name: str) -> str:
    if name == "timed_out":
        return "BOOLEAN"
    return "DOUBLE" if name in record_fields.FLOAT_COLUMNS else "VARCHAR"


def _final_outcome_sql() -> str:
    """``outcome_columns.final_outcomes`` for one row of ``derived`` (``due``: a record is due)."""
    accepted = _in("outcome", ACCEPTED_HTTP_OUTCOMES)
    decides = _in("outcome", _RECORD_DECIDES_IF_PRESENT)
    answer = " ".join(f"WHEN outcome = {_q(k)} THEN {_q(v)}" for k, v in _ANSWER_IS_FINAL.items())
    return f"""CASE
      WHEN NOT due AND {_in("outcome", _ANSWER_IS_FINAL)} THEN CASE {answer} END
      WHEN has_record AND ({accepted} OR {decides}) THEN record_outcome
      WHEN {accepted} AND NOT has_record AND due THEN 'no_record'
      ELSE outcome
    END"""


def _due_sql(manifest: rundir.Manifest, column: str = "instance") -> str:
    """Whether a record is due for a row (``outcome_columns.records_due``), by its instance ``column``."""
    keeping = {name: _keeps(manifest, name) for name in manifest.instances}
    if manifest.native_run:
        return "false"
    if all(keeping.values()):
        return "true"
    # Some instances' platforms keep no records: decided by name (an unknown one: due).
    return f"({column} IS NULL OR NOT {_in(column, [n for n, keeps in keeping.items() if not keeps])})"


def _keeps(manifest: rundir.Manifest, name: str) -> bool:
    due = records_due(pd.DataFrame({"instance": pd.Categorical([name])}), manifest)
    return bool(due if isinstance(due, (bool, np.bool_)) else due[0])


RECORD_COLUMNS_SQL = ", ".join(f"r.{name}" for name in record_fields.RECORD_COLUMNS if name != "activation_id")


def _block_sql(first: int, end: int, records: tuple[int, int] | None) -> str:
    """The log's rows with seq in [first, end), in seq order, each with its record's columns (NULL
    without one), ``has_record`` and its start class: a sort of one block, never of the whole run.
    ``records``: the range of record_seq the block's records lie in (row groups outside it are
    skipped by their statistics), None when it has none."""
    inside = f"seq >= {int(first)} AND seq < {int(end)}"
    within = f"record_seq BETWEEN {int(records[0])} AND {int(records[1])}" if records else "false"
    return f"""SELECT i.*, m.seq IS NOT NULL AS has_record, {RECORD_COLUMNS_SQL}, c.start_class
        FROM (SELECT * FROM inv WHERE {inside}) i
        LEFT JOIN (SELECT seq, record_seq FROM matched WHERE {inside}) m ON m.seq = i.seq
        LEFT JOIN (SELECT * FROM rec_all WHERE {within}) r ON r.record_seq = m.record_seq
        LEFT JOIN (SELECT * FROM classes WHERE {inside}) c ON c.seq = i.seq
        ORDER BY i.seq"""


def _rows_sql(manifest: rundir.Manifest, phase_list: list[dict], warmup_s: float) -> str:
    answers = frames_mod.instance_answers_at_end(manifest)
    default = answers("\x00 not an instance")  # an instance the manifest does not name
    differs = [name for name in manifest.instances if answers(name) != default]
    named = "true" if not default else "false"
    blocking = f"(CASE WHEN {_in('instance', differs)} THEN {named} ELSE {'true' if default else 'false'} END)"
    blocking = f"({blocking} AND coalesce(http_status <> {frames_mod.WAIT_EXPIRED_STATUS}, true))"
    due = _due_sql(manifest)
    wall_zero_ms = _f(manifest.wall_ns_at_zero / 1e6)
    phase_case = " ".join(
        f"WHEN intended_s >= {_f(p['start_s'])} AND intended_s < {_f(p['end_s'])} THEN {int(p['phase'])}"
        for p in reversed(phase_list)  # assign_phase: the last phase that holds a time wins
    )
    steady = " OR ".join(
        f"(intended_s >= {_f(p['steady_start_s'])} AND intended_s < {_f(p['end_s'])})" for p in phase_list
    )
    return f"""
    WITH base AS (
      SELECT *, CAST(intended_ns AS DOUBLE) AS f_intended, CAST(sent_ns AS DOUBLE) AS f_sent,
        CAST(done_ns AS DOUBLE) AS f_done
      FROM (@BLOCK@)
    ), derived AS (
      SELECT *,
        f_intended / 1e9 AS intended_s,
        (f_done - f_sent) / 1e6 AS client_latency_ms,
        (f_done - f_intended) / 1e6 AS corrected_latency_ms,
        {blocking} AS blocking,
        {due} AS due,
        (start_ms - {wall_zero_ms}) / 1e3 AS platform_start_s,
        (end_ms - {wall_zero_ms}) / 1e3 AS platform_end_s,
        CASE WHEN has_record THEN coalesce(init_ms, 0.0) END AS init_value
      FROM base
    )
    SELECT
      {", ".join(_log_column(name) for name in rundir.INVOCATION_COLUMNS)},
      intended_s,
      (f_sent - f_intended) / 1e6 AS lateness_ms,
      client_latency_ms,
      corrected_latency_ms,
      (activation_id IS NOT NULL AND activation_id <> '' AND due) AS has_activation_id,
      has_record,
      platform_start_s,
      wait_ms,
      init_value AS init_ms,
      duration_ms,
      duration_ms - init_value AS execution_ms,
      CASE WHEN blocking THEN client_latency_ms - (wait_ms + duration_ms) END AS overhead_ms,
      wait_ms + duration_ms AS platform_latency_ms,
      platform_end_s,
      CASE WHEN blocking THEN corrected_latency_ms ELSE platform_end_s * 1e3 - intended_s * 1e3 END
        AS completion_latency_ms,
      CASE WHEN has_record THEN start_class ELSE 'unknown' END AS start_class,
      status,
      record_outcome,
      {_final_outcome_sql()} AS final_outcome,
      error_text,
      CASE WHEN has_record THEN timed_out END AS timed_out,
      memory_mb,
      memory_mb / 1024.0 * duration_ms / 1e3 AS gb_s,
      memory_mb / 1024.0 * CASE WHEN ceil(duration_ms) < 1.0 THEN 1.0 ELSE ceil(duration_ms) END / 1e3 AS gb_s_1ms,
      memory_mb / 1024.0 * CASE WHEN ceil(duration_ms / 100.0) < 1.0 THEN 1.0 ELSE ceil(duration_ms / 100.0) END
        * 100.0 / 1e3 AS gb_s_100ms,
      (activation_id IS NOT NULL AND activation_id <> '' AND due) OR has_record AS ran,
      namespace AS record_namespace, name AS record_name, kind AS record_kind,
      CASE {phase_case} ELSE -1 END::BIGINT AS phase,
      coalesce({steady or "false"}, false) AS steady,
      coalesce(intended_s < {_f(warmup_s)}, false) AS warmup
    FROM derived
    """


def _log_column(name: str) -> str:
    """A log column as ``tables.read_invocations_frame`` gives it (an empty text field is "", not NA)."""
    return (
        f"coalesce({name}, '') AS {name}"
        if INVOCATION_SQL_TYPES[name] == "VARCHAR" and name in ("activation_id", "error")
        else name
    )


def write_invocation_rows(
    run_dir: str | os.PathLike,
    manifest: rundir.Manifest,
    out_path: str | os.PathLike,
    con: Any,
    *,
    monitor_hosts: Iterable[str] | None = None,
) -> RowsInfo:
    """Write ``analysis/invocations.parquet`` (``out_path``) as ``frames.write_parquet`` writes
    ``load_run(run_dir).invocations``, with DuckDB ``con`` (``engine.connect()``) doing the work;
    returns what ``load_run`` says beside its frame. ``monitor_hosts``: the hosts the run's
    monitor frames name (they share the ``host`` column's categories, ``frames.harmonise``);
    read from the run directory when None."""
    run_dir = Path(run_dir)
    completeness = _load_invocations(con, run_dir, manifest)
    grace_ms, grace_source = frames_mod.pause_grace_ms(manifest)
    digest = rows_arrow.digest(con)
    specs, duration, end_s = rows_arrow.plan_figures(manifest, digest)
    warmup_s = stats_mod.run_warmup_s(manifest)
    phase_list = stats_mod.phases(specs, duration, end_s, warmup_s)
    for spec in specs:
        spec["planned"] = digest.planned.get(spec["instance"], 0)
    query = _rows_sql(manifest, phase_list, warmup_s)
    kept = _scalar(con, "SELECT current_setting('preserve_insertion_order')")
    con.execute("SET preserve_insertion_order = true")  # the rows in seq order, as the frame has them
    try:
        # An id recorded twice is rare: its rows are found by the count (more rows than the log's)
        # and the records are then taken again, the last of each id, rather than always paying
        # for a pass that looks for them.
        for dedupe in (False, True):
            foreign, source, bad = _load_records(con, run_dir, grace_ms, dedupe)
            try:
                writer = _write_rows(
                    con, run_dir, manifest, Path(out_path), query, completeness, digest.rows, monitor_hosts
                )
                break
            except _Repeated:
                continue
        return _info(
            con,
            run_dir,
            manifest,
            writer,
            foreign,
            source,
            bad,
            specs,
            phase_list,
            end_s,
            warmup_s,
            grace_ms,
            grace_source,
        )
    finally:
        con.execute(f"SET preserve_insertion_order = {'true' if kept else 'false'}")
        _drop(con)


def _drop(con) -> None:
    """The work tables and views, so that the connection's memory and spill files go back (the
    record join of 100 million rows is gigabytes)."""
    kinds = dict(
        con.execute(
            "SELECT table_name, table_type FROM information_schema.tables WHERE table_schema = 'main' AND table_catalog = 'temp'"
        ).fetchall()
    )
    for name in ("classes", "matched", "joined", "rec_all", "inv", "raw_inv"):
        if name in kinds:
            con.execute(f"DROP {'VIEW' if kinds[name] == 'VIEW' else 'TABLE'} IF EXISTS {name}")


class _Repeated(Exception):
    """More rows than the log has: a record id saved twice (``_load_records`` with ``dedupe``)."""


def _write_rows(
    con, run_dir: Path, manifest: rundir.Manifest, out: Path, query: str, completeness, rows: int, monitor_hosts
) -> rows_arrow.RowsWriter:
    """Stream the rows query, block by block, into ``out``; ``_Repeated`` (nothing written) when a
    block gave more rows than the log has."""
    blocks = [query.replace("@BLOCK@", _block_sql(first, end, records)) for first, end, records in _blocks(con)]
    counts = rows_arrow.column_counts(con)
    plan = rows_arrow.containers_plan(run_dir, manifest)
    hosts, attributed = rows_arrow.host_labels(run_dir, manifest, plan, con, blocks, _due_sql(manifest), monitor_hosts)
    writer = rows_arrow.RowsWriter(out, run_dir, manifest, counts, hosts, completeness, attributed)
    with writer:
        for block in blocks:
            for batch in con.sql(block).to_arrow_reader(BATCH_ROWS):
                writer.write(batch, plan)
                if writer.rows > rows:
                    raise _Repeated()
    return writer


def _blocks(con) -> list[tuple[int, int, tuple[int, int] | None]]:
    """The seq ranges of ``BLOCK_ROWS`` each that cover the log, each with the range of record_seq
    its records lie in (None: none)."""
    low, high = con.execute("SELECT min(seq), max(seq) FROM inv").fetchall()[0]
    if low is None:
        return [(0, 1, None)]
    out = []
    for first in range(int(low), int(high) + 1, BLOCK_ROWS):
        end = first + BLOCK_ROWS
        lo, hi = con.execute(
            f"SELECT min(record_seq), max(record_seq) FROM matched WHERE seq >= {first} AND seq < {end}"
        ).fetchall()[0]
        out.append((first, end, None if lo is None else (int(lo), int(hi))))
    return out


def _info(
    con, run_dir, manifest, writer, foreign, source, bad, specs, phase_list, end_s, warmup_s, grace_ms, grace_source
) -> RowsInfo:
    """``RowsInfo`` from the tables and what the writer saw (load_run's figures and warnings)."""
    native = manifest.native_run
    with_id = 0 if native else writer.ids_present
    found = writer.found
    missing_ids = writer.missing_ids
    missing = writer.has_id_due - writer.found_with_id
    with_state = int(_scalar(con, "SELECT count(container_state) FROM matched") or 0)
    info: RecordsInfo = {
        "with_activation_id": with_id,
        "source": "none" if source == "none" else source,
        "unreadable_lines": bad,
        "foreign_ignored": foreign,
    }
    if native:
        info["source"] = (
            "none: a faasprof native run (latency: each call's round trip to the worker; execution times and cold calls in native.csv)"
        )
    info["with_container_state"] = with_state
    info["found"] = found
    info["missing"] = missing
    info["missing_ids_sample"] = missing_ids
    where = rundir.activations_path(run_dir)  # as load_run names it
    warnings: list[str] = []
    if bad:
        warnings.append(f"{where}: {bad} unreadable lines ignored (a line cut short, or not a JSON object)")
    if foreign:
        warnings.append(f"{where}: {foreign} records of other activations ignored (not sent by this run)")
    if source == rundir.ACTIVATIONS_PARQUET:
        warnings.append(raw_gone_warning(run_dir))
    if source == "none" and with_id:
        warnings.append(
            f"{run_dir}: no {rundir.ACTIVATIONS}; latency breakdown, start classes and cost are unavailable: "
            "run faasprof analyze with the platform's --apihost/--auth to fetch the records"
        )
    if missing and source != "none":
        why = (manifest.activations or {}).get("missing_why") or "not stored by the platform, or not yet"
        warnings.append(f"{missing} of {with_id} activation records are missing ({why})")
    run_warnings: list[str] = []
    if manifest.status != "complete":
        run_warnings.append(
            f"{run_dir}: run status is {manifest.status!r}, not complete: the figures cover only what was sent before it stopped"
        )
    unsent_after = 0
    if end_s is not None:
        unsent_after = int(
            _scalar(con, f"SELECT count(*) FROM inv WHERE outcome = 'not_sent' AND intended_ns / 1e9 >= {_f(end_s)}")
        )
    if unsent_after:
        run_warnings.append(
            f"the run stopped at {end_s:.3g} s: the phases end there; the {unsent_after} invocations planned after it were "
            "never sent (not sent: interrupted) and are neither offered nor failed"
        )
    not_sent = writer.not_sent - unsent_after
    if not_sent:
        run_warnings.append(f"{not_sent} planned invocations were never sent (outcome not_sent)")
    run_warnings.extend(writer.metric_problems)
    grace_warnings = []
    if not frames_mod.pause_grace_known(grace_source) and found and not with_state:
        grace_warnings.append(
            f"pause grace {grace_ms:g} ms is {grace_source}: the resumed/warm split "
            "of the start classes depends on it; record it (PAUSE_GRACE_MS in the set-up's wskprops)"
        )
    return RowsInfo(
        rows=writer.rows,
        records_info=info,
        records_warnings=warnings,
        run_warnings=run_warnings,
        grace_warnings=grace_warnings,
        specs=specs,
        phases=phase_list,
        end_s=end_s,
        warmup_s=warmup_s,
        not_sent_interrupted=unsent_after,
        attrs=writer.attrs,
    )


def raw_gone_warning(run_dir: Path) -> str:
    """The warning of a run whose raw records were removed (``record_parquet``: the Parquet stands for them)."""
    return (
        f"{run_dir}: {rundir.ACTIVATIONS} is gone; the records are read from {rundir.ACTIVATIONS_PARQUET} "
        "(their flat columns): the chain and I/O figures, which need the raw records, are left out, and none is fetched again"
    )


def check_final_outcomes(labels: Iterable[str]) -> None:
    """``FormatError`` for a final outcome that is not one of ``FINAL_OUTCOMES`` (as ``final_outcomes``)."""
    unknown = sorted({str(label) for label in labels if label is not None} - set(FINAL_OUTCOMES))
    if unknown:
        raise FormatError(f"final outcome {unknown[0]!r} is not one of {', '.join(FINAL_OUTCOMES)}")


__all__ = ["RowsInfo", "write_invocation_rows", "check_final_outcomes", "hosts_mod"]
