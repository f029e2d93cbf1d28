"""The run is the sample: an effect between two sides of repeated runs, with its interval over runs.

The invocations of one run share the host's load, the pool's state and the platform's queue, so
they are no independent draws of anything but that run; the variation that decides whether two
workloads differ is the one from run to run. Each run therefore gives ONE value per figure of an
instance × phase (``RUN_FIGURES``: its steady window's completion p50, p90, p99, its achieved rate,
its cold-start share), and a side is the list of its runs' values.

The method (docs/statistics.md says why): for the latencies and the achieved rate, a Welch
t-interval on the difference of the sides' mean log values, at ``CONFIDENCE``; its exponent is the
ratio of the sides' geometric means, run / baseline, and its interval. For the cold-start share, a
share that is often 0, the same interval on the difference of the plain means, in percentage points.
A figure is called different (``slower``/``faster``, ``higher``/``lower``, ``more cold``/``fewer cold``)
only when its interval excludes no change AND the effect is at least the smallest effect that
matters (``DEFAULT_MIN_EFFECT``: 5 % of a ratio; ``DEFAULT_MIN_COLD_POINTS``: 2 points of a share);
otherwise ``no significant difference``. With fewer than two runs on a side the run-to-run
variation is unknown: the figures and their ratio are given with ``ONE_RUN_NOTE`` and ``NO_VERDICT``.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import asdict, dataclass, field
from enum import Enum

import numpy as np
from scipy import stats as scipy_stats

CONFIDENCE = 0.95
DEFAULT_MIN_EFFECT = 0.05  # a ratio within ×0.95..×1.05 is no effect worth a word


def add_min_effect_argument(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """``--min-effect``, as every command that states a difference over runs takes it."""
    parser.add_argument(
        "--min-effect",
        type=float,
        default=DEFAULT_MIN_EFFECT,
        metavar="FRACTION",
        help=f"the smallest effect called slower/faster (default {DEFAULT_MIN_EFFECT:g}: 5 %%)",
    )


DEFAULT_MIN_COLD_POINTS = 0.02  # a cold share 2 points apart
SUGGESTED_REPEATS = 5
ONE_RUN_NOTE = f"one run each: run-to-run variation unknown; repeat with --repeats {SUGGESTED_REPEATS}"
NO_DIFFERENCE = "no significant difference"
NO_VERDICT = "no verdict"
ONE_RUN_ON_A_SIDE = f"one run on a side: run-to-run variation unknown; repeat with --repeats {SUGGESTED_REPEATS}"


class Scale(Enum):
    """How a figure's effect is stated: a ratio of geometric means, or a difference of shares."""

    RATIO = "ratio"
    POINTS = "points"


@dataclass(frozen=True)
class RunFigure:
    """A per-run figure of an instance × phase: its column in the compare frame, its words."""

    column: str
    name: str
    scale: Scale
    up: str  # the verdict when the run side's value is the larger
    down: str


RUN_FIGURES = (
    RunFigure("completion_latency_ms_p50", "completion p50", Scale.RATIO, "slower", "faster"),
    RunFigure("completion_latency_ms_p90", "completion p90", Scale.RATIO, "slower", "faster"),
    RunFigure("completion_latency_ms_p99", "completion p99", Scale.RATIO, "slower", "faster"),
    RunFigure("achieved_rps", "achieved rate", Scale.RATIO, "higher", "lower"),
    RunFigure("cold_fraction", "cold-start share", Scale.POINTS, "more cold", "fewer cold"),
)


@dataclass
class FigureEffect:
    """One figure's effect, side against baseline: the runs' values, the effect and its interval
    (a ratio for ``Scale.RATIO``, a difference in shares for ``Scale.POINTS``), and the verdict."""

    figure: str
    name: str
    scale: str
    baseline_values: list[float]
    values: list[float]
    baseline_center: float | None  # the geometric mean (ratio) or mean (points) of the side's runs
    center: float | None
    effect: float | None  # run / baseline, or run − baseline
    effect_ci: list[float] | None  # None with fewer than two runs on a side
    verdict: str  # slower, faster, higher, lower, more cold, fewer cold, NO_DIFFERENCE, NO_VERDICT, or why none
    significant: bool = False


