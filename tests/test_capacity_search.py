"""The capacity search's step-and-bisect logic, against a modelled platform of known capacity."""

from __future__ import annotations

import pytest

from faasprof.analyzer.stats import WARMUP_FRACTION
from faasprof.analyzer.stats import WARMUP_MAX_S as WARMUP_MAX_S_ANALYZER
from faasprof.errors import ConfigError
from faasprof.experiments.capacity import (
    MIN_PROBE_CALLS,
    WARMUP_MIN_S,
    Probe,
    capacity_text,
    guess_rate,
    interval_of,
    probe_from_summary,
    probe_workload,
    search,
)


def modelled(capacity, calls):
    def probe(rate, reference):
        calls.append(rate)
        mode = "over-invoked" if rate > capacity else ("under-invoked" if rate < 5 else "balanced")
        return Probe(rate, mode, run_dir=f"runs/p{len(calls)}", achieved_rps=min(rate, capacity))

    return probe


def scripted(capacity, verdicts, calls):
    """A platform of ``capacity`` whose first probes at some rates say what ``verdicts`` lists."""

    def probe(rate, reference):
        calls.append(rate)
        queue = verdicts.get(rate)
        mode = queue.pop(0) if queue else ("over-invoked" if rate > capacity else "balanced")
        return Probe(rate, mode, run_dir=f"runs/p{len(calls)}")

    return probe


def test_steps_then_bisects_to_the_tolerance():
    calls = []
    result = search(modelled(66.0, calls), start_rate=1, max_rate=1000, factor=2, tolerance=0.05, max_runs=20)
    assert calls[:8] == [1, 2, 4, 8, 16, 32, 64, 128]
    low, high = result["bounds_rps"]
    # Both ends of the bracket are confirmed last (two agreeing probes each), nothing else repeated.
    assert (
        calls[-2:] == [high, low] and calls.count(low) == calls.count(high) == 2 and len(calls) == len(set(calls)) + 2
    )
    assert low <= 66.0 < high and high / low - 1 <= 0.05
    # The capacity is the middle of the interval between the highest rate kept up and the lowest over-invoked.
    assert (
        result["interval_rps"] == [low, high]
        and result["capacity_rps"] == (low + high) / 2
        and result["mode_at_capacity"] == "balanced"
    )
    assert [p["rate_rps"] for p in result["probes"]] == calls
    assert result["stopped_because"] == "bracketed within 5%"


def test_reports_limits_honestly():
    result = search(modelled(1e9, []), start_rate=10, max_rate=40, factor=2)
    assert result["capacity_rps"] == 40 and "at least" in result["stopped_because"]
    assert result["capacity_is_lower_bound"] is True and result["bounds_rps"] == [40, None]
    # Out of probes while every rate kept up: a lower bound too, not "bracketed".
    result = search(modelled(1e9, []), start_rate=1, max_rate=1000, factor=2, max_runs=3)
    assert result["capacity_rps"] == 4 and result["capacity_is_lower_bound"] is True
    assert (
        result["stopped_because"]
        == "kept up at every rate of --max-runs 3 probes, up to 4/s: the capacity is at least that (raise --max-runs or --start-rate)"
    )
    assert search(modelled(66.0, []), start_rate=1, max_rate=1000, factor=2)["capacity_is_lower_bound"] is False
    result = search(modelled(0.5, []), start_rate=1)
    assert result["capacity_rps"] is None and "already at the start rate" in result["stopped_because"]
    result = search(modelled(66.0, []), start_rate=1, max_runs=9, tolerance=0.01)
    assert "--max-runs 9" in result["stopped_because"]


def test_the_first_probe_that_keeps_up_is_the_reference_of_the_rest():
    given = []

    def probe(rate, reference):
        given.append(reference)
        return Probe(
            rate,
            "over-invoked" if rate > 20 else "balanced",
            run_dir=f"runs/p{rate:g}",
            p50_ms=13.0 if rate == 5 else 14.0,
        )

    result = search(probe, start_rate=5, factor=3, max_rate=100, tolerance=0.5)
    reference = {"completion_latency_ms_p50": 13.0, "rate_rps": 5, "source": "lowest-rate probe p5"}
    assert given[0] is None and len(given) > 2 and all(r == reference for r in given[1:])
    assert result["reference"] == reference


def test_an_incomplete_probe_stops_the_search():
    def probe(rate, reference):
        return Probe(rate, "balanced", status="aborted" if rate >= 8 else "complete")

    result = search(probe, start_rate=2, factor=2)
    assert result["capacity_rps"] == 4 and "ended aborted" in result["stopped_because"]
    assert result["capacity_is_lower_bound"] is True  # nothing above 4/s was seen over-invoked
    assert len(result["probes"]) == 3


