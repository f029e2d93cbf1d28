"""The container pool: OpenWhisk's classic invoker (``ContainerPool`` + ``ContainerProxy``) rules.

Scheduling one activation, in this order (faasprof/localwhisk/README.md, "How it works"):

1. if the run buffer is not empty, the job joins its tail (strict FIFO, head-of-line blocking);
2. reuse an idle warm sandbox (unpaused or paused) of the same action revision and namespace;
3. else take a prewarmed sandbox of exactly the same kind and memory, and start a replacement;
4. else, if the memory of every live sandbox plus this one fits ``user_memory_mb``, start a cold one;
5. else remove least-recently-used idle warm sandboxes until it fits, then start a cold one;
6. else buffer the job; the buffer is retried whenever a sandbox becomes free or is removed.

A sandbox pauses ``pause_grace_ms`` after its last activation and is removed ``idle_timeout_s``
after pausing. Developer errors (crash, timeout, out of memory, init failure, bad result) destroy
the sandbox; application errors keep it. At most ``parallel_runs`` sandboxes start at once.

Timing follows OpenWhisk's record: ``waitTime`` runs from the request's acceptance to the start of
init (if this activation initialised the sandbox) or of run, so queueing, sandbox creation and
resume fall inside it; ``initTime`` is the init call; ``start = run_start - initTime``,
``end = run_end``, ``duration = end - start``. Two annotations OpenWhisk does not have (extra keys,
ignored by its clients) give the run call finer: ``runTimeUs`` (run_end - run_start in µs: the
record's duration without initTime, free of its 1 ms rounding) and, where the sandbox's CPU time
can be read (process sandboxes), ``runCpuTimeUs`` (the sandbox's CPU time during the run call).
"""

from __future__ import annotations

import asyncio
import logging
import time
import zipfile
from collections import OrderedDict, deque
from pathlib import Path

from faasprof.localwhisk import delays as delays_mod
from faasprof.localwhisk.activation import (
    ABNORMAL_RUN,
    PROVISION_ERROR,
    STOPPED_ERROR,
    Job,
    Outcome,
    developer_error,
    internal_error_message,
    request_failed,
    shared_tmp_hint,
    truncated_response_message,
    why_gone,
)
from faasprof.localwhisk.archives import check_code_archive, extract_archive
from faasprof.localwhisk.cgroups import CgroupManager
from faasprof.localwhisk.docker_sandbox import DockerHost, DockerSandbox
from faasprof.localwhisk.sandbox import (
    TIMER_SLACK_S,
    Sandbox,
    SandboxDied,
    format_log_line,
)
from faasprof.localwhisk.sandbox_users import SandboxUsers, kill_adopted, own, reap_adopted
from faasprof.localwhisk.states import SandboxState, StartKind

log = logging.getLogger("faasprof.localwhisk.pool")

PREWARM_MAX_RETRIES = 5
# How long closing waits for the sandboxes to be gone: a `docker rm -f` of a paused container takes
# seconds on a loaded host, and a container left behind outlives the run.
CLOSE_WAIT_S = 30.0


