"""``activations.columns.npz``: the flat columns of ``activations.jsonl``, kept beside it.

Parsing ten million JSON records (4.9 GB) was most of the time an analysis took: 33 s on two
cores with DuckDB's native reader. The records' flat columns (``record_fields.RECORD_COLUMNS``)
are therefore written once, when the records are saved, while every line passes through memory
anyway (``ColumnsBuilder``, used by ``faasprof.rundir.write_records``), and again after any full
parse of the file (``write_from_arrays``); a reader loads the arrays instead of the JSON.

The JSON lines stay the record of truth, and the index is used only while it provably describes
them. It stores how many bytes of the file it covers, their CRC-32, and the file's identity when it
was written (device, inode, size, modification and change times, in ns). A reader (``state``):

* ``current``: the file's identity is unchanged (nothing has written to, replaced, moved or
  touched the file since: any of those changes the change time), so the index covers all of it;
* ``prefix``: the identity changed but the covered bytes still have their CRC-32 (records were
  appended, or the run directory was copied): the index covers them, and the lines after them
  are parsed;
* ``stale``: anything else (the file is shorter, rewritten, an index of an unknown version, or an
  unreadable one): the index is ignored and the whole file is parsed.

This is how git's index trusts a work-tree file (stat data first, content when it differs). A
record that is not of the regular shape (a number field that is not a number, a label that is not
a string) leaves no index: the readers' own conversions decide those.

Layout (a NumPy ``.npz``, every member uncompressed): ``meta`` (JSON as bytes: format version,
coverage, CRC, identity, row and bad-line counts, category labels, and for each of
``record_fields.COUNTED_MENTIONS`` how many lines hold it (written with the file) or whether any
does (1 or 0, written after a parse)), and per column
``<name>`` (float64 or bool), ``<name>.codes`` (int32, −1 for none, into the sorted labels in
``meta``), or ``<name>.offsets``/``<name>.data``/``<name>.valid`` (UTF-8 strings as Arrow lays
them out). Rows are in file order, one per record line (or one per activation id after a parse,
the last record of an id kept: the same answer once the readers keep the last record of an id).
Only NumPy: the invoker saves records with it and never loads pandas or Arrow.
"""

from __future__ import annotations

import json
import operator
import os
import zipfile
import zlib
from itertools import repeat
from pathlib import Path

import numpy as np

# The column tuples are read as record_fields.X when used (never copied here), so a column added
# there (ARCHITECTURE.md's metric recipe) reaches the index too.
from faasprof.rundir import record_fields
from faasprof.rundir.record_fields import COUNTED_MENTIONS, flatten_line

FILE_SUFFIX = ".columns.npz"  # activations.jsonl -> activations.columns.npz
FORMAT_VERSION = 2  # 2: record_outcome tells platform_stopped from internal_error
CHUNK_ROWS = 65_536
CRC_BLOCK_BYTES = 16 * 2**20
_TEXT_TYPES = {str, type(None)}


class Unusual(ValueError):
    """A record whose fields the index's types cannot hold exactly (the readers decide it)."""


def index_path(jsonl_path: str | os.PathLike) -> Path:
    path = Path(jsonl_path)
    stem = path.name[: -len(".jsonl")] if path.name.endswith(".jsonl") else path.name
    return path.with_name(stem + FILE_SUFFIX)


def remove(jsonl_path: str | os.PathLike) -> None:
    """Drop the index (before the file it describes is replaced)."""
    try:
        index_path(jsonl_path).unlink()
    except FileNotFoundError:
        pass


def _identity(stat: os.stat_result) -> list[int]:
    return [stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns]


# -- writing ------------------------------------------------------------------------------------


