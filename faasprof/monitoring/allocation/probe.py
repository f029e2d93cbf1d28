"""What allocation the host supports, and through which interface: resctrl when mounted, else pqos.

The choice is made once, here; every later step follows ``Capabilities.interface``. Never raises
for the host's sake: a host that cannot allocate gets ``interface`` None and a ``reason`` that
says why and what to do (``faasprof doctor`` prints it; a sweep refuses with it).
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from faasprof.monitoring import host
from faasprof.monitoring.allocation import pqos as pqos_backend
from faasprof.monitoring.allocation import resctrl as resctrl_backend
from faasprof.monitoring.allocation.model import (
    ALLOCATION_FLAGS,
    MOUNT_HINT,
    PQOS_TIMEOUT_S,
    Capabilities,
    HostBasics,
    Runner,
    parse_cpu_list,
    run_subprocess,
)


def discover(
    root: str | os.PathLike = "/",
    interface: str = "auto",
    pqos: str = "pqos",
    timeout_s: float = PQOS_TIMEOUT_S,
    runner: Runner | None = None,
) -> Capabilities:
    """Find out what allocation the host supports. Never raises; see ``.interface``/``.reason``.

    ``root`` is the host's root directory (tests point it at a fake tree: ``proc/cpuinfo``,
    ``proc/mounts``, ``proc/filesystems``, ``sys/devices/system/cpu/online``, ``sys/fs/resctrl``).
    ``interface`` is ``"auto"`` (resctrl if mounted, else pqos), ``"resctrl"`` or ``"pqos"``.
    """
    if interface not in ("auto", "resctrl", "pqos"):
        raise ValueError(f"interface must be auto, resctrl or pqos (got {interface!r})")
    root = Path(root)
    reader = host.Root(root)
    flags = frozenset(host.cpuinfo(reader)["flags"])
    online_text = reader.read("/sys/devices/system/cpu/online")
    try:
        online = parse_cpu_list(online_text) if online_text else tuple(range(os.cpu_count() or 1))
    except ValueError:
        online = ()
    common = HostBasics(root=root, online_cpus=online, flags=flags)

    mount = host.mount_of(reader, "resctrl")
    resctrl_reason = None
    if interface in ("auto", "resctrl"):
        if mount is not None:
            path = reader.path(mount[0])
            caps = resctrl_backend.capabilities(path, mount[1], common)
            if caps.interface or interface == "resctrl":
                return caps
            resctrl_reason = caps.reason
        else:
            filesystems = reader.read("/proc/filesystems") or ""
            if re.search(r"\bresctrl\b", filesystems):
                resctrl_reason = f"resctrl is not mounted; run: {MOUNT_HINT}"
            else:
                resctrl_reason = "the kernel has no resctrl filesystem (needs CONFIG_X86_CPU_RESCTRL)"
            if interface == "resctrl":
                return Capabilities(interface=None, reason=resctrl_reason, **common)

    if not any(f in flags for f in ALLOCATION_FLAGS):
        where = root / "proc" / "cpuinfo"
        reason = (
            f"this host has no Intel RDT allocation ({where} lists none of {', '.join(ALLOCATION_FLAGS)}"
            f"{'; ' + resctrl_reason if resctrl_reason else ''}); run LLC and bandwidth sweeps on an"
            " RDT-capable Xeon"
        )
        return Capabilities(interface=None, reason=reason, **common)
    pqos_path = shutil.which(pqos) if os.sep not in pqos else (pqos if os.access(pqos, os.X_OK) else None)
    if pqos_path is None:
        reason = (
            f"{resctrl_reason or 'resctrl is not usable'}, and pqos was not found; mount resctrl"
            f" ({MOUNT_HINT}) or install intel-cmt-cat"
        )
        return Capabilities(interface=None, reason=reason, **common)
    return pqos_backend.capabilities(pqos_path, runner or run_subprocess, timeout_s, common)
