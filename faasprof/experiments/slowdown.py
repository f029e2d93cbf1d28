"""Containerisation slowdown (the paper's Figures 15 and 16): the same function natively and in FaaS.

``run_slowdown`` is the study: it checks the options, starts the embedded localwhisk unless a
platform is named, deploys the functions, measures each (``slowdown_measure``: native and FaaS
calls interleaved, warm and after a pause), summarises it as it goes and writes the answer
(``slowdown_report``: medians with confidence intervals, slowdown factors, plain-word notes, the
power-law fit of Figure 16, both figures).

Output directory ``<out>/slowdown-<stamp>/`` (never reused): ``manifest.json`` (format version,
functions, platform, native command and interpreter, settings, fits), ``slowdown.csv``,
``calls.csv`` (every call, warm-ups included), ``fig15_slowdown_per_function.png``,
``fig16_slowdown_vs_native.png``, ``native/<function>/`` (the native worker's stdout and stderr)
and, on the embedded platform, ``localwhisk/`` (its records and log).

Format versions (``SLOWDOWN_FORMAT_VERSION``): 1: first version (native measured first, in its own
run directory; FaaS execution from the record's duration only). 2: native and FaaS calls
interleaved, native calls in ``calls.csv``; ``cpu_ms``, ``exec_resolution_ms`` and ``notes``;
execution from ``runTimeUs`` where the platform gives it.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from faasprof import __version__, rundir
from faasprof.errors import ConfigError
from faasprof.experiments import native
from faasprof.experiments.slowdown_measure import Call, measure_function
from faasprof.experiments.slowdown_report import (
    MEDIAN_CI_MIN_SAMPLES,
    NOTE_SEPARATOR,
    RESOLUTION_STEPS,
    summarise_function,
    write_results,
)
from faasprof.functions.catalogue import FunctionEntry
from faasprof.localwhisk.embedded import start_embedded
from faasprof.numbers import number_text
from faasprof.platforms.openwhisk.client import OpenWhiskClient
from faasprof.platforms.openwhisk.connection import Connection
from faasprof.platforms.openwhisk.deploy import ensure_actions
from faasprof.progress import QUIET, Progress

SLOWDOWN_FORMAT_VERSION = 2
REMOTE_PAUSE_WAIT_S = 11.0  # past OpenWhisk 2.x's 10 s pause grace (1.0.0: 50 ms)
EMBEDDED_PAUSE_MARGIN_S = 0.5


def remote_pause_wait_s(connection: Connection) -> float:
    """How long a platform's sandbox is left idle before a resumed call: past the pause grace its
    connection states (the OpenWhisk standalone of ``local start`` records its own, 50 ms by
    default) by ``EMBEDDED_PAUSE_MARGIN_S``, else past OpenWhisk 2.x's default. Waiting 11 s on a
    50 ms grace cost the ``-m openwhisk`` tier 3 functions × 6 repeats × 10.5 s, and past a 1 s
    idle timeout the "resumed" call found no container at all."""
    grace_ms = (connection.settings or {}).get("pause_grace_ms")
    if isinstance(grace_ms, (int, float)) and grace_ms > 0:
        return grace_ms / 1000.0 + EMBEDDED_PAUSE_MARGIN_S
    return REMOTE_PAUSE_WAIT_S


@dataclass
class SlowdownOptions:
    repeat: int = 10
    pause_wait_s: float | None = None  # None: the embedded grace + margin, or REMOTE_PAUSE_WAIT_S
    isolation: str | None = None
    pause_grace_ms: float | None = None
    memory_mb: int | None = None
    extra_settings: dict = field(default_factory=dict)


def run_slowdown(
    entries: list[FunctionEntry],
    out_dir: str | os.PathLike,
    options: SlowdownOptions,
    connection=None,
    progress: Progress = QUIET,
    sleep=time.sleep,
) -> Path:
    """Measure every function (module docstring); returns the output directory."""
    if options.repeat < 1:
        raise ConfigError(f"--repeat: must be >= 1 (got {options.repeat})")
    if options.pause_wait_s is not None and options.pause_wait_s <= 0:
        raise ConfigError(f"--pause-wait: must be > 0 s (got {options.pause_wait_s:g})")
    if not entries:
        raise ConfigError("FUNCTION: name at least one function, or pass --all")
    for entry in entries:
        entry.install_packages(progress)
        entry.require_available()
    out = rundir.create_run_dir(out_dir, "slowdown", monitors=False)
    handle = None
    manifest = rundir.study_manifest("slowdown", SLOWDOWN_FORMAT_VERSION, status=rundir.RunStatus.RUNNING)
    measuring = False  # before the first measurement a failure (pre-flight) leaves no directory behind
    try:
        settings: dict = dict(options.extra_settings)
        if options.isolation:
            settings["isolation"] = options.isolation
        if options.pause_grace_ms is not None:
            settings["pause_grace_ms"] = options.pause_grace_ms
        if connection is None:
            progress.say("starting the embedded localwhisk (no --apihost or ~/.wskprops names a platform)")
            handle = start_embedded(data_dir=out / "localwhisk", **settings)
            connection = Connection(
                apihost=handle.apihost, auth=handle.auth, namespace=handle.namespace, source="embedded"
            )
            grace_s = float(settings.get("pause_grace_ms", 50)) / 1000.0
            pause_wait_s = (
                options.pause_wait_s if options.pause_wait_s is not None else grace_s + EMBEDDED_PAUSE_MARGIN_S
            )
        else:
            pause_wait_s = options.pause_wait_s if options.pause_wait_s is not None else remote_pause_wait_s(connection)
        client = OpenWhiskClient(connection)
        info = client.info()
        names = [entry.name for entry in entries]
        actions = ensure_actions(client, names, options.memory_mb)
        native_commands = {entry.name: native.native_command(entry) for entry in entries}
        same_interpreter = platform_interpreter_matches(entries, getattr(handle, "settings", None))
        manifest.update(
            {
                "generated_by": {"faasprof": __version__, "git_commit": rundir.git_commit()},
                "created_utc": rundir.utc_stamp(),
                "functions": names,
                "repeat": options.repeat,
                "pause_wait_s": pause_wait_s,
                "platform": {
                    "embedded": handle is not None,
                    **connection.describe(),
                    "info": info,
                    "actions": actions,
                    "localwhisk": getattr(handle, "settings", None),
                },
                "native": {
                    "command": native_commands,
                    "interpreter": {e.name: native.interpreter_version(e) for e in entries},
                    "same_interpreter_as_platform": same_interpreter,
                    "worker_logs": "native/<function>/",
                },
                "definitions": {
                    "exec_ms": "native: perf_counter around main inside the worker (warm); FaaS: localwhisk's runTimeUs annotation (µs), "
                    "else the activation record's duration less initTime (1 ms resolution)",
                    "latency_ms": "native: round trip over the worker's pipe; FaaS: the blocking call's round trip at the client",
                    "cpu_ms": "native: the worker's user + system CPU time during the call (rusage); FaaS: localwhisk's runCpuTimeUs (process sandboxes)",
                    "order": "per function: native and warm calls alternate (who goes first alternates too), then each resumed call follows "
                    "a native call made while the sandbox waits for its pause; both sides are warm and see the same host load",
                    "slowdown": f"FaaS median / native median; null when undefined or when the FaaS execution median is under "
                    f"{RESOLUTION_STEPS} resolution steps (notes says so)",
                    "notes": "plain sentences for factors that show no slowdown or that the native calls' own range covers",
                    "ci": f"distribution-free 95 % interval of the median (order statistics); null below {MEDIAN_CI_MIN_SAMPLES} samples",
                },
            }
        )
        rundir.write_manifest(out, manifest)
        measuring = True
        rows: list[dict] = []
        every: list[Call] = []
        for entry in entries:
            calls = measure_function(
                entry, client, options.repeat, pause_wait_s, out / "native" / entry.name, sleep=sleep, progress=progress
            )
            row = summarise_function(entry.name, calls)
            rows.append(row)
            every += calls
            progress.say(
                f"{entry.name}: native {number_text(row['native_exec_ms'])} ms; warm {number_text(row['warm_exec_ms'])} ms (×{number_text(row['slowdown_exec_warm'])}), "
                f"resumed {number_text(row['resumed_exec_ms'])} ms (×{number_text(row['slowdown_exec_resumed'])}); latency ×{number_text(row['slowdown_latency_warm'])} / ×{number_text(row['slowdown_latency_resumed'])}"
            )
            for note in filter(None, row["notes"].split(NOTE_SEPARATOR)):
                progress.say(f"{entry.name}: {note}")
        client.close()
        manifest.status = rundir.RunStatus.COMPLETE
        write_results(out, rows, every, manifest)
        return out
    except BaseException as error:
        if not measuring:
            raise
        # The directory stays (native runs, localwhisk records); its manifest says how it ended.
        status = (
            rundir.RunStatus.INTERRUPTED if isinstance(error, KeyboardInterrupt) else "failed"
        )  # the study's own word
        manifest.update(status=status, reason=f"{type(error).__name__}: {error}"[:300])
        rundir.write_manifest(out, manifest)
        raise
    finally:
        if handle is not None:
            handle.stop(timeout_s=10)
        if not measuring:
            shutil.rmtree(out, ignore_errors=True)


def platform_interpreter_matches(entries: list[FunctionEntry], localwhisk_settings: dict | None) -> bool | None:
    """Whether the embedded localwhisk's process sandboxes run Python functions with the native worker's interpreter.

    None when it cannot be said: another platform, Docker sandboxes, or no Python function."""
    if (
        not localwhisk_settings
        or localwhisk_settings.get("isolation") == "docker"
        or not any(e.runtime == "python" for e in entries)
    ):
        return None
    platform_python = localwhisk_settings.get("python") or ""
    return bool(platform_python) and os.path.realpath(platform_python) == os.path.realpath(sys.executable)
