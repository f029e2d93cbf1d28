"""The capacity search's step-and-bisect logic, against a modelled platform of known capacity."""

from __future__ import annotations

import pytest

from faasprof.experiments.capacity import Probe, probe_from_summary, probe_workload, search
from faasprof.errors import ConfigError


def modelled(capacity, calls):
    def probe(rate, reference):
        calls.append(rate)
        mode = "over-invoked" if rate > capacity else ("under-invoked" if rate < 5 else "balanced")
        return Probe(rate, mode, run_dir=f"runs/p{len(calls)}", achieved_rps=min(rate, capacity))

    return probe


def test_steps_then_bisects_to_the_tolerance():
    calls = []
    result = search(modelled(66.0, calls), start_rate=1, max_rate=1000, factor=2, tolerance=0.05, max_runs=20)
    assert calls[:8] == [1, 2, 4, 8, 16, 32, 64, 128]
    low, high = result["bounds_rps"]
    assert low <= 66.0 < high and high / low - 1 <= 0.05
    assert result["capacity_rps"] == low and result["mode_at_capacity"] == "balanced"
    assert [p["rate_rps"] for p in result["probes"]] == calls
    assert result["stopped_because"] == "bracketed within 5%"


def test_reports_limits_honestly():
    result = search(modelled(1e9, []), start_rate=10, max_rate=40, factor=2)
    assert result["capacity_rps"] == 40 and "at least" in result["stopped_because"]
    assert result["capacity_is_lower_bound"] is True and result["bounds_rps"] == [40, None]
    # Out of probes while every rate kept up: a lower bound too, not "bracketed".
    result = search(modelled(1e9, []), start_rate=1, max_rate=1000, factor=2, max_runs=3)
    assert result["capacity_rps"] == 4 and result["capacity_is_lower_bound"] is True
    assert result["stopped_because"] == "kept up at every rate of --max-runs 3 probes, up to 4/s: the capacity is at least that (raise --max-runs or --start-rate)"
    assert search(modelled(66.0, []), start_rate=1, max_rate=1000, factor=2)["capacity_is_lower_bound"] is False
    result = search(modelled(0.5, []), start_rate=1)
    assert result["capacity_rps"] is None and "already at the start rate" in result["stopped_because"]
    result = search(modelled(66.0, []), start_rate=1, max_runs=9, tolerance=0.01)
    assert "--max-runs 9" in result["stopped_because"]


def test_the_first_probe_that_keeps_up_is_the_reference_of_the_rest():
    given = []

    def probe(rate, reference):
        given.append(reference)
        return Probe(rate, "over-invoked" if rate > 20 else "balanced", run_dir=f"runs/p{rate:g}", p50_ms=13.0 if rate == 5 else 14.0)

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
    assert data["instances"]["probe"] == {"application": "json_dumps", "distribution": "Poisson", "rate": 12.5, "memory_mb": 256, "params": {"n": 1}}
    summary = {"run": {"status": "complete"}, "instances": [{"instance": "probe", "phases": [{"mode": "balanced", "mode_reasons": "a; b", "achieved_rps": 12.4, "client_latency_ms_p50": 3.0, "client_latency_ms_p99": 9.0, "cold_fraction": 0.0, "resumed_fraction": 0.1}]}]}
    probe = probe_from_summary(12.5, "runs/x", summary)
    assert probe.kept_up and probe.reasons == ["a", "b"] and probe.p99_ms == 9.0


def test_probe_lines_read_seconds_as_seconds():
    said = []

    def probe(rate, reference=None):
        slow = rate > 2
        return Probe(rate, "over-invoked" if slow else "balanced", achieved_rps=rate, p50_ms=14970.0 if slow else 13.21, p99_ms=20123.0 if slow else 252.7)

    search(probe, start_rate=2, say=said.append, clock=lambda: 0.0)
    assert "p50 13.21 ms  p99 252.7 ms" in said[0]
    assert "p50 14.97 s  p99 20.12 s" in said[1]
    assert not any("e+" in line for line in said)
