"""The run directory: the contract between the invoker, the collectors and the analyzer.

::

    runs/<test_name>-<UTC yyyymmddThhmmss>/
      manifest.json      format_version, resolved workload, platform, host, tools, clock anchor,
                         status, counts (see ``new_manifest``)
      plan.bin           the planned schedule (intended time and instance of every seq), written
                         before the first send (``write_plan``/``read_plan``)
      invocations.csv    one row per planned invocation (``INVOCATION_COLUMNS``)
      sends.csv          the send journal: ``seq,sent_ns`` per request written, on disk within a
                         second of the send; the invocation's row completes it
      monitors/<name>/   command.txt, stdout.log, stderr.log and the tool's raw output
      activations.jsonl  raw activation records
      activations.columns.npz
                         their flat columns, written beside them (``record_columns``): derived,
                         used only while it describes the file, safe to delete
      analysis/          derived, rebuildable

Times in ``invocations.csv`` are integer nanoseconds since the run's monotonic zero; the manifest's
``clock`` block holds the one wall-clock anchor (``wall_ns`` read at ``monotonic_ns``), so
``wall_ns(t) = clock.wall_ns + (t - (clock.monotonic_ns - clock.monotonic_zero_ns))``; in practice
the invoker takes the anchor at the zero itself, so ``wall_ns(t) = clock.wall_ns + t``.

Format versions (``FORMAT_VERSION``):
  1: first version.
  2: adds ``plan.bin`` and the send journal ``sends.csv``, and the outcomes ``unanswered`` and
     ``unrecorded`` of rows reconstructed for a torn run (read back by ``read_invocations`` and
     ``reconstruct_missing``). Version 1 runs are still read; a torn one is counted from the
     manifest, until ``faasprof analyze`` re-derives its plan from the manifest's resolved
     workload and seed (``analyzer.cmd_analyze``) and saves it as ``plan.bin``.

A torn run (the invoker killed, the disk full) is reconstructed by every reader: the plan says what
was due, the journal what was sent, the rows what was answered. A planned invocation without a row
becomes ``unanswered`` when the journal has its send, ``unrecorded`` when nothing of it survived.
The rows present are never taken for the plan.

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
import sys
import threading
import time
from array import array
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from faasprof import __version__
from faasprof.errors import ConfigError, FormatError
from faasprof.outcomes import HTTP_OUTCOMES
from faasprof.paths import REPO_ROOT
from faasprof.rundir import record_columns

FORMAT_VERSION = 2
SUPPORTED_FORMAT_VERSIONS = (1, 2)

MANIFEST = "manifest.json"
INVOCATIONS = "invocations.csv"
PLAN = "plan.bin"
SENDS = "sends.csv"
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
OUTCOMES = HTTP_OUTCOMES
SENDS_HEADER = "seq,sent_ns\n"
PLAN_MAGIC = b"faasprof-plan 1\n"
UNANSWERED_ERROR = "sent, but the run stopped before its answer was recorded (torn run; see the manifest's status)"
UNRECORDED_ERROR = "planned, but neither its row nor its send survived the crash (it may or may not have been sent)"
STATUSES = ("running", "complete", "interrupted", "aborted")
# ``platform.kind`` of a ``faasprof native`` run: no platform, so no activation records; its rows
# are the results (``activation_id`` holds the worker call's label).
NATIVE_PLATFORM_KIND = "native"

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
    """A manifest in state ``running``; callers add ``platform``, ``host``, ``tools``, ``monitors``.

    Writers build and update the manifest as its JSON dict (``write_manifest``); readers get the
    typed ``Manifest`` from ``read_manifest``.
    """
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


def write_manifest(run_dir: str | os.PathLike, manifest: "dict | Manifest") -> None:
    write_json_atomic(Path(run_dir) / MANIFEST, manifest.to_json() if isinstance(manifest, Manifest) else manifest)


def load_manifest(run_dir: str | os.PathLike) -> dict:
    """The manifest's JSON dict, version-checked (for writers that change and write it back).

    Readers use ``read_manifest``, which also validates the fields and types them.
    """
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


def read_manifest(run_dir: str | os.PathLike) -> "Manifest":
    """The run's typed manifest (read once by a reader and passed on); ``FormatError`` on an
    unknown format version or a field of the wrong type, ``ConfigError`` for a path that is not
    a directory."""
    return Manifest.from_json(load_manifest(run_dir), Path(run_dir) / MANIFEST)


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


# Top-level manifest keys the typed Manifest names; everything else is kept in ``extra``.
_DICT_FIELDS = ("faasprof", "clock", "workload", "counts", "platform", "host", "tools", "invoker")
_OPTIONAL_DICT_FIELDS = ("local_settings", "verdict", "sweep_point", "activations", "allocation", "native", "latency_reference")
_TEXT_FIELDS = ("status_reason", "created_utc", "finished_utc", "analysis_error")


@dataclass
class Manifest:
    """``manifest.json`` typed: what every reader of a run directory uses.

    Sub-blocks that carry their own schema (the resolved workload, the platform's ``GET /``, host
    metadata) stay dicts. ``monitors`` is always ``{name: description}`` whatever the file holds
    (the invoker writes a list of collector descriptions, each with its ``name``). Keys this
    version does not name are kept in ``extra``; ``to_json`` gives back the dict as read.
    """

    format_version: int
    test_name: str | None
    status: str | None  # one of STATUSES (None: not recorded)
    clock: dict = field(default_factory=dict)
    workload: dict = field(default_factory=dict)
    counts: dict = field(default_factory=dict)
    platform: dict = field(default_factory=dict)
    host: dict = field(default_factory=dict)
    tools: dict = field(default_factory=dict)
    faasprof: dict = field(default_factory=dict)
    invoker: dict = field(default_factory=dict)
    monitors: dict[str, dict] = field(default_factory=dict)
    warnings: list = field(default_factory=list)
    status_reason: str | None = None
    created_utc: str | None = None
    finished_utc: str | None = None
    analysis_error: str | None = None
    local_settings: dict | None = None
    verdict: dict | None = None
    sweep_point: dict | None = None
    activations: dict | None = None
    allocation: dict | None = None
    native: dict | None = None
    latency_reference: dict | None = None  # {function: reference latency}: a capacity probe's (analyzer.stats rule 2(d))
    extra: dict = field(default_factory=dict)
    raw: dict = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, data: dict, path: str | os.PathLike = MANIFEST) -> "Manifest":
        """Validate a manifest's JSON dict (as ``load_manifest`` read it) and type it."""
        if not isinstance(data, dict):
            raise FormatError(f"{path}: not a JSON object; the file is not a faasprof manifest")
        check_format_version(path, data)
        status = data.get("status")
        if status is not None and not isinstance(status, str):
            raise FormatError(f"{path}: status {status!r} is not text (one of {', '.join(STATUSES)}); the manifest is damaged")
        values: dict[str, Any] = {"format_version": int(data["format_version"]), "status": status,
                                  "test_name": None if data.get("test_name") is None else str(data["test_name"])}
        for name in _DICT_FIELDS:
            value = data.get(name)
            if value is not None and not isinstance(value, dict):
                raise FormatError(f"{path}: {name} is {type(value).__name__}, expected an object; the manifest is damaged")
            values[name] = value or {}
        for name in _OPTIONAL_DICT_FIELDS:
            value = data.get(name)
            if value is not None and not isinstance(value, dict):
                raise FormatError(f"{path}: {name} is {type(value).__name__}, expected an object; the manifest is damaged")
            values[name] = value
        for name in _TEXT_FIELDS:
            value = data.get(name)
            values[name] = None if value is None else str(value)
        clock = values["clock"]
        for key in ("monotonic_zero_ns", "wall_ns_at_zero"):
            if key in clock and not (isinstance(clock[key], int) and not isinstance(clock[key], bool)):
                raise FormatError(f"{path}: clock.{key} is {clock[key]!r}, expected integer nanoseconds; the manifest is damaged")
        values["monitors"] = _monitors_by_name(data.get("monitors"), path)
        warnings = data.get("warnings")
        values["warnings"] = list(warnings) if isinstance(warnings, list) else []
        named = {"format_version", "status", "test_name", "monitors", "warnings", *_DICT_FIELDS, *_OPTIONAL_DICT_FIELDS, *_TEXT_FIELDS}
        values["extra"] = {k: v for k, v in data.items() if k not in named}
        return cls(**values, raw=data)

    def to_json(self) -> dict:
        """The manifest as ``manifest.json`` holds it."""
        return self.raw

    @property
    def wall_ns_at_zero(self) -> int:
        """Wall-clock ns at the run's monotonic zero (0 when the run recorded no clock)."""
        return int(self.clock.get("wall_ns_at_zero", 0))

    @property
    def monotonic_zero_ns(self) -> int | None:
        value = self.clock.get("monotonic_zero_ns")
        return None if value is None else int(value)

    @property
    def native_run(self) -> bool:
        """A ``faasprof native`` run (``NATIVE_PLATFORM_KIND``): there are no records to join or fetch."""
        return self.platform.get("kind") == NATIVE_PLATFORM_KIND

    @property
    def instances(self) -> dict[str, dict]:
        """The resolved workload's instances by name."""
        instances = self.workload.get("instances")
        return instances if isinstance(instances, dict) else {}

    @property
    def planned(self) -> int | None:
        """The planned count the invoker recorded (None when unknown)."""
        planned = self.counts.get("planned")
        return int(planned) if isinstance(planned, int) and not isinstance(planned, bool) and planned > 0 else None


