"""The verdict rules of ``faasprof reproduce``: this host's number for each of the paper's findings,
with its confidence interval, and whether it agrees (pure functions of numbers; nothing here runs or
reads anything).

Every rule returns a :class:`Verdict`: ``reproduced`` or ``not reproduced`` with the reason, the
host's number (``value``, its 95 % interval ``ci_low``/``ci_high``, the sample count ``n``) and the
rows behind it (``details``). "Beyond noise" always means the interval, not the estimate: a
finding is reproduced only when its interval lies on the finding's side of the threshold.

**Minimum numbers.** A finding is "reproduced" only on enough of what it is about: a power law is
fitted through at least ``MIN_FIT_FUNCTIONS`` functions (Fig 16), the cold-start marker of Fig 5
rests on at least ``MIN_COLD_STARTS`` cold starts, Fig 15 on at least ``MIN_SLOWDOWN_FUNCTIONS``
functions. Below them an effect that lies beyond noise is ``indicative``, never reproduced. And a
verdict never contradicts the notes it carries (``contradiction``): a function whose own note says
its factor is "not significant" (or, over rounds, "no significant difference" or "no verdict") is not
slower beyond noise, whatever an interval over calls says (the calls of one process share its
speed: the run, not the call, is the sample). Figs 15/16's factors and exponent come over rounds
(``faasprof.experiments.reproduce_slowdown``), each round's median one sample, and so does Fig 14's
IPC ratio over its runs (``verdict_ratio_over_runs``: each run's median IPC inside the aggressor's
window and outside it one sample each, at least ``MIN_RATIO_RUNS`` runs). A ratio of per-second
samples of one run (Figs 6-7 and 10-11, or Fig 14 with one run) describes that run only: beyond
noise it is ``indicative``, never reproduced.

**The native baseline of Figs 15/16.** The native time is ``perf_counter`` around the function
inside a long-lived worker that is faasprof's own child process; the FaaS time is localwhisk's
``runTimeUs``, the /run call seen from outside the sandbox, so the FaaS span is the longer of the
two and by itself cannot make FaaS faster. What can: the sandboxes run in a cgroup of their own,
which CFS weighs as one entity beside the others, while the native worker competes process by
process with the rest of faasprof's cgroup, and one interpreter process can run 10-30 % slower than
another for its life. So a factor below 1 is stated as that bias with the CPU-time factor beside
it (``cpu_factor``: CPU time, which waiting for a CPU does not lengthen), not as a finding.

Intervals: a median's is the distribution-free order-statistics interval of the analyzer
(``faasprof.experiments.slowdown_report.median_ci``, null below ~8 samples); a ratio of two medians' is a
percentile bootstrap (``ratio_ci``: each side resampled on its own, ``BOOTSTRAP_ROUNDS`` rounds,
seeded, so the same samples give the same interval), for the hardware figures; Figs 15/16's come
over rounds (``reproduce_slowdown``: ``run_stats``' Welch interval, a t-interval of the exponent).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import numpy as np

from faasprof.analyzer.run_stats import RunFigure, Scale, figure_effect
from faasprof.experiments.slowdown_report import median_ci

REPRODUCED = "reproduced"
NOT_REPRODUCED = "not reproduced"
NOT_MEASURABLE = "not measurable here"
# Beyond noise, but on fewer functions, runs or cold starts than the finding needs (module docstring).
INDICATIVE = "indicative"
MIN_FIT_FUNCTIONS = 5  # a power law through fewer points is a line through a handful of dots
MIN_COLD_STARTS = 20  # Fig 5's cold-start marker: a median of fewer is one host moment
MIN_SLOWDOWN_FUNCTIONS = 3  # Fig 15: at least one short and one long function among them
MIN_RATIO_RUNS = 3  # the hardware figures: a ratio judged over at least this many runs, each one sample
# Words in a function's notes (slowdown_report.judge_factor) that deny the effect its factor shows.
# reproduce_slowdown's run-level words are among them: a function's factor judged over rounds.
CONTRADICTING_NOTES = ("not significant", "below resolution", "no significant difference", "no verdict")
BOOTSTRAP_ROUNDS = 2000
BOOTSTRAP_SEED = 29
MIN_BOOTSTRAP_SAMPLES = 3
COLD_START_FACTOR = 10.0  # the paper: a cold start can be over 10× a short function's execution
WAIT_SHARE = 0.5  # over-invoked: waiting is more than half of the platform's time per call
SHORT_NATIVE_MS = 10.0  # "functions under ~10 ms native time"
LONG_NATIVE_MS = 100.0  # long CPU-bound functions: the sandbox's own costs (tens of µs to ms) vanish
# "≈ 1 within noise": a factor's interval reaching into [1/1.25, 1.25]. One interpreter process can
# run 10-30 % slower than another for its whole life on a shared VM (faasprof/experiments/slowdown_report.py).
NOISE_BAND = (0.8, 1.25)


@dataclass
class Verdict:
    verdict: str
    reason: str
    value: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    n: int | None = None
    unit: str = ""
    label: str = ""  # what the value is, in a few words
    details: list[dict] = field(default_factory=list)

    def to_json(self) -> dict:
        return {k: (_clean(v) if isinstance(v, float) else v) for k, v in asdict(self).items()}


def _clean(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else round(float(value), 6)


def _finite(values) -> np.ndarray:
    data = np.asarray([v for v in values if v is not None and math.isfinite(v)], dtype=float)
    return data


def ratio_ci(
    numerator, denominator, rounds: int = BOOTSTRAP_ROUNDS, seed: int = BOOTSTRAP_SEED
) -> tuple[float, float, float]:
    """(median(num) / median(den), bootstrap 2.5 %, 97.5 %); NaN where a side has too few samples."""
    num, den = _finite(numerator), _finite(denominator)
    if len(num) == 0 or len(den) == 0 or np.median(den) <= 0:
        return (math.nan, math.nan, math.nan)
    estimate = float(np.median(num) / np.median(den))
    if min(len(num), len(den)) < MIN_BOOTSTRAP_SAMPLES:
        return (estimate, math.nan, math.nan)
    rng = np.random.default_rng(seed)
    top = np.median(rng.choice(num, size=(rounds, len(num)), replace=True), axis=1)
    bottom = np.median(rng.choice(den, size=(rounds, len(den)), replace=True), axis=1)
    ratios = top[bottom > 0] / bottom[bottom > 0]
    low, high = np.percentile(ratios, [2.5, 97.5])
    return (estimate, float(low), float(high))


def _interval_text(value: float | None, low: float | None, high: float | None, unit: str = "") -> str:
    def f(x):
        return "–" if x is None or not math.isfinite(x) else f"{x:.3g}"

    interval = (
        f" (95 % CI {f(low)}–{f(high)})"
        if low is not None and high is not None and math.isfinite(low) and math.isfinite(high)
        else " (no 95 % CI: too few samples)"
    )
    return f"{f(value)}{unit}{interval}"


# -- Figure 4: the three latency modes ---------------------------------------------------------


def verdict_modes(phases: list[dict]) -> Verdict:
    """The three modes in order of rate: under-invoked at the lowest, balanced at a higher one,
    over-invoked at a higher one still. ``phases``: ``fraction`` (of the capacity measured here),
    ``rate_rps``, ``mode`` (the analyzer's), ``n``, ``p50_ms`` with ``ci_low``/``ci_high``,
    ``reasons``. The order of rates decides, not the capacity: an estimate off by a factor moves
    the fractions, not the modes."""
    if not phases:
        return Verdict(NOT_REPRODUCED, "no phase was analysed", label="modes observed")
    ordered = sorted(phases, key=lambda p: p["rate_rps"])
    seen = ", ".join(f"{p['mode']} at {p['rate_rps']:.3g}/s ({p['fraction']:.2g}×)" for p in ordered)
    modes = [p["mode"] for p in ordered]
    balanced = next((i for i, mode in enumerate(modes) if mode == "balanced" and i > 0), None)
    missing = []
    if modes[0] != "under-invoked":
        missing.append(f"the lowest rate ({ordered[0]['rate_rps']:.3g}/s) is {modes[0]}, not under-invoked")
    if balanced is None:
        middle = ordered[1:-1] or ordered
        hint = ""
        if all(p["mode"] == "under-invoked" for p in middle) and middle[-1].get("pause_grace_ms"):
            # Sandboxes paused between calls at every rate below the over-invoked ones.
            hint = (
                f": up to {middle[-1]['rate_rps']:.3g}/s the calls were further apart than the pause grace "
                f"({middle[-1]['pause_grace_ms']:g} ms) plus the execution ({_plain(middle[-1].get('execution_ms_p50'))} ms)"
            )
        missing.append("no phase above the lowest rate is balanced" + hint)
    elif "over-invoked" not in modes[balanced + 1 :]:
        missing.append(
            f"no phase above the balanced {ordered[balanced]['rate_rps']:.3g}/s is over-invoked (highest rate {ordered[-1]['rate_rps']:.3g}/s)"
        )
    n = sum(int(p.get("n") or 0) for p in ordered)
    found = len(set(modes) & {"under-invoked", "balanced", "over-invoked"})
    reason = "; ".join(missing) + f" (observed: {seen})" if missing else f"all three modes in order of rate: {seen}"
    return Verdict(
        NOT_REPRODUCED if missing else REPRODUCED,
        reason,
        float(found),
        n=n,
        unit=" of 3 modes",
        label="modes observed",
        details=ordered,
    )


def _plain(value) -> str:
    return "–" if value is None or not math.isfinite(value) else f"{value:.3g}"


# -- Figure 5: the breakdown markers -----------------------------------------------------------


def cold_start_ratios(cold_calls: list[dict]) -> list[float]:
    """Per cold call: (waitTime + initTime) / execution time (the platform's cost of making and
    initialising the sandbox, over the function's own run in that call)."""
    out = []
    for call in cold_calls:
        wait, init, run = (call.get(k) for k in ("wait_ms", "init_ms", "execution_ms"))
        if wait is None or init is None or run is None:
            continue
        if all(math.isfinite(v) for v in (wait, init, run)) and run > 0:
            out.append((wait + init) / run)
    return out


def wait_shares(calls: list[dict]) -> list[float]:
    """Per call: waitTime / (waitTime + duration), the share of the platform's time spent waiting."""
    out = []
    for call in calls:
        wait, duration = call.get("wait_ms"), call.get("duration_ms")
        if (
            wait is not None
            and duration is not None
            and math.isfinite(wait)
            and math.isfinite(duration)
            and wait + duration > 0
        ):
            out.append(wait / (wait + duration))
    return out


def verdict_breakdown(cold_calls: list[dict], over_calls: list[dict], other_calls: list[dict]) -> Verdict:
    """Both markers of Fig 5: a cold start costs > ``COLD_START_FACTOR`` × the short function's
    execution, and waiting is more than ``WAIT_SHARE`` of an over-invoked call's platform time
    (beside it, the share in the phases that were not over-invoked)."""
    ratios = cold_start_ratios(cold_calls)
    cold, cold_low, cold_high = median_ci(ratios)
    shares = wait_shares(over_calls)
    share, share_low, share_high = median_ci(shares)
    other = median_ci(wait_shares(other_calls))[0]
    details = [
        {
            "marker": "cold start / execution",
            "value": cold,
            "ci_low": cold_low,
            "ci_high": cold_high,
            "n": len(ratios),
            "threshold": f"> {COLD_START_FACTOR:g}×",
        },
        {
            "marker": "wait share when over-invoked",
            "value": share,
            "ci_low": share_low,
            "ci_high": share_high,
            "n": len(shares),
            "threshold": f"> {WAIT_SHARE:.0%}",
            "not_over_invoked_median": other,
        },
    ]
    problems = [
        p
        for p in (
            _above_problem(
                len(ratios),
                cold,
                cold_low,
                cold_high,
                COLD_START_FACTOR,
                "cold starts",
                "no cold start with a record",
                "cold start / execution",
                "×",
                f"{COLD_START_FACTOR:g}×",
            ),
            _above_problem(
                len(shares),
                share,
                share_low,
                share_high,
                WAIT_SHARE,
                "over-invoked calls",
                "no over-invoked call with a record (Fig 4 found no over-invoked phase)",
                "wait share",
                "",
                f"{WAIT_SHARE:.0%}",
            ),
        )
        if p
    ]
    text = (
        f"cold start {_interval_text(cold, cold_low, cold_high, '×')} a short function's execution; waiting "
        f"{_interval_text(share, share_low, share_high)} of an over-invoked call's platform time"
        + (f" ({other:.2g} when not over-invoked)" if math.isfinite(other) else "")
    )
    verdict = NOT_REPRODUCED if problems else REPRODUCED
    if verdict == REPRODUCED and len(ratios) < MIN_COLD_STARTS:
        verdict = INDICATIVE
        text += f"; on {len(ratios)} cold starts, fewer than the {MIN_COLD_STARTS} a verdict needs: indicative"
    return Verdict(
        verdict,
        "; ".join(problems) if problems else text,
        cold,
        cold_low,
        cold_high,
        len(ratios),
        "×",
        "cold start / execution (median)",
        details,
    )


def _above_problem(
    n: int,
    value: float,
    low: float,
    high: float,
    threshold: float,
    samples: str,
    none: str,
    what: str,
    unit: str,
    shown: str,
) -> str:
    """Why a median's interval does not lie above ``threshold`` ("" when it does)."""
    if not n:
        return none
    if not math.isfinite(low):
        return f"{n} {samples} are too few for an interval"
    if low <= threshold:
        return f"{what} {_interval_text(value, low, high, unit)} does not lie above {shown}"
    return ""


# -- Figures 15 and 16: containerisation slowdown ----------------------------------------------


def verdict_short_long(functions: list[dict]) -> Verdict:
    """Fig 15: every function under ``SHORT_NATIVE_MS`` native time slower in FaaS beyond noise
    (interval above 1), every long one (``LONG_NATIVE_MS`` and more) ≈ 1 within noise (interval
    reaching into ``NOISE_BAND``). ``functions``: ``function``, ``native_ms``, ``factor``,
    ``ci_low``, ``ci_high``, ``n``."""
    usable = [f for f in functions if _finite_all(f, "native_ms", "factor")]
    short = [f for f in usable if f["native_ms"] < SHORT_NATIVE_MS]
    long = [f for f in usable if f["native_ms"] >= LONG_NATIVE_MS]
    problems = []
    if not short:
        problems.append(f"no function under {SHORT_NATIVE_MS:g} ms native time with a factor")
    if not long:
        problems.append(f"no function of {LONG_NATIVE_MS:g} ms or more native time with a factor")
    for f in short:
        denied = contradiction(f)
        # ``significant``: the run-level verdict over rounds (reproduce_slowdown), which also asks
        # for the smallest effect; a factor without it (one pass's bootstrap) goes by its interval.
        if not (_finite_all(f, "ci_low") and f["ci_low"] > 1.0 and f.get("significant", True)):
            problems.append(
                f"{f['function']} ({f['native_ms']:.3g} ms): ×{_interval_text(f['factor'], f.get('ci_low'), f.get('ci_high'))} is not above 1 beyond noise"
            )
        elif denied:
            problems.append(f"{f['function']} ({f['native_ms']:.3g} ms): ×{f['factor']:.3g} but its note says {denied}")
    for f in long:
        low, high = (f["ci_low"], f["ci_high"]) if _finite_all(f, "ci_low", "ci_high") else (f["factor"], f["factor"])
        if high < NOISE_BAND[0] or low > NOISE_BAND[1]:
            problems.append(
                f"{f['function']} ({f['native_ms']:.3g} ms): ×{_interval_text(f['factor'], f.get('ci_low'), f.get('ci_high'))} lies outside ≈1 ({NOISE_BAND[0]:g}–{NOISE_BAND[1]:g})"
            )
    top = max(usable, key=lambda f: f["factor"], default=None)
    value = top["factor"] if top else None
    text = f"short: {', '.join(_factor_text(f) for f in short) or 'none'}; long: {', '.join(_factor_text(f) for f in long) or 'none'}"
    verdict = NOT_REPRODUCED if problems else REPRODUCED
    if verdict == REPRODUCED and len(usable) < MIN_SLOWDOWN_FUNCTIONS:
        verdict = INDICATIVE
        text += f"; {len(usable)} functions, fewer than the {MIN_SLOWDOWN_FUNCTIONS} a verdict needs: indicative"
    faster = [baseline_bias(f) for f in usable if f["factor"] < 1.0]
    reason = "; ".join(problems) if problems else text
    if faster:
        reason += "; " + "; ".join(faster)
    return Verdict(
        verdict,
        reason,
        value,
        top.get("ci_low") if top else None,
        top.get("ci_high") if top else None,
        sum(int(f.get("n") or 0) for f in usable),
        "×",
        f"largest factor ({top['function']})" if top else "largest factor",
        sorted(functions, key=lambda f: f.get("native_ms") or math.inf),
    )


def verdict_exponent(exponent: float, low: float, high: float, points: list[dict]) -> Verdict:
    """Fig 16: the fitted exponent is negative beyond noise (its interval below 0): the shorter the
    function, the larger its slowdown. ``points``: the functions the fit went through."""
    functions = len(points)
    text = f"exponent {_interval_text(exponent, low, high)} over {functions} functions"

    def verdict(result: str, reason: str) -> Verdict:
        return Verdict(result, reason, exponent, low, high, functions, "", "fitted exponent b over functions", points)

    if functions < 2 or not math.isfinite(exponent):
        return verdict(NOT_REPRODUCED, f"no fit: {functions} function(s) with a factor (2 needed)")
    if not math.isfinite(high):
        return verdict(NOT_REPRODUCED, f"{text}: too few calls per function for an interval")
    if high >= 0:
        return verdict(NOT_REPRODUCED, f"{text}: not negative beyond noise")
    if functions < MIN_FIT_FUNCTIONS:
        return verdict(
            INDICATIVE,
            f"{text}: a power law through fewer than {MIN_FIT_FUNCTIONS} functions is indicative, not reproduced",
        )
    return verdict(REPRODUCED, text)


def contradiction(entry: dict) -> str:
    """The part of a function's ``notes`` that denies the effect of its warm factor (``""``: none).
    Only the sentence about the measure the factor is of (execution or latency) and the warm phase."""
    measure = entry.get("measure") or "execution"
    for sentence in str(entry.get("notes") or "").split(" | "):
        if sentence.startswith(f"{measure} warm") and any(word in sentence for word in CONTRADICTING_NOTES):
            return f'"{sentence}"'
    return ""


def _claimed(entry: dict) -> bool:
    native = entry.get("native_ms")
    return isinstance(native, (int, float)) and math.isfinite(native) and native < SHORT_NATIVE_MS


def baseline_bias(entry: dict) -> str:
    """A factor below 1 in words (module docstring: the native baseline's bias), with the CPU-time
    factor beside it where there is one."""
    cpu = entry.get("cpu_factor")
    cpu_text = f"; its CPU-time factor is ×{cpu:.3g}" if isinstance(cpu, (int, float)) and math.isfinite(cpu) else ""
    return (
        f"{entry['function']} ×{entry['factor']:.3g} (FaaS faster than native) is the native baseline's bias, not the "
        f"platform's speed: the native worker competes for a CPU process by process beside faasprof, the sandboxes in a "
        f"cgroup of their own{cpu_text}"
    )


def honest(verdict: Verdict) -> Verdict:
    """``verdict``, or, where a reproduced verdict carries a detail whose note denies its effect (a
    short function, under ``SHORT_NATIVE_MS``, whose slowdown the finding claims, with a note that
    says it is not significant), the same figures not reproduced and saying so: no verdict stands
    against its own notes."""
    if verdict.verdict != REPRODUCED:
        return verdict
    denied = [
        f"{d.get('function')}: {contradiction(d)}"
        for d in verdict.details
        if isinstance(d, dict) and _claimed(d) and contradiction(d)
    ]
    if not denied:
        return verdict
    return Verdict(
        NOT_REPRODUCED,
        f"{verdict.reason}; but its notes deny it ({'; '.join(denied)})",
        verdict.value,
        verdict.ci_low,
        verdict.ci_high,
        verdict.n,
        verdict.unit,
        verdict.label,
        verdict.details,
    )


# -- hardware figures: a ratio of two sets of samples ------------------------------------------


def verdict_ratio(
    label: str, numerator, denominator, threshold: float = 1.0, above: bool = True, unit: str = "×"
) -> Verdict:
    """A finding that one side exceeds the other (``above``) or falls below it: reproduced when
    the bootstrap interval of the ratio of medians lies beyond ``threshold``."""
    value, low, high = ratio_ci(numerator, denominator)
    n = len(_finite(numerator)) + len(_finite(denominator))
    text = f"{label} {_interval_text(value, low, high, unit)}"
    if not math.isfinite(value):
        return Verdict(NOT_REPRODUCED, f"{label}: no samples on one side", value, low, high, n, unit, label)
    if not (math.isfinite(low) and math.isfinite(high)):
        return Verdict(NOT_REPRODUCED, f"{text}: too few samples for an interval", value, low, high, n, unit, label)
    beyond = low > threshold if above else high < threshold
    side = "above" if above else "below"
    return Verdict(
        REPRODUCED if beyond else NOT_REPRODUCED,
        text if beyond else f"{text}: not {side} {threshold:g} beyond noise",
        value,
        low,
        high,
        n,
        unit,
        label,
    )


def verdict_ratio_over_runs(
    label: str, numerators: list[list[float]], denominators: list[list[float]], above: bool = True
) -> Verdict:
    """A hardware finding over runs: run i's per-second samples ``numerators[i]`` against its
    ``denominators[i]``. Each run's median on each side is one sample (the seconds of one run share
    its host moment); the ratio of the runs' geometric means and its interval are ``run_stats``'
    (Welch over the log medians), and the finding is reproduced when that interval lies on its side
    of 1, the effect is at least ``DEFAULT_MIN_EFFECT``, and there are ``MIN_RATIO_RUNS`` runs or more.
    Fewer runs, or one: ``indicative`` at most, the one run's bootstrap standing for itself."""
    runs = [(num, den) for num, den in zip(numerators, denominators) if len(_finite(num)) and len(_finite(den))]
    if len(runs) < 2:
        single = verdict_ratio(label, *(runs[0] if runs else ([], [])), above=above)
        if single.verdict != REPRODUCED:
            return single
        single.verdict = INDICATIVE
        single.reason += (
            f": within one run (its seconds share the run's host moment), indicative; {MIN_RATIO_RUNS} runs or "
            "more give a verdict over runs"
        )
        return single
    figure = RunFigure(label, label, Scale.RATIO, "higher", "lower")
    effect = figure_effect(
        figure, [float(np.median(_finite(den))) for _, den in runs], [float(np.median(_finite(num))) for num, _ in runs]
    )
    value = effect.effect if effect.effect is not None else math.nan
    low, high = effect.effect_ci or (math.nan, math.nan)
    text = f"{label} {_interval_text(value, low, high, '×')} over {len(runs)} runs, each run's median one sample"
    on_side = effect.significant and (effect.verdict == "higher") == above
    details = [
        {"run": k, "numerator_median": float(np.median(_finite(n))), "denominator_median": float(np.median(_finite(d)))}
        for k, (n, d) in enumerate(runs)
    ]

    def verdict(result: str, reason: str) -> Verdict:
        return Verdict(result, reason, value, low, high, len(runs), "×", label, details)

    if not on_side:
        return verdict(NOT_REPRODUCED, f"{text}: {effect.verdict}, not {'above' if above else 'below'} 1 beyond noise")
    if len(runs) < MIN_RATIO_RUNS:
        return verdict(INDICATIVE, f"{text}: fewer than {MIN_RATIO_RUNS} runs is indicative, not reproduced")
    return verdict(REPRODUCED, text)


def not_measurable(reason: str) -> Verdict:
    return Verdict(NOT_MEASURABLE, reason)


def _finite_all(entry: dict, *keys: str) -> bool:
    return all(isinstance(entry.get(k), (int, float)) and math.isfinite(entry[k]) for k in keys)


def _factor_text(entry: dict) -> str:
    return f"{entry['function']} ×{_interval_text(entry['factor'], entry.get('ci_low'), entry.get('ci_high'))}"
