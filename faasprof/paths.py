"""Where faasprof's own files live: found through the installed package, never the working directory.

The benchmark functions (``faasprof.functions``), the ready workloads and their schema
(``faasprof.workload_configs``) and the calibration document that ``reproduce`` quotes (beside
``faasprof.localwhisk``) are package data: an editable install finds them in the checkout's
folders, a wheel in site-packages. A
package's folder is looked up with ``importlib.util.find_spec``, which imports only ``faasprof``
itself, so this core module reaches no layer above it.

Build products (action zips, staged functions and their virtualenvs, npm packages, padded copies)
never go into the package: they go to the user's cache, ``cache_dir(kind)``: ``$FAASPROF_CACHE_DIR``
when set, else ``$XDG_CACHE_HOME/faasprof``, else ``~/.cache/faasprof``, one folder per kind
(``CACHE_KINDS``), each keyed by content hash by its writer. ``cache_usage`` measures it and
``clean_cache`` empties it (never a path outside it).

``CHECKOUT_ROOT`` is the source checkout when faasprof runs from one (an editable install), else
``None``: only the developer tools that regenerate the README and the manifest's git commit use it.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from faasprof.errors import NotReadyError

CACHE_ENV = "FAASPROF_CACHE_DIR"
# The kinds of build product under the cache, each a folder: what it holds, for `faasprof cache list`.
CACHE_KINDS: dict[str, str] = {
    "archives": "the catalogue's action zips, one per function (rebuilt when its files change)",
    "npm": "the catalogue's Node.js packages, one node_modules per package-lock.json hash",
    "own": "your functions' staged copies with their requirements.txt virtualenvs or node_modules, and their zips",
    "calibration": "per host: how long spin and the catalogue's functions take here (faasprof trace calibrate)",
    "padding": "code-padded copies of functions (sweeps with code_padding_mb) and padded images' build contexts",
}


def package_dir(name: str) -> Path:
    """The folder of the subpackage ``faasprof.<name>``, wherever faasprof is installed."""
    spec = importlib.util.find_spec(f"faasprof.{name}")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(
            f"faasprof.{name} is not installed with faasprof; reinstall faasprof (pip install faasprof)"
        )
    return Path(next(iter(spec.submodule_search_locations))).resolve()


# Where a tool may be when it is not on PATH (a service's PATH is often shorter than a shell's):
# setup/steps/25-storage.sh installs into the venv's bin, a plain `go install` into ~/go/bin.
BINARY_DIRS = (Path(sys.prefix) / "bin", Path.home() / "go" / "bin", Path("/usr/local/bin"), Path("/usr/bin"))


def find_binary(name: str) -> str | None:
    """The executable ``name``: on PATH, else in $GOBIN or ``BINARY_DIRS``; None when nowhere.
    The one search, so that what needs a tool (a catalogue function, the storage servers, doctor)
    and what starts it agree."""
    found = shutil.which(name)
    if found:
        return found
    gobin = [Path(os.environ["GOBIN"])] if os.environ.get("GOBIN") else []
    for directory in gobin + list(BINARY_DIRS):
        path = directory / name
        if path.is_file() and os.access(path, os.X_OK):
            return str(path)
    return None


def _checkout_root() -> Path | None:
    root = Path(__file__).resolve().parent.parent
    return root if (root / "pyproject.toml").is_file() and (root / "setup.sh").is_file() else None


CHECKOUT_ROOT = _checkout_root()


def foreign_checkout(cwd: Path | None = None) -> Path | None:
    """The faasprof checkout that holds ``cwd`` when it is not the one this faasprof runs from.

    The ``.venv`` of one clone run inside another (a worktree, ``git bisect``) runs the first
    clone's code: the CLI says so rather than let a user test code they are not running."""
    here = (cwd or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / "setup.sh").is_file() and (folder / "faasprof" / "paths.py").is_file():
            return None if CHECKOUT_ROOT is not None and folder == CHECKOUT_ROOT else folder
    return None


FUNCTIONS_DIR = package_dir("functions")
WORKLOAD_CONFIGS_DIR = package_dir("workload_configs")
WORKLOAD_SCHEMA_PATH = WORKLOAD_CONFIGS_DIR / "schema.json"
# localwhisk measured against OpenWhisk 2.0.0, item by item; reproduce's report quotes its items.
# Found beside this module's package, not through faasprof.localwhisk's spec: the analyzer (which
# reads nothing of localwhisk's code) must import where localwhisk cannot (tests/test_architecture.py).
COMPARISON_DOC_PATH = Path(__file__).resolve().parent / "localwhisk" / "localwhisk-vs-openwhisk.md"
# The folder that holds faasprof/functions/ and faasprof/workload_configs/ (faasprof/, in a checkout or site-packages):
# a workload may name a file relative to it, as "workload_configs/traces/azure_sample.csv".
DATA_ROOT = WORKLOAD_CONFIGS_DIR.parent


