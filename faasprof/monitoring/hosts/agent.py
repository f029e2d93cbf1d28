"""The program faasprof runs on a remote host, shipped over ssh's stdin (standard library only; the
host needs python3 and nothing of faasprof): it answers the host's facts and each collector's own
check, then samples and streams every row back as it is read; the tool collectors (perf, blktrace,
rdt through pqos) run as processes whose output is streamed back the same way (``toolrun``).

Protocol, one JSON object per line. In (stdin), after the code: the settings
``{"collectors": {name: settings}, "cgroup_parent": str|None, "bound_s": float, "containers": bool}``
(``containers``: watch the host's action containers, ``dockerwatch``), then requests
``{"op": "clock"}``, ``{"op": "start"}``, ``{"op": "stop"}``. Out (stdout): ``hello`` (facts and
``checks``: ``{name: None or why not}``), ``clock`` (``wall_ns``), ``started`` (per collector its
anchors, command, layout, warnings and error), ``data`` (``c`` collector, ``f`` file, ``d`` text to append), ``stopped``
(per collector its layout and error).

Nothing outlives faasprof: the end of stdin (faasprof stopped, died, or the ssh connection
dropped, which ends the session's pipes) stops the samplers, the tools and the program, as does a
stop request; ``bound_s`` after the start it stops by itself whatever happens (its tools die with it).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time

from faasprof.monitoring.host import Root, cpuinfo
from faasprof.monitoring.hosts.dockerwatch import ContainerWatch
from faasprof.monitoring.hosts.toolrun import TOOL_COLLECTORS, ToolRun
from faasprof.monitoring.sampling import (
    CGROUP_COLUMNS,
    VMSTAT_COLUMNS,
    cgroup_parents,
    cgroup_rows,
    sample_cgroups,
    sample_until,
    vmstat_problem,
    vmstat_row,
)

# The collectors faasprof samples itself on a remote host (no tool to start there).
SAMPLED_COLLECTORS = ("cgroups", "vmstat")
# Every collector a remote host runs: the sampled ones, and the tools (``toolrun``).
REMOTE_COLLECTORS = TOOL_COLLECTORS + SAMPLED_COLLECTORS


class Channel:
    """Lines out, one writer at a time; a closed pipe (faasprof gone) is remembered, never raised."""

    def __init__(self, stream) -> None:
        self.stream = stream
        self.lock = threading.Lock()
        self.closed = threading.Event()

    def send(self, message: dict) -> None:
        line = json.dumps(message, separators=(",", ":")) + "\n"
        with self.lock:
            if self.closed.is_set():
                return
            try:
                self.stream.write(line)
                self.stream.flush()
            except (OSError, ValueError):
                self.closed.set()


class Sampler:
    """One collector on this host: a file it appends a row to every interval, in a thread."""

    def __init__(self, name: str, settings: dict, channel: Channel, root: Root, cgroup_parent: str | None) -> None:
        self.name, self.channel, self.root = name, channel, root
        self.interval_ms = int(settings.get("interval_ms") or 500)
        self.stop_event = threading.Event()
        self.thread: threading.Thread | None = None
        self.error: str | None = None
        self.samples = 0
        self.sandboxes: set[str] = set()
        self.parents: dict[str, str] = {}
        self.problem: str | None = None
        if name == "vmstat":
            self.file, self.header = "vmstat.csv", ",".join(VMSTAT_COLUMNS) + "\n"
            self.problem = vmstat_problem(root)
            self.command = ["proc-read", "/proc/stat", "/proc/vmstat", f"every {self.interval_ms} ms"]
        elif name == "cgroups":
            self.file, self.header = "samples.csv", ",".join(CGROUP_COLUMNS) + "\n"
            self.parents, self.problem = cgroup_parents(root, {}, cgroup_parent)
            self.command = ["cgroup-read", f"every {self.interval_ms} ms", *self.parents.values()]
        else:
            self.problem = f"{name}: not run on remote hosts (they run {', '.join(REMOTE_COLLECTORS)})"

    def row(self, elapsed_ns: int) -> str:
        if self.name == "vmstat":
            return vmstat_row(elapsed_ns, self.root)
        samples = sample_cgroups(self.parents)
        self.sandboxes.update(samples)
        return cgroup_rows(elapsed_ns, samples)

    def start(self) -> dict:
        self.channel.send({"op": "data", "c": self.name, "f": self.file, "d": self.header})
        self.monotonic_ns_at_start, self.wall_ns_at_start = time.monotonic_ns(), time.time_ns()
        self.thread = threading.Thread(target=self.loop, name=f"{self.name}-sampler", daemon=True)
        self.thread.start()
        return {
            "monotonic_ns_at_start": self.monotonic_ns_at_start,
            "wall_ns_at_start": self.wall_ns_at_start,
            "command": self.command,
            "outputs": [self.file],
            "layout": self.layout(),
        }

    def loop(self) -> None:
        try:
            sample_until(self.interval_ms / 1000.0, self.sample, self.stop_event)
        except Exception as error:  # said in the stopped message and the collector's stderr.log
            self.error = f"{self.name}: sampling failed ({error})"
            self.channel.send({"op": "data", "c": self.name, "f": "stderr.log", "d": self.error + "\n"})

    def sample(self) -> None:
        text = self.row(time.monotonic_ns() - self.monotonic_ns_at_start)
        self.samples += 1
        self.channel.send({"op": "data", "c": self.name, "f": self.file, "d": text})

    def stop(self) -> dict:
        self.stop_event.set()
        if self.thread is not None:
            self.thread.join(5.0)
        return {"layout": self.layout(), "error": self.error}

    def layout(self) -> dict:
        if self.name != "cgroups":
            return {}
        return {
            "parents": dict(self.parents),
            "interval_ms": self.interval_ms,
            "samples": self.samples,
            "sandboxes_seen": len(self.sandboxes - {"."}),
        }


def facts(root: Root) -> dict:
    uname = os.uname()
    return {
        "hostname": uname.nodename,
        "kernel": uname.release,
        "cpu_model": cpuinfo(root)["model"],
        "cpus": os.cpu_count(),
        "python": sys.version.split()[0],
    }


def serve(stdin, channel: Channel, settings: dict) -> None:
    """Answer requests until stop or the end of stdin; the samplers stopped in any case."""
    root = Root("/")
    bound_s = float(settings.get("bound_s") or 3600.0)
    samplers: dict[str, Sampler | ToolRun | ContainerWatch] = {}
    for name, value in (settings.get("collectors") or {}).items():
        if name in TOOL_COLLECTORS:
            samplers[name] = ToolRun(name, value, channel, root, settings.get("cgroup_parent"), bound_s)
        else:
            samplers[name] = Sampler(name, value, channel, root, settings.get("cgroup_parent"))
    if settings.get("containers"):  # where docker answers: which action containers ran here, and when
        samplers["containers"] = ContainerWatch(channel)
    channel.send({"op": "hello", "facts": facts(root), "checks": {n: s.problem for n, s in samplers.items()}})
    running = [sampler for sampler in samplers.values() if sampler.problem is None]
    bound = threading.Timer(bound_s, os._exit, (4,))
    bound.daemon = True
    bound.start()
    try:
        for line in stdin:
            op = json.loads(line).get("op")
            if op == "clock":
                channel.send({"op": "clock", "wall_ns": time.time_ns()})
            elif op == "start":
                channel.send({"op": "started", "collectors": {s.name: s.start() for s in running}})
            elif op == "stop":
                break
    finally:
        report = {sampler.name: sampler.stop() for sampler in running}
        channel.send({"op": "stopped", "collectors": report})


def main(stdin, stdout) -> None:
    channel = Channel(stdout)
    try:
        serve(stdin, channel, json.loads(stdin.readline() or "{}"))
    finally:
        # No thread of ours may keep the process (and the ssh session) alive.
        os._exit(0)
