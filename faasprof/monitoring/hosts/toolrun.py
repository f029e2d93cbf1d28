"""The tool collectors on a remote host (perf, blktrace, rdt through pqos), run by the agent there
(standard library only: shipped over ssh with it).

``plan_tool`` is each collector's check on that host and its command line, both from
``faasprof.monitoring.tools`` (what the local collectors ask too): the same check decides, the same
argv runs. ``ToolRun`` runs the plan in a folder of its own under the host's temporary directory:
the tool's stdout, stderr and text outputs are streamed back as ``data`` messages while it runs (a
host lost mid-run keeps what arrived), it is stopped the collectors' way (SIGINT, wait, SIGTERM,
SIGKILL; safe twice), its after-commands run (blkparse), the last bytes are sent and the folder is
removed. The tool dies with the agent: the kernel sends it SIGKILL when the agent ends
(``PR_SET_PDEATHSIG``), so a dropped connection or a killed agent leaves nothing behind.
"""

from __future__ import annotations

import codecs
import ctypes
import os
import shlex
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field

from faasprof.monitoring.host import Root
from faasprof.monitoring.sampling import cgroup_parents
from faasprof.monitoring.tools import (
    BLK_MARKER,
    DEFAULT_PERF_EVENTS,
    blkparse_argv,
    blktrace_argv,
    blktrace_devices,
    choose_perf,
    perf_argv,
    pqos_argv,
    pqos_core_spec,
    pqos_problem,
    rdt_flags_problem,
    write_blk_marker,
)
from faasprof.rundir.monitor_files import MONITOR_STDERR, MONITOR_STDOUT

TOOL_COLLECTORS = ("perf", "rdt", "blktrace")
STREAM_INTERVAL_S = 0.25
STREAM_CHUNK_BYTES = 65536
# The stop sequence: (signal, how long to wait for the tool after it).
STOP_STEPS = ((signal.SIGINT, 5.0), (signal.SIGTERM, 2.0), (signal.SIGKILL, 2.0))
AFTER_TIMEOUT_S = 600
PR_SET_PDEATHSIG = 1


@dataclass
class ToolPlan:
    """What runs for one collector: its argv, the text files streamed back besides its stdout and
    stderr, its layout keys for the collector's meta file, the commands run in its folder after it stops, the
    folders it needs, the disks its time marker goes to, and the warnings its check gave."""

    argv: list[str]
    outputs: list[str]
    layout: dict = field(default_factory=dict)
    after: list[list[str]] = field(default_factory=list)
    folders: list[str] = field(default_factory=list)
    marker_devices: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    startup_wait_s: float = 0.3


def plan_perf(settings: dict, root: Root, cgroup_parent: str | None, bound_s: float) -> ToolPlan | str:
    events = list(settings.get("events") or DEFAULT_PERF_EVENTS)
    interval_ms, per = int(settings.get("interval_ms") or 100), settings.get("per") or "system"
    parents = cgroup_parents(root, {}, cgroup_parent)[0] if per == "cgroup" else {}
    choice = choose_perf(events, per, root, parents)
    if choice.problem is not None:
        return choice.problem
    argv = perf_argv(list(choice.events), interval_ms, per, list(choice.cgroups), bound_s, "perf_stat.csv")
    layout = {
        "events": list(choice.events),
        "dropped_events": dict(choice.dropped),
        "layout": {"sep": ",", "interval_ms": interval_ms, "per": per, "cgroups": list(choice.cgroups)},
    }
    return ToolPlan(argv, ["perf_stat.csv"], layout, warnings=choice.warnings)


def plan_blktrace(settings: dict, root: Root, cgroup_parent: str | None, bound_s: float) -> ToolPlan | str:
    devices, problem = blktrace_devices(root, settings.get("devices", "auto"))
    if problem is not None:
        return problem
    names = [os.path.basename(device) for device in devices]
    return ToolPlan(
        blktrace_argv(devices, bound_s),
        [f"{name}.blkparse.txt" for name in names] + ["blkparse.log"],
        {"devices": list(devices), "marker": BLK_MARKER},
        after=[blkparse_argv(device) for device in devices],
        folders=["raw"],
        marker_devices=list(devices),
    )


