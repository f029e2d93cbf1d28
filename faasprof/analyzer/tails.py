"""Tail-to-median ratios (p99/p50 and p99.9/p50), as the STeLLAR study reports tail latency.

STeLLAR (Ustiugov et al., IISWC 2021) characterises a platform's tail by how far the tail sits
above the median of the response time, with warm and cold invocations kept apart: a cold start
inside a warm sample inflates its tail and hides what the warm path does. faasprof computes the
ratios per instance, per phase and per start class (``cold``, ``resumed``, ``warm``, and ``all``
for every answered invocation whatever its class): never over two instances or two phases, whose
latencies are of different kinds or rates.

The latency is the response time the caller saw (``client_latency_ms``) for blocking instances;
for non-blocking ones, whose client only saw the 202, it is the platform's wait + duration
(``platform_latency_ms``). Only answered invocations (``ok`` and ``app_error``) count. A group
with fewer than ``MIN_SAMPLES`` samples has no ratio (``None``): its p99 is its maximum and says
nothing about a tail.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from faasprof import rundir
from faasprof.analyzer import markup
from faasprof.analyzer import stats as stats_mod
from faasprof.analyzer.frames import instance_answers_at_end
from faasprof.analyzer.summary import Summary
from faasprof.analyzer.templating import Table

CLASSES = ("cold", "resumed", "warm", "all")
MIN_SAMPLES = 10
RULE = (
    "response time (client latency for blocking instances, wait + duration for non-blocking ones) of answered invocations; "
    f"p99/p50 and p99.9/p50 per instance, phase and start class; fewer than {MIN_SAMPLES} samples: no ratio"
)


# What each row's latency is, named in the table so that it reads against the modes table's
# completion latency.
LATENCY_KINDS = {True: "client (send → answer)", False: "wait + duration"}


def _blocking(frame: pd.DataFrame, manifest: rundir.Manifest) -> np.ndarray:
    return frame["instance"].map(instance_answers_at_end(manifest)).to_numpy(dtype=bool)


def response_latency_ms(
    frame: pd.DataFrame, manifest: rundir.Manifest, blocking: np.ndarray | None = None
) -> np.ndarray:
    """The per-invocation response time the ratios are computed on (see the module docstring);
    ``blocking``: each row's call, when the caller has it."""
    blocking = _blocking(frame, manifest) if blocking is None else blocking
    client = frame["client_latency_ms"].to_numpy(dtype="float64", na_value=np.nan)
    platform = frame["platform_latency_ms"].to_numpy(dtype="float64", na_value=np.nan)
    return np.where(blocking, client, platform)


def ratio_block(values: np.ndarray) -> dict:
    """n, p50, p99, p99.9 (ms) and the two ratios of one group of latencies."""
    data = values[np.isfinite(values)]
    n = int(len(data))
    if n == 0:
        return ratio_figures(0, math.nan, math.nan, math.nan)
    data = stats_mod.partitioned_for_quantiles(data, (0.5, 0.99, 0.999))
    p50, p99, p999 = (stats_mod.quantile_ci(data, p)[0] for p in (0.5, 0.99, 0.999))
    return ratio_figures(n, p50, p99, p999)


def ratio_figures(n: int, p50: float, p99: float, p999: float) -> dict:
    """``ratio_block``'s dict from its ``n`` finite samples' p50, p99 and p99.9 (ms)."""
    out: dict[str, int | float | None] = {
        "n": n,
        "p50_ms": None,
        "p99_ms": None,
        "p99_9_ms": None,
        "p99_over_p50": None,
        "p99_9_over_p50": None,
    }
    if n == 0:
        return out
    out.update(p50_ms=p50, p99_ms=p99, p99_9_ms=p999)
    if n >= MIN_SAMPLES and p50 > 0 and math.isfinite(p50):
        out.update(p99_over_p50=p99 / p50, p99_9_over_p50=p999 / p50)
    return out


