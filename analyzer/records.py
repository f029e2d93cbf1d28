"""Activation records read back flat, for the frames.

Fetching them from the platform lives with the REST client (``faasprof run`` fetches records
too); reading and writing ``activations.jsonl`` lives in ``faasprof.rundir``.

``flatten_record`` and ``read_records`` (``faasprof.rundir.records``) turn raw records into plain
columns (units in the names); their meaning is documented there.
"""

from __future__ import annotations

import sys

# Fetching and saving live with the REST client (``faasprof run`` saves records too); the analyzer
# uses them through this module.
from invoker.activations import (  # noqa: F401
    DEFAULT_RETRY_DELAYS_S,
    MAX_ID_LOOKUPS_PER_ROUND,
    PAGE_LIMIT,
    FetchReport,
    fetch_records,
    list_window,
)
from faasprof.rundir import append_records, sort_records, write_records  # noqa: F401

# Reading ``activations.jsonl`` into flat, typed records is the run directory's (faasprof.rundir.records);
# the analyzer uses it through these names.
from faasprof.rundir.records import (  # noqa: F401,E402
    CHUNK_RECORDS,
    ERROR_TEXT_CHARS,
    RECORD_COLUMNS,
    STATUS_CODES,
    _flatten_fast,
    _outcome_and_error,
    flatten_record,
    read_records,
    read_records_python,
)

DEFAULT_MARGIN_MS = 60_000  # clock skew allowance between the client host and the invoker host


def stderr_progress(message: str) -> None:
    print(f"analyze: {message}", file=sys.stderr, flush=True)
