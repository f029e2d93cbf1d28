"""Cache (CAT) and memory-bandwidth (MBA) allocation for sweeps, through resctrl or pqos.

A sweep point such as "4 LLC ways and 50 % memory bandwidth for the CPUs that run the functions"
becomes one Intel RDT class of service (CLOS). This module finds out what the host can do,
checks the requested settings against it before anything runs, applies them, reads back what the
hardware really took (that is what goes into the manifest), and always puts the previous
allocation back.

Use::

    caps = discover(root="/")                      # never raises; caps.describe() for doctor
    plans = check_sweep_values(caps, llc_ways=[11, 4, 1], mba_percent=[100, 35])   # up front
    with Allocation(caps, plan_allocation(caps, llc_ways=4, control_plane_cpus=[0, 1])) as alloc:
        manifest.allocation = alloc.applied        # read back from the group's schemata / pqos -s
        ...                                        # run the point
    # at the start of every sweep, after a crash of an earlier one:
    for line in cleanup_leftovers(root="/"):
        print(line, file=sys.stderr)

Interfaces. resctrl (``/sys/fs/resctrl``, kernel ``Documentation/arch/x86/resctrl.rst``) is used
when it is mounted; otherwise ``pqos`` (intel-cmt-cat) with ``-e``/``-a``. The choice is made once,
in ``discover``. An allocation is tied to CPUs (resctrl ``cpus_list``, pqos ``-a core:``): a task of
the default group running on such a CPU uses that CPU's group (resctrl allocation rule 2), so the
sweep must keep the functions on those CPUs and may leave the platform's control-plane CPUs
(``control_plane_cpus``) out of the group.

Validation follows the kernel's own checks (``cbm_validate``/``bw_validate``) so that a sweep
fails before its first point rather than in the middle: a mask must be non-zero, fit in
``info/L3/cbm_mask``, be one contiguous block of ones (unless ``sparse_masks`` is 1) and have at
least ``min_cbm_bits`` bits. A bandwidth percentage must lie in ``[min_bandwidth, 100]`` and is
rounded UP to the next control step ``min_bandwidth + N * bandwidth_gran`` (the resctrl
documentation's rule); both the requested and the applied value are reported.

Order of operations, resctrl (and why):

1. Validate everything (``plan_allocation``) before touching the host: a refused write in the
   middle of a sweep would leave a half-configured group behind.
2. Take ``flock`` on the resctrl mount (the kernel documentation's advice for cooperating tools).
3. Note which group owns each CPU we are about to take, and write the state file BEFORE the
   ``mkdir``: a crash right after the ``mkdir`` would otherwise leave a group that uses a CLOSID
   and that nobody knows belongs to us.
4. ``mkdir`` the group (``faasprof-<pid>``), then write its ``schemata`` (``L3:``/``MB:`` lines for
   every cache id, in one write, which the kernel applies all or nothing), and only then its
   ``cpus_list``. Schemata first because a new group starts with the kernel's default masks; if the
   CPUs joined first, the functions would run for a moment with the wrong allocation.
5. Read the group's ``schemata`` and ``cpus_list`` back; that, not the request, is returned.

Restore is the reverse: give CPUs taken from another group back to it, ``rmdir`` our group (its
remaining CPUs and tasks return to the default group) and delete the state file LAST, so a crash
during the restore is finished by the next ``cleanup_leftovers``. A Ctrl-C that arrives while an
allocation is being applied or restored is held back until that step is complete, then raised.

Order of operations, pqos: ``pqos -s`` first and save the masks of the class we will use and the
current class of every core we will move (pqos has no groups to delete, so restoring means writing
those values back); pick the highest class no core uses; write the state file; ``pqos -e`` the
masks (before ``-a``, same reason as above); ``pqos -a core:<cos>=<cpus>``; ``pqos -s`` to read
back. Restore: ``pqos -a`` the cores back to their old classes, then ``pqos -e`` the old masks
(or ``pqos -R`` with ``pqos_reset=True``, which resets every class on the host).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import re
import shutil
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

from faasprof.errors import ConfigError, NotReadyError, RunError
from faasprof.procfs import process_start_ticks
from monitoring import host

# State file format versions:
#   1: first version.
STATE_FORMAT_VERSION = 1

GROUP_PREFIX = "faasprof-"
PQOS_TIMEOUT_S = 20.0
RESCTRL_MOUNTPOINT = "/sys/fs/resctrl"
MOUNT_HINT = "mount -t resctrl resctrl /sys/fs/resctrl"
# "llc" is the type name older scripts use for -a; pqos(8) calls it deprecated in favour of "core".
PQOS_ASSOC_TYPE = "core"
# CPU flags that announce allocation (kernel resctrl.rst); without any of them pqos is not even run,
# because on a non-Intel CPU it can abort (research notes §2.7: rc 134 on an AMD EPYC guest).
ALLOCATION_FLAGS = ("rdt_a", "cat_l3", "mba")
# Entries of the resctrl root that are not resource groups.
_NOT_GROUPS = {"info", "mon_groups", "mon_data"}


# --------------------------------------------------------------------------------------------
# Small pure helpers


def parse_cpu_list(text: str) -> tuple[int, ...]:
    """``"0-3,8"`` → ``(0, 1, 2, 3, 8)``, sorted and without repeats; an empty string gives ``()``.
    Raises ValueError (a reversed range, a part that is not a number)."""
    return tuple(sorted(set(host.parse_cpu_list(text, strict=True))))


def format_cpu_list(cpus: Iterable[int]) -> str:
    """``[0, 1, 2, 3, 8]`` → ``"0-3,8"`` (the kernel's ``cpus_list`` format)."""
    ordered = sorted(set(cpus))
    parts: list[str] = []
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        parts.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(parts)


def parse_schemata(text: str) -> dict[str, dict[int, str]]:
    """Parse a resctrl ``schemata`` file: ``{"L3": {0: "7ff", 1: "7ff"}, "MB": {0: "50"}}``.

    Tolerates the kernel's padding: resource names right-aligned (``"   MB:"``), zero-padded masks
    (``"00f"``) and space-padded bandwidth values (``"0= 50"``).
    """
    result: dict[str, dict[int, str]] = {}
    for line in text.splitlines():
        if ":" not in line:
            continue
        name, rest = line.split(":", 1)
        values = {int(i): v for i, v in re.findall(r"(\d+)\s*=\s*([0-9a-fA-F]+)", rest)}
        result[name.strip()] = values
    return result


def mask_is_contiguous(mask: int) -> bool:
    """True for one block of ones (0x3, 0x6, 0xc); False for 0 and for 0x5, 0x9, 0xa."""
    if mask <= 0:
        return False
    shifted = mask >> ((mask & -mask).bit_length() - 1)
    return shifted & (shifted + 1) == 0


# --------------------------------------------------------------------------------------------
# Capabilities


@dataclass(frozen=True)
class CacheCaps:
    """L3 cache allocation as the host reports it."""

    cbm_mask: int
    min_cbm_bits: int
    num_closids: int
    shareable_bits: int
    cache_ids: tuple[int, ...]
    sparse_masks: bool = False
    cdp: bool = False
    notes: tuple[str, ...] = ()

    @property
    def num_ways(self) -> int:
        return bin(self.cbm_mask).count("1")

    def describe(self) -> dict[str, Any]:
        return {
            "ways": self.num_ways,
            "cbm_mask": f"0x{self.cbm_mask:x}",
            "min_cbm_bits": self.min_cbm_bits,
            "num_closids": self.num_closids,
            "shareable_bits": f"0x{self.shareable_bits:x}",
            "cache_ids": list(self.cache_ids),
            "sparse_masks": self.sparse_masks,
            "cdp": self.cdp,
            "notes": list(self.notes),
        }


@dataclass(frozen=True)
class BandwidthCaps:
    """Memory bandwidth allocation (percent of the full bandwidth) as the host reports it."""

    min_percent: int
    granularity_percent: int
    num_closids: int
    cache_ids: tuple[int, ...]
    delay_linear: bool | None = None
    thread_throttle_mode: str | None = None
    mbps_mode: bool = False  # resctrl mounted with -o mba_MBps: MB values are MBps, not percent

    def describe(self) -> dict[str, Any]:
        return {
            "min_percent": self.min_percent,
            "granularity_percent": self.granularity_percent,
            "num_closids": self.num_closids,
            "cache_ids": list(self.cache_ids),
            "delay_linear": self.delay_linear,
            "thread_throttle_mode": self.thread_throttle_mode,
            "mbps_mode": self.mbps_mode,
        }


@dataclass(frozen=True)
class Capabilities:
    """What ``discover`` found. ``interface`` is None when allocation is impossible (``reason``)."""

    root: Path
    interface: str | None
    reason: str | None
    l3: CacheCaps | None = None
    mb: BandwidthCaps | None = None
    online_cpus: tuple[int, ...] = ()
    resctrl_path: Path | None = None
    pqos: str | None = None
    flags: frozenset[str] = frozenset()

    @property
    def num_closids(self) -> int | None:
        """Usable classes: the kernel takes the smallest count of all enabled resources."""
        counts = [c.num_closids for c in (self.l3, self.mb) if c is not None]
        return min(counts) if counts else None

    def describe(self) -> dict[str, Any]:
        """A JSON-ready summary for ``faasprof doctor`` and the manifest."""
        return {
            "interface": self.interface,
            "reason": self.reason,
            "num_closids": self.num_closids,
            "l3": self.l3.describe() if self.l3 else None,
            "mb": self.mb.describe() if self.mb else None,
            "resctrl_path": str(self.resctrl_path) if self.resctrl_path else None,
            "pqos": self.pqos,
            "online_cpus": format_cpu_list(self.online_cpus),
            "cpu_flags": sorted(f for f in self.flags if f in ALLOCATION_FLAGS or f.startswith(("cat_", "cdp_"))),
        }


Runner = Callable[[Sequence[str], float], "subprocess.CompletedProcess[str]"]


def _run_subprocess(argv: Sequence[str], timeout_s: float) -> "subprocess.CompletedProcess[str]":
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout_s, check=False)


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
    common = dict(root=root, online_cpus=online, flags=flags)

    mount = host.mount_of(reader, "resctrl")
    resctrl_reason = None
    if interface in ("auto", "resctrl"):
        if mount is not None:
            path = reader.path(mount[0])
            caps = _resctrl_capabilities(path, mount[1], common)
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
    return _pqos_capabilities(pqos_path, runner or _run_subprocess, timeout_s, common)


