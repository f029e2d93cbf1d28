"""``ScriptRun``: a user's script beside a run (FaaSProfiler's perf_monitoring hooks).

The workload's ``runtime_script`` runs during the test (given its duration in seconds) and its
``post_script`` after it (given the run directory); each is an argv list (no shell string) in its
own session, with its command line, stdout and stderr kept in ``monitors/<name>/``.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import time
from pathlib import Path

from faasprof import rundir


class ScriptRun:
    """A user script run as an argv list (no shell string), output kept in ``monitors/<name>/``."""

    def __init__(self, name: str, path: Path, args: list[str], run_dir: Path):
        self.name = name
        self.path = Path(path)
        # A .sh that is not executable is run with bash, as FaaSProfiler did.
        prefix = [] if os.access(self.path, os.X_OK) else ["bash"]
        self.argv = [*prefix, str(self.path), *args]
        self.dir = rundir.monitor_dir(run_dir, name)
        self.run_dir = run_dir
        self.proc: subprocess.Popen | None = None
        self.started_wall_ns: int | None = None
        self.returncode: int | None = None
        self.stopped_by_us = False
        self.error: str | None = None

    def start(self) -> None:
        (self.dir / "command.txt").write_text(" ".join(shlex.quote(a) for a in self.argv) + "\n", encoding="utf-8")
        env = dict(os.environ, FAASPROF_RUN_DIR=str(self.run_dir))
        try:
            with open(self.dir / "stdout.log", "wb") as out, open(self.dir / "stderr.log", "wb") as err:
                # Its own session: a Ctrl-C in the terminal reaches faasprof, which stops it in order.
                self.proc = subprocess.Popen(
                    self.argv,
                    stdout=out,
                    stderr=err,
                    stdin=subprocess.DEVNULL,
                    cwd=self.dir,
                    env=env,
                    start_new_session=True,
                )
            self.started_wall_ns = time.time_ns()
        except OSError as error:
            self.error = f"{self.name} {self.path} could not start: {error.strerror or error}"

    def wait(self, timeout_s: float) -> bool:
        if self.proc is None:
            return True
        try:
            self.returncode = self.proc.wait(timeout_s)
            return True
        except subprocess.TimeoutExpired:
            return False

    def stop(self) -> None:
        """SIGINT to its process group, then SIGTERM, then SIGKILL; safe twice."""
        if self.proc is None or self.proc.poll() is not None:
            if self.proc is not None:
                self.returncode = self.proc.returncode
            return
        self.stopped_by_us = True
        for sig, wait_s in ((signal.SIGINT, 5.0), (signal.SIGTERM, 2.0), (signal.SIGKILL, 2.0)):
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                break
            if self.wait(wait_s):
                break
        self.returncode = self.proc.poll()

    def failed(self) -> str | None:
        """One line when the script failed (not when faasprof stopped it), else None."""
        if self.error:
            return self.error
        if self.returncode not in (None, 0) and not self.stopped_by_us:
            return f"{self.name} {self.path} exited with status {self.returncode}; see {self.dir / 'stderr.log'}"
        return None

    def describe(self) -> dict:
        return {
            "path": str(self.path),
            "argv": self.argv,
            "started_wall_ns": self.started_wall_ns,
            "returncode": self.returncode,
            "stopped_by_faasprof": self.stopped_by_us,
            "error": self.failed(),
            "output_dir": str(self.dir.relative_to(self.run_dir)),
        }


__all__ = ["ScriptRun"]
