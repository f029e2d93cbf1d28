"""Action archives: reproducible zips of a function folder, as OpenWhisk's runtimes expect them.

Python: ``__main__.py`` (defining ``main``) at the root with the function's other files (data,
vendored packages). Node.js: ``package.json`` (whose ``main`` names the entry file) at the root
with the code and ``node_modules`` (a catalogue function's production packages, installed into the
user's cache by ``faasprof.functions.npm``, are added under ``node_modules/``).

Reproducible: files are added in sorted path order with a fixed timestamp (1980-01-01, the zip
epoch), fixed permissions (0644, or 0755 when the owner may execute) and a fixed compression
level, and no extra fields, so the same inputs give the same bytes on every machine.

``python -m faasprof.functions.package [NAME...] [--all] [--out DIR]`` writes ``DIR/<name>.zip`` and
prints each archive's size and SHA-256, installing the npm packages a function needs first. Built
archives are cached in the user's cache (``faasprof.paths.cache_dir("archives")``, never the
package) keyed by a fingerprint of the inputs (paths, sizes, modification times), so deploying a
Node.js function with tens of megabytes of ``node_modules`` does not re-compress it every time.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import sys
import zipfile
from pathlib import Path

from faasprof.errors import ConfigError, FaasprofError, NotReadyError
from faasprof.functions.catalogue import FunctionEntry, entries, require
from faasprof.paths import cache_dir as user_cache_dir
from faasprof.progress import QUIET, Progress

ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)
COMPRESS_LEVEL = 6

# Never packaged: test expectations, byte-code caches, npm's bin links, editor droppings.
EXCLUDED_NAMES = {"__pycache__", ".DS_Store", "expected.json", ".bin", ".cache"}
EXCLUDED_SUFFIXES = (".pyc", ".pyo")
# Inside node_modules, what ``require`` never loads: type declarations, source maps, docs, tests,
# and the browser bundles some packages ship beside their Node.js build. Leaving them out keeps
# archives under platforms' request-size limits without changing what runs.
NODE_MODULES_EXCLUDED_DIRS = {"browser", "__tests__", "test", "tests", "docs", "example", "examples", "@types"}
NODE_MODULES_EXCLUDED_SUFFIXES = (".map", ".ts", ".cts", ".mts", ".md", ".markdown", ".snap", ".log", ".tsbuildinfo")


def archive_files(entry: FunctionEntry) -> list[tuple[str, Path]]:
    """(name in the archive, file on disk) for everything the archive holds, sorted by name."""
    files = _folder_files(entry.directory)
    modules = entry.node_modules
    if modules is not None and not (entry.directory / "node_modules").is_dir():
        files += [(f"node_modules/{name}", path) for name, path in _folder_files(modules, under_node_modules=True)]
    files.sort(key=lambda item: item[0])
    return files


def _folder_files(root: Path, under_node_modules: bool = False) -> list[tuple[str, Path]]:
    files = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        in_node_modules = under_node_modules or "node_modules" in Path(dirpath).relative_to(root).parts
        dirnames[:] = sorted(
            d for d in dirnames if d not in EXCLUDED_NAMES and not (in_node_modules and d in NODE_MODULES_EXCLUDED_DIRS)
        )
        for filename in filenames:
            if filename in EXCLUDED_NAMES or filename.endswith(EXCLUDED_SUFFIXES):
                continue
            if in_node_modules and filename.endswith(NODE_MODULES_EXCLUDED_SUFFIXES):
                continue
            path = Path(dirpath) / filename
            if path.is_symlink() and not path.exists():
                continue  # a dangling link cannot be packaged and is never needed at run time
            files.append((path.relative_to(root).as_posix(), path))
    return files


def fingerprint(files: list[tuple[str, Path]]) -> str:
    """A cheap identity of the inputs (name, size, mtime) for the build cache; not the archive digest."""
    digest = hashlib.sha256()
    for name, path in files:
        stat = path.stat()
        digest.update(f"{name}\0{stat.st_size}\0{stat.st_mtime_ns}\0{stat.st_mode & 0o100}\n".encode())
    return digest.hexdigest()


def build_archive_bytes(entry: FunctionEntry) -> bytes:
    """The zip of ``entry``'s folder. Raises NotReadyError when an npm package it needs is missing."""
    problems = entry.packaging_missing()
    if problems:
        raise NotReadyError(problems[0])
    files = archive_files(entry)
    names = {name for name, _ in files}
    needed = "__main__.py" if entry.runtime == "python" else "package.json"
    if needed not in names:
        raise ConfigError(
            f"{entry.directory}: no {needed}; an OpenWhisk {entry.runtime} zip action needs one at its root"
        )
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, path in files:
            info = zipfile.ZipInfo(name, date_time=ZIP_EPOCH)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.create_system = 3  # unix, so external_attr carries the mode
            mode = 0o755 if path.stat().st_mode & 0o100 else 0o644
            info.external_attr = (0o100000 | mode) << 16
            archive.writestr(info, path.read_bytes(), compresslevel=COMPRESS_LEVEL)
    return buffer.getvalue()