def _resctrl_capabilities(path: Path, options: tuple[str, ...], common: dict) -> Capabilities:
    resctrl = host.Root(path)  # files of the resctrl mount, read as /info/..., /schemata
    info = path / "info"
    l3 = mb = None
    notes: list[str] = []
    l3_dir = "/info/L3"
    cdp = False
    if not (info / "L3").is_dir() and (info / "L3CODE").is_dir():
        l3_dir, cdp = "/info/L3DATA", True  # mounted with -o cdp: data and code get the same mask
    cache_ids: tuple[int, ...] = ()
    default_schemata = parse_schemata(resctrl.read("/schemata") or "")
    for name in ("L3", "L3DATA", "MB"):
        if name in default_schemata:
            cache_ids = tuple(sorted(default_schemata[name]))
            break
    cbm = resctrl.read_int(f"{l3_dir}/cbm_mask", 16)
    if cbm:
        if "sparse_masks" not in resctrl.listdir(l3_dir):
            notes.append("no info/L3/sparse_masks (older kernel): masks must be contiguous")
        l3 = CacheCaps(
            cbm_mask=cbm,
            min_cbm_bits=resctrl.read_int(f"{l3_dir}/min_cbm_bits") or 1,
            num_closids=resctrl.read_int(f"{l3_dir}/num_closids") or 0,
            shareable_bits=resctrl.read_int(f"{l3_dir}/shareable_bits", 16) or 0,
            cache_ids=tuple(sorted(default_schemata.get("L3DATA" if cdp else "L3", {}))) or cache_ids,
            sparse_masks=resctrl.read_int(f"{l3_dir}/sparse_masks") == 1,
            cdp=cdp,
            notes=tuple(notes),
        )
    min_bw = resctrl.read_int("/info/MB/min_bandwidth")
    if min_bw is not None:
        delay = resctrl.read_int("/info/MB/delay_linear")
        mode = resctrl.read("/info/MB/thread_throttle_mode")
        mb = BandwidthCaps(
            min_percent=min_bw,
            granularity_percent=resctrl.read_int("/info/MB/bandwidth_gran") or 1,
            num_closids=resctrl.read_int("/info/MB/num_closids") or 0,
            cache_ids=tuple(sorted(default_schemata.get("MB", {}))) or cache_ids,
            delay_linear=None if delay is None else delay == 1,
            thread_throttle_mode=mode.strip() if mode else None,
            mbps_mode="mba_MBps" in options,
        )
    if l3 is None and mb is None:
        return Capabilities(
            interface=None,
            reason=f"resctrl at {path} offers no allocation (no info/L3/cbm_mask, no info/MB); the CPU or"
            " the kernel (rdt= boot option) has CAT and MBA disabled",
            resctrl_path=path,
            **common,
        )
    return Capabilities(interface="resctrl", reason=None, l3=l3, mb=mb, resctrl_path=path, **common)


