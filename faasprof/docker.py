"""Whether Docker can run faasprof's containers here: the daemon's socket, and the runtime images.

Standard library only, so that ``faasprof doctor`` (monitoring), localwhisk's docker isolation and
the tests share one answer without importing each other.
"""

from __future__ import annotations

import http.client
import os
import socket

DOCKER_SOCKET = os.environ.get("FAASPROF_DOCKER_SOCKET", "/var/run/docker.sock")
# faasprof's images (setup/runtime-images/); any image speaking OpenWhisk's action protocol can
# replace them (localwhisk setting docker_images, e.g. python=openwhisk/action-python-v3.11:nightly).
DEFAULT_IMAGES = {"python": "faasprof/action-python-v3.11:latest", "nodejs": "faasprof/action-nodejs-v20:latest"}


class _UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout_s: float):
        super().__init__("docker", timeout=timeout_s)
        self.socket_path = path

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.socket_path)


def docker_problem(images: dict[str, str] | None = None, socket_path: str | None = None, timeout_s: float = 5.0) -> str | None:
    """Why isolation docker cannot run here (one line with the fix), or None when it can.

    Synchronous, for ``faasprof doctor`` and for tests that skip with the reason.
    """
    path = socket_path or DOCKER_SOCKET
    images = images or DEFAULT_IMAGES
    if not os.path.exists(path):
        return f"no Docker daemon socket at {path}: install and start Docker (./setup.sh --dev does both)"
    try:
        conn = _UnixHTTPConnection(path, timeout_s)
        conn.request("GET", "/_ping")
        if conn.getresponse().read() != b"OK":
            return f"the Docker daemon at {path} does not answer /_ping; restart dockerd"
        missing = []
        for image in images.values():
            conn.request("GET", f"/images/{image}/json")
            response = conn.getresponse()
            response.read()
            if response.status != 200:
                missing.append(image)
        conn.close()
    except PermissionError:
        return f"no permission on {path}: add this user to group docker or run as root"
    except OSError as error:
        return f"the Docker daemon at {path} is not running ({error}): start dockerd (./setup.sh --dev does)"
    if missing:
        return f"runtime image(s) {', '.join(missing)} missing: build them with setup/runtime-images/build.sh (./setup.sh --dev does)"
    return None


def parse_images(spec: str) -> dict[str, str]:
    """``'python=img:tag,nodejs=img2'`` → {family: image} over the defaults; raises ValueError."""
    images = dict(DEFAULT_IMAGES)
    for part in filter(None, (p.strip() for p in (spec or "").split(","))):
        family, sep, image = part.partition("=")
        if not sep or family.strip() not in DEFAULT_IMAGES or not image.strip():
            raise ValueError(f"docker_images: {part!r} is not FAMILY=IMAGE with FAMILY python or nodejs, e.g. python=openwhisk/action-python-v3.11:nightly")
        images[family.strip()] = image.strip()
    return images
