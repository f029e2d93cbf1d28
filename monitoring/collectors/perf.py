"""The perf collector: ``perf stat -x, -I <ms> -a`` counters, and THE perf readiness check.

``perf_readiness`` is the one place that decides whether perf can count here (tool on PATH,
``perf_event_paranoid`` or root for system-wide counting, which events the CPU supports); the
collector's ``check``, ``faasprof doctor``, ``faasprof mpki`` and ``faasprof native --perf`` all
ask it. Raw output is parsed by ``faasprof.monitoring.parsers.perf`` (the one perf parser).
"""

from __future__ import annotations

import argparse
import math
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from faasprof.monitoring.collectors.base import (
    NO,
    OK,
    WARN,
    Finding,
    ParseArgument,
    ParseKind,
    Plot,
    ProcessCollector,
    is_root,
    read_output,
)
from faasprof.monitoring.derived import add_perf_metrics
from faasprof.monitoring.host import Root, cgroup_info
from faasprof.monitoring.parsers.perf import event_units, parse_perf_stat, perf_wide, probe_support
from faasprof.rundir import Manifest

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
_HARDWARE_EVENTS = ("cycles", "instructions", "branches", "branch-misses", "cache-misses", "cache-references")


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
    facts = {
        "perf_path": shutil.which("perf"),
        "paranoid": root.read_int("/proc/sys/kernel/perf_event_paranoid"),
        "root": is_root(),
        "system_wide": system_wide,
    }
    ready = PerfReadiness(probed=False, **facts)
    if not probe or ready.problem("") is not None:
        return ready
    supported, dropped, error = probe_perf_events(list(events), system_wide=system_wide)
    return PerfReadiness(probed=True, supported=tuple(supported), dropped=dict(dropped), probe_error=error, **facts)


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


# -- parsing -------------------------------------------------------------------------------------


def _parse_perf(text: str, args: argparse.Namespace):
    long = parse_perf_stat(text, sep=getattr(args, "sep", ",") or ",")
    return long if getattr(args, "long", False) else add_perf_metrics(perf_wide(long))


# -- the collector -------------------------------------------------------------------------------


