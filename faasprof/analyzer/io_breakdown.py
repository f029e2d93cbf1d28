"""I/O analysis of a run of the io-* functions: the breakdown per invocation, bandwidth, and the
response time of batches of parallel invocations against their cost.

- ``breakdown_frame(run_dir)``: one row per activation record whose result carries a
  ``breakdown`` (faasprof/functions/iolib.py): compute, disk, network and setup time, the bytes moved,
  the function's bandwidth, the sandbox's block and network counters (cgroup io.stat / blkio,
  the namespace's net/dev) and ``unaccounted_ms`` = the record's duration minus the breakdown's
  sum (runtime glue: argument parsing, the runner, imports on a cold start).
- ``batch_frame(frame)``: the invocations grouped into batches (those planned at the same
  instant: a Burst instance's ``burst_size`` invocations sent at once). Per batch: concurrency,
  response time (first start to last end of its activations: what a caller waiting for the
  whole batch sees), cost in GB-s (exact, 1 ms and 100 ms billing rounding, from each record's
  duration and memory limit) and aggregate bandwidth (bytes moved over the response time).
- ``summarise(run_dir)``: both, summarised for a study point (medians, totals).

Cost: GB-s = memory_mb / 1024 x billed seconds, billed = duration rounded up to the unit, per
invocation, summed over the batch (the public clouds' billing, 1 ms as AWS Lambda since 2020,
100 ms before).
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from faasprof import rundir

FORMAT_VERSION = 1
BREAKDOWN_FILE = "io_breakdown.csv"
BATCH_FILE = "io_batches.csv"
# A breakdown adds up to its activation's duration within this (tests hold the functions to it):
# the larger of an absolute slack (runner and import glue on a loaded 2-core host) and a share.
TOLERANCE_MS = 60.0
TOLERANCE_SHARE = 0.25
PHASES = ("compute", "disk", "network", "setup")
BYTES = ("disk_read", "disk_write", "network_in", "network_out")
SANDBOX = ("block_read_bytes", "block_write_bytes", "net_rx_bytes", "net_tx_bytes")


def _annotation(record: dict, key: str):
    for annotation in record.get("annotations") or []:
        if isinstance(annotation, dict) and annotation.get("key") == key:
            return annotation.get("value")
    return None


def _limits_memory_mb(record: dict) -> float:
    memory = (_annotation(record, "limits") or {}).get("memory")
    return float(memory) if isinstance(memory, (int, float)) else math.nan


def breakdown_frame(run_dir: str | os.PathLike) -> pd.DataFrame:
    """One row per activation with a breakdown, joined with its invocation row (batch, latency)."""
    run_dir = Path(run_dir)
    rows = []
    for record in rundir.iter_records(run_dir):
        result = (record.get("response") or {}).get("result") or {}
        breakdown = result.get("breakdown") if isinstance(result, dict) else None
        if not isinstance(breakdown, dict):
            continue
        row: dict[str, Any] = {
            "activation_id": record.get("activationId"),
            "function": record.get("name"),
            "memory_mb": _limits_memory_mb(record),
            "start_ms": float(record.get("start") or math.nan),
            "end_ms": float(record.get("end") or math.nan),
            "duration_ms": float(record.get("duration") or math.nan),
            # OpenWhisk's duration includes initTime (a cold start's /init); the breakdown covers /run.
            "init_ms": float(_annotation(record, "initTime") or 0.0),
            "elapsed_ms": float(breakdown.get("elapsed_ms", math.nan)),
            "accounted_ms": float(breakdown.get("accounted_ms", math.nan)),
        }
        for phase in PHASES:
            row[f"{phase}_ms"] = float(breakdown.get(f"{phase}_ms", 0.0))
        for name in BYTES:
            row[f"{name}_bytes"] = int((breakdown.get("bytes") or {}).get(name, 0))
        for name in SANDBOX:
            value = (breakdown.get("sandbox") or {}).get(name)
            row[f"sandbox_{name}"] = math.nan if value is None else float(value)
        row["network_mb_per_s"] = float(breakdown.get("network_mb_per_s") or math.nan)
        row["disk_mb_per_s"] = float(breakdown.get("disk_mb_per_s") or math.nan)
        row["run_ms"] = row["duration_ms"] - row["init_ms"]
        row["unaccounted_ms"] = row["run_ms"] - row["accounted_ms"]
        rows.append(row)
    frame = pd.DataFrame(rows)
    if frame.empty:
        return frame
    invocations = {row["activation_id"]: row for row in rundir.read_invocations(run_dir) if row.get("activation_id")}
    frame["intended_ns"] = [
        float(invocations.get(a, {}).get("intended_ns") or math.nan) for a in frame["activation_id"]
    ]
    frame["client_latency_ms"] = [
        (float(invocations[a]["done_ns"]) - float(invocations[a]["sent_ns"])) / 1e6
        if a in invocations and invocations[a].get("done_ns") and invocations[a].get("sent_ns")
        else math.nan
        for a in frame["activation_id"]
    ]
    # A batch: the invocations planned at the same instant (a Burst's simultaneous sends).
    planned = frame["intended_ns"].fillna(frame["start_ms"] * 1e6)
    frame["batch"] = pd.factorize(planned.round(-3), sort=True)[0]
    return frame.sort_values(["batch", "start_ms"]).reset_index(drop=True)


def within_tolerance(frame: pd.DataFrame) -> np.ndarray:
    """Per row: does the breakdown add up to the activation's run time (duration less initTime)
    within the tolerance?"""
    slack = np.maximum(TOLERANCE_MS, TOLERANCE_SHARE * frame["run_ms"].to_numpy())
    return np.abs(frame["unaccounted_ms"].to_numpy()) <= slack


def _billed_gb_s(duration_ms: np.ndarray, memory_mb: np.ndarray, unit_ms: float | None) -> float:
    billed_ms = duration_ms if unit_ms is None else np.ceil(duration_ms / unit_ms) * unit_ms
    return float(np.nansum(memory_mb / 1024.0 * billed_ms / 1000.0))


def batch_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per batch: concurrency, response time, cost and aggregate bandwidth."""
    rows = []
    for batch, group in frame.groupby("batch", sort=True):
        duration = group["duration_ms"].to_numpy(dtype=float)
        memory = group["memory_mb"].to_numpy(dtype=float)
        response_ms = float(group["end_ms"].max() - group["start_ms"].min())
        moved = float(group[[f"{name}_bytes" for name in ("network_in", "network_out")]].to_numpy().sum())
        rows.append(
            {
                "batch": int(batch),
                "concurrency": len(group),
                "memory_mb": float(np.nanmedian(memory)) if np.isfinite(memory).any() else math.nan,
                "response_ms": response_ms,
                "duration_ms_median": float(np.median(duration)),
                "client_latency_ms_max": float(group["client_latency_ms"].max()),
                "gb_s": _billed_gb_s(duration, memory, None),
                "gb_s_1ms": _billed_gb_s(duration, memory, 1.0),
                "gb_s_100ms": _billed_gb_s(duration, memory, 100.0),
                "network_bytes": moved,
                "aggregate_network_mb_per_s": moved / 1e6 / (response_ms / 1000.0)
                if response_ms > 0 and moved
                else math.nan,
                "network_mb_per_s_median": float(group["network_mb_per_s"].median()),
            }
        )
    return pd.DataFrame(rows)


