"""A sweep's plan: its points in execution order and its estimated wall time.

What ``faasprof plan`` prints for a workload with a ``sweep`` block, apart from what runs a sweep
(``faasprof.experiments.sweep``): running one needs the invoker, the analyzer and the padding
images, and loading those (pandas, scipy) took ``faasprof plan`` 1.5 s of CPU before it printed
a line.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

from faasprof.errors import ConfigError
from faasprof.workload.schedule import instance_rng
from faasprof.workload.spec import Workload

PARAMETERS = (
    "llc_ways",
    "mba_percent",
    "memory_mb",
    "rate",
    "rate_scale",
    "pause_grace_ms",
    "user_memory_mb",
    "image_padding_mb",
    "code_padding_mb",
)
# Start-up, deployment and draining around every run, used for the wall-time estimate.
RUN_OVERHEAD_S = {"localwhisk": 8.0, "openwhisk": 15.0}


@dataclass(frozen=True)
class SweepPoint:
    order: int  # position in execution order
    index: int  # position in the parameter product
    repeat: int
    values: dict

    @property
    def label(self) -> str:
        parts = [f"{key}={value_text(value)}" for key, value in self.values.items()]
        return "_".join(parts) + f"_r{self.repeat}"


def value_text(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def sweep_parameters(workload: Workload) -> dict[str, list]:
    parameters = (workload.sweep or {}).get("parameters", {})
    return {key: list(parameters[key]) for key in PARAMETERS if key in parameters}


def expand_points(workload: Workload) -> list[SweepPoint]:
    """Every point × repeat, in execution order (seeded shuffle unless ``order`` is sequential)."""
    sweep = workload.sweep or {}
    parameters = sweep_parameters(workload)
    if not parameters:
        raise ConfigError(f"{workload.origin}: sweep: the workload has no sweep block; add sweep.parameters")
    keys = list(parameters)
    combos = [dict(zip(keys, values)) for values in itertools.product(*(parameters[k] for k in keys))]
    repeat = int(sweep.get("repeat", 1))
    runs = [(index, r, combo) for index, combo in enumerate(combos) for r in range(repeat)]
    if sweep.get("order", "random") == "random":
        permutation = instance_rng(workload.seed, "sweep-order").permutation(len(runs))
        runs = [runs[i] for i in permutation]
    return [SweepPoint(order=o, index=i, repeat=r, values=combo) for o, (i, r, combo) in enumerate(runs)]


def estimate_wall_s(workload: Workload, points: list[SweepPoint], platform: str = "localwhisk") -> float:
    cooldown_s = float((workload.sweep or {}).get("cooldown_s", 5))
    per_run = workload.duration_s + RUN_OVERHEAD_S[platform]
    return len(points) * per_run + max(len(points) - 1, 0) * cooldown_s


def describe_plan(workload: Workload, platform: str = "localwhisk") -> str:
    """The sweep's points and estimated wall time, for ``faasprof plan``."""
    points = expand_points(workload)
    parameters = sweep_parameters(workload)
    sweep = workload.sweep or {}
    repeat = int(sweep.get("repeat", 1))
    lines = [
        f"sweep: {len(points) // repeat} points x {repeat} repeat(s) = {len(points)} runs, order {sweep.get('order', 'random')}"
    ]
    for key, values in parameters.items():
        lines.append(f"  {key}: {', '.join(value_text(v) for v in values)}")
    lines.append("  run order:")
    for point in points:
        lines.append(f"    {point.order:3d}  {point.label}")
    total_s = estimate_wall_s(workload, points, platform)
    lines.append(
        f"estimated wall time: {duration_text(total_s)} ({len(points)} x ({workload.duration_s:g} s test + ~{RUN_OVERHEAD_S[platform]:g} s start-up and drain)"
        f" + cool-downs of {float(sweep.get('cooldown_s', 5)):g} s)"
    )
    return "\n".join(lines)


def duration_text(seconds: float) -> str:
    minutes, secs = divmod(max(0, int(round(seconds))), 60)
    hours, minutes = divmod(minutes, 60)
    if hours:
        return f"{hours} h {minutes:02d} min"
    return f"{minutes} min {secs:02d} s" if minutes else f"{secs} s"
