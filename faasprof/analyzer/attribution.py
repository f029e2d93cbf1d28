"""Where each activation of a several-invoker OpenWhisk ran, from the action containers each
measured host had (``monitors/<host>/containers/``, ``faasprof.monitoring.parsers.containers``).

An activation is attributed to a host only where that is certain: among the measured hosts, exactly
one had a container that could have run it (one named for its namespace and action, or a
prewarmed one of its kind, since OpenWhisk keeps a prewarmed container's name when it takes an
action) over the activation's [start, end], and every measured host was watched throughout that
interval. Otherwise it stays ``unknown``, with why:

* ``ambiguous``: containers that could have run it on two hosts or more;
* ``none seen``: no such container on any host (an action whose name OpenWhisk's container names
  do not carry: the scheduler's pool names a package's action by the package's namespace);
* ``not watched``: a host whose watch did not cover the interval (lost, or not yet started);
* ``no record``: an activation without its record (no start and end to compare).

Clocks: OpenWhisk's invoker writes a record's start and end on the host it runs on, and Docker
dates its events on the same host: comparing them on that host's wall clock is exact, whatever its
offset to the run's clock (placing both on the run's axis with the host's offset gives the same
comparison). Hosts that were not measured are not seen: the attribution holds among the measured
hosts (the basis line says so).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from faasprof import rundir
from faasprof.monitoring.parsers.containers import (
    PREWARM,
    ContainerSpan,
    action_key,
    container_spans,
    latest_event_ns,
    prewarm_key,
)

CONTAINERS = "containers"
UNKNOWN = "unknown"
REASONS = ("ambiguous", "none seen", "not watched", "no record")


@dataclass(frozen=True)
class HostContainers:
    """One host's watch: its OpenWhisk containers and when it was watched (its wall clock, ns)."""

    host: str
    spans: list[ContainerSpan]
    watch_start_ns: int
    watch_end_ns: int


def _text(directory: Path, name: str) -> str:
    path = directory / name
    return path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""


def load_watches(run_dir: str | os.PathLike, hosts: dict[str, rundir.HostInfo]) -> dict[str, HostContainers]:
    """Each measured host's container watch that started (``meta.json``'s ``wall_ns_at_start``);
    a host lost before the watch's end is watched up to its last event."""
    result = {}
    for name in hosts:
        directory = rundir.host_monitor_dirs(run_dir, name).get(CONTAINERS)
        if directory is None:
            continue
        meta = rundir.read_monitor_meta(directory)
        start = meta.get("wall_ns_at_start")
        if not isinstance(start, int):
            continue
        events = _text(directory, "events.jsonl")
        end = meta.get("wall_ns_at_end")
        if not isinstance(end, int):
            end = max(start, latest_event_ns(events) or start)
        spans = container_spans(
            events, _text(directory, "ps_start.jsonl"), _text(directory, "ps_end.jsonl"), start, end
        )
        result[name] = HostContainers(name, spans, start, end)
    return result


