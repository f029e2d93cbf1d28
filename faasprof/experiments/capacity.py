"""Capacity search: the highest rate at which a function stays balanced (the paper's capacity).

Each probe is an ordinary short run at a fixed rate (``faasprof.invoker.run.execute``), analysed at
once (``analyzer.analyze_run``); its latency mode decides the next rate. A probe is two instances
of the function at the same rate, back to back: ``warm-up`` fills the pool (the cold starts of the
rate's sandboxes fall there, ``probe_windows``), then ``probe``, whose analyzer steady window holds
at least ``MIN_PROBE_CALLS`` calls (not a fixed number of seconds: 3 s at 5/s judged 15 calls).
Only ``probe``'s steady window is judged.

1. **Step**: start at ``start_rate`` and multiply by ``factor`` while the mode is not
   ``over-invoked`` (under-invoked and balanced both mean the platform keeps up), up to
   ``max_rate``. From the first probe the search may jump instead to a guess its lone calls'
   latency gives (``guess_rate``, where ``find_capacity`` asks for one), when that is higher, and
   then steps by ``√factor``; a guess that overshoots is stepped down from by ``√factor``.
2. **Bisect** between the highest rate that kept up (``low``) and the lowest that did not
   (``high``), geometrically, until ``high / low − 1 ≤ tolerance`` or ``max_runs`` rates were probed.
3. **Confirm both ends.** A rate's verdict is the majority of its probes (a tie is not kept up),
   *confirmed* once two probes agree on it (or ``repeats`` more probes were spent on it). Before
   the search ends, ``low`` and ``high`` are probed again until each is confirmed; an end that flips
   moves the bracket (a ``low`` found over-invoked becomes the new ``high``, a ``high`` found kept
   up the new ``low``) and the search bisects (or steps) on. Repeats do not count against
   ``max_runs``.
4. **Budget.** Once the bracket stands (a rate kept up below one that was not), no probe is
   started that would end after ``budget_s`` seconds of search (by the median time a probe took
   so far); the interval then spans the bracket as it stands, unconfirmed ends included, and the
   result says so. Stepping up to the first over-invoked rate is never cut short: without it
   there is no capacity, only a lower bound. ``budget_s`` None: no budget.

Why the ends are confirmed: a search commits to one side of each rate it probes, so one noisy
probe at a step placed the whole bracket. On a shared 2-core host json_dumps kept up at 15/s in
one search (bracket 22–26/s) and was over-invoked there in the next (10–11/s); each probe was
right about its few seconds. The noise is the host's: the sandboxes sit in one cgroup under
localwhisk's parent, which the kernel's CFS weighs as much as *one* other runnable process, so
with k other busy processes they get about 1/(k+1) of the CPUs, and other work starting or
stopping moves the capacity by a factor of two; once a probe falls behind, every call that finds
no free sandbox starts a cold one (OpenWhisk queues only when the memory is full), and a storm of
up to 16 cold starts turns a small deficit into seconds of backlog. Confirming the ends late in the
search probes them again minutes after the step, under the host as it is then; where the two
disagree the interval spans both (below). The interval still holds for the host as it was
during the search: a search while other work doubles (the reference latency, a lone call's at
the lowest rate, went from 47 to 106 ms between two searches) lands elsewhere, and the load and
the reference stored beside the capacity say how busy the host was.

**The result is an interval** (``interval_of``): from the highest rate the search kept up at to
the lowest it was over-invoked at (each rate by its majority), widened to every complete probe
that disagreed, repeats included: down to the lowest rate any probe was over-invoked at, up to
the highest any kept up at. The capacity is its midpoint and its half-width the ±
(``14 ± 0.96/s, 7 probes``): the capacity lies between a rate the function sustained and one it
did not, and where probes disagreed the interval spans the disagreement. Without an
over-invoked probe the capacity is only a lower bound, the highest rate kept up.
The host's 1-minute load average before the search and its peak after each probe are kept beside
it (``load_1min``), since a busy host serves less (``capacity_store`` flags a stored capacity
measured at a very different load from today's). Each probe keeps the load as it ended
(``Probe.load_1min``).

The first probe that keeps up (the lowest rate) is the search's *reference*: its median
completion latency is recorded in every later probe's manifest (``latency_reference``), where the
analyzer's queueing rule (``faasprof.analyzer.stats``, rule 2(d)) calls a probe over-invoked whose median
latency is twice the reference's: a standing queue, although throughput keeps up. The probe's own
report and the search thus give the same mode: one rule (``stats.decide_mode``) decides it here,
in ``faasprof run``, a sweep and ``reproduce``.

Without a platform (no connection) the search starts one embedded localwhisk, with the caller's
settings, for all its probes, as a long-lived platform serves a search: each probe finds the
sandboxes the earlier ones left (paused or warm) instead of creating them all anew. Its store and
log stay beside the probes (``localwhisk-<function>-<stamp>/``); each probe's records are saved in
its run directory as usual.

The result lists every probe (rate, run directory, mode and the evidence behind it) so the verdict
can be checked, and every run directory is kept for ``faasprof compare``. When no probe was
over-invoked (the ceiling ``max_rate`` or ``max_runs`` reached while keeping up, or the next probe
did not complete) the capacity is a lower bound: the result says so
(``capacity_is_lower_bound``), the store marks it, and ``faasprof run`` warns when it takes
fractions of it (``faasprof.experiments.capacity_store``). A probe whose run did not complete
(interrupted, aborted) ends the search: its rate counts as not kept up, and the reason is
reported. A probe with too few samples for a mode (``unknown``) counts as kept up only below the
first over-invoked rate.

``SEARCH_DEFAULTS`` are the one set of search settings: ``faasprof capacity``'s option defaults
and the search ``faasprof run`` makes for a capacity fraction. Probe run directories and the result
go to ``probes_dir(out_dir)`` (``<out>/capacity/``) whoever asks.

Result format versions (``CAPACITY_FORMAT_VERSION``): 1: first version; compatible additions:
``reference``, ``capacity_is_lower_bound``. 2: ``capacity_rps`` is the interval's midpoint (was
the highest rate kept up); adds ``interval_rps``, ``plus_minus_rps``, ``capacity_text``,
``load_1min`` and the probes' ``margin``/``close``; compatible additions: the probes' ``load_1min``,
``split_rates_rps`` (rate → [probes kept up, probes] where they disagreed); ``noise`` (the host's
other work during the probes, ``capacity_noise.NoiseSummary``), ``contention`` (it in words, where
the host was contended), ``probes_interval_rps`` (the interval before the noise widened it), the
probes' ``noise`` and ``duration_ms_p50``, and ``sandbox_busy_ms`` (their median duration).

**The host's noise** (``faasprof.experiments.capacity_noise``): each probe keeps what other work
took of the CPUs while it ran (read from /proc before and after it); the interval is widened by how
much the CPUs left to the search moved between its quietest and its busiest probe, and a search on
a contended host says so and by how much (``contention``). A Ctrl-C during a probe ends the search
as it ends any command (``interrupted``, exit 1), not as a probe that failed.
"""

