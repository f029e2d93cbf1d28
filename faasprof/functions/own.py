"""A researcher's own function, made into an entry like a catalogue function's.

``own_entry(path, ...)`` accepts what OpenWhisk's ``wsk action create`` accepts for Python and
Node.js:

- a Python file (it becomes the archive's ``__main__.py``);
- a folder with ``__main__.py``; an optional ``requirements.txt`` is installed with pip into the
  archive's ``virtualenv/lib/pythonX.Y/site-packages``, with ``virtualenv/bin/activate_this.py``
  so that OpenWhisk's Python runtime puts it on ``sys.path`` (localwhisk and the native runner read
  the same folder);
- a Node.js file (a ``package.json`` naming it as ``main`` is generated);
- a folder with ``package.json``; when it has dependencies but no ``node_modules``, they are
  installed with ``npm install --omit=dev --install-links`` (a local ``file:`` dependency is
  copied into ``node_modules``, not linked, and works offline).

The folder is staged (copied, then dependencies installed) under the ``own/`` folder of the user's
cache (``faasprof.paths.cache_dir``), never beside the source or in the package; the staging is reused while the source files are unchanged, so deploying twice builds the same
archive and the platform's action stays ``unchanged``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

from faasprof.errors import ConfigError, NotReadyError
from faasprof.functions.catalogue import MAX_MEMORY_MB, MIN_MEMORY_MB, FunctionEntry
from faasprof.paths import cache_dir

DEFAULT_MEMORY_MB = 256
DEFAULT_TIMEOUT_MS = 60000
PYTHON_SUFFIXES = (".py",)
NODE_SUFFIXES = (".js", ".cjs", ".mjs")
INSTALL_TIMEOUT_S = 600
# Copied into the staging folder: everything but version control, caches and editor droppings.
STAGING_IGNORED = ("__pycache__", "*.pyc", ".git", ".hg", ".svn", ".venv", ".DS_Store", ".idea", ".vscode")
_ACTION_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_@.-]*$")
ACTIVATE_THIS = """\
# Written by faasprof: OpenWhisk's Python runtime runs this file when an action archive has a
# virtualenv/ folder; it puts the packages installed from requirements.txt on sys.path.
import glob
import os
import sys

_base = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
for _site in sorted(glob.glob(os.path.join(_base, "lib", "python*", "site-packages"))):
    if _site not in sys.path:
        sys.path.insert(1, _site)