class _Columns:
    """Flattened rows gathered into typed chunks of ``CHUNK_ROWS``."""

    def __init__(self) -> None:
        self.rows = 0
        self.floats: dict[str, list[np.ndarray]] = {name: [] for name in record_fields.FLOAT_COLUMNS}
        self.timed_out: list[np.ndarray] = []
        self.labels: dict[str, dict[str, int]] = {name: {} for name in record_fields.CATEGORY_COLUMNS}
        self.codes: dict[str, list[np.ndarray]] = {name: [] for name in record_fields.CATEGORY_COLUMNS}
        self.texts: dict[str, list[dict[str, np.ndarray]]] = {name: [] for name in record_fields.TEXT_COLUMNS}

    def add_rows(self, rows: list[tuple]) -> None:
        if not rows:
            return
        columns = dict(zip(record_fields.RECORD_COLUMNS, zip(*rows)))
        for name in record_fields.FLOAT_COLUMNS:
            try:
                self.floats[name].append(np.asarray(columns[name], dtype="float64"))  # None becomes NaN
            except (TypeError, ValueError):
                raise Unusual(f"{name}: a value that is not a number") from None
        self.timed_out.append(np.asarray(columns["timed_out"], dtype=bool))
        for name in record_fields.CATEGORY_COLUMNS:
            values = columns[name]
            try:
                distinct = set(values)
            except TypeError:  # a list or an object where a label belongs
                raise Unusual(f"{name}: a value that is not a string") from None
            if not {type(value) for value in distinct} <= _TEXT_TYPES:
                raise Unusual(f"{name}: a value that is not a string")
            where = self.labels[name]
            for value in distinct - where.keys() - {None}:
                where[value] = len(where)
            lookup: dict = {**where, None: -1}
            self.codes[name].append(np.fromiter(map(lookup.__getitem__, values), dtype=np.int32, count=len(values)))
        for name in record_fields.TEXT_COLUMNS:
            values = columns[name]
            if not set(map(type, values)) <= _TEXT_TYPES:
                raise Unusual(f"{name}: a value that is not a string")
            self.texts[name].append(encode_strings(name, values))  # no Python string kept per row
        self.rows += len(rows)

    def arrays(self) -> tuple[dict[str, np.ndarray], dict[str, list[str]]]:
        out: dict[str, np.ndarray] = {}
        for name in record_fields.FLOAT_COLUMNS:
            out[name] = np.concatenate(self.floats[name]) if self.rows else np.zeros(0)
        out["timed_out"] = np.concatenate(self.timed_out) if self.rows else np.zeros(0, dtype=bool)
        labels: dict[str, list[str]] = {}
        for name in record_fields.CATEGORY_COLUMNS:
            # Sorted labels, as pd.Categorical(values) has them.
            ordered = sorted(self.labels[name])
            remap = np.zeros(len(ordered) + 1, dtype=np.int32)
            remap[-1] = -1
            for new, label in enumerate(ordered):
                remap[self.labels[name][label]] = new
            codes = np.concatenate(self.codes[name]) if self.rows else np.zeros(0, dtype=np.int32)
            out[f"{name}.codes"] = remap[codes]
            labels[name] = ordered
        for name in record_fields.TEXT_COLUMNS:
            out.update(join_strings(name, self.texts[name]) if self.rows else encode_strings(name, []))
        return out, labels


