"""The resctrl backend: what ``/sys/fs/resctrl`` offers, one group applied, read back and removed.

resctrl is the kernel's interface (``Documentation/arch/x86/resctrl.rst``). An allocation is a
resource group tied to CPUs (``cpus_list``): a task of the default group running on such a CPU
uses that CPU's group (resctrl allocation rule 2).

Order of operations (and why):

1. The plan was validated before (``plan.plan_allocation``): a refused write in the middle of a
   sweep would leave a half-configured group behind.
2. Take ``flock`` on the resctrl mount (the kernel documentation's advice for cooperating tools).
3. Note which group owns each CPU we are about to take, and write the state file BEFORE the
   ``mkdir``: a crash right after the ``mkdir`` would otherwise leave a group that uses a CLOSID
   and that nobody knows belongs to us.
4. ``mkdir`` the group (``faasprof-<pid>``), then write its ``schemata`` (``L3:``/``MB:`` lines for
   every cache id, in one write, which the kernel applies all or nothing), and only then its
   ``cpus_list``. Schemata first because a new group starts with the kernel's default masks; if the
   CPUs joined first, the functions would run for a moment with the wrong allocation.
5. Read the group's ``schemata`` and ``cpus_list`` back; that, not the request, is returned.

Restore is the reverse: give CPUs taken from another group back to it and ``rmdir`` our group (its
remaining CPUs and tasks return to the default group); the caller deletes the state file last.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
from pathlib import Path
from typing import Any, Iterator

from faasprof.errors import RunError
from faasprof.monitoring import host
from faasprof.monitoring.allocation.journal import Journal
from faasprof.monitoring.allocation.model import (
    BandwidthCaps,
    CacheCaps,
    Capabilities,
    HostBasics,
    Readback,
    format_cpu_list,
    parse_cpu_list,
)
from faasprof.monitoring.allocation.plan import AllocationPlan

# Entries of the resctrl root that are not resource groups.
NOT_GROUPS = {"info", "mon_groups", "mon_data"}


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


def capabilities(path: Path, options: tuple[str, ...], common: HostBasics) -> Capabilities:
    """What the resctrl mount at ``path`` offers (``info/``, the default ``schemata``); ``interface`` None when nothing."""
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
def locked(path: Path) -> Iterator[None]:
    """``flock`` the resctrl mount, as the kernel documentation advises for cooperating tools."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing drops the lock


def groups(resctrl: Path) -> list[str]:
    """The resource groups under the mount (directories with a ``cpus_list``), sorted."""
    try:
        names = sorted(os.listdir(resctrl))
    except OSError:
        return []
    return [n for n in names if n not in NOT_GROUPS and (resctrl / n / "cpus_list").exists()]


def last_cmd_status(resctrl: Path) -> str:
    """The kernel's reason for the last refused write, for the error message."""
    return (host.Root(resctrl).read("/info/last_cmd_status") or "").strip() or "no info/last_cmd_status"


def schemata_lines(caps: Capabilities, plan: AllocationPlan) -> list[str]:
    """The group's ``schemata``: an ``L3:`` (or ``L3DATA:``/``L3CODE:``) and an ``MB:`` line, every cache id."""
    lines: list[str] = []
    l3, mb = caps.l3, caps.mb
    if plan.l3_mask is not None and l3 is not None:
        values = ";".join(f"{i}={plan.l3_mask:x}" for i in l3.cache_ids)
        names = ("L3DATA", "L3CODE") if l3.cdp else ("L3",)
        lines.extend(f"{name}:{values}" for name in names)
    if plan.mba_percent is not None and mb is not None:
        lines.append("MB:" + ";".join(f"{i}={plan.mba_percent}" for i in mb.cache_ids))
    return lines


def apply(caps: Capabilities, plan: AllocationPlan, name: str, fs: ResctrlFs, journal: Journal) -> Readback:
    """Create group ``name`` for ``plan`` (steps 2 to 5 of the module docstring); RunError names the refusal."""
    resctrl = caps.resctrl_path
    assert resctrl is not None
    group = resctrl / name
    with locked(resctrl):
        owners: dict[str, list[int]] = {}
        wanted = set(plan.cpus)
        for other in groups(resctrl):
            try:
                taken = wanted & set(parse_cpu_list(fs.read(resctrl / other / "cpus_list")))
            except (OSError, ValueError):
                continue
            if taken:
                owners[other] = sorted(taken)
        journal.intend(resctrl_path=str(resctrl), group=name, previous_cpu_owners=owners)
        try:
            fs.mkdir(group)
        except OSError as exc:
            # Nothing was created (and an existing group is not ours to remove): forget the intent.
            journal.forget()
            if exc.errno == errno.EEXIST:
                raise RunError(
                    f"{group}: a resctrl group of that name exists already; remove it (rmdir {group}) or give"
                    " the allocation another name"
                ) from None
            if exc.errno == errno.ENOSPC:
                raise RunError(
                    f"{group}: no free CLOSID (the host has {caps.num_closids} classes, including the default"
                    f" group); remove unused groups under {resctrl}"
                ) from None
            raise RunError(f"{group}: mkdir failed: {exc.strerror}; {last_cmd_status(resctrl)}") from None
        lines = schemata_lines(caps, plan)
        try:
            fs.write(group / "schemata", "\n".join(lines) + "\n")
        except OSError as exc:
            raise RunError(
                f"{group}/schemata: the kernel refused {'; '.join(lines)!r}: {last_cmd_status(resctrl)} ({exc.strerror})"
            ) from None
        cpu_text = format_cpu_list(plan.cpus)
        try:
            fs.write(group / "cpus_list", cpu_text + "\n")
        except OSError:
            raise RunError(f"{group}/cpus_list: the kernel refused {cpu_text!r}: {last_cmd_status(resctrl)}") from None
        return read_back(caps, group, fs)


def read_back(caps: Capabilities, group: Path, fs: ResctrlFs) -> Readback:
    """The group's masks, percentages and CPUs as the kernel reports them."""
    schemata = parse_schemata(fs.read(group / "schemata"))
    cpus = parse_cpu_list(fs.read(group / "cpus_list"))
    l3_name = "L3DATA" if caps.l3 and caps.l3.cdp else "L3"
    masks = {i: int(v, 16) for i, v in schemata.get(l3_name, {}).items()}
    percents = {i: int(v) for i, v in schemata.get("MB", {}).items()}
    return Readback(masks, percents, cpus, where=f"{group}/schemata", extra={"group": group.name, "path": str(group)})


def restore(state: dict[str, Any], fs: ResctrlFs) -> list[str]:
    """Give the CPUs back to the groups they came from and remove our group; one message per action."""
    messages: list[str] = []
    resctrl = Path(state["resctrl_path"])
    group = resctrl / state["group"]
    if not resctrl.is_dir():
        return [f"{resctrl} is no longer mounted; nothing to restore for group {state['group']}"]
    with locked(resctrl):
        if group.is_dir():
            for other, cpus in (state.get("previous_cpu_owners") or {}).items():
                if not (resctrl / other).is_dir():
                    messages.append(
                        f"CPU(s) {format_cpu_list(cpus)} go to the default group: their group {other} is gone"
                    )
                    continue
                current = set(parse_cpu_list(fs.read(resctrl / other / "cpus_list")))
                fs.write(resctrl / other / "cpus_list", format_cpu_list(current | set(cpus)) + "\n")
                messages.append(f"CPU(s) {format_cpu_list(cpus)} are back in resctrl group {other}")
            fs.rmdir(group)
            messages.append(f"removed resctrl group {group}")
    return messages
