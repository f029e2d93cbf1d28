"""The absolute-schedule dispatcher: every invocation at its planned instant, whatever happens.

Invocation ``seq`` is due at ``zero_ns + intended_ns[seq]`` on the monotonic clock. The loop
sleeps towards that instant (never "the next gap": oversleeping one gap does not shift the
ones after it) and, when it is behind, sends everything due back to back, so the run never
takes longer than the schedule because of the sender. The lateness of each send
(``sent_ns - intended_ns``) is the tool's own error and is recorded, watched and reported.

Timer precision: uvloop's timers have millisecond resolution (a 0.3 ms sleep returns at once, a
1.5 ms sleep wakes up to 1 ms late), so the dispatcher sleeps on a timer until about a
millisecond before the instant, then lets the loop handle the I/O that is ready and naps at most
``FINE_NAP_NS`` at a time. The loop is never blocked longer than that, so response times stay
accurate to a fraction of a millisecond.

A platform that refuses connections, lets them time out, resets them or answers 429/503 is
measured, not given up on: each call it turns away is a row with its outcome and error, the run
goes on to its planned end, and the result counts the calls by kind of pushback
(``faasprof.outcomes.PUSHBACK_KINDS``). Only a platform never reached (no call's connection
accepted, no answer), whose every connection attempt has failed for ``never_reached_s`` (nothing
listening), stops the run early.

Stopping (Ctrl-C, SIGTERM, nothing listening, a dead required collector, lateness past the abort
threshold) stops sending at once, gives the requests in flight a bounded time, and still leaves
exactly one row per planned invocation: ``not_sent`` for those never sent. The sender is closed
before ``run`` returns, its connection attempts awaited, so the loop closes with nothing pending.
"""

from __future__ import annotations

import asyncio
import gc
import os
import resource
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from faasprof.invoker.selfwatch import SelfWatch, lateness_summary_ms
from faasprof.invoker.sender import DEFAULT_MAX_CONNECTIONS, DEFAULT_REQUEST_TIMEOUT_S, PreparedRequest, Sender
from faasprof.outcomes import NO_CONNECTION_TEXT, STOPPED_IN_FLIGHT_TEXT, pushback_kind
from faasprof.progress import QUIET, Progress
from faasprof.rundir.manifest import RunStatus

COARSE_MARGIN_NS = 1_000_000  # wake from the timer this long before the instant (timer slack)
FINE_NAP_NS = 200_000  # the longest the loop is blocked while waiting for the exact instant
WARM_CONNECTIONS = 4
WARM_CONNECTIONS_MAX = 64
SWITCH_INTERVAL_S = 0.0005  # GIL hand-over interval while sending (Python's default is 5 ms)
YIELD_EVERY = 32  # when behind, let responses in at least every this many sends
WATCH_INTERVAL_S = 0.25  # timeouts, platform and collector checks
DEFAULT_PROGRESS_INTERVAL_S = 5.0
DEFAULT_LATENESS_WARN_MS = 10.0
DEFAULT_INTERRUPT_GRACE_S = 5.0
# A platform never reached (no call's connection accepted, no answer) whose every connection attempt
# has failed this long has nothing listening: the run stops. One reached before is measured,
# whatever it does later.
DEFAULT_NEVER_REACHED_S = 2.0
# Every connection attempt failing this long (a platform reached before) is said, once a run:
# the run's pushback line counts the calls its stalls turned away.
STALL_NOTE_S = 10.0
DEFAULT_REALTIME_PRIORITY = 10
# From this many invocations in the plan's busiest second a run without --realtime is told that it
# would help (measured with bench/bench_invoker.py on a loaded 2-core host: at 4,000/s --realtime
# took the p99 lateness from 1.4-1.6 ms to 0.34 ms; at 20,000/s a default run's server-side p99
# was 17 ms, and 0.9-1.6 ms with two send processes and --realtime).
REALTIME_HINT_PER_S = 4000
CAP_SYS_NICE = 23  # linux/capability.h: the capability SCHED_FIFO needs
# Threads that hold the GIL for the send path's sake (rundir.InvocationLog's flush thread): under
# --realtime they get the send thread's policy (see Dispatcher._enter_realtime).
GIL_COMPANION_THREADS = ("invocation-log",)


