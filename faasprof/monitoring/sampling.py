"""What the sampling collectors read (vmstat's ``/proc`` counters, the sandboxes' cgroup files) and
whether a host has it: standard library only, because the same functions run on a remote host,
shipped over ssh by ``faasprof.monitoring.hosts`` with ``faasprof.monitoring.host`` (each host
answers its own check with the code the local collectors use).

``read_vmstat_sample`` and ``vmstat_problem`` serve ``collectors.vmstat``; ``cgroup_parents``,
``read_cgroup`` and ``sample_cgroups`` serve ``collectors.cgroups``.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Callable

from faasprof.monitoring.host import Root, cgroup_info

# /proc/stat's aggregate "cpu" line, in the kernel's order (proc(5)); guest times are already
# counted in user and nice, so they are left out.
CPU_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
STAT_COUNTERS = {"ctxt": "ctxt", "intr": "intr", "processes": "forks"}
STAT_GAUGES = ("procs_running", "procs_blocked")
VMSTAT_COUNTERS = ("pgfault", "pgmajfault", "pgpgin", "pgpgout", "pswpin", "pswpout")
VMSTAT_COLUMNS = (
    "elapsed_ns",
    *(f"cpu_{name}_ticks" for name in CPU_FIELDS),
    *STAT_COUNTERS.values(),
    *STAT_GAUGES,
    *VMSTAT_COUNTERS,
)


def read_vmstat_sample(root: Root) -> dict[str, int | None]:
    """One read of ``/proc/stat`` and ``/proc/vmstat`` under ``root`` (None: value not found)."""
    sample: dict[str, int | None] = {name: None for name in VMSTAT_COLUMNS[1:]}
    for line in (root.read("/proc/stat") or "").splitlines():
        parts = line.split()
        if not parts:
            continue
        if parts[0] == "cpu":
            for name, value in zip(CPU_FIELDS, parts[1:]):
                sample[f"cpu_{name}_ticks"] = int(value)
        elif parts[0] in STAT_COUNTERS and len(parts) > 1:
            sample[STAT_COUNTERS[parts[0]]] = int(parts[1])  # intr: the total, before the per-IRQ counts
        elif parts[0] in STAT_GAUGES and len(parts) > 1:
            sample[parts[0]] = int(parts[1])
    wanted = set(VMSTAT_COUNTERS)
    for line in (root.read("/proc/vmstat") or "").splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] in wanted:
            sample[parts[0]] = int(parts[1])
    return sample


CGROUP_COLUMNS = (
    "elapsed_ns",
    "sandbox",
    "cpu_usage_ns",
    "cpu_user_ns",
    "cpu_system_ns",
    "nr_periods",
    "nr_throttled",
    "throttled_ns",
    "memory_usage_bytes",
    "memory_limit_bytes",
    "memory_rss_bytes",
    "memory_cache_bytes",
    "memory_failcnt",
    "oom_kills",
    "frozen",
)
# cgroup v1 reports "no limit" as a huge page-aligned number.
_V1_UNLIMITED = 1 << 60
_USER_HZ = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


def _keyed(text: str | None) -> dict[str, int]:
    result = {}
    for line in (text or "").splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].lstrip("-").isdigit():
            result[parts[0]] = int(parts[1])
    return result


def _int_or_none(text: str | None) -> int | None:
    text = (text or "").strip()
    return int(text) if text.lstrip("-").isdigit() else None


def read_cgroup(dirs: list[Path], is_parent: bool = False) -> dict[str, int | None]:
    """One sample of a cgroup from its directories in each hierarchy (v1) or its one directory (v2).

    Values are cumulative where the kernel's are (CPU time, throttling, failcnt); None when no
    hierarchy given provides the value.
    """
    sample: dict[str, int | None] = {name: None for name in CGROUP_COLUMNS[2:]}
    for directory in dirs:
        stat = _keyed(_read(directory / "cpu.stat"))
        if "usage_usec" in stat:  # v2
            sample["cpu_usage_ns"] = stat["usage_usec"] * 1000
            sample["cpu_user_ns"] = stat.get("user_usec", 0) * 1000
            sample["cpu_system_ns"] = stat.get("system_usec", 0) * 1000
        if "nr_periods" in stat:
            sample["nr_periods"] = stat["nr_periods"]
            sample["nr_throttled"] = stat.get("nr_throttled")
            if "throttled_usec" in stat:
                sample["throttled_ns"] = stat["throttled_usec"] * 1000
            elif "throttled_time" in stat:  # v1, ns
                sample["throttled_ns"] = stat["throttled_time"]
        usage = _int_or_none(_read(directory / "cpuacct.usage"))
        if usage is not None:
            sample["cpu_usage_ns"] = usage
            acct = _keyed(_read(directory / "cpuacct.stat"))
            if "user" in acct:
                sample["cpu_user_ns"] = acct["user"] * 1_000_000_000 // _USER_HZ
                sample["cpu_system_ns"] = acct.get("system", 0) * 1_000_000_000 // _USER_HZ
        v1_usage = _int_or_none(_read(directory / "memory.usage_in_bytes"))
        if v1_usage is not None:
            sample["memory_usage_bytes"] = v1_usage
            limit = _int_or_none(_read(directory / "memory.limit_in_bytes"))
            sample["memory_limit_bytes"] = limit if limit is not None and limit < _V1_UNLIMITED else None
            mstat = _keyed(_read(directory / "memory.stat"))
            prefix = "total_" if is_parent else ""
            sample["memory_rss_bytes"] = mstat.get(prefix + "rss")
            sample["memory_cache_bytes"] = mstat.get(prefix + "cache")
            sample["memory_failcnt"] = _int_or_none(_read(directory / "memory.failcnt"))
            sample["oom_kills"] = _keyed(_read(directory / "memory.oom_control")).get("oom_kill")
        current = _int_or_none(_read(directory / "memory.current"))
        if current is not None:  # v2
            sample["memory_usage_bytes"] = current
            sample["memory_limit_bytes"] = _int_or_none(_read(directory / "memory.max"))  # "max" → None
            mstat = _keyed(_read(directory / "memory.stat"))
            sample["memory_rss_bytes"] = mstat.get("anon")
            sample["memory_cache_bytes"] = mstat.get("file")
            events = _keyed(_read(directory / "memory.events"))
            sample["memory_failcnt"] = events.get("max")
            sample["oom_kills"] = events.get("oom_kill")
    for directory in dirs:
        # Paused sandboxes: v1 freezer.state FROZEN/FREEZING/THAWED; v2 cgroup.events "frozen 1".
        state = (_read(directory / "freezer.state") or "").strip()
        if state:
            sample["frozen"] = int(state != "THAWED")
        elif not is_parent:
            frozen = _keyed(_read(directory / "cgroup.events")).get("frozen")
            if frozen is not None:
                sample["frozen"] = frozen
    if sample["cpu_usage_ns"] is None and not is_parent:
        _cpu_from_processes(dirs, sample)
    return sample


def _cpu_from_processes(dirs: list[Path], sample: dict[str, int | None]) -> None:
    """CPU time of the processes in the cgroup, from /proc/<pid>/stat, when no hierarchy given
    has cpuacct (v1 with cpu and cpuacct mounted apart, and a platform that made no cpuacct
    cgroup). Counts live processes and the children they waited for; the time of a process that
    already exited is lost, so this can go down (the parser then leaves that interval empty)."""
    for directory in dirs:
        procs = _read(directory / "cgroup.procs")
        if procs is None:
            continue
        user = system = 0
        for pid in procs.split():
            stat = _read(Path("/proc") / pid / "stat")
            if not stat:
                continue
            fields = stat[stat.rfind(")") + 2 :].split()  # after "pid (comm) "
            try:
                user += int(fields[11]) + int(fields[13])  # utime + cutime
                system += int(fields[12]) + int(fields[14])  # stime + cstime
            except (IndexError, ValueError):
                continue
        tick_ns = 1_000_000_000 // _USER_HZ
        sample["cpu_user_ns"], sample["cpu_system_ns"] = user * tick_ns, system * tick_ns
        sample["cpu_usage_ns"] = (user + system) * tick_ns
        return


def sample_until(interval_s: float, sample: Callable[[], None], stop: threading.Event) -> None:
    """``sample()`` every ``interval_s`` on the monotonic clock (a late sample does not shift the
    next ones) until ``stop`` is set, then once more: the final, partial interval."""
    next_at = time.monotonic()
    while True:
        sample()
        next_at += interval_s
        if stop.wait(max(0.0, next_at - time.monotonic())):
            break
    sample()


def vmstat_problem(root: Root) -> str | None:
    """None when ``/proc/stat`` and ``/proc/vmstat`` under ``root`` give vmstat's values; else one
    line: why not, and the fix."""
    sample = read_vmstat_sample(root)
    if sample["cpu_idle_ticks"] is None:
        return f"vmstat: {root.path('/proc/stat')} has no cpu line (no procfs mounted?); mount proc on /proc or drop monitoring.vmstat"
    if sample["pgfault"] is None:
        return f"vmstat: {root.path('/proc/vmstat')} has no pgfault counter (no procfs mounted?); mount proc on /proc or drop monitoring.vmstat"
    return None


def named_parents(root: Root, v1_name: str = "docker", v2_name: str = "system.slice") -> dict[str, str]:
    """``{controller: directory}`` of the cgroup ``v1_name`` under each v1 controller's mount (cgroup
    v1), else ``v2_name`` under the unified mount: Docker's containers (OpenWhisk's) by default."""
    info = cgroup_info(root)
    found = {}
    v1_name, v2_name = v1_name.strip("/"), v2_name.strip("/")
    for controller in ("cpu", "cpuacct", "memory", "freezer", "blkio"):  # freezer: paused containers
        mount = (info["controllers"].get(controller) or {}).get("mount")
        candidate = f"{mount}/{v1_name}".rstrip("/")
        if mount and info["version"] != "2" and root.exists(candidate):
            found[controller] = str(root.path(candidate))
    candidate = f"{info.get('v2_mount')}/{v2_name}".rstrip("/")
    if not found and info.get("v2_mount") and root.exists(candidate):
        found["unified"] = str(root.path(candidate))
    return found


def add_v1_siblings(root: Root, parents: dict[str, str]) -> dict[str, str]:
    """v1 may mount cpu and cpuacct apart: CPU time lives in cpuacct at the same relative path."""
    if "cpuacct" in parents or "cpu" not in parents:
        return parents
    info = cgroup_info(root)
    cpu_mount = (info["controllers"].get("cpu") or {}).get("mount")
    acct_mount = (info["controllers"].get("cpuacct") or {}).get("mount")
    if not cpu_mount or not acct_mount or cpu_mount == acct_mount:
        return parents
    cpu_base = str(root.path(cpu_mount)).rstrip("/")
    path = str(parents["cpu"])
    if path.startswith(cpu_base + "/"):
        sibling = str(root.path(acct_mount)).rstrip("/") + path[len(cpu_base) :]
        if os.path.isdir(sibling):
            return {**parents, "cpuacct": sibling}
    return parents


def cgroup_parents(root: Root, given: dict[str, str], named: str | None = None) -> tuple[dict[str, str], str | None]:
    """The readable cgroup parents of the sandboxes, and None; or ({}, one line: why none, and the
    fix). ``given``: the platform's; else the cgroup ``named`` under each controller (a remote
    host's setting), else Docker's."""
    parents = dict(given or {})
    if not parents:
        parents = named_parents(root, named, named) if named else named_parents(root)
    if not parents:
        return {}, (
            "cgroups: the platform reported no cgroup parent for its sandboxes and no Docker cgroup was found; "
            "run localwhisk with cgroup isolation (doctor shows why it is off) or drop monitoring.cgroups"
        )
    parents = add_v1_siblings(root, parents)
    readable = {c: p for c, p in parents.items() if os.path.isdir(p) and os.access(p, os.R_OK)}
    if not readable:
        return {}, (
            f"cgroups: none of the cgroup parents exists or is readable ({', '.join(parents.values())}); "
            "check that the platform is running"
        )
    return readable, None


def sample_cgroups(parents: dict[str, str]) -> dict[str, dict[str, int | None]]:
    """One read of every sandbox (child of a parent) and of the whole (``.``), by sandbox name."""
    sandboxes: dict[str, list[Path]] = {".": []}
    for path in parents.values():
        parent_dir = Path(path)
        sandboxes["."].append(parent_dir)
        try:
            entries = [entry for entry in os.scandir(parent_dir) if entry.is_dir(follow_symlinks=False)]
        except OSError:
            continue  # the parent went away (platform stopped): sample what is left
        for entry in entries:
            sandboxes.setdefault(entry.name, []).append(Path(entry.path))
    samples: dict[str, dict[str, int | None]] = {}
    for sandbox, dirs in sorted(sandboxes.items()):
        values = read_cgroup(dirs, is_parent=sandbox == ".")
        if sandbox != "." and all(value is None for value in values.values()):
            continue  # removed between listing and reading
        samples[sandbox] = values
    parent = samples["."]
    children = [v for k, v in samples.items() if k != "."]
    if parent["cpu_usage_ns"] is None and children and all(c["cpu_usage_ns"] is not None for c in children):
        # No cpuacct for the parent: the sum of what its sandboxes' processes used.
        for name in ("cpu_usage_ns", "cpu_user_ns", "cpu_system_ns"):
            parent[name] = sum(c[name] or 0 for c in children)
    return samples


def cgroup_rows(elapsed_ns: int, samples: dict[str, dict[str, int | None]]) -> str:
    """``samples`` as lines of ``samples.csv`` (``CGROUP_COLUMNS``)."""
    lines = []
    for sandbox, values in samples.items():
        cells = [str(elapsed_ns), sandbox.replace(",", "_")] + [
            "" if values[name] is None else str(values[name]) for name in CGROUP_COLUMNS[2:]
        ]
        lines.append(",".join(cells) + "\n")
    return "".join(lines)


def vmstat_row(elapsed_ns: int, root: Root) -> str:
    """One line of ``vmstat.csv`` (``VMSTAT_COLUMNS``), read now."""
    values = read_vmstat_sample(root)
    cells = [str(elapsed_ns)] + ["" if values[name] is None else str(values[name]) for name in VMSTAT_COLUMNS[1:]]
    return ",".join(cells) + "\n"
