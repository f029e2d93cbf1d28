"""Problems as one line each: the schema's errors translated, and the collector every check adds to.

``faasprof/workload_configs/schema.json`` is the one source of the workload format; jsonschema finds what
breaks it, and this module turns each of its errors into ``field: problem (got ...)`` with the
fix where one is known (an unknown key with the closest allowed one, a requirement with the
condition that makes it required, an enum with a did-you-mean). ``Problems`` collects the lines of
one workload, prefixed with its file name, errors and warnings apart; ``covers`` tells the
semantic checks which fields the schema has already refused, so no field is reported twice.
"""

from __future__ import annotations

import copy
import difflib
import json
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Callable, Iterable

from faasprof.monitoring.collectors import plugin_schema_properties
from faasprof.paths import WORKLOAD_SCHEMA_PATH
from faasprof.platforms.registry import plugin_schema_parts

if TYPE_CHECKING:  # jsonschema is imported only where a workload is validated (see _validator)
    from jsonschema import ValidationError

CAPACITY_FRACTION = "capacity_fraction"  # "rate": {"capacity_fraction": 0.5}: half the measured capacity


@lru_cache(maxsize=1)
def file_schema() -> dict:
    """schema.json as shipped: the built-in collectors, platforms and distributions."""
    with open(WORKLOAD_SCHEMA_PATH, encoding="utf-8") as handle:
        return json.load(handle)


# What the registries above this module add to the schema for their plug-ins
# (faasprof.workload.arrivals: the plug-in distributions), each a function that extends it in place.
_SCHEMA_PARTS: list[Callable[[dict], None]] = []


def add_schema_part(part: Callable[[dict], None]) -> None:
    """Have ``load_schema`` extend the schema with ``part`` (a registry's plug-ins)."""
    _SCHEMA_PARTS.append(part)
    load_schema.cache_clear()
    _validator.cache_clear()


@lru_cache(maxsize=1)
def load_schema() -> dict:
    """The workload schema: schema.json with the plug-ins' collectors, endpoints, instance keys and
    distributions added (``faasprof.plugins``), so that a plug-in's names are known and its settings
    checked by the schema the plug-in gives."""
    schema = file_schema()
    collectors = plugin_schema_properties()
    endpoints, instance_keys = plugin_schema_parts()
    if not (collectors or endpoints or instance_keys or _SCHEMA_PARTS):
        return schema
    schema = copy.deepcopy(schema)
    schema["$defs"]["monitoring"]["properties"].update(collectors)
    schema["properties"]["endpoint"]["enum"].extend(endpoints)
    schema["$defs"]["instance"]["properties"].update(instance_keys)
    for part in _SCHEMA_PARTS:
        part(schema)
    return schema


@lru_cache(maxsize=1)
def _validator():
    # jsonschema takes about 0.2 s to import (measured with python -X importtime), more than the
    # rest of the workload model: commands that only read a validated workload do not pay for it.
    import jsonschema

    return jsonschema.Draft202012Validator(load_schema())


def _dotted(path: Iterable) -> str:
    parts = [str(part) if not isinstance(part, int) else f"[{part}]" for part in path]
    text = ""
    for part in parts:
        text += part if part.startswith("[") or not text else "." + part
    return text or "(top level)"


def got(value: Any) -> str:
    """A value as JSON writes it, cut to 40 characters: the ``(got ...)`` of a message."""
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:37] + "..."


_TYPE_WORDS = {
    "number": "a number",
    "integer": "an integer",
    "string": "a string",
    "boolean": "true or false",
    "object": "an object {...}",
    "array": "a list [...]",
    "null": "null",
}


def _type_phrase(types: Any) -> str:
    if isinstance(types, str):
        types = [types]
    return " or ".join(_TYPE_WORDS.get(t, t) for t in types)


def _resolve_ref(ref: str) -> dict:
    node: Any = load_schema()
    for part in ref.lstrip("#/").split("/"):
        node = node[part]
    return node


def _allowed_keys(schema: dict) -> list[str]:
    if "$ref" in schema:
        schema = _resolve_ref(schema["$ref"])
    keys = list(schema.get("properties", {}))
    for branch in schema.get("anyOf", []):
        keys.extend(branch.get("properties", {}))
    return keys