@dataclass
class DispatchOptions:
    max_connections: int = DEFAULT_MAX_CONNECTIONS
    request_timeout_s: float = DEFAULT_REQUEST_TIMEOUT_S
    lateness_warn_ms: float | None = DEFAULT_LATENESS_WARN_MS
    lateness_abort_ms: float | None = None
    progress_interval_s: float = DEFAULT_PROGRESS_INTERVAL_S
    interrupt_grace_s: float = DEFAULT_INTERRUPT_GRACE_S
    never_reached_s: float = DEFAULT_NEVER_REACHED_S
    insecure: bool = False
    realtime_priority: int | None = None  # SCHED_FIFO priority of the send thread (opt-in, needs root)
    send_processes: int | str = (
        "auto"  # > 1: the plan is split over that many send processes (invoker.shards); "auto" until resolved
    )
    # `faasprof run --self-check KEY=VALUE`: over the workload's self_check block (invoker.selfcheck).
    self_check: dict[str, float | None] = field(default_factory=dict)

    def describe(self) -> dict:
        return {
            "max_connections": self.max_connections,
            "request_timeout_s": self.request_timeout_s,
            "lateness_warn_ms": self.lateness_warn_ms,
            "lateness_abort_ms": self.lateness_abort_ms,
            "interrupt_grace_s": self.interrupt_grace_s,
            "never_reached_s": self.never_reached_s,
            "realtime_priority": self.realtime_priority,
            "send_processes": self.send_processes,
            "self_check": dict(self.self_check),
        }


def realtime_permitted(priority: int = DEFAULT_REALTIME_PRIORITY) -> bool:
    """Whether this process may send under SCHED_FIFO at ``priority`` (what --realtime asks): an
    RLIMIT_RTPRIO that allows it, or CAP_SYS_NICE among its effective capabilities (root has it
    unless its container dropped it, as Docker does by default)."""
    try:
        soft, _ = resource.getrlimit(resource.RLIMIT_RTPRIO)
        if soft == resource.RLIM_INFINITY or soft >= priority:
            return True
    except (AttributeError, ValueError, OSError):  # not Linux
        return False
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as status:
            for line in status:
                if line.startswith("CapEff:"):
                    return bool(int(line.split()[1], 16) >> CAP_SYS_NICE & 1)
    except (OSError, ValueError, IndexError):
        pass
    return False


def realtime_hint(busiest_second: int, realtime_priority: int | None, permitted: bool) -> str | None:
    """One line telling a run that would profit from --realtime, and may use it, to pass it."""
    if realtime_priority is not None or not permitted or busiest_second < REALTIME_HINT_PER_S:
        return None
    return (
        f"note: the busiest second plans {busiest_second:,} invocations: pass --realtime (this process may use SCHED_FIFO) "
        "so that other processes on the host cannot delay the sends; see the manifest's invoker.lateness_ms"
    )


@dataclass
class DispatchResult:
    status: RunStatus  # complete, interrupted or aborted
    reason: str | None
    planned: int
    sent: int
    outcomes: dict[str, int]
    lateness_ms: dict[str, float | None]
    cpu_percent: float
    send_wall_s: float  # zero → last send (or stop)
    total_wall_s: float  # zero → last row
    peak_connections: int
    activation_ids: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    realtime_applied: bool = False  # the send thread really ran under SCHED_FIFO
    pushback: dict[str, int] = field(default_factory=dict)  # rows per kind of pushback (faasprof.outcomes)
    never_reached: str | None = None  # why the run stopped when nothing ever listened, else None

    def describe(self) -> dict:
        return {
            "status": self.status,
            "reason": self.reason,
            "lateness_ms": self.lateness_ms,
            "cpu_percent": round(self.cpu_percent, 1),
            "send_wall_s": round(self.send_wall_s, 3),
            "total_wall_s": round(self.total_wall_s, 3),
            "peak_connections": self.peak_connections,
            "realtime_applied": self.realtime_applied,
            "pushback": self.pushback,
            "never_reached": self.never_reached,
            "warnings": self.warnings,
        }

    @classmethod
    def of_schedule(
        cls,
        status: RunStatus | None,
        reason: str | None,
        intended: np.ndarray,
        sent_rel: np.ndarray,
        outcomes: dict[str, int],
        **costs,
    ) -> "DispatchResult":
        """The result of a schedule whose sends are ``sent_rel`` (ns from zero, -1 = not sent):
        what one sender and the merged send processes both report."""
        sent_mask = sent_rel >= 0
        return cls(
            status=status or RunStatus.COMPLETE,
            reason=reason,
            planned=len(intended),
            sent=int(sent_mask.sum()),
            outcomes=dict(sorted(outcomes.items())),
            lateness_ms=lateness_summary_ms(sent_rel[sent_mask] - intended[sent_mask]),
            **costs,
        )


