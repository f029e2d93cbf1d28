"""Whether Docker can run faasprof's containers here: the daemon's socket, and the runtime images.

Standard library only, so that ``faasprof doctor`` (monitoring), localwhisk's docker isolation and
the tests share one answer without importing each other.
"""

from __future__ import annotations

import fcntl
import http.client
import ipaddress
import json
import os
import socket
import struct
from collections.abc import Callable
from urllib.parse import quote

DOCKER_SOCKET = os.environ.get("FAASPROF_DOCKER_SOCKET", "/var/run/docker.sock")
# faasprof's images (setup/runtime-images/); any image speaking OpenWhisk's action protocol can
# replace them (localwhisk setting docker_images, e.g. python=openwhisk/action-python-v3.11:nightly).
# Every localwhisk container names the server that owns it (faasprof/localwhisk/docker_sandbox.py), so that
# what a dead server left can be found and removed.
LABEL_OWNER_PID = "faasprof.localwhisk.owner_pid"
DEFAULT_IMAGES = {"python": "faasprof/action-python-v3.11:latest", "nodejs": "faasprof/action-nodejs-v20:latest"}


class _UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout_s: float):
        super().__init__("docker", timeout=timeout_s)
        self.socket_path = path

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.socket_path)


def docker_problem(
    images: dict[str, str] | None = None, socket_path: str | None = None, timeout_s: float = 5.0
) -> str | None:
    """Why isolation docker cannot run here (one line with the fix), or None when it can.

    Synchronous, for ``faasprof doctor`` and for tests that skip with the reason.
    """
    path = socket_path or DOCKER_SOCKET
    images = images or DEFAULT_IMAGES
    if not os.path.exists(path):
        return f"no Docker daemon socket at {path}: install and start Docker (./setup.sh --with docker does both)"
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
        return f"the Docker daemon at {path} is not running ({error}): start dockerd (./setup.sh --with docker does)"
    if missing:
        return f"runtime image(s) {', '.join(missing)} missing: build them with setup/runtime-images/build.sh (./setup.sh --with docker does)"
    return None


def remove_labelled_containers(
    label: str, value: str, socket_path: str | None = None, timeout_s: float = 30.0
) -> list[str]:
    """Remove (with force) every container whose ``label`` is ``value``; their ids. Nothing when
    there is no daemon to ask: there can be no such container then."""
    path = socket_path or DOCKER_SOCKET
    if not os.path.exists(path):
        return []
    conn = _UnixHTTPConnection(path, timeout_s)
    try:
        filters = quote(json.dumps({"label": [f"{label}={value}"]}))
        conn.request("GET", f"/containers/json?all=1&filters={filters}")
        response = conn.getresponse()
        listing = json.loads(response.read() or b"[]") if response.status == 200 else []
        removed = []
        for container in listing:
            conn.request("DELETE", f"/containers/{container['Id']}?force=1&v=1")
            answer = conn.getresponse()
            answer.read()
            if answer.status in (204, 404):
                removed.append(container["Id"])
        return removed
    except (OSError, ValueError):
        return []
    finally:
        conn.close()


def parse_images(spec: str) -> dict[str, str]:
    """``'python=img:tag,nodejs=img2'`` → {family: image} over the defaults; raises ValueError."""
    images = dict(DEFAULT_IMAGES)
    for part in filter(None, (p.strip() for p in (spec or "").split(","))):
        family, sep, image = part.partition("=")
        if not sep or family.strip() not in DEFAULT_IMAGES or not image.strip():
            raise ValueError(
                f"docker_images: {part!r} is not FAMILY=IMAGE with FAMILY python or nodejs, e.g. python=openwhisk/action-python-v3.11:nightly"
            )
        images[family.strip()] = image.strip()
    return images


# ioctl(2) request that reads an interface's IPv4 address (linux/sockios.h).
_SIOCGIFADDR = 0x8915


def interface_ipv4(name: str) -> str | None:
    """The IPv4 address of network interface ``name`` (``docker0``), or None when it has none."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        try:
            answer = fcntl.ioctl(sock.fileno(), _SIOCGIFADDR, struct.pack("256s", name.encode()[:15]))
        except OSError:
            return None
    return socket.inet_ntoa(answer[20:24])


def bridge_gateway(network: dict, address_of: Callable[[str], str | None] = interface_ipv4) -> tuple[str | None, str]:
    """The host's IPv4 address on a Docker bridge network (``GET /networks/bridge``), and how it
    was found; (None, why) when nothing names one.

    Docker's IPAM config names the gateway on most installs, but not always (Debian's docker.io
    20.10 gives only the subnet), so the bridge interface's own address comes next and the
    subnet's first host, where Docker puts the gateway by default, last.
    """
    subnets = []
    for entry in (network.get("IPAM") or {}).get("Config") or []:
        gateway = entry.get("Gateway")
        if gateway and ":" not in gateway:
            return gateway, "the network's IPAM gateway"
        try:
            subnet = ipaddress.ip_network(entry.get("Subnet") or "", strict=False)
        except ValueError:
            continue
        if subnet.version == 4:
            subnets.append(subnet)
    interface = (network.get("Options") or {}).get("com.docker.network.bridge.name")
    if interface:
        address = address_of(interface)
        if address and (not subnets or any(ipaddress.ip_address(address) in s for s in subnets)):
            return address, f"the address of interface {interface}"
    for subnet in subnets:
        if subnet.num_addresses > 2:
            return str(subnet.network_address + 1), f"the first host of subnet {subnet}"
    return None, "the bridge network names no IPv4 gateway, interface address or subnet"
