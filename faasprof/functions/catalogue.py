"""The function catalogue: what ``faasprof/functions/manifest.json`` declares, as typed entries.

``names()`` lists the catalogue; ``lookup(name)`` returns a :class:`FunctionEntry` or None. A name
with a memory suffix (``markdown-256``) is a *variant*: the same code deployed under that action
name with another memory limit, for memory sweeps. ``require(name)`` raises ConfigError listing
the known functions. ``entry.missing()`` says what a function lacks on this machine (npm packages,
binaries) with the command that installs it. A function's npm packages live in the user's cache
(``faasprof.functions.npm``), never beside its code.
"""

from __future__ import annotations

import base64
import difflib
import functools
import json
import re
import shutil
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Iterable

from faasprof.errors import ConfigError, FormatError, NotReadyError
from faasprof.functions import npm
from faasprof.paths import FUNCTIONS_DIR, find_binary
from faasprof.progress import QUIET, Progress

MANIFEST_PATH = FUNCTIONS_DIR / "manifest.json"
MANIFEST_FORMAT_VERSIONS = (1,)
KINDS = ("python:3", "nodejs")
RUNNERS_DIR = FUNCTIONS_DIR / "runners"

# OpenWhisk accepts 128..512 MB by default and operators raise the maximum; refuse only the absurd.
MIN_MEMORY_MB = 32
MAX_MEMORY_MB = 65536
_VARIANT = re.compile(r"^(?P<base>.+)-(?P<memory>\d+)$")
_REQUIRED_KEYS = ("kind", "entry", "main", "memory_mb", "timeout_ms", "inputs", "native")


@dataclass(frozen=True)
class FunctionEntry:
    name: str  # the action name (a variant's name carries its memory suffix)
    base: str  # the catalogue name = the folder under faasprof/functions/
    kind: str  # "python:3" | "nodejs" (the manifest's runtime family)
    entry: str  # the file holding main, relative to the folder
    main: str
    memory_mb: int
    timeout_ms: int
    description: str
    category: str
    directory: Path
    param_file: Path | None
    data_file: Path | None
    data_param: str | None
    expected_file: Path | None
    native: tuple[str, ...]
    requires: tuple[dict, ...] = field(default=())
    openwhisk_image: str | None = None  # a runtime image for OpenWhisk when the stock one lacks a binary
    web: str | None = None  # "raw": deployed as a raw HTTP web action (the data file arrives as __ow_body)

    @property
    def runtime(self) -> str:
        """``python`` or ``nodejs``: the language family."""
        return "python" if self.kind.startswith("python") else "nodejs"

    @property
    def is_variant(self) -> bool:
        return self.name != self.base

    def with_memory(self, memory_mb: int, name: str | None = None) -> "FunctionEntry":
        return replace(self, memory_mb=int(memory_mb), name=name or self.name)

    @property
    def npm_packages(self) -> list[str]:
        """The npm packages the manifest says the function requires (installed in the cache)."""
        return [need["name"] for need in self.requires if need.get("kind") == "npm"]

    @property
    def node_modules(self) -> Path | None:
        """The cache's node_modules for the function's package-lock (None without npm packages)."""
        return npm.node_modules(self.base, self.directory) if self.npm_packages else None

    def install_packages(self, progress: Progress = QUIET) -> None:
        """Install the function's npm packages into the cache unless they are there (NotReadyError
        when npm cannot); says what it installs and about how long on ``progress``."""
        if self.npm_packages:
            npm.install(self.base, self.directory, self.npm_packages, progress)

    def _problems(self) -> list[tuple[str, str]]:
        """(what, message) for each thing this machine lacks; what is node, npm or binary."""
        problems = []
        if self.runtime == "nodejs" and shutil.which("node") is None:
            problems.append(("node", f"{self.base}: node not found; install Node.js (apt-get install nodejs npm)"))
        for name in npm.missing_packages(self.base, self.directory, self.npm_packages):
            problems.append(
                (
                    "npm",
                    f"{self.base}: npm package {name} is not installed in {npm.install_dir(self.base, self.directory)}; "
                    f"faasprof deploy and native install it (about {npm.TYPICAL_INSTALL_S} s), "
                    f"or: python -m faasprof.functions.package {self.base}",
                )
            )
        for need in self.requires:
            if need.get("kind") == "binary":
                if find_binary(need["name"]) is None:
                    problems.append(
                        ("binary", f"{self.base}: binary {need['name']} not found; {need.get('install', 'install it')}")
                    )
        return problems

    def missing(self) -> list[str]:
        """What this machine lacks to run the function natively, one line each with the fix."""
        return [message for _, message in self._problems()]

    def packaging_missing(self) -> list[str]:
        """What the archive itself needs (npm packages). A binary such as tesseract must exist
        where the action runs, not where it is packaged."""
        return [message for what, message in self._problems() if what == "npm"]

    @property
    def available(self) -> bool:
        return not self.missing()

    def require_available(self) -> None:
        problems = self.missing()
        if problems:
            raise NotReadyError(problems[0])

    def sample_params(self) -> dict:
        """The sample input: the param file, plus the data file base64-encoded in ``data_param``."""
        params: dict = {}
        if self.param_file is not None:
            params = load_params_file(self.param_file)
        if self.data_file is not None and self.data_param:
            params[self.data_param] = base64.b64encode(self.data_file.read_bytes()).decode("ascii")
        return params

    def expected(self) -> dict | None:
        if self.expected_file is None or not self.expected_file.is_file():
            return None
        return json.loads(self.expected_file.read_text(encoding="utf-8"))

    def describe(self) -> dict:
        """For manifests and listings."""
        return {
            "name": self.name,
            "base": self.base,
            "kind": self.kind,
            "entry": self.entry,
            "main": self.main,
            "memory_mb": self.memory_mb,
            "timeout_ms": self.timeout_ms,
            "category": self.category,
            "description": self.description,
        }