def tail_ratios(frame: pd.DataFrame, manifest: rundir.Manifest) -> dict:
    """``{"rule", "rows"}``: one row per instance × phase × start class with samples (never two
    instances of a function, or two phases, in one row: a function called blocking by one instance
    and non-blocking by another has two latencies, and a phase at another rate another tail);
    each row's ``latency`` names the response time its figures are of."""
    blocking = _blocking(frame, manifest)
    latency = response_latency_ms(frame, manifest, blocking)
    answered = stats_mod.label_mask(frame["outcome"], stats_mod.ANSWERED)
    if "warmup" in frame.columns:  # the run's warm-up is in no figure (stats.WARMUP_RULE)
        answered &= ~frame["warmup"].to_numpy(dtype=bool)
    # Groups are cut on integer codes (no Python object per row): instances by their label,
    # start classes by name.
    instance_codes, instance_labels = pd.factorize(frame["instance"], use_na_sentinel=True)
    functions = frame["function"].astype(str).to_numpy()
    phases = frame["phase"].to_numpy() if "phase" in frame.columns else np.zeros(len(frame), dtype=int)
    class_codes, class_labels = pd.factorize(frame["start_class"], use_na_sentinel=True)
    class_code = {str(label): k for k, label in enumerate(class_labels)}
    rows = []
    answered_codes = np.unique(instance_codes[answered & (instance_codes >= 0)])
    for code in sorted(answered_codes, key=lambda k: str(instance_labels[k])):
        in_instance = answered & (instance_codes == code)
        first = int(np.flatnonzero(in_instance)[0])
        head = {"instance": str(instance_labels[code]), "function": functions[first]}
        kind = LATENCY_KINDS[bool(blocking[first])]
        for phase in _phase_values(phases[in_instance]):
            in_phase = in_instance & (phases == phase)
            for start_class in CLASSES:
                if start_class == "all":
                    mask = in_phase
                elif start_class in class_code:
                    mask = in_phase & (class_codes == class_code[start_class])
                else:
                    continue
                if mask.any():
                    rows.append(
                        {
                            **head,
                            "phase": phase,
                            "start_class": start_class,
                            "latency": kind,
                            **ratio_block(latency[mask]),
                        }
                    )
    return {"rule": RULE, "rows": rows}


def _phase_values(phases: np.ndarray) -> list[int]:
    """The distinct phases of a group, sorted, without missing ones."""
    if phases.dtype.kind in "iu":
        return [int(p) for p in np.unique(phases)]
    if phases.dtype.kind == "f":
        return [int(p) for p in np.unique(phases[~np.isnan(phases)])]
    return sorted({int(p) for p in phases if p is not None and not (isinstance(p, float) and math.isnan(p))})


def phase_columns(summary: Summary, instance: str, phase: int) -> dict:
    """An instance's ratios in one phase as flat columns (``tail_p99_over_p50_warm``...) for
    ``compare``, whose rows are instances × phases. An older summary's rows, one per function
    (its instances pooled), have no ``instance`` and give no columns: ``faasprof analyze`` again."""
    out = {}
    for row in (summary.get("tail_ratios") or {}).get("rows", []):
        if row.get("instance") == instance and row["phase"] == phase:
            out[f"tail_p99_over_p50_{row['start_class']}"] = row["p99_over_p50"]
            out[f"tail_p99_9_over_p50_{row['start_class']}"] = row["p99_9_over_p50"]
    return out


TAIL_HEADERS = [
    "instance",
    "function",
    "phase",
    "start class",
    "latency",
    "n",
    "p50",
    "p99",
    "p99.9",
    "p99/p50",
    "p99.9/p50",
]


@dataclass
class TailsView:
    """The report's tails section (the ``tails`` block of templates/report.html)."""

    table: Table  # a row per instance × phase × start class
    rule: str  # how the ratios are computed, in words


def report_view(summary: Summary) -> TailsView | None:
    """The report's tails section; None when the run has no tail rows."""
    block = summary.get("tail_ratios") or {}
    rows = [
        [
            r.get("instance", "–"),
            r["function"],
            r["phase"],
            r["start_class"],
            r.get("latency", "–"),
            r["n"],
            markup.ms(r["p50_ms"]),
            markup.ms(r["p99_ms"]),
            markup.ms(r["p99_9_ms"]),
            r["p99_over_p50"],
            r["p99_9_over_p50"],
        ]
        for r in block.get("rows", [])
    ]
    if not rows:
        return None
    return TailsView(Table(TAIL_HEADERS, rows, left=5), block.get("rule", ""))