from __future__ import annotations

import math
import os
import statistics
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, TypedDict

from faasprof import __version__, rundir
from faasprof.analyzer import analyze_run
from faasprof.analyzer import stats as stats_mod
from faasprof.analyzer.markup import ms
from faasprof.analyzer.summary import Summary
from faasprof.errors import ConfigError
from faasprof.experiments import capacity_noise
from faasprof.invoker.platform_set import start_embedded_platform
from faasprof.invoker.preflight import check_out_dir
from faasprof.invoker.run import execute
from faasprof.numbers import number_text
from faasprof.platforms.openwhisk.connection import Connection
from faasprof.progress import QUIET, Progress
from faasprof.workload.spec import workload_from_dict

CAPACITY_FORMAT_VERSION = 2
# Results a reader takes: version 1's capacity_rps (the highest rate kept up) still reads as a capacity.
READABLE_CAPACITY_FORMATS = (1, 2)
PROBE_INSTANCE = "probe"
WARMUP_INSTANCE = "warm-up"
PROBES_DIR = "capacity"  # under the --out directory: every search's probe runs and result files
# A probe is judged on at least this many calls in its steady window: the mode needs 20, and its
# medians thirds of them; 3 s at 5/s gave 15 calls and one slow third called a probe over-invoked.
# (50 made a search under a CPU hog take 111-163 s on the shared 2-core host; 40 keeps it shorter.)
MIN_PROBE_CALLS = 40
# Before the probe, its rate for this many calls (at least WARMUP_MIN_S, at most WARMUP_MAX_S):
# the pool grows to the rate's sandboxes there, not in the judged window.
WARMUP_CALLS = 20
WARMUP_MIN_S = 1.0
WARMUP_MAX_S = 3.0


