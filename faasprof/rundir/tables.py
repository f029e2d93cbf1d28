"""The run directory's tabular files read as typed pandas frames (``invocations.csv``).

``read_invocations_frame`` reads with Arrow; ``_parse_invocations`` (pandas' own CSV reader) is
the reference its types are held to, and parses the reconstructed rows of a torn run.

Kept apart from ``faasprof.rundir`` so the invoker, which only writes, does not load pandas and
Arrow; the format itself (columns, outcomes, torn-run reconstruction) is defined there.
"""

from __future__ import annotations

import io
import mmap
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from faasprof import rundir
from faasprof.errors import FormatError
from faasprof.rundir import records

INVOCATION_DTYPES = {
    "seq": "int64",
    "instance": "category",
    "function": "category",
    "intended_ns": "Int64",
    "sent_ns": "Int64",
    "done_ns": "Int64",
    "outcome": "category",
    "http_status": "Int64",
    "activation_id": "str",
    "error": "str",
}


_INT_COLUMNS = ("seq", "intended_ns", "sent_ns", "done_ns", "http_status")
_CATEGORY_COLUMNS = ("instance", "function", "outcome")
_STR_DTYPE = pd.StringDtype("pyarrow", na_value=np.nan)  # what read_csv's dtype "str" gives


def read_invocations_frame(run_dir: str | os.PathLike, manifest: "rundir.Manifest | None" = None) -> pd.DataFrame:
    """``read_invocations_and_completeness``'s frame."""
    return read_invocations_and_completeness(run_dir, manifest)[0]


def read_invocations_and_completeness(
    run_dir: str | os.PathLike, manifest: "rundir.Manifest | None" = None
) -> tuple[pd.DataFrame, rundir.Completeness]:
    """``invocations.csv`` typed (``INVOCATION_DTYPES``), one row per planned invocation by ``seq``.

    A final line cut short by a crash is dropped. A torn run (kill -9, disk full): every planned
    invocation without a row gets the row ``rundir.reconstruct_missing`` builds from the plan and
    the send journal; ``attrs["completeness"]`` says how many. ``manifest`` saves reading it again
    for a format-1 run without a plan.

    Read with Arrow's multi-threaded CSV reader into columns (no Python object per row), sorted
    and de-duplicated by ``seq`` (a row written twice: the last one wins) before pandas sees it.
    Returns the frame and the torn-run tally (``completeness`` without a second read).
    """
    path = Path(run_dir) / rundir.INVOCATIONS
    table = _read_whole_lines(path, include=None)
    seq = table.column("seq").to_numpy()
    if len(seq) and not (np.diff(seq) > 0).all():
        table = table.take(pc.sort_indices(table, [("seq", "ascending")]))  # stable: equal seqs keep file order
        seq = table.column("seq").to_numpy()
    rows = len(seq)
    keep = None
    if len(seq) > 1 and (seq[1:] == seq[:-1]).any():
        keep = np.append(seq[1:] != seq[:-1], True)  # the last row of each seq
        table = table.filter(pa.array(keep))
        seq = seq[keep]
    frame = _to_pandas(table)
    del table
    pa.default_memory_pool().release_unused()  # Arrow's allocator keeps freed blocks otherwise
    missing, completeness = _reconstruct(run_dir, seq, rows, manifest)
    if missing:
        text = ",".join(rundir.INVOCATION_COLUMNS) + "\n" + "".join(rundir.format_row(row) for row in missing)
        frame = pd.concat(
            [
                frame.astype({"instance": str, "function": str, "outcome": str}),
                _parse_invocations(text.encode()).astype({"instance": str, "function": str, "outcome": str}),
            ],
            ignore_index=True,
        )
        frame = frame.astype({"instance": "category", "function": "category", "outcome": "category"})
        frame = frame.sort_values("seq", kind="stable").drop_duplicates("seq", keep="last").reset_index(drop=True)
    unknown = sorted(set(frame["outcome"].cat.categories) - set(rundir.OUTCOMES))
    if unknown:
        raise FormatError(
            f"{path}: outcome {unknown[0]!r} is not one of {', '.join(rundir.OUTCOMES)}; the file is not a faasprof invocation log of a version this faasprof reads"
        )
    frame.attrs["completeness"] = completeness.to_json()
    return frame, completeness


def completeness(run_dir: str | os.PathLike, manifest: "rundir.Manifest | None" = None) -> rundir.Completeness:
    """The torn-run tally of a run directory (``rundir.completeness``), reading only the ``seq``
    column."""
    path = Path(run_dir) / rundir.INVOCATIONS
    seq = _read_whole_lines(path, include=["seq"]).column("seq").to_numpy()
    rows = len(seq)
    ascending = rows < 2 or bool((seq[1:] > seq[:-1]).all())  # as written: no sort needed
    return _reconstruct(run_dir, seq if ascending else np.unique(seq), rows, manifest)[1]


