"""Checking a function's result against its ``expected.json`` (used by the tests and by
``faasprof native --check``).

``expected.json`` holds any of these blocks; keys are paths into the result, dotted, with list
indexes as numbers (``icons.0.width``):

- ``equals``: the value at the path must equal this (deep equality);
- ``contains``: the string at the path contains each substring, or the list contains each item;
- ``approx``: ``[value, relative tolerance]`` for floats;
- ``at_least``: the number at the path is >= this.
"""

from __future__ import annotations

import math

_MISSING = object()


def value_at(result, path: str):
    current = result
    for part in path.split("."):
        if isinstance(current, list) and part.lstrip("-").isdigit():
            index = int(part)
            current = current[index] if -len(current) <= index < len(current) else _MISSING
        elif isinstance(current, dict):
            current = current.get(part, _MISSING)
        else:
            return _MISSING
        if current is _MISSING:
            return _MISSING
    return current


def check_result(result, expected: dict) -> list[str]:
    """Every way ``result`` differs from ``expected``, one line each; empty when it matches."""
    problems = []
    for path, want in (expected.get("equals") or {}).items():
        got = value_at(result, path)
        if got is _MISSING:
            problems.append(f"{path}: missing (expected {want!r})")
        elif got != want:
            problems.append(f"{path}: {got!r} != expected {want!r}")
    for path, items in (expected.get("contains") or {}).items():
        got = value_at(result, path)
        if got is _MISSING:
            problems.append(f"{path}: missing")
            continue
        for item in items:
            if item not in got:
                problems.append(f"{path}: does not contain {item!r}")
    for path, (want, tolerance) in (expected.get("approx") or {}).items():
        got = value_at(result, path)
        if not isinstance(got, (int, float)) or not math.isclose(got, want, rel_tol=tolerance):
            problems.append(f"{path}: {got!r} not within {tolerance:g} of {want!r}")
    for path, minimum in (expected.get("at_least") or {}).items():
        got = value_at(result, path)
        if not isinstance(got, (int, float)) or got < minimum:
            problems.append(f"{path}: {got!r} < {minimum!r}")
    return problems
