"""The run directory: the contract between the invoker, the collectors and the analyzer.

::

    runs/<test_name>-<UTC yyyymmddThhmmss>/
      manifest.json      format_version, resolved workload, platform, host, tools, clock anchor,
                         status, counts (see ``new_manifest``)
      invocations.csv    one row per planned invocation (``INVOCATION_COLUMNS``)
      monitors/<name>/   command.txt, stdout.log, stderr.log and the tool's raw output
      activations.jsonl  raw activation records
      analysis/          derived, rebuildable

Times in ``invocations.csv`` are integer nanoseconds since the run's monotonic zero; the manifest's
``clock`` block holds the one wall-clock anchor (``wall_ns`` read at ``monotonic_ns``), so
``wall_ns(t) = clock.wall_ns + (t - (clock.monotonic_ns - clock.monotonic_zero_ns))``; in practice
the invoker takes the anchor at the zero itself, so ``wall_ns(t) = clock.wall_ns + t``.

Format versions (``FORMAT_VERSION``):
  1: first version.

A run directory is never overwritten: creation uses ``mkdir`` (which fails if the path exists) and
adds a ``-2``, ``-3`` … suffix when two runs start in the same second.
"""

from __future__ import annotations

import csv
import datetime as _dt
import io
import json
import os
import re
import threading
from collections import deque
import time
from pathlib import Path
from typing import Any

from faasprof import __version__
from faasprof.errors import ConfigError, FormatError

FORMAT_VERSION = 1
SUPPORTED_FORMAT_VERSIONS = (1,)

MANIFEST = "manifest.json"
INVOCATIONS = "invocations.csv"
ACTIVATIONS = "activations.jsonl"
MONITORS = "monitors"
ANALYSIS = "analysis"

INVOCATION_COLUMNS = (
    "seq",
    "instance",
    "function",
    "intended_ns",
    "sent_ns",
    "done_ns",
    "outcome",
    "http_status",
    "activation_id",
    "error",
)
OUTCOMES = ("ok", "app_error", "failed", "throttled", "timeout", "not_sent")
STATUSES = ("running", "complete", "interrupted", "aborted")

# How often buffered invocation rows must reach the disk (the contract says at least once a second).
FLUSH_INTERVAL_S = 0.5

_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


def safe_name(name: str) -> str:
    """A test name made safe for a directory name (other characters become ``_``)."""
    cleaned = _UNSAFE_NAME.sub("_", name).strip("._")
    return cleaned or "run"


def utc_stamp(when: _dt.datetime | None = None) -> str:
    when = when or _dt.datetime.now(_dt.timezone.utc)
    return when.astimezone(_dt.timezone.utc).strftime("%Y%m%dT%H%M%S")


def create_run_dir(out_dir: str | os.PathLike, test_name: str, when: _dt.datetime | None = None, monitors: bool = True) -> Path:
    """Create ``<out_dir>/<test_name>-<stamp>`` (and ``monitors/``); never reuse an existing path."""
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ConfigError(f"{out}: cannot create the output directory ({error.strerror}); pass --out DIR with a writable directory") from error
    base = f"{safe_name(test_name)}-{utc_stamp(when)}"
    for attempt in range(1, 1000):
        path = out / (base if attempt == 1 else f"{base}-{attempt}")
        try:
            path.mkdir()
        except FileExistsError:
            continue
        if monitors:
            (path / MONITORS).mkdir()
        return path
    raise ConfigError(f"{out}: could not find a free run directory name for {base}; clean up {out}")


def write_json_atomic(path: str | os.PathLike, data: Any) -> None:
    """Write JSON through a temporary file, fsync, then rename: readers never see half a file."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    with open(tmp, "w", encoding="utf-8") as handle:
        json.dump(data, handle, indent=2, sort_keys=False, default=_json_default)
        handle.write("\n")
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def _json_default(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    if hasattr(value, "tolist"):  # numpy scalars and arrays
        return value.tolist()
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    raise TypeError(f"cannot store {type(value).__name__} in JSON")


class ClockAnchor:
    """The run's monotonic zero and its one wall-clock anchor, read back to back."""

    def __init__(self, monotonic_zero_ns: int | None = None, wall_ns: int | None = None):
        if monotonic_zero_ns is None:
            monotonic_zero_ns = time.monotonic_ns()
            wall_ns = time.time_ns()
        self.monotonic_zero_ns = int(monotonic_zero_ns)
        self.wall_ns = int(wall_ns if wall_ns is not None else time.time_ns())

    def since_zero_ns(self, monotonic_ns: int | None = None) -> int:
        return (time.monotonic_ns() if monotonic_ns is None else monotonic_ns) - self.monotonic_zero_ns

    def wall_ns_at(self, since_zero_ns: int) -> int:
        return self.wall_ns + int(since_zero_ns)

    def to_json(self) -> dict[str, int]:
        return {"monotonic_zero_ns": self.monotonic_zero_ns, "wall_ns_at_zero": self.wall_ns}

    @classmethod
    def from_json(cls, data: dict[str, int]) -> "ClockAnchor":
        return cls(data["monotonic_zero_ns"], data["wall_ns_at_zero"])


def git_commit() -> str | None:
    """The commit of the faasprof checkout, read from .git without running git."""
    from faasprof.paths import REPO_ROOT

    git_dir = REPO_ROOT / ".git"
    try:
        head = (git_dir / "HEAD").read_text().strip()
        if head.startswith("ref: "):
            ref = head[5:]
            ref_path = git_dir / ref
            if ref_path.exists():
                return ref_path.read_text().strip()
            packed = git_dir / "packed-refs"
            if packed.exists():
                for line in packed.read_text().splitlines():
                    if line.endswith(" " + ref):
                        return line.split()[0]
            return None
        return head
    except OSError:
        return None