def _condition_for(then_schema: dict) -> dict:
    """The ``if`` of the schema's if/then pair whose ``then`` is ``then_schema``."""
    stack: list[Any] = [load_schema()]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if node.get("then") == then_schema and "if" in node:
                return node["if"]
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return {}


def _describe_condition(if_schema: dict) -> str:
    props = if_schema.get("properties", {})
    for key, cond in props.items():
        if "const" in cond:
            return f'{key} is "{cond["const"]}"'
        if "enum" in cond:
            return f"{key} is " + " or ".join(f'"{v}"' for v in cond["enum"])
    return "this configuration"


def _message(error: ValidationError) -> list[str]:
    """Turn one jsonschema error into 'field: problem (got ...)' lines (without the file name)."""
    where = _dotted(error.absolute_path)
    explain = _EXPLAIN.get(error.validator)
    return explain(error, where) if explain is not None else [f"{where}: {error.message}"]


def _unknown_keys(error: ValidationError, where: str) -> list[str]:
    allowed = _allowed_keys(error.schema)
    value = error.instance
    lines = []
    extras = sorted(set(value) - set(allowed)) if isinstance(value, dict) else []
    for extra in extras:
        field_path = f"{where}.{extra}" if where != "(top level)" else extra
        close = difflib.get_close_matches(extra, allowed, n=1, cutoff=0.6)
        hint = f'; did you mean "{close[0]}"?' if close else f"; allowed here: {', '.join(allowed)}"
        lines.append(f"{field_path}: unknown key{hint}")
    return lines or [f"{where}: has unknown keys"]


def _required(error: ValidationError, where: str) -> list[str]:
    missing = error.message.split("'")[1] if "'" in error.message else error.message
    field_path = f"{where}.{missing}" if where != "(top level)" else missing
    if "then" in error.relative_schema_path:
        # The requirement comes from an if/then in the schema: say under which condition.
        return [f"{field_path}: required when {_describe_condition(_condition_for(error.schema))}; add it"]
    return [f"{field_path}: required; add it"]


def _wrong_type(error: ValidationError, where: str) -> list[str]:
    value = error.instance
    if error.validator_value == ["number", "object"] and "capacity_fraction" in (error.schema.get("properties") or {}):
        return [
            f'{where}: must be a number (got {got(value)}), or {{"{CAPACITY_FRACTION}": F}} for F times the measured capacity'
        ]
    return [f"{where}: must be {_type_phrase(error.validator_value)} (got {got(value)})"]


def _out_of_range(error: ValidationError, where: str) -> list[str]:
    op = {"exclusiveMinimum": ">", "minimum": ">=", "maximum": "<=", "exclusiveMaximum": "<"}[error.validator]
    types = error.schema.get("type", "number")
    noun = "an integer" if "integer" in ([types] if isinstance(types, str) else types) else "a number"
    return [f"{where}: must be {noun} {op} {error.validator_value} (got {got(error.instance)})"]


def _not_one_of(error: ValidationError, where: str) -> list[str]:
    value = error.instance
    options = error.validator_value if error.validator == "enum" else [error.validator_value]
    close = difflib.get_close_matches(str(value), [str(o) for o in options], n=1, cutoff=0.6)
    hint = f'; did you mean "{close[0]}"?' if close else ""
    return [f"{where}: must be one of {', '.join(json.dumps(o) for o in options)} (got {got(value)}){hint}"]


def _item_count(error: ValidationError, where: str) -> list[str]:
    """minItems and maxItems; "exactly" where the schema gives both the same bound."""
    bound, other = ("at least", "maxItems") if error.validator == "minItems" else ("at most", "minItems")
    if error.schema.get(other) == error.validator_value:
        bound = "exactly"
    noun = "item(s)" if bound == "at least" else "items"
    return [f"{where}: must have {bound} {error.validator_value} {noun} (got {len(error.instance)})"]


