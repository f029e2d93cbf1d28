"""Workload JSONs: reading, validating against ``workload_configs/schema.json``, resolving.

Every FaaSProfiler workload is accepted unchanged, with its README's intent where its code
disagreed: a null ``random_seed`` draws a fresh seed (recorded), a null or absent
``activity_window`` is the whole test, an absent ``endpoint`` is ``local_openwhisk``, and
``activity_window`` also cuts traces. The JSON Schema is the one source of the format; this module
turns its errors into one line each, ``CONFIG: instances.i0.rate: must be a number > 0 (got -5)``,
and adds the checks a schema cannot express (windows inside the test, files that exist, functions
in the catalogue).

Validation collects every problem before raising, so a user fixes a workload in one pass.
"""

from __future__ import annotations

import difflib
import json
import os
import secrets
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable

from faasprof.errors import ConfigError
from faasprof.paths import REPO_ROOT, WORKLOAD_SCHEMA_PATH

DISTRIBUTIONS = ("Poisson", "Uniform", "Burst", "Trace")


@dataclass(frozen=True)
class Instance:
    """One invocation stream, resolved: defaults filled, paths absolute, params loaded."""

    name: str
    function: str  # action name (FaaSProfiler's "application")
    endpoint: str  # "local_openwhisk" | "generic"
    distribution: str  # one of DISTRIBUTIONS ("Trace" also for interarrivals_list)
    rate: float | None  # invocations per second (Poisson, Uniform)
    window_s: tuple[float, float]
    blocking: bool
    params: dict | None = None
    param_file: Path | None = None
    data_file: Path | None = None
    data_mode: str = "web"
    content_type: str | None = None
    url: str | None = None
    data: Any = None
    memory_mb: int | None = None
    phase: bool | float = True
    burst_size: int = 1
    burst_gap_s: float | None = None
    burst_gap_distribution: str = "fixed"
    burst_gap_mean_s: float | None = None
    interarrivals_s: tuple[float, ...] | None = None
    trace_file: Path | None = None
    trace_row: int | str = 0
    trace_start_minute: int = 1
    trace_spread: str = "uniform"
    trace_scale: float = 1.0

    @property
    def window_length_s(self) -> float:
        return self.window_s[1] - self.window_s[0]

    def expected_count(self) -> float | None:
        """Mean number of invocations in the window (None for traces)."""
        if self.distribution in ("Poisson", "Uniform") and self.rate:
            return self.rate * self.window_length_s
        return None


@dataclass(frozen=True)
class Workload:
    path: Path | None
    test_name: str
    duration_s: float
    seed: int
    seed_was_null: bool
    instances: tuple[Instance, ...]
    blocking_cli: bool = False
    endpoint: str = "local_openwhisk"
    description: str | None = None
    platform: dict = field(default_factory=dict)
    monitoring: dict = field(default_factory=dict)
    sweep: dict | None = None
    runtime_script: Path | None = None
    post_script: Path | None = None
    raw: dict = field(default_factory=dict, repr=False)

    @property
    def origin(self) -> str:
        return str(self.path) if self.path else "<workload>"

    def instance(self, name: str) -> Instance:
        for instance in self.instances:
            if instance.name == name:
                return instance
        raise KeyError(name)

    def functions(self) -> list[str]:
        """Action names the workload invokes on OpenWhisk, in first-use order."""
        seen: dict[str, None] = {}
        for instance in self.instances:
            if instance.endpoint == "local_openwhisk":
                seen.setdefault(instance.function, None)
        return list(seen)

    def resolved(self) -> dict:
        """The workload as run, for the manifest: the JSON as given plus every resolved value.

        The platform's auth key is never included.
        """
        raw = json.loads(json.dumps(self.raw))
        if isinstance(raw.get("platform"), dict) and "auth" in raw["platform"]:
            raw["platform"]["auth"] = "(redacted)"
        raw["random_seed"] = self.seed
        return {
            "source": str(self.path) if self.path else None,
            "as_given": raw,
            "seed": self.seed,
            "seed_was_null": self.seed_was_null,
            "duration_s": self.duration_s,
            "instances": {
                instance.name: {
                    "function": instance.function,
                    "endpoint": instance.endpoint,
                    "distribution": instance.distribution,
                    "rate_per_s": instance.rate,
                    "window_s": list(instance.window_s),
                    "blocking": instance.blocking,
                    "param_file": str(instance.param_file) if instance.param_file else None,
                    "data_file": str(instance.data_file) if instance.data_file else None,
                    "data_mode": instance.data_mode if instance.data_file else None,
                    "trace_file": str(instance.trace_file) if instance.trace_file else None,
                    "memory_mb": instance.memory_mb,
                }
                for instance in self.instances
            },
        }