def cache_root(environ: Mapping[str, str] | None = None) -> Path:
    """Where the cache is (not created): ``$FAASPROF_CACHE_DIR``, else ``$XDG_CACHE_HOME/faasprof``,
    else ``~/.cache/faasprof``. A relative ``XDG_CACHE_HOME`` is ignored, as the XDG specification says."""
    env = os.environ if environ is None else environ
    chosen = env.get(CACHE_ENV, "").strip()
    if chosen:
        return Path(chosen).expanduser().absolute()
    xdg = env.get("XDG_CACHE_HOME", "").strip()
    if xdg and Path(xdg).is_absolute():
        return Path(xdg) / "faasprof"
    home = env.get("HOME", "").strip()
    return (Path(home) if home else Path.home()) / ".cache" / "faasprof"


def cache_dir(kind: str | None = None) -> Path:
    """The cache (or its folder for ``kind``, one of ``CACHE_KINDS``), created on demand.

    Raises NotReadyError naming the folder and the setting when it cannot be created or written."""
    if kind is not None and kind not in CACHE_KINDS:
        raise ValueError(f"unknown cache kind {kind!r}; one of {', '.join(CACHE_KINDS)}")
    root = cache_root()
    folder = root if kind is None else root / kind
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise NotReadyError(
            f"{folder}: cannot create faasprof's cache ({error.strerror or error}); "
            f"set {CACHE_ENV} to a writable folder"
        ) from None
    if not os.access(folder, os.W_OK | os.X_OK):
        raise NotReadyError(f"{folder}: faasprof's cache is not writable; set {CACHE_ENV} to a writable folder")
    return folder


@dataclass(frozen=True)
class CacheUsage:
    """One folder of the cache: its kind (or another folder's name), bytes on disk and entries."""

    kind: str
    path: Path
    size_bytes: int
    entries: int
    what: str  # CACHE_KINDS' description, or "" for a folder faasprof's code does not write


def _tree_bytes(path: Path) -> int:
    """Bytes of the files under ``path``, links not followed (a link counts as itself)."""
    if path.is_symlink() or path.is_file():
        return path.lstat().st_size
    total = 0
    for dirpath, dirnames, filenames in os.walk(path, followlinks=False):
        links = [
            name for name in dirnames if os.path.islink(os.path.join(dirpath, name))
        ]  # walked as names, never entered
        for filename in filenames + links:
            try:
                total += os.lstat(os.path.join(dirpath, filename)).st_size
            except OSError:
                continue  # removed while we walk: another process's temporary file
    return total


def _entries(folder: Path) -> list[Path]:
    # An archive's .zip.json beside its .zip is part of the same entry.
    return sorted(path for path in folder.iterdir() if not path.name.endswith(".zip.json"))


def cache_usage() -> list[CacheUsage]:
    """Every kind of the cache (even when empty), then any other folder found in it."""
    root = cache_root()
    found = (
        sorted(path.name for path in root.iterdir() if path.is_dir() and not path.is_symlink()) if root.is_dir() else []
    )
    usage = []
    for kind in [*CACHE_KINDS, *(name for name in found if name not in CACHE_KINDS)]:
        folder = root / kind
        present = folder.is_dir() and not folder.is_symlink()
        usage.append(
            CacheUsage(
                kind,
                folder,
                _tree_bytes(folder) if present else 0,
                len(_entries(folder)) if present else 0,
                CACHE_KINDS.get(kind, ""),
            )
        )
    return usage


def clean_cache(kind: str | None = None) -> tuple[int, int]:
    """Remove the entries of ``kind`` (every kind of ``CACHE_KINDS`` when None); returns (entries,
    bytes) removed. Only paths inside the cache are removed: a link is unlinked, never followed."""
    if kind is not None and kind not in CACHE_KINDS:
        raise ValueError(f"unknown cache kind {kind!r}; one of {', '.join(CACHE_KINDS)}")
    root = cache_root()
    removed = freed = 0
    for name in [kind] if kind else list(CACHE_KINDS):
        folder = root / name
        if folder.is_symlink() or not folder.is_dir():
            continue  # a link in place of a kind's folder may point anywhere: left alone
        for path in _entries(folder) + sorted(folder.glob("*.zip.json")):
            freed += _tree_bytes(path)
            removed += not path.name.endswith(".zip.json")
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)  # does not follow the links inside it
            else:
                path.unlink()
    return removed, freed
