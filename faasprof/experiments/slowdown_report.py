"""The slowdown study's answer: statistics over the calls, the power-law fit, both figures, the files.

Only calls with final outcome ``success`` (``faasprof.outcomes``) that started as their phase
intends (``Call.counts``) enter the statistics; the others are counted as failures or as
``<phase>_other_start`` in ``slowdown.csv``. A FaaS execution median under ``RESOLUTION_STEPS``
resolution steps gives no execution factor (null, and ``notes`` says "below resolution"):
rounding alone could move it by more than 5 %.

Medians carry distribution-free 95 % confidence intervals (``faasprof.analyzer.stats.quantile_ci``; null
below ``MEDIAN_CI_MIN_SAMPLES`` = 8 samples: too few for a 95 % interval). Slowdown factors are
FaaS median / native median, for execution time, latency and CPU time. ``notes`` says in plain words when a factor shows no
slowdown (≤ 1), when the FaaS median lies within the native calls' own range (not significant), and
when calls waited for a CPU (median wall time over ``WAIT_RATIO`` × CPU time: a loaded host).

Figure 16 fits ``slowdown = a · native_exec_ms ** b`` by least squares in log-log space over the
functions with both values; ``b`` is the exponent shown on the plot and stored in the manifest.
``write_results`` writes ``slowdown.csv``, ``calls.csv``, both figures and the manifest;
``load_rows`` and ``load_calls`` read the two tables back.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

import matplotlib.ticker
import numpy as np

from faasprof import rundir
from faasprof.analyzer.markup import csv_cell, ms, positive
from faasprof.analyzer.plots import new_figure
from faasprof.analyzer.stats import min_samples_for_interval, quantile_ci
from faasprof.experiments.slowdown_measure import INTENDED_STATE, Call, as_float
from faasprof.numbers import ratio

SLOWDOWN_CSV = "slowdown.csv"
CALLS_CSV = "calls.csv"
FIG15 = "fig15_slowdown_per_function.png"
FIG16 = "fig16_slowdown_vs_native.png"
CALL_COLUMNS = (
    "function",
    "phase",
    "seq",
    "outcome",
    "container_state",
    "exec_ms",
    "exec_resolution_ms",
    "cpu_ms",
    "latency_ms",
    "wait_ms",
    "init_ms",
    "activation_id",
    "error",
)
MEASURES = ("exec_ms", "latency_ms", "cpu_ms")
TEXT_COLUMNS = ("function", "notes")
NOTE_SEPARATOR = " | "  # between the sentences of slowdown.csv's notes (a sentence may hold "; ")
# An execution median under this many resolution steps gives no factor: its rounding alone could
# move the factor by more than 5 %.
RESOLUTION_STEPS = 20
# A median execution (wall) time this much above the median CPU time: the calls waited for a CPU.
WAIT_RATIO = 1.25
# CPU-time factors further than this from 1, for functions whose native CPU time is long enough for
# the sandbox's own costs (pipe, JSON: tens of µs) to vanish, reflect the two processes' own speeds.
PROCESS_SPEED_SPREAD = 0.10
PROCESS_SPEED_MIN_MS = 20.0
# Fewer calls than this per phase give a median without a 95 % interval: ``--repeat`` below it is warned about.
MEDIAN_CI_MIN_SAMPLES = min_samples_for_interval(0.5)


def median_ci(values) -> tuple[float, float, float]:
    """The median of the finite values and its 95 % interval (``quantile_ci``)."""
    data = np.sort(np.asarray([v for v in values if math.isfinite(v)], dtype=float))
    return quantile_ci(data, 0.5)


def summarise_function(function: str, calls: list[Call]) -> dict:
    """One row of ``slowdown.csv`` from every call of one function."""
    row: dict = {"function": function}
    medians: dict[tuple[str, str], float] = {}
    used_by_phase: dict[str, list[Call]] = {}
    for phase in ("native", "warm", "resumed"):
        mine = [c for c in calls if c.phase == phase]
        used = used_by_phase[phase] = [c for c in mine if c.counts]
        row[f"{phase}_n"] = len(used)
        row[f"{phase}_failed"] = sum(1 for c in mine if c.outcome != "success")
        if phase in INTENDED_STATE:
            row[f"{phase}_other_start"] = sum(1 for c in mine if c.outcome == "success" and not c.counts)
        for measure in MEASURES:
            estimate, low, high = median_ci([getattr(c, measure) for c in used])
            label = "round_trip_ms" if phase == "native" and measure == "latency_ms" else measure
            row[f"{phase}_{label}"] = estimate
            row[f"{phase}_{label}_ci_low"] = low
            row[f"{phase}_{label}_ci_high"] = high
            medians[(phase, measure)] = estimate
        steps = [c.exec_resolution_ms for c in used if math.isfinite(c.exec_resolution_ms)]
        row[f"{phase}_exec_resolution_ms"] = max(steps) if steps else math.nan
        if phase != "native":
            row[f"{phase}_wait_ms"] = median_ci([c.wait_ms for c in used])[0]
    notes: list[str] = []
    for phase in ("warm", "resumed"):
        resolution = max(
            _finite_or(row[f"{phase}_exec_resolution_ms"], 0.0), _finite_or(row["native_exec_resolution_ms"], 0.0)
        )
        faas_exec = medians[(phase, "exec_ms")]
        if (
            positive(faas_exec)
            and positive(medians[("native", "exec_ms")])
            and faas_exec < RESOLUTION_STEPS * resolution
        ):
            row[f"slowdown_exec_{phase}"] = math.nan
            notes.append(
                f"execution {phase}: below resolution (median {ms(faas_exec, 4)}, records resolve {ms(resolution)}): no factor"
            )
        else:
            row[f"slowdown_exec_{phase}"] = ratio(faas_exec, medians[("native", "exec_ms")], positive=True)
        row[f"slowdown_latency_{phase}"] = ratio(
            medians[(phase, "latency_ms")], medians[("native", "latency_ms")], positive=True
        )
        row[f"slowdown_cpu_{phase}"] = ratio(medians[(phase, "cpu_ms")], medians[("native", "cpu_ms")], positive=True)
        for measure, key in (("exec_ms", "exec"), ("latency_ms", "latency")):
            note = judge_factor(
                key,
                phase,
                row[f"slowdown_{key}_{phase}"],
                medians[(phase, measure)],
                [getattr(c, measure) for c in used_by_phase["native"]],
            )
            if note:
                notes.append(note)
    waiting = [
        f"{phase} {ms(medians[(phase, 'exec_ms')], 4)} wall vs {ms(medians[(phase, 'cpu_ms')], 4)} CPU"
        for phase in ("native", "warm", "resumed")
        if positive(medians[(phase, "cpu_ms")])
        and positive(medians[(phase, "exec_ms")])
        and medians[(phase, "exec_ms")] > WAIT_RATIO * medians[(phase, "cpu_ms")]
    ]
    if waiting:
        cpu_factors = ", ".join(
            f"×{row[f'slowdown_cpu_{p}']:.3g} {p}" for p in ("warm", "resumed") if positive(row[f"slowdown_cpu_{p}"])
        )
        notes.append(
            f"calls waited for a CPU ({', '.join(waiting)}): the host is loaded, execution factors carry that load"
            + (f"; CPU-time factors {cpu_factors} compare the code's own speed" if cpu_factors else "")
        )
    native_cpu = medians[("native", "cpu_ms")]
    for phase in ("warm", "resumed"):
        factor = row[f"slowdown_cpu_{phase}"]
        if positive(factor) and native_cpu >= PROCESS_SPEED_MIN_MS and abs(factor - 1.0) > PROCESS_SPEED_SPREAD:
            notes.append(
                f"CPU time {phase} ×{factor:.3g}: the same code took {'more' if factor > 1 else 'less'} CPU in the sandbox than in "
                f"the native worker; on a shared VM one process of an interpreter can run 10–30 % slower than another "
                f"for its whole life (more so under load), so one process per side can tip a long function's factor either way: "
                f"repeat the run"
            )
    row["notes"] = NOTE_SEPARATOR.join(notes)
    return row


def judge_factor(measure: str, phase: str, factor: float, faas_median_ms: float, native_values_ms: list[float]) -> str:
    """A plain sentence when a factor says no slowdown, or one the native calls' own spread covers; else ""."""
    values = [v for v in native_values_ms if math.isfinite(v)]
    if not positive(factor) or not values:
        return ""
    low, high = min(values), max(values)
    label = "execution" if measure == "exec" else "latency"
    if low <= faas_median_ms <= high:
        return (
            f"{label} {phase} ×{factor:.3g}: not significant (FaaS median {ms(faas_median_ms, 4)} lies within the native calls' "
            f"range {ms(low, 4)}–{ms(high, 4)}: at this length the platform adds less than the run-to-run variation)"
        )
    if factor <= 1:
        return (
            f"{label} {phase} ×{factor:.3g}: FaaS faster than native (median {ms(faas_median_ms, 4)} under every native call, "
            f"{ms(low, 4)}–{ms(high, 4)}); compare cpu_ms in calls.csv to tell slower code from time spent waiting for a CPU"
        )
    return ""