# --------------------------------------------------------------------------------------------
# pqos output parsers (pure; formats from pqos 4.x, research notes §2.5)


def parse_pqos_capabilities(text: str) -> dict[str, Any]:
    """Parse ``pqos -d``: which allocation technologies exist and their class counts."""
    result: dict[str, Any] = {"l3_cat": False, "l3_num_cos": None, "cdp_enabled": None, "mba": False, "mba_num_cos": None}
    section = None
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("L3 CAT"):
            section, result["l3_cat"] = "l3", True
        elif stripped.startswith(("L2 CAT",)):
            section = "l2"
        elif stripped.startswith("Memory Bandwidth Allocation"):
            section, result["mba"] = "mba", True
        elif stripped.startswith("CDP:") and section == "l3":
            result["cdp_enabled"] = "enabled" in stripped
        else:
            match = re.match(r"Num COS:\s*(\d+)", stripped)
            if match and section in ("l3", "mba"):
                result[f"{section}_num_cos"] = int(match.group(1))
    return result


def parse_pqos_show(text: str) -> dict[str, Any]:
    """Parse ``pqos -s [-v]``: class definitions per socket, the class of every core, details.

    Returns ``{"l3": {socket: {cos: mask}}, "mba": {socket: {cos: percent}},
    "cores": {core: {"socket": s, "cos": c}}, "l3_details": {...}, "mba_details": {...}}``.
    """
    l3: dict[int, dict[int, int]] = {}
    mba: dict[int, dict[int, int]] = {}
    cores: dict[int, dict[str, int]] = {}
    l3_details: dict[str, int] = {}
    mba_details: dict[str, Any] = {}
    socket = None
    core_socket = None
    for line in text.splitlines():
        stripped = line.strip()
        match = re.search(r"COS definitions for (?:Socket|L3ID|L3 ID)\s*(\d+)", stripped)
        if match:
            socket, core_socket = int(match.group(1)), None
            continue
        match = re.match(r"Core information for socket\s*(\d+)", stripped, re.I)
        if match:
            core_socket, socket = int(match.group(1)), None
            continue
        match = re.match(r"L3CA COS(\d+)\s*=>\s*(?:MASK|DATA)\s+0x([0-9a-fA-F]+)", stripped)
        if match and socket is not None:
            l3.setdefault(socket, {})[int(match.group(1))] = int(match.group(2), 16)
            continue
        match = re.match(r"MBA COS(\d+)\s*=>\s*(\d+)%", stripped)
        if match and socket is not None:
            mba.setdefault(socket, {})[int(match.group(1))] = int(match.group(2))
            continue
        match = re.match(r"Core (\d+),.*=>\s*COS(\d+)", stripped)
        if match and core_socket is not None:
            cores[int(match.group(1))] = {"socket": core_socket, "cos": int(match.group(2))}
            continue
        if "L3 CAT details" in stripped:
            for key, value in re.findall(r"(CDP support|CDP on|#COS|#ways)=(\d+)", stripped):
                l3_details[key.replace("#", "num_").replace(" ", "_").lower()] = int(value)
            match = re.search(r"bit-mask\s+0x([0-9a-fA-F]+)", stripped)
            if match:
                l3_details["contention_mask"] = int(match.group(1), 16)
        elif "MBA details" in stripped:
            match = re.search(r"#COS=(\d+)", stripped)
            if match:
                mba_details["num_cos"] = int(match.group(1))
            mba_details["linear"] = bool(re.search(r",\s*linear", stripped))
            for key in ("max", "step"):
                match = re.search(rf"\b{key}=(\d+)", stripped)
                if match:
                    mba_details[key] = int(match.group(1))
    return {"l3": l3, "mba": mba, "cores": cores, "l3_details": l3_details, "mba_details": mba_details}


def _pqos_capabilities(pqos_path: str, runner: Runner, timeout_s: float, common: dict) -> Capabilities:
    outputs = {}
    for args in (["-d"], ["-s", "-v"]):
        try:
            proc = runner([pqos_path, *args], timeout_s)
        except subprocess.TimeoutExpired:
            return Capabilities(interface=None, reason=f"pqos {' '.join(args)} did not answer within {timeout_s:g} s", pqos=pqos_path, **common)
        except OSError as exc:
            return Capabilities(interface=None, reason=f"pqos {' '.join(args)} could not run: {exc}", pqos=pqos_path, **common)
        if proc.returncode != 0:
            last = _last_line(proc.stdout + "\n" + proc.stderr)
            return Capabilities(
                interface=None,
                reason=f"pqos {' '.join(args)} failed (rc {proc.returncode}): {last}; run it as root, check `modprobe msr`",
                pqos=pqos_path,
                **common,
            )
        outputs[args[0]] = proc.stdout
    caps_d = parse_pqos_capabilities(outputs["-d"])
    show = parse_pqos_show(outputs["-s"])
    sockets = tuple(sorted(set(show["l3"]) | set(show["mba"]) | {c["socket"] for c in show["cores"].values()}))
    l3 = mb = None
    details = show["l3_details"]
    if caps_d["l3_cat"] and details.get("num_ways"):
        l3 = CacheCaps(
            cbm_mask=(1 << details["num_ways"]) - 1,
            min_cbm_bits=1,
            num_closids=details.get("num_cos") or caps_d["l3_num_cos"] or 0,
            shareable_bits=details.get("contention_mask", 0),
            cache_ids=sockets,
            cdp=bool(details.get("cdp_on")),
            notes=("pqos does not report min_cbm_bits; 1 assumed",),
        )
    mdetails = show["mba_details"]
    if caps_d["mba"] and "max" in mdetails:
        mb = BandwidthCaps(
            min_percent=100 - mdetails["max"],  # pqos prints the maximum throttle, not the minimum bandwidth
            granularity_percent=mdetails.get("step") or 1,
            num_closids=mdetails.get("num_cos") or caps_d["mba_num_cos"] or 0,
            cache_ids=sockets,
            delay_linear=mdetails.get("linear"),
        )
    if l3 is None and mb is None:
        return Capabilities(
            interface=None,
            reason="pqos reports no L3 CAT and no MBA on this host (pqos -d, pqos -s -v)",
            pqos=pqos_path,
            **common,
        )
    return Capabilities(interface="pqos", reason=None, l3=l3, mb=mb, pqos=pqos_path, **common)


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else "(no output)"


