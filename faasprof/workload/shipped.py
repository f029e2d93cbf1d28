"""The workloads shipped with faasprof (``faasprof/workload_configs/*.json``), reached by bare name.

A wheel user has no checkout to name ``workload_configs/first_run_modes.json`` in: every command that
reads a workload file (``parse_workload_file``, so validate, plan, run, doctor --workload, sweep)
takes ``first_run_modes`` (or ``first_run_modes.json``) too, when no file of that name is in the
current folder. A path that names an existing file is read as it always was; one that does not is a
one-line error that names the shipped workload the user probably meant. ``faasprof examples`` lists
them and copies one into the working folder (``copy_workload``), never over an existing file.
"""

from __future__ import annotations

import difflib
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from faasprof.errors import ConfigError
from faasprof.paths import WORKLOAD_CONFIGS_DIR, WORKLOAD_SCHEMA_PATH

DESCRIPTION_CHARS = 110  # the one-line description's length in `faasprof examples`


@dataclass(frozen=True)
class ShippedWorkload:
    """One workload JSON shipped in ``faasprof/workload_configs/``."""

    name: str  # the file's stem: what the commands take in place of a path
    path: Path
    description: str  # the first sentence of its "description", cut to DESCRIPTION_CHARS


def _one_line(text: str) -> str:
    first = " ".join(text.split()).split(". ")[0].rstrip(".")
    return first if len(first) <= DESCRIPTION_CHARS else first[: DESCRIPTION_CHARS - 3] + "..."


def shipped_workloads() -> list[ShippedWorkload]:
    """Every shipped workload by name (the schema is not one)."""
    found = []
    for path in sorted(WORKLOAD_CONFIGS_DIR.glob("*.json")):
        if path == WORKLOAD_SCHEMA_PATH:
            continue
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            data = {}
        description = data.get("description") if isinstance(data, dict) else None
        found.append(ShippedWorkload(path.stem, path, _one_line(description) if isinstance(description, str) else ""))
    return found


def shipped_workload(name: str) -> ShippedWorkload | None:
    """The shipped workload ``name`` (with or without ``.json``); None when none is."""
    stem = name.removesuffix(".json")
    return next((workload for workload in shipped_workloads() if workload.name == stem), None)


def find_workload(path: str | os.PathLike) -> Path:
    """``path`` when it exists (or names a folder: the reader says so); else, for a bare name, the
    shipped workload of that name; else ``path`` unchanged (the reader reports it missing)."""
    given = Path(path)
    if given.exists() or os.sep in str(path) or (os.altsep and os.altsep in str(path)):
        return given
    shipped = shipped_workload(str(path))
    return shipped.path if shipped is not None else given


def missing_workload_hint(path: str | os.PathLike) -> str:
    """The end of the "no such file" line for ``path``: the shipped workload meant, when one probably is."""
    stem = Path(path).name.removesuffix(".json")
    names = [workload.name for workload in shipped_workloads()]
    if stem in names:
        return f"faasprof ships {stem}: name it bare (faasprof run {stem}), or copy it here with faasprof examples copy {stem}"
    close = difflib.get_close_matches(stem, names, n=1, cutoff=0.75)
    if close:
        return f"check the path, or did you mean the shipped workload {close[0]}? (faasprof examples lists them)"
    return "check the path of the workload (faasprof examples lists the shipped ones, which run by bare name)"


def copy_workload(name: str, destination: str | os.PathLike | None = None) -> Path:
    """Copy the shipped workload ``name`` to ``destination`` (default: ``NAME.json`` here; a folder:
    ``NAME.json`` in it) and return where; ConfigError, before anything is written, when ``name`` is
    not shipped or the target exists (nothing is overwritten)."""
    shipped = shipped_workload(name)
    if shipped is None:
        names = [workload.name for workload in shipped_workloads()]
        close = difflib.get_close_matches(name.removesuffix(".json"), names, n=1)
        hint = f"did you mean {close[0]}? " if close else ""
        raise ConfigError(f"{name}: no shipped workload of that name; {hint}faasprof examples lists them")
    target = Path(destination) if destination is not None else Path(f"{shipped.name}.json")
    if target.is_dir():
        target = target / f"{shipped.name}.json"
    if target.exists() or target.is_symlink():
        raise ConfigError(f"{target}: exists; faasprof examples copy never overwrites: name another DEST or remove it")
    if not target.parent.is_dir():
        raise ConfigError(f"{target.parent}: no such folder; create it or name another DEST")
    try:
        with open(target, "xb") as handle, open(shipped.path, "rb") as source:
            shutil.copyfileobj(source, handle)
    except FileExistsError:
        raise ConfigError(f"{target}: exists; faasprof examples copy never overwrites: name another DEST") from None
    except OSError as error:
        raise ConfigError(f"{target}: cannot write ({error.strerror or error}); name another DEST") from None
    return target