class Pool:
    def __init__(
        self,
        settings,
        cgroups: CgroupManager,
        workroot: Path,
        apihost: str,
        on_complete,
        prewarm: list[tuple[str, int, int]],
        users: SandboxUsers | None = None,
    ):
        self.settings = settings
        self.user_memory_mb = settings.user_memory_mb
        self.pause_grace_s = settings.pause_grace_ms / 1000.0
        # Off unless set (faasprof/localwhisk/delays.py); a preset's values depend on the isolation.
        self.delays = delays_mod.parse(getattr(settings, "control_plane", ""), docker=settings.isolation == "docker")
        self.cpu_stage = delays_mod.CpuStage(self.delays.cpu_ms) if self.delays.cpu_ms else None
        self.idle_timeout_s = settings.idle_timeout_s
        self.cgroups = cgroups
        self.workroot = workroot
        self.apihost = apihost
        self.on_complete = on_complete
        self.prewarm_spec = prewarm
        self.users = users  # a user per process sandbox (the server is root), else None
        self.adopts = False  # the server's process is a subreaper: it kills what actions leave at close
        self.sandboxes: dict[str, Sandbox] = {}
        self.idle: OrderedDict[Sandbox, None] = OrderedDict()  # free warm sandboxes, least recently used first
        self.idle_peak = 0  # the most free warm sandboxes there were at once (the control-plane model's reuse)
        self.counted: set[Sandbox] = set()  # sandboxes whose memory is reserved
        self.used_mb = 0
        self.buffer: deque[Job] = deque()
        self.running: set[Job] = set()
        self.create_sem = asyncio.Semaphore(settings.parallel_runs)
        self._counter = 0
        self._tasks: set[asyncio.Task] = set()
        self.loop = asyncio.get_running_loop()
        self.closed = False
        self.cold_starts = 0
        self.tmp_shared = ""  # why sandboxes share /tmp here, once one did ("" while none has)
        self.prewarm_failures = 0  # consecutive; backfill stops after PREWARM_MAX_RETRIES (OpenWhisk: 5)
        # isolation docker: sandboxes are containers (faasprof/localwhisk/docker_sandbox.py), same rules.
        self.docker = DockerHost(settings) if settings.isolation == "docker" else None

    async def open(self) -> None:
        """Isolation docker: check the daemon and images, reap containers of dead servers."""
        if self.docker is not None:
            await self.docker.open()

    # -- public ---------------------------------------------------------------------------------

    def submit(self, job: Job) -> None:
        if self.closed:  # never strand a job in a buffer nobody drains any more
            self._finish(
                job, Outcome(status_code=3, result={"error": STOPPED_ERROR}, wait_end_ns=time.monotonic_ns()), None
            )
            return
        if self.buffer or not self._try_schedule(job):
            self.buffer.append(job)

    def start_prewarm(self) -> None:
        self._ensure_prewarm()

    def describe(self) -> dict:
        actions: dict[str, dict] = {}
        prewarm = []
        for sb in self.sandboxes.values():
            if sb.action_name is None:
                prewarm.append({"kind": sb.kind, "memory_mb": sb.memory_mb, "state": sb.state.value})
                continue
            entry = actions.setdefault(
                sb.action_name, {"warm": 0, "paused": 0, "busy": 0, "starting": 0, "removing": 0}
            )
            state = {SandboxState.IDLE: "warm", SandboxState.PREWARM: "warm"}.get(sb.state, sb.state.value)
            entry[state] = entry.get(state, 0) + 1
        return {
            "user_memory_mb": self.user_memory_mb,
            "used_memory_mb": self.used_mb,
            "queued": len(self.buffer),
            "running": len(self.running),
            "actions": actions,
            "prewarm": prewarm,
            "sandboxes": [sb.describe() for sb in self.sandboxes.values()],
        }

    async def close(self) -> None:
        """Fail buffered and running activations as whisk errors, destroy every sandbox."""
        self.closed = True
        while self.buffer:
            job = self.buffer.popleft()
            self._finish(job, Outcome(status_code=3, result={"error": STOPPED_ERROR}), None)
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.wait(self._tasks, timeout=5)
        if self.cpu_stage is not None:
            self.cpu_stage.close()
        for sb in list(self.sandboxes.values()):
            sb.kill()
        deadline = time.monotonic() + CLOSE_WAIT_S
        while self.sandboxes and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        if self.sandboxes:
            log.warning(
                "%d sandboxes still being removed after %.0f s: %s",
                len(self.sandboxes),
                CLOSE_WAIT_S,
                ", ".join(sorted(self.sandboxes)[:8]),
            )
        if self.docker is not None:
            await self.docker.close()
        # What an action left running (a daemon that left its group) is gone before stop returns.
        if self.adopts:
            keep = {sb.pid for sb in self.sandboxes.values() if sb.pid is not None}
            killed = await self.loop.run_in_executor(None, kill_adopted, keep)
            if killed:
                log.warning("killed %d processes that actions left running", killed)
        if self.users is not None:
            await self.loop.run_in_executor(None, self.users.close)

    # -- scheduling -------------------------------------------------------------------------------

    def _try_schedule(self, job: Job) -> bool:
        action = job.action
        key = action.key
        # 2. warm reuse: most recently used first (or in OpenWhisk's free-pool order, when the
        # control-plane model says so: faasprof/localwhisk/delays.py)
        if self.delays.reuse == "newest":
            offered = reversed(self.idle)
        else:
            offered = iter(delays_mod.openwhisk_order(self.idle, self.idle_peak > delays_mod.SMALL_MAP_ENTRIES, _name))
        for sb in offered:
            if sb.key == key:
                how = StartKind.RESUMED if sb.state is SandboxState.PAUSED else StartKind.WARM
                self._dispatch(sb, job, how)
                return True
        # 3. prewarmed stem cell with exact kind and memory
        for sb in self.sandboxes.values():
            if sb.state is SandboxState.PREWARM and sb.kind == action.kind and sb.memory_mb == action.memory_mb:
                self._dispatch(sb, job, StartKind.PREWARMED)
                self._ensure_prewarm()
                return True
        need = action.memory_mb
        # 4. cold start if the memory fits
        if self.used_mb + need <= self.user_memory_mb:
            self._cold(job, StartKind.COLD)
            return True
        # 5. evict least-recently-used idle warm sandboxes (never busy ones, never stem cells)
        freeable = sum(sb.memory_mb for sb in self.idle)
        if self.used_mb - freeable + need <= self.user_memory_mb:
            while self.used_mb + need > self.user_memory_mb:
                victim = next(iter(self.idle))
                self._remove(victim)
            self._cold(job, StartKind.RECREATED)
            return True
        return False

    def _drain(self) -> None:
        while self.buffer and not self.closed:
            if self._try_schedule(self.buffer[0]):
                self.buffer.popleft()
            else:
                break

    def _new_sandbox(self, kind: str, memory_mb: int) -> Sandbox:
        self._counter += 1
        name = f"wsk{self._counter}"
        interpreters = {"python": self.settings.python, "node": self.settings.node}
        sb: Sandbox
        if self.docker is not None:
            sb = DockerSandbox(
                name,
                kind,
                memory_mb,
                self.cgroups,
                self.workroot,
                self.apihost,
                self._on_sandbox_exit,
                interpreters,
                host=self.docker,
            )
        else:
            uid = self.users.allocate() if self.users is not None else None
            sb = Sandbox(
                name,
                kind,
                memory_mb,
                self.cgroups,
                self.workroot,
                self.apihost,
                self._on_sandbox_exit,
                interpreters,
                uid=uid,
                home=self.users.homes if self.users is not None and uid is not None else None,
                max_processes=self.settings.max_sandbox_processes,
            )
        self.sandboxes[name] = sb
        self.counted.add(sb)
        self.used_mb += memory_mb
        return sb

    def _cold(self, job: Job, how: StartKind) -> None:
        self.cold_starts += 1
        sb = self._new_sandbox(job.action.kind, job.action.memory_mb)
        self._dispatch(sb, job, how)

    def _dispatch(self, sb: Sandbox, job: Job, how: StartKind) -> None:
        self.idle.pop(sb, None)
        sb.take(job.action.name, how)
        job.container_state = how.value
        self.running.add(job)
        task = self.loop.create_task(self._execute(sb, job, how))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _remove(self, sb: Sandbox, why: str | None = None) -> None:
        sb.note_death(why)
        self.idle.pop(sb, None)
        self._release(sb)
        if sb.pid is None:  # never spawned (cancelled while waiting for a creation slot)
            self.sandboxes.pop(sb.name, None)
            if sb.cgroup_dirs:
                self.cgroups.remove(sb.cgroup_dirs)
            return
        sb.kill()

    def _release(self, sb: Sandbox) -> None:
        if sb in self.counted:
            self.counted.discard(sb)
            self.used_mb -= sb.memory_mb

    def _on_sandbox_exit(self, sb: Sandbox) -> None:
        log.info("sandbox %s (%s) gone: %s", sb.name, sb.action_name or sb.kind, why_gone(sb))
        self.sandboxes.pop(sb.name, None)
        if self.adopts:  # processes an action left that have ended since: collect them
            reap_adopted({other.pid for other in self.sandboxes.values() if other.pid is not None})
        self.idle.pop(sb, None)
        self._release(sb)
        if not self.closed:
            self._ensure_prewarm()
            self._drain()

    def _became_free(self, sb: Sandbox) -> None:
        sb.became_idle()
        self.idle[sb] = None
        self.idle.move_to_end(sb)
        self.idle_peak = max(self.idle_peak, len(self.idle))
        sb.set_timer(self.loop.call_later(self.pause_grace_s + TIMER_SLACK_S, self._pause, sb))

    def _pause(self, sb: Sandbox) -> None:
        sb.timer_fired()
        if sb.state is not SandboxState.IDLE or sb.dead:
            return
        try:
            sb.pause()
        except OSError as error:
            # OpenWhisk destroys a container whose pause failed.
            log.warning("pause of %s failed (%s); removing it", sb.name, error)
            self._remove(sb, f"its pause failed ({error}); removed, as OpenWhisk removes a container it cannot pause")
            return
        sb.paused()
        sb.set_timer(self.loop.call_later(self.idle_timeout_s, self._idle_remove, sb))

    def _idle_remove(self, sb: Sandbox) -> None:
        sb.timer_fired()
        if sb.state is SandboxState.PAUSED:
            self._remove(sb, f"idle for {self.idle_timeout_s:g} s (idle timeout)")
            self._drain()

    # -- prewarm ----------------------------------------------------------------------------------

    def _ensure_prewarm(self) -> None:
        if self.closed or self.prewarm_failures >= PREWARM_MAX_RETRIES:
            return
        for kind, count, memory_mb in self.prewarm_spec:
            have = sum(1 for sb in self.sandboxes.values() if sb.prewarm_spec == (kind, memory_mb))
            while have < count and self.used_mb + memory_mb <= self.user_memory_mb:
                sb = self._new_sandbox(kind, memory_mb)
                sb.stem_cell_of((kind, memory_mb))
                task = self.loop.create_task(self._start_prewarm(sb))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
                have += 1

    async def _start_prewarm(self, sb: Sandbox) -> None:
        try:
            async with self.create_sem:
                await sb.start()
        except (SandboxDied, TimeoutError, OSError) as error:
            self.prewarm_failures += 1
            log.warning(
                "prewarm %s (%s) failed to start (%d in a row): %s", sb.name, sb.kind, self.prewarm_failures, error
            )
            sb.stem_cell_of(None)
            self._remove_failed(sb)
            return
        self.prewarm_failures = 0
        if sb.state is SandboxState.STARTING:
            sb.started_as_stem_cell()
            self._drain()

    def _remove_failed(self, sb: Sandbox) -> None:
        self._release(sb)
        if sb.pid is None or sb.dead:
            self.sandboxes.pop(sb.name, None)
            if sb.cgroup_dirs:
                self.cgroups.remove(sb.cgroup_dirs)
        else:
            sb.kill()

    # -- one activation ---------------------------------------------------------------------------

    async def _execute(self, sb: Sandbox, job: Job, how: StartKind) -> None:
        """Run one activation; an exception of localwhisk's own still ends it with a record (a
        whisk internal error) and frees its sandbox, so nothing is lost nor held for good."""
        try:
            await self._activation(sb, job, how)
        except Exception as error:
            log.exception("activation %s of %s failed inside localwhisk", job.activation_id, job.action.path)
            self._internal_error(sb, job, error)

    def _internal_error(self, sb: Sandbox, job: Job, error: Exception) -> None:
        if sb.name in self.sandboxes and sb not in self.idle and not sb.dead:
            self._remove(sb, f"destroyed after localwhisk failed during its activation ({type(error).__name__})")
        if job in self.running:
            out = Outcome(status_code=3, result={"error": internal_error_message(error)}, destroy=True)
            out.wait_end_ns = time.monotonic_ns()
            self._finish(job, out, None)
        if not self.closed:
            self._drain()

    async def _activation(self, sb: Sandbox, job: Job, how: StartKind) -> None:
        out = Outcome()
        action = job.action
        timeout_s = action.timeout_ms / 1000.0
        stopped = False  # cancelled (localwhisk stopping) before the activation ended
        try:
            if self.delays:
                delay_s = self.delays.before_s(how)
                await asyncio.sleep(delay_s + TIMER_SLACK_S if delay_s > 0 else 0)
            if how.creates:
                try:
                    async with self.create_sem:
                        await sb.start()
                except (SandboxDied, TimeoutError, OSError) as error:
                    log.warning("sandbox %s for %s failed to start: %s", sb.name, action.path, error)
                    out.status_code, out.result = 3, {"error": PROVISION_ERROR}
                    out.wait_end_ns = time.monotonic_ns()
                    self._remove_failed(sb)
                    self._finish(job, out, None)
                    self._drain()
                    return
                sb.started_for_action()
                self._note_tmp(sb)
            elif how is StartKind.RESUMED and not await self._resumed(sb):
                # The platform failed (a pause or unpause that did not take): the call never reached
                # the sandbox, so it is not the action's fault; it runs on a new one instead.
                self.running.discard(job)
                self._remove(sb, sb.death_reason or "its resume failed")
                self._cold(job, StartKind.COLD)
                return
            if sb.key is None:
                await self._init(sb, job, out, timeout_s)
            if out.status_code == 0:
                await self._run(sb, job, out, timeout_s)
        except asyncio.CancelledError:
            stopped = True
            out.status_code, out.result, out.destroy = 3, {"error": STOPPED_ERROR}, True
            if out.wait_end_ns is None:
                out.wait_end_ns = time.monotonic_ns()
        sb.ended_activation()
        if out.destroy or sb.dead:
            failure = out.result.get("error", "error") if isinstance(out.result, dict) else "error"
            self._remove(sb, "destroyed after its activation failed (" + str(failure)[:120] + ")")
        else:
            self._became_free(sb)
        self._drain()
        if self.cpu_stage is not None and not stopped:
            # OpenWhisk holds a container for its /run and log read only; its JVM's work on the
            # record and the answer comes after the container is free again.
            try:
                await self.cpu_stage.spend()
            except asyncio.CancelledError:
                pass  # stopping: the activation ran; its record is kept as it is
        self._finish(job, out, sb)

    def _note_tmp(self, sb: Sandbox) -> None:
        """Say once in the log when sandboxes share /tmp (no mount namespace here): a function that
        writes a fixed /tmp name then collides with its own concurrent calls."""
        tmp = getattr(sb, "tmp", "private")
        if tmp != "private" and not self.tmp_shared:
            self.tmp_shared = tmp.removeprefix("shared: ")
            log.warning(
                "%s sandboxes share the host's /tmp (%s): a function writing fixed /tmp names collides with its concurrent "
                "calls; run localwhisk as root for a /tmp per sandbox",
                sb.kind,
                self.tmp_shared,
            )

    async def _resumed(self, sb: Sandbox) -> bool:
        """Resume a paused sandbox (thaw, or docker unpause: inside waitTime, as OpenWhisk's); False
        when it cannot take the call: the resume failed, or a pause that failed is removing it."""
        try:
            resumed = sb.resume()
            if resumed is not None:
                await resumed
        except OSError as error:
            sb.note_death(f"its resume failed ({error})")
            return False
        return not sb.dead and sb.state != SandboxState.REMOVING

    async def _init(self, sb: Sandbox, job: Job, out: Outcome, timeout_s: float) -> None:
        action = job.action
        out.init_start_ns = out.wait_end_ns = time.monotonic_ns()
        deadline_ms = time.time_ns() // 1_000_000 + action.timeout_ms
        env = dict(action.init_env)
        env.update(
            {
                "__OW_NAMESPACE": action.namespace,
                "__OW_ACTION_NAME": "/" + action.path,
                "__OW_ACTION_VERSION": action.version,
                "__OW_ACTIVATION_ID": job.activation_id,
                "__OW_TRANSACTION_ID": job.transaction_id,
                "__OW_DEADLINE": str(deadline_ms),
            }
        )
        init: dict[str, object] = {
            "main": action.main or "main",
            "env": env,
            "code": None,
            "dir": None,
            "name": action.name,
        }
        try:
            if action.binary and getattr(sb, "takes_archives", False):
                # The container's proxy unpacks it: hold it to the caps first (an action stored
                # before them, or under larger ones, is checked here too).
                await self.loop.run_in_executor(
                    None,
                    check_code_archive,
                    action.code,
                    self.settings.max_unpacked_code_bytes,
                    self.settings.max_archive_entries,
                )
                init["code"], init["binary"] = action.code, True
            elif action.binary:
                directory = sb.workdir / "action"
                await self.loop.run_in_executor(
                    None,
                    extract_archive,
                    action.code,
                    directory,
                    self.settings.max_unpacked_code_bytes,
                    self.settings.max_archive_entries,
                )
                if sb.uid is not None:
                    await self.loop.run_in_executor(None, own, directory, sb.uid)
                init["dir"] = str(directory)
            else:
                init["code"] = action.code
            reply = await sb.request({"init": init}, timeout_s)
        except (TimeoutError, SandboxDied) as error:
            out.init_end_ns = time.monotonic_ns()
            request_failed(out, sb, error, action.timeout_ms, init=True)
            return
        except (zipfile.BadZipFile, ValueError, OSError) as error:
            out.init_end_ns = time.monotonic_ns()
            developer_error(out, f"The action failed during initialization: {error}")
            return
        out.init_end_ns = time.monotonic_ns()
        out.logs += await sb.collect_logs()
        if "init_error" in reply or "developer_error" in reply:
            message = reply.get("init_error") or reply.get("developer_error")
            developer_error(out, f"The action failed during initialization: {message}")
            return
        sb.initialised_for(job.action.key)

    async def _run(self, sb: Sandbox, job: Job, out: Outcome, timeout_s: float) -> None:
        action = job.action
        out.run_start_ns = time.monotonic_ns()
        if out.wait_end_ns is None:
            out.wait_end_ns = out.run_start_ns
        message = {
            "value": job.params,
            "namespace": action.namespace,
            "action_name": "/" + action.path,
            "action_version": action.version,
            "activation_id": job.activation_id,
            "transaction_id": job.transaction_id,
            "deadline": str(time.time_ns() // 1_000_000 + action.timeout_ms),
        }
        if action.api_key:
            message["api_key"] = action.api_key  # only with a truthy provide-api-key annotation, as OpenWhisk
        sb.limit_logs(action.logs_mb * 1024 * 1024)
        cpu_before_ns = sb.cpu_time_ns()
        try:
            reply = await sb.request(message, timeout_s)
        except (TimeoutError, SandboxDied) as error:
            out.run_end_ns = time.monotonic_ns()
            request_failed(out, sb, error, action.timeout_ms, init=False)
            return
        out.run_end_ns = time.monotonic_ns()
        cpu_after_ns = sb.cpu_time_ns()
        if cpu_before_ns is not None and cpu_after_ns is not None:
            out.run_cpu_ns = max(cpu_after_ns - cpu_before_ns, 0)
        out.logs += await sb.collect_logs()
        if "result" in reply:
            result = reply["result"]
            out.size = max(sb.last_reply_bytes - len('{"result":}'), 0)
            limit = self.settings.max_payload_bytes
            if out.size > limit:
                # OpenWhisk reads the first `limit` bytes of an oversized response and records an
                # application error that quotes them.
                out.status_code = 1
                out.result = {"error": truncated_response_message(result, out.size, limit)}
                return
            out.result = result
            if isinstance(result, dict) and "error" in result:
                out.status_code = 1
                hint = shared_tmp_hint(getattr(sb, "tmp", "private"), result["error"])
                if hint:
                    out.logs.append(format_log_line(time.time_ns(), "stderr", hint))
        else:
            developer_error(out, reply.get("developer_error") or ABNORMAL_RUN)

    def _finish(self, job: Job, out: Outcome, sb: Sandbox | None) -> None:
        self.running.discard(job)
        self.on_complete(job, out)


def _name(sb: Sandbox) -> str:
    return sb.name