def _monitors_by_name(monitors: Any, path: str | os.PathLike) -> dict[str, dict]:
    """``monitors`` as ``{name: description}``: the invoker writes a list of descriptions, each
    with its ``name``; a dict by name is read as it is."""
    if monitors is None:
        return {}
    if isinstance(monitors, dict):
        return {str(name): dict(value, name=str(name)) if isinstance(value, dict) else {"name": str(name)} for name, value in monitors.items()}
    if isinstance(monitors, list):
        out = {}
        for entry in monitors:
            if isinstance(entry, dict) and isinstance(entry.get("name"), str):
                out[entry["name"]] = entry
        return out
    raise FormatError(f"{path}: monitors is {type(monitors).__name__}, expected a list of monitor descriptions; the manifest is damaged")


def as_manifest(manifest: "Manifest | dict") -> "Manifest":
    """A typed manifest from either form (functions that notebooks call with a plain dict)."""
    if isinstance(manifest, Manifest):
        return manifest
    data = dict(manifest)
    data.setdefault("format_version", FORMAT_VERSION)
    return Manifest.from_json(data)


def format_row(row: tuple) -> str:
    """One CSV line for a row in ``INVOCATION_COLUMNS`` order (None → empty field)."""
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerow(["" if value is None else value for value in row])
    return buffer.getvalue()


