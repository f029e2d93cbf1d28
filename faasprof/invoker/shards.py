"""Multi-process send mode: one schedule sent by N processes on one host, merged into one run.

One Python process puts about as many requests per second on the wire as one core allows (see
``bench/bench_invoker.py``). Beyond that, ``faasprof run --send-processes N`` splits the plan:

- **The split** (``split_plan``): whole instances go to the least-loaded process as long as that
  keeps it within ``BALANCE_TOLERANCE`` of an equal share; an instance too big for that (a single
  hot instance, or the last of several equal ones) is split across the processes by alternating
  its invocations, in proportion to the room each process has left. Each process gets its
  invocations in plan order. The split balances counts over the whole run, not per second: an
  instance that is busy only at the start still lands on one process when it fits.
- **One clock**: the children start, read their share and open their invocation logs first; then
  the parent takes the run's monotonic zero (CLOCK_MONOTONIC is one clock for every process on
  the host) and its one wall-clock anchor, and hands the zero to every child. Each child sends its
  share open-loop against that zero with the ordinary ``Dispatcher`` (its own connection pools of
  ``ceil(max_connections / N)`` sockets, its own self-watch that warns when *that* process is the
  bottleneck) and writes rows and send journal with ``rundir.InvocationLog`` into
  ``shards/<k>/`` (seq numbers are the plan's).
- **The merge**: the parent copies the children's rows and journal lines into the run's own
  ``invocations.csv`` and ``sends.csv`` (``rundir.InvocationLog``) every ``MERGE_INTERVAL_S``
  while they run, so the run directory is a normal one at every moment: a ``kill -9`` of the
  parent leaves the torn-run reader its plan, journal and rows (the children see their control
  pipe close, stop, and finish their own ``shards/<k>/`` files, kept for inspection). A child that
  dies (``kill -9``) stops the run (status ``aborted``); its invocations without a row get the
  rows a torn-run reader would give them (``rundir.reconstruct_missing``: ``unanswered`` when the
  journal has the send, else ``unrecorded``), so ``invocations.csv`` holds every planned
  invocation exactly once. After a complete merge ``shards/`` is removed.

Control: the parent writes the share (pickled, so the prepared requests and their credentials go
through a pipe, never to disk) and then JSON lines on each child's stdin: ``{"zero_ns": ...}``,
later ``{"stop": [status, reason]}`` (Ctrl-C, SIGTERM, a failed check, another child gone). The
children (``python -m faasprof.invoker.shard_child``) run in their own session, so a Ctrl-C reaches only
the parent, which stops them in order.
"""

from __future__ import annotations

import csv
import functools
import io
import json
import math
import os
import pickle
import selectors
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from faasprof import rundir
from faasprof.errors import ConfigError, RunError
from faasprof.invoker.dispatch import WATCH_INTERVAL_S, DispatchOptions, DispatchResult
from faasprof.invoker.selfwatch import lateness_summary_ms
from faasprof.invoker.sender import ensure_fd_budget
from faasprof.invoker.shard_child import FRAME
from faasprof.outcomes import pushback_kind
from faasprof.platforms.base import PreparedRequest
from faasprof.progress import QUIET, Progress
from faasprof.rundir import RunStatus

SHARDS_DIR = "shards"
MERGE_INTERVAL_S = 0.25  # the parent's merge and check period (rows reach the top-level files within ~1 s)
BALANCE_TOLERANCE = 0.05  # a whole instance may leave its process this far above an equal share
READY_TIMEOUT_S = 60.0  # a child that has not read its share and opened its log by then is broken
STOP_TIMEOUT_S = 30.0  # after a stop, how long the parent waits for a child before killing it
# Send processes `auto` (the default) starts for a plan: one per this many invocations a second at
# its busiest second. One process held 12,000/s on a loaded 2-core host with --realtime
# (bench/bench_invoker.py --find-max); a default run sends without it, so two thirds of that. At
# most the host's cores: the parent only merges (two processes sending 20,000/s took 1.1 of the
# host's 2 cores, and held the schedule where one process did not).
AUTO_RATE_PER_PROCESS = 8000


# -- the split ------------------------------------------------------------------------------------


