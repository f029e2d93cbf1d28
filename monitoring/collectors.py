"""Collectors started and stopped around a run: perf, Intel RDT (resctrl or pqos), blktrace, cgroups.

Lifecycle (``faasprof run`` drives it)::

    collectors = build_collectors(workload.monitoring, {"cgroup_parents": {...}, "duration_s": 60,
                                                        "host_root": "/"})
    for c in collectors:
        reason = c.check()          # None = can run here; else one line: why, and the fix
    for c in collectors: c.start(run_dir)
    ...                             # c.alive() tells whether it is still running
    for c in collectors: c.stop()   # SIGINT, wait, SIGTERM, wait, SIGKILL; safe twice
    manifest["monitors"] = {c.name: c.describe() for c in collectors}

``start`` does not raise when the tool fails: the failure is recorded (``describe()["status"]`` is
``failed``, ``alive()`` is False) and the caller decides, from ``required``, whether the run goes on.
A collector that dies mid-run shows ``died`` with its exit code and the tail of its stderr.

Each collector writes under ``monitors/<name>/``: ``command.txt``, ``stdout.log``, ``stderr.log``,
its raw output, and ``meta.json`` (``wall_ns_at_start``/``monotonic_ns_at_start`` taken just before
the tool starts: the anchor ``monitoring.frames`` aligns its samples with). Raw output is parsed
later by ``monitoring.parsers``; nothing here parses more than a support probe.
"""

from __future__ import annotations

import math
import os
import shlex
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from faasprof.rundir import monitor_dir, write_json_atomic
from monitoring.host import Root, cgroup_info, cpuinfo, mounts, parse_cpu_list, resctrl_info
from monitoring.parsers.perf import probe_support

META_FORMAT_VERSION = 1

DEFAULT_PERF_EVENTS = (
    "instructions",
    "cycles",
    "cycles:u",
    "cycles:k",
    "branches",
    "branch-misses",
    "LLC-loads",
    "LLC-load-misses",
    "task-clock",
    "page-faults",
    "context-switches",
    "cpu-migrations",
)
DEFAULTS: dict[str, dict[str, Any]] = {
    "perf": {"interval_ms": 100, "events": None, "per": "system", "required": False},
    "rdt": {"interval_ms": 100, "cores": "all", "interface": "auto", "required": False},
    "blktrace": {"devices": "auto", "required": False},
    "cgroups": {"interval_ms": 500, "required": False},
}
# How long a collector may outlive the planned run if nobody stops it (the invoker crashed).
SAFETY_MARGIN_S = 600.0
STOP_WAIT_S = 5.0
STDERR_TAIL_CHARS = 400


def _is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def _tail(path: Path, chars: int = STDERR_TAIL_CHARS) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    return " | ".join(line.strip() for line in text[-chars:].splitlines() if line.strip())


class Collector:
    """Base: status, errors, warnings, the start anchor, ``meta.json``; subclasses add the tool."""

    name = "collector"

    def __init__(self, block: dict, context: dict):
        self.block = {**DEFAULTS.get(self.name, {}), **block}
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


class ProcessCollector(Collector):
    """A collector that is one long-running tool process."""

    stop_signal = signal.SIGINT

    def __init__(self, block: dict, context: dict):
        super().__init__(block, context)
        self.process: subprocess.Popen | None = None
        self.returncode: int | None = None
        self._stdout = self._stderr = None

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
            argv, stdin=subprocess.DEVNULL, stdout=self._stdout, stderr=self._stderr, start_new_session=True, cwd=self.dir
        )

    def _startup_check(self, wait_s: float = 0.3) -> None:
        """A tool that exits at once (bad option, no permission) is a failed start."""
        assert self.process is not None
        try:
            self.process.wait(wait_s)
        except subprocess.TimeoutExpired:
            return
        self.returncode = self.process.returncode
        self._close_logs()
        self._fail(f"{self.name}: {self.command[0] if self.command else 'tool'} exited at once with code {self.returncode}: {_tail(self.dir / 'stderr.log') or 'no message'}")

    def alive(self) -> bool:
        if self.status != "running" or self.process is None:
            return False
        if self.process.poll() is None:
            return True
        self.returncode = self.process.returncode
        self.status = "died"
        self.errors.append(f"{self.name}: exited during the run with code {self.returncode}: {_tail(self.dir / 'stderr.log') or 'no message'}")
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


# ------------------------------------------------------------------------------------------------
# perf
# ------------------------------------------------------------------------------------------------