def test_bad_search_bounds_are_config_errors():
    with pytest.raises(ConfigError, match="--factor"):
        search(modelled(5, []), factor=1)
    with pytest.raises(ConfigError, match="--start-rate"):
        search(modelled(5, []), start_rate=10, max_rate=5)


def test_probe_workload_and_summary_reading():
    data = probe_workload("json_dumps", 12.5, 5, 256, 3, "Poisson", {"n": 1})
    assert data["instances"]["probe"] == {
        "application": "json_dumps",
        "distribution": "Poisson",
        "rate": 12.5,
        "memory_mb": 256,
        "params": {"n": 1},
        "activity_window": [1.6, 6.6],
    }
    summary = {
        "run": {"status": "complete"},
        "instances": [
            {
                "instance": "probe",
                "phases": [
                    {
                        "mode": "balanced",
                        "mode_reasons": "a; b",
                        "achieved_rps": 12.4,
                        "client_latency_ms_p50": 3.0,
                        "client_latency_ms_p99": 9.0,
                        "cold_fraction": 0.0,
                        "resumed_fraction": 0.1,
                    }
                ],
            }
        ],
    }
    probe = probe_from_summary(12.5, "runs/x", summary)
    assert probe.kept_up and probe.reasons == ["a", "b"] and probe.p99_ms == 9.0


def test_probe_lines_read_seconds_as_seconds():
    said = []

    def probe(rate, reference=None):
        slow = rate > 2
        return Probe(
            rate,
            "over-invoked" if slow else "balanced",
            achieved_rps=rate,
            p50_ms=14970.0 if slow else 13.21,
            p99_ms=20123.0 if slow else 252.7,
        )

    search(probe, start_rate=2, say=said.append, clock=lambda: 0.0)
    assert "p50 13.21 ms  p99 252.7 ms" in said[0]
    assert "p50 14.97 s  p99 20.12 s" in said[1]
    assert not any("e+" in line for line in said)


def test_each_probe_warms_the_pool_at_its_rate_before_a_steady_window_of_enough_calls():
    for rate in (2.0, 5.0, 15.0, 120.0):
        data = probe_workload("json_dumps", rate, 3.0, None, 1, "Uniform", None)
        warm, probe = data["instances"]["warm-up"], data["instances"]["probe"]
        assert warm["rate"] == probe["rate"] == rate and warm["application"] == probe["application"]
        assert (
            warm["activity_window"][0] == 0
            and warm["activity_window"][1] == probe["activity_window"][0] >= WARMUP_MIN_S
        )
        # What the analyzer judges: the probe's phase less its warm-up (stats.phases) holds enough calls.
        start, end = probe["activity_window"]
        steady_start = start + min(WARMUP_MAX_S_ANALYZER, WARMUP_FRACTION * (end - start))
        assert (end - steady_start) * rate >= MIN_PROBE_CALLS - 1e-6
        assert end - start >= 3.0 and data["test_duration_in_seconds"] == end
    summary = {
        "run": {"status": "complete"},
        "instances": [
            {"instance": "warm-up", "phases": [{"mode": "over-invoked"}]},
            {
                "instance": "probe",
                "phases": [
                    {"mode": "balanced", "achieved_rps": 5.0, "mode_evidence_over_threshold": 0.9, "mode_close": True}
                ],
            },
        ],
    }
    probe = probe_from_summary(5.0, "runs/x", summary)
    assert probe.mode == "balanced" and probe.close and probe.margin == 0.9  # the warm-up is never judged


def test_a_doubtful_rate_is_repeated_and_the_majority_decides():
    verdicts = {20.0: ["over-invoked", "balanced", "balanced"]}  # a blip at 20/s, then twice kept up
    calls = []

    def probe(rate, reference):
        calls.append(rate)
        queue = verdicts.get(rate)
        mode = queue.pop(0) if queue else ("over-invoked" if rate > 30 else "balanced")
        return Probe(rate, mode, run_dir=f"runs/p{len(calls)}", close=rate == 20.0)

    result = search(probe, start_rate=20, factor=2, tolerance=0.3, max_runs=6, repeats=2)
    assert calls[:3] == [20.0, 20.0, 20.0]  # over-invoked at the start rate: repeated until two agree
    low, high = result["bounds_rps"]
    assert low >= 20.0 and high > 30.0 and low <= 30.0
    # The bracket's two ends have two agreeing probes each; no other rate is repeated.
    assert calls.count(low) == 2 and calls.count(high) == 2
    assert all(calls.count(rate) == 1 for rate in calls if rate not in (20.0, low, high))
    # Agreement at the first repeat ends the repeats.
    calls.clear()
    verdicts[20.0] = ["balanced", "balanced", "over-invoked"]
    search(probe, start_rate=20, factor=2, tolerance=0.3, max_runs=6, repeats=2)
    assert calls.count(20.0) <= 2


