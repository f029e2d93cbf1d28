"""PNG plots of one run (matplotlib figures drawn by Agg, never through pyplot: no display needed,
and a notebook's backend stays as it is).

* ``latency_over_time.png``: corrected latency against planned time, coloured by start class, each
  steady phase shaded by its latency mode.
* ``breakdown.png``: mean wait / init / execution / overhead stacked, one bar per instance and one
  panel (with its own axis) per phase (the paper's Figure 5 view of where latency goes).
* ``cdf.png``: completion latency CDFs per instance × phase (the rows of the modes table) with
  p50/p90/p99/p99.9 marked.
* ``throughput.png``: offered (planned) against achieved invocations per second, achieved as the
  tables count it (``faasprof.analyzer.stats.ACHIEVED_RULE``).
* ``monitors.png``: monitoring series beside latency on the same time axis (the paper's Figure 14);
  in a run that measured other hosts, those of the machine that ran faasprof, and one
  ``monitors_<host>.png`` per remote host (a lost host's panels marked where it was lost).

Plots of large runs are drawn from deterministic subsamples, so the tails stay visible and
re-running gives the same bytes: scatter plots from every k-th point plus every point above the
99th percentile; CDFs from 2,000 evenly spaced order statistics, the top 1,000 and the two either
side of each marked percentile (the percentiles themselves computed on all the data); monitor lines
from the first, lowest, highest and last point of each of ``LINE_BUCKETS`` time slices. Rows are
picked by integer codes into the plotted columns, never by cutting the invocations frame (gigabytes
at 10 million rows). What each plot draws of the invocations is computed apart from the drawing
(``latency_points``, ``cdf_curves``, ``throughput_counts``, ``overview_points``: the shapes of
``plot_inputs``), so a run analysed out of core gives the same data from SQL (``ooc_plots``,
``Run.plot_inputs``) without its rows. ``bench/bench_plots.py`` times each plot.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from faasprof.analyzer import hosts as hosts_mod
from faasprof.analyzer import markup
from faasprof.analyzer import stats as stats_mod
from faasprof.analyzer.plot_inputs import (
    CdfCurve,
    ClassPoints,
    LatencyPoints,
    ScatterGroup,
    ThroughputCounts,
    ecdf_ranks,
    marked,
    throughput_edges,
)
from faasprof.monitoring.collectors import collector_class
from faasprof.monitoring.collectors.base import Plot
from faasprof.monitoring.frames import local_host_label

MAX_POINTS = 20_000
MAX_FUNCTIONS = 6
CLASS_COLOURS = {"cold": "#1f77b4", "resumed": "#ff7f0e", "warm": "#2ca02c", "unknown": "#7f7f7f"}
MODE_COLOURS = {"under-invoked": "#fde0b2", "balanced": "#d4edda", "over-invoked": "#f5c6cb", "unknown": "#eeeeee"}
BREAKDOWN = (
    ("wait_ms", "wait", "#9467bd"),
    ("init_ms", "init", "#1f77b4"),
    ("execution_ms", "execution", "#2ca02c"),
    ("overhead_ms", "overhead", "#8c8c8c"),
)
MAX_SANDBOXES = 5  # lines of a collector's plot_lines_by column shown besides the whole
MAX_MONITOR_PANELS = 6


def new_figure(nrows: int = 1, ncols: int = 1, *, figsize: tuple[float, float], **subplots) -> tuple:
    """A figure and its axes, as ``pyplot.subplots(nrows, ncols, figsize=..., **subplots)`` gives
    them, drawn by Agg into files.

    Never through pyplot: pyplot would need the process's backend switched to Agg, which changes a
    notebook's (inline, widget) for everything it draws after; a figure of its own with an Agg
    canvas leaves the backend alone, and is freed once the caller drops it (no ``close``)."""
    # Imported on first use: matplotlib takes over half a second to import (python -X importtime)
    # and only writing plots needs it, while `faasprof run` and `plan` load the analyzer too.
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=figsize)
    FigureCanvasAgg(figure)
    return figure, figure.subplots(nrows, ncols, **subplots)


SAVE = {"dpi": 100, "metadata": {"Software": None}}


def _save(fig, path: Path) -> None:
    """Lay the figure out tightly and write it as PNG, drawing it once."""
    fig.tight_layout()
    # tight_layout leaves a placeholder layout engine on the figure, and savefig then draws the
    # whole figure an extra time (rendering disabled) just to let that engine run, which does
    # nothing: a third of the save time. Without an engine savefig draws once, the same pixels.
    fig.set_layout_engine(None)
    fig.savefig(path, **SAVE)


def _subsample(values: np.ndarray, limit: int = MAX_POINTS) -> np.ndarray:
    """Indices: every k-th point plus all points above the 99th percentile."""
    n = len(values)
    if n <= limit:
        return np.arange(n)
    step = int(np.ceil(n / limit))
    keep = np.zeros(n, dtype=bool)
    keep[::step] = True
    finite = np.isfinite(values)
    if finite.any():
        keep |= finite & (values >= np.nanpercentile(values, 99))
    return np.nonzero(keep)[0]


def _codes(column: pd.Series) -> tuple[np.ndarray, list]:
    """(an integer code per row, -1 where missing; the label of each code), so that rows are picked
    by comparing small integers rather than by cutting frames or comparing strings."""
    if isinstance(column.dtype, pd.CategoricalDtype):
        return column.cat.codes.to_numpy(), list(column.cat.categories)
    codes, labels = pd.factorize(column)
    return codes, list(labels)


LINE_BUCKETS = 1000  # at least one per pixel column: a 10-inch figure at 100 dpi is 1,000 pixels wide


def _envelope(t: np.ndarray, values: np.ndarray, buckets: int = LINE_BUCKETS) -> tuple[np.ndarray, np.ndarray]:
    """A line of many points cut to the first, lowest, highest and last point of each of ``buckets``
    equal time slices (every NaN or infinity kept, so gaps stay gaps): the same envelope on screen,
    drawn from a few thousand points instead of tens of thousands of overlapping segments."""
    if len(t) <= 4 * buckets or not np.isfinite(t).all() or (np.diff(t) < 0).any():
        return t, values
    span = t[-1] - t[0]
    if span <= 0:
        return t, values
    slot = np.minimum(((t - t[0]) / span * buckets).astype(np.int64), buckets - 1)
    starts = np.flatnonzero(np.diff(slot, prepend=-1))
    ends = np.append(starts[1:], len(t)) - 1
    finite_mask = np.isfinite(values)
    keep = [starts, ends, np.flatnonzero(~finite_mask)]
    finite = np.flatnonzero(finite_mask)
    if len(finite):
        # within each slot (slots ascending) the finite values ascending: a slot's first and
        # last entries of this order are its lowest and highest point
        order = finite[np.lexsort((values[finite], slot[finite]))]
        slot_of = slot[order]
        first = np.flatnonzero(np.diff(slot_of, prepend=-1))
        keep += [order[first], order[np.append(first[1:], len(order)) - 1]]
    idx = np.unique(np.concatenate(keep))
    return t[idx], values[idx]


def _top_functions(codes: np.ndarray, labels: list) -> list[tuple[str, int]]:
    """(name, code) of the MAX_FUNCTIONS functions with the most rows (ties: by name), sorted by name."""
    counts = np.bincount(codes[codes >= 0], minlength=len(labels))
    present = [(-int(count), str(labels[code]), code) for code, count in enumerate(counts) if count]
    return sorted((name, code) for _, name, code in sorted(present)[:MAX_FUNCTIONS])


MARKERS = ("o", "^", "s", "D", "v", "P")


def _shade_modes(ax, run) -> None:
    """Each instance's steady phases shaded by their mode in a band of its own (never blended)."""
    if not len(run.phase_stats):
        return
    # The four columns as plain lists: itertuples over the whole (wide, extension-typed) phase
    # table cost a tenth of a second per plot.
    phases = run.phase_stats
    instances = phases["instance"].astype(str).tolist()
    starts_s = phases["steady_start_s"].astype("float64").tolist()
    ends_s = phases["phase_end_s"].astype("float64").tolist()
    modes = phases["mode"].tolist()
    names = list(dict.fromkeys(instances))
    spans = sorted(zip(starts_s, ends_s))
    if all(a[1] <= b[0] for a, b in zip(spans, spans[1:])):
        names = names[:1]  # no two instances' phases overlap in time: full height cannot blend them
    band = 1.0 / len(names)
    seen = set()
    for instance, start_s, end_s, mode in zip(instances, starts_s, ends_s, modes):
        k = names.index(instance) if len(names) > 1 else 0
        label = mode if mode not in seen else None
        seen.add(mode)
        ax.axvspan(
            start_s,
            end_s,
            ymin=k * band,
            ymax=(k + 1) * band,
            color=MODE_COLOURS.get(mode, "#eeeeee"),
            alpha=0.5,
            zorder=0,
            label=label,
        )
    if len(names) > 1:
        for k, name in enumerate(names):
            ax.text(1.005, (k + 0.5) * band, name, transform=ax.transAxes, fontsize=7, va="center", rotation=90)


