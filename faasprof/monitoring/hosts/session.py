"""One remote host during a run: the ssh session running the agent there (``agent.py``), its
collectors' rows written under ``monitors/<host>/<collector>/`` as they arrive, its clock offset
at the start and the end, and how it ended (``ok``, or ``lost`` with the reason and when).

``connect`` (pre-flight) starts ssh and waits for the agent's hello: the host's facts and each
collector's own check. ``start`` measures the clock and starts the samplers and tools; ``stop``
measures the clock again, stops them (their final rows arrive before the agent's goodbye) and ends the session;
``close`` kills what is left. The ssh process runs in a session of its own, so a Ctrl-C reaches
faasprof, which stops the host in order; if faasprof dies, its end of ssh's stdin closes and the
agent stops (the agent's docstring says why nothing outlives it).
"""

from __future__ import annotations

import collections
import json
import queue
import shlex
import subprocess
import threading
import time
from pathlib import Path
from typing import IO

from faasprof import rundir
from faasprof.errors import NotReadyError
from faasprof.monitoring.collectors import collector_class
from faasprof.monitoring.collectors.base import META_FORMAT_VERSION, SAFETY_MARGIN_S, Collector
from faasprof.monitoring.hosts.agent import REMOTE_COLLECTORS
from faasprof.monitoring.hosts.clock import METHOD, Offset, measure_offset
from faasprof.monitoring.hosts.dockerwatch import NAME as CONTAINERS
from faasprof.monitoring.hosts.inventory import Host
from faasprof.monitoring.hosts.ssh import agent_code, ssh_argv

CONNECT_WAIT_S = 20.0  # ssh's own connect timeout, the login and python3's start
REPLY_WAIT_S = 10.0
# The stop's answer comes once every tool there stopped (up to 9 s each: SIGINT, SIGTERM, SIGKILL)
# and blkparse read its traces.
STOP_REPLY_WAIT_S = 120.0
EXIT_WAIT_S = 5.0
# ssh writes why it ended to its stderr as it exits; on a loaded host its reader thread can take
# longer than a second to get it (a refused connection was once told only as 'exit status 255').
STDERR_WAIT_S = 10.0


class HostLost(Exception):
    """The session ended while faasprof waited for the host's answer."""


class ContainersRecord(Collector):
    """The record (``meta.json``, ``host.json``'s entry) of a host's container watch: not a
    collector of the monitoring block, the agent runs it wherever docker answers (``dockerwatch``)."""

    name = CONTAINERS


def record_class(name: str) -> type[Collector] | None:
    """The local class that records what the agent ran as ``name`` on a host."""
    return ContainersRecord if name == CONTAINERS else collector_class(name)


