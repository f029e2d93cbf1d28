"""The Azure Functions traces as published, read row by row in bounded memory.

Layouts (Shahrad et al., ATC'20; the AzurePublicDataset descriptions):

- 2019, per day ``dNN``: ``invocations_per_function_md.anon.dNN.csv`` (``HashOwner, HashApp,
  HashFunction, Trigger``, then one column per minute labelled ``1``..``1440``: the invocations in
  that minute), ``function_durations_percentiles.anon.dNN.csv`` (``HashOwner, HashApp, HashFunction,
  Average, Count, Minimum, Maximum, percentile_Average_{0,1,25,50,75,99,100}``, ms) and
  ``app_memory_percentiles.anon.dNN.csv`` (``HashOwner, HashApp, SampleCount, AverageAllocatedMb,
  AverageAllocatedMb_pct{1,5,25,50,75,95,99,100}``).
- InVitro's samples: the same three layouts, the minute columns keeping the day's labels (``900,
  901, ...``); a file is known by its header, never by its name.
- 2021: one row per invocation, ``app, func, end_timestamp, duration`` (seconds since the trace's
  start); the start is ``end - duration``. It is folded into the 2019 shapes: per-minute counts
  by start minute, and duration percentiles from a bounded, seeded reservoir of each function's
  durations (2021 has no memory).

A day's invocation file is ~150 MB: every reader streams it (``csv`` over the open file, each
physical line held to ``MAX_LINE_BYTES``), keeping only the rows and minutes asked for. A bad row
is one ``TraceFileError`` naming the file, the row (1 is the header) and the column.
"""

from __future__ import annotations

import csv
import glob
import math
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

import numpy as np

from faasprof.errors import ConfigError

MAX_LINE_BYTES = 1 << 20  # a 1,440-minute row is ~10 kB; a line past this is no trace row
MINUTES_PER_DAY = 1440
KEY_COLUMNS = ("HashOwner", "HashApp", "HashFunction", "Trigger")
DURATION_PERCENTILES = (0, 1, 25, 50, 75, 99, 100)
MEMORY_PERCENTILES = (1, 5, 25, 50, 75, 95, 99, 100)
DURATION_COLUMNS = (
    "HashOwner",
    "HashApp",
    "HashFunction",
    "Average",
    "Count",
    "Minimum",
    "Maximum",
    *(f"percentile_Average_{p}" for p in DURATION_PERCENTILES),
)
MEMORY_COLUMNS = (
    "HashOwner",
    "HashApp",
    "SampleCount",
    "AverageAllocatedMb",
    *(f"AverageAllocatedMb_pct{p}" for p in MEMORY_PERCENTILES),
)
INVOCATION_2021_COLUMNS = ("app", "func", "end_timestamp", "duration")
RESERVOIR_SIZE = 1000  # durations kept per function of a 2021 trace, for its percentiles
DAY_PATTERNS = {
    "invocations": "invocations_per_function_md.anon.d*.csv",
    "durations": "function_durations_percentiles.anon.d*.csv",
    "memory": "app_memory_percentiles.anon.d*.csv",
}


class TraceFileError(ConfigError):
    """A trace file that cannot be read as its layout says: file, row, column and the fix."""


class FileKind(Enum):
    INVOCATIONS = "invocations"  # 2019 or InVitro: per-minute counts
    DURATIONS = "durations"
    MEMORY = "memory"
    INVOCATIONS_2021 = "invocations_2021"  # one row per invocation


@dataclass(frozen=True)
class FunctionKey:
    owner: str
    app: str
    function: str


@dataclass
class InvocationRow:
    key: FunctionKey
    trigger: str
    counts: np.ndarray  # int64, one per minute of the window asked for
    row: int  # the file's row (1 is the header)


@dataclass
class DurationRow:
    key: FunctionKey
    average_ms: float
    count: int
    minimum_ms: float
    maximum_ms: float
    percentiles_ms: dict[int, float]  # DURATION_PERCENTILES -> ms


@dataclass
class MemoryRow:
    owner: str
    app: str
    sample_count: int
    average_mb: float
    percentiles_mb: dict[int, float]  # MEMORY_PERCENTILES -> MB


