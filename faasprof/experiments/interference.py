"""Interference (the paper's Figure 14): a victim function's latency beside the system's counters,
over time, while an aggressor joins for a few seconds.

``faasprof/workload_configs/fig14_interference.json`` drives ``json_dumps`` (the victim) for 29 s and
``deltablue`` (the aggressor) at 5/s in [10 s, 14 s), with system-wide perf counting. The victim's
rate is 80 % of its measured capacity: ``resolve_rate`` takes it from a capacity given on the
command line, from a stored ``faasprof capacity`` result, or from a fresh capacity search; with
none of them the workload's stored absolute rate is used and the result says so.

``plot_fig14`` draws, on one time axis with the aggressor's window shaded: the victim's latency
(every successful call and the per-second median), then IPC, LLC misses per kilo-instruction,
page faults and context switches (per kilo-instruction when instructions are counted, else per
second) and busy CPUs from task-clock. A metric the host cannot count gets a panel that says so
and why (the perf collector's dropped events), never a zero line.

The figure also goes into the run's ``analysis/report.html`` (a section before its other plots).
The victim's completion latency and each measured counter are summed up per window: before,
during and after the aggressor, each apart (``window_effect``); after the aggressor leaves, the
victim may still be recovering, so "outside the window" is no one figure.

Result file ``<run>/analysis/interference.json``; format versions (``INTERFERENCE_FORMAT_VERSION``):
1: first version.
2: ``latency`` has ``before``, ``during`` and ``after`` (n, p50, p99), ``during_over_before``,
   ``after_over_before`` and the counters' means per window, no longer one median "outside" that
   pooled before and after.
"""

from __future__ import annotations

import copy
import json
import math
import os
from pathlib import Path

import numpy as np
import pandas as pd
from markupsafe import Markup

from faasprof import __version__, rundir
from faasprof.analyzer.analysis import load_run
from faasprof.analyzer.plots import new_figure
from faasprof.analyzer.stats import clean
from faasprof.analyzer.templating import embedded_image, render
from faasprof.errors import ConfigError, FormatError
from faasprof.experiments.capacity import READABLE_CAPACITY_FORMATS
from faasprof.outcomes import ACCEPTED_HTTP_OUTCOMES, STATUS_TEXT_OUTCOMES

INTERFERENCE_FORMAT_VERSION = 2
FIG14 = "fig14_interference.png"
RESULT = "interference.json"

# (panel label, derived column, perf events it needs; first alternative that has data wins)
PANELS: tuple[tuple[str, tuple[tuple[str, str, tuple[str, ...]], ...]], ...] = (
    ("IPC", (("ipc", "IPC", ("cycles", "instructions")),)),
    ("LLC MPKI", (("llc_mpki", "LLC misses per kilo-instruction", ("LLC-load-misses", "instructions")),)),
    (
        "page faults",
        (
            ("page_faults_pki", "page faults per kilo-instruction", ("page-faults", "instructions")),
            ("page_faults_per_s", "page faults per s", ("page-faults",)),
        ),
    ),
    (
        "context switches",
        (
            ("context_switches_pki", "context switches per kilo-instruction", ("context-switches", "instructions")),
            ("context_switches_per_s", "context switches per s", ("context-switches",)),
        ),
    ),
    ("CPU", (("cpu_utilization", "busy CPUs (task-clock per s)", ("task-clock",)),)),
)


def capacity_from_file(path: str | os.PathLike) -> float:
    """The ``capacity_rps`` of a stored ``faasprof capacity`` result."""
    try:
        data = json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise ConfigError(
            f"{path}: no such capacity result; run `faasprof capacity json_dumps` or pass --capacity-rps"
        ) from None
    except (OSError, json.JSONDecodeError) as error:
        raise ConfigError(
            f"{path}: not a readable capacity result ({error}); pass the JSON `faasprof capacity` wrote"
        ) from None
    if not isinstance(data, dict) or data.get("format_version") not in READABLE_CAPACITY_FORMATS:
        readable = ", ".join(map(str, READABLE_CAPACITY_FORMATS))
        raise FormatError(
            f"{path}: format_version: {data.get('format_version') if isinstance(data, dict) else None!r} is not a capacity result this faasprof reads ({readable}); pass a file written by `faasprof capacity`"
        )
    capacity = data.get("capacity_rps") if isinstance(data, dict) else None
    if not isinstance(capacity, (int, float)) or capacity <= 0:
        raise ConfigError(
            f"{path}: capacity_rps: no capacity in this result ({data.get('stopped_because') if isinstance(data, dict) else 'not an object'}); repeat the search or pass --capacity-rps"
        )
    return float(capacity)