@dataclass
class SideEffect:
    """One side against the baseline side on one instance × phase, every ``RUN_FIGURES`` entry."""

    side: str
    baseline: str
    instance: str
    phase: int
    function: str | None
    n_runs_baseline: int
    n_runs: int
    figures: list[FigureEffect] = field(default_factory=list)
    note: str | None = None

    def to_json(self) -> dict:
        return asdict(self)


def _finite(values: list) -> np.ndarray:
    array = np.array([v for v in values if v is not None], dtype="float64")
    return array[np.isfinite(array)]


def welch_interval(a: np.ndarray, b: np.ndarray, confidence: float = CONFIDENCE) -> tuple[float, float, float]:
    """mean(b) − mean(a) and its Welch t-interval (unequal variances, Welch–Satterthwaite degrees
    of freedom); both sides need two values. With no spread on either side the interval is the point."""
    diff = float(b.mean() - a.mean())
    va, vb = float(a.var(ddof=1)) / len(a), float(b.var(ddof=1)) / len(b)
    se = math.sqrt(va + vb)
    if se == 0:
        return diff, diff, diff
    df = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
    half = float(scipy_stats.t.ppf(0.5 + confidence / 2, df)) * se
    return diff, diff - half, diff + half


def figure_effect(
    figure: RunFigure,
    baseline: list,
    run: list,
    min_effect: float = DEFAULT_MIN_EFFECT,
    min_cold_points: float = DEFAULT_MIN_COLD_POINTS,
) -> FigureEffect:
    """The effect of ``figure`` between two sides' per-run values (module docstring)."""
    a, b = _finite(baseline), _finite(run)
    entry = FigureEffect(
        figure=figure.column,
        name=figure.name,
        scale=figure.scale.value,
        baseline_values=[float(v) for v in a],
        values=[float(v) for v in b],
        baseline_center=None,
        center=None,
        effect=None,
        effect_ci=None,
        verdict="no value",
    )
    if not len(a) or not len(b):
        entry.verdict = "no value on a side"
        return entry
    if figure.scale is Scale.RATIO:
        if (a <= 0).any() or (b <= 0).any():
            entry.verdict = "a run's value is 0: no ratio"
            return entry
        a, b = np.log(a), np.log(b)
    entry.baseline_center, entry.center = _center(figure, a), _center(figure, b)
    if min(len(a), len(b)) < 2:
        entry.effect = _effect(figure, float(b.mean() - a.mean()))
        entry.verdict = NO_VERDICT
        return entry
    diff, low, high = welch_interval(a, b)
    entry.effect = _effect(figure, diff)
    entry.effect_ci = [_effect(figure, low), _effect(figure, high)]
    smallest = math.log1p(min_effect) if figure.scale is Scale.RATIO else min_cold_points
    excludes_no_change = low > 0 or high < 0
    entry.significant = excludes_no_change and abs(diff) >= smallest
    entry.verdict = (figure.up if diff > 0 else figure.down) if entry.significant else NO_DIFFERENCE
    return entry


def _center(figure: RunFigure, values: np.ndarray) -> float:
    return float(math.exp(values.mean())) if figure.scale is Scale.RATIO else float(values.mean())


def _effect(figure: RunFigure, diff: float) -> float:
    return math.exp(diff) if figure.scale is Scale.RATIO else diff


