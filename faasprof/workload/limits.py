"""What a workload plans, held against what the machine and its platform take.

The planned invocation count is bounded, by faasprof's limit and by the memory the schedule needs
while it is built (``size_problems``: the problem names the key that drives the count, as the
instance's distribution says); each memory limit and request size is held against the limits of a
platform that hosts the functions (``limit_problems``, ``faasprof.platforms.base.PlatformLimits``).
The instances are the workload model's (``faasprof.workload.spec.Instance``), which imports this
module: they are taken by their fields.
"""

from __future__ import annotations

import json
from typing import Any, Sequence

from faasprof.functions import catalogue
from faasprof.platforms.base import PlatformLimits
from faasprof.workload.arrivals import distribution_for
from faasprof.workload.messages import Problems

# Bounds that keep a typo from exhausting the machine. The schedule costs about
# SCHEDULE_BYTES_PER_INVOCATION while it is built (float64 times, int64 ns, int32 owner, the sort's
# index) and the run keeps one row per invocation, so the planned count is what must be bounded.
MAX_PLANNED_INVOCATIONS = 20_000_000
SCHEDULE_BYTES_PER_INVOCATION = 48
DEFAULT_OWN_MEMORY_MB = 256  # a researcher's function deploys with this unless memory_mb says otherwise


def _human_bytes(count: float) -> str:
    for unit, size in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if count >= size:
            return f"{count / size:.3g} {unit}"
    return f"{count:.0f} bytes"


def size_problems(instances: Sequence[Any], problems: Problems) -> None:
    """Refuse schedules too large to build or run, naming the instance that makes them so."""
    total = sum(instance.planned_estimate for instance in instances)
    if total <= MAX_PLANNED_INVOCATIONS:
        available = _available_memory_bytes()
        if available is None or total * SCHEDULE_BYTES_PER_INVOCATION <= available / 2:
            return
        limit_text = f"half of the {_human_bytes(available)} of memory available now"
    else:
        limit_text = f"faasprof's limit of {MAX_PLANNED_INVOCATIONS:,} invocations per run"
    biggest = max(instances, key=lambda instance: instance.planned_estimate)
    key, fix = distribution_for(biggest.distribution).driving_field(biggest)
    share = "" if len(instances) == 1 else f" (this instance plans about {biggest.planned_estimate:.3g})"
    problems.add(
        f"instances.{biggest.name}.{key}",
        f"the workload plans about {total:.3g} invocations{share}, beyond {limit_text}; building the schedule would need about "
        f"{_human_bytes(total * SCHEDULE_BYTES_PER_INVOCATION)} of memory; {fix}",
    )


def _available_memory_bytes() -> float | None:
    try:
        with open("/proc/meminfo", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return float(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def _default_memory_mb(instance: Any) -> int | None:
    if instance.memory_mb is not None:
        return instance.memory_mb
    if instance.source is not None:
        return DEFAULT_OWN_MEMORY_MB
    entry = catalogue.lookup(instance.function.strip("/").split("/")[-1])
    return entry.memory_mb if entry is not None else None


def request_body_bytes(instance: Any) -> int | None:
    """The size of one invocation's request body, or None when a file cannot be measured."""
    try:
        params_bytes = len(json.dumps(instance.params or {}).encode())
        if instance.data_file is None:
            return params_bytes
        size = instance.data_file.stat().st_size
    except (OSError, TypeError, ValueError):
        return None
    if instance.data_mode == "web":
        return size
    return params_bytes + 4 * ((size + 2) // 3) + len(',"data":""')


def limit_problems(instances: Sequence[Any], data: dict, limits: PlatformLimits, problems: Problems) -> None:
    """Memory limits and request sizes that ``limits``' platform would refuse."""
    low, high = limits.min_memory_mb, limits.max_memory_mb
    for instance in instances:
        if not instance.names_functions:
            continue  # the limits are those of a platform hosting the functions
        where = f"instances.{instance.name}"
        memory_mb = _default_memory_mb(instance)
        if memory_mb is not None and ((low is not None and memory_mb < low) or (high is not None and memory_mb > high)):
            key = "memory_mb" if instance.memory_mb is not None else "application"
            what = (
                f"{memory_mb} MB"
                if instance.memory_mb is not None
                else f"{instance.function}'s default memory ({memory_mb} MB)"
            )
            problems.add(
                f"{where}.{key}",
                f"{what} is outside the {low or '?'}..{high or '?'} MB that {limits.description} accepts; {limits.memory_fix}",
            )
        if limits.max_payload_bytes is not None:
            size = request_body_bytes(instance)
            if size is not None and size > limits.max_payload_bytes:
                key = (
                    "data_file"
                    if instance.data_file is not None
                    else ("param_file" if instance.param_file is not None else "params")
                )
                problems.add(
                    f"{where}.{key}",
                    f"one request would carry {size:,} bytes, more than the {limits.max_payload_bytes:,} bytes {limits.description} accepts (it answers 413); {limits.payload_fix}",
                )
    sweep_memory = (((data.get("sweep") or {}).get("parameters") or {}).get("memory_mb")) or []
    for index, memory_mb in enumerate(sweep_memory):
        if (low is not None and memory_mb < low) or (high is not None and memory_mb > high):
            problems.add(
                f"sweep.parameters.memory_mb[{index}]",
                f"{memory_mb} MB is outside the {low or '?'}..{high or '?'} MB that {limits.description} accepts; {limits.memory_fix}",
            )