# The modes need the capacity within tens of percent, not better: probes of at least 2 s (and
# MIN_PROBE_CALLS) from 5/s, tripling (or jumping to guess_rate's guess, then ×√3), bisected to 30 %,
# the two ends of the bracket confirmed (each rate probed at most 3 times), about a minute on a small
# busy machine. Probes of 3 s made the quick start's search take 55 s there (8 probes) and, modelled,
# 76 s on a quiet one (10 probes, a capacity of 145/s); at 2 s a probe's judged window still holds
# MIN_PROBE_CALLS calls, and a standing queue of 20 % over the capacity doubles its median latency.
# The ceiling 1000/s is above what one host's localwhisk serves for a catalogue function; a search
# that reaches it reports a lower bound. The budget: on a quiet 2-core host the first run's search
# took 45 to 55 s (8 to 13 probes): the count varies with how often the host's noise makes two
# probes of one rate disagree, each disagreement costing a repeat. The bracket stood after 29 s
# (5 probes); 40 s leaves the bisection two or three probes, enough for the modes, which need the
# capacity within tens of percent, and keeps the first run (search, three 10 s phases, analysis)
# under 90 s. `faasprof capacity --budget-s 0` searches without it.
class SearchDefaults(TypedDict):
    """The search settings' defaults, by name (``search``'s keyword arguments)."""

    duration_s: float
    start_rate: float
    max_rate: float
    factor: float
    tolerance: float
    max_runs: int
    cooldown_s: float
    repeats: int
    budget_s: float | None


SEARCH_DEFAULTS: SearchDefaults = {
    "duration_s": 2.0,
    "start_rate": 5.0,
    "max_rate": 1000.0,
    "factor": 3.0,
    "tolerance": 0.3,
    "max_runs": 8,
    "cooldown_s": 0.5,
    "repeats": 2,
    "budget_s": 40.0,
}


# The first guess's share of the CPUs' bound (guess_rate).
GUESS_SHARE = 0.35


def probes_dir(out_dir: str | os.PathLike) -> Path:
    """Where a search writes its probe runs and its result under ``out_dir``."""
    return Path(out_dir) / PROBES_DIR


@dataclass
class Probe:
    rate_rps: float
    mode: str
    run_dir: str | None = None
    status: str = "complete"
    reasons: list[str] = field(default_factory=list)
    achieved_rps: float | None = None
    p50_ms: float | None = None
    p99_ms: float | None = None
    cold_fraction: float | None = None
    resumed_fraction: float | None = None
    margin: float | None = None  # the analyzer's mode_evidence_over_threshold: >= 1 over-invoked
    close: bool = False  # the analyzer's mode_close
    load_1min: float | None = None  # the host's 1-minute load average as the probe ended
    duration_ms_p50: float | None = None  # the activations' median duration: how long a call holds its sandbox
    noise: dict | None = None  # what other work took while the probe ran (capacity_noise.HostNoise)

    @property
    def kept_up(self) -> bool:
        return self.status == "complete" and self.mode != "over-invoked"


def probe_windows(rate: float, duration_s: float) -> tuple[float, float]:
    """(warm-up, probe) lengths in seconds at ``rate``: the warm-up lasts ``WARMUP_CALLS`` calls
    (within ``WARMUP_MIN_S``..``WARMUP_MAX_S``); the probe at least ``duration_s`` and long enough
    that the analyzer's steady window (it drops min(2 s, 20 %) at the start, ``stats.phases``)
    holds ``MIN_PROBE_CALLS`` calls."""
    warmup_s = min(max(WARMUP_CALLS / rate, WARMUP_MIN_S), WARMUP_MAX_S)
    steady_s = MIN_PROBE_CALLS / rate
    # steady = length − min(WARMUP_MAX_S, WARMUP_FRACTION × length), solved for the length.
    length = steady_s / (1.0 - stats_mod.WARMUP_FRACTION)
    if stats_mod.WARMUP_FRACTION * length > stats_mod.WARMUP_MAX_S:
        length = steady_s + stats_mod.WARMUP_MAX_S
    return round(warmup_s, 3), round(max(float(duration_s), math.ceil(length * 1000.0) / 1000.0), 3)


def probe_workload(
    function: str,
    rate: float,
    duration_s: float,
    memory_mb: int | None,
    seed: int,
    distribution: str,
    params: dict | None,
) -> dict:
    """The workload JSON of one probe (FaaSProfiler format): the warm-up, then the probe, at ``rate``."""
    instance: dict = {"application": function, "distribution": distribution, "rate": rate}
    if memory_mb is not None:
        instance["memory_mb"] = int(memory_mb)
    if params:
        instance["params"] = params
    warmup_s, probe_s = probe_windows(rate, duration_s)
    return {
        "test_name": f"capacity-{function}-{rate:.4g}ps",
        "test_duration_in_seconds": warmup_s + probe_s,
        "random_seed": seed,
        "blocking_cli": True,
        "instances": {
            WARMUP_INSTANCE: {**instance, "activity_window": [0, warmup_s]},
            PROBE_INSTANCE: {**instance, "activity_window": [warmup_s, warmup_s + probe_s]},
        },
    }