class PerfCollector(ProcessCollector):
    """System-wide ``perf stat -x, -I <ms>`` counters; unsupported events are dropped up front."""

    name = "perf"
    output_name = "perf_stat.csv"

    def __init__(self, block: dict, context: dict):
        super().__init__(block, context)
        self.events: list[str] = list(self.block.get("events") or DEFAULT_PERF_EVENTS)
        self.interval_ms = int(self.block.get("interval_ms") or 100)
        self.per = self.block.get("per") or "system"
        self.cgroups: list[str] = []
        self.dropped: dict[str, str] = {}

    def _check(self) -> str | None:
        if shutil.which("perf") is None:
            return "perf: not installed; install it (Debian: apt-get install linux-perf) or drop monitoring.perf"
        paranoid = self.root.read_int("/proc/sys/kernel/perf_event_paranoid")
        if not _is_root() and paranoid is not None and paranoid > 0:
            return (
                f"perf: system-wide counting needs root or perf_event_paranoid <= 0 (it is {paranoid}); "
                "run as root or `sysctl kernel.perf_event_paranoid=0`"
            )
        if self.per == "cgroup":
            self.cgroups = self._perf_cgroups()
            if not self.cgroups:
                return (
                    "perf: per cgroup needs the sandboxes' parent cgroup in a perf_event hierarchy "
                    "(cgroup v2, or v1 with perf_event mounted); none of the platform's cgroup parents is in one; "
                    'use "per": "system"'
                )
        supported, dropped, error = probe_perf_events(self.events)
        if error:
            return f"perf: the support probe failed ({error}); check `perf stat -a -e {','.join(self.events)} -- true`"
        self.dropped = dropped
        for event, why in dropped.items():
            self.warnings.append(f"perf: event {event} dropped ({why})")
        if not supported:
            return f"perf: none of the events {', '.join(self.events)} is supported on this host (no hardware PMU?); request software events such as task-clock,page-faults,context-switches"
        self.events = supported
        return None

    def _perf_cgroups(self) -> list[str]:
        """The platform's sandbox parents as names relative to a perf_event hierarchy."""
        info = cgroup_info(self.root)
        hierarchy = (info["controllers"].get("perf_event") or {}).get("mount") or info.get("v2_mount")
        if hierarchy is None:
            return []
        names = []
        for path in (self.context.get("cgroup_parents") or {}).values():
            path = str(path)
            if path.startswith(hierarchy.rstrip("/") + "/"):
                names.append(path[len(hierarchy.rstrip("/")) + 1 :])
        return sorted(set(names))

    def argv(self, output: str) -> list[str]:
        argv = ["perf", "stat", "-x,", "-I", str(self.interval_ms), "-a"]
        if self.per == "cpu":
            argv.append("-A")
        elif self.per == "core":
            argv.append("--per-core")
        argv += ["-e", ",".join(self.events)]
        if self.per == "cgroup":
            argv += ["--for-each-cgroup", ",".join(self.cgroups)]
        # Bounded even if nobody stops it.
        count = math.ceil(self._bound_s() * 1000.0 / self.interval_ms)
        argv += ["--interval-count", str(count), "-o", output]
        return argv

    def _start(self) -> None:
        self._launch(self.argv(self.output_name))
        self.outputs = [self.output_name]
        self._startup_check()

    def describe(self) -> dict:
        data = super().describe()
        data["events"] = list(self.events)
        data["dropped_events"] = dict(self.dropped)
        data["layout"] = {"sep": ",", "interval_ms": self.interval_ms, "per": self.per, "cgroups": list(self.cgroups)}
        return data


_probe_cache: dict[tuple[str, ...], tuple[list[str], dict[str, str], str | None]] = {}


def probe_perf_events(events: list[str], timeout_s: float = 20.0) -> tuple[list[str], dict[str, str], str | None]:
    """``(supported, dropped {event: reason}, error)`` from ``perf stat -x, -a -e ... -- true``.

    One probe for all events; when perf rejects the list (a bad name makes it exit 129), each
    event is probed alone so the bad one can be named. ``<not counted>`` in a probe of a few
    microseconds is multiplexing, not lack of support: such events are kept.
    """
    key = tuple(events)
    if key in _probe_cache:
        return _probe_cache[key]

    def run(evs: list[str]) -> tuple[int, str]:
        done = subprocess.run(
            ["perf", "stat", "-x,", "-a", "-e", ",".join(evs), "--", "true"],
            capture_output=True, text=True, timeout=timeout_s, stdin=subprocess.DEVNULL,
        )
        return done.returncode, done.stderr

    try:
        rc, text = run(events)
        if rc == 0:
            statuses = probe_support(text)
        else:
            statuses = {}
            for event in events:
                rc_one, text_one = run([event])
                found = probe_support(text_one) if rc_one == 0 else {}
                statuses[event] = found.get(event) or next(iter(found.values()), None) or f"rejected by perf: {_first_line(text_one)}"
    except (OSError, subprocess.TimeoutExpired) as error:
        result = ([], {}, str(error))
        return result
    supported, dropped = [], {}
    for event in events:
        status = statuses.get(event)
        if status is None:  # renamed by perf (e.g. the unprivileged ``:u`` fallback)
            status = next((s for name, s in statuses.items() if name.split(":")[0] == event.split(":")[0]), "missing from the probe")
        if status in ("ok", "not_counted"):
            supported.append(event)
        else:
            dropped[event] = "not supported here" if status == "not_supported" else status
    result = (supported, dropped, None)
    _probe_cache[key] = result
    return result


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "no message")


