"""Docker sandboxes: localwhisk's ``isolation: docker``, one real container per sandbox.

A ``DockerSandbox`` has the interface of the process ``Sandbox`` (faasprof/localwhisk/sandbox.py), so the
pool's rules do not change; underneath it does what OpenWhisk's invoker does (faasprof/localwhisk/README.md,
"Docker isolation"):

- ``start``: create the container like ``docker run -d --memory M --memory-swap M --cpu-shares S
  --ulimit nofile=1024:1024 --pids-limit 1024 --cap-drop NET_RAW --cap-drop NET_ADMIN --network
  bridge -e __OW_API_HOST=http://<bridge gateway>:<port>`` (the server also listens there, as the
  controller's address is reachable from OpenWhisk's containers), attach to its stdout/stderr, start it, read its bridge IP;
- ``request``: the action protocol over HTTP to ``<ip>:8080`` (``POST /init`` with code, main,
  binary, env, name; ``POST /run`` with the value and the activation's context). The first /init
  retries the connection until the proxy listens, inside the init time, as OpenWhisk does;
- logs: the attach stream, split per activation at the sentinel lines (both streams);
- ``pause``/``resume``: the Engine API's pause/unpause (the cgroup freezer, through runc), so idle
  containers show as Paused in ``docker ps``; or, with ``docker_pause: freezer``, a direct write
  of the container's freezer cgroup (about 100x faster, but Docker then does not know the
  container is paused); ``kill``: remove with force.

Every container carries labels naming the localwhisk instance and its owner (pid and process start
time). ``DockerHost.open`` removes containers whose owner is gone (a crashed or killed server),
never those of a live localwhisk (other instances share the daemon). All Docker calls go to the
Engine API over its unix socket (aiohttp): pause/unpause take about half the time of the forked
docker CLI here, 14 ms against 32-35 ms (bench/bench_isolation.py measures both).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import secrets
import struct
import time
from pathlib import Path
from typing import Awaitable

import aiohttp

from faasprof.docker import LABEL_OWNER_PID, bridge_gateway, parse_images
from faasprof.localwhisk import fastjson
from faasprof.localwhisk.docker_engine import DockerError, DockerUnavailable, Engine
from faasprof.localwhisk.sandbox import TIMER_SLACK_S, Sandbox, SandboxDied, not_json_reply
from faasprof.localwhisk.states import SandboxState
from faasprof.procfs import owner_alive, process_start_ticks

LABEL_INSTANCE = "faasprof.localwhisk.instance"
LABEL_OWNER_START = "faasprof.localwhisk.owner_start"
LABEL_SANDBOX = "faasprof.localwhisk.sandbox"
SENTINEL = b"XXX_THE_END_OF_A_WHISK_ACTIVATION_XXX"
PROXY_PORT = 8080
CGROUP_ROOT = Path("/sys/fs/cgroup")
# Docker's answer to unpausing a running container: 409 since 23.0, 500 before ("Container X is not paused").
NOT_PAUSED = re.compile(r"is not paused", re.IGNORECASE)

log = logging.getLogger("faasprof.localwhisk.docker")


def owner_start_label(pid: int) -> str:
    """The owner-start label's value: the process's start ticks, "" where /proc cannot tell."""
    ticks = process_start_ticks(pid)
    return "" if ticks is None else str(ticks)


def labelled_owner_alive(pid_text: str | None, start_text: str | None) -> bool:
    """Whether the server named by a container's owner labels (pid, start ticks) still runs."""
    try:
        pid = int(pid_text or "")
    except ValueError:
        return False
    start_ticks = int(start_text) if start_text and start_text.isdigit() else None
    return pid > 0 and owner_alive(pid, start_ticks)


