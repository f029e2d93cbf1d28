"""The sweep's results: every run analysed and compared, each metric plotted against each swept
parameter with error bars from the repeats, and the capacity per setting when the rate was swept.

Writes into the sweep directory::

    compare/            faasprof compare over all runs (frame, overlaid CDFs, report)
    sweep.parquet       one row per run × instance × phase (compare's rows), with a column per
                        swept parameter (the applied value) and the compare metrics
    sweep_summary.json  per instance × phase and parameter value: mean, standard deviation and
                        count of each metric; capacity per setting when `rate` was swept

Every figure is one instance's in one phase (its steady window), aggregated over the repeats of a
setting only: a workload whose phases call one function at different rates gives a series per
phase, never their pool. Memory variants of a function (``<function>-<MB>``) are one instance,
so they stay one series.
    plots/<metric>_vs_<parameter>.png
    report.html
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from faasprof import rundir
from faasprof.analyzer import markup
from faasprof.analyzer.compare import compare_runs
from faasprof.analyzer.compare_sides import Side
from faasprof.analyzer.frames import write_parquet
from faasprof.analyzer.plots import new_figure
from faasprof.analyzer.stats import QUEUE_MIN_MS, QUEUE_RATIO, is_reference, standing_queue
from faasprof.analyzer.templating import Image, Table, embedded_image, render
from faasprof.analyzer.units import unit_of
from faasprof.errors import FormatError
from faasprof.progress import QUIET, Progress

SUMMARY_FORMAT_VERSION = 1
# Completion latency (planned send → function end) first, as in every report: a non-blocking
# call's client latency is the time to its 202, and falls as the platform falls behind. Client
# latency is filled by compare for blocking calls only (an empty metric is not plotted).
PLOTTED_METRICS = (
    ("completion_latency_ms_p50", "completion latency p50 (ms)"),
    ("completion_latency_ms_p90", "completion latency p90 (ms)"),
    ("completion_latency_ms_p99", "completion latency p99 (ms)"),
    ("client_latency_ms_p50", "client latency p50, blocking calls (ms)"),
    ("client_latency_ms_p99", "client latency p99, blocking calls (ms)"),
    ("platform_latency_ms_p50", "platform latency (wait + duration) p50 (ms)"),
    ("platform_latency_ms_p99", "platform latency (wait + duration) p99 (ms)"),
    ("execution_ms_mean", "execution time, mean (ms)"),
    ("wait_ms_mean", "wait time, mean (ms)"),
    ("cold_fraction", "cold-start fraction"),
    ("achieved_rps", "achieved throughput (invocations/s)"),
)
MONITOR_HINTS = ("ipc", "mpki", "bw", "occupancy")
SERIES = ["instance", "phase"]  # what one line of a plot, one row of a table, follows across settings
LATENCY_SUFFIXES = ("_p50", "_p90", "_p99", "_p99_9")
# The last third's median completion latency (compare's column, from the analysis): rule 2(d)'s ramp guard.
LAST_THIRD = "trend_completion_last_third_median_ms"
SWEEP_FILE = "sweep.json"  # written by experiments.sweep as the sweep goes


COMPARE_DIR = "compare"  # the comparison of the sweep's runs, inside its folder


def load_sweep(sweep_dir: str | Path) -> dict:
    """The sweep's ``sweep.json`` (format-checked); FormatError when it is missing."""
    path = Path(sweep_dir) / SWEEP_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FormatError(f"{path}: missing; {sweep_dir} is not a faasprof sweep directory") from None
    rundir.check_format_version(path, data)
    return data


