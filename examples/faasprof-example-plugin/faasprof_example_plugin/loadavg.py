"""The ``loadavg`` collector: ``/proc/loadavg`` read by faasprof every ``interval_ms`` (no tool).

Raw output ``monitors/loadavg/loadavg.csv``: ``elapsed_ns`` since the collector's start anchor, the
kernel's three load averages (1, 5 and 15 minutes) and its runnable and total scheduling entities
as read. ``load_frame`` puts the samples on the run clock (``t_s``) for ``faasprof analyze``.
"""

from __future__ import annotations

import time
from pathlib import Path

import pandas as pd

from faasprof.monitoring.collectors.base import NO, OK, Finding, Plot, SamplingCollector, samples_on_run_clock
from faasprof.monitoring.host import Root
from faasprof.rundir import Manifest

COLUMNS = ("elapsed_ns", "load_1min", "load_5min", "load_15min", "runnable_threads", "total_threads")


def read_loadavg(root: Root) -> tuple[float, float, float, int, int]:
    """The five fields of ``/proc/loadavg`` under ``root`` (the last PID is left out)."""
    fields = (Path(root.root) / "proc" / "loadavg").read_text(encoding="ascii").split()
    runnable, total = fields[3].split("/")
    return float(fields[0]), float(fields[1]), float(fields[2]), int(runnable), int(total)


def parse_loadavg(text: str) -> pd.DataFrame:
    """``loadavg.csv`` as a frame with ``elapsed_s`` (seconds since the start anchor) first."""
    rows = [line.split(",") for line in text.splitlines()[1:] if line.strip()]
    frame = pd.DataFrame(rows, columns=list(COLUMNS)).apply(pd.to_numeric, errors="coerce")
    frame.insert(0, "elapsed_s", frame.pop("elapsed_ns") / 1e9)
    return frame


class LoadavgCollector(SamplingCollector):
    """Reads ``/proc/loadavg`` every ``interval_ms`` in a thread."""

    name = "loadavg"
    summary = "Host load averages (1, 5, 15 min) and runnable threads, from /proc/loadavg."
    tool = "`/proc/loadavg` read by faasprof each `interval_ms`"
    raw_outputs = "`loadavg.csv`"
    output_name = "loadavg.csv"
    header = ",".join(COLUMNS) + "\n"
    thread_name = "loadavg-sampler"
    defaults = {"interval_ms": 250, "required": False}
    options_schema = {"interval_ms": {"$ref": "#/$defs/interval_ms", "description": "How often to read /proc/loadavg."}}
    plots = (Plot("load_1min", "load average, 1 min"), Plot("runnable_threads", "runnable threads"))

    def _check(self) -> str | None:
        try:
            read_loadavg(self.root)
        except (OSError, ValueError, IndexError) as error:
            return f"loadavg: cannot read {self.root.root}/proc/loadavg ({error}); run on Linux with /proc mounted"
        return None

    def _start(self) -> None:
        self._begin_sampling(
            ["proc-read", "/proc/loadavg", f"every {self.interval_ms} ms"],
            f"# /proc/loadavg read by faasprof-example-plugin every {self.interval_ms} ms\n",
        )

    def sample_once(self) -> None:
        elapsed_ns = time.monotonic_ns() - (self.monotonic_ns_at_start or 0)
        values = read_loadavg(self.root)
        handle = self._handle
        assert handle is not None, "sample_once runs between _begin_sampling and _stop"
        handle.write(",".join(str(value) for value in (elapsed_ns, *values)) + "\n")
        handle.flush()

    @classmethod
    def load_frame(cls, directory: Path, meta: dict, offset_s: float, manifest: Manifest):
        return samples_on_run_clock(directory / cls.output_name, parse_loadavg, offset_s)

    @classmethod
    def doctor(cls, root: Root, host: dict, live: bool, block: dict | None) -> list[Finding]:
        reason = cls({}, {"host_root": str(root.root)})._check()
        if reason is None:
            return [Finding("loadavg", OK, "/proc/loadavg readable")]
        return [Finding("loadavg", NO, reason.removeprefix("loadavg: "), None, ("loadavg",))]
