"""This host's calibration for trace mapping, measured through the platform the workload will run
on: what ``spin`` executes for what it is asked, and how long the catalogue's functions take with
their sample input, as that platform's activation records say (``duration`` less ``initTime``:
what the fidelity report compares with the trace's durations).

One short run (``faasprof.invoker.run.execute``) on the platform: a warm-up call, then ``spin`` at
each of ``SPIN_REQUESTS_MS`` for ``REPEATS`` calls, one at a time (``CALL_GAP_S`` apart, so that
no call waits for another), and with ``catalogue`` each Python function of the catalogue in turn
(a warm-up call, then ``REPEATS``, spaced by twice its native time: one call at a time). Cold
calls are left out. A line executed = offset + slope x
requested is fitted through the medians of spin's levels (least squares); each catalogue function keeps its median, and
one that failed every call is left out, and said. Measured natively (a worker process) spin's
offset was 0.1 ms; on the embedded localwhisk the executed medians came out 2.4 times the trace's
(16 ms against 5.6 ms): the platform's own overhead is part of what a function takes there.

Stored in the cache, one file per host and platform
(``faasprof.paths.cache_dir("calibration")/<hostname>--<platform>.json``, format version 2; the run
beside it in ``runs/``), and measured again when missing, when it names another host or CPU model
(a cache copied from another machine is never used silently), when older than
``CALIBRATION_MAX_AGE_DAYS``, or when asked (``faasprof trace calibrate``, ``trace sample
--recalibrate``).
"""

from __future__ import annotations

import datetime
import platform
import re
import socket
from pathlib import Path

import numpy as np

from faasprof import paths, rundir
from faasprof.analyzer.analysis import load_run
from faasprof.errors import NotReadyError
from faasprof.experiments.capacity_store import platform_identity
from faasprof.experiments.native import Worker
from faasprof.functions import catalogue
from faasprof.invoker.run import execute
from faasprof.platforms.openwhisk.connection import Connection
from faasprof.progress import QUIET, Progress
from faasprof.workload.spec import workload_from_dict
from faasprof.workload.trace_workload import (
    CALIBRATION_MAX_AGE_DAYS,
    Calibration,
    read_calibration,
    write_calibration,
)

SPIN_REQUESTS_MS = (1.0, 5.0, 20.0, 50.0)
REPEATS = 7
CALL_GAP_S = 0.4  # between spin's calls: longer than its slowest level, so that no call waits for another
WARMUP_CALLS = 3
# The warm-up's calls wait for the sandbox: on OpenWhisk standalone (Docker) a cold start took over
# 0.4 s, so calls 0.4 s apart each started a container, and 4 of spin's 7 calls at 1 ms were cold.
WARMUP_GAP_S = 1.5
NATIVE_TIMEOUT_S = 120.0
# A catalogue function's calls are its native time x this, plus CALL_GAP_S, apart: fannkuch takes
# seconds, and calls 0.4 s apart ran six at once (its median read 21 s).
GAP_FACTOR = 2.0


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def calibration_path(platform_id: str) -> Path:
    """The file of this host's calibration on ``platform_id`` (``capacity_store.platform_identity``)."""
    slug = re.sub(r"[^A-Za-z0-9.=_-]+", "_", platform_id).strip("_")
    return paths.cache_dir("calibration") / f"{socket.gethostname()}--{slug}.json"


def _block(name: str, params: dict, start_s: float, calls: int, gap_s: float = CALL_GAP_S) -> tuple[dict, float]:
    """An instance making ``calls`` calls from ``start_s``, one every ``gap_s``; and its end."""
    end_s = start_s + calls * gap_s
    instance = {
        "application": name,
        "distribution": "Uniform",
        "rate": 1.0 / gap_s,
        "activity_window": [round(start_s, 3), round(end_s, 3)],
        **({"params": params} if params else {}),
    }
    return instance, end_s


def calibration_workload(functions: dict[str, float]) -> dict:
    """The calibration run: spin's warm-up and levels, then each of ``functions`` (name: its native
    time in ms, which spaces its calls) with its sample input."""
    instances: dict[str, dict] = {}
    instances["spin-warmup"], at = _block("spin", {"service_ms": 1.0}, 0.0, WARMUP_CALLS, WARMUP_GAP_S)
    for service_ms in SPIN_REQUESTS_MS:
        instances[f"spin-{service_ms:g}ms"], at = _block("spin", {"service_ms": service_ms}, at, REPEATS)
    for name, native_ms in functions.items():
        gap_s = round(CALL_GAP_S + GAP_FACTOR * native_ms / 1000.0, 3)
        instances[f"{name}-warmup"], at = _block(name, {}, at, 1, gap_s)
        instances[name], at = _block(name, {}, at, REPEATS, gap_s)
    return {
        "test_name": "trace-calibration",
        "test_duration_in_seconds": round(at + CALL_GAP_S, 3),
        "random_seed": 1,
        "blocking_cli": True,
        "instances": instances,
    }


def _native_ms(entry: catalogue.FunctionEntry) -> float:
    """One warm call's execution time (ms) in a worker process, as `faasprof native` runs it."""
    worker = Worker(entry)
    worker.start()
    try:
        for _ in range(2):  # the first imports and warms
            answer = worker.call(entry.sample_params(), NATIVE_TIMEOUT_S)
            if not answer.get("ok"):
                raise NotReadyError(f"failed natively ({answer.get('error')})")
    finally:
        worker.stop()
    return float(answer["exec_ns"]) / 1e6


