"""The experiments behind ``faasprof reproduce``, each built from the existing pieces and returning
the numbers its figures' verdicts read (``faasprof.experiments.reproduce.judge``).

======================  =============================================================================
experiment              what runs
======================  =============================================================================
``capacity``            the stored capacity of json_dumps on this host and platform, else a short
                        capacity search (``capacity_store.resolve_workload``, as ``faasprof run`` does)
``modes``               json_dumps at rising fractions of that capacity, one phase each, non-blocking
                        (Figs 4, 5; with RDT monitoring also Figs 10, 11): ``execute_analyzed``
``cold``                single calls of a short function, further apart than the idle timeout, so
                        that every call is a cold start (Fig 5)
``slowdown``            ``run_slowdown``, ``slowdown_rounds`` times, on the chosen isolation and, on
                        Docker, on process sandboxes beside it (Figs 15, 16; ``reproduce_slowdown``)
``mpki``                each function alone with perf counting branch misses (Figs 6, 7)
``interference``        the Fig 14 workload with the victim at 80 % of the capacity
======================  =============================================================================

Every run directory is an ordinary one under ``<reproduce dir>/runs/`` (``faasprof analyze``
re-analyses it). A failing experiment returns ``{"error": ...}``: its figures say so, the others
go on.
"""

from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from faasprof import rundir
from faasprof.analyzer.analysis import load_run, load_summary
from faasprof.analyzer.summary import Summary
from faasprof.errors import FaasprofError, NotReadyError
from faasprof.experiments import capacity_store
from faasprof.experiments import reproduce as plan
from faasprof.experiments.analyzed import execute_analyzed
from faasprof.experiments.capacity import find_capacity
from faasprof.experiments.interference import activity_window, report_run, resolve_rate
from faasprof.experiments.mpki import FIGURE as MPKI_FIGURE
from faasprof.experiments.mpki import mpki_workload, plot_mpki, rows_for_run
from faasprof.experiments.reproduce_slowdown import baseline_text, quick_claims, summarise_rounds
from faasprof.experiments.slowdown import SlowdownOptions, run_slowdown
from faasprof.experiments.slowdown_report import CALLS_CSV, FIG15, FIG16, SLOWDOWN_CSV, load_calls, load_rows
from faasprof.experiments.summary_phase import SummaryPhase
from faasprof.functions.catalogue import require
from faasprof.paths import WORKLOAD_CONFIGS_DIR
from faasprof.progress import QUIET, Progress
from faasprof.workload.spec import workload_from_dict

INTERFERENCE_WORKLOAD = WORKLOAD_CONFIGS_DIR / "fig14_interference.json"
INTERFERENCE_FRACTION = 0.8
MPKI_RATE_RPS = 2.0  # faasprof mpki's default: a balanced load for every function


@dataclass
class Context:
    out: Path  # the reproduce directory
    connection: Any  # None: the embedded localwhisk
    isolation: str  # docker | process | openwhisk (a named platform)
    profile: plan.Profile
    monitoring: dict  # the collectors the host allows, for the modes and interference runs
    progress: Progress = QUIET  # the command's lines for whoever watches

    @property
    def runs(self) -> Path:
        return self.out / "runs"

    def settings(self, isolation: str | None = None, **extra: Any) -> dict:
        """localwhisk's settings (empty on a named platform)."""
        if self.connection is not None:
            return {}
        chosen = isolation or self.isolation
        return {"isolation": "docker" if chosen == "docker" else "auto", **extra}


def platform_label(ctx: Context, isolation: str | None = None) -> str:
    if ctx.connection is not None:
        return f"OpenWhisk at {ctx.connection.apihost}"
    return f"localwhisk, {isolation or ctx.isolation} isolation"


def guarded(name: str, run: Callable[[], dict]) -> dict:
    """``run()``, or ``{"error": ...}`` when it fails for a reason faasprof can name."""
    try:
        return run()
    except (FaasprofError, OSError, ValueError, KeyError) as error:
        return {"error": f"{type(error).__name__}: {error}"[:400], "run_dirs": []}


