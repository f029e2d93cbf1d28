"""The key a localwhisk accepts: a key of its own per data directory, unless the user gives one.

OpenWhisk's guest key is public (it ships in OpenWhisk's sources and every standalone): a server
that accepts it lets every user of the host run code as the server's user. So a data directory
gets its own key on first use, ``<data dir>/auth.key`` (``UUID:KEY``, 0600, beside the store it
guards), which ``faasprof local start`` records in the connection file that ``faasprof run`` and
the other commands read, as before. ``--auth``/``--auth-file``/``$LOCALWHISK_AUTH`` still choose
the key, the guest key included (docs/security.md says what that means).
"""

from __future__ import annotations

import os
import secrets
import uuid
from pathlib import Path

from faasprof.localwhisk.private import FILE_MODE, private_dir

KEY_FILE = "auth.key"


def key_path(data_dir: Path) -> Path:
    return Path(data_dir) / KEY_FILE


def data_dir_key(data_dir: Path) -> str:
    """The data directory's own key (``UUID:KEY``), made on first use; readable by its user only.
    Where it cannot be stored, a key for this start alone."""
    path = key_path(data_dir)
    try:
        text = path.read_text().strip()
    except FileNotFoundError:
        text = ""
    if ":" in text:
        return text
    key = f"{uuid.uuid4()}:{secrets.token_urlsafe(48)}"
    try:
        private_dir(Path(data_dir))
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
        with os.fdopen(fd, "w") as handle:
            handle.write(key + "\n")
    except OSError:
        # A full disk or a read-only folder: the key serves this start only (still not the
        # guest key); the server's own start then says what is wrong with the folder.
        path.unlink(missing_ok=True)
    return key


def existing_key(data_dir: Path) -> str | None:
    """The data directory's key when it has one (never made here)."""
    try:
        text = key_path(data_dir).read_text().strip()
    except OSError:
        return None
    return text if ":" in text else None
