"""Repeated runs: one or more workloads run N times each, interleaved, into one repeats folder.

``faasprof run A.json --repeats 5`` runs A five times; ``faasprof run A.json --vs B.json --repeats 5``
runs A and B five times each, alternating (A B A B …) or in a seeded random order (``--order
shuffled``), so that a drift of the host (other work starting, a frequency change, a filling disk)
falls on both sides instead of on whichever ran last. The runs go into one folder,
``<out>/repeats-<UTC time>/``, beside its ``repeats.json`` (``faasprof.analyzer.compare_sides``),
which ``faasprof compare FOLDER`` reads: each workload is a side, each run one sample.

A run is made by the caller's ``run_one(config, folder) -> exit status`` (the ``run`` command's own
path, capacity resolution and all), so that a repeat is exactly a ``faasprof run``. A run that
failed its thresholds (1) is kept and said; bad input (2) or a platform not ready (3) stops the
repeats there, the folder keeping what ran.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Callable

from faasprof import rundir
from faasprof.analyzer.compare_sides import RepeatsEntry, write_repeats
from faasprof.errors import EXIT_FAILURE, ConfigError
from faasprof.progress import QUIET, Progress

STOPPING_EXITS = (2, 3)  # bad input, not ready: every later run would end the same


class Order(Enum):
    """The order of the repeated runs: alternating sides, or a seeded shuffle of them."""

    ALTERNATE = "alternate"
    SHUFFLED = "shuffled"


@dataclass
class RepeatsResult:
    """What the repeats left: their folder, and the worst exit status of a run (0 when all passed)."""

    folder: Path
    exit_status: int
    runs: int


def sequence(sides: int, repeats: int, order: Order, seed: int) -> list[int]:
    """The side index of each run, in the order they run."""
    if order is Order.ALTERNATE:
        return [side for _ in range(repeats) for side in range(sides)]
    runs = [side for side in range(sides) for _ in range(repeats)]
    random.Random(seed).shuffle(runs)
    return runs


def side_names(configs: list[str]) -> list[str]:
    """Each config's side name: its file's stem, or a letter before it when two stems are alike
    (an A/A check names one workload twice)."""
    stems = [Path(c).stem for c in configs]
    if len(set(stems)) == len(stems):
        return stems
    return [f"{chr(ord('A') + k)}-{stem}" for k, stem in enumerate(stems)]


def check_repeats(repeats: int, configs: list[str]) -> None:
    if repeats < 1:
        raise ConfigError(f"--repeats {repeats}: give at least 1 (5 gives compare an interval over runs)")
    if repeats == 1 and len(configs) > 1:
        raise ConfigError("--vs needs --repeats N (N ≥ 2 gives compare an interval over runs; 5 is a good start)")


def run_repeats(
    configs: list[str],
    repeats: int,
    out_dir: str | Path,
    run_one: Callable[[str, Path], int],
    order: Order = Order.ALTERNATE,
    seed: int = 1,
    progress: Progress = QUIET,
) -> RepeatsResult:
    """Run each of ``configs`` ``repeats`` times in ``order`` into a new repeats folder (module docstring)."""
    check_repeats(repeats, configs)
    folder = rundir.create_run_dir(Path(out_dir), "repeats", monitors=False)
    names = side_names(configs)
    entries = [RepeatsEntry(name, config, []) for name, config in zip(names, configs)]
    done: list[tuple[str, str]] = []
    plan = sequence(len(configs), repeats, order, seed)
    worst = 0
    for count, side in enumerate(plan, start=1):
        progress.say(f"repeats: run {count} of {len(plan)}: {names[side]} ({configs[side]})")
        before = set(folder.iterdir())
        status = run_one(configs[side], folder)
        made = sorted(p for p in set(folder.iterdir()) - before if p.is_dir())
        if made:
            entries[side].runs.append(made[0].name)
            done.append((names[side], made[0].name))
            write_repeats(folder, entries, done, order.value, seed if order is Order.SHUFFLED else None)
        if status in STOPPING_EXITS:
            progress.alert(
                f"repeats: stopped after run {count} of {len(plan)} (exit {status}); {folder} keeps what ran"
            )
            return RepeatsResult(folder, status, len(done))
        if status:
            progress.warn(f"repeats: run {count} ({names[side]}) ended with exit {status}; it is kept in {folder}")
            worst = max(worst, EXIT_FAILURE)
    return RepeatsResult(folder, worst, len(done))
