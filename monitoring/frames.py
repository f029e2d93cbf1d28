"""A finished run's monitors as pandas frames on the run clock.

``load_run_monitors(run_dir, manifest)`` hands each ``monitors/<name>/`` to its collector's frame
loader (the registry in ``faasprof.monitoring.collectors``), which parses the raw output with the pure
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

import os
from pathlib import Path

from faasprof import rundir
from faasprof.monitoring.collectors import collector_class


def _meta(directory: Path, manifest: rundir.Manifest, name: str) -> dict:
    """What the collector wrote in ``meta.json`` over what the invoker recorded in the manifest."""
    return {**(manifest.monitors.get(name) or {}), **rundir.read_monitor_meta(directory)}


def start_offset_s(meta: dict, clock: dict) -> float | None:
    """Seconds from the run's zero to the monitor's start, or None without anchors."""
    mono, zero = meta.get("monotonic_ns_at_start"), clock.get("monotonic_zero_ns")
    if mono is not None and zero is not None:
        return (int(mono) - int(zero)) / 1e9
    wall, wall_zero = meta.get("wall_ns_at_start"), clock.get("wall_ns_at_zero")
    if wall is not None and wall_zero is not None:
        return (int(wall) - int(wall_zero)) / 1e9
    return None


def load_run_monitors(run_dir: str | os.PathLike, manifest: rundir.Manifest) -> dict:
    """``{monitor name: frame}`` for every monitor with parsable raw output (see module doc)."""
    result = {}
    for name, directory in rundir.monitor_dirs(run_dir).items():
        meta = _meta(directory, manifest, name)
        offset = start_offset_s(meta, manifest.clock)
        if offset is None:
            continue  # never started (failed check): nothing to align
        cls = collector_class(name)
        if cls is None:
            continue  # runtime_script and others: no parser
        frame = cls.load_frame(directory, meta, offset, manifest)
        if frame is not None:
            result[name] = frame
    return result