def build_archive(entry: FunctionEntry, cache_dir: Path | None = None, progress: Progress = QUIET) -> bytes:
    """The archive for ``entry`` (a variant shares its base's archive), from ``cache_dir`` (default:
    the user cache's ``archives/``) when the inputs have not changed since it was built. The npm
    packages it needs are installed into the cache first, said on ``progress``."""
    entry.install_packages(progress)
    cache_dir = user_cache_dir("archives") if cache_dir is None else cache_dir
    files = archive_files(entry)
    key = fingerprint(files)
    zip_path = Path(cache_dir) / f"{entry.base}.zip"
    meta_path = Path(cache_dir) / f"{entry.base}.zip.json"
    try:
        meta = json.loads(meta_path.read_text())
        data = zip_path.read_bytes()
        if meta.get("fingerprint") == key and meta.get("sha256") == hashlib.sha256(data).hexdigest():
            return data
    except (OSError, ValueError):
        pass
    data = build_archive_bytes(entry)
    try:
        write_archive(
            zip_path,
            data,
            {
                "function": entry.base,
                "fingerprint": key,
                "sha256": hashlib.sha256(data).hexdigest(),
                "bytes": len(data),
            },
        )
    except OSError:
        pass  # a cache that cannot be written still deploys; it just rebuilds every time
    return data


def write_archive(zip_path: Path, data: bytes, meta: dict) -> None:
    zip_path.parent.mkdir(parents=True, exist_ok=True)
    for path, content in (
        (zip_path, data),
        (zip_path.with_name(zip_path.name + ".json"), (json.dumps(meta, indent=2) + "\n").encode()),
    ):
        tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
        tmp.write_bytes(content)
        os.replace(tmp, path)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m faasprof.functions.package", description="build reproducible action archives"
    )
    parser.add_argument("names", nargs="*", metavar="FUNCTION")
    parser.add_argument("--all", action="store_true", help="every function in the catalogue")
    parser.add_argument("--out", type=Path, help="output directory (default: the archives/ folder of faasprof's cache)")
    parser.add_argument(
        "--no-install",
        action="store_true",
        help="install no npm packages: a function that lacks them is reported unavailable (./setup.sh without --with node)",
    )
    args = parser.parse_args(argv)
    try:
        chosen = entries() if args.all or not args.names else [require(name) for name in args.names]
    except FaasprofError as error:
        print(error, file=sys.stderr)
        return error.exit_code
    progress = Progress.to(sys.stderr)
    for entry in chosen:
        lacking = entry.packaging_missing() if args.no_install else []
        if lacking:
            print(f"{entry.base}: unavailable: {lacking[0]}", file=sys.stderr)
            continue
        try:
            data = build_archive(entry, cache_dir=args.out, progress=progress)
        except NotReadyError as error:
            # An optional dependency missing makes this function unavailable; it is not a build failure.
            print(f"{entry.base}: unavailable: {error}", file=sys.stderr)
            continue
        unavailable = entry.missing()
        note = f"  (packaged, but not runnable here: {unavailable[0]})" if unavailable else ""
        print(f"{entry.base:<14} {len(data) / 1024:>9.1f} KiB  sha256 {sha256(data)[:16]}{note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
