"""The cgroups collector: every sandbox cgroup (children of the platform's cgroup parents) read
by faasprof itself at an interval: CPU time, throttling, memory, OOM kills, paused state.

Raw output: ``samples.csv`` (cumulative values; parsed by ``faasprof.monitoring.parsers.cgroups``).
"""

from __future__ import annotations

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
from faasprof.monitoring.host import Root
from faasprof.monitoring.parsers.cgroups import parse_cgroup_samples
from faasprof.monitoring.sampling import CGROUP_COLUMNS, cgroup_parents, cgroup_rows, sample_cgroups
from faasprof.rundir import Manifest


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
        self.parents, problem = cgroup_parents(self.root, self.context.get("cgroup_parents") or {})
        return problem

    def _start(self) -> None:
        self._begin_sampling(
            ["cgroup-read", f"every {self.interval_ms} ms", *self.parents.values()],
            f"# cgroup files read by faasprof (no external tool) every {self.interval_ms} ms; sandboxes are the children of\n"
            + "".join(f"{controller}\t{path}\n" for controller, path in self.parents.items()),
        )

    def sample_once(self) -> None:
        samples = sample_cgroups(self.parents)
        self.sandboxes_seen.update(samples)
        self._write_rows(cgroup_rows(time.monotonic_ns() - (self.monotonic_ns_at_start or 0), samples))
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
