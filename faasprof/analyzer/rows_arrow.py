"""The Arrow side of ``rows_sql``: the rows DuckDB streams made into ``load_run``'s frame as
``frames.write_parquet`` writes it, a batch at a time.

The file's schema is the one pandas would give the frame (``pa.Schema.from_pandas`` of an empty
frame of the same dtypes, categories known before the first batch: read from the tables, the
hosts from a first pass where the hosts' containers decide them); each batch gets what SQL does
not give (the pandas time columns, ``successful``, the ``host`` column, the plug-ins' metrics) and
is written as its own row group. The figures ``load_run`` reports are counted as the batches pass.
"""

from __future__ import annotations

import json
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from faasprof import rundir
from faasprof.analyzer import attribution
from faasprof.analyzer import frames as frames_mod
from faasprof.analyzer import hosts as hosts_mod
from faasprof.analyzer import stats as stats_mod
from faasprof.analyzer import units as units_mod
from faasprof.analyzer.metrics import METRICS, metric_columns
from faasprof.analyzer.start_classes import START_CLASSES
from faasprof.errors import FormatError
from faasprof.monitoring.frames import load_run_monitors, run_hosts
from faasprof.monitoring.parsers.containers import action_key, prewarm_key
from faasprof.outcomes import FINAL_OUTCOMES
from faasprof.rundir.columnar import INVOCATION_SQL_TYPES
from faasprof.rundir.tables import INVOCATION_DTYPES

MISSING_IDS_SAMPLE = 50  # records_info's missing_ids_sample (analysis.MISSING_IDS_IN_SUMMARY)
TEXT = pd.StringDtype("pyarrow", na_value=np.nan)  # the log's ids and errors, as tables reads them
# The derived columns in the frame's order (frames.build_from_aligned), with their pandas dtypes
# (None: a categorical, or a column whose dtype depends on the run).
DERIVED: tuple[tuple[str, str | None], ...] = (
    ("intended_s", "float64"),
    ("lateness_ms", "float64"),
    ("client_latency_ms", "float64"),
    ("corrected_latency_ms", "float64"),
    ("has_activation_id", "bool"),
    ("has_record", "bool"),
    ("platform_start_s", "float64"),
    ("wait_ms", "float64"),
    ("init_ms", "float64"),
    ("duration_ms", "float64"),
    ("execution_ms", "float64"),
    ("overhead_ms", "float64"),
    ("platform_latency_ms", "float64"),
    ("platform_end_s", "float64"),
    ("completion_latency_ms", "float64"),
    ("start_class", None),
    ("status", None),
    ("record_outcome", None),
    ("final_outcome", None),
    ("successful", "bool"),
    ("error_text", None),
    ("timed_out", "boolean"),
    ("memory_mb", "float64"),
    ("gb_s", "float64"),
    ("gb_s_1ms", "float64"),
    ("gb_s_100ms", "float64"),
    ("intended", "timedelta64[ns]"),
    ("end", "timedelta64[ns]"),
    ("intended_utc", "datetime64[ns, UTC]"),
    ("end_utc", "datetime64[ns, UTC]"),
    ("host", None),
)
TAIL = (("phase", "int64"), ("steady", "bool"), ("warmup", "bool"))


def invocation_rows_table(rows: list[tuple]) -> pa.Table:
    """``INVOCATION_COLUMNS`` tuples (a torn run's reconstructed rows) as a table DuckDB reads."""
    types = {"BIGINT": pa.int64(), "VARCHAR": pa.string()}
    columns = list(zip(*rows)) if rows else [() for _ in INVOCATION_SQL_TYPES]
    return pa.table(
        {
            name: pa.array([None if v == "" else v for v in values], types[kind])
            for (name, kind), values in zip(INVOCATION_SQL_TYPES.items(), columns)
        }
    )


@dataclass
class Digest:
    """The few figures of the whole log that the plan of phases needs (``stats``' inputs)."""

    rows: int
    planned: dict[str, int]  # rows per instance
    first: list[tuple[str | None, str | None]]  # (instance, its first row's function), by first seq
    max_intended_s: float | None
    last_sent_s: float | None  # the latest planned time among the rows sent
    cut_off_s: float | None  # the earliest planned time of a row not sent after the last one sent


