"""Helpers the tests import: the checkout's paths, its tracked files, ``faasprof`` run as a
subprocess, and a test server's JSON answer. Fixtures and hooks stay in ``tests/conftest.py``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
DATA_DIR = Path(__file__).resolve().parent / "data"


def tracked_files(root: Path = REPO_ROOT) -> list[Path]:
    """The project's files under ``root``: tracked, or new and not ignored (build outputs, runs and
    virtualenvs beside them are no part of the project); outside a git checkout, every file. A
    check that reads the project's own files reads these, never what a run left in the tree."""
    done = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=root,
        capture_output=True,
        timeout=60,
    )
    if done.returncode != 0:
        return sorted(path for path in root.rglob("*") if path.is_file())
    return sorted(root / name for name in done.stdout.decode().split("\0") if name)


def run_cli(
    *args: str,
    cwd: str | os.PathLike | None = None,
    timeout: float = 120,
    env: dict | None = None,
    input: str | None = None,
):
    """Run ``faasprof`` as a subprocess; returns the CompletedProcess (text mode)."""
    full_env = dict(os.environ)
    full_env.pop("WSK_CONFIG_FILE", None)
    full_env["HOME"] = full_env.get("FAASPROF_TEST_HOME", full_env.get("HOME", ""))
    if env:
        full_env.update(env)
    return subprocess.run(
        [sys.executable, "-m", "faasprof", *map(str, args)],
        cwd=cwd or REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=full_env,
        input=input,
    )


def send_json(handler, status: int, body: object) -> None:
    """A test server's answer: ``body`` as JSON with its length (``handler`` is the request's
    ``BaseHTTPRequestHandler``; keep-alive clients need the length)."""
    data = json.dumps(body).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


def not_private(root: Path) -> list[str]:
    """What under ``root`` (itself included; links are not followed) group or others may
    read, write or enter: ``"relative/path 0o644"`` each, [] when all is private to its owner."""
    found = []
    for path in [root, *sorted(root.rglob("*"))]:
        mode = path.lstat().st_mode
        if not (mode & 0o170000 == 0o120000) and mode & 0o077:
            found.append(f"{path.relative_to(root)} {oct(mode & 0o777)}")
    return found


def process_alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, which has ended, does not)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return False
