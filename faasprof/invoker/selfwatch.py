"""The invoker watching itself: lateness and its own CPU, as progress, warnings and an abort.

FaaSProfiler's invoker took 25 s for a 10 s test at 1,000/s and said nothing. Here every progress
interval (5 s by default) summarises the lateness (``sent - intended``) of the sends in that
interval and the invoker process's CPU use, prints one line, and judges it: past the warning
threshold it says *why* (connections all busy, the invoker CPU-bound, or other processes
taking the CPU) and what to do; past the abort threshold it stops the run (status ``aborted``).

Pure bookkeeping: the dispatcher feeds it lateness values and asks for a verdict; the clock and
CPU readings are passed in, so tests can drive it with fake values.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

CPU_BOUND_PERCENT = 85.0  # above this share of one core, the invoker itself is the bottleneck


def lateness_summary_ms(lateness_ns: np.ndarray) -> dict[str, float | None]:
    """p50, p99 and max of lateness values in ns, as ms (None when there are none)."""
    if lateness_ns.size == 0:
        return {"p50": None, "p99": None, "max": None, "count": 0}
    p50, p99 = np.percentile(lateness_ns, [50, 99])
    return {
        "p50": round(p50 / 1e6, 3),
        "p99": round(p99 / 1e6, 3),
        "max": round(float(lateness_ns.max()) / 1e6, 3),
        "count": int(lateness_ns.size),
    }


def _fmt_ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


@dataclass
class Verdict:
    progress: str  # the progress line
    warning: str | None = None  # lateness past the warning threshold: why and what to do
    abort: str | None = None  # lateness past the abort threshold: the reason to stop


class SelfWatch:
    def __init__(
        self,
        lateness_warn_ms: float | None,
        lateness_abort_ms: float | None,
        max_connections: int,
        planned: int,
        duration_s: float,
        interval_s: float,
    ):
        self.lateness_warn_ms = lateness_warn_ms
        self.lateness_abort_ms = lateness_abort_ms
        self.max_connections = max_connections
        self.planned = planned
        self.duration_s = duration_s
        self.interval_s = interval_s
        self.window: list[int] = []  # lateness (ns) of the sends since the last verdict
        self.intervals = 0  # judged intervals (with at least one send)
        self.late_intervals = 0  # of which past the warning threshold
        self.worst: tuple[float, str] | None = None  # (p99 ms, warning) of the latest interval
        self._window_start_ns = time.monotonic_ns()
        self._window_cpu_s = time.process_time()

    def restart(self, now_ns: int | None = None, cpu_s: float | None = None) -> None:
        self.window = []
        self._window_start_ns = time.monotonic_ns() if now_ns is None else now_ns
        self._window_cpu_s = time.process_time() if cpu_s is None else cpu_s

    def verdict(
        self,
        elapsed_s: float,
        sent: int,
        in_flight: int,
        waiting: int,
        outcomes: dict[str, int],
        now_ns: int | None = None,
        cpu_s: float | None = None,
    ) -> Verdict:
        """Summarise the interval that just ended and start the next one."""
        now_ns = time.monotonic_ns() if now_ns is None else now_ns
        cpu_s = time.process_time() if cpu_s is None else cpu_s
        cpu_percent = 100.0 * (cpu_s - self._window_cpu_s) / max((now_ns - self._window_start_ns) / 1e9, 1e-9)
        summary = lateness_summary_ms(np.asarray(self.window, dtype=np.int64))
        self.restart(now_ns, cpu_s)
        not_ok = sum(count for outcome, count in outcomes.items() if outcome != "ok")
        line = (
            f"[{elapsed_s:5.0f} s /{self.duration_s:5.0f} s] sent {sent:,}/{self.planned:,}  in flight {in_flight}"
            f"  waiting {waiting}  lateness p50 {_fmt_ms(summary['p50'])} p99 {_fmt_ms(summary['p99'])}"
            f" max {_fmt_ms(summary['max'])} ms  cpu {cpu_percent:.0f}%  ok {outcomes.get('ok', 0):,}  not ok {not_ok:,}"
        )
        verdict = Verdict(progress=line)
        p99 = summary["p99"]
        if p99 is None:
            return verdict
        why = self.why_late(cpu_percent, waiting)
        self.intervals += 1
        if self.lateness_abort_ms is not None and p99 > self.lateness_abort_ms:
            verdict.abort = (
                f"lateness p99 {p99:.1f} ms over the last {self.interval_s:g} s passed the abort threshold "
                f"{self.lateness_abort_ms:g} ms ({why})"
            )
        elif self.lateness_warn_ms is not None and p99 > self.lateness_warn_ms:
            verdict.warning = f"lateness p99 {p99:.1f} ms passed {self.lateness_warn_ms:g} ms: {why}"
            self.late_intervals += 1
            if self.worst is None or p99 > self.worst[0]:
                self.worst = (p99, verdict.warning)
        return verdict

    @property
    def warnings(self) -> list[str]:
        """One line for the manifest: how often lateness passed the threshold, and the worst case."""
        if not self.late_intervals or self.worst is None:
            return []
        return [
            f"lateness passed the warning threshold in {self.late_intervals} of {self.intervals} progress intervals; "
            f"worst: {self.worst[1]}"
        ]

    def why_late(self, cpu_percent: float, waiting: int) -> str:
        if waiting:
            return (
                f"all {self.max_connections} connections are busy and {waiting} request(s) wait for one; "
                "raise --max-connections, or the platform is answering too slowly for this rate"
            )
        if cpu_percent >= CPU_BOUND_PERCENT:
            return f"the invoker is CPU-bound ({cpu_percent:.0f}% of a core); lower the rate or give the invoker a core of its own (taskset)"
        return (
            f"the invoker is not busy ({cpu_percent:.0f}% of a core), so other processes delay it; "
            "keep the invoker off the platform's cores (taskset) and stop other load on this host"
        )


__all__ = ["SelfWatch", "Verdict", "lateness_summary_ms", "CPU_BOUND_PERCENT"]
