"""The band placement before a run uses what keeps a sandbox warm on this platform (the pause grace
*and* how long a call holds its sandbox, by arrival process), and every band line is true of its
own numbers."""

from __future__ import annotations

import math
import re

import pytest

from faasprof.analyzer import stats
from faasprof.experiments import capacity_store
from faasprof.workload.spec import workload_from_dict


def _workload(fraction: float, band: str, window=(0, 15), distribution: str = "Uniform"):
    return workload_from_dict(
        {
            "test_name": "bands",
            "test_duration_in_seconds": window[1],
            "random_seed": 1,
            "instances": {
                "x": {
                    "application": "json_dumps",
                    "distribution": distribution,
                    "rate": {"capacity_fraction": fraction, "band": band},
                    "activity_window": list(window),
                }
            },
        },
        origin="bands",
    )


def test_the_warm_rate_counts_the_time_a_call_holds_its_sandbox():
    """13 to 15/s came out balanced at a 50 ms grace, below the 20/s of 1000 / grace: a 13 ms call
    frees its sandbox 13 ms after it starts, and the grace runs from there."""
    assert capacity_store.warm_rate_model(50.0, 13.0) == pytest.approx(1000.0 / 63.0)
    assert capacity_store.warm_rate_model(50.0, None) == 20.0
    assert capacity_store.warm_rate_model(50.0, 13.0, "Poisson") == pytest.approx(math.log(2) * 1000.0 / 63.0)
    assert stats.warm_rate_rps(50.0, 13.0) == pytest.approx(1000.0 / 63.0) and stats.warm_rate_rps(50.0) == 20.0
    capacities = {"x": {"capacity_rps": 30.0, "interval_rps": [28.0, 32.0], "sandbox_busy_ms": 13.0}}
    _, lines = capacity_store.band_lines(_workload(0.5, "balanced"), capacities, 50.0)
    assert "under-invoked below 15.9/s, pause grace 50 ms + 13 ms a call holds its sandbox" in lines[0]


def test_an_under_invoked_phase_moved_for_calls_does_not_say_it_was_outside_its_band():
    """'1.5/s, outside the under-invoked band (under-invoked below 20/s)' contradicted itself."""
    capacities = {"x": {"capacity_rps": 30.0, "interval_rps": [28.0, 32.0]}}
    _, (line,) = capacity_store.band_lines(_workload(0.05, "under-invoked"), capacities, 50.0)
    assert "outside the under-invoked band" not in line
    assert "0.05 × 30/s = 1.5/s, 20 calls in the phase's 13 s steady window, too few for a mode (needs 30)" in line


@pytest.mark.parametrize("band", ["under-invoked", "balanced", "over-invoked"])
@pytest.mark.parametrize("fraction", [0.02, 0.05, 0.2, 0.5, 0.8, 1.0, 1.5, 3.0])
@pytest.mark.parametrize("capacity", [11.4, 24.3, 30.0, 72.9, 145.0])
def test_every_band_line_is_true_of_its_own_numbers(band, fraction, capacity):
    capacities = {
        "x": {"capacity_rps": capacity, "interval_rps": [capacity * 0.93, capacity * 1.07], "sandbox_busy_ms": 13.0}
    }
    _, (line,) = capacity_store.band_lines(_workload(fraction, band), capacities, 50.0)
    warm = capacity_store.warm_rate_model(50.0, 13.0)
    kept, over = capacity * 0.93, capacity * 1.07
    rate = fraction * capacity
    outside = re.search(r"outside the ([a-z-]+) band", line)
    if outside:  # the rate it names lies outside that band by the line's own edges
        assert capacity_store.band_of(rate, warm, kept, over) != outside.group(1), line
    placed = re.search(r"placed at ([0-9.e+]+)/s, in the (.+?) band of", line)
    final = float(placed.group(1)) if placed else rate
    named = re.search(r", in the ([a-z -]+?) band of json_dumps", line).group(1)
    assert named == capacity_store.band_of(final, warm, kept, over) or named.startswith("between")
    under_edge = float(re.search(r"under-invoked below ([0-9.]+)/s", line).group(1))
    assert under_edge == pytest.approx(warm, rel=0.01)


def test_a_balanced_phase_without_margins_is_not_left_on_the_warm_edge():
    """Ten quick starts on the busy host: capacity 26 ± 9.5/s (kept up at 16.6/s), calls holding their
    sandbox 27.5 ms, so a warm rate of 12.9/s; the balanced phase at 0.5 × 26 = 13/s sat on that
    edge and read under-invoked once (its calls held their sandbox 25 ms: 13.3/s). With no rate
    holding both margins it goes to the middle of the warm rate and the highest rate kept up."""
    warm = capacity_store.warm_rate_model(50.0, 27.5)
    placed = capacity_store.place_in_band("balanced", 13.0, warm, 16.57, 35.51, 13.0)
    assert placed == pytest.approx(math.sqrt(warm * 16.57)) and placed > 14.0
    assert capacity_store.place_in_band("balanced", 15.5, warm, 16.57, 35.51, 13.0) == 15.5  # past the middle: kept
