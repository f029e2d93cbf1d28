"""The shape of ``analysis/summary.json``: what ``analysis.build_summary`` writes and ``load_summary``
returns, as TypedDicts, so that mypy checks every reader and writer of it.

The file is JSON, so these are plain dicts at run time (``json.loads`` gives them back as they
were written); the types say which keys each level has and what their values are. Every key, with
its unit, is in docs/analysis.md; a change of shape that an old reader would misread bumps
``SUMMARY_FORMAT_VERSION`` (the history is in ``faasprof.analyzer.analysis``'s docstring).

Rows that are a frame's row (``instances[].phases[]`` are ``phase_stats`` rows, ``functions[]``
are ``function_stats`` rows) are ``StatsRow``: their columns are the statistics of
``faasprof.analyzer.stats`` (a family of keys per latency column: ``<column>_p50``...), named in
docs/analysis.md rather than listed here one by one. The sections written by other modules
(``tail_ratios``, ``chains``, ``hosts``, ``monitors``, ``io``) are typed by what they are at the
top and documented there.
"""

from __future__ import annotations

from typing import Any, TypedDict

SUMMARY_FORMAT_VERSION = 2
SUPPORTED_SUMMARY_VERSIONS = (2,)

# One row of a statistics frame (phase_stats, function_stats) with its columns as keys; a phase's
# ``mode_evidence`` is the one nested value.
StatsRow = dict[str, Any]


class GeneratedBy(TypedDict):
    faasprof: str  # the version that wrote the file


class Phase(TypedDict, total=False):
    """One phase of the run: a stretch where the same instances are active (``stats.phases``)."""

    phase: int
    start_s: float  # seconds after the run's start
    end_s: float  # where the phase ends, or where the run stopped (then planned_end_s is set)
    steady_start_s: float  # the end of the phase's warm-up; the statistics cover steady_start_s..end_s
    instances: list[str]
    planned_end_s: float  # only in a run that stopped inside the phase
    in_warmup: bool  # only for a phase wholly within the run's warm-up: no steady part, no statistics


class Warmup(TypedDict):
    """The run's warm-up (``stats.run_warmup_s``): run, kept, counted, and left out of every figure."""

    warmup_s: float  # 0: none
    invocations: int  # planned before it ends (the frame's warmup column)
    rule: str  # stats.WARMUP_RULE


class Pushback(TypedDict):
    counts: dict[str, int]  # rows per kind of pushback (faasprof.outcomes.PUSHBACK_KINDS); absent kinds left out
    line: str | None  # the line the run printed about it; None when the platform never pushed back


class RunInfo(TypedDict):
    dir: str  # the run directory's name
    test_name: str
    status: str | None  # the manifest's: running, complete, interrupted, aborted
    created_utc: str | None
    manifest_counts: dict[str, int] | None  # the invoker's own counts (planned, sent, failed)
    planned: int  # rows of invocations.csv
    outcomes: dict[str, int]  # rows per HTTP outcome (faasprof.outcomes.HTTP_OUTCOMES); they add up to planned
    final_outcomes: dict[str, int]  # rows per final outcome (FINAL_OUTCOMES), without not_sent_interrupted
    end_s: float | None  # where a run that stopped early stopped (s after its start); None: it ran to the end
    not_sent_interrupted: int  # planned after end_s: never due, neither offered nor failed
    phases: list[Phase]
    pushback: Pushback
    warmup: Warmup


class FailureGroup(TypedDict):
    function: str
    final_outcome: str
    count: int
    completion_latency_ms_p50: float | None
    completion_latency_ms_max: float | None
    example_error: str | None  # the first error text seen (the record's, else the HTTP error)


class Failures(TypedDict):
    total: int  # invocations that did not succeed (not_sent_interrupted left out)
    by_function: list[FailureGroup]  # in FINAL_OUTCOMES order, then most first


class MonitorsInfo(TypedDict, total=False):
    status: str  # none, loaded, error
    names: list[str]  # the monitors loaded (status loaded)
    error: str  # why they could not be loaded (status error)


class RecordsInfoCore(TypedDict):
    source: str  # activations.jsonl, "none", the native run's line, or "platform (<where>)" after a fetch
    unreadable_lines: int
    foreign_ignored: int  # records in the file of other activations (not this run's)


class RecordsInfo(RecordsInfoCore, total=False):
    """What the analysis found of the activation records (``Run.records_info``)."""

    with_activation_id: int  # invocations the platform answered with an activation id
    with_container_state: int  # records with a containerState annotation (localwhisk)
    found: int  # invocations whose record was found
    missing: int  # with an activation id, but no record
    missing_ids_sample: list[str]  # the first MISSING_IDS_IN_SUMMARY of them, sorted
    pause_grace_ms: float
    pause_grace_source: str  # where pause_grace_ms comes from (frames.pause_grace_ms)
    monitors: MonitorsInfo
    fetch: dict[str, Any]  # the platform's fetch report, when records were fetched by this analysis


class StartClasses(TypedDict):
    pause_grace_ms: float | None
    rule: str  # how an invocation's start class is decided, in words
    records_with_container_state: int
    counts: dict[str, int]  # invocations per start class (cold, resumed, warm, unknown), after the run's warm-up
    warmup_left_out: int  # invocations of the run's warm-up, not in counts