def _python_functions(progress: Progress) -> dict[str, float]:
    """The Python catalogue functions that run here, with their native time (which spaces their calls)."""
    found = {}
    for entry in catalogue.entries():
        if not entry.kind.startswith("python") or entry.name == "spin":
            continue
        try:
            entry.require_available()
            found[entry.name] = _native_ms(entry)
        except Exception as error:  # noqa: BLE001 - a function that cannot run here is left out, and said
            progress.say(f"calibration: {entry.name} left out ({str(error).splitlines()[0][:120]})")
    return found


def _executed_ms(run_dir: Path) -> dict[str, np.ndarray]:
    """Per instance, the run time (duration less initTime) of its successful calls that were not cold."""
    frame = load_run(run_dir).invocations
    kept = frame[(frame["final_outcome"] == "success") & (frame["start_class"] != "cold")]
    kept = kept[kept["execution_ms"].notna()]
    return {
        str(name): rows["execution_ms"].to_numpy(dtype=np.float64)
        for name, rows in kept.groupby("instance", observed=True)
    }


def fit_spin(executed: dict[str, np.ndarray]) -> tuple[float, float]:
    """(offset_ms, slope) of executed against requested, through each level's median: on a busy
    host one call in five may take twice as long (16 ms for a 1 ms spin), which would tilt a fit
    through every call."""
    requested, measured = [], []
    for service_ms in SPIN_REQUESTS_MS:
        values = executed.get(f"spin-{service_ms:g}ms", np.empty(0))
        if len(values):
            requested.append(service_ms)
            measured.append(float(np.median(values)))
    if len(requested) < 2:
        raise NotReadyError(
            "calibration: spin answered at fewer than two of its levels on the platform (no warm successful call "
            "with a record); see the calibration run's report, then run faasprof trace calibrate again"
        )
    slope, offset = np.polyfit(np.asarray(requested), np.asarray(measured), 1)
    return float(offset), float(slope)


def calibrate(
    catalogue_too: bool = False,
    connection: Connection | None = None,
    local_settings: dict | None = None,
    progress: Progress = QUIET,
) -> Calibration:
    """Measure on the platform (``connection``, else the embedded localwhisk with ``local_settings``) and store it."""
    platform_id = platform_identity(connection, local_settings)
    functions = _python_functions(progress) if catalogue_too else {}
    data = calibration_workload(functions)
    progress.say(
        f"calibrating on {platform_id}: spin at {', '.join(f'{v:g}' for v in SPIN_REQUESTS_MS)} ms"
        + (f" and {len(functions)} catalogue function(s)" if functions else "")
        + f", {data['test_duration_in_seconds']:g} s"
    )
    runs = paths.cache_dir("calibration") / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    workload = workload_from_dict(data, origin="trace calibration")
    run_dir = execute(workload, runs, connection=connection, local_settings=local_settings, save_records=True)
    status = rundir.read_manifest(run_dir).status
    if status != "complete":
        raise NotReadyError(f"calibration: the run on {platform_id} ended {status} ({run_dir}); run it again")
    executed = _executed_ms(run_dir)
    offset, slope = fit_spin(executed)
    progress.say(f"spin on {platform_id}: executed = {offset:.3f} ms + {slope:.4f} x requested")
    medians = {}
    for name in functions:
        if len(executed.get(name, ())) == 0:
            progress.say(f"calibration: {name} left out (no successful warm call on the platform)")
            continue
        medians[name] = round(float(np.median(executed[name])), 3)
        progress.say(f"calibration: {name} median {medians[name]:.2f} ms")
    calibration = Calibration(
        host=socket.gethostname(),
        cpu_model=cpu_model(),
        platform=platform_id,
        measured_utc=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        spin_offset_ms=round(offset, 4),
        spin_slope=round(slope, 5),
        catalogue_median_ms=medians,
        run_dir=str(run_dir),
    )
    write_calibration(calibration_path(platform_id), calibration)
    progress.say(f"calibration stored in {calibration_path(platform_id)}")
    return calibration


def stale_because(stored: Calibration, platform_id: str, now: datetime.datetime | None = None) -> str | None:
    """Why a stored calibration does not describe this host and platform now (None: it does)."""
    if stored.host != socket.gethostname():
        return f"it is host {stored.host}'s, not this host's ({socket.gethostname()})"
    if stored.platform != platform_id:
        return f"it was measured on {stored.platform}, not {platform_id}"
    if stored.cpu_model != cpu_model():
        return f"it was measured on a {stored.cpu_model}, this CPU is a {cpu_model()}"
    measured = datetime.datetime.strptime(stored.measured_utc, "%Y-%m-%dT%H:%M:%SZ").replace(
        tzinfo=datetime.timezone.utc
    )
    age_days = ((now or datetime.datetime.now(datetime.timezone.utc)) - measured).days
    if age_days > CALIBRATION_MAX_AGE_DAYS:
        return f"it is {age_days} days old (over {CALIBRATION_MAX_AGE_DAYS})"
    return None


def current_calibration(
    catalogue_too: bool = False,
    again: bool = False,
    connection: Connection | None = None,
    local_settings: dict | None = None,
    progress: Progress = QUIET,
) -> Calibration:
    """The stored calibration of this host and platform when it still holds, else a new one (measured and stored)."""
    platform_id = platform_identity(connection, local_settings)
    path = calibration_path(platform_id)
    if path.exists() and not again:
        stored = read_calibration(path)
        why = stale_because(stored, platform_id)
        if why is None and (stored.catalogue_median_ms or not catalogue_too):
            progress.say(f"calibration on {platform_id} of {stored.measured_utc} from {path}")
            return stored
        progress.say(f"{path}: measuring again: {why or 'it has no catalogue function (--map nearest)'}")
    return calibrate(catalogue_too, connection, local_settings, progress)


__all__ = [
    "calibrate",
    "calibration_path",
    "calibration_workload",
    "cpu_model",
    "current_calibration",
    "fit_spin",
    "stale_because",
]