# -- schema -------------------------------------------------------------------------------------


@lru_cache(maxsize=1)
def load_schema() -> dict:
    with open(WORKLOAD_SCHEMA_PATH, encoding="utf-8") as handle:
        return json.load(handle)


@lru_cache(maxsize=1)
def _validator():
    import jsonschema

    return jsonschema.Draft202012Validator(load_schema())


def _dotted(path: Iterable) -> str:
    parts = [str(part) if not isinstance(part, int) else f"[{part}]" for part in path]
    text = ""
    for part in parts:
        text += part if part.startswith("[") or not text else "." + part
    return text or "(top level)"


def _got(value: Any) -> str:
    text = json.dumps(value) if not isinstance(value, str) else json.dumps(value)
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


def _message(error) -> list[str]:
    """Turn one jsonschema error into 'field: problem (got ...)' lines (without the file name)."""
    where = _dotted(error.absolute_path)
    kind = error.validator
    value = error.instance
    schema = error.schema
    if kind == "additionalProperties":
        allowed = _allowed_keys(schema)
        lines = []
        extras = sorted(set(value) - set(allowed)) if isinstance(value, dict) else []
        for extra in extras:
            field_path = f"{where}.{extra}" if where != "(top level)" else extra
            close = difflib.get_close_matches(extra, allowed, n=1, cutoff=0.6)
            hint = f'; did you mean "{close[0]}"?' if close else f"; allowed here: {', '.join(allowed)}"
            lines.append(f"{field_path}: unknown key{hint}")
        return lines or [f"{where}: has unknown keys"]
    if kind == "required":
        missing = error.message.split("'")[1] if "'" in error.message else error.message
        field_path = f"{where}.{missing}" if where != "(top level)" else missing
        if "then" in error.relative_schema_path:
            # The requirement comes from an if/then in the schema: say under which condition.
            return [f"{field_path}: required when {_describe_condition(_condition_for(error.schema))}; add it"]
        return [f"{field_path}: required; add it"]
    if kind == "type":
        return [f"{where}: must be {_type_phrase(error.validator_value)} (got {_got(value)})"]
    if kind in ("exclusiveMinimum", "minimum", "maximum", "exclusiveMaximum"):
        op = {"exclusiveMinimum": ">", "minimum": ">=", "maximum": "<=", "exclusiveMaximum": "<"}[kind]
        types = schema.get("type", "number")
        noun = "an integer" if "integer" in ([types] if isinstance(types, str) else types) else "a number"
        return [f"{where}: must be {noun} {op} {error.validator_value} (got {_got(value)})"]
    if kind in ("enum", "const"):
        options = error.validator_value if kind == "enum" else [error.validator_value]
        close = difflib.get_close_matches(str(value), [str(o) for o in options], n=1, cutoff=0.6)
        hint = f'; did you mean "{close[0]}"?' if close else ""
        return [f"{where}: must be one of {', '.join(json.dumps(o) for o in options)} (got {_got(value)}){hint}"]
    if kind == "minItems":
        if schema.get("maxItems") == error.validator_value:
            return [f"{where}: must have exactly {error.validator_value} items (got {len(value)})"]
        return [f"{where}: must have at least {error.validator_value} item(s) (got {len(value)})"]
    if kind == "maxItems":
        if schema.get("minItems") == error.validator_value:
            return [f"{where}: must have exactly {error.validator_value} items (got {len(value)})"]
        return [f"{where}: must have at most {error.validator_value} items (got {len(value)})"]
    if kind == "minProperties":
        return [f"{where}: must have at least {error.validator_value} entry (got none)"]
    if kind == "minLength":
        return [f"{where}: must not be empty"]
    if kind == "pattern" and "propertyNames" in error.relative_schema_path:
        return [f'{where}: instance name {_got(value)} may hold only letters, digits, _ . and -; rename it']
    if kind == "pattern":
        return [f"{where}: {_got(value)} does not match the expected form {error.validator_value}"]
    if kind == "anyOf":
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
        return [f"{where}: must be {' or '.join(allowed) or 'valid'} (got {_got(value)})"]
    return [f"{where}: {error.message}"]


