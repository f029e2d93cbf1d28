"""Stored capacities: the result of ``faasprof capacity`` kept per host, platform, function and memory.

A workload rate given as ``{"capacity_fraction": F}`` is F times the capacity of its function
measured on *this* host and platform (the paper's experiments are defined relative to capacity,
so they carry over to any machine). ``faasprof capacity`` records every result here;
``faasprof run`` resolves fractions from here, measuring first what is missing
(``resolve_workload``).

The store is one JSON file, ``~/.local/share/faasprof/capacity.json`` (``$FAASPROF_CAPACITY_STORE``
overrides the path), format version ``STORE_FORMAT_VERSION``::

    {"format_version": 1, "entries": {"<key>": {"capacity_rps": 94.2, "lower_bound": false,
                                                "latency_reference": {...}, "result_file": ..., ...}}}

The key names the host (hostname, CPU model, logical CPUs), the platform (the embedded localwhisk
and its isolation, or the API host), the function and its memory limit: a capacity measured
elsewhere is never used. ``lower_bound`` (absent in entries written before it: false) marks a
search that kept up at every rate it tried, so ``capacity_rps`` is the least the function serves;
whoever uses the value says so. ``latency_reference`` is the search's lowest-rate latency, which a
run whose rates are fractions of the capacity carries for the analyzer's queueing rule.
"""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path
from typing import Callable

from faasprof import rundir
from faasprof.errors import FormatError
from faasprof.progress import QUIET, Progress

STORE_FORMAT_VERSION = 1
STORE_ENV = "FAASPROF_CAPACITY_STORE"
# About how long capacity.SEARCH_DEFAULTS take on 2 cores (8 probes of 3 s, their analyses and pauses).
MEASURE_S = 30.0


def store_path() -> Path:
    return Path(os.environ.get(STORE_ENV) or Path.home() / ".local" / "share" / "faasprof" / "capacity.json")


def host_identity() -> str:
    """hostname, CPU model and logical CPUs of this machine (what a capacity depends on)."""
    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            if line.lower().startswith(("model name", "hardware", "cpu model")):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{socket.gethostname()} | {model} | {os.cpu_count()} CPUs"


def platform_identity(connection, local_settings: dict | None) -> str:
    if connection is not None:
        return f"openwhisk {connection.apihost}"
    return f"localwhisk isolation={(local_settings or {}).get('isolation') or 'auto'}"


def key(host: str, platform: str, function: str, memory_mb: int | None) -> str:
    return f"{host} || {platform} || {function} || {memory_mb if memory_mb is not None else 'default'} MB"


def _read(path: Path) -> dict:
    if not path.exists():
        return {"format_version": STORE_FORMAT_VERSION, "entries": {}}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise FormatError(f"{path}: not valid JSON ({error.msg}); delete it (capacities are measured again)") from None
    if not isinstance(data, dict) or data.get("format_version") != STORE_FORMAT_VERSION or not isinstance(data.get("entries"), dict):
        raise FormatError(f"{path}: format_version {data.get('format_version') if isinstance(data, dict) else None!r} is not {STORE_FORMAT_VERSION}; delete it or upgrade faasprof")
    return data


def lookup(store_key: str, path: Path | None = None) -> dict | None:
    """The stored entry (``capacity_rps`` and provenance) for ``store_key``, or None."""
    entry = _read(path or store_path())["entries"].get(store_key)
    return entry if isinstance(entry, dict) and entry.get("capacity_rps") else None


def record(store_key: str, result: dict, path: Path | None = None) -> dict:
    """Keep a ``faasprof capacity`` result under ``store_key``; returns the stored entry."""
    path = path or store_path()
    data = _read(path)
    entry = {
        "capacity_rps": result.get("capacity_rps"),
        "lower_bound": bool(result.get("capacity_is_lower_bound")),
        "latency_reference": result.get("reference"),
        "bounds_rps": result.get("bounds_rps"),
        "result_file": result.get("result_file"),
        "measured_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "key": store_key,
    }
    data["entries"][store_key] = entry
    path.parent.mkdir(parents=True, exist_ok=True)
    rundir.write_json_atomic(path, data)
    return entry


def describe(function: str, entry: dict) -> str:
    """A stored capacity in words: "N/s", or "≥ N/s (a lower bound ...)" for a search that never
    found the function over-invoked."""
    if entry.get("lower_bound"):
        return (f"≥ {entry['capacity_rps']:.4g}/s, a lower bound: the search kept up at every rate it tried, so a fraction "
                f"meant to over-invoke may not; measure higher with faasprof capacity {function} --max-rate")
    return f"{entry['capacity_rps']:.4g}/s"


