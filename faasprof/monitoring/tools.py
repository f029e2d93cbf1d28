"""The tool collectors' checks and command lines (perf, blktrace, pqos), in the standard library only:
the local collectors (``faasprof.monitoring.collectors``) and the agent on a remote host
(``faasprof.monitoring.hosts.toolrun``, shipped over ssh) both ask here, so that a host decides with
the same check and runs the same command line as the machine that runs faasprof.

* perf: ``perf_readiness`` is THE perf readiness check (tool on PATH, ``perf_event_paranoid`` or
  root for system-wide counting, which events the CPU supports); ``perf_argv`` its command line;
* blktrace: ``blktrace_devices`` (its check: tools, root, debugfs, traceable disks), ``blktrace_argv``,
  ``blkparse_argv`` and ``write_blk_marker`` (the message that ties trace times to the run clock);
* rdt: ``rdt_flags_problem`` (the CPU's monitoring flags), ``pqos_problem``, ``pqos_core_spec`` and
  ``pqos_argv``.
"""

from __future__ import annotations

import math
import os
import shutil
import subprocess
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from faasprof.monitoring.host import Root, cgroup_info, cpuinfo, mounts, parse_cpu_list
from faasprof.monitoring.parsers.perf import probe_support


def is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


# -- perf ------------------------------------------------------------------------------------------

DEFAULT_PERF_EVENTS = (
    "instructions",
    "cycles",
    "cycles:u",
    "cycles:k",
    "branches",
    "branch-misses",
    "LLC-loads",
    "LLC-load-misses",
    "task-clock",
    "page-faults",
    "context-switches",
    "cpu-migrations",
)
INSTALL_HINT = "install it (Debian: apt-get install linux-perf; Ubuntu: linux-tools-$(uname -r))"
PARANOID_FIX = "run as root or `sysctl kernel.perf_event_paranoid=0`"
# Events that need a hardware PMU (a VM without a virtual PMU has software events only).
HARDWARE_EVENTS = ("cycles", "instructions", "branches", "branch-misses", "cache-misses", "cache-references")


# -- readiness -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class PerfReadiness:
    """What ``perf_readiness`` found; ``problem()`` turns it into one line (why, and the fix)."""

    perf_path: str | None
    paranoid: int | None  # None: no /proc/sys/kernel/perf_event_paranoid (no perf events in the kernel)
    root: bool
    system_wide: bool  # whether the question was about system-wide (-a) counting
    probed: bool
    supported: tuple[str, ...] = ()
    dropped: dict[str, str] = field(default_factory=dict)
    probe_error: str | None = None

    @property
    def counting_allowed(self) -> bool:
        """System-wide counting needs root or paranoid <= 0; counting one's own command, <= 2."""
        if self.root:
            return True
        if self.paranoid is None:
            return False
        return self.paranoid <= (0 if self.system_wide else 2)

    def problem(self, drop: str, require_all: bool = False) -> str | None:
        """None when perf can count (all events with ``require_all``, else at least one); else
        ``perf: why; fix`` where the fix ends with ``or <drop>`` (how to go on without perf)."""
        if self.perf_path is None:
            return f"perf: not found on PATH; {INSTALL_HINT} or {drop}"
        if self.paranoid is None and not self.root:
            return f"perf: no /proc/sys/kernel/perf_event_paranoid: the kernel has no perf events; use a kernel with CONFIG_PERF_EVENTS or {drop}"
        if not self.counting_allowed:
            limit = "<= 0" if self.system_wide else "<= 2"
            what = "system-wide counting" if self.system_wide else "counting"
            return f"perf: {what} needs root or perf_event_paranoid {limit} (it is {self.paranoid}); {PARANOID_FIX}"
        if not self.probed:
            return None
        if self.probe_error:
            return f"perf: the support probe failed ({self.probe_error}); check `perf stat{' -a' if self.system_wide else ''} -e cycles -- true` by hand"
        if require_all and self.dropped:
            return f"perf: cannot count {', '.join(self.dropped)} here ({'; '.join(f'{k}: {v}' for k, v in self.dropped.items())}); choose other events or {drop}"
        if not self.supported:
            wanted = ", ".join(self.dropped) or "none requested"
            return f"perf: none of the events {wanted} is supported on this host (no hardware PMU?); request software events such as task-clock,page-faults,context-switches"
        return None