def _pattern(error: ValidationError, where: str) -> list[str]:
    if "propertyNames" in error.relative_schema_path:
        return [f"{where}: instance name {got(error.instance)} may hold only letters, digits, _ . and -; rename it"]
    return [f"{where}: {got(error.instance)} does not match the expected form {error.validator_value}"]


def _any_of(error: ValidationError, where: str) -> list[str]:
    # Show the most relevant branch: for "boolean or object" collectors, the object's errors.
    best = None
    for sub in error.context:
        if sub.validator != "type" and (best is None or len(sub.absolute_path) >= len(best.absolute_path)):
            best = sub
    if best is not None:
        return _message(best)
    kinds = [s.validator_value for s in error.context if s.validator == "type"]
    consts = [s.validator_value for s in error.context if s.validator == "const"]
    allowed = [_type_phrase(k) for k in kinds] + [json.dumps(c) for c in consts]
    return [f"{where}: must be {' or '.join(allowed) or 'valid'} (got {got(error.instance)})"]


# The line(s) for each kind of schema error (``ValidationError.validator``); any other kind says
# jsonschema's own message.
_EXPLAIN: dict[str, Callable[[ValidationError, str], list[str]]] = {
    "additionalProperties": _unknown_keys,
    "required": _required,
    "type": _wrong_type,
    **dict.fromkeys(("exclusiveMinimum", "minimum", "maximum", "exclusiveMaximum"), _out_of_range),
    "enum": _not_one_of,
    "const": _not_one_of,
    "minItems": _item_count,
    "maxItems": _item_count,
    "minProperties": lambda error, where: [f"{where}: must have at least {error.validator_value} entry (got none)"],
    "minLength": lambda error, where: [f"{where}: must not be empty"],
    "pattern": _pattern,
    "anyOf": _any_of,
}


def schema_problems(data: Any) -> list[str]:
    """Every schema violation of ``data`` as 'field: problem' lines, in document order."""
    if not isinstance(data, dict):
        return [f"(top level): must be an object {{...}} (got {got(data)})"]
    lines: list[str] = []
    errors = sorted(_validator().iter_errors(data), key=lambda e: [str(p) for p in e.absolute_path])
    for error in errors:
        for line in _message(error):
            if line not in lines:
                lines.append(line)
    # A misspelt required key is one mistake: its unknown-key line names the fix ("did you mean"),
    # so the "required" line of the key it meant would only repeat it.
    meant, required = set(), {}
    for line in lines:
        field_path, _, text = line.partition(": ")
        parent, _, key = field_path.rpartition(".")
        if text.startswith('unknown key; did you mean "'):
            meant.add((parent, text.split('"')[1]))
        elif text.startswith("required"):
            required[line] = (parent, key)
    return [line for line in lines if required.get(line) not in meant]


class Problems:
    """The problem lines of one workload (``origin``), errors and warnings apart."""

    def __init__(self, origin: str, missing_files_warn: bool = False):
        self.origin = origin
        self.lines: list[str] = []
        self.warnings: list[str] = []
        self.missing_files_warn = missing_files_warn

    def missing(self, field_path: str, text: str) -> None:
        """A file that is not there: an error, or for a dry run (plan) a warning."""
        if self.missing_files_warn:
            self.warn(field_path, text + " (a run needs it)")
        else:
            self.add(field_path, text)

    def add(self, field_path: str, text: str) -> None:
        self.lines.append(f"{self.origin}: {field_path}: {text}")

    def warn(self, field_path: str, text: str) -> None:
        self.warnings.append(f"{self.origin}: {field_path}: {text}")


def schema_fields(lines: list[str]) -> list[str]:
    return [line.split(": ", 1)[0] for line in lines]


def covers(field_path: str, bad: list[str]) -> bool:
    """Whether a schema problem sits at or under ``field_path`` (its semantic checks are skipped)."""
    return any(b == field_path or b.startswith(field_path + ".") or b.startswith(field_path + "[") for b in bad)


def top_level_problem(data: Any) -> str:
    if isinstance(data, list):
        return "(top level): the file holds a JSON list [...]; a workload is one object {...} with test_name, test_duration_in_seconds and instances; unwrap it"
    return f"(top level): must be an object {{...}} with test_name, test_duration_in_seconds and instances (got {got(data)})"
