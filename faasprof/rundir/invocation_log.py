"""``invocations.csv`` and the send journal ``sends.csv``: written row by row, durable, read back whole.

``InvocationLog`` is the invoker's writer (``INVOCATION_COLUMNS``: times are integer ns since the
run's monotonic zero; ``outcome`` one of ``OUTCOMES``). ``LogFollower`` reads another process's
log as it grows (the send processes of a sharded run). ``read_invocations`` reads the rows back
as dicts of strings, a torn run reconstructed (``faasprof.rundir.plan``); the analyzer's typed
frame is ``faasprof.rundir.tables``.
"""

from __future__ import annotations

import csv
import io
import os
import threading
from collections import deque
from pathlib import Path
from typing import Iterable, Sequence

from faasprof.errors import FormatError
from faasprof.outcomes import HTTP_OUTCOMES
from faasprof.rundir.layout import INVOCATIONS, PRIVATE_FILE_MODE, SENDS, open_private
from faasprof.rundir.plan import Completeness, reconstruct_missing

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
# One row, INVOCATION_COLUMNS in order: the values (the dispatcher's tuple) or their text (a send
# process's row merged as the child wrote it).
InvocationRow = Sequence[object]
SENDS_HEADER = "seq,sent_ns\n"

# How often buffered invocation rows must reach the disk (the contract says at least once a second).
FLUSH_INTERVAL_S = 0.5


def format_row(row: InvocationRow) -> str:
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
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, PRIVATE_FILE_MODE)
        self._sends_fd: int | None = None
        self.error: str | None = None
        self.lost = 0
        try:
            _write_all(self._fd, (",".join(INVOCATION_COLUMNS) + "\n").encode())
            if journal:
                self._sends_fd = os.open(
                    self.sends_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, PRIVATE_FILE_MODE
                )
                _write_all(self._sends_fd, SENDS_HEADER.encode())
        except OSError:
            self._close_fds()
            raise
        # Deques, not lists swapped under the lock: append() takes no lock, and a row appended
        # to a list just after the flush thread swapped it out would be lost.
        self._pending: deque[InvocationRow] = deque()
        self._sends: deque[tuple[int, int]] = deque()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._interval_s = flush_interval_s
        self._thread = threading.Thread(target=self._flush_loop, name="invocation-log", daemon=True)
        self._thread.start()

    def append(self, row: InvocationRow) -> None:
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
                    csv.writer(buffer, lineterminator="\n").writerows(
                        ["" if value is None else value for value in row] for row in rows
                    )
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


def append_rows(run_dir: str | os.PathLike, rows: Iterable[InvocationRow]) -> None:
    """Append rows to a run's ``invocations.csv`` at once and make them durable (no log is open:
    the send loop never ran)."""
    with open_private(Path(run_dir) / INVOCATIONS, "a", encoding="utf-8", newline="") as handle:
        for row in rows:
            handle.write(format_row(row))
        handle.flush()
        os.fsync(handle.fileno())


class LogFollower:
    """Follows the ``invocations.csv`` and ``sends.csv`` another process's ``InvocationLog``
    writes in ``run_dir``: each call returns the complete lines appended since the last one (a
    partial last line is kept for the next call; the header line comes first, as written)."""

    def __init__(self, run_dir: str | os.PathLike):
        self._rows = _Tail(Path(run_dir) / INVOCATIONS)
        self._sends = _Tail(Path(run_dir) / SENDS)

    def new_rows(self) -> list[bytes]:
        return self._rows.read()

    def new_sends(self) -> list[bytes]:
        return self._sends.read()


class _Tail:
    def __init__(self, path: Path):
        self.path, self.offset, self.tail = path, 0, b""

    def read(self) -> list[bytes]:
        try:
            with open(self.path, "rb") as handle:
                handle.seek(self.offset)
                data = handle.read()
        except FileNotFoundError:
            return []
        if not data:
            return []
        self.offset += len(data)
        data = self.tail + data if self.tail else data
        cut = data.rfind(b"\n") + 1
        self.tail = data[cut:]
        return data[:cut].splitlines()


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
