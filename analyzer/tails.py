"""Tail-to-median ratios (p99/p50 and p99.9/p50), as the STeLLAR study reports tail latency.

STeLLAR (Ustiugov et al., IISWC 2021) characterises a platform's tail by how far the tail sits
above the median of the response time, with warm and cold invocations kept apart: a cold start
inside a warm sample inflates its tail and hides what the warm path does. faasprof computes the
ratios per function, per phase (and over the whole run, phase ``all``) and per start class
(``cold``, ``resumed``, ``warm``, and ``all`` for every answered invocation whatever its class).

The latency is the response time the caller saw (``client_latency_ms``) for blocking instances;
for non-blocking ones, whose client only saw the 202, it is the platform's wait + duration
(``platform_latency_ms``). Only answered invocations (``ok`` and ``app_error``) count. A group
with fewer than ``MIN_SAMPLES`` samples has no ratio (``None``): its p99 is its maximum and says
nothing about a tail.
"""

from __future__ import annotations

import html
import math

import numpy as np
import pandas as pd

from faasprof import rundir
from faasprof.analyzer import markup
from faasprof.analyzer import stats as stats_mod
from faasprof.analyzer.frames import instance_answers_at_end

CLASSES = ("cold", "resumed", "warm", "all")
MIN_SAMPLES = 10
RULE = (
    "response time (client latency for blocking instances, wait + duration for non-blocking ones) of answered invocations; "
    f"p99/p50 and p99.9/p50 per function, phase and start class; fewer than {MIN_SAMPLES} samples: no ratio"
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
    out = {"n": n, "p50_ms": None, "p99_ms": None, "p99_9_ms": None, "p99_over_p50": None, "p99_9_over_p50": None}
    if n == 0:
        return out
    data = stats_mod.partitioned_for_quantiles(data, (0.5, 0.99, 0.999))
    p50, p99, p999 = (stats_mod.quantile_ci(data, p)[0] for p in (0.5, 0.99, 0.999))
    out.update(p50_ms=p50, p99_ms=p99, p99_9_ms=p999)
    if n >= MIN_SAMPLES and p50 > 0 and math.isfinite(p50):
        out.update(p99_over_p50=p99 / p50, p99_9_over_p50=p999 / p50)
    return out


def tail_ratios(frame: pd.DataFrame, manifest: rundir.Manifest) -> dict:
    """``{"rule", "rows"}``: one row per function × phase (and ``all``) × start class with samples;
    each row's ``latency`` names the response time its figures are of."""
    blocking = _blocking(frame, manifest)
    latency = response_latency_ms(frame, manifest, blocking)
    answered = stats_mod.label_mask(frame["outcome"], stats_mod.ANSWERED)
    # Groups are cut on integer codes (no Python object per row): functions by their label,
    # start classes by name.
    function_codes, function_labels = pd.factorize(frame["function"], use_na_sentinel=True)
    function_labels = [str(label) for label in function_labels]
    phases = frame["phase"].to_numpy() if "phase" in frame.columns else np.zeros(len(frame), dtype=int)
    class_codes, class_labels = pd.factorize(frame["start_class"], use_na_sentinel=True)
    class_code = {str(label): k for k, label in enumerate(class_labels)}
    rows = []
    answered_codes = np.unique(function_codes[answered & (function_codes >= 0)])
    for code in sorted(answered_codes, key=lambda k: function_labels[k]):
        function = function_labels[code]
        in_function = answered & (function_codes == code)
        kind = " and ".join(LATENCY_KINDS[b] for b in (True, False) if (blocking[in_function] == b).any())
        phase_values = _phase_values(phases[in_function])
        for phase in [*phase_values, "all"]:
            in_phase = in_function if phase == "all" else in_function & (phases == phase)
            for start_class in CLASSES:
                if start_class == "all":
                    mask = in_phase
                elif start_class in class_code:
                    mask = in_phase & (class_codes == class_code[start_class])
                else:
                    continue
                if not mask.any():
                    continue
                rows.append(
                    {
                        "function": function,
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


def phase_columns(summary: dict, function: str, phase: int) -> dict:
    """A function's ratios in one phase as flat columns (``tail_p99_over_p50_warm``...) for
    ``compare``, whose rows are phases: the whole run's would pool them."""
    out = {}
    for row in (summary.get("tail_ratios") or {}).get("rows", []):
        if row["function"] == function and row["phase"] == phase:
            out[f"tail_p99_over_p50_{row['start_class']}"] = row["p99_over_p50"]
            out[f"tail_p99_9_over_p50_{row['start_class']}"] = row["p99_9_over_p50"]
    return out


def report_section(summary: dict) -> str:
    """The report's HTML section: one table row per function × phase × start class."""
    block = summary.get("tail_ratios") or {}
    rows = [
        [
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
        return ""
    return (
        "<h2>Tail-to-median ratio (STeLLAR)</h2>"
        "<p class='def'>Not the modes table's figures: here the response time (<b>latency</b> column) of every <i>answered</i> "
        "invocation (successful or not) of the function in the whole phase, warm-up included, all its instances together; "
        "the modes table has the completion latency of each instance's successful invocations in the phase's steady window. "
        "<b>n</b> counts the invocations each row's percentiles are of.</p>"
        + markup.table(
            ["function", "phase", "start class", "latency", "n", "p50", "p99", "p99.9", "p99/p50", "p99.9/p50"],
            rows,
            left=4,
        )
        + f"<p><small>{html.escape(block.get('rule', ''))}.</small></p>"
    )