def probe_from_summary(rate: float, run_dir: Path, summary: Summary) -> Probe:
    status = summary["run"]["status"] or "unknown"  # a manifest that recorded none
    phases = [p for i in summary["instances"] if i["instance"] == PROBE_INSTANCE for p in i["phases"]]
    if not phases:
        return Probe(rate, "unknown", str(run_dir), status, ["no steady phase in the analysis"])
    phase = phases[-1]
    reasons = [r for r in (phase.get("mode_reasons") or "").split("; ") if r]
    if status != "complete":
        reasons.append(f"run status {status}")
    return Probe(
        rate_rps=rate,
        mode=phase["mode"],
        run_dir=str(run_dir),
        status=status,
        reasons=reasons,
        achieved_rps=phase.get("achieved_rps"),
        # Completion latency (planned send → function end): the client's is only a 202's for
        # the non-blocking probes. Summaries without it (older analyses) give the client's.
        p50_ms=phase.get("completion_latency_ms_p50", phase.get("client_latency_ms_p50")),
        p99_ms=phase.get("completion_latency_ms_p99", phase.get("client_latency_ms_p99")),
        cold_fraction=phase.get("cold_fraction"),
        resumed_fraction=phase.get("resumed_fraction"),
        margin=phase.get("mode_evidence_over_threshold"),
        close=bool(phase.get("mode_close")),
        duration_ms_p50=_finite(phase.get("duration_ms_p50")),
    )


def _finite(value) -> float | None:
    return float(value) if isinstance(value, (int, float)) and math.isfinite(value) else None


def run_probe_factory(
    function: str,
    *,
    out_dir,
    duration_s: float,
    connection: Connection,
    memory_mb: int | None = None,
    seed: int = 1,
    distribution: str = "Uniform",
    params: dict | None = None,
    progress: Progress = QUIET,
) -> Callable[[float, dict | None], Probe]:
    """A probe that really runs: execute the one-instance workload, record the search's reference
    latency in its manifest (the analyzer's queueing rule reads it there), then analyze it."""

    def probe(rate: float, reference: dict | None) -> Probe:
        data = probe_workload(function, rate, duration_s, memory_mb, seed, distribution, params)
        workload = workload_from_dict(data, origin=f"capacity probe at {rate:g}/s")
        run_dir = execute(workload, out_dir, connection=connection, progress=progress)
        manifest = rundir.read_manifest(run_dir)
        if manifest.status == "interrupted" and _by_a_signal(manifest.status_reason):
            # The user stopped the search, not the platform: the search ends as any command does
            # on Ctrl-C (`interrupted`, exit 1), the probe's run kept as any interrupted run.
            raise KeyboardInterrupt
        if reference is not None:
            rundir.update_manifest(run_dir, latency_reference={function: reference})
        # No plots: a second a probe on 2 cores; `faasprof analyze DIR` draws them for a probe in question.
        summary = analyze_run(run_dir, connection, plots=False)
        return probe_from_summary(rate, Path(run_dir), summary)

    return probe


def _by_a_signal(reason: str | None) -> bool:
    """Whether a run's status reason says Ctrl-C or SIGTERM stopped it (``invoker.send_loop``,
    ``invoker.run``), rather than the platform or a failure."""
    return bool(reason) and any(word in str(reason) for word in ("SIGINT", "SIGTERM", "Ctrl-C"))


def guess_rate(probe: Probe, cpus: int | None = None) -> float | None:
    """A first guess at the capacity from the reference probe: ``GUESS_SHARE`` of the rate at which
    calls as long as its lone calls' median completion latency would keep every CPU busy. On the
    2-core development VM json_dumps' capacity was about half that bound busy (28 ms → 71/s, capacity
    37/s) and quiet; ``GUESS_SHARE`` stays below half so that the jump's probe keeps up. Calls that
    wait rather than compute make the guess low, which costs nothing: the ladder steps on from the
    higher of it and ``factor`` times the probe's rate. None without a kept-up latency."""
    if not probe.kept_up or probe.p50_ms is None or not math.isfinite(probe.p50_ms) or probe.p50_ms <= 0:
        return None
    return GUESS_SHARE * (cpus or os.cpu_count() or 1) * 1000.0 / probe.p50_ms


