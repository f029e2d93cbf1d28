"""The cgroups collector: every sandbox cgroup (children of the platform's cgroup parents) read
by faasprof itself at an interval: CPU time, throttling, memory, OOM kills, paused state.

Raw output: ``samples.csv`` (cumulative values; parsed by ``faasprof.monitoring.parsers.cgroups``).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from faasprof.monitoring.collectors.base import (
    NO,
    OK,
    Finding,
    ParseKind,
    Plot,
    SamplingCollector,
    samples_on_run_clock,
)
from faasprof.monitoring.host import Root, cgroup_info
from faasprof.monitoring.parsers.cgroups import parse_cgroup_samples
from faasprof.rundir import Manifest

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


class CgroupCollector(SamplingCollector):
    """Samples every sandbox cgroup (children of the platform's cgroup parents) at an interval."""

    name = "cgroups"
    summary = "Per-sandbox CPU time, memory and throttling from the cgroups of OpenWhisk's containers or localwhisk's sandboxes."
    tool = "every sandbox's cgroup files read by faasprof each `interval_ms`: CPU time, throttling, memory, OOM kills, paused state"
    raw_outputs = "`samples.csv`"
    output_name = "samples.csv"
    defaults = {"interval_ms": 500, "required": False}
    options_schema = {"interval_ms": {"$ref": "#/$defs/interval_ms"}}
    # A line per sandbox ("." the whole), the busiest by CPU.
    plots = (
        Plot("cpu_cores", "busy CPUs (idle excluded)"),
        Plot("memory_usage_bytes", "memory", "MiB", 1 / 2**20),
        Plot("throttled_share", "CPU-throttled share"),
    )
    plot_lines_by = "sandbox"
    plot_busiest_by = "cpu_cores"
    parse_kinds = (
        ParseKind(
            "cgroups",
            "the cgroups collector's `samples.csv` → per-sandbox CPU, memory, throttling",
            lambda text, _args: parse_cgroup_samples(text),
        ),
    )
    header = ",".join(CGROUP_COLUMNS) + "\n"
    thread_name = "cgroups-sampler"

    def __init__(self, block: dict, context: dict):
        super().__init__(block, context)
        self.parents: dict[str, str] = {}
        self.sandboxes_seen: set[str] = set()
        self.samples = 0

    def _check(self) -> str | None:
        parents = dict(self.context.get("cgroup_parents") or {})
        if not parents:
            parents = self._docker_parents()
        if not parents:
            return (
                "cgroups: the platform reported no cgroup parent for its sandboxes and no Docker cgroup was found; "
                "run localwhisk with cgroup isolation (doctor shows why it is off) or drop monitoring.cgroups"
            )
        parents = self._add_v1_siblings(parents)
        readable = {c: p for c, p in parents.items() if os.path.isdir(p) and os.access(p, os.R_OK)}
        if not readable:
            return f"cgroups: none of the cgroup parents exists or is readable ({', '.join(parents.values())}); check that the platform is running"
        self.parents = readable
        return None

    def _docker_parents(self) -> dict[str, str]:
        """Docker's cgroups (OpenWhisk's containers) when the platform names none."""
        info = cgroup_info(self.root)
        found = {}
        for controller in ("cpu", "cpuacct", "memory", "freezer", "blkio"):  # freezer: paused containers
            mount = (info["controllers"].get(controller) or {}).get("mount")
            if mount and info["version"] != "2" and self.root.exists(f"{mount}/docker"):
                found[controller] = str(self.root.path(f"{mount}/docker"))
        if not found and info.get("v2_mount") and self.root.exists(f"{info['v2_mount']}/system.slice"):
            found["unified"] = str(self.root.path(f"{info['v2_mount']}/system.slice"))
        return found

    def _add_v1_siblings(self, parents: dict[str, str]) -> dict[str, str]:
        """v1 may mount cpu and cpuacct apart: CPU time lives in cpuacct at the same relative path."""
        if "cpuacct" in parents or "cpu" not in parents:
            return parents
        info = cgroup_info(self.root)
        cpu_mount = (info["controllers"].get("cpu") or {}).get("mount")
        acct_mount = (info["controllers"].get("cpuacct") or {}).get("mount")
        if not cpu_mount or not acct_mount or cpu_mount == acct_mount:
            return parents
        cpu_base = str(self.root.path(cpu_mount)).rstrip("/")
        path = str(parents["cpu"])
        if path.startswith(cpu_base + "/"):
            sibling = str(self.root.path(acct_mount)).rstrip("/") + path[len(cpu_base) :]
            if os.path.isdir(sibling):
                return {**parents, "cpuacct": sibling}
        return parents

    def _start(self) -> None:
        self._begin_sampling(
            ["cgroup-read", f"every {self.interval_ms} ms", *self.parents.values()],
            f"# cgroup files read by faasprof (no external tool) every {self.interval_ms} ms; sandboxes are the children of\n"
            + "".join(f"{controller}\t{path}\n" for controller, path in self.parents.items()),
        )

    def sample_once(self) -> None:
        elapsed = time.monotonic_ns() - (self.monotonic_ns_at_start or 0)
        sandboxes: dict[str, list[Path]] = {".": []}
        for path in self.parents.values():
            parent = Path(path)
            sandboxes["."].append(parent)
            try:
                children = [entry for entry in os.scandir(parent) if entry.is_dir(follow_symlinks=False)]
            except OSError:
                continue  # the parent went away (platform stopped): sample what is left
            for entry in children:
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
        lines = []
        for sandbox, values in samples.items():
            self.sandboxes_seen.add(sandbox)
            cells = [str(elapsed), sandbox.replace(",", "_")] + [
                "" if values[name] is None else str(values[name]) for name in CGROUP_COLUMNS[2:]
            ]
            lines.append(",".join(cells) + "\n")
        self._handle.write("".join(lines))
        self._handle.flush()
        self.samples += 1

    def describe(self) -> dict:
        data = super().describe()
        data["parents"] = dict(self.parents)
        data["interval_ms"] = self.interval_ms
        data["samples"] = self.samples
        data["sandboxes_seen"] = max(0, len(self.sandboxes_seen - {"."}))
        return data

    @classmethod
    def load_frame(cls, directory: Path, meta: dict, offset_s: float, manifest: Manifest):
        return samples_on_run_clock(directory / cls.output_name, parse_cgroup_samples, offset_s)

    @classmethod
    def doctor(cls, root: Root, host: dict, live: bool, block: dict | None) -> list[Finding]:
        info = host.get("cgroup") or {}
        version = info.get("version")
        controllers = info.get("controllers") or {}
        if version is None:
            return [
                Finding(
                    "cgroups",
                    NO,
                    "no cgroup filesystem mounted",
                    "mount cgroup2 on /sys/fs/cgroup (or the v1 hierarchies)",
                    ("cgroups",),
                )
            ]
        writable = sorted(name for name, c in controllers.items() if c.get("writable"))
        needed = ("cpu", "memory")
        missing = [name for name in needed if name not in writable]
        text = f"cgroup v{version}" if version != "hybrid" else "cgroups hybrid (v1 controllers + a v2 mount)"
        text += f"; writable controllers: {', '.join(writable) or 'none'}"
        findings = [Finding("cgroups", OK, text)]
        if missing:
            findings.append(
                Finding(
                    "cgroups",
                    NO,
                    f"controllers {', '.join(missing)} are not writable: per-sandbox limits and samples unavailable (localwhisk falls back to rlimits)",
                    "run as root on a host with the cpu and memory controllers enabled",
                    ("cgroups",),
                )
            )
        return findings