# --------------------------------------------------------------------------------------------
# Validation


def require(caps: Capabilities, *, llc: bool = False, mba: bool = False) -> None:
    """Raise NotReadyError unless the host can allocate what is asked (LLC ways, bandwidth)."""
    if caps.interface is None:
        raise NotReadyError(f"llc_ways/mba_percent need Intel RDT allocation: {caps.reason}")
    if llc and caps.l3 is None:
        raise NotReadyError(f"llc_ways: this host has no L3 cache allocation ({caps.interface} reports none)")
    if mba and caps.mb is None:
        raise NotReadyError(
            f"mba_percent: this host has no memory bandwidth allocation ({caps.interface} reports no MB/MBA);"
            " drop mba_percent from the sweep"
        )
    if mba and caps.mb is not None and caps.mb.mbps_mode:
        raise NotReadyError(
            "mba_percent: resctrl is mounted with -o mba_MBps, so MB values are MB/s, not percent;"
            f" remount without it: umount {RESCTRL_MOUNTPOINT} && {MOUNT_HINT}"
        )


def check_mask(mask: int, l3: CacheCaps) -> str | None:
    """The kernel's checks on a capacity bitmask; None if valid, else what is wrong and the fix."""
    ways, full = l3.num_ways, l3.cbm_mask
    if mask == 0:
        return f"0x0 selects no way; give at least {l3.min_cbm_bits} way(s), e.g. 0x{(1 << l3.min_cbm_bits) - 1:x}"
    if mask & ~full:
        return f"0x{mask:x} lies outside this CPU's {ways} ways (cbm_mask 0x{full:x}); use a mask within 0x{full:x}"
    if not l3.sparse_masks and not mask_is_contiguous(mask):
        return f"0x{mask:x} has non-contiguous ways; Intel CAT needs one block of ones, e.g. 0x{(1 << bin(mask).count('1')) - 1:x}"
    if bin(mask).count("1") < l3.min_cbm_bits:
        return f"0x{mask:x} has fewer than min_cbm_bits={l3.min_cbm_bits} ways; use at least {l3.min_cbm_bits}"
    return None


def llc_mask(value: Any, l3: CacheCaps, position: str | int = "low") -> int:
    """Turn an ``llc_ways`` value into a mask, or raise ValueError with the reason and the fix.

    ``value``: a way count (int), ``"all"``/``"full"`` (every way), or a hex mask string with
    ``0x`` (``"0x0f0"``). ``position`` places a count: ``"low"`` (from the lowest way, the
    default: it keeps clear of ``shareable_bits``, which are the high ways on current Xeons),
    ``"high"`` (ending at the highest way) or the index of the lowest way to use.
    """
    ways = l3.num_ways
    lowest = (l3.cbm_mask & -l3.cbm_mask).bit_length() - 1
    if isinstance(value, bool):
        raise ValueError(f"must be a way count (1..{ways}) or a hex mask such as \"0x{l3.cbm_mask:x}\" (got {value})")
    if isinstance(value, int):
        if value < max(1, l3.min_cbm_bits) or value > ways:
            raise ValueError(f"{value} ways is outside 1..{ways} (this CPU has {ways} L3 ways, min_cbm_bits {l3.min_cbm_bits})")
        if position == "low":
            start = lowest
        elif position == "high":
            start = lowest + ways - value
        elif isinstance(position, int) and not isinstance(position, bool) and position >= 0:
            if position + value > ways:
                raise ValueError(f"{value} ways starting at way {position} go past way {ways - 1}; use a position <= {ways - value}")
            start = lowest + position
        else:
            raise ValueError(f"llc_position must be \"low\", \"high\" or a way index (got {position!r})")
        mask = ((1 << value) - 1) << start
    elif isinstance(value, str):
        text = value.strip().lower()
        if text in ("all", "full"):
            return l3.cbm_mask
        if not re.fullmatch(r"0x[0-9a-f]+", text):
            raise ValueError(
                f"{value!r} is neither a way count nor a hex mask; write a count as a number (4) or a mask"
                f" as a string with 0x (\"0x{l3.cbm_mask:x}\")"
            )
        mask = int(text, 16)
    else:
        raise ValueError(f"must be a way count or a hex mask string (got {type(value).__name__})")
    problem = check_mask(mask, l3)
    if problem:
        raise ValueError(problem)
    return mask