def _reconstruct(run_dir, unique_seqs: np.ndarray, rows: int, manifest) -> tuple[list[tuple], rundir.Completeness]:
    """``rundir.reconstruct_missing`` with its common case settled on arrays: every planned seq
    has its row (``unique_seqs`` sorted, without repeats)."""
    plan = rundir.read_plan(run_dir)
    n = len(unique_seqs)
    if plan is not None and n == len(plan) and (n == 0 or (unique_seqs[0] == 0 and unique_seqs[-1] == n - 1)):
        return [], rundir.Completeness(len(plan), rows)
    missing, report = rundir.reconstruct_missing(run_dir, unique_seqs, manifest, distinct=True)
    report.rows = rows
    return missing, report


def _read_whole_lines(path: Path, include: list[str] | None) -> pa.Table:
    """The file's complete lines (a final line cut short is left out) parsed by Arrow.

    The file is mapped, not read into a copy: Arrow parses the page cache's own pages (a
    10-million-row log is a gigabyte)."""
    try:
        handle = open(path, "rb")
    except FileNotFoundError:
        raise FormatError(f"{path}: missing; the run did not get as far as its first invocation") from None
    with handle:
        size = os.fstat(handle.fileno()).st_size
        if not size:
            return _read_csv(path, b"", include)
        with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as mapped:  # searched, never exported
            cut = mapped.rfind(b"\n")
            end = mapped.find(b"\n")
            header = mapped[: end + 1].decode("utf-8", "replace").strip() if end >= 0 else ""
            quoted = mapped.find(b'"', 0, cut + 1) >= 0
    if tuple(header.split(",")) != rundir.INVOCATION_COLUMNS:
        raise FormatError(f"{path}: header is {header!r}, expected {','.join(rundir.INVOCATION_COLUMNS)}")
    with pa.memory_map(str(path)) as source:  # Arrow's own map: its buffers keep it alive as needed
        return _read_csv(path, source.read_buffer(cut + 1), include, quoted)


def _read_csv(path: Path, data, include: list[str] | None, quoted: bool = False) -> pa.Table:
    types = {name: pa.int64() for name in _INT_COLUMNS}
    # Few distinct labels: dictionary-encoded as they are parsed (no string per row).
    types.update({name: pa.dictionary(pa.int32(), pa.string()) for name in _CATEGORY_COLUMNS})
    types.update({name: pa.string() for name in ("activation_id", "error")})
    try:
        return pacsv.read_csv(
            pa.BufferReader(data),
            # A quoted field may hold a line break (an error message); only then must the reader look for it.
            parse_options=pacsv.ParseOptions(newlines_in_values=quoted),
            convert_options=pacsv.ConvertOptions(
                column_types=types,
                null_values=[""],
                strings_can_be_null=False,
                quoted_strings_can_be_null=False,
                include_columns=include,
            ),
        )
    except (pa.ArrowInvalid, pa.ArrowTypeError) as error:
        raise FormatError(f"{path}: unreadable ({str(error).splitlines()[0]}); the invocation log is damaged") from None


def _to_pandas(table: pa.Table) -> pd.DataFrame:
    """The dtypes ``_parse_invocations`` (pandas' CSV reader) gives, from Arrow columns."""
    columns = {}
    for name in rundir.INVOCATION_COLUMNS:
        column = table.column(name)
        if name == "seq":
            columns[name] = column.to_numpy()
        elif name in _INT_COLUMNS:
            columns[name] = (
                pd.array(column, dtype="Int64") if column.null_count else pd.array(column.to_numpy(), dtype="Int64")
            )
        elif name in _CATEGORY_COLUMNS:
            columns[name] = records.categorical(column)
        else:
            columns[name] = (
                pd.Series(
                    pd.arrays.ArrowStringArray(column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)),
                    dtype=_STR_DTYPE,
                )
                if len(column)
                else pd.Series([], dtype=_STR_DTYPE)
            )
    return pd.DataFrame(columns, copy=False)  # the arrays just made, not a consolidated copy of them


def _parse_invocations(data: bytes) -> pd.DataFrame:
    return pd.read_csv(
        io.BytesIO(data),
        dtype=INVOCATION_DTYPES,
        keep_default_na=False,
        na_values={c: [""] for c in ("intended_ns", "sent_ns", "done_ns", "http_status")},
        engine="c",
    )