def schema_problems(data: Any) -> list[str]:
    """Every schema violation of ``data`` as 'field: problem' lines, in document order."""
    if not isinstance(data, dict):
        return [f"(top level): must be an object {{...}} (got {_got(data)})"]
    lines: list[str] = []
    errors = sorted(_validator().iter_errors(data), key=lambda e: [str(p) for p in e.absolute_path])
    for error in errors:
        for line in _message(error):
            if line not in lines:
                lines.append(line)
    return lines


# -- resolution and semantic checks -----------------------------------------------------------


def resolve_input_path(value: str, base_dir: Path | None) -> tuple[Path | None, list[Path]]:
    """Find a file named in a workload: absolute; else the workload's folder, CWD, the checkout."""
    candidate = Path(os.path.expanduser(value))
    if candidate.is_absolute():
        return (candidate if candidate.exists() else None), [candidate]
    tried = []
    for root in (base_dir, Path.cwd(), REPO_ROOT):
        if root is None:
            continue
        path = (root / candidate).resolve()
        if path in tried:
            continue
        tried.append(path)
        if path.exists():
            return path, tried
    return None, tried


def fresh_seed() -> int:
    return secrets.randbits(63)


class _Problems:
    def __init__(self, origin: str):
        self.origin = origin
        self.lines: list[str] = []

    def add(self, field_path: str, text: str) -> None:
        self.lines.append(f"{self.origin}: {field_path}: {text}")


def _known_functions() -> list[str] | None:
    """Names in the function catalogue, or None while there is no catalogue."""
    try:
        from functions import catalogue
    except ImportError:
        return None
    return list(catalogue.names())


def _in_catalogue(name: str) -> bool:
    from functions import catalogue

    return catalogue.lookup(name.strip("/").split("/")[-1]) is not None


def _load_param_file(path: Path, field_path: str, problems: _Problems) -> dict | None:
    try:
        with open(path, encoding="utf-8") as handle:
            value = json.load(handle)
    except json.JSONDecodeError as error:
        problems.add(field_path, f"{path} is not valid JSON ({error.msg} at line {error.lineno}); fix the file")
        return None
    except OSError as error:
        problems.add(field_path, f"cannot read {path} ({error.strerror}); fix its permissions")
        return None
    if not isinstance(value, dict):
        problems.add(field_path, f"{path} must hold a JSON object of parameters (got {type(value).__name__})")
        return None
    return value


