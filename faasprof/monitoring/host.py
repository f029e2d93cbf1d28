"""Host metadata for the manifest, read from ``/proc`` and ``/sys`` through one root.

Every file is read as ``<root>/<path>``, so tests (and ``faasprof doctor --root``) point the same
code at a fake tree. A file that cannot be read gives None for its key, never an exception.
``tool_versions(commands)`` runs the tools themselves (``--version``), with a timeout.
"""

from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
from pathlib import Path

RDT_FLAGS = (
    "rdt_a",
    "cat_l3",
    "cat_l2",
    "cdp_l3",
    "cdp_l2",
    "cqm_llc",
    "cqm_occup_llc",
    "cqm_mbm_total",
    "cqm_mbm_local",
    "mba",
)


class Root:
    """Reads files under one root directory (``/`` on a real host)."""

    def __init__(self, root: str | os.PathLike = "/"):
        self.root = Path(root)

    def path(self, absolute: str) -> Path:
        return self.root / absolute.lstrip("/")

    def read(self, absolute: str) -> str | None:
        try:
            return self.path(absolute).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None

    def read_line(self, absolute: str) -> str | None:
        text = self.read(absolute)
        return text.strip() if text is not None else None

    def read_int(self, absolute: str, base: int = 10) -> int | None:
        text = self.read_line(absolute)
        try:
            return int(text, base) if text is not None else None
        except ValueError:
            return None

    def exists(self, absolute: str) -> bool:
        return self.path(absolute).exists()

    def listdir(self, absolute: str) -> list[str]:
        try:
            return sorted(os.listdir(self.path(absolute)))
        except OSError:
            return []


def parse_cpu_list(text: str | None, strict: bool = False) -> list[int]:
    """``0-3,8,10-11`` → [0, 1, 2, 3, 8, 10, 11] (the kernel's ``cpus_list`` format; newlines
    separate like commas). ``strict``: a reversed range such as ``3-1`` raises ValueError instead of
    giving nothing. A part that is not a number raises ValueError either way."""
    cpus: list[int] = []
    for part in (text or "").replace("\n", ",").split(","):
        part = part.strip()
        if not part:
            continue
        if "-" in part:
            low, high = part.split("-", 1)
            first, last = int(low), int(high)
            if strict and last < first:
                raise ValueError(f"bad CPU range {part!r}")
            cpus.extend(range(first, last + 1))
        else:
            cpus.append(int(part))
    return cpus


def cpuinfo(root: Root) -> dict:
    """Model, vendor and flags of the first processor, and the logical CPU count."""
    text = root.read("/proc/cpuinfo") or ""
    first: dict[str, str] = {}
    count = 0
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        key = key.strip()
        if not sep:
            continue
        if key == "processor":
            count += 1
        if count <= 1:
            first.setdefault(key, value.strip())
    return {
        "model": first.get("model name"),
        "vendor": first.get("vendor_id"),
        "flags": set(first.get("flags", "").split()),
        "processors": count or None,
    }


def cpu_vendor_kind(host: dict) -> str:
    """``amd``, ``intel``, ``arm`` or ``unknown`` from a ``collect_host`` dict's vendor and model."""
    text = f"{host.get('cpu_vendor') or ''} {host.get('cpu_model') or ''}".lower()
    if "amd" in text:
        return "amd"
    if "intel" in text:
        return "intel"
    if any(word in text for word in ("arm", "aarch64", "neoverse", "graviton", "apple")):
        return "arm"
    return "unknown"


def mounts(root: Root) -> list[tuple[str, str, str, str]]:
    """``(device, mount point, fs type, options)`` from ``/proc/mounts``."""
    result = []
    for line in (root.read("/proc/mounts") or "").splitlines():
        parts = line.split()
        if len(parts) >= 4:
            result.append((parts[0], parts[1], parts[2], parts[3]))
    return result


def mount_of(root: Root, fstype: str) -> tuple[str, tuple[str, ...]] | None:
    """``(mount point, options)`` of the first ``fstype`` filesystem in ``/proc/mounts``."""
    for _, point, kind, options in mounts(root):
        if kind == fstype:
            return point, tuple(options.split(","))
    return None


