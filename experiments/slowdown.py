"""Containerisation slowdown (the paper's Figures 15 and 16): the same function natively and in FaaS.

Per function, in one pass, so that both sides see the same host load (on a shared host a phase
measured seconds after another sees other load):

1. a **native worker** (``experiments.native.Worker``: the function's code in this Python, the
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
activation record's ``duration`` less ``initTime`` (OpenWhisk's resolution: 1 ms). A FaaS execution
median under ``RESOLUTION_STEPS`` resolution steps gives no execution factor (null, and ``notes``
says "below resolution"): rounding alone could move it by more than 5 %. Latency is the client's
round trip (monotonic clock): the worker's pipe natively, the blocking call in FaaS. CPU time
(``cpu_ms``) is the worker's rusage natively and localwhisk's ``runCpuTimeUs`` in process
sandboxes: wall time well above CPU time means the call waited for a CPU.

Where a record carries the ``containerState`` annotation (localwhisk) a call that did not start as
intended (a warm call that found no warm sandbox, a resumed call that found none paused) is kept in
``calls.csv`` but left out of the medians, and counted in ``slowdown.csv``; without the annotation
(OpenWhisk) every successful call counts. Only calls with final outcome ``success``
(``faasprof.outcomes``) enter the statistics; the others are counted as failures.

Medians carry distribution-free 95 % confidence intervals (``analyzer.stats.quantile_ci``; null
below ``MEDIAN_CI_MIN_SAMPLES`` = 8 samples: too few for a 95 % interval). Slowdown factors are
FaaS median / native median, for execution time, latency and CPU time. ``notes`` says in plain words when a factor shows no
slowdown (≤ 1), when the FaaS median lies within the native calls' own range (not significant), and
when calls waited for a CPU (median wall time over ``WAIT_RATIO`` × CPU time: a loaded host).

Figure 16 fits ``slowdown = a · native_exec_ms ** b`` by least squares in log-log space over the
functions with both values; ``b`` is the exponent shown on the plot and stored in the manifest.

Output directory ``<out>/slowdown-<stamp>/`` (never reused): ``manifest.json`` (format version,
functions, platform, native command and interpreter, settings, fits), ``slowdown.csv``,
``calls.csv`` (every call, warm-ups included), ``fig15_slowdown_per_function.png``,
``fig16_slowdown_vs_native.png``, ``native/<function>/`` (the native worker's stdout and stderr)
and, on the embedded platform, ``localwhisk/`` (its records and log).

Format versions (``SLOWDOWN_FORMAT_VERSION``): 1: first version (native measured first, in its own
run directory; FaaS execution from the record's duration only). 2: native and FaaS calls
interleaved, native calls in ``calls.csv``; ``cpu_ms``, ``exec_resolution_ms`` and ``notes``;
execution from ``runTimeUs`` where the platform gives it.
"""

from __future__ import annotations

import csv
import math
import os
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import matplotlib
import matplotlib.ticker

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from analyzer.markup import ms
from analyzer.stats import min_samples_for_interval, quantile_ci
from faasprof import __version__, rundir
from faasprof.errors import ConfigError, FaasprofError, NotReadyError, RunError
from faasprof.outcomes import final_outcome
from experiments import native
from functions.catalogue import FunctionEntry
from localwhisk.embedded import start_embedded
from platforms.openwhisk.client import OpenWhiskClient
from platforms.openwhisk.connection import Connection
from platforms.openwhisk.deploy import ensure_actions

SLOWDOWN_FORMAT_VERSION = 2
SLOWDOWN_CSV = "slowdown.csv"
CALLS_CSV = "calls.csv"
FIG15 = "fig15_slowdown_per_function.png"
FIG16 = "fig16_slowdown_vs_native.png"
RECORD_RESOLUTION_MS = 1.0  # OpenWhisk records carry start/end in whole milliseconds
REMOTE_PAUSE_WAIT_S = 11.0  # past OpenWhisk 2.x's 10 s pause grace (1.0.0: 50 ms)
EMBEDDED_PAUSE_MARGIN_S = 0.5
INTENDED_STATE = {"warm": "warm", "resumed": "resumed"}
CALL_COLUMNS = ("function", "phase", "seq", "outcome", "container_state", "exec_ms", "exec_resolution_ms", "cpu_ms", "latency_ms",
                "wait_ms", "init_ms", "activation_id", "error")
