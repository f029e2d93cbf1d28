"""Reads of a file someone else named, bounded: a stated limit, checked before and while reading.

Every file a workload or an inventory names is read here (the workload JSON, ``param_file``,
``data_file``, a trace, an inventory): the path must be a regular file (a device such as
``/dev/zero``, a FIFO or a socket is refused before a byte is read, and a FIFO is opened without
waiting for a writer), its size must be within the limit of its kind (``LIMITS``), and at most
limit + 1 bytes are ever read, so a file that grows while it is read is still refused. A large
text (a trace) is read through ``open_bounded_text``: the same checks, then a stream of lines, each
at most ``max_line_bytes``. Errors are ``BoundedReadError`` (a ``ConfigError``): one line naming the
file, what it is, the limit, and the fix.
"""

from __future__ import annotations

import io
import os
import stat
from pathlib import Path
from typing import IO

from faasprof.errors import ConfigError

MIB = 1024 * 1024

# The limit of each kind of file, in bytes (the user documentation lists them).
MAX_WORKLOAD_BYTES = 64 * MIB
MAX_PARAM_FILE_BYTES = 64 * MIB
MAX_DATA_FILE_BYTES = 64 * MIB  # sent as a request body: platforms refuse far less (OpenWhisk 1 MiB)
MAX_TRACE_FILE_BYTES = 512 * MIB  # streamed, one pass: memory follows the rows kept, not the file
MAX_INVENTORY_BYTES = 1 * MIB
LIMITS = {
    "workload": MAX_WORKLOAD_BYTES,
    "param_file": MAX_PARAM_FILE_BYTES,
    "data_file": MAX_DATA_FILE_BYTES,
    "trace_file": MAX_TRACE_FILE_BYTES,
    "inventory": MAX_INVENTORY_BYTES,
}


class BoundedReadError(ConfigError):
    """A file that is not a regular file, or larger than its kind's limit, or unreadable."""


def _open_regular(path: Path, what: str, limit_bytes: int) -> IO[bytes]:
    """The file opened for reading in binary, once it is known to be a regular file within the limit."""
    try:
        # O_NONBLOCK: a FIFO opened for reading would wait for a writer; it is refused below instead.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise BoundedReadError(f"{path}: the {what} does not exist; fix the path") from None
    except IsADirectoryError:
        raise BoundedReadError(f"{path}: the {what} is a directory; name a file") from None
    except OSError as error:
        raise BoundedReadError(
            f"{path}: cannot read the {what} ({error.strerror or error}); fix its permissions"
        ) from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise BoundedReadError(f"{path}: the {what} is a directory; name a file")
        if not stat.S_ISREG(info.st_mode):
            raise BoundedReadError(
                f"{path}: the {what} is not a regular file (a device, FIFO or socket), which could be read without end; name a file"
            )
        _check_size(path, what, info.st_size, limit_bytes)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _check_size(path: Path, what: str, size: int, limit_bytes: int) -> None:
    if size > limit_bytes:
        raise BoundedReadError(
            f"{path}: the {what} is {size:,} bytes, more than the {limit_bytes:,} faasprof reads for it; "
            "name a smaller file (or cut it)"
        )


def check_bounded(path: str | os.PathLike, limit_bytes: int, what: str) -> None:
    """``BoundedReadError`` unless ``path`` is a regular file within ``limit_bytes`` (its size as
    the file system says it now; nothing is read): for ``validate``, before a run reads it."""
    _open_regular(Path(path), what, limit_bytes).close()


def read_bounded(path: str | os.PathLike, limit_bytes: int, what: str) -> bytes:
    """The bytes of the regular file ``path`` (a ``what``: "data_file", "workload", ...), at most
    ``limit_bytes``; ``BoundedReadError`` otherwise. Never reads more than limit + 1 bytes."""
    path = Path(path)
    with _open_regular(path, what, limit_bytes) as handle:
        try:
            raw = handle.read(limit_bytes + 1)
        except OSError as error:
            raise BoundedReadError(
                f"{path}: cannot read the {what} ({error.strerror or error}); fix the file"
            ) from None
    _check_size(path, what, len(raw), limit_bytes)
    return raw


class _Capped(io.RawIOBase):
    """A binary reader that fails once more than ``limit_bytes`` came through it (a file that grew)."""

    def __init__(self, handle: IO[bytes], path: Path, what: str, limit_bytes: int):
        self._handle, self._path, self._what, self._limit = handle, path, what, limit_bytes
        self._read = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        view = memoryview(buffer)
        chunk = self._handle.read(min(len(view), self._limit + 1 - self._read))
        self._read += len(chunk)
        if self._read > self._limit:
            _check_size(self._path, self._what, self._read, self._limit)
        view[: len(chunk)] = chunk
        return len(chunk)

    def close(self) -> None:
        self._handle.close()
        super().close()


def open_bounded(path: str | os.PathLike, limit_bytes: int, what: str) -> IO[bytes]:
    """The regular file ``path`` opened in binary to be read as a stream, refused as ``read_bounded``
    refuses it; reading past ``limit_bytes`` (a file that grew) raises ``BoundedReadError``."""
    path = Path(path)
    raw = _Capped(_open_regular(path, what, limit_bytes), path, what, limit_bytes)
    return io.BufferedReader(raw, buffer_size=1 << 20)


def open_bounded_text(path: str | os.PathLike, limit_bytes: int, what: str) -> IO[str]:
    """``open_bounded`` as UTF-8 text (universal newlines); undecodable bytes raise
    ``UnicodeDecodeError`` while reading."""
    return io.TextIOWrapper(open_bounded(path, limit_bytes, what), encoding="utf-8", newline=None)


def read_bounded_text(path: str | os.PathLike, limit_bytes: int, what: str) -> str:
    """``read_bounded`` decoded as UTF-8 (``BoundedReadError`` when it is not)."""
    raw = read_bounded(path, limit_bytes, what)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise BoundedReadError(
            f"{path}: the {what} is not UTF-8 text (byte 0x{raw[error.start]:02x} at offset {error.start}); save it as UTF-8"
        ) from None