def new_manifest(test_name: str, workload: dict, clock: ClockAnchor, **extra: Any) -> dict[str, Any]:
    """A manifest in state ``running``; callers add ``platform``, ``host``, ``tools``, ``monitors``."""
    manifest: dict[str, Any] = {
        "format_version": FORMAT_VERSION,
        "test_name": test_name,
        "status": "running",
        "created_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "faasprof": {"version": __version__, "git_commit": git_commit()},
        "clock": clock.to_json(),
        "workload": workload,
        "counts": {"planned": 0, "sent": 0, "failed": 0},
    }
    manifest.update(extra)
    return manifest


def write_manifest(run_dir: str | os.PathLike, manifest: dict) -> None:
    write_json_atomic(Path(run_dir) / MANIFEST, manifest)


def load_manifest(run_dir: str | os.PathLike) -> dict:
    """Read and version-check a run's manifest; raise FormatError with the fix on any problem."""
    path = Path(run_dir) / MANIFEST
    if not Path(run_dir).is_dir():
        raise ConfigError(f"{run_dir}: not a directory; pass a run directory (runs/<test>-<stamp>)")
    try:
        with open(path, encoding="utf-8") as handle:
            manifest = json.load(handle)
    except FileNotFoundError:
        raise FormatError(f"{path}: missing; {run_dir} is not a faasprof run directory") from None
    except json.JSONDecodeError as error:
        raise FormatError(f"{path}: not valid JSON ({error.msg} at line {error.lineno})") from None
    check_format_version(path, manifest)
    return manifest


def check_format_version(path: str | os.PathLike, data: dict) -> None:
    version = data.get("format_version") if isinstance(data, dict) else None
    if version not in SUPPORTED_FORMAT_VERSIONS:
        raise FormatError(
            f"{path}: format_version {version!r} is not supported by faasprof {__version__} "
            f"(it reads {', '.join(map(str, SUPPORTED_FORMAT_VERSIONS))}); upgrade faasprof to read this run"
        )


def update_manifest(run_dir: str | os.PathLike, **changes: Any) -> dict:
    """Read, change top-level keys, write back atomically; returns the new manifest."""
    manifest = load_manifest(run_dir)
    manifest.update(changes)
    write_manifest(run_dir, manifest)
    return manifest


def format_row(row: tuple) -> str:
    """One CSV line for a row in ``INVOCATION_COLUMNS`` order (None → empty field)."""
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerow(["" if value is None else value for value in row])
    return buffer.getvalue()


class InvocationLog:
    """Appends rows to ``invocations.csv`` and makes them durable at least every FLUSH_INTERVAL_S.

    ``append`` is cheap and thread-safe (it only buffers); a background thread writes, flushes and
    fsyncs. ``close`` writes whatever is left. A ``kill -9`` loses at most the rows of the last
    flush interval.
    """

    def __init__(self, run_dir: str | os.PathLike, flush_interval_s: float = FLUSH_INTERVAL_S):
        self.path = Path(run_dir) / INVOCATIONS
        self._handle = open(self.path, "x", encoding="utf-8", newline="")
        self._handle.write(",".join(INVOCATION_COLUMNS) + "\n")
        self._handle.flush()
        # A deque, not a list swapped under the lock: append() takes no lock, and a row appended
        # to a list just after the flush thread swapped it out would be lost.
        self._pending: deque[tuple] = deque()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._interval_s = flush_interval_s
        self._thread = threading.Thread(target=self._flush_loop, name="invocation-log", daemon=True)
        self._thread.start()

    def append(self, row: tuple) -> None:
        self._pending.append(row)

    def flush(self) -> None:
        with self._lock:
            if self._handle.closed:
                return
            rows = [self._pending.popleft() for _ in range(len(self._pending))]
            if rows:
                writer = csv.writer(self._handle, lineterminator="\n")
                writer.writerows(["" if value is None else value for value in row] for row in rows)
            self._handle.flush()
            os.fsync(self._handle.fileno())

    def _flush_loop(self) -> None:
        while not self._stop.wait(self._interval_s):
            self.flush()

    def close(self) -> None:
        self._stop.set()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join()
        self.flush()
        with self._lock:
            if not self._handle.closed:
                self._handle.close()


def read_invocations(run_dir: str | os.PathLike) -> list[dict[str, str]]:
    """Rows of ``invocations.csv`` as dicts of strings (the analyzer types them with pandas).

    A final line cut short by a crash is dropped, not an error.
    """
    path = Path(run_dir) / INVOCATIONS
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise FormatError(f"{path}: missing; the run did not get as far as its first invocation") from None
    if not text.endswith("\n"):
        text = text[: text.rfind("\n") + 1]
    reader = csv.reader(io.StringIO(text))
    header = next(reader, None)
    if header is None or tuple(header) != INVOCATION_COLUMNS:
        raise FormatError(f"{path}: header is {header!r}, expected {','.join(INVOCATION_COLUMNS)}")
    return [dict(zip(INVOCATION_COLUMNS, row)) for row in reader if len(row) == len(INVOCATION_COLUMNS)]


def monitor_dir(run_dir: str | os.PathLike, name: str) -> Path:
    path = Path(run_dir) / MONITORS / name
    path.mkdir(parents=True, exist_ok=True)
    return path