MEASURES = ("exec_ms", "latency_ms", "cpu_ms")
TEXT_COLUMNS = ("function", "notes")
NOTE_SEPARATOR = " | "  # between the sentences of slowdown.csv's notes (a sentence may hold "; ")
NATIVE_RESOLUTION_MS = 0.001  # perf_counter_ns around main, inside the worker
FINE_RESOLUTION_MS = 0.001  # localwhisk's runTimeUs annotation
# An execution median under this many resolution steps gives no factor: its rounding alone could
# move the factor by more than 5 %.
RESOLUTION_STEPS = 20
# A median execution (wall) time this much above the median CPU time: the calls waited for a CPU.
WAIT_RATIO = 1.25
# CPU-time factors further than this from 1, for functions whose native CPU time is long enough for
# the sandbox's own costs (pipe, JSON: tens of µs) to vanish, reflect the two processes' own speeds.
PROCESS_SPEED_SPREAD = 0.10
PROCESS_SPEED_MIN_MS = 20.0
# Fewer calls than this per phase give a median without a 95 % interval: ``--repeat`` below it is warned about.
MEDIAN_CI_MIN_SAMPLES = min_samples_for_interval(0.5)


@dataclass
class SlowdownOptions:
    repeat: int = 10
    pause_wait_s: float | None = None  # None: the embedded grace + margin, or REMOTE_PAUSE_WAIT_S
    isolation: str | None = None
    pause_grace_ms: float | None = None
    memory_mb: int | None = None
    extra_settings: dict = field(default_factory=dict)


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


# -- measuring ---------------------------------------------------------------------------------


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
            return Call(name, phase, seq, "failed", latency_ms=(self.clock() - sent) / 1e6, error=f"{error}: {tail}"[:300])
        latency_ms = (self.clock() - sent) / 1e6
        usage = answer.get("rusage") or {}
        call = Call(name, phase, seq, "success" if answer.get("ok") else "application_error", latency_ms=latency_ms,
                    exec_ms=_float(answer.get("exec_ns")) / 1e6, cpu_ms=_float(usage.get("user_ms")) + _float(usage.get("sys_ms")),
                    exec_resolution_ms=NATIVE_RESOLUTION_MS, error=str(answer.get("error") or "")[:300])
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
        return Call(name, phase, seq, "no_record", latency_ms=latency_ms, activation_id=str((body or {}).get("activationId", "")),
                    error="blocking wait expired (202)")
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
    call.wait_ms = _float(annotations.get("waitTime"))
    call.init_ms = _float(annotations.get("initTime"))
    run_us = _float(annotations.get("runTimeUs"))
    if math.isfinite(run_us):
        call.exec_ms, call.exec_resolution_ms = run_us / 1000.0, FINE_RESOLUTION_MS
    else:
        duration_ms = _float(record.get("duration"))
        call.exec_ms = duration_ms - call.init_ms if math.isfinite(call.init_ms) else duration_ms
        call.exec_resolution_ms = RECORD_RESOLUTION_MS
    call.cpu_ms = _float(annotations.get("runCpuTimeUs")) / 1000.0