"""


def looks_like_path(text: str) -> bool:
    """Whether a FUNCTION argument names a file or folder rather than a catalogue function."""
    return (
        os.sep in text or text.startswith(".") or text.endswith(PYTHON_SUFFIXES + NODE_SUFFIXES) or Path(text).exists()
    )


def detect_runtime(path: Path) -> str:
    """``python`` or ``nodejs`` for a function file or folder; ConfigError saying what is missing."""
    if path.is_file():
        if path.suffix in PYTHON_SUFFIXES:
            return "python"
        if path.suffix in NODE_SUFFIXES:
            return "nodejs"
        raise ConfigError(
            f"{path}: not a Python (.py) or Node.js (.js) file; name one, or a folder with __main__.py or package.json"
        )
    if path.is_dir():
        if (path / "__main__.py").is_file():
            return "python"
        if (path / "package.json").is_file():
            return "nodejs"
        raise ConfigError(
            f"{path}: the folder has neither __main__.py (Python) nor package.json (Node.js); add the one your function needs"
        )
    raise ConfigError(f"{path}: no such file or folder; check the path of your function")


def default_name(path: Path) -> str:
    """The action name for a path: the file's stem or the folder's name, made a valid action name."""
    stem = path.stem if path.is_file() else path.resolve().name
    cleaned = re.sub(r"[^A-Za-z0-9_@.-]", "_", stem).lstrip(".-@") or "function"
    return cleaned


def own_entry(
    path: str | os.PathLike,
    name: str | None = None,
    kind: str | None = None,
    memory_mb: int | None = None,
    timeout_ms: int | None = None,
    main: str = "main",
) -> FunctionEntry:
    """The entry for a researcher's function at ``path`` (not yet staged: see ``stage``)."""
    path = Path(path).expanduser()
    runtime = detect_runtime(path)
    name = name or default_name(path)
    if not _ACTION_NAME.match(name):
        raise ConfigError(f"--name: {name!r} is not an action name; use letters, digits, _ @ . and - (not first)")
    if kind is not None and not kind.startswith(runtime if runtime == "nodejs" else "python"):
        raise ConfigError(
            f"--kind: {kind} does not run {path} (a {'Python' if runtime == 'python' else 'Node.js'} function); use a {runtime} kind or leave --kind out"
        )
    if memory_mb is not None and not MIN_MEMORY_MB <= memory_mb <= MAX_MEMORY_MB:
        raise ConfigError(f"--memory: must be {MIN_MEMORY_MB}..{MAX_MEMORY_MB} MB (got {memory_mb})")
    if timeout_ms is not None and timeout_ms <= 0:
        raise ConfigError(f"--timeout: must be a positive number of milliseconds (got {timeout_ms})")
    source = path.resolve()
    if runtime == "python":
        entry_file = "__main__.py"
        native = ("{python}", "{runners}/python_runner.py", "{dir}/__main__.py", main)
    else:
        entry_file = source.name if source.is_file() else _package_main(source)
        native = ("{node}", "{runners}/node_runner.js", "{dir}", main)
    return FunctionEntry(
        name=name,
        base=name,
        kind=kind or ("python:3" if runtime == "python" else "nodejs"),
        entry=entry_file,
        main=main,
        memory_mb=memory_mb or DEFAULT_MEMORY_MB,
        timeout_ms=timeout_ms or DEFAULT_TIMEOUT_MS,
        description=f"own function from {source}",
        category="own",
        directory=source,  # replaced by the staging folder in stage()
        param_file=None,
        data_file=None,
        data_param=None,
        expected_file=None,
        native=native,
    )


