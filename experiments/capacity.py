"""Capacity search: the highest rate at which a function stays balanced (the paper's capacity).

Each probe is an ordinary short run of one instance at a fixed rate (``faasprof.invoker.run.execute``),
analysed at once (``analyzer.analyze_run``); its latency mode decides the next rate:

1. **Step**: start at ``start_rate`` and multiply by ``factor`` while the mode is not
   ``over-invoked`` (under-invoked and balanced both mean the platform keeps up), up to
   ``max_rate``.
2. **Bisect** between the highest rate that kept up (``low``) and the lowest that did not
   (``high``), geometrically, until ``high / low − 1 ≤ tolerance`` or ``max_runs`` probes ran.

The first probe that keeps up (the lowest rate) is the search's *reference*: its median
completion latency is recorded in every later probe's manifest (``latency_reference``), where the
analyzer's queueing rule (``faasprof.analyzer.stats``, rule 2(d)) calls a probe over-invoked whose median
latency is twice the reference's: a standing queue, although throughput keeps up. The probe's own
report and the search thus give the same mode.

Without a platform (no connection) the search starts one embedded localwhisk, with the caller's
settings, for all its probes, as a long-lived platform serves a search: each probe finds the
sandboxes the earlier ones left (paused or warm) instead of creating them all anew, which on
Docker sandboxes made a probe's first seconds a queue of cold starts and the capacity a fraction of
what the platform sustains. Its store and log stay beside the probes (``localwhisk-<function>-<stamp>/``);
each probe's records are saved in its run directory as usual.

The capacity is ``low``; the result lists every probe (rate, run directory, mode and the evidence
behind it) so the verdict can be checked, and every run directory is kept for ``faasprof compare``.
When no probe was over-invoked (the ceiling ``max_rate`` or ``max_runs`` reached while keeping up,
or the next probe did not complete) the capacity is only a lower bound: the result says so
(``capacity_is_lower_bound``), the store marks it, and ``faasprof run`` warns when it takes
fractions of it (``faasprof.experiments.capacity_store``). A probe whose run did not complete
(interrupted, aborted) ends the search: its rate counts as not kept up, and the reason is
reported. A probe with too few samples for a mode (``unknown``) counts as kept up only below the
first over-invoked rate.

``SEARCH_DEFAULTS`` are the one set of search settings: ``faasprof capacity``'s option defaults
and the search ``faasprof run`` makes for a capacity fraction. Probe run directories and the result
go to ``probes_dir(out_dir)`` (``<out>/capacity/``) whoever asks.

Result format versions (``CAPACITY_FORMAT_VERSION``): 1: first version; compatible additions:
``reference``, ``capacity_is_lower_bound``.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

from faasprof import __version__, rundir
from faasprof.errors import ConfigError
from faasprof.progress import QUIET, Progress
from faasprof.analyzer import analyze_run
from faasprof.analyzer.markup import ms
from faasprof.invoker.platform_set import start_embedded_platform
from faasprof.invoker.preflight import check_out_dir
from faasprof.invoker.run import execute
from faasprof.platforms.openwhisk.connection import Connection
from faasprof.workload.spec import workload_from_dict

CAPACITY_FORMAT_VERSION = 1
PROBE_INSTANCE = "probe"
PROBES_DIR = "capacity"  # under the --out directory: every search's probe runs and result files

# The modes need the capacity within tens of percent, not better: 3 s probes from 5/s, tripling,
# bisected to 30 %, about half a minute on a small machine. The ceiling 1000/s is above what one
# host's localwhisk serves for a catalogue function; a search that reaches it reports a lower bound.
SEARCH_DEFAULTS = {"duration_s": 3.0, "start_rate": 5.0, "max_rate": 1000.0, "factor": 3.0, "tolerance": 0.3, "max_runs": 8, "cooldown_s": 0.5}


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

    @property
    def kept_up(self) -> bool:
        return self.status == "complete" and self.mode != "over-invoked"


def probe_workload(function: str, rate: float, duration_s: float, memory_mb: int | None, seed: int, distribution: str, params: dict | None) -> dict:
    """The workload JSON of one probe (FaaSProfiler format, one instance)."""
    instance: dict = {"application": function, "distribution": distribution, "rate": rate}
    if memory_mb is not None:
        instance["memory_mb"] = int(memory_mb)
    if params:
        instance["params"] = params
    return {
        "test_name": f"capacity-{function}-{rate:.4g}ps",
        "test_duration_in_seconds": duration_s,
        "random_seed": seed,
        "blocking_cli": True,
        "instances": {PROBE_INSTANCE: instance},
    }


def probe_from_summary(rate: float, run_dir: Path, summary: dict) -> Probe:
    status = summary["run"]["status"]
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
    )


def run_probe_factory(function: str, *, out_dir, duration_s: float, connection: Connection, memory_mb: int | None = None, seed: int = 1, distribution: str = "Uniform", params: dict | None = None, progress: Progress = QUIET) -> Callable[[float, dict | None], Probe]:
    """A probe that really runs: execute the one-instance workload, record the search's reference
    latency in its manifest (the analyzer's queueing rule reads it there), then analyze it."""
    def probe(rate: float, reference: dict | None) -> Probe:
        data = probe_workload(function, rate, duration_s, memory_mb, seed, distribution, params)
        workload = workload_from_dict(data, origin=f"capacity probe at {rate:g}/s")
        run_dir = execute(workload, out_dir, connection=connection, progress=progress)
        if reference is not None:
            rundir.update_manifest(run_dir, latency_reference={function: reference})
        summary = analyze_run(run_dir, connection, plots=True)
        return probe_from_summary(rate, Path(run_dir), summary)

    return probe


def reference_of(probe: Probe) -> dict | None:
    """The reference latency a kept-up probe gives the probes after it (None: it gives none)."""
    if not probe.kept_up or probe.p50_ms is None or not math.isfinite(probe.p50_ms) or probe.p50_ms <= 0:
        return None
    source = f"lowest-rate probe {Path(probe.run_dir).name}" if probe.run_dir else "lowest-rate probe"
    return {"completion_latency_ms_p50": probe.p50_ms, "rate_rps": probe.rate_rps, "source": source}


def search(probe: Callable[[float, dict | None], Probe], *, start_rate: float = SEARCH_DEFAULTS["start_rate"], max_rate: float = SEARCH_DEFAULTS["max_rate"], factor: float = SEARCH_DEFAULTS["factor"], tolerance: float = SEARCH_DEFAULTS["tolerance"], max_runs: int = SEARCH_DEFAULTS["max_runs"], say: Callable[[str], None] | None = None, cooldown_s: float = 0.0, sleep=time.sleep, clock=time.monotonic) -> dict:
    """Step, then bisect (module docstring); ``probe(rate, reference)`` runs one probe, judged
    against ``reference`` (the first kept-up probe's latency; None for the first). Returns the result dict."""
    if start_rate <= 0 or max_rate < start_rate:
        raise ConfigError(f"--start-rate/--max-rate: need 0 < start ({start_rate:g}) <= max ({max_rate:g})")
    if factor <= 1:
        raise ConfigError(f"--factor: must be > 1 (got {factor:g})")
    if tolerance <= 0:
        raise ConfigError(f"--tolerance: must be > 0 (got {tolerance:g})")
    probes: list[Probe] = []
    low: Probe | None = None
    high: Probe | None = None
    stopped = ""

    started = clock()
    reference: dict | None = None

    def run(rate: float) -> Probe:
        nonlocal reference
        if probes and cooldown_s > 0:
            sleep(cooldown_s)
        result = probe(rate, reference)
        probes.append(result)
        if reference is None:
            reference = reference_of(result)
        if say:
            # ETA: the probes left at most (max_runs), at the mean time a probe took so far.
            per_probe = (clock() - started) / len(probes)
            left = max_runs - len(probes)
            say(f"[{len(probes):>2}/{max_runs}] {rate:>9.4g}/s  {result.mode:<13} achieved {_f(result.achieved_rps)}/s  p50 {ms(result.p50_ms, 4)}  p99 {ms(result.p99_ms, 4)}  "
                f"(ETA at most {left * per_probe:.0f} s)")
        return result

    rate = start_rate
    while len(probes) < max_runs:
        result = run(rate)
        if not result.kept_up:
            high = result
            break
        low = result
        if rate >= max_rate:
            stopped = f"kept up at the ceiling --max-rate {max_rate:g}/s: the capacity is at least that (raise --max-rate)"
            break
        rate = min(rate * factor, max_rate)
    while high is not None and low is not None and len(probes) < max_runs and high.rate_rps / low.rate_rps - 1 > tolerance:
        if high.status != "complete":
            break
        result = run(math.sqrt(low.rate_rps * high.rate_rps))
        if result.kept_up:
            low = result
        else:
            high = result
    if not stopped:
        if low is not None and high is None:
            stopped = f"kept up at every rate of --max-runs {max_runs} probes, up to {low.rate_rps:g}/s: the capacity is at least that (raise --max-runs or --start-rate)"
        elif high is not None and high.status != "complete":
            stopped = f"the probe at {high.rate_rps:g}/s ended {high.status}; capacity bounded by the last complete probe"
        elif low is None:
            stopped = f"over-invoked already at the start rate {start_rate:g}/s (lower --start-rate)"
        elif len(probes) >= max_runs and high is not None and high.rate_rps / low.rate_rps - 1 > tolerance:
            stopped = f"stopped after --max-runs {max_runs} probes before reaching the tolerance"
        else:
            stopped = f"bracketed within {tolerance:.0%}"
    capacity = low.rate_rps if low is not None else None
    return {
        "format_version": CAPACITY_FORMAT_VERSION,
        "generated_by": {"faasprof": __version__},
        "capacity_rps": capacity,
        # No complete probe above it was over-invoked: the function may serve more.
        "capacity_is_lower_bound": low is not None and (high is None or high.status != "complete"),
        "bounds_rps": [low.rate_rps if low else None, high.rate_rps if high else None],
        "mode_at_capacity": low.mode if low else None,
        "reference": reference,
        "stopped_because": stopped,
        "probes": [asdict(p) for p in probes],
    }


def _f(value) -> str:
    return "-" if value is None or (isinstance(value, float) and not math.isfinite(value)) else f"{value:.4g}"


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
        handle, _ = start_embedded_platform(local_settings, out / f"localwhisk-{rundir.safe_name(function)}-{rundir.utc_stamp()}", progress)
        connection = Connection(apihost=handle.apihost, auth=handle.auth, namespace=handle.namespace, source="embedded")
    try:
        probe = run_probe_factory(function, out_dir=out, duration_s=duration_s, memory_mb=memory_mb, connection=connection, seed=seed, distribution=distribution, params=params)
        result = search(probe, start_rate=start_rate, max_rate=max_rate, factor=factor, tolerance=tolerance, max_runs=max_runs, say=progress.say, cooldown_s=cooldown_s)
    finally:
        if handle is not None:
            handle.stop()
    result.update(function=function, memory_mb=memory_mb, duration_s=duration_s, distribution=distribution)
    path = out / f"capacity-{rundir.safe_name(function)}-{rundir.utc_stamp()}.json"
    rundir.write_json_atomic(path, result)
    result["result_file"] = str(path)
    return result
