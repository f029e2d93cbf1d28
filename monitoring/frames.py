"""A finished run's monitors as pandas frames on the run clock.

``load_run_monitors(run_dir, manifest)`` parses each ``monitors/<name>/`` raw output with the pure
parsers and adds ``t_s``: seconds since the run's zero, at the **end** of each sample's interval
(perf timestamps, resctrl/cgroup reads and pqos samples all mark the end of what they measured).

Alignment: a monitor's own times count from its start; ``meta.json`` holds the monotonic and
wall-clock times taken just before the tool started. The offset to the run zero is
``monotonic_ns_at_start - clock.monotonic_zero_ns`` when both are known (same boot: immune to
wall-clock steps), else ``wall_ns_at_start - clock.wall_ns_at_zero``. blktrace counts from its
first event; a marker message written at a known time ties it to the run clock when present.

A monitor that failed, or whose raw output is missing or empty, is left out of the result (its
failure is in the manifest); a frame is never invented.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from faasprof.errors import FormatError
from monitoring.derived import add_bandwidth_share
from monitoring.derived import add_perf_metrics
from monitoring.parsers.blkparse import blk_intervals
from monitoring.parsers.cgroups import parse_cgroup_samples
from monitoring.parsers.perf import parse_perf_stat, perf_wide
from monitoring.parsers.pqos import parse_pqos_csv
from monitoring.parsers.resctrl import parse_resctrl_samples


def _meta(directory: Path, manifest: dict, name: str) -> dict:
    path = directory / "meta.json"
    meta: dict = {}
    if path.exists():
        try:
            meta = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as error:
            raise FormatError(f"{path}: not valid JSON ({error.msg}); the collector was interrupted while writing it") from None
    monitors = manifest.get("monitors") or {}
    if isinstance(monitors, list):  # the invoker records a list of describe() dicts
        recorded = next((m for m in monitors if isinstance(m, dict) and m.get("name") == name), {})
    else:
        recorded = monitors.get(name) or {}
    return {**recorded, **meta}


def start_offset_s(meta: dict, clock: dict) -> float | None:
    """Seconds from the run's zero to the monitor's start, or None without anchors."""
    mono, zero = meta.get("monotonic_ns_at_start"), clock.get("monotonic_zero_ns")
    if mono is not None and zero is not None:
        return (int(mono) - int(zero)) / 1e9
    wall, wall_zero = meta.get("wall_ns_at_start"), clock.get("wall_ns_at_zero")
    if wall is not None and wall_zero is not None:
        return (int(wall) - int(wall_zero)) / 1e9
    return None


def _read(path: Path) -> str | None:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    return text if text.strip() else None


def _peak_mbps(manifest: dict) -> float | None:
    """The stated memory-bandwidth peak (for ``mem_bw_share``): ``monitoring.rdt.peak_mbps`` of the
    workload (kept in the rdt monitor's settings) wins over ``host.mem_peak_bw_mbps``."""
    host = manifest.get("host") or {}
    for key in ("mem_peak_bw_mbps", "memory_peak_bw_mbps"):
        if host.get(key):
            return float(host[key])
    return None


def load_perf(directory: Path, meta: dict, offset_s: float):
    text = _read(directory / "perf_stat.csv")
    if text is None:
        return None
    long = parse_perf_stat(text, sep=(meta.get("layout") or {}).get("sep", ","))
    if long.empty:
        return None
    wide = add_perf_metrics(perf_wide(long))
    wide.insert(0, "t_s", offset_s + wide["time_s"])
    return wide


def load_rdt(directory: Path, meta: dict, offset_s: float, peak_mbps: float | None):
    frame = None
    text = _read(directory / "resctrl_samples.csv")
    if text is not None:
        frame = parse_resctrl_samples(text)
    else:
        text = _read(directory / "pqos.csv")
        if text is not None:
            interval_ms = meta.get("interval_ms") or (meta.get("settings") or {}).get("interval_ms") or 100
            frame = parse_pqos_csv(text, interval_s=float(interval_ms) / 1000.0)
    if frame is None or frame.empty:
        return None
    frame = add_bandwidth_share(frame, peak_mbps)
    frame.insert(0, "t_s", offset_s + frame["elapsed_s"])
    return frame


def load_blktrace(directory: Path, meta: dict, offset_s: float, interval_s: float = 1.0):
    import pandas as pd

    frames = []
    marker = meta.get("marker")
    marker_offset = 0.0
    if meta.get("marker_monotonic_ns") and meta.get("monotonic_ns_at_start"):
        marker_offset = (int(meta["marker_monotonic_ns"]) - int(meta["monotonic_ns_at_start"])) / 1e9
    for name in meta.get("outputs") or sorted(p.name for p in directory.glob("*.blkparse.txt")):
        text = _read(directory / name)
        if text is None:
            continue
        frame = blk_intervals(text, interval_s, marker=marker)
        if frame.empty:
            continue
        # With the marker, trace time 0 is the marker; without, the first event (an estimate).
        base = offset_s + (marker_offset if frame.attrs.get("marker_s") is not None else 0.0)
        frame.insert(0, "t_s", base + frame["elapsed_s"] + interval_s)
        frame["aligned_by"] = "marker" if frame.attrs.get("marker_s") is not None else "first_event"
        frames.append(frame)
    if not frames:
        return None
    return pd.concat(frames, ignore_index=True)


def load_cgroups(directory: Path, meta: dict, offset_s: float):
    text = _read(directory / "samples.csv")
    if text is None:
        return None
    frame = parse_cgroup_samples(text)
    if frame.empty:
        return None
    frame.insert(0, "t_s", offset_s + frame["elapsed_s"])
    return frame


def load_run_monitors(run_dir: str | os.PathLike, manifest: dict) -> dict:
    """``{monitor name: frame}`` for every monitor with parsable raw output (see module doc)."""
    run_dir = Path(run_dir)
    clock = manifest.get("clock") or {}
    base = run_dir / "monitors"
    result = {}
    if not base.is_dir():
        return result
    peak = _peak_mbps(manifest)
    for directory in sorted(p for p in base.iterdir() if p.is_dir()):
        name = directory.name
        meta = _meta(directory, manifest, name)
        offset = start_offset_s(meta, clock)
        if offset is None:
            continue  # never started (failed check): nothing to align
        if name == "perf":
            frame = load_perf(directory, meta, offset)
        elif name == "rdt":
            stated = (meta.get("settings") or {}).get("peak_mbps") or peak
            frame = load_rdt(directory, meta, offset, stated)
        elif name == "blktrace":
            frame = load_blktrace(directory, meta, offset)
        elif name == "cgroups":
            frame = load_cgroups(directory, meta, offset)
        else:
            continue  # runtime_script and others: no parser
        if frame is not None:
            result[name] = frame
    return result
