"""Plots and the HTML page of ``faasprof compare`` (matplotlib figures drawn by Agg, never through pyplot; self-contained HTML)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from faasprof.analyzer.markup import ms, pct, rate, ratio
from faasprof.analyzer.plots import SAVE, new_figure
from faasprof.analyzer.run_stats import format_effect, format_value
from faasprof.analyzer.templating import Image, Table, embedded_image, render

# Completion latency first, client latency (only filled for blocking calls) after it.
LATENCY_COLUMNS = (
    "completion_latency_ms_p50",
    "completion_latency_ms_p90",
    "completion_latency_ms_p99",
    "client_latency_ms_p50",
    "client_latency_ms_p99",
)
VERSUS = (
    ("completion_latency_ms_p50", "p50 completion latency (ms)"),
    ("completion_latency_ms_p99", "p99 completion latency (ms)"),
    ("achieved_rps", "achieved invocations/s"),
    ("cold_fraction", "cold-start fraction"),
)


MAX_LEGEND_RUNS = 12  # above this a legend is unreadable (and costs seconds to draw): the title says how many


def where(entry: dict) -> str:
    """An instance × phase as the tables name it: ``over phase 2 (json_dumps, over-invoked)``."""
    detail = ", ".join(str(v) for v in (entry.get("function"), entry.get("mode")) if v)
    return f"{entry['instance']} phase {entry['phase']}" + (f" ({detail})" if detail else "")


def _series(frame: pd.DataFrame) -> list[tuple[str, int, str]]:
    """The frame's instance × phase pairs, each with its title (its function)."""
    pairs = frame[["instance", "phase", "function"]].astype({"instance": str, "function": str}).drop_duplicates()
    return [
        (str(i), int(p), f"{i} phase {int(p)} ({f})")
        for i, p, f in sorted(pairs.itertuples(index=False, name=None), key=lambda t: (t[1], t[0]))
    ]


def overlaid_cdfs(
    path: Path,
    frame: pd.DataFrame,
    paths: list[Path],
    names: list[str],
    cdfs: dict[Path, dict[tuple[str, int], tuple[np.ndarray, np.ndarray]]],
) -> None:
    """One CDF per run for each instance × phase (the first six); ``cdfs``: per run path, per
    (instance, phase), the thinned CDF points of the steady window's completion latencies
    (``faasprof.analyzer.compare_latencies.cdf_points``)."""
    series = _series(frame)[:6]
    fig, axes = new_figure(len(series), 1, figsize=(8, 3.6 * len(series)), squeeze=False)
    labels = dict(zip(frame["run"], frame["label"]))
    empty = (np.array([]), np.array([]))
    for ax, (instance, phase, title) in zip(axes[:, 0], series):
        for name, run_path in zip(names, paths):
            x, y = cdfs.get(run_path, {}).get((instance, phase), empty)
            if len(x):
                ax.plot(x, y, drawstyle="steps-post", label=str(labels.get(name, name)))
        ax.set_xscale("log")
        ax.set_xlabel("planned send → function end (ms; successful invocations, steady window)")
        ax.set_ylabel("fraction")
        ax.grid(True, which="both", alpha=0.3)
        if len(ax.lines) > MAX_LEGEND_RUNS:
            ax.set_title(
                f"{title} ({len(ax.lines)} runs; legend omitted above {MAX_LEGEND_RUNS}, see the table)", fontsize=10
            )
        else:
            ax.set_title(title, fontsize=10)
            if ax.lines:
                ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, **SAVE)


def versus_parameter(path: Path, frame: pd.DataFrame, parameter: str) -> None:
    fig, axes = new_figure(2, 2, figsize=(10, 7), squeeze=False)
    for ax, (metric, label) in zip(axes.flat, VERSUS):
        for (instance, phase), rows in frame.groupby([frame["instance"].astype(str), "phase"], sort=True):
            rows = rows.sort_values("parameter_value")
            ax.plot(rows["parameter_value"], rows[metric], marker="o", label=f"{instance} phase {phase}")
        ax.set_xlabel(parameter)
        ax.set_ylabel(label)
        ax.grid(True, alpha=0.3)
    axes[0, 0].legend(fontsize=7)
    fig.suptitle(f"metrics against {parameter}")
    fig.tight_layout()
    fig.savefig(path, **SAVE)


def write_compare_plots(
    out: Path,
    frame: pd.DataFrame,
    paths: list[Path],
    names: list[str],
    parameter: str | None,
    cdfs: dict[Path, dict[tuple[str, int], tuple[np.ndarray, np.ndarray]]] | None = None,
) -> list[str]:
    out.mkdir(parents=True, exist_ok=True)
    written = []
    if len(frame):
        overlaid_cdfs(out / "cdfs.png", frame, paths, names, cdfs or {})
        written.append("cdfs.png")
    if parameter and len(frame) and frame["parameter_value"].notna().all() and frame["parameter_value"].nunique() > 1:
        versus_parameter(out / "versus_parameter.png", frame, parameter)
        written.append("versus_parameter.png")
    return written


@dataclass(frozen=True)
class Heading:
    runs: int
    parameter: str | None  # the swept parameter (--label), None when not given
    differing: list[str]  # the workload settings that differ between the runs


def heading_section(result: dict) -> Heading:
    return Heading(len(result["runs"]), result["parameter"], list(result["differing_keys"]))


SIGNIFICANCE_HEADERS = [
    "run",
    "instance × phase",
    "percentile",
    "n baseline",
    "n",
    "baseline (95 % CI)",
    "run (95 % CI)",
    "ratio (interval)",
    "verdict",
]


