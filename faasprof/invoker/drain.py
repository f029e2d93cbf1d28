"""A run is over when its work is: before the invoker stops the platform it started (the embedded
localwhisk), it waits for the activations that platform accepted and has not yet recorded.

An over-invoked platform can hold a long queue after the last send (the paper's Figure 4 is made
of such runs), and a function whose cold start takes seconds keeps its first calls in /init long
after they were answered 202. Stopping the platform then would cut them short: localwhisk records
each as ``localwhisk stopped before the activation completed.``, and the measurement is lost.

So ``wait_for_in_flight`` polls the platform's count of activations accepted and not yet
recorded (localwhisk's ``GET /localwhisk/v1/activations``) until it is 0, saying on the command's
``Progress`` how many are queued and running, how many ended so far and, from that pace, about
how long the rest will take. The wait is bounded by the actions' time limits, not by a fixed
deadline: every activation that has started ends within its /init and its run, each bounded by
the action's time limit, so a platform on which no activation ended for twice the longest limit
(plus ``STALL_MARGIN_S``) is stuck, and the wait gives up. A Ctrl-C (or SIGTERM) during the wait
abandons the activations left; the platform then records them as stopped, and the report (the
manifest's ``drain`` block) says that they were abandoned, and how many.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable

from faasprof.platforms.openwhisk.records import DEFAULT_ACTION_TIMEOUT_MS, action_time_limits_ms
from faasprof.progress import QUIET, Progress

POLL_S = 0.25
PROGRESS_EVERY_S = 5.0
STALL_MARGIN_S = 15.0  # beyond two time limits: the platform's own delays (sandbox start, store)

DRAINED = "drained"  # nothing left queued or running
ABANDONED = "abandoned"  # Ctrl-C or SIGTERM during the wait
STALLED = "stalled"  # no activation ended within the stall limit
PLATFORM_GONE = "platform_gone"  # the platform stopped answering: nothing more will end there


@dataclass
class DrainReport:
    """How the wait for the platform's accepted activations ended."""

    outcome: str
    in_flight_at_start: int
    left: int  # still queued or running when the wait ended (abandoned ones, when ABANDONED)
    queued_left: int
    waited_s: float
    stall_limit_s: float
    why: str = ""

    def to_json(self) -> dict:
        return {
            "outcome": self.outcome,
            "in_flight_at_end_of_sending": self.in_flight_at_start,
            "left": self.left,
            "queued_left": self.queued_left,
            "abandoned": self.left if self.outcome == ABANDONED else 0,
            "waited_s": round(self.waited_s, 3),
            "stall_limit_s": self.stall_limit_s,
            "why": self.why,
        }


def stall_limit_s(longest_time_limit_ms: int) -> float:
    """How long no activation may end before the platform is taken for stuck (module docstring)."""
    return 2 * longest_time_limit_ms / 1000 + STALL_MARGIN_S


class _Pace:
    """The counts seen so far: when the last activation ended, and the pace for the ETA."""

    def __init__(self, in_flight: int, now: float) -> None:
        self.first, self.last, self.started_at, self.last_end_at = in_flight, in_flight, now, now

    def see(self, in_flight: int, now: float) -> None:
        if in_flight < self.last:
            self.last_end_at = now
        self.last = in_flight

    def line(self, state: dict, now: float) -> str:
        ended, elapsed = self.first - self.last, now - self.started_at
        if ended > 0:
            pace = f"; {ended:,} ended in {elapsed:.0f} s, about {self.last * elapsed / ended:,.0f} s left"
        else:
            pace = f"; none ended in {elapsed:.0f} s" if elapsed >= 1 else ""
        return (
            f"waiting for the embedded localwhisk before stopping it: {self.last:,} activations still queued "
            f"({_count(state, 'queued'):,}) or running ({_count(state, 'running'):,}){pace} (Ctrl-C abandons them)"
        )