def mba_step(value: Any, mb: BandwidthCaps) -> int:
    """Round a bandwidth percentage up to the hardware's next control step; ValueError if invalid.

    Steps are ``min_bandwidth + N * bandwidth_gran`` up to 100 (resctrl.rst: "Intermediate values
    are rounded to the next control step"); values below ``min_bandwidth`` are refused, as the
    kernel does.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        raise ValueError(f"must be a percentage {mb.min_percent}..100 (got {value!r})")
    if value < mb.min_percent or value > 100:
        raise ValueError(
            f"{value:g} % is outside {mb.min_percent}..100 (info/MB/min_bandwidth is {mb.min_percent}); use a value in that range"
        )
    gran = max(1, mb.granularity_percent)
    steps = -(-(value - mb.min_percent) // gran)  # ceiling division, exact for ints and floats
    return int(min(100, mb.min_percent + int(steps) * gran))


@dataclass(frozen=True)
class AllocationPlan:
    """One validated allocation: what to write, for which CPUs, and how requests were rounded."""

    l3_mask: int | None
    mba_percent: int | None
    cpus: tuple[int, ...]
    llc_ways_requested: Any = None
    mba_percent_requested: Any = None
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "llc_ways_requested": self.llc_ways_requested,
            "l3_mask": None if self.l3_mask is None else f"0x{self.l3_mask:x}",
            "llc_ways": None if self.l3_mask is None else bin(self.l3_mask).count("1"),
            "mba_percent_requested": self.mba_percent_requested,
            "mba_percent": self.mba_percent,
            "cpus": format_cpu_list(self.cpus),
            "notes": list(self.notes),
        }


def _cpus_arg(value: Any, name: str) -> tuple[int, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return parse_cpu_list(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return (value,)
    cpus = tuple(value)
    if not all(isinstance(c, int) and not isinstance(c, bool) and c >= 0 for c in cpus):
        raise ValueError(f"{name} must be CPU numbers or a list such as \"2-7\" (got {value!r})")
    return tuple(sorted(set(cpus)))


def plan_allocation(
    caps: Capabilities,
    *,
    llc_ways: Any = None,
    mba_percent: Any = None,
    cpus: Any = None,
    control_plane_cpus: Any = None,
    position: str | int = "low",
    llc_field: str = "llc_ways",
    mba_field: str = "mba_percent",
) -> AllocationPlan:
    """Validate one allocation against ``caps``; raise ConfigError (every problem) or NotReadyError.

    ``cpus``: the CPUs that run the functions (list, or a ``"2-7"`` string); default every online
    CPU. ``control_plane_cpus`` are then left out (the platform's own controller, the invoker, the
    collectors), so they keep the default group's full allocation. ``llc_field``/``mba_field`` name
    the settings in messages (``"sweep.llc_ways[2]"``).
    """
    if llc_ways is None and mba_percent is None:
        raise ConfigError(f"{llc_field}/{mba_field}: give at least one of them to allocate")
    require(caps, llc=llc_ways is not None, mba=mba_percent is not None)
    problems: list[str] = []
    notes: list[str] = []
    mask = percent = None
    if llc_ways is not None:
        assert caps.l3 is not None
        try:
            mask = llc_mask(llc_ways, caps.l3, position)
        except ValueError as exc:
            problems.append(f"{llc_field}: {exc}")
        else:
            if mask & caps.l3.shareable_bits:
                notes.append(
                    f"mask 0x{mask:x} overlaps shareable_bits 0x{caps.l3.shareable_bits:x}: I/O or other agents may"
                    " also fill those ways"
                )
    if mba_percent is not None:
        assert caps.mb is not None
        try:
            percent = mba_step(mba_percent, caps.mb)
        except ValueError as exc:
            problems.append(f"{mba_field}: {exc}")
        else:
            if percent != mba_percent:
                notes.append(
                    f"mba_percent {mba_percent:g} rounded up to {percent} (steps of {caps.mb.granularity_percent}"
                    f" from {caps.mb.min_percent})"
                )
    try:
        wanted = _cpus_arg(cpus, "cpus") or caps.online_cpus
        reserved = set(_cpus_arg(control_plane_cpus, "control_plane_cpus"))
    except ValueError as exc:
        problems.append(f"cpus: {exc}")
        wanted, reserved = caps.online_cpus, set()
    offline = sorted(set(wanted) - set(caps.online_cpus))
    if offline:
        problems.append(
            f"cpus: CPU(s) {format_cpu_list(offline)} are not online (online: {format_cpu_list(caps.online_cpus)})"
        )
    chosen = tuple(c for c in wanted if c not in reserved)
    if not chosen and not offline:
        problems.append(
            f"cpus: no CPU left for the functions after control_plane_cpus {format_cpu_list(reserved)};"
            " reserve fewer CPUs"
        )
    if problems:
        raise ConfigError(problems[0], problems=problems)
    return AllocationPlan(
        l3_mask=mask,
        mba_percent=percent,
        cpus=chosen,
        llc_ways_requested=llc_ways,
        mba_percent_requested=mba_percent,
        notes=tuple(notes),
    )


def check_sweep_values(
    caps: Capabilities,
    *,
    llc_ways: Sequence[Any] = (),
    mba_percent: Sequence[Any] = (),
    field_prefix: str = "sweep.",
    **plan_kwargs: Any,
) -> list[AllocationPlan]:
    """Validate every sweep value before the sweep starts; one ConfigError lists all problems.

    Returns one plan per combination (``llc_ways`` × ``mba_percent``; a missing list counts as
    "not allocated"), in the order given.
    """
    require(caps, llc=bool(llc_ways), mba=bool(mba_percent))
    problems: list[str] = []
    for i, value in enumerate(llc_ways):
        try:
            plan_allocation(caps, llc_ways=value, llc_field=f"{field_prefix}llc_ways[{i}]", **plan_kwargs)
        except ConfigError as exc:
            problems.extend(exc.problems)
    for i, value in enumerate(mba_percent):
        try:
            plan_allocation(caps, mba_percent=value, mba_field=f"{field_prefix}mba_percent[{i}]", **plan_kwargs)
        except ConfigError as exc:
            problems.extend(exc.problems)
    if problems:
        unique = list(dict.fromkeys(problems))
        raise ConfigError(unique[0], problems=unique)
    plans = []
    for ways in llc_ways or [None]:
        for percent in mba_percent or [None]:
            if ways is None and percent is None:
                continue
            plans.append(
                plan_allocation(
                    caps,
                    llc_ways=ways,
                    mba_percent=percent,
                    llc_field=f"{field_prefix}llc_ways",
                    mba_field=f"{field_prefix}mba_percent",
                    **plan_kwargs,
                )
            )
    return plans


# --------------------------------------------------------------------------------------------
# The resctrl filesystem boundary (tests substitute an emulation of the kernel's behaviour)


class ResctrlFs:
    """The four operations done on resctrl. Writes go in one ``write()`` call, as ``echo`` does."""

    def mkdir(self, path: Path) -> None:
        os.mkdir(path)

    def rmdir(self, path: Path) -> None:
        os.rmdir(path)

    def read(self, path: Path) -> str:
        return Path(path).read_text()

    def write(self, path: Path, text: str) -> None:
        fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
        try:
            os.write(fd, text.encode())
        finally:
            os.close(fd)


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """``flock`` the resctrl mount, as the kernel documentation advises for cooperating tools."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing drops the lock


