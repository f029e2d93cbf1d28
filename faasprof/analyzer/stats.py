"""Statistics over the invocation frame: phases, percentiles with confidence intervals, latency modes.

Pure functions of frames and the manifest; nothing here reads or writes files.

Phases
    The test timeline is cut wherever an instance's activity window starts or ends; each piece is a
    phase with a fixed set of active instances. Its *steady* part drops a warm-up at the start
    (``min(WARMUP_MAX_S, WARMUP_FRACTION × length)``), where the first cold starts fall, and
    begins no earlier than the run's own warm-up (``run_warmup_s``: a trace sample's warm-up
    minutes), whose invocations are run but left out of every figure (``WARMUP_RULE``). Every
    per-phase figure is computed over invocations *planned* in the steady part. A run that stopped
    early (interrupted, aborted) ends its phases where it stopped (``run_end_s``); what was planned
    after that was never due while it ran, so it is neither offered nor failed but counted apart
    ("not sent: interrupted", ``unsent_after_end``).

Percentiles
    From the raw samples (no histograms), with distribution-free 95 % confidence intervals from
    order statistics (Le Boudec, *Performance Evaluation of Computer and Communication Systems*,
    Thm. 2.1, normal approximation of the binomial): for quantile p of n sorted samples the bounds
    are the samples of rank ⌊np − 1.96·√(np(1−p))⌋ and ⌈np + 1.96·√(np(1−p))⌉ + 1 (1-based). When
    a rank falls outside 1..n there are too few samples and the bound is null.

Outcomes
    Every figure of *successful work* (latency percentiles and their CIs, the trend, the latency
    breakdown, start classes, the latency mode) is computed over invocations whose final outcome
    (``faasprof.analyzer.frames`` ``final_outcome``, the HTTP outcome joined with the activation record) is
    ``success`` (the frame's ``successful`` column; it also admits a blocking call answered 200
    whose record is missing, as OpenWhisk answers 200 only for a successful activation). A
    non-blocking 202 whose record says the function raised is an ``application_error``, not a
    sample of the function's latency. Every final outcome is counted
    (``final_<outcome>`` columns, ``failures`` in total); the completion latency of failures is
    summarised on its own (``failure_completion_latency_ms_*``).

Latency modes (the paper's under-invoked / balanced / over-invoked), per instance and steady phase,
decided in this order from the evidence stored beside the verdict:

1. ``unknown``: fewer than ``MIN_SAMPLES_FOR_MODE`` successful invocations (final outcome
   ``success``): a mode of successful work needs successful work to judge.
2. ``over-invoked``: the platform does not keep up, shown by any of
   (a) achieved / offered throughput < ``OVER_THROUGHPUT_RATIO`` (0.9),
   (b) latency of successful work grows through the phase: the median latency of the last third
       is at least ``OVER_TREND_RATIO`` (2) × and ``OVER_TREND_MIN_MS`` (25 ms) above that of
       the first third,
   (c) at least ``OVER_REJECT_FRACTION`` (5 %) of the sent invocations were *rejected*: their
       final outcome is one of ``REJECTED_FINAL`` — throttled (429), timed out at the client,
       failed at the HTTP level, and the record-level failures a platform that does not keep up
       produces: ``action_timeout`` (queued or starved past the limit), ``internal_error`` (whisk
       internal error: container creation or the invoker failed) and ``developer_error`` (the
       sandbox died: out of memory, killed). ``application_error`` is *not* counted: it is the
       function's own answer to its input (a raised exception, an ``error`` result), the same at
       any load, so it says nothing of the platform's capacity; it is counted and shown first in
       the report instead. ``no_record`` is not counted either: a record not fetched (yet) is a
       gap in the data, reported as missing records.
   (d) a standing queue: the median completion latency of successful work is at least
       ``QUEUE_RATIO`` (2) × and ``QUEUE_MIN_MS`` (25 ms) above the function's *reference*
       latency, the median completion latency the capacity search measured at its lowest rate
       (``latency_references``). A queue that stands still passes (a) and (b): throughput keeps
       up and latency does not grow, yet every call waits, and the paper's balanced mode is the
       one where latency converges to the execution time. The queue need not show in
       ``waitTime``: sandboxes that share the CPUs stretch each other's execution instead (on a
       2-core host json_dumps ran 42 ms at 13/s and 784 ms at 15/s, its median waitTime 104 ms),
       so the rule compares the whole latency with the unloaded one, not the wait with the
       execution time. It applies only to a phase offered more than the reference's rate (a sparser phase
       has no queue; its resumes may cost more than the reference's warm calls) and only where
       a reference is recorded: a capacity search's probes after its first, runs whose rates
       are fractions of a stored capacity, and runs handed a stored capacity's reference
       (``reproduce``'s modes). The queue must still stand at the end of the window: the median
       completion latency of the last third passes the same test, so a cold-start ramp whose
       latency falls back to the reference's (846 → 38 ms) drained its backlog and is not over-invoked.
       ``standing_queue`` is this rule whole, the one test of a queue: the phases here, and a
       sweep's capacity across its points (``faasprof.experiments.sweep_report``), apply it.
   Each rule's evidence over its threshold is its *score* (``over_scores``); the largest is the
   phase's ``mode_evidence_over_threshold`` (``mode_margin``), and a margin within ``CLOSE_MARGIN``
   (×1.25) of 1 either way is a
   *close* decision (``mode_close``), which the capacity search repeats.
3. ``under-invoked``: at least ``UNDER_IDLE_FRACTION`` (50 %) of the successful activations with a
   record started ``cold`` or ``resumed`` from pause (see ``faasprof.analyzer.frames.classify_starts``): the
   invocations are too sparse to keep containers warm. The platform's pause grace bounds this band:
   a sandbox paused after ``pause_grace_ms`` idle stays warm only when the next call comes within
   the grace of the last one's *end*: above ``warm_rate_rps`` = 1000 / (pause grace + the time a
   call holds its sandbox, the activations' median duration), 15.9/s for a 13 ms function at
   localwhisk's 50 ms grace, not 1000 / grace = 20/s (13 to 15/s came out balanced); 0.1/s at
   OpenWhisk 2.0's 10 s. The verdict names it where the phase was offered less. The balanced band
   runs from there to the capacity, and is empty where the capacity is lower.
4. ``balanced``: otherwise. Without any record of a successful activation under-invoked and
   balanced cannot be told apart: the mode is ``unknown`` unless rule 2 fired.
"""