def _resolve_instance(name: str, spec: dict, top: dict, base_dir: Path | None, duration_s: float, problems: _Problems) -> Instance | None:
    where = f"instances.{name}"
    endpoint = top.get("endpoint", "local_openwhisk")
    window = spec.get("activity_window")
    if window is None:
        window_s = (0.0, float(duration_s))
    else:
        start, end = float(window[0]), float(window[1])
        if start >= end:
            problems.add(f"{where}.activity_window", f"start must be before end (got [{window[0]}, {window[1]}])")
        if end > duration_s:
            problems.add(f"{where}.activity_window", f"ends at {window[1]} s, after the test ({duration_s} s); shorten it or raise test_duration_in_seconds")
        window_s = (start, min(end, float(duration_s)))

    distribution = spec.get("distribution")
    interarrivals = spec.get("interarrivals_list")
    trace_file = spec.get("trace_file")
    if interarrivals is not None and trace_file is not None:
        problems.add(f"{where}.trace_file", "give either interarrivals_list or trace_file, not both")
    if interarrivals is not None or (trace_file is not None and distribution in (None, "Trace")):
        distribution = "Trace"
    if distribution is None:
        problems.add(f"{where}.distribution", f"required; add one of {', '.join(DISTRIBUTIONS)} (or an interarrivals_list)")
        return None
    if distribution == "Trace" and interarrivals is None and trace_file is None:
        problems.add(f"{where}.trace_file", 'required when distribution is "Trace"; add a trace_file or an interarrivals_list')
    if trace_file is not None and distribution != "Trace":
        problems.add(f"{where}.trace_file", f'only used with distribution "Trace" (got "{distribution}"); remove it or set distribution to "Trace"')
    burst_keys = [k for k in ("burst_size", "burst_gap_s", "burst_gap_distribution", "burst_gap_mean_s") if k in spec]
    if burst_keys and distribution != "Burst":
        problems.add(f"{where}.{burst_keys[0]}", f'only used with distribution "Burst" (got "{distribution}"); remove it')
    if "phase" in spec and distribution != "Uniform":
        problems.add(f"{where}.phase", f'only used with distribution "Uniform" (got "{distribution}"); remove it')
    rate = spec.get("rate")
    if distribution in ("Poisson", "Uniform") and rate is None:
        return None  # reported by the schema

    def find(key: str) -> Path | None:
        value = spec.get(key)
        if value is None:
            return None
        path, tried = resolve_input_path(value, base_dir)
        if path is None:
            problems.add(f"{where}.{key}", f"file {value} not found (looked in {', '.join(str(p) for p in tried)}); fix the path")
        elif path.is_dir():
            problems.add(f"{where}.{key}", f"{path} is a directory; name a file")
            return None
        elif not os.access(path, os.R_OK):
            problems.add(f"{where}.{key}", f"{path} is not readable; fix its permissions")
            return None
        return path

    param_file = find("param_file")
    data_file = find("data_file")
    trace_path = find("trace_file")
    if trace_path is not None:
        from invoker.arrivals import TraceError, read_trace

        try:
            read_trace(trace_path, spec.get("trace_row", 0), int(spec.get("trace_start_minute", 1)))
        except TraceError as error:
            problems.add(f"{where}.trace_file", str(error))
    params: dict | None = None
    if param_file is not None:
        params = _load_param_file(param_file, f"{where}.param_file", problems)
    if spec.get("params") is not None:
        params = {**(params or {}), **spec["params"]}

    if endpoint == "generic":
        for key in ("url", "data"):
            if key not in spec:
                problems.add(f"{where}.{key}", 'required when endpoint is "generic"; add it')
    else:
        for key in ("url", "data"):
            if key in spec:
                problems.add(f"{where}.{key}", f'only used when endpoint is "generic" (the workload\'s endpoint is "{endpoint}"); remove it')
    if data_file is None and ("data_mode" in spec or "content_type" in spec):
        key = "data_mode" if "data_mode" in spec else "content_type"
        problems.add(f"{where}.{key}", "only used with data_file; add data_file or remove it")

    interarrivals_s = tuple(float(x) for x in interarrivals) if interarrivals is not None else None
    return Instance(
        name=name,
        function=spec["application"],
        endpoint=endpoint,
        distribution=distribution,
        rate=float(rate) if rate is not None else None,
        window_s=window_s,
        blocking=bool(spec.get("blocking", top.get("blocking_cli", False))),
        params=params,
        param_file=param_file,
        data_file=data_file,
        data_mode=spec.get("data_mode", "web"),
        content_type=spec.get("content_type"),
        url=spec.get("url"),
        data=spec.get("data"),
        memory_mb=spec.get("memory_mb"),
        phase=spec.get("phase", True),
        burst_size=int(spec.get("burst_size", 1)),
        burst_gap_s=spec.get("burst_gap_s"),
        burst_gap_distribution=spec.get("burst_gap_distribution", "fixed"),
        burst_gap_mean_s=spec.get("burst_gap_mean_s"),
        interarrivals_s=interarrivals_s,
        trace_file=trace_path,
        trace_row=spec.get("trace_row", 0),
        trace_start_minute=int(spec.get("trace_start_minute", 1)),
        trace_spread=spec.get("trace_spread", "uniform"),
        trace_scale=float(spec.get("trace_scale", 1.0)),
    )


