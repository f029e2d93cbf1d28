"""The collector base classes: lifecycle, process and sampling collectors, doctor findings.

Lifecycle (``faasprof run`` drives it)::

    collectors = build_collectors(workload.monitoring, {"cgroup_parents": {...}, "duration_s": 60,
                                                        "host_root": "/"})
    for c in collectors:
        reason = c.check()          # None = can run here; else one line: why, and the fix
    for c in collectors: c.start(run_dir)
    ...                             # c.alive() tells whether it is still running
    for c in collectors: c.stop()   # SIGINT, wait, SIGTERM, wait, SIGKILL; safe twice
    manifest.monitors = rundir.monitors_by_name([c.describe() for c in collectors])

``start`` does not raise when the tool fails: the failure is recorded (``describe()["status"]`` is
``failed``, ``alive()`` is False) and the caller decides, from ``required``, whether the run goes on.
A collector that dies mid-run shows ``died`` with its exit code and the tail of its stderr.

Each collector writes under ``monitors/<name>/``: ``command.txt``, ``stdout.log``, ``stderr.log``,
its raw output, and ``meta.json`` (``wall_ns_at_start``/``monotonic_ns_at_start`` taken just before
the tool starts: the anchor ``faasprof.monitoring.frames`` aligns its samples with).

Besides the lifecycle, a collector class states everything else the rest of faasprof needs to know
about it (the registry in ``faasprof.monitoring.collectors`` reads these class attributes; nothing else
names a collector):

* ``name``, ``summary`` (one line: what it records), ``tool`` (what runs, for the README table),
  ``defaults`` (settings of ``"name": true``), ``options_schema`` (JSON-Schema properties of the
  object form in a workload's ``monitoring`` block; ``required`` is added by the registry);
* ``parse_kinds``: the ``faasprof parse`` kinds that turn its raw output into a tidy frame;
* ``version_commands`` (its tools' versions, for the manifest);
* ``plots``: what the report plots of its frame beside latency and lists in its monitors table,
  in order of preference (``Plot``: a column, its label and unit, the factor into that unit),
  ``plot_lines_by`` (a column with a line each, as cgroups' ``sandbox``: ``.`` is the whole, the
  others ranked by ``plot_busiest_by``) and ``unplottable_columns`` (frame columns the analyzer
  leaves out, with why, said in the report); the analyzer names no collector nor column;
* ``load_frame()``: a finished run's raw output as a frame on the run clock;
* ``doctor()``: what ``faasprof doctor`` reports about it, as ``Finding``s.
"""

from __future__ import annotations

import argparse
import os
import shlex
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Callable, ClassVar, TextIO

from faasprof.monitoring.host import Root
from faasprof.monitoring.reaper import REAPER
from faasprof.monitoring.sampling import sample_until
from faasprof.rundir import Manifest, monitor_dir, write_json_atomic

META_FORMAT_VERSION = 1

# How long a collector may outlive the planned run if nobody stops it (the invoker crashed).
SAFETY_MARGIN_S = 600.0
STOP_WAIT_S = 5.0
STDERR_TAIL_CHARS = 400

# Doctor states. MISSING: unavailable and asked for (exit 3); "no": unavailable, not asked for.
OK, NO, WARN, INFO = "ok", "MISSING", "warn", "info"


@dataclass
class Finding:
    """One line of ``faasprof doctor``: an area, a state, what was found and, when missing, the fix."""

    area: str
    state: str  # ok | MISSING | no | warn | info
    text: str
    fix: str | None = None
    blocks: tuple[str, ...] = ()  # which requirements it fails when MISSING: a collector name, or platform

    def line(self) -> str:
        text = f"{self.area:<9} {self.state:<7} {self.text}"
        if self.fix and self.state != OK:
            text += f"; fix: {self.fix}"
        return text


@dataclass(frozen=True)
class ParseArgument:
    """A ``faasprof parse`` option a parse kind reads (merged across kinds by ``flag``)."""

    flag: str
    help: str
    kwargs: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Plot:
    """One column of a collector's frame the report plots beside latency: its axis reads
    ``label (unit)``, the values being the column's times ``scale`` (into ``unit``)."""

    column: str
    label: str
    unit: str = ""
    scale: float = 1.0

    @property
    def axis_label(self) -> str:
        return f"{self.label} ({self.unit})" if self.unit else self.label