def topology(root: Root) -> dict:
    """Logical CPUs, physical cores, sockets and SMT from ``/sys/devices/system/cpu``."""
    online = parse_cpu_list(root.read_line("/sys/devices/system/cpu/online"))
    cores, sockets = set(), set()
    for cpu in online:
        base = f"/sys/devices/system/cpu/cpu{cpu}/topology"
        package = root.read_int(f"{base}/physical_package_id")
        core = root.read_int(f"{base}/core_id")
        if package is not None:
            sockets.add(package)
        if core is not None:
            cores.add((package, core))
    smt_control = root.read_line("/sys/devices/system/cpu/smt/control")
    smt_active = root.read_int("/sys/devices/system/cpu/smt/active")
    return {
        "logical_cpus": len(online) or None,
        "physical_cores": len(cores) or None,
        "sockets": len(sockets) or None,
        "smt_control": smt_control,  # on | off | forceoff | notsupported | notimplemented
        "smt_active": None if smt_active is None else bool(smt_active),
    }


def frequency(root: Root, cpus: list[int]) -> dict:
    governors = sorted(
        {g for g in (root.read_line(f"/sys/devices/system/cpu/cpu{c}/cpufreq/scaling_governor") for c in cpus) if g}
    )
    driver = root.read_line("/sys/devices/system/cpu/cpu0/cpufreq/scaling_driver")
    no_turbo = root.read_int("/sys/devices/system/cpu/intel_pstate/no_turbo")
    boost = root.read_int("/sys/devices/system/cpu/cpufreq/boost")
    if no_turbo is not None:
        turbo = not no_turbo
    elif boost is not None:
        turbo = bool(boost)
    else:
        turbo = None
    return {
        "governor": governors[0] if len(governors) == 1 else (",".join(governors) or None),
        "scaling_driver": driver,
        "turbo": turbo,
    }


def resctrl_info(root: Root, mount_point: str = "/sys/fs/resctrl") -> dict:
    """What the kernel's resctrl reports: support, mount, CLOSes, ways, MBA, monitoring features."""
    filesystems = root.read("/proc/filesystems") or ""
    supported = any(line.split()[-1] == "resctrl" for line in filesystems.splitlines() if line.split())
    mount = mount_of(root, "resctrl")
    mounted_at = mount[0] if mount else None
    info: dict = {"supported": supported, "mounted": mounted_at is not None, "mount_point": mounted_at}
    base = (mounted_at or mount_point) + "/info"
    if mounted_at is not None:
        cbm_mask = root.read_line(f"{base}/L3/cbm_mask")
        info["l3"] = (
            None
            if cbm_mask is None
            else {
                "num_closids": root.read_int(f"{base}/L3/num_closids"),
                "cbm_mask": cbm_mask,
                "ways": bin(int(cbm_mask, 16)).count("1"),
                "min_cbm_bits": root.read_int(f"{base}/L3/min_cbm_bits"),
                "shareable_bits": root.read_line(f"{base}/L3/shareable_bits"),
            }
        )
        min_bw = root.read_int(f"{base}/MB/min_bandwidth")
        info["mba"] = (
            None
            if min_bw is None
            else {
                "num_closids": root.read_int(f"{base}/MB/num_closids"),
                "min_bandwidth": min_bw,
                "bandwidth_gran": root.read_int(f"{base}/MB/bandwidth_gran"),
            }
        )
        features = root.read(f"{base}/L3_MON/mon_features")
        info["monitoring"] = (
            None
            if features is None
            else {
                "num_rmids": root.read_int(f"{base}/L3_MON/num_rmids"),
                "features": features.split(),
            }
        )
    return info