@dataclass
class TraceDay:
    """The files of one day (or one sample), by kind."""

    invocations: Path
    durations: Path | None = None
    memory: Path | None = None
    kind: FileKind = FileKind.INVOCATIONS
    minute_labels: list[int] = field(default_factory=list)


def _lines(path: Path, handle) -> Iterator[str]:
    for number, line in enumerate(handle, start=1):
        if len(line) > MAX_LINE_BYTES:
            raise TraceFileError(
                f"{path}: row {number}: a line of over {MAX_LINE_BYTES:,} characters; this is not a trace CSV "
                "(one function per line)"
            )
        yield line


def _rows(path: Path) -> Iterator[tuple[int, list[str]]]:
    """(row number, fields) of a CSV, streamed; row 1 is the header."""
    try:
        handle = open(path, encoding="utf-8-sig", newline="")
    except OSError as error:
        raise TraceFileError(f"{path}: cannot read the trace file ({error.strerror}); name a readable file") from None
    with handle:
        reader = csv.reader(_lines(path, handle))
        number = 0
        try:
            for number, fields in enumerate(reader, start=1):
                yield number, fields
        except csv.Error as error:
            raise TraceFileError(f"{path}: row {number + 1}: not CSV ({error}); fix the file") from None
        except UnicodeDecodeError:
            raise TraceFileError(f"{path}: row {number + 1}: not UTF-8 text; save the trace as UTF-8 CSV") from None


def _header(path: Path) -> list[str]:
    for _, fields in _rows(path):
        return [name.strip() for name in fields]
    raise TraceFileError(f"{path}: empty file; a trace file starts with its header row")


def file_kind(path: Path) -> FileKind:
    """Which layout ``path`` has, from its header alone."""
    header = _header(path)
    if tuple(header[:4]) == KEY_COLUMNS:
        return FileKind.INVOCATIONS
    if tuple(header[: len(DURATION_COLUMNS)]) == DURATION_COLUMNS:
        return FileKind.DURATIONS
    if tuple(header[: len(MEMORY_COLUMNS)]) == MEMORY_COLUMNS:
        return FileKind.MEMORY
    if tuple(header[:4]) == INVOCATION_2021_COLUMNS:
        return FileKind.INVOCATIONS_2021
    raise TraceFileError(
        f"{path}: row 1: header {','.join(header[:5])}... is none of the Azure trace layouts; expected "
        f"{','.join(KEY_COLUMNS)},1,2,... (invocations), {','.join(DURATION_COLUMNS[:4])},... (durations), "
        f"{','.join(MEMORY_COLUMNS[:3])},... (memory) or {','.join(INVOCATION_2021_COLUMNS)} (2021)"
    )


def find_day(paths: Iterable[str | os.PathLike]) -> TraceDay:
    """The files of a day from a folder (the release's names) or from files (known by their headers)."""
    given = [Path(p) for p in paths]
    files: list[Path] = []
    for path in given:
        if path.is_dir():
            for pattern in DAY_PATTERNS.values():
                files += [Path(p) for p in sorted(glob.glob(str(path / pattern)))]
            if not any(f.parent == path for f in files):
                raise TraceFileError(
                    f"{path}: holds none of the day files ({', '.join(DAY_PATTERNS.values())}); "
                    "name the files themselves or the folder of one day"
                )
        elif path.exists():
            files.append(path)
        else:
            raise TraceFileError(f"{path}: no such file or folder; name a day's folder or its trace files")
    found: dict[FileKind, list[Path]] = {}
    for path in files:
        found.setdefault(file_kind(path), []).append(path)
    for kind, paths_of in found.items():
        if len(paths_of) > 1:
            raise TraceFileError(
                f"{paths_of[1]}: a second {kind.value} file (beside {paths_of[0]}); give one day's files"
            )
    counts = found.get(FileKind.INVOCATIONS) or found.get(FileKind.INVOCATIONS_2021)
    if not counts:
        raise TraceFileError(
            f"{given[0] if given else '(nothing)'}: no invocations file among the files given; "
            "add invocations_per_function_md.anon.dNN.csv or a 2021 per-invocation trace"
        )
    if FileKind.INVOCATIONS in found and FileKind.INVOCATIONS_2021 in found:
        raise TraceFileError(f"{found[FileKind.INVOCATIONS_2021][0]}: give a 2019 day or a 2021 trace, not both")
    kind = FileKind.INVOCATIONS if FileKind.INVOCATIONS in found else FileKind.INVOCATIONS_2021
    durations = found[FileKind.DURATIONS][0] if FileKind.DURATIONS in found else None
    memory = found[FileKind.MEMORY][0] if FileKind.MEMORY in found else None
    if kind is FileKind.INVOCATIONS and durations is None:
        raise TraceFileError(
            f"{counts[0]}: no durations file given beside it; add function_durations_percentiles.anon.dNN.csv"
        )
    labels = minute_labels(counts[0]) if kind is FileKind.INVOCATIONS else []
    return TraceDay(counts[0], durations, memory, kind, labels)


