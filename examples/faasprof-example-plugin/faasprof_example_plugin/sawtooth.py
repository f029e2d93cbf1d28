"""The ``Sawtooth`` arrival process: a rate that climbs linearly from ``sawtooth_low_rps`` to
``sawtooth_high_rps`` over each ``sawtooth_period_s`` of the activity window, then drops back.

Deterministic (the seed is not used): the k-th invocation falls where the integral of the rate
from the window start reaches k - 1/2, so a window plans the integral's worth, rounded.
"""

from __future__ import annotations

import math

import numpy as np

from faasprof.workload.arrivals import Distribution


def sawtooth_count(low_rps: float, high_rps: float, period_s: float, length_s: float) -> int:
    """How many instants a window of ``length_s`` seconds holds: the rate's integral, rounded."""
    whole, part_s = divmod(length_s, period_s)
    per_period = (low_rps + high_rps) / 2.0 * period_s  # invocations in one whole period
    total = whole * per_period + low_rps * part_s + (high_rps - low_rps) * part_s**2 / (2.0 * period_s)
    return int(math.floor(total + 0.5))


def sawtooth_times(low_rps: float, high_rps: float, period_s: float, start_s: float, end_s: float) -> np.ndarray:
    """The instants in ``[start_s, end_s)`` (see the module docstring)."""
    per_period = (low_rps + high_rps) / 2.0 * period_s
    if per_period <= 0 or not end_s > start_s:
        return np.empty(0)
    targets = np.arange(sawtooth_count(low_rps, high_rps, period_s, end_s - start_s)) + 0.5
    periods, remainder = np.divmod(targets, per_period)
    # Within a period the integral is low·τ + (high - low)·τ²/(2·period): solve it for τ.
    a = (high_rps - low_rps) / (2.0 * period_s)
    if a == 0:
        tau = remainder / low_rps
    else:
        tau = (-low_rps + np.sqrt(low_rps**2 + 4.0 * a * remainder)) / (2.0 * a)
    times = start_s + periods * period_s + tau
    return times[(times >= start_s) & (times < end_s)]


class Sawtooth(Distribution):
    """A rate ramp that repeats each period; its three keys are checked by the schema below and by ``problems``."""

    name = "Sawtooth"
    keys = ("sawtooth_low_rps", "sawtooth_high_rps", "sawtooth_period_s")
    required = ("sawtooth_high_rps", "sawtooth_period_s")
    keys_fix = 'remove it or set distribution to "Sawtooth"'
    key_schemas = {
        "sawtooth_low_rps": {
            "type": "number",
            "minimum": 0,
            "default": 0,
            "description": "Sawtooth only: the rate at the start of each period (invocations per second).",
        },
        "sawtooth_high_rps": {
            "type": "number",
            "exclusiveMinimum": 0,
            "description": "Sawtooth only: the rate reached at the end of each period.",
        },
        "sawtooth_period_s": {
            "type": "number",
            "exclusiveMinimum": 0,
            "description": "Sawtooth only: the length of one ramp, in seconds.",
        },
    }

    def problems(self, spec: dict) -> list[tuple[str, str]]:
        low, high = spec.get("sawtooth_low_rps", 0), spec.get("sawtooth_high_rps")
        if isinstance(low, (int, float)) and isinstance(high, (int, float)) and low > high:
            return [("sawtooth_low_rps", f"must not exceed sawtooth_high_rps ({high}); lower it or swap the two")]
        return []

    @staticmethod
    def _settings(instance) -> tuple[float, float, float]:
        keys = instance.arrival_keys
        return (
            float(keys.get("sawtooth_low_rps", 0.0)),
            float(keys["sawtooth_high_rps"]),
            float(keys["sawtooth_period_s"]),
        )

    def arrivals(self, instance, rng, start_s, end_s):
        return sawtooth_times(*self._settings(instance), start_s, end_s)

    def expected_count(self, instance):
        if not math.isfinite(instance.window_length_s):
            return 0.0  # no test duration yet: nothing to count
        return float(sawtooth_count(*self._settings(instance), instance.window_length_s))

    def driving_field(self, instance):
        return "sawtooth_high_rps", "lower sawtooth_high_rps or shorten the activity window"

    def scale(self, spec, factor):
        spec["sawtooth_high_rps"] = spec["sawtooth_high_rps"] * factor
        if "sawtooth_low_rps" in spec:
            spec["sawtooth_low_rps"] = spec["sawtooth_low_rps"] * factor
