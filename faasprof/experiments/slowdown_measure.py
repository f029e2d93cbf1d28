"""How the slowdown study measures one function: native and FaaS calls, interleaved, each a ``Call``.

Per function, in one pass, so that both sides see the same host load (on a shared host a phase
measured seconds after another sees other load):

1. a **native worker** (``faasprof.experiments.native.Worker``: the function's code in this Python, the
   interpreter localwhisk's process sandboxes also use) is started and called once, unrecorded (its
   cold call); it stays alive for the function's whole measurement, like the sandbox;
2. one unrecorded FaaS call creates the sandbox;
3. **warm** (alive sandbox): ``repeat`` pairs of one native call and one blocking FaaS call, who
   goes first alternating; each recorded warm call directly follows an unrecorded FaaS call
   (phase ``keep_warm``), so a native call longer than the pause grace cannot leave it a paused
   sandbox;
4. **resumed** (paused sandbox): ``repeat`` times: one native call, then the rest of
   ``pause_wait_s`` since the previous FaaS answer (past the platform's pause grace), then one
   blocking FaaS call, which unpauses the sandbox.

Native execution time is ``perf_counter`` around ``main`` inside the worker; FaaS execution time is
the same span on the platform: localwhisk's ``runTimeUs`` annotation (the run call, µs), else the
activation record's ``duration`` less ``initTime`` (OpenWhisk's resolution: 1 ms). Latency is the
client's round trip (monotonic clock): the worker's pipe natively, the blocking call in FaaS. CPU
time (``cpu_ms``) is the worker's rusage natively and localwhisk's ``runCpuTimeUs`` in process
sandboxes.

Where a record carries the ``containerState`` annotation (localwhisk) a call that did not start as
intended (a warm call that found no warm sandbox, a resumed call that found none paused) does not
count (``Call.counts``); without the annotation (OpenWhisk) every successful call counts. A failed
call is a ``Call`` too, never an exception.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path

from faasprof.errors import FaasprofError, NotReadyError, RunError
from faasprof.experiments import native
from faasprof.functions.catalogue import FunctionEntry
from faasprof.outcomes import final_outcome
from faasprof.progress import QUIET, Progress

RECORD_RESOLUTION_MS = 1.0  # OpenWhisk records carry start/end in whole milliseconds
INTENDED_STATE = {"warm": "warm", "resumed": "resumed"}
NATIVE_RESOLUTION_MS = 0.001  # perf_counter_ns around main, inside the worker
FINE_RESOLUTION_MS = 0.001  # localwhisk's runTimeUs annotation


@dataclass
class Call:
    function: str
    phase: str  # native | warm | resumed
    seq: int
    outcome: str
    container_state: str = ""
    exec_ms: float = math.nan
    latency_ms: float = math.nan
    wait_ms: float = math.nan
    init_ms: float = math.nan
    cpu_ms: float = math.nan
    exec_resolution_ms: float = math.nan
    activation_id: str = ""
    error: str = ""

    @property
    def counts(self) -> bool:
        """Enters the statistics: a success that started as its phase intends (when the record says)."""
        if self.outcome != "success":
            return False
        intended = INTENDED_STATE.get(self.phase)
        return intended is None or self.container_state in ("", intended)


class NativeSide:
    """The function's native worker, kept alive across a function's whole measurement (warm, like its sandbox).

    A worker that dies or times out is restarted and warmed up again (unrecorded) before the next
    recorded call, so every recorded native call is a warm one."""

    def __init__(self, entry: FunctionEntry, params: dict, log_dir: Path | None, worker=None, clock=time.monotonic_ns):
        self.entry = entry
        self.params = params
        self.timeout_s = entry.timeout_ms / 1000
        self.worker = worker if worker is not None else native.Worker(entry, log_dir=log_dir)
        self.clock = clock
        self.problem = ""  # why the worker cannot run (every later call is then not_sent)
        self.started = False
        self.warmups: list[Call] = []  # unrecorded in the statistics, kept as rows of calls.csv

    def _ensure_started(self) -> bool:
        if self.started:
            return True
        if self.problem:
            return False
        try:
            self.worker.start()
        except (RunError, NotReadyError) as error:
            self.problem = str(error)[:300]
            return False
        self.started = True
        # The worker's first call is its cold one (imports, first-touch memory): never in the statistics.
        warmup = self.call("native_warmup", len(self.warmups))
        self.warmups.append(warmup)
        if warmup.outcome in ("timeout", "failed"):
            self.problem = f"the native warm-up call ended {warmup.outcome}: {warmup.error}"[:300]
        return self.started

    def take_warmups(self) -> list[Call]:
        warmups, self.warmups = self.warmups, []
        return warmups

    def call(self, phase: str, seq: int) -> Call:
        name = self.entry.name
        if phase != "native_warmup" and not self._ensure_started():
            return Call(name, phase, seq, "not_sent", error=self.problem)
        sent = self.clock()
        try:
            answer = self.worker.call(self.params, self.timeout_s)
        except native.CallTimeout as error:
            self.worker.kill()
            self.started = False
            return Call(name, phase, seq, "timeout", latency_ms=(self.clock() - sent) / 1e6, error=str(error)[:300])
        except native.WorkerDied as error:
            tail = self.worker.stderr_tail()
            self.worker.stop()
            self.started = False
            return Call(
                name, phase, seq, "failed", latency_ms=(self.clock() - sent) / 1e6, error=f"{error}: {tail}"[:300]
            )
        latency_ms = (self.clock() - sent) / 1e6
        usage = answer.get("rusage") or {}
        call = Call(
            name,
            phase,
            seq,
            "success" if answer.get("ok") else "application_error",
            latency_ms=latency_ms,
            exec_ms=as_float(answer.get("exec_ns")) / 1e6,
            cpu_ms=as_float(usage.get("user_ms")) + as_float(usage.get("sys_ms")),
            exec_resolution_ms=NATIVE_RESOLUTION_MS,
            error=str(answer.get("error") or "")[:300],
        )
        return call

    def stop(self) -> None:
        self.worker.stop()


def invoke_once(client, name: str, params: dict, phase: str, seq: int, clock=time.monotonic_ns) -> Call:
    """One blocking call; a failed call is a row of data, never an exception."""
    sent = clock()
    try:
        response = client.invoke(name, params, blocking=True)
    except FaasprofError as error:
        return Call(name, phase, seq, "failed", latency_ms=(clock() - sent) / 1e6, error=str(error)[:300])
    latency_ms = (clock() - sent) / 1e6
    status = response.status_code
    http = "ok" if 200 <= status < 300 else "app_error" if status == 502 else "throttled" if status == 429 else "failed"
    try:
        body = response.json()
    except ValueError:
        body = None
    record = body if isinstance(body, dict) and "activationId" in body and "response" in body else None
    if status == 202 and record is None:
        # The blocking wait ran out (OpenWhisk answers 202 with the id): no execution time to use.
        return Call(
            name,
            phase,
            seq,
            "no_record",
            latency_ms=latency_ms,
            activation_id=str((body or {}).get("activationId", "")),
            error="blocking wait expired (202)",
        )
    outcome = final_outcome(http, record)
    call = Call(name, phase, seq, outcome, latency_ms=latency_ms)
    if record is None:
        call.error = f"HTTP {status}: {str(body)[:200]}"
        return call
    apply_record(call, record)
    if outcome != "success":
        call.error = str((record.get("response") or {}).get("result"))[:300]
    return call


def apply_record(call: Call, record: dict) -> None:
    """Execution time, CPU time and start state of ``call`` from its activation record.

    localwhisk's ``runTimeUs`` (the run call in µs) is used where present; else the record's
    ``duration`` with its whole-millisecond resolution (less ``initTime`` when the call initialised)."""
    annotations = {a.get("key"): a.get("value") for a in record.get("annotations") or () if isinstance(a, dict)}
    call.activation_id = str(record.get("activationId", ""))
    call.container_state = str(annotations.get("containerState") or "")
    call.wait_ms = as_float(annotations.get("waitTime"))
    call.init_ms = as_float(annotations.get("initTime"))
    run_us = as_float(annotations.get("runTimeUs"))
    if math.isfinite(run_us):
        call.exec_ms, call.exec_resolution_ms = run_us / 1000.0, FINE_RESOLUTION_MS
    else:
        duration_ms = as_float(record.get("duration"))
        call.exec_ms = duration_ms - call.init_ms if math.isfinite(call.init_ms) else duration_ms
        call.exec_resolution_ms = RECORD_RESOLUTION_MS
    call.cpu_ms = as_float(annotations.get("runCpuTimeUs")) / 1000.0


def measure_function(
    entry: FunctionEntry,
    client,
    repeat: int,
    pause_wait_s: float,
    log_dir: Path | None,
    sleep=time.sleep,
    progress: Progress = QUIET,
    clock=time.monotonic_ns,
    worker=None,
) -> list[Call]:
    """Native and FaaS calls of one function, interleaved (module docstring); every call is a row."""
    name, params = entry.name, entry.sample_params()
    side = NativeSide(entry, params, log_dir, worker=worker, clock=clock)
    calls: list[Call] = []
    try:
        side._ensure_started()
        calls += side.take_warmups()
        if side.problem:
            progress.say(f"{name}: the native worker did not start ({side.problem}); its calls are rows of calls.csv")
        warmup = invoke_once(client, name, params, "warmup", 0, clock=clock)
        last_answer_ns = clock()
        if warmup.outcome != "success":
            # Measured anyway: every failed call is a row of calls.csv and the factors stay null.
            progress.say(
                f"{name}: the first call failed ({warmup.outcome}: {warmup.error or 'no detail'}); see calls.csv"
            )
        calls.append(warmup)
        native_seq = 0

        def native_call() -> None:
            nonlocal native_seq
            call = side.call("native", native_seq)
            calls.extend(side.take_warmups())  # a restarted worker's warm-up came before this call
            calls.append(call)
            native_seq += 1

        for seq in range(repeat):
            # Alternate who goes first, so neither side always follows the other's call. A native call
            # longer than the pause grace lets the sandbox pause: an unrecorded call ("keep_warm")
            # right before each recorded warm one wakes it, so the recorded call finds it alive.
            for turn in (0, 1) if seq % 2 == 0 else (1, 0):
                if turn == 0:
                    native_call()
                else:
                    calls.append(invoke_once(client, name, params, "keep_warm", seq, clock=clock))
                    calls.append(invoke_once(client, name, params, "warm", seq, clock=clock))
                    last_answer_ns = clock()
        progress.say(
            f"{name}: {repeat} warm calls, each beside a native one; now {repeat} calls after {pause_wait_s:g} s pauses each"
        )
        for seq in range(repeat):
            native_call()  # while the sandbox waits for its pause
            idle_s = (clock() - last_answer_ns) / 1e9
            sleep(max(pause_wait_s - idle_s, 0.0))
            calls.append(invoke_once(client, name, params, "resumed", seq, clock=clock))
            last_answer_ns = clock()
    finally:
        side.stop()
    return calls


def as_float(value) -> float:
    """A number, or NaN for anything that is not one (a missing annotation, an empty cell)."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan
