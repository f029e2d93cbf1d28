"""Loading a run into frames (``load_run``) and writing its analysis (``analyze_run``).

``load_run`` works offline from the run directory alone (``manifest.json``, ``invocations.csv``,
``activations.jsonl`` when saved, ``monitors/``); ``analyze_run`` first fetches the activation
records from the platform when the run did not save them, then writes ``analysis/``:

::

    analysis/
      summary.json              format_version, records, modes with evidence, percentiles, warnings
      invocations.parquet       the invocation frame (analyzer.frames)
      phase_stats.parquet       one row per instance × steady phase
      function_stats.parquet    one row per function over the whole run
      monitor_<name>.parquet    each monitor's frame on the run clock (when monitors ran)
      plots/*.png               latency over time, breakdown, CDFs, throughput, monitors
      report.html               one self-contained page (plots embedded)

Everything in ``analysis/`` is derived and rebuilt from scratch on every call; the same inputs give
the same files (no timestamps, deterministic plot sampling).

The summary's shape is ``faasprof.analyzer.summary``'s TypedDicts, every key and unit in
docs/analysis.md. Summary format versions (``SUMMARY_FORMAT_VERSION``):
  1: first version.
  2: final outcomes (the HTTP outcome joined with the activation record): ``run.final_outcomes``,
     ``failures`` (by function and outcome, with an example error), ``final_*``/``successful``/
     ``failures``/``rejected`` counts per phase and function; latency figures, start classes and
     modes cover successful invocations only (``faasprof.analyzer.stats``). A version-1 summary is
     re-analyzed by ``compare``: its percentiles included failed activations. Added later,
     readable by version-2 readers: ``run.end_s`` and ``run.not_sent_interrupted`` (a run that
     stopped early: where it stopped, and the invocations planned after that, which
     ``run.final_outcomes`` and ``failures`` leave out); ``tail_ratios`` rows per instance × phase
     (before, per function × phase and ``all``: ``compare`` gives such a run no tail columns);
     ``run.warmup`` and ``start_classes.warmup_left_out`` (the run's warm-up, left out of every
     figure: ``stats.WARMUP_RULE``; before, only the trace fidelity left it out).
"""

from __future__ import annotations

import json
import os
import shutil
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd

from faasprof import __version__, rundir
from faasprof.analyzer import chains as chains_mod
from faasprof.analyzer import (
    engine,
    frame_loader,
    io_breakdown,
    ooc_groups,
    ooc_plots,
    outofcore,
    rows_sql,
    trace_fidelity,
)
from faasprof.analyzer import frames as frames_mod
from faasprof.analyzer import hosts as hosts_mod
from faasprof.analyzer import plots as plots_mod
from faasprof.analyzer import records as records_mod
from faasprof.analyzer import report as report_mod
from faasprof.analyzer import stats as stats_mod
from faasprof.analyzer.group_tables import frame_figures, group_tables, phase_row
from faasprof.analyzer.plot_inputs import PlotInputs
from faasprof.analyzer.summary import (
    SUMMARY_FORMAT_VERSION,
    SUPPORTED_SUMMARY_VERSIONS,
    Instance,
    MonitorsInfo,
    Phase,
    RecordsInfo,
    RecordsInfoCore,
    Summary,
    mode_evidence,
)
from faasprof.errors import FaasprofError, FormatError
from faasprof.monitoring.frames import load_run_monitors, local_host_label, run_hosts
from faasprof.platforms import registry
from faasprof.platforms.base import Platform
from faasprof.rundir import record_parquet

SUMMARY = "summary.json"
# The records' source in a native run's summary: what its latency is, and where the rest is.
NATIVE_SOURCE = "none: a faasprof native run (latency: each call's round trip to the worker; execution times and cold calls in native.csv)"
MISSING_IDS_IN_SUMMARY = 50


@dataclass
class Run:
    """A run loaded for analysis: the manifest and typed frames (what a notebook works with)."""

    path: Path
    manifest: rundir.Manifest
    invocations: pd.DataFrame  # one row per planned invocation, joined with its record
    phase_stats: pd.DataFrame  # one row per instance × steady phase, with the mode
    function_stats: pd.DataFrame  # one row per function over the whole run after its warm-up
    monitors: dict[str, pd.DataFrame] = field(default_factory=dict)  # by collector; rows of every host
    hosts: dict[str, rundir.HostInfo] = field(default_factory=dict)  # the remote hosts measured, by name
    specs: list[dict] = field(default_factory=list)
    phases: list[dict] = field(default_factory=list)
    records_info: RecordsInfo = field(
        default_factory=lambda: RecordsInfo(source="none", unreadable_lines=0, foreign_ignored=0)
    )
    warnings: list[str] = field(default_factory=list)
    end_s: float | None = None  # where a run that stopped early stopped (analyzer.stats.run_end_s)
    warmup_s: float = 0.0  # the run's warm-up, left out of every figure (analyzer.stats.run_warmup_s)
    engine: str = "in memory (pandas)"  # how the figures were computed (the report says it)
    plot_inputs: PlotInputs | None = None  # what the plots draw, when computed out of core (else from the frame)
    _records: pd.DataFrame | None = field(default=None, repr=False)

    @property
    def records(self) -> pd.DataFrame:
        """This run's flattened activation records, one row per record an invocation matched.

        Read from the run directory when first asked for, then kept: ``load_run`` does not hold
        them, because the invocation frame already has every field joined in (at ten million
        invocations they are another gigabyte)."""
        if self._records is None:
            self._records = run_records(self.path, self.invocations)[0]
        return self._records

    @property
    def test_name(self) -> str:
        return str(self.manifest.test_name or self.path.name)

    def __repr__(self) -> str:  # the frames' own reprs are far too long for a notebook cell
        modes = (
            ", ".join(f"{k} {v}" for k, v in self.phase_stats["mode"].value_counts(sort=False).items() if v)
            if len(self.phase_stats)
            else "none"
        )
        return (
            f"<Run {self.path.name}: {self.test_name}, {self.manifest.status}, {len(self.invocations):,} invocations "
            f"({int(self.invocations['successful'].sum()):,} successful), {len(self.phases)} phases, modes: {modes}, "
            f"monitors: {', '.join(self.monitors) or 'none'}, {len(self.warnings)} warnings>"
        )

    def frame(
        self,
        columns: Sequence[str] | None = None,
        phase: int | None = None,
        window_s: tuple[float, float] | None = None,
        max_bytes: int | None = frame_loader.DEFAULT_MAX_BYTES,
    ) -> pd.DataFrame:
        """Part of the analysed invocation frame read from ``analysis/`` (``frame_loader.read_frame``):
        some columns, one phase or a window, refused over ``max_bytes``."""
        return frame_loader.read_frame(self.path, columns, phase, window_s, max_bytes)

    def phase_stats_long(self) -> pd.DataFrame:
        """Phase statistics in tidy long format (``faasprof.analyzer.frames.phase_stats_long``)."""
        return frames_mod.phase_stats_long(self.phase_stats)


def _run_ids(invocations: pd.DataFrame) -> set[str]:
    return set(invocations["activation_id"][frames_mod.has_activation_id(invocations)].tolist())


def fetch_window_ms(
    manifest: rundir.Manifest, invocations: pd.DataFrame, margin_ms: int = records_mod.DEFAULT_MARGIN_MS
) -> tuple[int, int]:
    """The wall-clock window (epoch ms) whose records can belong to the run."""
    wall_zero_ns = manifest.wall_ns_at_zero
    sent = invocations["sent_ns"].dropna()
    done = invocations["done_ns"].dropna()
    first = int(sent.min()) if len(sent) else 0
    last = max(int(done.max()) if len(done) else 0, int(sent.max()) if len(sent) else 0)
    since = (wall_zero_ns + first) // 1_000_000 - margin_ms
    upto = (wall_zero_ns + last) // 1_000_000 + margin_ms
    return int(since), int(upto)


def fetch_run_records(
    run_dir: Path,
    manifest: rundir.Manifest,
    invocations: pd.DataFrame,
    connection,
    retry_delays_s: Sequence[float] | None = None,
    progress: Callable[[str], None] | None = None,
    only_ids: list[str] | None = None,
) -> dict:
    """Fetch the run's records into ``activations.jsonl`` from each platform of the run that keeps
    records and can be reached (``record_platforms``); returns the fetch report (one platform's,
    or ``{endpoint: report}`` when several answered).

    With ``only_ids`` (records missing from an existing file) those are fetched and appended; each
    platform decides how it asks for a few (``Platform.find_records``, ``stragglers``).
    """
    ids = set(only_ids) if only_ids is not None else _run_ids(invocations)
    since, upto = fetch_window_ms(manifest, invocations)
    found: list[dict] = []
    reports: dict[str, dict] = {}
    platforms = record_platforms(manifest, connection)
    for cls, names in platforms.items():
        # One platform keeping records (always, so far) is asked for every id the run received.
        theirs = (
            ids if len(platforms) == 1 else ids & _run_ids(invocations[invocations["instance"].isin(names).to_numpy()])
        )
        with cls.for_workload(None, connection) as platform:
            records, reports[cls.endpoint] = platform.find_records(
                theirs, since, upto, retry_delays_s=retry_delays_s, say=progress, stragglers=only_ids is not None
            )
        found.extend(records)
    records = rundir.sort_records(found)
    path = rundir.activations_path(run_dir)
    if only_ids is None:
        rundir.write_records(path, records)
    else:
        rundir.append_records(path, records)
    if progress:
        progress(
            f"saved {len(records)} records to {rundir.ACTIVATIONS}; {sum(r.get('missing', 0) for r in reports.values())} missing"
        )
    return next(iter(reports.values())) if len(reports) == 1 else reports


def record_platforms(manifest: rundir.Manifest, connection=None) -> dict[type[Platform], list[str]]:
    """The platforms of the run, by its manifest (``faasprof.platforms.registry.record_keepers``),
    that keep records and can be asked now (a platform reached through a connection only with
    one), each with the names of the instances it served. None in a native run."""
    if manifest.native_run:
        return {}
    keepers = registry.record_keepers(manifest.instances)
    return {cls: names for cls, names in keepers.items() if connection is not None or not cls.reached_by_connection}


def _load_monitors(run_dir: Path, manifest: rundir.Manifest) -> tuple[dict[str, pd.DataFrame], MonitorsInfo, list[str]]:
    """The monitors' frames by name, what the summary says of them, and the warnings."""
    if not rundir.monitor_dirs(run_dir) and not rundir.host_dirs(run_dir):
        return {}, {"status": "none"}, []
    try:
        loaded = load_run_monitors(run_dir, manifest) or {}
    except FaasprofError as error:
        return {}, {"status": "error", "error": str(error)}, [f"monitors: {error}"]
    frames = {name: frame for name, frame in sorted(loaded.items()) if isinstance(frame, pd.DataFrame)}
    return frames, {"status": "loaded", "names": sorted(frames)}, []


def run_records(
    run_dir: Path, invocations: pd.DataFrame, refresh_index: bool = False
) -> tuple[pd.DataFrame, np.ndarray, RecordsInfoCore]:
    """The records of ``activations.jsonl`` that invocations of the run matched, each invocation's
    row among them (−1: none), and what ``records_info`` says of them (``source`` ``none``: no file)."""
    if not rundir.has_saved_records(run_dir):
        return (
            frames_mod.records_frame([]),
            np.full(len(invocations), -1, dtype=np.int64),
            {"source": "none", "unreadable_lines": 0, "foreign_ignored": 0},
        )
    source = rundir.ACTIVATIONS_PARQUET if rundir.raw_records_gone(run_dir) else rundir.ACTIVATIONS
    records, bad = (  # the Parquet copy stands for a removed raw file (rundir.record_parquet)
        record_parquet.read_records_frame(record_parquet.records_parquet_path(run_dir))
        if source == rundir.ACTIVATIONS_PARQUET
        else records_mod.read_records(rundir.activations_path(run_dir), refresh_index=refresh_index)
    )
    position = frames_mod.match_records(invocations, records)
    matched = np.zeros(len(records), dtype=bool)
    matched[position[position >= 0]] = True
    foreign = int((~matched).sum())
    if foreign:  # records of other actions, tenants or runs: never part of this run's analysis
        keep = np.nonzero(matched)[0]
        records = records.iloc[keep].reset_index(drop=True)
        position = frames_mod.match_records(invocations, records)
    return records, position, {"source": source, "unreadable_lines": bad, "foreign_ignored": foreign}


@dataclass
class Joined:
    """A run's invocation frame joined with its records, with the phases cut (``joined_frame``)."""

    frame: pd.DataFrame
    records_info: RecordsInfo
    warnings: list[str]
    hosts: dict[str, rundir.HostInfo]
    specs: list[dict]
    phases: list[dict]
    end_s: float | None
    warmup_s: float


def joined_frame(run_dir: Path, manifest: rundir.Manifest, invocations: pd.DataFrame | None = None) -> Joined:
    """``load_run``'s frame: the invocations joined with their records, with ``phase``, ``steady``
    and ``warmup`` columns; the records' figures and warnings; the hosts, instances and phases."""
    if invocations is None:
        invocations = frames_mod.read_invocations_frame(run_dir, manifest)
    warnings: list[str] = []
    with_id = 0 if manifest.native_run else int(frames_mod.has_activation_id(invocations).sum())
    activations = rundir.activations_path(run_dir)
    records, position, info = run_records(run_dir, invocations, refresh_index=True)
    if manifest.native_run:
        info["source"] = NATIVE_SOURCE
    records_info: RecordsInfo = {"with_activation_id": with_id, **info}
    bad, foreign = info["unreadable_lines"], info["foreign_ignored"]
    if bad:
        warnings.append(f"{activations}: {bad} unreadable lines ignored (a line cut short, or not a JSON object)")
    if foreign:
        warnings.append(f"{activations}: {foreign} records of other activations ignored (not sent by this run)")
    if rundir.raw_records_gone(run_dir):
        warnings.append(rows_sql.raw_gone_warning(run_dir))
    if info["source"] == "none" and with_id:
        warnings.append(
            f"{run_dir}: no {rundir.ACTIVATIONS}; latency breakdown, start classes and cost are unavailable: "
            "run faasprof analyze with the platform's --apihost/--auth to fetch the records"
        )
    records_info["with_container_state"] = int(records["container_state"].notna().sum()) if len(records) else 0
    # The frame's record fields, aligned to the invocations; the records themselves are released
    # before the frame is built (at ten million invocations, a gigabyte less at the peak).
    aligned = frames_mod.align_records(records, position)
    by_containers = hosts_mod.containers_plan(run_dir, manifest, records, position)
    del records, position
    frame = frames_mod.build_from_aligned(invocations, aligned, manifest)
    hosts_mod.apply_containers(frame, by_containers, manifest)
    del by_containers
    del invocations, aligned
    hosts = run_hosts(run_dir, manifest)  # a host.json of another version: refused here, in one line
    found = int(frame["has_record"].sum())
    missing_mask = (frame["has_activation_id"] & ~frame["has_record"]).to_numpy()
    missing_ids = sorted(frame["activation_id"][missing_mask].tolist())
    records_info["found"] = found
    records_info["missing"] = len(missing_ids)
    records_info["missing_ids_sample"] = missing_ids[:MISSING_IDS_IN_SUMMARY]
    if missing_ids and records_info["source"] != "none":
        # Why they are missing, as the records' save found it (a platform gone for good has no "not yet").
        why = (manifest.activations or {}).get("missing_why") or "not stored by the platform, or not yet"
        warnings.append(f"{len(missing_ids)} of {with_id} activation records are missing ({why})")

    specs = stats_mod.instance_specs(manifest, frame)
    duration = stats_mod._workload_duration(manifest, frame)
    end_s = stats_mod.run_end_s(manifest, frame)
    warmup_s = stats_mod.run_warmup_s(manifest)
    phase_list = stats_mod.phases(specs, duration, end_s, warmup_s)
    frame["phase"] = stats_mod.assign_phase(frame["intended_s"].to_numpy(), phase_list)
    steady = np.zeros(len(frame), dtype=bool)
    intended = frame["intended_s"].to_numpy()
    for phase in phase_list:
        steady |= (intended >= phase["steady_start_s"]) & (intended < phase["end_s"])
    frame["steady"] = steady
    # The run's warm-up: kept (counted among the outcomes), marked, and left out of every figure.
    frame["warmup"] = intended < warmup_s

    return Joined(frame, records_info, warnings, hosts, specs, phase_list, end_s, warmup_s)


def _late_warnings(
    run_dir: Path,
    manifest: rundir.Manifest,
    records_info: RecordsInfo,
    end_s: float | None,
    unsent_after: int,
    not_sent: int,
    metric_problems: Sequence[str],
) -> tuple[dict[str, pd.DataFrame], MonitorsInfo, list[str]]:
    """The monitors (``_load_monitors``) and the warnings after the statistics' (both engines):
    the run's status, what was never sent, the plug-ins' metrics that failed, the monitors, an
    unrecorded pause grace (``records_info`` gains the grace and its source)."""
    warnings: list[str] = []
    status = manifest.status
    if status != "complete":
        warnings.append(
            f"{run_dir}: run status is {status!r}, not complete: the figures cover only what was sent before it stopped"
        )
    if unsent_after:
        warnings.append(
            f"the run stopped at {end_s:.3g} s: the phases end there; the {unsent_after} invocations planned after it were "
            "never sent (not sent: interrupted) and are neither offered nor failed"
        )
    if not_sent:
        warnings.append(f"{not_sent} planned invocations were never sent (outcome not_sent)")
    warnings.extend(metric_problems)  # the plug-ins' metrics that failed
    monitors, monitors_info, monitor_warnings = _load_monitors(run_dir, manifest)
    warnings.extend(monitor_warnings)
    records_info["pause_grace_ms"], records_info["pause_grace_source"] = frames_mod.pause_grace_ms(manifest)
    if (
        not frames_mod.pause_grace_known(records_info["pause_grace_source"])
        and records_info["found"]
        and not records_info["with_container_state"]
    ):
        warnings.append(
            f"pause grace {records_info['pause_grace_ms']:g} ms is {records_info['pause_grace_source']}: the resumed/warm split "
            "of the start classes depends on it; record it (PAUSE_GRACE_MS in the set-up's wskprops)"
        )
    return monitors, monitors_info, warnings


def load_run(
    path: str | os.PathLike,
    progress: Callable[[str], None] | None = None,
    manifest: rundir.Manifest | None = None,
    invocations: pd.DataFrame | None = None,
) -> Run:
    """Load a run directory offline into frames (records from ``activations.jsonl`` when saved).

    ``invocations`` is ``faasprof.rundir.tables.read_invocations_frame``'s frame when the caller
    has read it already. The records' column index is refreshed when the records had to be parsed
    (``faasprof.rundir.records``), so the next load is faster. Raises ``FormatError`` for an
    unknown or newer run format, ``ConfigError`` for a path that is not a directory.
    """
    run_dir = Path(path)
    manifest = manifest or rundir.read_manifest(run_dir)
    joined = joined_frame(run_dir, manifest, invocations)
    frame, records_info, warnings, hosts = joined.frame, joined.records_info, joined.warnings, joined.hosts
    specs, phase_list, end_s, warmup_s = joined.specs, joined.phases, joined.end_s, joined.warmup_s
    # In a function of its own: the groups' copies and positions are gone before the monitors load.
    grace_ms, _ = frames_mod.pause_grace_ms(manifest)
    phase_stats, function_stats, stability = group_tables(
        frame, specs, phase_list, stats_mod.latency_references(manifest), end_s, grace_ms, warmup_s
    )
    warnings.extend(stability)

    unsent_after = int(stats_mod.unsent_after_end(frame, end_s).sum())
    not_sent = int((frame["outcome"] == "not_sent").sum()) - unsent_after
    monitors, monitors_info, late = _late_warnings(
        run_dir, manifest, records_info, end_s, unsent_after, not_sent, frame.attrs.get("metric_problems", ())
    )
    warnings.extend(late)
    frames_mod.harmonise(
        [frame, phase_stats, function_stats, *monitors.values()], frames_mod.run_attrs(run_dir, manifest)
    )
    return Run(
        path=run_dir,
        manifest=manifest,
        invocations=frame,
        phase_stats=phase_stats,
        function_stats=function_stats,
        monitors=monitors,
        hosts=hosts,
        specs=specs,
        phases=phase_list,
        records_info={**records_info, "monitors": monitors_info},
        warnings=warnings,
        end_s=end_s,
        warmup_s=warmup_s,
    )


def monitor_summary(run: Run) -> dict[str, dict[str, Any]]:
    """Per monitor, of the machine that ran faasprof (each remote host's: ``hosts_mod.summary``):
    rows, columns and the mean of every numeric column (all rows, steady phases)."""
    local = local_host_label(run.manifest)
    out = {}
    for name, frame in run.monitors.items():
        rows = hosts_mod.rows_of(frame, local, local)
        if len(rows) or not run.hosts:
            out[name] = hosts_mod.monitor_stats(rows, run.phases)
    return out


def _phase(phase: dict) -> Phase:
    """A phase of ``stats.phases`` as the summary holds it (its keys in the same order)."""
    out: Phase = {
        "phase": phase["phase"],
        "start_s": phase["start_s"],
        "end_s": phase["end_s"],
        "steady_start_s": phase["steady_start_s"],
        "instances": list(phase["instances"]),
    }
    if "planned_end_s" in phase:
        out["planned_end_s"] = phase["planned_end_s"]
    if phase.get("in_warmup"):
        out["in_warmup"] = True
    return out


def build_summary(run: Run, figures: outofcore.FrameFigures | None = None) -> Summary:
    """``summary.json`` of a loaded run (without ``outputs`` and ``io``, which ``analyze_run`` adds);
    ``figures``: the frame's figures when computed out of core (else from ``run.invocations``)."""
    figures = figures or frame_figures(run)
    instances: list[Instance] = []
    for spec in run.specs:
        rows = (
            run.phase_stats[run.phase_stats["instance"] == spec["instance"]] if len(run.phase_stats) else pd.DataFrame()
        )
        phases = []
        for record in rows.to_dict("records"):
            record = {k: v for k, v in record.items() if k not in ("instance", "function", "rate_rps")}
            record["mode_evidence"] = mode_evidence(record)
            phases.append(record)
        instances.append(
            {
                "instance": spec["instance"],
                "function": spec["function"],
                "distribution": spec["distribution"],
                "rate_rps": spec["rate_rps"],
                "window_s": list(spec["window_s"]),
                "planned": spec["planned"],
                "blocking": spec["blocking"],
                "phases": phases,
            }
        )
    summary: Summary = {
        "format_version": SUMMARY_FORMAT_VERSION,
        "generated_by": {"faasprof": __version__},
        "run": {
            "dir": run.path.name,
            "test_name": run.test_name,
            "status": run.manifest.status,
            "created_utc": run.manifest.created_utc,
            "manifest_counts": run.manifest.counts or None,
            "planned": figures.planned,
            "outcomes": figures.outcomes,
            "final_outcomes": figures.final_outcomes,
            "end_s": run.end_s,
            "not_sent_interrupted": figures.not_sent_interrupted,
            "warmup": {
                "warmup_s": run.warmup_s,
                "invocations": figures.warmup_invocations,
                "rule": stats_mod.WARMUP_RULE,
            },
            "phases": [_phase(p) for p in run.phases],
            "pushback": figures.pushback,
        },
        "failures": figures.failures,
        "records": run.records_info,
        "start_classes": {
            "pause_grace_ms": run.records_info.get("pause_grace_ms"),
            "rule": "a record's containerState annotation when present (localwhisk); else cold: initTime present; resumed: no initTime and every earlier activation of the action ended >= pause grace before this start, or its waitTime >= 30 ms (an unpause) and it did not queue (every earlier activation of the action had ended, or the one before waited < 30 ms); warm: otherwise; unknown: no record",
            "records_with_container_state": run.records_info.get("with_container_state", 0),
            "counts": figures.start_classes,
            "warmup_left_out": figures.warmup_invocations,
        },
        "mode_rule": stats_mod.MODE_RULE,
        "tail_ratios": figures.tail_ratios,
        "chains": chains_mod.chain_summary(run),
        "achieved_rule": stats_mod.ACHIEVED_RULE,
        "instances": instances,
        "functions": run.function_stats.to_dict("records"),
        "cost_gb_s": figures.cost_gb_s,
        "monitors": monitor_summary(run),
        "hosts": hosts_mod.summary(run),
        "warnings": run.warnings,
    }
    fidelity = trace_fidelity.fidelity_summary(run)
    if fidelity is not None:
        summary["trace_fidelity"] = fidelity
    # The host's noise while the run went (issue 43), as the run measured it; None when it did not.
    summary["host_noise"] = run.manifest.extra.get("host_noise")
    cleaned: Summary = stats_mod.clean(summary)  # the same keys; NaN and numpy scalars made JSON's
    return cleaned


def _write_parquet(frame: pd.DataFrame, path: Path) -> None:
    frames_mod.write_parquet(frame, path, kind=path.stem)


def _fetch_missing(
    run_dir: Path,
    manifest: rundir.Manifest,
    connection,
    invocations: pd.DataFrame | None,
    retry_delays_s: Sequence[float] | None,
    progress: Callable[[str], None] | None,
) -> tuple[dict | None, Run | None, pd.DataFrame | None]:
    """The run's records fetched when none are saved, or those missing from the saved file asked
    for again; returns the fetch report (None: nothing asked), the run when it was loaded and is
    still current, and the invocation frame."""
    if not rundir.has_saved_records(run_dir):
        if invocations is None:
            invocations = frames_mod.read_invocations_frame(run_dir, manifest)
        if not _run_ids(invocations):
            return None, None, invocations
        return (
            fetch_run_records(
                run_dir, manifest, invocations, connection, retry_delays_s=retry_delays_s, progress=progress
            ),
            None,
            invocations,
        )
    run = load_run(run_dir, manifest=manifest, invocations=invocations)
    if not run.records_info["missing"] or rundir.raw_records_gone(run_dir):
        return None, run, invocations
    frame = run.invocations
    missing = frame["activation_id"].to_numpy(dtype=object)[
        (frame["has_activation_id"] & ~frame["has_record"]).to_numpy()
    ]
    if progress:
        progress(
            f"{len(missing)} records missing from {rundir.ACTIVATIONS}; asking {_platform_source(manifest, connection)} again"
        )
    report = fetch_run_records(
        run_dir, manifest, frame, connection, retry_delays_s=retry_delays_s, progress=progress, only_ids=list(missing)
    )
    return report, None, invocations