def perf_readiness(
    events: list[str] | tuple[str, ...], root: Root | None = None, system_wide: bool = True, probe: bool = True
) -> PerfReadiness:
    """Whether perf can count ``events`` here. The events are probed (one short ``perf stat``)
    only when ``probe`` and the tool and the permission are there. ``root`` is where
    ``/proc`` is read (``faasprof doctor --root`` passes ``probe=False`` for a copied tree)."""
    root = root or Root("/")
    ready = PerfReadiness(
        perf_path=shutil.which("perf"),
        paranoid=root.read_int("/proc/sys/kernel/perf_event_paranoid"),
        root=is_root(),
        system_wide=system_wide,
        probed=False,
    )
    if not probe or ready.problem("") is not None:
        return ready
    supported, dropped, error = probe_perf_events(list(events), system_wide=system_wide)
    return replace(ready, probed=True, supported=tuple(supported), dropped=dict(dropped), probe_error=error)


_probe_cache: dict[tuple, tuple[list[str], dict[str, str], str | None]] = {}


def probe_perf_events(
    events: list[str], timeout_s: float = 20.0, system_wide: bool = True
) -> tuple[list[str], dict[str, str], str | None]:
    """``(supported, dropped {event: reason}, error)`` from ``perf stat -x, [-a] -e ... -- true``.

    One probe for all events; when perf rejects the list (a bad name makes it exit 129), each
    event is probed alone so the bad one can be named. ``<not counted>`` in a probe of a few
    microseconds is multiplexing, not lack of support: such events are kept.
    """
    key = (tuple(events), system_wide)
    if key in _probe_cache:
        return _probe_cache[key]

    def run(evs: list[str]) -> tuple[int, str]:
        done = subprocess.run(
            ["perf", "stat", "-x,", *(["-a"] if system_wide else []), "-e", ",".join(evs), "--", "true"],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            stdin=subprocess.DEVNULL,
        )
        return done.returncode, done.stderr

    try:
        rc, text = run(events)
        if rc == 0:
            statuses = probe_support(text)
        else:
            statuses = {}
            for event in events:
                rc_one, text_one = run([event])
                found = probe_support(text_one) if rc_one == 0 else {}
                statuses[event] = (
                    found.get(event) or next(iter(found.values()), None) or f"rejected by perf: {_first_line(text_one)}"
                )
    except (OSError, subprocess.TimeoutExpired) as error:
        return [], {}, str(error)
    supported, dropped = [], {}
    for event in events:
        status = statuses.get(event)
        if status is None:  # renamed by perf (e.g. the unprivileged ``:u`` fallback)
            status = next(
                (s for name, s in statuses.items() if name.split(":")[0] == event.split(":")[0]),
                "missing from the probe",
            )
        if status in ("ok", "not_counted"):
            supported.append(event)
        else:
            dropped[event] = "not supported here" if status == "not_supported" else status
    result = (supported, dropped, None)
    _probe_cache[key] = result
    return result


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "no message")


def perf_cgroups(root: Root, parents: dict[str, str] | list[str]) -> list[str]:
    """The sandboxes' parent cgroups (absolute paths) as names relative to a perf_event hierarchy."""
    info = cgroup_info(root)
    hierarchy = (info["controllers"].get("perf_event") or {}).get("mount") or info.get("v2_mount")
    if hierarchy is None:
        return []
    prefix = hierarchy.rstrip("/") + "/"
    values = parents.values() if isinstance(parents, dict) else parents
    return sorted({str(path)[len(prefix) :] for path in values if str(path).startswith(prefix)})


PERF_CGROUP_PROBLEM = (
    "perf: per cgroup needs the sandboxes' parent cgroup in a perf_event hierarchy "
    "(cgroup v2, or v1 with perf_event mounted); none of the platform's cgroup parents is in one; "
    'use "per": "system"'
)


