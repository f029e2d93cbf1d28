"""``faasprof doctor [--workload CONFIG] [--root DIR]``: what this host can measure, and what not.

One line per finding, each with the reason and, when something is missing, the fix: perf (tool,
``perf_event_paranoid``, hardware events), Intel RDT (CPU flags, resctrl, CLOSes and cache ways,
MBA, pqos), blktrace (tools, debugfs, permission, traceable device), cgroups (version, writable
controllers), the platform (the configured OpenWhisk and its limits, or the embedded localwhisk),
and the CPU's governor, turbo and SMT.

Exit 0 when everything the workload asks for (its ``monitoring`` collectors and a platform) is
available, 3 otherwise. Without ``--workload`` only the platform is required. ``--root`` reads
``/proc`` and ``/sys`` from another tree (tests, or a copy taken on the testbed); tools are then
not run, and hardware support is judged from the tree alone.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from faasprof.docker import docker_problem
from faasprof.errors import EXIT_NOT_READY, EXIT_OK, ConfigError, NotReadyError
from monitoring.collectors import DEFAULT_PERF_EVENTS, DOCKER_DATA, data_device, normalise_block, probe_perf_events
from monitoring.host import Root, collect_host
from platforms.base import PlatformError, PlatformUnreachable
from platforms.openwhisk import OpenWhiskPlatform, add_connection_arguments, resolve_connection
from workload.spec import read_workload_json

# MISSING: unavailable and asked for (exit 3); "no": unavailable, not asked for.
OK, NO, WARN, INFO = "ok", "MISSING", "warn", "info"


@dataclass
class Finding:
    area: str
    state: str  # ok | MISSING | no | warn | info
    text: str
    fix: str | None = None
    blocks: tuple[str, ...] = ()  # which requirements it fails when MISSING: perf, rdt, blktrace, cgroups, platform

    def line(self) -> str:
        text = f"{self.area:<9} {self.state:<7} {self.text}"
        if self.fix and self.state != OK:
            text += f"; fix: {self.fix}"
        return text


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--workload", metavar="CONFIG", help="a workload JSON: exit 3 unless what it asks for is available")
    parser.add_argument("--root", default="/", help="read /proc and /sys under this directory (default /); tools are not run when it is not /")
    parser.add_argument("--json", action="store_true", help="print the findings as JSON instead of lines")
    add_connection_arguments(parser)


def _load_workload(path: str) -> dict:
    # Only the monitoring and platform blocks matter here, so the JSON is read, not validated.
    data = read_workload_json(path)
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: must be a JSON object (a workload)")
    return data


# -- checks ----------------------------------------------------------------------------------------


def check_perf(root, host: dict, live: bool, block: dict | None) -> list[Finding]:
    findings = []
    perf = shutil.which("perf")
    if perf is None:
        findings.append(Finding("perf", NO, "perf is not installed", "apt-get install linux-perf (Ubuntu: linux-tools-$(uname -r))", ("perf",)))
    else:
        findings.append(Finding("perf", OK, f"perf found at {perf}"))
    paranoid = host.get("perf_event_paranoid")
    is_root = os.geteuid() == 0
    if paranoid is None:
        findings.append(Finding("perf", NO, "no /proc/sys/kernel/perf_event_paranoid: the kernel has no perf events", "use a kernel with CONFIG_PERF_EVENTS", ("perf",)))
    elif is_root or paranoid <= 0:
        findings.append(Finding("perf", OK, f"perf_event_paranoid={paranoid}" + (" (running as root: system-wide counting allowed)" if is_root else "")))
    else:
        findings.append(Finding("perf", NO, f"perf_event_paranoid={paranoid} and not root: no system-wide counting", "run as root or `sysctl kernel.perf_event_paranoid=0`", ("perf",)))
    explicit = list((block or {}).get("events") or [])
    wanted = explicit or list(DEFAULT_PERF_EVENTS)
    hardware = ("cycles", "instructions")
    if live and perf is not None:
        supported, dropped, error = probe_perf_events(wanted)
        if error:
            findings.append(Finding("perf", NO, f"event probe failed ({error})", "run `perf stat -a -e cycles -- true` by hand", ("perf",)))
        else:
            hw_ok = all(event in supported for event in hardware if event in wanted)
            state = OK if hw_ok and not dropped else (NO if explicit and dropped else WARN)
            text = f"events supported: {', '.join(supported) or 'none'}"
            if dropped:
                text += f"; not supported: {', '.join(dropped)}"
            fix = None
            if not hw_ok:
                fix = "hardware counters need a bare-metal host or a VM with a virtual PMU (no /sys/bus/event_source/devices/cpu here)" if host.get("hardware_pmu") is None else "check `perf stat -e cycles -a -- true`"
            findings.append(Finding("perf", state, text, fix, ("perf",) if state == NO else ()))
    else:
        pmu = host.get("hardware_pmu")
        if pmu:
            findings.append(Finding("perf", OK, f"hardware PMU present ({pmu}" + (f", {host['pmu_name']})" if host.get("pmu_name") else ")")))
        else:
            needs_hw = any(event.split(":")[0] in ("cycles", "instructions", "branches", "branch-misses", "cache-misses", "cache-references") or event.startswith("LLC") for event in explicit)
            findings.append(Finding(
                "perf", NO if needs_hw else WARN, "no hardware PMU (/sys/bus/event_source/devices/cpu missing): IPC and MPKI unavailable, software events only",
                "use a bare-metal host or a VM with a virtual PMU", ("perf",) if needs_hw else (),
            ))
    if host.get("nmi_watchdog") == 1 and host.get("hardware_pmu"):
        findings.append(Finding("perf", WARN, "the NMI watchdog holds one hardware counter", "echo 0 > /proc/sys/kernel/nmi_watchdog"))
    return findings


def check_rdt(root, host: dict, live: bool, block: dict | None) -> list[Finding]:
    findings = []
    flags = host.get("rdt_flags") or []
    monitoring_flags = [f for f in flags if f.startswith("cqm")]
    if monitoring_flags:
        findings.append(Finding("rdt", OK, f"CPU flags: {' '.join(flags)}"))
    else:
        findings.append(Finding("rdt", NO, "no RDT monitoring flags (cqm_llc, cqm_mbm_*) in /proc/cpuinfo", f"{_qos_cpu(host)} with cache and bandwidth monitoring; check the rdt= kernel option", ("rdt",)))
    if "rdt_a" not in flags or "cat_l3" not in flags:
        findings.append(Finding("rdt", WARN if flags else INFO, "no L3 cache allocation (rdt_a/cat_l3 flags): `faasprof sweep` over llc_ways is unavailable", f"{_qos_cpu(host)} with L3 cache allocation"))
    resctrl = host.get("resctrl") or {}
    pqos = shutil.which("pqos")
    if not resctrl.get("supported"):
        findings.append(Finding("rdt", WARN if monitoring_flags else INFO, "the kernel has no resctrl filesystem", "use a kernel with CONFIG_X86_CPU_RESCTRL (≥ 4.14 for monitoring)"))
    elif not resctrl.get("mounted"):
        findings.append(Finding("rdt", WARN, "resctrl is supported but not mounted", "mount -t resctrl resctrl /sys/fs/resctrl"))
    else:
        l3 = resctrl.get("l3") or {}
        text = f"resctrl mounted at {resctrl.get('mount_point')}"
        if l3:
            text += f"; L3: {l3.get('num_closids')} CLOSes, {l3.get('ways')} ways (cbm_mask {l3.get('cbm_mask')}, min {l3.get('min_cbm_bits')} bits, shareable {l3.get('shareable_bits')})"
        mba = resctrl.get("mba")
        if mba:
            text += f"; MBA: {mba.get('num_closids')} CLOSes, min {mba.get('min_bandwidth')}%, step {mba.get('bandwidth_gran')}%"
        mon = resctrl.get("monitoring")
        if mon:
            text += f"; monitoring: {' '.join(mon.get('features') or [])} ({mon.get('num_rmids')} RMIDs)"
        findings.append(Finding("rdt", OK, text))
    if pqos:
        findings.append(Finding("rdt", OK, f"pqos found at {pqos}"))
    else:
        findings.append(Finding("rdt", INFO, "pqos is not installed (needed only without resctrl)", "apt-get install intel-cmt-cat"))
    mounted_monitoring = bool(resctrl.get("mounted") and resctrl.get("monitoring"))
    interface = (block or {}).get("interface", "auto")
    usable = monitoring_flags and ((interface in ("auto", "resctrl") and mounted_monitoring) or (interface in ("auto", "pqos") and pqos and os.geteuid() == 0))
    if not usable and monitoring_flags:
        findings.append(Finding("rdt", NO, f"no usable RDT monitoring interface (interface {interface})", "mount resctrl, or install pqos and run as root", ("rdt",)))
    return findings


def check_blktrace(root, host: dict, live: bool, block: dict | None) -> list[Finding]:
    findings = []
    for tool in ("blktrace", "blkparse"):
        if shutil.which(tool) is None:
            findings.append(Finding("blktrace", NO, f"{tool} is not installed", "apt-get install blktrace", ("blktrace",)))
    if not host.get("debugfs_mounted"):
        findings.append(Finding("blktrace", NO, "debugfs is not mounted at /sys/kernel/debug", "mount -t debugfs debugfs /sys/kernel/debug", ("blktrace",)))
    else:
        findings.append(Finding("blktrace", OK, "debugfs mounted"))
    if os.geteuid() != 0:
        findings.append(Finding("blktrace", NO, "not root: BLKTRACESETUP needs CAP_SYS_ADMIN", "run faasprof as root", ("blktrace",)))
    devices = (block or {}).get("devices", "auto")
    if devices == "auto":
        found = data_device(root)
        devices = [found] if found else []
        if not found:
            findings.append(Finding("blktrace", NO, f"no block device found holding {DOCKER_DATA} or /", "name devices in monitoring.blktrace.devices", ("blktrace",)))
    for device in devices:
        name = os.path.basename(device)
        if root.exists(f"/sys/block/{name}/trace"):
            findings.append(Finding("blktrace", OK, f"{device} can be traced"))
        else:
            findings.append(Finding("blktrace", NO, f"{device}: /sys/block/{name}/trace missing (not a whole disk, or no CONFIG_BLK_DEV_IO_TRACE)", "name a whole disk such as /dev/sda", ("blktrace",)))
    return findings


def check_cgroups(root, host: dict, live: bool, block: dict | None) -> list[Finding]:
    info = host.get("cgroup") or {}
    version = info.get("version")
    controllers = info.get("controllers") or {}
    if version is None:
        return [Finding("cgroups", NO, "no cgroup filesystem mounted", "mount cgroup2 on /sys/fs/cgroup (or the v1 hierarchies)", ("cgroups",))]
    writable = sorted(name for name, c in controllers.items() if c.get("writable"))
    needed = ("cpu", "memory")
    missing = [name for name in needed if name not in writable]
    text = f"cgroup v{version}" if version != "hybrid" else "cgroups hybrid (v1 controllers + a v2 mount)"
    text += f"; writable controllers: {', '.join(writable) or 'none'}"
    findings = [Finding("cgroups", OK, text)]
    if missing:
        findings.append(Finding(
            "cgroups", NO, f"controllers {', '.join(missing)} are not writable: per-sandbox limits and samples unavailable (localwhisk falls back to rlimits)",
            "run as root on a host with the cpu and memory controllers enabled", ("cgroups",),
        ))
    return findings


def check_cpu(root, host: dict, live: bool, block: dict | None) -> list[Finding]:
    findings = []
    governor = host.get("governor")
    if governor is None:
        findings.append(Finding("cpu", INFO, "no cpufreq (a VM, or a driver without governors): frequency not controlled by this host"))
    elif governor == "performance":
        findings.append(Finding("cpu", OK, "governor performance"))
    else:
        findings.append(Finding("cpu", WARN, f"governor {governor}: frequency varies with load", "cpupower frequency-set -g performance"))
    turbo = host.get("turbo")
    if turbo is True:
        if _vendor(host) == "amd":
            fix = "echo 0 > /sys/devices/system/cpu/cpufreq/boost (AMD Core Performance Boost)"
        else:
            # Setting the governor resets intel_pstate's no_turbo, so the fix order matters.
            fix = "after setting the governor: echo 1 > /sys/devices/system/cpu/intel_pstate/no_turbo (or 0 > cpufreq/boost)"
        findings.append(Finding("cpu", WARN, "turbo boost on: clock speed depends on temperature and load", fix))
    elif turbo is False:
        findings.append(Finding("cpu", OK, "turbo boost off"))
    smt = host.get("smt")
    if smt == "on" or host.get("smt_active"):
        findings.append(Finding("cpu", WARN, "SMT on: sibling threads share caches and ports", "pin functions to whole cores, or echo off > /sys/devices/system/cpu/smt/control"))
    else:
        findings.append(Finding("cpu", INFO, f"SMT {smt or 'unknown'}"))
    findings.append(Finding("cpu", INFO, f"{host.get('cpu_model')}: {host.get('logical_cpus')} CPUs, {host.get('physical_cores')} cores, {host.get('sockets')} socket(s); kernel {host.get('kernel')}"))
    findings += check_core_sharing(host)
    return findings


# With this few CPUs the invoker, the platform and the functions cannot be kept apart.
FEW_CPUS = 4


def _vendor(host: dict) -> str:
    text = f"{host.get('cpu_vendor') or ''} {host.get('cpu_model') or ''}".lower()
    if "amd" in text:
        return "amd"
    if "intel" in text:
        return "intel"
    if any(word in text for word in ("arm", "aarch64", "neoverse", "graviton", "apple")):
        return "arm"
    return "unknown"


def _qos_cpu(host: dict) -> str:
    """The kind of CPU that has cache/bandwidth QoS, said for the vendor found."""
    return {
        "amd": "an AMD EPYC (Zen 2 or later; its L3 QoS is used through resctrl)",
        "intel": "an Intel Xeon with RDT (CMT/MBM, CAT)",
        "arm": "an Arm server with MPAM (resctrl on kernel 6.x); this CPU has none",
    }.get(_vendor(host), "a CPU with cache QoS (Intel RDT or AMD PQoS)")


def check_core_sharing(host: dict) -> list[Finding]:
    """A warning when the invoker, the platform and the functions must share a few CPUs."""
    cpus = host.get("logical_cpus")
    if not isinstance(cpus, int) or cpus > FEW_CPUS:
        return []
    return [
        Finding(
            "cpu",
            WARN,
            f"only {cpus} CPUs: the invoker, the platform and the functions share them, so latencies and capacities include "
            "their contention (the invoker falls behind schedule, the functions queue behind the platform)",
            "measure relative to capacity (rate {\"capacity_fraction\": F}) so results stay comparable on this host; keep other load "
            "off it; for absolute figures use a host with more cores, and cap the functions with a CPU quota (localwhisk --user-cpus N) so the invoker keeps the rest",
        )
    ]


def check_platform(args: argparse.Namespace, workload: dict | None) -> list[Finding]:
    platform_block = (workload or {}).get("platform") or {}
    connection = resolve_connection(args, platform_block, origin=getattr(args, "workload", None) or "workload")
    if connection is None:
        try:
            found = importlib.util.find_spec("localwhisk.embedded") is not None
        except ModuleNotFoundError:
            found = False
        if found:
            return [Finding("platform", OK, "no API host configured: the embedded localwhisk will be used")]
        return [Finding("platform", NO, "no API host configured and the embedded localwhisk is not installed", "pass --apihost/--auth (or ~/.wskprops), or reinstall faasprof with ./setup.sh", ("platform",))]
    url = connection.apihost + "/api/v1"
    try:
        with OpenWhiskPlatform(connection) as platform:
            info = platform.client.api_info(timeout_s=5.0)
    except PlatformError as error:
        return [Finding("platform", NO, f"{url} answered HTTP {error.status}", "check --apihost and that OpenWhisk's controller is up", ("platform",))]
    except PlatformUnreachable as error:
        return [Finding("platform", NO, f"{url} unreachable ({error.reason})", "start OpenWhisk (or check --apihost / ~/.wskprops), or drop them to use the embedded localwhisk", ("platform",))]
    except NotReadyError as error:
        return [Finding("platform", NO, str(error), "check --apihost, --auth and ~/.wskprops", ("platform",))]
    limits = info.get("limits") or {}
    text = f"OpenWhisk at {connection.apihost} ({connection.source})"
    if limits:
        text += "; limits: " + ", ".join(f"{key}={value}" for key, value in sorted(limits.items()))
    return [Finding("platform", OK, text)]


def check_docker(workload: dict | None) -> list[Finding]:
    """localwhisk's isolation docker: MISSING when the workload asks for it and Docker cannot run it."""
    local = (((workload or {}).get("platform") or {}).get("localwhisk") or {})
    problem = docker_problem()
    if problem is None:
        return [Finding("docker", OK, "localwhisk isolation docker available (daemon answers, runtime images present)")]
    if local.get("isolation") == "docker":
        return [Finding("docker", NO, f"isolation docker asked for: {problem}", None, ("platform",))]
    return [Finding("docker", INFO, f"localwhisk isolation docker unavailable: {problem}")]