def measure_function(entry: FunctionEntry, client, repeat: int, pause_wait_s: float, log_dir: Path | None, sleep=time.sleep,
                     say: Callable[[str], None] | None = None, clock=time.monotonic_ns, worker=None) -> list[Call]:
    """Native and FaaS calls of one function, interleaved (module docstring); every call is a row."""
    name, params = entry.name, entry.sample_params()
    side = NativeSide(entry, params, log_dir, worker=worker, clock=clock)
    calls: list[Call] = []
    try:
        side._ensure_started()
        calls += side.take_warmups()
        if side.problem and say:
            say(f"{name}: the native worker did not start ({side.problem}); its calls are rows of calls.csv")
        warmup = invoke_once(client, name, params, "warmup", 0, clock=clock)
        last_answer_ns = clock()
        if warmup.outcome != "success" and say:
            # Measured anyway: every failed call is a row of calls.csv and the factors stay null.
            say(f"{name}: the first call failed ({warmup.outcome}: {warmup.error or 'no detail'}); see calls.csv")
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
            for turn in ((0, 1) if seq % 2 == 0 else (1, 0)):
                if turn == 0:
                    native_call()
                else:
                    calls.append(invoke_once(client, name, params, "keep_warm", seq, clock=clock))
                    calls.append(invoke_once(client, name, params, "warm", seq, clock=clock))
                    last_answer_ns = clock()
        if say:
            say(f"{name}: {repeat} warm calls, each beside a native one; now {repeat} calls after {pause_wait_s:g} s pauses each")
        for seq in range(repeat):
            native_call()  # while the sandbox waits for its pause
            idle_s = (clock() - last_answer_ns) / 1e9
            sleep(max(pause_wait_s - idle_s, 0.0))
            calls.append(invoke_once(client, name, params, "resumed", seq, clock=clock))
            last_answer_ns = clock()
    finally:
        side.stop()
    return calls


# -- statistics --------------------------------------------------------------------------------


def median_ci(values) -> tuple[float, float, float]:
    data = np.sort(np.asarray([v for v in values if math.isfinite(v)], dtype=float))
    return quantile_ci(data, 0.5)


def summarise_function(function: str, calls: list[Call]) -> dict:
    """One row of ``slowdown.csv`` from every call of one function."""
    row: dict = {"function": function}
    medians: dict[tuple[str, str], float] = {}
    used_by_phase: dict[str, list[Call]] = {}
    for phase in ("native", "warm", "resumed"):
        mine = [c for c in calls if c.phase == phase]
        used = used_by_phase[phase] = [c for c in mine if c.counts]
        row[f"{phase}_n"] = len(used)
        row[f"{phase}_failed"] = sum(1 for c in mine if c.outcome != "success")
        if phase in INTENDED_STATE:
            row[f"{phase}_other_start"] = sum(1 for c in mine if c.outcome == "success" and not c.counts)
        for measure in MEASURES:
            estimate, low, high = median_ci([getattr(c, measure) for c in used])
            label = "round_trip_ms" if phase == "native" and measure == "latency_ms" else measure
            row[f"{phase}_{label}"] = estimate
            row[f"{phase}_{label}_ci_low"] = low
            row[f"{phase}_{label}_ci_high"] = high
            medians[(phase, measure)] = estimate
        steps = [c.exec_resolution_ms for c in used if math.isfinite(c.exec_resolution_ms)]
        row[f"{phase}_exec_resolution_ms"] = max(steps) if steps else math.nan
        if phase != "native":
            row[f"{phase}_wait_ms"] = median_ci([c.wait_ms for c in used])[0]
    notes: list[str] = []
    for phase in ("warm", "resumed"):
        resolution = max(_finite_or(row[f"{phase}_exec_resolution_ms"], 0.0), _finite_or(row["native_exec_resolution_ms"], 0.0))
        faas_exec = medians[(phase, "exec_ms")]
        if _positive(faas_exec) and _positive(medians[("native", "exec_ms")]) and faas_exec < RESOLUTION_STEPS * resolution:
            row[f"slowdown_exec_{phase}"] = math.nan
            notes.append(f"execution {phase}: below resolution (median {ms(faas_exec, 4)}, records resolve {ms(resolution)}): no factor")
        else:
            row[f"slowdown_exec_{phase}"] = _ratio(faas_exec, medians[("native", "exec_ms")])
        row[f"slowdown_latency_{phase}"] = _ratio(medians[(phase, "latency_ms")], medians[("native", "latency_ms")])
        row[f"slowdown_cpu_{phase}"] = _ratio(medians[(phase, "cpu_ms")], medians[("native", "cpu_ms")])
        for measure, key in (("exec_ms", "exec"), ("latency_ms", "latency")):
            note = judge_factor(key, phase, row[f"slowdown_{key}_{phase}"], medians[(phase, measure)],
                                [getattr(c, measure) for c in used_by_phase["native"]])
            if note:
                notes.append(note)
    waiting = [f"{phase} {ms(medians[(phase, 'exec_ms')], 4)} wall vs {ms(medians[(phase, 'cpu_ms')], 4)} CPU"
               for phase in ("native", "warm", "resumed")
               if _positive(medians[(phase, "cpu_ms")]) and _positive(medians[(phase, "exec_ms")])
               and medians[(phase, "exec_ms")] > WAIT_RATIO * medians[(phase, "cpu_ms")]]
    if waiting:
        cpu_factors = ", ".join(f"×{row[f'slowdown_cpu_{p}']:.3g} {p}" for p in ("warm", "resumed") if _positive(row[f"slowdown_cpu_{p}"]))
        notes.append(f"calls waited for a CPU ({', '.join(waiting)}): the host is loaded, execution factors carry that load"
                     + (f"; CPU-time factors {cpu_factors} compare the code's own speed" if cpu_factors else ""))
    native_cpu = medians[("native", "cpu_ms")]
    for phase in ("warm", "resumed"):
        factor = row[f"slowdown_cpu_{phase}"]
        if _positive(factor) and native_cpu >= PROCESS_SPEED_MIN_MS and abs(factor - 1.0) > PROCESS_SPEED_SPREAD:
            notes.append(f"CPU time {phase} ×{factor:.3g}: the same code took {'more' if factor > 1 else 'less'} CPU in the sandbox than in "
                         f"the native worker; on a shared VM one process of an interpreter can run 10–30 % slower than another "
                         f"for its whole life (more so under load), so one process per side can tip a long function's factor either way: "
                         f"repeat the run")
    row["notes"] = NOTE_SEPARATOR.join(notes)
    return row


