"""The hosts of a run: the machine that ran ``faasprof run`` and the remote hosts it measured.

A run that measured other hosts (``monitors/<host>/``, ``faasprof.rundir.hosts``) has every
monitor frame's rows labelled by ``host``; this module says, for the analysis:

* where each activation ran (``activation_host``): the invocation frame's ``host`` column holds
  it where the platform says so, else ``unknown``, never a guess. The basis is one line that the
  summary and the report repeat:

  - a native run, an embedded localwhisk, or a localwhisk whose API is on this machine
    (loopback): its sandboxes run where its server does, the local host;
  - a localwhisk whose API host is the address of one measured host: that host;
  - the OpenWhisk standalone of ``faasprof local start`` (connection source ``local``): its
    invoker runs in its JVM on this machine;
  - another OpenWhisk with exactly one measured invoker host: that host (OpenWhisk's records do
    not name their invoker; with one invoker there is no other place it can have run). A host is
    an invoker host when the inventory group it was measured from is an invokers' one: the
    ``group`` its entry names, else the one the workload's ``monitoring.hosts`` names, else the
    default (``openwhisk_invokers``);
  - anything else: ``unknown``; but an OpenWhisk whose measured hosts watched their action
    containers (``monitors/<host>/containers/``) has each activation attributed on its own, to the
    one host whose containers could have run it, or ``unknown`` with why (``attribution``):
    ``containers_plan`` and ``apply_containers``, the counts in the summary and the report.

  Rows without an activation (never sent, refused before one existed) are ``unknown`` too.

* what each remote host was: its facts, its clock offset at the start and the end with their
  uncertainties, ``ok`` or ``lost`` (when, on the run axis, and why): ``summary`` and
  ``report_view``; and the per-host monitor statistics (``monitor_stats`` over its rows).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import numpy as np
import pandas as pd

from faasprof import rundir
from faasprof.addresses import is_loopback
from faasprof.analyzer import attribution
from faasprof.analyzer.markup import ms, seconds
from faasprof.analyzer.templating import Table
from faasprof.monitoring.frames import local_host_label, run_hosts

UNKNOWN = "unknown"
DEFAULT_GROUP = "openwhisk_invokers"  # the inventory group a run measures unless told another


def _address(apihost: Any) -> str | None:
    if not isinstance(apihost, str) or not apihost:
        return None
    return urlsplit(apihost if "//" in apihost else f"https://{apihost}").hostname


def _workload_group(manifest: rundir.Manifest) -> str:
    """The inventory group the workload's ``monitoring.hosts`` named (resolved, else as given),
    else the default one."""
    for workload in (manifest.workload, manifest.workload.get("as_given")):
        monitoring = workload.get("monitoring") if isinstance(workload, dict) else None
        hosts = monitoring.get("hosts") if isinstance(monitoring, dict) else None
        if isinstance(hosts, dict) and isinstance(hosts.get("group"), str):
            return hosts["group"]
    return DEFAULT_GROUP


def _invoker_host(info: rundir.HostInfo, group: str) -> bool:
    """Whether a measured host is one of OpenWhisk's invokers: by the group its entry names, else
    the run's (``_workload_group``)."""
    named = info.data.get("group")
    return "invoker" in (named if isinstance(named, str) else group)


def activation_host(manifest: rundir.Manifest, hosts: dict[str, rundir.HostInfo]) -> tuple[str, str]:
    """(the host every activation of the run ran on, or ``unknown``; the one-line basis)."""
    local = local_host_label(manifest)
    if manifest.native_run:
        return local, "a native run: its workers run on the machine that ran faasprof"
    platform = manifest.platform
    kind, address = platform.get("kind"), _address(platform.get("apihost"))
    if kind == "localwhisk":
        if platform.get("embedded") or address is not None and is_loopback(address):
            return local, "localwhisk runs its sandboxes beside its server, on the machine that ran faasprof"
        named = [name for name, info in hosts.items() if address is not None and info.address == address]
        if len(named) == 1:
            return named[0], f"localwhisk's API host {address} is measured host {named[0]}, where it runs its sandboxes"
        return UNKNOWN, f"localwhisk at {address}, a machine that was not measured"
    if kind == "openwhisk":
        if platform.get("source") == "local":
            return (
                local,
                "the OpenWhisk standalone of faasprof local start: its invoker runs in its JVM on this machine",
            )
        group = _workload_group(manifest)
        invokers = [name for name, info in hosts.items() if _invoker_host(info, group)]
        if len(invokers) == 1:
            return invokers[0], f"OpenWhisk with one measured invoker host, {invokers[0]}"
        return UNKNOWN, (
            f"OpenWhisk with {len(invokers)} measured invoker hosts: its records do not say which invoker ran an activation"
            if invokers
            else "OpenWhisk whose invoker hosts were not measured: its records do not say where an activation ran"
        )
    return UNKNOWN, f"platform {kind or 'not recorded'}: it does not say where an activation ran"