def _platform_source(manifest: rundir.Manifest, connection) -> str:
    """Where the records were asked for: the connection's API host, else the platforms' endpoints."""
    apihost = getattr(connection, "apihost", None)
    return apihost or ", ".join(cls.endpoint for cls in record_platforms(manifest, connection))


def analyze_run(
    run_dir: str | os.PathLike,
    connection=None,
    *,
    fetch: bool = True,
    plots: bool = True,
    retry_delays_s: Sequence[float] | None = None,
    progress: Callable[[str], None] | None = None,
    invocations: pd.DataFrame | None = None,
) -> Summary:
    """Analyze a run directory and write ``analysis/``; returns the summary dict.

    ``invocations`` is the run's invocation frame when the caller has read it already.

    The run's records are fetched first, through the platform registry by the endpoints of the
    manifest's instances (``record_platforms``), when there is no ``activations.jsonl`` yet, and
    records still missing from an existing one are asked for again and appended. A platform
    reached through a connection (OpenWhisk: ``connection``, a
    ``faasprof.platforms.openwhisk.connection.Connection``) is asked only when one is given;
    otherwise the analysis uses what the run directory holds and says what is missing.
    ``retry_delays_s``: the delays before asking again for ids still missing (None: the platform's own).
    """
    run_dir = Path(run_dir)
    outofcore.rows_threshold()  # a bad setting is refused in one line before any work
    engine.EngineSettings.from_environment()
    manifest = rundir.read_manifest(run_dir)
    fetch_report, run = None, None
    if fetch and record_platforms(manifest, connection):
        fetch_report, run, invocations = _fetch_missing(
            run_dir, manifest, connection, invocations, retry_delays_s, progress
        )
    out = run_dir / rundir.ANALYSIS
    rows = None if invocations is None else len(invocations)
    big = run is None and outofcore.out_of_core(run_dir, manifest, rows)
    figures: outofcore.FrameFigures | None = None
    if big:
        _fresh(out)
        run, figures = _load_out_of_core(run_dir, manifest, out, plots, progress)
    elif run is None:
        if progress:
            progress(f"loading {run_dir}")
        run = load_run(run_dir, manifest=manifest, invocations=invocations)
    if fetch_report is not None:
        run.records_info["source"] = f"platform ({_platform_source(manifest, connection)})"
        run.records_info["fetch"] = fetch_report
    if not big:
        _fresh(out)
    if progress:
        progress(
            f"{figures.planned if figures else len(run.invocations):,} invocations, {run.records_info.get('found', 0):,} records; writing {out}"
        )
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="faasprof-parquet") as pool:
        # The invocation frame, by far the largest file, is converted and compressed by Arrow
        # (mostly without the GIL) on another core while the summary and the plots are made; the
        # frame is only read meanwhile. Out of core it was written first, by the row builder.
        invocations_written = None if big else pool.submit(_write_parquet, run.invocations, out / "invocations.parquet")
        _write_parquet(run.phase_stats, out / "phase_stats.parquet")
        _write_parquet(run.function_stats, out / "function_stats.parquet")
        for name, frame in run.monitors.items():
            _write_parquet(frame, out / f"monitor_{rundir.safe_name(name)}.parquet")
        summary = build_summary(run, figures)
        if io_breakdown.applies(manifest) and rundir.has_records(
            run_dir
        ):  # io-* runs: breakdown, bandwidth, cost per batch
            summary["io"] = io_breakdown.summarise(run_dir, out_dir=out)
        plot_files: list[str] = []
        if plots:
            plot_files = plots_mod.write_plots(run, out / "plots")
            plot_files += trace_fidelity.write_plot(summary, out / "plots")
        if invocations_written is not None:
            invocations_written.result()  # its error, if any, is this call's
    summary["outputs"] = {
        "frames": sorted(p.name for p in out.glob("*.parquet")),
        "plots": [f"plots/{name}" for name in plot_files],
        "report": "report.html",
    }
    rundir.write_json_atomic(out / SUMMARY, summary)
    report_mod.write_report(run, summary, out / "report.html")
    return summary


def _fresh(out: Path) -> None:
    """``analysis/`` emptied: derived data, rebuilt from scratch so nothing stale survives."""
    if out.exists():
        shutil.rmtree(out)
    rundir.make_private_dir(out)


