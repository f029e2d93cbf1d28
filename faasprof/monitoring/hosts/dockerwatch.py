"""The action containers of a host, watched by the agent there where ``docker`` answers (standard
library only: shipped over ssh with the agent); the raw output goes to
``monitors/<host>/containers/``, parsed later by ``faasprof.monitoring.parsers.containers``.

Why ``docker events`` rather than ``docker ps`` polls: the events carry Docker's own nanosecond
times of each container's create, start, die and destroy, cost nothing between them, and miss no
container however short its life; a poll sees a container only if it lives across a poll, and
dates it to the poll's interval. The events say nothing of containers that already ran when the
stream began, so a ``docker ps`` snapshot is taken right after the stream starts
(``ps_start.jsonl``) and one at the end (``ps_end.jsonl``): a container still there at the end,
whose events came before the watch, is known too.

``docker events`` runs in a session of its own and dies with the agent (``PR_SET_PDEATHSIG``, as
the tools of ``toolrun`` do): nothing of it outlives a dropped connection.
"""

from __future__ import annotations

import shutil
import subprocess
import threading
import time

from faasprof.monitoring.hosts import toolrun

NAME = "containers"
EVENTS_FILE, PS_START_FILE, PS_END_FILE = "events.jsonl", "ps_start.jsonl", "ps_end.jsonl"
DOCKER_WAIT_S = 10.0  # a docker CLI call that takes longer counts as docker not answering
EVENTS_ARGV = [
    "docker", "events", "--format", "{{json .}}", "--filter", "type=container",
    "--filter", "event=create", "--filter", "event=start", "--filter", "event=die", "--filter", "event=destroy",
]  # fmt: skip
PS_ARGV = ["docker", "ps", "--no-trunc", "--filter", "name=wsk", "--format", "{{json .}}"]


def docker_problem() -> str | None:
    """Why this host's containers cannot be watched (no docker, or its daemon does not answer);
    None when they can."""
    if shutil.which("docker") is None:
        return "containers: no docker on PATH here, so its action containers are not listed"
    try:
        done = subprocess.run(
            ["docker", "version", "--format", "{{.Server.Version}}"],
            stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=DOCKER_WAIT_S,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"containers: docker does not answer here ({error})"
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["no message"])[-1]
        return f"containers: docker does not answer here ({tail})"
    return None


class ContainerWatch:
    """The agent's ``Sampler`` interface (``problem``, ``start``, ``stop``) over ``docker events``
    and two ``docker ps`` snapshots (see the module docstring)."""

    def __init__(self, channel) -> None:
        self.name, self.channel = NAME, channel
        self.problem = docker_problem()
        self.process: subprocess.Popen | None = None
        self.thread: threading.Thread | None = None
        self.error: str | None = None
        self.finished: dict | None = None

    def _send(self, file: str, text: str) -> None:
        self.channel.send({"op": "data", "c": self.name, "f": file, "d": text})

    def _snapshot(self, file: str) -> None:
        try:
            done = subprocess.run(
                PS_ARGV, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=DOCKER_WAIT_S
            )
        except (OSError, subprocess.TimeoutExpired) as error:
            self.error = self.error or f"containers: docker ps failed ({error})"
            return
        self._send(file, done.stdout)
        if done.returncode != 0:
            self.error = self.error or f"containers: docker ps failed: {done.stderr.strip()[-200:]}"

    def start(self) -> dict:
        for file in (EVENTS_FILE, PS_START_FILE, PS_END_FILE, "stderr.log"):
            self._send(file, "")  # each file exists, an empty one meaning nothing was there
        toolrun._load_libc()
        monotonic_ns, wall_ns = time.monotonic_ns(), time.time_ns()
        try:
            self.process = subprocess.Popen(
                EVENTS_ARGV, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                start_new_session=True, preexec_fn=toolrun._die_with_agent,
            )  # fmt: skip
        except OSError as error:
            self.error = f"containers: could not start docker events ({error.strerror or error})"
        else:
            self.thread = threading.Thread(target=self._stream, name="containers-events", daemon=True)
            self.thread.start()
        self._snapshot(PS_START_FILE)
        return {
            "monotonic_ns_at_start": monotonic_ns,
            "wall_ns_at_start": wall_ns,
            "command": list(EVENTS_ARGV),
            "outputs": [EVENTS_FILE, PS_START_FILE, PS_END_FILE],
            "layout": {},
            "error": self.error,
        }

    def _stream(self) -> None:
        assert self.process is not None and self.process.stdout is not None
        for line in self.process.stdout:
            self._send(EVENTS_FILE, line.decode(errors="replace"))

    def stop(self) -> dict:
        """The end snapshot, then the stream stopped and its last lines sent; safe twice."""
        if self.finished is not None:
            return self.finished
        self._snapshot(PS_END_FILE)
        wall_ns_at_end = time.time_ns()
        # The events up to the snapshot's end reach the stream first: a short wait before it stops.
        time.sleep(0.2)
        process = self.process
        if process is not None:
            if process.poll() is not None and self.error is None:
                self.error = f"containers: docker events exited during the run with code {process.returncode}"
            process.terminate()
            try:
                process.wait(5.0)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            if self.thread is not None:
                self.thread.join(5.0)
            if process.stderr is not None:
                text = process.stderr.read().decode(errors="replace")
                if text:
                    self._send("stderr.log", text)
        self.finished = {"layout": {"wall_ns_at_end": wall_ns_at_end}, "error": self.error}
        return self.finished