@dataclass(frozen=True)
class PerfChoice:
    """What the perf collector counts on a host: the events it supports, those it drops (with
    why), the cgroups of ``per: cgroup``; or the ``problem`` that stops it there."""

    events: tuple[str, ...] = ()
    dropped: dict[str, str] = field(default_factory=dict)
    cgroups: tuple[str, ...] = ()
    problem: str | None = None

    @property
    def warnings(self) -> list[str]:
        return [f"perf: event {event} dropped ({why})" for event, why in self.dropped.items()]


def choose_perf(events: list[str], per: str, root: Root, cgroup_parents: dict[str, str]) -> PerfChoice:
    """The perf collector's check on this host: permission first (no probe without it), the
    cgroups of ``per: cgroup``, then the events probed."""
    reason = perf_readiness(events, root, system_wide=True, probe=False).problem("drop monitoring.perf")
    if reason is not None:
        return PerfChoice(problem=reason)
    cgroups: list[str] = []
    if per == "cgroup":
        cgroups = perf_cgroups(root, cgroup_parents)
        if not cgroups:
            return PerfChoice(problem=PERF_CGROUP_PROBLEM)
    ready = perf_readiness(events, root, system_wide=True)
    reason = ready.problem("drop monitoring.perf")
    if reason is not None:
        return PerfChoice(problem=reason)
    return PerfChoice(ready.supported, dict(ready.dropped), tuple(cgroups))


def perf_argv(
    events: list[str], interval_ms: int, per: str, cgroups: list[str], bound_s: float, output: str
) -> list[str]:
    """``perf stat -x, -I <ms> -a`` with the aggregation ``per``, bounded to ``bound_s`` even if
    nobody stops it, writing ``output``."""
    argv = ["perf", "stat", "-x,", "-I", str(interval_ms), "-a"]
    if per == "cpu":
        argv.append("-A")
    elif per == "core":
        argv.append("--per-core")
    argv += ["-e", ",".join(events)]
    if per == "cgroup":
        argv += ["--for-each-cgroup", ",".join(cgroups)]
    count = math.ceil(bound_s * 1000.0 / interval_ms)
    return [*argv, "--interval-count", str(count), "-o", output]


# -- blktrace --------------------------------------------------------------------------------------

DOCKER_DATA = "/var/lib/docker"
BLK_MARKER = "faasprof-start"


def data_device(root: Root, path: str = DOCKER_DATA) -> str | None:
    """The whole-disk block device (``/dev/sda``) holding ``path`` (or its nearest existing
    ancestor), from ``/proc/self/mountinfo`` and ``/sys/dev/block``; None if not a block device."""
    probe = path
    while probe != "/" and not root.exists(probe):
        probe = os.path.dirname(probe) or "/"
    best: tuple[int, str] | None = None
    for line in (root.read("/proc/self/mountinfo") or "").splitlines():
        parts = line.split()
        if len(parts) < 5:
            continue
        point, devnum = parts[4], parts[2]
        if probe == point or probe.startswith(point.rstrip("/") + "/") or point == "/":
            if best is None or len(point) > best[0]:
                best = (len(point), devnum)
    if best is None:
        return None
    sys_path = root.path(f"/sys/dev/block/{best[1]}")
    if not sys_path.exists():
        return None
    real = Path(os.path.realpath(sys_path))
    name = real.name
    if (real / "partition").exists():
        name = real.parent.name
    return f"/dev/{name}"


def blktrace_devices(root: Root, devices: str | list[str]) -> tuple[list[str], str | None]:
    """blktrace's check: the disks to trace (``devices``, or ``auto``: the one holding Docker's
    data) and None; or ``([], one line: why not, and the fix)``."""
    for tool in ("blktrace", "blkparse"):
        if shutil.which(tool) is None:
            return [], f"blktrace: {tool} is not installed; apt-get install blktrace (or drop monitoring.blktrace)"
    if not is_root():
        return [], "blktrace: needs root (BLKTRACESETUP); run faasprof as root"
    if not any(fstype == "debugfs" for _, point, fstype, _ in mounts(root) if point == "/sys/kernel/debug"):
        return [], "blktrace: debugfs is not mounted at /sys/kernel/debug; `mount -t debugfs debugfs /sys/kernel/debug`"
    if devices == "auto":
        found = data_device(root)
        if found is None:
            return [], (
                f"blktrace: could not find the block device holding {DOCKER_DATA} (or /); name it in monitoring.blktrace.devices"
            )
        devices = [found]
    for device in devices:
        name = os.path.basename(device)
        if not root.exists(f"/sys/block/{name}/trace"):
            return [], (
                f"blktrace: {device} cannot be traced (/sys/block/{name}/trace missing: not a whole disk, or a kernel "
                "without CONFIG_BLK_DEV_IO_TRACE); name a whole disk such as /dev/sda"
            )
    return list(devices), None


