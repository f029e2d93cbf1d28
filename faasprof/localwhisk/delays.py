"""Control-plane model: an optional model of what OpenWhisk's invoker does around an activation.

localwhisk starts, resumes and frees its sandboxes in microseconds to milliseconds. OpenWhisk's
invoker drives every container through the Docker CLI (``docker run``/``inspect`` for a cold start,
``docker unpause`` for a resume, ``docker pause`` and log collection around each activation) and
passes each activation through its message bus: on a quiet 2-core host its cold starts wait
~0.3 s and its resumes ~50 ms longer than localwhisk's process sandboxes, and ~50 and ~35 ms
longer than localwhisk's Docker sandboxes (faasprof/localwhisk/localwhisk-vs-openwhisk.md). And its container
pool hands a call to the warm container idle longest, where localwhisk's hands it to the one used
last: under a short pause grace OpenWhisk's calls rotate over its containers and most of them pay
an unpause before and a pause after (the stage that holds its capacity; the same document, "What
holds OpenWhisk").

The model has three fixed delays (milliseconds), a CPU stage and one rule, off unless the
``control_plane`` setting names them. Each delay is spent after the sandbox was chosen, so it holds
the sandbox as OpenWhisk's container is held, and it falls inside the record's ``waitTime`` as
OpenWhisk's does:

* ``cold``: before a new sandbox's ``/init`` (container creation): inside ``waitTime``;
* ``resumed``: before ``/run`` on a paused sandbox (unpause): inside ``waitTime``;
* ``warm``: before ``/run`` on a warm sandbox (the invoker's dispatch): inside ``waitTime``;
* ``cpu``: CPU the control plane spends per activation after its run, once the sandbox is free
  again and before the record is stored and a blocking call answered (OpenWhisk's JVM: controller,
  balancer, invoker, activation store, its log lines; OpenWhisk holds a container only for its
  ``/run`` and the 2 ms log read), burnt in worker processes, one per core, that compete for the
  host's cores as the JVM does: under load the sandboxes' runs slow down, and past what the cores
  give the records queue for it (``CpuStage``);
* ``reuse``: which idle warm sandbox takes a call, ``newest`` (localwhisk's rule, the default) or
  ``openwhisk`` (the first in OpenWhisk's free-pool order, ``openwhisk_order``).

A spec is empty (off), a preset name (``PRESETS``: its delays depend on the isolation, since
Docker sandboxes already pay part of what OpenWhisk's containers cost), or
``cold=MS,resumed=MS,warm=MS,reuse=openwhisk`` (missing delays are 0 and reuse newest, whatever
the isolation). Fixed delays, not distributions: the model moves medians and capacity, not tails.
"""

from __future__ import annotations

import asyncio
import os
import time
import zlib
from collections.abc import Callable, Iterable
from concurrent.futures import Executor, ProcessPoolExecutor
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")

# Fitted to OpenWhisk 2.0.0 standalone on a quiet 2-core host (Docker CLI; log store reading the
# json log file; user memory 4096 MB; pause grace 50 ms): OpenWhisk's waitTime medians over two
# rounds of bench/bench_calibration.py less localwhisk's, per isolation, rounded to 5 ms (the
# figures: faasprof/localwhisk/localwhisk-vs-openwhisk.md). Warm stays 0: at its capacity OpenWhisk's warm
# waitTime was 3 ms; its sequential warm calls' pause race is no fixed delay.
# ``reuse``: which idle warm sandbox takes the next call. OpenWhisk's ContainerPool takes the first
# match in its free pool, a Scala 2.12 immutable Map that a container re-enters each time it is
# freed: up to 4 entries (Map1..Map4) it keeps insertion order, so the first is the container idle
# longest and under a short pause grace calls rotate over the containers, most finding theirs
# paused; from 5 entries on it is a HashMap, which stays one (removals included), and its order is
# a fixed one per container (its ActorRef's hash), so the calls go to whichever free container
# comes first in it. localwhisk's own rule takes the most recently used ("newest"). The evidence:
# faasprof/localwhisk/localwhisk-vs-openwhisk.md, "What holds OpenWhisk".
# ``cpu``: the CPU of OpenWhisk's JVM per json_dumps activation less localwhisk server's: 31.7 ms
# at 20/s and 32.5 ms at 36/s against 3.8 and 2.8 ms (/proc ticks of each process around 15 s runs
# after a warm-up; the action containers took 12.4 to 14.9 ms per activation on both). The first
# fit, 17.4 ms, was the difference of all components' totals at 20/s, which counted the containers
# at 6.5 ms on OpenWhisk against 11.4 on localwhisk (faasprof/localwhisk/localwhisk-vs-openwhisk.md, "What holds
# OpenWhisk").
CPU_MS = 29.0
PRESETS: dict[str, dict[str, dict[str, float | str]]] = {
    "openwhisk-2.0.0-standalone": {
        "process": {"cold": 310.0, "resumed": 50.0, "warm": 0.0, "cpu": CPU_MS, "reuse": "openwhisk"},
        "docker": {"cold": 50.0, "resumed": 35.0, "warm": 0.0, "cpu": CPU_MS, "reuse": "openwhisk"},
    },
}
KEYS = ("cold", "resumed", "warm", "cpu")
REUSE = ("newest", "openwhisk")
SMALL_MAP_ENTRIES = 4  # Scala 2.12: Map1..Map4 keep insertion order; a 5th entry makes a HashMap