# -- main ------------------------------------------------------------------------------------------


def run_doctor(args: argparse.Namespace) -> tuple[list[Finding], set[str]]:
    """All findings, and the requirements (collector names, ``platform``) the workload states."""
    root_dir = Path(args.root)
    if not root_dir.is_dir():
        raise ConfigError(f"--root: {root_dir} is not a directory; pass / or a copy of a host's /proc and /sys")
    root = Root(root_dir)
    live = root_dir.resolve() == Path("/")
    workload = _load_workload(args.workload) if args.workload else None
    blocks = normalise_block((workload or {}).get("monitoring"))
    host = collect_host(root_dir)
    findings: list[Finding] = []
    for name, check in (("perf", check_perf), ("rdt", check_rdt), ("blktrace", check_blktrace), ("cgroups", check_cgroups)):
        findings += check(root, host, live, blocks.get(name))
    findings += check_platform(args, workload)
    if not any(f.area == "platform" and f.state == OK and "OpenWhisk at" in f.text for f in findings):
        findings += check_docker(workload)
    findings += check_cpu(root, host, live, None)
    required = set(blocks) | {"platform"}
    return findings, required


def main(args: argparse.Namespace) -> int:
    findings, required = run_doctor(args)
    failing = sorted({req for f in findings if f.state == NO for req in f.blocks if req in required})
    for finding in findings:
        if finding.state == NO and not set(finding.blocks) & required:
            finding.state = "no"  # missing, but nothing asked for it
    if args.json:
        print(json.dumps({"findings": [f.__dict__ | {"blocks": list(f.blocks)} for f in findings], "required": sorted(required), "failing": failing}, indent=2))
    else:
        for finding in findings:
            print(finding.line())
    if failing:
        print(f"not ready: {', '.join(failing)} unavailable (asked for by {args.workload or 'any run'})", file=sys.stderr)
        return EXIT_NOT_READY
    asked = ", ".join(sorted(required))
    print(f"ready: {asked} available", file=sys.stderr)
    return EXIT_OK