from __future__ import annotations

import math
from typing import Any, TypeGuard

import numpy as np
import pandas as pd

from faasprof import rundir
from faasprof.analyzer.frames import answered_at_end, answers_at_end, blocking_default
from faasprof.analyzer.markup import fmt, ms
from faasprof.analyzer.metrics import METRICS
from faasprof.outcomes import ACCEPTED_HTTP_OUTCOMES, FAILURE_OUTCOMES, FINAL_OUTCOMES, HTTP_OUTCOMES
from faasprof.workload.arrivals import distribution_of

WARMUP_MAX_S = 2.0
WARMUP_FRACTION = 0.2
WARMUP_RULE = (
    "invocations planned before the run's warm-up ends (its self-check warmup_s) were run but are left out of every "
    "figure: percentiles, breakdown, modes, per-function statistics, start classes and tail ratios; they keep their "
    "rows (the frame's warmup column) and are counted among the outcomes"
)
PERCENTILES = (50.0, 90.0, 99.0, 99.9)
Z_95 = 1.959963984540054

MIN_SAMPLES_FOR_MODE = 20
OVER_THROUGHPUT_RATIO = 0.9
OVER_TREND_RATIO = 2.0
OVER_TREND_MIN_MS = 25.0
OVER_REJECT_FRACTION = 0.05
QUEUE_RATIO = 2.0
QUEUE_MIN_MS = 25.0
UNDER_IDLE_FRACTION = 0.5
CLOSE_MARGIN = 1.25  # a decision whose largest over-invoked score is within this factor of its threshold is close

# Stability warnings (pyperf-style: say what is shaky and what to do about it).
FEW_SAMPLES = 100
WIDE_SPREAD_RATIO = 10.0  # p99 / p50, STeLLAR's tail-to-median flag
LATE_P99_MS = 10.0
LATE_MAX_MS = 100.0

ANSWERED = ACCEPTED_HTTP_OUTCOMES  # HTTP outcomes with an answer from the platform
STOPPED_EARLY = ("interrupted", "aborted")  # run statuses whose phases end where the run stopped
# Final outcomes that count towards rule 2(c) (module docstring says why these and not others).
REJECTED_FINAL = ("throttled", "timeout", "failed", "action_timeout", "internal_error", "developer_error")

MODE_RULE = (
    "unknown if < {n} successful; over-invoked if achieved/offered < {thr} or the last third's median "
    "latency of successful work >= {tr}x and >= {tm} ms above the first third's or >= {rej:.0%} of sent ended {rejected} "
    "(application errors are counted apart, not here) or, above the rate of the function's reference (the capacity search's "
    "lowest-rate probe), the median completion latency, and the last third's, are >= {qr}x and >= {qm} ms above the reference's (a standing queue, not a ramp); "
    "else under-invoked if >= {idle:.0%} of successful records started cold or resumed from pause; else balanced"
).format(
    n=MIN_SAMPLES_FOR_MODE,
    thr=OVER_THROUGHPUT_RATIO,
    tr=OVER_TREND_RATIO,
    tm=OVER_TREND_MIN_MS,
    rej=OVER_REJECT_FRACTION,
    qr=QUEUE_RATIO,
    qm=QUEUE_MIN_MS,
    idle=UNDER_IDLE_FRACTION,
    rejected="/".join(REJECTED_FINAL),
)


def _clean(value):
    """JSON-friendly: NaN/inf → None, numpy scalars → Python, floats rounded to 6 significant places."""
    if value is None:
        return None
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        value = float(value)
        if not math.isfinite(value):
            return None
        return float(f"{value:.6g}")
    return value


