"""Activation records read back flat, for the frames.

Fetching them is the platform's (``Platform.find_records``), asked through the platform registry
by ``faasprof.analyzer.analysis.fetch_run_records``; reading and writing ``activations.jsonl``
lives in ``faasprof.rundir``.

``flatten_record`` and ``read_records`` (``faasprof.rundir.records``) turn raw records into plain
columns (units in the names); their meaning is documented there.
"""

from __future__ import annotations

import sys

# Reading ``activations.jsonl`` into flat, typed records is the run directory's (faasprof.rundir.records);
# the analyzer uses it through these names.
from faasprof.rundir.records import (  # noqa: F401,E402
    CHUNK_RECORDS,
    ERROR_TEXT_CHARS,
    RECORD_COLUMNS,
    STATUS_CODES,
    flatten_fast,
    flatten_record,
    outcome_and_error,
    read_records,
    read_records_python,
)

DEFAULT_MARGIN_MS = 60_000  # clock skew allowance between the client host and the invoker host


def stderr_progress(message: str) -> None:
    print(f"analyze: {message}", file=sys.stderr, flush=True)