def sweep_frame(sweep_dir: Path, progress: Progress = QUIET) -> tuple[pd.DataFrame, list[str], dict]:
    """Compare every finished run of the sweep; one row per run × instance × phase with parameter columns."""
    log = load_sweep(sweep_dir)
    done = [p for p in log["points"] if p["status"] == "done" and p["run_dir"]]
    if not done:
        raise FormatError(f"{sweep_dir}: no point of the sweep finished; nothing to compare")
    run_dirs = [sweep_dir / p["run_dir"] for p in done]
    # A point's repeats are one side: its effect against the first point is stated over runs.
    sides: dict[str, Side] = {}
    for point, path in sorted(zip(done, run_dirs), key=lambda pair: pair[0].get("index", 0)):
        key = json.dumps(point["values"], sort_keys=True)
        sides.setdefault(key, Side(_point_name(point["values"]), [])).runs.append(path)
    result = compare_runs(run_dirs, out_dir=sweep_dir / COMPARE_DIR, progress=progress.say, sides=list(sides.values()))
    frame = result["frame"].copy()
    parameters = list(log["parameters"])
    by_run = {}
    for point, path in zip(done, run_dirs):
        applied = (rundir.read_manifest(path).sweep_point or {}).get("applied") or point["values"]
        by_run[path.name] = {
            "repeat": point["repeat"],
            **{p: _scalar(applied.get(p, point["values"].get(p))) for p in parameters},
        }
    extra = pd.DataFrame([by_run[name] for name in frame["run"]])
    units = {**result["frame"].attrs.get("units", {}), **{f"sweep_{p}": u for p in parameters if (u := unit_of(p))}}
    frame = pd.concat([frame.reset_index(drop=True), extra.add_prefix("sweep_")], axis=1)
    frame.attrs["units"] = units  # a setting's unit, which sweep_<name> no longer ends in
    return frame, parameters, result


def _point_name(values: dict) -> str:
    """A point as its side's name: ``memory_mb=256, rate=20``."""
    return ", ".join(
        f"{k}={v if isinstance(v, (int, float, str)) else json.dumps(v, sort_keys=True)}" for k, v in values.items()
    )


def sweep_effects(sweep_dir: Path) -> list[dict]:
    """The run-level effects (``faasprof.analyzer.run_stats``) of each point against the first, as
    the sweep's comparison wrote them; none when it was not analysed."""
    path = Path(sweep_dir) / COMPARE_DIR / "compare.json"
    try:
        return json.loads(path.read_text(encoding="utf-8")).get("run_level") or []
    except (OSError, ValueError):
        return []


def _scalar(value):
    if isinstance(value, dict):  # per cache id that differ: plot the mean
        numbers = [v for v in value.values() if isinstance(v, (int, float))]
        return float(np.mean(numbers)) if numbers else None
    if isinstance(value, str):
        try:
            return int(value, 16) if value.lower().startswith("0x") else float(value)
        except ValueError:
            return value
    return value


def _metrics(frame: pd.DataFrame) -> list[tuple[str, str]]:
    metrics = [(m, label) for m, label in PLOTTED_METRICS if m in frame and frame[m].notna().any()]
    for column in frame.columns:
        if (
            any(h in column.lower() for h in MONITOR_HINTS)
            and pd.api.types.is_numeric_dtype(frame[column])
            and frame[column].notna().any()
        ):
            metrics.append((column, column))
    return metrics


def aggregate(frame: pd.DataFrame, parameters: list[str]) -> list[dict]:
    """Mean, standard deviation and count of each metric per instance × phase and parameter setting."""
    keys = SERIES + [f"sweep_{p}" for p in parameters]
    rows = []
    for group, part in frame.groupby(keys, dropna=False, sort=True):
        entry = {**_series_entry(group, part), **dict(zip(keys[len(SERIES) :], group[len(SERIES) :]))}
        for metric, _ in _metrics(frame):
            values = pd.to_numeric(part[metric], errors="coerce").dropna()
            entry[metric] = {
                "mean": float(values.mean()) if len(values) else None,
                "std": float(values.std(ddof=1)) if len(values) > 1 else None,
                "n": int(len(values)),
            }
        entry["modes"] = sorted(set(",".join(part["mode"].astype(str)).split(","))) if "mode" in part else []
        rows.append(entry)
    return rows


def _series_entry(group: tuple, part: pd.DataFrame) -> dict:
    """The instance × phase a group of rows follows, and the function(s) it called (memory variants
    of one function are one instance)."""
    return {
        "instance": str(group[0]),
        "phase": int(group[1]),
        "function": ",".join(sorted({str(f) for f in part["function"]})),
    }


