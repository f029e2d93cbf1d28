"""The plan (``plan.bin``), the send journal (``sends.csv``) and the reconstruction of a torn run.

A torn run (the invoker killed, the disk full) is reconstructed by every reader: the plan says what
was due, the journal what was sent, the rows what was answered. A planned invocation without a row
becomes ``unanswered`` when the journal has its send, ``unrecorded`` when nothing of it survived.
The rows present are never taken for the plan. A format-1 run has no plan: its missing rows are
only counted, from the manifest's planned count (``uncounted``).

``plan.bin``: the magic line ``faasprof-plan 1``, a JSON line (count, byte order, instances,
functions), then the int64 intended times and the int32 instance indices. ``sends.csv``: the
header ``seq,sent_ns`` and one line per request written, on disk within a second of the send (the
writer is ``faasprof.rundir.invocation_log.InvocationLog``).
"""

from __future__ import annotations

import json
import os
import sys
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Collection, Iterable

from faasprof.errors import ConfigError, FormatError
from faasprof.rundir.layout import PLAN, SENDS, open_private
from faasprof.rundir.manifest import Manifest, read_manifest

PLAN_MAGIC = b"faasprof-plan 1\n"
UNANSWERED_ERROR = "sent, but the run stopped before its answer was recorded (torn run; see the manifest's status)"
UNRECORDED_ERROR = "planned, but neither its row nor its send survived the crash (it may or may not have been sent)"


@dataclass
class Plan:
    """The planned schedule as written before the first send: seq ``i`` is due at ``intended_ns[i]``."""

    intended_ns: array  # 'q'
    instance_idx: array  # 'i'
    instance_names: list[str]
    functions: list[str]

    def __len__(self) -> int:
        return len(self.intended_ns)


def write_plan(
    run_dir: str | os.PathLike,
    intended_ns: Any,
    instance_idx: Any,
    instance_names: Iterable[str],
    functions: Iterable[str],
) -> None:
    """``plan.bin``: a magic line, a JSON line (count, instances), then int64 times and int32 owners.

    ``intended_ns`` and ``instance_idx`` are anything with the buffer protocol in native byte
    order (numpy arrays, ``array``); the file states the byte order it was written in.
    """
    times, owners = memoryview(intended_ns).cast("B"), memoryview(instance_idx).cast("B")
    count = len(times) // 8
    if len(owners) // 4 != count:
        raise ValueError("plan: intended_ns (int64) and instance_idx (int32) differ in length")
    header = {
        "count": count,
        "byteorder": sys.byteorder,
        "instances": list(instance_names),
        "functions": list(functions),
    }
    path = Path(run_dir) / PLAN
    with open_private(path, "xb") as handle:
        handle.write(PLAN_MAGIC)
        handle.write(json.dumps(header).encode() + b"\n")
        handle.write(times)
        handle.write(owners)
        handle.flush()
        os.fsync(handle.fileno())


def read_plan(run_dir: str | os.PathLike) -> Plan | None:
    """The run's plan, or None when it has none (format version 1, or it stopped before writing it)."""
    path = Path(run_dir) / PLAN
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    try:
        if not data.startswith(PLAN_MAGIC):
            raise ValueError("not a faasprof plan")
        end = data.index(b"\n", len(PLAN_MAGIC))
        header = json.loads(data[len(PLAN_MAGIC) : end])
        count = int(header["count"])
        body = memoryview(data)[end + 1 :]
        if len(body) != count * 12:
            raise ValueError(f"{len(body)} bytes for {count} invocations")
        times, owners = array("q"), array("i")
        times.frombytes(body[: count * 8])
        owners.frombytes(body[count * 8 :])
        if header.get("byteorder", sys.byteorder) != sys.byteorder:
            times.byteswap()
            owners.byteswap()
        names, functions = list(header["instances"]), list(header["functions"])
    except (ValueError, KeyError, TypeError) as error:
        raise FormatError(
            f"{path}: unreadable ({error}); the run's plan is damaged, so a torn run cannot be reconstructed"
        ) from None
    return Plan(times, owners, names, functions)


