"""The header check shared by the samplers' CSV parsers (cgroups, vmstat).

A sampler writes a CSV whose header names its columns; a file with another header is some other
tool's output, and parsing it anyway gives a frame of empty rows or a ``KeyError``. The parsers
call :func:`require_header` first, so ``faasprof parse`` and the analyzer say which file it is not.
"""

from __future__ import annotations

from collections.abc import Sequence

from faasprof.errors import FormatError


def require_header(header: Sequence[str] | None, required: Sequence[str], what: str) -> None:
    """Raise FormatError (one line, no file name: the caller adds it) unless ``header`` holds every
    column of ``required``; ``what`` names the file expected (``the vmstat collector's vmstat.csv``)."""
    present = set(header or ())
    missing = [name for name in required if name not in present]
    if missing:
        first = ",".join(list(header or ())[:3]) or "nothing"
        raise FormatError(f"not {what}: its first line starts {first!r} and lacks the column(s) {', '.join(missing)}")