def capacities(frame: pd.DataFrame, parameters: list[str]) -> list[dict]:
    """With `rate` swept: per instance × phase and setting of the other parameters, the highest rate that
    kept up, judged as a capacity search judges its probes (``faasprof.experiments.capacity``): no repeat
    over-invoked, and no standing queue (``faasprof.analyzer.stats.standing_queue``, the analyzer's rule
    2(d) with its ramp guard) in the median completion latency against that of the lowest rate that kept
    up, the reference: a point whose last third's median fell back below the queue's threshold was a
    cold-start ramp, not a queue.
    Each point's own analysis has no reference, so the sweep applies the rule across its points.
    Where no rate failed, the capacity is a lower bound (``capacity_is_lower_bound``), with evidence."""
    if "rate" not in parameters:
        return []
    others = [f"sweep_{p}" for p in parameters if p != "rate"]
    out = []
    for group, part in frame.groupby([*SERIES, *others], dropna=False, sort=True):
        evidence = []
        kept_up_at: list[tuple[float, bool]] = []  # (rate, kept up) per rate, as in evidence
        reference = None
        for rate, at_rate in part.groupby("sweep_rate", sort=True):
            modes = sorted(set(",".join(at_rate["mode"].astype(str)).split(",")))
            latency = _median_of(at_rate, "completion_latency_ms_p50")
            last_third = _median_of(at_rate, LAST_THIRD)
            queued, words = standing_queue(latency, last_third, float(rate), reference)
            entry = {
                "rate": float(rate),
                "modes": modes,
                "over_invoked": "over-invoked" in modes,
                "completion_latency_ms_p50": latency if math.isfinite(latency) else None,
                LAST_THIRD: last_third if math.isfinite(last_third) else None,
                "queueing": bool(queued),
                "queueing_evidence": words,
            }
            entry["kept_up"] = not entry["over_invoked"] and not queued
            evidence.append(entry)
            kept_up_at.append((float(rate), bool(entry["kept_up"])))
            if reference is None and entry["kept_up"]:
                candidate = {
                    "completion_latency_ms_p50": latency,
                    "rate_rps": float(rate),
                    "source": "the sweep's lowest rate",
                }
                reference = candidate if is_reference(candidate) else None
        first_failed = next((rate for rate, kept_up in kept_up_at if not kept_up), None)
        capacity = max(
            (rate for rate, kept_up in kept_up_at if kept_up and (first_failed is None or rate < first_failed)),
            default=None,
        )
        out.append(
            {
                **_series_entry(group, part),
                **{k.removeprefix("sweep_"): v for k, v in zip(others, group[len(SERIES) :])},
                "capacity_rps": capacity,
                "capacity_is_lower_bound": capacity is not None and first_failed is None,
                "reference": reference,
                "evidence": evidence,
            }
        )
    return out


def _median_of(rows: pd.DataFrame, column: str) -> float:
    """The median over a setting's repeats of one figure (NaN where no run has it)."""
    if column not in rows:
        return math.nan
    return float(pd.to_numeric(rows[column], errors="coerce").median())


def plot_versus(frame: pd.DataFrame, parameters: list[str], out: Path) -> list[str]:
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for parameter in parameters:
        x_column = f"sweep_{parameter}"
        if not pd.api.types.is_numeric_dtype(pd.to_numeric(frame[x_column], errors="coerce")):
            continue
        others = [f"sweep_{p}" for p in parameters if p != parameter]
        for metric, label in _metrics(frame):
            fig, ax = new_figure(figsize=(6.4, 4.0))
            for group, part in frame.groupby([*SERIES, *others], dropna=False, sort=True):
                stats = part.groupby(x_column)[metric].agg(["mean", "std"]).sort_index()
                series = _series_entry(group, part)
                name = f"{series['instance']} phase {series['phase']} ({series['function']})" + "".join(
                    f", {o.removeprefix('sweep_')}={v:g}"
                    if isinstance(v, (int, float))
                    else f", {o.removeprefix('sweep_')}={v}"
                    for o, v in zip(others, group[len(SERIES) :])
                )
                ax.errorbar(
                    stats.index.astype(float),
                    stats["mean"],
                    yerr=stats["std"].fillna(0),
                    marker="o",
                    capsize=3,
                    label=name,
                )
            ax.set_xlabel(parameter)
            ax.set_ylabel(label)
            if metric.endswith(LATENCY_SUFFIXES) and (pd.to_numeric(frame[metric], errors="coerce").dropna() > 0).all():
                ax.set_yscale("log")  # milliseconds when balanced, seconds when over-invoked: one axis for both
            ax.grid(alpha=0.3, which="both")
            ax.legend(fontsize=7)
            ax.set_title(f"{label} vs {parameter} (mean ± sd over repeats)", fontsize=9)
            name = f"{metric}_vs_{parameter}.png"
            fig.tight_layout()
            fig.savefig(out / name, dpi=100)
            written.append(name)
    return written


