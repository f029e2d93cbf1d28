"""Interference over repeated runs: the victim's slowdown while the aggressor runs, each run one sample.

``faasprof interference --repeats N`` runs the Figure 14 workload N times into one repeats folder
(``faasprof.experiments.repeat``); each run's ``analysis/interference.json`` holds the victim's
completion p50 and p99 and each measured counter's mean before, during and after the aggressor's
window (``faasprof.experiments.interference.window_effect``). Each run's value of a figure in a
window is ONE sample: the invocations of one run share its host's load, so they say nothing about
how much the next run would differ. The effect of the aggressor (during against before) and the
victim's recovery (after against before) are stated with ``faasprof.analyzer.run_stats``'
``figure_effect``, the one run-level comparison of compare and sweep: the ratio of the windows'
geometric means over the runs with its Welch interval, a verdict only when the interval excludes
no change and the effect is at least the smallest effect (5 %), and no verdict, with
``run_stats.ONE_RUN_NOTE``, from one run.

Result file ``<repeats folder>/interference_repeats.json``; format versions
(``INTERFERENCE_REPEATS_FORMAT_VERSION``): 1: first version (``runs``, ``min_effect``,
``comparisons``: per window against before, ``figures``: ``run_stats.FigureEffect`` as JSON).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from faasprof import __version__, rundir
from faasprof.analyzer.run_stats import (
    CONFIDENCE,
    DEFAULT_MIN_EFFECT,
    ONE_RUN_NOTE,
    RUN_FIGURES,
    RunFigure,
    Scale,
    figure_effect,
    format_effect,
    format_value,
)
from faasprof.errors import FormatError
from faasprof.experiments.interference import RESULT

INTERFERENCE_REPEATS_FORMAT_VERSION = 1
REPEATS_RESULT = "interference_repeats.json"
BASELINE_WINDOW = "before"
COMPARED_WINDOWS = ("during", "after")
# The victim's latency figures a window block holds (interference._latency_block), as compare words them.
LATENCY_FIGURES = tuple(
    f for f in RUN_FIGURES if f.column in ("completion_latency_ms_p50", "completion_latency_ms_p99")
)


@dataclass
class WindowComparison:
    """One window against the one before the aggressor, over the runs: every figure's effect."""

    window: str
    baseline: str
    n_runs: int
    figures: list[dict] = field(default_factory=list)  # run_stats.FigureEffect as JSON
    note: str | None = None


def run_latency(run_dir: Path) -> dict:
    """The ``latency`` block of a run's ``analysis/interference.json`` (one line naming the file when
    it is missing or of a version this faasprof does not read)."""
    path = run_dir / rundir.ANALYSIS / RESULT
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise FormatError(
            f"{path}: cannot be read ({error}); draw it with `faasprof interference --report {run_dir}`"
        ) from None
    if data.get("format_version") != 2:
        raise FormatError(
            f"{path}: format_version {data.get('format_version')!r} is not 2; draw it again with "
            f"`faasprof interference --report {run_dir}`"
        )
    return data.get("latency") or {}


def _figures(latencies: list[dict]) -> list[RunFigure]:
    """The latency figures, then every counter measured in all runs (a ratio, higher or lower)."""
    counters = set.intersection(*(set(block.get("counters") or {}) for block in latencies)) if latencies else set()
    return [*LATENCY_FIGURES, *(RunFigure(c, c, Scale.RATIO, "higher", "lower") for c in sorted(counters))]


def _value(block: dict, figure: RunFigure, window: str) -> float | None:
    if figure in LATENCY_FIGURES:
        return (block.get(window) or {}).get(figure.column)
    return ((block.get("counters") or {}).get(figure.column) or {}).get(window)


def compare_windows(latencies: list[dict], min_effect: float = DEFAULT_MIN_EFFECT) -> list[WindowComparison]:
    """Each of ``COMPARED_WINDOWS`` against ``BASELINE_WINDOW``, each run's window value one sample
    (``latencies``: the runs' ``latency`` blocks, none without an aggressor window)."""
    usable = [block for block in latencies if block.get(BASELINE_WINDOW)]
    figures = _figures(usable)
    out = []
    for window in COMPARED_WINDOWS:
        comparison = WindowComparison(window, BASELINE_WINDOW, len(usable))
        for figure in figures:
            effect = figure_effect(
                figure,
                [_value(block, figure, BASELINE_WINDOW) for block in usable],
                [_value(block, figure, window) for block in usable],
                min_effect,
            )
            comparison.figures.append(asdict(effect))
        comparison.note = ONE_RUN_NOTE if len(usable) < 2 else None
        out.append(comparison)
    return out


def write_result(folder: Path, run_dirs: list[Path], comparisons: list[WindowComparison], min_effect: float) -> Path:
    """``interference_repeats.json`` in the repeats folder (never over an existing one)."""
    path = folder / REPEATS_RESULT
    document = {
        "format_version": INTERFERENCE_REPEATS_FORMAT_VERSION,
        "generated_by": {"faasprof": __version__},
        "runs": [run.name for run in run_dirs],
        "min_effect": min_effect,
        "confidence": CONFIDENCE,
        "comparisons": [asdict(c) for c in comparisons],
    }
    rundir.write_json_atomic(path, document)
    return path


def comparison_lines(victim: str, comparisons: list[WindowComparison], min_effect: float) -> list[str]:
    """The comparisons for the terminal, in compare's words."""
    if not comparisons:
        return []
    n = comparisons[0].n_runs
    lines = [
        f"{victim} with the aggressor, over {n} run{'s' if n != 1 else ''} (each run's window figure is one sample; "
        f"{CONFIDENCE:.0%} Welch interval over runs; a difference is called only when its interval excludes no change "
        f"and it is at least {min_effect:.0%}):"
    ]
    for comparison in comparisons:
        note = f"; {comparison.note}" if comparison.note else ""
        lines.append(f"  {comparison.window} the aggressor against {comparison.baseline} it{note}")
        for figure in comparison.figures:
            lines.append(
                f"    {figure['name']:<26} {format_value(figure, figure['baseline_center']):>9} → "
                f"{format_value(figure, figure['center']):>9}  {format_effect(figure)}  {figure['verdict']}"
            )
    return lines