# ------------------------------------------------------------------------------------------------
# Intel RDT: resctrl (read by a thread) or pqos (a process)
# ------------------------------------------------------------------------------------------------

_RDT_MON_FLAGS = ("cqm_llc", "cqm_occup_llc", "cqm_mbm_total", "cqm_mbm_local")


class RdtCollector(Collector):
    """LLC occupancy and memory bandwidth per core group: resctrl when mounted, else pqos."""

    name = "rdt"

    def __init__(self, block: dict, context: dict):
        super().__init__(block, context)
        self.interval_ms = int(self.block.get("interval_ms") or 100)
        self.interface: str | None = None
        self._impl: Collector | None = None

    def _check(self) -> str | None:
        wanted = self.block.get("interface") or "auto"
        flags = cpuinfo(self.root)["flags"]
        if not any(flag in flags for flag in _RDT_MON_FLAGS):
            return (
                "rdt: the CPU reports no RDT monitoring (no cqm_llc/cqm_mbm_* flag in /proc/cpuinfo); "
                "use an Intel Xeon with CMT/MBM (and rdt= not disabling it on the kernel command line), or drop monitoring.rdt"
            )
        resctrl = resctrl_info(self.root)
        reasons = []
        if wanted in ("auto", "resctrl"):
            impl = ResctrlSampler(self.block, self.context)
            reason = impl.check()
            if reason is None:
                self.interface, self._impl = "resctrl", impl
                return None
            reasons.append(reason)
            if wanted == "resctrl":
                return reason
        if wanted in ("auto", "pqos"):
            impl = PqosCollector(self.block, self.context)
            reason = impl.check()
            if reason is None:
                self.interface, self._impl = "pqos", impl
                if not resctrl["mounted"]:
                    self.warnings.append("rdt: resctrl is not mounted; using pqos")
                return None
            reasons.append(reason)
        return "; ".join(reasons)

    def _start(self) -> None:
        assert self._impl is not None and self.dir is not None
        impl = self._impl
        impl.dir = self.dir
        impl._checked = None
        impl.status = "not_started"
        impl._start()
        if impl.status == "not_started":
            impl.status = "running"
        self._sync()

    def _sync(self) -> None:
        impl = self._impl
        if impl is None:
            return
        self.command = impl.command
        self.wall_ns_at_start, self.monotonic_ns_at_start = impl.wall_ns_at_start, impl.monotonic_ns_at_start
        self.outputs = impl.outputs
        for source, target in ((impl.errors, self.errors), (impl.warnings, self.warnings)):
            for item in source:
                if item not in target:
                    target.append(item)
        if impl.status in ("failed", "died"):
            self.status = impl.status

    def alive(self) -> bool:
        if self.status != "running" or self._impl is None:
            return False
        ok = self._impl.alive()
        self._sync()
        if not ok and self.status == "running":
            self.status = "died"
        return ok

    def _stop(self) -> None:
        if self._impl is not None:
            self._impl.stop()
            self._sync()

    def describe(self) -> dict:
        data = super().describe()
        data["interface"] = self.interface
        if self._impl is not None:
            inner = self._impl.describe()
            for key in ("returncode", "groups", "interval_ms"):
                if key in inner:
                    data[key] = inner[key]
        return data


class SamplingCollector(Collector):
    """A collector that reads files itself (no external tool) every ``interval_ms`` in a thread.

    Subclasses set ``output_name``, ``header`` and ``thread_name``, and implement
    ``sample_once()`` (append rows to ``self._handle``) and optionally ``_cleanup()``.
    """

    default_interval_ms = 500
    header = ""
    thread_name = "sampler"

    def __init__(self, block: dict, context: dict):
        super().__init__(block, context)
        self.interval_ms = int(self.block.get("interval_ms") or self.default_interval_ms)
        self._thread: threading.Thread | None = None
        self._stop_event = threading.Event()
        self._error: str | None = None
        self._handle = None

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
        interval_s = self.interval_ms / 1000.0
        next_at = time.monotonic()
        try:
            while True:
                self.sample_once()
                next_at += interval_s
                if self._stop_event.wait(max(0.0, next_at - time.monotonic())):
                    break
            self.sample_once()  # the final, partial interval
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


