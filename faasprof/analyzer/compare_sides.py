"""The sides of a comparison: which runs are repeats of one workload, and the folder that holds them.

A side is a list of run directories that repeat one workload; ``faasprof compare`` states the
effect of each side against the first from the runs' figures (``faasprof.analyzer.run_stats``).
Sides come from the command line (``A1 A2 -- B1 B2``, ``--a ... --b ...``) or from a repeats folder
that ``faasprof run --repeats N`` writes (``faasprof.experiments.repeat``): its runs, one folder
each, and ``repeats.json``, which names each side's runs in the order they ran.

``repeats.json`` format versions (``REPEATS_FORMAT_VERSION``):
  1: ``format_version``, ``order`` (``alternate`` or ``shuffled``), ``seed`` (of a shuffled order,
     else null), ``sides`` (a list of ``name``, ``config``, ``runs``: run folder names, in the order
     they ran), ``sequence`` (every run's folder name with its side, in the order they ran).

A repeats folder is no run directory: this module reads and writes its one file.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from faasprof import rundir
from faasprof.errors import ConfigError, FormatError

REPEATS_FILE = "repeats.json"
REPEATS_FORMAT_VERSION = 1
# Other processes' share of the host's CPU: sides this far apart ran under different noise.
NOISE_SHARE_APART = 0.15


@dataclass
class Side:
    """One side of a comparison: its name and its runs (run directories), in the order they ran."""

    name: str
    runs: list[Path] = field(default_factory=list)


@dataclass
class RepeatsEntry:
    """One side as ``repeats.json`` holds it."""

    name: str
    config: str
    runs: list[str]


def is_repeats_folder(path: str | os.PathLike) -> bool:
    return (Path(path) / REPEATS_FILE).is_file()


def read_repeats(folder: str | os.PathLike) -> list[Side]:
    """The sides of a repeats folder, each with its runs' paths; one line naming the file on a bad one."""
    path = Path(folder) / REPEATS_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise FormatError(f"{path}: cannot be read ({error}); the repeats folder is damaged") from None
    version = data.get("format_version") if isinstance(data, dict) else None
    if version != REPEATS_FORMAT_VERSION:
        raise FormatError(
            f"{path}: format_version {version!r} is not one this faasprof reads ({REPEATS_FORMAT_VERSION}); upgrade faasprof"
        )
    sides = []
    for entry in data.get("sides") or []:
        runs = [Path(folder) / str(name) for name in entry.get("runs") or []]
        missing = [r.name for r in runs if not r.is_dir()]
        if missing:
            raise ConfigError(f"{path}: sides.{entry.get('name')}: runs {', '.join(missing)} are not in {folder}")
        sides.append(Side(str(entry.get("name")), runs))
    return sides


def write_repeats(
    folder: Path, entries: list[RepeatsEntry], sequence: list[tuple[str, str]], order: str, seed: int | None
) -> Path:
    """``repeats.json`` of a repeats folder (written again, atomically, after each run)."""
    document = {
        "format_version": REPEATS_FORMAT_VERSION,
        "order": order,
        "seed": seed,
        "sides": [{"name": e.name, "config": e.config, "runs": list(e.runs)} for e in entries],
        "sequence": [{"side": side, "run": run} for side, run in sequence],
    }
    path = folder / REPEATS_FILE
    rundir.write_json_atomic(path, document)
    return path


def sides_from_groups(groups: list[list[str]]) -> list[Side]:
    """The sides the command line names: each group of paths is one side, a repeats folder in it
    standing for its runs; one group alone that is a repeats folder gives that folder's sides; one
    group of several runs gives a side per run (each run against the first)."""
    if len(groups) == 1:
        paths = groups[0]
        if len(paths) == 1 and is_repeats_folder(paths[0]):
            return read_repeats(paths[0])
        if not any(is_repeats_folder(p) for p in paths):
            return [Side(Path(p).name, [Path(p)]) for p in paths]
    sides = []
    for index, paths in enumerate(groups):
        runs: list[Path] = []
        for path in paths:
            if is_repeats_folder(path):
                runs += [run for side in read_repeats(path) for run in side.runs]
            else:
                runs.append(Path(path))
        sides.append(Side(chr(ord("A") + index) if index < 26 else f"side {index + 1}", runs))
    return sides


def check_sides(sides: list[Side]) -> None:
    """One line, before any work, when the sides give nothing to compare."""
    runs = [run for side in sides for run in side.runs]
    if len(runs) < 2:
        given = f"one run given ({runs[0]})" if runs else "no run given"
        raise ConfigError(
            f"compare: {given}; give two or more: faasprof compare A B, or repeats of each side: "
            "faasprof compare A1 A2 A3 -- B1 B2 B3 (or a folder of faasprof run --repeats N)"
        )
    if len(sides) < 2:
        raise ConfigError(
            f"compare: {len(runs)} runs on one side only ({sides[0].name}); name the other side: faasprof compare A1 A2 -- B1 B2"
        )
    for side in sides:
        if not side.runs:
            raise ConfigError(f"compare: side {side.name} has no run; give at least one run directory per side")


def noise_share(manifest: rundir.Manifest) -> float | None:
    """The run's other processes' share of the host's CPU (``host_noise``), None when not measured."""
    noise = manifest.extra.get("host_noise")
    value = noise.get("other_cpu_share") if isinstance(noise, dict) else None
    return float(value) if isinstance(value, (int, float)) else None


def noise_warnings(sides: list[Side], manifests: dict[Path, rundir.Manifest]) -> list[str]:
    """A warning when the sides' runs ran under different host noise (``NOISE_SHARE_APART``)."""
    means = {}
    for side in sides:
        shares = [s for s in (noise_share(manifests[run]) for run in side.runs) if s is not None]
        if shares:
            means[side.name] = sum(shares) / len(shares)
    if len(means) < 2 or max(means.values()) - min(means.values()) < NOISE_SHARE_APART:
        return []
    detail = ", ".join(f"{name} {100 * share:.0f} %" for name, share in means.items())
    return [
        f"the sides ran under different host noise (other processes' CPU share, mean of the side's runs: {detail}): "
        "a difference may be the host's; run the sides interleaved (faasprof run A.json --vs B.json --repeats 5)"
    ]