def digest(con) -> Digest:
    groups = con.execute(
        "SELECT instance, count(*), min(seq) AS first, arg_min(function, seq) FROM inv GROUP BY instance ORDER BY first"
    ).fetchall()
    rows, max_intended, last_sent = con.execute(
        "SELECT count(*), max(intended_ns / 1e9), max(intended_ns / 1e9) FILTER (WHERE sent_ns IS NOT NULL) FROM inv"
    ).fetchall()[0]
    after = "" if last_sent is None else f" AND intended_ns / 1e9 > CAST('{last_sent!r}' AS DOUBLE)"
    cut_off = con.execute(f"SELECT min(intended_ns / 1e9) FROM inv WHERE outcome = 'not_sent'{after}").fetchall()[0][0]
    return Digest(
        rows=int(rows),
        planned={str(name): int(count) for name, count, _, _ in groups if name is not None},
        first=[(name, function) for name, _, _, function in groups],
        max_intended_s=max_intended,
        last_sent_s=last_sent,
        cut_off_s=cut_off,
    )


def plan_figures(manifest: rundir.Manifest, found: Digest) -> tuple[list[dict], float, float | None]:
    """``stats.instance_specs``, the workload's duration and ``stats.run_end_s``, by ``stats``'
    own functions given frames of a few rows that hold the same figures as the log (the planned
    counts are set by the caller)."""
    spec_rows = pd.DataFrame(
        {
            "instance": pd.Categorical([name for name, _ in found.first]),
            "function": pd.Categorical([function for _, function in found.first]),
            "intended_s": np.full(len(found.first), np.nan if found.max_intended_s is None else found.max_intended_s),
        }
    )
    specs = stats_mod.instance_specs(manifest, spec_rows)
    duration = stats_mod._workload_duration(manifest, spec_rows)
    ends: list[tuple[float, int | None, str]] = [(found.last_sent_s, 0, "ok")] if found.last_sent_s is not None else []
    if found.cut_off_s is not None:
        ends.append((found.cut_off_s, None, "not_sent"))
    end_rows = pd.DataFrame(
        {
            "intended_s": np.array([t for t, _, _ in ends], dtype="float64"),
            "sent_ns": pd.array([s for _, s, _ in ends], dtype="Int64"),
            "outcome": pd.Categorical([o for _, _, o in ends]),
        }
    )
    return specs, duration, stats_mod.run_end_s(manifest, end_rows)


def _distinct(con, sql: str) -> list[str]:
    return sorted(str(row[0]) for row in con.execute(sql).fetchall() if row[0] is not None)


@dataclass
class Categories:
    """The categories of the frame's label columns and what decides a column's dtype."""

    labels: dict[str, list[str]]
    error_texts: bool  # any failed record's error text (else pandas makes the column object, Arrow null)


def column_counts(con) -> Categories:
    labels = {name: _distinct(con, f"SELECT DISTINCT {name} FROM inv") for name in ("instance", "function", "outcome")}
    for name in ("status", "record_outcome"):
        # Every record's labels, foreign and replaced ones too: the records frame's categories
        # (``records.categorical`` before ``_dedupe``), which the frame's columns keep.
        labels[name] = _distinct(con, f"SELECT DISTINCT {name} FROM rec_all")
    texts = con.execute(  # failed records are few: those with a text, then whether one is an invocation's
        "SELECT count(*) FROM matched WHERE record_seq IN (SELECT record_seq FROM rec_all WHERE error_text IS NOT NULL)"
    ).fetchall()[0][0]
    return Categories(labels, bool(texts))


def containers_plan(run_dir: Path, manifest: rundir.Manifest) -> dict[str, attribution.HostContainers] | None:
    """The hosts' container watches where they decide ``host`` (``hosts.containers_plan``'s rule)."""
    if manifest.platform.get("kind") != "openwhisk" or manifest.native_run:
        return None
    if hosts_mod.activation_host(manifest, manifest.host_infos)[0] != hosts_mod.UNKNOWN:
        return None
    return attribution.load_watches(run_dir, run_hosts(run_dir, manifest)) or None


