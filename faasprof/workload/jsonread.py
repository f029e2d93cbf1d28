"""The strict JSON reader of workload and parameter files: text, then a document, then its problems.

A workload is read more strictly than ``json.load`` reads it. An empty, binary, non-UTF-8 or
BOM-prefixed file is refused with the fix; duplicate keys (JSON keeps only the last, which silently
dropped a stream), NaN/Infinity and numbers beyond a float are problems, each one line naming the
field; nesting deeper than MAX_NESTING_DEPTH is refused before anything walks it; a syntax error
names its line and column. Problems come back as lines without the file name, for the caller to
report together with the schema's (``faasprof.workload.spec``).
"""

from __future__ import annotations

import codecs
import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from faasprof.bounded import MAX_WORKLOAD_BYTES, BoundedReadError, read_bounded
from faasprof.errors import ConfigError
from faasprof.workload.shipped import find_workload, missing_workload_hint

MAX_NESTING_DEPTH = 32


class _Duplicates(dict):
    """A JSON object that held a key more than once (``duplicates`` lists those keys)."""

    duplicates: list[str]


class _NonFinite:
    """Placeholder for NaN, Infinity or a number too large for a float, found while parsing."""

    def __init__(self, text: str):
        self.text = text


def _pairs_hook(pairs: list[tuple[str, Any]]) -> dict:
    result: dict = {}
    duplicates: list[str] = []
    for key, value in pairs:
        if key in result and key not in duplicates:
            duplicates.append(key)
        result[key] = value
    if duplicates:
        marked = _Duplicates(result)
        marked.duplicates = duplicates
        return marked
    return result


def _parse_float(text: str) -> Any:
    value = float(text)
    return value if math.isfinite(value) else _NonFinite(text)


def _child_path(where: str, key: Any) -> str:
    if isinstance(key, int):
        return f"{where}[{key}]" if where else f"[{key}]"
    return f"{where}.{key}" if where else str(key)


def _walk_parsed(data: Any) -> tuple[list[str], set[str], str | None]:
    """Problems of a freshly parsed document: duplicate keys, non-finite numbers, nesting depth.

    Returns (problem lines without the file name, paths of non-finite values, the field under
    which nesting passes MAX_NESTING_DEPTH, or None).
    Non-finite values are replaced by None in place, so later checks see a plain document.
    """
    problems: list[str] = []
    non_finite: set[str] = set()
    too_deep: str | None = None
    stack: list[tuple[Any, str, int]] = [(data, "", 1)]
    while stack:
        node, where, depth = stack.pop()
        if depth > MAX_NESTING_DEPTH:
            too_deep = too_deep or where.split("[")[0] or "(top level)"
            continue  # reported once; deeper levels add nothing
        if isinstance(node, dict):
            for key in getattr(node, "duplicates", ()):
                problems.append(
                    f"{_child_path(where, key) if where else key}: the key {json.dumps(key)} appears more than once"
                    f"{' in ' + where if where else ' at the top level'}; JSON keeps only the last one, so rename or remove the others"
                )
            items = list(node.items())
        elif isinstance(node, list):
            items = list(enumerate(node))
        else:
            continue
        for key, value in items:
            path = _child_path(where, key)
            if isinstance(value, _NonFinite):
                problems.append(
                    f"{path}: {value.text} is not a number JSON allows (NaN, Infinity and numbers beyond 1.8e308 are not); write a finite number"
                )
                non_finite.add(path)
                node[key] = None
            elif isinstance(value, (dict, list)):
                stack.append((value, path, depth + 1))
    return problems, non_finite, too_deep


def describe_bad_bytes(raw: bytes) -> str | None:
    """Why ``raw`` is not UTF-8 JSON text (with the fix), or None when it is plain UTF-8 text."""
    if raw.startswith(codecs.BOM_UTF8):
        return "starts with a UTF-8 byte-order mark (BOM); save it as UTF-8 without BOM"
    if raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE, codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)):
        return "is UTF-16 or UTF-32 text; save it as UTF-8"
    nul = raw.find(b"\0")
    if nul >= 0:
        return f"is a binary file, not text (a NUL byte at offset {nul}); name a text file"
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as error:
        line = raw.count(b"\n", 0, error.start) + 1
        column = error.start - (raw.rfind(b"\n", 0, error.start) + 1) + 1
        return f"is not UTF-8 text (byte 0x{raw[error.start]:02x} at line {line} column {column}); save it as UTF-8"
    return None