def plan_rdt(settings: dict, root: Root, cgroup_parent: str | None, bound_s: float) -> ToolPlan | str:
    problem = rdt_flags_problem(root)
    if problem is not None:
        return problem
    if (settings.get("interface") or "auto") == "resctrl":
        return "rdt: resctrl is read only on the machine that runs faasprof; remote hosts run pqos (interface auto or pqos)"
    problem = pqos_problem()
    if problem is not None:
        return problem + "; remote hosts measure RDT through pqos only"
    spec = pqos_core_spec(root, settings.get("cores", "all"))
    argv, interval_ms = pqos_argv(spec, int(settings.get("interval_ms") or 100), bound_s, "pqos.csv")
    return ToolPlan(argv, ["pqos.csv"], {"interface": "pqos", "interval_ms": interval_ms}, startup_wait_s=0.5)


PLANS = {"perf": plan_perf, "blktrace": plan_blktrace, "rdt": plan_rdt}


def plan_tool(name: str, settings: dict, root: Root, cgroup_parent: str | None, bound_s: float) -> ToolPlan | str:
    """The collector ``name``'s plan on this host, or one line: why it cannot run here."""
    return PLANS[name](settings, root, cgroup_parent, bound_s)


_libc = None


def _die_with_agent() -> None:
    """In the tool's child process before exec: SIGKILL when the agent (its parent) ends."""
    if _libc is not None:
        _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def _load_libc() -> None:
    global _libc
    if _libc is None:
        try:
            _libc = ctypes.CDLL(None, use_errno=True)
        except OSError:  # not Linux: the tool's own bound (-w, --interval-count, -t) still holds
            _libc = None