@dataclass(frozen=True)
class ParseKind:
    """One ``faasprof parse KIND``: raw text and the parsed CLI arguments in, a tidy frame out."""

    name: str
    help: str
    parse: Callable[[str, argparse.Namespace], Any]
    arguments: tuple[ParseArgument, ...] = ()


def tail(path: Path, chars: int = STDERR_TAIL_CHARS) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    return " | ".join(line.strip() for line in text[-chars:].splitlines() if line.strip())


def read_output(path: Path) -> str | None:
    """A raw output file's text, or None when it is missing or holds only whitespace."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    return text if text.strip() else None


def samples_on_run_clock(path: Path, parse, offset_s: float):
    """A sampler's raw file parsed (``parse(text)`` gives ``elapsed_s`` per sample) with ``t_s``,
    seconds on the run clock, in front; None when the file is missing, blank or has no sample."""
    text = read_output(path)
    if text is None:
        return None
    frame = parse(text)
    if frame.empty:
        return None
    frame.insert(0, "t_s", offset_s + frame["elapsed_s"])
    return frame


class Collector:
    """Base: status, errors, warnings, the start anchor, ``meta.json``; subclasses add the tool.

    A collector registered in ``faasprof.monitoring.collectors`` sets the class attributes below and may
    override ``load_frame`` and ``doctor`` (see the module docstring).
    """

    name: ClassVar[str] = "collector"
    summary: ClassVar[str] = ""
    tool: ClassVar[str] = ""
    raw_outputs: ClassVar[str] = ""  # the raw files under monitors/<name>/, for the README table
    defaults: ClassVar[dict[str, Any]] = {"required": False}
    options_schema: ClassVar[dict[str, dict]] = {}
    parse_kinds: ClassVar[tuple[ParseKind, ...]] = ()
    version_commands: ClassVar[dict[str, list[str]]] = {}  # {tool: argv printing its version}, for the manifest
    plots: ClassVar[tuple[Plot, ...]] = ()  # what the report plots of its frame, in order of preference
    plot_lines_by: ClassVar[str | None] = None  # a column with a line each ("." the whole), e.g. a sandbox
    plot_busiest_by: ClassVar[str | None] = None  # the column whose sum picks the lines of plot_lines_by shown
    unplottable_columns: ClassVar[dict[str, str]] = {}  # {frame column: why the analyzer does not plot it}

    def __init__(self, block: dict, context: dict):
        self.block = {**self.defaults, **block}
        self.context = context
        self.required = bool(self.block.get("required", False))
        self.root = Root(context.get("host_root") or "/")
        self.status = "not_started"  # not_started | running | stopped | failed | died
        self.errors: list[str] = []
        self.warnings: list[str] = []
        self.command: list[str] | None = None
        self.wall_ns_at_start: int | None = None
        self.monotonic_ns_at_start: int | None = None
        self.dir: Path | None = None
        self.outputs: list[str] = []
        self._checked: str | None | bool = False  # False: check() not run yet
        self._stop_lock = threading.RLock()
        self._finished = False

    # -- lifecycle -------------------------------------------------------------------------------
    def check(self) -> str | None:
        if self._checked is False:
            self._checked = self._check()
        return self._checked  # type: ignore[return-value]

    def _check(self) -> str | None:
        raise NotImplementedError

    def start(self, run_dir: str | os.PathLike) -> None:
        if self.status != "not_started":
            return
        self.dir = monitor_dir(run_dir, self.name)
        reason = self.check()
        if reason is not None:
            self._fail(reason)
            return
        try:
            self._start()
        except Exception as error:  # a collector must never take the run down with it
            self._fail(f"{self.name}: could not start ({error})")
            return
        if self.status == "not_started":
            self.status = "running"
        self._write_meta()

    def _start(self) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        with self._stop_lock:
            if self.status != "running":
                return
            try:
                self._stop()
            except Exception as error:
                self.errors.append(f"{self.name}: error while stopping ({error})")
            if self.status == "running":
                self.status = "stopped"
            self._write_meta()

    def _stop(self) -> None:
        raise NotImplementedError

    def alive(self) -> bool:
        return self.status == "running"

    def describe(self) -> dict:
        return {
            "name": self.name,
            "required": self.required,
            "status": self.status,
            "command": shlex.join(self.command) if self.command else None,
            "wall_ns_at_start": self.wall_ns_at_start,
            "monotonic_ns_at_start": self.monotonic_ns_at_start,
            "settings": {k: v for k, v in self.block.items() if k != "required"},
            "outputs": list(self.outputs),
            "errors": list(self.errors),
            "warnings": list(self.warnings),
        }

    # -- helpers ---------------------------------------------------------------------------------
    def _fail(self, reason: str) -> None:
        self.status = "failed"
        self.errors.append(reason)
        if self.dir is not None:
            self._write_meta()

    def _anchor(self) -> None:
        self.wall_ns_at_start = time.time_ns()
        self.monotonic_ns_at_start = time.monotonic_ns()

    def _write_meta(self) -> None:
        if self.dir is None:
            return
        write_json_atomic(self.dir / "meta.json", {"format_version": META_FORMAT_VERSION, **self.describe()})

    def _bound_s(self, extra: float = 0.0) -> float:
        duration = float(self.context.get("duration_s") or 0.0)
        return duration + SAFETY_MARGIN_S + extra

    # -- what the rest of faasprof asks of a collector class ----------------------------------------
    @classmethod
    def load_frame(cls, directory: Path, meta: dict, offset_s: float, manifest: Manifest):
        """The raw output in ``directory`` as a frame with ``t_s`` (seconds since the run's zero at
        the end of each sample), or None when there is nothing to parse. ``meta`` is the monitor's
        ``meta.json`` over its manifest entry; ``offset_s`` is its start on the run clock; ``manifest``
        the run's (host facts)."""
        return None

    @classmethod
    def doctor(cls, root: Root, host: dict, live: bool, block: dict | None) -> list[Finding]:
        """What ``faasprof doctor`` says about this collector on ``host`` (``faasprof.monitoring.host.
        collect_host``); ``live`` when ``root`` is this machine's ``/`` (tools may be run);
        ``block`` is the workload's settings for it (None when not asked for)."""
        return []


