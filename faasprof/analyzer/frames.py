"""The invocation frame: one row per planned invocation, joined with its activation record.

Columns (units in the names; ``_s`` columns are seconds since the run's monotonic zero):

=========================  ==================================================================
``seq`` … ``error``        ``invocations.csv`` as written by the invoker (times as nullable Int64)
``intended_s``             planned send time
``lateness_ms``            sent − intended (how late the invoker sent it)
``client_latency_ms``      done − sent (what the client saw)
``corrected_latency_ms``   done − intended (free of coordinated omission: a late send counts)
``has_record``             the activation record was found
``platform_start_s``       the record's ``start`` on the run clock (invoker's wall clock)
``wait_ms``                ``waitTime``: controller accept → container ready (queueing, cold
                           creation and resume from pause are all in here)
``init_ms``                ``initTime`` (0 for a record without one, NaN without a record)
``execution_ms``           duration − init (the function's own run)
``duration_ms``            the record's ``duration`` (includes init)
``overhead_ms``            client latency − (wait + duration): client→controller, the answer's
                           way back (active ack, controller, proxy) and the init→run gap;
                           NaN for calls answered before the function ended (non-blocking, or
                           a blocking 202)
``platform_latency_ms``    wait + duration: the platform's own view (FaaSProfiler's latency)
``platform_end_s``         the record's ``end`` on the run clock
``completion_latency_ms``  intended → the function's end: corrected latency for blocking calls,
                           record end − intended for non-blocking ones and for blocking ones the
                           platform answered 202 when its blocking wait ran out (what the plots show)
``start_class``            cold | resumed | warm | unknown (see ``classify_starts``)
``status``                 the record's ``response.status``
``record_outcome``         what the record says (``faasprof.outcomes.record_outcome``)
``final_outcome``          the HTTP ``outcome`` joined with the record
                           (``faasprof.outcomes.final_outcome``; see ``outcome_columns``; where
                           no record is due, the answer alone: a native run, and the calls of a
                           platform that keeps none, such as a generic endpoint): only
                           ``success`` rows enter the latency statistics of successful work
``successful``             a sample of successful work (what every latency statistic uses):
                           final outcome ``success``, or a blocking call answered 200 whose
                           record is missing (``no_record``: OpenWhisk answers a blocking call
                           200 only for a successful activation, so the answer says what the
                           record would)
``error_text``             the start of the record's error (failed records only)
``host``                   the host the activation ran on, where the platform says so, or where
                           one measured host alone had its action's containers then (set after the
                           frame is built: ``faasprof.analyzer.attribution``); else (and for a row
                           without an activation) ``unknown`` (``faasprof.analyzer.hosts``)
``memory_mb``              the memory limit the activation ran with
``gb_s``                   billed GB-seconds OpenWhisk-style: memory × duration as recorded
``gb_s_1ms``               … with the duration rounded up to 1 ms (at least 1 ms)
``gb_s_100ms``             … rounded up to 100 ms (the classic FaaS billing granularity)
``intended``, ``end``      planned send and function end as ``timedelta64`` since the run's zero
``intended_utc``,          the same instants as UTC ``datetime64`` (wall clock: ``resample``,
``end_utc``                joins with other data on time)
=========================  ==================================================================

GB here is GiB (memory_mb / 1024), as FaaS providers bill.

Every frame of a run carries the run in ``DataFrame.attrs`` (``run_attrs``); ``write_parquet``
writes a frame whose schema says which run, test and format it is and the unit of each column
(``faasprof.analyzer.units``),
with a ``run`` column so the files of several runs can be read as one dataset
(``pyarrow.dataset``, duckdb) without mixing them up.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from faasprof import __version__, rundir
from faasprof.analyzer import hosts as hosts_mod
from faasprof.analyzer import units as units_mod
from faasprof.analyzer.metrics import metric_columns
from faasprof.analyzer.outcome_columns import final_outcomes, records_due, successful_mask
from faasprof.analyzer.start_classes import (  # noqa: F401  (START_CLASSES, CONTAINER_STATE_CLASS: the frames' names)
    CONTAINER_STATE_CLASS,
    RESUME_WAIT_MS,
    START_CLASSES,
    classify_starts,
)
from faasprof.errors import FormatError
from faasprof.platforms.registry import platform_of_resolved
from faasprof.rundir.records import (  # the unused ones: notebook names
    CATEGORY_COLUMNS,  # noqa: F401
    RECORD_COLUMNS,  # noqa: F401
    TEXT_COLUMNS,  # noqa: F401
    arrow_strings,
    match_positions,
    records_frame,  # noqa: F401
)
from faasprof.rundir.tables import read_invocations_frame  # noqa: F401  (the frames' entry point for notebooks)

DEFAULT_PAUSE_GRACE_MS = 50.0  # OpenWhisk classic's containerProxy pause-grace (and the paper's)
OPENWHISK_2_PAUSE_GRACE_MS = 10_000.0  # 2.x invoker's application.conf: pause-grace = 10 seconds


def _float(series: pd.Series) -> np.ndarray:
    return series.to_numpy(dtype="float64", na_value=np.nan)


def pause_grace_ms(manifest: rundir.Manifest) -> tuple[float, str]:
    """The platform's pause grace and where it came from.

    In order: recorded with the platform (``platform.settings``, which the testbed set-up's
    ``PAUSE_GRACE_MS`` wskprops key fills, or localwhisk's own settings), the embedded localwhisk's
    settings, the workload's ``platform.localwhisk`` block (only when the run used localwhisk: a real
    OpenWhisk ignores it), then inferred from the OpenWhisk generation that ``GET /`` reveals and that
    generation's default. The source says "inferred" or "unknown" when the grace was not recorded.
    """

    def find(node, depth=0):
        if depth > 4 or not isinstance(node, dict):
            return None
        for key in ("pause_grace_ms", "pauseGraceMs"):
            if isinstance(node.get(key), (int, float)) and not isinstance(node.get(key), bool):
                return float(node[key])
        for value in node.values():
            found = find(value, depth + 1)
            if found is not None:
                return found
        return None

    platform = manifest.platform
    for section, node in (("platform", platform), ("local_settings", manifest.local_settings)):
        found = find(node)
        if found is not None:
            return found, f"manifest {section}"
    if platform.get("kind") != "openwhisk":
        found = find(manifest.workload.get("platform"))
        if found is not None:
            return found, "workload platform block"
    return _pause_grace_from_version(platform)


def _pause_grace_from_version(platform: dict) -> tuple[float, str]:
    """The default pause grace of the OpenWhisk generation whose ``GET /`` the run recorded.

    ``GET /`` carries no version number, but 2.x added the namespace-default limits
    (``default_max_action_memory``...) to its ``limits``; 1.x has none of them.
    """
    info = platform.get("info")
    limits = info.get("limits") if isinstance(info, dict) else None
    if not isinstance(limits, dict):
        limits = {}
    if platform.get("kind") == "openwhisk" and limits:
        if "default_max_action_memory" in limits:
            return (
                OPENWHISK_2_PAUSE_GRACE_MS,
                "inferred: OpenWhisk 2.x (GET / limits) default; not recorded by the set-up",
            )
        return DEFAULT_PAUSE_GRACE_MS, "inferred: OpenWhisk 1.x (GET / limits) default; not recorded by the set-up"
    return (
        DEFAULT_PAUSE_GRACE_MS,
        "unknown: not recorded and no OpenWhisk GET / to infer it from; assumed OpenWhisk 1.x's 50 ms",
    )


def pause_grace_known(source: str) -> bool:
    """Whether ``pause_grace_ms``'s source is a recorded setting (not inferred or assumed)."""
    return not source.startswith(("inferred", "unknown"))


