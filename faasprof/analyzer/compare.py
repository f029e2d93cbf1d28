"""Comparing runs: one frame per run × instance × phase, overlaid CDFs, metric-vs-parameter plots.

Each run is read through its ``analysis/summary.json`` and ``analysis/invocations.parquet``; a run
not analyzed yet (or analyzed by an older faasprof) is analyzed first, offline.

The *parameter* of a comparison is the one manifest setting (workload or platform) whose value
differs between the runs, e.g. ``workload.instances.i0.rate`` or
``platform.settings.pause_grace_ms``; ``--label KEY`` names it explicitly (a dotted path into the
manifest). When it is numeric, metrics are also plotted against it.

Warnings are raised when runs come from different hosts, kernels, CPU settings or platform
settings other than the parameter: their differences may be the host's, not the experiment's.

A label only means something when the runs are the same workload but for that setting: when
they also differ in the functions they call, or in other workload settings, ``compare`` warns
that it may be labelling unrelated workloads.

Never pooled: each row is one instance in one phase of one run, with that phase's own figures
(its steady window ``steady_start_s``..``phase_end_s``, its mode, offered and achieved rates as
the run's phase statistics give them), since one function called at three rates in three phases
has three modes and three latencies, and their pool is none of them. The only columns of a wider
window say so: the tail ratios are the function's in that phase (all its instances, warm-up
included, ``faasprof.analyzer.tails``), the monitor columns the run's (``monitor_window``: the
monitors sample the host, not an instance).

Completion latency (planned send → function end) is the headline of every comparison, as of the
run report: a non-blocking call's client latency is the time to its 202, which falls as the
platform falls behind. Client latency columns are kept only for instances called blocking
(``calls``); they are empty otherwise.

Run-level effects (``run_level``, the verdict of a comparison): the runs form sides (``sides``:
repeats of one workload, ``faasprof.analyzer.compare_sides``; without repeats each run is a side of
one), and each side's runs' figures of an instance × phase are its samples; the effect of a side
against the first, with its interval over runs and a verdict only when the interval excludes no
change and the effect is at least ``min_effect``, is ``faasprof.analyzer.run_stats``'. With one run
on a side there is no verdict: the run-to-run variation is unknown.

Per-invocation tests (``significance``), kept only where every side is one run, and describing
those runs only, never the workloads (one run's invocations share its host and platform state, so
they are no independent samples of the workload): for each instance × phase, every run after the first is compared
with the first's same instance and phase on its per-invocation completion latencies of successful
invocations planned in the phase's steady window, percentile by
percentile (``VERDICT_PERCENTILES``), since a change can speed up the median and slow down the
tail: each run's percentile with its distribution-free 95 % confidence interval
(``faasprof.analyzer.stats.quantile_ci``), the ratio run / baseline, and the ratio's interval
[run low / baseline high, run high / baseline low] (it holds the true ratio whenever both
intervals hold theirs: at least 90 %). The label is ``higher in this run`` when the run's
interval lies wholly above the baseline's, ``lower in this run`` when wholly below, ``overlapping``
when they overlap, ``too few samples`` when an interval has no bound. Besides, two-sided Mann-Whitney U tests
the distributions as a whole (``p_value``; the common-language effect size ``prob_slower``, the
probability that an invocation of the run is slower than one of the baseline, 0.5 no effect).

Output format versions (``COMPARE_FORMAT_VERSION``):
  1: first version; ``significance`` (one entry per run × function against the baseline run) was
     added to it later as an optional key (readers of version 1 that ignore unknown keys still work).
  2: ``significance`` entries carry ``percentiles`` (a verdict per percentile) and ``verdict``
     sums them up, no longer one word for the median; rows carry ``calls``, and client latency only
     for blocking calls.
  3: rows are run × instance × phase (``instance``, ``phase``, ``steady_start_s``, ``phase_end_s``,
     one ``mode``), no longer run × function; ``significance`` entries are per instance × phase
     (``instance``, ``phase``, ``mode_baseline``, ``mode``).
  4: ``sides`` (name, runs), ``run_level`` (``run_stats.SideEffect`` per side × instance × phase:
     the verdict), ``min_effect``; rows carry ``side``; ``significance`` is per-invocation, present
     only where every side is one run, its labels ``higher in this run``, ``lower in this run``,
     ``overlapping`` (no longer slower/faster: they describe those runs only); runs that call
     different functions are labelled by their functions, not by a setting.
"""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd
from scipy import stats as scipy_stats

from faasprof import __version__, rundir
from faasprof.analyzer import compare_latencies, compare_plots, compare_sides, markup, run_stats
from faasprof.analyzer import frames as frames_mod
from faasprof.analyzer import stats as stats_mod
from faasprof.analyzer import tails as tails_mod
from faasprof.analyzer import units as units_mod
from faasprof.analyzer.analysis import analyze_run, load_summary
from faasprof.analyzer.summary import Summary
from faasprof.errors import ConfigError, FormatError
from faasprof.outcomes import FAILURE_OUTCOMES

COMPARE_FORMAT_VERSION = 4
MIN_SAMPLES_FOR_TEST = 8
VERDICT_PERCENTILES = (50.0, 90.0, 99.0, 99.9)
# Keys that differ between any two runs without meaning a different experiment; the last ones are
# the embedded platform's bookkeeping of what it cleaned up when it started.
VOLATILE_NAMES = (
    "test_name",
    "description",
    "created_utc",
    "apihost",
    "port",
    "pid",
    "auth",
    "auth_user",
    "source",
    "path",
    "uptime_s",
    "loadavg",
    "random_seed",
    "seed",
    "seed_was_null",
    "as_given",
    "info",
    "actions",
    "cgroup_parents",
    "embedded",
    "stale_cgroups_removed",
    "stale_containers_removed",
    "orphan_sandboxes_killed",
)
VOLATILE_SUFFIXES = ("_dir", "_path", "_pid", "_port", "_utc", "_ns", "seed")
HOST_KEYS = (
    "hostname",
    "cpu_model",
    "model_name",
    "kernel",
    "governor",
    "smt",
    "cores",
    "logical_cpus",
    "sockets",
    "perf_event_paranoid",
    "microcode",
    "turbo",
    "no_turbo",
)
CLIENT_METRICS = ("client_latency_ms_p50", "client_latency_ms_p90", "client_latency_ms_p99", "client_latency_ms_p99_9")
METRICS = (
    "completion_latency_ms_p50",
    "completion_latency_ms_p90",
    "completion_latency_ms_p99",
    *CLIENT_METRICS,
    "platform_latency_ms_p50",
    "platform_latency_ms_p99",
    "achieved_rps",
    "cold_fraction",
    "resumed_fraction",
    "execution_ms_mean",
    "wait_ms_mean",
    "gb_s",
)
MONITOR_HINTS = ("ipc", "mpki", "bw", "bandwidth", "occupancy")
MONITOR_WINDOW = "the run's steady phases together"
# The per-invocation labels: they describe two runs, never two workloads (module docstring).
HIGHER_IN_RUN, LOWER_IN_RUN, OVERLAPPING = "higher in this run", "lower in this run", "overlapping"
# Which rows a verdict compares: one instance in one phase.
Key = tuple[str, int]


def flatten(node: Any, prefix: str = "") -> dict[str, Any]:
    """Nested dicts as dotted keys; lists become JSON text (compared as a whole)."""
    out: dict[str, Any] = {}
    if isinstance(node, dict):
        for key, value in node.items():
            out.update(flatten(value, f"{prefix}.{key}" if prefix else str(key)))
    elif isinstance(node, list):
        out[prefix] = json.dumps(node, sort_keys=True)
    else:
        out[prefix] = node
    return out


def lookup(manifest: rundir.Manifest, dotted: str) -> Any:
    """The value at a dotted path of the manifest document (``workload.instances.i0.rate``), or None."""
    node: Any = manifest.to_json()
    for part in dotted.split("."):
        if isinstance(node, dict) and part in node:
            node = node[part]
        else:
            return None
    return node


def _volatile(key: str) -> bool:
    return any(
        part.lower() in VOLATILE_NAMES or part.lower().endswith(VOLATILE_SUFFIXES) for part in key.split(".")[1:]
    )


def differing_keys(manifests: list[rundir.Manifest], sections=("workload", "platform")) -> list[str]:
    """Dotted manifest keys under ``sections`` whose values differ between the runs."""
    flats = [{k: v for s in sections for k, v in flatten(lookup(m, s) or {}, s).items()} for m in manifests]
    keys = sorted(set().union(*flats))
    return [k for k in keys if not _volatile(k) and len({json.dumps(f.get(k), sort_keys=True) for f in flats}) > 1]


def run_functions(manifest: rundir.Manifest) -> list[str]:
    """The functions a run calls, sorted; memory variants of one function (deployed as
    ``<name>-<MB>``) count as that function."""
    return sorted(
        {
            re.sub(r"-\d+$", "", str(i.get("function") or i.get("application")))
            for i in manifest.instances.values()
            if isinstance(i, dict)
        }
    )


def functions_differ(manifests: list[rundir.Manifest]) -> bool:
    return len({json.dumps(run_functions(m)) for m in manifests}) > 1


def pick_parameter(manifests: list[rundir.Manifest], differing: list[str]) -> str | None:
    """The one setting the runs differ in: what a sweep applied, else the one (numeric) key; none
    when the runs call different functions (they are then labelled by their functions: a setting
    that also differs, such as the duration, would name two different workloads)."""
    if len(manifests) < 2:
        return None
    applied = [k for k in differing_keys(manifests, sections=("sweep_point.applied",)) if ".allocation." not in k]
    if len(applied) == 1:
        return applied[0]
    if functions_differ(manifests):
        return None
    if len(differing) == 1:
        return differing[0]
    numeric = [k for k in differing if all(_numeric(lookup(m, k)) is not None for m in manifests)]
    return numeric[0] if len(numeric) == 1 else None


def environment_warnings(manifests: list[rundir.Manifest], names: list[str], parameter: str | None) -> list[str]:
    warnings = []
    host_flats = [flatten(m.host, "host") for m in manifests]
    for key in sorted(set().union(*host_flats)):
        if key.split(".")[-1] not in HOST_KEYS:
            continue
        values = [f.get(key) for f in host_flats]
        if len({json.dumps(v, sort_keys=True) for v in values}) > 1:
            detail = ", ".join(f"{n}={v}" for n, v in zip(names, values))
            warnings.append(f"runs differ in {key} ({detail}): differences may come from the hosts, not the experiment")
    for key in differing_keys(manifests, sections=("platform",)):
        if key == parameter:
            continue
        values = [lookup(m, key) for m in manifests]
        detail = ", ".join(f"{n}={v}" for n, v in zip(names, values))
        warnings.append(f"runs differ in platform setting {key} ({detail}): compare runs on the same platform settings")
    versions = {str(m.faasprof.get("version")) for m in manifests}
    if len(versions) > 1:
        warnings.append(f"runs were made by different faasprof versions ({', '.join(sorted(versions))})")
    return warnings


def unrelated_workload_warnings(
    manifests: list[rundir.Manifest], names: list[str], parameter: str | None, differing: list[str]
) -> list[str]:
    """Warnings when the runs are not one workload varied in ``parameter`` alone (or, without one,
    when they call different functions: what else differs is named too)."""
    if len(manifests) < 2:
        return []
    out = []
    functions = [run_functions(m) for m in manifests]
    if functions_differ(manifests):
        detail = ", ".join(f"{n}: {'+'.join(f) or '–'}" for n, f in zip(names, functions))
        what = f"labelling them by {parameter} may compare unrelated workloads" if parameter else "labelled by function"
        out.append(f"runs call different functions ({detail}): {what}")
    if parameter is None:
        others = [k for k in differing if k.startswith("workload.") and not k.endswith((".function", ".application"))]
        if out and others:
            out.append(
                f"the runs also differ in {', '.join(others[:6])}{'…' if len(others) > 6 else ''}: a difference may come from these"
            )
        return out
    others = [k for k in differing if k.startswith("workload.") and k != parameter and not k.endswith(".function")]
    if others:
        out.append(
            f"runs differ in more than {parameter}: also {', '.join(others[:6])}{'…' if len(others) > 6 else ''}; a difference may come from these"
        )
    return out


def percentile_verdicts(before: dict, after: dict) -> list[dict]:
    """Per ``VERDICT_PERCENTILES``: both runs' percentile and 95 % interval (ms), the ratio run /
    baseline with its interval, and the verdict (module docstring). ``before``, ``after``: the two
    runs' ``stats.percentile_block`` with prefix ``v`` (``compare_latencies.phase_blocks``)."""
    out = []
    for pct in VERDICT_PERCENTILES:
        key = "v_" + f"p{pct:g}".replace(".", "_")
        b, b_low, b_high = before[key], before[f"{key}_ci_low"], before[f"{key}_ci_high"]
        a, a_low, a_high = after[key], after[f"{key}_ci_low"], after[f"{key}_ci_high"]
        entry = {
            "percentile": pct,
            "baseline_ms": b,
            "baseline_ci_ms": [b_low, b_high],
            "run_ms": a,
            "run_ci_ms": [a_low, a_high],
            "ratio": a / b if b > 0 else None,
            "ratio_ci": None,
        }
        bounds = (b_low, b_high, a_low, a_high)
        if not all(math.isfinite(v) for v in bounds):
            entry["verdict"] = "too few samples"
        else:
            if b_low > 0:
                entry["ratio_ci"] = [a_low / b_high, a_high / b_low]
            entry["verdict"] = HIGHER_IN_RUN if a_low > b_high else LOWER_IN_RUN if a_high < b_low else OVERLAPPING
        out.append(entry)
    return out


def _ratio_interval(entry: dict) -> str:
    low, high = entry["ratio_ci"]
    return f"{markup.ratio(low)}–{markup.ratio(high)}"


def _verdict_text(percentiles: list[dict]) -> str:
    """One line: each percentile's verdict with its ratio and interval."""
    parts = []
    for entry in percentiles:
        interval = f" ({_ratio_interval(entry)})" if entry["ratio_ci"] else ""
        parts.append(f"p{entry['percentile']:g} {entry['verdict']} {markup.ratio(entry['ratio'])}{interval}")
    return "; ".join(parts)


def significance(
    paths: list[Path],
    names: list[str],
    modes: dict[str, dict[Key, tuple[str, str]]] | None = None,
    cdfs: dict[Path, dict[Key, tuple[np.ndarray, np.ndarray]]] | None = None,
) -> list[dict]:
    """Each run after the first against the first, per instance × phase and percentile (module
    docstring). The percentiles come from the runs' phase statistics; the latencies (for the Mann-Whitney test)
    are read one run at a time beside the baseline's (``compare_latencies``), and each run's CDF
    points are left in ``cdfs`` for the plots when it is given. ``modes``: per run name, each instance × phase's
    (function, mode)."""
    if len(paths) < 2:
        return []
    modes = modes or {}
    base = compare_latencies.read_latencies(paths[0])
    if cdfs is not None:
        cdfs[paths[0]] = compare_latencies.cdf_points(base)
    base_blocks = compare_latencies.phase_blocks(paths[0])
    out = []
    for name, path in zip(names[1:], paths[1:]):
        other = compare_latencies.read_latencies(path)
        if cdfs is not None:
            cdfs[path] = compare_latencies.cdf_points(other)
        blocks = compare_latencies.phase_blocks(path)
        for key in sorted(set(base) & set(other), key=lambda k: (k[1], k[0])):
            a, b = base[key], other[key]
            function, mode = modes.get(name, {}).get(key, (None, None))
            entry: dict[str, Any] = {
                "run": name,
                "baseline": names[0],
                "instance": key[0],
                "phase": key[1],
                "function": function,
                "mode_baseline": modes.get(names[0], {}).get(key, (None, None))[1],
                "mode": mode,
                "metric": "completion_latency_ms",
                "n_baseline": int(len(a)),
                "n": int(len(b)),
            }
            if min(len(a), len(b)) < MIN_SAMPLES_FOR_TEST:
                entry.update(
                    verdict=f"too few samples (< {MIN_SAMPLES_FOR_TEST}) to test",
                    percentiles=[],
                    p_value=None,
                    median_ratio=None,
                    prob_slower=None,
                )
                out.append(entry)
                continue
            test = scipy_stats.mannwhitneyu(b, a, alternative="two-sided")
            # phase_stats holds every steady instance × phase; should one lack a group, the samples give the same figures.
            percentiles = percentile_verdicts(
                base_blocks.get(key) or stats_mod.percentile_block(a, "v"),
                blocks.get(key) or stats_mod.percentile_block(b, "v"),
            )
            entry.update(
                percentiles=percentiles,
                verdict=_verdict_text(percentiles),
                p_value=float(test.pvalue),
                median_ratio=percentiles[0]["ratio"] if percentiles[0]["percentile"] == 50 else None,
                prob_slower=float(test.statistic) / (len(a) * len(b)),
            )
            out.append(entry)
        del other  # the next run's samples replace these: two runs' at most are held
    return out