def latency_points(run) -> LatencyPoints:
    """``latency_over_time``'s points from the run's invocation frame (in memory)."""
    frame = run.invocations
    # Rows are picked as index arrays into the plotted columns, never by cutting the frame.
    successful = frame["successful"].to_numpy(dtype=bool)
    planned_s = frame["intended_s"].to_numpy(dtype="float64")
    latency_ms = frame["completion_latency_ms"].to_numpy(dtype="float64")
    function_codes, function_labels = _codes(frame["function"])
    class_codes, class_labels = _codes(frame["start_class"])
    functions = _top_functions(function_codes[successful], function_labels)
    classes = []
    for name in CLASS_COLOURS:
        if name not in class_labels:
            continue
        in_class = successful & (class_codes == class_labels.index(name))
        count = int(np.count_nonzero(in_class))
        if not count:
            continue
        entry = ClassPoints(name, count)
        for function, code in functions:
            rows = np.flatnonzero(in_class & (function_codes == code))
            if not len(rows):
                continue
            lat = latency_ms[rows]
            idx = _subsample(lat)
            entry.groups.append(ScatterGroup(function, planned_s[rows[idx]], lat[idx]))
        classes.append(entry)
    # Failures apart (their latency is not the function's): red crosses where they have one.
    failed = np.flatnonzero(~successful & np.isfinite(latency_ms))
    idx = _subsample(latency_ms[failed])
    return LatencyPoints(
        classes, [name for name, _ in functions], len(failed), planned_s[failed[idx]], latency_ms[failed[idx]]
    )