def match_ids(invocations: pd.DataFrame) -> np.ndarray:
    return invocations["activation_id"].fillna("").to_numpy(dtype=object)


def has_activation_id(invocations: pd.DataFrame) -> np.ndarray:
    """Which invocations got an activation id (``match_ids(...) != ""`` without a Python string per row)."""
    ids = invocations["activation_id"]
    return (ids.notna() & (ids != "")).to_numpy(dtype=bool)


def match_records(invocations: pd.DataFrame, records: pd.DataFrame) -> np.ndarray:
    """For each invocation, the row of its record in ``records`` (−1: none); ids are matched in
    Arrow (a hash join in native code), records hold one row per id."""
    if not len(records):
        return np.full(len(invocations), -1, dtype=np.int64)
    column = invocations["activation_id"]
    ids = arrow_strings(column.fillna("") if column.hasnans else column)
    value_set = arrow_strings(records["activation_id"])
    fast = match_positions(ids, value_set)
    if fast is not None:
        return fast
    if value_set.type != ids.type:
        value_set = value_set.cast(ids.type)
    position = pc.index_in(ids, value_set=value_set)
    del ids, value_set
    out = pc.fill_null(position, -1).to_numpy(zero_copy_only=False).astype(np.int64)
    del position
    pa.default_memory_pool().release_unused()  # the hash table's blocks, kept by Arrow's allocator otherwise
    return out