class ResctrlSampler(SamplingCollector):
    """Reads ``mon_data`` of resctrl monitoring groups every interval (a thread, no tool)."""

    name = "rdt"
    output_name = "resctrl_samples.csv"
    default_interval_ms = 100
    header = "elapsed_ns,group,domain,llc_occupancy,mbm_total_bytes,mbm_local_bytes\n"
    thread_name = "rdt-resctrl"

    def __init__(self, block: dict, context: dict):
        super().__init__(block, context)
        self.mount: str | None = None
        self.groups: dict[str, str] = {}  # name → directory (host path)
        self._created: list[Path] = []

    def _check(self) -> str | None:
        info = resctrl_info(self.root)
        if not info["supported"]:
            return "rdt: the kernel has no resctrl (not in /proc/filesystems); use a kernel with CONFIG_X86_CPU_RESCTRL or interface pqos"
        if not info["mounted"]:
            return "rdt: resctrl is not mounted; `mount -t resctrl resctrl /sys/fs/resctrl` (or use interface pqos)"
        monitoring = info.get("monitoring")
        if not monitoring or not {"llc_occupancy", "mbm_total_bytes"} & set(monitoring["features"]):
            return "rdt: resctrl has no L3 monitoring (info/L3_MON missing); check `dmesg | grep resctrl` and the rdt= boot option"
        self.mount = info["mount_point"]
        return None

    def _host(self, path: str) -> Path:
        return self.root.path(path)

    def _start(self) -> None:
        assert self.dir is not None and self.mount is not None
        cores = self.block.get("cores", "all")
        base = self._host(self.mount)
        if cores == "all":
            self.groups = {".": str(base)}
            for entry in sorted(os.listdir(base)):
                path = base / entry
                if entry not in ("info", "mon_groups", "mon_data") and (path / "mon_data").is_dir():
                    self.groups[entry] = str(path)
        else:
            for index, cpu_group in enumerate(cores):
                parent = self._ctrl_group_of(base, cpu_group)
                path = parent / "mon_groups" / f"faasprof-{os.getpid()}-g{index}"
                path.mkdir()
                self._created.append(path)
                (path / "cpus_list").write_text(",".join(map(str, cpu_group)) + "\n")
                # The name goes into a CSV column: no commas.
                self.groups[f"g{index}:{'+'.join(map(str, cpu_group))}"] = str(path)
        self._begin_sampling(
            ["resctrl-read", str(base), f"every {self.interval_ms} ms", *self.groups],
            f"# resctrl monitoring read by faasprof (no external tool) every {self.interval_ms} ms\n"
            + "".join(f"{name}\t{path}\n" for name, path in self.groups.items()),
        )

    def _ctrl_group_of(self, base: Path, cpus: list[int]) -> Path:
        """The CTRL_MON group whose CPUs hold ``cpus`` (a MON group must stay inside its parent)."""
        for entry in sorted(os.listdir(base)):
            path = base / entry
            if entry in ("info", "mon_groups", "mon_data") or not (path / "cpus_list").exists():
                continue
            owned = set(parse_cpu_list((path / "cpus_list").read_text()))
            if set(cpus) <= owned:
                return path
        return base

    def sample_once(self) -> None:
        elapsed = time.monotonic_ns() - (self.monotonic_ns_at_start or 0)
        lines = []
        for name, path in self.groups.items():
            mon = Path(path) / "mon_data"
            for domain_dir in sorted(mon.iterdir()) if mon.is_dir() else []:
                if not domain_dir.name.startswith("mon_L3_"):
                    continue
                values = []
                for counter in ("llc_occupancy", "mbm_total_bytes", "mbm_local_bytes"):
                    try:
                        values.append((domain_dir / counter).read_text().strip())
                    except OSError:
                        values.append("")
                lines.append(f"{elapsed},{name},{domain_dir.name[7:]},{','.join(values)}\n")
        self._handle.write("".join(lines))
        self._handle.flush()

    def _cleanup(self) -> None:
        for path in reversed(self._created):
            try:
                path.rmdir()
            except OSError as error:
                self.warnings.append(f"rdt: could not remove {path} ({error.strerror}); rmdir it by hand")

    def describe(self) -> dict:
        data = super().describe()
        data["groups"] = dict(self.groups)
        data["interval_ms"] = self.interval_ms
        return data