def side_effects(
    sides: dict[str, list[dict]],
    min_effect: float = DEFAULT_MIN_EFFECT,
    min_cold_points: float = DEFAULT_MIN_COLD_POINTS,
) -> list[SideEffect]:
    """Every side after the first against the first, per instance × phase both have.

    ``sides``: side name → its runs' compare rows (``faasprof.analyzer.compare.phase_rows``: one per
    run × instance × phase), in order, the baseline first."""
    names = list(sides)
    if len(names) < 2:
        return []
    base = _by_key(sides[names[0]])
    out = []
    for name in names[1:]:
        mine = _by_key(sides[name])
        for key in sorted(set(base) & set(mine), key=lambda k: (k[1], k[0])):
            a_rows, b_rows = base[key], mine[key]
            effect = SideEffect(
                side=name,
                baseline=names[0],
                instance=key[0],
                phase=key[1],
                function=b_rows[0].get("function"),
                n_runs_baseline=len(a_rows),
                n_runs=len(b_rows),
            )
            for figure in RUN_FIGURES:
                effect.figures.append(
                    figure_effect(
                        figure,
                        [r.get(figure.column) for r in a_rows],
                        [r.get(figure.column) for r in b_rows],
                        min_effect,
                        min_cold_points,
                    )
                )
            if len(a_rows) == len(b_rows) == 1:
                effect.note = ONE_RUN_NOTE
            elif min(len(a_rows), len(b_rows)) < 2:
                effect.note = ONE_RUN_ON_A_SIDE
            out.append(effect)
    return out


def _by_key(rows: list[dict]) -> dict[tuple[str, int], list[dict]]:
    out: dict[tuple[str, int], list[dict]] = {}
    for row in rows:
        out.setdefault((str(row["instance"]), int(row["phase"])), []).append(row)
    return out


def format_value(figure: dict, value: float | None) -> str:
    """A per-run figure (a ``FigureEffect`` as JSON) with its unit: 12.3 ms, 45/s, 3 %, or a counter's 1.23."""
    if value is None or not math.isfinite(value):
        return "–"
    if "_ms_p" in figure["figure"]:
        return f"{_plain(value)} ms"
    if figure["figure"] == "achieved_rps":
        return f"{_plain(value)}/s"
    if figure["scale"] == Scale.RATIO.value:  # a counter's value (interference): its own unit, in its name
        return _plain(value)
    return f"{100 * value:.3g} %"


def _plain(value: float) -> str:
    """Three significant digits, without an exponent for the thousands a latency or a counter reaches."""
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3g}"


def format_effect(figure: dict) -> str:
    """The effect and its interval: ×1.24 (interval ×1.12–×1.37), or +3.1 points (interval +0.5–+5.7)."""
    effect, interval = figure.get("effect"), figure.get("effect_ci")
    if effect is None:
        return "–"
    if figure["scale"] == Scale.RATIO.value:
        return f"×{effect:.3g}" + (f" (interval ×{interval[0]:.3g}–×{interval[1]:.3g})" if interval else "")
    return f"{100 * effect:+.2g} points" + (
        f" (interval {100 * interval[0]:+.2g}–{100 * interval[1]:+.2g})" if interval else ""
    )


def effect_lines(effects: list[dict], min_effect: float = DEFAULT_MIN_EFFECT) -> list[str]:
    """The run-level comparison (``SideEffect``s as JSON) as text for the terminal: a line per
    side × instance × phase, then a line per figure."""
    if not effects:
        return []
    lines = [
        f"run-level comparison (each run's figure is one sample; {CONFIDENCE:.0%} Welch interval over runs; "
        f"a difference is called only when its interval excludes no change and it is at least {min_effect:.0%}) "
        f"against {effects[0]['baseline']}:"
    ]
    for effect in effects:
        function = f" ({effect['function']})" if effect.get("function") else ""
        note = f"; {effect['note']}" if effect.get("note") else ""
        lines.append(
            f"  {effect['side']}, {effect['instance']} phase {effect['phase']}{function}: "
            f"{effect['n_runs']} runs against {effect['n_runs_baseline']}{note}"
        )
        for figure in effect["figures"]:
            lines.append(
                f"    {figure['name']:<17} {format_value(figure, figure['baseline_center']):>9} → "
                f"{format_value(figure, figure['center']):>9}  {format_effect(figure)}  {figure['verdict']}"
            )
    return lines