def read_sends(run_dir: str | os.PathLike) -> dict[int, int]:
    """The send journal as ``{seq: sent_ns}`` (a line cut short by a crash is dropped)."""
    path = Path(run_dir) / SENDS
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    sends: dict[int, int] = {}
    for line in text[: text.rfind("\n") + 1].splitlines()[1:]:
        seq, _, sent = line.partition(",")
        try:
            sends[int(seq)] = int(sent)
        except ValueError:
            continue
    return sends


@dataclass
class Completeness:
    """How the rows on disk compare with the plan: what ``analyze`` states about a torn run."""

    planned: int | None  # None: unknown (a version-1 run without counts)
    rows: int
    unanswered: int = 0  # reconstructed: journal says sent, no row
    unrecorded: int = 0  # reconstructed: planned, no row, no journal line
    uncounted: int = 0  # missing but not reconstructable (no plan file): counted only
    plan_source: str = PLAN
    notes: list[str] = field(default_factory=list)

    @property
    def missing(self) -> int:
        return self.unanswered + self.unrecorded + self.uncounted

    def to_json(self) -> dict:
        return {
            "planned": self.planned,
            "rows": self.rows,
            "rows_missing": self.missing,
            "unanswered": self.unanswered,
            "unrecorded": self.unrecorded,
            "uncounted": self.uncounted,
            "plan_source": self.plan_source,
        }

    def describe(self) -> str | None:
        """One line for a torn run, None for a whole one."""
        if not self.missing:
            return None
        parts = []
        if self.unanswered:
            parts.append(f"{self.unanswered:,} sent without a recorded answer (unanswered)")
        if self.unrecorded:
            parts.append(f"{self.unrecorded:,} with neither row nor send on disk (unrecorded)")
        if self.uncounted:
            parts.append(
                f"{self.uncounted:,} that cannot be reconstructed (a format-1 run has no plan or send journal)"
            )
        return f"torn run: {self.missing:,} of {self.planned:,} planned invocations have no row: " + "; ".join(parts)


def reconstruct_missing(
    run_dir: str | os.PathLike, present_seqs: Iterable[int], manifest: Manifest | None = None, *, distinct: bool = False
) -> tuple[list[tuple], Completeness]:
    """Rows (``INVOCATION_COLUMNS`` tuples) for every planned invocation without one, and the tally.

    The plan comes from ``plan.bin``; a run without one (format 1) falls back to the manifest's
    planned count, which can only be counted. ``present_seqs`` are the seqs of the rows read;
    ``distinct`` says they hold no seq twice (a sized sequence, an array of ten million included,
    then taken as it is).
    """
    run_dir = Path(run_dir)
    present = present_seqs if distinct and isinstance(present_seqs, Collection) else list(present_seqs)
    plan = read_plan(run_dir)
    if plan is None:
        if manifest is None:
            try:
                manifest = read_manifest(run_dir)
            except (FormatError, ConfigError):
                manifest = None
        planned = manifest.planned if manifest is not None else None
        missing = max(0, planned - (len(present) if distinct else len(set(present)))) if planned is not None else 0
        return [], Completeness(
            planned, len(present), uncounted=missing, plan_source="manifest counts" if planned else "none"
        )
    n = len(plan)
    seen = bytearray(n)
    for seq in present:
        if 0 <= seq < n:
            seen[seq] = 1
    report = Completeness(n, len(present))
    if seen.count(0) == 0:
        return [], report
    sends = read_sends(run_dir)
    rows: list[tuple] = []
    names, functions, intended, owners = plan.instance_names, plan.functions, plan.intended_ns, plan.instance_idx
    seq = seen.find(0)
    while seq >= 0:
        owner = owners[seq]
        sent_ns = sends.get(seq)
        if sent_ns is not None:
            rows.append(
                (
                    seq,
                    names[owner],
                    functions[owner],
                    intended[seq],
                    sent_ns,
                    None,
                    "unanswered",
                    None,
                    None,
                    UNANSWERED_ERROR,
                )
            )
            report.unanswered += 1
        else:
            rows.append(
                (
                    seq,
                    names[owner],
                    functions[owner],
                    intended[seq],
                    None,
                    None,
                    "unrecorded",
                    None,
                    None,
                    UNRECORDED_ERROR,
                )
            )
            report.unrecorded += 1
        seq = seen.find(0, seq + 1)
    return rows, report