def minute_labels(path: Path) -> list[int]:
    """The minute labels of an invocations file's header (1..1440 for a day, InVitro's keep the day's)."""
    header = _header(path)
    labels = []
    for column, label in enumerate(header[4:], start=5):
        if not label.isdigit():
            raise TraceFileError(
                f"{path}: row 1, column {column}: minute label {label!r} is not a whole number; "
                "label the minute columns 1..1440"
            )
        labels.append(int(label))
    if not labels:
        raise TraceFileError(f"{path}: row 1: no minute columns after {','.join(KEY_COLUMNS)}")
    if any(b != a + 1 for a, b in zip(labels, labels[1:])):
        raise TraceFileError(f"{path}: row 1: the minute labels are not consecutive; label them in order")
    return labels


def _window_slice(path: Path, labels: list[int], minutes: tuple[int, int] | None) -> slice:
    if minutes is None:
        return slice(0, len(labels))
    first, last = minutes
    if first < labels[0] or last > labels[-1] or first > last:
        raise TraceFileError(
            f"{path}: minutes {first}-{last} are not within its minute columns {labels[0]}-{labels[-1]}; "
            f"give --minutes within {labels[0]}-{labels[-1]}"
        )
    return slice(first - labels[0], last - labels[0] + 1)


def _number(path: Path, row: int, column: int, name: str, text: str, whole: bool = False) -> float:
    try:
        value = float(text) if text.strip() else math.nan
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0 or (whole and value != int(value)):
        kind = "a whole number >= 0" if whole else "a number >= 0"
        raise TraceFileError(f"{path}: row {row}, column {column} ({name}): {text!r} is not {kind}; fix the row")
    return value


def read_invocations(path: Path, minutes: tuple[int, int] | None = None) -> Iterator[InvocationRow]:
    """Each function's counts of the minutes ``minutes`` (labels, inclusive), streamed."""
    labels = minute_labels(path)
    window = _window_slice(path, labels, minutes)
    width = 4 + len(labels)
    for number, fields in _rows(path):
        if number == 1 or not fields:
            continue
        if len(fields) != width:
            raise TraceFileError(
                f"{path}: row {number}, column {min(len(fields), width) + 1}: {len(fields)} columns, the header has "
                f"{width}; fix the row"
            )
        chosen = fields[4:][window]
        try:
            counts = np.array([int(text) if text else 0 for text in chosen], dtype=np.int64)
            bad = int(np.argmax(counts < 0)) if (counts < 0).any() else None
        except ValueError:
            bad = next(i for i, text in enumerate(chosen) if text and not text.strip().isdigit())
        if bad is not None:
            column = 5 + window.start + bad
            raise TraceFileError(
                f"{path}: row {number}, column {column} (minute {labels[column - 5]}): "
                f"{chosen[bad]!r} is not a whole number >= 0; fix the row"
            )
        yield InvocationRow(FunctionKey(fields[0], fields[1], fields[2]), fields[3], counts, number)


def read_durations(path: Path) -> Iterator[DurationRow]:
    for number, fields in _rows(path):
        if number == 1 or not fields:
            continue
        if len(fields) < len(DURATION_COLUMNS):
            raise TraceFileError(
                f"{path}: row {number}, column {len(fields) + 1} ({DURATION_COLUMNS[len(fields)]}): missing; fix the row"
            )
        values = [
            _number(path, number, column, DURATION_COLUMNS[column - 1], fields[column - 1], whole=column == 5)
            for column in range(4, len(DURATION_COLUMNS) + 1)
        ]
        yield DurationRow(
            FunctionKey(fields[0], fields[1], fields[2]),
            values[0],
            int(values[1]),
            values[2],
            values[3],
            dict(zip(DURATION_PERCENTILES, values[4:])),
        )


