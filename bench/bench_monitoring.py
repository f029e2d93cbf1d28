"""Benchmark the monitoring parsers and the cgroup sampler; prints figures, never pass/fail.

    .venv/bin/python bench/bench_monitoring.py

* perf: a one-hour, 100 ms, 12-event system-wide run is 36,000 intervals × 12 rows; the recorded
  sample (tests/data/monitoring/perf/perf_stat_system_interval.csv) is repeated with shifted
  timestamps to that size, then parsed, pivoted and given derived metrics.
* cgroups: the cost of one sample of the root cgroups of this machine (every child cgroup of the
  v1 cpu, cpuacct and memory roots), i.e. what the sampler thread spends per interval.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from faasprof.monitoring.collectors.cgroups import CgroupCollector
from faasprof.monitoring.derived import add_perf_metrics
from faasprof.monitoring.parsers.perf import parse_perf_stat, perf_wide

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "tests" / "data" / "monitoring" / "perf" / "perf_stat_system_interval.csv"


def bench_perf(intervals: int = 36_000) -> None:
    rows = [line for line in SAMPLE.read_text().splitlines() if line.strip() and not line.startswith("#")]
    first = [line for line in rows if line.strip().startswith(rows[0].split(",")[0].strip())]
    rest = [line.split(",", 1)[1] for line in first]
    lines = []
    for i in range(intervals):
        stamp = f"{(i + 1) * 0.1:16.9f}"
        lines.extend(f"{stamp},{tail}" for tail in rest)
    text = "\n".join(lines) + "\n"
    start = time.perf_counter()
    long = parse_perf_stat(text)
    parsed = time.perf_counter()
    wide = add_perf_metrics(perf_wide(long))
    done = time.perf_counter()
    print(
        f"perf: {len(lines):,} rows ({len(text) / 1e6:.1f} MB, {intervals:,} intervals): parse {parsed - start:.2f} s "
        f"({len(lines) / (parsed - start):,.0f} rows/s), wide + derived {done - parsed:.2f} s → {len(wide):,} rows"
    )


def bench_cgroups(samples: int = 50) -> None:
    parents = {c: f"/sys/fs/cgroup/{c}" for c in ("cpu", "cpuacct", "memory") if os.path.isdir(f"/sys/fs/cgroup/{c}")}
    if not parents:
        print("cgroups: no cgroup v1 roots here; skipped")
        return
    collector = CgroupCollector({"interval_ms": 1000}, {"cgroup_parents": parents})
    if collector.check() is not None:
        print(f"cgroups: {collector.check()}")
        return
    with tempfile.TemporaryDirectory() as tmp:
        collector.dir = Path(tmp)
        collector._handle = open(Path(tmp) / "samples.csv", "w")
        collector.monotonic_ns_at_start = time.monotonic_ns()
        start = time.perf_counter()
        for _ in range(samples):
            collector.sample_once()
        elapsed = time.perf_counter() - start
        collector._handle.close()
    print(
        f"cgroups: {len(collector.sandboxes_seen)} cgroups per sample: {elapsed / samples * 1e3:.2f} ms per sample "
        f"({samples} samples; at the default 500 ms interval that is {elapsed / samples / 0.5 * 100:.2f} % of one CPU)"
    )


if __name__ == "__main__":
    bench_perf()
    bench_cgroups()