def _action_keys(batch: pa.RecordBatch) -> tuple[np.ndarray, np.ndarray]:
    """``attribution.action_columns`` of a batch's rows (None without a record)."""
    has = batch.column("has_record").to_numpy(zero_copy_only=False)
    namespace = batch.column("record_namespace").to_pylist()
    name = batch.column("record_name").to_pylist()
    kind = batch.column("record_kind").to_pylist()
    keys = np.full(len(has), None, dtype=object)
    prewarm = np.full(len(has), None, dtype=object)
    cache: dict[tuple, str] = {}
    for row in np.flatnonzero(has):
        pair = ("nan" if namespace[row] is None else namespace[row], "nan" if name[row] is None else name[row])
        if pair not in cache:
            cache[pair] = action_key(*pair)
        keys[row] = cache[pair]
        k = kind[row]
        prewarm[row] = prewarm_key(str(k)) if isinstance(k, str) and k else None
    return keys, prewarm


def _attribute(batch: pa.RecordBatch, watches, manifest: rundir.Manifest) -> tuple[pd.Categorical, dict]:
    keys, prewarm = _action_keys(batch)
    return attribution.attribute(
        batch.column("ran").to_numpy(zero_copy_only=False), keys, prewarm,
        _floats(batch, "platform_start_s"), _floats(batch, "platform_end_s"), watches, manifest.wall_ns_at_zero,
    )  # fmt: skip


def _floats(batch: pa.RecordBatch, name: str) -> np.ndarray:
    return batch.column(name).to_numpy(zero_copy_only=False).astype("float64")


def ran_rows(con, due: str) -> tuple[int, int]:
    """(rows whose activation ran: an id due a record, or a record; all rows). A record is found
    by its id, so a row with one has an id: only the rows whose record is not due are joined."""
    ran, rows = con.execute(
        f"SELECT count(*) FILTER (WHERE activation_id <> '' AND {due}), count(*) FROM inv"
    ).fetchall()[0]
    if due != "true":
        ran += con.execute(f"SELECT count(*) FROM matched JOIN inv USING (seq) WHERE NOT {due}").fetchall()[0][0]
    return int(ran), int(rows)


def host_labels(
    run_dir: Path, manifest: rundir.Manifest, watches, con, blocks: list[str], due: str, monitor_hosts
) -> tuple[list[str], dict | None]:
    """The ``host`` column's categories: the hosts its rows name and the monitors' (``harmonise``);
    and where the hosts' containers decide, their counts (``frame.attrs["host_attribution"]``)."""
    ran_on, _ = hosts_mod.activation_host(manifest, manifest.host_infos)
    used: set[str] = set()
    attributed: dict | None = None
    if watches is None:
        ran, rows = ran_rows(con, due)
        if rows and (ran or manifest.native_run):
            used.add(ran_on)
        if rows > ran and not manifest.native_run:
            used.add(hosts_mod.UNKNOWN)
    else:
        narrow = (
            "SELECT ran, has_record, record_namespace, record_name, record_kind, platform_start_s, platform_end_s FROM "
        )
        attributed = {"attributed": {name: 0 for name in watches}, "unknown": {}}
        batches = (batch for block in blocks for batch in con.sql(f"{narrow}({block})").to_arrow_reader(1 << 19))
        for batch in batches:
            column, counts = _attribute(batch, watches, manifest)
            used.update(str(column.categories[k]) for k in np.unique(column.codes))
            for part in ("attributed", "unknown"):
                for key, value in counts[part].items():
                    attributed[part][key] = attributed[part].get(key, 0) + value
        attributed["unknown"] = {
            k: attributed["unknown"][k] for k in attribution.REASONS if attributed["unknown"].get(k)
        }
    if monitor_hosts is None:
        monitor_hosts = _monitor_hosts(run_dir, manifest)
    return sorted(used | {str(h) for h in monitor_hosts}), attributed