@dataclass(frozen=True)
class Delays:
    cold_ms: float = 0.0
    resumed_ms: float = 0.0
    warm_ms: float = 0.0
    cpu_ms: float = 0.0  # CPU per activation after its run (CpuStage)
    reuse: str = "newest"  # which idle warm sandbox takes a call: "newest" (localwhisk) or "openwhisk"

    def __bool__(self) -> bool:
        """True when there is a delay to wait (the reuse rule is read on its own)."""
        return any((self.cold_ms, self.resumed_ms, self.warm_ms))

    def before_s(self, how: str) -> float:
        """Seconds to wait before the sandbox is used, for the pool's start state ``how``."""
        if how in ("cold", "recreated"):
            return self.cold_ms / 1000.0
        if how == "resumed":
            return self.resumed_ms / 1000.0
        return self.warm_ms / 1000.0  # warm, prewarmed (a prewarmed container still needs /init: no creation)


def parse(spec: str, docker: bool = False) -> Delays:
    """``""`` → no delays; a preset name (its values for Docker sandboxes when ``docker``, else
    for process sandboxes); or ``cold=650,resumed=95,warm=200,reuse=openwhisk``.

    Raises ValueError (one line naming the setting and the fix) for anything else.
    """
    spec = (spec or "").strip()
    if not spec:
        return Delays()
    values = dict(PRESETS[spec]["docker" if docker else "process"]) if spec in PRESETS else _explicit(spec)
    return Delays(
        float(values.get("cold", 0.0)),
        float(values.get("resumed", 0.0)),
        float(values.get("warm", 0.0)),
        float(values.get("cpu", 0.0)),
        str(values.get("reuse", "newest")),
    )


def _explicit(spec: str) -> dict[str, float | str]:
    values: dict[str, float | str] = {}
    for part in spec.split(","):
        key, sep, text = part.partition("=")
        key = key.strip()
        if sep and key == "reuse":
            if text.strip() not in REUSE:
                raise ValueError(f"control_plane: reuse={text.strip()!r} must be one of {', '.join(REUSE)}")
            values[key] = text.strip()
            continue
        if not sep or key not in KEYS:
            raise ValueError(
                f"control_plane: {part.strip()!r} is neither a preset ({', '.join(PRESETS)}) nor KEY=MS with KEY one of "
                f"{', '.join(KEYS)} (or reuse={'|'.join(REUSE)})"
            )
        try:
            value = float(text)
        except ValueError:
            value = -1.0
        if not value >= 0:
            raise ValueError(f"control_plane: {key}={text.strip()!r} must be a number of ms >= 0")
        values[key] = value
    return values


def openwhisk_order(idle: Iterable[T], hashed: bool, name: Callable[[T], str]) -> list[T]:
    """Idle warm sandboxes (least recently freed first) in the order OpenWhisk's free pool offers
    them: as they are while the pool has never held more than ``SMALL_MAP_ENTRIES`` free ones
    (insertion order: the one idle longest first), else in a fixed order per sandbox (``hashed``: a
    CRC of its name stands for its ActorRef's hash, fixed and the same on every run)."""
    ordered = list(idle)
    if hashed:
        ordered.sort(key=lambda sandbox: zlib.crc32(name(sandbox).encode()))
    return ordered


def burn_cpu(seconds: float) -> float:
    """Spend ``seconds`` of this process's CPU time (wall time is longer when the cores are shared);
    returns the CPU seconds spent."""
    start = time.process_time()
    while time.process_time() - start < seconds:
        pass
    return time.process_time() - start


class CpuStage:
    """The control plane's CPU per activation: ``workers`` activations at a time burn ``cpu_ms`` each
    (worker processes, one per core by default: OpenWhisk's JVM runs on all of them); the others
    wait their turn in the executor's queue, so past what the cores give the stage queues."""

    def __init__(
        self, cpu_ms: float, workers: int | None = None, executor: Executor | None = None, burn=burn_cpu
    ) -> None:
        self.cpu_s = cpu_ms / 1000.0
        self.executor = executor or ProcessPoolExecutor(workers or os.cpu_count() or 1)
        self.burn = burn

    async def spend(self) -> None:
        await asyncio.get_running_loop().run_in_executor(self.executor, self.burn, self.cpu_s)

    def close(self) -> None:
        self.executor.shutdown(wait=False, cancel_futures=True)