def _search(function: str, **options: Any) -> dict:
    """``find_capacity`` with probes long enough that warm sandboxes, not the cold starts of a fresh
    platform, decide each probe's mode (``plan.CAPACITY_SEARCH`` over ``capacity.SEARCH_DEFAULTS``);
    ``options``: what ``capacity_store.resolve_workload`` passes a measure (where, memory, platform)."""
    return find_capacity(function, **{**options, **plan.CAPACITY_SEARCH})


def capacity(ctx: Context, function: str = plan.MODES_FUNCTION) -> dict:
    """The capacity of ``function`` here: stored, else measured and stored (``capacity_store``)."""
    data = {
        "test_name": f"reproduce-capacity-{function}",
        "test_duration_in_seconds": 1,
        "random_seed": 1,
        "instances": {"c": {"application": function, "distribution": "Uniform", "rate": {"capacity_fraction": 1.0}}},
    }
    workload = workload_from_dict(data, origin="faasprof reproduce (capacity)")
    resolved = capacity_store.resolve_workload(
        workload,
        ctx.connection,
        ctx.settings(),
        ctx.runs,
        measure=_search,
        progress=ctx.progress,
        measure_s=plan.CAPACITY_SEARCH_S,
    )
    entry = resolved.raw["capacity_resolution"]["c"]
    # The search's reference latency goes with the capacity: the modes runs are judged by it (rule 2(d)).
    return {
        "capacity_rps": float(entry["capacity_rps"]),
        "source": str(entry.get("capacity_source")),
        "key": entry.get("capacity_key"),
        "latency_reference": entry.get("latency_reference"),
        "run_dirs": sorted(str(p) for p in (ctx.runs / "capacity").glob("capacity-*") if p.is_dir()),
    }


def _successful_calls(frame) -> list[dict]:
    rows = frame[frame["successful"].astype(bool) & frame["has_record"].astype(bool)]
    columns = ["instance", "start_class", "wait_ms", "init_ms", "execution_ms", "duration_ms", "intended_s"]
    return [
        dict(zip(columns, values))
        for values in zip(
            *(rows[c].astype(str if c in ("instance", "start_class") else "float64").tolist() for c in columns)
        )
    ]


def _phase_rows(summary: Summary, phases: list[dict]) -> list[dict]:
    by_instance = {i["instance"]: SummaryPhase.of(i["phases"][-1]) for i in summary["instances"] if i.get("phases")}
    return [{**p, **_phase_figures(by_instance.get(p["instance"]))} for p in phases]


def _phase_figures(stats: SummaryPhase | None) -> dict:
    """What a figure reads of an instance's last steady phase (None: it has none)."""
    if stats is None:
        return {
            "mode": "unknown",
            "n": 0,
            "reasons": "",
            "p50_ms": None,
            "ci_low": None,
            "ci_high": None,
            "window_s": [None, None],
            "achieved_rps": None,
            "execution_ms_p50": None,
        }
    return {
        "mode": "unknown" if stats.mode is None else stats.mode,
        "n": 0 if stats.successful is None else stats.successful,
        "reasons": stats.mode_reasons or "",
        "p50_ms": stats.completion_latency_ms_p50,
        "ci_low": stats.completion_latency_ms_p50_ci_low,
        "ci_high": stats.completion_latency_ms_p50_ci_high,
        "window_s": [stats.steady_start_s, stats.phase_end_s],
        "achieved_rps": stats.achieved_rps,
        "execution_ms_p50": stats.execution_ms_p50,
    }


def _within(window: list[float], step_s: float) -> Callable[[np.ndarray], np.ndarray]:
    """Whether each perf interval (stamped at its end, ``step_s`` long) lies inside ``window``."""
    return lambda t: (t - step_s >= window[0] - 1e-9) & (t <= window[1] + 1e-9)