def latency_over_time(run, path: Path) -> None:
    points = run.plot_inputs.latency if getattr(run, "plot_inputs", None) else latency_points(run)
    fig, ax = new_figure(figsize=(10, 4.5))
    _shade_modes(ax, run)
    marker_of = {name: MARKERS[k % len(MARKERS)] for k, name in enumerate(points.functions)}
    for entry in points.classes:
        colour = CLASS_COLOURS[entry.name]
        for group in entry.groups:
            ax.scatter(
                group.t_s,
                group.latency_ms,
                s=6,
                marker=marker_of[group.function],
                color=colour,
                alpha=0.7,
                linewidths=0,
            )
        ax.scatter([], [], s=12, color=colour, label=f"{entry.name} ({entry.count})")
    if len(points.functions) > 1:
        for function in points.functions:
            ax.scatter([], [], s=12, marker=marker_of[function], color="#444444", label=function)
    if points.failed_count:
        ax.scatter(
            points.failed_t_s,
            points.failed_latency_ms,
            s=12,
            marker="x",
            color="#d62728",
            label=f"failed ({points.failed_count})",
            linewidths=0.8,
        )
    ax.set_yscale("log")
    ax.set_xlabel("planned send time (s since run start)")
    ax.set_ylabel("completion latency (ms)\nplanned send → function end")
    ax.set_title(
        f"{run.test_name}: completion latency over time (shading: mode of each instance's steady phases)", fontsize=10
    )
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="upper left", fontsize=8, markerscale=1.5, ncol=2)
    ax.grid(True, which="both", alpha=0.3)
    _save(fig, path)


MAX_PHASE_PANELS = 8  # a run cut into more phases shows its first ones; the tables have them all


