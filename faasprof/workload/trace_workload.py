"""A trace sample written as an ordinary workload, each function mapped onto one of this host.

Two mappings, chosen per workload (``--map``):

- ``spin`` (the default): the catalogue's ``spin`` action, given the trace function's duration
  percentiles (``service_ms_percentiles``; each invocation draws its own service time from them)
  corrected by the calibration of this host and the platform the workload runs on (executed =
  offset + slope x requested, measured through that platform), and
  ``alloc_mb``, the app's average allocated memory, held resident by each instance (its first call
  allocates it); the action is
  deployed with that memory (at least 128 MB, in steps of 128). The mapping error of a function
  is the calibration's predicted executed median against the trace's median: non-zero where the
  trace's median is below what this host can execute (the offset).
- ``nearest``: the catalogue function whose measured median duration on this host is nearest the
  trace's median (in ratio), FaaSRail's way; its error is that ratio minus one.

Written beside the workload: ``trace_invocations.csv`` (the sampled functions' counts, the window with
its warm-up, the day's minute labels kept), ``trace_durations.csv`` and ``trace_memory.csv`` (their rows, in
the published layouts) and the workload's ``trace`` block (the sample's distances, the scaling, and
per instance its trace function, percentiles, memory and mapping error), which the fidelity
report reads from the run's manifest.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass, field
from enum import Enum
from pathlib import Path

import numpy as np

from faasprof.errors import ConfigError, FormatError
from faasprof.workload.azure_files import (
    DURATION_COLUMNS,
    DURATION_PERCENTILES,
    KEY_COLUMNS,
    MEMORY_COLUMNS,
    MEMORY_PERCENTILES,
    DurationRow,
)
from faasprof.workload.trace_sample import FeatureDistance, Population, ScaleEffect

# 2: measured through the platform (``platform`` is capacity_store.platform_identity's, the file is
# per host and platform), ``run_dir``; version 1 was measured natively and is not read.
CALIBRATION_FORMAT_VERSION = 2
CALIBRATION_MAX_AGE_DAYS = 30
TRACE_BLOCK_VERSION = 1
MIN_MEMORY_MB = 128
# The runtime itself (the interpreter, the launcher) beside what spin holds: with less room the
# sandbox sits at its limit, reclaims pages for seconds per call and is killed for memory
# (measured on localwhisk: a 10 ms spin holding 137 MB in a 256 MB limit took ~10 s).
RUNTIME_HEADROOM_MB = 96


class Mapping(Enum):
    SPIN = "spin"
    NEAREST = "nearest"


@dataclass
class Calibration:
    """What functions take on this host and platform, as its activation records say (duration less
    initTime): spin's executed against requested, catalogue medians."""

    host: str
    cpu_model: str
    platform: str  # where it was measured: capacity_store.platform_identity ("localwhisk isolation=auto", ...)
    measured_utc: str
    spin_offset_ms: float
    spin_slope: float
    catalogue_median_ms: dict[str, float] = field(default_factory=dict)
    run_dir: str = ""  # the calibration run, kept in the cache
    format_version: int = CALIBRATION_FORMAT_VERSION

    def executed_ms(self, requested_ms: float) -> float:
        return self.spin_offset_ms + self.spin_slope * requested_ms

    def requested_ms(self, target_ms: float) -> float:
        return max((target_ms - self.spin_offset_ms) / self.spin_slope, 0.0)


def read_calibration(path: Path) -> Calibration:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise FormatError(f"{path}: unreadable calibration ({error}); delete it to measure again") from None
    if not isinstance(data, dict) or data.get("format_version") != CALIBRATION_FORMAT_VERSION:
        raise FormatError(
            f"{path}: calibration format_version {data.get('format_version') if isinstance(data, dict) else None!r} "
            f"is not {CALIBRATION_FORMAT_VERSION}; delete it (faasprof trace calibrate measures it again on the platform)"
        )
    try:
        return Calibration(**data)
    except TypeError as error:
        raise FormatError(f"{path}: calibration fields wrong ({error}); delete it to measure again") from None


def write_calibration(path: Path, calibration: Calibration) -> None:
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps(asdict(calibration), indent=1) + "\n", encoding="utf-8")
    os.replace(temporary, path)