@contextlib.contextmanager
def _sigint_deferred() -> Iterator[None]:
    """Hold a Ctrl-C back until the block is done (apply or restore must not stop half-way)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: received.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if received:
            if callable(previous):
                previous(signal.SIGINT, None)  # Python's default handler raises KeyboardInterrupt here
            elif previous == signal.SIG_DFL:
                os.kill(os.getpid(), signal.SIGINT)  # what would have happened without us


def _groups(resctrl: Path) -> list[str]:
    try:
        names = sorted(os.listdir(resctrl))
    except OSError:
        return []
    return [n for n in names if n not in _NOT_GROUPS and (resctrl / n / "cpus_list").exists()]


def _last_cmd_status(resctrl: Path) -> str:
    return (host.Root(resctrl).read("/info/last_cmd_status") or "").strip() or "no info/last_cmd_status"


# --------------------------------------------------------------------------------------------
# State files (for restore after a crash)


def default_state_dir() -> Path:
    """``$FAASPROF_STATE_DIR``, else ``$XDG_STATE_HOME/faasprof``, else ``~/.local/state/faasprof``."""
    if os.environ.get("FAASPROF_STATE_DIR"):
        return Path(os.environ["FAASPROF_STATE_DIR"])
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(base) / "faasprof"


def _owner_alive(pid: int, start_ticks: int | None) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    if start_ticks is not None:
        now = process_start_ticks(pid)
        if now is not None and now != start_ticks:
            return False  # the pid was reused by another process
    return True


def _write_state(path: Path, state: dict) -> None:
    """Write the state file atomically (temp file, fsync, rename): a crash never leaves half of it."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp")
        with open(tmp, "w", encoding="utf-8") as handle:
            json.dump(state, handle, indent=2)
            handle.write("\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        raise RunError(
            f"{path}: cannot write the allocation state file ({exc.strerror}); set FAASPROF_STATE_DIR to a"
            " writable directory"
        ) from None


# --------------------------------------------------------------------------------------------
# Applying and restoring