def judge_factor(measure: str, phase: str, factor: float, faas_median_ms: float, native_values_ms: list[float]) -> str:
    """A plain sentence when a factor says no slowdown, or one the native calls' own spread covers; else ""."""
    values = [v for v in native_values_ms if math.isfinite(v)]
    if not _positive(factor) or not values:
        return ""
    low, high = min(values), max(values)
    label = "execution" if measure == "exec" else "latency"
    if low <= faas_median_ms <= high:
        return (f"{label} {phase} ×{factor:.3g}: not significant (FaaS median {ms(faas_median_ms, 4)} lies within the native calls' "
                f"range {ms(low, 4)}–{ms(high, 4)}: at this length the platform adds less than the run-to-run variation)")
    if factor <= 1:
        return (f"{label} {phase} ×{factor:.3g}: FaaS faster than native (median {ms(faas_median_ms, 4)} under every native call, "
                f"{ms(low, 4)}–{ms(high, 4)}); compare cpu_ms in calls.csv to tell slower code from time spent waiting for a CPU")
    return ""


def fit_power_law(x, y) -> dict | None:
    """``y = a · x ** b`` by least squares on logs over the finite positive pairs; None below two."""
    pairs = [(a, b) for a, b in zip(x, y) if _positive(a) and _positive(b)]
    if len({p[0] for p in pairs}) < 2:
        return None
    lx = np.log([p[0] for p in pairs])
    ly = np.log([p[1] for p in pairs])
    exponent, intercept = np.polyfit(lx, ly, 1)
    fitted = intercept + exponent * lx
    total = float(((ly - ly.mean()) ** 2).sum())
    r2 = 1.0 - float(((ly - fitted) ** 2).sum()) / total if total > 0 else math.nan
    return {"coefficient": float(math.exp(intercept)), "exponent": float(exponent), "r2": r2, "points": len(pairs)}


def fits(rows: list[dict]) -> dict:
    out = {}
    for measure in ("exec", "latency"):
        for phase in ("warm", "resumed"):
            out[f"{measure}_{phase}"] = fit_power_law([r["native_exec_ms"] for r in rows], [r[f"slowdown_{measure}_{phase}"] for r in rows])
    return out


# -- plots -------------------------------------------------------------------------------------