BY_CONTAINERS = "by container"
CONTAINER_BASIS = (
    "OpenWhisk with several measured invoker hosts: each activation attributed to the one measured host "
    "whose containers of its action (or prewarmed ones of its kind) existed over its start to end, else unknown"
)


def containers_plan(run_dir, manifest: rundir.Manifest, records: pd.DataFrame, position: np.ndarray):
    """What ``apply_containers`` needs (the hosts' watches, each invocation's action keys), or
    None where the platform already says where every activation ran, or no host watched its
    containers."""
    if manifest.platform.get("kind") != "openwhisk" or manifest.native_run:
        return None
    if activation_host(manifest, manifest.host_infos)[0] != UNKNOWN:
        return None
    watches = attribution.load_watches(run_dir, run_hosts(run_dir, manifest))
    if not watches:
        return None
    return (watches, *attribution.action_columns(records, position))


def apply_containers(frame: pd.DataFrame, plan, manifest: rundir.Manifest) -> None:
    """The invocation frame's ``host`` from the containers (``containers_plan``'s), its counts in
    ``frame.attrs["host_attribution"]``; nothing without a plan."""
    if plan is None:
        return
    watches, keys, prewarm = plan
    ran = (frame["has_activation_id"] | frame["has_record"]).to_numpy(dtype=bool)
    column, counts = attribution.attribute(
        ran, keys, prewarm, frame["platform_start_s"].to_numpy(dtype="float64"),
        frame["platform_end_s"].to_numpy(dtype="float64"), watches, manifest.wall_ns_at_zero,
    )  # fmt: skip
    frame["host"] = column
    frame.attrs["host_attribution"] = counts


def host_column(ran: np.ndarray, host: str, native: bool) -> pd.Categorical:
    """The invocation frame's ``host``: ``host`` for the rows whose activation ran (``ran``: it has
    an activation id or a record; every row of a native run), ``unknown`` for the others."""
    if native:
        ran = np.ones(len(ran), dtype=bool)
    categories = [host] if host == UNKNOWN else [host, UNKNOWN]
    codes = np.where(np.asarray(ran, dtype=bool), 0, categories.index(UNKNOWN)).astype(np.int8)
    return pd.Categorical.from_codes(codes, categories=categories)


def rows_of(frame: pd.DataFrame, host: str, local: str) -> pd.DataFrame:
    """The rows of a monitor frame that host ``host`` measured (a frame without ``host``: all of
    them are the local host's)."""
    if "host" not in frame.columns:
        return frame if host == local else frame.iloc[0:0]
    return frame[(frame["host"] == host).to_numpy(dtype=bool)]


def monitor_stats(frame: pd.DataFrame, phases: list[dict]) -> dict:
    """Rows, columns and the mean of every numeric column (all rows, steady phases) of one
    monitor's frame (one host's rows)."""
    entry: dict[str, Any] = {"rows": int(len(frame)), "columns": [str(c) for c in frame.columns]}
    if "t_s" in frame.columns and len(frame):
        t = frame["t_s"].to_numpy(dtype="float64")
        steady = np.zeros(len(frame), dtype=bool)
        for phase in phases:
            steady |= (t >= phase["steady_start_s"]) & (t < phase["end_s"])
        numeric = frame.select_dtypes(include="number").drop(columns=["t_s"], errors="ignore")
        entry["mean"] = {str(c): float(numeric[c].mean()) for c in numeric.columns}
        entry["steady_mean"] = (
            {str(c): float(numeric.loc[steady, c].mean()) for c in numeric.columns} if steady.any() else {}
        )
    return entry


def _clock(clock: rundir.HostClock) -> dict:
    def in_ms(value: int | None) -> float | None:
        return None if value is None else value / 1e6

    return {
        "offset_ms_start": in_ms(clock.offset_ns_start),
        "uncertainty_ms_start": in_ms(clock.uncertainty_ns_start),
        "offset_ms_end": in_ms(clock.offset_ns_end),
        "uncertainty_ms_end": in_ms(clock.uncertainty_ns_end),
        "method": clock.method,
    }