# OpenWhisk answers a blocking call whose function outlives the controller's blocking wait (60 s)
# with 202 and the activation id, as it answers a non-blocking one: that answer is not the end.
WAIT_EXPIRED_STATUS = 202


def answered_at_end(blocking: np.ndarray, http_status: np.ndarray) -> np.ndarray:
    """Which calls were answered when their function ended: those of an instance that answers at
    the end (``answers_at_end``), less those the platform answered 202 once its blocking wait ran
    out (their function ends later, at the record's end)."""
    return blocking & (http_status != WAIT_EXPIRED_STATUS)


def answers_at_end(instance: dict, default: bool = True) -> bool:
    """Whether a call of this resolved instance is answered when the function ends (blocking).

    A blocking call is; so is a web action call with a data file (``data_mode`` ``web``): OpenWhisk
    answers web actions synchronously with the function's result, whatever ``blocking`` says; and
    so is every call of a platform that never answers early (``Platform.answers_early``: a generic
    endpoint answers when its function is done).
    """
    if instance.get("data_file") and (instance.get("data_mode") or "web") == "web":
        return True
    platform = platform_of_resolved(instance)
    if platform is not None and not platform.answers_early:
        return True
    return bool(instance.get("blocking", default))


def blocking_default(workload: dict) -> bool:
    """Whether an instance that names no ``blocking`` of its own is blocking: the workload's
    ``blocking_cli`` (kept under ``as_given`` by older manifests), FaaSProfiler's default false."""
    return bool(workload.get("blocking_cli", (workload.get("as_given") or {}).get("blocking_cli", False)))


def instance_answers_at_end(manifest: "rundir.Manifest") -> Callable[[str], bool]:
    """``answers_at_end`` of each instance of a run by name, with the workload's default: the one
    answer the frames, the statistics and the tail table share."""
    instances, default = manifest.instances, blocking_default(manifest.workload)
    return lambda name: answers_at_end(instances.get(name) or {}, default)


# The record columns the invocation frame takes, each aligned to the invocations.
ALIGNED_FLOAT_COLUMNS = ("start_ms", "end_ms", "wait_ms", "init_ms", "duration_ms", "memory_mb")
ALIGNED_CATEGORY_COLUMNS = ("container_state", "status", "record_outcome")


def align_records(records: pd.DataFrame, position: np.ndarray) -> dict:
    """The record fields the invocation frame needs, one row per invocation (NaN, no label, None
    or False where it has no record): what ``build_from_aligned`` takes. Once these are made the
    records frame is no longer needed (``load_run`` drops it before the frame is built)."""
    has = position >= 0
    rows = position[has]
    aligned: dict = {"has_record": has}
    for column in ALIGNED_FLOAT_COLUMNS:
        values = np.full(len(position), np.nan)
        if len(records):
            values[has] = records[column].to_numpy(dtype="float64")[rows]
        aligned[column] = values
    for column in ALIGNED_CATEGORY_COLUMNS:
        aligned[column] = _take_category(records, column, position, has)
    error_text = np.full(len(position), None, dtype=object)
    timed_out = np.zeros(len(position), dtype=bool)
    if len(records):
        error_text[has] = records["error_text"].to_numpy(dtype=object)[rows]
        timed_out[has] = records["timed_out"].to_numpy()[rows]
    aligned["error_text"], aligned["timed_out"] = error_text, timed_out
    return aligned


def build_invocation_frame(
    invocations: pd.DataFrame, records: pd.DataFrame, manifest: rundir.Manifest, position: np.ndarray | None = None
) -> pd.DataFrame:
    """Join by activation id and derive the columns in the module docstring.

    ``position`` is ``match_records(invocations, records)`` when the caller already has it.
    """
    if position is None:
        position = match_records(invocations, records)
    return build_from_aligned(invocations, align_records(records, position), manifest)


