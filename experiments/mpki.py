"""Branch MPKI against execution time (the paper's Figures 6 and 7).

Per function, one run of that function alone at a balanced rate (``--rate``; check the mode the
analysis reports beside the value) with perf counting ``instructions`` and ``branch-misses``:
per cgroup of the platform's sandboxes where the host allows it (the function's containers only,
since it runs alone), else system-wide (the platform's own work counted in). The function's branch
MPKI is ``1000 · Σ branch-misses / Σ instructions`` over the whole run; its execution time is the
median activation ``execution_ms`` of the analysis.

Hardware counters are checked first (``faasprof.monitoring.collectors.perf.perf_readiness``): on a host
without them (a VM without a PMU) nothing runs; ``explain`` says what would be measured and the
command exits 3. A counter perf could not count is NaN with the reason, never 0.

Output ``<out>/mpki-<stamp>/``: ``manifest.json`` (format version, settings, run directories),
``mpki.csv`` and ``fig6_7_branch_mpki_vs_exec.png``; each function's run directory sits beside
them under ``runs/``.

Format versions (``MPKI_FORMAT_VERSION``): 1: first version.
"""

from __future__ import annotations

import csv
import math
import os
from pathlib import Path

import numpy as np

from faasprof.analyzer.analysis import load_summary
from faasprof.analyzer.markup import csv_cell, positive
from faasprof.analyzer.plots import new_figure
from faasprof import __version__, rundir
from faasprof.monitoring.collectors.perf import PerfCollector
from faasprof.monitoring.parsers.perf import base_event, parse_perf_stat

MPKI_FORMAT_VERSION = 1
MPKI_CSV = "mpki.csv"
FIGURE = "fig6_7_branch_mpki_vs_exec.png"
EVENTS = ("instructions", "branch-misses", "branches", "cycles")
REQUIRED_EVENTS = ("instructions", "branch-misses")
MPKI_COLUMNS = ("function", "rate_rps", "mode", "records", "execution_ms_p50", "branch_mpki", "branch_miss_rate", "ipc",
                "instructions", "branch_misses", "min_running_pct", "per", "missing", "run_dir")


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


def counts_from_perf(text: str, sep: str = ",") -> dict:
    """Summed counts and branch MPKI from ``perf stat -x`` output (interval or not, any aggregation).

    Events are matched without modifiers (``branch-misses:u`` counts as ``branch-misses``). Returns
    ``instructions``, ``branch_misses``, ``branches``, ``cycles`` (NaN when absent or never counted),
    ``branch_mpki``, ``branch_miss_rate``, ``ipc`` (NaN when an input is missing) and ``missing``
    (which inputs, and perf's status for them)."""
    long = parse_perf_stat(text, sep=sep)
    out: dict = {}
    missing = []
    for event in EVENTS:
        rows = long[long["event"].map(base_event) == event] if len(long) else long
        counted = rows[rows["status"] == "ok"]
        key = event.replace("-", "_")
        if counted.empty:
            out[key] = math.nan
            statuses = sorted(set(rows["status"])) if len(rows) else ["not in the output"]
            missing.append(f"{event}: {', '.join(s.replace('_', ' ') for s in statuses)}")
        else:
            out[key] = float(counted["value"].sum())
    running = long.loc[long["status"] == "ok", "running_pct"] if len(long) else None
    out["min_running_pct"] = float(running.min()) if running is not None and running.notna().any() else math.nan
    out["branch_mpki"] = _ratio(out["branch_misses"], out["instructions"], 1000.0)
    out["branch_miss_rate"] = _ratio(out["branch_misses"], out["branches"])
    out["ipc"] = _ratio(out["instructions"], out["cycles"])
    out["missing"] = "; ".join(m for m in missing if m.split(":")[0] in REQUIRED_EVENTS)
    return out


def row_for_run(run_dir: str | os.PathLike, function: str, rate_rps: float | None) -> dict:
    """One ``mpki.csv`` row from an executed and analysed run."""
    run_dir = Path(run_dir)
    manifest = rundir.read_manifest(run_dir)
    summary = load_summary(run_dir)
    stats = next((f for f in summary.get("functions") or [] if f.get("function") == function), {})
    phases = [p for i in summary.get("instances") or [] if i.get("function", i.get("instance")) == function for p in i.get("phases") or []]
    perf_meta = manifest.monitors.get("perf") or {}
    text_path = rundir.monitor_file(run_dir, PerfCollector.name, PerfCollector.output_name)
    counts = counts_from_perf(text_path.read_text()) if text_path.is_file() else {e.replace("-", "_"): math.nan for e in EVENTS} | {
        "branch_mpki": math.nan, "branch_miss_rate": math.nan, "ipc": math.nan, "min_running_pct": math.nan, "missing": "no perf output in the run"}
    return {
        "function": function,
        "rate_rps": rate_rps if rate_rps is not None else math.nan,
        "mode": phases[-1].get("mode") if phases else "unknown",
        "records": stats.get("with_record", 0),
        "execution_ms_p50": _num(stats.get("execution_ms_p50")),
        **{k: counts[k] for k in ("branch_mpki", "branch_miss_rate", "ipc", "instructions", "branch_misses", "min_running_pct", "missing")},
        "per": ((perf_meta.get("layout") or {}).get("per")) or "system",
        "run_dir": str(run_dir),
    }


def plot_mpki(rows: list[dict], path: Path) -> bool:
    """Branch MPKI against median execution time (log x); False when no function has both."""
    points = [r for r in rows if positive(r.get("execution_ms_p50")) and isinstance(r.get("branch_mpki"), float) and math.isfinite(r["branch_mpki"])]
    fig, ax = new_figure(figsize=(7, 4.5))
    if points:
        x = np.array([r["execution_ms_p50"] for r in points])
        y = np.array([r["branch_mpki"] for r in points])
        colours = ["#2ca02c" if r.get("mode") == "balanced" else "#d62728" for r in points]
        ax.scatter(x, y, c=colours)
        for r in points:
            ax.annotate(r["function"], (r["execution_ms_p50"], r["branch_mpki"]), fontsize=8, xytext=(3, 3), textcoords="offset points")
        ax.set_xscale("log")
    missing = [r["function"] for r in rows if r not in points]
    if missing:
        ax.text(0.01, 0.99, "not shown (no counts or no execution time): " + ", ".join(missing), transform=ax.transAxes, va="top", fontsize=7, color="#b22222")
    ax.set_xlabel("median execution time (ms, log)")
    ax.set_ylabel("branch MPKI (misses per kilo-instruction)")
    per = sorted({str(r.get("per")) for r in rows})
    ax.set_title(f"Figs 6/7: branch MPKI vs execution time (perf per {', '.join(per)}; red: not balanced)", fontsize=9)
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return bool(points)


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
    return rundir.study_manifest("mpki", MPKI_FORMAT_VERSION, generated_by={"faasprof": __version__, "git_commit": rundir.git_commit()},
                                 created_utc=rundir.utc_stamp(), functions=functions, settings=settings, runs={})


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


def _ratio(numerator: float, denominator: float, scale: float = 1.0) -> float:
    if not (math.isfinite(numerator) and math.isfinite(denominator)) or denominator == 0:
        return math.nan
    return scale * numerator / denominator


def _num(value) -> float:
    return float(value) if isinstance(value, (int, float)) else math.nan