def verdict_lines(result: dict) -> list[str]:
    """The comparison's verdicts as text, a line per percentile (for the terminal)."""
    entries = result.get("significance") or []
    if not entries:
        return []
    lines = [
        "per-invocation view (describes these runs only, not the workloads: one run's invocations share its host and "
        f"platform state): completion latency (planned send → function end, successful invocations of each phase's steady window) against {entries[0]['baseline']}:"
    ]
    for entry in entries:
        against = f"; baseline {entry['mode_baseline']}" if entry.get("mode_baseline") else ""
        lines.append(
            f"  {entry['run']}, {compare_plots.where(entry)} (n {entry['n']:,} against {entry['n_baseline']:,}{against}):"
        )
        if not entry.get("percentiles"):
            lines.append(f"    {entry['verdict']}")
            continue
        for p in entry["percentiles"]:
            interval = _ratio_interval(p) if p.get("ratio_ci") else "–"
            lines.append(
                f"    p{p['percentile']:<5g} {markup.ms(p['baseline_ms']):>9} → {markup.ms(p['run_ms']):>9}  {markup.ratio(p['ratio']):>7} (interval {interval})  {p['verdict']}"
            )
        lines.append(
            f"    whole distribution of these runs: P(above) {entry['prob_slower']:.2f} (an invocation of the run above one of the baseline), Mann-Whitney p = {entry['p_value']:.2g}"
        )
    return lines


def summary_table(frame: pd.DataFrame) -> pd.DataFrame:
    """The compare frame as the terminal shows it, a row per run × instance × phase: completion
    latency first, units in every cell, client latency only where some instance is called blocking."""
    columns: dict[str, tuple[str, Callable[[Any], str]]] = {
        # The side, where runs are repeats grouped into sides (else each run is its own side).
        **({"side": ("side", str)} if "side" in frame.columns and (frame["side"] != frame["run"]).any() else {}),
        "label": ("label", str),
        "instance": ("instance", str),
        "phase": ("phase", str),
        "function": ("function", str),
        "calls": ("calls", str),
        "mode": ("mode", str),
        "offered": ("offered_rps", markup.rate),
        "achieved": ("achieved_rps", markup.rate),
        "completion p50": ("completion_latency_ms_p50", markup.ms),
        "completion p90": ("completion_latency_ms_p90", markup.ms),
        "completion p99": ("completion_latency_ms_p99", markup.ms),
        "client p50 (blocking)": ("client_latency_ms_p50", markup.ms),
        "client p99 (blocking)": ("client_latency_ms_p99", markup.ms),
        "cold": ("cold_fraction", markup.pct),
    }
    shown = {}
    for title, (column, format_value) in columns.items():
        if column not in frame.columns or (column in CLIENT_METRICS and not frame[column].notna().any()):
            continue
        shown[title] = [format_value(None if pd.isna(v) else v) for v in frame[column].tolist()]
    return pd.DataFrame(shown)


def default_out_dir(run_dirs: list[str | os.PathLike]) -> Path:
    """Where a comparison goes when no --out names it: beside the first run, never the working directory."""
    return Path(run_dirs[0]).resolve().parent / f"compare-{rundir.utc_stamp()}"


