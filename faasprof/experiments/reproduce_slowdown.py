"""Figs 15 and 16 of ``faasprof reproduce`` over measurement rounds: each round's median one sample.

A round is one ``faasprof slowdown`` pass (``faasprof.experiments.slowdown.run_slowdown``): a new
platform and, per function, a new native worker, native and FaaS warm calls alternating. The calls
of one round share its worker process and its moment of the host (one interpreter process can run
10–30 % slower than another for its whole life on a shared VM), so they are no independent draws
of the slowdown: a round is. Per function and round the native median and the FaaS warm median of
the measure (execution, or latency where the records' resolution gives no execution factor) are
one sample each, and the factor FaaS / native is stated by ``faasprof.analyzer.run_stats``'
``figure_effect``, the one run-level comparison of compare, sweep and interference: the ratio of the
rounds' geometric means with its 95 % Welch interval, "slower"/"faster" only when the interval
excludes no change and the factor is at least 5 % off 1, else "no significant difference", and
"no verdict" from one round. That verdict is the function's note, so Fig 15's verdict and the
notes beside it are read from the same numbers (``reproduce_rules.contradiction``).

Fig 16's exponent is fitted through the functions' factors (the rounds' geometric means); its
interval is the t-interval of the exponents fitted round by round (each round one sample).

The native baseline is measured the way the FaaS side is (``BASELINE``): warm, the same input,
the same process count; ``baseline_text`` says so in the verdict's reason.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats as scipy_stats

from faasprof.analyzer.run_stats import CONFIDENCE, RunFigure, Scale, figure_effect
from faasprof.experiments.slowdown_measure import Call
from faasprof.experiments.slowdown_report import NOTE_SEPARATOR, fit_power_law

MEASURE_WORDS = {"exec_ms": "execution", "latency_ms": "latency"}


def baseline_text(rounds: int, repeat: int) -> str:
    """How the native baseline was measured, for the verdict's reason."""
    return (
        f"native baseline measured as the FaaS side is: warm (the worker's first call unrecorded, as the sandbox's), "
        f"the same input (the catalogue's sample parameters on both sides), the same process count (one long-lived "
        f"worker per function against one warm sandbox), its {repeat} calls a round alternating with the FaaS warm "
        f"calls; {rounds} round{'s' if rounds != 1 else ''}, each a new worker and a new platform, each round's "
        f"median one sample"
    )


def quick_claims(rounds: int, repeat: int, functions: int) -> str:
    """What a --quick run can and cannot claim (``reproduce --quick``'s Figs 15/16 say it)."""
    return (
        f"--quick: {rounds} rounds of {repeat} calls a side on {functions} functions can call a short function "
        f"slower only when its rounds agree closely (a Welch interval on {rounds} against {rounds} samples is wide); "
        f"it cannot tell a slowdown of a few tens of percent from the rounds' own spread, nor fit Fig 16's power "
        f"law (fewer than 5 functions: indicative at best); the full run measures more rounds and functions"
    )


def _median(values: list[float]) -> float:
    finite = [v for v in values if math.isfinite(v)]
    return float(np.median(finite)) if finite else math.nan


def _geomean(values: list) -> float | None:
    finite = [float(v) for v in values if isinstance(v, (int, float)) and math.isfinite(v) and v > 0]
    return float(math.exp(np.mean(np.log(finite)))) if finite else None


def _used(calls: list[Call], function: str, phase: str) -> list[Call]:
    return [c for c in calls if c.function == function and c.phase == phase and c.counts]


def summarise_rounds(rounds: list[tuple[list[dict], list[Call]]]) -> dict:
    """Per function its factor over the rounds (module docstring), and Fig 16's exponent.

    ``rounds``: per round, ``slowdown.csv``'s rows and ``calls.csv``'s calls."""
    names = list(dict.fromkeys(row["function"] for rows, _ in rounds for row in rows))
    functions = []
    for name in names:
        rows = [row for round_rows, _ in rounds for row in round_rows if row["function"] == name]
        exec_everywhere = all(math.isfinite(row.get("slowdown_exec_warm", math.nan)) for row in rows)
        measure = "exec_ms" if exec_everywhere else "latency_ms"
        word = MEASURE_WORDS[measure]
        native, warm, native_exec, calls = [], [], [], 0
        for _, round_calls in rounds:
            mine = {phase: _used(round_calls, name, phase) for phase in ("native", "warm")}
            calls += len(mine["native"]) + len(mine["warm"])
            native.append(_median([getattr(c, measure) for c in mine["native"]]))
            warm.append(_median([getattr(c, measure) for c in mine["warm"]]))
            native_exec.append(_median([c.exec_ms for c in mine["native"]]))
        effect = figure_effect(RunFigure(measure, f"{word} warm", Scale.RATIO, "slower", "faster"), native, warm)
        low, high = effect.effect_ci or (None, None)
        interval = f" (interval ×{low:.3g}–×{high:.3g})" if low is not None and high is not None else ""
        factor = effect.effect if effect.effect is not None else math.nan
        count = len(effect.values)
        note = (
            f"{word} warm ×{factor:.3g}{interval} over {count} round{'s' if count != 1 else ''}, each round's median "
            f"one sample: {effect.verdict}"
        )
        functions.append(
            {
                "function": name,
                "measure": word,
                "native_ms": _geomean(native_exec) or math.nan,
                "factor": factor,
                "ci_low": low,
                "ci_high": high,
                "verdict": effect.verdict,
                "significant": effect.significant,
                "rounds": len(effect.values),
                "native_round_ms": effect.baseline_values,
                "faas_round_ms": effect.values,
                "n": calls,
                "resumed_factor": _geomean([row.get("slowdown_exec_resumed") for row in rows]),
                "cpu_factor": _geomean([row.get("slowdown_cpu_warm") for row in rows]),
                "notes": note,
                "notes_on_each_rounds_calls": NOTE_SEPARATOR.join(
                    str(row.get("notes") or "") for row in rows if row.get("notes")
                ),
            }
        )
    fitted = [f["function"] for f in functions if f["measure"] == "execution"]
    return {"functions": functions, "exponent": exponent_over_rounds(rounds, functions, fitted), "fitted": fitted}


def exponent_over_rounds(
    rounds: list[tuple[list[dict], list[Call]]], functions: list[dict], fitted: list[str]
) -> tuple[float, float, float]:
    """Fig 16's exponent and its interval: from two rounds with a fit on, the mean of the exponents
    fitted round by round and their t-interval; below that, the fit through the functions' factors
    with NaN ends."""
    points = [f for f in functions if f["function"] in fitted]
    whole = fit_power_law([f["native_ms"] for f in points], [f["factor"] for f in points])
    estimate = whole["exponent"] if whole else math.nan
    per_round = []
    for _, calls in rounds:
        x, y = [], []
        for name in fitted:
            native = _median([c.exec_ms for c in _used(calls, name, "native")])
            warm = _median([c.exec_ms for c in _used(calls, name, "warm")])
            x.append(native)
            y.append(warm / native if native > 0 else math.nan)
        fit = fit_power_law(x, y)
        if fit:
            per_round.append(fit["exponent"])
    if len(per_round) < 2 or not math.isfinite(estimate):
        return (estimate, math.nan, math.nan)
    values = np.asarray(per_round)
    half = (
        float(scipy_stats.t.ppf(0.5 + CONFIDENCE / 2, len(values) - 1))
        * float(values.std(ddof=1))
        / math.sqrt(len(values))
    )
    center = float(values.mean())  # the rounds' mean exponent: the interval's center, so the two agree
    return (center, center - half, center + half)
