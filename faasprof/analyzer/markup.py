"""What faasprof's pages share besides their templates (``faasprof.analyzer.templating``): the
house style sheet and the number formats with units (the templates' filters), which the text and
CSV outputs use too, so that a figure reads the same everywhere.
"""

from __future__ import annotations

import html
import math

STYLE = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:2em auto;max-width:1100px;color:#222;padding:0 1em}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.6em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-size:.85em;margin:.5em 0}td,th{border:1px solid #ccc;padding:3px 7px;text-align:right}
th{background:#f3f3f3}th.grp{text-align:center;font-weight:600;background:#e9ecef}td.l,th.l{text-align:left}.warn{background:#fff3cd;padding:.5em 1em;border-left:4px solid #e0a800}
.fail{background:#f8d7da;padding:.5em 1em;border-left:4px solid #c82333}
.mode-over-invoked{background:#f5c6cb}.mode-under-invoked{background:#fde0b2}.mode-balanced{background:#d4edda}
div.scroll{overflow-x:auto}ul.evidence{font-size:.85em}details.warn summary{cursor:pointer;font-weight:600}details details{margin-left:1em}table.ctx th{width:11em}.def{font-size:.9em}
img{max-width:100%;border:1px solid #eee;margin:.5em 0}code{background:#f5f5f5;padding:0 3px}
"""


def fmt(value, digits: int = 4) -> str:
    """A plain number without exponent notation (10,650, not 1.065e+04); text escaped."""
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if not math.isfinite(value):
            return "–"
        if abs(value) >= 1000:
            return f"{value:,.0f}"
        return f"{value:.{digits}g}" if abs(value) >= 1e-3 or value == 0 else f"{value:.2g}"
    if isinstance(value, int):
        return f"{value:,}" if abs(value) >= 10_000 else str(value)
    return html.escape(str(value))


def ms(value, digits: int = 3) -> str:
    """A duration given in ms, with its unit and ``digits`` significant digits (one less below
    1 ms): 0.71 ms, 41.2 ms, 10.6 s, 2.5 min; never an exponent such as 1.497e+04 ms."""
    if value is None or not isinstance(value, (int, float)) or not math.isfinite(value):
        return "–"
    if abs(value) >= 120_000:
        return f"{fmt(value / 60_000, digits)} min"
    if abs(value) >= 1000:
        return f"{value / 1000:.{digits}g} s"
    if abs(value) >= 1:
        return f"{value:.{digits}g} ms"
    return f"{value:.{digits - 1}g} ms"


def pct(value) -> str:
    """A fraction as a percentage: 0.125 → 12.5 %."""
    if value is None or not isinstance(value, (int, float)) or not math.isfinite(value):
        return "–"
    return f"{100 * value:.3g} %"


def rate(value) -> str:
    """Per second, three digits or whole: 4.5/s, 135/s, 20,000/s."""
    if value is None or not isinstance(value, (int, float)) or not math.isfinite(value):
        return "–"
    return f"{fmt(float(value), 3)}/s"


def ratio(value) -> str:
    """A ratio of two figures as a factor: ×1.64, ×0.8, ×37, ×1,480."""
    if value is None or not isinstance(value, (int, float)) or not math.isfinite(value):
        return "–"
    return f"×{fmt(float(value), 3)}"


def positive(value) -> bool:
    """A finite number above 0 (a factor or a duration that can be divided by or drawn on a log axis)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0


def csv_cell(value, digits: int = 4):
    """A value as a CSV table holds it: floats rounded to ``digits`` decimals, non-finite ones empty."""
    if isinstance(value, float):
        return "" if not math.isfinite(value) else round(value, digits)
    return value


def seconds(value) -> str:
    if value is None or not isinstance(value, (int, float)) or not math.isfinite(value):
        return "–"
    return f"{fmt(float(value), 3)} s"