class ToolRun:
    """One tool collector on this host: the agent's ``Sampler`` interface (``problem``, ``start``,
    ``stop``) over a process (see the module docstring)."""

    def __init__(self, name: str, settings: dict, channel, root: Root, cgroup_parent: str | None, bound_s: float):
        self.name, self.channel, self.root = name, channel, root
        plan = plan_tool(name, settings, root, cgroup_parent, bound_s)
        self.plan = plan if isinstance(plan, ToolPlan) else None
        self.problem = plan if isinstance(plan, str) else None
        self.dir: str | None = None
        self.process: subprocess.Popen | None = None
        self.offsets: dict[str, int] = {}
        self.decoders: dict = {}
        self.stop_event = threading.Event()
        self.thread: threading.Thread | None = None
        self.lock = threading.Lock()
        self.error: str | None = None
        self.layout: dict = {}
        self.finished: dict | None = None

    def files(self) -> list[str]:
        assert self.plan is not None
        return [MONITOR_STDOUT, MONITOR_STDERR, *self.plan.outputs]

    def start(self) -> dict:
        plan = self.plan
        assert plan is not None
        self.dir = tempfile.mkdtemp(prefix=f"faasprof-{self.name}-")
        for folder in plan.folders:
            os.mkdir(os.path.join(self.dir, folder))
        self.layout = dict(plan.layout)
        _load_libc()
        monotonic_ns, wall_ns = time.monotonic_ns(), time.time_ns()
        with (
            open(os.path.join(self.dir, MONITOR_STDOUT), "wb") as out,
            open(os.path.join(self.dir, MONITOR_STDERR), "wb") as err,
        ):
            try:
                # A session of its own: a signal meant for the agent's group is not the tool's.
                self.process = subprocess.Popen(
                    plan.argv, cwd=self.dir, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                    start_new_session=True, preexec_fn=_die_with_agent,
                )  # fmt: skip
            except OSError as error:
                self.error = f"{self.name}: could not start {plan.argv[0]} ({error.strerror or error})"
        self._startup(plan)
        self.thread = threading.Thread(target=self._stream_loop, name=f"{self.name}-stream", daemon=True)
        self.thread.start()
        return {
            "monotonic_ns_at_start": monotonic_ns,
            "wall_ns_at_start": wall_ns,
            "command": list(plan.argv),
            "outputs": [name for name in plan.outputs if name.endswith((".csv", ".txt"))],
            "layout": dict(self.layout),
            "warnings": list(plan.warnings),
            "error": self.error,
        }

    def _startup(self, plan: ToolPlan) -> None:
        """A tool that exits at once (bad option, no permission) is a failed start; else the marker."""
        if self.process is None:
            return
        try:
            code = self.process.wait(plan.startup_wait_s)
        except subprocess.TimeoutExpired:
            code = None
        if code is not None:
            self.error = f"{self.name}: {plan.argv[0]} exited at once with code {code}: {self._stderr_tail()}"
            self.layout["returncode"] = code
            return
        if plan.marker_devices:
            wall_ns, monotonic_ns, warning = write_blk_marker(self.root, plan.marker_devices)
            self.layout.update({"marker_wall_ns": wall_ns, "marker_monotonic_ns": monotonic_ns})
            if warning:
                plan.warnings.append(warning)

    def _stderr_tail(self) -> str:
        assert self.dir is not None
        try:
            with open(os.path.join(self.dir, MONITOR_STDERR), encoding="utf-8", errors="replace") as handle:
                text = handle.read()[-400:]
        except OSError:
            return "no message"
        return " | ".join(line.strip() for line in text.splitlines() if line.strip()) or "no message"

    def _stream_loop(self) -> None:
        while not self.stop_event.wait(STREAM_INTERVAL_S):
            self._stream()

    def _stream(self) -> None:
        """What each file gained since the last call, sent (one caller at a time)."""
        if self.dir is None:
            return
        with self.lock:
            for name in self.files():
                path = os.path.join(self.dir, name)
                try:
                    with open(path, "rb") as handle:
                        handle.seek(self.offsets.get(name, 0))
                        data = handle.read(STREAM_CHUNK_BYTES)
                        while data:
                            self.offsets[name] = handle.tell()
                            decoder = self.decoders.setdefault(name, codecs.getincrementaldecoder("utf-8")("replace"))
                            text = decoder.decode(data)
                            if text:
                                self.channel.send({"op": "data", "c": self.name, "f": name, "d": text})
                            data = handle.read(STREAM_CHUNK_BYTES)
                except FileNotFoundError:
                    continue

    def stop(self) -> dict:
        """Stopped, its after-commands run, the last bytes sent, its folder removed; safe twice."""
        with self.lock:
            if self.finished is not None:
                return self.finished
        code = self._terminate()
        if code is not None:
            self.layout["returncode"] = code
        self._after()
        self.stop_event.set()
        if self.thread is not None:
            self.thread.join(5.0)
        self._stream()
        with self.lock:
            if self.dir is not None:
                shutil.rmtree(self.dir, ignore_errors=True)
            self.finished = {"layout": dict(self.layout), "error": self.error}
            return self.finished

    def _terminate(self) -> int | None:
        process = self.process
        if process is None:
            return None
        if process.poll() is not None and self.error is None:
            self.error = f"{self.name}: exited during the run with code {process.returncode}: {self._stderr_tail()}"
        for sig, wait_s in STOP_STEPS:
            if process.poll() is not None:
                break
            try:
                process.send_signal(sig)
                process.wait(wait_s)
            except ProcessLookupError:
                break
            except subprocess.TimeoutExpired:
                continue
        return process.poll()

    def _after(self) -> None:
        """The plan's offline commands (blkparse), logged to ``blkparse.log``."""
        plan = self.plan
        if plan is None or not plan.after or self.dir is None or self.process is None:
            return
        with open(os.path.join(self.dir, "blkparse.log"), "ab") as log:
            for argv in plan.after:
                log.write(("$ " + shlex.join(argv) + "\n").encode())
                log.flush()
                try:
                    done = subprocess.run(argv, cwd=self.dir, stdout=log, stderr=log, timeout=AFTER_TIMEOUT_S)
                except (OSError, subprocess.TimeoutExpired) as error:
                    self.error = self.error or f"{self.name}: {argv[0]} failed ({error})"
                    continue
                if done.returncode != 0:
                    self.error = (
                        self.error or f"{self.name}: {shlex.join(argv)} exited with {done.returncode}; see blkparse.log"
                    )
