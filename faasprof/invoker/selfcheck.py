"""The run checking itself: invocations issued against intended each second, and the failure rate.

The dispatcher's lateness watch (``selfwatch.py``) judges how late each send is; this judges how
much of the plan has gone out at all, as InVitro does for traces: once a second (at the first of
the dispatcher's ``checks``, every 0.25 s, in that second) it compares the invocations intended up to a second ago with those
issued (the sends the sender has written), and the invocations answered not ok with those
answered, counting only what was intended after the warm-up. Past ``behind_warn`` or
``failure_warn`` it warns once (kept among the run's warnings); past ``behind_abort`` or
``failure_abort`` it stops the run with status ``aborted`` and why, and the dispatcher still
leaves a row for every planned invocation. Each whole second's intended, issued, answered and
failed counts are kept for the manifest's ``self_check`` (with the limits and the worst shares),
so the figures of an aborted run are there too.

Limits come from the workload's ``self_check`` block, then ``faasprof run --self-check KEY=VALUE``;
defaults: warn at 10 %, abort at 20 % for a workload that replays a trace file, none otherwise.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Iterable, Protocol

import numpy as np

from faasprof.errors import ConfigError
from faasprof.invoker.dispatch import Dispatcher
from faasprof.rundir import RunStatus

GRACE_NS = 1_000_000_000  # an invocation counts as behind once it is this overdue
KEYS = ("behind_warn", "behind_abort", "failure_warn", "failure_abort", "warmup_s", "min_intended")


@dataclass
class SelfCheckLimits:
    behind_warn: float | None = 0.10
    behind_abort: float | None = None
    failure_warn: float | None = 0.10
    failure_abort: float | None = None
    warmup_s: float = 0.0
    min_intended: int = 20


def parse_self_check(pairs: Iterable[str], origin: str = "--self-check") -> dict[str, float | None]:
    """``KEY=VALUE`` pairs (VALUE a number, or ``none``) as a dict; ConfigError naming the bad one."""
    found: dict[str, float | None] = {}
    for pair in pairs:
        key, _, text = pair.partition("=")
        key = key.strip()
        if key not in KEYS or not text:
            raise ConfigError(f"{origin} {pair!r}: give KEY=VALUE with KEY one of {', '.join(KEYS)}")
        if text.strip().lower() in ("none", "null"):
            found[key] = None
            continue
        try:
            found[key] = float(text)
        except ValueError:
            raise ConfigError(f"{origin} {pair!r}: {text!r} is not a number; give e.g. {key}=0.2") from None
    return found


def self_check_limits(
    block: Any, replays_trace: bool, overrides: dict[str, float | None] | None = None
) -> SelfCheckLimits:
    """The limits of a run: the defaults, the workload's block (the schema has checked it), then ``overrides``."""
    limits = SelfCheckLimits(
        behind_abort=0.20 if replays_trace else None, failure_abort=0.20 if replays_trace else None
    )
    for source in (block if isinstance(block, dict) else {}, overrides or {}):
        for key, value in source.items():
            if key == "min_intended":
                limits.min_intended = int(value or 1)
            elif key == "warmup_s":
                limits.warmup_s = float(value or 0.0)
            elif key in KEYS:
                setattr(limits, key, None if value is None else float(value))
    return limits


def replays_trace(workload: Any) -> bool:
    """Whether an instance replays a trace file (the InVitro defaults then apply)."""
    return any(instance.arrival_keys.get("trace_file") is not None for instance in workload.instances)


class SendState(Protocol):
    """What the check reads of the dispatcher (or the send processes' parent)."""

    sent_rel: np.ndarray  # per planned invocation, its send on the run clock (ns), -1 before it is sent
    outcomes: dict[str, int]


@dataclass
class _Second:
    second: int
    intended: int
    issued: int
    answered: int
    failed: int


