"""The host's noise during a run: what other work took while the run went, read from /proc.

A thread samples, every ``INTERVAL_S``, ``/proc/stat`` (the CPUs' busy, idle and steal time; the
run queue, ``procs_running``) and the pressure stall information (``/proc/pressure/{cpu,memory,io}``,
the share of wall time some task stalled; where the kernel has none, ``/proc/vmstat``'s major page
faults and swap pages per second stand in for memory pressure). Once a second of those ticks it
also reads every process's CPU time (``/proc/PID/stat``) to tell the run's own work from other
work: the run's own is the faasprof process and its descendants (send processes, the embedded
localwhisk and its sandboxes), and any process in a ``localwhisk-*`` cgroup (a sandbox); a child's
time moves into its parent's when the parent reaps it, so a sandbox that ended still counts as own.

``other_cpu_share`` is the busy CPU time that was not the run's over all the host's CPU time
(0.5 on 2 cores: one core's worth); ``steal_share`` the time the hypervisor gave to other guests.
Standard library only, as the rest of ``faasprof.monitoring``'s samplers. The summary
(``HostNoise``, ``format_version`` 1) goes into the run's manifest as ``host_noise``; ``warning`` says
when a figure passed its threshold (``THRESHOLDS``) and what to do.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

NOISE_FORMAT_VERSION = 1
INTERVAL_S = 0.25
PROCESS_SCAN_EVERY = 4  # ticks: the process scan, the costly read, once a second
SANDBOX_CGROUP_MARK = "localwhisk-"
PSI_RESOURCES = ("cpu", "memory", "io")
# Past these the run's figures carry other work's interference (warning): a quarter of the host's
# CPU time taken by other processes, 5 % stolen by the hypervisor, a task stalled on memory 10 % of the time.
THRESHOLDS = {"other_cpu_share": 0.25, "steal_share": 0.05, "psi_memory_some_share": 0.10}
THRESHOLD_WORDS = {
    "other_cpu_share": "other processes' CPU",
    "steal_share": "steal",
    "psi_memory_some_share": "memory stall",
}


@dataclass
class CpuTimes:
    """``/proc/stat``'s first line, in clock ticks."""

    busy: int
    total: int
    steal: int


@dataclass
class HostNoise:
    """The noise of a run's host, summed up over the run (module docstring); shares of wall or CPU time."""

    format_version: int
    interval_s: float
    samples: int
    window_s: float
    cores: int
    other_cpu_share: float | None = None
    other_cpu_share_max: float | None = None  # the busiest second's
    own_cpu_share: float | None = None
    steal_share: float | None = None
    runq_mean: float | None = None  # procs_running, less the sampling thread
    runq_max: int | None = None
    psi_cpu_some_share: float | None = None
    psi_memory_some_share: float | None = None
    psi_io_some_share: float | None = None
    memory_faults_per_s: float | None = None  # major faults and swap pages, only where PSI is absent
    thresholds: dict[str, float] = field(default_factory=lambda: dict(THRESHOLDS))
    warning: str | None = None

    def to_json(self) -> dict:
        return asdict(self)


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


def cpu_times(text: str) -> tuple[CpuTimes, int]:
    """(the ``cpu`` line's times, ``procs_running``) of ``/proc/stat``'s text."""
    times, running = CpuTimes(0, 0, 0), 0
    for line in text.splitlines():
        if line.startswith("cpu "):
            values = [int(v) for v in line.split()[1:]]
            # user nice system idle iowait irq softirq steal [guest guest_nice: inside user, nice]
            values += [0] * (8 - len(values))
            idle = values[3] + values[4]
            total = sum(values[:8])
            times = CpuTimes(busy=total - idle - values[7], total=total, steal=values[7])
        elif line.startswith("procs_running "):
            running = int(line.split()[1])
    return times, running