def fit_power_law(x, y) -> dict | None:
    """``y = a · x ** b`` by least squares on logs over the finite positive pairs; None below two."""
    pairs = [(a, b) for a, b in zip(x, y) if positive(a) and positive(b)]
    if len({p[0] for p in pairs}) < 2:
        return None
    lx = np.log([p[0] for p in pairs])
    ly = np.log([p[1] for p in pairs])
    exponent, intercept = np.polyfit(lx, ly, 1)
    fitted = intercept + exponent * lx
    total = float(((ly - ly.mean()) ** 2).sum())
    r2 = 1.0 - float(((ly - fitted) ** 2).sum()) / total if total > 0 else math.nan
    return {"coefficient": float(math.exp(intercept)), "exponent": float(exponent), "r2": r2, "points": len(pairs)}


def fits(rows: list[dict]) -> dict:
    """Figure 16's power-law fits, per measure and phase, over the functions' rows."""
    out = {}
    for measure in ("exec", "latency"):
        for phase in ("warm", "resumed"):
            out[f"{measure}_{phase}"] = fit_power_law(
                [r["native_exec_ms"] for r in rows], [r[f"slowdown_{measure}_{phase}"] for r in rows]
            )
    return out


# -- plots -------------------------------------------------------------------------------------


def plot_fig15(rows: list[dict], path: Path) -> None:
    """Slowdown per function, log scale, alive (warm) vs paused (resumed); execution and latency."""
    functions = [r["function"] for r in rows]
    x = np.arange(len(functions))
    fig, axes = new_figure(1, 2, figsize=(max(7.0, 1.1 * len(functions) + 4), 4.2))
    for ax, measure, title in (
        (axes[0], "exec", "execution time (the run call)"),
        (axes[1], "latency", "latency (client round trip)"),
    ):
        for offset, phase, label, colour in (
            (-0.2, "warm", "alive (warm)", "#2ca02c"),
            (0.2, "resumed", "paused (resumed)", "#ff7f0e"),
        ):
            values = [r[f"slowdown_{measure}_{phase}"] for r in rows]
            shown = [v if positive(v) else np.nan for v in values]
            ax.bar(x + offset, shown, width=0.4, label=label, color=colour)
            for xi, v, r in zip(x, values, rows):
                if not positive(v):
                    below = f"execution {phase}: below resolution" in str(r.get("notes") or "")
                    ax.annotate(
                        "below\nresolution" if below else "n/a",
                        (xi + offset, 1.0),
                        ha="center",
                        va="bottom",
                        fontsize=6,
                        color="grey",
                    )
                elif f"{'execution' if measure == 'exec' else 'latency'} {phase} ×" in str(r.get("notes") or ""):
                    # Not significant, or FaaS faster: marked on the bar, explained in slowdown.csv's notes.
                    ax.annotate(
                        "ns" if v > 1 else "≤1", (xi + offset, v), ha="center", va="bottom", fontsize=6, color="grey"
                    )
        ax.set_yscale("log")
        _plain_log_ticks(ax.yaxis)
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_xticks(x)
        ax.set_xticklabels(functions, rotation=30, ha="right")
        ax.set_ylabel("slowdown vs native (×, log)")
        ax.set_title(title, fontsize=10)
        ax.legend(fontsize=8)
    fig.suptitle(
        "Fig 15: slowdown in FaaS vs native, alive vs paused sandbox\n"
        "(ns: within the native calls' range; ≤1: no slowdown; slowdown.csv's notes say why)",
        fontsize=10,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def plot_fig16(rows: list[dict], fitted: dict, path: Path) -> None:
    """Slowdown against native execution time, log-log, with the fitted power law and its exponent."""
    fig, axes = new_figure(1, 2, figsize=(11, 4.4))
    native_ms = [r["native_exec_ms"] for r in rows]
    for ax, measure, title in ((axes[0], "exec", "execution time"), (axes[1], "latency", "latency")):
        for phase, label, colour, marker in (
            ("warm", "alive (warm)", "#2ca02c", "o"),
            ("resumed", "paused (resumed)", "#ff7f0e", "s"),
        ):
            points = [(n, r[f"slowdown_{measure}_{phase}"], r["function"]) for n, r in zip(native_ms, rows)]
            points = [p for p in points if positive(p[0]) and positive(p[1])]
            if points:
                ax.scatter([p[0] for p in points], [p[1] for p in points], color=colour, marker=marker, label=label)
                for px, py, name in points:
                    ax.annotate(name, (px, py), fontsize=7, xytext=(3, 3), textcoords="offset points")
            fit = fitted.get(f"{measure}_{phase}")
            if fit:
                xs = np.geomspace(min(p[0] for p in points), max(p[0] for p in points), 50)
                ax.plot(
                    xs,
                    fit["coefficient"] * xs ** fit["exponent"],
                    color=colour,
                    linestyle="--",
                    label=f"fit {label}: {fit['coefficient']:.3g}·x^{fit['exponent']:.2f} (R² {fit['r2']:.2f})",
                )
        ax.set_xscale("log")
        ax.set_yscale("log")
        _plain_log_ticks(ax.yaxis)
        ax.set_xlabel("native execution time (ms, log)")
        ax.set_ylabel("slowdown vs native (×, log)")
        ax.set_title(title, fontsize=10)
        ax.legend(fontsize=7)
        if not ax.has_data():
            ax.text(0.5, 0.5, "no function with both values", transform=ax.transAxes, ha="center")
    fig.suptitle("Fig 16: slowdown against native execution time, power-law fit")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def _plain_log_ticks(axis) -> None:
    """Factors as 0.9, 2, 4 rather than 9×10⁻¹ (a factor's axis spans less than a decade or two)."""
    axis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%g"))
    axis.set_minor_formatter(matplotlib.ticker.FormatStrFormatter("%g"))


# -- the files ---------------------------------------------------------------------------------


def write_results(out: Path, rows: list[dict], calls: list[Call], manifest: rundir.Manifest) -> dict:
    """slowdown.csv, calls.csv, both figures and the manifest (with the fits); returns the fits."""
    fitted = fits(rows)
    columns = list(rows[0]) if rows else ["function"]
    with open(out / SLOWDOWN_CSV, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        for row in rows:
            writer.writerow({k: csv_cell(v) for k, v in row.items()})
    with open(out / CALLS_CSV, "w", newline="") as handle:
        call_writer = csv.writer(handle)
        call_writer.writerow(CALL_COLUMNS)
        for c in calls:
            call_writer.writerow([csv_cell(getattr(c, name)) for name in CALL_COLUMNS])
    plot_fig15(rows, out / FIG15)
    plot_fig16(rows, fitted, out / FIG16)
    manifest.update(
        fits=fitted, files={"slowdown_csv": SLOWDOWN_CSV, "calls_csv": CALLS_CSV, "fig15": FIG15, "fig16": FIG16}
    )
    rundir.write_manifest(out, manifest)
    return fitted


def load_rows(path: Path) -> list[dict]:
    """``slowdown.csv`` read back with numbers as floats (empty cells: NaN)."""
    with open(path, newline="") as handle:
        return [
            {k: (v if k in TEXT_COLUMNS else as_float(v)) for k, v in row.items()} for row in csv.DictReader(handle)
        ]


def load_calls(path: Path) -> list[Call]:
    """``calls.csv`` read back as :class:`Call` rows (empty numbers: NaN), for statistics over the calls."""
    with open(path, newline="") as handle:
        rows = list(csv.DictReader(handle))
    return [_call_of_row(row) for row in rows]


def _call_of_row(row: dict[str, str]) -> Call:
    """One row of ``calls.csv`` (``CALL_COLUMNS``); a column an older file lacks keeps Call's default."""
    return Call(
        function=row["function"],
        phase=row["phase"],
        seq=int(row["seq"]),
        outcome=row["outcome"],
        container_state=row.get("container_state", ""),
        exec_ms=as_float(row.get("exec_ms")),
        exec_resolution_ms=as_float(row.get("exec_resolution_ms")),
        cpu_ms=as_float(row.get("cpu_ms")),
        latency_ms=as_float(row.get("latency_ms")),
        wait_ms=as_float(row.get("wait_ms")),
        init_ms=as_float(row.get("init_ms")),
        activation_id=row.get("activation_id", ""),
        error=row.get("error", ""),
    )


def _finite_or(value: float, default: float) -> float:
    return value if isinstance(value, (int, float)) and math.isfinite(value) else default