def _per_second(
    frame, column: str, inside: Callable[[np.ndarray], np.ndarray] | None = None, ratio: bool = False
) -> list[float]:
    """Per-interval values of a monitor column (summed over units; averaged for a ratio such as IPC),
    at the times ``inside`` accepts (all without it)."""
    if frame is None or column not in frame.columns:
        return []
    grouped = frame.groupby("t_s", sort=True)[column]
    series = grouped.mean() if ratio else grouped.sum(min_count=1)
    t = series.index.to_numpy(dtype="float64")
    values = series.to_numpy(dtype="float64")
    if inside is not None:
        values = values[inside(t)]
    return [float(v) for v in values if math.isfinite(v)]


def _between(window: list) -> Callable[[np.ndarray], np.ndarray]:
    low, high = (math.nan, math.nan) if None in window else window
    return lambda t: (t >= low) & (t < high)


def _modes_run(
    ctx: Context, phases: list[dict], grace: float, warmup: dict | None = None, reference: dict | None = None
) -> dict:
    """One run of ``phases`` back to back (after ``warmup``'s rate for ``length_s``, left out of
    the rows, when given): the rows with the analyzer's modes, the successful calls, the bandwidth.
    ``reference``: the capacity search's reference latency, so that the modes are decided by the one
    rule ``run`` and ``capacity`` apply (``analyzer.stats.decide_mode``, its standing-queue test included)."""
    instances, start = {}, 0.0
    for p in ([{**warmup, "instance": "warm-up"}] if warmup else []) + phases:
        p.setdefault("instance", f"at-{p['fraction']:g}x")
        instances[p["instance"]] = {
            "application": plan.MODES_FUNCTION,
            "distribution": "Uniform",
            "rate": p["rate_rps"],
            "activity_window": [start, start + p["length_s"]],
        }
        start += p["length_s"]
    data = {
        "test_name": "reproduce-modes",
        "test_duration_in_seconds": start,
        "random_seed": 7,
        "blocking_cli": False,
        "instances": instances,
    }
    if ctx.monitoring:
        data["monitoring"] = ctx.monitoring
    workload = workload_from_dict(data, origin="faasprof reproduce (Figs 4, 5)")
    run_dir = execute_analyzed(
        workload,
        ctx.runs,
        connection=ctx.connection,
        local_settings=ctx.settings(pause_grace_ms=grace),
        analyze=True,
        latency_reference={plan.MODES_FUNCTION: reference} if reference else None,
    )
    rows = _phase_rows(load_summary(run_dir), phases)
    run = load_run(run_dir)
    mine = {p["instance"] for p in phases}
    bandwidth = [
        s for s in (_per_second(run.monitors.get("rdt"), "mem_bw_mbps", _between(r["window_s"])) for r in rows) if s
    ]
    return {
        "run_dir": str(run_dir),
        "rows": rows,
        "calls": [c for c in _successful_calls(run.invocations) if c["instance"] in mine],
        "bandwidth": bandwidth,
    }