class InvocationLog:
    """Appends rows to ``invocations.csv`` and send lines to ``sends.csv``, durable every FLUSH_INTERVAL_S.

    ``append`` (a finished invocation's row) and ``sent`` (a request just written) are cheap and
    thread-safe: they only put a tuple in a deque. A background thread formats, writes and fsyncs
    both files; ``close`` writes whatever is left. A ``kill -9`` loses at most the last flush
    interval of sends and rows.

    A write that fails (disk full, I/O error) stops all further writing: the files keep every
    complete line written before it (a line cut short is dropped by the readers), ``error`` holds
    one line saying what failed, and ``lost`` counts the rows that could not be written. The owner
    polls ``error`` and stops the run.
    """

    def __init__(self, run_dir: str | os.PathLike, flush_interval_s: float = FLUSH_INTERVAL_S, journal: bool = True):
        self.path = Path(run_dir) / INVOCATIONS
        self.sends_path = Path(run_dir) / SENDS
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o644)
        self._sends_fd: int | None = None
        self.error: str | None = None
        self.lost = 0
        try:
            _write_all(self._fd, (",".join(INVOCATION_COLUMNS) + "\n").encode())
            if journal:
                self._sends_fd = os.open(self.sends_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o644)
                _write_all(self._sends_fd, SENDS_HEADER.encode())
        except OSError:
            self._close_fds()
            raise
        # Deques, not lists swapped under the lock: append() takes no lock, and a row appended
        # to a list just after the flush thread swapped it out would be lost.
        self._pending: deque[tuple] = deque()
        self._sends: deque[tuple[int, int]] = deque()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._interval_s = flush_interval_s
        self._thread = threading.Thread(target=self._flush_loop, name="invocation-log", daemon=True)
        self._thread.start()

    def append(self, row: tuple) -> None:
        self._pending.append(row)

    def sent(self, seq: int, sent_ns: int) -> None:
        """A request was written at ``sent_ns`` (run clock); its row will complete it."""
        self._sends.append((seq, sent_ns))

    def flush(self) -> None:
        with self._lock:
            if self._fd < 0:
                return
            sends = self._sends
            rows = [self._pending.popleft() for _ in range(len(self._pending))]
            if self.error is not None:
                self.lost += len(rows)
                sends.clear()
                return
            try:
                if self._sends_fd is not None:
                    lines = [sends.popleft() for _ in range(len(sends))]
                    if lines:
                        _write_all(self._sends_fd, "".join([f"{seq},{sent_ns}\n" for seq, sent_ns in lines]).encode())
                    os.fsync(self._sends_fd)
                if rows:
                    buffer = io.StringIO()
                    csv.writer(buffer, lineterminator="\n").writerows(["" if value is None else value for value in row] for row in rows)
                    _write_all(self._fd, buffer.getvalue().encode("utf-8"))
                    rows = []
                os.fsync(self._fd)
            except OSError as error:
                self.lost += len(rows)
                self.error = f"{self.path.parent}: cannot write the run's files ({error.strerror or error}); free space on that file system or pass --out on another one"

    def _flush_loop(self) -> None:
        while not self._stop.wait(self._interval_s):
            self.flush()

    def close(self) -> None:
        self._stop.set()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join()
        self.flush()
        with self._lock:
            self._close_fds()

    def _close_fds(self) -> None:
        for fd in (self._fd, self._sends_fd):
            if fd is not None and fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self._fd, self._sends_fd = -1, None


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


