"""Parse the resctrl samples written by the rdt collector: cumulative byte counters → bandwidth.

Raw file (``monitors/rdt/resctrl_samples.csv``), one line per monitoring group, L3 domain and
sample, values exactly as read from ``mon_data/mon_L3_XX/``::

    elapsed_ns,group,domain,llc_occupancy,mbm_total_bytes,mbm_local_bytes
    0,faasprof-g0,00,1622016,813004800,801112064
    100213547,faasprof-g0,00,1638400,913107968,900022272

* ``llc_occupancy`` is bytes, a snapshot; ``mbm_*_bytes`` are cumulative counters, so bandwidth is
  Δbytes/Δt between consecutive samples of the same group and domain.
* ``Unavailable``/``Unassigned`` (or any non-integer) is missing data, never 0.
* A counter that goes backwards (reset, group recreated) gives a missing interval, not a negative
  bandwidth.
* The frame has one row per (sample, group), summed over L3 domains (sockets), from the second
  sample on: ``elapsed_s`` (end of the interval), ``interval_s``, ``llc_occupancy_bytes``,
  ``mem_bw_mbps`` (total, 10⁶ bytes/s), ``mem_bw_local_mbps``, ``mem_bw_remote_mbps`` (total − local).
"""

from __future__ import annotations

import csv
import io

from faasprof.monitoring.parsers.samples import require_header

RAW_COLUMNS = ("elapsed_ns", "group", "domain", "llc_occupancy", "mbm_total_bytes", "mbm_local_bytes")
COUNTERS = ("llc_occupancy", "mbm_total_bytes", "mbm_local_bytes")


def _int(text: str) -> int | None:
    text = (text or "").strip()
    return int(text) if text.isdigit() else None


def parse_resctrl_samples(text: str, per_domain: bool = False):
    import numpy as np
    import pandas as pd

    if not text.endswith("\n"):
        text = text[: text.rfind("\n") + 1]  # a line being written when the file was read
    reader = csv.reader(io.StringIO(text))
    header = next(reader, None)
    columns = [
        "elapsed_s",
        "interval_s",
        "group",
        "llc_occupancy_bytes",
        "mem_bw_mbps",
        "mem_bw_local_mbps",
        "mem_bw_remote_mbps",
    ]
    if per_domain:
        columns.insert(3, "domain")
    if header is None:
        return pd.DataFrame(columns=columns)
    require_header(header, ("elapsed_ns", "group", "domain"), "the rdt collector's resctrl_samples.csv")
    index = {name: header.index(name) for name in RAW_COLUMNS if name in header}
    rows = []
    for row in reader:
        if len(row) != len(header):
            continue
        elapsed = _int(row[index["elapsed_ns"]])
        if elapsed is None:
            continue
        rows.append(
            (
                elapsed,
                row[index["group"]],
                row[index["domain"]],
                *(_int(row[index[name]]) if name in index else None for name in COUNTERS),
            )
        )
    raw = pd.DataFrame(rows, columns=["elapsed_ns", "group", "domain", *COUNTERS])
    for name in COUNTERS:
        raw[name] = pd.to_numeric(raw[name], errors="coerce").astype("float64")
    raw = raw.sort_values(["group", "domain", "elapsed_ns"], kind="stable")
    by = raw.groupby(["group", "domain"], sort=False)
    dt_s = by["elapsed_ns"].diff() / 1e9
    out = pd.DataFrame(
        {
            "elapsed_s": raw["elapsed_ns"] / 1e9,
            "interval_s": dt_s,
            "group": raw["group"],
            "domain": raw["domain"],
            "llc_occupancy_bytes": raw["llc_occupancy"],
        }
    )
    for name, column in (("mbm_total_bytes", "mem_bw_mbps"), ("mbm_local_bytes", "mem_bw_local_mbps")):
        delta = by[name].diff()
        delta = delta.where(delta >= 0)  # a counter that went backwards: unknown, not negative
        out[column] = delta / dt_s / 1e6
    out["mem_bw_remote_mbps"] = (out["mem_bw_mbps"] - out["mem_bw_local_mbps"]).clip(lower=0)
    out = out[out["interval_s"].notna()]
    if per_domain:
        return out[columns].sort_values(["elapsed_s", "group", "domain"]).reset_index(drop=True)
    # Sum over domains; a sample is matched across domains by its time (they are read together).
    numeric = ["llc_occupancy_bytes", "mem_bw_mbps", "mem_bw_local_mbps", "mem_bw_remote_mbps"]
    out = out.assign(sample=raw.loc[out.index, "elapsed_ns"])
    summed = out.groupby(["sample", "group"], sort=True)[numeric].sum(min_count=1)
    times = out.groupby(["sample", "group"], sort=True)[["elapsed_s", "interval_s"]].first()
    result = times.join(summed).reset_index().drop(columns="sample")
    for name in numeric:
        result[name] = result[name].astype("float64")
    if result.empty:
        result["elapsed_s"] = np.array([], dtype="float64")
    return result[columns].sort_values(["elapsed_s", "group"], kind="stable").reset_index(drop=True)