def modes(ctx: Context, cap: dict) -> dict:
    """Figs 4, 5 (and 10, 11 with RDT): json_dumps at each fraction of the capacity, one phase
    each; while no phase is over-invoked (a capacity measured too low), one more run at twice the
    highest rate, after a warm-up at that rate (``Profile.escalations`` at most)."""
    grace = plan.pause_grace_for(cap["capacity_rps"]) if ctx.connection is None else plan.PAUSE_GRACE_MS
    reference = cap.get("latency_reference")
    done = [_modes_run(ctx, plan.phase_plan(ctx.profile, cap["capacity_rps"], grace), grace, reference=reference)]
    for _ in range(ctx.profile.escalations):
        step = plan.higher_phase([r for d in done for r in d["rows"]], ctx.profile.phase_s, grace)
        if step is None:
            break
        higher, warmup = step
        ctx.progress.say(
            f"no phase over-invoked up to {warmup['rate_rps']:.3g}/s: one more at {higher['rate_rps']:.3g}/s"
        )
        done.append(_modes_run(ctx, [higher], grace, warmup=warmup, reference=reference))
    rows = [r for d in done for r in d["rows"]]
    over = {r["instance"] for r in rows if r["mode"] == "over-invoked"}
    calls = [c for d in done for c in d["calls"]]
    bandwidth = sorted((s for d in done for s in d["bandwidth"]), key=lambda s: float(np.median(s)))
    return {
        "run_dirs": [d["run_dir"] for d in done],
        "capacity": cap,
        "phases": rows,
        "over_calls": [c for c in calls if c["instance"] in over],
        "other_calls": [c for c in calls if c["instance"] not in over],
        "bandwidth_low": bandwidth[0] if bandwidth else [],
        "bandwidth_high": bandwidth[-1] if bandwidth else [],
        "plots": [
            str(Path(d["run_dir"]) / rundir.ANALYSIS / "plots" / name)
            for d in done
            for name in ("latency_over_time.png", "breakdown.png")
        ],
    }


def cold(ctx: Context) -> dict:
    """Fig 5's cold starts: calls of a short function further apart than the idle timeout."""
    calls = ctx.profile.cold_calls
    data = {
        "test_name": "reproduce-cold",
        "test_duration_in_seconds": calls * plan.COLD_GAP_S,
        "random_seed": 5,
        "blocking_cli": True,
        "instances": {
            "cold": {
                "application": plan.COLD_FUNCTION,
                "distribution": "Burst",
                "burst_size": 1,
                "burst_gap_s": plan.COLD_GAP_S,
            }
        },
    }
    workload = workload_from_dict(data, origin="faasprof reproduce (Fig 5)")
    settings = ctx.settings(idle_timeout_s=plan.COLD_IDLE_TIMEOUT_S)
    run_dir = execute_analyzed(workload, ctx.runs, connection=ctx.connection, local_settings=settings, analyze=True)
    found = [c for c in _successful_calls(load_run(run_dir).invocations) if c["start_class"] == "cold"]
    return {
        "run_dirs": [str(run_dir)],
        "cold_calls": found,
        "plots": [str(run_dir / rundir.ANALYSIS / "plots" / "breakdown.png")],
    }


def slowdown(ctx: Context) -> dict:
    """Figs 15, 16 on the chosen isolation and, when that is Docker, on process sandboxes beside it:
    ``slowdown_rounds`` rounds each (``reproduce_slowdown``: each round's median one sample)."""
    entries = [require(name, where="faasprof reproduce") for name in ctx.profile.slowdown_functions]
    isolations = [ctx.isolation] + (["process"] if ctx.isolation == "docker" else [])
    by_isolation: dict[str, dict] = {}
    run_dirs: list[str] = []
    for isolation in isolations:
        options = SlowdownOptions(repeat=ctx.profile.slowdown_repeat, extra_settings=ctx.settings(isolation))
        outs = [
            run_slowdown(entries, ctx.runs, options, connection=ctx.connection)
            for _ in range(ctx.profile.slowdown_rounds)
        ]
        run_dirs.extend(str(out) for out in outs)
        summary = summarise_rounds([(load_rows(out / SLOWDOWN_CSV), load_calls(out / CALLS_CSV)) for out in outs])
        by_isolation[isolation] = {
            **summary,
            "platform": platform_label(ctx, isolation),
            "dirs": [str(out) for out in outs],
            "baseline": baseline_text(len(outs), ctx.profile.slowdown_repeat),
            "claims": quick_claims(len(outs), ctx.profile.slowdown_repeat, len(entries))
            if ctx.profile.name != "full"
            else None,
            # Each round draws its own figures; the first round's stand for the figure's page.
            "plots": [str(outs[0] / FIG15), str(outs[0] / FIG16)],
        }
    return {
        "primary": ctx.isolation,
        "by_isolation": by_isolation,
        "run_dirs": run_dirs,
        "plots": by_isolation[ctx.isolation]["plots"],
    }


