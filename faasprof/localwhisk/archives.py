"""Action archives (a base64 zip as ``exec.code``) checked and unpacked within a size cap.

OpenWhisk caps the archive (48 MB of code, ``max_action_code_bytes``) but not what it unpacks to:
a 300 KB zip can unpack to 300 MB per cold sandbox (issue 44). localwhisk caps the unpacked total
and the number of entries (``max_unpacked_code_bytes``, 512 MiB by default, and
``max_archive_entries``, 65,536): checked at PUT from the archive's directory, and again while
unpacking at a cold start, counting the bytes actually written, so an archive whose directory
understates its sizes is stopped too.
"""

from __future__ import annotations

import base64
import binascii
import io
import shutil
import zipfile
from pathlib import Path

_CHUNK_BYTES = 1024 * 1024


class ArchiveRefused(ValueError):
    """An archive that is not a zip, or unpacks beyond the caps; the message says which."""


def _open(data: bytes) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile as error:
        raise ArchiveRefused(f"exec.code is not a zip archive ({error})") from None


def decode_code(code: str) -> bytes:
    """The archive's bytes from its base64 text; ArchiveRefused when it is not base64."""
    try:
        return base64.b64decode("".join(code.split()), validate=True)
    except (binascii.Error, ValueError):
        raise ArchiveRefused("exec.code is not valid base64 (exec.binary is true)") from None


def check_archive(data: bytes, max_bytes: int, max_entries: int) -> None:
    """Refuse, from its directory, an archive beyond the caps (before anything is unpacked)."""
    with _open(data) as archive:
        entries = archive.infolist()
        if len(entries) > max_entries:
            raise ArchiveRefused(
                f"the archive holds {len(entries)} entries, more than max_archive_entries {max_entries}"
            )
        total = sum(entry.file_size for entry in entries)
        if total > max_bytes:
            raise ArchiveRefused(f"the archive unpacks to {total} bytes, more than max_unpacked_code_bytes {max_bytes}")


def check_code_archive(code: str, max_bytes: int, max_entries: int) -> None:
    """``check_archive`` of a base64 zip that is one (other binary code passes: its runtime decides)."""
    data = decode_code(code)
    if data[:2] == b"PK":
        check_archive(data, max_bytes, max_entries)


def extract_archive(code: str, directory: Path, max_bytes: int, max_entries: int) -> None:
    """Unpack the base64 zip ``code`` into ``directory``, counting every byte written: beyond
    ``max_bytes`` (or ``max_entries``) it stops, removes what it wrote and raises ArchiveRefused."""
    data = decode_code(code)
    check_archive(data, max_bytes, max_entries)
    directory.mkdir(parents=True, exist_ok=True)
    written = 0
    try:
        with _open(data) as archive:
            for entry in archive.infolist():
                relative = member_path(entry.filename)
                if relative is None:
                    continue
                path = directory / relative
                if entry.is_dir():
                    path.mkdir(parents=True, exist_ok=True)
                    continue
                path.parent.mkdir(parents=True, exist_ok=True)
                with archive.open(entry) as source, open(path, "wb") as sink:
                    while chunk := source.read(_CHUNK_BYTES):
                        written += len(chunk)
                        if written > max_bytes:
                            raise ArchiveRefused(
                                f"the archive unpacks to more than max_unpacked_code_bytes {max_bytes} bytes"
                            )
                        sink.write(chunk)
    except BaseException:
        shutil.rmtree(directory, ignore_errors=True)
        raise


def member_path(name: str) -> Path | None:
    """An entry's path inside the target folder: ``..``, ``.``, empty parts and a leading ``/`` or
    drive dropped (as zipfile's own extract does), so that nothing lands outside it; None if empty."""
    parts = [part for part in name.replace("\\", "/").split("/") if part not in ("", ".", "..")]
    if parts and len(parts[0]) == 2 and parts[0][1] == ":":
        parts = parts[1:]
    return Path(*parts) if parts else None
