"""The vmstat collector: host-wide CPU time split, context switches, run queue, page faults,
paging and swapping, read by faasprof from ``/proc/stat`` and ``/proc/vmstat`` every interval
(what vmstat(8) prints, without running it).

Raw output ``vmstat.csv``: one row per read, ``elapsed_ns`` since the start anchor and the kernel's
values as they are (cumulative counters, CPU times in USER_HZ ticks; ``procs_running`` and
``procs_blocked`` are gauges). ``parse_vmstat_samples`` turns consecutive rows into per-interval
shares and rates; a counter that went down (it cannot, short of a reboot) gives NaN, never a
negative rate.
"""

from __future__ import annotations

import argparse
import csv
import io
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
from faasprof.monitoring.parsers.samples import require_header
from faasprof.monitoring.sampling import CPU_FIELDS, vmstat_problem, vmstat_row
from faasprof.monitoring.sampling import VMSTAT_COLUMNS as COLUMNS
from faasprof.rundir import Manifest


def parse_vmstat_samples(text: str):
    """Per-interval frame from ``vmstat.csv``: ``elapsed_s`` (end of the interval), ``interval_s``,
    CPU shares of all CPU time in the interval (``cpu_busy_share`` = all but idle and iowait), and
    per-second rates; ``procs_running``/``procs_blocked`` as read at the end of the interval."""
    import numpy as np
    import pandas as pd

    reader = csv.DictReader(io.StringIO(text))
    if reader.fieldnames is not None:
        require_header(reader.fieldnames, ("elapsed_ns", "cpu_user_ticks", "ctxt"), "the vmstat collector's vmstat.csv")
    rows = list(reader)
    raw = pd.DataFrame(rows, columns=list(COLUMNS)).apply(pd.to_numeric, errors="coerce").astype("float64")
    if len(raw) < 2:
        return pd.DataFrame(columns=["elapsed_s", "interval_s"])
    delta = raw.diff().iloc[1:].reset_index(drop=True)
    delta = delta.mask(delta < 0)  # a counter that went down: no value for that interval
    end = raw.iloc[1:].reset_index(drop=True)
    interval_s = delta["elapsed_ns"] / 1e9
    ticks = delta[[f"cpu_{name}_ticks" for name in CPU_FIELDS]]
    total = ticks.sum(axis=1, min_count=len(CPU_FIELDS)).replace(0, np.nan)
    frame = pd.DataFrame({"elapsed_s": end["elapsed_ns"] / 1e9, "interval_s": interval_s})
    frame["cpu_busy_share"] = (total - delta["cpu_idle_ticks"] - delta["cpu_iowait_ticks"]) / total
    for name in ("user", "system", "iowait", "steal"):
        frame[f"cpu_{name}_share"] = delta[f"cpu_{name}_ticks"] / total
    rates = {
        "context_switches_per_s": "ctxt",
        "interrupts_per_s": "intr",
        "forks_per_s": "forks",
        "page_faults_per_s": "pgfault",
        "major_faults_per_s": "pgmajfault",
        "page_in_kib_per_s": "pgpgin",  # the kernel counts pgpgin/pgpgout in KiB
        "page_out_kib_per_s": "pgpgout",
        "swap_in_pages_per_s": "pswpin",
        "swap_out_pages_per_s": "pswpout",
    }
    for column, counter in rates.items():
        frame[column] = delta[counter] / interval_s.replace(0, np.nan)
    frame["procs_running"] = end["procs_running"]
    frame["procs_blocked"] = end["procs_blocked"]
    return frame


def _parse(text: str, _args: argparse.Namespace):
    return parse_vmstat_samples(text)


class VmstatCollector(SamplingCollector):
    """Reads ``/proc/stat`` and ``/proc/vmstat`` every ``interval_ms`` in a thread (no tool)."""

    name = "vmstat"
    summary = "Host-wide CPU time split, context switches, run queue, page faults, paging and swapping."
    tool = "`/proc/stat` and `/proc/vmstat` read by faasprof each `interval_ms` (what vmstat(8) prints)"
    raw_outputs = "`vmstat.csv`"
    output_name = "vmstat.csv"
    header = ",".join(COLUMNS) + "\n"
    thread_name = "vmstat-sampler"
    defaults = {"interval_ms": 500, "required": False}
    options_schema = {"interval_ms": {"$ref": "#/$defs/interval_ms"}}
    plots = (
        Plot("page_faults_per_s", "page faults", "per s"),
        Plot("context_switches_per_s", "context switches", "per s"),
    )
    parse_kinds = (
        ParseKind(
            "vmstat", "the vmstat collector's `vmstat.csv` → CPU shares, switches, faults and paging per second", _parse
        ),
    )

    def _check(self) -> str | None:
        return vmstat_problem(self.root)

    def _start(self) -> None:
        self._begin_sampling(
            ["proc-read", "/proc/stat", "/proc/vmstat", f"every {self.interval_ms} ms"],
            f"# /proc/stat and /proc/vmstat read by faasprof (no external tool) every {self.interval_ms} ms\n",
        )

    def sample_once(self) -> None:
        self._write_rows(vmstat_row(time.monotonic_ns() - (self.monotonic_ns_at_start or 0), self.root))

    @classmethod
    def load_frame(cls, directory: Path, meta: dict, offset_s: float, manifest: Manifest):
        return samples_on_run_clock(directory / cls.output_name, parse_vmstat_samples, offset_s)

    @classmethod
    def doctor(cls, root: Root, host: dict, live: bool, block: dict | None) -> list[Finding]:
        reason = cls({}, {"host_root": str(root.root)})._check()
        if reason is None:
            return [Finding("vmstat", OK, "/proc/stat and /proc/vmstat readable")]
        text, _, fix = reason.removeprefix("vmstat: ").partition("; ")
        return [Finding("vmstat", NO, text, fix, ("vmstat",))]
