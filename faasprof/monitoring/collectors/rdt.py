"""The rdt collector: Intel RDT LLC occupancy and memory bandwidth per core group, through resctrl
(read by a thread, no tool) when it is mounted, else ``pqos`` (intel-cmt-cat).

Raw output: ``resctrl_samples.csv`` (parsed by ``faasprof.monitoring.parsers.resctrl``) or ``pqos.csv``
(``faasprof.monitoring.parsers.pqos``); frames carry memory bandwidth in MB/s and as a share of the stated
peak (``monitoring.rdt.peak_mbps``, else the host's ``mem_peak_bw_mbps``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import time
from pathlib import Path

from faasprof.monitoring.collectors.base import (
    INFO,
    NO,
    OK,
    WARN,
    Collector,
    Finding,
    ParseArgument,
    ParseKind,
    Plot,
    ProcessCollector,
    SamplingCollector,
    read_output,
)
from faasprof.monitoring.derived import add_bandwidth_share
from faasprof.monitoring.host import Root, cpu_vendor_kind, parse_cpu_list, resctrl_info
from faasprof.monitoring.parsers.pqos import parse_pqos, parse_pqos_csv
from faasprof.monitoring.parsers.resctrl import parse_resctrl_samples
from faasprof.monitoring.tools import is_root, pqos_argv, pqos_core_spec, pqos_problem, rdt_flags_problem
from faasprof.rundir import Manifest

_PEAK = ParseArgument("--peak-mbps", "the memory bandwidth peak, for mem_bw_share", {"type": float})


def _parse_pqos(text: str, args: argparse.Namespace):
    interval_ms = getattr(args, "interval_ms", None)
    interval_s = interval_ms / 1000.0 if interval_ms else None
    frame = parse_pqos(text, drop_first=not getattr(args, "keep_first", False), interval_s=interval_s)
    return add_bandwidth_share(frame, getattr(args, "peak_mbps", None))


def _parse_resctrl(text: str, args: argparse.Namespace):
    return add_bandwidth_share(parse_resctrl_samples(text), getattr(args, "peak_mbps", None))


def host_peak_mbps(host: dict) -> float | None:
    """The host's stated memory-bandwidth peak (the manifest's ``host.mem_peak_bw_mbps``)."""
    for key in ("mem_peak_bw_mbps", "memory_peak_bw_mbps"):
        if host.get(key):
            return float(host[key])
    return None


def qos_cpu(host: dict) -> str:
    """The kind of CPU that has cache/bandwidth QoS, said for the vendor found."""
    return {
        "amd": "an AMD EPYC (Zen 2 or later; its L3 QoS is used through resctrl)",
        "intel": "an Intel Xeon with RDT (CMT/MBM, CAT)",
        "arm": "an Arm server with MPAM (resctrl on kernel 6.x); this CPU has none",
    }.get(cpu_vendor_kind(host), "a CPU with cache QoS (Intel RDT or AMD PQoS)")


class ResctrlSampler(SamplingCollector):
    """Reads ``mon_data`` of resctrl monitoring groups every interval (a thread, no tool)."""

    name = "rdt"
    output_name = "resctrl_samples.csv"
    default_interval_ms = 100
    header = "elapsed_ns,group,domain,llc_occupancy,mbm_total_bytes,mbm_local_bytes\n"
    thread_name = "rdt-resctrl"

    def __init__(self, block: dict, context: dict):
        super().__init__(block, context)
        self.mount: str | None = None
        self.groups: dict[str, str] = {}  # name → directory (host path)
        self._created: list[Path] = []

    def _check(self) -> str | None:
        info = resctrl_info(self.root)
        if not info["supported"]:
            return "rdt: the kernel has no resctrl (not in /proc/filesystems); use a kernel with CONFIG_X86_CPU_RESCTRL or interface pqos"
        if not info["mounted"]:
            return "rdt: resctrl is not mounted; `mount -t resctrl resctrl /sys/fs/resctrl` (or use interface pqos)"
        monitoring = info.get("monitoring")
        if not monitoring or not {"llc_occupancy", "mbm_total_bytes"} & set(monitoring["features"]):
            return "rdt: resctrl has no L3 monitoring (info/L3_MON missing); check `dmesg | grep resctrl` and the rdt= boot option"
        self.mount = info["mount_point"]
        return None

    def _host(self, path: str) -> Path:
        return self.root.path(path)

    def _start(self) -> None:
        assert self.dir is not None and self.mount is not None
        cores = self.block.get("cores", "all")
        base = self._host(self.mount)
        if cores == "all":
            self.groups = {".": str(base)}
            for entry in sorted(os.listdir(base)):
                path = base / entry
                if entry not in ("info", "mon_groups", "mon_data") and (path / "mon_data").is_dir():
                    self.groups[entry] = str(path)
        else:
            for index, cpu_group in enumerate(cores):
                parent = self._ctrl_group_of(base, cpu_group)
                path = parent / "mon_groups" / f"faasprof-{os.getpid()}-g{index}"
                path.mkdir()
                self._created.append(path)
                (path / "cpus_list").write_text(",".join(map(str, cpu_group)) + "\n")
                # The name goes into a CSV column: no commas.
                self.groups[f"g{index}:{'+'.join(map(str, cpu_group))}"] = str(path)
        self._begin_sampling(
            ["resctrl-read", str(base), f"every {self.interval_ms} ms", *self.groups],
            f"# resctrl monitoring read by faasprof (no external tool) every {self.interval_ms} ms\n"
            + "".join(f"{name}\t{path}\n" for name, path in self.groups.items()),
        )

    def _ctrl_group_of(self, base: Path, cpus: list[int]) -> Path:
        """The CTRL_MON group whose CPUs hold ``cpus`` (a MON group must stay inside its parent)."""
        for entry in sorted(os.listdir(base)):
            path = base / entry
            if entry in ("info", "mon_groups", "mon_data") or not (path / "cpus_list").exists():
                continue
            owned = set(parse_cpu_list((path / "cpus_list").read_text()))
            if set(cpus) <= owned:
                return path
        return base

    def sample_once(self) -> None:
        elapsed = time.monotonic_ns() - (self.monotonic_ns_at_start or 0)
        lines = []
        for name, path in self.groups.items():
            mon = Path(path) / "mon_data"
            for domain_dir in sorted(mon.iterdir()) if mon.is_dir() else []:
                if not domain_dir.name.startswith("mon_L3_"):
                    continue
                values = []
                for counter in ("llc_occupancy", "mbm_total_bytes", "mbm_local_bytes"):
                    try:
                        values.append((domain_dir / counter).read_text().strip())
                    except OSError:
                        values.append("")
                lines.append(f"{elapsed},{name},{domain_dir.name[7:]},{','.join(values)}\n")
        self._write_rows("".join(lines))

    def _cleanup(self) -> None:
        for path in reversed(self._created):
            try:
                path.rmdir()
            except OSError as error:
                self.warnings.append(f"rdt: could not remove {path} ({error.strerror}); rmdir it by hand")

    def describe(self) -> dict:
        data = super().describe()
        data["groups"] = dict(self.groups)
        data["interval_ms"] = self.interval_ms
        return data


class PqosCollector(ProcessCollector):
    """``pqos -m ... -u csv -o pqos.csv`` (intel-cmt-cat)."""

    name = "rdt"
    output_name = "pqos.csv"

    def __init__(self, block: dict, context: dict):
        super().__init__(block, context)
        self.interval_ms = int(self.block.get("interval_ms") or 100)

    def _check(self) -> str | None:
        return pqos_problem()

    def argv(self) -> list[str]:
        argv, self.interval_ms = pqos_argv(
            pqos_core_spec(self.root, self.block.get("cores", "all")),
            self.interval_ms,
            self._bound_s(),
            self.output_name,
        )
        return argv

    def _start(self) -> None:
        self._launch(self.argv())
        self.outputs = [self.output_name]
        self._startup_check(0.5)

    def describe(self) -> dict:
        data = super().describe()
        data["interval_ms"] = self.interval_ms
        return data


class RdtCollector(Collector):
    """LLC occupancy and memory bandwidth per core group: resctrl when mounted, else pqos."""

    name = "rdt"
    summary = "Intel RDT: LLC occupancy and local/remote memory bandwidth."
    tool = "per core group (`cores`): resctrl's `mon_data` read by faasprof when resctrl is mounted, else `pqos -m ... -u csv` (`interface`)"
    raw_outputs = "`resctrl_samples.csv` or `pqos.csv`"
    version_commands = {"pqos": ["pqos", "--version"]}
    plots = (
        Plot("mem_bw_mbps", "memory bandwidth", "MB/s"),
        Plot("llc_occupancy_bytes", "LLC occupancy", "KiB", 1 / 1024),
    )
    defaults = {"interval_ms": 100, "cores": "all", "interface": "auto", "required": False}
    options_schema = {
        "interval_ms": {"$ref": "#/$defs/interval_ms"},
        "cores": {
            "anyOf": [
                {"const": "all"},
                {
                    "type": "array",
                    "items": {"type": "array", "items": {"type": "integer", "minimum": 0}, "minItems": 1},
                    "minItems": 1,
                },
            ],
            "description": 'Core groups to monitor: "all" or a list of lists of CPU numbers.',
        },
        "interface": {"enum": ["auto", "resctrl", "pqos"], "description": "resctrl when mounted, else pqos (auto)."},
        "peak_mbps": {
            "type": "number",
            "exclusiveMinimum": 0,
            "description": "The server's peak memory bandwidth in MB/s; bandwidth is also reported as a share of it.",
        },
    }
    parse_kinds = (
        ParseKind(
            "pqos",
            "`pqos -u csv` or text output; the first sample is dropped",
            _parse_pqos,
            (
                ParseArgument(
                    "--interval-ms",
                    "the sampling interval (-i × 100 ms; default: from the Time column)",
                    {"type": float},
                ),
                _PEAK,
                ParseArgument(
                    "--keep-first", "keep the first sample (it covers almost no time)", {"action": "store_true"}
                ),
            ),
        ),
        ParseKind(
            "resctrl", "the rdt collector's `resctrl_samples.csv` (cumulative bytes → MB/s)", _parse_resctrl, (_PEAK,)
        ),
    )

    def __init__(self, block: dict, context: dict):
        super().__init__(block, context)
        self.interval_ms = int(self.block.get("interval_ms") or 100)
        self.interface: str | None = None
        self._impl: Collector | None = None

    def _check(self) -> str | None:
        wanted = self.block.get("interface") or "auto"
        flags_problem = rdt_flags_problem(self.root)
        if flags_problem is not None:
            return flags_problem
        resctrl = resctrl_info(self.root)
        reasons = []
        if wanted in ("auto", "resctrl"):
            impl: Collector = ResctrlSampler(self.block, self.context)
            reason = impl.check()
            if reason is None:
                self.interface, self._impl = "resctrl", impl
                return None
            reasons.append(reason)
            if wanted == "resctrl":
                return reason
        if wanted in ("auto", "pqos"):
            impl = PqosCollector(self.block, self.context)
            reason = impl.check()
            if reason is None:
                self.interface, self._impl = "pqos", impl
                if not resctrl["mounted"]:
                    self.warnings.append("rdt: resctrl is not mounted; using pqos")
                return None
            reasons.append(reason)
        return "; ".join(reasons)

    def _start(self) -> None:
        assert self._impl is not None and self.dir is not None
        impl = self._impl
        impl.dir = self.dir
        impl._checked = None
        impl.status = "not_started"
        impl._start()
        if impl.status == "not_started":
            impl.status = "running"
        self._sync()

    def _sync(self) -> None:
        impl = self._impl
        if impl is None:
            return
        self.command = impl.command
        self.wall_ns_at_start, self.monotonic_ns_at_start = impl.wall_ns_at_start, impl.monotonic_ns_at_start
        self.outputs = impl.outputs
        for source, target in ((impl.errors, self.errors), (impl.warnings, self.warnings)):
            for item in source:
                if item not in target:
                    target.append(item)
        if impl.status in ("failed", "died"):
            self.status = impl.status

    def alive(self) -> bool:
        if self.status != "running" or self._impl is None:
            return False
        ok = self._impl.alive()
        self._sync()
        if not ok and self.status == "running":
            self.status = "died"
        return ok

    def _stop(self) -> None:
        if self._impl is not None:
            self._impl.stop()
            self._sync()

    def describe(self) -> dict:
        data = super().describe()
        data["interface"] = self.interface
        if self._impl is not None:
            inner = self._impl.describe()
            for key in ("returncode", "groups", "interval_ms"):
                if key in inner:
                    data[key] = inner[key]
        return data

    @classmethod
    def load_frame(cls, directory: Path, meta: dict, offset_s: float, manifest: Manifest):
        # The workload's monitoring.rdt.peak_mbps (kept in the settings) wins over the host's.
        peak_mbps = (meta.get("settings") or {}).get("peak_mbps") or host_peak_mbps(manifest.host)
        frame = None
        text = read_output(directory / ResctrlSampler.output_name)
        if text is not None:
            frame = parse_resctrl_samples(text)
        else:
            text = read_output(directory / PqosCollector.output_name)
            if text is not None:
                interval_ms = meta.get("interval_ms") or (meta.get("settings") or {}).get("interval_ms") or 100
                frame = parse_pqos_csv(text, interval_s=float(interval_ms) / 1000.0)
        if frame is None or frame.empty:
            return None
        frame = add_bandwidth_share(frame, peak_mbps)
        frame.insert(0, "t_s", offset_s + frame["elapsed_s"])
        return frame

    @classmethod
    def doctor(cls, root: Root, host: dict, live: bool, block: dict | None) -> list[Finding]:
        findings = []
        flags = host.get("rdt_flags") or []
        monitoring_flags = [f for f in flags if f.startswith("cqm")]
        if monitoring_flags:
            findings.append(Finding("rdt", OK, f"CPU flags: {' '.join(flags)}"))
        else:
            findings.append(
                Finding(
                    "rdt",
                    NO,
                    "no RDT monitoring flags (cqm_llc, cqm_mbm_*) in /proc/cpuinfo",
                    f"{qos_cpu(host)} with cache and bandwidth monitoring; check the rdt= kernel option",
                    ("rdt",),
                )
            )
        if "rdt_a" not in flags or "cat_l3" not in flags:
            findings.append(
                Finding(
                    "rdt",
                    WARN if flags else INFO,
                    "no L3 cache allocation (rdt_a/cat_l3 flags): `faasprof sweep` over llc_ways is unavailable",
                    f"{qos_cpu(host)} with L3 cache allocation",
                )
            )
        resctrl = host.get("resctrl") or {}
        pqos = shutil.which("pqos")
        if not resctrl.get("supported"):
            findings.append(
                Finding(
                    "rdt",
                    WARN if monitoring_flags else INFO,
                    "the kernel has no resctrl filesystem",
                    "use a kernel with CONFIG_X86_CPU_RESCTRL (≥ 4.14 for monitoring)",
                )
            )
        elif not resctrl.get("mounted"):
            findings.append(
                Finding("rdt", WARN, "resctrl is supported but not mounted", "mount -t resctrl resctrl /sys/fs/resctrl")
            )
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
            findings.append(
                Finding(
                    "rdt", INFO, "pqos is not installed (needed only without resctrl)", "apt-get install intel-cmt-cat"
                )
            )
        mounted_monitoring = bool(resctrl.get("mounted") and resctrl.get("monitoring"))
        interface = (block or {}).get("interface", "auto")
        usable = monitoring_flags and (
            (interface in ("auto", "resctrl") and mounted_monitoring)
            or (interface in ("auto", "pqos") and pqos and is_root())
        )
        if not usable and monitoring_flags:
            findings.append(
                Finding(
                    "rdt",
                    NO,
                    f"no usable RDT monitoring interface (interface {interface})",
                    "mount resctrl, or install pqos and run as root",
                    ("rdt",),
                )
            )
        return findings