def _percentile_row(entry: dict, p: dict) -> list[Any]:
    ratio_ci = p.get("ratio_ci")
    return [
        entry["run"],
        where(entry),
        f"p{p['percentile']:g}" if p["percentile"] is not None else "–",
        entry["n_baseline"],
        entry["n"],
        _with_interval(p.get("baseline_ms"), p.get("baseline_ci_ms")),
        _with_interval(p.get("run_ms"), p.get("run_ci_ms")),
        ratio(p.get("ratio")) + (f" ({ratio(ratio_ci[0])}–{ratio(ratio_ci[1])})" if ratio_ci else ""),
        p["verdict"],
    ]


def significance_section(result: dict) -> Table | None:
    """Each run against the first, percentile by percentile, then the whole distribution; None
    when there is nothing to compare (one run)."""
    if not result.get("significance"):
        return None
    rows = []
    for entry in result["significance"]:
        for p in entry.get("percentiles") or [{"percentile": None, "verdict": entry["verdict"]}]:
            rows.append(_percentile_row(entry, p))
        if entry.get("p_value") is not None:
            distribution = f"P(above) {entry['prob_slower']:.2f}, Mann-Whitney p = {entry['p_value']:.2g}"
            rows.append(
                [entry["run"], where(entry), "distribution", entry["n_baseline"], entry["n"], "", "", "", distribution]
            )
    return Table(SIGNIFICANCE_HEADERS, rows, left=3)


def _run_columns(frame: pd.DataFrame) -> list[str]:
    """The table's columns: the figures every run has, the monitors' (IPC, MPKI, bandwidth,
    occupancy) where measured, client latency only where some instance was called blocking."""
    columns = [
        "run",
        "label",
        "instance",
        "phase",
        "function",
        "calls",
        "mode",
        "planned",
        "successful",
        "failures",
        "offered_rps",
        "achieved_rps",
        *LATENCY_COLUMNS,
        "cold_fraction",
        "gb_s",
    ]
    columns += [
        c
        for c in frame.columns
        if c not in columns
        and c not in ("parameter_value",)
        and frame[c].dtype.kind == "f"
        and any(h in c for h in ("ipc", "mpki", "bw", "occupancy"))
    ]
    return [
        c
        for c in columns
        if c in frame.columns and not (c in LATENCY_COLUMNS and c.startswith("client") and not frame[c].notna().any())
    ]


def runs_section(frame: pd.DataFrame) -> Table:
    """A row per run × instance × steady phase, coloured by its mode."""
    columns = _run_columns(frame)
    formats = {**{c: ms for c in LATENCY_COLUMNS}, "offered_rps": rate, "achieved_rps": rate, "cold_fraction": pct}
    rows = (
        [
            [formats.get(c, lambda v: v)(None if pd.isna(v) else v) for c, v in zip(columns, row)]
            for row in frame[columns].itertuples(index=False)
        ]
        if len(frame)
        else []
    )
    names = {"offered_rps": "offered", "achieved_rps": "achieved", "cold_fraction": "cold", "gb_s": "GB-s"}
    headers = [names.get(c, c.replace("_latency_ms_", " ").replace("_", " ")) for c in columns]
    classes = [f"mode-{mode}" for mode in frame["mode"].astype(str).tolist()] if len(frame) else []
    return Table(headers, rows, left=7, row_classes=classes)


def plots_section(result: dict, out_dir: Path) -> list[Image]:
    plots = result.get("outputs", {}).get("plots", [])
    return [embedded_image(out_dir / name, name) for name in plots if (out_dir / name).exists()]


def write_compare_report(path: Path, frame: pd.DataFrame, result: dict) -> None:
    """The comparison's page (templates/compare.html), in the run report's look: completion
    latency first, then the verdicts per percentile against the first run, the table, the plots."""
    html = render(
        "compare.html",
        title="faasprof compare",
        heading=heading_section(result),
        warnings=list(result["warnings"]),
        run_level=run_level_section(result),
        significance=significance_section(result),
        runs=runs_section(frame),
        plots=plots_section(result, path.parent),
    )
    path.write_text(html, encoding="utf-8")


@dataclass(frozen=True)
class RunLevel:
    """The verdict of the comparison: each side against the first, a row per instance × phase × figure."""

    min_effect_percent: float  # the smallest effect called a difference (compare --min-effect)
    table: Table


RUN_LEVEL_HEADERS = [
    "side",
    "instance × phase",
    "runs / baseline runs",
    "figure",
    "baseline",
    "side",
    "effect (interval)",
    "verdict",
]


def run_level_section(result: dict) -> RunLevel | None:
    """The run-level effects (``faasprof.analyzer.run_stats``); None when there are none."""
    effects = result.get("run_level") or []
    if not effects:
        return None
    rows = []
    for effect in effects:
        for figure in effect["figures"]:
            rows.append(
                [
                    effect["side"],
                    where(effect),
                    f"{effect['n_runs']} / {effect['n_runs_baseline']}",
                    figure["name"],
                    format_value(figure, figure["baseline_center"]),
                    format_value(figure, figure["center"]),
                    format_effect(figure),
                    figure["verdict"] + (f" ({effect['note']})" if effect.get("note") else ""),
                ]
            )
    return RunLevel(100 * float(result.get("min_effect") or 0), Table(RUN_LEVEL_HEADERS, rows, left=4))


def _with_interval(value, interval) -> str:
    if value is None:
        return "–"
    if not interval or interval[0] is None or interval[1] is None:
        return ms(value)
    return f"{ms(value)} ({ms(interval[0])}–{ms(interval[1])})"