class Allocation:
    """Apply one plan and restore the previous allocation whatever happens.

    As a context manager it applies on entry (``.applied`` is the read-back, for the manifest)
    and restores on exit: at the end, on an exception, on KeyboardInterrupt. ``apply()`` and
    ``restore()`` can also be called directly; ``restore()`` is safe to call twice.
    """

    def __init__(
        self,
        caps: Capabilities,
        plan: AllocationPlan,
        *,
        name: str | None = None,
        state_dir: str | os.PathLike | None = None,
        fs: ResctrlFs | None = None,
        runner: Runner | None = None,
        pqos_reset: bool = False,
        timeout_s: float = PQOS_TIMEOUT_S,
    ):
        if caps.interface is None:
            raise NotReadyError(f"cannot allocate: {caps.reason}")
        self.caps = caps
        self.plan = plan
        self.name = name or f"{GROUP_PREFIX}{os.getpid()}"
        if not re.fullmatch(r"[A-Za-z0-9._-]+", self.name) or self.name in _NOT_GROUPS:
            raise ConfigError(f"allocation group name {self.name!r}: use letters, digits, '.', '_' or '-'")
        self.state_path = Path(state_dir or default_state_dir()) / f"allocation-{os.getpid()}-{self.name}.json"
        self.fs = fs or ResctrlFs()
        self.runner = runner or _run_subprocess
        self.pqos_reset = pqos_reset
        self.timeout_s = timeout_s
        self.applied: dict[str, Any] | None = None
        self._state: dict[str, Any] | None = None

    # context manager ----------------------------------------------------------------------
    def __enter__(self) -> "Allocation":
        try:
            self.apply()
        except BaseException:
            # __exit__ is not called when __enter__ raises: undo what was done here.
            self.restore()
            raise
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        self.restore()
        return False

    # apply --------------------------------------------------------------------------------
    def apply(self) -> dict[str, Any]:
        """Apply the plan; returns (and keeps in ``.applied``) what the hardware reports."""
        if self._state is not None:
            raise RuntimeError("allocation already applied")
        with _sigint_deferred():
            try:
                if self.caps.interface == "resctrl":
                    self.applied = self._apply_resctrl()
                else:
                    self.applied = self._apply_pqos()
            except OSError as exc:
                raise RunError(f"{exc.filename or self.name}: {exc.strerror or exc} while applying the allocation") from None
            self._state["stage"] = "applied"
            self._state["applied"] = self.applied
            _write_state(self.state_path, self._state)
        return self.applied

    def _base_state(self) -> dict[str, Any]:
        return {
            "format_version": STATE_FORMAT_VERSION,
            "pid": os.getpid(),
            "pid_start_ticks": process_start_ticks(os.getpid()),
            "created_unix_s": time.time(),
            "interface": self.caps.interface,
            "name": self.name,
            "stage": "intent",
            "plan": self.plan.to_dict(),
        }

    def _apply_resctrl(self) -> dict[str, Any]:
        resctrl = self.caps.resctrl_path
        assert resctrl is not None
        group = resctrl / self.name
        with _locked(resctrl):
            owners: dict[str, list[int]] = {}
            wanted = set(self.plan.cpus)
            for other in _groups(resctrl):
                try:
                    taken = wanted & set(parse_cpu_list(self.fs.read(resctrl / other / "cpus_list")))
                except (OSError, ValueError):
                    continue
                if taken:
                    owners[other] = sorted(taken)
            state = self._base_state()
            state.update(resctrl_path=str(resctrl), group=self.name, previous_cpu_owners=owners)
            _write_state(self.state_path, state)
            self._state = state
            try:
                self.fs.mkdir(group)
            except OSError as exc:
                # Nothing was created (and an existing group is not ours to remove): forget the intent.
                self.state_path.unlink()
                self._state = None
                if exc.errno == errno.EEXIST:
                    raise RunError(
                        f"{group}: a resctrl group of that name exists already; remove it (rmdir {group}) or give"
                        " the allocation another name"
                    ) from None
                if exc.errno == errno.ENOSPC:
                    raise RunError(
                        f"{group}: no free CLOSID (the host has {self.caps.num_closids} classes, including the default"
                        f" group); remove unused groups under {resctrl}"
                    ) from None
                raise RunError(f"{group}: mkdir failed: {exc.strerror}; {_last_cmd_status(resctrl)}") from None
            lines = self._schemata_lines()
            try:
                self.fs.write(group / "schemata", "\n".join(lines) + "\n")
            except OSError as exc:
                raise RunError(
                    f"{group}/schemata: the kernel refused {'; '.join(lines)!r}: {_last_cmd_status(resctrl)} ({exc.strerror})"
                ) from None
            cpu_text = format_cpu_list(self.plan.cpus)
            try:
                self.fs.write(group / "cpus_list", cpu_text + "\n")
            except OSError:
                raise RunError(f"{group}/cpus_list: the kernel refused {cpu_text!r}: {_last_cmd_status(resctrl)}") from None
            return self._readback_resctrl(group)

    def _schemata_lines(self) -> list[str]:
        lines = []
        l3, mb = self.caps.l3, self.caps.mb
        if self.plan.l3_mask is not None and l3 is not None:
            values = ";".join(f"{i}={self.plan.l3_mask:x}" for i in l3.cache_ids)
            names = ("L3DATA", "L3CODE") if l3.cdp else ("L3",)
            lines.extend(f"{name}:{values}" for name in names)
        if self.plan.mba_percent is not None and mb is not None:
            lines.append("MB:" + ";".join(f"{i}={self.plan.mba_percent}" for i in mb.cache_ids))
        return lines

    def _readback_resctrl(self, group: Path) -> dict[str, Any]:
        schemata = parse_schemata(self.fs.read(group / "schemata"))
        cpus = parse_cpu_list(self.fs.read(group / "cpus_list"))
        l3_name = "L3DATA" if self.caps.l3 and self.caps.l3.cdp else "L3"
        masks = {i: int(v, 16) for i, v in schemata.get(l3_name, {}).items()}
        percents = {i: int(v) for i, v in schemata.get("MB", {}).items()}
        applied = self._applied_dict(masks, percents, cpus)
        applied.update(group=group.name, path=str(group))
        self._verify(applied, masks, percents, cpus, f"{group}/schemata")
        return applied

    def _applied_dict(self, masks: dict[int, int], percents: dict[int, int], cpus: Sequence[int]) -> dict[str, Any]:
        return {
            "interface": self.caps.interface,
            "llc_masks": {str(i): f"0x{m:x}" for i, m in sorted(masks.items())},
            "llc_ways": {str(i): bin(m).count("1") for i, m in sorted(masks.items())},
            "mba_percent": {str(i): p for i, p in sorted(percents.items())},
            "cpus": format_cpu_list(cpus),
            "requested": self.plan.to_dict(),
            "notes": list(self.plan.notes),
        }

    def _verify(self, applied: dict, masks: dict[int, int], percents: dict[int, int], cpus: Sequence[int], where: str) -> None:
        if self.plan.l3_mask is not None:
            wrong = {i: m for i, m in masks.items() if m != self.plan.l3_mask}
            if wrong or not masks:
                raise RunError(
                    f"{where}: L3 reads back as {applied['llc_masks']} instead of 0x{self.plan.l3_mask:x} on every cache id"
                )
        if self.plan.mba_percent is not None:
            if not percents:
                raise RunError(f"{where}: no MB values read back after writing {self.plan.mba_percent} %")
            if any(p != self.plan.mba_percent for p in percents.values()):
                # The kernel or pqos rounded differently from our rule: record the truth, go on.
                applied["notes"].append(f"the hardware applied MB {applied['mba_percent']} for a request of {self.plan.mba_percent}")
        missing = set(self.plan.cpus) - set(cpus)
        if missing:
            raise RunError(f"{where}: CPU(s) {format_cpu_list(missing)} did not join the allocation (read back: {format_cpu_list(cpus)})")

    def _pqos(self, *args: str) -> str:
        return _run_pqos(self.caps.pqos, self.runner, self.timeout_s, list(args))

    def _apply_pqos(self) -> dict[str, Any]:
        show = parse_pqos_show(self._pqos("-s"))
        num = self.caps.num_closids or 0
        used = {c["cos"] for c in show["cores"].values()}
        free = [cos for cos in range(num - 1, 0, -1) if cos not in used]
        if not free:
            raise RunError(
                f"pqos: every class of service 1..{num - 1} has cores associated; free one (pqos -a core:0=<cores>) or reset with pqos -R"
            )
        cos = free[0]
        # Save only what this plan changes, so the restore writes nothing else.
        previous = {
            "l3": {str(s): t[cos] for s, t in show["l3"].items() if cos in t} if self.plan.l3_mask is not None else {},
            "mba": {str(s): t[cos] for s, t in show["mba"].items() if cos in t} if self.plan.mba_percent is not None else {},
            "assoc": {str(core): show["cores"][core]["cos"] for core in self.plan.cpus if core in show["cores"]},
        }
        state = self._base_state()
        state.update(pqos=self.caps.pqos, cos=cos, previous=previous, reset=self.pqos_reset)
        _write_state(self.state_path, state)
        self._state = state
        if self.plan.l3_mask is not None:
            self._pqos("-e", f"llc:{cos}=0x{self.plan.l3_mask:x}")
        if self.plan.mba_percent is not None:
            self._pqos("-e", f"mba:{cos}={self.plan.mba_percent}")
        self._pqos("-a", f"{PQOS_ASSOC_TYPE}:{cos}={format_cpu_list(self.plan.cpus)}")
        after = parse_pqos_show(self._pqos("-s"))
        masks = {s: table[cos] for s, table in after["l3"].items() if cos in table} if self.plan.l3_mask is not None else {}
        percents = {s: table[cos] for s, table in after["mba"].items() if cos in table} if self.plan.mba_percent is not None else {}
        cpus = [core for core, info in after["cores"].items() if info["cos"] == cos]
        applied = self._applied_dict(masks, percents, cpus)
        applied.update(cos=cos, pqos=self.caps.pqos)
        self._verify(applied, masks, percents, cpus, "pqos -s")
        return applied

    # restore ------------------------------------------------------------------------------
    def restore(self) -> list[str]:
        """Put the previous allocation back; returns what was done (one line each). Idempotent."""
        if self._state is None:
            return []
        with _sigint_deferred():
            try:
                messages = _restore_from_state(self._state, fs=self.fs, runner=self.runner, timeout_s=self.timeout_s)
            except (OSError, RunError) as exc:
                # The state file stays: the next faasprof start (cleanup_leftovers) tries again.
                detail = f"{exc.filename}: {exc.strerror}" if isinstance(exc, OSError) else str(exc)
                raise RunError(
                    f"could not restore the previous allocation ({detail}); faasprof retries at its next start"
                    f" from {self.state_path}"
                ) from None
            with contextlib.suppress(FileNotFoundError):
                self.state_path.unlink()  # last: a crash before this line is finished by cleanup_leftovers
            self._state = None
        return messages


