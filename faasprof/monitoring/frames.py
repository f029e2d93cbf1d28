"""A finished run's monitors as pandas frames on the run clock, one frame per collector with a
``host`` column for where it measured.

``load_run_monitors(run_dir, manifest)`` hands each ``monitors/<name>/`` (the machine that ran
``faasprof run``) and each remote host's ``monitors/<host>/<name>/`` to its collector's frame
loader (the registry in ``faasprof.monitoring.collectors``), which parses the raw output with the
pure parsers and adds ``t_s``: seconds since the run's zero, at the **end** of each sample's
interval (perf timestamps, resctrl/cgroup reads and pqos samples all mark the end of what they
measured). The frames of one collector on several hosts are one frame; its ``host`` column (a
category) says which host each row measured: a remote host by its inventory name, the local one
by ``local_host_label`` (the manifest's ``host.hostname``, else ``local``).

Alignment: a monitor's own times count from its start; ``meta.json`` holds the monotonic and
wall-clock times taken just before the tool started. Locally, the offset to the run zero is
``monotonic_ns_at_start - clock.monotonic_zero_ns`` when both are known (same boot: immune to
wall-clock steps), else ``wall_ns_at_start - clock.wall_ns_at_zero``. A remote host's anchors are
on its own clocks: its ``wall_ns_at_start`` is placed on the run axis with the host's measured
clock offset (``faasprof.rundir.HostClock``: interpolated between the run's start and end when
both were measured), and the times the collector counted from its start are scaled by the
host's drift. blktrace counts from its first event; a marker message written at a known time ties
it to the run clock when present.

A monitor that failed, or whose raw output is missing or empty, is left out of the result (its
failure is in the manifest, or in its host's ``host.json``); a frame is never invented.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import os
from pathlib import Path

from faasprof import rundir
from faasprof.monitoring.collectors import collector_class

_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)


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


def local_host_label(manifest: rundir.Manifest) -> str:
    """The ``host`` of the rows the local machine measured: the manifest's ``host.hostname``
    (``local`` when none), marked as local when a remote host has the same name."""
    label = manifest.local_host_name
    return f"{label} (local)" if label in manifest.hosts else label


def run_end_ns(manifest: rundir.Manifest) -> int | None:
    """The run's end on the run axis (ns), where a remote host's end offset was measured: the
    manifest's ``finished_utc`` (whole seconds), else the workload's duration; None if neither."""
    finished = manifest.finished_utc
    if finished and manifest.clock.get("wall_ns_at_zero") is not None:
        try:
            when = _dt.datetime.fromisoformat(finished)
        except ValueError:
            when = None
        if when is not None and when.tzinfo is not None:
            return (when - _EPOCH) // _dt.timedelta(microseconds=1) * 1000 - manifest.wall_ns_at_zero
    duration = manifest.workload.get("duration_s")
    if isinstance(duration, (int, float)) and not isinstance(duration, bool) and duration > 0:
        return int(duration * 1e9)
    return None


def run_hosts(run_dir: str | os.PathLike, manifest: rundir.Manifest) -> dict[str, rundir.HostInfo]:
    """The remote hosts the run measured, by name: each host directory's ``host.json`` (its
    version checked), else the manifest's entry for a host that left no directory."""
    hosts = dict(manifest.host_infos)
    for name, directory in rundir.host_dirs(run_dir).items():
        hosts[name] = rundir.read_host_info(directory)
    return dict(sorted(hosts.items()))


def _with_host(frame, host: str):
    frame.insert(1 if "t_s" in frame.columns else 0, "host", host)
    return frame


def _load_local(run_dir: str | os.PathLike, manifest: rundir.Manifest) -> dict[str, list]:
    label = local_host_label(manifest)
    result: dict[str, list] = {}
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
            result.setdefault(name, []).append(_with_host(frame, label))
    return result


def _load_remote(
    run_dir: str | os.PathLike, manifest: rundir.Manifest, info: rundir.HostInfo, end_ns: int | None
) -> dict[str, list]:
    """One remote host's collector frames, placed on the run axis by its clock offset."""
    # A collector reading host facts (RDT's peak bandwidth) reads that host's, never ours.
    facts = {"hostname": info.host, "kernel": info.kernel, "cpu_model": info.cpu_model, "cpus": info.cpus}
    remote = dataclasses.replace(manifest, host=facts)  # a copy, only read
    rate = info.clock.rate(end_ns)
    result: dict[str, list] = {}
    if not info.clock.placeable:
        return result  # lost before its clock was measured: nothing of it can be put on the run axis
    for name, directory in rundir.host_monitor_dirs(run_dir, info.host).items():
        meta = {**info.collector_description(name), **rundir.read_monitor_meta(directory)}
        cls = collector_class(name)
        if cls is None or meta.get("wall_ns_at_start") is None:
            continue  # no parser, or never started there
        offset = info.clock.run_ns(int(meta["wall_ns_at_start"]), manifest.wall_ns_at_zero, end_ns) / 1e9
        frame = cls.load_frame(directory, meta, offset, remote)
        if frame is None:
            continue
        if rate != 1.0:  # what the host counted from the collector's start, at its clock's pace
            frame["t_s"] = offset + (frame["t_s"] - offset) * rate
        result.setdefault(name, []).append(_with_host(frame, info.host))
    return result


def load_run_monitors(run_dir: str | os.PathLike, manifest: rundir.Manifest) -> dict:
    """``{monitor name: frame}`` for every monitor with parsable raw output on any host, each
    frame with its ``host`` column (see module doc). ``FormatError`` for a host's ``host.json``
    of an unknown version or damaged."""
    import pandas as pd  # only when frames are loaded: collectors start without pandas

    parts = _load_local(run_dir, manifest)
    hosts = run_hosts(run_dir, manifest)
    end_ns = run_end_ns(manifest)
    for info in hosts.values():
        for name, frames in _load_remote(run_dir, manifest, info, end_ns).items():
            parts.setdefault(name, []).extend(frames)
    labels = [local_host_label(manifest), *hosts]
    result = {}
    for name, frames in parts.items():
        frame = frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)
        frame["host"] = pd.Categorical(frame["host"], categories=[h for h in labels if (frame["host"] == h).any()])
        if len(frames) > 1:  # concat keeps attrs only when all agree; perf's units differ by host
            units = {key: unit for part in frames for key, unit in (part.attrs.get("units") or {}).items()}
            frame.attrs = {**frames[0].attrs, **({"units": units} if units else {})}
        result[name] = frame
    return result
