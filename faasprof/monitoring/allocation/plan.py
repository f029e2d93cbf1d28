"""Every allocation request checked against the host before anything runs, then planned.

Validation follows the kernel's own checks (``cbm_validate``/``bw_validate``) so that a sweep
fails before its first point rather than in the middle: a mask must be non-zero, fit in
``info/L3/cbm_mask``, be one contiguous block of ones (unless ``sparse_masks`` is 1) and have at
least ``min_cbm_bits`` bits. A bandwidth percentage must lie in ``[min_bandwidth, 100]`` and is
rounded UP to the next control step ``min_bandwidth + N * bandwidth_gran`` (the resctrl
documentation's rule); both the requested and the applied value are reported.

``plan_allocation`` validates one allocation into an ``AllocationPlan`` (what to write, for which
CPUs); ``check_sweep_values`` validates every value of a sweep at once, one error listing all.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Sequence

from faasprof.errors import ConfigError, NotReadyError
from faasprof.monitoring.allocation.model import (
    MOUNT_HINT,
    RESCTRL_MOUNTPOINT,
    BandwidthCaps,
    CacheCaps,
    Capabilities,
    format_cpu_list,
    parse_cpu_list,
)


def mask_is_contiguous(mask: int) -> bool:
    """True for one block of ones (0x3, 0x6, 0xc); False for 0 and for 0x5, 0x9, 0xa."""
    if mask <= 0:
        return False
    shifted = mask >> ((mask & -mask).bit_length() - 1)
    return shifted & (shifted + 1) == 0


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
        raise ValueError(f'must be a way count (1..{ways}) or a hex mask such as "0x{l3.cbm_mask:x}" (got {value})')
    if isinstance(value, int):
        if value < max(1, l3.min_cbm_bits) or value > ways:
            raise ValueError(
                f"{value} ways is outside 1..{ways} (this CPU has {ways} L3 ways, min_cbm_bits {l3.min_cbm_bits})"
            )
        if position == "low":
            start = lowest
        elif position == "high":
            start = lowest + ways - value
        elif isinstance(position, int) and not isinstance(position, bool) and position >= 0:
            if position + value > ways:
                raise ValueError(
                    f"{value} ways starting at way {position} go past way {ways - 1}; use a position <= {ways - value}"
                )
            start = lowest + position
        else:
            raise ValueError(f'llc_position must be "low", "high" or a way index (got {position!r})')
        mask = ((1 << value) - 1) << start
    elif isinstance(value, str):
        text = value.strip().lower()
        if text in ("all", "full"):
            return l3.cbm_mask
        if not re.fullmatch(r"0x[0-9a-f]+", text):
            raise ValueError(
                f"{value!r} is neither a way count nor a hex mask; write a count as a number (4) or a mask"
                f' as a string with 0x ("0x{l3.cbm_mask:x}")'
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
        raise ValueError(f'{name} must be CPU numbers or a list such as "2-7" (got {value!r})')
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