class Dispatcher:
    """Runs one schedule against prepared requests and writes one row per planned invocation.

    ``row_sink`` receives tuples in ``faasprof.rundir.INVOCATION_COLUMNS`` order (usually
    ``InvocationLog.append``); ``journal`` (usually ``InvocationLog.sent``) each send as it happens. ``checks`` are called every ``WATCH_INTERVAL_S``; one returning
    ``(status, reason)`` stops the run with that status. ``progress`` gets the progress lines.
    """

    def __init__(
        self,
        intended_ns: np.ndarray,
        instance_idx: np.ndarray,
        instances: Sequence[tuple[str, str]],  # (instance name, function) per request index
        requests: Sequence[PreparedRequest],
        row_sink: Callable[[tuple], None],
        options: DispatchOptions | None = None,
        checks: Sequence[Callable[[], tuple[RunStatus, str] | None]] = (),
        progress: Progress = QUIET,
        duration_s: float | None = None,
        journal: Callable[[int, int], None] | None = None,
    ):
        self.intended = np.asarray(intended_ns, dtype=np.int64)
        self.instance_idx = np.asarray(instance_idx, dtype=np.int32)
        if self.intended.size and np.any(np.diff(self.intended) < 0):
            raise ValueError("intended_ns must be ascending")
        self.instances = list(instances)
        self.requests = list(requests)
        self.row_sink = row_sink
        # Told of every send (seq, sent_ns on the run clock) the moment its bytes are written:
        # usually ``InvocationLog.sent``, the send journal that survives a kill -9.
        self.journal = journal
        self.options = options or DispatchOptions()
        self.checks = list(checks)
        self.progress = progress
        self.duration_s = (
            duration_s if duration_s is not None else (self.intended[-1] / 1e9 if self.intended.size else 0.0)
        )
        n = int(self.intended.size)
        self.n = n
        self.recorded = bytearray(n)
        self.sent_rel = np.full(n, -1, dtype=np.int64)
        self.outcomes: dict[str, int] = {}
        self.pushback: dict[str, int] = {}
        self.never_reached: str | None = None
        self._stall_said = False
        self.activation_ids: list[str] = []
        self.warnings: list[str] = []
        self.sent = 0
        self.stop_status: RunStatus | None = None
        self.stop_reason: str | None = None
        self.zero_ns = 0
        self._sleeper: asyncio.Future | None = None
        self._selfwatch = SelfWatch(
            self.options.lateness_warn_ms,
            self.options.lateness_abort_ms,
            self.options.max_connections,
            n,
            self.duration_s,
            self.options.progress_interval_s,
        )
        # The plan as Python ints, read per send and per row (numpy scalars are slower there); here,
        # not in run(), so that rows can be written also for a dispatcher that never ran.
        self._intended_list: list[int] = self.intended.tolist()
        self._stop_event: asyncio.Event | None = None  # while run() runs: wakes the drain on a stop
        self._hurry = False

    # -- callbacks from the sender (hot path) ---------------------------------------------------

    def _on_sent(self, seq: int, sent_ns: int) -> None:
        rel = sent_ns - self.zero_ns
        self.sent_rel[seq] = rel
        self.sent += 1
        self._selfwatch.window.append(rel - self._intended_list[seq])
        journal = self.journal
        if journal is not None:
            journal(seq, rel)

    def _complete(
        self,
        seq: int,
        sent_ns: int | None,
        done_ns: int | None,
        outcome: str,
        status: int | None,
        activation_id: str | None,
        error: str | None,
    ) -> None:
        if self.recorded[seq]:
            return
        self.recorded[seq] = 1
        zero = self.zero_ns
        name, function = self.instances[self.instance_idx[seq]]
        self.row_sink(
            (
                seq,
                name,
                function,
                self._intended_list[seq],
                None if sent_ns is None else sent_ns - zero,
                None if done_ns is None else done_ns - zero,
                outcome,
                status,
                activation_id,
                error,
            )
        )
        self.outcomes[outcome] = self.outcomes.get(outcome, 0) + 1
        if activation_id:
            self.activation_ids.append(activation_id)
        if outcome != "ok":
            kind = pushback_kind(outcome, status, sent_ns is not None, error)
            if kind is not None:
                self.pushback[kind] = self.pushback.get(kind, 0) + 1

    # -- control --------------------------------------------------------------------------------

    def request_stop(self, status: RunStatus, reason: str) -> None:
        """Stop sending (safe from signal handlers on the loop and from checks); a second call hurries the drain."""
        if self.stop_status is not None:
            self._hurry = True
        else:
            self.stop_status, self.stop_reason = status, reason
        if self._sleeper is not None and not self._sleeper.done():
            self._sleeper.set_result(None)
        if self._stop_event is not None:
            self._stop_event.set()

    async def _sleep(self, loop: asyncio.AbstractEventLoop, delay_s: float) -> None:
        future = loop.create_future()
        handle = loop.call_later(delay_s, _wake, future)
        self._sleeper = future
        try:
            await future
        finally:
            handle.cancel()
            self._sleeper = None

    # -- the run --------------------------------------------------------------------------------

    async def run(self, zero_ns: int) -> DispatchResult:
        """Send the schedule relative to ``zero_ns`` (a ``time.monotonic_ns()`` value)."""
        loop = asyncio.get_running_loop()
        stop_event = self._stop_event = asyncio.Event()
        self.zero_ns = zero_ns
        options = self.options
        sender = Sender(loop, self.requests, self._complete, self._on_sent, options.max_connections, options.insecure)
        # A few keep-alive connections opened before zero keep the first sends from paying for
        # TCP (and TLS) set-up; it never waits past zero.
        await sender.warm(self._warm_count(), zero_ns)
        cpu0 = time.process_time()
        watch = loop.create_task(self._watch(sender))
        # The invocation log's flush thread formats thousands of rows at a time; with Python's
        # default 5 ms switch interval it could hold the send loop off for 5 ms at a go.
        switch_interval = sys.getswitchinterval()
        sys.setswitchinterval(SWITCH_INTERVAL_S)
        # A full garbage collection over everything imported takes 10-30 ms, enough to make a
        # burst of sends late. The send path makes almost no reference cycles (a few hundred
        # objects in a 150,000-request run), so the collector waits until the run is over.
        gc_was_enabled = gc.isenabled()
        gc.freeze()
        gc.disable()
        restore_policy = self._enter_realtime()
        try:
            await self._send_all(loop, sender)
            send_end_ns = time.monotonic_ns()
            await self._drain(sender, stop_event)
        finally:
            if restore_policy is not None:
                restore_policy()
            if gc_was_enabled:
                gc.enable()
            gc.unfreeze()
            sys.setswitchinterval(switch_interval)
            watch.cancel()
            try:
                await watch
            except asyncio.CancelledError:
                pass
            await sender.aclose()
        self._fill_not_sent()
        end_ns = time.monotonic_ns()
        cpu_percent = 100.0 * (time.process_time() - cpu0) / max((end_ns - zero_ns) / 1e9, 1e-9)
        return DispatchResult.of_schedule(
            self.stop_status,
            self.stop_reason,
            self.intended,
            self.sent_rel,
            self.outcomes,
            cpu_percent=cpu_percent,
            send_wall_s=(send_end_ns - zero_ns) / 1e9,
            total_wall_s=(end_ns - zero_ns) / 1e9,
            peak_connections=sender.peak_connections,
            activation_ids=self.activation_ids,
            warnings=self.warnings + self._selfwatch.warnings,
            realtime_applied=restore_policy is not None,
            pushback=dict(sorted(self.pushback.items())),
            never_reached=self.never_reached,
        )

    def _warm_count(self) -> int:
        """Connections to open ahead: enough for the largest burst within a millisecond (bounded)."""
        if self.n == 0:
            return 0
        _, per_ms = np.unique(self.intended // 1_000_000, return_counts=True)
        return int(min(max(WARM_CONNECTIONS, per_ms.max()), WARM_CONNECTIONS_MAX, self.options.max_connections))

    def _enter_realtime(self) -> Callable[[], None] | None:
        """Opt-in: run the send thread under SCHED_FIFO, so that other processes on a shared host
        cannot delay its wake-ups (the kernel still keeps 5% of each second for everyone else).

        The invocation log's flush thread gets the same policy: it holds the GIL while it formats
        rows, and at the normal policy a loaded host preempts it *while holding it*, so the send
        thread waited for the GIL (priority inversion; measured with bench/bench_invoker.py
        --realtime on a loaded 2-core host at 4,000/s: p99 1.4-1.6 ms, 0.34 ms with it). It blocks
        in fsync without the GIL and sleeps between flushes, so it takes little CPU from others."""
        priority = self.options.realtime_priority
        if not priority or not hasattr(os, "sched_setscheduler"):
            return None
        try:
            previous = os.sched_getscheduler(0), os.sched_getparam(0)
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(priority))
        except OSError as error:
            self.warnings.append(
                f"--realtime: could not use SCHED_FIFO ({error.strerror}); it needs root or CAP_SYS_NICE; ran with the normal policy"
            )
            self.progress.warn(self.warnings[-1])
            return None
        companions = []
        for thread in threading.enumerate():
            if thread.name in GIL_COMPANION_THREADS and thread.native_id is not None:
                try:
                    os.sched_setscheduler(thread.native_id, os.SCHED_FIFO, os.sched_param(priority))
                    companions.append(thread.native_id)
                except OSError:
                    pass  # it just ended

        def restore() -> None:
            os.sched_setscheduler(0, previous[0], previous[1])
            for tid in companions:
                try:
                    os.sched_setscheduler(tid, previous[0], previous[1])
                except OSError:
                    pass  # it ended with the run's log

        return restore

    async def _send_all(self, loop: asyncio.AbstractEventLoop, sender: Sender) -> None:
        mono = time.monotonic_ns
        zero = self.zero_ns
        targets = self._intended_list
        request_of = self.instance_idx.tolist()
        submit = sender.submit
        n = self.n
        i = 0
        burst = 0
        while i < n:
            if self.stop_status is not None:
                return
            now = mono()
            target = zero + targets[i]
            if now < target:
                burst = 0
                wait = target - now
                if wait > COARSE_MARGIN_NS + FINE_NAP_NS:
                    await self._sleep(loop, (wait - COARSE_MARGIN_NS) / 1e9)
                else:
                    await asyncio.sleep(0)  # handle the I/O that is ready
                    now = mono()
                    if now < target:
                        time.sleep(min(target - now, FINE_NAP_NS) / 1e9)
                continue
            submit(i, request_of[i])
            i += 1
            burst += 1
            if burst >= YIELD_EVERY:
                burst = 0
                await asyncio.sleep(0)

    async def _drain(self, sender: Sender, stop_event: asyncio.Event) -> None:
        """Wait for responses: up to the request timeout normally, a short grace when stopping."""
        if self.stop_status is not None:
            self._drop_waiting(sender)
        deadline = time.monotonic() + self.options.request_timeout_s + 2 * WATCH_INTERVAL_S
        grace_deadline = None
        while sender.in_flight or sender.waiting:
            if self.stop_status is not None:
                self._drop_waiting(sender)
                if grace_deadline is None:
                    grace_deadline = time.monotonic() + self.options.interrupt_grace_s
                    if sender.in_flight:
                        self.progress.say(
                            f"waiting up to {self.options.interrupt_grace_s:g} s for {sender.in_flight} request(s) in flight"
                        )
                if self._hurry or time.monotonic() >= grace_deadline:
                    sender.abort_in_flight(f"{STOPPED_IN_FLIGHT_TEXT} ({self.stop_reason})")
                    break
            if time.monotonic() >= deadline:
                sender.abort_in_flight(f"no response within {self.options.request_timeout_s:g} s")
                for seq in sender.drop_waiting():
                    self._complete(seq, None, None, "not_sent", None, None, f"{NO_CONNECTION_TEXT} when the run ended")
                break
            stop_event.clear()
            try:
                await asyncio.wait_for(stop_event.wait(), 0.05)
            except asyncio.TimeoutError:
                pass

    def _drop_waiting(self, sender: Sender) -> None:
        for seq in sender.drop_waiting():
            self._complete(
                seq,
                None,
                None,
                "not_sent",
                None,
                None,
                f"waiting for a connection when the run stopped ({self.stop_reason})",
            )

    def close_after_failure(self, status: RunStatus, reason: str) -> None:
        """The run failed around the send loop (before it, or the loop itself raised): stop with
        ``status``/``reason`` and give every planned invocation still without a row its row."""
        self.stop_status, self.stop_reason = status, reason
        self._fill_not_sent()

    def _fill_not_sent(self) -> None:
        """One row for every invocation still without one: ``not_sent``, or ``timeout`` when its
        request was written (the run gave up on its answer, e.g. after a failure of faasprof)."""
        why = f"run {self.stop_status}: {self.stop_reason}" if self.stop_status else "never sent"
        sent_rel = self.sent_rel
        for seq in range(self.n):
            if self.recorded[seq]:
                continue
            if sent_rel[seq] >= 0:
                self._complete(
                    seq, self.zero_ns + int(sent_rel[seq]), None, "timeout", None, None, f"no answer recorded: {why}"
                )
            else:
                self._complete(seq, None, None, "not_sent", None, None, why)

    # -- self-watch -----------------------------------------------------------------------------

    async def _watch(self, sender: Sender) -> None:
        options = self.options
        progress_every = max(options.progress_interval_s, WATCH_INTERVAL_S)
        next_progress = time.monotonic() + progress_every
        watch = self._selfwatch
        watch.restart()
        saturated_before = 0
        while True:
            await asyncio.sleep(WATCH_INTERVAL_S)
            sender.sweep_timeouts(options.request_timeout_s)
            if self.stop_status is None:
                self._check_platform(sender)
                for check in self.checks:
                    stop = check()
                    if stop is not None and self.stop_status is None:
                        self.request_stop(*stop)
            if time.monotonic() < next_progress:
                continue
            next_progress += progress_every
            saturated = sender.saturated
            verdict = watch.verdict(
                (time.monotonic_ns() - self.zero_ns) / 1e9,
                self.sent,
                sender.in_flight,
                saturated - saturated_before,
                self.outcomes,
            )
            saturated_before = saturated
            self.progress.say(verdict.progress)
            if verdict.abort and self.stop_status is None:
                self.request_stop(RunStatus.ABORTED, verdict.abort)
            elif verdict.warning:
                self.progress.warn(verdict.warning)

    def _check_platform(self, sender: Sender) -> None:
        """Nothing listening (never reached, every attempt failing for ``never_reached_s``) stops
        the run. A platform reached before that now refuses or stalls is measured: its calls' rows
        say so, and the first long stall is said as it happens."""
        span_s, why = sender.never_reached_for_s()
        if span_s >= self.options.never_reached_s:
            self.never_reached = (
                f"the platform never took a call: every connection attempt failed for {span_s:.1f} s ({why})"
            )
            self.request_stop(RunStatus.INTERRUPTED, self.never_reached)
            return
        if self._stall_said:
            return
        span_s, why = sender.failing_for_s()
        if span_s >= STALL_NOTE_S:
            self._stall_said = True
            self.progress.warn(
                f"every connection attempt has failed for {span_s:.0f} s ({why}); the run goes on, each call a row"
            )


def _wake(future: asyncio.Future) -> None:
    if not future.done():
        future.set_result(None)


def new_event_loop() -> asyncio.AbstractEventLoop:
    """uvloop when installed (several times cheaper per request), else asyncio's default loop."""
    try:  # uvloop is optional (none on Windows): asyncio's loop is the fallback
        import uvloop
    except ImportError:
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


__all__ = ["Dispatcher", "DispatchOptions", "DispatchResult", "new_event_loop", "lateness_summary_ms"]