# -- the plan ------------------------------------------------------------------------------------


@dataclass
class Plan:
    """The planned schedule as written before the first send: seq ``i`` is due at ``intended_ns[i]``."""

    intended_ns: array  # 'q'
    instance_idx: array  # 'i'
    instance_names: list[str]
    functions: list[str]

    def __len__(self) -> int:
        return len(self.intended_ns)


def write_plan(run_dir: str | os.PathLike, intended_ns: Any, instance_idx: Any, instance_names: Iterable[str], functions: Iterable[str]) -> None:
    """``plan.bin``: a magic line, a JSON line (count, instances), then int64 times and int32 owners.

    ``intended_ns`` and ``instance_idx`` are anything with the buffer protocol in native byte
    order (numpy arrays, ``array``); the file states the byte order it was written in.
    """
    times, owners = memoryview(intended_ns).cast("B"), memoryview(instance_idx).cast("B")
    count = len(times) // 8
    if len(owners) // 4 != count:
        raise ValueError("plan: intended_ns (int64) and instance_idx (int32) differ in length")
    header = {"count": count, "byteorder": sys.byteorder, "instances": list(instance_names), "functions": list(functions)}
    path = Path(run_dir) / PLAN
    with open(path, "xb") as handle:
        handle.write(PLAN_MAGIC)
        handle.write(json.dumps(header).encode() + b"\n")
        handle.write(times)
        handle.write(owners)
        handle.flush()
        os.fsync(handle.fileno())


def read_plan(run_dir: str | os.PathLike) -> Plan | None:
    """The run's plan, or None when it has none (format version 1, or it stopped before writing it)."""
    path = Path(run_dir) / PLAN
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    try:
        if not data.startswith(PLAN_MAGIC):
            raise ValueError("not a faasprof plan")
        end = data.index(b"\n", len(PLAN_MAGIC))
        header = json.loads(data[len(PLAN_MAGIC) : end])
        count = int(header["count"])
        body = memoryview(data)[end + 1 :]
        if len(body) != count * 12:
            raise ValueError(f"{len(body)} bytes for {count} invocations")
        times, owners = array("q"), array("i")
        times.frombytes(body[: count * 8])
        owners.frombytes(body[count * 8 :])
        if header.get("byteorder", sys.byteorder) != sys.byteorder:
            times.byteswap()
            owners.byteswap()
        names, functions = list(header["instances"]), list(header["functions"])
    except (ValueError, KeyError, TypeError) as error:
        raise FormatError(f"{path}: unreadable ({error}); the run's plan is damaged, so a torn run cannot be reconstructed") from None
    return Plan(times, owners, names, functions)


# -- reading invocations, and reconstructing a torn run -------------------------------------------