def reference_of(probe: Probe) -> dict | None:
    """The reference latency a kept-up probe gives the probes after it (None: it gives none)."""
    if not probe.kept_up or probe.p50_ms is None or not math.isfinite(probe.p50_ms) or probe.p50_ms <= 0:
        return None
    source = f"lowest-rate probe {Path(probe.run_dir).name}" if probe.run_dir else "lowest-rate probe"
    return {"completion_latency_ms_p50": probe.p50_ms, "rate_rps": probe.rate_rps, "source": source}


def search(
    probe: Callable[[float, dict | None], Probe],
    *,
    start_rate: float = SEARCH_DEFAULTS["start_rate"],
    max_rate: float = SEARCH_DEFAULTS["max_rate"],
    factor: float = SEARCH_DEFAULTS["factor"],
    tolerance: float = SEARCH_DEFAULTS["tolerance"],
    max_runs: int = SEARCH_DEFAULTS["max_runs"],
    say: Callable[[str], None] | None = None,
    cooldown_s: float = 0.0,
    repeats: int = SEARCH_DEFAULTS["repeats"],
    budget_s: float | None = SEARCH_DEFAULTS["budget_s"],
    sleep=time.sleep,
    clock=time.monotonic,
    load=os.getloadavg,
    noise: Callable[[], capacity_noise.Snapshot | None] = lambda: None,
    guess: Callable[[Probe], float | None] = lambda probe: None,
) -> dict:
    """Step, bisect, and confirm the bracket's two ends (module docstring); ``probe(rate, reference)``
        runs one probe, judged against ``reference`` (the first kept-up probe's latency; None for the
        first); ``load()`` gives the host's load averages (``os.getloadavg``); ``noise()`` a reading of
    /proc (``capacity_noise.snapshot``; none by default) taken around each probe. Returns the result dict."""
    if start_rate <= 0 or max_rate < start_rate:
        raise ConfigError(f"--start-rate/--max-rate: need 0 < start ({start_rate:g}) <= max ({max_rate:g})")
    if factor <= 1:
        raise ConfigError(f"--factor: must be > 1 (got {factor:g})")
    if tolerance <= 0:
        raise ConfigError(f"--tolerance: must be > 0 (got {tolerance:g})")
    if repeats < 0:
        raise ConfigError(f"--repeats: must be >= 0 (got {repeats})")
    if budget_s is not None and budget_s < 0:
        raise ConfigError(f"--budget-s: must be >= 0, 0 for no budget (got {budget_s:g})")
    state = _Search(probe, max_runs, repeats, say, cooldown_s, sleep, clock, load)
    state.noise, state.guess, state.budget_s = noise, guess, budget_s
    stopped = ""
    while True:
        low, high = state.bracket()
        if high is not None and high.status != "complete":
            break
        if high is None:  # never over-invoked: step up (or stop at the ceiling or the budget)
            if low is not None and low.rate_rps >= max_rate:
                stopped = f"kept up at the ceiling --max-rate {max_rate:g}/s: the capacity is at least that (raise --max-rate)"
                break
            if not state.can_try_new_rate():
                break
            state.run(start_rate if low is None else min(state.step_from(low, factor), max_rate))
            continue
        rate = state.next_rate(low, high, tolerance)
        if rate is None:
            break
        if low is not None and budget_s and state.would_overrun(budget_s):
            stopped = (
                f"its budget of {budget_s:g} s was spent after {len(state.probes)} probes, before "
                + (
                    "reaching the tolerance"
                    if high.rate_rps / low.rate_rps - 1 > tolerance
                    else "both ends were confirmed"
                )
                + ": the interval is the bracket as it stood (--budget-s 0 searches on)"
            )
            break
        state.run(rate)
    low, high = state.bracket()
    if not stopped:
        stopped = _stopped_because(low, high, start_rate, max_runs, tolerance, len(state.by_rate))
    return state.result(low, high, stopped)