def test_a_lucky_probe_at_the_step_does_not_place_the_bracket():
    """The bimodal searches of issue 34: one probe kept up at the 5→15/s step where the platform
    serves 13/s (another job paused for 3 s); the search stepped on and bracketed 15–17/s, far
    from a repeat's 11–13/s. Confirming the bracket's low end finds 15/s over-invoked, and the
    search moves down; the interval spans the lucky probe and the capacity."""
    lucky = {15.0: ["balanced"]}
    calls = []

    result = search(scripted(13.0, lucky, calls), start_rate=5, factor=3, tolerance=0.3, max_runs=8)
    low, high = result["bounds_rps"]
    assert low <= 13.0 < high <= 15.0  # before: 15-17.2/s
    lowest, highest = result["interval_rps"]
    assert lowest <= 13.0 <= highest == 15.0  # widened to the lucky probe, not beyond
    assert calls.count(15.0) == 3  # kept up once, over-invoked twice
    assert result["split_rates_rps"] == {"15": [1, 3]}


def test_without_repeats_nothing_is_confirmed_again():
    calls = []
    search(modelled(66.0, calls), start_rate=1, max_rate=1000, factor=2, tolerance=0.05, max_runs=20, repeats=0)
    assert len(calls) == len(set(calls))


def test_the_capacity_is_stated_with_its_interval_and_the_load_during_the_search():
    def probe(rate, reference):
        return Probe(rate, "over-invoked" if rate > 60 else "balanced", run_dir="runs/p")

    loads = iter([0.5, 1.0, 3.5, 2.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0])
    result = search(probe, start_rate=40, factor=2, tolerance=0.3, max_runs=6, load=lambda: (next(loads), 0.0, 0.0))
    low, high = result["interval_rps"]
    assert low <= 60 < high
    assert result["capacity_rps"] == pytest.approx((low + high) / 2) and result["plus_minus_rps"] == pytest.approx(
        (high - low) / 2
    )
    n = len(result["probes"])
    assert result["capacity_text"] == f"{(low + high) / 2:.3g} ± {(high - low) / 2:.2g}/s, {n} probes"
    assert result["load_1min"]["before"] == 0.5 and result["load_1min"]["peak"] == 3.5
    # Probes that disagree widen the bracket 60-80/s to span them: kept up once at 90/s, over-invoked once at 55/s.
    probes = [
        Probe(50, "balanced"),
        Probe(60, "balanced"),
        Probe(55, "over-invoked"),
        Probe(80, "over-invoked"),
        Probe(90, "balanced"),
        Probe(95, "balanced", status="aborted"),
    ]
    assert interval_of(probes, 60, 80) == (55, 90)
    # Repeats split at one rate (kept up once, over-invoked twice at 15/s): the bracket 13-15/s, not 15-15/s.
    split = [Probe(13.08, "balanced"), Probe(15, "over-invoked"), Probe(15, "balanced"), Probe(15, "over-invoked")]
    assert interval_of(split, 13.08, 15) == (13.08, 15)
    assert capacity_text(40.0, None, 3) == "≥ 40/s (lower bound), 3 probes"


def test_a_transient_over_invoked_verdict_that_ends_the_stepping_is_outvoted():
    # 15/s over-invoked once (another job's burst), then kept up twice: the search steps on.
    first = {15.0: ["over-invoked", "balanced", "balanced"]}
    calls = []

    result = search(scripted(24.0, first, calls), start_rate=5, factor=3, tolerance=0.3, max_runs=8)
    # Bisected below 15/s, then confirming the bracket's high end outvoted the transient: stepped on.
    assert [round(rate, 2) for rate in calls[:5]] == [5, 15.0, 8.66, 11.4, 13.08]
    assert calls.count(15.0) == 3 and 45.0 in calls
    low, high = result["interval_rps"]
    # The transient at 15/s stays in the interval: it spans the disagreement, up to the bracket's over-invoked end.
    assert low == 15.0 and high == result["bounds_rps"][1] and 15.0 < result["bounds_rps"][0] <= 24 < high


