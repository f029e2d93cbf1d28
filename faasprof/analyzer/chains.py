"""Function chains (STeLLAR's data-transfer study): per chain end-to-end, per hop transfer.

A chain is N invocations of ``faasprof/functions/chain_hop``, each calling the next through the platform's
REST API (blocking) and handing it P bytes inline (in the parameters) or through storage (an
object the producer writes and the consumer reads). The head's activation record carries, in its
result, the wall-clock timestamps of every hop (``hops``: start, send start, received, end).

Definitions (all on the host's wall clock, ``time.time_ns`` in every hop; one host, so no skew):

- transfer latency of hop k (k = 0..N-2): from the producer starting to make the payload
  (``send_start_ns`` of hop k) to the consumer holding it in memory (``received_ns`` of hop k+1).
  It includes everything a real hand-over costs: producing, the object write, the platform's
  invocation path (queueing, a cold start of the consumer), the object read.
- effective bandwidth of hop k: P / transfer latency, in MB/s (10^6 bytes).
- end-to-end latency of a chain: from the head's start to the last hop's end (``chain_ms``), and
  the client's latency of the head invocation (``client_latency_ms``).
- warm transfer: the hand-overs whose consumer was already running (the hop reports ``cold``
  for the first activation of its process), so cold starts do not hide the transfer itself.

Only heads the run sent (matched to ``invocations.csv``) are chains; their inner activations are
records of the same chain, not invocations of the run.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from faasprof import rundir
from faasprof.analyzer.summary import Summary
from faasprof.analyzer.templating import Table
from faasprof.rundir import record_fields

RULE = (
    "transfer = consumer received − producer send start (payload made, stored or put in the parameters, invoked, read); "
    "bandwidth = P / transfer (MB/s, 10^6 bytes); end to end = last hop end − head start"
)


HOPS_KEY = (
    record_fields.CHAIN_RESULT_KEY
)  # the key of a chain head's result (the records' column index counts its lines)


def chain_results(run_dir: str | os.PathLike, head_ids: set[str]) -> dict[str, dict]:
    """activation id -> result of the heads in ``head_ids`` whose result has ``hops``."""
    out: dict[str, dict] = {}
    if not holds_chains(run_dir):
        return out  # no chain heads: the records are not parsed a second time
    for record in rundir.iter_records(run_dir, containing=HOPS_KEY):
        if record.get("activationId") not in head_ids:
            continue
        result = (record.get("response") or {}).get("result")
        if isinstance(result, dict) and isinstance(result.get("hops"), list):
            out[record["activationId"]] = result
    return out


def holds_chains(run_dir: str | os.PathLike) -> bool:
    """Whether any record mentions ``HOPS_KEY`` (the records' column index knows when it is current:
    at ten million records, a scan reads 5 GB)."""
    return rundir.has_records(run_dir) and rundir.records_mention(rundir.activations_path(run_dir), HOPS_KEY)


def hop_frame(run_dir: Path, invocations: pd.DataFrame) -> pd.DataFrame:
    """One row per chain × hop hand-over (N−1 per chain), plus a row per chain with ``hop = -1``
    carrying its end-to-end figures. Empty when the run has no chains."""
    if not holds_chains(run_dir):
        return pd.DataFrame([])
    ids = invocations["activation_id"].astype(object).fillna("").to_numpy()
    heads = {str(i) for i in ids if i}
    results = chain_results(run_dir, heads)
    if not results:
        return pd.DataFrame([])
    invocations = invocations[invocations["activation_id"].isin(list(results)).to_numpy()]
    rows = []
    for row in invocations[
        [c for c in ("instance", "function", "activation_id", "client_latency_ms") if c in invocations.columns]
    ].itertuples(index=False):
        result = results.get(str(row.activation_id))
        if result is None:
            continue
        hops = [h for h in result["hops"] if isinstance(h, dict)]
        if not hops:
            continue
        head = hops[0]
        payload_bytes = int(head.get("payload_bytes") or 0)
        base = {
            "instance": str(row.instance),
            "function": str(row.function),
            "chain_id": str(row.activation_id),
            "mode": str(head.get("mode")),
            "payload_bytes": payload_bytes,
            "chain_length": len(hops),
            "complete": "error" not in result and len(hops) == int(head.get("hops_left") or len(hops)),
        }
        end = hops[-1].get("end_ns")
        rows.append(
            {
                **base,
                "hop": -1,
                "transfer_ms": math.nan,
                "bandwidth_mbps": math.nan,
                "chain_ms": (end - head["start_ns"]) / 1e6 if end and head.get("start_ns") else math.nan,
                "client_latency_ms": float(row.client_latency_ms),
            }
        )
        for k in range(len(hops) - 1):
            sent, received = hops[k].get("send_start_ns"), hops[k + 1].get("received_ns")
            transfer_ms = (received - sent) / 1e6 if sent and received else math.nan
            bandwidth = payload_bytes / (transfer_ms / 1e3) / 1e6 if transfer_ms and transfer_ms > 0 else math.nan
            rows.append(
                {
                    **base,
                    "hop": k,
                    "transfer_ms": transfer_ms,
                    "bandwidth_mbps": bandwidth,
                    "chain_ms": math.nan,
                    "client_latency_ms": math.nan,
                    "received_bytes": int(hops[k + 1].get("received_bytes") or 0),
                    "consumer_cold": bool(hops[k + 1].get("cold")),
                }
            )
    return pd.DataFrame(rows)


def chain_summary(run) -> dict | None:
    """``summary.json``'s ``chains``: per configuration (instance, mode, P, N) the end-to-end and
    per-hop medians and p99; ``None`` when the run has no chains."""
    frame = hop_frame(run.path, run.invocations)
    if frame.empty:
        return None
    groups = []
    for (instance, mode, payload, length), rows in frame.groupby(
        ["instance", "mode", "payload_bytes", "chain_length"], sort=True
    ):
        chains = rows[rows["hop"] == -1]
        entry = {
            "instance": instance,
            "mode": mode,
            "payload_bytes": int(payload),
            "chain_length": int(length),
            "chains": int(len(chains)),
            "complete": int(chains["complete"].sum()),
            "chain_ms_p50": _q(chains["chain_ms"], 0.5),
            "chain_ms_p99": _q(chains["chain_ms"], 0.99),
            "client_latency_ms_p50": _q(chains["client_latency_ms"], 0.5),
            "hops": [],
        }
        for hop, hop_rows in rows[rows["hop"] >= 0].groupby("hop", sort=True):
            entry["hops"].append(
                {
                    "hop": int(hop),
                    "n": int(len(hop_rows)),
                    "transfer_ms_p50": _q(hop_rows["transfer_ms"], 0.5),
                    "transfer_ms_p99": _q(hop_rows["transfer_ms"], 0.99),
                    "transfer_ms_mean": float(hop_rows["transfer_ms"].mean()),
                    "bandwidth_mbps_p50": _q(hop_rows["bandwidth_mbps"], 0.5),
                    "warm_n": int(warm_mask(hop_rows).sum()),
                    "warm_transfer_ms_p50": _q(hop_rows.loc[warm_mask(hop_rows), "transfer_ms"], 0.5),
                    "warm_bandwidth_mbps_p50": _q(hop_rows.loc[warm_mask(hop_rows), "bandwidth_mbps"], 0.5),
                }
            )
        groups.append(entry)
    return {"rule": RULE, "groups": groups}


def warm_mask(rows: pd.DataFrame) -> pd.Series:
    """Hand-overs whose consumer was already running (no cold start inside the transfer)."""
    return ~rows["consumer_cold"].astype(bool)


def _q(series: pd.Series, p: float) -> float | None:
    values = series.to_numpy(dtype="float64")
    values = values[np.isfinite(values)]
    return float(np.quantile(values, p)) if len(values) else None


CHAIN_HEADERS = [
    "instance",
    "mode",
    "payload B",
    "N",
    "chains",
    "complete",
    "end-to-end p50 ms",
    "end-to-end p99 ms",
    "client p50 ms",
]
HOP_HEADERS = [
    "instance",
    "mode",
    "payload B",
    "hop",
    "n",
    "transfer p50 ms",
    "transfer p99 ms",
    "bandwidth p50 MB/s",
    "warm n",
    "warm transfer p50 ms",
    "warm bandwidth p50 MB/s",
]


@dataclass
class ChainsView:
    """The report's chains section (the ``chains`` block of templates/report.html)."""

    chains: Table  # a row per configuration (instance, mode, payload)
    hops: Table  # a row per configuration and hop
    rule: str


def report_view(summary: Summary) -> ChainsView | None:
    """The report's chains per configuration and the transfer latency of every hop; None without chains."""
    block = summary.get("chains")
    if not block:
        return None
    chain_rows, hop_rows = [], []
    for g in block["groups"]:
        chain_rows.append(
            [
                g["instance"],
                g["mode"],
                g["payload_bytes"],
                g["chain_length"],
                g["chains"],
                g["complete"],
                g["chain_ms_p50"],
                g["chain_ms_p99"],
                g["client_latency_ms_p50"],
            ]
        )
        for h in g["hops"]:
            hop_rows.append(
                [
                    g["instance"],
                    g["mode"],
                    g["payload_bytes"],
                    f"{h['hop']}→{h['hop'] + 1}",
                    h["n"],
                    h["transfer_ms_p50"],
                    h["transfer_ms_p99"],
                    h["bandwidth_mbps_p50"],
                    h["warm_n"],
                    h["warm_transfer_ms_p50"],
                    h["warm_bandwidth_mbps_p50"],
                ]
            )
    return ChainsView(Table(CHAIN_HEADERS, chain_rows, left=2), Table(HOP_HEADERS, hop_rows, left=2), RULE)
