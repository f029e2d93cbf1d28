"""The Docker Engine API over its unix socket, as localwhisk's docker sandboxes use it: JSON calls
and a container's attached output stream, with the two ways they fail (the daemon cannot be used;
the daemon refused a call)."""

from __future__ import annotations

import json

import aiohttp

from faasprof.docker import DOCKER_SOCKET


class DockerUnavailable(RuntimeError):
    """The Docker daemon cannot be used (not installed, not running, no permission, images missing)."""


class Engine:
    """The Docker Engine API over the unix socket (unversioned paths: the daemon's own version)."""

    def __init__(self, socket_path: str = DOCKER_SOCKET):
        self.socket_path = socket_path
        self.session: aiohttp.ClientSession | None = None

    def _session(self) -> aiohttp.ClientSession:
        if self.session is None:
            connector = aiohttp.UnixConnector(path=self.socket_path, limit=0)
            self.session = aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=60))
        return self.session

    async def call(self, method: str, path: str, body=None, params=None, ok=(200, 201, 204, 304)):
        try:
            async with self._session().request(method, "http://docker" + path, json=body, params=params) as response:
                data = await response.read()
                if response.status not in ok:
                    try:
                        message = json.loads(data).get("message", "")
                    except (ValueError, AttributeError):
                        message = data[:200].decode("utf-8", "replace")
                    raise DockerError(response.status, f"{method} {path}: {response.status} {message}")
                return json.loads(data) if data and response.content_type == "application/json" else None
        except aiohttp.ClientError as error:
            raise DockerUnavailable(f"Docker daemon at {self.socket_path}: {error}") from None

    async def attach(self, container_id: str) -> aiohttp.ClientResponse:
        """The container's raw multiplexed stdout/stderr stream (opened before start: nothing is lost)."""
        response = await self._session().post(
            f"http://docker/containers/{container_id}/attach",
            params={"stream": "1", "stdout": "1", "stderr": "1"},
            timeout=aiohttp.ClientTimeout(total=None, sock_read=None),
        )
        if response.status != 200:
            response.release()
            raise DockerError(response.status, f"attach {container_id[:12]}: {response.status}")
        return response

    async def close(self) -> None:
        if self.session is not None:
            await self.session.close()
            self.session = None


class DockerError(OSError):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