def build_from_aligned(invocations: pd.DataFrame, aligned: dict, manifest: rundir.Manifest) -> pd.DataFrame:
    """``build_invocation_frame`` from ``align_records``' columns (which it consumes: the columns
    it keeps become the frame's, the others are released as soon as they are used)."""
    has = aligned.pop("has_record")
    start_ms, end_ms, init_raw = aligned.pop("start_ms"), aligned.pop("end_ms"), aligned.pop("init_ms")
    # The start classes first: their sort's temporaries come and go before the other columns exist.
    grace, _ = pause_grace_ms(manifest)
    function_codes = pd.Categorical(invocations["function"]).codes
    classes = classify_starts(
        function_codes, start_ms, end_ms, init_raw, grace, aligned.pop("container_state"), aligned["wait_ms"]
    ).as_ordered()
    del function_codes
    record_outcome = aligned.pop("record_outcome")
    due = records_due(invocations, manifest)
    final = final_outcomes(invocations["outcome"].array, record_outcome, has, records_due=due)
    successful = successful_mask(final, invocations["outcome"].array, _float(invocations["http_status"]))

    columns: dict = {}
    intended = _float(invocations["intended_ns"])
    sent = _float(invocations["sent_ns"])
    columns["intended_s"] = intended / 1e9
    columns["lateness_ms"] = (sent - intended) / 1e6
    done = _float(invocations["done_ns"])
    columns["client_latency_ms"] = (done - sent) / 1e6
    del sent
    columns["corrected_latency_ms"] = (done - intended) / 1e6
    del done, intended
    # A native run's ids label worker calls: no record is due for them.
    columns["has_activation_id"] = has_activation_id(invocations) & due
    del due
    columns["has_record"] = has
    wait_ms, duration_ms, memory_mb = aligned.pop("wait_ms"), aligned.pop("duration_ms"), aligned.pop("memory_mb")
    wall_zero_ms = manifest.wall_ns_at_zero / 1e6
    columns["platform_start_s"] = (start_ms - wall_zero_ms) / 1e3
    del start_ms
    columns["wait_ms"] = wait_ms
    init_ms = np.where(has, np.nan_to_num(init_raw, nan=0.0), np.nan)
    del init_raw
    columns["init_ms"] = init_ms
    columns["duration_ms"] = duration_ms
    columns["execution_ms"] = duration_ms - init_ms
    # A non-blocking call answers at acceptance, before the function runs: no overhead to speak of.
    blocking = invocations["instance"].map(instance_answers_at_end(manifest)).to_numpy(dtype=bool)
    blocking = answered_at_end(blocking, _float(invocations["http_status"]))
    columns["overhead_ms"] = np.where(blocking, columns["client_latency_ms"] - (wait_ms + duration_ms), np.nan)
    columns["platform_latency_ms"] = wait_ms + duration_ms
    columns["platform_end_s"] = (end_ms - wall_zero_ms) / 1e3
    del end_ms
    # End to end from the planned instant to the function's end. A non-blocking call answers at
    # acceptance, so its client latency says nothing of the run; the record's end does (on the
    # platform's clock: on a remote OpenWhisk, clock skew between the hosts adds to it).
    columns["completion_latency_ms"] = np.where(
        blocking, columns["corrected_latency_ms"], columns["platform_end_s"] * 1e3 - columns["intended_s"] * 1e3
    )
    del blocking
    columns["start_class"] = classes
    columns["status"] = aligned.pop("status")
    columns["record_outcome"] = record_outcome
    columns["final_outcome"] = final
    columns["successful"] = successful
    columns["error_text"] = aligned.pop("error_text")
    columns["timed_out"] = pd.arrays.BooleanArray(aligned.pop("timed_out"), ~has)
    columns["memory_mb"] = memory_mb
    gib = memory_mb / 1024.0
    columns["gb_s"] = gib * duration_ms / 1e3
    columns["gb_s_1ms"] = gib * np.maximum(np.ceil(duration_ms), 1.0) / 1e3
    columns["gb_s_100ms"] = gib * np.maximum(np.ceil(duration_ms / 100.0), 1.0) * 100.0 / 1e3
    del gib
    columns.update(time_columns(columns["intended_s"], columns["completion_latency_ms"], manifest))
    ran_on, _ = hosts_mod.activation_host(manifest, manifest.host_infos)
    columns["host"] = hosts_mod.host_column(columns["has_activation_id"] | has, ran_on, manifest.native_run)
    # One frame made once from the columns (no column-by-column inserts), the invocation log's
    # columns first, as they are (not copied).
    frame = pd.concat([invocations, pd.DataFrame(columns, index=invocations.index, copy=False)], axis=1)
    frame.attrs = dict(invocations.attrs)
    return with_plugin_metrics(frame)