def clean(obj):
    if isinstance(obj, dict):
        return {k: clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [clean(v) for v in obj]
    return _clean(obj)


# --------------------------------------------------------------------------------------------
# workload shape


def instance_specs(manifest: rundir.Manifest, frame: pd.DataFrame) -> list[dict]:
    """Each instance's function, rate and activity window, from the manifest's resolved workload.

    Accepts the resolved workload ``faasprof.workload.spec.Workload.resolved()`` writes (``instances:
    {name: {function, rate_per_s, window_s}}``), FaaSProfiler's format (``{application, rate,
    activity_window}``) or a list of instances with a ``name``;
    whatever is missing is taken from the invocation log (window from the planned times).
    """
    # Rows per instance and each instance's first function, by code: no copy of the frame.
    instance = pd.Categorical(frame["instance"])
    codes = np.asarray(instance.codes)
    counts = np.bincount(codes[codes >= 0], minlength=len(instance.categories))
    first_row = {instance.categories[k]: int(np.argmax(codes == k)) for k in np.flatnonzero(counts)}
    where = {name: k for k, name in enumerate(instance.categories)}
    appearance = [
        (name, int(counts[where[name]]), frame["function"].iloc[first_row[name]])
        for name in sorted(first_row, key=first_row.__getitem__)  # in order of appearance, as the log has them
    ]
    return specs_of(manifest, _workload_duration(manifest, frame), appearance)


def specs_of(manifest: rundir.Manifest, duration: float, appearance: list[tuple[Any, int, Any]]) -> list[dict]:
    """``instance_specs`` from the log's instances in order of appearance: (name, rows, first
    function) each (an out-of-core reader counts them in SQL)."""
    workload = manifest.workload
    raw = manifest.instances
    specs = []
    names = list(raw.keys())
    planned_of = {name: planned for name, planned, _ in appearance}
    function_of = {name: function for name, _, function in appearance}
    for name, _, _ in appearance:
        if name not in raw:
            names.append(name)
    for name in names:
        item = raw.get(name) or {}
        planned = planned_of.get(name, 0)
        window = item.get("window_s") or item.get("activity_window")
        if not (
            isinstance(window, (list, tuple)) and len(window) == 2 and all(isinstance(v, (int, float)) for v in window)
        ):
            window = (0.0, duration)
        function = item.get("function") or item.get("application")
        if not function and name in function_of:
            function = str(function_of[name])
        rate = item.get("rate_per_s", item.get("rate"))
        blocking = answers_at_end(item, blocking_default(workload))
        specs.append(
            {
                "instance": str(name),
                "function": str(function) if function else None,
                "distribution": distribution_of(item),
                "rate_rps": float(rate) if isinstance(rate, (int, float)) and not isinstance(rate, bool) else None,
                "window_s": (float(window[0]), float(min(window[1], duration))),
                "planned": planned,
                "blocking": bool(blocking),
            }
        )
    return specs


def _workload_duration(manifest: rundir.Manifest, frame: pd.DataFrame) -> float:
    last = float(np.nanmax(frame["intended_s"].to_numpy())) if len(frame) else None
    return workload_duration(manifest, last)


def workload_duration(manifest: rundir.Manifest, last_intended_s: float | None) -> float:
    """The workload's duration; without one, just past the last planned time (0 with no rows)."""
    workload = manifest.workload
    for key in ("duration_s", "test_duration_in_seconds"):
        value = workload.get(key)
        if isinstance(value, (int, float)) and value > 0:
            return float(value)
    if last_intended_s is not None:
        return float(last_intended_s) + 1e-9
    return 0.0


def run_end_s(manifest: rundir.Manifest, frame: pd.DataFrame) -> float | None:
    """When a run that stopped early (status ``interrupted`` or ``aborted``) stopped sending, on the
    run clock; None for a run that sent its whole plan (or whose end is unknown: a torn run).

    The planned instant of the first invocation never sent after the last one sent, and no later
    than the invoker's ``send_wall_s`` (zero to the stop): the send loop notices a Ctrl-C a moment
    after it came, and what fell due in that moment was stopped by the user, not left behind."""
    if manifest.status not in STOPPED_EARLY:
        return None
    intended = frame["intended_s"].to_numpy(dtype="float64")
    sent = frame["sent_ns"].notna().to_numpy()
    last_sent = float(intended[sent].max()) if sent.any() else -math.inf
    cut_off = intended[label_mask(frame["outcome"], ("not_sent",)) & (intended > last_sent)]
    return run_end_from(manifest, last_sent, float(cut_off.min()) if len(cut_off) else None)


def run_end_from(manifest: rundir.Manifest, last_sent_s: float, first_cut_off_s: float | None) -> float | None:
    """``run_end_s`` from the last planned time sent (−inf: none) and the first never sent after it
    (None: none)."""
    if manifest.status not in STOPPED_EARLY:
        return None
    recorded = (manifest.invoker or {}).get("send_wall_s")
    if isinstance(recorded, (int, float)) and math.isfinite(recorded):
        return min(float(recorded), first_cut_off_s) if first_cut_off_s is not None else float(recorded)
    return first_cut_off_s if first_cut_off_s is not None else max(last_sent_s, 0.0)


def unsent_after_end(frame: pd.DataFrame, end_s: float | None) -> np.ndarray:
    """Invocations never sent because the run stopped before they were due ("not sent:
    interrupted"): planned at or after ``end_s``. Neither offered nor failed; counted apart."""
    if end_s is None:
        return np.zeros(len(frame), dtype=bool)
    return label_mask(frame["outcome"], ("not_sent",)) & (frame["intended_s"].to_numpy(dtype="float64") >= end_s)


def run_warmup_s(manifest: rundir.Manifest) -> float:
    """The run's warm-up in seconds: what the self-check used (the manifest's ``self_check``
    limits, the workload's block with ``run --self-check`` over it), else the workload's own
    ``self_check.warmup_s``, else 0. Invocations planned before it are run but left out of every
    figure (``WARMUP_RULE``)."""
    limits = (manifest.extra.get("self_check") or {}).get("limits") or {}
    value = limits.get("warmup_s")
    if value is None:
        given = (manifest.workload or {}).get("as_given") or {}
        value = (given.get("self_check") or {}).get("warmup_s")
    return float(value) if isinstance(value, (int, float)) and math.isfinite(value) and value > 0 else 0.0


def phases(specs: list[dict], duration_s: float, end_s: float | None = None, warmup_s: float = 0.0) -> list[dict]:
    """Cut the timeline where any activity window starts or ends (see the module docstring).

    ``end_s``: the run stopped there (``run_end_s``): a phase running then ends there
    (``planned_end_s`` keeps its planned end), and a phase whose steady part had not begun is left
    out, so an interrupted run's offered rate is what was due while it ran. ``warmup_s``: the
    run's warm-up (``run_warmup_s``): no steady part begins before it, and a phase that ends
    within it has none (``in_warmup``)."""
    edge_set = {0.0, float(duration_s)}
    for spec in specs:
        edge_set.update(v for v in spec["window_s"] if 0.0 <= v <= duration_s)
    edges = sorted(edge_set)
    out: list[dict] = []
    for start, end in zip(edges, edges[1:]):
        if end - start <= 1e-9:
            continue
        active = [s["instance"] for s in specs if s["window_s"][0] < end - 1e-9 and s["window_s"][1] > start + 1e-9]
        if not active:
            continue
        warmup = min(WARMUP_MAX_S, WARMUP_FRACTION * (end - start))
        steady_start_s = min(max(start + warmup, warmup_s), end)
        phase = {
            "phase": len(out),
            "start_s": start,
            "end_s": end,
            "steady_start_s": steady_start_s,
            "instances": active,
        }
        if steady_start_s >= end:
            phase["in_warmup"] = True  # wholly within the run's warm-up: no steady part, no statistics
        if end_s is not None and end > end_s:
            if end_s <= steady_start_s:
                break  # this phase and every later one had no steady part before the stop
            phase.update(end_s=end_s, planned_end_s=end)
        out.append(phase)
    return out


def assign_phase(intended_s: np.ndarray, phase_list: list[dict]) -> np.ndarray:
    """The phase index of each planned time (−1 outside every phase); steady or not is separate."""
    out = np.full(len(intended_s), -1, dtype=np.int32)
    for phase in phase_list:
        inside = (intended_s >= phase["start_s"]) & (intended_s < phase["end_s"])
        out[inside] = phase["phase"]
    return out


# --------------------------------------------------------------------------------------------
# percentiles


def quantile_ci(sorted_values: np.ndarray, p: float) -> tuple[float, float, float]:
    """(estimate, low, high) of quantile ``p`` (0..1) of sorted samples (or samples partitioned at
    ``_quantile_ranks``); see the module docstring."""
    n = len(sorted_values)
    if n == 0:
        return (math.nan, math.nan, math.nan)
    estimate = float(np.quantile(sorted_values, p, method="linear")) if n < 2 else _sorted_quantile(sorted_values, p)
    j, k = _ci_ranks(n, p)
    low = float(sorted_values[j - 1]) if 1 <= j <= n else math.nan
    high = float(sorted_values[k - 1]) if 1 <= k <= n else math.nan
    return (estimate, low, high)


def min_samples_for_interval(p: float) -> int:
    """The fewest samples that have a 95 % interval of quantile ``p`` (8 for the median): with fewer,
    ``quantile_ci`` gives NaN ends."""
    n = 1
    while True:
        low, high = _ci_ranks(n, p)
        if low >= 1 and high <= n:
            return n
        n += 1


def _ci_ranks(n: int, p: float) -> tuple[int, int]:
    """The 1-based ranks of the 95 % interval's ends (module docstring)."""
    half = Z_95 * math.sqrt(n * p * (1.0 - p))
    return math.floor(n * p - half), math.ceil(n * p + half) + 1


def _interpolation(n: int, p: float) -> tuple[int, int, float]:
    """Linear interpolation (numpy's default) of quantile ``p`` of ``n`` sorted samples: the
    0-based ranks below and above, and the weight of the one above."""
    position = p * (n - 1)
    below = int(math.floor(position))
    return below, min(below + 1, n - 1), position - below


def _sorted_quantile(sorted_values: np.ndarray, p: float) -> float:
    below, above, weight = _interpolation(len(sorted_values), p)
    return float(sorted_values[below] * (1.0 - weight) + sorted_values[above] * weight)


def percentile_block(values: np.ndarray, prefix: str) -> dict:
    """p50/p90/p99/p99.9 with CIs, mean and count of the finite ``values``.

    Only the order statistics the estimates and intervals read are put in place (``np.partition``
    at those ranks): the same values a full sort gives, without sorting millions of samples."""
    data = values[np.isfinite(values)]
    n = len(data)
    out = {f"{prefix}_n": int(n), f"{prefix}_mean": float(data.mean()) if n else math.nan}
    if n:
        data = partitioned_for_quantiles(data, [pct / 100.0 for pct in PERCENTILES])
    for pct in PERCENTILES:
        tag = f"p{pct:g}".replace(".", "_")
        estimate, low, high = quantile_ci(data, pct / 100.0)
        out[f"{prefix}_{tag}"] = estimate
        out[f"{prefix}_{tag}_ci_low"] = low
        out[f"{prefix}_{tag}_ci_high"] = high
    out[f"{prefix}_max"] = float(data[-1]) if n else math.nan
    return out


def partitioned_for_quantiles(data: np.ndarray, ps) -> np.ndarray:
    """``data`` (finite, not empty) with every rank ``quantile_ci`` reads for the quantiles ``ps``,
    and the maximum, holding its order statistic: what those reads give on sorted data."""
    n = len(data)
    ranks = sorted({rank for p in ps for rank in _quantile_ranks(n, p)} | {n - 1})
    return np.partition(data, ranks)


def _quantile_ranks(n: int, p: float) -> list[int]:
    """The 0-based ranks ``quantile_ci`` reads for quantile ``p`` of ``n`` samples."""
    below, above, _ = _interpolation(n, p)
    j, k = _ci_ranks(n, p)
    return [rank for rank in (below, above, j - 1, k - 1) if 0 <= rank < n]


# --------------------------------------------------------------------------------------------
# achieved throughput (one definition for the tables and the throughput plot)

ACHIEVED_RULE = (
    "achieved/s = invocations that ended inside the steady window, per second: the end is the answer "
    "for calls answered when the function ends (blocking calls, web calls with a data file) and the "
    "activation record's end for non-blocking calls and for blocking ones answered 202 when the platform's "
    "blocking wait ran out; failed invocations count (they ended too); at most as many as were "
    "planned inside the window, so achieved never exceeds offered: the ends of calls planned before it (a warm-up's "
    "backlog draining after cold starts) are not throughput of this window's offer"
)


# Every column of the invocation frame that ``group_stats``, ``latency_trend`` and ``end_times_s`` read.
STATS_COLUMNS = (
    "instance",
    "function",
    "intended_s",
    "outcome",
    "final_outcome",
    "successful",
    "has_activation_id",
    "has_record",
    "client_latency_ms",
    "corrected_latency_ms",
    "platform_latency_ms",
    "completion_latency_ms",
    "lateness_ms",
    "http_status",
    "done_ns",
    "platform_end_s",
    "wait_ms",
    "init_ms",
    "execution_ms",
    "duration_ms",
    "overhead_ms",
    "start_class",
    "gb_s",
    "gb_s_1ms",
    "gb_s_100ms",
    "memory_mb",
    *(metric.name for metric in METRICS),  # the plug-ins' metrics (faasprof.analyzer.metrics)
)


def label_mask(column: pd.Series, names) -> np.ndarray:
    """Which rows' label is one of ``names``: decided once per category of a categorical and
    looked up by code, so no Python object is made per row."""
    if isinstance(column.dtype, pd.CategoricalDtype):
        hit = np.array([label in names for label in column.cat.categories] + [False])
        return hit[column.cat.codes.to_numpy()]  # code -1 (no label) takes the final False
    return np.isin(column.astype(object).to_numpy(), list(names))


def label_counts(column: pd.Series, names) -> dict:
    """How many rows carry each of ``names`` (0 for a name no row has)."""
    if isinstance(column.dtype, pd.CategoricalDtype):
        codes = column.cat.codes.to_numpy()
        counts = np.bincount(codes[codes >= 0], minlength=len(column.cat.categories))
        found = {label: int(count) for label, count in zip(column.cat.categories, counts)}
        return {name: found.get(name, 0) for name in names}
    values = column.astype(object).to_numpy()
    return {name: int((values == name).sum()) for name in names}


END_COLUMNS = ("outcome", "http_status", "done_ns", "has_record", "platform_end_s")  # what ``end_times_s`` reads


def end_times_s(rows: pd.DataFrame, answers_at_end: bool) -> np.ndarray:
    """Run-relative end time (s) of each invocation that ended, per ``ACHIEVED_RULE``.

    A non-blocking instance without any record falls back to its answers (the 202s): all there is.
    """
    if not rows["has_record"].any():
        answered = label_mask(rows["outcome"], ANSWERED)
        done = rows["done_ns"].to_numpy(dtype="float64", na_value=np.nan)[answered] / 1e9
    elif answers_at_end:  # the answers, but a blocking 202 (the platform's wait ran out) ends at its record
        answered = label_mask(rows["outcome"], ANSWERED)
        status = rows["http_status"].to_numpy(dtype="float64", na_value=np.nan)
        at_end = answered_at_end(np.ones(len(rows), dtype=bool), status)
        done_s = rows["done_ns"].to_numpy(dtype="float64", na_value=np.nan) / 1e9
        done = np.where(at_end, done_s, rows["platform_end_s"].to_numpy(dtype="float64"))[answered]
    else:
        done = rows["platform_end_s"].to_numpy(dtype="float64")
    return done[np.isfinite(done)]


# --------------------------------------------------------------------------------------------
# per instance × phase


def group_stats(rows: pd.DataFrame, start_s: float, end_s: float, done_s: np.ndarray | None = None) -> dict:
    """Counts, throughput, percentiles, breakdown and start classes of one group of invocations.

    ``rows`` are the invocations planned in [start_s, end_s); ``done_s`` are the completion times of
    the same instance's invocations (answers for blocking instances, record ends for non-blocking
    ones) for achieved throughput, counted inside the window.
    """
    length = max(end_s - start_s, 1e-9)
    counts = label_counts(rows["outcome"], HTTP_OUTCOMES)
    final_counts = {
        f"final_{name}": count for name, count in label_counts(rows["final_outcome"], FINAL_OUTCOMES).items()
    }
    planned = int(len(rows))
    sent = planned - counts["not_sent"]
    answered = label_mask(rows["outcome"], ANSWERED)
    failure = label_mask(rows["final_outcome"], FAILURE_OUTCOMES)
    success = rows["successful"].to_numpy(dtype=bool)
    with_id = rows["has_activation_id"].to_numpy()
    has_record = rows["has_record"].to_numpy()
    out = {
        "window_s": [start_s, end_s],
        "planned": planned,
        "sent": sent,
        **counts,
        "answered": int(answered.sum()),
        **final_counts,
        "successful": int(success.sum()),
        "failures": int(failure.sum()),
        "rejected": int(label_mask(rows["final_outcome"], REJECTED_FINAL).sum()),
        "with_activation_id": int(with_id.sum()),
        "with_record": int(has_record.sum()),
        "successful_with_record": int((success & has_record).sum()),
        "missing_records": int((with_id & ~has_record).sum()),
        "offered_rps": planned / length,
    }
    ended = float(((done_s >= start_s) & (done_s < end_s)).sum()) if done_s is not None else float(answered.sum())
    out["achieved_rps"] = min(ended, float(planned)) / length  # ACHIEVED_RULE: never above offered
    out["achieved_over_offered"] = out["achieved_rps"] / out["offered_rps"] if out["offered_rps"] > 0 else math.nan

    # Latency of successful work only: a failure's latency is not a sample of the function's.
    # Each statistic takes its own column's rows (numpy), never a copy of the whole group.
    def where(column: str, mask: np.ndarray) -> np.ndarray:
        return rows[column].to_numpy(dtype="float64")[mask]

    for column in ("client_latency_ms", "corrected_latency_ms", "platform_latency_ms", "completion_latency_ms"):
        out.update(percentile_block(where(column, success), column))
    out.update(percentile_block(where("completion_latency_ms", failure & ~success), "failure_completion_latency_ms"))
    for metric in METRICS:  # a plug-in's metric, over successful work as the latencies
        if metric.name in rows.columns:
            out.update(percentile_block(where(metric.name, success), metric.name))
    lateness = rows["lateness_ms"].to_numpy(dtype="float64")
    lateness = np.sort(lateness[np.isfinite(lateness)])
    out["lateness_ms_p50"] = _sorted_quantile(lateness, 0.5) if len(lateness) else math.nan
    out["lateness_ms_p99"] = _sorted_quantile(lateness, 0.99) if len(lateness) else math.nan
    out["lateness_ms_max"] = float(lateness[-1]) if len(lateness) else math.nan
    recorded = has_record & success
    for column in ("wait_ms", "init_ms", "execution_ms", "duration_ms", "overhead_ms"):
        values = where(column, recorded)
        values = values[np.isfinite(values)]
        out[f"{column}_mean"] = float(values.mean()) if len(values) else math.nan
        out[f"{column}_p50"] = float(np.median(values)) if len(values) else math.nan
    class_counts = label_counts(rows["start_class"][recorded], ("cold", "resumed", "warm"))
    n_rec = int(recorded.sum())
    for name in ("cold", "resumed", "warm"):
        out[f"{name}_count"] = class_counts[name]
        out[f"{name}_fraction"] = out[f"{name}_count"] / n_rec if n_rec else math.nan
    # Cost covers every activation the platform ran, failed or not: failures are billed too.
    for column in ("gb_s", "gb_s_1ms", "gb_s_100ms"):
        out[column] = float(np.nansum(rows[column].to_numpy(dtype="float64")))
    memory = rows.loc[has_record, "memory_mb"].to_numpy(dtype="float64")
    memory = memory[np.isfinite(memory)]
    out["memory_mb"] = float(np.median(memory)) if len(memory) else math.nan
    return out


def latency_trend(rows: pd.DataFrame, start_s: float, end_s: float, column: str = "corrected_latency_ms") -> dict:
    """Median latency (``column``) of the first and last third of the window (successful invocations).

    Blocking instances use the corrected latency; non-blocking ones, whose client only sees the
    202 acceptance, use the platform's latency (``platform_latency_ms`` = wait + duration).
    """
    successful = rows["successful"].to_numpy(dtype=bool)
    t = rows["intended_s"].to_numpy(dtype="float64")[successful]
    lat = rows[column].to_numpy(dtype="float64")[successful]
    third = (end_s - start_s) / 3.0
    first = lat[(t < start_s + third) & np.isfinite(lat)]
    last = lat[(t >= end_s - third) & np.isfinite(lat)]
    first_median = float(np.median(first)) if len(first) else math.nan
    last_median = float(np.median(last)) if len(last) else math.nan
    slope = math.nan
    ok = np.isfinite(lat)
    if ok.sum() >= 3 and np.ptp(t[ok]) > 0:
        # The least-squares slope (np.polyfit's degree-1 coefficient), in closed form: polyfit
        # solves it by SVD, seconds for millions of samples.
        centred = t[ok] - t[ok].mean()
        slope = float(np.dot(centred, lat[ok] - lat[ok].mean()) / np.dot(centred, centred))
    return {
        "first_third_median_ms": first_median,
        "last_third_median_ms": last_median,
        "last_over_first": last_median / first_median if first_median and first_median > 0 else math.nan,
        "slope_ms_per_s": slope,
    }


def latency_references(manifest: rundir.Manifest) -> dict[str, dict]:
    """Each function's reference latency for rule 2(d), by function name: ``{"completion_latency_ms_p50",
    "rate_rps", "source"}``. A capacity search records it in its probes' manifests
    (``latency_reference``); a run whose rates are fractions of a stored capacity carries the
    search's in the workload's ``capacity_resolution``."""
    found: dict[str, dict] = {}
    resolution = (manifest.workload.get("as_given") or {}).get("capacity_resolution") or {}
    for name, entry in resolution.items():
        function = (manifest.instances.get(name) or {}).get("function")
        if function and isinstance(entry, dict) and is_reference(entry.get("latency_reference")):
            found.setdefault(function, entry["latency_reference"])
    for function, reference in (manifest.latency_reference or {}).items():
        if is_reference(reference):
            found[function] = reference
    return found


def is_reference(reference: object) -> TypeGuard[dict]:
    """A usable reference latency: a positive median at a positive rate."""
    if not isinstance(reference, dict):
        return False
    latency, rate = reference.get("completion_latency_ms_p50"), reference.get("rate_rps")
    return all(
        isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0 for v in (latency, rate)
    )


def queueing(latency_ms: float, offered_rps: float, reference: dict | None) -> tuple[bool | None, str]:
    """Rule 2(d): whether a median completion latency shows a standing queue against ``reference``
    (None: the rule does not apply), and the evidence in words."""
    if not is_reference(reference):
        return None, "no reference latency recorded (the queueing rule needs a capacity search's)"
    base, base_rate = float(reference["completion_latency_ms_p50"]), float(reference["rate_rps"])
    if not (math.isfinite(offered_rps) and offered_rps > base_rate):
        return None, f"offered {offered_rps:.4g}/s, not above the reference's {base_rate:.4g}/s"
    if not math.isfinite(latency_ms):
        return None, "no completion latency of successful work"
    ratio = latency_ms / base
    words = (
        f"median completion latency {_plain(latency_ms)} ms is {ratio:.2g}x"
        if ratio < 10
        else f"median completion latency {_plain(latency_ms)} ms is {ratio:.0f}x"
    )
    words += f" the reference {_plain(base)} ms ({base_rate:.4g}/s, {reference.get('source') or 'recorded'})"
    if ratio < QUEUE_RATIO:
        return False, f"{words}: no standing queue (< {QUEUE_RATIO:g}x)"
    if latency_ms - base < QUEUE_MIN_MS:
        return False, f"{words}: no standing queue ({_plain(latency_ms - base)} ms above, < {QUEUE_MIN_MS:g} ms)"
    return True, f"{words}: a standing queue (>= {QUEUE_RATIO:g}x and >= {QUEUE_MIN_MS:g} ms above)"


def standing_queue(
    latency_ms: float, last_third_ms: float, offered_rps: float, reference: dict | None
) -> tuple[bool | None, str]:
    """Rule 2(d) whole, the one test of a standing queue: the median completion latency shows a
    queue against ``reference`` (``queueing``) and the last third's median still does: a
    cold-start ramp whose latency fell back to the reference's drained its backlog and is not a
    queue. ``decide_mode`` applies it to a phase, a sweep (``experiments.sweep_report``) across its
    points; (None, why) where the rule does not apply."""
    queued, words = queueing(latency_ms, offered_rps, reference)
    if queued and math.isfinite(last_third_ms) and _queue_score(last_third_ms, offered_rps, reference) < 1.0:
        return (
            False,
            f"{words}, but not at the end: the last third's median {ms(last_third_ms, 4)} is not (a ramp that drained, no standing queue)",
        )
    return queued, words


def _plain(value: float) -> str:
    """A number for a sentence: four significant digits, never an exponent (14960, not 1.496e+04)."""
    return f"{value:.0f}" if abs(value) >= 1000 else f"{value:.4g}"


def over_scores(stats: dict, trend: dict, reference: dict | None = None) -> dict[str, float]:
    """How far each over-invoked rule (2(a)–(d)) is from firing: evidence over its threshold, so a
    score >= 1 fires the rule (the smaller of the two ratios where a rule has two conditions).
    ``mode_margin`` is the largest (the phase's ``mode_evidence_over_threshold``, a ratio); a decision is *close* when it lies within ``CLOSE_MARGIN`` of 1
    either way (``is_close``), which the capacity search repeats (``faasprof.experiments.capacity``)."""
    scores: dict[str, float] = {}
    ratio = stats["achieved_over_offered"]
    if math.isfinite(ratio):
        scores["throughput"] = (1.0 - ratio) / (1.0 - OVER_THROUGHPUT_RATIO)
    first, last = trend["first_third_median_ms"], trend["last_third_median_ms"]
    if math.isfinite(first) and math.isfinite(last) and first > 0:
        scores["growth"] = min(last / first / OVER_TREND_RATIO, (last - first) / OVER_TREND_MIN_MS)
    if stats["sent"]:
        scores["rejected"] = stats["rejected"] / stats["sent"] / OVER_REJECT_FRACTION
    queue = _queue_score(
        stats.get("completion_latency_ms_p50", math.nan), stats.get("offered_rps", math.nan), reference
    )
    if math.isfinite(queue):
        # A standing queue still stands at the end of the window: a cold-start ramp whose latency
        # falls back to the reference's (846 → 38 ms) drained its backlog and is not one.
        end = _queue_score(
            trend.get("completion_last_third_median_ms", math.nan), stats.get("offered_rps", math.nan), reference
        )
        scores["queue"] = min(queue, end) if math.isfinite(end) else queue
    return scores


def _queue_score(latency_ms: float, offered_rps: float, reference: dict | None) -> float:
    """Rule 2(d)'s score (``over_scores``) of one median completion latency; NaN where it does not apply."""
    if (
        not is_reference(reference)
        or not math.isfinite(latency_ms)
        or not (math.isfinite(offered_rps) and offered_rps > reference["rate_rps"])
    ):
        return math.nan
    base = float(reference["completion_latency_ms_p50"])
    return min(latency_ms / base / QUEUE_RATIO, (latency_ms - base) / QUEUE_MIN_MS)


def mode_margin(scores: dict[str, float]) -> float:
    """The largest over-invoked score (NaN without any): >= 1 is over-invoked."""
    return max(scores.values()) if scores else math.nan


def is_close(margin: float) -> bool:
    """Whether an over-invoked decision of this margin is close: moving every threshold by
    ``CLOSE_MARGIN`` either way would change it."""
    return math.isfinite(margin) and 1.0 / CLOSE_MARGIN <= margin < CLOSE_MARGIN


def warm_rate_rps(pause_grace_ms: float | None, busy_ms: float | None = None) -> float:
    """The rate above which one sandbox stays warm: the sandbox is free again ``busy_ms`` after a
    call starts (the call's duration), then paused ``pause_grace_ms`` later, so calls closer than
    grace + busy find it unpaused (NaN where the grace is unknown or zero; a busy time unknown
    counts as 0). Below it a function is under-invoked whatever its capacity: the lower edge of the
    balanced band."""
    if not isinstance(pause_grace_ms, (int, float)) or not math.isfinite(pause_grace_ms) or pause_grace_ms <= 0:
        return math.nan
    busy = float(busy_ms) if isinstance(busy_ms, (int, float)) and math.isfinite(busy_ms) and busy_ms > 0 else 0.0
    return 1000.0 / (float(pause_grace_ms) + busy)


def decide_mode(
    stats: dict, trend: dict, reference: dict | None = None, pause_grace_ms: float | None = None
) -> tuple[str, list[str]]:
    """The latency mode and the reasons that decided it (module docstring, rules 1–4); ``reference``
    is the function's reference latency for rule 2(d) (``latency_references``), None without one;
    ``pause_grace_ms``: the platform's, named in an under-invoked verdict below its warm rate."""
    successful = stats["successful"]
    if successful < MIN_SAMPLES_FOR_MODE:
        return "unknown", [f"only {successful} successful invocations (< {MIN_SAMPLES_FOR_MODE})"]
    scores = over_scores(stats, trend, reference)
    reasons = []
    ratio = stats["achieved_over_offered"]
    if scores.get("throughput", 0.0) >= 1.0 and ratio < OVER_THROUGHPUT_RATIO:
        reasons.append(
            f"achieved {fmt(stats['achieved_rps'], 3)}/s is {ratio:.0%} of offered {fmt(stats['offered_rps'], 3)}/s (< {OVER_THROUGHPUT_RATIO:.0%})"
        )
    first, last = trend["first_third_median_ms"], trend["last_third_median_ms"]
    if scores.get("growth", 0.0) >= 1.0:
        reasons.append(
            f"median {trend.get('latency', 'corrected latency')} grew from {ms(first, 4)} (first third) to {ms(last, 4)} (last third)"
        )
    rejected = stats["rejected"]
    if scores.get("rejected", 0.0) >= 1.0:
        kinds = ", ".join(f"{stats[f'final_{name}']} {name}" for name in REJECTED_FINAL if stats.get(f"final_{name}"))
        reasons.append(
            f"{rejected} of {stats['sent']} sent invocations rejected ({kinds}; >= {OVER_REJECT_FRACTION:.0%})"
        )
    queued, queue_words = standing_queue(
        stats.get("completion_latency_ms_p50", math.nan),
        trend.get("completion_last_third_median_ms", math.nan),
        stats.get("offered_rps", math.nan),
        reference,
    )
    if queued:
        reasons.append(queue_words)
    if reasons:
        return "over-invoked", reasons
    with_record = stats["successful_with_record"]
    if with_record == 0:
        return "unknown", ["no activation records of successful work: under-invoked and balanced cannot be told apart"]
    idle = stats["cold_count"] + stats["resumed_count"]
    idle_fraction = idle / with_record
    busy_ms = stats.get("duration_ms_p50")
    warm_rps = warm_rate_rps(pause_grace_ms, busy_ms)
    if idle_fraction >= UNDER_IDLE_FRACTION:
        below = ""
        if math.isfinite(warm_rps) and stats["offered_rps"] < warm_rps:
            holds = pause_grace_ms is not None and warm_rps < 1000.0 / pause_grace_ms
            held = f" and calls hold it {fmt(busy_ms, 3)} ms" if holds else ""
            below = (
                f"; offered {fmt(stats['offered_rps'], 3)}/s is below {fmt(warm_rps, 3)}/s, the rate at which a sandbox paused after "
                f"{pause_grace_ms:g} ms idle stays warm{held}"
            )
        return "under-invoked", [
            f"{idle_fraction:.0%} of {with_record} successful activations started cold or resumed from pause (>= {UNDER_IDLE_FRACTION:.0%}){below}"
        ]
    # The queueing evidence is named only where the rule judged: a run without a reference reads as before.
    queue = f", {queue_words}" if queued is False else ""
    return "balanced", [
        f"achieved/offered {ratio:.0%}, no latency growth, {idle_fraction:.0%} cold or resumed starts (< {UNDER_IDLE_FRACTION:.0%}){queue}"
    ]


def stability_warnings(where: str, stats: dict) -> list[str]:
    """pyperf-style warnings with advice for one instance × phase."""
    out = []
    n = stats["client_latency_ms_n"]
    if 0 < n < FEW_SAMPLES:
        out.append(f"{where}: only {n} latency samples; p99 and above are not reliable: run longer or at a higher rate")
    # The completion latency: a non-blocking call's client latency is the time to its 202, whose
    # spread says nothing of the function's.
    p50, p99 = stats.get("completion_latency_ms_p50"), stats.get("completion_latency_ms_p99")
    if p50 and p99 and math.isfinite(p50) and math.isfinite(p99) and p50 > 0 and p99 / p50 >= WIDE_SPREAD_RATIO:
        out.append(
            f"{where}: wide spread (p99/p50 = {p99 / p50:.1f}); check the start classes (cold starts, resumes) and "
            "host noise (other load, CPU frequency scaling; see faasprof doctor)"
        )
    late99, late_max = stats.get("lateness_ms_p99"), stats.get("lateness_ms_max")
    if (late99 is not None and math.isfinite(late99) and late99 >= LATE_P99_MS) or (
        late_max is not None and math.isfinite(late_max) and late_max >= LATE_MAX_MS
    ):
        out.append(
            f"{where}: the invoker fell behind schedule (lateness p99 {ms(late99)}, max {ms(late_max)}); corrected "
            "latency includes it: lower the rate, or run the invoker on a quieter host or core"
        )
    if stats["failures"]:
        kinds = ", ".join(f"{stats[f'final_{name}']} {name}" for name in FAILURE_OUTCOMES if stats.get(f"final_{name}"))
        out.append(
            f"{where}: {stats['failures']} of {stats['planned']} invocations did not succeed ({kinds}); they are counted apart and kept out of the latency figures"
        )
    if stats["missing_records"]:
        out.append(
            f"{where}: {stats['missing_records']} activation records missing; breakdown and start classes cover only "
            f"{stats['with_record']} invocations: re-run faasprof analyze later with the platform's --apihost/--auth"
        )
    return out