def build_rows(run_dir: Path, manifest: rundir.Manifest, out_path: Path) -> outofcore.RowsBuilt:
    """Write the run's invocation frame (``frames``' columns, with ``phase``, ``steady`` and
    ``warmup``) to ``out_path`` as Parquet, out of core (``rows_sql``: DuckDB over the log's and
    the records' columnar copies, the same file ``load_run``'s frame gives); what the records'
    join found and warned of."""
    connection = engine.connect()
    try:
        info = rows_sql.write_invocation_rows(run_dir, manifest, out_path, connection)
    finally:
        connection.close()
    return outofcore.RowsBuilt(
        records_info=info.records_info,
        warnings=list(info.records_warnings),
        metric_problems=list(info.attrs.get("metric_problems", ())),
        host_attribution=info.attrs.get("host_attribution"),
    )


def _load_out_of_core(
    run_dir: Path,
    manifest: rundir.Manifest,
    out: Path,
    plots: bool,
    progress: Callable[[str], None] | None,
) -> tuple[Run, outofcore.FrameFigures]:
    """The run analysed out of core (``outofcore``): its rows written to ``analysis/`` first, then
    every figure by the engine over that file; the ``Run`` holds the tables and, as its
    invocation frame, only the rows a chain or a trace run's figures read (else none: the plots draw
    ``ooc_plots``' data)."""
    path = out / "invocations.parquet"
    settings = engine.EngineSettings.from_environment()
    if progress:
        progress(f"out of core ({outofcore.ROWS_ENV}): writing {path} (engine memory {settings.memory_limit})")
    built = build_rows(run_dir, manifest, path)
    connection = engine.connect(settings)
    try:
        frame = outofcore.source(path)
        facts = outofcore.run_facts(connection, frame, manifest)
        warmup_s = stats_mod.run_warmup_s(manifest)
        phase_list = stats_mod.phases(facts.specs, facts.duration_s, facts.end_s, warmup_s)
        grace_ms, _ = frames_mod.pause_grace_ms(manifest)
        phase_stats, function_stats, stability = ooc_groups.tables(
            connection,
            frame,
            facts.columns,
            facts.specs,
            phase_list,
            stats_mod.latency_references(manifest),
            facts.end_s,
            grace_ms,
            warmup_s,
            phase_row,
        )
        figures = outofcore.frame_figures(connection, frame, manifest, facts.end_s, warmup_s)
        columns, needed = outofcore.row_columns(run_dir, manifest)
        rows = outofcore.slim_frame(connection, frame, columns, "true" if needed else "false")
        inputs = (
            ooc_plots.plot_inputs(connection, frame, facts.specs, phase_stats.to_dict("records")) if plots else None
        )
    finally:
        connection.close()
    records_info = built.records_info
    not_sent = figures.outcomes["not_sent"] - figures.not_sent_interrupted
    monitors, monitors_info, late = _late_warnings(
        run_dir, manifest, records_info, facts.end_s, figures.not_sent_interrupted, not_sent, built.metric_problems
    )
    if built.host_attribution:
        rows.attrs["host_attribution"] = built.host_attribution
    frames_mod.harmonise(
        [rows, phase_stats, function_stats, *monitors.values()], frames_mod.run_attrs(run_dir, manifest)
    )
    run = Run(
        path=run_dir,
        manifest=manifest,
        invocations=rows,
        phase_stats=phase_stats,
        function_stats=function_stats,
        monitors=monitors,
        hosts=run_hosts(run_dir, manifest),
        specs=facts.specs,
        phases=phase_list,
        records_info={**records_info, "monitors": monitors_info},
        warnings=[*built.warnings, *stability, *late],
        end_s=facts.end_s,
        warmup_s=warmup_s,
        engine=f"out of core: DuckDB over {rundir.ANALYSIS}/invocations.parquet, memory limit {settings.memory_limit}",
        plot_inputs=inputs,
    )
    return run, figures


def load_summary(run_dir: str | os.PathLike) -> Summary:
    """A run's ``analysis/summary.json``, version-checked."""
    path = Path(run_dir) / rundir.ANALYSIS / SUMMARY
    try:
        summary = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FormatError(f"{path}: missing; run faasprof analyze {run_dir} first") from None
    except json.JSONDecodeError as error:
        raise FormatError(f"{path}: not valid JSON ({error.msg}); re-run faasprof analyze {run_dir}") from None
    version = summary.get("format_version") if isinstance(summary, dict) else None
    if version not in SUPPORTED_SUMMARY_VERSIONS:
        raise FormatError(
            f"{path}: summary format_version {version!r} is not supported by faasprof {__version__}; re-run faasprof analyze {run_dir} or upgrade faasprof"
        )
    return summary