class PerfCollector(ProcessCollector):
    """System-wide ``perf stat -x, -I <ms>`` counters; unsupported events are dropped up front."""

    name = "perf"
    summary = "System-wide perf stat counters (IPC, branch and LLC MPKI, faults, context switches)."
    tool = "`perf stat -x, -I 100 -a` (`per`: system, cpu, core, cgroup), stopped with SIGINT; events the CPU lacks are dropped with a warning, never recorded as zeros"
    raw_outputs = "`perf_stat.csv`"
    output_name = "perf_stat.csv"
    version_commands = {"perf": ["perf", "--version"]}
    # task-clock over the interval: counted system-wide (perf stat -a) it is the number of CPUs
    # whatever the load, so it means nothing as a utilisation.
    unplottable_columns = {"cpu_utilization": "system-wide task-clock over the interval is the CPU count, not a load"}
    # Per kilo-instruction where instructions are counted (the paper's Figure 14), then rates.
    plots = (
        Plot("ipc", "IPC", "instructions per cycle"),
        Plot("branch_mpki", "branch misses", "per kilo-instruction"),
        Plot("llc_mpki", "LLC misses", "per kilo-instruction"),
        Plot("page_faults_pki", "page faults", "per kilo-instruction"),
        Plot("context_switches_pki", "context switches", "per kilo-instruction"),
        Plot("page_faults_per_s", "page faults", "per s"),
        Plot("context_switches_per_s", "context switches", "per s"),
    )
    defaults = {"interval_ms": 100, "events": None, "per": "system", "required": False}
    options_schema = {
        "interval_ms": {"$ref": "#/$defs/interval_ms", "description": "perf stat interval."},
        "events": {
            "type": ["array", "null"],
            "items": {"type": "string", "minLength": 1},
            "description": "perf events (default: the IPC and MPKI set).",
        },
        "per": {
            "enum": ["system", "cpu", "core", "cgroup"],
            "description": "Aggregation: system-wide, per CPU, per physical core, or per cgroup of the platform's sandboxes.",
        },
    }
    parse_kinds = (
        ParseKind(
            "perf",
            "`perf stat -x, [-I ms] ...` output; one row per interval and unit (CPU, core, cgroup) with one column per event and the derived metrics",
            _parse_perf,
            (
                ParseArgument("--sep", "the -x separator the file was written with (default ,)", {"default": ","}),
                ParseArgument("--long", "one row per counter instead of one per interval", {"action": "store_true"}),
            ),
        ),
    )

    def __init__(self, block: dict, context: dict):
        super().__init__(block, context)
        self.events: list[str] = list(self.block.get("events") or DEFAULT_PERF_EVENTS)
        self.interval_ms = int(self.block.get("interval_ms") or 100)
        self.per = self.block.get("per") or "system"
        self.cgroups: list[str] = []
        self.dropped: dict[str, str] = {}

    def _check(self) -> str | None:
        ready = perf_readiness(self.events, self.root, system_wide=True, probe=False)
        reason = ready.problem("drop monitoring.perf")
        if reason is not None:
            return reason
        if self.per == "cgroup":
            self.cgroups = self._perf_cgroups()
            if not self.cgroups:
                return (
                    "perf: per cgroup needs the sandboxes' parent cgroup in a perf_event hierarchy "
                    "(cgroup v2, or v1 with perf_event mounted); none of the platform's cgroup parents is in one; "
                    'use "per": "system"'
                )
        ready = perf_readiness(self.events, self.root, system_wide=True)
        reason = ready.problem("drop monitoring.perf")
        if reason is not None:
            return reason
        self.dropped = dict(ready.dropped)
        for event, why in self.dropped.items():
            self.warnings.append(f"perf: event {event} dropped ({why})")
        self.events = list(ready.supported)
        return None

    def _perf_cgroups(self) -> list[str]:
        """The platform's sandbox parents as names relative to a perf_event hierarchy."""
        info = cgroup_info(self.root)
        hierarchy = (info["controllers"].get("perf_event") or {}).get("mount") or info.get("v2_mount")
        if hierarchy is None:
            return []
        names = []
        for path in (self.context.get("cgroup_parents") or {}).values():
            path = str(path)
            if path.startswith(hierarchy.rstrip("/") + "/"):
                names.append(path[len(hierarchy.rstrip("/")) + 1 :])
        return sorted(set(names))

    def argv(self, output: str) -> list[str]:
        argv = ["perf", "stat", "-x,", "-I", str(self.interval_ms), "-a"]
        if self.per == "cpu":
            argv.append("-A")
        elif self.per == "core":
            argv.append("--per-core")
        argv += ["-e", ",".join(self.events)]
        if self.per == "cgroup":
            argv += ["--for-each-cgroup", ",".join(self.cgroups)]
        # Bounded even if nobody stops it.
        count = math.ceil(self._bound_s() * 1000.0 / self.interval_ms)
        argv += ["--interval-count", str(count), "-o", output]
        return argv

    def _start(self) -> None:
        self._launch(self.argv(self.output_name))
        self.outputs = [self.output_name]
        self._startup_check()

    def describe(self) -> dict:
        data = super().describe()
        data["events"] = list(self.events)
        data["dropped_events"] = dict(self.dropped)
        data["layout"] = {"sep": ",", "interval_ms": self.interval_ms, "per": self.per, "cgroups": list(self.cgroups)}
        return data

    @classmethod
    def load_frame(cls, directory: Path, meta: dict, offset_s: float, manifest: Manifest):
        text = read_output(directory / cls.output_name)
        if text is None:
            return None
        long = parse_perf_stat(text, sep=(meta.get("layout") or {}).get("sep", ","))
        if long.empty:
            return None
        wide = add_perf_metrics(perf_wide(long))
        wide.insert(0, "t_s", offset_s + wide["time_s"])
        wide.attrs["units"] = event_units(long)  # an event's column is named after the event, not its unit
        return wide

    @classmethod
    def doctor(cls, root: Root, host: dict, live: bool, block: dict | None) -> list[Finding]:
        explicit = list((block or {}).get("events") or [])
        wanted = explicit or list(DEFAULT_PERF_EVENTS)
        ready = perf_readiness(wanted, root, system_wide=True, probe=live)
        findings = []
        perf = ready.perf_path  # the tool on this machine, also when reading another tree
        if perf is None:
            findings.append(
                Finding(
                    "perf",
                    NO,
                    "perf is not installed",
                    "apt-get install linux-perf (Ubuntu: linux-tools-$(uname -r))",
                    ("perf",),
                )
            )
        else:
            findings.append(Finding("perf", OK, f"perf found at {perf}"))
        paranoid = host.get("perf_event_paranoid")
        if paranoid is None:
            findings.append(
                Finding(
                    "perf",
                    NO,
                    "no /proc/sys/kernel/perf_event_paranoid: the kernel has no perf events",
                    "use a kernel with CONFIG_PERF_EVENTS",
                    ("perf",),
                )
            )
        elif ready.root or paranoid <= 0:
            findings.append(
                Finding(
                    "perf",
                    OK,
                    f"perf_event_paranoid={paranoid}"
                    + (" (running as root: system-wide counting allowed)" if ready.root else ""),
                )
            )
        else:
            findings.append(
                Finding(
                    "perf",
                    NO,
                    f"perf_event_paranoid={paranoid} and not root: no system-wide counting",
                    PARANOID_FIX,
                    ("perf",),
                )
            )
        hardware = ("cycles", "instructions")
        if ready.probed:
            if ready.probe_error:
                findings.append(
                    Finding(
                        "perf",
                        NO,
                        f"event probe failed ({ready.probe_error})",
                        "run `perf stat -a -e cycles -- true` by hand",
                        ("perf",),
                    )
                )
            else:
                hw_ok = all(event in ready.supported for event in hardware if event in wanted)
                state = OK if hw_ok and not ready.dropped else (NO if explicit and ready.dropped else WARN)
                text = f"events supported: {', '.join(ready.supported) or 'none'}"
                if ready.dropped:
                    text += f"; not supported: {', '.join(ready.dropped)}"
                fix = None
                if not hw_ok:
                    fix = (
                        "hardware counters need a bare-metal host or a VM with a virtual PMU (no /sys/bus/event_source/devices/cpu here)"
                        if host.get("hardware_pmu") is None
                        else "check `perf stat -e cycles -a -- true`"
                    )
                findings.append(Finding("perf", state, text, fix, ("perf",) if state == NO else ()))
        else:
            pmu = host.get("hardware_pmu")
            if pmu:
                findings.append(
                    Finding(
                        "perf",
                        OK,
                        f"hardware PMU present ({pmu}" + (f", {host['pmu_name']})" if host.get("pmu_name") else ")"),
                    )
                )
            else:
                needs_hw = any(event.split(":")[0] in _HARDWARE_EVENTS or event.startswith("LLC") for event in explicit)
                findings.append(
                    Finding(
                        "perf",
                        NO if needs_hw else WARN,
                        "no hardware PMU (/sys/bus/event_source/devices/cpu missing): IPC and MPKI unavailable, software events only",
                        "use a bare-metal host or a VM with a virtual PMU",
                        ("perf",) if needs_hw else (),
                    )
                )
        if host.get("nmi_watchdog") == 1 and host.get("hardware_pmu"):
            findings.append(
                Finding(
                    "perf",
                    WARN,
                    "the NMI watchdog holds one hardware counter",
                    "echo 0 > /proc/sys/kernel/nmi_watchdog",
                )
            )
        return findings