def _numeric(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    try:
        return float(str(value))
    except (TypeError, ValueError):
        return None


def ensure_analyzed(run_dir: Path, progress: Callable[[str], None] | None = None) -> Summary:
    try:
        return load_summary(run_dir)
    except FormatError:
        if progress:
            progress(f"analyzing {run_dir} (no current analysis/summary.json)")
        return analyze_run(run_dir, None, fetch=False)


def _monitor_columns(summary: Summary) -> dict:
    """The run's monitor means (steady phases together) of the metrics a comparison plots."""
    out = {}
    for monitor, entry in (summary.get("monitors") or {}).items():
        for column, mean in (entry.get("steady_mean") or entry.get("mean") or {}).items():
            if any(h in column.lower() for h in MONITOR_HINTS):
                out[f"{monitor}_{column}"] = mean
    return out


def phase_rows(name: str, label: dict, summary: Summary) -> list[dict]:
    """One analysed run's rows: one per instance × steady phase, each with that phase's figures."""
    monitors = _monitor_columns(summary)
    rows = []
    for instance in summary["instances"]:
        calls = "blocking" if instance.get("blocking") else "non-blocking"
        for phase in instance["phases"]:
            row = {
                "run": name,
                **label,
                "instance": instance["instance"],
                "function": instance["function"],
                "phase": int(phase["phase"]),
                "steady_start_s": phase.get("steady_start_s"),
                "phase_end_s": phase.get("phase_end_s"),
                "calls": calls,
                "mode": phase["mode"],
                **{k: phase.get(k) for k in ("planned", "answered", "successful", "failures")},
                **{f"final_{outcome}": phase.get(f"final_{outcome}") for outcome in FAILURE_OUTCOMES},
                "offered_rps": phase.get("offered_rps"),
                **{m: phase.get(m) for m in METRICS},
                # The queueing rule's ramp guard reads it (a sweep's capacity, experiments.sweep_report).
                "trend_completion_last_third_median_ms": phase.get("trend_completion_last_third_median_ms"),
                "gb_s_100ms": phase.get("gb_s_100ms"),
                "memory_mb": phase.get("memory_mb"),
                **tails_mod.phase_columns(summary, instance["instance"], int(phase["phase"])),
                **({**monitors, "monitor_window": MONITOR_WINDOW} if monitors else {}),
            }
            if calls != "blocking":  # the time to a 202 is no latency of the function's
                row.update(dict.fromkeys(CLIENT_METRICS))
            rows.append(row)
    return rows


def unmatched_phase_warnings(names: list[str], modes: dict[str, dict[Key, tuple[str, str]]]) -> list[str]:
    """A warning per run whose instances × phases differ from the baseline's: those have no verdict
    (a verdict compares one instance's phase with the same in the baseline, never a pool)."""
    if len(names) < 2:
        return []
    base = set(modes.get(names[0], {}))
    out = []
    for name in names[1:]:
        mine = set(modes.get(name, {}))
        if mine != base:
            only = [f"{i} phase {p}" for i, p in sorted(mine ^ base, key=lambda k: (k[1], k[0]))]
            out.append(
                f"{name} and the baseline {names[0]} do not have the same instances × phases; no verdict for {', '.join(only[:6])}{'…' if len(only) > 6 else ''}"
            )
    return out


def column_units(rows: list[dict], parameter: str | None) -> dict[str, str]:
    """The units the compare frame's column names cannot say: the parameter's (its setting's last
    key) and each monitor column's (``<monitor>_<column>``: its column's)."""
    out = {}
    if parameter and (unit := units_mod.unit_of(parameter.rsplit(".", 1)[-1])):
        out["parameter_value"] = unit
    for row in rows:
        for column in row:
            monitor, _, inner = column.partition("_")
            if (
                inner
                and row.get("monitor_window")
                and units_mod.unit_of(column) is None
                and (unit := units_mod.unit_of(inner))
            ):
                out[column] = unit
    return out


def compare_runs(
    run_dirs: list[str | os.PathLike],
    label: str | None = None,
    out_dir: str | os.PathLike | None = None,
    progress: Callable[[str], None] | None = None,
    sides: list[compare_sides.Side] | None = None,
    min_effect: float = run_stats.DEFAULT_MIN_EFFECT,
) -> dict:
    """Compare runs; writes ``out_dir`` (frame, plots, report) when given; returns the result dict.
    ``sides``: the runs grouped into repeats of one workload each (``run_dirs`` is then ignored);
    without them each run is a side of its own."""
    if sides is None:
        sides = [compare_sides.Side(Path(p).name, [Path(p)]) for p in run_dirs]
    paths = [run for side in sides for run in side.runs]
    if len(paths) < 1:
        raise ConfigError("compare: give at least one RUN_DIR")
    manifests = [rundir.read_manifest(p) for p in paths]
    summaries = [ensure_analyzed(p, progress) for p in paths]
    names = [p.name for p in paths]
    if len(set(names)) != len(names):
        names = [str(p) for p in paths]
    side_of = {name: side.name for name, side in zip(names, (s for s in sides for _ in s.runs))}
    differing = differing_keys(manifests) if len(paths) > 1 else []
    parameter = _parameter(label, manifests, differing)
    by_function = parameter is None and functions_differ(manifests)
    rows = []
    modes: dict[str, dict[Key, tuple[str, str]]] = {}
    for name, manifest, summary in zip(names, manifests, summaries):
        value = lookup(manifest, parameter) if parameter else None
        label_value = {
            "label": str(value) if parameter else "+".join(run_functions(manifest)) if by_function else name,
            "parameter_value": _numeric(value) if parameter else None,
        }
        run_rows = [{**row, "side": side_of[name]} for row in phase_rows(name, label_value, summary)]
        modes[name] = {(r["instance"], r["phase"]): (r["function"], r["mode"]) for r in run_rows}
        rows.extend(run_rows)
    frame = pd.DataFrame(rows)
    frame.attrs["units"] = column_units(rows, parameter)
    warnings = environment_warnings(manifests, names, parameter) if len(paths) > 1 else []
    warnings += unrelated_workload_warnings(manifests, names, parameter, differing)
    warnings += unmatched_phase_warnings(names, modes)
    warnings += compare_sides.noise_warnings(sides, dict(zip(paths, manifests)))
    if len(paths) > 1 and parameter is None and differing and not by_function:
        warnings.append(
            f"runs differ in several settings ({', '.join(differing[:6])}{'…' if len(differing) > 6 else ''}); name the one to plot against with --label KEY"
        )
    run_level = run_stats.side_effects(
        {side.name: [r for r in rows if r["side"] == side.name] for side in sides}, min_effect=min_effect
    )
    one_run_sides = all(len(side.runs) == 1 for side in sides)
    # Each run's CDF points, for the plots: left by the tests' reading of its latencies, or read after.
    cdfs: dict[Path, dict[Key, tuple[np.ndarray, np.ndarray]]] | None = {} if out_dir is not None else None
    result = {
        "format_version": COMPARE_FORMAT_VERSION,
        "generated_by": {"faasprof": __version__},
        "runs": [str(p) for p in paths],
        "sides": [{"name": side.name, "runs": [str(r) for r in side.runs]} for side in sides],
        "min_effect": min_effect,
        "parameter": parameter,
        "differing_keys": differing,
        "warnings": warnings,
        "run_level": stats_mod.clean([effect.to_json() for effect in run_level]),
        # Per-invocation tests describe single runs: with repeats, the runs are the samples.
        "significance": stats_mod.clean(significance(paths, names, modes, cdfs)) if one_run_sides else [],
        "rows": stats_mod.clean(frame.to_dict("records")),
    }
    if out_dir is not None and cdfs is not None:
        for path in paths:
            if path not in cdfs:
                cdfs[path] = compare_latencies.cdf_points(compare_latencies.read_latencies(path))
        write_outputs(Path(out_dir), frame, result, paths, names, cdfs)
    result["frame"] = frame
    return result


def _parameter(label: str | None, manifests: list[rundir.Manifest], differing: list[str]) -> str | None:
    """``--label KEY`` checked against the manifests, else the setting the runs differ in."""
    if label is None:
        return pick_parameter(manifests, differing)
    if all(lookup(m, label) is None for m in manifests):
        raise ConfigError(
            f"--label {label}: no run's manifest has this key; use a dotted path such as workload.instances.<name>.rate (differing keys: {', '.join(differing[:8]) or 'none'})"
        )
    return label


def write_outputs(
    out: Path,
    frame: pd.DataFrame,
    result: dict,
    paths: list[Path],
    names: list[str],
    cdfs: dict[Path, dict[Key, tuple[np.ndarray, np.ndarray]]] | None = None,
) -> None:
    out.mkdir(parents=True, exist_ok=True)
    frames_mod.write_parquet(frame, out / "compare.parquet", kind="compare")  # with each column's unit
    frame.to_csv(out / "compare.csv", index=False)
    plots = compare_plots.write_compare_plots(out / "plots", frame, paths, names, result["parameter"], cdfs)
    result["outputs"] = {
        "frame": "compare.parquet",
        "csv": "compare.csv",
        "plots": [f"plots/{p}" for p in plots],
        "report": "report.html",
    }
    rundir.write_json_atomic(out / "compare.json", {k: v for k, v in result.items() if k != "frame"})
    compare_plots.write_compare_report(out / "report.html", frame, result)
