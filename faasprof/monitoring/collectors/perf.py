"""The perf collector: ``perf stat -x, -I <ms> -a`` counters.

Whether perf can count here is decided by ``faasprof.monitoring.tools.perf_readiness`` (re-exported
here), which the collector's ``check``, ``faasprof doctor``, ``faasprof mpki``, ``faasprof native
--perf`` and a remote host's agent all ask; its command line is ``tools.perf_argv``. Raw output is
parsed by ``faasprof.monitoring.parsers.perf`` (the one perf parser).
"""

from __future__ import annotations

import argparse
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
    read_output,
)
from faasprof.monitoring.derived import add_perf_metrics
from faasprof.monitoring.host import Root
from faasprof.monitoring.parsers.perf import event_units, parse_perf_stat, perf_wide
from faasprof.monitoring.tools import (
    DEFAULT_PERF_EVENTS,
    HARDWARE_EVENTS,
    PARANOID_FIX,
    choose_perf,
    perf_argv,
    perf_readiness,
)
from faasprof.rundir import Manifest

__all__ = ["DEFAULT_PERF_EVENTS", "PerfCollector", "perf_readiness"]

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
        choice = choose_perf(self.events, self.per, self.root, self.context.get("cgroup_parents") or {})
        if choice.problem is not None:
            return choice.problem
        self.events, self.dropped, self.cgroups = list(choice.events), dict(choice.dropped), list(choice.cgroups)
        self.warnings.extend(choice.warnings)
        return None

    def argv(self, output: str) -> list[str]:
        return perf_argv(self.events, self.interval_ms, self.per, self.cgroups, self._bound_s(), output)

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
                needs_hw = any(event.split(":")[0] in HARDWARE_EVENTS or event.startswith("LLC") for event in explicit)
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