class PqosCollector(ProcessCollector):
    """``pqos -m ... -u csv -o pqos.csv`` (intel-cmt-cat)."""

    name = "rdt"
    output_name = "pqos.csv"

    def __init__(self, block: dict, context: dict):
        super().__init__(block, context)
        self.interval_ms = int(self.block.get("interval_ms") or 100)

    def _check(self) -> str | None:
        if shutil.which("pqos") is None:
            return "rdt: pqos is not installed; apt-get install intel-cmt-cat (or mount resctrl and use interface resctrl)"
        if not _is_root():
            return "rdt: pqos needs root; run faasprof as root"
        return None

    def core_spec(self) -> str:
        cores = self.block.get("cores", "all")
        if cores == "all":
            online = parse_cpu_list(self.root.read_line("/sys/devices/system/cpu/online")) or list(range(os.cpu_count() or 1))
            groups = [online]
        else:
            groups = cores
        text = ",".join("[" + ",".join(map(str, group)) + "]" for group in groups)
        return f"all:{text};mbt:{text}"

    def argv(self) -> list[str]:
        # -i counts 100 ms units; -t bounds the run if nobody stops pqos.
        tenths = max(1, round(self.interval_ms / 100))
        self.interval_ms = tenths * 100
        return ["pqos", "-r", "-m", self.core_spec(), "-i", str(tenths), "-t", str(int(self._bound_s())), "-u", "csv", "-o", self.output_name]

    def _start(self) -> None:
        self._launch(self.argv())
        self.outputs = [self.output_name]
        self._startup_check(0.5)

    def describe(self) -> dict:
        data = super().describe()
        data["interval_ms"] = self.interval_ms
        return data


# ------------------------------------------------------------------------------------------------
# blktrace
# ------------------------------------------------------------------------------------------------

DOCKER_DATA = "/var/lib/docker"
BLK_MARKER = "faasprof-start"


def data_device(root: Root, path: str = DOCKER_DATA) -> str | None:
    """The whole-disk block device (``/dev/sda``) holding ``path`` (or its nearest existing
    ancestor), from ``/proc/self/mountinfo`` and ``/sys/dev/block``; None if not a block device."""
    probe = path
    while probe != "/" and not root.exists(probe):
        probe = os.path.dirname(probe) or "/"
    best: tuple[int, str] | None = None
    for line in (root.read("/proc/self/mountinfo") or "").splitlines():
        parts = line.split()
        if len(parts) < 5:
            continue
        point, devnum = parts[4], parts[2]
        if probe == point or probe.startswith(point.rstrip("/") + "/") or point == "/":
            if best is None or len(point) > best[0]:
                best = (len(point), devnum)
    if best is None:
        return None
    sys_path = root.path(f"/sys/dev/block/{best[1]}")
    if not sys_path.exists():
        return None
    real = Path(os.path.realpath(sys_path))
    name = real.name
    if (real / "partition").exists():
        name = real.parent.name
    return f"/dev/{name}"


class BlktraceCollector(ProcessCollector):
    """``blktrace -d DEV... -D raw`` during the run, ``blkparse`` per device after it stops."""

    name = "blktrace"

    def __init__(self, block: dict, context: dict):
        super().__init__(block, context)
        self.devices: list[str] = []
        self.marker_wall_ns: int | None = None
        self.marker_monotonic_ns: int | None = None

    def _check(self) -> str | None:
        for tool in ("blktrace", "blkparse"):
            if shutil.which(tool) is None:
                return f"blktrace: {tool} is not installed; apt-get install blktrace (or drop monitoring.blktrace)"
        if not _is_root():
            return "blktrace: needs root (BLKTRACESETUP); run faasprof as root"
        if not any(fstype == "debugfs" for _, point, fstype, _ in mounts(self.root) if point == "/sys/kernel/debug"):
            return "blktrace: debugfs is not mounted at /sys/kernel/debug; `mount -t debugfs debugfs /sys/kernel/debug`"
        devices = self.block.get("devices", "auto")
        if devices == "auto":
            found = data_device(self.root)
            if found is None:
                return f"blktrace: could not find the block device holding {DOCKER_DATA} (or /); name it in monitoring.blktrace.devices"
            devices = [found]
        for device in devices:
            name = os.path.basename(device)
            if not self.root.exists(f"/sys/block/{name}/trace"):
                return f"blktrace: {device} cannot be traced (/sys/block/{name}/trace missing: not a whole disk, or a kernel without CONFIG_BLK_DEV_IO_TRACE); name a whole disk such as /dev/sda"
        self.devices = list(devices)
        return None

    def _start(self) -> None:
        assert self.dir is not None
        (self.dir / "raw").mkdir(exist_ok=True)
        argv = ["blktrace"]
        for device in self.devices:
            argv += ["-d", device]
        argv += ["-D", "raw", "-w", str(int(self._bound_s()))]
        self._launch(argv)
        self.outputs = [f"{os.path.basename(d)}.blkparse.txt" for d in self.devices]
        self._startup_check(0.3)
        if self.status == "failed":
            return
        self._write_marker()

    def _write_marker(self) -> None:
        """A message event in the trace at a known wall-clock time: blkparse's times count from the
        first event, so this is what ties them to the run clock."""
        for device in self.devices:
            msg = self.root.path(f"/sys/kernel/debug/block/{os.path.basename(device)}/msg")
            deadline = time.monotonic() + 1.0
            while not msg.exists() and time.monotonic() < deadline:
                time.sleep(0.02)
            try:
                self.marker_wall_ns, self.marker_monotonic_ns = time.time_ns(), time.monotonic_ns()
                msg.write_text(BLK_MARKER + "\n")
            except OSError as error:
                self.marker_wall_ns = self.marker_monotonic_ns = None
                self.warnings.append(f"blktrace: could not write the time marker to {msg} ({error.strerror}); times count from the first event")

    def _after_stop(self) -> None:
        assert self.dir is not None
        with open(self.dir / "blkparse.log", "ab") as log:
            for device in self.devices:
                name = os.path.basename(device)
                argv = ["blkparse", "-D", "raw", "-i", name, "-o", f"{name}.blkparse.txt"]
                log.write(("$ " + shlex.join(argv) + "\n").encode())
                log.flush()
                try:
                    done = subprocess.run(argv, cwd=self.dir, stdout=log, stderr=log, timeout=600)
                    if done.returncode != 0:
                        self.errors.append(f"blktrace: blkparse {name} exited with {done.returncode}; see monitors/blktrace/blkparse.log")
                except (OSError, subprocess.TimeoutExpired) as error:
                    self.errors.append(f"blktrace: blkparse {name} failed ({error})")
        dropped = _tail(self.dir / "stderr.log")
        if "dropped" in dropped.lower():
            self.warnings.append(f"blktrace: {dropped}")

    def describe(self) -> dict:
        data = super().describe()
        data["devices"] = list(self.devices)
        data["marker"] = BLK_MARKER
        data["marker_wall_ns"] = self.marker_wall_ns
        data["marker_monotonic_ns"] = self.marker_monotonic_ns
        return data


