"""Capacity search: the highest rate at which a function stays balanced (the paper's capacity).

Each probe is an ordinary short run of one instance at a fixed rate (``invoker.run.execute``),
analysed at once (``analyzer.analyze_run``); its latency mode decides the next rate:

1. **Step**: start at ``start_rate`` and multiply by ``factor`` while the mode is not
   ``over-invoked`` (under-invoked and balanced both mean the platform keeps up), up to
   ``max_rate``.
2. **Bisect** between the highest rate that kept up (``low``) and the lowest that did not
   (``high``), geometrically, until ``high / low − 1 ≤ tolerance`` or ``max_runs`` probes ran.

The capacity is ``low``; the result lists every probe (rate, run directory, mode and the evidence
behind it) so the verdict can be checked, and every run directory is kept for ``faasprof compare``.
A probe whose run did not complete (interrupted, aborted) ends the search: its rate counts as not
kept up, and the reason is reported. A probe with too few samples for a mode (``unknown``) counts
as kept up only below the first over-invoked rate.

Result format versions (``CAPACITY_FORMAT_VERSION``): 1: first version.
"""

from __future__ import annotations

import math
import os
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

from faasprof import __version__, rundir
from faasprof.errors import ConfigError
from analyzer import analyze_run
from analyzer.markup import ms
from invoker.run import execute
from workload.spec import workload_from_dict

CAPACITY_FORMAT_VERSION = 1
PROBE_INSTANCE = "probe"


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


def run_probe_factory(function: str, *, out_dir, duration_s: float, memory_mb: int | None = None, connection=None, local_settings: dict | None = None, seed: int = 1, distribution: str = "Uniform", params: dict | None = None, progress: bool = True) -> Callable[[float], Probe]:
    """A probe that really runs: execute the one-instance workload, then analyze it."""
    def probe(rate: float) -> Probe:
        data = probe_workload(function, rate, duration_s, memory_mb, seed, distribution, params)
        workload = workload_from_dict(data, origin=f"capacity probe at {rate:g}/s")
        run_dir = execute(workload, out_dir, connection=connection, local_settings=dict(local_settings or {}), progress=progress)
        summary = analyze_run(run_dir, connection, plots=True)
        return probe_from_summary(rate, Path(run_dir), summary)

    return probe


def search(probe: Callable[[float], Probe], *, start_rate: float = 1.0, max_rate: float = 1000.0, factor: float = 2.0, tolerance: float = 0.1, max_runs: int = 12, say: Callable[[str], None] | None = None, cooldown_s: float = 0.0, sleep=time.sleep, clock=time.monotonic) -> dict:
    """Step, then bisect (module docstring); ``probe(rate)`` runs one probe. Returns the result dict."""
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

    def run(rate: float) -> Probe:
        if probes and cooldown_s > 0:
            sleep(cooldown_s)
        result = probe(rate)
        probes.append(result)
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
            stopped = f"kept up at the maximum rate {max_rate:g}/s: the capacity is at least that (raise --max-rate)"
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
        if high is not None and high.status != "complete":
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
        "bounds_rps": [low.rate_rps if low else None, high.rate_rps if high else None],
        "mode_at_capacity": low.mode if low else None,
        "stopped_because": stopped,
        "probes": [asdict(p) for p in probes],
    }


def _f(value) -> str:
    return "-" if value is None or (isinstance(value, float) and not math.isfinite(value)) else f"{value:.4g}"


def find_capacity(
    function: str,
    *,
    out_dir: str | os.PathLike = "runs",
    duration_s: float = 10.0,
    memory_mb: int | None = None,
    connection=None,
    local_settings: dict | None = None,
    seed: int = 1,
    distribution: str = "Uniform",
    params: dict | None = None,
    start_rate: float = 1.0,
    max_rate: float = 1000.0,
    factor: float = 2.0,
    tolerance: float = 0.1,
    max_runs: int = 12,
    cooldown_s: float = 1.0,
    progress: bool = True,
) -> dict:
    """Run the search with real probes; writes ``<out_dir>/capacity-<function>-<stamp>.json``."""
    out = Path(out_dir)
    say = (lambda line: print(line, file=sys.stderr, flush=True)) if progress else None
    probe = run_probe_factory(function, out_dir=out, duration_s=duration_s, memory_mb=memory_mb, connection=connection, local_settings=local_settings, seed=seed, distribution=distribution, params=params, progress=False)
    result = search(probe, start_rate=start_rate, max_rate=max_rate, factor=factor, tolerance=tolerance, max_runs=max_runs, say=say, cooldown_s=cooldown_s)
    result.update(function=function, memory_mb=memory_mb, duration_s=duration_s, distribution=distribution)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"capacity-{rundir.safe_name(function)}-{rundir.utc_stamp()}.json"
    rundir.write_json_atomic(path, result)
    result["result_file"] = str(path)
    return result
