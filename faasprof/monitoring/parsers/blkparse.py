"""Parse ``blkparse`` default text output into events and per-interval block I/O figures.

Line layout (``%3d,%-3d %2d %8d %5d.%09lu %5u %2s %3s`` then a per-action tail)::

    8,64  11     2956    33.791612977 90790  D  WS 7614368 + 8 [fio]
    8,64  11     2957    33.799933777     0  C  WS 7614368 + 8 [0]

Columns are split on whitespace (wide PIDs and sequence numbers push them right). Times are
seconds since the earliest event of the trace (blkparse's "genesis"), not wall clock. Lines that do
not match (``Input file … added``, the per-CPU and total summaries, ``m`` messages' free text) are
skipped.

Per interval (:func:`blk_intervals`), as btt counts them:

* throughput and IOPS from completions (``C``) only, reads and writes told apart by the RWBS string
  (a leading ``F`` = preflush is skipped; ``N``, flush-only and discards count as neither);
* D2C latency (issue → complete): each ``D`` is remembered by (device, sector) and matched by the
  next ``C`` at that key; the latency goes to the completion's interval. Completions whose issue
  happened before tracing started are not matched and do not count toward latency.
* MB/s are 10⁶ bytes per second; sizes are 512-byte blocks.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_LINE = re.compile(r"^\s*(\d+),(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\.(\d{9})\s+(\d+)\s+([A-Za-z]{1,2})\s+(\S+)\s?(.*)$")
_RANGE = re.compile(r"^(\d+)\s+\+\s+(\d+)")
SECTOR_BYTES = 512


@dataclass(frozen=True)
class BlkEvent:
    device: str  # "maj,min"
    cpu: int
    seq: int
    time_s: float
    pid: int
    action: str
    rwbs: str
    sector: int | None
    nblocks: int | None
    tail: str


def parse_blkparse_line(line: str) -> BlkEvent | None:
    match = _LINE.match(line)
    if not match:
        return None
    major, minor, cpu, seq, sec, nsec, pid, action, rwbs, tail = match.groups()
    sector = nblocks = None
    found = _RANGE.match(tail)
    if found:
        sector, nblocks = int(found.group(1)), int(found.group(2))
    return BlkEvent(
        device=f"{major},{minor}",
        cpu=int(cpu),
        seq=int(seq),
        time_s=int(sec) + int(nsec) / 1e9,
        pid=int(pid),
        action=action,
        rwbs=rwbs,
        sector=sector,
        nblocks=nblocks,
        tail=tail,
    )


def parse_blkparse_events(text: str):
    """All events as a frame: device, cpu, seq, time_s, pid, action, rwbs, sector, nblocks."""
    import pandas as pd

    events = [event for event in map(parse_blkparse_line, text.splitlines()) if event is not None]
    columns = ["device", "cpu", "seq", "time_s", "pid", "action", "rwbs", "sector", "nblocks"]
    frame = pd.DataFrame([[getattr(e, c) for c in columns] for e in events], columns=columns)
    for column in ("sector", "nblocks"):
        frame[column] = pd.to_numeric(frame[column], errors="coerce").astype("float64")
    return frame


def direction(rwbs: str) -> str | None:
    """``"read"``, ``"write"`` or None (no data, flush-only, discard) from an RWBS string."""
    body = rwbs[1:] if rwbs.startswith("F") else rwbs
    if body.startswith("R"):
        return "read"
    if body.startswith("W"):
        return "write"
    return None


def blk_intervals(text: str, interval_s: float = 1.0, marker: str | None = None):
    """Per-interval, per-device read/write MB/s and IOPS and D2C latency from blkparse text.

    Columns: ``elapsed_s`` (start of the interval, seconds since the first event, or since the
    ``m`` message containing ``marker`` when given and found), ``device``, ``read_mbps``,
    ``write_mbps``, ``read_iops``, ``write_iops``, ``completions``, ``d2c_mean_ms``,
    ``d2c_max_ms``, ``d2c_n``. ``frame.attrs["marker_s"]`` is the marker's trace time (or None).
    """
    import math

    import pandas as pd

    if interval_s <= 0:
        raise ValueError("interval_s must be > 0")
    events = [event for event in map(parse_blkparse_line, text.splitlines()) if event is not None]
    origin = 0.0
    marker_s = None
    if marker:
        for event in events:
            if event.action == "m" and marker in event.tail:
                marker_s = origin = event.time_s
                break
    pending: dict[tuple[str, int], float] = {}
    buckets: dict[tuple[int, str], dict[str, float]] = {}

    def bucket_of(event: BlkEvent) -> dict[str, float]:
        key = (math.floor((event.time_s - origin) / interval_s), event.device)
        if key not in buckets:
            buckets[key] = {
                "read_bytes": 0.0,
                "write_bytes": 0.0,
                "reads": 0,
                "writes": 0,
                "completions": 0,
                "d2c_sum": 0.0,
                "d2c_max": math.nan,
                "d2c_n": 0,
            }
        return buckets[key]

    for event in events:
        if event.action == "D" and event.sector is not None:
            pending[(event.device, event.sector)] = event.time_s
        elif event.action == "C" and event.sector is not None:
            kind = direction(event.rwbs)
            slot = bucket_of(event)
            slot["completions"] += 1
            if kind is not None and event.nblocks:
                slot[f"{kind}_bytes"] += event.nblocks * SECTOR_BYTES
                slot[f"{kind}s"] += 1
            issued = pending.pop((event.device, event.sector), None)
            if issued is not None and event.time_s >= issued:
                latency = event.time_s - issued
                slot["d2c_sum"] += latency
                slot["d2c_n"] += 1
                slot["d2c_max"] = latency if math.isnan(slot["d2c_max"]) else max(slot["d2c_max"], latency)
    rows = []
    for (index, device), slot in sorted(buckets.items()):
        rows.append(
            {
                "elapsed_s": index * interval_s,
                "device": device,
                "read_mbps": slot["read_bytes"] / interval_s / 1e6,
                "write_mbps": slot["write_bytes"] / interval_s / 1e6,
                "read_iops": slot["reads"] / interval_s,
                "write_iops": slot["writes"] / interval_s,
                "completions": slot["completions"],
                "d2c_mean_ms": slot["d2c_sum"] / slot["d2c_n"] * 1e3 if slot["d2c_n"] else math.nan,
                "d2c_max_ms": slot["d2c_max"] * 1e3,
                "d2c_n": slot["d2c_n"],
            }
        )
    columns = [
        "elapsed_s",
        "device",
        "read_mbps",
        "write_mbps",
        "read_iops",
        "write_iops",
        "completions",
        "d2c_mean_ms",
        "d2c_max_ms",
        "d2c_n",
    ]
    frame = pd.DataFrame(rows, columns=columns)
    frame.attrs["marker_s"] = marker_s
    return frame