# ------------------------------------------------------------------------------------------------
# cgroups
# ------------------------------------------------------------------------------------------------

CGROUP_COLUMNS = (
    "elapsed_ns", "sandbox", "cpu_usage_ns", "cpu_user_ns", "cpu_system_ns", "nr_periods", "nr_throttled",
    "throttled_ns", "memory_usage_bytes", "memory_limit_bytes", "memory_rss_bytes", "memory_cache_bytes",
    "memory_failcnt", "oom_kills", "frozen",
)
# cgroup v1 reports "no limit" as a huge page-aligned number.
_V1_UNLIMITED = 1 << 60
_USER_HZ = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


def _keyed(text: str | None) -> dict[str, int]:
    result = {}
    for line in (text or "").splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].lstrip("-").isdigit():
            result[parts[0]] = int(parts[1])
    return result


def _int_or_none(text: str | None) -> int | None:
    text = (text or "").strip()
    return int(text) if text.lstrip("-").isdigit() else None


def read_cgroup(dirs: list[Path], is_parent: bool = False) -> dict[str, int | None]:
    """One sample of a cgroup from its directories in each hierarchy (v1) or its one directory (v2).

    Values are cumulative where the kernel's are (CPU time, throttling, failcnt); None when no
    hierarchy given provides the value.
    """
    sample: dict[str, int | None] = {name: None for name in CGROUP_COLUMNS[2:]}
    for directory in dirs:
        stat = _keyed(_read(directory / "cpu.stat"))
        if "usage_usec" in stat:  # v2
            sample["cpu_usage_ns"] = stat["usage_usec"] * 1000
            sample["cpu_user_ns"] = stat.get("user_usec", 0) * 1000
            sample["cpu_system_ns"] = stat.get("system_usec", 0) * 1000
        if "nr_periods" in stat:
            sample["nr_periods"] = stat["nr_periods"]
            sample["nr_throttled"] = stat.get("nr_throttled")
            if "throttled_usec" in stat:
                sample["throttled_ns"] = stat["throttled_usec"] * 1000
            elif "throttled_time" in stat:  # v1, ns
                sample["throttled_ns"] = stat["throttled_time"]
        usage = _int_or_none(_read(directory / "cpuacct.usage"))
        if usage is not None:
            sample["cpu_usage_ns"] = usage
            acct = _keyed(_read(directory / "cpuacct.stat"))
            if "user" in acct:
                sample["cpu_user_ns"] = acct["user"] * 1_000_000_000 // _USER_HZ
                sample["cpu_system_ns"] = acct.get("system", 0) * 1_000_000_000 // _USER_HZ
        v1_usage = _int_or_none(_read(directory / "memory.usage_in_bytes"))
        if v1_usage is not None:
            sample["memory_usage_bytes"] = v1_usage
            limit = _int_or_none(_read(directory / "memory.limit_in_bytes"))
            sample["memory_limit_bytes"] = limit if limit is not None and limit < _V1_UNLIMITED else None
            mstat = _keyed(_read(directory / "memory.stat"))
            prefix = "total_" if is_parent else ""
            sample["memory_rss_bytes"] = mstat.get(prefix + "rss")
            sample["memory_cache_bytes"] = mstat.get(prefix + "cache")
            sample["memory_failcnt"] = _int_or_none(_read(directory / "memory.failcnt"))
            sample["oom_kills"] = _keyed(_read(directory / "memory.oom_control")).get("oom_kill")
        current = _int_or_none(_read(directory / "memory.current"))
        if current is not None:  # v2
            sample["memory_usage_bytes"] = current
            sample["memory_limit_bytes"] = _int_or_none(_read(directory / "memory.max"))  # "max" → None
            mstat = _keyed(_read(directory / "memory.stat"))
            sample["memory_rss_bytes"] = mstat.get("anon")
            sample["memory_cache_bytes"] = mstat.get("file")
            events = _keyed(_read(directory / "memory.events"))
            sample["memory_failcnt"] = events.get("max")
            sample["oom_kills"] = events.get("oom_kill")
    for directory in dirs:
        # Paused sandboxes: v1 freezer.state FROZEN/FREEZING/THAWED; v2 cgroup.events "frozen 1".
        state = (_read(directory / "freezer.state") or "").strip()
        if state:
            sample["frozen"] = int(state != "THAWED")
        elif not is_parent:
            frozen = _keyed(_read(directory / "cgroup.events")).get("frozen")
            if frozen is not None:
                sample["frozen"] = frozen
    if sample["cpu_usage_ns"] is None and not is_parent:
        _cpu_from_processes(dirs, sample)
    return sample


