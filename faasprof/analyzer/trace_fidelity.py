"""How faithfully a trace run ran its trace: the fidelity report of a ``faasprof trace sample`` workload.

Read from the run's manifest alone (the workload's ``trace`` block, its instances' trace files
as the run resolved them, its ``self_check`` warm-up) and the invocation frame. Per instance and
in total, after the warm-up:

- per-minute counts sent (the invocations sent, by the minute they were planned in) against the
  trace's (its counts times the instance's ``trace_scale``, rounded per minute as the schedule
  rounds them): exact, or the minutes and invocations that differ;
- arrivals within a minute against the spread chosen (``uniform``: the KS statistic of the send
  instants' offsets within their minute against a uniform over the minute; ``equidistant``: the
  median relative gap error against 60 s / count);
- executed durations (the records' run time, ``duration`` less ``initTime``, of successful calls:
  what the calibration measured, and what the trace's durations are, without a cold start's
  initialisation) against the trace function's percentiles, joined linearly into a distribution:
  Wasserstein (ms) and the one-sample KS statistic and p-value, with both medians; records in
  whole milliseconds (OpenWhisk's, localwhisk's) against the trace's rounded to whole
  milliseconds (``resolution_ms``; two-sample KS against its quantile grid);
- the memory the action ran with against the app's average allocated memory in the trace, and
  the cold-start share;
- the sample's own distance from the whole day, as ``faasprof trace sample`` measured it;
- the calibration the mapping used (its host, platform and date) beside the run's host and
  platform, with a warning where the run's host is not the calibration's.

A plot (``plots/trace_sent_vs_trace.png``) shows sent against trace per minute, in total.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import pandas as pd

from faasprof.analyzer.markup import pct
from faasprof.analyzer.plots import SAVE, new_figure
from faasprof.analyzer.templating import Table
from faasprof.errors import ConfigError
from faasprof.workload.arrivals import read_trace

# 2: ``duration`` is the run time (duration less initTime; was the duration), ``calibration``.
FIDELITY_VERSION = 2
PLOT_NAME = "trace_sent_vs_trace.png"
QUANTILE_POINTS = 1001


def _trace_quantiles(percentiles_ms: dict[str, float]) -> tuple[np.ndarray, np.ndarray]:
    points = sorted((float(p), float(v)) for p, v in percentiles_ms.items())
    return np.array([p for p, _ in points]) / 100.0, np.array([v for _, v in points])


def _duration_fit(executed_ms: np.ndarray, percentiles_ms: dict[str, float]) -> dict:
    probs, values = _trace_quantiles(percentiles_ms)
    grid = np.interp(np.linspace(0.0, 1.0, QUANTILE_POINTS), probs, values)
    if executed_ms.size == 0:
        return {"n": 0}

    def cdf(x):
        return np.interp(x, values, probs, left=0.0, right=1.0)

    # scipy.stats takes a second or more to import: only a trace run's analysis pays it, not every
    # `faasprof run` and `analyze` that imports this module with the analyzer.
    from scipy import stats

    # OpenWhisk's and localwhisk's records give whole milliseconds: against a continuous trace
    # distribution a 0.8 ms function executed exactly as asked reads KS 0.87 (every record 1 ms).
    # Such durations are compared with the trace's rounded to the same resolution (two-sample KS
    # against its quantile grid, which handles the ties).
    whole_ms = bool(np.all(executed_ms == np.round(executed_ms)))
    if whole_ms:
        grid = np.round(grid)
        ks = stats.ks_2samp(executed_ms, grid)
    else:
        ks = stats.kstest(executed_ms, cdf)
    return {
        "n": int(executed_ms.size),
        "resolution_ms": 1.0 if whole_ms else None,
        "executed_p50_ms": round(float(np.median(executed_ms)), 3),
        "trace_p50_ms": round(float(np.interp(0.5, probs, values)), 3),
        "wasserstein_ms": round(float(stats.wasserstein_distance(executed_ms, grid)), 3),
        "ks_statistic": round(float(ks.statistic), 4),
        "ks_pvalue": float(f"{ks.pvalue:.4g}"),
    }


def _within_minute(sent_s: np.ndarray, minute_of: np.ndarray, spread: str) -> dict:
    """How the send instants sit within their minutes, against the spread the schedule used."""
    if sent_s.size < 2:
        return {"model": spread, "n": int(sent_s.size)}
    offsets = np.clip(sent_s - 60.0 * minute_of, 0.0, 60.0)
    if spread == "equidistant":
        errors = []
        for minute in np.unique(minute_of):
            inside = np.sort(sent_s[minute_of == minute])
            if inside.size > 1:
                errors.append(np.abs(np.diff(inside) / (60.0 / inside.size) - 1.0))
        error = float(np.median(np.concatenate(errors))) if errors else None
        return {"model": spread, "n": int(sent_s.size), "median_gap_error": None if error is None else round(error, 4)}
    from scipy import stats  # as above: imported by a trace run's analysis only

    ks = stats.kstest(offsets / 60.0, "uniform")
    return {
        "model": spread,
        "n": int(sent_s.size),
        "ks_statistic": round(float(ks.statistic), 4),
        "ks_pvalue": float(f"{ks.pvalue:.4g}"),
    }


def _expected(instance: dict, given: dict, minutes: int) -> tuple[np.ndarray | None, str | None]:
    path = instance.get("trace_file")
    if not path:
        return None, "no trace file in the manifest"
    try:
        kind, values = read_trace(path, given.get("trace_row", 0), given.get("trace_start_minute", 1))
    except ConfigError as error:
        return None, str(error)
    if kind != "counts":
        return None, f"{path}: not per-minute counts"
    counts = np.zeros(minutes, dtype=np.int64)
    head = values[:minutes]
    counts[: head.size] = np.rint(head.astype(np.float64) * float(given.get("trace_scale", 1.0)))
    return counts, None


def is_trace_run(manifest) -> bool:
    """Whether the run replays a trace sample (its workload as given names the trace's functions)."""
    trace = ((manifest.workload or {}).get("as_given") or {}).get("trace")
    return isinstance(trace, dict) and isinstance(trace.get("functions"), dict)


def fidelity_summary(run) -> dict | None:
    """The ``trace_fidelity`` block of summary.json; None for a run of no trace sample."""
    if not is_trace_run(run.manifest):
        return None
    workload = run.manifest.workload or {}
    given = workload.get("as_given") or {}
    trace = given["trace"]
    frame = run.invocations
    warmup_s = float(run.warmup_s)
    minutes = int(math.ceil(float(workload.get("duration_s", 0.0)) / 60.0))
    first_minute = int(warmup_s // 60)
    spread = trace.get("spread", "uniform")
    per_function, sent_total, trace_total = [], np.zeros(minutes, np.int64), np.zeros(minutes, np.int64)
    all_sent, all_minutes = [], []
    instances = workload.get("instances") or {}
    for name, facts in trace["functions"].items():
        rows = frame[frame["instance"] == name]
        sent_mask = rows["lateness_ms"].notna().to_numpy()
        intended_s = rows["intended_s"].to_numpy(dtype=np.float64)
        sent_s = intended_s[sent_mask] + rows["lateness_ms"].to_numpy(dtype=np.float64)[sent_mask] / 1000.0
        minute_of = np.minimum((intended_s[sent_mask] // 60).astype(np.int64), minutes - 1)
        sent = np.bincount(minute_of, minlength=minutes)[:minutes]
        expected, why = _expected(instances.get(name) or {}, (given.get("instances") or {}).get(name) or {}, minutes)
        after = minute_of >= first_minute
        ok = rows["final_outcome"].to_numpy() == "success"
        measured = rows[ok & (rows["intended_s"].to_numpy() >= warmup_s)]
        executed = measured["execution_ms"].dropna().to_numpy(dtype=np.float64)
        entry: dict = {
            "instance": name,
            "function": facts.get("function"),
            "mapped_to": facts.get("mapped_to"),
            "mapping_error": facts.get("mapping_error"),
            "sent": int(sent[first_minute:].sum()),
            "trace": None if expected is None else int(expected[first_minute:].sum()),
            "trace_unreadable": why,
            "within_minute": _within_minute(sent_s[after], minute_of[after], spread),
            "duration": _duration_fit(executed, facts.get("duration_percentiles_ms") or {}),
            "memory_mb": _memory(measured),
            "app_memory_mb": facts.get("app_memory_mb"),
            "cold_share": round(float((measured["start_class"] == "cold").mean()), 4) if len(measured) else None,
        }
        if expected is not None:
            diff = sent[first_minute:] - expected[first_minute:]
            entry["minutes_differing"] = int(np.count_nonzero(diff))
            entry["invocations_differing"] = int(np.abs(diff).sum())
            entry["exact"] = not diff.any()
            trace_total += expected
        sent_total += sent
        all_sent.append(sent_s[after])
        all_minutes.append(minute_of[after])
        per_function.append(entry)
    diff = sent_total[first_minute:] - trace_total[first_minute:]
    successes = frame[(frame["final_outcome"] == "success") & (frame["intended_s"] >= warmup_s)]
    return {
        "format_version": FIDELITY_VERSION,
        "warmup_s": warmup_s,
        "spread": spread,
        "per_minute": {"minute": list(range(minutes)), "sent": sent_total.tolist(), "trace": trace_total.tolist()},
        "total": {
            "sent": int(sent_total[first_minute:].sum()),
            "trace": int(trace_total[first_minute:].sum()),
            "minutes_differing": int(np.count_nonzero(diff)),
            "invocations_differing": int(np.abs(diff).sum()),
            "exact": not diff.any(),
            "within_minute": _within_minute(
                np.concatenate(all_sent) if all_sent else np.empty(0),
                np.concatenate(all_minutes) if all_minutes else np.empty(0, np.int64),
                spread,
            ),
            "cold_share": round(float((successes["start_class"] == "cold").mean()), 4) if len(successes) else None,
            "duration_ks_median": _median([f["duration"].get("ks_statistic") for f in per_function]),
            "mapping_error_median_abs": _median(
                [abs(f["mapping_error"]) for f in per_function if f["mapping_error"] is not None]
            ),
        },
        "sample_distance": trace.get("distances"),
        "scale": trace.get("scale"),
        "calibration": _calibration(trace.get("calibration") or {}, run.manifest),
        "functions": per_function,
    }


def _calibration(calibration: dict, manifest) -> dict:
    """The calibration the mapping used, the run's host and platform beside it, and a warning where
    the hosts differ (a workload sampled on one host and run on another: the mapping does not hold)."""
    platform = manifest.platform or {}
    ran_on = "localwhisk (embedded)" if platform.get("embedded") else str(platform.get("kind") or "unknown")
    if platform.get("apihost") and not platform.get("embedded"):
        ran_on += f" {platform['apihost']}"
    host = manifest.host.get("hostname")
    warning = None
    if calibration.get("host") and host and calibration["host"] != host:
        warning = (
            f"the mapping was calibrated on host {calibration['host']}, the run ran on {host}: the executed durations "
            "follow this host, not the calibration; sample the workload again here"
        )
    return {**calibration, "run_host": host, "run_platform": ran_on, "warning": warning}


def _memory(rows: pd.DataFrame) -> float | None:
    values = rows["memory_mb"].dropna() if "memory_mb" in rows else pd.Series(dtype=float)
    return float(values.median()) if len(values) else None


def _median(values: list) -> float | None:
    kept = [v for v in values if v is not None]
    return round(float(np.median(kept)), 4) if kept else None


def write_plot(summary: Mapping[str, Any], plots_dir: Path) -> list[str]:
    block = summary.get("trace_fidelity")
    if not block:
        return []
    plots_dir.mkdir(parents=True, exist_ok=True)
    per = block["per_minute"]
    fig, ax = new_figure(figsize=(8, 3.5))
    # Each minute drawn over its whole width: the last one ends at the run's end.
    edges = [*per["minute"], len(per["minute"])]
    trace, sent = [*per["trace"], *per["trace"][-1:]], [*per["sent"], *per["sent"][-1:]]
    ax.step(edges, trace, where="post", label="trace (scaled, rounded)", linewidth=2, alpha=0.6)
    ax.step(edges, sent, where="post", label="sent", linestyle="--")
    if block["warmup_s"]:
        ax.axvspan(0, block["warmup_s"] / 60.0, color="grey", alpha=0.2, label="warm-up")
    ax.set_xlabel("minute of the run")
    ax.set_ylabel("invocations per minute")
    ax.set_title("Sent against the trace, per minute (all sampled functions)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(plots_dir / PLOT_NAME, **SAVE)
    return [PLOT_NAME]


FUNCTION_HEADERS = [
    "instance",
    "mapped to",
    "sent",
    "trace",
    "exact (or minutes off)",
    "trace p50 ms",
    "executed p50 ms",
    "Wasserstein ms",
    "KS",
    "memory MB",
    "app memory MB (trace)",
    "cold",
    "mapping error",
]


@dataclass
class FidelityView:
    """The report's trace-fidelity section (the ``trace_fidelity`` block of templates/report.html):
    the run's totals after the warm-up, the sample's distance from the day, a row per function."""

    warmup_s: float
    sent: str  # invocations, thousands separated
    trace: str
    exact: str  # "exactly", or how many minutes and invocations differ
    spread: str  # how arrivals are placed within a minute
    ks_uniform: float | None  # KS of the within-minute arrivals against uniform, where measured
    median_gap_error: float | None
    cold_share: float | None
    duration_ks_median: float | None
    mapping_error_median_abs: float | None
    distances: list[tuple[str, float | None, float | None]]  # (dimension, Wasserstein in log10 units, KS)
    functions: Table
    calibration: dict[str, Any]  # the mapping's calibration beside the run's host and platform; {} for none
    calibration_warning: str | None  # where the run's host is not the calibration's


def report_view(summary: Mapping[str, Any]) -> FidelityView | None:
    """The report's trace-fidelity section; None for a run that is not of a trace sample."""
    block = summary.get("trace_fidelity")
    if not block:
        return None
    total = block["total"]
    within = total["within_minute"]
    exact = "exactly" if total["exact"] else (
        f"not exactly: {total['minutes_differing']} minute(s) differ by {total['invocations_differing']:,} invocation(s) in all"
    )  # fmt: skip
    rows = []
    for f in block["functions"]:
        d = f["duration"]
        rows.append(
            [f["instance"], f["mapped_to"], f["sent"], f["trace"], "yes" if f.get("exact") else f.get("minutes_differing"),
             d.get("trace_p50_ms"), d.get("executed_p50_ms"), d.get("wasserstein_ms"), d.get("ks_statistic"),
             f["memory_mb"], f["app_memory_mb"], pct(f["cold_share"]), pct(f["mapping_error"])]
        )  # fmt: skip
    return FidelityView(
        warmup_s=block["warmup_s"],
        sent=f"{total['sent']:,}",
        trace=f"{total['trace']:,}",
        exact=exact,
        spread=block["spread"],
        ks_uniform=within.get("ks_statistic"),
        median_gap_error=within.get("median_gap_error"),
        cold_share=total["cold_share"],
        duration_ks_median=total["duration_ks_median"],
        mapping_error_median_abs=total["mapping_error_median_abs"],
        distances=[
            (name, v.get("wasserstein_log10"), v.get("ks_statistic"))
            for name, v in (block.get("sample_distance") or {}).items()
        ],
        functions=Table(FUNCTION_HEADERS, rows, left=2),
        calibration=dict(block.get("calibration") or {}),
        calibration_warning=(block.get("calibration") or {}).get("warning"),
    )


__all__ = ["FIDELITY_VERSION", "fidelity_summary", "report_view", "write_plot"]
