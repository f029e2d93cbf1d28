"""The host's noise while a capacity search's probes run, read from /proc, and what it does to the interval.

A capacity is a property of the host as it was during its search: on a shared 2-core host the
same search gave 32 ± 2.2/s and then 72.9 ± 5/s three minutes apart, as other work came and went.
So each probe is bracketed by two readings of /proc (``snapshot``), and the probe keeps what other
work took between them (``HostNoise``):

* ``other_cpus``: CPUs' worth of busy time (``/proc/stat``'s ``cpu`` line: all but idle and
  iowait) less the CPU time of this process and its descendants (the search, its embedded
  localwhisk and the sandboxes it starts as processes; Docker sandboxes are the daemon's children,
  not ours, and count as other work);
* ``steal_fraction``: the share of the CPUs' time a hypervisor gave to other guests;
* ``run_queue``: runnable tasks (``procs_running``) at the probe's end, less the one reading it.

The search's noise (``summarize``) is the range of ``other_cpus`` over its probes, and the means of
the rest. It changes two things:

1. **The interval** (``widen``). The sandboxes share the CPUs left by other work; a search whose
   probes saw the free CPUs vary (free = CPUs − other_cpus) by a ratio r measured a capacity that
   moves with it, so its interval is widened by √r at each end (``low / √r``, ``high × √r``): the
   geometric middle stays, and the interval spans the capacity of the busiest and the quietest
   probe's host. A search whose host was steadily busy keeps its interval, and says how busy:
   ``contention_text`` ("host contended: other work took 1.02 of 2 CPUs (0.95–1.1) ...") from
   ``CONTENDED_CPUS`` of other work on.
2. **Reuse** (``alike``). A stored capacity is reused only while the noise now (a reading over
   ``NOW_WINDOW_S``) is within ``ALIKE_CPUS`` of the range its probes saw, and the runnable tasks
   now are within ``ALIKE_RUN_QUEUE`` times the search's (each plus one, where either is more than
   a CPU's worth); otherwise ``faasprof run`` searches again and says why
   (``capacity_store.resolve_workload``). Why the run queue: on a saturated host the other work's
   CPU share stays near all of the CPUs whatever it is, while what the sandboxes get falls with
   the number of tasks they compete with (CFS weighs their cgroup as one of them). Ten quick starts
   on a host whose run queue went from 2 during the search to 10-18 reused a capacity of 101 ±
   67/s, its probes' other work spanning 0.94-1.85 CPUs, and three balanced phases read
   over-invoked; the reading now takes the run queue's mean over its window, not one sample.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Callable, TypedDict

from faasprof.monitoring.noise import cpu_times, stat_fields

# Other work from this many CPUs' worth on is named in the search's result and printed with it.
CONTENDED_CPUS = 0.5
# A stored capacity is reused while the other work now lies within this many CPUs of its probes' range.
ALIKE_CPUS = 0.5
# ... and while the runnable tasks now (+1) are within this factor of the search's (+1), where either
# exceeds the CPUs (below that, tasks do not compete for a CPU and the other work's share decides).
ALIKE_RUN_QUEUE = 2.0
# How long the reading of the noise now lasts before a stored capacity is reused, and how many run
# queue samples it averages.
NOW_WINDOW_S = 1.0
NOW_SAMPLES = 10
# Free CPUs are never taken below this: a probe that saw every CPU taken still ran.
MIN_FREE_CPUS = 0.25


@dataclass(frozen=True)
class Snapshot:
    """One reading of /proc: the CPUs' busy, steal and total ticks, our process tree's ticks, the run queue."""

    busy_ticks: int
    steal_ticks: int
    total_ticks: int
    own_ticks: int
    procs_running: int
    monotonic_s: float


@dataclass(frozen=True)
class HostNoise:
    """What other work took while one probe ran (module docstring)."""

    other_cpus: float
    steal_fraction: float
    run_queue: float  # runnable tasks but the reader: at the end of a probe, or a mean over a reading's window
    cpus: int


class NoiseSummary(TypedDict):
    """A search's noise: the range and mean of other work over its probes, steal and run queue means."""

    other_cpus_min: float
    other_cpus_max: float
    other_cpus_mean: float
    steal_fraction_mean: float
    run_queue_mean: float
    cpus: int
    probes: int


def _tree_ticks(proc: Path, root_pid: int) -> int:
    """utime + stime + cutime + cstime of ``root_pid`` and its live descendants (a child reaped
    since moved its time into its parent's cutime, so nothing is lost or counted twice)."""
    parent: dict[int, int] = {}
    ticks: dict[int, int] = {}
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = stat_fields((entry / "stat").read_text(encoding="ascii", errors="replace"))
        except OSError:  # gone while we read
            continue
        if fields is not None:
            parent[int(entry.name)], ticks[int(entry.name)] = fields
    children: dict[int, list[int]] = {}
    for pid, ppid in parent.items():
        children.setdefault(ppid, []).append(pid)
    total, todo = 0, [root_pid]
    while todo:
        pid = todo.pop()
        total += ticks.get(pid, 0)
        todo.extend(children.get(pid, ()))
    return total


def snapshot(proc: Path = Path("/proc"), root_pid: int | None = None, clock=time.monotonic) -> Snapshot | None:
    """A reading of /proc now; None where there is no /proc to read (not Linux)."""
    try:
        text = (proc / "stat").read_text(encoding="ascii", errors="replace")
        times, running = cpu_times(text)
        own = _tree_ticks(proc, os.getpid() if root_pid is None else root_pid)
    except (OSError, ValueError, IndexError):
        return None
    if not any(line.startswith("cpu ") for line in text.splitlines()):
        return None
    return Snapshot(times.busy, times.steal, times.total, own, running, clock())


