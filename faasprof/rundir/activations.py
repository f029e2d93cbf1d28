"""``activations.jsonl``: the raw activation records, written, appended and read back.

One raw record per line exactly as the platform returned it, ordered by ``start`` then id; written
by ``faasprof run`` when it owns the platform and by ``faasprof analyze`` otherwise (the fetching
lives with the platform). Their column index (``faasprof.rundir.record_columns``) is written
beside them as they pass; their Parquet copy (``record_parquet``) is removed (the analyzer
makes it again from the new file); the typed records frame is ``faasprof.rundir.records``. Here: the file's
place, its writers, and the readers that need a few records' raw JSON rather than the frame.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import IO, Iterable, Iterator

from faasprof.errors import FormatError
from faasprof.rundir import record_columns
from faasprof.rundir.layout import ACTIVATIONS, ACTIVATIONS_PARQUET, open_private, remove_quietly, temporary_beside

# A scan for a needle reads the file in blocks of this size (at ten million records the file is
# 5 GB; a block is never parsed, only searched).
SCAN_BLOCK_BYTES = 16 * 2**20


def activations_path(run_dir: str | os.PathLike) -> Path:
    """The run's ``activations.jsonl`` (it may not exist)."""
    return Path(run_dir) / ACTIVATIONS


def has_records(run_dir: str | os.PathLike) -> bool:
    """Whether the run's activation records were saved."""
    return activations_path(run_dir).exists()


def has_saved_records(run_dir: str | os.PathLike) -> bool:
    """Whether the run's records were saved: as ``activations.jsonl``, or as ``activations.parquet``
    alone once the raw file was removed to save disk (``record_parquet``: it then is the records)."""
    return has_records(run_dir) or raw_records_gone(run_dir)


def raw_records_gone(run_dir: str | os.PathLike) -> bool:
    """Whether ``activations.jsonl`` is gone and ``activations.parquet`` holds the run's records."""
    return not has_records(run_dir) and (Path(run_dir) / ACTIVATIONS_PARQUET).is_file()


def sort_records(records: Iterable[dict]) -> list[dict]:
    """Records in file order: by ``start``, then activation id."""
    return sorted(records, key=lambda r: (int(r.get("start") or 0), str(r.get("activationId"))))


def write_records(path: str | os.PathLike, records: Iterable[dict]) -> int:
    """Write raw records as JSON lines atomically (temporary file, fsync, rename); returns the count.

    Their column index (``faasprof.rundir.record_columns``) is written beside them as they pass, so
    that an analysis never parses them again."""
    path = Path(path)
    if raw_records_gone(path.parent):
        raise FormatError(
            f"{path.with_name(ACTIVATIONS_PARQUET)} holds this run's records (the raw {ACTIVATIONS} is gone): "
            "new records are not saved over them; move that file away first to save others"
        )
    tmp = temporary_beside(path)
    count = 0
    index = record_columns.ColumnsBuilder()
    try:
        with open_private(tmp, "wb") as handle:
            for record in records:
                line = json.dumps(record, separators=(",", ":")).encode("utf-8") + b"\n"
                handle.write(line)
                index.add(line)
                count += 1
            handle.flush()
            os.fsync(handle.fileno())
        record_columns.remove(path)  # an index of the file being replaced must never outlive it
        _remove_parquet(path)
        os.replace(tmp, path)
    except BaseException:
        remove_quietly(tmp)  # a full disk leaves the old file as it was, and no temporary beside it
        raise
    try:
        index.write(path)
    except OSError:  # the index only saves the next reader time; the records are saved
        record_columns.remove(path)
    return count


def _remove_parquet(path: Path) -> None:
    """The records' Parquet (``record_parquet``) of a file about to change: it would describe the old
    records, and stand for them once the raw file is gone."""
    remove_quietly(path.with_name(ACTIVATIONS_PARQUET))


def append_records(path: str | os.PathLike, records: Iterable[dict]) -> int:
    """Append raw records to an existing ``activations.jsonl`` (after a line cut short, if any).

    Its column index then covers a prefix of the file; readers parse the lines after it."""
    path = Path(path)
    count = 0
    _remove_parquet(path)
    with open(path, "rb+") as handle:
        handle.seek(0, os.SEEK_END)
        if handle.tell():
            handle.seek(-1, os.SEEK_END)
            if handle.read(1) != b"\n":
                handle.write(b"\n")
        for record in records:
            handle.write(json.dumps(record, separators=(",", ":")).encode("utf-8") + b"\n")
            count += 1
        handle.flush()
        os.fsync(handle.fileno())
    return count


def read_record_ids(path: str | os.PathLike) -> dict[str, dict]:
    """The records of an existing ``activations.jsonl`` by id (unreadable lines skipped; {} when absent)."""
    return read_records_counting_torn(path)[0]


def read_records_counting_torn(path: str | os.PathLike) -> tuple[dict[str, dict], int]:
    """The records of an existing ``activations.jsonl`` by id, and how many of its non-empty lines
    are not a record (cut mid-line by a crash or a copy, or otherwise unreadable); ({}, 0) when absent."""
    records: dict[str, dict] = {}
    torn = 0
    try:
        handle = open(path, "rb")
    except FileNotFoundError:
        return records, 0
    with handle:
        for line in handle:
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError:
                torn += 1
                continue
            if isinstance(record, dict) and isinstance(record.get("activationId"), str):
                records[record["activationId"]] = record
            else:
                torn += 1
    return records, torn


def whole_lines(path: str | os.PathLike) -> tuple[int, bool]:
    """``(lines ending in a newline, whether the file ends in a line cut short)`` of a records file,
    counted in ``SCAN_BLOCK_BYTES`` blocks without parsing; (0, False) when it is absent."""
    lines = 0
    last = b"\n"
    try:
        handle = open(path, "rb")
    except FileNotFoundError:
        return 0, False
    with handle:
        while block := handle.read(SCAN_BLOCK_BYTES):
            lines += block.count(b"\n")
            last = block[-1:]
    return lines, last != b"\n"


def iter_records(run_dir: str | os.PathLike, containing: bytes | None = None) -> Iterator[dict]:
    """The run's raw records as dicts, in file order; with ``containing``, only the lines that hold
    those bytes are parsed. A line that is not a JSON object (one cut short by a crash) is
    skipped. ``FormatError`` when the run saved no records."""
    path = activations_path(run_dir)
    try:
        handle = open(path, "rb")
    except FileNotFoundError:
        raise FormatError(
            f"{path}: missing; run `faasprof analyze` on the run first (it fetches the activation records)"
        ) from None
    return _records_of(handle, containing)


def _records_of(handle: IO[bytes], containing: bytes | None) -> Iterator[dict]:
    with handle:
        for line in handle:
            if containing is not None and containing not in line:
                continue
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict):
                yield record


def records_mention(path: str | os.PathLike, needle: bytes) -> bool:
    """Whether any line of a records file holds ``needle``: the column index knows when it is
    current and counted it (``record_fields.COUNTED_MENTIONS``); otherwise the file is scanned."""
    known = record_columns.mentioned(path, needle)
    return known if known is not None else scan_mentions(path, needle)


def scan_mentions(path: str | os.PathLike, needle: bytes) -> bool:
    """Whether the file holds ``needle`` anywhere: a scan in ``SCAN_BLOCK_BYTES`` blocks, no parsing."""
    return bool(record_columns.scan_file(path, needles=(needle,), crc=False, block_bytes=SCAN_BLOCK_BYTES)[3][needle])
