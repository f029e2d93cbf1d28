"""The run directory's tabular files read as typed pandas frames (``invocations.csv``).

Kept apart from ``faasprof.rundir`` so the invoker, which only writes, does not load pandas and
Arrow; the format itself (columns, outcomes, torn-run reconstruction) is defined there.
"""

from __future__ import annotations

import io
import os
from pathlib import Path

import pandas as pd

from faasprof import rundir
from faasprof.errors import FormatError

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


def read_invocations_frame(run_dir: str | os.PathLike, manifest: "rundir.Manifest | None" = None) -> pd.DataFrame:
    """``invocations.csv`` typed (``INVOCATION_DTYPES``), one row per planned invocation by ``seq``.

    A final line cut short by a crash is dropped. A torn run (kill -9, disk full): every planned
    invocation without a row gets the row ``rundir.reconstruct_missing`` builds from the plan and
    the send journal; ``attrs["completeness"]`` says how many. ``manifest`` saves reading it again
    for a format-1 run without a plan.
    """
    path = Path(run_dir) / rundir.INVOCATIONS
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise FormatError(f"{path}: missing; the run did not get as far as its first invocation") from None
    cut = data.rfind(b"\n")
    data = data[: cut + 1] if cut >= 0 else b""
    header = data.split(b"\n", 1)[0].decode("utf-8", "replace").strip()
    if tuple(header.split(",")) != rundir.INVOCATION_COLUMNS:
        raise FormatError(f"{path}: header is {header!r}, expected {','.join(rundir.INVOCATION_COLUMNS)}")
    frame = _parse_invocations(data)
    missing, completeness = rundir.reconstruct_missing(run_dir, frame["seq"].tolist(), manifest)
    if missing:
        text = ",".join(rundir.INVOCATION_COLUMNS) + "\n" + "".join(rundir.format_row(row) for row in missing)
        frame = pd.concat([frame.astype({"instance": str, "function": str, "outcome": str}), _parse_invocations(text.encode()).astype({"instance": str, "function": str, "outcome": str})], ignore_index=True)
        frame = frame.astype({"instance": "category", "function": "category", "outcome": "category"})
    unknown = sorted(set(frame["outcome"].cat.categories) - set(rundir.OUTCOMES))
    if unknown:
        raise FormatError(f"{path}: outcome {unknown[0]!r} is not one of {', '.join(rundir.OUTCOMES)}; the file is not a faasprof invocation log of a version this faasprof reads")
    frame = frame.sort_values("seq", kind="stable").drop_duplicates("seq", keep="last").reset_index(drop=True)
    frame.attrs["completeness"] = completeness.to_json()
    return frame


def _parse_invocations(data: bytes) -> pd.DataFrame:
    return pd.read_csv(
        io.BytesIO(data),
        dtype=INVOCATION_DTYPES,
        keep_default_na=False,
        na_values={c: [""] for c in ("intended_ns", "sent_ns", "done_ns", "http_status")},
        engine="c",
    )