def action_columns(records: pd.DataFrame, position: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each invocation (``position``: its record's row, −1 for none), the container-name key of
    its action and of a prewarmed container of its kind (None without a record; the prewarm key
    None without a kind: any prewarmed container could have taken it)."""
    keys = np.full(len(position), None, dtype=object)
    prewarm = np.full(len(position), None, dtype=object)
    has = position >= 0
    if not len(records) or not has.any():
        return keys, prewarm
    pairs = pd.MultiIndex.from_arrays([records["namespace"].astype(str), records["name"].astype(str)])
    codes, unique = pd.factorize(pairs)
    record_keys = np.array([action_key(namespace, name) for namespace, name in unique], dtype=object)[codes]
    kinds = records["kind"]
    record_prewarm = np.array([prewarm_key(str(k)) if isinstance(k, str) and k else None for k in kinds], dtype=object)
    keys[has] = record_keys[position[has]]
    prewarm[has] = record_prewarm[position[has]]
    return keys, prewarm


def _overlapping(spans: list[ContainerSpan], start_ns: np.ndarray, end_ns: np.ndarray) -> np.ndarray:
    """Whether any of ``spans`` overlaps each [start, end]."""
    if not spans:
        return np.zeros(len(start_ns), dtype=bool)
    begins = np.array([s.begin_wall_ns for s in spans], dtype=np.int64)
    order = np.argsort(begins, kind="stable")
    ends_so_far = np.maximum.accumulate(np.array([s.end_wall_ns for s in spans], dtype=np.int64)[order])
    last = np.searchsorted(begins[order], end_ns, side="right") - 1
    return (last >= 0) & (ends_so_far[np.maximum(last, 0)] >= start_ns)


def _possible(watch: HostContainers, keys, prewarm, start_ns, end_ns) -> np.ndarray:
    """Whether ``watch``'s host had a container that could have run each row."""
    result = np.zeros(len(keys), dtype=bool)
    by_key: dict[str, list[ContainerSpan]] = {}
    for span in watch.spans:
        by_key.setdefault(span.key, []).append(span)
    any_prewarm = [s for s in watch.spans if s.key.startswith(PREWARM + "_")]
    for key in {k for k in keys if k is not None}:
        rows = keys == key
        result[rows] |= _overlapping(by_key.get(key, []), start_ns[rows], end_ns[rows])
    for key in {k for k in prewarm if k is not None}:
        rows = prewarm == key
        result[rows] |= _overlapping(by_key.get(key, []), start_ns[rows], end_ns[rows])
    rows = (prewarm == None) & (keys != None)  # noqa: E711 (element-wise)
    result[rows] |= _overlapping(any_prewarm, start_ns[rows], end_ns[rows])
    return result


def attribute(
    ran: np.ndarray, keys: np.ndarray, prewarm: np.ndarray, start_s: np.ndarray, end_s: np.ndarray,
    watches: dict[str, HostContainers], wall_ns_at_zero: int,
) -> tuple[pd.Categorical, dict]:  # fmt: skip
    """The ``host`` column (the module docstring's rule) and its counts: ``{"attributed": {host:
    n}, "unknown": {reason: n}}`` over the rows whose activation ran (``ran``). ``start_s`` and
    ``end_s``: the records' start and end less the run's wall-clock zero (NaN without a record)."""
    names = list(watches)
    record = ran & (keys != None) & np.isfinite(start_s) & np.isfinite(end_s)  # noqa: E711 (element-wise)
    start_ns = np.where(record, np.nan_to_num(start_s) * 1e9, 0).astype(np.int64) + wall_ns_at_zero
    end_ns = np.where(record, np.nan_to_num(end_s) * 1e9, 0).astype(np.int64) + wall_ns_at_zero
    possible = np.zeros((len(names), len(ran)), dtype=bool)
    watched = np.ones(len(ran), dtype=bool)
    for i, name in enumerate(names):
        watch = watches[name]
        possible[i] = _possible(watch, keys, prewarm, start_ns, end_ns) & record
        watched &= (start_ns >= watch.watch_start_ns) & (end_ns <= watch.watch_end_ns)
    seen = possible.sum(axis=0)
    unknown = len(names)
    codes = np.full(len(ran), unknown, dtype=np.int16)
    certain = record & (seen == 1) & watched
    codes[certain] = possible[:, certain].argmax(axis=0)
    reasons = {
        "ambiguous": int((record & (seen >= 2)).sum()),
        "none seen": int((record & (seen == 0) & watched).sum()),
        "not watched": int((record & (seen <= 1) & ~watched).sum()),
        "no record": int((ran & ~record).sum()),
    }
    attributed = {name: int((codes[ran] == i).sum()) for i, name in enumerate(names)}
    column = pd.Categorical.from_codes(codes, categories=[*names, UNKNOWN])
    return column, {"attributed": attributed, "unknown": {k: v for k, v in reasons.items() if v}}