def _monitor_hosts(run_dir: Path, manifest: rundir.Manifest) -> set[str]:
    if not rundir.monitor_dirs(run_dir) and not rundir.host_dirs(run_dir):
        return set()
    try:
        loaded = load_run_monitors(run_dir, manifest) or {}
    except FormatError:
        return set()  # load_run then has no monitor frames either
    out: set[str] = set()
    for frame in loaded.values():
        if isinstance(frame, pd.DataFrame) and "host" in frame.columns:
            out.update(str(v) for v in frames_mod._distinct(frame["host"]))
    return out


def _template(
    run: str, labels: dict[str, list[str]], hosts: list[str], error_texts: bool, metrics: list[str]
) -> pd.DataFrame:
    """An empty frame of the dtypes ``load_run``'s frame has, for its schema."""
    data: dict[str, Any] = {"run": pd.Categorical.from_codes(np.zeros(0, dtype=np.int8), categories=pd.Index([run]))}
    for name, kind in INVOCATION_DTYPES.items():
        if kind == "category":
            data[name] = pd.Categorical([], categories=pd.Index(labels[name], dtype=object))
        elif kind == "str":
            data[name] = pd.Series([], dtype=TEXT)
        else:
            data[name] = pd.Series([], dtype=kind)
    categorical = {
        "start_class": pd.CategoricalDtype(list(START_CLASSES), ordered=True),
        "status": pd.CategoricalDtype(pd.Index(labels["status"], dtype=object)),
        "record_outcome": pd.CategoricalDtype(pd.Index(labels["record_outcome"], dtype=object)),
        "final_outcome": pd.CategoricalDtype(list(FINAL_OUTCOMES)),
        "host": pd.CategoricalDtype(pd.Index(hosts, dtype=object)),
    }
    for name, derived in DERIVED:
        if name in categorical:
            data[name] = pd.Series(pd.Categorical([], dtype=categorical[name]))
        elif name == "error_text":
            data[name] = pd.Series([], dtype=TEXT if error_texts else object)
        else:
            data[name] = pd.Series([], dtype=derived)
    for name in metrics:
        data[name] = pd.Series([], dtype="float64")
    for name, kind in TAIL:
        data[name] = pd.Series([], dtype=kind)
    return pd.DataFrame(data)


def _labels(values: pa.Array, field_type: pa.DictionaryType, categories: list[str], name: str) -> pa.Array:
    """A text column as the dictionary column of ``field_type`` over ``categories``."""
    if pa.types.is_null(field_type.value_type):
        return pa.DictionaryArray.from_arrays(pa.nulls(len(values), field_type.index_type), pa.array([], pa.null()))
    dictionary = pa.array(categories, field_type.value_type)
    index = pc.index_in(values, value_set=dictionary)
    lost = pc.and_(pc.is_valid(values), pc.is_null(index))
    if pc.any(lost).as_py():
        unknown = values.filter(lost)[0].as_py()
        if name == "final_outcome":
            raise FormatError(f"final outcome {unknown!r} is not one of {', '.join(FINAL_OUTCOMES)}")
        raise FormatError(f"{name} {unknown!r}: not among the run's labels (the run directory changed during analyze?)")
    return pa.DictionaryArray.from_arrays(index.cast(field_type.index_type), dictionary)


def _equal(batch: pa.RecordBatch, name: str, value: Any) -> np.ndarray:
    return pc.fill_null(pc.equal(batch.column(name), value), False).to_numpy(zero_copy_only=False)