def _cpu_from_processes(dirs: list[Path], sample: dict[str, int | None]) -> None:
    """CPU time of the processes in the cgroup, from /proc/<pid>/stat, when no hierarchy given
    has cpuacct (v1 with cpu and cpuacct mounted apart, and a platform that made no cpuacct
    cgroup). Counts live processes and the children they waited for; the time of a process that
    already exited is lost, so this can go down (the parser then leaves that interval empty)."""
    for directory in dirs:
        procs = _read(directory / "cgroup.procs")
        if procs is None:
            continue
        user = system = 0
        for pid in procs.split():
            stat = _read(Path("/proc") / pid / "stat")
            if not stat:
                continue
            fields = stat[stat.rfind(")") + 2 :].split()  # after "pid (comm) "
            try:
                user += int(fields[11]) + int(fields[13])  # utime + cutime
                system += int(fields[12]) + int(fields[14])  # stime + cstime
            except (IndexError, ValueError):
                continue
        tick_ns = 1_000_000_000 // _USER_HZ
        sample["cpu_user_ns"], sample["cpu_system_ns"] = user * tick_ns, system * tick_ns
        sample["cpu_usage_ns"] = (user + system) * tick_ns
        return


class CgroupCollector(SamplingCollector):
    """Samples every sandbox cgroup (children of the platform's cgroup parents) at an interval."""

    name = "cgroups"
    output_name = "samples.csv"
    header = ",".join(CGROUP_COLUMNS) + "\n"
    thread_name = "cgroups-sampler"

    def __init__(self, block: dict, context: dict):
        super().__init__(block, context)
        self.parents: dict[str, str] = {}
        self.sandboxes_seen: set[str] = set()
        self.samples = 0

    def _check(self) -> str | None:
        parents = dict(self.context.get("cgroup_parents") or {})
        if not parents:
            parents = self._docker_parents()
        if not parents:
            return (
                "cgroups: the platform reported no cgroup parent for its sandboxes and no Docker cgroup was found; "
                "run localwhisk with cgroup isolation (doctor shows why it is off) or drop monitoring.cgroups"
            )
        parents = self._add_v1_siblings(parents)
        readable = {c: p for c, p in parents.items() if os.path.isdir(p) and os.access(p, os.R_OK)}
        if not readable:
            return f"cgroups: none of the cgroup parents exists or is readable ({', '.join(parents.values())}); check that the platform is running"
        self.parents = readable
        return None

    def _docker_parents(self) -> dict[str, str]:
        """Docker's cgroups (OpenWhisk's containers) when the platform names none."""
        info = cgroup_info(self.root)
        found = {}
        for controller in ("cpu", "cpuacct", "memory", "freezer", "blkio"):  # freezer: paused containers
            mount = (info["controllers"].get(controller) or {}).get("mount")
            if mount and info["version"] != "2" and self.root.exists(f"{mount}/docker"):
                found[controller] = str(self.root.path(f"{mount}/docker"))
        if not found and info.get("v2_mount") and self.root.exists(f"{info['v2_mount']}/system.slice"):
            found["unified"] = str(self.root.path(f"{info['v2_mount']}/system.slice"))
        return found

    def _add_v1_siblings(self, parents: dict[str, str]) -> dict[str, str]:
        """v1 may mount cpu and cpuacct apart: CPU time lives in cpuacct at the same relative path."""
        if "cpuacct" in parents or "cpu" not in parents:
            return parents
        info = cgroup_info(self.root)
        cpu_mount = (info["controllers"].get("cpu") or {}).get("mount")
        acct_mount = (info["controllers"].get("cpuacct") or {}).get("mount")
        if not cpu_mount or not acct_mount or cpu_mount == acct_mount:
            return parents
        cpu_base = str(self.root.path(cpu_mount)).rstrip("/")
        path = str(parents["cpu"])
        if path.startswith(cpu_base + "/"):
            sibling = str(self.root.path(acct_mount)).rstrip("/") + path[len(cpu_base):]
            if os.path.isdir(sibling):
                return {**parents, "cpuacct": sibling}
        return parents

    def _start(self) -> None:
        self._begin_sampling(
            ["cgroup-read", f"every {self.interval_ms} ms", *self.parents.values()],
            f"# cgroup files read by faasprof (no external tool) every {self.interval_ms} ms; sandboxes are the children of\n"
            + "".join(f"{controller}\t{path}\n" for controller, path in self.parents.items()),
        )

    def sample_once(self) -> None:
        elapsed = time.monotonic_ns() - (self.monotonic_ns_at_start or 0)
        sandboxes: dict[str, list[Path]] = {".": []}
        for path in self.parents.values():
            parent = Path(path)
            sandboxes["."].append(parent)
            try:
                children = [entry for entry in os.scandir(parent) if entry.is_dir(follow_symlinks=False)]
            except OSError:
                continue  # the parent went away (platform stopped): sample what is left
            for entry in children:
                sandboxes.setdefault(entry.name, []).append(Path(entry.path))
        samples: dict[str, dict[str, int | None]] = {}
        for sandbox, dirs in sorted(sandboxes.items()):
            values = read_cgroup(dirs, is_parent=sandbox == ".")
            if sandbox != "." and all(value is None for value in values.values()):
                continue  # removed between listing and reading
            samples[sandbox] = values
        parent = samples["."]
        children = [v for k, v in samples.items() if k != "."]
        if parent["cpu_usage_ns"] is None and children and all(c["cpu_usage_ns"] is not None for c in children):
            # No cpuacct for the parent: the sum of what its sandboxes' processes used.
            for name in ("cpu_usage_ns", "cpu_user_ns", "cpu_system_ns"):
                parent[name] = sum(c[name] or 0 for c in children)
        lines = []
        for sandbox, values in samples.items():
            self.sandboxes_seen.add(sandbox)
            cells = [str(elapsed), sandbox.replace(",", "_")] + ["" if values[name] is None else str(values[name]) for name in CGROUP_COLUMNS[2:]]
            lines.append(",".join(cells) + "\n")
        self._handle.write("".join(lines))
        self._handle.flush()
        self.samples += 1

    def describe(self) -> dict:
        data = super().describe()
        data["parents"] = dict(self.parents)
        data["interval_ms"] = self.interval_ms
        data["samples"] = self.samples
        data["sandboxes_seen"] = max(0, len(self.sandboxes_seen - {"."}))
        return data


