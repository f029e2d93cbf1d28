"""What a workload names outside itself: files and functions, found and checked.

A file (``param_file``, ``data_file``, ``source``, a distribution's ``*_file`` keys, which the
distribution resolves through ``find_input``, the perf-monitoring scripts) is looked for where the
user most likely meant it: an absolute path as is; else the workload's
folder, the current folder, the faasprof checkout, and a message that cannot find it lists every
place it tried. A function is a catalogue name, a path to a researcher's own function, or an
action only the platform knows (a warning, with the closest catalogue name).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable

from faasprof.bounded import LIMITS, MAX_PARAM_FILE_BYTES, BoundedReadError, check_bounded
from faasprof.errors import ConfigError
from faasprof.functions import catalogue
from faasprof.functions.own import looks_like_path
from faasprof.paths import DATA_ROOT
from faasprof.workload.jsonread import parse_json_document, read_text_file
from faasprof.workload.messages import Problems

FAASPROFILER_MONITORING_SCRIPTS = ("monitoring/RuntimeMonitoring.sh", "./monitoring/RuntimeMonitoring.sh")


def resolve_input_path(value: str, base_dir: Path | None) -> tuple[Path | None, list[Path]]:
    """Find a file named in a workload: absolute; else the workload's folder, CWD, faasprof's own files."""
    candidate = Path(os.path.expanduser(value))
    if candidate.is_absolute():
        return (candidate if candidate.exists() else None), [candidate]
    tried = []
    for root in (base_dir, Path.cwd(), DATA_ROOT):
        if root is None:
            continue
        path = (root / candidate).resolve()
        if path in tried:
            continue
        tried.append(path)
        if path.exists():
            return path, tried
    return None, tried


def find_input(
    spec: dict, key: str, where: str, base_dir: Path | None, problems: Problems, folder_ok: bool = False
) -> Path | None:
    """The file (with ``folder_ok``, the file or folder) that an instance's ``key`` names, found by
    ``resolve_input_path``; None when the key is not given, and None with a problem naming
    ``where.key`` and the fix when it is not there (for a dry run, a warning), is a folder where a
    file belongs, or cannot be read."""
    value = spec.get(key)
    if value is None:
        return None
    path, tried = resolve_input_path(value, base_dir)
    if path is None:
        what = "file or folder" if folder_ok else "file"
        problems.missing(
            f"{where}.{key}", f"{what} {value} not found (looked in {', '.join(str(p) for p in tried)}); fix the path"
        )
        return None
    if path.is_dir() and not folder_ok:
        problems.add(f"{where}.{key}", f"{path} is a directory; name a file")
        return None
    if not os.access(path, os.R_OK):
        problems.add(f"{where}.{key}", f"{path} is not readable; fix its permissions")
        return None
    if not path.is_dir() and key in LIMITS:
        try:
            check_bounded(path, LIMITS[key], key)  # a device or FIFO is never read, a huge file not read whole
        except BoundedReadError as error:
            problems.add(f"{where}.{key}", str(error))
            return None
    return path


def in_catalogue(name: str) -> bool:
    """Whether ``name`` (an action name, perhaps with a package or namespace) is a catalogue function."""
    return catalogue.lookup(name.strip("/").split("/")[-1]) is not None


def application_source(application: str, base_dir: Path | None) -> Path | None:
    """The file or folder an instance's ``application`` names when it is a path that exists (a
    researcher's own function); None for an action name. A catalogue name is never a path."""
    if in_catalogue(application) or not looks_like_path(application):
        return None
    path, _ = resolve_input_path(application, base_dir)
    return path


def unknown_function(application: str, base_dir: Path | None, known: Iterable[str] = ()) -> str:
    """Why ``application`` names no function faasprof knows: a name outside the catalogue (with the
    closest one of the catalogue or of ``known``, a platform's actions), or a path that is not there."""
    if looks_like_path(application):
        _, tried = resolve_input_path(application, base_dir)
        return f'"{application}" is neither in the function catalogue nor an existing file or folder (looked in {", ".join(str(p) for p in tried)})'
    return f'"{application}" is not in the function catalogue{catalogue.did_you_mean(application, known)}'


def load_param_file(path: Path, field_path: str, problems: Problems) -> dict | None:
    try:
        text = read_text_file(path, MAX_PARAM_FILE_BYTES, "param_file")
    except BoundedReadError as error:
        problems.add(field_path, str(error))
        return None
    except ValueError as error:
        problems.add(field_path, f"{path} {error}")
        return None
    try:
        value, parse_lines, _ = parse_json_document(text, str(path))
    except ConfigError as error:
        problems.add(field_path, str(error))
        return None
    for line in parse_lines:
        problems.add(field_path, f"{path}: {line}")
    if not isinstance(value, dict):
        problems.add(field_path, f"{path} must hold a JSON object of parameters (got {type(value).__name__})")
        return None
    return value


def script_path(value: str | None, field_path: str, base_dir: Path | None, problems: Problems) -> Path | None:
    """The perf-monitoring script ``value`` names, checked (a problem when it cannot run), or None."""
    if value is None:
        return None
    path, tried = resolve_input_path(value, base_dir)
    if path is None and Path(value).as_posix() in FAASPROFILER_MONITORING_SCRIPTS:
        # Every FaaSProfiler workload names its own monitoring script; FaaSProfiler went on when it
        # failed, and faasprof's collectors do its work.
        problems.warn(
            field_path,
            f"{value} is FaaSProfiler's monitoring script, not part of faasprof; the run goes on without it "
            "(the workload's monitoring block starts perf, rdt, blktrace and cgroups collectors), or copy the script beside the workload",
        )
        return None
    if path is None:
        problems.missing(
            field_path,
            f"file {value} not found (looked in {', '.join(str(p) for p in tried)}); fix the path or set it to null",
        )
        return None
    if path.is_dir():
        problems.add(field_path, f"{path} is a directory; name an executable script")
        return None
    if not os.access(path, os.X_OK):
        if path.suffix != ".sh":
            problems.add(field_path, f"{path} is not executable; chmod +x it (or name a .sh script, run with bash)")
            return None
    return path
