"""Representative, nested samples of a trace day's functions (``faasprof trace sample``).

The population is every function of the day with at least one invocation in the window, a
duration row and (when a memory file is given) its application's memory row; the rest are counted
and said. Each function has three features: its rate (invocations per minute in the window), its
average duration (ms) and its application's average allocated memory (MB; memory is per
application in the trace, so each function of an app is given the app's memory, and the mapping
allocates that much).

The order. A seeded greedy order of the whole: at each step ``CANDIDATES`` functions not yet
taken are drawn (seeded) and the one that brings the prefix's distributions closest to the
population's is appended, closeness being the sum over the three features of the 1-Wasserstein
distance between the prefix and the population in log10 units (rates, durations and memory span
orders of magnitude). A sample of N is the first N of that order, so the 50 are among the 100,
which are among the 200, by construction; the same seed and day give the same order.

The distances stated (``SampleReport``): per feature, the Wasserstein distance in log10 units and
the two-sample Kolmogorov-Smirnov statistic and p-value (scipy) of the sample against the whole.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

from faasprof.workload.azure_files import (
    DurationRow,
    FileKind,
    FunctionKey,
    InvocationRow,
    MemoryRow,
    TraceDay,
    TraceFileError,
    read_durations,
    read_invocations,
    read_invocations_2021,
    read_memory,
)

CANDIDATES = 24  # functions weighed at each step of the order
FEATURES = ("rate_per_min", "duration_ms", "memory_mb")


@dataclass
class Population:
    """The functions a sample is drawn from, with their features (arrays in one order)."""

    day: TraceDay
    minutes: tuple[int, int]
    keys: list[FunctionKey]
    rows: list[int]  # each function's row in the invocations file
    totals: np.ndarray  # invocations in the window
    features: dict[str, np.ndarray]
    durations: dict[FunctionKey, DurationRow]
    memory: dict[tuple[str, str], MemoryRow]
    excluded: dict[str, int]  # why -> how many functions were left out
    counts_2021: dict[FunctionKey, np.ndarray]  # a 2021 trace's counts (the file is not re-read)

    @property
    def window_minutes(self) -> int:
        return self.minutes[1] - self.minutes[0] + 1

    @property
    def has_memory(self) -> bool:
        return bool(self.memory)

    def feature_names(self) -> tuple[str, ...]:
        return FEATURES if self.has_memory else FEATURES[:2]


@dataclass
class FeatureDistance:
    wasserstein_log10: float
    ks_statistic: float
    ks_pvalue: float

    def to_json(self) -> dict:
        return {
            "wasserstein_log10": round(self.wasserstein_log10, 4),
            "ks_statistic": round(self.ks_statistic, 4),
            "ks_pvalue": float(f"{self.ks_pvalue:.4g}"),
        }


def _window(day: TraceDay, minutes: tuple[int, int] | None) -> tuple[int, int]:
    if day.kind is FileKind.INVOCATIONS:
        labels = day.minute_labels
        return minutes if minutes is not None else (labels[0], labels[-1])
    return minutes if minutes is not None else (1, 1440)


def load_population(day: TraceDay, minutes: tuple[int, int] | None = None, seed: int = 0) -> Population:
    """One pass over each file; only per-function totals are held (never the day's counts)."""
    window = _window(day, minutes)
    durations: dict[FunctionKey, DurationRow] = {}
    counts_2021: dict[FunctionKey, np.ndarray] = {}
    invocation_rows: list[InvocationRow] = []
    if day.kind is FileKind.INVOCATIONS_2021:
        invocation_rows, duration_rows = read_invocations_2021(day.invocations, window, seed)
        durations = {row.key: row for row in duration_rows}
        counts_2021 = {row.key: row.counts for row in invocation_rows}
    else:
        assert day.durations is not None  # find_day requires it for this kind
        durations = {row.key: row for row in read_durations(day.durations)}
    memory = {(row.owner, row.app): row for row in read_memory(day.memory)} if day.memory else {}
    excluded = {"no invocation in the window": 0, "no duration row": 0, "no memory row of its app": 0}
    keys, rows, totals, rates, mean_ms, mem_mb = [], [], [], [], [], []
    minutes_n = window[1] - window[0] + 1
    # A 2019 row's counts are summed and dropped as the file streams past.
    source = (
        iter(invocation_rows) if day.kind is FileKind.INVOCATIONS_2021 else read_invocations(day.invocations, window)
    )
    for row in source:
        total = int(row.counts.sum())
        if total == 0:
            excluded["no invocation in the window"] += 1
            continue
        duration = durations.get(row.key)
        if duration is None or duration.average_ms <= 0:
            excluded["no duration row"] += 1
            continue
        app_memory = memory.get((row.key.owner, row.key.app))
        if memory and app_memory is None:
            excluded["no memory row of its app"] += 1
            continue
        keys.append(row.key)
        rows.append(row.row)
        totals.append(total)
        rates.append(total / minutes_n)
        mean_ms.append(duration.average_ms)
        mem_mb.append(app_memory.average_mb if app_memory else 0.0)
    if not keys:
        raise TraceFileError(
            f"{day.invocations}: no function has invocations in minutes {window[0]}-{window[1]} and a duration "
            "row; choose another window (--minutes) or give the matching durations file"
        )
    features = {"rate_per_min": np.array(rates), "duration_ms": np.array(mean_ms), "memory_mb": np.array(mem_mb)}
    return Population(
        day, window, keys, rows, np.array(totals, dtype=np.int64), features, durations, memory,
        {why: n for why, n in excluded.items() if n}, counts_2021,
    )  # fmt: skip


def _log(values: np.ndarray) -> np.ndarray:
    return np.log10(np.maximum(values, 1e-6))


def _w1_to_sorted(sample_sorted: np.ndarray, population_sorted: np.ndarray) -> float:
    """The 1-Wasserstein distance between a sample and the population, each given sorted: the
    mean gap between the sample's order statistics and the population's quantiles at the same ranks."""
    m = sample_sorted.size
    ranks = ((np.arange(m) + 0.5) / m * population_sorted.size).astype(np.int64)
    return float(np.mean(np.abs(sample_sorted - population_sorted[np.minimum(ranks, population_sorted.size - 1)])))


def sample_order(population: Population, length: int, seed: int) -> list[int]:
    """The first ``length`` of the seeded greedy order (indices into the population); a prefix of
    any longer order of the same seed, which is what makes samples nested."""
    length = min(length, len(population.keys))
    rng = np.random.default_rng(seed)
    names = population.feature_names()
    logs = [_log(population.features[name]) for name in names]
    scales = [max(float(np.std(values)), 1e-9) for values in logs]
    sorted_pop = [np.sort(values) for values in logs]
    remaining = np.arange(len(population.keys))
    taken: list[int] = []
    prefix: list[np.ndarray] = [np.empty(0) for _ in names]
    for _ in range(length):
        picks = rng.choice(remaining.size, size=min(CANDIDATES, remaining.size), replace=False)
        best, best_score, best_prefix = -1, math.inf, prefix
        for pick in picks:
            candidate = int(remaining[pick])
            trial = [
                np.insert(p, np.searchsorted(p, logs[f][candidate]), logs[f][candidate]) for f, p in enumerate(prefix)
            ]
            score = sum(_w1_to_sorted(trial[f], sorted_pop[f]) / scales[f] for f in range(len(names)))
            if score < best_score:
                best, best_score, best_prefix = int(pick), score, trial
        taken.append(int(remaining[best]))
        prefix = best_prefix
        remaining = np.delete(remaining, best)
    return taken


def distances(population: Population, chosen: list[int], scale: float = 1.0) -> dict[str, FeatureDistance]:
    """Per feature, the sample (its rates times ``scale``) against the whole day's window."""
    found = {}
    for name in population.feature_names():
        whole = population.features[name]
        part = whole[chosen] * (scale if name == "rate_per_min" else 1.0)
        ks = stats.ks_2samp(part, whole)
        found[name] = FeatureDistance(
            float(stats.wasserstein_distance(_log(part), _log(whole))), float(ks.statistic), float(ks.pvalue)
        )
    return found


@dataclass
class ScaleEffect:
    """What scaling a sample's rates by ``factor`` does (counts are rounded per minute, as replayed)."""

    factor: float
    total_before: int
    total_after: int
    functions_muted: int  # every minute rounds to 0
    minutes_changed_share: float  # minutes whose rounded count is not factor x count exactly
    rate_distance: FeatureDistance  # scaled sample rates against the unscaled whole

    def to_json(self) -> dict:
        return {
            "factor": round(self.factor, 6),
            "total_before": self.total_before,
            "total_after": self.total_after,
            "functions_muted": self.functions_muted,
            "minutes_rounded_share": round(self.minutes_changed_share, 4),
            "rate_distance_from_whole": self.rate_distance.to_json(),
        }

    def describe(self) -> str:
        return (
            f"rates x{self.factor:.4g}: {self.total_before:,} -> {self.total_after:,} invocations "
            f"(rounded per minute; {self.minutes_changed_share:.0%} of the minutes not exactly scaled), "
            f"{self.functions_muted} function(s) silent after rounding; the rate distribution moves by "
            f"log10({self.factor:.4g}) = {math.log10(self.factor):+.2f} (Wasserstein to the whole "
            f"{self.rate_distance.wasserstein_log10:.3f} log10, KS {self.rate_distance.ks_statistic:.3f})"
        )


def scale_effect(population: Population, chosen: list[int], counts: list[np.ndarray], factor: float) -> ScaleEffect:
    before = sum(int(c.sum()) for c in counts)
    scaled = [np.rint(c.astype(np.float64) * factor).astype(np.int64) for c in counts]
    exact = [np.isclose(c * factor, s) for c, s in zip(counts, scaled)]
    cells = sum(e.size for e in exact)
    changed = 1.0 - (sum(int(e.sum()) for e in exact) / cells if cells else 1.0)
    muted = sum(1 for s in scaled if int(s.sum()) == 0)
    return ScaleEffect(
        factor,
        before,
        sum(int(s.sum()) for s in scaled),
        muted,
        changed,
        distances(population, chosen, factor)["rate_per_min"],
    )


def sampled_counts(population: Population, chosen: list[int], minutes: tuple[int, int]) -> list[np.ndarray]:
    """The chosen functions' counts of ``minutes`` (a second pass over the file, keeping only them)."""
    keys = [population.keys[i] for i in chosen]
    if population.day.kind is FileKind.INVOCATIONS_2021:
        offset = minutes[0] - population.minutes[0]
        width = minutes[1] - minutes[0] + 1
        return [population.counts_2021[key][offset : offset + width] for key in keys]
    wanted = {population.rows[i]: n for n, i in enumerate(chosen)}
    found: list[np.ndarray | None] = [None] * len(chosen)
    for row in read_invocations(population.day.invocations, minutes):
        slot = wanted.get(row.row)
        if slot is not None:
            found[slot] = row.counts
    missing = [keys[n] for n, counts in enumerate(found) if counts is None]
    if missing:
        raise TraceFileError(f"{population.day.invocations}: changed while it was read (function {missing[0]})")
    return [counts for counts in found if counts is not None]


__all__ = [
    "CANDIDATES",
    "FEATURES",
    "FeatureDistance",
    "Population",
    "ScaleEffect",
    "distances",
    "load_population",
    "sample_order",
    "sampled_counts",
    "scale_effect",
]