def encode_strings(name: str, values) -> dict[str, np.ndarray]:
    """Strings (or None) as Arrow lays them out: int64 offsets into UTF-8 data, and validity."""
    count = len(values)
    valid = np.fromiter(map(operator.is_not, values, repeat(None)), dtype=bool, count=count)
    present = [value if value is not None else "" for value in values] if not valid.all() else values
    joined = "".join(present)
    if joined.isascii():
        data = joined.encode("ascii")
        lengths = np.fromiter(map(len, present), dtype=np.int64, count=count)
    else:
        encoded = [value.encode("utf-8") for value in present]
        data = b"".join(encoded)
        lengths = np.fromiter(map(len, encoded), dtype=np.int64, count=count)
    offsets = np.zeros(count + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return {f"{name}.offsets": offsets, f"{name}.data": np.frombuffer(data, dtype=np.uint8), f"{name}.valid": valid}


def join_strings(name: str, chunks: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """``encode_strings`` pieces as one column."""
    offsets = [np.zeros(1, dtype=np.int64)]
    base = 0
    for chunk in chunks:
        offsets.append(chunk[f"{name}.offsets"][1:] + base)
        base += int(chunk[f"{name}.offsets"][-1])
    return {
        f"{name}.offsets": np.concatenate(offsets),
        f"{name}.data": np.concatenate([chunk[f"{name}.data"] for chunk in chunks]),
        f"{name}.valid": np.concatenate([chunk[f"{name}.valid"] for chunk in chunks]),
    }


class ColumnsBuilder:
    """The index of a file as it is written: ``add(line)`` for every line, as written (bytes,
    with its newline), then ``write(path)`` once the file is in place."""

    def __init__(self) -> None:
        self.columns = _Columns()
        self.pending: list[tuple] = []
        self.covers_bytes = 0
        self.crc32 = 0
        self.lines = 0
        self.bad_lines = 0
        self.mentions = dict.fromkeys(COUNTED_MENTIONS, 0)
        self.unusual: str | None = None

    def add(self, line: bytes) -> None:
        self.crc32 = zlib.crc32(line, self.crc32)
        self.covers_bytes += len(line)
        self.lines += 1
        for needle in COUNTED_MENTIONS:
            if needle in line:
                self.mentions[needle] += 1
        if self.unusual:
            return
        # The line as every reader of the file parses it, not the dict it was written from.
        row = flatten_line(line)
        if row is None:
            if line.strip():
                self.bad_lines += 1
            return
        self.pending.append(row)
        if len(self.pending) >= CHUNK_ROWS:
            self._flush()

    def _flush(self) -> None:
        try:
            self.columns.add_rows(self.pending)
        except Unusual as error:
            self.unusual = str(error)
            self.columns = _Columns()  # nothing of it is written: free it
        self.pending = []

    def write(self, jsonl_path: str | os.PathLike) -> bool:
        """Write the index of ``jsonl_path`` (already in place); False when a record was unusual."""
        self._flush()
        if self.unusual:
            remove(jsonl_path)
            return False
        stat = os.stat(jsonl_path)
        if stat.st_size != self.covers_bytes:  # written to since: this index would not describe it
            remove(jsonl_path)
            return False
        arrays, labels = self.columns.arrays()
        _save(
            jsonl_path,
            _identity(stat),
            arrays,
            labels,
            rows=self.columns.rows,
            covers_bytes=self.covers_bytes,
            crc32=self.crc32,
            lines=self.lines,
            bad_lines=self.bad_lines,
            mentions={needle.decode(): count for needle, count in self.mentions.items()},
        )
        return True


def write_from_arrays(
    jsonl_path: str | os.PathLike,
    arrays: dict[str, np.ndarray],
    labels: dict[str, list[str]],
    rows: int,
    bad_lines: int,
) -> bool:
    """The index of a file just parsed whole (its rows as ``ColumnsBuilder`` lays them out).

    Covers the whole file, its CRC-32 read now; False (nothing written) when the file does not end
    with a line break (a torn last line: it is left to the readers)."""
    path = Path(jsonl_path)
    before = _identity(os.stat(path))
    crc, size, last, found = scan_file(path, needles=COUNTED_MENTIONS)
    # Written to while it was read (or a torn last line): no index rather than a wrong one.
    if (size and last != b"\n") or _identity(os.stat(path)) != before or size != before[2]:
        return False
    _save(
        path,
        before,
        arrays,
        labels,
        rows=rows,
        covers_bytes=size,
        crc32=crc,
        lines=None,
        bad_lines=bad_lines,
        mentions={needle.decode(): count for needle, count in found.items()},
    )
    return True


def _save(jsonl_path, identity: list[int], arrays: dict[str, np.ndarray], labels: dict[str, list[str]], **meta) -> None:
    path = Path(jsonl_path)
    meta = {"format_version": FORMAT_VERSION, "file": path.name, "identity": identity, "labels": labels, **meta}
    target = index_path(path)
    tmp = target.with_name(f".{target.name}.tmp{os.getpid()}")
    try:
        with open(tmp, "wb") as handle:
            # Derived data: no fsync (a torn index fails its zip CRCs and is ignored).
            np.savez(handle, meta=np.frombuffer(json.dumps(meta).encode("utf-8"), dtype=np.uint8), **arrays)  # type: ignore[arg-type]  # numpy's stub lets **kwds reach allow_pickle
        os.replace(tmp, target)
    finally:
        if tmp.exists():
            tmp.unlink()


# -- reading ------------------------------------------------------------------------------------


class ColumnIndex:
    """An index as loaded: ``meta`` and the columns (``array(name)``)."""

    def __init__(self, path: Path, meta: dict, npz) -> None:
        self.path = path
        self.meta = meta
        self._npz = npz

    @property
    def rows(self) -> int:
        return int(self.meta["rows"])

    @property
    def covers_bytes(self) -> int:
        return int(self.meta["covers_bytes"])

    @property
    def bad_lines(self) -> int:
        return int(self.meta["bad_lines"])

    def mentions(self, needle: bytes) -> int | None:
        """Lines of the covered bytes that hold ``needle`` (after a parse: 1 for any), None when
        not counted."""
        counted = self.meta.get("mentions") or {}
        value = counted.get(needle.decode()) if isinstance(counted, dict) else None
        return value if isinstance(value, int) else None

    def labels(self, name: str) -> list[str]:
        return list(self.meta["labels"][name])

    def array(self, name: str) -> np.ndarray:
        return self._npz[name]

    def close(self) -> None:
        self._npz.close()

    def state(self, jsonl_path: str | os.PathLike) -> str:
        """``current``, ``prefix`` or ``stale`` (module docstring)."""
        path = Path(jsonl_path)
        try:
            stat = os.stat(path)
        except FileNotFoundError:
            return "stale"
        if _identity(stat) == list(self.meta["identity"]):
            return "current"
        if stat.st_size < self.covers_bytes:
            return "stale"
        crc = scan_file(path, self.covers_bytes)[0]
        return "prefix" if crc == int(self.meta["crc32"]) else "stale"


def _members() -> set[str]:
    """The arrays an index of today's ``RECORD_COLUMNS`` holds, ``meta`` included."""
    texts = {f"{name}.{part}" for name in record_fields.TEXT_COLUMNS for part in ("offsets", "data", "valid")}
    return {
        "meta",
        "timed_out",
        *record_fields.FLOAT_COLUMNS,
        *(f"{name}.codes" for name in record_fields.CATEGORY_COLUMNS),
        *texts,
    }


def load(jsonl_path: str | os.PathLike) -> ColumnIndex | None:
    """The index beside ``jsonl_path``, or None (absent, unreadable, or of another version)."""
    path = index_path(jsonl_path)
    try:
        npz = np.load(path, allow_pickle=False)
    except (OSError, ValueError, zipfile.BadZipFile, EOFError):
        return None
    try:
        meta = json.loads(npz["meta"].tobytes().decode("utf-8"))
        if not isinstance(meta, dict) or meta.get("format_version") != FORMAT_VERSION:
            npz.close()
            return None
        for key in ("rows", "covers_bytes", "crc32", "bad_lines"):
            int(meta[key])
        if (
            len(meta["identity"]) != 5
            or set(meta["labels"]) != set(record_fields.CATEGORY_COLUMNS)
            or set(npz.files) != _members()
        ):
            # Written before a column was added or dropped: rebuilt by the next parse.
            npz.close()
            return None
    except (OSError, ValueError, KeyError, TypeError, zipfile.BadZipFile, EOFError):
        npz.close()
        return None
    return ColumnIndex(path, meta, npz)


def mentioned(jsonl_path: str | os.PathLike, needle: bytes) -> bool | None:
    """Whether any line of the file holds ``needle``, from a current index that counted it; None
    when that cannot be told without reading the file."""
    index = load(jsonl_path)
    if index is None:
        return None
    try:
        count = index.mentions(needle)
        if count is None or index.state(jsonl_path) != "current":
            return None
        return count > 0
    finally:
        index.close()


def scan_file(
    path: str | os.PathLike,
    limit: int | None = None,
    needles: tuple[bytes, ...] = (),
    crc: bool = True,
    block_bytes: int | None = None,
) -> tuple[int, int, bytes, dict[bytes, int]]:
    """One pass over the first ``limit`` bytes (all when None), read into one reused buffer (not
    mapped: mapped pages count in the process's resident memory, and a 10-million-record file is
    5 GB): (their CRC-32, bytes read, last byte read, and for each of ``needles`` 1 when it occurs
    in them, else 0). Without ``crc`` it stops as soon as every needle is found (the CRC is then 0)."""
    block_bytes = block_bytes or CRC_BLOCK_BYTES
    checksum = 0
    done = 0
    last = b""
    found = dict.fromkeys(needles, 0)
    overlap = max((len(needle) for needle in needles), default=1) - 1
    buffer = bytearray(overlap + block_bytes)
    view = memoryview(buffer)
    kept = 0  # the previous block's last bytes, in front: a needle across two blocks
    with open(path, "rb", buffering=0) as handle:
        while limit is None or done < limit:
            want = block_bytes if limit is None else min(block_bytes, limit - done)
            got = handle.readinto(view[kept : kept + want])
            if not got:
                break
            if crc:
                checksum = zlib.crc32(view[kept : kept + got], checksum)
            end = kept + got
            for needle in needles:
                if not found[needle] and buffer.find(needle, 0, end) >= 0:
                    found[needle] = 1
            last = bytes(view[end - 1 : end])
            done += got
            if not crc and needles and all(found.values()):
                break
            kept = min(overlap, end)
            buffer[:kept] = buffer[end - kept : end]
    return checksum, done, last, found