def read_sends(run_dir: str | os.PathLike) -> dict[int, int]:
    """The send journal as ``{seq: sent_ns}`` (a line cut short by a crash is dropped)."""
    path = Path(run_dir) / SENDS
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    sends: dict[int, int] = {}
    for line in text[: text.rfind("\n") + 1].splitlines()[1:]:
        seq, _, sent = line.partition(",")
        try:
            sends[int(seq)] = int(sent)
        except ValueError:
            continue
    return sends


@dataclass
class Completeness:
    """How the rows on disk compare with the plan: what ``analyze`` states about a torn run."""

    planned: int | None  # None: unknown (a version-1 run without counts)
    rows: int
    unanswered: int = 0  # reconstructed: journal says sent, no row
    unrecorded: int = 0  # reconstructed: planned, no row, no journal line
    uncounted: int = 0  # missing but not reconstructable (no plan file): counted only
    plan_source: str = PLAN
    notes: list[str] = field(default_factory=list)

    @property
    def missing(self) -> int:
        return self.unanswered + self.unrecorded + self.uncounted

    def to_json(self) -> dict:
        return {"planned": self.planned, "rows": self.rows, "rows_missing": self.missing, "unanswered": self.unanswered,
                "unrecorded": self.unrecorded, "uncounted": self.uncounted, "plan_source": self.plan_source}

    def describe(self) -> str | None:
        """One line for a torn run, None for a whole one."""
        if not self.missing:
            return None
        parts = []
        if self.unanswered:
            parts.append(f"{self.unanswered:,} sent without a recorded answer (unanswered)")
        if self.unrecorded:
            parts.append(f"{self.unrecorded:,} with neither row nor send on disk (unrecorded)")
        if self.uncounted:
            parts.append(f"{self.uncounted:,} that cannot be reconstructed (a format-1 run has no plan or send journal)")
        return f"torn run: {self.missing:,} of {self.planned:,} planned invocations have no row: " + "; ".join(parts)


def reconstruct_missing(
    run_dir: str | os.PathLike, present_seqs: Iterable[int], manifest: "Manifest | dict | None" = None, *, distinct: bool = False
) -> tuple[list[tuple], Completeness]:
    """Rows (``INVOCATION_COLUMNS`` tuples) for every planned invocation without one, and the tally.

    The plan comes from ``plan.bin``; a run without one (format 1) falls back to the manifest's
    planned count, which can only be counted. ``present_seqs`` are the seqs of the rows read;
    ``distinct`` says they hold no seq twice (a sized sequence, an array of ten million included,
    then taken as it is).
    """
    run_dir = Path(run_dir)
    present = present_seqs if distinct else list(present_seqs)
    plan = read_plan(run_dir)
    if plan is None:
        if manifest is None:
            try:
                manifest = read_manifest(run_dir)
            except (FormatError, ConfigError):
                manifest = None
        planned = as_manifest(manifest).planned if manifest is not None else None
        missing = max(0, planned - (len(present) if distinct else len(set(present)))) if planned is not None else 0
        return [], Completeness(planned, len(present), uncounted=missing, plan_source="manifest counts" if planned else "none")
    n = len(plan)
    seen = bytearray(n)
    for seq in present:
        if 0 <= seq < n:
            seen[seq] = 1
    report = Completeness(n, len(present))
    if seen.count(0) == 0:
        return [], report
    sends = read_sends(run_dir)
    rows = []
    names, functions, intended, owners = plan.instance_names, plan.functions, plan.intended_ns, plan.instance_idx
    seq = seen.find(0)
    while seq >= 0:
        owner = owners[seq]
        sent_ns = sends.get(seq)
        if sent_ns is not None:
            rows.append((seq, names[owner], functions[owner], intended[seq], sent_ns, None, "unanswered", None, None, UNANSWERED_ERROR))
            report.unanswered += 1
        else:
            rows.append((seq, names[owner], functions[owner], intended[seq], None, None, "unrecorded", None, None, UNRECORDED_ERROR))
            report.unrecorded += 1
        seq = seen.find(0, seq + 1)
    return rows, report