def _script(value: str | None, field_path: str, base_dir: Path | None, problems: _Problems) -> Path | None:
    if value is None:
        return None
    path, tried = resolve_input_path(value, base_dir)
    if path is None:
        problems.add(field_path, f"file {value} not found (looked in {', '.join(str(p) for p in tried)}); fix the path or set it to null")
        return None
    if not os.access(path, os.X_OK):
        if path.suffix != ".sh":
            problems.add(field_path, f"{path} is not executable; chmod +x it (or name a .sh script, run with bash)")
            return None
    return path


def workload_from_dict(data: Any, origin: str = "<workload>", path: Path | None = None, check_catalogue: bool = True, seed: int | None = None) -> Workload:
    """Validate and resolve a workload given as a dict; raise ConfigError listing every problem.

    ``seed`` overrides ``random_seed`` (sweeps and capacity searches pass the parent's).
    """
    problems = _Problems(origin)
    for line in schema_problems(data):
        problems.lines.append(f"{origin}: {line}")
    if problems.lines:
        raise ConfigError(problems.lines[0], problems=problems.lines)

    base_dir = path.parent if path else None
    duration_s = float(data["test_duration_in_seconds"])
    instances = []
    for name, spec in data["instances"].items():
        instance = _resolve_instance(name, spec, data, base_dir, duration_s, problems)
        if instance is not None:
            instances.append(instance)

    platform = data.get("platform") or {}
    if check_catalogue and not platform.get("actions_deployed"):
        known = _known_functions()
        if known is not None:
            for instance in instances:
                if instance.endpoint == "local_openwhisk" and not _in_catalogue(instance.function):
                    close = difflib.get_close_matches(instance.function, known, n=1, cutoff=0.6)
                    hint = f'did you mean "{close[0]}"? ' if close else ""
                    problems.add(
                        f"instances.{instance.name}.application",
                        f'"{instance.function}" is not in the function catalogue; {hint}known: {", ".join(known)} '
                        "(or set platform.actions_deployed: true for actions already on your OpenWhisk)",
                    )

    sweep = data.get("sweep")
    if sweep and sweep.get("instances"):
        names = {instance.name for instance in instances}
        for index, name in enumerate(sweep["instances"]):
            if name not in names:
                problems.add(f"sweep.instances[{index}]", f'"{name}" is not an instance of this workload; use one of {", ".join(sorted(names))}')

    perf_monitoring = data.get("perf_monitoring") or {}
    runtime_script = _script(perf_monitoring.get("runtime_script"), "perf_monitoring.runtime_script", base_dir, problems)
    post_script = _script(perf_monitoring.get("post_script"), "perf_monitoring.post_script", base_dir, problems)

    if problems.lines:
        raise ConfigError(problems.lines[0], problems=problems.lines)

    raw_seed = data.get("random_seed")
    if seed is not None:
        resolved_seed, seed_was_null = int(seed), False
    elif raw_seed is None:
        resolved_seed, seed_was_null = fresh_seed(), True
    else:
        resolved_seed, seed_was_null = int(raw_seed), False
    return Workload(
        path=path,
        test_name=data["test_name"],
        duration_s=duration_s,
        seed=resolved_seed,
        seed_was_null=seed_was_null,
        instances=tuple(instances),
        blocking_cli=bool(data.get("blocking_cli", False)),
        endpoint=data.get("endpoint", "local_openwhisk"),
        description=data.get("description"),
        platform=platform,
        monitoring=data.get("monitoring") or {},
        sweep=sweep,
        runtime_script=runtime_script,
        post_script=post_script,
        raw=data,
    )


def read_workload_json(path: str | os.PathLike) -> dict:
    """The JSON of a workload file; ConfigError with line and column when it does not parse."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file; check the path of the workload") from None
    except IsADirectoryError:
        raise ConfigError(f"{path}: is a directory; name a workload JSON file") from None
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"{path}: cannot read ({getattr(error, 'strerror', None) or error}); fix the file") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise ConfigError(f"{path}: not valid JSON: {error.msg} at line {error.lineno} column {error.colno}; fix the syntax") from None


def load_workload(path: str | os.PathLike, check_catalogue: bool = True, seed: int | None = None) -> Workload:
    """Read, validate and resolve a workload file; raise ConfigError listing every problem."""
    path = Path(path)
    data = read_workload_json(path)
    return workload_from_dict(data, origin=str(path), path=path.resolve(), check_catalogue=check_catalogue, seed=seed)
