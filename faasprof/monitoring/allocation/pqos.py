"""The pqos backend (intel-cmt-cat), for hosts without a mounted resctrl: parse, probe, apply, restore.

Parsers are pure (formats from pqos 4.x, research notes §2.5). An allocation is a class of service
(COS) associated with cores (``pqos -a core:``).

Order of operations: ``pqos -s`` first and save the masks of the class we will use and the
current class of every core we will move (pqos has no groups to delete, so restoring means writing
those values back); pick the highest class no core uses; write the state file; ``pqos -e`` the
masks (before ``-a``: a core that joined first would run for a moment with the class's old masks);
``pqos -a core:<cos>=<cpus>``; ``pqos -s`` to read back. Restore: ``pqos -a`` the cores back to
their old classes, then ``pqos -e`` the old masks (or ``pqos -R`` with ``pqos_reset=True``, which
resets every class on the host).
"""

from __future__ import annotations

import re
import subprocess
from typing import Any, Callable

from faasprof.errors import NotReadyError, RunError
from faasprof.monitoring.allocation.journal import Journal
from faasprof.monitoring.allocation.model import (
    BandwidthCaps,
    CacheCaps,
    Capabilities,
    HostBasics,
    Readback,
    Runner,
    format_cpu_list,
    last_line,
)
from faasprof.monitoring.allocation.plan import AllocationPlan

# "llc" is the type name older scripts use for -a; pqos(8) calls it deprecated in favour of "core".
PQOS_ASSOC_TYPE = "core"


def parse_pqos_capabilities(text: str) -> dict[str, Any]:
    """Parse ``pqos -d``: which allocation technologies exist and their class counts."""
    result: dict[str, Any] = {
        "l3_cat": False,
        "l3_num_cos": None,
        "cdp_enabled": None,
        "mba": False,
        "mba_num_cos": None,
    }
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


def capabilities(pqos_path: str, runner: Runner, timeout_s: float, common: HostBasics) -> Capabilities:
    """What ``pqos -d`` and ``pqos -s -v`` report; ``interface`` None (and the reason) when pqos fails or offers nothing."""
    outputs = {}
    for args in (["-d"], ["-s", "-v"]):
        try:
            proc = runner([pqos_path, *args], timeout_s)
        except subprocess.TimeoutExpired:
            return Capabilities(
                interface=None,
                reason=f"pqos {' '.join(args)} did not answer within {timeout_s:g} s",
                pqos=pqos_path,
                **common,
            )
        except OSError as exc:
            return Capabilities(
                interface=None, reason=f"pqos {' '.join(args)} could not run: {exc}", pqos=pqos_path, **common
            )
        if proc.returncode != 0:
            last = last_line(proc.stdout + "\n" + proc.stderr)
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


def run_pqos(pqos: str | None, runner: Runner, timeout_s: float, args: list[str]) -> str:
    """pqos's stdout; RunError when it fails, times out or prints an error (it may exit 0 then)."""
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
        raise RunError(f"pqos {' '.join(args)} failed (rc {proc.returncode}): {bad[0] if bad else last_line(output)}")
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


def apply(
    caps: Capabilities, plan: AllocationPlan, runner: Runner, timeout_s: float, reset: bool, journal: Journal
) -> Readback:
    """Give ``plan`` the highest free class and its cores (the module docstring's order); RunError on a refusal."""

    def pqos(*args: str) -> str:
        return run_pqos(caps.pqos, runner, timeout_s, list(args))

    show = parse_pqos_show(pqos("-s"))
    num = caps.num_closids or 0
    used = {c["cos"] for c in show["cores"].values()}
    free = [cos for cos in range(num - 1, 0, -1) if cos not in used]
    if not free:
        raise RunError(
            f"pqos: every class of service 1..{num - 1} has cores associated; free one (pqos -a core:0=<cores>) or reset with pqos -R"
        )
    cos = free[0]
    # Save only what this plan changes, so the restore writes nothing else.
    previous = {
        "l3": {str(s): t[cos] for s, t in show["l3"].items() if cos in t} if plan.l3_mask is not None else {},
        "mba": {str(s): t[cos] for s, t in show["mba"].items() if cos in t} if plan.mba_percent is not None else {},
        "assoc": {str(core): show["cores"][core]["cos"] for core in plan.cpus if core in show["cores"]},
    }
    journal.intend(pqos=caps.pqos, cos=cos, previous=previous, reset=reset)
    if plan.l3_mask is not None:
        pqos("-e", f"llc:{cos}=0x{plan.l3_mask:x}")
    if plan.mba_percent is not None:
        pqos("-e", f"mba:{cos}={plan.mba_percent}")
    pqos("-a", f"{PQOS_ASSOC_TYPE}:{cos}={format_cpu_list(plan.cpus)}")
    after = parse_pqos_show(pqos("-s"))
    masks = {s: table[cos] for s, table in after["l3"].items() if cos in table} if plan.l3_mask is not None else {}
    percents = (
        {s: table[cos] for s, table in after["mba"].items() if cos in table} if plan.mba_percent is not None else {}
    )
    cpus = [core for core, info in after["cores"].items() if info["cos"] == cos]
    return Readback(masks, percents, cpus, where="pqos -s", extra={"cos": cos, "pqos": caps.pqos})


def restore(state: dict[str, Any], runner: Runner, timeout_s: float) -> list[str]:
    """Put the cores' classes and the class's masks back (or ``pqos -R``); one message per action."""
    pqos, cos, previous = state.get("pqos"), int(state["cos"]), state.get("previous") or {}
    if state.get("reset"):
        run_pqos(pqos, runner, timeout_s, ["-R"])
        return ["reset every allocation class with pqos -R"]
    if previous.get("assoc"):
        run_pqos(pqos, runner, timeout_s, ["-a", _grouped_assoc(previous["assoc"])])
    if previous.get("l3"):
        run_pqos(pqos, runner, timeout_s, ["-e", _class_definition("llc", cos, previous["l3"], lambda m: f"0x{m:x}")])
    if previous.get("mba"):
        run_pqos(pqos, runner, timeout_s, ["-e", _class_definition("mba", cos, previous["mba"], str)])
    return [
        f"restored pqos class COS{cos} and the classes of cores {format_cpu_list(int(c) for c in previous.get('assoc', {}))}"
    ]