def summary(run) -> dict:
    """The summary's ``hosts``: the local host's label, where the activations ran, and each remote
    host (facts, clock, status, its monitors' statistics)."""
    local = local_host_label(run.manifest)
    host, basis = activation_host(run.manifest, run.manifest.host_infos)  # as the invocation frame's column
    activations: dict[str, Any] = {"host": host, "basis": basis}
    counts = run.invocations.attrs.get("host_attribution")
    if counts:
        activations = {"host": BY_CONTAINERS, "basis": CONTAINER_BASIS, **counts}
    remote = {}
    for name, info in run.hosts.items():
        monitors = {}
        for monitor, frame in run.monitors.items():
            rows = rows_of(frame, name, local)
            if len(rows):
                monitors[monitor] = monitor_stats(rows, run.phases)
        remote[name] = {
            "status": info.status,
            "lost_reason": info.lost_reason,
            "lost_at_s": None if info.lost_at_ns is None else info.lost_at_ns / 1e9,
            "address": info.address,
            "kernel": info.kernel,
            "cpu_model": info.cpu_model,
            "cpus": info.cpus,
            "collectors": list(info.collectors),
            "skipped": info.skipped,
            "clock": _clock(info.clock),
            "monitors": monitors,
        }
    return {"local": local, "activations": activations, "remote": remote}


def counts_text(activations: dict) -> str:
    """``h1 12, h2 30; unknown 5 (ambiguous 3, none seen 2)``: the activations attributed by
    container, per host, and those left unknown with why; empty where none were."""
    if "attributed" not in activations:
        return ""
    attributed = ", ".join(f"{name} {n:,}" for name, n in activations["attributed"].items())
    reasons = activations.get("unknown") or {}
    why = ", ".join(f"{reason} {n:,}" for reason, n in reasons.items())
    return f"{attributed}; unknown {sum(reasons.values()):,}" + (f" ({why})" if why else "")


def _offset(clock: dict, end: str) -> str:
    offset = clock.get(f"offset_ms_{end}")
    if offset is None:
        return "not measured"
    # In ms to the µs, whatever its size: a drift of a millisecond over the run stays visible.
    return f"{offset:+,.3f} ms ± {ms(clock.get(f'uncertainty_ms_{end}'))}"


def status_text(entry: dict) -> str:
    """``ok``, or ``lost at 6 s: why``."""
    if entry["status"] != "lost":
        return str(entry["status"])
    reason = (entry["lost_reason"] or "no reason recorded").rstrip(".")  # it is followed by more
    return f"lost at {seconds(entry['lost_at_s'])}: {reason}"


HOST_HEADERS = ["host", "status", "offset at start", "offset at end", "kernel, CPU", "CPUs", "collectors", "skipped"]


@dataclass
class HostsView:
    """The report's hosts section (the ``hosts`` block of templates/report.html)."""

    local: str  # the label of the machine that ran faasprof
    method: str | None  # how the clock offsets were measured
    table: Table  # a row per remote host
    activations_host: str | None  # where the activations ran
    activations_basis: str  # how that was decided
    activations_counts: str | None  # activations per host, where they were attributed


def report_view(hosts: dict) -> HostsView | None:
    """The report's hosts: a row per remote host (status, clock offsets, facts, collectors) and
    where the activations ran. None for a run that measured no other host."""
    remote = hosts.get("remote") or {}
    if not remote:
        return None
    rows = []
    for name, entry in remote.items():
        clock = entry["clock"]
        # A collector's reason usually starts with its own name already ("rdt: the CPU reports ...").
        skipped = "; ".join(v if str(v).startswith(f"{k}:") else f"{k}: {v}" for k, v in entry["skipped"].items())
        rows.append(
            [
                name,
                status_text(entry),
                _offset(clock, "start"),
                _offset(clock, "end"),
                " ".join(str(v) for v in (entry["kernel"], entry["cpu_model"]) if v) or None,
                entry["cpus"],
                ", ".join(entry["collectors"]) or None,
                skipped or None,
            ]
        )
    activations = hosts["activations"]
    return HostsView(
        local=hosts["local"],
        method=next((e["clock"]["method"] for e in remote.values() if e["clock"].get("method")), None),
        table=Table(HOST_HEADERS, rows, left=2),
        activations_host=activations["host"],
        activations_basis=activations["basis"],
        activations_counts=counts_text(activations) if "attributed" in activations else None,
    )


def summary_lines(hosts: dict) -> list[str]:
    """A line per remote host for the command's summary (none for a run that measured no other)."""
    remote = hosts.get("remote") or {}
    lines = [
        f"  host {name}: {status_text(entry)}; clock offset {_offset(entry['clock'], 'start')} at start, "
        f"{_offset(entry['clock'], 'end')} at end"
        for name, entry in remote.items()
    ]
    if lines:
        lines.append(f"  activations ran on: {hosts['activations']['host']} ({hosts['activations']['basis']})")
        if "attributed" in hosts["activations"]:
            lines.append(f"  activations by host: {counts_text(hosts['activations'])}")
    return lines