class ModeEvidence(TypedDict):
    """A phase's ``mode_evidence``: the figures the mode rule read (``stats.classify``), copied from
    the phase's row under their own names (None where the row has no such figure). Its keys are
    docs/analysis.md's, in the order ``summary.json`` writes them; ``mode_evidence`` builds it."""

    achieved_rps: float | None
    offered_rps: float | None
    achieved_over_offered: float | None
    trend_first_third_median_ms: float | None
    trend_last_third_median_ms: float | None
    trend_slope_ms_per_s: float | None
    trend_latency: str | None  # the latency column the trend is of
    cold_fraction: float | None
    resumed_fraction: float | None
    warm_fraction: float | None
    throttled: int | None
    timeout: int | None
    failed: int | None
    answered: int | None
    successful: int | None
    rejected: int | None
    # final_<outcome> for each outcome of stats.REJECTED_FINAL, in its order
    final_throttled: int | None
    final_timeout: int | None
    final_failed: int | None
    final_action_timeout: int | None
    final_internal_error: int | None
    final_developer_error: int | None
    with_record: int | None
    successful_with_record: int | None
    completion_latency_ms_p50: float | None
    trend_completion_last_third_median_ms: float | None
    reference_latency_ms: float | None
    reference_rate_rps: float | None
    reference_source: str | None
    mode_evidence_over_threshold: float | None
    mode_close: bool | None
    warm_rate_rps: float | None


def mode_evidence(row: StatsRow) -> ModeEvidence:
    """The ``mode_evidence`` of a phase's statistics row."""
    return ModeEvidence(
        achieved_rps=row.get("achieved_rps"),
        offered_rps=row.get("offered_rps"),
        achieved_over_offered=row.get("achieved_over_offered"),
        trend_first_third_median_ms=row.get("trend_first_third_median_ms"),
        trend_last_third_median_ms=row.get("trend_last_third_median_ms"),
        trend_slope_ms_per_s=row.get("trend_slope_ms_per_s"),
        trend_latency=row.get("trend_latency"),
        cold_fraction=row.get("cold_fraction"),
        resumed_fraction=row.get("resumed_fraction"),
        warm_fraction=row.get("warm_fraction"),
        throttled=row.get("throttled"),
        timeout=row.get("timeout"),
        failed=row.get("failed"),
        answered=row.get("answered"),
        successful=row.get("successful"),
        rejected=row.get("rejected"),
        final_throttled=row.get("final_throttled"),
        final_timeout=row.get("final_timeout"),
        final_failed=row.get("final_failed"),
        final_action_timeout=row.get("final_action_timeout"),
        final_internal_error=row.get("final_internal_error"),
        final_developer_error=row.get("final_developer_error"),
        with_record=row.get("with_record"),
        successful_with_record=row.get("successful_with_record"),
        completion_latency_ms_p50=row.get("completion_latency_ms_p50"),
        trend_completion_last_third_median_ms=row.get("trend_completion_last_third_median_ms"),
        reference_latency_ms=row.get("reference_latency_ms"),
        reference_rate_rps=row.get("reference_rate_rps"),
        reference_source=row.get("reference_source"),
        mode_evidence_over_threshold=row.get("mode_evidence_over_threshold"),
        mode_close=row.get("mode_close"),
        warm_rate_rps=row.get("warm_rate_rps"),
    )


class Instance(TypedDict):
    """An instance of the workload (``stats.instance_specs``) with its steady phases' statistics."""

    instance: str
    function: str | None
    distribution: str  # the arrival process, by name
    rate_rps: float | None  # the rate the workload asked for (invocations per second)
    window_s: list[float]  # [start, end] of its activity, seconds after the run's start
    planned: int
    blocking: bool
    phases: list[StatsRow]  # phase_stats rows of this instance, each with its mode_evidence


class Outputs(TypedDict):
    frames: list[str]  # the parquet files in analysis/
    plots: list[str]  # plots/<name>.png
    report: str  # report.html


class SummaryCore(TypedDict):
    format_version: int
    generated_by: GeneratedBy
    run: RunInfo
    failures: Failures
    records: RecordsInfo
    start_classes: StartClasses
    mode_rule: str
    tail_ratios: dict[str, Any]  # {"rule": str, "rows": [...]} (faasprof.analyzer.tails)
    chains: dict[str, Any] | None  # faasprof.analyzer.chains.chain_summary; None without chains
    achieved_rule: str
    instances: list[Instance]
    functions: list[StatsRow]  # function_stats rows
    cost_gb_s: dict[str, float]  # GB-seconds billed at 0.1 ms, 1 ms and 100 ms granularity
    monitors: dict[str, dict[str, Any]]  # per monitor of the local host: rows, columns, means
    hosts: dict[str, Any]  # faasprof.analyzer.hosts.summary
    warnings: list[str]


class Summary(SummaryCore, total=False):
    """``analysis/summary.json``: ``outputs`` is added once the files are written, ``io`` for io-* runs,
    ``trace_fidelity`` for runs of a trace sample, ``host_noise`` where the run measured it."""

    io: dict[str, Any]  # faasprof.analyzer.io_breakdown.summarise
    trace_fidelity: dict[str, Any]  # faasprof.analyzer.trace_fidelity.fidelity_summary
    host_noise: dict[str, Any] | None  # faasprof.monitoring.noise.HostNoise.to_json; None: not measured
    outputs: Outputs
