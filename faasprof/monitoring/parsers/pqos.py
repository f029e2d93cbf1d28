"""Parse ``pqos`` monitoring output (intel-cmt-cat 4.x … 26.x), CSV (``-u csv``) and text.

Units as pqos prints them: ``LLC[KB]`` is occupancy in KiB (a snapshot), ``MB?[MB/s]`` are **MiB/s**
averaged over the interval, ``LLC Misses`` is a raw count per interval (text mode prints thousands
with a ``k`` suffix), ``IPC`` is per interval. The frames keep pqos's values under unit-named
columns (``llc_kib``, ``mbl_mibps``…) and add ``mem_bw_mbps`` (10⁶ bytes/s: MBT, or MBL+MBR).

Samples are grouped by block (one row per monitored group per sample), never by ``Time``: the time
stamp has a one-second resolution, so several samples share it at ``-i`` below 10. The first
sample covers almost no time (pqos takes it right after monitoring starts) and is dropped unless
``drop_first=False``.
"""

from __future__ import annotations

import csv
import io
import re

MIB = 1024 * 1024

# pqos header → column name of the frame.
_HEADER = {
    "time": "time",
    "core": "group",
    "pid": "pids",
    "socket": "group",
    "channel": "group",
    "rmid": "rmid",
    "ipc": "ipc",
    "llc misses": "llc_misses",
    "misses": "llc_misses",
    "llc references": "llc_references",
    "references": "llc_references",
    "llc[kb]": "llc_kib",
    "llc[%]": "llc_pct",
    "mbl[mb/s]": "mbl_mibps",
    "mbr[mb/s]": "mbr_mibps",
    "mbt[mb/s]": "mbt_mibps",
}
_NUMERIC = ("ipc", "llc_misses", "llc_references", "llc_kib", "llc_pct", "mbl_mibps", "mbr_mibps", "mbt_mibps")


def _number(text: str) -> float | None:
    text = text.strip()
    if not text:
        return None
    multiplier = 1.0
    if text[-1] in "kK":  # text mode prints misses as thousands: 9013k
        multiplier, text = 1000.0, text[:-1]
    try:
        return float(text) * multiplier
    except ValueError:
        return None


def _frame(records: list[dict], drop_first: bool, interval_s: float | None):
    import numpy as np
    import pandas as pd

    # Sample blocks: a group seen again starts a new sample.
    sample = 0
    seen: set[tuple[object, object]] = set()
    for record in records:
        key = (record.get("group"), record.get("pids"))
        if key in seen:
            sample, seen = sample + 1, set()
        seen.add(key)
        record["sample"] = sample
    frame = pd.DataFrame.from_records(records)
    if frame.empty:
        frame = pd.DataFrame(columns=["sample", "time", "group", *_NUMERIC])
    for column in _NUMERIC:
        if column in frame.columns:
            frame[column] = pd.to_numeric(frame[column], errors="coerce").astype("float64")
    if drop_first and not frame.empty:
        frame = frame[frame["sample"] > 0].reset_index(drop=True)
    if interval_s is not None:
        frame["elapsed_s"] = frame["sample"].astype("float64") * interval_s
    elif "time" in frame.columns and not frame.empty:
        stamps = pd.to_datetime(frame["time"], errors="coerce")
        frame["elapsed_s"] = (stamps - stamps.min()).dt.total_seconds()
    else:
        frame["elapsed_s"] = np.nan
    if "mbt_mibps" in frame.columns:
        frame["mem_bw_mbps"] = frame["mbt_mibps"] * MIB / 1e6
    elif "mbl_mibps" in frame.columns:
        remote = frame["mbr_mibps"].fillna(0.0) if "mbr_mibps" in frame.columns else 0.0
        frame["mem_bw_mbps"] = (frame["mbl_mibps"] + remote) * MIB / 1e6
    if "mbl_mibps" in frame.columns:
        frame["mem_bw_local_mbps"] = frame["mbl_mibps"] * MIB / 1e6
    if "mbr_mibps" in frame.columns:
        frame["mem_bw_remote_mbps"] = frame["mbr_mibps"] * MIB / 1e6
    if "llc_kib" in frame.columns:
        frame["llc_occupancy_bytes"] = frame["llc_kib"] * 1024
    return frame


def parse_pqos_csv(text: str, drop_first: bool = True, interval_s: float | None = None):
    """Frame of ``pqos -u csv`` output; ``interval_s`` (``-i`` × 0.1 s) gives ``elapsed_s``
    = sample × interval; without it ``elapsed_s`` comes from the one-second ``Time`` column."""
    lines = [line for line in text.splitlines() if line.strip()]
    header_at = next((i for i, line in enumerate(lines) if line.lower().startswith("time,")), None)
    if header_at is None:
        return _frame([], drop_first, interval_s)
    body = lines[header_at:]
    if not text.endswith("\n") and len(body) > 1:
        body = body[:-1]  # the last row was being written when the file was read
    rows = list(csv.reader(io.StringIO("\n".join(body))))
    header = [_HEADER.get(name.strip().lower(), name.strip().lower()) for name in rows[0]]
    n_labels = sum(1 for name in header if name in ("time", "group", "pids", "rmid"))
    n_values = len(header) - n_labels
    records = []
    for row in rows[1:]:
        if not row or row[0].lower().startswith("time"):
            continue
        if len(row) > len(header):
            # Old pqos left the core list unquoted ("0-15,32-47" splits): count from the right;
            # the last label column takes the extra fields back.
            cut = len(row) - n_values
            row = row[: n_labels - 1] + [",".join(row[n_labels - 1 : cut])] + row[cut:]
        if len(row) != len(header):
            continue
        records.append(dict(zip(header, (cell.strip() for cell in row))))
    return _frame(records, drop_first, interval_s)


_TIME_LINE = re.compile(r"^TIME\s+(.*\S)\s*$")


def parse_pqos_text(text: str, drop_first: bool = True, interval_s: float | None = None):
    """Frame of pqos's default text output (``TIME …`` blocks with a header and one row per group).

    Columns are split on whitespace, never by position (widths changed across versions). Group
    labels are truncated to 8 characters by pqos itself.
    """
    records: list[dict] = []
    current_time, header = None, None
    for line in text.splitlines():
        match = _TIME_LINE.match(line.strip())
        if match:
            current_time, header = match.group(1), None
            continue
        stripped = line.strip()
        if not stripped or current_time is None:
            continue
        tokens = stripped.split()
        if tokens[0].upper() in ("CORE", "PID", "SOCKET", "CHANNEL"):
            header = [_HEADER.get(token.lower(), token.lower()) for token in tokens]
            continue
        if header is None or len(tokens) != len(header):
            continue  # log lines (NOTE:, WARN:) and rows cut short
        record = {"time": current_time}
        for name, token in zip(header, tokens):
            record[name] = _number(token) if name in _NUMERIC else token
        records.append(record)
    return _frame(records, drop_first, interval_s)


def parse_pqos(text: str, drop_first: bool = True, interval_s: float | None = None):
    """CSV or text, whichever ``text`` is."""
    if any(line.lower().startswith("time,") for line in text.splitlines()[:20]):
        return parse_pqos_csv(text, drop_first, interval_s)
    return parse_pqos_text(text, drop_first, interval_s)
