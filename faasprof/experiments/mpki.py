"""Branch MPKI against execution time (the paper's Figures 6 and 7).

Per function, one run of that function alone at a balanced rate (``--rate``; check the mode the
analysis reports beside the value) with perf counting ``instructions`` and ``branch-misses``:
per cgroup of the platform's sandboxes where the host allows it (the function's containers only,
since it runs alone), else system-wide (the platform's own work counted in).

A row per instance × steady phase (``--from-runs`` takes runs with several instances or phases,
e.g. one function at three rates in three windows): its branch MPKI is ``1000 · Σ branch-misses /
Σ instructions`` over the perf intervals whose middle lies in that phase's steady window
(``perf_start_s``..``perf_end_s`` says which span they covered), its execution time the median activation
``execution_ms`` and its mode those of the phase's statistics. Where perf's output cannot be
placed on the run's clock (no intervals, or no start time in ``meta.json``), the counts are the
whole output's and ``perf_start_s``/``perf_end_s`` are empty: the row says so instead of passing them for the
window's.

Hardware counters are checked first (``faasprof.monitoring.collectors.perf.perf_readiness``): on a host
without them (a VM without a PMU) nothing runs; ``explain`` says what would be measured and the
command exits 3. A counter perf could not count is NaN with the reason, never 0; ``--from-runs``
of runs whose perf had no hardware counters (``<not supported>``, or the events dropped when the
run started: ``no_counters``) writes its table and exits 3 too.

Output ``<out>/mpki-<stamp>/``: ``manifest.json`` (format version, settings, run directories),
``mpki.csv`` and ``fig6_7_branch_mpki_vs_exec.png``; each function's run directory sits beside
them under ``runs/``.

Format versions (``MPKI_FORMAT_VERSION``): 1: first version; 2: a row per instance × phase
(``instance``, ``phase``, its steady window ``window_start_s``/``window_end_s``, the perf
intervals' span ``perf_start_s``/``perf_end_s``, ``no_counters``), no longer one row of
whole-run values per instance.
"""

from __future__ import annotations

import csv
import math
import os
from pathlib import Path

import numpy as np

from faasprof import __version__, rundir
from faasprof.analyzer.analysis import load_summary
from faasprof.analyzer.markup import csv_cell, positive
from faasprof.analyzer.plots import new_figure
from faasprof.experiments.summary_phase import SummaryPhase
from faasprof.monitoring.collectors.perf import PerfCollector
from faasprof.monitoring.frames import start_offset_s
from faasprof.monitoring.parsers.perf import base_event, parse_perf_stat
from faasprof.numbers import ratio

MPKI_FORMAT_VERSION = 2
MPKI_CSV = "mpki.csv"
FIGURE = "fig6_7_branch_mpki_vs_exec.png"
EVENTS = ("instructions", "branch-misses", "branches", "cycles")
REQUIRED_EVENTS = ("instructions", "branch-misses")
NO_PERF_OUTPUT = "no perf output in the run"  # a run without a perf monitor (``missing``)
MPKI_COLUMNS = (
    "function",
    "instance",
    "phase",
    "window_start_s",
    "window_end_s",
    "perf_start_s",
    "perf_end_s",
    "rate_rps",
    "mode",
    "records",
    "execution_ms_p50",
    "branch_mpki",
    "branch_miss_rate",
    "ipc",
    "instructions",
    "branch_misses",
    "min_running_pct",
    "per",
    "missing",
    "no_counters",
    "run_dir",
)
NO_COUNTERS = "not_supported"  # perf's status for an event the host's PMU cannot count


def explain(dropped: dict[str, str], functions: list[str]) -> str:
    """What the command would measure, and why it cannot here."""
    reasons = "; ".join(f"{event}: {why}" for event, why in dropped.items()) or "no hardware counters"
    return (
        f"faasprof mpki would run each of {', '.join(functions) or 'the functions'} alone at a balanced rate and count "
        "instructions and branch-misses with perf (per cgroup of the sandboxes where the host allows it, else "
        "system-wide), then plot 1000 x branch-misses / instructions against the median execution time "
        "(the paper's Figures 6 and 7).\n"
        f"This host cannot count them ({reasons}): it needs a hardware PMU (bare metal, or a VM with the PMU "
        "passed through) and perf_event_paranoid <= 0 or root. `faasprof doctor` lists what this host can measure."
    )