def cgroup_info(root: Root) -> dict:
    """cgroup version (1, 2 or hybrid) and, per controller, its mount point and writability."""
    v1: dict[str, str] = {}
    v2_mount = None
    for _, point, fstype, options in mounts(root):
        if fstype == "cgroup2":
            v2_mount = v2_mount or point
        elif fstype == "cgroup":
            for option in options.split(","):
                if option in (
                    "cpu",
                    "cpuacct",
                    "memory",
                    "freezer",
                    "cpuset",
                    "pids",
                    "blkio",
                    "perf_event",
                    "devices",
                    "hugetlb",
                    "net_cls",
                ):
                    v1.setdefault(option, point)
    controllers: dict[str, dict] = {}
    for name, point in v1.items():
        controllers[name] = {"mount": point, "writable": os.access(root.path(point), os.W_OK)}
    if v2_mount is not None:
        for name in (root.read_line(f"{v2_mount}/cgroup.controllers") or "").split():
            controllers.setdefault(name, {"mount": v2_mount, "writable": os.access(root.path(v2_mount), os.W_OK)})
    if v1 and v2_mount:
        version = "hybrid"
    elif v1:
        version = "1"
    elif v2_mount:
        version = "2"
    else:
        version = None
    return {"version": version, "v2_mount": v2_mount, "controllers": controllers}


def perf_info(root: Root) -> dict:
    devices = root.listdir("/sys/bus/event_source/devices")
    pmu = next((name for name in ("cpu", "cpu_core", "cpu_atom") if name in devices), None)
    return {
        "perf_event_paranoid": root.read_int("/proc/sys/kernel/perf_event_paranoid"),
        "nmi_watchdog": root.read_int("/proc/sys/kernel/nmi_watchdog"),
        "hardware_pmu": pmu,
        "pmu_name": root.read_line(f"/sys/bus/event_source/devices/{pmu}/caps/pmu_name") if pmu else None,
        "event_sources": devices,
    }


def collect_host(root: str | os.PathLike = "/") -> dict:
    """Host metadata for the manifest: CPU model, cores, kernel, governor, turbo, SMT,
    perf_event_paranoid, RDT flags and resctrl, cgroups, memory. JSON-ready."""
    reader = Root(root)
    cpu = cpuinfo(reader)
    topo = topology(reader)
    online = parse_cpu_list(reader.read_line("/sys/devices/system/cpu/online"))
    meminfo = reader.read("/proc/meminfo") or ""
    mem_total = re.search(r"^MemTotal:\s+(\d+)\s+kB", meminfo, re.M)
    kernel = reader.read_line("/proc/sys/kernel/osrelease")
    if kernel is None and str(reader.root) == "/":
        kernel = platform.release()
    return {
        "hostname": reader.read_line("/proc/sys/kernel/hostname"),
        "cpu_model": cpu["model"],
        "cpu_vendor": cpu["vendor"],
        "logical_cpus": topo["logical_cpus"] or cpu["processors"],
        "physical_cores": topo["physical_cores"],
        "sockets": topo["sockets"],
        "smt": topo["smt_control"],
        "smt_active": topo["smt_active"],
        "kernel": kernel,
        **frequency(reader, online),
        "memory_bytes": int(mem_total.group(1)) * 1024 if mem_total else None,
        **perf_info(reader),
        "rdt_flags": sorted(flag for flag in RDT_FLAGS if flag in cpu["flags"]),
        "resctrl": resctrl_info(reader),
        "cgroup": cgroup_info(reader),
        "debugfs_mounted": any(fstype == "debugfs" for _, _, fstype, _ in mounts(reader)),
    }


_VERSION = re.compile(r"(\d+(?:\.\d+)+)")


def _run_version(argv: list[str], timeout_s: float = 5.0) -> str | None:
    if shutil.which(argv[0]) is None:
        return None
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s)
    except (OSError, subprocess.TimeoutExpired):
        return None
    for line in (done.stdout + "\n" + done.stderr).splitlines():
        # pqos prints WARN lines (and may abort) before or instead of its version line.
        if "version" in line.lower() or line.lower().startswith(argv[0]):
            found = _VERSION.search(line)
            if found:
                return found.group(1)
    return None


def tool_versions(commands: dict[str, list[str]]) -> dict:
    """``{tool: version or None}`` for ``{tool: version command}`` (None when a tool is missing or
    prints no version), plus this Python's version. The collector registry names the commands
    (``faasprof.monitoring.collectors.tool_versions``)."""
    return {**{tool: _run_version(argv) for tool, argv in commands.items()}, "python": platform.python_version()}