def _package_main(folder: Path) -> str:
    try:
        package = json.loads((folder / "package.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise ConfigError(f"{folder / 'package.json'}: not readable JSON ({error}); fix it") from None
    if not isinstance(package, dict):
        raise ConfigError(f"{folder / 'package.json'}: must be a JSON object; fix it")
    return str(package.get("main") or "index.js")


def _source_fingerprint(source: Path) -> str:
    digest = hashlib.sha256(str(source).encode())
    paths = (
        [source]
        if source.is_file()
        else sorted(p for p in source.rglob("*") if p.is_file() and not _ignored(p.relative_to(source)))
    )
    for path in paths:
        stat = path.stat()
        digest.update(f"{path}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def _ignored(relative: Path) -> bool:
    return any(part in (".git", ".hg", ".svn", ".venv", "__pycache__") for part in relative.parts)


def _staging_root(name: str, source: Path) -> Path:
    """``<cache>/own/<name>-<hash of the source's path>``; NotReadyError when the cache is not writable."""
    key = hashlib.sha256(str(source).encode()).hexdigest()[:12]
    return cache_dir("own") / f"{name}-{key}"


def stage(entry: FunctionEntry) -> FunctionEntry:
    """Copy the function into its staging folder and install its dependencies (once per change).

    Returns the entry with ``directory`` pointing at the staged folder, ready to package or run.
    Raises ConfigError when a dependency cannot be installed (pip's or npm's last line)."""
    source = entry.directory
    root = _staging_root(entry.base, source)
    marker = root / "source.json"
    staged = root / "src"
    fingerprint = _source_fingerprint(source)
    try:
        if json.loads(marker.read_text()).get("fingerprint") == fingerprint and staged.is_dir():
            return replace(entry, directory=staged)
    except (OSError, ValueError):
        pass
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    if source.is_file():
        staged.mkdir()
        if entry.runtime == "python":
            shutil.copy2(source, staged / "__main__.py")
        else:
            shutil.copy2(source, staged / source.name)
            (staged / "package.json").write_text(
                json.dumps({"name": entry.base, "version": "1.0.0", "main": source.name}, indent=2) + "\n"
            )
    else:
        shutil.copytree(source, staged, ignore=shutil.ignore_patterns(*STAGING_IGNORED), symlinks=False)
        if entry.runtime == "python":
            _install_python_requirements(staged, source)
        else:
            _install_node_dependencies(staged, source)
    marker.write_text(json.dumps({"source": str(source), "fingerprint": fingerprint}) + "\n")
    return replace(entry, directory=staged)


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else "no output"


def _install_python_requirements(staged: Path, source: Path) -> None:
    requirements = staged / "requirements.txt"
    if not requirements.is_file() or (staged / "virtualenv").exists():
        return
    site = staged / "virtualenv" / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
    site.mkdir(parents=True)
    command = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        "--no-input",
        "--no-compile",
        "--target",
        str(site),
        "-r",
        "requirements.txt",
    ]
    try:
        done = subprocess.run(command, cwd=staged, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise NotReadyError(
            f"{source / 'requirements.txt'}: pip did not run ({error}); check that pip is installed"
        ) from None
    if done.returncode != 0:
        raise ConfigError(
            f"{source / 'requirements.txt'}: pip could not install it ({_last_line(done.stderr or done.stdout)}); "
            "fix the requirement, or check that the package index is reachable"
        )
    for pycache in site.rglob("__pycache__"):
        shutil.rmtree(pycache, ignore_errors=True)
    bin_dir = staged / "virtualenv" / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    (bin_dir / "activate_this.py").write_text(ACTIVATE_THIS)


def _install_node_dependencies(staged: Path, source: Path) -> None:
    package = json.loads((staged / "package.json").read_text(encoding="utf-8"))
    if not package.get("dependencies") or (staged / "node_modules").exists():
        return
    npm = shutil.which("npm")
    if npm is None:
        raise NotReadyError(
            f"{source / 'package.json'}: has dependencies and npm is not installed; install Node.js and npm (apt-get install nodejs npm), or run npm install in {source}"
        )
    command = [
        npm,
        "install",
        "--omit=dev",
        "--install-links",
        "--no-audit",
        "--no-fund",
        "--no-package-lock",
        "--loglevel=error",
    ]
    try:
        done = subprocess.run(command, cwd=staged, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise NotReadyError(f"{source / 'package.json'}: npm install did not run ({error})") from None
    if done.returncode != 0:
        raise ConfigError(
            f"{source / 'package.json'}: npm could not install its dependencies ({_last_line(done.stderr or done.stdout)}); "
            "fix the dependency, or check that the npm registry is reachable"
        )
    _materialise_links(staged / "node_modules")
    # npm "installs" a file: dependency whose folder is missing as a dangling link: check each one.
    absent = [
        name for name in package["dependencies"] if not (staged / "node_modules" / name / "package.json").is_file()
    ]
    if absent:
        raise ConfigError(
            f"{source / 'package.json'}: npm could not install its dependencies ({', '.join(absent)} not installed: "
            f"{package['dependencies'][absent[0]]} does not exist or is not a package); fix the dependency"
        )


def _materialise_links(node_modules: Path) -> None:
    """Replace npm's links to local packages (``file:`` folders) by copies: an archive holds files,
    and a link would point outside it once unpacked."""
    if not node_modules.is_dir():
        return
    for entry in sorted(node_modules.iterdir()):
        if entry.name.startswith("@") and entry.is_dir() and not entry.is_symlink():
            _materialise_links(entry)
        elif entry.is_symlink():
            target = entry.resolve()
            entry.unlink()
            if target.is_dir():
                shutil.copytree(target, entry, ignore=shutil.ignore_patterns(*STAGING_IGNORED), symlinks=False)
            elif target.is_file():
                shutil.copy2(target, entry)


def python_site_dirs(directory: Path) -> list[Path]:
    """The site-packages folders of a staged Python function's ``virtualenv/``."""
    return sorted((directory / "virtualenv" / "lib").glob("python*/site-packages"))