def load_params_file(path: Path) -> dict:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: not found; pass an existing JSON file of parameters") from None
    except json.JSONDecodeError as error:
        raise ConfigError(f"{path}: not valid JSON ({error.msg} at line {error.lineno})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: parameters must be a JSON object, got {type(data).__name__}")
    return data


def _entry_from_manifest(name: str, data: dict, path: Path) -> FunctionEntry:
    missing = [key for key in _REQUIRED_KEYS if key not in data]
    if missing:
        raise FormatError(f"{path}: functions.{name}: missing {', '.join(missing)}")
    if data["kind"] not in KINDS:
        raise FormatError(f"{path}: functions.{name}.kind: {data['kind']!r} is not one of {', '.join(KINDS)}")
    directory = FUNCTIONS_DIR / name
    if not (directory / data["entry"]).is_file():
        raise FormatError(f"{path}: functions.{name}.entry: {directory / data['entry']} does not exist")
    inputs = data.get("inputs") or {}

    def local(key):
        value = inputs.get(key) if key in inputs else data.get(key)
        return directory / value if value else None

    return FunctionEntry(
        name=name,
        base=name,
        kind=data["kind"],
        entry=data["entry"],
        main=data["main"],
        memory_mb=int(data["memory_mb"]),
        timeout_ms=int(data["timeout_ms"]),
        description=data.get("description", ""),
        category=data.get("category", ""),
        directory=directory,
        param_file=local("param_file"),
        data_file=local("data_file"),
        data_param=inputs.get("data_param"),
        expected_file=directory / data["expected"] if data.get("expected") else None,
        native=tuple(data["native"]),
        requires=tuple(data.get("requires") or ()),
        openwhisk_image=data.get("openwhisk_image"),
        web=data.get("web"),
    )


@functools.lru_cache(maxsize=None)
def _catalogue(path: Path = MANIFEST_PATH) -> dict[str, FunctionEntry]:
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FormatError(f"{path}: missing; the checkout is incomplete") from None
    except json.JSONDecodeError as error:
        raise FormatError(f"{path}: not valid JSON ({error.msg} at line {error.lineno})") from None
    if manifest.get("format_version") not in MANIFEST_FORMAT_VERSIONS:
        raise FormatError(f"{path}: format_version {manifest.get('format_version')!r} not supported")
    return {name: _entry_from_manifest(name, data, path) for name, data in sorted(manifest["functions"].items())}


def names() -> list[str]:
    """The catalogue's function names, sorted (memory variants are not listed)."""
    return list(_catalogue())


def entries() -> list[FunctionEntry]:
    return list(_catalogue().values())


def split_variant(name: str) -> tuple[str, int | None]:
    """``markdown-256`` -> (``markdown``, 256); a catalogue name -> (name, None)."""
    catalogue = _catalogue()
    if name in catalogue:
        return name, None
    match = _VARIANT.match(name)
    if match and match.group("base") in catalogue:
        return match.group("base"), int(match.group("memory"))
    return name, None


def lookup(name: str) -> FunctionEntry | None:
    """The entry for a catalogue name or a memory variant (``markdown-256``); None if unknown."""
    catalogue = _catalogue()
    if name in catalogue:
        return catalogue[name]
    base, memory_mb = split_variant(name)
    if memory_mb is None or not MIN_MEMORY_MB <= memory_mb <= MAX_MEMORY_MB:
        return None
    return catalogue[base].with_memory(memory_mb, name=name)


def known_functions_text() -> str:
    return (
        ", ".join(names())
        + f" (a memory variant such as markdown-256 deploys the same code with {MIN_MEMORY_MB}..{MAX_MEMORY_MB} MB)"
    )


def did_you_mean(name: str, known: Iterable[str] = ()) -> str:
    """`` (did you mean "X"?)`` for the closest of the catalogue's names and ``known``, or ""."""
    close = difflib.get_close_matches(name, [*names(), *known], n=1, cutoff=0.6)
    return f' (did you mean "{close[0]}"?)' if close else ""


def unknown_function_error(name: str, where: str = "function") -> ConfigError:
    return ConfigError(f"{where}: unknown function {name!r}; known functions: {known_functions_text()}")


def require(name: str, where: str = "function") -> FunctionEntry:
    entry = lookup(name)
    if entry is None:
        raise unknown_function_error(name, where)
    return entry
