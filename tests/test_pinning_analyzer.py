"""Pinning the analyzer's rules at their boundaries, so that a changed threshold, a reordered rule
or a changed rounding fails a test.

* The latency-mode verdict (``faasprof.analyzer.stats.decide_mode``) just below and at every threshold, and
  its rule order; the "≥ 5 % rejected" rule end to end through ``group_stats`` for every final
  outcome it counts (and the ones it does not).
* The resumed-start rule: the idle gap is measured from the *latest* end of the earlier
  activations, not from the previous one's end; exactly the pause grace is idle enough.
* Billing: GB-s as recorded (memory × duration, GiB), 1 ms and 100 ms granularity round *up*,
  with at least one unit.
* Percentile confidence intervals: the order-statistic ranks of the module docstring.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from test_analyzer_synthetic import record

from faasprof import rundir
from faasprof.analyzer import frames as frames_mod
from faasprof.analyzer import start_classes as start_classes_mod
from faasprof.analyzer import stats as stats_mod
from faasprof.analyzer.records import flatten_record
from faasprof.outcomes import FAILURE_OUTCOMES, FINAL_OUTCOMES

# --------------------------------------------------------------------------------------------
# the verdict, on synthetic evidence


def evidence(**overrides):
    """Phase statistics that decide ``balanced``, each field far from its threshold."""
    stats = {
        "successful": 100,
        "sent": 100,
        "achieved_rps": 10.0,
        "offered_rps": 10.0,
        "achieved_over_offered": 1.0,
        "rejected": 0,
        "successful_with_record": 100,
        "cold_count": 1,
        "resumed_count": 9,
        **{f"final_{name}": 0 for name in FINAL_OUTCOMES},
    }
    stats.update(overrides)
    return stats


def flat(first=10.0, last=10.0):
    return {"first_third_median_ms": first, "last_third_median_ms": last}


def mode(stats=None, trend=None):
    return stats_mod.decide_mode(stats or evidence(), trend or flat())[0]


def test_the_thresholds_are_the_documented_ones():
    # The docstring and MODE_RULE state these numbers; the tests below sit on each side of them.
    assert (stats_mod.MIN_SAMPLES_FOR_MODE, stats_mod.OVER_THROUGHPUT_RATIO, stats_mod.OVER_TREND_RATIO) == (
        20,
        0.9,
        2.0,
    )
    assert (stats_mod.OVER_TREND_MIN_MS, stats_mod.OVER_REJECT_FRACTION, stats_mod.UNDER_IDLE_FRACTION) == (
        25.0,
        0.05,
        0.5,
    )
    assert (
        "< 20 successful" in stats_mod.MODE_RULE and ">= 5%" in stats_mod.MODE_RULE and ">= 50%" in stats_mod.MODE_RULE
    )
    assert (stats_mod.QUEUE_RATIO, stats_mod.QUEUE_MIN_MS) == (
        2.0,
        25.0,
    ) and ">= 2.0x and >= 25.0 ms above the reference's" in stats_mod.MODE_RULE


def test_baseline_evidence_is_balanced():
    verdict, reasons = stats_mod.decide_mode(evidence(), flat())
    assert verdict == "balanced"
    assert reasons == ["achieved/offered 100%, no latency growth, 10% cold or resumed starts (< 50%)"]


def test_rule_1_needs_twenty_successful_invocations():
    assert stats_mod.decide_mode(evidence(successful=19), flat()) == (
        "unknown",
        ["only 19 successful invocations (< 20)"],
    )
    assert mode(evidence(successful=20)) == "balanced"


def test_rule_2a_throughput_ratio_strictly_below_ninety_percent():
    assert mode(evidence(achieved_over_offered=0.9, achieved_rps=9.0)) == "balanced"
    verdict, reasons = stats_mod.decide_mode(evidence(achieved_over_offered=0.8999, achieved_rps=8.999), flat())
    assert verdict == "over-invoked"
    assert reasons == ["achieved 9/s is 90% of offered 10/s (< 90%)"]
    assert mode(evidence(achieved_over_offered=math.nan)) == "balanced"  # no throughput evidence: not a verdict


@pytest.mark.parametrize(
    "first, last, expected",
    [
        (100.0, 199.99, "balanced"),  # +99.99 ms but under 2x
        (100.0, 200.0, "over-invoked"),  # exactly 2x and far above 25 ms
        (20.0, 44.99, "balanced"),  # 2.25x but only 24.99 ms more
        (20.0, 45.0, "over-invoked"),  # 2.25x and exactly 25 ms more
        (10.0, 30.0, "balanced"),  # 3x but 20 ms
        (math.nan, 1000.0, "balanced"),  # no first third: no trend
    ],
)
def test_rule_2b_latency_growth_needs_both_twice_and_25ms(first, last, expected):
    assert mode(trend=flat(first, last)) == expected


def test_rule_2b_reason_names_the_latency():
    trend = {**flat(20.0, 45.0), "latency": "platform latency"}
    assert stats_mod.decide_mode(evidence(), trend)[1] == [
        "median platform latency grew from 20 ms (first third) to 45 ms (last third)"
    ]
    assert stats_mod.decide_mode(evidence(), flat(20.0, 45.0))[1] == [
        "median corrected latency grew from 20 ms (first third) to 45 ms (last third)"
    ]


def test_mode_evidence_is_readable_at_any_size():
    """Seconds of latency and thousands per second read as such, never as 1.497e+04 ms or 1.2e+03/s."""
    stats = evidence(achieved_rps=1234.0, offered_rps=2000.0, achieved_over_offered=0.617)
    reasons = stats_mod.decide_mode(stats, flat(13.2, 14970.0))[1]
    assert reasons == [
        "achieved 1,234/s is 62% of offered 2,000/s (< 90%)",
        "median corrected latency grew from 13.2 ms (first third) to 14.97 s (last third)",
    ]
    late = stats_mod.stability_warnings(
        "f phase 0",
        {
            "client_latency_ms_n": 0,
            "lateness_ms_p99": 14970.0,
            "lateness_ms_max": 20123.0,
            "failures": 0,
            "missing_records": 0,
        },
    )
    assert late[0].startswith("f phase 0: the invoker fell behind schedule (lateness p99 15 s, max 20.1 s)")
    assert not any("e+" in text for text in reasons + late)


def test_rule_2b_reason_reads_seconds_never_an_exponent():
    # An over-invoked queue's waits reach seconds: "1.566e+04 ms" made the evidence unreadable.
    assert stats_mod.decide_mode(evidence(), flat(5089.0, 15660.0))[1] == [
        "median corrected latency grew from 5.089 s (first third) to 15.66 s (last third)"
    ]


def test_rule_2c_five_percent_of_sent_rejected():
    assert mode(evidence(rejected=4, final_throttled=4)) == "balanced"
    verdict, reasons = stats_mod.decide_mode(evidence(rejected=5, final_action_timeout=3, final_throttled=2), flat())
    assert verdict == "over-invoked"
    assert reasons == ["5 of 100 sent invocations rejected (2 throttled, 3 action_timeout; >= 5%)"]
    assert mode(evidence(sent=0, rejected=0)) == "balanced"
    assert mode(evidence(sent=80, rejected=4)) == "over-invoked"  # 5 % of what was sent, not planned


def test_rule_3_half_the_successful_records_cold_or_resumed():
    verdict, reasons = stats_mod.decide_mode(evidence(cold_count=10, resumed_count=40), flat())
    assert verdict == "under-invoked"
    assert reasons == ["50% of 100 successful activations started cold or resumed from pause (>= 50%)"]
    assert mode(evidence(cold_count=10, resumed_count=39)) == "balanced"
    assert mode(evidence(cold_count=50, resumed_count=0)) == "under-invoked"  # cold counts as idle too
    # The denominator is the successful activations with a record, not all records.
    assert mode(evidence(successful_with_record=60, cold_count=0, resumed_count=30)) == "under-invoked"


def test_rule_4_without_records_of_successful_work_is_unknown():
    verdict, reasons = stats_mod.decide_mode(evidence(successful_with_record=0, cold_count=0, resumed_count=0), flat())
    assert verdict == "unknown" and "no activation records of successful work" in reasons[0]


# The quick start's search of issue 27: 13 ms at 45/s, then 252 ms at 135/s with throughput kept
# and no growth through the phase (a queue that stands still).
REFERENCE = {"completion_latency_ms_p50": 13.0, "rate_rps": 45.0, "source": "capacity probe p1"}


def queued(latency_ms, offered_rps=135.0, reference=REFERENCE):
    return stats_mod.decide_mode(
        evidence(completion_latency_ms_p50=latency_ms, offered_rps=offered_rps, achieved_rps=offered_rps),
        flat(latency_ms, latency_ms),
        reference,
    )


def test_rule_2d_a_standing_queue_is_over_invoked():
    verdict, reasons = queued(252.0)
    assert verdict == "over-invoked"
    assert reasons == [
        "median completion latency 252 ms is 19x the reference 13 ms (45/s, capacity probe p1): a standing queue (>= 2x and >= 25 ms above)"
    ]
    # A long queue reads as a plain number, never an exponent.
    assert queued(14960.0)[1][0].startswith("median completion latency 14960 ms is 1151x the reference 13 ms")


def test_rule_2d_flat_latency_is_balanced_and_says_against_what():
    verdict, reasons = queued(14.0)
    assert verdict == "balanced"
    assert reasons[0].endswith(
        ", median completion latency 14 ms is 1.1x the reference 13 ms (45/s, capacity probe p1): no standing queue (< 2x)"
    )
    assert queued(30.0)[1][0].endswith(
        "is 2.3x the reference 13 ms (45/s, capacity probe p1): no standing queue (17 ms above, < 25 ms)"
    )


@pytest.mark.parametrize(
    "reference_ms, latency_ms, expected",
    [
        (30.0, 59.99, "balanced"),  # 25 ms above but under 2x
        (30.0, 60.0, "over-invoked"),  # exactly 2x and 30 ms above
        (10.0, 34.99, "balanced"),  # 3.5x but only 24.99 ms above
        (10.0, 35.0, "over-invoked"),  # exactly 25 ms above
    ],
)
def test_rule_2d_needs_both_twice_and_25ms(reference_ms, latency_ms, expected):
    assert queued(latency_ms, reference={**REFERENCE, "completion_latency_ms_p50": reference_ms})[0] == expected


def test_rule_2d_applies_only_above_the_reference_rate_and_with_a_reference():
    assert queued(252.0, offered_rps=45.0)[0] == "balanced"  # the reference's own rate: no queue to show
    assert queued(252.0, reference=None) == stats_mod.decide_mode(
        evidence(completion_latency_ms_p50=252.0, offered_rps=135.0, achieved_rps=135.0), flat(252.0, 252.0)
    )
    assert queued(252.0, reference=None)[0] == "balanced"
    assert (
        queued(252.0, reference={"completion_latency_ms_p50": None, "rate_rps": 45.0})[0] == "balanced"
    )  # not a usable reference


def test_latency_references_from_a_probe_and_from_a_capacity_fraction():
    base = {
        "format_version": 2,
        "workload": {
            "instances": {"mid": {"function": "json_dumps"}, "other": {"function": "nbody"}},
            "as_given": {"capacity_resolution": {"mid": {"capacity_rps": 90, "latency_reference": REFERENCE}}},
        },
    }
    assert stats_mod.latency_references(rundir.Manifest.from_json(base)) == {"json_dumps": REFERENCE}
    probe = {**base, "latency_reference": {"nbody": {**REFERENCE, "source": "capacity probe p9"}}}
    assert stats_mod.latency_references(rundir.Manifest.from_json(probe)) == {
        "json_dumps": REFERENCE,
        "nbody": {**REFERENCE, "source": "capacity probe p9"},
    }


def test_rule_order():
    overloaded_and_idle = evidence(achieved_over_offered=0.5, achieved_rps=5.0, cold_count=0, resumed_count=100)
    assert mode(overloaded_and_idle) == "over-invoked"  # rule 2 before rule 3
    assert mode(evidence(successful=19, achieved_over_offered=0.1, achieved_rps=1.0)) == "unknown"  # rule 1 first
    # Rule 2 fires even without records; rule 4's unknown only applies after it.
    assert mode(evidence(successful_with_record=0, rejected=50, final_failed=50)) == "over-invoked"
    # Every firing part of rule 2 is reported.
    verdict, reasons = stats_mod.decide_mode(
        evidence(achieved_over_offered=0.5, achieved_rps=5.0, rejected=10, final_timeout=10), flat(10.0, 100.0)
    )
    assert verdict == "over-invoked" and len(reasons) == 3


# --------------------------------------------------------------------------------------------
# rule 2(c) end to end: group_stats counts what decide_mode judges


def phase_rows(n: int, final: dict[int, str]) -> pd.DataFrame:
    """``n`` invocations of one steady phase (the frame columns group_stats reads); row k has the
    final outcome ``final.get(k, "success")`` and a record unless that is a no-record outcome."""
    outcomes = [final.get(k, "success") for k in range(n)]
    http = {
        "success": "ok",
        "application_error": "ok",
        "developer_error": "ok",
        "internal_error": "ok",
        "action_timeout": "ok",
        "no_record": "ok",
    }
    has_record = np.array(
        [o in ("success", "application_error", "developer_error", "internal_error", "action_timeout") for o in outcomes]
    )
    latency = np.full(n, 10.0)
    return pd.DataFrame(
        {
            "outcome": pd.Categorical([http.get(o, o) for o in outcomes]),
            "final_outcome": pd.Categorical(outcomes, categories=FINAL_OUTCOMES),
            "successful": np.array([o == "success" for o in outcomes]),
            "has_activation_id": np.array([o not in ("throttled", "failed", "not_sent") for o in outcomes]),
            "has_record": has_record,
            "intended_s": np.linspace(0.0, 9.9, n),
            "client_latency_ms": latency,
            "corrected_latency_ms": latency,
            "platform_latency_ms": np.where(has_record, latency, np.nan),
            "completion_latency_ms": latency,
            "lateness_ms": np.zeros(n),
            **{
                c: np.where(has_record, 1.0, np.nan)
                for c in (
                    "wait_ms",
                    "init_ms",
                    "execution_ms",
                    "duration_ms",
                    "overhead_ms",
                    "gb_s",
                    "gb_s_1ms",
                    "gb_s_100ms",
                    "memory_mb",
                )
            },
            "start_class": pd.Categorical(np.where(has_record, "warm", "unknown"), categories=frames_mod.START_CLASSES),
        }
    )


@pytest.mark.parametrize("kind", stats_mod.REJECTED_FINAL)
def test_each_rejected_outcome_counts_towards_five_percent(kind):
    done_s = np.linspace(0.0, 9.9, 100)
    four = stats_mod.group_stats(phase_rows(100, {k: kind for k in range(4)}), 0.0, 10.0, done_s)
    five = stats_mod.group_stats(phase_rows(100, {k: kind for k in range(5)}), 0.0, 10.0, done_s)
    assert four["rejected"] == 4 and five["rejected"] == 5 and five[f"final_{kind}"] == 5
    assert stats_mod.decide_mode(four, flat())[0] == "balanced"
    assert stats_mod.decide_mode(five, flat())[0] == "over-invoked"


@pytest.mark.parametrize("kind", ["application_error", "no_record"])
def test_application_errors_and_missing_records_do_not_make_a_phase_over_invoked(kind):
    stats = stats_mod.group_stats(phase_rows(100, {k: kind for k in range(30)}), 0.0, 10.0, np.linspace(0.0, 9.9, 100))
    assert stats["rejected"] == 0 and stats["failures"] == 30 and stats["successful"] == 70
    assert stats_mod.decide_mode(stats, flat())[0] == "balanced"


def test_group_stats_counts_every_final_outcome_and_only_successes_as_latency():
    final = dict(enumerate(FAILURE_OUTCOMES))
    rows = phase_rows(40, final)
    rows.loc[: len(final) - 1, ["client_latency_ms", "corrected_latency_ms", "completion_latency_ms"]] = 5000.0
    stats = stats_mod.group_stats(rows, 0.0, 10.0, None)
    assert {name: stats[f"final_{name}"] for name in FINAL_OUTCOMES} == {
        **{name: 1 for name in FAILURE_OUTCOMES},
        "success": 40 - len(FAILURE_OUTCOMES),
    }
    assert stats["failures"] == len(FAILURE_OUTCOMES) and stats["successful"] == 40 - len(FAILURE_OUTCOMES)
    assert stats["rejected"] == len(stats_mod.REJECTED_FINAL)
    assert stats["client_latency_ms_max"] == 10.0 and stats["client_latency_ms_n"] == stats["successful"]
    assert (
        stats["failure_completion_latency_ms_n"] == len(FAILURE_OUTCOMES)
        and stats["failure_completion_latency_ms_p50"] == 5000.0
    )
    assert stats["successful_with_record"] == stats["successful"]
    assert stats["with_record"] == stats["successful"] + 4  # four failed outcomes carry a record


# --------------------------------------------------------------------------------------------
# start classes: the resumed rule


def test_resumed_gap_is_measured_from_the_latest_end_not_the_previous():
    # a0 runs long (0..1000); a1 starts later but ends first (10..500); a2 starts at 1040.
    # The previous activation (a1) ended 540 ms before a2, but a0 was busy until 1000: only 40 ms
    # idle, below the 50 ms grace: a container was warm, a2 is not a resume.
    function = np.array(["a", "a", "a"], dtype=object)
    start = np.array([0.0, 10.0, 1040.0])
    end = np.array([1000.0, 500.0, 1100.0])
    init = np.full(3, np.nan)
    assert frames_mod.classify_starts(function, start, end, init, grace_ms=50.0).tolist() == ["warm", "warm", "warm"]
    start[2] = 1050.0  # exactly the grace after the latest end: paused, so resumed
    assert frames_mod.classify_starts(function, start, end, init, grace_ms=50.0).tolist() == ["warm", "warm", "resumed"]
    start[2] = 1049.999
    assert frames_mod.classify_starts(function, start, end, init, grace_ms=50.0)[2] == "warm"


def test_resumed_rule_is_per_action_and_input_order_free():
    function = np.array(["b", "a", "a", "b"], dtype=object)
    start = np.array([200.0, 300.0, 0.0, 0.0])
    end = np.array([210.0, 310.0, 100.0, 190.0])
    init = np.full(4, np.nan)
    # a: 0..100 then 300 (200 idle: resumed); b: 0..190 then 200 (10 idle: warm).
    assert frames_mod.classify_starts(function, start, end, init, grace_ms=50.0).tolist() == [
        "warm",
        "resumed",
        "warm",
        "warm",
    ]


def test_container_state_overrides_and_init_time_means_cold():
    function = np.array(["a", "a", "a"], dtype=object)
    start, end = np.array([0.0, 500.0, 1000.0]), np.array([10.0, 510.0, 1010.0])
    init = np.array([np.nan, 3.0, np.nan])
    states = np.array([None, None, "warm"], dtype=object)
    assert frames_mod.classify_starts(function, start, end, init, 50.0, states).tolist() == ["warm", "cold", "warm"]
    states = np.array(["prewarmed", "resumed", "recreated"], dtype=object)
    assert frames_mod.classify_starts(function, start, end, init, 50.0, states).tolist() == ["cold", "resumed", "cold"]


# --------------------------------------------------------------------------------------------
# billing


def _frame_for_durations(durations_ms, memory_mb=256):
    raws = [
        record(f"{k:032x}", "fn", 1_790_000_000_000 + 1000 * k, 1, 0, d, memory_mb=memory_mb)
        for k, d in enumerate(durations_ms)
    ]
    for raw, d in zip(raws, durations_ms):
        raw["duration"] = d  # as recorded, fractional or zero included
    records = frames_mod.records_frame([flatten_record(r) for r in raws])
    invocations = pd.DataFrame(
        {
            "seq": np.arange(len(raws)),
            "instance": pd.Categorical(["i0"] * len(raws)),
            "function": pd.Categorical(["fn"] * len(raws)),
            "intended_ns": pd.array([k * 10**9 for k in range(len(raws))], dtype="Int64"),
            "sent_ns": pd.array([k * 10**9 + 1 for k in range(len(raws))], dtype="Int64"),
            "done_ns": pd.array([k * 10**9 + 2 for k in range(len(raws))], dtype="Int64"),
            "outcome": pd.Categorical(["ok"] * len(raws)),
            "http_status": pd.array([202] * len(raws), dtype="Int64"),
            "activation_id": [r["activationId"] for r in raws],
            "error": [""] * len(raws),
        }
    )
    return frames_mod.build_invocation_frame(
        invocations, records, rundir.new_manifest("t", {}, rundir.ClockAnchor(0, 1_790_000_000_000_000_000))
    )


def test_gb_seconds_as_recorded_and_rounded_up():
    frame = _frame_for_durations([1234.0, 101.0, 149.0, 100.0, 0.4, 0.0, 1.2])
    # 256 MB = 0.25 GiB.
    assert frame["gb_s"].tolist() == pytest.approx([0.3085, 0.02525, 0.03725, 0.025, 0.0001, 0.0, 0.0003])
    assert frame["gb_s_100ms"].tolist() == pytest.approx([0.325, 0.05, 0.05, 0.025, 0.025, 0.025, 0.025])
    assert frame["gb_s_1ms"].tolist() == pytest.approx([0.3085, 0.02525, 0.03725, 0.025, 0.00025, 0.00025, 0.0005])
    totals = frames_mod.cost_totals(frame)
    assert totals["gb_s"] == pytest.approx(sum([0.3085, 0.02525, 0.03725, 0.025, 0.0001, 0.0, 0.0003]))
    assert totals["gb_s_100ms"] == pytest.approx(0.525)


def test_gb_seconds_use_the_recorded_memory_in_gib():
    frame = _frame_for_durations([1000.0], memory_mb=1024)
    assert frame["gb_s"].tolist() == [1.0]
    frame = _frame_for_durations([1000.0], memory_mb=128)
    assert frame["gb_s"].tolist() == [0.125] and frame["memory_mb"].tolist() == [128.0]


# --------------------------------------------------------------------------------------------
# percentiles


def test_quantile_ci_ranks_follow_the_order_statistic_formula():
    data = np.arange(1.0, 101.0)  # the k-th smallest sample is k
    estimate, low, high = stats_mod.quantile_ci(data, 0.5)
    # np = 50, 1.96·√(np(1−p)) = 9.8: ranks ⌊40.2⌋ = 40 and ⌈59.8⌉ + 1 = 61.
    assert (estimate, low, high) == (50.5, 40.0, 61.0)
    estimate, low, high = stats_mod.quantile_ci(data, 0.9)
    # np = 90, 1.96·3 = 5.88: ranks 84 and 97.
    assert (estimate, low, high) == (pytest.approx(90.1), 84.0, 97.0)
    estimate, low, high = stats_mod.quantile_ci(data, 0.99)
    # np = 99, 1.96·√0.99 = 1.95: ranks 97 and 102 (> n: no upper bound).
    assert low == 97.0 and math.isnan(high)
    assert stats_mod.quantile_ci(np.array([]), 0.5)[0] != stats_mod.quantile_ci(np.array([]), 0.5)[0]  # NaN
    assert stats_mod.quantile_ci(np.array([7.0]), 0.5)[0] == 7.0


def test_percentile_block_ignores_non_finite_values():
    block = stats_mod.percentile_block(np.array([3.0, np.nan, 1.0, 2.0, np.inf]), "x")
    assert block["x_n"] == 3 and block["x_mean"] == 2.0 and block["x_p50"] == 2.0 and block["x_max"] == 3.0
    assert set(block) >= {"x_p99_9", "x_p99_9_ci_low", "x_p99_9_ci_high"}


@pytest.mark.parametrize("n", [1, 2, 3, 7, 100, 1001, 20_000])
def test_percentiles_from_partitioned_samples_are_those_of_the_sorted_samples(n):
    values = np.random.default_rng(n).lognormal(1.0, 1.5, n)
    values[5::13] = np.nan
    block = stats_mod.percentile_block(values, "x")
    data = np.sort(values[np.isfinite(values)])
    for pct in stats_mod.PERCENTILES:
        tag = f"p{pct:g}".replace(".", "_")
        estimate, low, high = stats_mod.quantile_ci(data, pct / 100.0)
        for key, want in ((tag, estimate), (f"{tag}_ci_low", low), (f"{tag}_ci_high", high)):
            got = block[f"x_{key}"]
            assert got == want or (math.isnan(got) and math.isnan(want)), (key, got, want)
    assert block["x_max"] == data[-1] and block["x_n"] == len(data)
    assert block["x_mean"] == pytest.approx(data.mean(), rel=1e-12)


# --------------------------------------------------------------------------------------------
# phases and the latency trend (rule 2(b)'s evidence)


def test_phases_cut_at_every_window_edge_with_a_bounded_warm_up():
    specs = [
        {"instance": "a", "window_s": (0.0, 30.0)},
        {"instance": "b", "window_s": (10.0, 20.0)},
        {"instance": "c", "window_s": (30.0, 30.0)},
    ]
    cut = stats_mod.phases(specs, 30.0)
    assert [(p["start_s"], p["end_s"], p["instances"]) for p in cut] == [
        (0.0, 10.0, ["a"]),
        (10.0, 20.0, ["a", "b"]),
        (20.0, 30.0, ["a"]),
    ]
    # Warm-up: 20 % of the phase, at most 2 s.
    assert [p["steady_start_s"] - p["start_s"] for p in cut] == pytest.approx([2.0, 2.0, 2.0])
    short = stats_mod.phases([{"instance": "a", "window_s": (0.0, 5.0)}], 5.0)
    assert short == [{"phase": 0, "start_s": 0.0, "end_s": 5.0, "steady_start_s": 1.0, "instances": ["a"]}]
    # A gap with nothing active is no phase, and the phases after it are still cut.
    gap = stats_mod.phases([{"instance": "a", "window_s": (0.0, 1.0)}, {"instance": "b", "window_s": (2.0, 3.0)}], 3.0)
    assert [(p["phase"], p["start_s"], p["end_s"], p["instances"]) for p in gap] == [
        (0, 0.0, 1.0, ["a"]),
        (1, 2.0, 3.0, ["b"]),
    ]
    # Windows past the test's end are cut at it; an edge at exactly 0 or the end adds nothing.
    late = stats_mod.phases([{"instance": "a", "window_s": (0.5, 99.0)}], 4.0)
    assert [(p["start_s"], p["end_s"], p["instances"]) for p in late] == [(0.5, 4.0, ["a"])]


def test_assign_phase_is_half_open_and_minus_one_outside():
    cut = [{"phase": 0, "start_s": 0.0, "end_s": 1.0}, {"phase": 1, "start_s": 2.0, "end_s": 3.0}]
    got = stats_mod.assign_phase(np.array([0.0, 0.999, 1.0, 1.5, 2.0, 3.0, -0.1]), cut)
    assert got.tolist() == [0, 0, -1, -1, 1, -1, -1] and got.dtype == np.int32


def trend_rows(t, latency, successful=None):
    n = len(t)
    return pd.DataFrame(
        {
            "intended_s": np.asarray(t, dtype=float),
            "lat": np.asarray(latency, dtype=float),
            "successful": np.ones(n, bool) if successful is None else np.asarray(successful),
        }
    )


def test_latency_trend_thirds_are_half_open_and_count_only_successes():
    # Window 0..9: first third t < 3, last third t >= 6.
    rows = trend_rows(
        [0, 2.999, 3.0, 5.999, 6.0, 9.0, 8.0],
        [10, 20, 1000, 1000, 30, 50, 999],
        [True, True, True, True, True, True, False],
    )
    trend = stats_mod.latency_trend(rows, 0.0, 9.0, "lat")
    assert trend["first_third_median_ms"] == 15.0 and trend["last_third_median_ms"] == 40.0
    assert trend["last_over_first"] == pytest.approx(40.0 / 15.0)
    assert trend["slope_ms_per_s"] == pytest.approx(
        float(np.polyfit([0, 2.999, 3.0, 5.999, 6.0, 9.0], [10, 20, 1000, 1000, 30, 50], 1)[0])
    )


def test_latency_trend_without_enough_points():
    empty = stats_mod.latency_trend(trend_rows([5.0], [10.0]), 0.0, 9.0, "lat")
    assert (
        math.isnan(empty["first_third_median_ms"])
        and math.isnan(empty["last_third_median_ms"])
        and math.isnan(empty["slope_ms_per_s"])
    )
    assert math.isnan(empty["last_over_first"])
    two = stats_mod.latency_trend(trend_rows([0.0, 8.0], [10.0, 20.0]), 0.0, 9.0, "lat")
    assert math.isnan(two["slope_ms_per_s"])  # a slope needs three points
    three = stats_mod.latency_trend(trend_rows([0.0, 4.0, 8.0], [10.0, 20.0, 30.0]), 0.0, 9.0, "lat")
    assert three["slope_ms_per_s"] == pytest.approx(2.5)
    same_instant = stats_mod.latency_trend(trend_rows([1.0, 1.0, 1.0], [10.0, 20.0, 30.0]), 0.0, 9.0, "lat")
    assert math.isnan(same_instant["slope_ms_per_s"])
    sub_second = stats_mod.latency_trend(trend_rows([0.1, 0.2, 0.3], [10.0, 20.0, 30.0]), 0.0, 0.3, "lat")
    assert sub_second["slope_ms_per_s"] == pytest.approx(100.0)


@pytest.mark.slow
def test_previous_end_per_action_equals_a_pandas_sort_and_grouped_running_maximum():
    def reference(group, start_ms, end_ms):
        frame = pd.DataFrame({"f": group, "s": start_ms, "e": end_ms, "i": np.arange(len(start_ms))}).sort_values(
            ["f", "s", "e"], kind="stable"
        )
        prev_end = frame.groupby("f", sort=False)["e"].cummax().groupby(frame["f"], sort=False).shift(1)
        return frame["i"].to_numpy(), prev_end.to_numpy()

    rng = np.random.default_rng(11)
    for _ in range(200):
        n = int(rng.integers(1, 50))
        codes = rng.integers(0, 4, n)
        start_ms = np.round(rng.uniform(0, 20, n))  # ties on purpose
        end_ms = start_ms + np.round(rng.uniform(0, 10, n))
        end_ms[rng.random(n) < 0.15] = np.nan  # records without an end
        for group in (codes, np.array(["a", "b", "c", "d"], dtype=object)[codes]):
            order, prev_end = start_classes_mod._previous_end_by_group(group, start_ms, end_ms)
            want_order, want_prev_end = reference(group, start_ms, end_ms)
            assert order.tolist() == want_order.tolist()
            np.testing.assert_array_equal(prev_end, want_prev_end)