def with_plugin_metrics(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with the plug-ins' metric columns (``faasprof.analyzer.metrics``), and their
    problems in ``attrs["metric_problems"]``; the same frame when no plug-in adds one."""
    added, problems = metric_columns(frame)
    if added:
        attrs = dict(frame.attrs)
        frame = pd.concat([frame, pd.DataFrame(added, index=frame.index)], axis=1)
        frame.attrs = attrs
    if problems:
        frame.attrs["metric_problems"] = problems
    return frame


def time_columns(intended_s: np.ndarray, completion_latency_ms: np.ndarray, manifest: rundir.Manifest) -> dict:
    """Pandas time types beside the float seconds: ``intended`` and ``end`` as timedeltas since the
    run's zero, ``intended_utc`` and ``end_utc`` as UTC datetimes (``resample`` works on them).
    ``end`` is the function's end as ``completion_latency_ms`` counts it."""
    wall_zero = pd.Timestamp(manifest.wall_ns_at_zero, unit="ns", tz="UTC")
    intended = pd.to_timedelta(intended_s, unit="s")
    end = pd.to_timedelta(intended_s + completion_latency_ms / 1e3, unit="s")
    return {"intended": intended, "end": end, "intended_utc": wall_zero + intended, "end_utc": wall_zero + end}


def _take_category(records: pd.DataFrame, column: str, position: np.ndarray, has: np.ndarray) -> pd.Categorical:
    """A categorical record column aligned to the invocations (absent where there is no record)."""
    if not len(records):
        return pd.Categorical([None] * len(position), categories=[])
    source = pd.Categorical(records[column])
    codes = np.full(len(position), -1, dtype=source.codes.dtype)
    codes[has] = source.codes[position[has]]
    return pd.Categorical.from_codes(codes, categories=source.categories)


def cost_totals(frame: pd.DataFrame) -> dict:
    out = {}
    for column in ("gb_s", "gb_s_1ms", "gb_s_100ms"):
        total = float(np.nansum(frame[column].to_numpy()))
        out[column] = round(total, 6) if math.isfinite(total) else None
    return out


# --------------------------------------------------------------------------------------------
# self-describing frames and files

PARQUET_FORMAT_VERSION = 1
PARQUET_ROW_GROUP = 1024 * 1024  # rows per row group (pyarrow's default for write_table)
PARQUET_DICTIONARY_PAGE_BYTES = 64 * 1024
PARQUET_KEY = b"faasprof"
MODES = ("unknown", "under-invoked", "balanced", "over-invoked")  # ordered by load


def run_attrs(run_dir: Path, manifest: rundir.Manifest) -> dict:
    """What identifies a run, for ``DataFrame.attrs`` and Parquet schema metadata (JSON-ready)."""
    return {
        "run": Path(run_dir).name,
        "test_name": str(manifest.test_name or Path(run_dir).name),
        "run_format_version": manifest.format_version,
        "created_utc": manifest.created_utc,
        "wall_ns_at_zero": manifest.wall_ns_at_zero,
        "seed": manifest.workload.get("seed"),
        "faasprof": __version__,
    }


def harmonise(frames: list[pd.DataFrame], attrs: dict) -> None:
    """The same dtype for the same column in every frame of a run, ordered modes, and ``attrs``;
    the first frame (the invocations) gets a ``run`` column, so rows of several runs concatenated
    in a notebook stay apart."""
    if frames and "run" not in frames[0].columns:
        frames[0].insert(0, "run", _constant_category(attrs["run"], len(frames[0])))
    kinds: dict[str, pd.CategoricalDtype] = {}
    for name in ("instance", "function", "host"):
        values = sorted({str(v) for f in frames if name in f.columns for v in _distinct(f[name])})
        kinds[name] = pd.CategoricalDtype(values)
    for frame in frames:
        for name, dtype in kinds.items():
            if name in frame.columns:
                column = frame[name]
                if isinstance(column.dtype, pd.CategoricalDtype) and all(
                    isinstance(c, str) for c in column.cat.categories
                ):
                    # The same values re-coded against the shared categories (no Python object per row).
                    frame[name] = column.cat.set_categories(list(dtype.categories)).astype(dtype)
                else:
                    frame[name] = column.astype(object).astype(dtype)
        if "phase" in frame.columns:
            frame["phase"] = frame["phase"].astype("int64")
        if "mode" in frame.columns:
            frame["mode"] = pd.Categorical(frame["mode"].astype(object), categories=MODES, ordered=True)
        frame.attrs.update(attrs)


def _distinct(column: pd.Series) -> list:
    """A column's distinct values (a categorical's used categories, without a pass over its rows
    in Python)."""
    if isinstance(column.dtype, pd.CategoricalDtype):
        codes = np.unique(column.cat.codes.to_numpy())
        return [column.cat.categories[k] for k in codes if k >= 0]
    return list(column.astype(object).dropna().unique())


def write_parquet(frame: pd.DataFrame, path: Path, kind: str) -> None:
    """``frame`` as Parquet with a ``run`` column and schema metadata naming the run, the test, the
    format version, the frame's kind and each column's unit. Timedeltas become Arrow ``duration``,
    datetimes Arrow ``timestamp`` (UTC)."""
    attrs = dict(frame.attrs)
    data = frame.copy(deep=False)  # the frame's own columns, not a copy of them
    data.attrs = {}
    if "run" not in data.columns and attrs.get("run"):
        data.insert(0, "run", _constant_category(attrs["run"], len(data)))
    schema = pa.Schema.from_pandas(data, preserve_index=False)
    described = {
        "parquet_format_version": PARQUET_FORMAT_VERSION,
        "kind": kind,
        **attrs,
        "units": units_mod.frame_units(frame),  # the frame's, whose attrs may name its columns' units
    }
    metadata = dict(schema.metadata or {})
    metadata[PARQUET_KEY] = json.dumps(described, sort_keys=True).encode()
    schema = schema.with_metadata(metadata)
    # Converted and written a row group at a time: memory stays near the frame's own size. A small
    # dictionary page limit keeps dictionaries for the columns of few distinct values (labels,
    # memory, init times) and gives up early on ids, timestamps and latencies, whose dictionary
    # attempt was half of the time spent writing.
    with pq.ParquetWriter(path, schema, dictionary_pagesize_limit=PARQUET_DICTIONARY_PAGE_BYTES) as writer:
        for start in range(0, max(len(data), 1), PARQUET_ROW_GROUP):
            writer.write_table(
                pa.Table.from_pandas(data.iloc[start : start + PARQUET_ROW_GROUP], schema=schema, preserve_index=False)
            )


def _constant_category(value: str, n: int) -> pd.Categorical:
    """``pd.Categorical([value] * n)`` without the list."""
    return pd.Categorical.from_codes(np.zeros(n, dtype=np.int8), categories=pd.Index([value]))


def parquet_description(path: str | os.PathLike) -> dict:
    """The faasprof metadata of a Parquet file ``write_parquet`` wrote."""
    metadata = pq.read_schema(path).metadata or {}
    if PARQUET_KEY not in metadata:
        raise FormatError(f"{path}: no faasprof schema metadata; rewrite it with faasprof analyze")
    return json.loads(metadata[PARQUET_KEY])


def phase_stats_long(phase_stats: pd.DataFrame) -> pd.DataFrame:
    """Phase statistics in tidy long format: one row per instance × phase × metric, with its unit."""
    ids = [c for c in ("instance", "function", "phase", "mode", "blocking") if c in phase_stats.columns]
    numeric = [c for c in phase_stats.select_dtypes(include="number").columns if c not in ids]
    long = phase_stats.melt(id_vars=ids, value_vars=numeric, var_name="metric", value_name="value")
    # Each metric's own unit (``faasprof.analyzer.units``): a count is "count", a latency's sample
    # count too, never its latency's ms.
    long["unit"] = long["metric"].map(lambda c: units_mod.unit_of(str(c), phase_stats[c].dtype))
    long["metric"] = long["metric"].astype("category")
    long.attrs = dict(phase_stats.attrs)
    return long
