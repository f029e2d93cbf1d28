"""Merged invocation schedules: every instance's arrivals, in one time-sorted plan.

Each instance draws from its own random stream, derived from the run seed and the instance name
by a stable key (BLAKE2b of the name, never Python's per-process ``hash()``), so two instances at
the same rate are independent, adding an instance leaves the others' arrivals unchanged, and the
same seed gives byte-identical schedules in every process.

Times are integer nanoseconds since the run's monotonic zero; ties keep the instances' order in
the workload, so the merge is deterministic.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from faasprof.workload.arrivals import arrivals
from faasprof.workload.spec import Instance, Workload

NS_PER_S = 1_000_000_000
SCHEDULE_COLUMNS = ("seq", "instance", "function", "intended_s")


def stream_key(instance_name: str) -> tuple[int, ...]:
    """A stable 128-bit key of an instance name, as four 32-bit words."""
    digest = hashlib.blake2b(instance_name.encode("utf-8"), digest_size=16, person=b"faasprof-stream").digest()
    return tuple(int.from_bytes(digest[i : i + 4], "little") for i in range(0, 16, 4))


def instance_rng(seed: int, instance_name: str) -> np.random.Generator:
    sequence = np.random.SeedSequence(entropy=int(seed), spawn_key=stream_key(instance_name))
    return np.random.Generator(np.random.PCG64(sequence))


def instance_arrivals_s(workload: Workload, instance: Instance) -> np.ndarray:
    return arrivals(instance, instance_rng(workload.seed, instance.name))


@dataclass(frozen=True)
class Schedule:
    """The merged plan: ``intended_ns[i]`` is when invocation ``i`` (its ``seq``) is due."""

    intended_ns: np.ndarray  # int64, ascending
    instance_idx: np.ndarray  # int32 index into instance_names
    instance_names: tuple[str, ...]
    functions: tuple[str, ...]  # per instance

    def __len__(self) -> int:
        return int(self.intended_ns.size)

    def counts(self) -> dict[str, int]:
        per = np.bincount(self.instance_idx, minlength=len(self.instance_names))
        return {name: int(n) for name, n in zip(self.instance_names, per)}

    def write_csv(self, path: str | os.PathLike, chunk_rows: int = 200_000) -> None:
        """``seq,instance,function,intended_s`` with nanosecond precision; refuses to overwrite."""
        labels = np.array([f"{n},{f}," for n, f in zip(self.instance_names, self.functions)], dtype=object)
        with open(path, "x", encoding="utf-8") as handle:
            handle.write(",".join(SCHEDULE_COLUMNS) + "\n")
            for begin in range(0, len(self), chunk_rows):
                end = min(begin + chunk_rows, len(self))
                ns = self.intended_ns[begin:end]
                seconds = ns // NS_PER_S
                fraction = ns % NS_PER_S
                seq = np.arange(begin, end)
                names = labels[self.instance_idx[begin:end]]
                handle.write(
                    "".join(
                        f"{q},{label}{s}.{f:09d}\n"
                        for q, label, s, f in zip(seq.tolist(), names.tolist(), seconds.tolist(), fraction.tolist())
                    )
                )


def build_schedule(workload: Workload) -> Schedule:
    """Merge every instance's arrivals into one schedule sorted by intended time."""
    times_ns = []
    owners = []
    for index, instance in enumerate(workload.instances):
        seconds = instance_arrivals_s(workload, instance)
        times_ns.append(np.rint(seconds * NS_PER_S).astype(np.int64))
        owners.append(np.full(seconds.size, index, dtype=np.int32))
    if times_ns:
        all_ns = np.concatenate(times_ns)
        all_owner = np.concatenate(owners)
        order = np.argsort(all_ns, kind="stable")
        all_ns, all_owner = all_ns[order], all_owner[order]
    else:
        all_ns, all_owner = np.empty(0, np.int64), np.empty(0, np.int32)
    return Schedule(
        intended_ns=all_ns,
        instance_idx=all_owner,
        instance_names=tuple(i.name for i in workload.instances),
        functions=tuple(i.function for i in workload.instances),
    )


def read_schedule_csv(path: str | os.PathLike) -> tuple[np.ndarray, list[str]]:
    """Intended times (ns) and instance names of a schedule CSV written by ``write_csv``."""
    intended, names = [], []
    with open(Path(path), encoding="utf-8") as handle:
        next(handle)
        for line in handle:
            _, instance, _, seconds = line.rstrip("\n").split(",")
            whole, _, fraction = seconds.partition(".")
            intended.append(int(whole) * NS_PER_S + int(fraction.ljust(9, "0")))
            names.append(instance)
    return np.asarray(intended, dtype=np.int64), names


# Below this many expected invocations the plan is built to tell whether it is empty; above it, an
# instance's expected count alone says it is not.
EXACT_EMPTY_CHECK_BELOW = 100_000


def empty_plan_problem(workload: Workload) -> str | None:
    """The one line that refuses a workload whose plan has no invocation (every instance muted, or
    every window empty), or None. ``run`` and ``validate`` both ask it. An instance whose rate waits
    for a capacity measurement is taken to send."""
    if workload.needs_capacity():
        return None
    if (
        sum(instance.planned_estimate for instance in workload.instances) < EXACT_EMPTY_CHECK_BELOW
        and len(build_schedule(workload)) == 0
    ):
        return (
            f"{workload.origin}: instances: the plan has no invocation (every instance is muted, rate 0, or its activity window is empty); "
            "give an instance a rate > 0 and a window inside test_duration_in_seconds"
        )
    return None