class _Search:
    """One search's probes, grouped by rate, and what they say: each rate's verdict is its probes'
    majority (a tie is not kept up), *confirmed* once two probes agree on it (or its repeats are
    spent). The bracket is the lowest rate whose verdict is over-invoked (or whose probe did not
    complete) and the highest rate below it that kept up; both ends are confirmed before the
    search ends, and an end that flips moves the bracket, so one noisy probe never places it."""

    def __init__(self, probe, max_runs, repeats, say, cooldown_s, sleep, clock, load) -> None:
        self.probe, self.max_runs, self.repeats, self.say = probe, max_runs, repeats, say
        self.cooldown_s, self.sleep, self.clock, self.load = cooldown_s, sleep, clock, load
        self.probes: list[Probe] = []
        self.by_rate: dict[float, list[Probe]] = {}
        self.loads = [_load_1min(load)]
        self.reference: dict | None = None
        self.started = clock()
        self.probe_s: list[float] = []  # how long each probe took, cooldown included
        self.budget_s: float | None = None
        self.noise: Callable[[], capacity_noise.Snapshot | None] = lambda: None
        self.noises: list[capacity_noise.HostNoise | None] = []
        self.guessed = False  # the ladder jumped to the guess's rate
        self.factor = 3.0  # the ladder's step (search's factor; set by step_from)
        self.guess: Callable[[Probe], float | None] = lambda probe: None

    def run(self, rate: float) -> Probe:
        began = self.clock()
        if self.probes and self.cooldown_s > 0:
            self.sleep(self.cooldown_s)
        again = rate in self.by_rate
        before = self.noise()
        result = self.probe(rate, self.reference)
        host_noise = capacity_noise.between(before, self.noise())
        result.noise = capacity_noise.as_dict(host_noise)
        self.noises.append(host_noise)
        self.probes.append(result)
        self.probe_s.append(self.clock() - began)
        self.by_rate.setdefault(rate, []).append(result)
        result.load_1min = _load_1min(self.load)
        self.loads.append(result.load_1min)
        if self.reference is None:
            self.reference = reference_of(result)
        if self.say:
            # ETA: the rates left at most (max_runs), at the mean time a probe took so far, or
            # what is left of the budget when that is less (it binds once the bracket stands).
            elapsed_s = self.clock() - self.started
            per_probe = elapsed_s / len(self.probes)
            left = max(self.max_runs - len(self.by_rate), 0)
            eta_s = left * per_probe
            if self.budget_s and None not in self.bracket():
                eta_s = min(eta_s, max(self.budget_s - elapsed_s, 0.0))
            close = "  (a repeat)" if again else ("  close" if result.close and result.status == "complete" else "")
            other = f"  other work {host_noise.other_cpus:.2g} CPUs" if host_noise is not None else ""
            self.say(
                f"[{len(self.by_rate):>2}/{self.max_runs}] {rate:>9.4g}/s  {result.mode:<13} achieved {number_text(result.achieved_rps, 4)}/s  "
                f"p50 {ms(result.p50_ms, 4)}  p99 {ms(result.p99_ms, 4)}{other}  (ETA about {eta_s:.0f} s){close}"
            )
        return result

    def verdict(self, rate: float) -> tuple[bool, bool]:
        """(kept up, confirmed) of one rate by its probes."""
        runs = self.by_rate[rate]
        if any(p.status != "complete" for p in runs):
            return False, True
        kept = sum(p.kept_up for p in runs)
        over = len(runs) - kept
        agreed = max(kept, over) >= 2 and kept != over
        return kept > over, agreed or len(runs) > self.repeats

    def representative(self, rate: float) -> Probe:
        """The rate's first probe that says what its verdict says (one that did not complete first:
        it ends the search)."""
        runs = self.by_rate[rate]
        kept_up = self.verdict(rate)[0]
        return next((p for p in runs if p.status != "complete"), None) or next(
            (p for p in runs if p.kept_up == kept_up), runs[0]
        )

    def bracket(self) -> tuple[Probe | None, Probe | None]:
        """(highest rate kept up below ``high``, lowest rate not kept up), each by its verdict."""
        over = [rate for rate in self.by_rate if not self.verdict(rate)[0]]
        high = min(over) if over else None
        kept = [rate for rate in self.by_rate if self.verdict(rate)[0] and (high is None or rate < high)]
        return (
            self.representative(max(kept)) if kept else None,
            self.representative(high) if high is not None else None,
        )

    def step_from(self, low: Probe, factor: float) -> float:
        """The next rate up from ``low``: ``factor`` times it, or, from the first probe, the rate its
        lone calls' latency says the host's CPUs may serve (``guess_rate``) when that is higher:
        a ladder from 5/s takes four steps to a capacity of 145/s, each a probe. The steps after it
        are ``√factor`` apart: the guess already lies near the capacity, and an over-invoked probe
        far above it costs its backlog's drain (an overshoot of ×2.8 drained for 7 s)."""
        self.factor = factor
        guess = self.guess(low) if len(self.by_rate) == 1 else None
        if guess is not None and guess > low.rate_rps * factor:
            self.guessed = True
            return guess
        return low.rate_rps * (math.sqrt(factor) if self.guessed else factor)

    def would_overrun(self, budget_s: float) -> bool:
        """Whether one more probe, taking the median time of those so far, would end after
        ``budget_s`` seconds of search."""
        typical_s = statistics.median(self.probe_s) if self.probe_s else 0.0
        return self.clock() - self.started + typical_s > budget_s

    def can_try_new_rate(self) -> bool:
        return len(self.by_rate) < self.max_runs

    def next_rate(self, low: Probe | None, high: Probe, tolerance: float) -> float | None:
        """The next rate to probe with a bracket: bisect to ``tolerance``, then confirm both ends
        (the high end alone where the start rate was over-invoked); None when done."""
        if low is None:
            return None if self.verdict(high.rate_rps)[1] else high.rate_rps
        if high.rate_rps / low.rate_rps - 1 > tolerance and self.can_try_new_rate():
            if self.guessed and high.rate_rps / low.rate_rps > self.factor:
                # The guess overshot (a busier moment than the first probe's): step down from it by
                # √factor, not to the geometric middle of 5/s and the guess (15.6 of 48.6/s), which
                # is far below a capacity the guess missed by little.
                return high.rate_rps / math.sqrt(self.factor)
            return math.sqrt(low.rate_rps * high.rate_rps)
        for end in (high, low):
            if not self.verdict(end.rate_rps)[1]:
                return end.rate_rps
        return None

    def result(self, low: Probe | None, high: Probe | None, stopped: str) -> dict:
        probes = self.probes
        lower_bound = low is not None and (high is None or high.status != "complete")
        noise = capacity_noise.summarize(self.noises)
        probes_interval: tuple[float, float] | None = None
        interval: tuple[float | None, float | None] = (low.rate_rps if low else None, None)
        capacity, plus_minus = interval  # no capacity, or a lower bound: the highest rate kept up
        if low is not None and high is not None and not lower_bound:
            probes_interval = interval_of(probes, low.rate_rps, high.rate_rps)
            bottom, top = capacity_noise.widen(probes_interval, noise)
            interval = (bottom, top)
            capacity, plus_minus = (bottom + top) / 2, (top - bottom) / 2
        return {
            "format_version": CAPACITY_FORMAT_VERSION,
            "generated_by": {"faasprof": __version__},
            "capacity_rps": capacity,
            "plus_minus_rps": plus_minus,
            "interval_rps": list(interval) if low is not None else None,
            # The probes' own interval, before the host's noise widened it (capacity_noise.widen).
            "probes_interval_rps": list(probes_interval) if probes_interval is not None else None,
            "noise": noise,
            "contention": capacity_noise.contention_text(noise),
            # How long a call holds its sandbox: the pause grace's warm rate is 1000 / (grace + this)
            # (capacity_store.warm_rate_model); the median over the kept-up probes.
            "sandbox_busy_ms": _median(
                [p.duration_ms_p50 for p in probes if p.kept_up and p.duration_ms_p50 is not None]
            ),
            "capacity_text": capacity_text(capacity, plus_minus, len(probes)),
            # No complete probe above it was over-invoked: the function may serve more.
            "capacity_is_lower_bound": lower_bound,
            "bounds_rps": [low.rate_rps if low else None, high.rate_rps if high else None],
            "mode_at_capacity": low.mode if low else None,
            "reference": self.reference,
            "load_1min": {
                "before": self.loads[0],
                "peak": max((v for v in self.loads if v is not None), default=None),
                "cpus": os.cpu_count(),
            },
            "stopped_because": stopped,
            # Rates whose probes disagreed: the host's other work moved the capacity during the search.
            "split_rates_rps": {
                f"{rate:.4g}": [sum(p.kept_up for p in runs), len(runs)]
                for rate, runs in sorted(self.by_rate.items())
                if all(p.status == "complete" for p in runs) and 0 < sum(p.kept_up for p in runs) < len(runs)
            },
            "probes": [asdict(p) for p in probes],
        }