def _run_pqos(pqos: str | None, runner: Runner, timeout_s: float, args: list[str]) -> str:
    if not pqos:
        raise NotReadyError("pqos not found; install intel-cmt-cat")
    try:
        proc = runner([pqos, *args], timeout_s)
    except subprocess.TimeoutExpired:
        raise RunError(f"pqos {' '.join(args)}: no answer within {timeout_s:g} s") from None
    except OSError as exc:
        raise RunError(f"pqos {' '.join(args)}: could not run: {exc}") from None
    output = proc.stdout + "\n" + proc.stderr
    # pqos prints its errors on stdout and does not always exit non-zero for them.
    bad = [line.strip() for line in output.splitlines() if re.search(r"\berror\b", line, re.I)]
    if proc.returncode != 0 or bad:
        raise RunError(f"pqos {' '.join(args)} failed (rc {proc.returncode}): {bad[0] if bad else _last_line(output)}")
    return proc.stdout


def _grouped_assoc(assoc: dict[str, int]) -> str:
    by_cos: dict[int, list[int]] = {}
    for core, cos in assoc.items():
        by_cos.setdefault(int(cos), []).append(int(core))
    return ";".join(f"{PQOS_ASSOC_TYPE}:{cos}={format_cpu_list(cores)}" for cos, cores in sorted(by_cos.items()))


def _class_definition(kind: str, cos: int, per_socket: dict[str, int], fmt: Callable[[int], str]) -> str:
    values = set(per_socket.values())
    if len(values) == 1:
        return f"{kind}:{cos}={fmt(values.pop())}"
    return ";".join(f"{kind}@{s}:{cos}={fmt(v)}" for s, v in sorted(per_socket.items(), key=lambda kv: int(kv[0])))


def _restore_from_state(state: dict, *, fs: ResctrlFs, runner: Runner, timeout_s: float) -> list[str]:
    messages: list[str] = []
    if state.get("interface") == "resctrl":
        resctrl = Path(state["resctrl_path"])
        group = resctrl / state["group"]
        if not resctrl.is_dir():
            return [f"{resctrl} is no longer mounted; nothing to restore for group {state['group']}"]
        with _locked(resctrl):
            if group.is_dir():
                for other, cpus in (state.get("previous_cpu_owners") or {}).items():
                    if not (resctrl / other).is_dir():
                        messages.append(f"CPU(s) {format_cpu_list(cpus)} go to the default group: their group {other} is gone")
                        continue
                    current = set(parse_cpu_list(fs.read(resctrl / other / "cpus_list")))
                    fs.write(resctrl / other / "cpus_list", format_cpu_list(current | set(cpus)) + "\n")
                    messages.append(f"CPU(s) {format_cpu_list(cpus)} are back in resctrl group {other}")
                fs.rmdir(group)
                messages.append(f"removed resctrl group {group}")
    elif state.get("interface") == "pqos":
        pqos, cos, previous = state.get("pqos"), int(state["cos"]), state.get("previous") or {}
        if state.get("reset"):
            _run_pqos(pqos, runner, timeout_s, ["-R"])
            messages.append("reset every allocation class with pqos -R")
        else:
            if previous.get("assoc"):
                _run_pqos(pqos, runner, timeout_s, ["-a", _grouped_assoc(previous["assoc"])])
            if previous.get("l3"):
                _run_pqos(pqos, runner, timeout_s, ["-e", _class_definition("llc", cos, previous["l3"], lambda m: f"0x{m:x}")])
            if previous.get("mba"):
                _run_pqos(pqos, runner, timeout_s, ["-e", _class_definition("mba", cos, previous["mba"], str)])
            messages.append(f"restored pqos class COS{cos} and the classes of cores {format_cpu_list(int(c) for c in previous.get('assoc', {}))}")
    return messages


def cleanup_leftovers(
    root: str | os.PathLike = "/",
    *,
    state_dir: str | os.PathLike | None = None,
    fs: ResctrlFs | None = None,
    runner: Runner | None = None,
    timeout_s: float = PQOS_TIMEOUT_S,
) -> list[str]:
    """Undo allocations left by faasprof processes that died; returns one message per action.

    Reads the state files (``allocation-<pid>-<name>.json``) of dead owners and restores from
    them, then removes any ``faasprof-<pid>`` group under the resctrl mount whose process is gone
    and that no state file described. Allocations of live faasprof processes are left alone.
    Failures are reported as messages (with the command to finish by hand), never raised.
    """
    fs = fs or ResctrlFs()
    runner = runner or _run_subprocess
    state_dir = Path(state_dir or default_state_dir())
    messages: list[str] = []
    handled: set[Path] = set()
    for path in sorted(state_dir.glob("allocation-*.json")):
        try:
            state = json.loads(path.read_text())
            pid = int(state["pid"])
        except (OSError, ValueError, KeyError, TypeError):
            messages.append(f"{path}: unreadable allocation state file; delete it after checking {RESCTRL_MOUNTPOINT} and pqos -s")
            continue
        if state.get("format_version") != STATE_FORMAT_VERSION:
            messages.append(f"{path}: allocation state format version {state.get('format_version')} not supported; delete it by hand")
            continue
        if state.get("resctrl_path"):
            handled.add(Path(state["resctrl_path"]) / str(state.get("group")))
        if _owner_alive(pid, state.get("pid_start_ticks")):
            continue  # a running faasprof (possibly this one) restores its own allocation
        try:
            done = _restore_from_state(state, fs=fs, runner=runner, timeout_s=timeout_s)
        except (OSError, RunError, NotReadyError) as exc:
            where = state.get("group") or f"COS{state.get('cos')}"
            messages.append(f"could not undo the allocation {where} left by faasprof pid {pid}: {exc}; fix it by hand, then delete {path}")
            continue
        for line in done:
            messages.append(f"leftover of faasprof pid {pid} (no longer running): {line}")
        path.unlink()
    reader = host.Root(root)
    mount = host.mount_of(reader, "resctrl")
    if mount is not None:
        resctrl = reader.path(mount[0])
        for name in _groups(resctrl):
            match = re.fullmatch(re.escape(GROUP_PREFIX) + r"(\d+)(?:\D.*)?", name)
            if not match or (resctrl / name) in handled:
                continue
            pid = int(match.group(1))
            if pid == os.getpid() or _owner_alive(pid, None):
                continue
            try:
                with _locked(resctrl):
                    fs.rmdir(resctrl / name)
            except OSError as exc:
                messages.append(f"could not remove leftover resctrl group {resctrl / name}: {exc.strerror}; run: rmdir {resctrl / name}")
                continue
            messages.append(f"removed leftover resctrl group {resctrl / name} (faasprof pid {pid} is gone; no state file)")
    return messages