class ProcessCollector(Collector):
    """A collector that is one long-running tool process."""

    stop_signal = signal.SIGINT

    def __init__(self, block: dict, context: dict):
        super().__init__(block, context)
        self.process: subprocess.Popen | None = None
        self.returncode: int | None = None
        self._stdout: BinaryIO | None = None
        self._stderr: BinaryIO | None = None

    def _launch(self, argv: list[str]) -> None:
        assert self.dir is not None
        self.command = argv
        (self.dir / "command.txt").write_text(shlex.join(argv) + "\n", encoding="utf-8")
        self._stdout = open(self.dir / "stdout.log", "wb")
        self._stderr = open(self.dir / "stderr.log", "wb")
        self._anchor()
        # A new session: a Ctrl-C in the terminal reaches faasprof, which stops the tool itself
        # (perf would otherwise get the SIGINT too and exit before the final interval is wanted).
        self.process = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=self._stdout,
            stderr=self._stderr,
            start_new_session=True,
            cwd=self.dir,
        )
        # Its own session leaves it to faasprof to stop; the reaper stops it if faasprof cannot.
        REAPER.watch(self.process.pid, self.stop_signal)

    def _startup_check(self, wait_s: float = 0.3) -> None:
        """A tool that exits at once (bad option, no permission) is a failed start."""
        assert self.process is not None
        try:
            self.process.wait(wait_s)
        except subprocess.TimeoutExpired:
            return
        self.returncode = self.process.returncode
        REAPER.unwatch(self.process.pid)
        self._close_logs()
        assert self.dir is not None
        self._fail(
            f"{self.name}: {self.command[0] if self.command else 'tool'} exited at once with code {self.returncode}: {tail(self.dir / 'stderr.log') or 'no message'}"
        )

    def alive(self) -> bool:
        if self.status != "running" or self.process is None:
            return False
        if self.process.poll() is None:
            return True
        self.returncode = self.process.returncode
        REAPER.unwatch(self.process.pid)
        self.status = "died"
        assert self.dir is not None
        self.errors.append(
            f"{self.name}: exited during the run with code {self.returncode}: {tail(self.dir / 'stderr.log') or 'no message'}"
        )
        self._write_meta()
        return False

    def stop(self) -> None:
        with self._stop_lock:
            if self.status == "running" and self.process is not None and self.process.poll() is not None:
                self.alive()  # it died before we asked: record that
            if self.status == "died":
                if not self._finished:
                    self._finished = True
                    self._after_stop()
                    self._close_logs()
                    self._write_meta()
                return
        super().stop()

    def _stop(self) -> None:
        self._terminate()
        self._after_stop()

    def _terminate(self) -> None:
        process = self.process
        if process is None:
            return
        for sig, wait_s in ((self.stop_signal, STOP_WAIT_S), (signal.SIGTERM, 2.0), (signal.SIGKILL, 2.0)):
            if process.poll() is not None:
                break
            try:
                process.send_signal(sig)
            except ProcessLookupError:
                break
            try:
                process.wait(wait_s)
            except subprocess.TimeoutExpired:
                self.warnings.append(f"{self.name}: did not stop within {wait_s:g}s of {signal.Signals(sig).name}")
        self.returncode = process.poll()
        if self.returncode is not None:  # one that survived SIGKILL stays the reaper's
            REAPER.unwatch(process.pid)
        self._close_logs()

    def _after_stop(self) -> None:
        """Offline work after the tool stopped (blkparse)."""

    def _close_logs(self) -> None:
        for handle in (self._stdout, self._stderr):
            if handle is not None and not handle.closed:
                handle.close()

    def describe(self) -> dict:
        data = super().describe()
        data["returncode"] = self.returncode
        return data