def _median(values: list[float]) -> float | None:
    return round(statistics.median(values), 3) if values else None


def interval_of(probes: list[Probe], low_rps: float, high_rps: float) -> tuple[float, float]:
    """The capacity's interval: the search's bracket (``low_rps`` kept up, ``high_rps`` over-invoked,
    by their majorities), widened to every complete probe that disagreed: down to the lowest rate
    any was over-invoked at, up to the highest rate any kept up at, repeats included. Repeats that
    split at one rate thus never shrink it to that rate."""
    complete = [p for p in probes if p.status == "complete"]
    kept = max((p.rate_rps for p in complete if p.kept_up), default=low_rps)
    over = min((p.rate_rps for p in complete if p.mode == "over-invoked"), default=high_rps)
    return (min(low_rps, over), max(high_rps, kept))


def capacity_text(capacity: float | None, plus_minus: float | None, n_probes: int) -> str:
    """The capacity in words: "59 ± 6/s, 7 probes", "≥ 40/s (lower bound), 5 probes", or "none"."""
    if capacity is None:
        return f"none, {n_probes} probes"
    if plus_minus is None:
        return f"≥ {capacity:.3g}/s (lower bound), {n_probes} probes"
    return f"{capacity:.3g} ± {plus_minus:.2g}/s, {n_probes} probes"