def resolve_rate(
    workload: dict, victim: str, capacity_rps: float | None, fraction: float, source: str
) -> tuple[dict, dict]:
    """The workload with the victim's rate set to ``fraction × capacity`` (when a capacity is known),
    and the description of where the rate came from."""
    if not 0 < fraction <= 1:
        raise ConfigError(f"--fraction: must be in (0, 1] (got {fraction:g})")
    instances = workload.get("instances") or {}
    if victim not in instances:
        raise ConfigError(
            f"workload: instances: no instance {victim!r} (have {', '.join(instances) or 'none'}); pass --victim NAME"
        )
    resolved = copy.deepcopy(workload)
    stored = instances[victim].get("rate")
    if capacity_rps is None:
        rate = {
            "victim": victim,
            "rate_rps": stored,
            "capacity_rps": None,
            "fraction": None,
            "source": f"the workload's stored absolute rate ({stored}/s); no capacity was given or measured",
        }
        return resolved, rate
    if capacity_rps <= 0:
        raise ConfigError(f"--capacity-rps: must be > 0 (got {capacity_rps:g})")
    value = round(fraction * capacity_rps, 3)
    resolved["instances"][victim]["rate"] = value
    return resolved, {
        "victim": victim,
        "rate_rps": value,
        "capacity_rps": capacity_rps,
        "fraction": fraction,
        "source": source,
    }


def activity_window(workload: dict, name: str | None) -> tuple[float, float] | None:
    """An instance's activity window in seconds (None: no such instance, or no window given)."""
    instance = (workload.get("instances") or {}).get(name or "") or {}
    # The manifest stores the resolved workload (window_s); a workload JSON has activity_window.
    window = instance.get("window_s") or instance.get("activity_window")
    return (float(window[0]), float(window[1])) if window else None


def successful(invocations: pd.DataFrame) -> pd.Series:
    """Final outcome ``success`` (``faasprof.outcomes``): the analyzer's column when it has one,
    else an accepted call whose record's status says success."""
    if "final_outcome" in invocations.columns:
        return invocations["final_outcome"].astype(str) == "success"
    accepted = invocations["outcome"].astype(str).isin(ACCEPTED_HTTP_OUTCOMES)
    status = (
        invocations["status"].astype(str).map(lambda text: STATUS_TEXT_OUTCOMES.get(text))
        if "status" in invocations.columns
        else None
    )
    return accepted & (status == "success") if status is not None else accepted


def panel_series(perf: pd.DataFrame | None, dropped: dict[str, str]) -> list[dict]:
    """Per panel: the chosen column and its per-interval series, or why it is missing."""
    out: list[dict] = []
    for title, alternatives in PANELS:
        chosen = None
        for column, label, events in alternatives:
            if perf is not None and column in perf.columns and perf[column].notna().any():
                chosen = (column, label, events)
                break
        if chosen is None or perf is None:  # a column is chosen only from perf's
            column, label, events = alternatives[0]
            reasons = []
            for event in events:
                if event in dropped:
                    reasons.append(f"{event}: {dropped[event]}")
                elif perf is None:
                    reasons.append(f"{event}: no perf output")
                elif event not in perf.columns or not perf[event].notna().any():
                    reasons.append(f"{event}: not counted")
            out.append({"panel": title, "column": column, "label": label, "missing": "; ".join(reasons) or "no value"})
            continue
        column, label, _ = chosen
        grouped = (
            perf.groupby("t_s", sort=True)[column].sum()
            if "unit_id" in perf.columns and perf["unit_id"].nunique() > 1 and column.endswith("_per_s")
            else perf.groupby("t_s", sort=True)[column].mean()
        )
        out.append(
            {
                "panel": title,
                "column": column,
                "label": label,
                "missing": None,
                "t_s": grouped.index.to_numpy(dtype="float64"),
                "values": grouped.to_numpy(dtype="float64"),
            }
        )
    return out