def breakdown_bars(run) -> list[dict]:
    """Per phase (at most ``MAX_PHASE_PANELS``), one bar per instance active in it: the mean wait,
    init, execution and overhead of its successful invocations with a record in the steady
    window, exactly the means of the phase table (``run.phase_stats``), with their n and mode."""
    phases = run.phase_stats
    if not len(phases):
        return []
    columns = {
        name: phases[name].tolist()
        for name in ("instance", "function", "phase", "steady_start_s", "phase_end_s", "mode", "successful_with_record")
    }
    means = {column: phases[f"{column}_mean"].astype("float64").tolist() for column, _, _ in BREAKDOWN}
    out: dict[int, dict] = {}
    for k, phase in enumerate(columns["phase"]):
        entry = out.setdefault(
            int(phase),
            {
                "phase": int(phase),
                "window_s": (float(columns["steady_start_s"][k]), float(columns["phase_end_s"][k])),
                "bars": [],
            },
        )
        # NaN means no record (overhead: not a blocking call): nothing of that part to stack.
        parts = {
            column: (value if np.isfinite(value) and value > 0 else 0.0)
            for column, value in ((c, means[c][k]) for c in means)
        }
        entry["bars"].append(
            {
                "instance": str(columns["instance"][k]),
                "function": str(columns["function"][k]),
                "mode": str(columns["mode"][k]),
                "n": int(columns["successful_with_record"][k]),
                "means_ms": parts,
            }
        )
    return [out[phase] for phase in sorted(out)][:MAX_PHASE_PANELS]


def breakdown(run, path: Path) -> None:
    """Where latency goes (the paper's Figure 5), one panel per phase with an axis of its own: a
    phase's waits of seconds would flatten the milliseconds of the others on a shared axis."""
    panels = breakdown_bars(run)
    heights = [0.9 + 0.45 * len(panel["bars"]) for panel in panels] or [2.0]
    fig, axes = new_figure(
        len(heights), 1, figsize=(10, sum(heights) + 0.6), squeeze=False, gridspec_kw={"height_ratios": heights}
    )
    if not panels:
        axes[0, 0].text(
            0.5, 0.5, "no activation records: no breakdown", ha="center", va="center", transform=axes[0, 0].transAxes
        )
        axes[0, 0].set_axis_off()
    for ax, panel in zip(axes[:, 0], panels):
        bars = panel["bars"]
        y = np.arange(len(bars))
        totals_ms = np.array([sum(bar["means_ms"].values()) for bar in bars])
        # Seconds on an axis whose bars reach 10 s: no tick reads 12000.
        unit, scale = ("s", 1e-3) if totals_ms.max() >= 10_000 else ("ms", 1.0)
        left = np.zeros(len(bars))
        for column, label, colour in BREAKDOWN:
            widths = np.array([bar["means_ms"][column] for bar in bars]) * scale
            ax.barh(y, widths, left=left, color=colour, label=label, height=0.6)
            left += widths
        for k, total_ms in enumerate(totals_ms):  # the total, readable, at the end of each bar
            ax.text(total_ms * scale, k, f"  {markup.ms(total_ms)}", va="center", fontsize=8)
        ax.set_yticks(y, [f"{bar['instance']} ({bar['mode']}, n={bar['n']:,})" for bar in bars], fontsize=8)
        ax.invert_yaxis()
        ax.set_xlim(0, max(float(left.max()), 1e-3) * 1.18)  # room for the totals
        start_s, end_s = panel["window_s"]
        ax.set_title(f"phase {panel['phase']}, steady {start_s:.3g}–{end_s:.3g} s", fontsize=9, loc="left")
        ax.set_xlabel(f"mean {unit} (this phase's own scale)", fontsize=8)
        ax.grid(True, axis="x", alpha=0.3)
    if panels:  # above the first panel, right of its title: over no bar
        axes[0, 0].legend(loc="lower right", bbox_to_anchor=(1.0, 1.0), fontsize=7, ncol=4, frameon=False)
    fig.suptitle(
        f"{run.test_name}: latency breakdown per phase (means over successful invocations with a record, steady windows)",
        fontsize=10,
    )
    _save(fig, path)


MARKED_PERCENTILES = (50, 90, 99, 99.9)


