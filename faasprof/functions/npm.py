"""The catalogue's Node.js packages, installed into the user's cache, never into the package.

A catalogue function whose manifest entry ``requires`` an npm package (img-resize: jimp) gets one
``node_modules`` per hash of its ``package-lock.json`` (its ``package.json`` when it has no lock):
``<cache>/npm/<function>-<hash>/node_modules``, installed with ``npm ci`` (exactly what the lock
pins) the first time the function is packaged or run natively, or when
``python -m faasprof.functions.package --all`` runs (``./setup.sh`` does). The archive takes its
``node_modules/`` from there, and a native run finds it through ``NODE_PATH``.

The install goes to a temporary folder beside its final place and is renamed into it, so a
process that sees the folder sees a complete install, and two processes installing at once both
end with the same one.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Iterable

from faasprof.errors import NotReadyError, RunError
from faasprof.paths import cache_dir, cache_root
from faasprof.progress import QUIET, Progress

INSTALL_TIMEOUT_S = 600
# What a first install of the catalogue's packages took on a quiet host with a warm npm cache
# (npm ci of img-resize's jimp: 64 packages, 34 MB, about 20 s); said before an install starts.
TYPICAL_INSTALL_S = 20
INSTALL_COMMAND = ("npm", "ci", "--omit=dev", "--no-audit", "--no-fund", "--loglevel=error")
LOCK_FILE = "package-lock.json"


def lock_hash(directory: Path) -> str:
    """The first 16 hex digits of the SHA-256 of the folder's package-lock.json (package.json without one)."""
    for name in (LOCK_FILE, "package.json"):
        path = Path(directory) / name
        if path.is_file():
            return hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    return "none"


def install_dir(base: str, directory: Path) -> Path:
    """Where the function's packages are (or will be) installed: ``<cache>/npm/<base>-<hash>``."""
    return cache_root() / "npm" / f"{base}-{lock_hash(directory)}"


def node_modules(base: str, directory: Path) -> Path:
    return install_dir(base, directory) / "node_modules"


def missing_packages(base: str, directory: Path, packages: Iterable[str]) -> list[str]:
    """The npm packages among ``packages`` not installed for this folder's lock."""
    modules = node_modules(base, directory)
    return [name for name in packages if not (modules / name / "package.json").is_file()]


def install(base: str, directory: Path, packages: list[str], progress: Progress = QUIET) -> Path:
    """Install the folder's locked packages into the cache (once per lock); return their node_modules.

    Raises NotReadyError when npm is missing or cannot install them (its last line and the fix)."""
    target = install_dir(base, directory)
    if not missing_packages(base, directory, packages):
        return target / "node_modules"
    if not (Path(directory) / "package.json").is_file():
        raise NotReadyError(
            f"{base}: needs the npm packages {', '.join(packages)} and {directory} has no package.json to install them from; "
            "reinstall faasprof (the function's files are incomplete)"
        )
    npm = shutil.which("npm")
    if npm is None:
        raise NotReadyError(
            f"{base}: needs the npm packages {', '.join(packages)} and npm is not installed; install Node.js and npm (apt-get install nodejs npm)"
        )
    parent = cache_dir("npm")
    progress.say(
        f"{base}: installing npm packages {', '.join(packages)} with npm ci into {target} (about {TYPICAL_INSTALL_S} s, once per package-lock.json)"
    )
    started = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=parent))
    try:
        for name in (LOCK_FILE, "package.json"):
            if (Path(directory) / name).is_file():
                shutil.copy2(Path(directory) / name, work / name)
        command = (
            [npm, *INSTALL_COMMAND[1:]] if (work / LOCK_FILE).is_file() else [npm, "install", *INSTALL_COMMAND[2:]]
        )
        _run_npm(base, command, work)
        if target.exists() and missing_packages(base, directory, packages):
            shutil.rmtree(target, ignore_errors=True)  # a broken install of the same lock
        try:
            os.rename(work, target)
        except OSError:
            if missing_packages(base, directory, packages):  # not another process's complete install
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    absent = missing_packages(base, directory, packages)
    if absent:
        raise RunError(
            f"{base}: npm ci finished but {', '.join(absent)} is not in {target / 'node_modules'}; check {Path(directory) / LOCK_FILE}"
        )
    progress.say(f"{base}: npm packages installed in {time.monotonic() - started:.0f} s")
    return target / "node_modules"


def _run_npm(base: str, command: list[str], cwd: Path) -> None:
    try:
        done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise NotReadyError(
            f"{base}: {' '.join(command[1:3])} did not finish ({error}); check that the npm registry is reachable"
        ) from None
    if done.returncode != 0:
        lines = [line.strip() for line in (done.stderr or done.stdout).splitlines() if line.strip()]
        last = lines[-1][:300] if lines else f"exit status {done.returncode}"
        raise NotReadyError(
            f"{base}: {' '.join(command[1:3])} failed ({last}); check that the npm registry is reachable, "
            f"then rerun: python -m faasprof.functions.package {base}"
        )