def psi_some_us(text: str | None) -> int | None:
    """The ``some`` line's ``total`` (µs stalled) of a ``/proc/pressure/*`` file."""
    for line in (text or "").splitlines():
        if line.startswith("some "):
            for part in line.split():
                if part.startswith("total="):
                    return int(part[6:])
    return None


def vmstat_faults(text: str | None) -> int | None:
    """Major page faults plus pages swapped in and out, of ``/proc/vmstat``."""
    if not text:
        return None
    counters = dict(line.split() for line in text.splitlines() if line.count(" ") == 1)
    return sum(int(counters.get(name, 0)) for name in ("pgmajfault", "pswpin", "pswpout"))


def stat_fields(text: str) -> tuple[int, int] | None:
    """(parent pid, utime + stime + cutime + cstime) of a ``/proc/PID/stat`` text."""
    rest = text[text.rfind(")") + 2 :].split()
    if len(rest) < 15:
        return None
    return int(rest[1]), int(rest[11]) + int(rest[12]) + int(rest[13]) + int(rest[14])


class NoiseSampler:
    """Samples the host's noise in a thread between ``start`` and ``stop``; ``summary`` sums it up.
    ``proc``, ``clock``: the /proc tree and the monotonic clock read (tests give their own)."""

    def __init__(
        self,
        own_pid: int | None = None,
        interval_s: float = INTERVAL_S,
        proc: Path = Path("/proc"),
        clock: Callable[[], float] = time.monotonic,
    ):
        self.own_pid = os.getpid() if own_pid is None else own_pid
        self.interval_s = interval_s
        self.proc = proc
        self.clock = clock
        self.cores = os.cpu_count() or 1
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._sandboxes: dict[int, bool] = {}  # pid → in a sandbox cgroup (read once per pid)
        self._first: dict | None = None
        self._last: dict | None = None
        self._scans: list[tuple[CpuTimes, int]] = []  # (CPU times, own ticks) at each process scan
        self._runq: list[int] = []
        self._ticks = 0

    def start(self) -> None:
        self._first = self._last = self.sample(scan=True)
        self._thread = threading.Thread(target=self._loop, name="host-noise", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
            self._last = self.sample(scan=True)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._ticks += 1
            self._last = self.sample(scan=self._ticks % PROCESS_SCAN_EVERY == 0)

    def sample(self, scan: bool) -> dict:
        """One reading of the host (and of the processes when ``scan``); kept for the summary."""
        times, running = cpu_times(_read(self.proc / "stat") or "")
        self._runq.append(max(0, running - 1))
        reading = {
            "t": self.clock(),
            "cpu": times,
            "psi": {r: psi_some_us(_read(self.proc / "pressure" / r)) for r in PSI_RESOURCES},
            "faults": vmstat_faults(_read(self.proc / "vmstat")),
        }
        if scan:
            self._scans.append((times, self.own_ticks()))
        return reading

    def own_ticks(self) -> int:
        """The CPU time (ticks) of the run's processes (module docstring)."""
        parents: dict[int, int] = {}
        ticks: dict[int, int] = {}
        for entry in os.scandir(self.proc):
            if not entry.name.isdigit():
                continue
            fields = stat_fields(_read(Path(entry.path) / "stat") or "")
            if fields is not None:
                parents[int(entry.name)], ticks[int(entry.name)] = fields
        own = 0
        for pid in ticks:
            if self._is_own(pid, parents):
                own += ticks[pid]
        return own

    def _is_own(self, pid: int, parents: dict[int, int]) -> bool:
        seen = 0
        node = pid
        while node > 1 and seen < 64:
            if node == self.own_pid:
                return True
            node = parents.get(node, 0)
            seen += 1
        if pid not in self._sandboxes:
            self._sandboxes[pid] = SANDBOX_CGROUP_MARK in (_read(self.proc / str(pid) / "cgroup") or "")
        return self._sandboxes[pid]

    def summary(self) -> HostNoise:
        """The run's noise (``HostNoise``) from the first reading to the last."""
        first, last = self._first, self._last
        noise = HostNoise(
            format_version=NOISE_FORMAT_VERSION,
            interval_s=self.interval_s,
            samples=len(self._runq),
            window_s=0.0,
            cores=self.cores,
        )
        if first is None or last is None or last is first:
            return noise
        noise.window_s = round(last["t"] - first["t"], 3)
        total = last["cpu"].total - first["cpu"].total
        if total > 0 and len(self._scans) >= 2:
            own = self._scans[-1][1] - self._scans[0][1]
            busy = self._scans[-1][0].busy - self._scans[0][0].busy
            span = self._scans[-1][0].total - self._scans[0][0].total
            if span > 0:
                noise.other_cpu_share = _share(max(0, busy - own), span)
                noise.own_cpu_share = _share(own, span)
            noise.other_cpu_share_max = max(
                (
                    _share(max(0, (b.busy - a.busy) - (ob - oa)), b.total - a.total)
                    for (a, oa), (b, ob) in _pairs(self._scans)
                ),
                default=None,
            )
            noise.steal_share = _share(last["cpu"].steal - first["cpu"].steal, total)
        if self._runq:
            noise.runq_mean = round(sum(self._runq) / len(self._runq), 3)
            noise.runq_max = max(self._runq)
        wall_us = (last["t"] - first["t"]) * 1e6
        for resource in PSI_RESOURCES:
            a, b = first["psi"][resource], last["psi"][resource]
            if a is not None and b is not None and wall_us > 0:
                setattr(noise, f"psi_{resource}_some_share", round(min(1.0, (b - a) / wall_us), 4))
        if noise.psi_memory_some_share is None and first["faults"] is not None and last["faults"] is not None:
            noise.memory_faults_per_s = round((last["faults"] - first["faults"]) / max(1e-9, wall_us / 1e6), 2)
        noise.warning = noise_warning(noise)
        return noise


def _pairs(scans: list) -> list:
    return [(scans[k], scans[k + 1]) for k in range(len(scans) - 1) if scans[k + 1][0].total > scans[k][0].total]


def _share(part: float, whole: float) -> float:
    return round(min(1.0, max(0.0, part / whole)), 4) if whole > 0 else 0.0


def noise_warning(noise: HostNoise) -> str | None:
    """One line when a figure passed its threshold (``THRESHOLDS``), with what to do."""
    passed = [
        f"{THRESHOLD_WORDS.get(name, name)} {100 * value:.0f} % (threshold {100 * limit:.0f} %)"
        for name, limit in noise.thresholds.items()
        if isinstance(value := getattr(noise, name), float) and value >= limit
    ]
    if not passed:
        return None
    return (
        f"host noise: {'; '.join(passed)} during the run: its latencies include other work's interference; "
        "compare it only with runs of alike noise (faasprof compare warns when sides differ), repeat it "
        "interleaved with what it is compared to (faasprof run --repeats 5), or run on a quieter host"
    )


def noise_line(noise: dict) -> str:
    """The noise in one line, for the run's result: ``host noise: other CPU 38 % (max 61 %), ...``."""

    def pct(value: object) -> str:
        return f"{100 * value:.0f} %" if isinstance(value, (int, float)) else "–"

    parts = [
        f"other CPU {pct(noise.get('other_cpu_share'))} of {noise.get('cores')} cores (busiest second {pct(noise.get('other_cpu_share_max'))})",
        f"steal {pct(noise.get('steal_share'))}",
        f"run queue {noise['runq_mean']:.1f}" if isinstance(noise.get("runq_mean"), (int, float)) else "run queue –",
    ]
    if noise.get("psi_memory_some_share") is not None:
        parts.append(
            f"memory stall {pct(noise.get('psi_memory_some_share'))}, CPU stall {pct(noise.get('psi_cpu_some_share'))}"
        )
    elif noise.get("memory_faults_per_s") is not None:
        parts.append(f"major faults and swap {noise['memory_faults_per_s']:.0f}/s")
    return "host noise: " + ", ".join(parts)
