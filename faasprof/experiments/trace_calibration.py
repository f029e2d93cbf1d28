"""This host's calibration for trace mapping: what ``spin`` executes for what it is asked, and
how long the catalogue's functions take with their sample input.

Measured in a worker process, as ``faasprof native`` runs a function (the host's CPU, without a
platform's overhead, which the fidelity report shows as the gap between executed and trace
durations): ``spin`` is called ``REPEATS`` times at each of ``SPIN_REQUESTS_MS`` (after one warm-up
call) and a line executed = offset + slope x requested is fitted to the worker's execution times
(least squares). With ``catalogue``, each Python function of the catalogue that can run here is
called ``REPEATS`` times with its sample input and its median kept.

Stored in the cache (``faasprof.paths.cache_dir("calibration")/<hostname>.json``, format version 1);
measured again when missing, when the CPU model differs, when older than
``CALIBRATION_MAX_AGE_DAYS``, or when asked (``faasprof trace calibrate``, ``trace sample
--recalibrate``).
"""

from __future__ import annotations

import datetime
import platform
import socket
import statistics
from pathlib import Path

import numpy as np

from faasprof import paths
from faasprof.errors import FaasprofError
from faasprof.experiments.native import Worker
from faasprof.functions import catalogue
from faasprof.progress import QUIET, Progress
from faasprof.workload.trace_workload import (
    CALIBRATION_MAX_AGE_DAYS,
    Calibration,
    read_calibration,
    write_calibration,
)

SPIN_REQUESTS_MS = (1.0, 5.0, 20.0, 50.0)
REPEATS = 5
CALL_TIMEOUT_S = 30.0


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def calibration_path() -> Path:
    return paths.cache_dir("calibration") / f"{socket.gethostname()}.json"


def _exec_ms(worker: Worker, params: dict) -> float:
    answer = worker.call(params, CALL_TIMEOUT_S)
    if not answer.get("ok"):
        raise FaasprofError(f"{worker.entry.name}: failed while calibrating ({answer.get('error')})")
    return answer["exec_ns"] / 1e6


def measure_spin(progress: Progress = QUIET) -> tuple[float, float]:
    """(offset_ms, slope) of executed against requested, measured in a worker."""
    entry = catalogue.lookup("spin")
    assert entry is not None  # the catalogue holds spin
    worker = Worker(entry)
    worker.start()
    try:
        _exec_ms(worker, {"service_ms": 1.0})  # the first call imports and warms
        requested, executed = [], []
        for service_ms in SPIN_REQUESTS_MS:
            for _ in range(REPEATS):
                requested.append(service_ms)
                executed.append(_exec_ms(worker, {"service_ms": service_ms}))
    finally:
        worker.stop()
    slope, offset = np.polyfit(np.asarray(requested), np.asarray(executed), 1)
    progress.say(f"spin on this host: executed = {offset:.3f} ms + {slope:.4f} x requested")
    return float(offset), float(slope)


def measure_catalogue(progress: Progress = QUIET) -> dict[str, float]:
    """Median execution (ms) of each Python catalogue function that runs here, with its sample input."""
    found = {}
    for entry in catalogue.entries():
        if not entry.kind.startswith("python") or entry.name == "spin":
            continue
        try:
            entry.require_available()
            worker = Worker(entry)
            worker.start()
            try:
                _exec_ms(worker, entry.sample_params())
                found[entry.name] = statistics.median(_exec_ms(worker, entry.sample_params()) for _ in range(REPEATS))
            finally:
                worker.stop()
        except Exception as error:  # noqa: BLE001 - a function that cannot run here is left out, and said
            progress.say(f"calibration: {entry.name} left out ({str(error).splitlines()[0][:120]})")
            continue
        progress.say(f"calibration: {entry.name} median {found[entry.name]:.2f} ms")
    return found


def calibrate(catalogue_too: bool = False, progress: Progress = QUIET) -> Calibration:
    offset, slope = measure_spin(progress)
    calibration = Calibration(
        host=socket.gethostname(),
        cpu_model=cpu_model(),
        platform="native",
        measured_utc=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        spin_offset_ms=round(offset, 4),
        spin_slope=round(slope, 5),
        catalogue_median_ms=measure_catalogue(progress) if catalogue_too else {},
    )
    write_calibration(calibration_path(), calibration)
    progress.say(f"calibration stored in {calibration_path()}")
    return calibration


def current_calibration(catalogue_too: bool = False, again: bool = False, progress: Progress = QUIET) -> Calibration:
    """The stored calibration when it still describes this host, else a new one (measured and stored)."""
    path = calibration_path()
    if path.exists() and not again:
        stored = read_calibration(path)
        measured = datetime.datetime.strptime(stored.measured_utc, "%Y-%m-%dT%H:%M:%SZ").replace(
            tzinfo=datetime.timezone.utc
        )
        age_days = (datetime.datetime.now(datetime.timezone.utc) - measured).days
        fresh = stored.cpu_model == cpu_model() and age_days <= CALIBRATION_MAX_AGE_DAYS
        if fresh and (stored.catalogue_median_ms or not catalogue_too):
            progress.say(f"calibration of {stored.measured_utc} from {path}")
            return stored
    return calibrate(catalogue_too, progress)


__all__ = ["calibrate", "calibration_path", "cpu_model", "current_calibration", "measure_catalogue", "measure_spin"]