def read_invocations(run_dir: str | os.PathLike, reconstruct: bool = True) -> list[dict[str, str]]:
    """Rows of ``invocations.csv`` as dicts of strings (the analyzer types them with pandas).

    A final line cut short by a crash is dropped, not an error. With ``reconstruct`` (the default)
    every planned invocation without a row gets its reconstructed row (``reconstruct_missing``),
    so a torn run reads as the whole plan; the result is ordered by ``seq``.
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
    rows = [dict(zip(INVOCATION_COLUMNS, row)) for row in reader if len(row) == len(INVOCATION_COLUMNS)]
    if not reconstruct:
        return rows
    extra, _ = reconstruct_missing(run_dir, (int(row["seq"]) for row in rows if row["seq"].isdigit()))
    if not extra:
        return rows
    rows.extend(dict(zip(INVOCATION_COLUMNS, ("" if value is None else str(value) for value in row))) for row in extra)
    rows.sort(key=lambda row: int(row["seq"]) if row["seq"].isdigit() else -1)
    return rows


def completeness(run_dir: str | os.PathLike) -> Completeness:
    """The torn-run tally of a run directory (reads ``invocations.csv`` and the plan)."""
    rows = read_invocations(run_dir, reconstruct=False)
    _, report = reconstruct_missing(run_dir, {int(row["seq"]) for row in rows if row["seq"].isdigit()})
    return report


# -- monitors -------------------------------------------------------------------------------------

MONITOR_META = "meta.json"  # a collector's anchors (monotonic and wall-clock ns at its start) and layout


def monitor_dir(run_dir: str | os.PathLike, name: str) -> Path:
    """``monitors/<name>/`` (created): where collector ``name`` writes its raw output."""
    path = Path(run_dir) / MONITORS / name
    path.mkdir(parents=True, exist_ok=True)
    return path


def monitor_dirs(run_dir: str | os.PathLike) -> dict[str, Path]:
    """``{name: monitors/<name>/}`` for every monitor that left a directory, by name."""
    base = Path(run_dir) / MONITORS
    if not base.is_dir():
        return {}
    return {path.name: path for path in sorted(base.iterdir()) if path.is_dir()}


def read_monitor_meta(directory: str | os.PathLike) -> dict:
    """A monitor directory's ``meta.json`` ({} when the collector wrote none)."""
    path = Path(directory) / MONITOR_META
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except json.JSONDecodeError as error:
        raise FormatError(f"{path}: not valid JSON ({error.msg}); the collector was interrupted while writing it") from None
    return data if isinstance(data, dict) else {}


# -- activation records (activations.jsonl) ---------------------------------------------------------
#
# One raw record per line exactly as the platform returned it; written by ``faasprof run`` when it
# owns the platform and by ``faasprof analyze`` otherwise (the fetching lives with the platform).


def sort_records(records: Iterable[dict]) -> list[dict]:
    """Records in file order: by ``start``, then activation id."""
    return sorted(records, key=lambda r: (int(r.get("start") or 0), str(r.get("activationId"))))


def write_records(path: str | os.PathLike, records: Iterable[dict]) -> int:
    """Write raw records as JSON lines atomically (temporary file, fsync, rename); returns the count.

    Their column index (``faasprof.rundir.record_columns``) is written beside them as they pass, so
    that an analysis never parses them again."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    count = 0
    index = record_columns.ColumnsBuilder()
    with open(tmp, "wb") as handle:
        for record in records:
            line = json.dumps(record, separators=(",", ":")).encode("utf-8") + b"\n"
            handle.write(line)
            index.add(line)
            count += 1
        handle.flush()
        os.fsync(handle.fileno())
    record_columns.remove(path)  # an index of the file being replaced must never outlive it
    os.replace(tmp, path)
    try:
        index.write(path)
    except OSError:  # the index only saves the next reader time; the records are saved
        record_columns.remove(path)
    return count


def append_records(path: str | os.PathLike, records: Iterable[dict]) -> int:
    """Append raw records to an existing ``activations.jsonl`` (after a line cut short, if any).

    Its column index then covers a prefix of the file; readers parse the lines after it."""
    path = Path(path)
    count = 0
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
    records: dict[str, dict] = {}
    try:
        handle = open(path, encoding="utf-8")
    except FileNotFoundError:
        return records
    with handle:
        for line in handle:
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict) and isinstance(record.get("activationId"), str):
                records[record["activationId"]] = record
    return records
