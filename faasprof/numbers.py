"""Numbers as the run side says and divides them: ``ratio`` (NaN where a quotient has no value)
and ``number_text`` (a figure in a progress or summary line, ``-`` where there is none).

One definition each, for the commands and the experiments that once kept their own copies."""

from __future__ import annotations

import math


def ratio(numerator: float, denominator: float, scale: float = 1.0, *, positive: bool = False) -> float:
    """``scale * numerator / denominator``; NaN when either is not finite or the denominator is 0,
    and with ``positive`` (a factor between two durations) unless both are above 0."""
    if not (math.isfinite(numerator) and math.isfinite(denominator)) or denominator == 0:
        return math.nan
    if positive and not (numerator > 0 and denominator > 0):
        return math.nan
    return scale * numerator / denominator


def number_text(value: object, digits: int = 3) -> str:
    """``value`` to ``digits`` significant digits, or ``-`` for a missing or non-finite one."""
    if not isinstance(value, (int, float)) or not math.isfinite(value):
        return "-"
    return f"{value:.{digits}g}"


__all__ = ["number_text", "ratio"]