class HostSession:
    """One host's ssh session and the collectors it runs (see the module docstring)."""

    def __init__(self, host: Host, collectors: dict[str, dict], duration_s: float, containers: bool = True):
        self.host = host
        self.containers = containers  # the host's action containers watched where docker answers
        self.wanted = collectors  # {name: settings}, as the workload's monitoring block gives them
        self.duration_s = duration_s
        self.process: subprocess.Popen | None = None
        self.replies: queue.Queue = queue.Queue()
        self.stderr_tail: collections.deque[str] = collections.deque(maxlen=20)
        self.reader: threading.Thread | None = None
        self.stderr_reader: threading.Thread | None = None
        self.facts: dict = {}
        self.skipped: dict[str, str] = {}
        self.collectors: dict[str, Collector] = {}  # started there: the local collector class as its record
        self.layouts: dict[str, dict] = {}
        self.run_dir: Path | None = None
        self.files: dict[tuple[str, str], IO[str]] = {}
        self.files_lock = threading.Lock()
        self.received: collections.Counter[str] = collections.Counter()  # data messages per collector
        self.clock_start: Offset | None = None
        self.clock_end: Offset | None = None
        self.stopping = False
        self.status = "ok"
        self.lost_reason: str | None = None
        self.lost_monotonic_ns: int | None = None

    @property
    def name(self) -> str:
        return self.host.name

    def where(self) -> str:
        user = f"{self.host.user}@" if self.host.user else ""
        return f"{user}{self.host.address}:{self.host.port}"

    # -- pre-flight -------------------------------------------------------------------------------
    def connect(self) -> None:
        """ssh started, the agent sent, its hello read; a NotReadyError (one line) when the host
        cannot be reached or does not answer."""
        try:
            self.process = subprocess.Popen(
                ssh_argv(self.host),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
        except OSError as error:
            raise NotReadyError(
                f"hosts: cannot run ssh ({error.strerror or error}); install the OpenSSH client"
            ) from None
        self.stderr_reader = threading.Thread(target=self._read_stderr, name=f"{self.name}-ssh-stderr", daemon=True)
        self.stderr_reader.start()
        self.reader = threading.Thread(target=self._read, name=f"{self.name}-reader", daemon=True)
        self.reader.start()
        settings = {
            "collectors": {name: self.wanted[name] for name in self.wanted if name in REMOTE_COLLECTORS},
            "cgroup_parent": self.host.cgroup_parent,
            "bound_s": self.duration_s + SAFETY_MARGIN_S,
            "containers": self.containers,
        }
        try:
            self._send_bytes(agent_code() + json.dumps(settings).encode() + b"\n")
            hello = self._reply("hello", CONNECT_WAIT_S)
        except HostLost as error:
            self.close()
            raise NotReadyError(
                f"hosts: {self.name} ({self.where()}) cannot be reached over ssh: {error}; check the inventory's "
                "ansible_host, ansible_port, ansible_user and key, and that sshd and python3 run there"
            ) from None
        self.facts = hello.get("facts") or {}
        try:  # measured again at the start; this one stands if the host is lost before
            self.clock_start = measure_offset(self.ask_clock)
        except HostLost as error:
            self.close()
            raise NotReadyError(f"hosts: {self.name} ({self.where()}) stopped answering over ssh: {error}") from None
        checks = hello.get("checks") or {}
        for name in self.wanted:
            if name not in REMOTE_COLLECTORS:
                self.skipped[name] = (
                    f"{name}: runs only on the machine that runs faasprof (remote hosts run {', '.join(REMOTE_COLLECTORS)})"
                )
            elif checks.get(name):
                self.skipped[name] = checks[name]
        if checks.get(CONTAINERS):
            self.skipped[CONTAINERS] = checks[CONTAINERS]

    # -- the protocol -----------------------------------------------------------------------------
    def _send_bytes(self, data: bytes) -> None:
        assert self.process is not None and self.process.stdin is not None
        try:
            self.process.stdin.write(data)
            self.process.stdin.flush()
        except (OSError, ValueError):
            raise HostLost(self._why_ended()) from None

    def _reply(self, op: str, wait_s: float) -> dict:
        deadline = time.monotonic() + wait_s
        while True:
            try:
                message = self.replies.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise HostLost(f"no answer to {op} within {wait_s:g} s") from None
            if message is None:
                self.replies.put(None)  # every later wait ends at once too
                raise HostLost(self._why_ended())
            if message.get("op") == op:
                return message

    def request(self, op: str, answer: str, wait_s: float = REPLY_WAIT_S) -> dict:
        self._send_bytes(json.dumps({"op": op}).encode() + b"\n")
        return self._reply(answer, wait_s)

    def ask_clock(self) -> int:
        return int(self.request("clock", "clock")["wall_ns"])

    def _why_ended(self) -> str:
        if self.stderr_reader is not None and self.stderr_reader is not threading.current_thread():
            # ssh says why on its stderr as it exits: the reason waits for the end of it.
            self.stderr_reader.join(STDERR_WAIT_S)
        lines = [line for line in self.stderr_tail if line.strip()]
        if lines:
            return lines[-1].strip()
        code = self.process.poll() if self.process is not None else None
        return f"ssh ended (exit status {code})" if code is not None else "the ssh session ended"

    def _read(self) -> None:
        """The agent's lines: rows appended to their files, the rest handed to whoever waits."""
        assert self.process is not None and self.process.stdout is not None
        for line in self.process.stdout:
            try:
                message = json.loads(line)
            except json.JSONDecodeError:
                self.stderr_tail.append(line.decode(errors="replace"))
                continue
            if message.get("op") == "data":
                self._append(message["c"], message["f"], message["d"])
            else:
                self.replies.put(message)
        self.process.stdout.close()
        # ssh says why on its stderr as it exits: read it all before the reason is taken.
        if self.stderr_reader is not None:
            self.stderr_reader.join(STDERR_WAIT_S)
        if not self.stopping:
            self._mark_lost(f"connection lost: {self._why_ended()}")
        self.replies.put(None)

    def _read_stderr(self) -> None:
        assert self.process is not None and self.process.stderr is not None
        for line in self.process.stderr:
            self.stderr_tail.append(line.decode(errors="replace").rstrip("\n"))

    def _append(self, collector: str, name: str, text: str) -> None:
        with self.files_lock:
            handle = self.files.get((collector, name))
            if handle is None:
                if self.run_dir is None or collector not in (*REMOTE_COLLECTORS, CONTAINERS) or "/" in name:
                    return
                directory = rundir.host_monitor_dir(self.run_dir, self.name, collector)
                handle = self.files[(collector, name)] = open(directory / name, "a", encoding="utf-8")
            handle.write(text)
            handle.flush()
            self.received[collector] += 1  # a host lost, or faasprof killed, keeps every row that arrived

    def _mark_lost(self, reason: str) -> None:
        if self.status == "lost":
            return
        self.status, self.lost_reason = "lost", reason
        self.lost_monotonic_ns = time.monotonic_ns()
        for collector in self.collectors.values():
            if collector.status == "running":
                collector.status = "died"
                collector.errors.append(f"{collector.name} on {self.name}: {reason}")
            layout = self.layouts.get(collector.name) or {}
            if "samples" in layout:  # the agent's count never came: the samples that arrived
                layout["samples"] = max(0, self.received[collector.name] - 1)  # less the header

    # -- the run ----------------------------------------------------------------------------------
    def start(self, run_dir: Path) -> None:
        """The clock measured, the samplers started, their records written; a host lost on the way
        is marked so (the run goes on)."""
        self.run_dir = run_dir
        watched = [CONTAINERS] if self.containers else []
        running = [name for name in (*self.wanted, *watched) if name not in self.skipped]
        try:
            self.clock_start = measure_offset(self.ask_clock)
            started = self.request("start", "started")["collectors"] if running else {}
        except HostLost as error:
            self._mark_lost(f"lost while starting: {error}")
            return
        for name, info in started.items():
            self._record_start(name, info)

    def _record_start(self, name: str, info: dict) -> None:
        cls = record_class(name)
        if cls is None:
            return
        assert self.run_dir is not None, "a collector started before the session's start()"
        collector = cls(self.wanted.get(name) or {}, {})
        collector.dir = rundir.host_monitor_dir(self.run_dir, self.name, name)
        collector.command = list(info.get("command") or [])
        collector.wall_ns_at_start = info.get("wall_ns_at_start")
        collector.monotonic_ns_at_start = info.get("monotonic_ns_at_start")
        collector.outputs = list(info.get("outputs") or [])
        collector.warnings = list(info.get("warnings") or [])
        collector.status = "running" if self.status == "ok" else "died"
        if info.get("error"):  # the tool exited at once there (bad option, no permission)
            collector.status = "failed"
            collector.errors.append(f"{info['error']} (on {self.name})")
        (collector.dir / "command.txt").write_text(
            f"# on {self.name} ({self.where()}), by faasprof's agent over ssh\n{shlex.join(collector.command)}\n",
            encoding="utf-8",
        )
        for log in ("stdout.log", "stderr.log"):
            (collector.dir / log).touch()
        self.collectors[name] = collector
        self.layouts[name] = dict(info.get("layout") or {})
        self._write_meta(collector)

    def alive(self) -> bool:
        return self.status == "ok"

    def stop(self) -> None:
        """The end clock, the samplers stopped (their last rows arrive first), the session ended."""
        if self.process is None:
            return
        if self.status == "ok":
            try:
                self.clock_end = measure_offset(self.ask_clock)
                self.stopping = True
                stopped = self.request("stop", "stopped", STOP_REPLY_WAIT_S)["collectors"]
            except HostLost as error:
                self._mark_lost(f"lost while stopping: {error}")
                stopped = {}
            for name, report in stopped.items():
                self._record_stop(name, report)
        self.stopping = True
        self.close()

    def _record_stop(self, name: str, report: dict) -> None:
        collector = self.collectors.get(name)
        if collector is None:
            return
        self.layouts[name] = dict(report.get("layout") or self.layouts.get(name) or {})
        if report.get("error"):
            if collector.status != "failed":
                collector.status = "died"
            if report["error"] not in " ".join(collector.errors):
                collector.errors.append(report["error"])
        elif collector.status == "running":
            collector.status = "stopped"

    def close(self) -> None:
        """ssh ended (its stdin closed: the agent stops; then terminated, then killed), the
        files closed and the collectors' records written. Safe twice."""
        process = self.process
        if process is None:
            return
        self.stopping = True
        if process.stdin is not None and not process.stdin.closed:
            try:
                process.stdin.close()
            except OSError:
                pass
        for stop in (None, process.terminate, process.kill):
            if stop is not None:
                stop()
            try:
                process.wait(EXIT_WAIT_S)
                break
            except subprocess.TimeoutExpired:
                continue
        if self.reader is not None:
            self.reader.join(EXIT_WAIT_S)
        with self.files_lock:
            for handle in self.files.values():
                handle.close()
            self.files.clear()
        for collector in self.collectors.values():
            self._write_meta(collector)

    def _write_meta(self, collector: Collector) -> None:
        if collector.dir is None:
            return
        meta = {"format_version": META_FORMAT_VERSION, **collector.describe(), **self.layouts.get(collector.name, {})}
        rundir.write_json_atomic(collector.dir / rundir.MONITOR_META, meta)

    # -- records ----------------------------------------------------------------------------------
    def describe(self, zero_ns: int | None) -> dict:
        """``host.json``'s object (without its format_version); ``zero_ns``: the run's monotonic
        zero, for the times on the run's axis (None before it is taken: those are null)."""

        def on_axis(monotonic_ns: int | None) -> int | None:
            return None if monotonic_ns is None or zero_ns is None else monotonic_ns - zero_ns

        start, end = self.clock_start, self.clock_end
        return {
            "host": self.name,
            "address": self.host.address,
            "port": self.host.port,
            "kernel": self.facts.get("kernel"),
            "cpu_model": self.facts.get("cpu_model"),
            "cpus": self.facts.get("cpus"),
            "collectors": {
                name: {**collector.describe(), **self.layouts.get(name, {})}
                for name, collector in self.collectors.items()
            },
            "skipped": dict(self.skipped),
            "clock": {
                "offset_ns_start": start.offset_ns if start else None,
                "uncertainty_ns_start": start.uncertainty_ns if start else None,
                "offset_ns_end": end.offset_ns if end else None,
                "uncertainty_ns_end": end.uncertainty_ns if end else None,
                "method": METHOD,
                # When each offset held, on the run's axis (the start one is measured before the zero).
                "at_ns_start": on_axis(start.monotonic_ns if start else None),
                "at_ns_end": on_axis(end.monotonic_ns if end else None),
            },
            "status": self.status,
            "lost_reason": self.lost_reason,
            "lost_at_ns": on_axis(self.lost_monotonic_ns),
        }