def blktrace_argv(devices: list[str], bound_s: float) -> list[str]:
    """``blktrace -d DEV... -D raw -w <bound>``: the raw trace under ``raw/`` of its folder."""
    argv = ["blktrace"]
    for device in devices:
        argv += ["-d", device]
    return [*argv, "-D", "raw", "-w", str(int(bound_s))]


def blkparse_argv(device: str) -> list[str]:
    """``blkparse`` of one traced disk's ``raw/`` into ``<disk>.blkparse.txt``."""
    name = os.path.basename(device)
    return ["blkparse", "-D", "raw", "-i", name, "-o", f"{name}.blkparse.txt"]


def write_blk_marker(root: Root, devices: list[str]) -> tuple[int | None, int | None, str | None]:
    """A message event in each trace at a known time (blkparse's times count from the first event,
    so this is what ties them to the run clock): ``(wall_ns, monotonic_ns, None)``, or
    ``(None, None, warning)`` when it could not be written."""
    wall_ns = monotonic_ns = None
    for device in devices:
        msg = root.path(f"/sys/kernel/debug/block/{os.path.basename(device)}/msg")
        deadline = time.monotonic() + 1.0
        while not msg.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        try:
            wall_ns, monotonic_ns = time.time_ns(), time.monotonic_ns()
            msg.write_text(BLK_MARKER + "\n")
        except OSError as error:
            return (
                None,
                None,
                (
                    f"blktrace: could not write the time marker to {msg} ({error.strerror}); times count from the first event"
                ),
            )
    return wall_ns, monotonic_ns, None


# -- rdt through pqos ------------------------------------------------------------------------------

RDT_MON_FLAGS = ("cqm_llc", "cqm_occup_llc", "cqm_mbm_total", "cqm_mbm_local")


def rdt_flags_problem(root: Root) -> str | None:
    """None when the CPU reports RDT monitoring; else why not, and the fix."""
    flags = cpuinfo(root)["flags"]
    if any(flag in flags for flag in RDT_MON_FLAGS):
        return None
    return (
        "rdt: the CPU reports no RDT monitoring (no cqm_llc/cqm_mbm_* flag in /proc/cpuinfo); "
        "use an Intel Xeon with CMT/MBM (and rdt= not disabling it on the kernel command line), or drop monitoring.rdt"
    )


def pqos_problem() -> str | None:
    if shutil.which("pqos") is None:
        return "rdt: pqos is not installed; apt-get install intel-cmt-cat (or mount resctrl and use interface resctrl)"
    if not is_root():
        return "rdt: pqos needs root; run faasprof as root"
    return None


def pqos_core_spec(root: Root, cores: str | list[list[int]]) -> str:
    """pqos's ``-m`` argument: every core group (``all``: the online CPUs as one) for LLC and MBM."""
    if cores == "all":
        online = parse_cpu_list(root.read_line("/sys/devices/system/cpu/online")) or list(range(os.cpu_count() or 1))
        groups = [online]
    elif isinstance(cores, str):
        raise ValueError(f'rdt cores: {cores!r} is neither "all" nor a list of core groups')
    else:
        groups = list(cores)
    text = ",".join("[" + ",".join(map(str, group)) + "]" for group in groups)
    return f"all:{text};mbt:{text}"


def pqos_argv(core_spec: str, interval_ms: int, bound_s: float, output: str) -> tuple[list[str], int]:
    """``pqos -r -m SPEC -i <tenths> -t <bound> -u csv -o output`` and the interval it samples at
    (``-i`` counts 100 ms units)."""
    tenths = max(1, round(interval_ms / 100))
    argv = ["pqos", "-r", "-m", core_spec, "-i", str(tenths), "-t", str(int(bound_s)), "-u", "csv", "-o", output]
    return argv, tenths * 100