def plot_fig15(rows: list[dict], path: Path) -> None:
    """Slowdown per function, log scale, alive (warm) vs paused (resumed); execution and latency."""
    functions = [r["function"] for r in rows]
    x = np.arange(len(functions))
    fig, axes = plt.subplots(1, 2, figsize=(max(7.0, 1.1 * len(functions) + 4), 4.2))
    for ax, measure, title in ((axes[0], "exec", "execution time (the run call)"), (axes[1], "latency", "latency (client round trip)")):
        for offset, phase, label, colour in ((-0.2, "warm", "alive (warm)", "#2ca02c"), (0.2, "resumed", "paused (resumed)", "#ff7f0e")):
            values = [r[f"slowdown_{measure}_{phase}"] for r in rows]
            shown = [v if _positive(v) else np.nan for v in values]
            ax.bar(x + offset, shown, width=0.4, label=label, color=colour)
            for xi, v, r in zip(x, values, rows):
                if not _positive(v):
                    below = f"execution {phase}: below resolution" in str(r.get("notes") or "")
                    ax.annotate("below\nresolution" if below else "n/a", (xi + offset, 1.0), ha="center", va="bottom", fontsize=6, color="grey")
                elif f"{'execution' if measure == 'exec' else 'latency'} {phase} ×" in str(r.get("notes") or ""):
                    # Not significant, or FaaS faster: marked on the bar, explained in slowdown.csv's notes.
                    ax.annotate("ns" if v > 1 else "≤1", (xi + offset, v), ha="center", va="bottom", fontsize=6, color="grey")
        ax.set_yscale("log")
        _plain_log_ticks(ax.yaxis)
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_xticks(x)
        ax.set_xticklabels(functions, rotation=30, ha="right")
        ax.set_ylabel("slowdown vs native (×, log)")
        ax.set_title(title, fontsize=10)
        ax.legend(fontsize=8)
    fig.suptitle("Fig 15: slowdown in FaaS vs native, alive vs paused sandbox\n"
                 "(ns: within the native calls' range; ≤1: no slowdown; slowdown.csv's notes say why)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_fig16(rows: list[dict], fitted: dict, path: Path) -> None:
    """Slowdown against native execution time, log-log, with the fitted power law and its exponent."""
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.4))
    native_ms = [r["native_exec_ms"] for r in rows]
    for ax, measure, title in ((axes[0], "exec", "execution time"), (axes[1], "latency", "latency")):
        for phase, label, colour, marker in (("warm", "alive (warm)", "#2ca02c", "o"), ("resumed", "paused (resumed)", "#ff7f0e", "s")):
            points = [(n, r[f"slowdown_{measure}_{phase}"], r["function"]) for n, r in zip(native_ms, rows)]
            points = [p for p in points if _positive(p[0]) and _positive(p[1])]
            if points:
                ax.scatter([p[0] for p in points], [p[1] for p in points], color=colour, marker=marker, label=label)
                for px, py, name in points:
                    ax.annotate(name, (px, py), fontsize=7, xytext=(3, 3), textcoords="offset points")
            fit = fitted.get(f"{measure}_{phase}")
            if fit:
                xs = np.geomspace(min(p[0] for p in points), max(p[0] for p in points), 50)
                ax.plot(xs, fit["coefficient"] * xs ** fit["exponent"], color=colour, linestyle="--",
                        label=f"fit {label}: {fit['coefficient']:.3g}·x^{fit['exponent']:.2f} (R² {fit['r2']:.2f})")
        ax.set_xscale("log")
        ax.set_yscale("log")
        _plain_log_ticks(ax.yaxis)
        ax.set_xlabel("native execution time (ms, log)")
        ax.set_ylabel("slowdown vs native (×, log)")
        ax.set_title(title, fontsize=10)
        ax.legend(fontsize=7)
        if not ax.has_data():
            ax.text(0.5, 0.5, "no function with both values", transform=ax.transAxes, ha="center")
    fig.suptitle("Fig 16: slowdown against native execution time, power-law fit")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _plain_log_ticks(axis) -> None:
    """Factors as 0.9, 2, 4 rather than 9×10⁻¹ (a factor's axis spans less than a decade or two)."""
    axis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%g"))
    axis.set_minor_formatter(matplotlib.ticker.FormatStrFormatter("%g"))


# -- the experiment ----------------------------------------------------------------------------