def test_the_ladder_jumps_from_the_first_probe_to_the_guess_its_latency_gives():
    """A fresh machine's first run spent 10 probes, 76 s modelled, finding 145/s from 5/s by ×3
    (5, 15, 45, 135, then 405 over-invoked, whose backlog drained for 7 s). From the first probe's
    lone-call latency the ladder jumps near the capacity and steps by √3 from there: 7 probes; the
    bracket, its tolerance and the confirmations are the same rule."""
    calls: list[float] = []

    def probe(rate, reference):
        calls.append(rate)
        mode = "over-invoked" if rate > 145.0 else "balanced"
        return Probe(rate, mode, run_dir=f"runs/p{len(calls)}", p50_ms=1000.0 / 145.0)

    result = search(probe, start_rate=5, factor=3, tolerance=0.3, guess=lambda p: guess_rate(p, cpus=2))
    assert guess_rate(Probe(5.0, "balanced", p50_ms=1000.0 / 145.0), cpus=2) == pytest.approx(0.35 * 290)
    assert calls[:3] == [5, pytest.approx(101.5), pytest.approx(101.5 * 3**0.5)]
    low, high = result["bounds_rps"]
    assert low <= 145.0 < high and high / low - 1 <= 0.3 and len(calls) == 7
    # A guess below factor × the first rate (calls that wait rather than compute) changes nothing.
    calls.clear()
    search(modelled(66.0, calls), start_rate=1, factor=2, tolerance=0.05, max_runs=20, guess=lambda p: 1.5)
    assert calls[:8] == [1, 2, 4, 8, 16, 32, 64, 128]
    # No guess without a kept-up latency.
    assert guess_rate(Probe(5.0, "over-invoked", p50_ms=20.0), cpus=2) is None
    assert guess_rate(Probe(5.0, "balanced"), cpus=2) is None


def test_a_guess_that_overshoots_steps_down_by_the_root_of_the_factor():
    """A busy moment after the first probe: the guess (48.6/s) was over-invoked at a capacity of 45/s;
    the search stepped down from it by √3 (28.1/s) rather than to 15.6/s, the middle of 5 and 48.6."""
    calls: list[float] = []

    def probe(rate, reference):
        calls.append(rate)
        mode = "over-invoked" if rate > 45.0 else "balanced"
        return Probe(rate, mode, run_dir=f"runs/p{len(calls)}", p50_ms=14.39)

    result = search(probe, start_rate=5, factor=3, tolerance=0.3, guess=lambda p: guess_rate(p, cpus=2))
    assert calls[:3] == [5, pytest.approx(48.64, abs=0.01), pytest.approx(48.64 / 3**0.5, abs=0.01)]
    low, high = result["bounds_rps"]
    assert low <= 45.0 < high and high / low - 1 <= 0.3 and len(calls) <= 8


class ProbeClock:
    """A fake clock that each probe moves on by its ``probe_s`` seconds."""

    def __init__(self, probe, probe_s: float) -> None:
        self.now_s, self.probe_s, self.inner = 0.0, probe_s, probe

    def __call__(self) -> float:
        return self.now_s

    def probe(self, rate, reference):
        self.now_s += self.probe_s
        return self.inner(rate, reference)


def test_the_budget_ends_the_refinement_once_the_bracket_stands_and_says_so():
    """The first run's search (issue 43): 8 to 13 probes on a quiet host, so a first run of 83 to
    104 s. With a budget the search starts no probe that would end after it, once a rate kept up
    below one that did not; the interval is then the bracket as it stood."""
    calls: list[float] = []
    clock = ProbeClock(modelled(66.0, calls), probe_s=5.0)
    result = search(clock.probe, start_rate=1, factor=2, tolerance=0.05, max_runs=20, budget_s=60.0, clock=clock)
    assert clock.now_s <= 60.0
    # 1, 2, 4, ..., 128/s stand the bracket (64 kept up, 128 over-invoked) after 8 probes = 40 s; four more fit.
    assert len(calls) == 12
    low, high = result["bounds_rps"]
    assert low <= 66.0 < high
    lowest, highest = result["interval_rps"]
    assert lowest <= 66.0 <= highest
    assert "budget of 60 s was spent after 12 probes" in result["stopped_because"]
    assert "--budget-s 0" in result["stopped_because"]
    # Without a budget the same search goes on to its tolerance.
    calls.clear()
    unbounded = ProbeClock(modelled(66.0, calls), probe_s=5.0)
    result = search(
        unbounded.probe, start_rate=1, factor=2, tolerance=0.05, max_runs=20, budget_s=None, clock=unbounded
    )
    assert len(calls) > 12 and result["stopped_because"] == "bracketed within 5%"


def test_the_budget_never_cuts_the_climb_to_the_first_over_invoked_rate():
    calls: list[float] = []
    clock = ProbeClock(modelled(66.0, calls), probe_s=5.0)
    result = search(clock.probe, start_rate=1, factor=2, tolerance=0.3, max_runs=20, budget_s=10.0, clock=clock)
    assert calls[:8] == [1, 2, 4, 8, 16, 32, 64, 128]  # 40 s, past the budget: no capacity without it
    assert len(calls) == 8 and result["capacity_rps"] is not None and not result["capacity_is_lower_bound"]
    with pytest.raises(ConfigError, match="--budget-s: must be >= 0"):
        search(modelled(66.0, []), budget_s=-1)