@dataclass
class SelfCheck:
    limits: SelfCheckLimits
    intended_ns: np.ndarray  # the plan, ascending, on the run clock
    clock: Callable[[], int] = time.monotonic_ns
    seconds: list[_Second] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    abort_reason: str | None = None
    worst_behind: float = 0.0
    worst_failure: float = 0.0
    _state: SendState | None = None
    _zero_ns: int = 0
    _last: tuple[int, int, int] = (0, 0, 0)  # sent, answered, failed at the last whole second
    _at_warmup: tuple[int, int, int] = (0, 0, 0)
    _judged_second: int = -1

    def watch(self, state: SendState, zero_ns: int) -> None:
        self._state, self._zero_ns = state, zero_ns

    def _totals(self) -> tuple[int, int, int]:
        state = self._state
        assert state is not None
        outcomes = dict(state.outcomes)
        answered = sum(n for outcome, n in outcomes.items() if outcome != "not_sent")
        # The dispatcher counts its sends; the send processes' parent only marks them in sent_rel
        # (counted once a second: a pass over the plan's array, ~10 ms at 10 million).
        sent = state.sent if isinstance(state, Dispatcher) else int(np.count_nonzero(state.sent_rel >= 0))
        return sent, answered, answered - outcomes.get("ok", 0)

    def check(self) -> tuple[RunStatus, str] | None:
        """A dispatcher check: ``("aborted", why)`` past an abort limit, else None."""
        if self._state is None or self.abort_reason is not None:
            return None
        now_ns = self.clock() - self._zero_ns
        second = int(now_ns // 1_000_000_000)
        if second == self._judged_second:
            return None  # judged once a second: the figures are per second
        self._judged_second = second
        totals = self._totals()
        self._close_seconds(now_ns, totals)
        warmup_ns = int(self.limits.warmup_s * 1e9)
        if now_ns < warmup_ns:
            self._at_warmup = totals  # the counts as the warm-up ends are the baseline of the judged part
            return None
        if now_ns < warmup_ns + GRACE_NS:
            return None
        intended = int(np.searchsorted(self.intended_ns, now_ns - GRACE_NS)) - int(
            np.searchsorted(self.intended_ns, warmup_ns)
        )
        if intended < self.limits.min_intended:
            return None
        issued = totals[0] - self._at_warmup[0]
        behind = max(0.0, 1.0 - issued / intended)
        answered = totals[1] - self._at_warmup[1]
        failure = (totals[2] - self._at_warmup[2]) / answered if answered >= self.limits.min_intended else 0.0
        self.worst_behind, self.worst_failure = max(self.worst_behind, behind), max(self.worst_failure, failure)
        at = f"at {now_ns / 1e9:.0f} s"
        what = (
            ("behind", behind, f"{behind:.1%} of the {intended:,} invocations intended after the warm-up not issued {at}",
             "the platform or the connections cannot take this rate; lower the rate (trace --scale-to) or raise --max-connections"),
            ("failure", failure, f"{failure:.1%} of the {answered:,} answered invocations failed {at}",
             "see the invocations' errors; the platform is overloaded or the function fails"),
        )  # fmt: skip
        for kind, share, text, fix in what:
            abort, warn = getattr(self.limits, f"{kind}_abort"), getattr(self.limits, f"{kind}_warn")
            if abort is not None and share > abort:
                self.abort_reason = f"self-check: {text}, past the abort limit {abort:.0%}; {fix}"
                return RunStatus.ABORTED, self.abort_reason
            if warn is not None and share > warn and not any(w.startswith(f"self-check {kind}") for w in self.warnings):
                self.warnings.append(f"self-check {kind}: {text}, past the warning limit {warn:.0%}; {fix}")
        return None

    def _close_seconds(self, now_ns: int, totals: tuple[int, int, int]) -> None:
        """Each whole second passed since the last check gets its counts (what changed since then)."""
        second = int(now_ns // 1_000_000_000)
        start = self.seconds[-1].second + 1 if self.seconds else 0
        for s in range(start, second):
            lo, hi = np.searchsorted(self.intended_ns, [s * 1_000_000_000, (s + 1) * 1_000_000_000])
            delta = [totals[i] - self._last[i] for i in range(3)] if s == second - 1 else [0, 0, 0]
            self.seconds.append(_Second(s, int(hi - lo), delta[0], delta[1], delta[2]))
            if s == second - 1:
                self._last = totals

    def describe(self) -> dict:
        """The manifest's ``self_check``: limits, worst shares, the outcome, and per second
        ``[second, intended, issued, answered, failed]``."""
        return {
            "limits": asdict(self.limits),
            "worst_behind": round(self.worst_behind, 4),
            "worst_failure": round(self.worst_failure, 4),
            "aborted": self.abort_reason,
            "warnings": list(self.warnings),
            "per_second_columns": ["second", "intended", "issued", "answered", "failed"],
            "per_second": [[s.second, s.intended, s.issued, s.answered, s.failed] for s in self.seconds],
        }


__all__ = ["KEYS", "SelfCheck", "SelfCheckLimits", "parse_self_check", "self_check_limits"]