def split_plan(instance_idx: np.ndarray, processes: int) -> np.ndarray:
    """The send process (0..processes-1) of every seq; see the module docstring for the rule."""
    owners = np.asarray(instance_idx, dtype=np.int64)
    n = int(owners.size)
    shard_of = np.zeros(n, dtype=np.int32)
    if processes <= 1 or n == 0:
        return shard_of
    counts = np.bincount(owners)
    target = n / processes
    loads = np.zeros(processes, dtype=np.float64)
    # Largest first: the big instances decide the balance, the small ones fill the gaps.
    for instance in np.argsort(-counts, kind="stable"):
        count = int(counts[instance])
        if count == 0:
            continue
        where = np.flatnonzero(owners == instance)
        lightest = int(np.argmin(loads))
        if loads[lightest] + count <= target * (1 + BALANCE_TOLERANCE):
            shard_of[where] = lightest
            loads[lightest] += count
            continue
        room = np.maximum(target - loads, 0.0)
        if room.sum() <= 0:
            room = np.ones(processes)
        per_shard = _apportion(count, room / room.sum())
        shard_of[where] = _interleave(per_shard)
        loads += per_shard
    return shard_of


def _apportion(count: int, weights: np.ndarray) -> np.ndarray:
    """``count`` split in proportion to ``weights`` (largest remainders), summing to ``count``."""
    exact = weights * count
    whole = np.floor(exact).astype(np.int64)
    short = count - int(whole.sum())
    if short:
        whole[np.argsort(-(exact - whole), kind="stable")[:short]] += 1
    return whole


def _interleave(per_shard: np.ndarray) -> np.ndarray:
    """A sequence holding ``per_shard[k]`` times ``k``, each k spread evenly (equal shares alternate)."""
    keys, labels = [], []
    for shard, count in enumerate(per_shard.tolist()):
        if count:
            keys.append((np.arange(count) + 0.5) / count)
            labels.append(np.full(count, shard, dtype=np.int32))
    key, label = np.concatenate(keys), np.concatenate(labels)
    return label[np.lexsort((label, key))]


@dataclass(frozen=True)
class SendProcessChoice:
    """How many send processes a run uses, and why (the manifest's ``invoker.send_processes_choice``)."""

    processes: int
    requested: str  # "auto", or the count the user gave
    busiest_second: int  # invocations planned in the plan's busiest second
    cores: int | None  # the cores this process may run on (auto only)
    why: str
    capped: bool = False  # auto wanted more processes than there are cores

    @property
    def automatic(self) -> bool:
        return self.requested == "auto"

    @property
    def worth_saying(self) -> bool:
        """Whether a run says it on stderr: auto chose more than one process, or fewer than it wanted."""
        return self.automatic and (self.processes > 1 or self.capped)

    def describe(self) -> dict:
        return {
            "requested": self.requested,
            "processes": self.processes,
            "busiest_second_invocations": self.busiest_second,
            "per_process_per_s": AUTO_RATE_PER_PROCESS if self.automatic else None,
            "cores": self.cores,
            "why": self.why,
        }


def choose_processes(value: str | int, busiest_second: float, cores: int | None = None) -> SendProcessChoice:
    """``--send-processes``: a count, or ``auto`` (the default: enough for the plan's busiest
    second at ``AUTO_RATE_PER_PROCESS`` each, at most ``cores``, by default this process's)."""
    busiest = int(busiest_second)
    if isinstance(value, str) and value.strip().lower() == "auto":
        cores = cores or len(os.sched_getaffinity(0))
        needed = max(1, math.ceil(busiest / AUTO_RATE_PER_PROCESS))
        processes = min(needed, cores)
        why = f"auto: the busiest second plans {busiest:,} invocations and one process holds about {AUTO_RATE_PER_PROCESS:,}/s"
        if processes < needed:
            why += f"; {needed} wanted, capped at the cores ({cores})"
        return SendProcessChoice(processes, "auto", busiest, cores, why, capped=processes < needed)
    try:
        count = int(value)
    except (TypeError, ValueError):
        raise ConfigError(f"--send-processes: {value!r} is not a number; pass a count such as 4, or auto") from None
    if count < 1:
        raise ConfigError(
            f"--send-processes: must be at least 1 (got {count}); pass 1 for the single-process sender, or auto"
        )
    return SendProcessChoice(count, str(count), busiest, None, f"--send-processes {count}")


def resolve_processes(value: str | int, busiest_second: float, cores: int | None = None) -> int:
    """The number of ``choose_processes``."""
    return choose_processes(value, busiest_second, cores).processes