@dataclass
class MappedFunction:
    instance: str
    key: dict[str, str]
    application: str
    params: dict
    memory_mb: int
    trace_median_ms: float
    predicted_median_ms: float

    @property
    def error(self) -> float:
        return self.predicted_median_ms / self.trace_median_ms - 1.0 if self.trace_median_ms > 0 else 0.0


def _memory_mb(app_mb: float) -> int:
    return max(MIN_MEMORY_MB, int(math.ceil((app_mb + RUNTIME_HEADROOM_MB) / 128.0)) * 128)


def map_function(
    instance: str, duration: DurationRow, app_mb: float, mapping: Mapping, calibration: Calibration, alloc: bool = True
) -> MappedFunction:
    """``alloc``: spin touches the app's memory (else it allocates nothing and runs at the smallest limit)."""
    median = duration.percentiles_ms[50]
    key = {"owner": duration.key.owner, "app": duration.key.app, "function": duration.key.function}
    if mapping is Mapping.SPIN:
        requested = [[p, round(calibration.requested_ms(duration.percentiles_ms[p]), 3)] for p in DURATION_PERCENTILES]
        held_mb = int(round(app_mb)) if alloc else 0
        params: dict = {"service_ms_percentiles": requested, "alloc_mb": held_mb}
        predicted = calibration.executed_ms(calibration.requested_ms(median))
        return MappedFunction(instance, key, "spin", params, _memory_mb(held_mb), median, predicted)
    if not calibration.catalogue_median_ms:
        raise ConfigError("the calibration measured no catalogue function; run faasprof trace calibrate --catalogue")
    name, measured = min(
        calibration.catalogue_median_ms.items(), key=lambda item: abs(math.log(max(item[1], 1e-3) / max(median, 1e-3)))
    )
    return MappedFunction(instance, key, name, {}, _memory_mb(app_mb), median, measured)


def _write_csv(path: Path, header: tuple[str, ...] | list[str], rows: list[list]) -> None:
    with open(path, "x", encoding="utf-8", newline="") as handle:
        handle.write(",".join(header) + "\n")
        for row in rows:
            handle.write(",".join(str(v) for v in row) + "\n")


@dataclass
class SampleSpec:
    """What `faasprof trace sample` was asked."""

    n: int
    seed: int
    minutes: tuple[int, int]
    warmup_minutes: int
    scale: float
    mapping: Mapping
    spread: str = "uniform"
    test_name: str = "trace_sample"
    alloc: bool = True