def read_memory(path: Path) -> Iterator[MemoryRow]:
    for number, fields in _rows(path):
        if number == 1 or not fields:
            continue
        if len(fields) < len(MEMORY_COLUMNS):
            raise TraceFileError(
                f"{path}: row {number}, column {len(fields) + 1} ({MEMORY_COLUMNS[len(fields)]}): missing; fix the row"
            )
        values = [
            _number(path, number, column, MEMORY_COLUMNS[column - 1], fields[column - 1], whole=column == 3)
            for column in range(3, len(MEMORY_COLUMNS) + 1)
        ]
        yield MemoryRow(fields[0], fields[1], int(values[0]), values[1], dict(zip(MEMORY_PERCENTILES, values[2:])))


@dataclass
class _Folded:
    counts: np.ndarray
    seen: int = 0
    durations_s: list[float] = field(default_factory=list)
    total_s: float = 0.0


def read_invocations_2021(
    path: Path, minutes: tuple[int, int] | None = None, seed: int = 0
) -> tuple[list[InvocationRow], list[DurationRow]]:
    """A 2021 per-invocation trace folded per function: counts per start minute (minute 1 is the
    trace's first minute) and duration percentiles from a seeded reservoir of ``RESERVOIR_SIZE``
    durations (the count, average, minimum and maximum are exact). Memory grows with the
    functions, never with the invocations."""
    first, last = minutes if minutes is not None else (1, 14 * MINUTES_PER_DAY)
    rng = np.random.default_rng(seed)
    folded: dict[tuple[str, str], _Folded] = {}
    extremes: dict[tuple[str, str], list[float]] = {}
    for number, fields in _rows(path):
        if number == 1 or not fields:
            continue
        if len(fields) < 4:
            raise TraceFileError(
                f"{path}: row {number}, column {len(fields) + 1} ({INVOCATION_2021_COLUMNS[len(fields)]}): missing; "
                "fix the row"
            )
        end_s = _number(path, number, 3, "end_timestamp", fields[2])
        duration_s = _number(path, number, 4, "duration", fields[3])
        minute = int(max(end_s - duration_s, 0.0) // 60) + 1
        if not first <= minute <= last:
            continue
        key = (fields[0], fields[1])
        entry = folded.get(key)
        if entry is None:
            entry = folded[key] = _Folded(np.zeros(last - first + 1, dtype=np.int64))
            extremes[key] = [math.inf, 0.0]
        entry.counts[minute - first] += 1
        entry.seen += 1
        entry.total_s += duration_s
        low_high = extremes[key]
        low_high[0], low_high[1] = min(low_high[0], duration_s), max(low_high[1], duration_s)
        if len(entry.durations_s) < RESERVOIR_SIZE:
            entry.durations_s.append(duration_s)
        else:
            slot = int(rng.integers(0, entry.seen))
            if slot < RESERVOIR_SIZE:
                entry.durations_s[slot] = duration_s
    invocations, durations = [], []
    for row, ((app, func), entry) in enumerate(sorted(folded.items()), start=2):
        function_key = FunctionKey("", app, func)
        invocations.append(InvocationRow(function_key, "", entry.counts, row))
        values = np.percentile(np.asarray(entry.durations_s) * 1000.0, DURATION_PERCENTILES)
        low, high = extremes[(app, func)]
        durations.append(
            DurationRow(
                function_key,
                entry.total_s * 1000.0 / entry.seen,
                entry.seen,
                low * 1000.0,
                high * 1000.0,
                {p: float(v) for p, v in zip(DURATION_PERCENTILES, values)},
            )
        )
    return invocations, durations


__all__ = [
    "DURATION_PERCENTILES",
    "MEMORY_PERCENTILES",
    "DurationRow",
    "FileKind",
    "FunctionKey",
    "InvocationRow",
    "MemoryRow",
    "TraceDay",
    "TraceFileError",
    "file_kind",
    "find_day",
    "minute_labels",
    "read_durations",
    "read_invocations",
    "read_invocations_2021",
    "read_memory",
]
