"""The latency modes follow the platform's own boundaries: a cold-start ramp is not a backlog, the
pause grace bounds the balanced band, achieved never exceeds offered, close decisions are marked."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from faasprof.analyzer import stats

REFERENCE = {"completion_latency_ms_p50": 38.0, "rate_rps": 1.0, "source": "lowest-rate probe"}


def _stats(**changes) -> dict:
    base = {
        "successful": 300,
        "achieved_rps": 22.8,
        "offered_rps": 22.8,
        "achieved_over_offered": 1.0,
        "sent": 300,
        "rejected": 0,
        "completion_latency_ms_p50": 40.0,
        "successful_with_record": 300,
        "cold_count": 0,
        "resumed_count": 10,
    }
    return {**base, **changes}


def _trend(first: float, last: float, completion_last: float = math.nan) -> dict:
    return {
        "first_third_median_ms": first,
        "last_third_median_ms": last,
        "completion_last_third_median_ms": completion_last,
    }


def test_a_cold_start_ramp_is_not_over_invoked_but_a_standing_queue_is():
    # The quick start's "over-invoked" phase: latency fell from 846 to 38 ms as sandboxes came up;
    # its median sits above twice the reference, yet the queue is gone by the last third.
    ramp = _stats(completion_latency_ms_p50=120.0)
    mode, reasons = stats.decide_mode(ramp, _trend(846.0, 38.0, completion_last=38.0), REFERENCE)
    assert mode == "balanced" and "not at the end" in reasons[0]
    # The same median with the queue still standing at the end is a backlog.
    mode, reasons = stats.decide_mode(ramp, _trend(120.0, 125.0, completion_last=125.0), REFERENCE)
    assert mode == "over-invoked" and "standing queue" in reasons[0]


def test_the_pause_grace_bounds_the_balanced_band():
    assert stats.warm_rate_rps(50.0) == 20.0 and stats.warm_rate_rps(10_000.0) == 0.1
    assert math.isnan(stats.warm_rate_rps(None)) and math.isnan(stats.warm_rate_rps(0))
    sparse = _stats(offered_rps=5.7, achieved_rps=5.7, resumed_count=300)
    mode, reasons = stats.decide_mode(sparse, _trend(40.0, 40.0), None, pause_grace_ms=50.0)
    assert mode == "under-invoked"
    assert "offered 5.7/s is below 20/s, the rate at which a sandbox paused after 50 ms idle stays warm" in reasons[0]
    # Above the warm rate the verdict does not blame the pause grace.
    mode, reasons = stats.decide_mode(_stats(resumed_count=300), _trend(40.0, 40.0), None, pause_grace_ms=50.0)
    assert mode == "under-invoked" and "below" not in reasons[0]


def test_a_decision_near_a_threshold_is_close():
    # 0.88 of offered is over-invoked, but only just: close.
    scores = stats.over_scores(_stats(achieved_over_offered=0.88, achieved_rps=20.0), _trend(40.0, 41.0))
    assert 1.0 <= stats.mode_margin(scores) < stats.CLOSE_MARGIN and stats.is_close(stats.mode_margin(scores))
    # A latency blip of 1.9x the first third: not over-invoked, but close.
    assert stats.is_close(stats.mode_margin(stats.over_scores(_stats(), _trend(36.65, 69.0))))
    # Far from every threshold either way: not close.
    assert not stats.is_close(stats.mode_margin(stats.over_scores(_stats(), _trend(40.0, 41.0))))
    assert not stats.is_close(
        stats.mode_margin(stats.over_scores(_stats(achieved_over_offered=0.3), _trend(40.0, 41.0)))
    )


def _rows(n: int) -> pd.DataFrame:
    nan = np.full(n, np.nan)
    return pd.DataFrame(
        {
            "outcome": pd.Categorical(["success"] * n),
            "final_outcome": pd.Categorical(["success"] * n),
            "successful": np.ones(n, dtype=bool),
            "has_activation_id": np.ones(n, dtype=bool),
            "has_record": np.ones(n, dtype=bool),
            "client_latency_ms": np.full(n, 40.0),
            "corrected_latency_ms": np.full(n, 40.0),
            "platform_latency_ms": np.full(n, 40.0),
            "completion_latency_ms": np.full(n, 40.0),
            "lateness_ms": np.zeros(n),
            "wait_ms": nan,
            "init_ms": nan,
            "execution_ms": nan,
            "duration_ms": nan,
            "overhead_ms": nan,
            "start_class": pd.Categorical(["warm"] * n),
            "gb_s": nan,
            "gb_s_1ms": nan,
            "gb_s_100ms": nan,
            "memory_mb": nan,
        }
    )


def test_achieved_never_exceeds_what_was_offered_in_the_same_window():
    # 10 s window, 228 calls planned in it (22.8/s); 244 ended inside it, 16 of them a warm-up's
    # backlog of cold starts draining: achieved is the window's offer at most.
    done_s = np.concatenate([np.linspace(2.0, 2.5, 16), np.linspace(2.6, 11.9, 228)])
    block = stats.group_stats(_rows(228), 2.0, 12.0, done_s)
    assert block["offered_rps"] == 22.8 and block["achieved_rps"] == 22.8 and block["achieved_over_offered"] == 1.0
    # Fewer ends than calls: achieved is the ends.
    block = stats.group_stats(_rows(228), 2.0, 12.0, done_s[:150])
    assert block["achieved_rps"] == 15.0
    assert "never exceeds offered" in stats.ACHIEVED_RULE