class SamplingCollector(Collector):
    """A collector that reads files itself (no external tool) every ``interval_ms`` in a thread.

    Subclasses set ``output_name``, ``header`` and ``thread_name``, and implement
    ``sample_once()`` (append rows with ``self._write_rows``) and optionally ``_cleanup()``.
    """

    default_interval_ms = 500
    output_name: ClassVar[str]
    header = ""
    thread_name = "sampler"

    def __init__(self, block: dict, context: dict):
        super().__init__(block, context)
        self.interval_ms = int(self.block.get("interval_ms") or self.default_interval_ms)
        self._thread: threading.Thread | None = None
        self._stop_event = threading.Event()
        self._error: str | None = None
        self._handle: TextIO | None = None

    def _write_rows(self, text: str) -> None:
        """Append CSV rows to the output and flush them (a run cut short keeps what was sampled)."""
        assert self._handle is not None, "sampling before _begin_sampling opened the output"
        self._handle.write(text)
        self._handle.flush()

    def _begin_sampling(self, command: list[str], description: str) -> None:
        """Write command.txt (what is read, since there is no tool), open the output, start the thread."""
        assert self.dir is not None
        self.command = command
        (self.dir / "command.txt").write_text(description, encoding="utf-8")
        for name in ("stdout.log", "stderr.log"):
            (self.dir / name).touch()
        self.outputs = [self.output_name]
        self._handle = open(self.dir / self.output_name, "w", encoding="utf-8")
        self._handle.write(self.header)
        self._anchor()
        self._thread = threading.Thread(target=self._loop, name=self.thread_name, daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        try:
            sample_until(self.interval_ms / 1000.0, self.sample_once, self._stop_event)
        except Exception as error:  # recorded, seen by alive() and stop()
            self._error = f"{self.name}: sampling failed ({error})"

    def sample_once(self) -> None:
        raise NotImplementedError

    def alive(self) -> bool:
        if self.status != "running":
            return False
        if self._error or (self._thread is not None and not self._thread.is_alive()):
            self.status = "died"
            self.errors.append(self._error or f"{self.name}: the sampler stopped")
            self._write_meta()
            return False
        return True

    def _stop(self) -> None:
        self._stop_event.set()
        if self._thread is not None:
            self._thread.join(STOP_WAIT_S)
        if self._error:
            self.errors.append(self._error)
            self.status = "died"
        if self._handle is not None:
            self._handle.close()
        self._cleanup()

    def _cleanup(self) -> None:
        """What a subclass undoes after the last sample."""