def _ecdf_points(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(x, y) of the empirical CDF of the finite values, thinned as ``_ecdf`` thins it."""
    x, y, _ = _ecdf(values)
    return x, y


def _ecdf(values: np.ndarray, percentiles=MARKED_PERCENTILES) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(x, y, sorted finite values): the empirical CDF at 2,000 evenly spaced ranks, the last 1,000
    ranks and the two ranks either side of each marked percentile, so the drawn curve passes through
    the exact order statistics the marked percentiles are interpolated from (``plot_inputs.ecdf_ranks``)."""
    data = np.sort(values[np.isfinite(values)])
    n = len(data)
    if n == 0:
        return data, data, data
    idx = ecdf_ranks(n, percentiles)
    return data[idx], (idx + 1) / n, data


MAX_CDF_CURVES = 12


def cdf_groups(run) -> list[tuple[str, int, str, np.ndarray]]:
    """(instance, phase, mode, completion latencies in ms) of each instance × phase of the phase
    table (at most ``MAX_CDF_CURVES``): its successful invocations planned in the steady window,
    the rows its percentiles are computed on. One curve per mode, never a pooled one."""
    frame = run.invocations
    phases = run.phase_stats
    if not len(phases):
        return []
    chosen = frame["successful"].to_numpy(dtype=bool) & frame["steady"].to_numpy(dtype=bool)
    latency_ms = frame["completion_latency_ms"].to_numpy(dtype="float64")
    phase_of = frame["phase"].to_numpy()
    instance_codes, instance_labels = _codes(frame["instance"])
    where = {str(label): k for k, label in enumerate(instance_labels)}
    out = []
    for instance, phase, mode in zip(
        phases["instance"].astype(str).tolist(), phases["phase"].tolist(), phases["mode"].tolist()
    ):
        if instance not in where:
            continue
        values = latency_ms[chosen & (instance_codes == where[instance]) & (phase_of == phase)]
        if np.isfinite(values).any():
            out.append((instance, int(phase), str(mode), values))
    return out[:MAX_CDF_CURVES]


def cdf_curves(run) -> list[CdfCurve]:
    """``cdf``'s curves from the run's invocation frame (in memory)."""
    curves = []
    for instance, phase, mode, values in cdf_groups(run):
        x, y, data = _ecdf(values)
        # Percentiles of all the data (NaN left out, as nanpercentile does), from the sorted copy.
        pcts = marked(len(data), MARKED_PERCENTILES)
        marks = list(zip(pcts, (float(q) for q in np.percentile(data, pcts)))) if pcts else []
        curves.append(CdfCurve(instance, phase, mode, len(data), x, y, marks))
    return curves


def cdf(run, path: Path) -> None:
    fig, ax = new_figure(figsize=(9, 5.5))
    for curve in run.plot_inputs.cdf if getattr(run, "plot_inputs", None) else cdf_curves(run):
        label = f"{curve.instance} phase {curve.phase}, {curve.mode} (n={curve.n:,}): " + ", ".join(
            f"p{pct:g} {markup.ms(q)}" for pct, q in curve.marks
        )
        line = ax.plot(curve.x_ms, curve.y, label=label, drawstyle="steps-post")[0]
        for pct, q in curve.marks:  # marked on the curve; the values are in the legend, where they cannot overlap
            ax.plot([q], [pct / 100], marker="o", color=line.get_color(), markersize=4)
    ax.set_xscale("log")
    ax.set_xlabel("completion latency (ms): planned send → function end")
    ax.set_ylabel("fraction of invocations")
    ax.set_title(
        f"{run.test_name}: completion latency CDF per instance and phase (successful, steady window)", fontsize=10
    )
    ax.grid(True, which="both", alpha=0.3)
    if ax.lines:
        ax.legend(loc="lower right", fontsize=7)
    _save(fig, path)


def _ends(run, failed_only: bool) -> np.ndarray:
    """End times of every instance's invocations by ``stats.ACHIEVED_RULE`` (the tables' "achieved")."""
    frame = run.invocations
    instance_codes, instance_labels = _codes(frame["instance"])
    failed = ~frame["successful"].to_numpy(dtype=bool) if failed_only else None
    columns = frame[list(stats_mod.END_COLUMNS)]
    out = []
    for spec in run.specs:
        if spec["instance"] not in instance_labels:
            continue
        picked = instance_codes == instance_labels.index(spec["instance"])
        if failed is not None:
            picked &= failed
        rows = np.flatnonzero(picked)
        if len(rows):
            out.append(
                stats_mod.end_times_s(columns if len(rows) == len(frame) else columns.take(rows), spec["blocking"])
            )
    return np.concatenate(out) if out else np.zeros(0)


def _histogram(values: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """``np.histogram(values, bins=edges)[0]`` of the finite values (bins half-open, the last one
    closed, values outside left out) by one binary search per value: np.histogram sorts the values
    first when given edges, the costliest step of this plot at millions of rows."""
    slot = np.searchsorted(edges, values, side="right") - 1
    slot[values == edges[-1]] = len(edges) - 2
    inside = (slot >= 0) & (slot < len(edges) - 1) & np.isfinite(values)
    return np.bincount(slot[inside], minlength=len(edges) - 1)


def throughput_counts(run) -> ThroughputCounts:
    """``throughput``'s counts from the run's invocation frame (in memory)."""
    frame = run.invocations
    intended = frame["intended_s"].to_numpy(dtype="float64")
    ends = _ends(run, failed_only=False)
    failed = _ends(run, failed_only=True)
    end = float(np.nanmax(np.concatenate([intended, ends]))) if len(frame) else 1.0
    edges, _ = throughput_edges(end)
    return ThroughputCounts(
        edges, _histogram(intended, edges), _histogram(ends, edges), _histogram(failed, edges) if len(failed) else None
    )


def throughput(run, path: Path) -> None:
    counts = run.plot_inputs.throughput if getattr(run, "plot_inputs", None) else throughput_counts(run)
    edges = counts.edges_s
    width = float(edges[1] - edges[0]) if len(edges) > 1 else 1.0
    fig, ax = new_figure(figsize=(10, 4))
    _shade_modes(ax, run)
    ax.stairs(counts.offered / width, edges, label="offered (planned sends)", color="#1f77b4", linewidth=3, alpha=0.6)
    ax.stairs(
        counts.achieved / width,
        edges,
        label="achieved (ended: answer if blocking, record end if not)",
        color="#2ca02c",
        linewidth=1.2,
    )
    if counts.failed is not None:
        ax.stairs(counts.failed / width, edges, label="ended, but did not succeed", color="#d62728", linewidth=1.2)
    ax.set_ylim(bottom=0)
    ax.set_xlabel("time (s since run start)")
    ax.set_ylabel(f"invocations per s ({width:g} s bins)")
    ax.set_title(f"{run.test_name}: offered vs achieved throughput, all instances")
    ax.grid(True, alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="upper right", fontsize=8)
    _save(fig, path)


def declared_plots(name: str, frame: pd.DataFrame) -> tuple[list[Plot], list[str]]:
    """(the plots the collector ``name`` declares that the frame has values for, in its order of
    preference; notes on what was left out and why) of one monitor frame. What is plotted is the
    collector's to say (``Collector.plots``, ``unplottable_columns``): nothing here names one."""
    collector = collector_class(name)
    if collector is None:
        return [], [f"{name} left out: no collector of that name declares what to plot"]
    notes = [
        f"{name} {column} left out: {why}"
        for column, why in collector.unplottable_columns.items()
        if column in frame.columns
    ]
    usable = []
    for plot in collector.plots:
        if plot.column not in frame.columns:
            continue
        values = pd.to_numeric(frame[plot.column], errors="coerce")
        if not values.notna().any():  # events this CPU cannot count
            notes.append(f"{name} {plot.column} left out: no value on this host")
            continue
        usable.append(plot)
    return usable, notes


def plottable_columns(name: str, frame: pd.DataFrame) -> tuple[list[str], list[str]]:
    """(the frame columns plotted, notes on what was left out and why) of one monitor frame."""
    plots, notes = declared_plots(name, frame)
    return [plot.column for plot in plots], notes


def _lines_by(
    frame: pd.DataFrame, plot: Plot, by: str, busiest_by: str | None
) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """A line for the whole (``.``) and for each of the busiest values of ``by``."""
    groups = frame[by].astype(str)
    busiest = []
    if busiest_by in frame.columns:
        ranked = frame.groupby(groups)[busiest_by].sum().sort_values(ascending=False).index
        busiest = [value for value in ranked if value != "."][:MAX_SANDBOXES]
    lines = []
    for value in (["."] if (groups == ".").any() else []) + busiest:
        rows = frame[groups == value].sort_values("t_s")
        label = f"all {by}{'es' if by.endswith(('s', 'x')) else 's'}" if value == "." else value
        lines.append(
            (label, rows["t_s"].to_numpy(dtype="float64"), rows[plot.column].to_numpy(dtype="float64") * plot.scale)
        )
    return lines


def _monitor_series(run, host: str | None = None) -> list[tuple[str, list[tuple[str, np.ndarray, np.ndarray]]]]:
    """(axis label, [(line label, t, values)]) per panel, as each monitor's collector declares them:
    one line per value of its ``plot_lines_by`` column (cgroups: per sandbox), else the mean per
    instant; of host ``host``'s rows only, when named."""
    panels = []
    local = local_host_label(run.manifest)
    for name, frame in run.monitors.items():
        if host is not None:
            frame = hosts_mod.rows_of(frame, host, local)
        if "t_s" not in frame.columns or not len(frame):
            continue
        plots, _ = declared_plots(name, frame)
        if not plots:
            continue
        collector = collector_class(name)
        if collector is None:  # declared_plots found no plots for it
            continue
        by = collector.plot_lines_by if collector.plot_lines_by in frame.columns else None
        if by is None:
            grouped = frame.groupby("t_s", sort=True)[[plot.column for plot in plots]].mean()
        for plot in plots:
            if by is not None:
                lines = _lines_by(frame, plot, by, collector.plot_busiest_by)
            else:
                lines = [
                    (
                        "",
                        grouped.index.to_numpy(dtype="float64"),
                        grouped[plot.column].to_numpy(dtype="float64") * plot.scale,
                    )
                ]
            panels.append((f"{name}: {plot.axis_label}", lines))
    return panels[:MAX_MONITOR_PANELS]


def overview_points(run) -> tuple[np.ndarray, np.ndarray]:
    """The successful invocations' (planned s, completion latency ms) drawn above the monitors."""
    successful = np.flatnonzero(run.invocations["successful"].to_numpy(dtype=bool))
    lat = run.invocations["completion_latency_ms"].to_numpy(dtype="float64")[successful]
    idx = _subsample(lat)
    return run.invocations["intended_s"].to_numpy(dtype="float64")[successful[idx]], lat[idx]


def monitors(run, path: Path, host: str | None = None) -> bool:
    """Monitor panels under the latency panel (of host ``host``'s rows only, when named); False
    when there is nothing to plot."""
    series = _monitor_series(run, host)
    if not series:
        return False
    fig, axes = new_figure(len(series) + 1, 1, figsize=(10, 2.2 * (len(series) + 1)), sharex=True, squeeze=False)
    ax = axes[0, 0]
    _shade_modes(ax, run)
    t_s, lat = (
        (run.plot_inputs.overview_t_s, run.plot_inputs.overview_latency_ms)
        if getattr(run, "plot_inputs", None)
        else overview_points(run)
    )
    ax.scatter(t_s, lat, s=3, color="#444444", linewidths=0)
    ax.set_yscale("log")
    ax.set_ylabel("completion latency ms")
    for ax, (label, lines) in zip(axes[1:, 0], series):
        for line_label, t, values in lines:
            ax.plot(*_envelope(t, values), lw=1, label=line_label or None)
        if any(line_label for line_label, _, _ in lines):
            ax.legend(loc="upper right", fontsize=7, ncol=3)
        ax.set_ylabel(label, fontsize=8)
        ax.grid(True, alpha=0.3)
    info = run.hosts.get(host) if host is not None else None
    if info is not None and info.lost_at_ns is not None:
        for ax in axes[:, 0]:
            ax.axvline(info.lost_at_ns / 1e9, color="#d62728", lw=1.2, ls="--")
        axes[0, 0].set_title(
            f"{host} lost at {info.lost_at_ns / 1e9:.3g} s: {info.lost_reason or 'no reason recorded'}", fontsize=8
        )
    axes[-1, 0].set_xlabel("time (s since run start)")
    fig.suptitle(f"{run.test_name}: monitors{f' on {host}' if run.hosts and host else ''} beside latency")
    _save(fig, path)
    return True


def write_plots(run, out: Path) -> list[str]:
    """Write every plot that has data; returns the file names."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, function in (
        ("latency_over_time.png", latency_over_time),
        ("breakdown.png", breakdown),
        ("cdf.png", cdf),
        ("throughput.png", throughput),
    ):
        function(run, out / name)
        written.append(name)
    if not run.hosts:
        if monitors(run, out / "monitors.png"):
            written.append("monitors.png")
        return written
    # One figure per host: the counters of different machines never share a panel.
    for host, name in [
        (local_host_label(run.manifest), "monitors.png"),
        *((host, f"monitors_{host}.png") for host in run.hosts),
    ]:
        if monitors(run, out / name, host):
            written.append(name)
    return written