def applies(manifest: rundir.Manifest) -> bool:
    """Whether a run invoked io-* functions or started storage (the analysis hook's guard, so a
    run of other functions never reads its records twice)."""
    workload = manifest.workload
    functions = [str((spec or {}).get("function", "")) for spec in manifest.instances.values()]
    return any(name.startswith("io-") for name in functions) or "storage" in (workload.get("as_given") or {})


def summarise(
    run_dir: str | os.PathLike, write: bool = True, warmup_batches: int = 0, out_dir: str | os.PathLike | None = None
) -> dict:
    """The study-point summary of one run; writes io_breakdown.csv and io_batches.csv into it
    (or into ``out_dir``; every batch, with a ``warmup`` column). The first ``warmup_batches`` batches (cold starts:
    sandboxes created) stay out of the summary's figures."""
    run_dir = Path(run_dir)
    frame = breakdown_frame(run_dir)
    if frame.empty:
        return {"format_version": FORMAT_VERSION, "invocations": 0}
    frame["warmup"] = frame["batch"] < warmup_batches
    batches = batch_frame(frame)
    batches["warmup"] = batches["batch"] < warmup_batches
    if write:
        target = Path(out_dir) if out_dir is not None else run_dir
        frame.to_csv(target / BREAKDOWN_FILE, index=False)
        batches.to_csv(target / BATCH_FILE, index=False)
    if (~frame["warmup"]).any():
        frame, batches = frame[~frame["warmup"]], batches[~batches["warmup"]]
    ok = within_tolerance(frame)
    summary = {
        "format_version": FORMAT_VERSION,
        "invocations": int(len(frame)),
        "warmup_batches": int(warmup_batches),
        "init_ms_median": float(frame["init_ms"].median()),
        "batches": int(len(batches)),
        "concurrency": int(batches["concurrency"].max()),
        "memory_mb": float(np.nanmedian(frame["memory_mb"])) if np.isfinite(frame["memory_mb"]).any() else None,
        "duration_ms_median": float(frame["duration_ms"].median()),
        "breakdown_ms_median": {phase: float(frame[f"{phase}_ms"].median()) for phase in PHASES},
        "unaccounted_ms_median": float(frame["unaccounted_ms"].median()),
        "breakdown_within_tolerance": float(ok.mean()),
        "network_mb_per_s_median": _finite(frame["network_mb_per_s"].median()),
        "disk_mb_per_s_median": _finite(frame["disk_mb_per_s"].median()),
        "aggregate_network_mb_per_s_median": _finite(batches["aggregate_network_mb_per_s"].median()),
        "response_ms_median": float(batches["response_ms"].median()),
        "gb_s_per_batch_median": {unit: float(batches[unit].median()) for unit in ("gb_s", "gb_s_1ms", "gb_s_100ms")},
        "bytes_total": {name: int(frame[f"{name}_bytes"].sum()) for name in BYTES},
        "sandbox_bytes_total": {name: _finite(frame[f"sandbox_{name}"].sum(min_count=1)) for name in SANDBOX},
    }
    return summary


