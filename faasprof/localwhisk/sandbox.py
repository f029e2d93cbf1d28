"""A sandbox: localwhisk's "container", a process group running one language launcher.

Creating a sandbox (the analogue of ``docker run``) spawns the launcher with ``posix_spawn`` in a
new session, moves it into its own cgroups (or sets rlimits) and waits for its ready line. Then
``init`` loads the action's code once and ``run`` serves one activation at a time over the pipe
protocol described in ``faasprof/localwhisk/runtimes/launcher.py``. Pause and resume use the cgroup freezer
(or SIGSTOP/SIGCONT to the process group), like ``runc pause``. Everything here runs on the
server's event loop: reads are ``add_reader`` callbacks, exits are seen through a pidfd.
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import resource
import shutil
import signal
import sys
import time
from pathlib import Path
from typing import Awaitable

from faasprof.localwhisk import fastjson
from faasprof.localwhisk.cgroups import CgroupManager
from faasprof.localwhisk.sandbox_users import kill_user, own, remove_sandbox, shared_process_limit, write_pid_file
from faasprof.localwhisk.states import SandboxState, StartKind
from faasprof.procfs import spawn_session_leader

# Under a localwhisk's data directory: each sandbox's work directory and pid file.
SANDBOXES_DIR = "sandboxes"

SENTINEL = b"XXX_THE_END_OF_A_WHISK_ACTIVATION_XXX"
OOM_EXIT_CODE = 86  # launcher.py exits with this on MemoryError (rlimit mode)
LOG_LIMIT_BYTES = 10 * 1024 * 1024  # OpenWhisk's default limits.logs (10 MB)
RUNTIME_DIR = Path(__file__).resolve().parent / "runtimes"
# Added to every timer whose expiry has a meaning (action time limits, pause grace, control-plane
# delays, the blocking wait cap): the server runs on uvloop, whose timers count in whole
# milliseconds of a truncated clock and may so fire up to 1 ms before the delay has passed.
TIMER_SLACK_S = 0.001


def runtime_family(kind: str) -> str | None:
    family = kind.split(":", 1)[0]
    return {"python": "python", "nodejs": "nodejs"}.get(family)


def launcher_argv(family: str, memory_mb: int, rlimit_mode: bool, python: str = "", node: str = "") -> list[str]:
    if family == "python":
        # -S: no site .pth processing (the launcher adds site-packages itself); -s: no user site.
        return [python or sys.executable, "-s", "-S", str(RUNTIME_DIR / "launcher.py")]
    node = node or shutil.which("node") or "/usr/bin/node"
    argv = [node]
    if rlimit_mode:
        # V8 reserves gigabytes of address space, so RLIMIT_AS cannot limit node; cap its heap instead.
        argv.append(f"--max-old-space-size={max(memory_mb - 32, 16)}")
    return argv + [str(RUNTIME_DIR / "launcher.js")]


def format_log_line(ts_ns: int, stream: str, text: str) -> str:
    """OpenWhisk's log line: ISO-8601 UTC timestamp with ns, padded to 30, then ``stream: line``."""
    seconds, ns = divmod(ts_ns, 1_000_000_000)
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{ns:09d}Z"
    return f"{stamp:<30} {stream}: {text}"


def _high_fd(fd: int) -> int:
    # posix_spawn's dup2 onto the same number would keep O_CLOEXEC; keep our ends above 3.
    if fd > 3:
        return fd
    new = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return new


def _pipe() -> tuple[int, int]:
    r, w = os.pipe2(os.O_CLOEXEC)
    return _high_fd(r), _high_fd(w)


def not_json_reply(output: bytes) -> dict:
    """The reply for an action whose output is not JSON, in either kind of sandbox (OpenWhisk's
    message, with the output's first 200 bytes)."""
    return {
        "developer_error": "The action did not produce a valid JSON response: "
        + output[:200].decode("utf-8", "replace")
    }


class SandboxDied(Exception):
    """The launcher exited (crash, kill, OOM) while a request was outstanding."""