def counts_from_perf(
    text: str, sep: str = ",", window: tuple[float, float] | None = None, offset_s: float | None = None
) -> dict:
    """Summed counts and branch MPKI from ``perf stat -x`` output (interval or not, any aggregation).

    Events are matched without modifiers (``branch-misses:u`` counts as ``branch-misses``). Returns
    ``instructions``, ``branch_misses``, ``branches``, ``cycles`` (NaN when absent or never counted),
    ``branch_mpki``, ``branch_miss_rate``, ``ipc`` (NaN when an input is missing), ``missing``
    (which inputs, and perf's status for them) and ``no_counters`` (perf said the host cannot
    count a required one). ``window``: [start, end) s on the run clock, with ``offset_s`` the
    perf start on it: only the intervals whose middle lies inside count, and ``perf_window_s``
    is the span they cover (None: the whole output, when it cannot be placed or no window asked)."""
    long = parse_perf_stat(text, sep=sep)
    statuses = {
        event: sorted(set(long.loc[long["event"].map(base_event) == event, "status"])) if len(long) else []
        for event in EVENTS
    }
    long, span, outside = _in_window(long, window, offset_s)
    out: dict = {"perf_window_s": span}
    missing = []
    for event in EVENTS:
        rows = long[long["event"].map(base_event) == event] if len(long) else long
        counted = rows[rows["status"] == "ok"]
        key = event.replace("-", "_")
        if counted.empty:
            out[key] = math.nan
            found = sorted(set(rows["status"])) if len(rows) else statuses[event]
            why = (
                outside
                if outside and statuses[event]
                else ", ".join(s.replace("_", " ") for s in found)
                if found
                else "not in the output"
            )
            missing.append(f"{event}: {why}")
        else:
            out[key] = float(counted["value"].sum())
    running = long.loc[long["status"] == "ok", "running_pct"] if len(long) else None
    out["min_running_pct"] = float(running.min()) if running is not None and running.notna().any() else math.nan
    out["branch_mpki"] = ratio(out["branch_misses"], out["instructions"], 1000.0)
    out["branch_miss_rate"] = ratio(out["branch_misses"], out["branches"])
    out["ipc"] = ratio(out["instructions"], out["cycles"])
    out["missing"] = "; ".join(m for m in missing if m.split(":")[0] in REQUIRED_EVENTS)
    out["no_counters"] = any(
        NO_COUNTERS in statuses[event] and "ok" not in statuses[event] for event in REQUIRED_EVENTS
    )
    return out


def _in_window(long, window: tuple[float, float] | None, offset_s: float | None):
    """The rows of the intervals whose middle lies in ``window`` (run clock), the span they cover,
    and why nothing is left when nothing is; all rows and no span when the output has no intervals
    or no start on the run clock (its counts are then the whole output's)."""
    if window is None or offset_s is None or not len(long) or not long["time_s"].notna().any():
        return long, None, ""
    ends = np.unique(long["time_s"].dropna().to_numpy(dtype="float64"))
    step = float(np.median(np.diff(ends))) if len(ends) > 1 else float(ends[0])
    middle = offset_s + long["time_s"].to_numpy(dtype="float64") - step / 2
    inside = (middle >= window[0]) & (middle < window[1])
    if not inside.any():
        return long.iloc[0:0], None, f"no perf interval inside [{window[0]:g}, {window[1]:g}) s"
    covered = offset_s + long.loc[inside, "time_s"].to_numpy(dtype="float64")
    return long[inside], [round(float(covered.min()) - step, 6), round(float(covered.max()), 6)], ""


def _perf_source(run_dir: Path, manifest: rundir.Manifest) -> tuple[str | None, str, float | None, dict]:
    """The run's perf output (None when absent), its separator, its start on the run clock (None
    when unknown) and its recorded settings."""
    directory = rundir.monitor_file(run_dir, PerfCollector.name, PerfCollector.output_name).parent
    meta = {**(manifest.monitors.get(PerfCollector.name) or {}), **rundir.read_monitor_meta(directory)}
    path = directory / PerfCollector.output_name
    text = path.read_text() if path.is_file() else None
    return text, (meta.get("layout") or {}).get("sep", ","), start_offset_s(meta, manifest.clock), meta


def rows_for_run(run_dir: str | os.PathLike, rate_rps: float | None = None) -> list[dict]:
    """The ``mpki.csv`` rows of an executed and analysed run: one per instance × steady phase, each
    with its phase's execution time, mode and the perf counts of its window (module docstring).
    ``rate_rps``: the rate asked for, when the run is one of ``faasprof mpki``'s own."""
    run_dir = Path(run_dir)
    manifest = rundir.read_manifest(run_dir)
    summary = load_summary(run_dir)
    text, sep, offset_s, perf_meta = _perf_source(run_dir, manifest)
    dropped = set((perf_meta.get("dropped_events") or {})) & set(REQUIRED_EVENTS)
    rows = []
    for instance in summary.get("instances") or []:
        for phase in map(SummaryPhase.of, instance.get("phases") or []):
            window = (phase.steady_start_s, phase.phase_end_s)
            counts = _no_perf_counts() if text is None else counts_from_perf(text, sep, window, offset_s)
            counts["no_counters"] = counts["no_counters"] or bool(dropped)
            rate = instance.get("rate_rps") if rate_rps is None else rate_rps
            rows.append(
                {
                    "function": instance.get("function", instance.get("instance")),
                    "instance": instance.get("instance"),
                    "phase": phase.phase,
                    "window_start_s": round(window[0], 6),
                    "window_end_s": round(window[1], 6),
                    "perf_start_s": (counts["perf_window_s"] or [math.nan])[0],
                    "perf_end_s": (counts["perf_window_s"] or [math.nan, math.nan])[1],
                    "rate_rps": rate if isinstance(rate, (int, float)) else math.nan,
                    "mode": phase.mode or "unknown",
                    "records": 0 if phase.with_record is None else phase.with_record,
                    "execution_ms_p50": _num(phase.execution_ms_p50),
                    **{
                        k: counts[k]
                        for k in (
                            "branch_mpki",
                            "branch_miss_rate",
                            "ipc",
                            "instructions",
                            "branch_misses",
                            "min_running_pct",
                            "missing",
                            "no_counters",
                        )
                    },
                    "per": ((perf_meta.get("layout") or {}).get("per")) or "system",
                    "run_dir": str(run_dir),
                }
            )
    return rows