@dataclass
class RowsWriter:
    """``analysis/invocations.parquet`` written a batch of the rows query at a time."""

    out: Path
    run_dir: Path
    manifest: rundir.Manifest
    categories: Categories
    hosts: list[str]
    completeness: rundir.Completeness
    host_attribution: dict | None = None  # the containers' counts (host_labels' pass), where they decide
    rows: int = 0
    found: int = 0
    ids_present: int = 0
    has_id_due: int = 0
    found_with_id: int = 0
    not_sent: int = 0
    metric_problems: list[str] = field(default_factory=list)
    missing_ids: list[str] = field(default_factory=list)  # the first MISSING_IDS_SAMPLE, sorted
    attrs: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.metrics = [metric.name for metric in METRICS]
        self.template = _template(
            self.run_dir.name, self.categories.labels, self.hosts, self.categories.error_texts, self.metrics
        )
        self.schema = pa.Schema.from_pandas(self.template, preserve_index=False)
        self.attrs = {"completeness": self.completeness.to_json()}
        if self.host_attribution is not None:
            self.attrs["host_attribution"] = self.host_attribution
        self.ran_on, _ = hosts_mod.activation_host(self.manifest, self.manifest.host_infos)
        self.tmp = self.out.with_name(f".{self.out.name}.tmp")
        self.writer: pq.ParquetWriter | None = None
        self.written_attrs: dict[str, Any] = {}
        # Arrow encodes and compresses a row group (without the GIL) on another core while the
        # next batch is fetched and converted: one row group in flight at most.
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="faasprof-rows")
        self.pending: Future | None = None

    def __enter__(self) -> "RowsWriter":
        return self

    def _settle(self) -> None:
        pending, self.pending = self.pending, None
        if pending is not None:
            pending.result()  # its error, if any, is the caller's

    def __exit__(self, kind, error, trace) -> None:
        try:
            self._settle()
        except Exception:
            if error is None:
                self._abandon()
                raise
        finally:
            self.pool.shutdown()
        if error is not None:
            self._abandon()
            return
        if self.writer is None:  # no rows: the empty frame's file
            self._open().write_table(pa.Table.from_pandas(self.template, schema=self.schema, preserve_index=False))
        self._open().close()
        if self.attrs != self.written_attrs:
            # A plug-in metric failed after the first batch: the description (in the Arrow schema
            # Parquet keeps) is written again with it, a row group at a time.
            self._rewrite()
        self.tmp.replace(self.out)

    def _abandon(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.tmp.unlink(missing_ok=True)

    def _described(self) -> pa.Schema:
        """The schema with ``frames.write_parquet``'s description of the frame (its attrs, units)."""
        attrs = {**self.attrs, **frames_mod.run_attrs(self.run_dir, self.manifest)}
        template = self.template.copy()
        template.attrs = attrs
        described = {
            "parquet_format_version": frames_mod.PARQUET_FORMAT_VERSION,
            "kind": "invocations",
            **attrs,
            "units": units_mod.frame_units(template),
        }
        metadata = dict(self.schema.metadata or {})
        metadata[frames_mod.PARQUET_KEY] = json.dumps(described, sort_keys=True).encode()
        return self.schema.with_metadata(metadata)

    def _open(self) -> pq.ParquetWriter:
        if self.writer is None:
            self.written_attrs = json.loads(json.dumps(self.attrs))
            self.writer = pq.ParquetWriter(
                self.tmp, self._described(), dictionary_pagesize_limit=frames_mod.PARQUET_DICTIONARY_PAGE_BYTES
            )
        return self.writer

    def _rewrite(self) -> None:
        again = self.tmp.with_name(self.tmp.name + "2")
        schema = self._described()
        source = pq.ParquetFile(self.tmp)
        with pq.ParquetWriter(again, schema, dictionary_pagesize_limit=frames_mod.PARQUET_DICTIONARY_PAGE_BYTES) as out:
            for group in range(source.num_row_groups):
                out.write_table(source.read_row_group(group).replace_schema_metadata(schema.metadata))
        again.replace(self.tmp)

    def write(self, batch: pa.RecordBatch, watches) -> None:
        n = batch.num_rows
        columns = self._columns(batch, self._host(batch, watches))
        if self.metrics:
            self._metrics(columns, n)
        for name, _ in TAIL:
            columns[name] = batch.column(name)
        self.rows += n
        writer = self._open()
        table = pa.Table.from_arrays([columns[f.name] for f in self.schema], schema=self.schema)
        self._settle()
        self.pending = self.pool.submit(writer.write_table, table, row_group_size=frames_mod.PARQUET_ROW_GROUP)

    def _host(self, batch: pa.RecordBatch, watches) -> pd.Categorical:
        ran = batch.column("ran").to_numpy(zero_copy_only=False)
        if watches is None:
            return hosts_mod.host_column(ran, self.ran_on, self.manifest.native_run)
        return _attribute(batch, watches, self.manifest)[0]

    def _columns(self, batch: pa.RecordBatch, host: pd.Categorical) -> dict[str, Any]:
        schema = self.schema
        n = batch.num_rows
        labels = self.categories.labels
        columns: dict[str, Any] = {
            "run": pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, dtype=np.int8)), pa.array([self.run_dir.name]))
        }
        for name, kind in INVOCATION_DTYPES.items():
            field_type = schema.field(name).type
            if kind == "category":
                columns[name] = _labels(batch.column(name), field_type, labels[name], name)
            else:
                columns[name] = batch.column(name).cast(field_type)
        self._count(batch)
        successful = _equal(batch, "final_outcome", "success") | (
            _equal(batch, "final_outcome", "no_record")
            & _equal(batch, "outcome", "ok")
            & _equal(batch, "http_status", 200)
        )
        times = frames_mod.time_columns(
            _floats(batch, "intended_s"), _floats(batch, "completion_latency_ms"), self.manifest
        )
        categories = {"start_class": list(START_CLASSES), "final_outcome": list(FINAL_OUTCOMES), **labels}
        host_text = pa.array(np.asarray(host.categories, dtype=object)[np.asarray(host.codes)], pa.string())
        for name, _ in DERIVED:
            field_type = schema.field(name).type
            if name == "successful":
                columns[name] = pa.array(successful)
            elif name in times:
                columns[name] = pa.array(times[name]).cast(field_type)
            elif name == "host":
                columns[name] = _labels(host_text, field_type, self.hosts, "host")
            elif pa.types.is_dictionary(field_type):
                columns[name] = _labels(batch.column(name), field_type, categories[name], name)
            elif pa.types.is_null(field_type):
                columns[name] = pa.nulls(n)
            else:
                columns[name] = batch.column(name).cast(field_type)
        return columns

    def _count(self, batch: pa.RecordBatch) -> None:
        """The figures load_run reports of the frame (records_info's, the unsent rows)."""
        has = batch.column("has_record").to_numpy(zero_copy_only=False)
        has_id = batch.column("has_activation_id").to_numpy(zero_copy_only=False)
        self.found += int(has.sum())
        self.has_id_due += int(has_id.sum())
        self.found_with_id += int((has & has_id).sum())
        ids = batch.column("activation_id")
        self.ids_present += int(pc.sum(pc.fill_null(pc.not_equal(ids, ""), False).cast(pa.int64())).as_py() or 0)
        self.not_sent += int(_equal(batch, "outcome", "not_sent").sum())
        missing = np.flatnonzero(has_id & ~has)
        if len(missing):  # the first ids in sorted order, as records_info's sample lists them
            ids = sorted(batch.column("activation_id").take(pa.array(missing)).to_pylist())[:MISSING_IDS_SAMPLE]
            self.missing_ids = sorted(self.missing_ids + ids)[:MISSING_IDS_SAMPLE]

    def _metrics(self, columns: dict[str, Any], n: int) -> None:
        """The plug-ins' metric columns on this batch's rows (``metrics.metric_columns``)."""
        base = [f.name for f in self.schema if f.name in columns]
        frame = pa.Table.from_arrays(
            [columns[name] for name in base],
            schema=pa.schema([self.schema.field(name) for name in base]).with_metadata(self.schema.metadata),
        ).to_pandas()
        added, problems = metric_columns(frame)
        for name in self.metrics:
            columns[name] = pa.array(added.get(name, np.full(n, np.nan)), pa.float64())
        seen = {line.split(":")[0] for line in self.metric_problems}
        for line in problems:
            if line.split(":")[0] not in seen:
                self.metric_problems.append(line)
        if self.metric_problems:
            self.attrs["metric_problems"] = list(self.metric_problems)