def _cell(metric: str, value) -> str:
    """A number with its unit: latencies in ms or s, fractions in %, rates per second."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if metric.endswith(LATENCY_SUFFIXES) or metric.endswith("_ms_mean"):
        return markup.ms(value)
    if metric.endswith("_fraction"):
        return markup.pct(value)
    if metric.endswith("_rps"):
        return markup.rate(value)
    return markup.fmt(value)


@dataclass(frozen=True)
class Heading:
    """The page's title lines: the sweep's folder name, its parameters, the capacity rule's bounds."""

    name: str
    parameters: list[str]
    queue_ratio: str
    queue_min_ms: str


def heading_section(sweep_dir: Path, parameters: list[str]) -> Heading:
    return Heading(sweep_dir.name, list(parameters), f"{QUEUE_RATIO:g}", f"{QUEUE_MIN_MS:g}")


def capacity_section(parameters: list[str], capacity: list[dict]) -> Table | None:
    """The capacity per setting (a rate was swept); None when there is none."""
    if not capacity:
        return None
    others = [p for p in parameters if p != "rate"]
    rows = [
        [
            e["instance"],
            e["phase"],
            e["function"],
            *(e.get(o) for o in others),
            ("≥ " if e["capacity_is_lower_bound"] else "") + markup.rate(e["capacity_rps"]),
        ]
        for e in capacity
    ]
    return Table(["instance", "phase", "function", *others, "capacity"], rows)


def metrics_section(parameters: list[str], rows: list[dict]) -> Table | None:
    """Each metric's mean ± sd over a setting's repeats (n), a row per instance × phase × setting."""
    if not rows:
        return None
    metrics = [k for k, v in rows[0].items() if isinstance(v, dict)]
    keys = [*SERIES, "function"] + [f"sweep_{p}" for p in parameters]
    labels = dict(PLOTTED_METRICS)
    cells = []
    for row in rows:
        line = [row[k] for k in keys]
        for metric in metrics:
            value = row[metric]
            sd = f" ± {_cell(metric, value['std'])}" if value["std"] is not None else ""
            line.append(f"{_cell(metric, value['mean'])}{sd} ({value['n']})")
        cells.append(line + [", ".join(row["modes"])])
    headers = (
        [k.removeprefix("sweep_") for k in keys] + [labels.get(m, m).replace(" (ms)", "") for m in metrics] + ["modes"]
    )
    return Table(headers, cells)


def plots_section(sweep_dir: Path, plots: list[str]) -> list[Image]:
    return [embedded_image(sweep_dir / "plots" / name, name) for name in plots]


def write_html(
    path: Path, sweep_dir: Path, parameters: list[str], rows: list[dict], capacity: list[dict], plots: list[str]
) -> None:
    """The sweep's page (templates/sweep.html), in the run report's look."""
    page = render(
        "sweep.html",
        title=f"faasprof sweep {sweep_dir.name}",
        heading=heading_section(sweep_dir, parameters),
        capacity=capacity_section(parameters, capacity),
        metrics=metrics_section(parameters, rows),
        plots=plots_section(sweep_dir, plots),
    )
    path.write_text(page, encoding="utf-8")


def write_sweep_report(sweep_dir: Path, progress: Progress = QUIET) -> Path:
    frame, parameters, _ = sweep_frame(sweep_dir, progress=progress)
    write_parquet(frame, sweep_dir / "sweep.parquet", kind="sweep")  # with each column's unit
    rows = aggregate(frame, parameters)
    capacity = capacities(frame, parameters)
    plots = plot_versus(frame, parameters, sweep_dir / "plots")
    rundir.write_json_atomic(
        sweep_dir / "sweep_summary.json",
        {
            "format_version": SUMMARY_FORMAT_VERSION,
            "parameters": parameters,
            "settings": rows,
            "capacity": capacity,
            "plots": [f"plots/{p}" for p in plots],
        },
    )
    write_html(sweep_dir / "report.html", sweep_dir, parameters, rows, capacity, plots)
    progress.say(f"sweep report: {sweep_dir / 'report.html'}")
    return sweep_dir / "report.html"
