"""The embedded platform's store is the source of its records: a run's activation records read from
the store a stopped localwhisk left in the run directory (``localwhisk/localwhisk.sqlite``) into the
run's ``activations.jsonl``.

``faasprof run`` does this after it stopped the localwhisk it started (which records every
activation still queued or running as stopped, and flushes its store), and ``faasprof analyze``
whenever the run directory holds the store and ``activations.jsonl`` lacks a record of one of the
run's activation ids (a run killed mid-way, a localwhisk killed mid-run, a file saved short).
Reading the file needs no server: the records of a crashed run are there as they were written.

An activation id the platform answered (202 with the id) without a record in its store after it
stopped is the only case reported as lost by the platform; a platform that exited during the run
(killed) is said to have, since it could not write the records of what it still held.
"""

from __future__ import annotations

import os
from pathlib import Path

from faasprof import rundir
from faasprof.localwhisk.store import STORE_FILE, StoreReadError, read_stored_records

MISSING_SAMPLE = 20
EMBEDDED_DATA_DIR = "localwhisk"  # the embedded platform's data directory inside the run directory


def store_path(run_dir: str | os.PathLike, data_dir: str | None = None) -> Path:
    """Where the embedded platform of the run in ``run_dir`` kept its store (``data_dir`` as the
    manifest's ``platform.data_dir`` names it, relative to the run directory)."""
    return Path(run_dir) / (data_dir or EMBEDDED_DATA_DIR) / STORE_FILE


def save_store_records(run_dir: str | os.PathLike, store: str | os.PathLike, platform_exit: str | None = None) -> dict:
    """Add to ``activations.jsonl`` the records of the run's activation ids it lacks, read from
    ``store``; returns the report the manifest's ``activations`` block and the analysis keep
    (expected, saved, from_store, missing and why). ``platform_exit`` says how the platform ended
    when it did not stop in order (its records of what it still held were never written).
    Raises StoreReadError when the store cannot be read, OSError when the file cannot be written."""
    run_dir = Path(run_dir)
    wanted = {row["activation_id"] for row in rundir.read_invocations(run_dir) if row["activation_id"]}
    path = rundir.activations_path(run_dir)
    saved, torn = rundir.read_records_counting_torn(path)
    lacking = wanted - saved.keys()
    stored = read_stored_records(Path(store), lacking) if lacking else {}
    if stored or torn:
        # Rewritten whole: a line cut short goes, and the store gives the records after it.
        rundir.write_records(path, rundir.sort_records([*saved.values(), *stored.values()]))
    elif not path.exists():
        rundir.write_records(path, [])
    missing = lacking - stored.keys()
    report = {
        "source": str(Path(store).relative_to(run_dir)) if Path(store).is_relative_to(run_dir) else str(store),
        "file": rundir.ACTIVATIONS,
        "expected": len(wanted),
        "saved": len(wanted) - len(missing),
        "from_store": len(stored),
        "missing": len(missing),
        "interrupted": False,
    }
    if torn:
        report["torn_lines"] = torn
    if missing:
        report["missing_why"] = _missing_why(platform_exit)
        report["missing_ids_sample"] = sorted(missing)[:MISSING_SAMPLE]
    return report


def _missing_why(platform_exit: str | None) -> str:
    if platform_exit:
        return (
            f"the embedded localwhisk {platform_exit}: it could not record what it still held, and its store has no record of "
            "these accepted activations"
        )
    return (
        "the platform answered each with an activation id, but its store holds no record of it after it stopped: "
        "lost by the platform (see localwhisk/localwhisk.log)"
    )


__all__ = ["EMBEDDED_DATA_DIR", "STORE_FILE", "StoreReadError", "save_store_records", "store_path"]
