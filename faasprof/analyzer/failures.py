"""The failures of a run as ``summary.json`` holds them: the invocations that did not succeed, by
function and final outcome (``failure_summary``), and how the platform pushed back on the run's
calls (``pushback_summary``)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from faasprof.analyzer import stats as stats_mod
from faasprof.analyzer.outcome_columns import pushback_counts
from faasprof.analyzer.summary import FailureGroup, Failures, Pushback
from faasprof.outcomes import ACCEPTED_HTTP_OUTCOMES, FAILURE_OUTCOMES, FINAL_OUTCOMES, pushback_line


def failure_summary(frame: pd.DataFrame, end_s: float | None = None) -> Failures:
    """Invocations that did not succeed, by function and final outcome, each with its count, its
    completion latency (p50, max) and the first error text seen (record error, else HTTP error).
    Those planned after the run stopped at ``end_s`` did not fail: they were never due."""
    failed = frame[
        stats_mod.label_mask(frame["final_outcome"], FAILURE_OUTCOMES) & ~stats_mod.unsent_after_end(frame, end_s)
    ]
    groups: list[FailureGroup] = []
    for (function, outcome), rows in failed.groupby(
        [failed["function"].astype(object), failed["final_outcome"].astype(object)], sort=False
    ):
        latency = rows["completion_latency_ms"].to_numpy(dtype="float64")
        latency = latency[np.isfinite(latency)]
        texts = [t for t in rows["error_text"].tolist() if isinstance(t, str) and t] or [
            t for t in rows["error"].tolist() if isinstance(t, str) and t
        ]
        groups.append(
            {
                "function": str(function),
                "final_outcome": str(outcome),
                "count": int(len(rows)),
                "completion_latency_ms_p50": float(np.median(latency)) if len(latency) else None,
                "completion_latency_ms_max": float(latency.max()) if len(latency) else None,
                "example_error": texts[0] if texts else None,
            }
        )
    return failures_of(groups, int(len(failed)))


def failures_of(groups: list[FailureGroup], total: int) -> Failures:
    """``failure_summary``'s block from its groups, in its order (final outcome, most first)."""
    order = {name: k for k, name in enumerate(FINAL_OUTCOMES)}
    groups = sorted(groups, key=lambda g: (order[g["final_outcome"]], -g["count"], g["function"]))
    return {"total": total, "by_function": groups}


def pushback_summary(frame: pd.DataFrame, outcome_counts: dict[str, int]) -> Pushback:
    """How the platform pushed back on the run's calls: rows per kind and the line that says it
    (None when it never did), as the run said it on stderr."""
    counts = pushback_counts(frame)
    accepted = sum(outcome_counts.get(name, 0) for name in ACCEPTED_HTTP_OUTCOMES)
    return {"counts": counts, "line": pushback_line(counts, int(len(frame)), accepted)}