def resolve_workload(workload, connection, local_settings: dict | None, out_dir, measure: Callable[..., dict], progress: Progress = QUIET,
                     measure_s: float = MEASURE_S):
    """``workload`` with its capacity-fraction rates resolved from the store, measuring each
    missing capacity first with ``measure`` (``faasprof.experiments.capacity.find_capacity`` with its
    defaults, probes under ``out_dir``; ``measure_s``: about how long one takes, as the user is
    told). ``progress`` gets the progress, and an alert for each capacity that is only a lower
    bound (a fraction of it may not be what the workload meant).

    The caller passes the search: this module imports none (nor the analyzer it runs), so
    ``plan`` and ``validate`` read the store without that cost."""
    host, platform = host_identity(), platform_identity(connection, local_settings)
    capacities: dict[str, dict] = {}
    for instance in workload.needs_capacity():
        store_key = key(host, platform, instance.function, instance.memory_mb)
        known = next((c for c in capacities.values() if c["capacity_key"] == store_key), None)
        if known is not None:  # several instances of one function: looked up (or measured) once
            capacities[instance.name] = known
            continue
        entry = lookup(store_key)
        if entry is None:
            progress.say(f"no stored capacity of {instance.function} ({instance.memory_mb or 'default'} MB) on this host and platform: measuring it (about {measure_s:.0f} s)")
            result = measure(instance.function, out_dir=out_dir, memory_mb=instance.memory_mb, connection=connection, local_settings=local_settings, progress=progress)
            if not result.get("capacity_rps"):
                raise FormatError(f"capacity of {instance.function}: none found ({result.get('stopped_because')}); run faasprof capacity {instance.function} with other --start-rate/--max-rate")
            entry = record(store_key, result)
            where = f"stored in {store_path()}"
        else:
            where = f"stored {entry.get('measured_utc')}, {store_path()}"
        line = f"capacity of {instance.function}: {describe(instance.function, entry)} ({where})"
        if entry.get("lower_bound"):
            progress.alert(line)
        else:
            progress.say(line)
        capacities[instance.name] = {**_resolution(entry, store_key), "capacity_lower_bound": bool(entry.get("lower_bound"))}
        if entry.get("latency_reference"):  # the yardstick of the analyzer's queueing rule (analyzer.stats, rule 2(d))
            capacities[instance.name]["latency_reference"] = entry["latency_reference"]
    return workload.with_capacities(capacities)


def _resolution(entry: dict, store_key: str) -> dict:
    """What ``Workload.with_capacities`` takes of a stored capacity: the value and where it came from."""
    return {"capacity_rps": entry["capacity_rps"], "capacity_source": str(entry.get("result_file") or store_path()), "capacity_key": store_key}


def stored_capacities(workload, connection, local_settings: dict | None) -> dict[str, dict]:
    """The stored capacity behind each capacity-fraction rate of ``workload`` that has one on this
    host and platform, by instance name (as ``Workload.with_capacities`` takes them). Measures
    nothing and contacts nothing: ``plan`` and ``validate`` show what ``run`` would resolve."""
    host, platform = host_identity(), platform_identity(connection, local_settings)
    found = {}
    for instance in workload.needs_capacity():
        store_key = key(host, platform, instance.function, instance.memory_mb)
        entry = lookup(store_key)
        if entry is not None:
            found[instance.name] = {**_resolution(entry, store_key), "measured_utc": entry.get("measured_utc")}
    return found


def describe_fractions(workload, capacities: dict[str, dict]) -> list[str]:
    """One line per capacity-fraction rate of ``workload``: the rate the stored capacity makes it, or
    that ``run`` measures the capacity first."""
    lines = []
    for instance in workload.needs_capacity():
        memory = f" at {instance.memory_mb} MB" if instance.memory_mb is not None else ""
        what = f"instances.{instance.name}.rate: {instance.capacity_fraction:g} × capacity of {instance.function}{memory}"
        entry = capacities.get(instance.name)
        if entry is None:
            lines.append(f"{what} (not measured yet: `run` measures it first, about {MEASURE_S:.0f} s)")
        else:
            lines.append(f"{what} = {instance.capacity_fraction * entry['capacity_rps']:.4g}/s "
                         f"(capacity {entry['capacity_rps']:.4g}/s, measured {entry.get('measured_utc') or 'earlier'}, stored in {store_path()})")
    return lines