def _finite(value) -> float | None:
    value = float(value)
    return value if math.isfinite(value) else None


def describe_text(summary: dict) -> list[str]:
    """A few lines for the run report (analysis hook)."""
    if not summary.get("invocations"):
        return []
    parts = summary["breakdown_ms_median"]
    lines = [
        f"I/O breakdown (median of {summary['invocations']} invocations): compute {parts['compute']:.1f} ms, disk {parts['disk']:.1f} ms, "
        f"network {parts['network']:.1f} ms, setup {parts['setup']:.1f} ms; unaccounted {summary['unaccounted_ms_median']:.1f} ms "
        f"({summary['breakdown_within_tolerance']:.0%} within ±max({TOLERANCE_MS:.0f} ms, {TOLERANCE_SHARE:.0%}) of the duration)",
    ]
    if summary.get("network_mb_per_s_median") is not None:
        lines.append(
            f"network bandwidth: {summary['network_mb_per_s_median']:.1f} MB/s per invocation, "
            f"{summary['aggregate_network_mb_per_s_median'] or 0:.1f} MB/s aggregate per batch (median)"
        )
    cost = summary["gb_s_per_batch_median"]
    lines.append(
        f"batch of {summary['concurrency']}: response {summary['response_ms_median']:.1f} ms, cost {cost['gb_s_1ms']:.4f} GB-s "
        f"(1 ms billing), {cost['gb_s_100ms']:.4f} GB-s (100 ms billing) (median per batch)"
    )
    return lines