class DockerHost:
    """What one localwhisk instance shares between its docker sandboxes: the API clients and labels."""

    def __init__(self, settings, images: dict[str, str] | None = None):
        self.settings = settings
        self.images = images or parse_images(getattr(settings, "docker_images", ""))
        self.engine = Engine()
        self.http: aiohttp.ClientSession | None = None
        self.owner_pid = str(os.getpid())
        self.owner_start = owner_start_label(os.getpid())
        self.instance = f"{settings.host}:{settings.port}@{Path(settings.data_dir).expanduser()}"
        self.token = secrets.token_hex(3)  # container names stay unique across restarts of the same pid
        self.reaped: list[str] = []
        self.cgroup_parent = "docker"
        self.cgroup_v2 = (CGROUP_ROOT / "cgroup.controllers").exists()
        self.pause_mode = getattr(settings, "docker_pause", "api")
        # Containers cannot reach the server's loopback address: they get the bridge gateway's
        # (the host's side of docker0), where the server listens too (faasprof/localwhisk/__main__.py).
        self.gateway = ""
        self.container_apihost: str | None = None

    async def open(self) -> None:
        """Check the daemon and the images, then reap containers of dead localwhisk servers."""
        try:
            info = await self.engine.call("GET", "/info")
        except (DockerUnavailable, DockerError) as error:
            raise DockerUnavailable(
                f"isolation docker: {error}; start dockerd (./setup.sh --with docker does) or use isolation auto"
            ) from None
        if info.get("CgroupDriver") == "systemd":
            self.cgroup_parent = "system.slice"
        for family, image in sorted(self.images.items()):
            try:
                await self.engine.call("GET", f"/images/{image}/json")
            except DockerError:
                raise DockerUnavailable(
                    f"isolation docker: image {image} ({family} actions) is missing; build it with setup/runtime-images/build.sh (./setup.sh --with docker does) or pull it"
                ) from None
        self.http = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=0, force_close=False, enable_cleanup_closed=True),
            timeout=aiohttp.ClientTimeout(total=None),
        )
        self.reaped = await self.reap()
        self.gateway = await self.bridge_gateway()

    async def bridge_gateway(self) -> str:
        """The host's address on the default bridge network, where containers reach the API.

        Loopback is never a fallback: inside a container it is the container's own."""
        try:
            network = await self.engine.call("GET", "/networks/bridge")
        except DockerError as error:
            raise DockerUnavailable(
                f"isolation docker: cannot inspect Docker's bridge network ({error}); containers need it to reach the API: restart dockerd"
            ) from None
        gateway, how = bridge_gateway(network or {})
        if gateway is None:
            raise DockerUnavailable(
                f"isolation docker: {how}, so containers cannot reach the API; recreate the bridge (restart dockerd) or use isolation process"
            )
        return gateway

    async def reap(self) -> list[str]:
        """Remove localwhisk containers whose owning server is dead; return their names."""
        listing = await self.engine.call(
            "GET", "/containers/json", params={"all": "1", "filters": json.dumps({"label": [LABEL_OWNER_PID]})}
        )
        stale = [
            c
            for c in listing or []
            if not labelled_owner_alive(c["Labels"].get(LABEL_OWNER_PID), c["Labels"].get(LABEL_OWNER_START))
        ]
        await asyncio.gather(*(self.remove(c["Id"]) for c in stale), return_exceptions=True)
        return sorted(name.lstrip("/") for c in stale for name in c.get("Names", [])[:1])

    async def remove(self, container_id: str) -> None:
        await self.engine.call(
            "DELETE", f"/containers/{container_id}", params={"force": "1", "v": "1"}, ok=(200, 204, 404, 409)
        )

    async def close(self) -> None:
        if self.http is not None:
            await self.http.close()
            self.http = None
        await self.engine.close()

    def image_for(self, kind: str) -> str:
        family = kind.split(":", 1)[0]
        if family not in self.images:
            raise DockerUnavailable(
                f"isolation docker has no image for kind {kind!r}; known: {', '.join(sorted(self.images))}"
            )
        return self.images[family]

    def container_config(self, name: str, kind: str, memory_mb: int, apihost: str) -> dict:
        s = self.settings
        host_config = {
            "Memory": memory_mb * 1024 * 1024,
            "MemorySwap": memory_mb * 1024 * 1024,  # swap equal to memory: no swap, as OpenWhisk
            "Ulimits": [{"Name": "nofile", "Soft": 1024, "Hard": 1024}],
            "PidsLimit": 1024,
            "CapDrop": ["NET_RAW", "NET_ADMIN"],
            "NetworkMode": "bridge",
            "LogConfig": {"Type": "json-file", "Config": {}},
        }
        if getattr(s, "cpu_policy", "shares") == "quota":
            user_cpus = s.user_cpus or float(os.cpu_count() or 1)
            host_config["NanoCpus"] = int(max(user_cpus * memory_mb / s.user_memory_mb, 0.01) * 1e9)
        else:
            # OpenWhisk's ContainerFactory.cpuShare: 1024 / (userMemory / actionMemory), at least 2.
            host_config["CpuShares"] = max(1024 // max(s.user_memory_mb // memory_mb, 1), 2)
        return {
            "Image": self.image_for(kind),
            "Env": [f"__OW_API_HOST={apihost}"],
            "Labels": {
                LABEL_INSTANCE: self.instance,
                LABEL_OWNER_PID: self.owner_pid,
                LABEL_OWNER_START: self.owner_start,
                LABEL_SANDBOX: name,
            },
            "ExposedPorts": {f"{PROXY_PORT}/tcp": {}},
            "HostConfig": host_config,
        }

    def cgroup_parents(self) -> dict[str, str]:
        """Where Docker puts its containers' cgroups (each container's is a child named by its id):
        for the cgroup collector, which samples every child, as it does for OpenWhisk's invoker."""
        parents = {}
        if (CGROUP_ROOT / "cgroup.controllers").exists():  # v2: one unified hierarchy
            path = CGROUP_ROOT / ("system.slice" if self.cgroup_parent == "system.slice" else "docker")
            return {"unified": str(path)} if path.is_dir() else {}
        for controller in ("cpu", "cpuacct", "memory", "freezer", "blkio"):
            path = CGROUP_ROOT / controller / self.cgroup_parent
            if path.is_dir():
                parents[controller] = str(path)
        return parents

    def cgroup_dir(self, controller: str, container_id: str) -> Path:
        if (CGROUP_ROOT / "cgroup.controllers").exists():
            controller = ""
        if self.cgroup_parent == "system.slice":
            return CGROUP_ROOT / controller / "system.slice" / f"docker-{container_id}.scope"
        return CGROUP_ROOT / controller / "docker" / container_id


class DockerSandbox(Sandbox):
    """One container. States as the process sandbox: starting, prewarm, busy, idle, paused, removing, dead."""

    takes_archives = True  # /init gets the base64 zip itself (the proxy unpacks it in the container)

    def __init__(
        self, name, kind, memory_mb, cgroups, workroot, apihost, on_exit, interpreters=None, *, host: DockerHost
    ):
        super().__init__(name, kind, memory_mb, cgroups, workroot, apihost, on_exit, interpreters)
        self.tmp = "private"  # a container's /tmp is its own, as in OpenWhisk
        self.host = host
        self.container_id: str | None = None
        self.container_name = f"faasprof-lw{host.owner_pid}-{host.token}-{name}"
        self.ip: str | None = None
        self._attach: aiohttp.ClientResponse | None = None
        self._pump: asyncio.Task | None = None
        self._ops = asyncio.Lock()  # pause, unpause and remove reach the daemon in the order asked
        self._resumed: asyncio.Task | None = None
        self._removal: asyncio.Task | None = None
        self._proxy_up = False
        self._frozen = False  # frozen by a direct freezer write (docker_pause: freezer)

    def cpu_time_ns(self) -> int | None:
        # The container's cgroup belongs to dockerd (its path depends on the cgroup driver): not read here.
        return None

    # -- lifecycle ---------------------------------------------------------------------------

    async def start(self, timeout_s: float = 30.0) -> None:
        """Create, attach, start; the proxy's readiness is checked by the first /init (as OpenWhisk)."""
        config = self.host.container_config(
            self.container_name, self.kind, self.memory_mb, self.host.container_apihost or self.apihost
        )
        try:
            info = await asyncio.wait_for(self._create_and_start(config), timeout_s)
        except (TimeoutError, asyncio.TimeoutError, DockerError, DockerUnavailable, KeyError) as error:
            await self._discard()
            if isinstance(error, (TimeoutError, asyncio.TimeoutError)):
                raise TimeoutError from None  # asyncio's own class before Python 3.11
            raise SandboxDied(f"container {self.container_name} did not start: {error}") from None
        except asyncio.CancelledError:
            await asyncio.shield(self._discard())
            raise
        state = info.get("State", {})
        self.pid = state.get("Pid") or None
        self.ip = (info.get("NetworkSettings") or {}).get("IPAddress") or None
        if not state.get("Running") or not self.ip:
            await self._discard()
            raise SandboxDied(
                f"container {self.container_name} is not running with a bridge IP (state {state.get('Status')})"
            )
        self._logs.clear()

    async def _create_and_start(self, config: dict) -> dict:
        engine = self.host.engine
        created = await engine.call("POST", "/containers/create", body=config, params={"name": self.container_name})
        self.container_id = created["Id"]
        self._attach = await engine.attach(self.container_id)
        self._pump = self._loop.create_task(self._pump_logs(self._attach))
        await engine.call("POST", f"/containers/{self.container_id}/start")
        return await engine.call("GET", f"/containers/{self.container_id}/json")

    async def _discard(self) -> None:
        """A container that failed to start: remove it and forget it (the pool releases the sandbox)."""
        self._dead = True
        self.state = SandboxState.DEAD
        if self._pump is not None:
            self._pump.cancel()
        if self._attach is not None:
            self._attach.close()
        if self.container_id:
            try:
                if self.container_id is not None:
                    await self.host.remove(self.container_id)
            except (DockerError, DockerUnavailable):
                pass
        self.pid = None

    def kill(self) -> None:
        """Destroy the sandbox (docker rm -f); the end of the attach stream reports its death."""
        if self._dead or self.container_id is None or self._removal is not None:
            return
        self.state = SandboxState.REMOVING
        if self.timer:
            self.timer.cancel()
            self.timer = None
        self._removal = self._loop.create_task(self._remove())

    async def _remove(self) -> None:
        async with self._ops:
            if self._frozen:  # a frozen task cannot die: thaw before Docker's SIGKILL
                try:
                    self._freeze(False)
                except OSError:
                    pass
            try:
                if self.container_id is not None:
                    await self.host.remove(self.container_id)
            except (DockerError, DockerUnavailable):
                pass
        # Normally the attach stream has ended by now; make sure the pool hears of the exit.
        if self._pump is not None:
            try:
                await asyncio.wait_for(asyncio.shield(self._pump), 2.0)
            except (TimeoutError, asyncio.TimeoutError, asyncio.CancelledError):
                pass
        self._died()

    def pause(self) -> None:
        """Docker pause (runc → cgroup freezer) in the background; a failed pause destroys it.

        With ``docker_pause: freezer`` the container's freezer cgroup is written directly (raises
        OSError on failure, which makes the pool remove the sandbox)."""
        if self.host.pause_mode == "freezer":
            self._freeze(True)
            return
        self._loop.create_task(self._pause())

    async def _pause(self) -> None:
        async with self._ops:
            if self._dead or self.state not in (SandboxState.PAUSED, SandboxState.IDLE):
                return
            try:
                await self.host.engine.call("POST", f"/containers/{self.container_id}/pause")
            except (DockerError, DockerUnavailable) as error:
                # OpenWhisk destroys a container it cannot pause; a call waiting on it goes to a new one.
                self.death_reason = (
                    f"docker pause failed ({error}); removed, as OpenWhisk removes a container it cannot pause"
                )
                log.warning("sandbox %s (%s): %s", self.name, self.container_name, self.death_reason)
                self.kill()

    def resume(self) -> Awaitable[None] | None:
        """Docker unpause; the pool awaits the returned task (and the next request does too)."""
        if self.host.pause_mode == "freezer":
            self._freeze(False)
            return None
        self._resumed = self._loop.create_task(self._resume())
        return self._resumed

    async def _resume(self) -> None:
        async with self._ops:
            if self._dead:
                return
            try:
                await self.host.engine.call("POST", f"/containers/{self.container_id}/unpause", ok=(200, 204, 409))
            except DockerError as error:
                if NOT_PAUSED.search(str(error)):
                    return  # Docker 20.10 answers 500, later ones 409: the container runs, which is what was asked
                self.death_reason = f"docker unpause failed ({error})"
                log.warning("sandbox %s (%s): %s", self.name, self.container_name, self.death_reason)
                raise
            except DockerUnavailable as error:
                self.death_reason = f"docker unpause failed ({error})"
                raise DockerError(0, str(error)) from None

    def _freeze(self, frozen: bool) -> None:
        """Write the container's freezer (v1 freezer.state, v2 cgroup.freeze) and wait until it holds."""
        if self._dead or self.container_id is None:
            return
        if self.host.cgroup_v2:
            directory = self.host.cgroup_dir("", self.container_id)
            (directory / "cgroup.freeze").write_text("1" if frozen else "0")
            want, probe = ("frozen 1" if frozen else "frozen 0"), directory / "cgroup.events"
        else:
            probe = self.host.cgroup_dir("freezer", self.container_id) / "freezer.state"
            want = "FROZEN" if frozen else "THAWED"
            probe.write_text(want)
        deadline = time.monotonic() + 1.0
        while want not in probe.read_text():
            if time.monotonic() > deadline:
                raise OSError(f"{probe}: not {want} after 1 s")
        self._frozen = frozen

    # -- requests ----------------------------------------------------------------------------

    async def request(self, message: dict, timeout_s: float) -> dict:
        """One init or run, translated to the action protocol; raises TimeoutError or SandboxDied."""
        self._begin_request()
        deadline = time.monotonic() + timeout_s
        if self._resumed is not None:
            resumed, self._resumed = self._resumed, None
            try:
                await resumed
            except DockerError as error:
                self.kill()
                raise SandboxDied(f"unpause failed: {error}") from None
        if "init" in message:
            path, body = "/init", {"value": self._init_value(message["init"])}
        else:
            path, body = "/run", message
        data = fastjson.dumps(body)
        status, raw = await self._post(path, data, deadline)
        if path == "/init":
            self._proxy_up = True
            if status == 200:
                return {"ok": True}
            return {"init_error": _error_of(raw) or f"the action proxy answered {status}"}
        self.last_reply_bytes = len(raw) + len('{"result":}')
        if status == 200:
            try:
                result = fastjson.loads(raw)
            except ValueError:
                return not_json_reply(raw)
            if not isinstance(result, (dict, list)):
                return {"developer_error": "The action did not return a dictionary or array."}
            return {"result": result}
        return {"developer_error": _error_of(raw) or f"The action proxy answered {status}."}

    def _init_value(self, init: dict) -> dict:
        value = {"name": init.get("name") or "", "main": init.get("main") or "main", "env": init.get("env") or {}}
        value["code"] = init.get("code") or ""
        value["binary"] = bool(init.get("binary"))
        return value

    async def _post(self, path: str, data: bytes, deadline: float) -> tuple[int, bytes]:
        url = f"http://{self.ip}:{PROXY_PORT}{path}"
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            try:
                return await asyncio.wait_for(self._post_once(url, data), remaining + TIMER_SLACK_S)
            except asyncio.TimeoutError:
                raise TimeoutError from None  # asyncio's own class before Python 3.11
            except aiohttp.ClientConnectorError:
                # Until the proxy listens (first /init only), retry as OpenWhisk's invoker does.
                if self._proxy_up or self._dead:
                    await self._await_death()
                await asyncio.sleep(0.002)
            except (aiohttp.ClientError, ConnectionError):
                await self._await_death()

    async def _post_once(self, url: str, data: bytes) -> tuple[int, bytes]:
        if self.host.http is None:
            raise ConnectionError("the Docker host is closed")
        async with self.host.http.post(url, data=data, headers={"Content-Type": "application/json"}) as response:
            return response.status, await response.read()

    async def _await_death(self) -> None:
        """The proxy dropped the connection: wait for the container's exit, then report it dead."""
        if self._pump is not None and not self._dead:
            try:
                await asyncio.wait_for(asyncio.shield(self._pump), 5.0)
            except (TimeoutError, asyncio.TimeoutError, asyncio.CancelledError):
                pass
        if not self._dead:
            self.kill()
        raise SandboxDied(f"container {self.container_name} exited (status {self.exit_status})")

    # -- the attach stream ------------------------------------------------------------------------

    async def _pump_logs(self, response: aiohttp.ClientResponse) -> None:
        """Demultiplex Docker's raw stream (8-byte headers: stream id, 3 zero bytes, big-endian size)."""
        buffers = {1: b"", 2: b""}
        try:
            while True:
                header = await response.content.readexactly(8)
                stream_id, size = header[0], struct.unpack(">I", header[4:])[0]
                payload = await response.content.readexactly(size)
                if stream_id not in buffers:
                    continue
                self._feed(stream_id, buffers, payload)
        except (asyncio.IncompleteReadError, aiohttp.ClientError, ConnectionError):
            pass
        finally:
            response.close()
        if not self._dead:
            await self._exited()

    def _feed(self, stream_id: int, buffers: dict, payload: bytes) -> None:
        stream = "stdout" if stream_id == 1 else "stderr"
        buffers[stream_id] = self._take_log_lines(stream, buffers[stream_id] + payload)

    async def _exited(self) -> None:
        """The container stopped on its own (crash, OOM): learn why, remove it, tell the pool."""
        try:
            info = await self.host.engine.call("GET", f"/containers/{self.container_id}/json", ok=(200,))
            state = info.get("State", {})
            self.exit_status = state.get("ExitCode")
            self.oom = bool(state.get("OOMKilled"))
        except (DockerError, DockerUnavailable):
            pass
        if self._removal is None and self.state is not SandboxState.REMOVING:
            self.state = SandboxState.REMOVING
            try:
                async with self._ops:
                    if self.container_id is not None:
                        await self.host.remove(self.container_id)
            except (DockerError, DockerUnavailable):
                pass
        self._died()

    def _died(self) -> None:
        if self._dead:
            return
        self._dead = True
        for future in (self._waiter, self._logs_waiter):
            if future is not None and not future.done():
                future.set_result(None)
        if self.timer:
            self.timer.cancel()
            self.timer = None
        self.state = SandboxState.DEAD
        self.on_exit(self)

    def memory_usage_bytes(self) -> int | None:
        """The container's memory cgroup's charge (its path is dockerd's); None before it exists."""
        if not self.container_id:
            return None
        try:
            return int((self.host.cgroup_dir("memory", self.container_id) / "memory.usage_in_bytes").read_text())
        except (OSError, ValueError):
            return None

    def describe(self) -> dict:
        return {
            **super().describe(),
            "container": self.container_name,
            "container_id": self.container_id[:12] if self.container_id else None,
            "ip": self.ip,
        }


def _error_of(raw: bytes) -> str:
    try:
        body = json.loads(raw)
    except ValueError:
        return raw[:200].decode("utf-8", "replace")
    if isinstance(body, dict) and "error" in body:
        error = body["error"]
        return error if isinstance(error, str) else json.dumps(error)
    return ""