def between(before: Snapshot | None, after: Snapshot | None, cpus: int | None = None) -> HostNoise | None:
    """The noise from ``before`` to ``after`` (None where either is missing or no time passed)."""
    if before is None or after is None:
        return None
    n = cpus or os.cpu_count() or 1
    total = after.total_ticks - before.total_ticks
    if total <= 0:
        return None
    # Ticks of all CPUs together: total / n per CPU is the elapsed time in ticks.
    busy = after.busy_ticks - before.busy_ticks
    own = max(after.own_ticks - before.own_ticks, 0)
    other = max(busy - own, 0) / (total / n)
    return HostNoise(
        other_cpus=round(min(other, float(n)), 3),
        steal_fraction=round((after.steal_ticks - before.steal_ticks) / total, 4),
        run_queue=max(after.procs_running - 1, 0),
        cpus=n,
    )


def measure_now(
    window_s: float = NOW_WINDOW_S,
    sleep=time.sleep,
    read: Callable[[], Snapshot | None] = snapshot,
    samples: int = NOW_SAMPLES,
) -> HostNoise | None:
    """The noise over the next ``window_s`` seconds (what a stored capacity is compared with), its
    run queue the mean of ``samples`` readings across the window (one reading is one instant)."""
    first = read()
    readings: list[Snapshot | None] = []
    for _ in range(max(samples, 1)):
        sleep(window_s / max(samples, 1))
        readings.append(read())
    noise = between(first, readings[-1])
    running = [r.procs_running - 1 for r in readings if r is not None]
    if noise is None or not running:
        return noise
    return replace(noise, run_queue=round(max(sum(running) / len(running), 0.0), 2))


def summarize(noises: list[HostNoise | None]) -> NoiseSummary | None:
    """A search's noise from its probes' (None where none was read)."""
    known = [n for n in noises if n is not None]
    if not known:
        return None
    other = [n.other_cpus for n in known]
    return NoiseSummary(
        other_cpus_min=min(other),
        other_cpus_max=max(other),
        other_cpus_mean=round(sum(other) / len(other), 3),
        steal_fraction_mean=round(sum(n.steal_fraction for n in known) / len(known), 4),
        run_queue_mean=round(sum(n.run_queue for n in known) / len(known), 2),
        cpus=known[0].cpus,
        probes=len(known),
    )


def free_cpu_ratio(summary: NoiseSummary) -> float:
    """The quietest probe's free CPUs over the busiest probe's (1: the noise did not move)."""
    n = summary["cpus"]
    most = max(n - summary["other_cpus_min"], MIN_FREE_CPUS)
    least = max(n - summary["other_cpus_max"], MIN_FREE_CPUS)
    return most / least


def widen(interval: tuple[float, float], summary: NoiseSummary | None) -> tuple[float, float]:
    """``interval`` widened by the square root of the free-CPU ratio at each end (module docstring)."""
    if summary is None:
        return interval
    factor = math.sqrt(free_cpu_ratio(summary))
    return (interval[0] / factor, interval[1] * factor)


def contention_text(summary: NoiseSummary | None) -> str | None:
    """ "host contended: ..." where other work took ``CONTENDED_CPUS`` or more; None otherwise."""
    if summary is None or summary["other_cpus_max"] < CONTENDED_CPUS:
        return None
    low, high = summary["other_cpus_min"], summary["other_cpus_max"]
    spread = f" ({low:.2g}–{high:.2g} over {summary['probes']} probes)" if high - low >= 0.05 else ""
    return (
        f"host contended: other work took {summary['other_cpus_mean']:.2g} of {summary['cpus']} CPUs{spread}, "
        f"run queue {summary['run_queue_mean']:.2g}, steal {summary['steal_fraction_mean']:.0%}"
    )


def alike(stored: dict | None, now: HostNoise | None) -> tuple[bool, str]:
    """Whether a capacity measured under ``stored`` (a ``NoiseSummary``) holds under ``now``, and,
    when it does not, why in words. Unknown on either side (an entry from before the noise was
    kept, a host without /proc): alike, and the load warning speaks instead."""
    if not isinstance(stored, dict) or now is None or "other_cpus_min" not in stored:
        return True, ""
    low, high = float(stored["other_cpus_min"]), float(stored["other_cpus_max"])
    distance = max(low - now.other_cpus, now.other_cpus - high, 0.0)
    if distance > ALIKE_CPUS:
        measured = f"{low:.2g}" if high - low < 0.05 else f"{low:.2g}–{high:.2g}"
        return False, (
            f"it was measured while other work took {measured} of {stored.get('cpus')} CPUs and takes {now.other_cpus:.2g} now "
            f"(more than {ALIKE_CPUS:g} CPU apart)"
        )
    then = stored.get("run_queue_mean")
    if isinstance(then, (int, float)) and max(float(then), now.run_queue) > now.cpus:
        ratio = (now.run_queue + 1.0) / (float(then) + 1.0)
        if not 1.0 / ALIKE_RUN_QUEUE <= ratio <= ALIKE_RUN_QUEUE:
            return False, (
                f"it was measured while {float(then):.2g} tasks were runnable on average and {now.run_queue:.2g} are now, "
                f"on {now.cpus} CPUs (more than ×{ALIKE_RUN_QUEUE:g} apart: the sandboxes' share of the CPUs moved)"
            )
    return True, ""


def as_dict(noise: HostNoise | None) -> dict | None:
    return asdict(noise) if noise is not None else None