def read_text_file(path: Path, limit_bytes: int = MAX_WORKLOAD_BYTES, what: str = "workload") -> str:
    """The text of a file the user named, read bounded (``faasprof.bounded``: a regular file of at
    most ``limit_bytes``, else ``BoundedReadError`` naming the file, the limit and the fix);
    ValueError says what is wrong with its bytes."""
    raw = read_bounded(path, limit_bytes, what)
    problem = describe_bad_bytes(raw)
    if problem:
        raise ValueError(problem)
    return raw.decode("utf-8")


def parse_json_document(text: str, where: str) -> tuple[Any, list[str], set[str]]:
    """Parse JSON text strictly: ``(data, problems, non-finite paths)``; ConfigError when it cannot.

    Duplicate keys, NaN/Infinity and nesting deeper than MAX_NESTING_DEPTH are problems (lines
    without the ``where`` prefix); syntax errors raise with line and column."""
    if not text.strip():
        raise ConfigError(
            f"{where}: the file is empty; a workload is a JSON object with test_name, test_duration_in_seconds and instances (see faasprof/workload_configs/)"
        )
    try:
        data = json.loads(text, object_pairs_hook=_pairs_hook, parse_constant=_NonFinite, parse_float=_parse_float)
    except json.JSONDecodeError as error:
        raise ConfigError(
            f"{where}: not valid JSON: {error.msg} at line {error.lineno} column {error.colno}; fix the syntax"
        ) from None
    except RecursionError:
        raise ConfigError(
            f"{where}: nested too deeply to read (more than {MAX_NESTING_DEPTH} levels); flatten the structure"
        ) from None
    if isinstance(data, _NonFinite):
        raise ConfigError(f"{where}: the file holds only {data.text}; a workload is a JSON object {{...}}")
    problems, non_finite, too_deep = _walk_parsed(data)
    if too_deep is not None:
        problems.append(f"{too_deep}: nested more than {MAX_NESTING_DEPTH} levels deep; flatten the structure")
        raise ConfigError(f"{where}: {problems[-1]}", problems=[f"{where}: {line}" for line in problems])
    return data, problems, non_finite


@dataclass
class ParsedWorkload:
    """A workload file read and parsed, with the problems found while parsing."""

    data: Any
    problems: list[str]  # "field: problem" lines (duplicate keys, NaN)
    non_finite: set[str]


def parse_workload_file(path: str | os.PathLike) -> ParsedWorkload:
    """Read and parse a workload file (or a shipped workload's bare name: ``faasprof.workload.shipped``);
    ConfigError (one line) when it cannot be read or parsed."""
    path = find_workload(path)
    if not path.exists():
        raise ConfigError(f"{path}: no such file; {missing_workload_hint(path)}")
    if path.is_dir():
        raise ConfigError(f"{path}: is a directory; name a workload JSON file")
    try:
        text = read_text_file(path, MAX_WORKLOAD_BYTES, "workload")
    except BoundedReadError as error:
        raise ConfigError(str(error)) from None
    except ValueError as error:
        raise ConfigError(f"{path}: {error}") from None
    data, problems, non_finite = parse_json_document(text, str(path))
    return ParsedWorkload(data, problems, non_finite)


def read_workload_json(path: str | os.PathLike) -> dict:
    """The JSON of a workload file; ConfigError with every parse-level problem when it has any."""
    parsed = parse_workload_file(path)
    if parsed.problems:
        lines = [f"{path}: {line}" for line in parsed.problems]
        raise ConfigError(lines[0], problems=lines)
    return parsed.data


def is_schema_document(data: Any) -> bool:
    """Whether ``data`` is a JSON Schema (faasprof/workload_configs/schema.json), not a workload."""
    return (
        isinstance(data, dict)
        and "instances" not in data
        and "$schema" in data
        and ("$defs" in data or "properties" in data)
    )