def _mpki_run(ctx: Context, function: str) -> Path:
    """One function alone with perf: per cgroup of the sandboxes where the host allows it, else system-wide."""
    for per in ("cgroup", "system"):
        workload = workload_from_dict(
            mpki_workload(function, MPKI_RATE_RPS, ctx.profile.mpki_s, per),
            origin=f"faasprof reproduce (mpki {function})",
        )
        try:
            return execute_analyzed(
                workload, ctx.runs, connection=ctx.connection, local_settings=ctx.settings(), analyze=True
            )
        except NotReadyError as problem:
            if per == "system" or "per cgroup" not in str(problem):
                raise
    raise AssertionError("unreachable")


def mpki(ctx: Context) -> dict:
    """Figs 6, 7: branch MPKI per second of the shortest and the longest function."""
    rows, samples = [], {}
    for function in ctx.profile.mpki_functions:
        run_dir = _mpki_run(ctx, function)
        rows.extend(rows_for_run(run_dir, MPKI_RATE_RPS))
        perf = load_run(run_dir).monitors.get("perf")
        samples[function] = _per_second(perf, "branch_mpki", ratio=True)
    ordered = sorted((r for r in rows if math.isfinite(r["execution_ms_p50"])), key=lambda r: r["execution_ms_p50"])
    figure = ctx.out / MPKI_FIGURE
    drawn = plot_mpki(rows, figure)
    return {
        "run_dirs": [r["run_dir"] for r in rows],
        "rows": rows,
        "short_mpki": samples.get(ordered[0]["function"], []) if ordered else [],
        "long_mpki": samples.get(ordered[-1]["function"], []) if ordered else [],
        "plots": [str(figure)] if drawn else [],
    }


def interference(ctx: Context, cap: dict) -> dict:
    """Fig 14: the victim's latency, and the system's IPC inside the aggressor's window and in the
    victim's own window before it (``ipc_by_window``), in each of ``interference_runs`` runs: the
    run, not the second, is the sample (``reproduce_rules.verdict_ratio_over_runs``)."""
    data = json.loads(INTERFERENCE_WORKLOAD.read_text(encoding="utf-8"))
    resolved, rate = resolve_rate(
        data, "json_dumps", cap["capacity_rps"], INTERFERENCE_FRACTION, f"capacity {cap['source']}"
    )
    workload = workload_from_dict(resolved, origin=str(INTERFERENCE_WORKLOAD), path=INTERFERENCE_WORKLOAD)
    runs, plots, latency = [], [], None
    for _ in range(ctx.profile.interference_runs):
        run_dir = execute_analyzed(
            workload, ctx.runs, connection=ctx.connection, local_settings=ctx.settings(), analyze=True
        )
        result_path = report_run(run_dir, "json_dumps", "deltablue", rate)
        result = json.loads(Path(result_path).read_text(encoding="utf-8"))
        run = load_run(run_dir)
        resolved_workload = run.manifest.workload
        ipc = ipc_by_window(
            run.monitors.get("perf"),
            activity_window(resolved_workload, "deltablue"),
            activity_window(resolved_workload, "json_dumps"),
        )
        runs.append({"run_dir": str(run_dir), **ipc})
        plots.append(str(Path(result_path).parent / result["figure"]))
        latency = latency or result.get("latency")
    return {
        "run_dirs": [run["run_dir"] for run in runs],
        "runs": runs,
        # The first run's windows name the comparison (every run has the same workload).
        "ipc_windows_s": runs[0]["ipc_windows_s"] if runs else None,
        "latency": latency,
        "plots": plots,
    }