def plot_fig14(
    invocations: pd.DataFrame,
    victim: str,
    perf: pd.DataFrame | None,
    dropped: dict[str, str],
    window: tuple[float, float] | None,
    path: Path,
    title: str,
    note: str = "",
) -> list[dict]:
    """Draw the aligned panels; returns the panel descriptions (without the series)."""
    panels = panel_series(perf, dropped)
    fig, axes = new_figure(len(panels) + 1, 1, figsize=(10, 1.9 * (len(panels) + 1) + 0.6), sharex=True, squeeze=False)
    axes = axes[:, 0]
    mine = invocations[(invocations["instance"].astype(str) == victim) & successful(invocations)]
    t = mine["intended_s"].to_numpy(dtype="float64")
    latency = mine["completion_latency_ms"].to_numpy(dtype="float64")
    ax = axes[0]
    ax.scatter(t, latency, s=4, color="#888888", linewidths=0, label=f"{victim} calls")
    if len(t):
        seconds = np.floor(t)
        medians = pd.Series(latency).groupby(seconds).median()
        ax.plot(medians.index + 0.5, medians.to_numpy(), color="black", lw=1.2, label="median per s")
        ax.set_yscale("log")
    else:
        ax.text(0.5, 0.5, f"no successful {victim} call", transform=ax.transAxes, ha="center")
    ax.set_ylabel(f"{victim}\nlatency ms", fontsize=8)
    ax.legend(fontsize=7, loc="upper left")
    for ax, panel in zip(axes[1:], panels):
        if panel["missing"]:
            ax.text(
                0.5,
                0.5,
                f"{panel['label']}: not measured on this host\n({panel['missing']})",
                transform=ax.transAxes,
                ha="center",
                va="center",
                fontsize=8,
                color="#b22222",
            )
            ax.set_yticks([])
        else:
            ax.plot(panel["t_s"], panel["values"], lw=1)
        ax.set_ylabel(panel["label"].replace(" per ", "\nper ", 1), fontsize=7)
        ax.grid(True, alpha=0.3)
    for ax in axes:
        if window:
            ax.axvspan(window[0], window[1], color="#ff7f0e", alpha=0.15, lw=0)
    axes[-1].set_xlabel(
        "time (s since run start)" + (f"; shaded: aggressor active [{window[0]:g}, {window[1]:g}) s" if window else "")
    )
    fig.suptitle(title + (f"\n{note}" if note else ""), fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return [{k: v for k, v in p.items() if k not in ("t_s", "values")} for p in panels]


def _window_masks(t_s: np.ndarray, window: tuple[float, float]) -> dict[str, np.ndarray]:
    """Which times fall before, during and after the aggressor's window (each its own window:
    after it the victim may still be recovering, so before and after are never pooled)."""
    return {"before": t_s < window[0], "during": (t_s >= window[0]) & (t_s < window[1]), "after": t_s >= window[1]}


def _latency_block(latency_ms: np.ndarray) -> dict:
    values = latency_ms[np.isfinite(latency_ms)]
    return {
        "n": int(len(values)),
        "completion_latency_ms_p50": float(np.median(values)) if len(values) else math.nan,
        "completion_latency_ms_p99": float(np.quantile(values, 0.99)) if len(values) else math.nan,
    }


def _over(value: float, base: float) -> float:
    return value / base if math.isfinite(value) and math.isfinite(base) and base > 0 else math.nan


def window_effect(
    invocations: pd.DataFrame, victim: str, window: tuple[float, float] | None, panels: list[dict] | None = None
) -> dict:
    """The victim's completion latency (successful calls, by planned time) before, during and after
    the aggressor's window, each window's ratio to before, and each measured panel's mean per
    window (``panels``: ``panel_series``'s, with their series)."""
    if window is None:
        return {}
    mine = invocations[(invocations["instance"].astype(str) == victim) & successful(invocations)]
    t = mine["intended_s"].to_numpy(dtype="float64")
    latency = mine["completion_latency_ms"].to_numpy(dtype="float64")
    out: dict = {"windows_s": {"before": [None, window[0]], "during": list(window), "after": [window[1], None]}}
    for name, mask in _window_masks(t, window).items():
        out[name] = _latency_block(latency[mask])
    before = out["before"]["completion_latency_ms_p50"]
    out["during_over_before"] = _over(out["during"]["completion_latency_ms_p50"], before)
    out["after_over_before"] = _over(out["after"]["completion_latency_ms_p50"], before)
    counters = {}
    for panel in panels or []:
        if panel.get("missing") or "t_s" not in panel:
            continue
        masks = _window_masks(np.asarray(panel["t_s"], dtype="float64"), window)
        values = np.asarray(panel["values"], dtype="float64")
        counters[panel["column"]] = {
            name: float(np.nanmean(values[mask])) if mask.any() and np.isfinite(values[mask]).any() else math.nan
            for name, mask in masks.items()
        }
    out["counters"] = counters
    return out


def report_run(run_dir: str | os.PathLike, victim: str, aggressor: str | None, rate: dict | None = None) -> Path:
    """Load an executed run, draw Fig 14 into ``analysis/plots/`` and write ``analysis/interference.json``."""
    run = load_run(run_dir)
    manifest = run.manifest
    workload = manifest.workload
    perf_meta = manifest.monitors.get("perf") or {}
    dropped = dict(perf_meta.get("dropped_events") or {})
    if not perf_meta:
        dropped = {"perf": "the run had no perf monitor (monitoring.perf)"}
    perf = run.monitors.get("perf")
    window = activity_window(workload, aggressor)
    analysis = Path(run_dir) / "analysis"
    plots = analysis / "plots"
    plots.mkdir(parents=True, exist_ok=True)
    software_only = perf is not None and not any(
        c in perf.columns and perf[c].notna().any() for c in ("instructions", "cycles")
    )
    note = (
        "this host's perf counts software events only (no hardware PMU): IPC and LLC MPKI cannot be shown"
        if software_only
        else ""
    )
    if rate and rate.get("capacity_rps"):
        note = (
            note + "; " if note else ""
        ) + f"{victim} at {rate['rate_rps']:g}/s = {rate['fraction']:.0%} of capacity {rate['capacity_rps']:.4g}/s"
    elif rate:
        note = (note + "; " if note else "") + f"{victim} at the stored rate {rate['rate_rps']}/s"
    panels = plot_fig14(
        run.invocations, victim, perf, dropped, window, plots / FIG14, f"{run.test_name}: Fig 14 interference", note
    )
    latency = window_effect(run.invocations, victim, window, panel_series(perf, dropped))
    result = {
        "format_version": INTERFERENCE_FORMAT_VERSION,
        "generated_by": {"faasprof": __version__},
        "victim": victim,
        "aggressor": aggressor,
        "aggressor_window_s": list(window) if window else None,
        "rate": rate,
        "panels": panels,
        "software_events_only": software_only,
        "latency": clean(latency),
        "figure": f"plots/{FIG14}",
    }
    rundir.write_json_atomic(analysis / RESULT, result)
    add_to_report(analysis / "report.html", plots / FIG14, note)
    return analysis / RESULT


REPORT_BEGIN = "<!-- faasprof interference: fig14 -->"
REPORT_END = "<!-- /faasprof interference: fig14 -->"


def add_to_report(report: Path, figure: Path, note: str) -> bool:
    """Put Fig 14 (the aligned panels) into the run's report.html, before its other plots.

    A second call (``--report`` again) replaces the section. False when there is no report.html
    (an analysis that wrote none) or it has no plots heading to place the section before."""
    if not report.exists() or not figure.exists():
        return False
    text = report.read_text(encoding="utf-8")
    if REPORT_BEGIN in text and REPORT_END in text:
        head, _, rest = text.partition(REPORT_BEGIN)
        text = head + rest.partition(REPORT_END)[2]
    anchor = "<h2>Plots</h2>"
    if anchor not in text:
        return False
    section = render(
        "interference_fig14.html",
        begin=Markup(REPORT_BEGIN),
        end=Markup(REPORT_END),
        note=note or "",
        figure=embedded_image(figure, FIG14),
    ).strip()
    report.write_text(text.replace(anchor, section + anchor, 1), encoding="utf-8")
    return True
