"""``SummaryPhase``: one steady phase of an instance as an analysis's ``summary.json`` holds it
(``faasprof.analyzer.analysis``), typed once for the experiments that read phases (mpki, reproduce)
rather than read key by key from a dict. A figure the summary lacks (an older format, a phase with
no successful call) is None; each reader says what it takes for one."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class SummaryPhase:
    phase: int
    steady_start_s: float  # the phase's steady window, in seconds from the run's zero
    phase_end_s: float
    mode: str | None = None  # under-invoked | balanced | over-invoked (analyzer.stats), or several joined by ","
    mode_reasons: str | None = None
    successful: int | None = None
    with_record: int | None = None
    achieved_rps: float | None = None
    execution_ms_p50: float | None = None
    completion_latency_ms_p50: float | None = None
    completion_latency_ms_p50_ci_low: float | None = None
    completion_latency_ms_p50_ci_high: float | None = None

    @classmethod
    def of(cls, entry: dict[str, Any]) -> SummaryPhase:
        """One entry of an instance's ``phases`` (a JSON object: the keys this record does not name are left out)."""
        return cls(
            phase=int(entry["phase"]),
            steady_start_s=float(entry["steady_start_s"]),
            phase_end_s=float(entry["phase_end_s"]),
            mode=entry.get("mode"),
            mode_reasons=entry.get("mode_reasons"),
            successful=entry.get("successful"),
            with_record=entry.get("with_record"),
            achieved_rps=entry.get("achieved_rps"),
            execution_ms_p50=entry.get("execution_ms_p50"),
            completion_latency_ms_p50=entry.get("completion_latency_ms_p50"),
            completion_latency_ms_p50_ci_low=entry.get("completion_latency_ms_p50_ci_low"),
            completion_latency_ms_p50_ci_high=entry.get("completion_latency_ms_p50_ci_high"),
        )


__all__ = ["SummaryPhase"]