# ------------------------------------------------------------------------------------------------

COLLECTOR_CLASSES: dict[str, type[Collector]] = {
    "perf": PerfCollector,
    "rdt": RdtCollector,
    "blktrace": BlktraceCollector,
    "cgroups": CgroupCollector,
}


def normalise_block(monitoring_block: dict | None) -> dict[str, dict]:
    """``{name: settings}`` for every collector that runs: key present and not false; ``true``
    means all defaults. Unknown keys are ignored here (the workload schema rejects them)."""
    result = {}
    for name, value in (monitoring_block or {}).items():
        if name not in COLLECTOR_CLASSES or value is False or value is None:
            continue
        settings = {} if value is True else dict(value)
        result[name] = {**DEFAULTS[name], **settings}
    return result


def build_collectors(monitoring_block: dict | None, context: dict | None = None) -> list[Collector]:
    """One collector per enabled key of the workload's ``monitoring`` block, in a fixed order.

    ``context``: ``{"cgroup_parents": {controller: absolute path}, "duration_s": float,
    "host_root": "/"}`` (all optional).
    """
    context = dict(context or {})
    blocks = normalise_block(monitoring_block)
    return [COLLECTOR_CLASSES[name](blocks[name], context) for name in COLLECTOR_CLASSES if name in blocks]