def ipc_by_window(perf, aggressor: tuple[float, float] | None, victim: tuple[float, float] | None) -> dict:
    """Fig 14's IPC per perf interval inside the aggressor's window and, as the victim's own
    reference, before it (after it where nothing came before), each inside the victim's activity
    window: never the rest of the run pooled (the victim still recovering after the aggressor, the
    idle seconds past its end). An interval counts in a window only when it lies wholly inside it
    (perf stamps an interval at its end). Returns the samples and the windows they are of."""
    if aggressor is None or victim is None or perf is None or "ipc" not in perf.columns:
        return {"ipc_inside": [], "ipc_reference": [], "ipc_windows_s": None}
    stamps = np.unique(perf["t_s"].to_numpy(dtype="float64"))
    step = float(np.median(np.diff(stamps))) if len(stamps) > 1 else 0.0
    low, high = max(aggressor[0], victim[0]), min(aggressor[1], victim[1])
    windows = {"inside": [low, high], "before": [victim[0], low], "after": [high, victim[1]]}
    samples = {name: _per_second(perf, "ipc", _within(w, step), ratio=True) for name, w in windows.items()}
    reference = "before" if samples["before"] or not samples["after"] else "after"
    return {
        "ipc_inside": samples["inside"],
        "ipc_reference": samples[reference],
        "ipc_windows_s": {"inside": windows["inside"], reference: windows[reference]},
    }


# -- the order of work -------------------------------------------------------------------------

EXPERIMENT_ORDER = ("capacity", "modes", "cold", "slowdown", "mpki", "interference")
DESCRIPTIONS = {
    "capacity": f"capacity of {plan.MODES_FUNCTION} on this host and platform",
    "modes": f"{plan.MODES_FUNCTION} at rising fractions of its capacity (Figs 4, 5)",
    "cold": f"cold starts of {plan.COLD_FUNCTION} (Fig 5)",
    "slowdown": "native against FaaS execution (Figs 15, 16)",
    "mpki": "branch MPKI per function (Figs 6, 7)",
    "interference": "the Fig 14 workload",
}
RUNNERS: dict[str, Callable[[Context, dict], dict]] = {
    "capacity": lambda ctx, done: capacity(ctx),
    "modes": lambda ctx, done: modes(ctx, done["capacity"]),
    "cold": lambda ctx, done: cold(ctx),
    "slowdown": lambda ctx, done: slowdown(ctx),
    "mpki": lambda ctx, done: mpki(ctx),
    "interference": lambda ctx, done: interference(ctx, done["capacity"]),
}


def steps_for(figures: list) -> list[str]:
    """The experiments the figures read, in running order (the capacity first where a rate needs it)."""
    wanted = {e for f in figures for e in f.experiments}
    if wanted & {"modes", "interference"}:
        wanted.add("capacity")
    return [name for name in EXPERIMENT_ORDER if name in wanted]


def run_experiments(
    ctx: Context, figures: list, expected: dict[str, float], clock: Callable[[], float]
) -> dict[str, dict]:
    """Every experiment the figures need, one after the other, with progress and an ETA on ``ctx.progress``."""
    steps = steps_for(figures)
    results: dict[str, dict] = {}
    started = clock()
    for index, name in enumerate(steps, 1):
        left = plan.eta_seconds(expected, list(results), clock() - started)
        ctx.progress.say(
            f"[{index}/{len(steps)}] {DESCRIPTIONS[name]}: expected {plan.clock_text(expected.get(name, 0.0))}; "
            f"elapsed {plan.clock_text(clock() - started)}, ETA {plan.clock_text(left)}"
        )
        missing = results.get("capacity", {}).get("error") if name in ("modes", "interference") else None
        results[name] = (
            {"error": f"no capacity ({missing})", "run_dirs": []}
            if missing
            else guarded(name, functools.partial(RUNNERS[name], ctx, results))
        )
        if results[name].get("error"):
            ctx.progress.say(f"[{index}/{len(steps)}] {name} failed: {results[name]['error']}")
    return results