def _no_perf_counts() -> dict:
    """``counts_from_perf``'s keys for a run without perf output: every count unknown."""
    return {e.replace("-", "_"): math.nan for e in EVENTS} | {
        "branch_mpki": math.nan,
        "branch_miss_rate": math.nan,
        "ipc": math.nan,
        "min_running_pct": math.nan,
        "missing": NO_PERF_OUTPUT,
        "perf_window_s": None,
        "no_counters": False,
    }


def plot_mpki(rows: list[dict], path: Path) -> bool:
    """Branch MPKI against median execution time (log x); False when no function has both."""
    points = [
        r
        for r in rows
        if positive(r.get("execution_ms_p50"))
        and isinstance(r.get("branch_mpki"), float)
        and math.isfinite(r["branch_mpki"])
    ]
    fig, ax = new_figure(figsize=(7, 4.5))
    if points:
        x = np.array([r["execution_ms_p50"] for r in points])
        y = np.array([r["branch_mpki"] for r in points])
        colours = ["#2ca02c" if r.get("mode") == "balanced" else "#d62728" for r in points]
        ax.scatter(x, y, c=colours)
        for r in points:
            ax.annotate(
                _point_label(r, rows),
                (r["execution_ms_p50"], r["branch_mpki"]),
                fontsize=8,
                xytext=(3, 3),
                textcoords="offset points",
            )
        ax.set_xscale("log")
    missing = [_point_label(r, rows) for r in rows if r not in points]
    if missing:
        ax.text(
            0.01,
            0.99,
            "not shown (no counts or no execution time): " + ", ".join(missing),
            transform=ax.transAxes,
            va="top",
            fontsize=7,
            color="#b22222",
        )
    ax.set_xlabel("median execution time (ms, log)")
    ax.set_ylabel("branch MPKI (misses per kilo-instruction)")
    per = sorted({str(r.get("per")) for r in rows})
    ax.set_title(f"Figs 6/7: branch MPKI vs execution time (perf per {', '.join(per)}; red: not balanced)", fontsize=9)
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return bool(points)


def _point_label(row: dict, rows: list[dict]) -> str:
    """A point's name: the function, with its instance and phase where the function has several rows."""
    if sum(1 for r in rows if r.get("function") == row.get("function")) < 2:
        return str(row["function"])
    return f"{row['function']} ({row.get('instance')} phase {row.get('phase')})"


def write_results(out: Path, rows: list[dict], manifest: rundir.Manifest) -> None:
    with open(out / MPKI_CSV, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(MPKI_COLUMNS))
        writer.writeheader()
        for row in rows:
            writer.writerow({k: csv_cell(row.get(k), 6) for k in MPKI_COLUMNS})
    plotted = plot_mpki(rows, out / FIGURE)
    manifest.update(files={"mpki_csv": MPKI_CSV, "figure": FIGURE if plotted else None})
    rundir.write_manifest(out, manifest)


def new_manifest(functions: list[str], settings: dict) -> rundir.Manifest:
    return rundir.study_manifest(
        "mpki",
        MPKI_FORMAT_VERSION,
        generated_by={"faasprof": __version__, "git_commit": rundir.git_commit()},
        created_utc=rundir.utc_stamp(),
        functions=functions,
        settings=settings,
        runs={},
    )


def mpki_workload(function: str, rate_rps: float, duration_s: float, per: str, seed: int = 6) -> dict:
    """The one-function workload of one measurement."""
    return {
        "test_name": f"mpki-{function}",
        "test_duration_in_seconds": duration_s,
        "random_seed": seed,
        "blocking_cli": True,
        "monitoring": {"perf": {"events": list(EVENTS), "per": per, "required": True, "interval_ms": 1000}},
        "instances": {function: {"application": function, "distribution": "Uniform", "rate": rate_rps}},
    }


def _num(value) -> float:
    return float(value) if isinstance(value, (int, float)) else math.nan