def write_sample(
    out_dir: Path,
    population: Population,
    chosen: list[int],
    counts: list[np.ndarray],
    spec: SampleSpec,
    calibration: Calibration,
    sample_distances: dict[str, FeatureDistance],
    effect: ScaleEffect | None,
) -> tuple[Path, list[MappedFunction]]:
    """The workload and its trace files in ``out_dir`` (created; nothing there is overwritten)."""
    try:
        out_dir.mkdir(parents=True, exist_ok=False)
    except FileExistsError:
        raise ConfigError(f"{out_dir}: already exists; name a new folder with --out (nothing is overwritten)") from None
    first = spec.minutes[0] - spec.warmup_minutes
    labels = [str(m) for m in range(first, spec.minutes[1] + 1)]
    keys = [population.keys[i] for i in chosen]
    trigger = "http"
    _write_csv(
        out_dir / "trace_invocations.csv",
        [*KEY_COLUMNS, *labels],
        [[k.owner, k.app, k.function, trigger, *c.tolist()] for k, c in zip(keys, counts)],
    )
    durations = [population.durations[k] for k in keys]
    _write_csv(
        out_dir / "trace_durations.csv",
        DURATION_COLUMNS,
        [
            [k.owner, k.app, k.function, d.average_ms, d.count, d.minimum_ms, d.maximum_ms,
             *(d.percentiles_ms[p] for p in DURATION_PERCENTILES)]
            for k, d in zip(keys, durations)
        ],
    )  # fmt: skip
    apps = sorted({(k.owner, k.app) for k in keys if (k.owner, k.app) in population.memory})
    _write_csv(
        out_dir / "trace_memory.csv",
        MEMORY_COLUMNS,
        [
            [o, a, m.sample_count, m.average_mb, *(m.percentiles_mb[p] for p in MEMORY_PERCENTILES)]
            for (o, a), m in ((app, population.memory[app]) for app in apps)
        ],
    )
    mapped = []
    instances = {}
    width = len(str(len(chosen)))
    for rank, (key, duration) in enumerate(zip(keys, durations)):
        name = f"f{rank:0{width}d}_{key.function[:8]}"
        memory = population.memory.get((key.owner, key.app))
        function = map_function(
            name, duration, memory.average_mb if memory else 0.0, spec.mapping, calibration, spec.alloc
        )
        mapped.append(function)
        instances[name] = {
            "application": function.application,
            "distribution": "Trace",
            "trace_file": "trace_invocations.csv",
            "trace_row": rank,
            "trace_start_minute": first,
            "trace_spread": spec.spread,
            **({"trace_scale": spec.scale} if spec.scale != 1.0 else {}),
            **({"params": function.params} if function.params else {}),
            "memory_mb": function.memory_mb,
        }
    trace_block = {
        "format_version": TRACE_BLOCK_VERSION,
        "source": {"invocations": str(population.day.invocations), "kind": population.day.kind.value},
        "minutes": list(spec.minutes),
        "warmup_minutes": spec.warmup_minutes,
        "seed": spec.seed,
        "population": len(population.keys),
        "excluded": population.excluded,
        "distances": {name: d.to_json() for name, d in sample_distances.items()},
        "scale": effect.to_json() if effect else None,
        "spread": spec.spread,
        "mapping": spec.mapping.value,
        "calibration": {
            "host": calibration.host, "cpu_model": calibration.cpu_model, "measured_utc": calibration.measured_utc,
            "platform": calibration.platform, "spin_offset_ms": calibration.spin_offset_ms,
            "spin_slope": calibration.spin_slope, "run_dir": calibration.run_dir,
        },
        "functions": {
            f.instance: {
                **f.key,
                "duration_percentiles_ms": {str(p): d.percentiles_ms[p] for p in DURATION_PERCENTILES},
                "average_ms": d.average_ms,
                "app_memory_mb": (population.memory[(d.key.owner, d.key.app)].average_mb
                                  if (d.key.owner, d.key.app) in population.memory else None),
                "mapped_to": f.application,
                "predicted_median_ms": round(f.predicted_median_ms, 3),
                "mapping_error": round(f.error, 4),
            }
            for f, d in zip(mapped, durations)
        },
    }  # fmt: skip
    worst = max(mapped, key=lambda f: abs(f.error))
    notes = [
        f"{len(chosen)} of {len(population.keys):,} functions of {population.day.invocations.name}, minutes "
        f"{spec.minutes[0]}-{spec.minutes[1]} (+{spec.warmup_minutes} warm-up), seed {spec.seed}",
        "distance from the whole: "
        + "; ".join(
            f"{n} W={d.wasserstein_log10:.3f} log10, KS={d.ks_statistic:.3f} (p={d.ks_pvalue:.2g})"
            for n, d in sample_distances.items()
        ),
        f"mapping {spec.mapping.value}, calibrated on {calibration.platform} of {calibration.host} "
        f"({calibration.measured_utc}): median |error| "
        f"{float(np.median([abs(f.error) for f in mapped])):.1%}, worst {worst.instance} {worst.error:+.1%}",
    ]
    if effect is not None:
        notes.append(effect.describe())
    description = " ".join(notes)  # without the per-function list, which a long sample makes long
    notes.append(
        "mapping error per function (predicted executed median / trace median - 1): "
        + ", ".join(f"{f.instance} {f.error:+.1%}" for f in mapped)
    )
    workload = {
        "test_name": spec.test_name,
        "description": description,
        "test_duration_in_seconds": 60 * len(labels),
        "random_seed": spec.seed,
        "self_check": {"warmup_s": 60 * spec.warmup_minutes},
        "notes": notes,
        "trace": trace_block,
        "instances": instances,
    }
    path = out_dir / "workload.json"
    with open(path, "x", encoding="utf-8") as handle:
        json.dump(workload, handle, indent=1)
        handle.write("\n")
    return path, mapped


__all__ = [
    "CALIBRATION_MAX_AGE_DAYS",
    "Calibration",
    "MappedFunction",
    "Mapping",
    "SampleSpec",
    "map_function",
    "read_calibration",
    "write_calibration",
    "write_sample",
]
