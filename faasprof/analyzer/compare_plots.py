"""Plots and the HTML page of ``faasprof compare`` (matplotlib figures drawn by Agg, never through pyplot; self-contained HTML)."""

from __future__ import annotations

import html
from pathlib import Path

import numpy as np
import pandas as pd

from faasprof.analyzer.markup import fmt, image, ms, page, pct, rate, ratio, table
from faasprof.analyzer.plots import SAVE, _ecdf_points, new_figure
from faasprof.analyzer.run_stats import format_effect, format_value

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
    path: Path, frame: pd.DataFrame, paths: list[Path], names: list[str], latencies: dict | None = None
) -> None:
    """One CDF per run for each instance × phase (the first six); ``latencies``: per run path, per
    (instance, phase), the steady window's completion latencies (``faasprof.analyzer.compare._latencies``)
    when the caller read them already."""
    series = _series(frame)[:6]
    fig, axes = new_figure(len(series), 1, figsize=(8, 3.6 * len(series)), squeeze=False)
    labels = dict(zip(frame["run"], frame["label"]))
    for ax, (instance, phase, title) in zip(axes[:, 0], series):
        for name, run_path in zip(names, paths):
            if latencies is not None and run_path in latencies:
                values = latencies[run_path].get((instance, phase), np.array([]))
            else:
                inv = pd.read_parquet(
                    run_path / "analysis" / "invocations.parquet",
                    columns=["instance", "phase", "steady", "successful", "completion_latency_ms"],
                )
                keep = (
                    (inv["instance"].astype(str) == instance).to_numpy()
                    & (inv["phase"].to_numpy() == phase)
                    & inv["steady"].to_numpy(dtype=bool)
                    & inv["successful"].to_numpy(dtype=bool)
                )
                values = inv.loc[keep, "completion_latency_ms"].to_numpy(dtype="float64")
            x, y = _ecdf_points(values)
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
    latencies: dict | None = None,
) -> list[str]:
    out.mkdir(parents=True, exist_ok=True)
    written = []
    if len(frame):
        overlaid_cdfs(out / "cdfs.png", frame, paths, names, latencies)
        written.append("cdfs.png")
    if parameter and len(frame) and frame["parameter_value"].notna().all() and frame["parameter_value"].nunique() > 1:
        versus_parameter(out / "versus_parameter.png", frame, parameter)
        written.append("versus_parameter.png")
    return written


def write_compare_report(path: Path, frame: pd.DataFrame, result: dict) -> None:
    """The comparison's page, in the run report's look: completion latency first, then the
    verdicts per percentile against the first run, the table, the plots."""
    parts = [f"<h1>faasprof compare: {len(result['runs'])} runs</h1>"]
    parts.append(
        f"<p>Parameter: <code>{fmt(result['parameter'])}</code>. Settings that differ: {html.escape(', '.join(result['differing_keys']) or 'none')}.</p>"
    )
    if result["warnings"]:
        parts.append(
            "<h2>Warnings</h2><div class='warn'><ul>"
            + "".join(f"<li>{html.escape(w)}</li>" for w in result["warnings"])
            + "</ul></div>"
        )
    parts.append(
        "<p class='def'><b>Completion latency</b> (planned send → function end, successful invocations) is the headline, "
        "as in each run's report; <b>client latency</b> is shown only for instances called blocking: a non-blocking call is "
        "answered (202) before its function runs.</p>"
    )
    parts += run_level_section(result)
    if result.get("significance"):
        parts.append(
            "<h2>Per-invocation view (these runs only): completion latency, percentile by percentile, against the first run's same instance and phase</h2>"
        )
        parts.append(
            "<p><small>This describes the two runs, not the workloads: one run's invocations share its host's load and the "
            "platform's state, so they are no independent samples of the workload (the run-level comparison above is the "
            "verdict). Each percentile with its distribution-free 95 % interval (order statistics); ratio = run / baseline, its "
            "interval from the two intervals' ends; <b>higher in this run</b> or <b>lower in this run</b> when the two intervals "
            "do not overlap, else overlapping. The whole distribution: two-sided Mann-Whitney U and P(above), the chance that an "
            "invocation of the run is above one of the baseline.</small></p>"
        )
        srows = []
        for entry in result["significance"]:
            for p in entry.get("percentiles") or [{"percentile": None, "verdict": entry["verdict"]}]:
                ratio_ci = p.get("ratio_ci")
                srows.append(
                    [
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
                )
            if entry.get("p_value") is not None:
                srows.append(
                    [
                        entry["run"],
                        where(entry),
                        "distribution",
                        entry["n_baseline"],
                        entry["n"],
                        "",
                        "",
                        "",
                        f"P(above) {entry['prob_slower']:.2f}, Mann-Whitney p = {entry['p_value']:.2g}",
                    ]
                )
        parts.append(
            table(
                [
                    "run",
                    "instance × phase",
                    "percentile",
                    "n baseline",
                    "n",
                    "baseline (95 % CI)",
                    "run (95 % CI)",
                    "ratio (interval)",
                    "verdict",
                ],
                srows,
                left=3,
            )
        )
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
    columns = [
        c
        for c in columns
        if c in frame.columns and not (c in LATENCY_COLUMNS and c.startswith("client") and not frame[c].notna().any())
    ]
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
    modes = frame["mode"].astype(str).tolist() if len(frame) else []
    parts.append(
        "<h2>Runs × instances × phases</h2><p><small>Each row is one instance's steady window in one phase; a function "
        "called in several phases has a row per phase, never their pool.</small></p>"
    )
    parts.append(table(headers, rows, left=7, row_class=lambda k: f"mode-{modes[k]}"))
    for name in result.get("outputs", {}).get("plots", []):
        file = path.parent / name
        if file.exists():
            parts.append(image(file, name))
    path.write_text(page("faasprof compare", parts), encoding="utf-8")


def run_level_section(result: dict) -> list[str]:
    """The verdict of the comparison: each side against the first, a row per instance × phase × figure."""
    effects = result.get("run_level") or []
    if not effects:
        return []
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
    intro = (
        "<p><small>Each run's figure of an instance × phase is one sample; a side's value is its runs' geometric mean "
        "(their mean for the cold-start share); the effect's 95 % interval is Welch's t-interval over runs, on log values "
        f"for latencies and rates. A difference is called only when its interval excludes no change and it is at least "
        f"{100 * float(result.get('min_effect') or 0):.0f} % (2 points of a cold-start share); with one run on a side there "
        "is no verdict: the run-to-run variation is unknown. docs/statistics.md says why.</small></p>"
    )
    return [
        "<h2>Is the difference significant? Run-level effects against the first side</h2>",
        intro,
        table(
            [
                "side",
                "instance × phase",
                "runs / baseline runs",
                "figure",
                "baseline",
                "side",
                "effect (interval)",
                "verdict",
            ],
            rows,
            left=4,
        ),
    ]


def _with_interval(value, interval) -> str:
    if value is None:
        return "–"
    if not interval or interval[0] is None or interval[1] is None:
        return ms(value)
    return f"{ms(value)} ({ms(interval[0])}–{ms(interval[1])})"