def peak_rate_per_s(intended_ns: np.ndarray) -> int:
    """Invocations in the plan's busiest second."""
    if intended_ns.size == 0:
        return 0
    return int(np.bincount(np.asarray(intended_ns) // 1_000_000_000).max())


# -- the parent -----------------------------------------------------------------------------------


@dataclass
class _Child:
    index: int
    seqs: np.ndarray
    directory: Path
    proc: subprocess.Popen | None = None
    result: dict | None = None
    exit_note: str | None = None

    def __post_init__(self) -> None:
        self.follower = rundir.LogFollower(self.directory)  # its InvocationLog's files, read as they grow

    @property
    def process(self) -> subprocess.Popen:
        """The send process: ``ShardedDispatch.start`` starts every child before any other use."""
        assert self.proc is not None, f"send process {self.index} used before it was started"
        return self.proc

    def write(self, data: bytes) -> None:
        """``data`` on the send process's stdin (its share, then the control messages)."""
        stdin = self.process.stdin
        assert stdin is not None  # started with stdin=PIPE
        stdin.write(data)
        stdin.flush()


class ShardedDispatch:
    """Runs one schedule in ``options.send_processes`` child processes and merges them into ``log``.

    ``log`` is the run's own ``rundir.InvocationLog``; ``checks`` are the run's checks (as
    ``Dispatcher``'s), called every ``MERGE_INTERVAL_S``. Call ``start`` (before the run's zero is
    taken), then ``run(zero_ns)``; ``abort`` stops children that ``run`` never got to.
    """

    def __init__(
        self,
        run_dir: str | os.PathLike,
        intended_ns: np.ndarray,
        instance_idx: np.ndarray,
        instances: Sequence[tuple[str, str]],
        requests: Sequence[PreparedRequest],
        log: rundir.InvocationLog,
        options: DispatchOptions,
        checks: Sequence[Callable[[], tuple[RunStatus, str] | None]] = (),
        progress: Progress = QUIET,
        duration_s: float | None = None,
    ):
        self.run_dir = Path(run_dir)
        self.intended = np.ascontiguousarray(intended_ns, dtype=np.int64)
        self.instance_idx = np.ascontiguousarray(instance_idx, dtype=np.int32)
        self.instances = list(instances)
        self.requests = list(requests)
        self.log = log
        self.options = options
        self.checks = list(checks)
        self.progress = progress
        self.n = int(self.intended.size)
        self.duration_s = duration_s if duration_s is not None else (self.intended[-1] / 1e9 if self.n else 0.0)
        processes = max(1, min(int(options.send_processes), self.n or 1))
        shard_of = split_plan(self.instance_idx, processes)
        self.children = [
            _Child(k, np.flatnonzero(shard_of == k), self.run_dir / SHARDS_DIR / str(k)) for k in range(processes)
        ]
        self.recorded = bytearray(self.n)
        self.sent_rel = np.full(self.n, -1, dtype=np.int64)
        self.outcomes: dict[str, int] = {}
        self.pushback: dict[str, int] = {}  # as Dispatcher.pushback, from the merged rows
        self.activation_ids: list[str] = []
        self.sent = 0
        self.rows = 0
        self.stop_status: RunStatus | None = None
        self.stop_reason: str | None = None
        self.children_cpu_s = 0.0
        self.parent_cpu_s = 0.0
        self.warnings: list[str] = []
        self.started = False  # the zero was handed out: from then on rows come from the children
        self._stopped_at: float | None = None
        self.zero_ns = 0
        self._window: list[int] = []  # lateness of sends merged since the last progress line
        self._signals: list[str] = []

    @property
    def processes(self) -> int:
        return len(self.children)

    # -- start ----------------------------------------------------------------------------------

    def start(self, timeout_s: float = READY_TIMEOUT_S) -> None:
        """Start the children, hand each its share, and wait until every one is ready to send."""
        max_connections = max(1, math.ceil(self.options.max_connections / self.processes))
        ensure_fd_budget(max_connections, origins=len({request.origin for request in self.requests}))
        for child in self.children:
            child.directory.mkdir(parents=True, exist_ok=True)
            try:
                # Its own session: a Ctrl-C in the terminal reaches the parent, which stops it in order.
                child.proc = subprocess.Popen(
                    [sys.executable, "-m", "faasprof.invoker.shard_child"],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    start_new_session=True,
                )
            except OSError as error:
                self.abort()
                raise RunError(f"send process {child.index}: could not start ({error.strerror or error})") from None
        # All started before any share is written: their interpreters start up side by side.
        for child in self.children:
            share = {
                "index": child.index,
                "processes": self.processes,
                "directory": str(child.directory),
                "seqs": child.seqs.astype(np.int64),
                "intended_ns": self.intended[child.seqs],
                "instance_idx": self.instance_idx[child.seqs],
                "instances": self.instances,
                "requests": self.requests,
                "options": {**self.options.__dict__, "max_connections": max_connections, "send_processes": 1},
                "duration_s": self.duration_s,
            }
            try:
                blob = pickle.dumps(share, protocol=pickle.HIGHEST_PROTOCOL)
                child.write(FRAME.pack(len(blob)) + blob)
            except OSError as error:
                self.abort()
                raise RunError(
                    f"send process {child.index}: could not take its share ({error.strerror or error}); see the lines above on stderr"
                ) from None
        deadline = time.monotonic() + timeout_s
        for child in self.children:
            line = _read_line(child.process.stdout, deadline)
            if line != b"ready":
                code = child.process.poll()
                self.abort()
                why = f"exited with status {code}" if code is not None else f"not ready within {timeout_s:g} s"
                raise RunError(
                    f"send process {child.index} {why} before the run started (see the lines above on stderr)"
                )

    def abort(self) -> None:
        """Kill children that have not been run (a failure before the zero); nothing was sent."""
        for child in self.children:
            if child.proc is not None and child.proc.poll() is None:
                child.proc.kill()
                child.proc.wait()
        if not self.started:
            shutil.rmtree(self.run_dir / SHARDS_DIR, ignore_errors=True)

    def close_after_failure(self, reason: str) -> None:
        """The run failed in the parent: no child left running, and a row for every seq.

        Before the zero nothing was sent: every seq is ``not_sent``. After it, ``run`` has
        already merged what the children wrote and reconstructed the rest."""
        self.abort()
        if self.started:
            return
        for seq, (intended, owner) in enumerate(zip(self.intended.tolist(), self.instance_idx.tolist())):
            if not self.recorded[seq]:
                self.recorded[seq] = 1
                name, function = self.instances[owner]
                self.log.append((seq, name, function, intended, None, None, "not_sent", None, None, reason))

    # -- run ------------------------------------------------------------------------------------

    def run(self, zero_ns: int) -> DispatchResult:
        """Hand out the zero, merge and watch until every child is done; one row per planned seq."""
        self.zero_ns = zero_ns
        self.started = True
        cpu0 = time.process_time()
        for child in self.children:
            self._tell(child, {"zero_ns": zero_ns})
        restore = self._trap_signals()
        progress_every = max(self.options.progress_interval_s, WATCH_INTERVAL_S)
        next_progress = time.monotonic() + progress_every
        try:
            while any(child.process.poll() is None for child in self.children):
                time.sleep(MERGE_INTERVAL_S)
                if (
                    self._stopped_at is not None
                    and time.monotonic() - self._stopped_at > self.options.interrupt_grace_s + STOP_TIMEOUT_S
                ):
                    self._kill_stragglers()
                self._merge()
                self._watch_children()
                for text in self._signals:
                    self.request_stop(RunStatus.INTERRUPTED, f"{text} received")
                self._signals.clear()
                if self.stop_status is None:
                    for check in self.checks:
                        verdict = check()
                        if verdict is not None:
                            self.request_stop(*verdict)
                            break
                if time.monotonic() >= next_progress:
                    next_progress += progress_every
                    self._progress()
        finally:
            restore()
            for child in self.children:
                if child.process.poll() is None:  # only after an exception in the loop above
                    child.process.kill()
                child.process.wait()
            self._watch_children()
            self._merge()
            self._complete_missing()
        end_ns = time.monotonic_ns()
        self.parent_cpu_s = time.process_time() - cpu0
        self.children_cpu_s = sum(float((c.result or {}).get("cpu_s") or 0.0) for c in self.children)
        if self.rows == self.n and self.log.error is None:
            shutil.rmtree(self.run_dir / SHARDS_DIR, ignore_errors=True)
        results = [c.result or {} for c in self.children]
        wall_s = max((end_ns - zero_ns) / 1e9, 1e-9)
        return DispatchResult.of_schedule(
            self.stop_status,
            self.stop_reason,
            self.intended,
            self.sent_rel,
            self.outcomes,
            cpu_percent=100.0 * (self.children_cpu_s + self.parent_cpu_s) / wall_s,
            send_wall_s=max([float(r.get("send_wall_s") or 0.0) for r in results] or [0.0]),
            total_wall_s=wall_s,
            peak_connections=sum(int(r.get("peak_connections") or 0) for r in results),
            activation_ids=self.activation_ids,
            warnings=self.warnings,
            realtime_applied=bool(results) and all(r.get("realtime_applied") for r in results),
            pushback=dict(sorted(self.pushback.items())),
            never_reached=next((r["never_reached"] for r in results if r.get("never_reached")), None),
        )

    def request_stop(self, status: RunStatus, reason: str) -> None:
        """Stop every child (a second call hurries their drain, as Dispatcher.request_stop)."""
        if self.stop_status is None:
            self.stop_status, self.stop_reason = status, reason
            self._stopped_at = time.monotonic()
        for child in self.children:
            if child.proc is not None and child.proc.poll() is None:
                self._tell(child, {"stop": [self.stop_status, self.stop_reason]})

    def describe(self) -> dict:
        """The manifest's account of the mode: processes, their shares and what each cost."""
        return {
            "send_mode": "multi-process",
            "send_processes": self.processes,
            "cpu_s": round(self.children_cpu_s + self.parent_cpu_s, 3),
            "processes": [
                {
                    "index": c.index,
                    "pid": c.proc.pid if c.proc is not None else None,
                    "planned": int(c.seqs.size),
                    "instances": sorted({self.instances[i][0] for i in np.unique(self.instance_idx[c.seqs]).tolist()}),
                    "status": (c.result or {}).get("status"),
                    "exit": c.exit_note,
                    "cpu_s": (c.result or {}).get("cpu_s"),
                    "cpu_percent": (c.result or {}).get("cpu_percent"),
                    "lateness_ms": (c.result or {}).get("lateness_ms"),
                }
                for c in self.children
            ],
            "merge_cpu_s": round(self.parent_cpu_s, 3),
        }

    # -- internals ------------------------------------------------------------------------------

    def _kill_stragglers(self) -> None:
        """A child still running long after it was told to stop is stuck: its rows are reconstructed."""
        for child in self.children:
            if child.process.poll() is None:
                self.warnings.append(
                    f"send process {child.index + 1} of {self.processes} (pid {child.process.pid}) did not stop within "
                    f"{self.options.interrupt_grace_s + STOP_TIMEOUT_S:g} s of being told to; killed"
                )
                child.process.kill()

    def _tell(self, child: _Child, message: dict) -> None:
        try:
            child.write(json.dumps(message).encode() + b"\n")
        except (BrokenPipeError, OSError, ValueError):
            pass  # it is gone: _watch_children says so

    def _trap_signals(self) -> Callable[[], None]:
        """SIGINT/SIGTERM become stop requests for the children (main thread only)."""
        if threading.current_thread() is not threading.main_thread():
            return lambda: None
        previous = {}
        for sig, label in ((signal.SIGINT, "Ctrl-C (SIGINT)"), (signal.SIGTERM, "SIGTERM")):
            previous[sig] = signal.signal(sig, functools.partial(self._trapped, label))

        def restore() -> None:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

        return restore

    def _trapped(self, label: str, signum: int, frame: object) -> None:
        self._signals.append(label)  # handled by the merge loop: nothing else is safe in a handler

    def _watch_children(self) -> None:
        for child in self.children:
            if child.proc is None or child.exit_note is not None or child.proc.poll() is None:
                continue
            code = child.proc.returncode
            child.exit_note = (
                "exit 0" if code == 0 else (f"killed by signal {-code}" if code < 0 else f"exit status {code}")
            )
            try:
                with open(child.directory / "result.json", encoding="utf-8") as handle:
                    child.result = json.load(handle)
            except (OSError, ValueError):
                child.result = None
            label = f"send process {child.index + 1} of {self.processes} (pid {child.process.pid})"
            for warning in (child.result or {}).get("warnings") or []:
                self.warnings.append(f"{label}: {warning}")
            if child.result is None:
                self.request_stop(
                    RunStatus.ABORTED,
                    f"{label} {child.exit_note} during the run; its invocations without a row are reconstructed (unanswered/unrecorded)",
                )
            elif child.result.get("status") != RunStatus.COMPLETE and self.stop_status is None:
                self.request_stop(_child_status(child.result), f"{label}: {child.result.get('reason')}")

    def _merge(self) -> None:
        """Copy the children's new complete journal lines and rows into the run's files."""
        for child in self.children:
            self._merge_sends(child.follower.new_sends())
            self._merge_rows(child.follower.new_rows())

    def _merge_sends(self, lines: list[bytes]) -> None:
        if lines and not lines[0][:1].isdigit():
            lines = lines[1:]  # the header
        if not lines:
            return
        # Parsed as one array: the parent's CPU is taken from the send processes on a small host.
        pairs = np.array(b",".join(lines).split(b","), dtype=np.int64).reshape(-1, 2)
        seqs, sent_ns = pairs[:, 0], pairs[:, 1]
        fresh = (seqs < self.n) & (seqs >= 0)
        seqs, sent_ns = seqs[fresh], sent_ns[fresh]
        fresh = self.sent_rel[seqs] < 0
        seqs, sent_ns = seqs[fresh], sent_ns[fresh]
        self.sent_rel[seqs] = sent_ns
        self._window.extend((sent_ns - self.intended[seqs]).tolist())
        sent = self.log.sent
        for seq, sent_at in zip(seqs.tolist(), sent_ns.tolist()):
            sent(seq, sent_at)

    def _merge_rows(self, lines: list[bytes]) -> None:
        if not lines:
            return
        append, recorded, outcomes, activation_ids, sent_rel = (
            self.log.append,
            self.recorded,
            self.outcomes,
            self.activation_ids,
            self.sent_rel,
        )
        width = len(rundir.INVOCATION_COLUMNS)
        # The fields go on as the child wrote them (text): InvocationLog writes them back unchanged.
        for row in csv.reader(io.StringIO(b"\n".join(lines).decode("utf-8"))):
            if len(row) != width or not row[0].isdigit():
                continue  # the header
            seq = int(row[0])
            if seq >= self.n or recorded[seq]:
                continue
            recorded[seq] = 1
            outcome = row[6]
            outcomes[outcome] = outcomes.get(outcome, 0) + 1
            if outcome != "ok":
                kind = pushback_kind(outcome, int(row[7]) if row[7] else None, bool(row[4]), row[9])
                if kind is not None:
                    self.pushback[kind] = self.pushback.get(kind, 0) + 1
            if row[8]:
                activation_ids.append(row[8])
            if row[4] and sent_rel[seq] < 0:
                sent_rel[seq] = int(row[4])
            append(row)
        self.rows = int(sum(outcomes.values()))

    def _complete_missing(self) -> None:
        """Rows for invocations no child recorded (a child killed): as a torn-run reader gives them."""
        if self.rows == self.n:
            return
        self.log.flush()  # the journal lines merged so far are on disk for reconstruct_missing
        extra, _ = rundir.reconstruct_missing(
            self.run_dir, np.flatnonzero(np.frombuffer(bytes(self.recorded), dtype=np.uint8)).tolist()
        )
        for row in extra:
            seq = int(row[0])
            if self.recorded[seq]:
                continue
            self.recorded[seq] = 1
            self.rows += 1
            self.outcomes[row[6]] = self.outcomes.get(row[6], 0) + 1
            self.log.append(row)

    def _progress(self) -> None:
        window = np.asarray(self._window, dtype=np.int64)
        self._window = []
        summary = lateness_summary_ms(window)
        elapsed_s = (time.monotonic_ns() - self.zero_ns) / 1e9
        sent = int((self.sent_rel >= 0).sum())
        not_ok = sum(count for outcome, count in self.outcomes.items() if outcome != "ok")
        fmt = lambda v: "-" if v is None else f"{v:.2f}"  # noqa: E731
        self.progress.say(
            f"[{elapsed_s:5.0f} s /{self.duration_s:5.0f} s] sent {sent:,}/{self.n:,} by {self.processes} processes"
            f"  lateness p50 {fmt(summary['p50'])} p99 {fmt(summary['p99'])} max {fmt(summary['max'])} ms"
            f"  ok {self.outcomes.get('ok', 0):,}  not ok {not_ok:,}"
        )


def _child_status(result: dict) -> RunStatus:
    """The status a send process's result.json gives; one it does not name, or names wrongly, aborts."""
    try:
        return RunStatus(result.get("status") or RunStatus.ABORTED)
    except ValueError:
        return RunStatus.ABORTED


def _read_line(stream, deadline: float) -> bytes | None:
    """One line from a child's stdout, or None at its end or at the deadline."""
    selector = selectors.DefaultSelector()
    selector.register(stream, selectors.EVENT_READ)
    buffer = b""
    try:
        while time.monotonic() < deadline:
            if not selector.select(max(0.0, deadline - time.monotonic())):
                return None
            chunk = os.read(stream.fileno(), 1)
            if not chunk:
                return None
            if chunk == b"\n":
                return buffer
            buffer += chunk
        return None
    finally:
        selector.close()