class Sandbox:
    """One launcher process group. States: starting, prewarm, busy, idle, paused, removing, dead."""

    def __init__(
        self,
        name: str,
        kind: str,
        memory_mb: int,
        cgroups: CgroupManager,
        workroot: Path,
        apihost: str,
        on_exit,
        interpreters: dict | None = None,
        uid: int | None = None,
        home: Path | None = None,
        max_processes: int = 0,
    ):
        self.name = name
        self.kind = kind
        self.family = runtime_family(kind) or "python"
        self.memory_mb = memory_mb
        self.cgroups = cgroups
        # With a user of its own (sandbox_users.py) its folders lie where that user can reach them.
        self.uid = uid
        self.max_processes = max_processes
        homes = home if home is not None else workroot
        self.workdir = homes / name
        # Outside the workdir (the action's HOME, which it may empty): read by reap_orphans after a crash.
        self.pid_file = workroot / f"{name}.pid"
        self.tmp_dir = homes / f"{name}.tmp"  # its /tmp: beside its folder, which stays visible inside it
        self.apihost = apihost
        self.on_exit = on_exit
        self.interpreters = interpreters or {}
        self.state = SandboxState.STARTING
        self.key: tuple | None = None  # the action (namespace, name, revision) this sandbox was initialised with
        self.action_name: str | None = None
        self.prewarm_spec: tuple[str, int] | None = None  # (kind, memory) while a stem cell waits for work
        self.last_used_ns = time.monotonic_ns()
        self.created_ns = self.last_used_ns
        self.activations = 0
        self.timer: asyncio.TimerHandle | None = None  # pause-grace or idle-container timer
        self.pid: int | None = None
        self.cgroup_dirs: dict[str, Path] = {}
        self.exit_status: int | None = None
        self.oom = False
        self.death_reason: str | None = None  # why it is gone or going, for the log and the record
        self.tmp = "shared: not started"  # "private": a /tmp of its own (launcher.private_tmp), else why not
        self._loop = asyncio.get_running_loop()
        self._fds: dict[str, int] = {}
        self._pidfd: int | None = None
        self._reply_buf = b""
        self._out_buf = b""
        self._err_buf = b""
        self._waiter: asyncio.Future | None = None
        self._logs: list[str] = []
        self._log_bytes = 0
        self._sentinels = 0
        self._logs_waiter: asyncio.Future | None = None
        self._write_buf = b""
        self._dead = False
        self.last_reply_bytes = 0
        self.log_limit_bytes = LOG_LIMIT_BYTES

    # -- lifecycle ---------------------------------------------------------------------------

    async def start(self, timeout_s: float = 30.0) -> None:
        """Spawn the launcher and wait for its ready line ("container created")."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.tmp_dir.mkdir(exist_ok=True)
        if self.uid is not None:
            own(self.workdir, self.uid)
            own(self.tmp_dir, self.uid)
        rlimit_mode = not self.cgroups.enabled
        if self.cgroups.enabled:
            self.cgroup_dirs = self.cgroups.create(self.name, self.memory_mb)
        in_r, in_w = _pipe()
        out_r, out_w = _pipe()
        err_r, err_w = _pipe()
        rep_r, rep_w = _pipe()
        env = {
            "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
            "HOME": str(self.workdir),
            "LANG": "C.UTF-8",
            "PYTHONDONTWRITEBYTECODE": "1",
            "__OW_API_HOST": self.apihost,
            "__LW_FD": "3",
            "__LW_CWD": str(self.workdir),
            # Its own /tmp (the Python launcher mounts it there; Node's and a refused mount get TMPDIR).
            "__LW_TMP": str(self.tmp_dir),
            "TMPDIR": str(self.tmp_dir),
        }
        if self.uid is not None:
            env["__LW_UID"] = str(self.uid)  # the launcher drops to it once its /tmp is made
        argv = launcher_argv(self.family, self.memory_mb, rlimit_mode, **self.interpreters)
        try:
            self.pid = spawn_session_leader(
                argv,
                env,
                [
                    (os.POSIX_SPAWN_DUP2, in_r, 0),
                    (os.POSIX_SPAWN_DUP2, out_w, 1),
                    (os.POSIX_SPAWN_DUP2, err_w, 2),
                    (os.POSIX_SPAWN_DUP2, rep_w, 3),
                ],
            )
        except OSError:
            for fd in (in_w, out_r, err_r, rep_r):
                os.close(fd)
            raise
        finally:
            for fd in (in_r, out_w, err_w, rep_w):
                os.close(fd)
        self._fds = {"stdin": in_w, "stdout": out_r, "stderr": err_r, "reply": rep_r}
        write_pid_file(self.pid_file, self.pid, self.uid)
        for fd in (in_w, out_r, err_r, rep_r):
            os.set_blocking(fd, False)
        self._limit(self.pid)
        self._pidfd = os.pidfd_open(self.pid)
        self._loop.add_reader(self._pidfd, self._on_pidfd)
        self._loop.add_reader(rep_r, self._on_reply_readable)
        self._loop.add_reader(out_r, self._on_log_readable, "stdout")
        self._loop.add_reader(err_r, self._on_log_readable, "stderr")
        self._waiter = self._loop.create_future()
        reply = await self._wait(self._waiter, timeout_s)
        if reply is None:
            raise SandboxDied(f"launcher exited during start-up (status {self.exit_status})")
        if reply.get("ok") is False:  # the launcher refused to run actions (launcher.reach_interpreter)
            raise SandboxDied(str(reply.get("error")))
        self.tmp = reply.get("tmp") or "shared: TMPDIR only (the Node.js launcher makes no mount namespace)"
        self._logs.clear()

    def _limit(self, pid: int) -> None:
        """Its limits: open files, processes, and its cgroups or (rlimit mode) address space."""
        try:  # OpenWhisk runs containers with --ulimit nofile=1024:1024
            resource.prlimit(pid, resource.RLIMIT_NOFILE, (1024, 1024))
        except (OSError, ValueError):
            pass
        if self.uid is not None and self.max_processes:
            # Counted per user, so per sandbox: each has a user of its own.
            resource.prlimit(pid, resource.RLIMIT_NPROC, (self.max_processes, self.max_processes))
        elif self.max_processes and not {"pids", "unified"} & set(self.cgroup_dirs):
            # No user of its own (the server is not root) and no pids cgroup: a limit shared with
            # the server's user is all there is, but a fork bomb ends at it.
            shared = shared_process_limit(self.max_processes)
            resource.prlimit(pid, resource.RLIMIT_NPROC, (shared, shared))
        if self.cgroups.enabled:
            self.cgroups.attach(self.cgroup_dirs, pid)
        elif self.family == "python":
            limit = self.memory_mb * 1024 * 1024
            try:
                resource.prlimit(pid, resource.RLIMIT_AS, (limit, limit))
            except (OSError, ValueError):
                pass

    # -- the pool's view: its state changes, as methods (the pool writes no field) ---------------

    def cancel_timer(self) -> None:
        if self.timer:
            self.timer.cancel()
            self.timer = None

    def set_timer(self, handle: asyncio.TimerHandle) -> None:
        self.cancel_timer()
        self.timer = handle

    def timer_fired(self) -> None:
        self.timer = None

    def take(self, action_name: str, how: StartKind) -> None:
        """An activation of ``action_name`` takes this sandbox (a created one is busy once started)."""
        self.cancel_timer()
        if not how.creates:
            self.state = SandboxState.BUSY
        self.action_name = action_name
        if how is StartKind.PREWARMED:
            self.prewarm_spec = None

    def started_for_action(self) -> None:
        self.state = SandboxState.BUSY

    def started_as_stem_cell(self) -> None:
        if self.state is SandboxState.STARTING:
            self.state = SandboxState.PREWARM

    def stem_cell_of(self, spec: tuple[str, int] | None) -> None:
        """Mark a sandbox as a prewarm of ``spec`` (kind, memory), or as none."""
        self.prewarm_spec = spec

    def became_idle(self) -> None:
        self.state = SandboxState.IDLE
        self.last_used_ns = time.monotonic_ns()

    def paused(self) -> None:
        self.state = SandboxState.PAUSED

    def ended_activation(self) -> None:
        self.activations += 1

    def initialised_for(self, key: tuple) -> None:
        self.key = key

    def limit_logs(self, limit_bytes: int) -> None:
        self.log_limit_bytes = limit_bytes

    def note_death(self, why: str | None) -> None:
        """Why it goes (the first reason given stays)."""
        self.death_reason = self.death_reason or why

    def kill(self) -> None:
        """Destroy the sandbox (docker rm -f): thaw, SIGKILL the group; cleanup follows its exit."""
        if self._dead or self.pid is None:
            return
        self.state = SandboxState.REMOVING
        if self.timer:
            self.timer.cancel()
            self.timer = None
        try:
            if self.cgroups.enabled:
                self.cgroups.thaw(self.cgroup_dirs)
            os.killpg(self.pid, signal.SIGKILL)
            if not self.cgroups.enabled:
                os.killpg(self.pid, signal.SIGCONT)
        except OSError:
            pass
        # What left the group (a double-forked daemon) goes with the sandbox's user; its cgroup's
        # processes are killed when the cgroup is removed.
        if self.uid is not None:
            self._loop.run_in_executor(None, kill_user, self.uid)

    def pause(self) -> None:
        if self.cgroups.enabled:
            self.cgroups.freeze(self.cgroup_dirs)
        elif self.pid is not None:
            os.killpg(self.pid, signal.SIGSTOP)

    def resume(self) -> Awaitable[None] | None:
        """Thaw the sandbox; a docker sandbox returns what to await for its unpause."""
        if self.cgroups.enabled:
            self.cgroups.thaw(self.cgroup_dirs)
        elif self.pid is not None:
            os.killpg(self.pid, signal.SIGCONT)
        return None

    def cpu_time_ns(self) -> int | None:
        """CPU time the sandbox has used so far (ns); None where it cannot be read.

        The sandbox's cgroup when it has one (cpuacct.usage on v1, cpu.stat usage_usec on v2: every
        process inside counts), else the launcher's threads (/proc/PID/task/*/schedstat)."""
        try:
            if "cpuacct" in self.cgroup_dirs:
                return int((self.cgroup_dirs["cpuacct"] / "cpuacct.usage").read_text())
            if "unified" in self.cgroup_dirs:
                for line in (self.cgroup_dirs["unified"] / "cpu.stat").read_text().splitlines():
                    key, _, value = line.partition(" ")
                    if key == "usage_usec":
                        return int(value) * 1000
                return None
            if self.pid is None:
                return None
            total = 0
            for task in os.listdir(f"/proc/{self.pid}/task"):
                with open(f"/proc/{self.pid}/task/{task}/schedstat") as handle:
                    total += int(handle.read().split()[0])
            return total
        except (OSError, ValueError, IndexError):
            return None

    @property
    def dead(self) -> bool:
        return self._dead

    # -- requests ----------------------------------------------------------------------------

    async def request(self, message: dict, timeout_s: float) -> dict:
        """Send one init or run line; return the reply. Raises TimeoutError or SandboxDied."""
        self._begin_request()
        self._waiter = self._loop.create_future()
        self._write(fastjson.dumps(message) + b"\n")
        reply = await self._wait(self._waiter, timeout_s)
        if reply is None:
            raise SandboxDied(f"launcher exited (status {self.exit_status})")
        return reply

    def _begin_request(self) -> None:
        """Before an init or run (either kind of sandbox): refuse on a dead one, start its logs afresh."""
        if self._dead:
            raise SandboxDied("sandbox is gone")
        self._logs = []
        self._log_bytes = 0
        self._sentinels = 0

    async def collect_logs(self, timeout_s: float = 2.0) -> list[str]:
        """The activation's log lines, once both sentinels have arrived (or the timeout passed)."""
        if self._sentinels < 2 and not self._dead:
            self._logs_waiter = self._loop.create_future()
            await self._wait(self._logs_waiter, timeout_s, default=None)
            self._logs_waiter = None
        logs, self._logs = self._logs, []
        return logs

    def take_logs(self) -> list[str]:
        logs, self._logs = self._logs, []
        return logs

    async def _wait(self, future: asyncio.Future, timeout_s: float, default="raise"):
        handle = self._loop.call_later(timeout_s + TIMER_SLACK_S, _expire, future)
        try:
            result = await future
        finally:
            handle.cancel()
        if result is _TIMEOUT:
            if default == "raise":
                raise TimeoutError
            return default
        return result

    def _write(self, data: bytes) -> None:
        fd = self._fds["stdin"]
        if self._write_buf:
            self._write_buf += data
            return
        try:
            n = os.write(fd, data)
        except BlockingIOError:
            n = 0
        except OSError:
            return  # the launcher is gone; its exit resolves the waiter
        if n < len(data):
            self._write_buf = data[n:]
            self._loop.add_writer(fd, self._on_writable)

    def _on_writable(self) -> None:
        fd = self._fds["stdin"]
        try:
            n = os.write(fd, self._write_buf)
        except BlockingIOError:
            return
        except OSError:
            self._write_buf = b""
            self._loop.remove_writer(fd)
            return
        self._write_buf = self._write_buf[n:]
        if not self._write_buf:
            self._loop.remove_writer(fd)

    # -- event-loop callbacks -----------------------------------------------------------------

    def _read_ready(self, fd: int) -> bytes | None:
        """What a readable pipe holds; None when there is nothing (at EOF the reader is removed)."""
        try:
            data = os.read(fd, 1 << 20)
        except BlockingIOError:
            return None
        except OSError:
            data = b""
        if not data:
            self._loop.remove_reader(fd)
            return None
        return data

    def _on_reply_readable(self) -> None:
        data = self._read_ready(self._fds["reply"])
        if data is None:
            return
        self._reply_buf += data
        while b"\n" in self._reply_buf:
            line, _, self._reply_buf = self._reply_buf.partition(b"\n")
            self.last_reply_bytes = len(line)
            try:
                reply = fastjson.loads(line)
            except ValueError:
                reply = not_json_reply(line)
            if self._sentinels < 2:
                # The launcher writes both sentinels before it replies, so they wait in the pipes
                # now: taking them here spares collect_logs a waiter, a timer and two wake-ups.
                self._on_log_readable("stdout")
                self._on_log_readable("stderr")
            if self._waiter is not None and not self._waiter.done():
                self._waiter.set_result(reply)

    def _on_log_readable(self, stream: str) -> None:
        data = self._read_ready(self._fds[stream])
        if data is None:
            return
        buf = self._take_log_lines(stream, (self._out_buf if stream == "stdout" else self._err_buf) + data)
        if stream == "stdout":
            self._out_buf = buf
        else:
            self._err_buf = buf

    def _take_log_lines(self, stream: str, buf: bytes) -> bytes:
        """Record the complete lines of ``buf`` as log lines and count the sentinels; returns the
        unterminated rest. A sentinel may follow an unterminated line of the action's output."""
        now_ns = time.time_ns()
        while True:
            nl = buf.find(b"\n")
            if nl < 0:
                return buf
            line, buf = buf[:nl], buf[nl + 1 :]
            sentinel = False
            while line.endswith(SENTINEL):
                line = line[: -len(SENTINEL)]
                sentinel = True
                self._sentinels += 1
                if self._sentinels >= 2 and self._logs_waiter is not None and not self._logs_waiter.done():
                    self._logs_waiter.set_result(True)
            if line or not sentinel:
                self._add_log(now_ns, stream, line)

    def _add_log(self, ts_ns: int, stream: str, line: bytes) -> None:
        if self._log_bytes > self.log_limit_bytes:
            return
        self._log_bytes += len(line)
        if self._log_bytes > self.log_limit_bytes:
            text = (
                f"Logs were truncated because the total bytes size exceeds the limit of {self.log_limit_bytes} bytes."
            )
        else:
            text = line.decode("utf-8", "replace").rstrip("\r")
        self._logs.append(format_log_line(ts_ns, stream, text))

    def _on_pidfd(self) -> None:
        """The launcher exited: reap it, fail what waits on it, release fds, cgroups and workdir."""
        pidfd, pid = self._pidfd, self.pid
        if pidfd is None or pid is None:  # already handled
            return
        self._loop.remove_reader(pidfd)
        try:
            _, status = os.waitpid(pid, os.WNOHANG)
            self.exit_status = os.waitstatus_to_exitcode(status)
        except ChildProcessError:
            self.exit_status = None
        os.close(pidfd)
        self._pidfd = None
        # Drain whatever the launcher wrote before dying so its last log lines (and a last reply,
        # such as its refusal to start) are kept.
        for stream in ("stdout", "stderr"):
            self._on_log_readable(stream)
        if "reply" in self._fds:
            self._on_reply_readable()
        self._dead = True
        if self.cgroups.enabled:
            self.oom = self.cgroups.oom_killed(self.cgroup_dirs)
        else:
            self.oom = self.exit_status == OOM_EXIT_CODE
        for future in (self._waiter, self._logs_waiter):
            if future is not None and not future.done():
                future.set_result(None)
        for name, fd in self._fds.items():
            try:
                self._loop.remove_reader(fd)
                if name == "stdin":
                    self._loop.remove_writer(fd)
                os.close(fd)
            except (OSError, ValueError):
                pass
        self._fds = {}
        if self.timer:
            self.timer.cancel()
            self.timer = None
        # rmdir of a memory cgroup takes milliseconds: do it off the event loop.
        self._loop.run_in_executor(
            None, remove_sandbox, self.cgroups, dict(self.cgroup_dirs), self.workdir, self.pid_file, self.uid
        )
        self.state = SandboxState.DEAD
        self.on_exit(self)

    def memory_usage_bytes(self) -> int | None:
        """The memory the sandbox's cgroup charges; None without one."""
        return self.cgroups.memory_usage_bytes(self.cgroup_dirs) if self.cgroup_dirs else None

    def describe(self) -> dict:
        """The sandbox as ``GET /`` lists it; a kind adds its own keys after these."""
        return {
            "name": self.name,
            "kind": self.kind,
            "memory_mb": self.memory_mb,
            "state": self.state.value,
            "action": self.action_name,
            "pid": self.pid,
            "activations": self.activations,
            "memory_usage_bytes": self.memory_usage_bytes(),
        }


_TIMEOUT = object()


def _expire(future: asyncio.Future) -> None:
    if not future.done():
        future.set_result(_TIMEOUT)