def _load_1min(load: Callable[[], tuple]) -> float | None:
    """The 1-minute load average, or None where the host gives none."""
    try:
        return round(float(load()[0]), 2)
    except (OSError, AttributeError, IndexError, TypeError):
        return None


def _stopped_because(
    low: Probe | None, high: Probe | None, start_rate: float, max_runs: int, tolerance: float, n_rates: int
) -> str:
    if low is not None and high is None:
        return f"kept up at every rate of --max-runs {max_runs} probes, up to {low.rate_rps:g}/s: the capacity is at least that (raise --max-runs or --start-rate)"
    if high is not None and high.status != "complete":
        return f"the probe at {high.rate_rps:g}/s ended {high.status}; capacity bounded by the last complete probe"
    if low is None:
        return f"over-invoked already at the start rate {start_rate:g}/s (lower --start-rate)"
    if n_rates >= max_runs and high is not None and high.rate_rps / low.rate_rps - 1 > tolerance:
        return f"stopped after --max-runs {max_runs} probes before reaching the tolerance"
    return f"bracketed within {tolerance:.0%}"


def find_capacity(
    function: str,
    *,
    out_dir: str | os.PathLike = "runs",
    duration_s: float = SEARCH_DEFAULTS["duration_s"],
    memory_mb: int | None = None,
    connection=None,
    local_settings: dict | None = None,
    seed: int = 1,
    distribution: str = "Uniform",
    params: dict | None = None,
    start_rate: float = SEARCH_DEFAULTS["start_rate"],
    max_rate: float = SEARCH_DEFAULTS["max_rate"],
    factor: float = SEARCH_DEFAULTS["factor"],
    tolerance: float = SEARCH_DEFAULTS["tolerance"],
    max_runs: int = SEARCH_DEFAULTS["max_runs"],
    cooldown_s: float = SEARCH_DEFAULTS["cooldown_s"],
    repeats: int = SEARCH_DEFAULTS["repeats"],
    budget_s: float | None = SEARCH_DEFAULTS["budget_s"],
    progress: Progress = QUIET,
) -> dict:
    """Run the search with real probes under ``probes_dir(out_dir)``; writes the result there as
    ``capacity-<function>-<stamp>.json``. ``progress`` gets a line per probe (the probes' own runs
    say nothing)."""
    check_out_dir(out_dir)  # the folder the user named: a missing parent is a typo, as for a run
    out = probes_dir(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    handle = None
    if connection is None:  # one platform for every probe (module docstring)
        handle, _ = start_embedded_platform(
            local_settings, out / f"localwhisk-{rundir.safe_name(function)}-{rundir.utc_stamp()}", progress
        )
        connection = Connection(apihost=handle.apihost, auth=handle.auth, namespace=handle.namespace, source="embedded")
    try:
        probe = run_probe_factory(
            function,
            out_dir=out,
            duration_s=duration_s,
            memory_mb=memory_mb,
            connection=connection,
            seed=seed,
            distribution=distribution,
            params=params,
        )
        result = search(
            probe,
            start_rate=start_rate,
            max_rate=max_rate,
            factor=factor,
            tolerance=tolerance,
            max_runs=max_runs,
            say=progress.say,
            cooldown_s=cooldown_s,
            repeats=repeats,
            budget_s=budget_s,
            noise=capacity_noise.snapshot,
            guess=guess_rate,
        )
    finally:
        if handle is not None:
            handle.stop()
    result.update(
        function=function, memory_mb=memory_mb, duration_s=duration_s, distribution=distribution, budget_s=budget_s
    )
    path = out / f"capacity-{rundir.safe_name(function)}-{rundir.utc_stamp()}.json"
    rundir.write_json_atomic(path, result)
    result["result_file"] = str(path)
    return result