def wait_for_in_flight(
    poll: Callable[[], dict],
    longest_time_limit_ms: int,
    progress: Progress = QUIET,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    alive: Callable[[], bool] = lambda: True,
) -> DrainReport:
    """Wait until ``poll()`` (``{"inFlight", "queued", "running"}``; OSError when the platform does
    not answer) says nothing is in flight; see the module docstring for the bound and Ctrl-C. A
    platform too busy to answer a poll is asked again (the stall bound holds); one whose process
    ended (``alive()`` False) holds nothing any more."""
    limit_s = stall_limit_s(longest_time_limit_ms)
    started = clock()
    state = _poll(poll)
    while state is None and alive() and clock() - started < limit_s:
        sleep(POLL_S)
        state = _poll(poll)
    if state is None:
        return DrainReport(
            PLATFORM_GONE, 0, 0, 0, clock() - started, limit_s, "the platform did not answer when the sending ended"
        )
    pace = _Pace(_count(state, "inFlight"), started)
    if pace.last == 0:
        return DrainReport(DRAINED, 0, 0, 0, clock() - started, limit_s)
    progress.say(pace.line(state, started))
    next_say = started + PROGRESS_EVERY_S
    try:
        while True:
            sleep(POLL_S)
            now, answer = clock(), _poll(poll)
            if answer is None and not alive():
                return DrainReport(
                    PLATFORM_GONE,
                    pace.first,
                    pace.last,
                    0,
                    now - started,
                    limit_s,
                    f"the platform exited with {pace.last:,} activations in flight",
                )
            state = answer or state  # unanswered: no news, the stall bound decides
            pace.see(_count(state, "inFlight"), now)
            if pace.last == 0:
                return DrainReport(DRAINED, pace.first, 0, 0, now - started, limit_s)
            if now - pace.last_end_at >= limit_s:
                return DrainReport(
                    STALLED,
                    pace.first,
                    pace.last,
                    _count(state, "queued"),
                    now - started,
                    limit_s,
                    f"no activation ended for {limit_s:g} s (twice the actions' longest time limit plus {STALL_MARGIN_S:g} s)",
                )
            if now >= next_say:
                progress.say(pace.line(state, now))
                next_say = now + PROGRESS_EVERY_S
    except KeyboardInterrupt:
        return DrainReport(
            ABANDONED,
            pace.first,
            pace.last,
            _count(state, "queued"),
            clock() - started,
            limit_s,
            "interrupted (Ctrl-C or SIGTERM) while waiting for them",
        )


def drain_embedded(handle: Any, client: Any, functions: set[str], progress: Progress = QUIET) -> DrainReport | None:
    """``wait_for_in_flight`` on the embedded localwhisk ``handle``, bounded by the time limits of
    the run's ``functions`` as the platform's ``client`` reads them; None when it already exited.
    Says how it ended on ``progress`` when there was anything to wait for."""
    if not handle.alive():
        return None
    limits = action_time_limits_ms(client, functions) if client is not None else {}
    report = wait_for_in_flight(
        handle.in_flight, max(limits.values(), default=DEFAULT_ACTION_TIMEOUT_MS), progress, alive=handle.alive
    )
    if report.outcome == DRAINED and report.in_flight_at_start:
        progress.say(
            f"the embedded localwhisk ended the run's {report.in_flight_at_start:,} remaining activations in {report.waited_s:.1f} s"
        )
    return report


def _poll(poll: Callable[[], dict]) -> dict | None:
    try:
        return poll()
    except OSError:
        return None


def _count(state: dict | None, key: str) -> int:
    value = (state or {}).get(key)
    return value if isinstance(value, int) and value >= 0 else 0


__all__ = [
    "ABANDONED",
    "DRAINED",
    "DrainReport",
    "drain_embedded",
    "PLATFORM_GONE",
    "STALLED",
    "stall_limit_s",
    "wait_for_in_flight",
]