def write_results(out: Path, rows: list[dict], calls: list[Call], manifest: rundir.Manifest) -> dict:
    """slowdown.csv, calls.csv, both figures and the manifest (with the fits); returns the fits."""
    fitted = fits(rows)
    columns = list(rows[0]) if rows else ["function"]
    with open(out / SLOWDOWN_CSV, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        for row in rows:
            writer.writerow({k: _cell(v) for k, v in row.items()})
    with open(out / CALLS_CSV, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(CALL_COLUMNS)
        for c in calls:
            writer.writerow([_cell(getattr(c, name)) for name in CALL_COLUMNS])
    plot_fig15(rows, out / FIG15)
    plot_fig16(rows, fitted, out / FIG16)
    manifest.update(fits=fitted, files={"slowdown_csv": SLOWDOWN_CSV, "calls_csv": CALLS_CSV, "fig15": FIG15, "fig16": FIG16})
    rundir.write_manifest(out, manifest)
    return fitted


def run_slowdown(entries: list[FunctionEntry], out_dir: str | os.PathLike, options: SlowdownOptions, connection=None,
                 progress: bool = True, sleep=time.sleep) -> Path:
    """Measure every function (module docstring); returns the output directory."""
    if options.repeat < 1:
        raise ConfigError(f"--repeat: must be >= 1 (got {options.repeat})")
    if options.pause_wait_s is not None and options.pause_wait_s <= 0:
        raise ConfigError(f"--pause-wait: must be > 0 s (got {options.pause_wait_s:g})")
    if not entries:
        raise ConfigError("FUNCTION: name at least one function, or pass --all")
    for entry in entries:
        entry.require_available()
    say = (lambda line: print(line, file=sys.stderr, flush=True)) if progress else None
    out = rundir.create_run_dir(out_dir, "slowdown", monitors=False)
    handle = None
    manifest = rundir.study_manifest("slowdown", SLOWDOWN_FORMAT_VERSION, status="running")
    measuring = False  # before the first measurement a failure (pre-flight) leaves no directory behind
    try:
        settings: dict = dict(options.extra_settings)
        if options.isolation:
            settings["isolation"] = options.isolation
        if options.pause_grace_ms is not None:
            settings["pause_grace_ms"] = options.pause_grace_ms
        if connection is None:
            if say:
                say("starting the embedded localwhisk (no --apihost or ~/.wskprops names a platform)")
            handle = start_embedded(data_dir=out / "localwhisk", **settings)
            connection = Connection(apihost=handle.apihost, auth=handle.auth, namespace=handle.namespace, source="embedded")
            grace_s = float(settings.get("pause_grace_ms", 50)) / 1000.0
            pause_wait_s = options.pause_wait_s if options.pause_wait_s is not None else grace_s + EMBEDDED_PAUSE_MARGIN_S
        else:
            pause_wait_s = options.pause_wait_s if options.pause_wait_s is not None else REMOTE_PAUSE_WAIT_S
        client = OpenWhiskClient(connection)
        info = client.info()
        names = [entry.name for entry in entries]
        actions = ensure_actions(client, names, options.memory_mb)
        native_commands = {entry.name: native.native_command(entry) for entry in entries}
        same_interpreter = platform_interpreter_matches(entries, getattr(handle, "settings", None))
        manifest.update({
            "generated_by": {"faasprof": __version__, "git_commit": rundir.git_commit()},
            "created_utc": rundir.utc_stamp(),
            "functions": names,
            "repeat": options.repeat,
            "pause_wait_s": pause_wait_s,
            "platform": {"embedded": handle is not None, **connection.describe(), "info": info, "actions": actions,
                         "localwhisk": getattr(handle, "settings", None)},
            "native": {"command": native_commands, "interpreter": {e.name: native.interpreter_version(e) for e in entries},
                       "same_interpreter_as_platform": same_interpreter, "worker_logs": "native/<function>/"},
            "definitions": {
                "exec_ms": "native: perf_counter around main inside the worker (warm); FaaS: localwhisk's runTimeUs annotation (µs), "
                           "else the activation record's duration less initTime (1 ms resolution)",
                "latency_ms": "native: round trip over the worker's pipe; FaaS: the blocking call's round trip at the client",
                "cpu_ms": "native: the worker's user + system CPU time during the call (rusage); FaaS: localwhisk's runCpuTimeUs (process sandboxes)",
                "order": "per function: native and warm calls alternate (who goes first alternates too), then each resumed call follows "
                         "a native call made while the sandbox waits for its pause; both sides are warm and see the same host load",
                "slowdown": f"FaaS median / native median; null when undefined or when the FaaS execution median is under "
                            f"{RESOLUTION_STEPS} resolution steps (notes says so)",
                "notes": "plain sentences for factors that show no slowdown or that the native calls' own range covers",
                "ci": f"distribution-free 95 % interval of the median (order statistics); null below {MEDIAN_CI_MIN_SAMPLES} samples",
            },
        })
        rundir.write_manifest(out, manifest)
        measuring = True
        rows: list[dict] = []
        every: list[Call] = []
        for entry in entries:
            calls = measure_function(entry, client, options.repeat, pause_wait_s, out / "native" / entry.name, sleep=sleep, say=say)
            row = summarise_function(entry.name, calls)
            rows.append(row)
            every += calls
            if say:
                say(f"{entry.name}: native {_f(row['native_exec_ms'])} ms; warm {_f(row['warm_exec_ms'])} ms (×{_f(row['slowdown_exec_warm'])}), "
                    f"resumed {_f(row['resumed_exec_ms'])} ms (×{_f(row['slowdown_exec_resumed'])}); latency ×{_f(row['slowdown_latency_warm'])} / ×{_f(row['slowdown_latency_resumed'])}")
                for note in filter(None, row["notes"].split(NOTE_SEPARATOR)):
                    say(f"{entry.name}: {note}")
        client.close()
        manifest.status = "complete"
        write_results(out, rows, every, manifest)
        return out
    except BaseException as error:
        if not measuring:
            raise
        # The directory stays (native runs, localwhisk records); its manifest says how it ended.
        status = "interrupted" if isinstance(error, KeyboardInterrupt) else "failed"
        manifest.update(status=status, reason=f"{type(error).__name__}: {error}"[:300])
        rundir.write_manifest(out, manifest)
        raise
    finally:
        if handle is not None:
            handle.stop(timeout_s=10)
        if not measuring:
            shutil.rmtree(out, ignore_errors=True)


def load_rows(path: Path) -> list[dict]:
    """``slowdown.csv`` read back with numbers as floats (empty cells: NaN)."""
    with open(path, newline="") as handle:
        return [{k: (v if k in TEXT_COLUMNS else _float(v)) for k, v in row.items()} for row in csv.DictReader(handle)]


def load_calls(path: Path) -> list[Call]:
    """``calls.csv`` read back as :class:`Call` rows (empty numbers: NaN), for statistics over the calls."""
    numbers = {name for name in CALL_COLUMNS if name.endswith("_ms")} | {"seq"}
    with open(path, newline="") as handle:
        rows = list(csv.DictReader(handle))
    return [Call(**{k: (int(v) if k == "seq" else _float(v)) if k in numbers else v for k, v in row.items() if k in CALL_COLUMNS}) for row in rows]


def platform_interpreter_matches(entries: list[FunctionEntry], localwhisk_settings: dict | None) -> bool | None:
    """Whether the embedded localwhisk's process sandboxes run Python functions with the native worker's interpreter.

    None when it cannot be said: another platform, Docker sandboxes, or no Python function."""
    if not localwhisk_settings or localwhisk_settings.get("isolation") == "docker" or not any(e.runtime == "python" for e in entries):
        return None
    platform_python = localwhisk_settings.get("python") or ""
    return bool(platform_python) and os.path.realpath(platform_python) == os.path.realpath(sys.executable)


def _ratio(numerator: float, denominator: float) -> float:
    if not (_positive(numerator) and _positive(denominator)):
        return math.nan
    return numerator / denominator


def _finite_or(value: float, default: float) -> float:
    return value if isinstance(value, (int, float)) and math.isfinite(value) else default


def _positive(value) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value) and value > 0


def _float(value) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def _cell(value):
    if isinstance(value, float):
        return "" if not math.isfinite(value) else round(value, 4)
    return value


def _f(value) -> str:
    return "-" if not isinstance(value, (int, float)) or not math.isfinite(value) else f"{value:.3g}"
