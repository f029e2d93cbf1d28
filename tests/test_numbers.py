"""faasprof.numbers: the one ratio and the one number text the run side uses."""

from __future__ import annotations

import math

from faasprof.numbers import number_text, ratio


def test_a_ratio_without_a_value_is_nan_and_a_factor_needs_two_positive_durations():
    assert ratio(3.0, 2.0) == 1.5 and ratio(3.0, 2.0, 1000.0) == 1500.0
    assert ratio(0.0, 2.0) == 0.0  # no misses in many instructions: a rate of 0
    assert all(math.isnan(ratio(n, d)) for n, d in ((1.0, 0.0), (math.nan, 1.0), (1.0, math.inf)))
    assert math.isnan(ratio(0.0, 2.0, positive=True)) and math.isnan(ratio(-1.0, -2.0, positive=True))
    assert ratio(4.0, 2.0, positive=True) == 2.0


def test_a_number_text_is_dash_where_there_is_no_number():
    assert number_text(1234.5678) == "1.23e+03" and number_text(1234.5678, 4) == "1235"
    assert [number_text(v) for v in (None, math.nan, math.inf, "7")] == ["-"] * 4
    assert number_text(2) == "2"
