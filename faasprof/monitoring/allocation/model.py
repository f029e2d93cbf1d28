"""The vocabulary the allocation modules share: what the host can do, CPU lists, running a tool.

``Capabilities`` (with ``CacheCaps`` and ``BandwidthCaps``) is what ``discover`` finds and what
every later step is checked against; ``Readback`` is what a backend reads back from the hardware
after applying a plan. ``Runner`` runs a command with a timeout (``pqos``); tests substitute one.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence, TypedDict

from faasprof.monitoring import host

GROUP_PREFIX = "faasprof-"
PQOS_TIMEOUT_S = 20.0
RESCTRL_MOUNTPOINT = "/sys/fs/resctrl"
MOUNT_HINT = "mount -t resctrl resctrl /sys/fs/resctrl"
# CPU flags that announce allocation (kernel resctrl.rst); without any of them pqos is not even run,
# because on a non-Intel CPU it can abort (research notes §2.7: rc 134 on an AMD EPYC guest).
ALLOCATION_FLAGS = ("rdt_a", "cat_l3", "mba")


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


class HostBasics(TypedDict):
    """What every ``Capabilities`` of one host shares, whichever interface is probed."""

    root: Path
    online_cpus: tuple[int, ...]
    flags: frozenset[str]


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


def run_subprocess(argv: Sequence[str], timeout_s: float) -> "subprocess.CompletedProcess[str]":
    """The default ``Runner``: the command's output as text, whatever its exit status."""
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout_s, check=False)


def last_line(text: str) -> str:
    """The last non-blank line of a tool's output, for a one-line error."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else "(no output)"


@dataclass
class Readback:
    """What a backend read back after applying a plan: per cache id, the L3 mask and MB percent,
    the CPUs that joined, the backend's own keys for the manifest, and where it read them."""

    masks: dict[int, int]
    percents: dict[int, int]
    cpus: Sequence[int]
    where: str
    extra: dict[str, Any] = field(default_factory=dict)
