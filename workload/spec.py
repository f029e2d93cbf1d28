"""Workload JSONs: reading, validating against ``workload_configs/schema.json``, resolving.

Every FaaSProfiler workload is accepted unchanged, with its README's intent where its code
disagreed: a null ``random_seed`` draws a fresh seed (recorded), a null or absent
``activity_window`` is the whole test, an absent ``endpoint`` is ``local_openwhisk``, and
``activity_window`` also cuts traces. The JSON Schema is the one source of the format; this module
turns its errors into one line each, ``CONFIG: instances.i0.rate: must be a number >= 0 (got -5)``,
and adds the checks a schema cannot express (windows inside the test, files that exist, the keys
only an instance's platform takes, checked by it (``platforms.registry``), hosts, the planned
invocation count and its memory, a platform's memory and request-size limits).

Reading is strict: an empty, binary, non-UTF-8 or BOM-prefixed file, duplicate keys (JSON keeps
only the last, which silently dropped a stream), NaN/Infinity and nesting deeper than
MAX_NESTING_DEPTH are problems too. Validation collects every problem (parse, schema and semantic
checks together) before raising, so a user fixes a workload in one pass. A function outside the
catalogue is a warning (``Workload.warnings``): only the platform knows whether it exists.
"""

from __future__ import annotations

import codecs
import difflib
import json
import math
import os
import secrets
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable

from faasprof.errors import ConfigError
from faasprof.paths import REPO_ROOT, WORKLOAD_SCHEMA_PATH

CAPACITY_FRACTION = "capacity_fraction"  # "rate": {"capacity_fraction": 0.5}: half the measured capacity
from functions import catalogue
from functions.own import default_name, detect_runtime, looks_like_path
from platforms import registry
from platforms.base import PlatformLimits
from platforms.openwhisk.connection import apihost_problem
from workload.arrivals import TraceError, read_trace

DISTRIBUTIONS = ("Poisson", "Uniform", "Burst", "Trace")

# Bounds that keep a typo from exhausting the machine. The schedule costs about
# SCHEDULE_BYTES_PER_INVOCATION while it is built (float64 times, int64 ns, int32 owner, the sort's
# index) and the run keeps one row per invocation, so the planned count is what must be bounded.
MAX_PLANNED_INVOCATIONS = 20_000_000
SCHEDULE_BYTES_PER_INVOCATION = 48
MAX_NESTING_DEPTH = 32
MAX_WORKLOAD_BYTES = 64 * 1024 * 1024
MAX_PARAM_FILE_BYTES = 64 * 1024 * 1024
# The run directory is <test_name>-<YYYYmmddTHHMMSS>[-N]: 21 characters beside the name, within
# the 255 bytes most filesystems allow for one directory name.
MAX_TEST_NAME_CHARS = 200
FAASPROFILER_MONITORING_SCRIPTS = ("monitoring/RuntimeMonitoring.sh", "./monitoring/RuntimeMonitoring.sh")
DEFAULT_OWN_MEMORY_MB = 256  # a researcher's function deploys with this unless memory_mb says otherwise


@dataclass(frozen=True)
class Instance:
    """One invocation stream, resolved: defaults filled, paths absolute, params loaded."""

    name: str
    function: str  # action name (FaaSProfiler's "application")
    endpoint: str  # its platform's (platforms.registry): "local_openwhisk" | "generic"
    distribution: str  # one of DISTRIBUTIONS ("Trace" also for interarrivals_list)
    rate: float | None  # invocations per second (Poisson, Uniform); 0: muted, it plans nothing
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
    host: str | None = None  # Host header sent instead of the URL's (FaaSProfiler's instances.*.host)
    source: Path | None = None  # a researcher's function (file or folder) deployed as `function`
    kind: str | None = None  # the action kind for `source` (default: from its files)
    planned_estimate: float = 0.0  # about how many invocations the instance plans
    capacity_fraction: float | None = None  # rate given as this fraction of the measured capacity
    # The keys only its platform takes (``Platform.instance_keys``), as given: a platform reads its
    # own here (generic's url and data are also fields of their own).
    platform_keys: dict = field(default_factory=dict)

    @property
    def window_length_s(self) -> float:
        return self.window_s[1] - self.window_s[0]

    @property
    def names_functions(self) -> bool:
        """Whether the instance names a function its platform hosts (an OpenWhisk action), not a URL."""
        return registry.names_functions(self.endpoint)


@dataclass(frozen=True)
class Workload:
    path: Path | None
    test_name: str
    duration_s: float
    seed: int
    seed_was_null: bool
    instances: tuple[Instance, ...]
    blocking_cli: bool = False
    endpoint: str = registry.DEFAULT_ENDPOINT
    description: str | None = None
    platform: dict = field(default_factory=dict)
    monitoring: dict = field(default_factory=dict)
    sweep: dict | None = None
    runtime_script: Path | None = None
    post_script: Path | None = None
    raw: dict = field(default_factory=dict, repr=False)
    serverless_platform: str | None = None  # FaaSProfiler's label of the platform, kept in the manifest
    warnings: tuple[str, ...] = ()  # one line each, already prefixed with the file name

    @property
    def origin(self) -> str:
        return str(self.path) if self.path else "<workload>"

    def instance(self, name: str) -> Instance:
        for instance in self.instances:
            if instance.name == name:
                return instance
        raise KeyError(name)

    def needs_capacity(self) -> list[Instance]:
        """Instances whose rate is a fraction of a capacity not resolved yet."""
        return [i for i in self.instances if i.capacity_fraction is not None and i.rate is None]

    def with_capacities(self, capacities: dict[str, dict], partial: bool = False, missing_files_warn: bool = False) -> "Workload":
        """This workload with each capacity-fraction rate resolved: ``capacities`` maps an instance
        name to ``{"capacity_rps": C, ...provenance}``; the rate becomes fraction × C, and the
        provenance is kept in the raw JSON (``capacity_resolution``) so the manifest records it.
        ``partial``: instances missing from ``capacities`` stay unresolved (a dry run shows them).
        ``missing_files_warn``: as ``workload_from_dict`` takes it, for a dry run."""
        raw = json.loads(json.dumps(self.raw))
        resolution = {}
        for instance in self.needs_capacity():
            entry = capacities.get(instance.name)
            if not entry or not entry.get("capacity_rps"):
                if partial:
                    continue
                raise ConfigError(f"{self.origin}: instances.{instance.name}.rate: no capacity of {instance.function} to take {instance.capacity_fraction:g} of; run faasprof capacity {instance.function} first")
            rate = float(instance.capacity_fraction) * float(entry["capacity_rps"])
            raw["instances"][instance.name]["rate"] = round(rate, 6)
            resolution[instance.name] = {CAPACITY_FRACTION: instance.capacity_fraction, "rate_per_s": round(rate, 6), **entry}
        raw["capacity_resolution"] = resolution
        resolved = workload_from_dict(raw, origin=self.origin, path=self.path, seed=self.seed, missing_files_warn=missing_files_warn)
        return replace(resolved, seed_was_null=self.seed_was_null)

    def functions(self) -> list[str]:
        """Names of the functions the workload invokes on platforms that host them, in first-use order."""
        seen: dict[str, None] = {}
        for instance in self.instances:
            if instance.names_functions:
                seen.setdefault(instance.function, None)
        return list(seen)

    def check_limits(self, limits: PlatformLimits) -> list[str]:
        """Every memory limit and request size of this workload that ``limits``' platform would refuse."""
        problems = _Problems(self.origin)
        limit_problems(self.instances, self.raw, limits, problems)
        return problems.lines

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
            "serverless_platform": self.serverless_platform,
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
                    "host": instance.host,
                    "function_source": str(instance.source) if instance.source else None,
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
        if error.validator_value == ["number", "object"] and "capacity_fraction" in (error.schema.get("properties") or {}):
            return [f'{where}: must be a number (got {_got(value)}), or {{"{CAPACITY_FRACTION}": F}} for F times the measured capacity']
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


def _in_catalogue(name: str) -> bool:
    return catalogue.lookup(name.strip("/").split("/")[-1]) is not None


def application_source(application: str, base_dir: Path | None) -> Path | None:
    """The file or folder an instance's ``application`` names when it is a path that exists (a
    researcher's own function); None for an action name. A catalogue name is never a path."""
    if _in_catalogue(application) or not looks_like_path(application):
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


def _load_param_file(path: Path, field_path: str, problems: _Problems) -> dict | None:
    try:
        text = read_text_file(path, MAX_PARAM_FILE_BYTES)
    except OSError as error:
        problems.add(field_path, f"cannot read {path} ({error.strerror}); fix its permissions")
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


def _estimate_count(distribution: str, spec: dict, window_length_s: float, trace_total: float | None) -> float:
    """About how many invocations an instance plans (the mean for random processes)."""
    if window_length_s <= 0:
        return 0.0
    if spec.get("interarrivals_list") is not None:
        return float(len(spec["interarrivals_list"]))
    if distribution in ("Poisson", "Uniform"):
        if isinstance(spec["rate"], dict):
            return 0.0  # a fraction of a capacity not known yet (see Workload.with_capacities)
        return float(spec["rate"]) * window_length_s
    if distribution == "Burst":
        gap = float(spec["burst_gap_s"])
        if spec.get("burst_gap_distribution") == "shifted_exponential":
            gap += float(spec.get("burst_gap_mean_s") or 0.0)
        return float(spec.get("burst_size", 1)) * (1.0 + window_length_s / gap)
    return float(trace_total or 0.0)


def _trace_total(trace_path: Path, spec: dict, window_length_s: float, where: str, problems: _Problems) -> float | None:
    """Invocations a trace file plans in the window, or None when it cannot be read (reported)."""
    try:
        kind, values = read_trace(trace_path, spec.get("trace_row", 0), int(spec.get("trace_start_minute", 1)))
    except TraceError as error:
        problems.add(f"{where}.trace_file", str(error))
        return None
    if kind == "counts":
        minutes = int(math.ceil(window_length_s / 60.0))
        return float(values[:minutes].sum()) * float(spec.get("trace_scale", 1.0))
    return float(values.size)


def _resolve_instance(name: str, spec: dict, top: dict, base_dir: Path | None, duration_s: float | None, problems: _Problems) -> Instance | None:
    where = f"instances.{name}"
    endpoint = top.get("endpoint", registry.DEFAULT_ENDPOINT)
    platform = registry.platform_for(endpoint)  # None for an endpoint the schema refuses
    test_s = duration_s if duration_s is not None else math.inf
    window = spec.get("activity_window")
    if window is None:
        window_s = (0.0, float(test_s))
    else:
        start, end = float(window[0]), float(window[1])
        if start >= end:
            problems.add(f"{where}.activity_window", f"start must be before end (got [{window[0]}, {window[1]}])")
        if end > test_s:
            problems.add(f"{where}.activity_window", f"ends at {window[1]} s, after the test ({duration_s} s); shorten it or raise test_duration_in_seconds")
        window_s = (start, min(end, float(test_s)))

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
    if distribution in ("Poisson", "Uniform") and rate is None and interarrivals is None:
        return None  # reported by the schema

    def find(key: str, kinds: str = "file") -> Path | None:
        value = spec.get(key)
        if value is None:
            return None
        path, tried = resolve_input_path(value, base_dir)
        if path is None:
            problems.missing(f"{where}.{key}", f"{'file' if kinds == 'file' else 'file or folder'} {value} not found (looked in {', '.join(str(p) for p in tried)}); fix the path")
        elif path.is_dir() and kinds == "file":
            problems.add(f"{where}.{key}", f"{path} is a directory; name a file")
            return None
        elif not os.access(path, os.R_OK):
            problems.add(f"{where}.{key}", f"{path} is not readable; fix its permissions")
            return None
        return path

    param_file = find("param_file")
    data_file = find("data_file")
    trace_path = find("trace_file")
    source = find("source", kinds="file or folder")
    function = spec["application"]
    source_field = "source"
    # A platform that deploys functions of the researcher's own takes "source" (OpenWhisk).
    takes_source = platform is not None and "source" in platform.instance_keys
    own = application_source(function, base_dir) if takes_source and "source" not in spec else None
    if own is not None:
        # A path in "application" is the researcher's function itself, named as `faasprof deploy PATH` names it.
        source, function, source_field = own, default_name(own), "application"
    if source is not None:
        try:
            runtime = detect_runtime(source)
        except ConfigError as error:
            problems.add(f"{where}.{source_field}", str(error))
        else:
            kind = spec.get("kind")
            if isinstance(kind, str) and not kind.startswith("python" if runtime == "python" else "nodejs"):
                problems.add(f"{where}.kind", f'"{kind}" does not run {source} (a {"Python" if runtime == "python" else "Node.js"} function); use a {runtime} kind or remove it')
    trace_total = _trace_total(trace_path, spec, window_s[1] - window_s[0], where, problems) if trace_path is not None else None
    params: dict | None = None
    if param_file is not None:
        params = _load_param_file(param_file, f"{where}.param_file", problems)
    if spec.get("params") is not None:
        params = {**(params or {}), **spec["params"]}
    if registry.names_functions(endpoint) and source is None and not any(key in spec for key in ("params", "param_file", "data_file")):
        # Given no input, a catalogue function gets its sample input, as `faasprof native` calls
        # it: without one most of them only fail (markdown: "no document").
        entry = catalogue.lookup(str(spec["application"]).strip("/").split("/")[-1])
        if entry is not None:
            param_file, params = entry.param_file, entry.sample_params()

    # The keys only some platforms take (OpenWhisk: source, kind; generic: url, data), as the
    # instance's platform sees them (a path in "application" is the instance's source).
    for key, text in registry.instance_problems(endpoint, spec if own is None else {**spec, "source": str(own)}):
        problems.add(f"{where}.{key}", text)
    host = spec.get("host")
    if host is not None and (not host.strip() or any(ch.isspace() or ch in "/@" for ch in host)):
        problems.add(f"{where}.host", f"{_got(host)} is not a host name for the Host header; write HOST or HOST:PORT without spaces, scheme or path")
    if data_file is None and ("data_mode" in spec or "content_type" in spec):
        key = "data_mode" if "data_mode" in spec else "content_type"
        problems.add(f"{where}.{key}", "only used with data_file; add data_file or remove it")

    interarrivals_s = tuple(float(x) for x in interarrivals) if interarrivals is not None else None
    return Instance(
        name=name,
        function=function,
        endpoint=endpoint,
        distribution=distribution,
        rate=float(rate) if isinstance(rate, (int, float)) else None,
        capacity_fraction=float(rate[CAPACITY_FRACTION]) if isinstance(rate, dict) else None,
        window_s=window_s,
        blocking=bool(spec.get("blocking", top.get("blocking_cli", False))),
        params=params,
        param_file=param_file,
        data_file=data_file,
        data_mode=spec.get("data_mode", "web"),
        content_type=spec.get("content_type"),
        url=spec.get("url"),
        data=spec.get("data"),
        platform_keys={key: spec[key] for key in (platform.instance_keys if platform is not None else ()) if key in spec},
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
        host=host,
        source=source,
        kind=spec.get("kind"),
        planned_estimate=_estimate_count(distribution, spec, window_s[1] - window_s[0], trace_total),
    )


def _script(value: str | None, field_path: str, base_dir: Path | None, problems: _Problems) -> Path | None:
    if value is None:
        return None
    path, tried = resolve_input_path(value, base_dir)
    if path is None and Path(value).as_posix() in FAASPROFILER_MONITORING_SCRIPTS:
        # Every FaaSProfiler workload names its own monitoring script; FaaSProfiler went on when it
        # failed, and faasprof's collectors do its work.
        problems.warn(field_path, f"{value} is FaaSProfiler's monitoring script, not part of faasprof; the run goes on without it "
                                  "(the workload's monitoring block starts perf, rdt, blktrace and cgroups collectors), or copy the script beside the workload")
        return None
    if path is None:
        problems.missing(field_path, f"file {value} not found (looked in {', '.join(str(p) for p in tried)}); fix the path or set it to null")
        return None
    if path.is_dir():
        problems.add(field_path, f"{path} is a directory; name an executable script")
        return None
    if not os.access(path, os.X_OK):
        if path.suffix != ".sh":
            problems.add(field_path, f"{path} is not executable; chmod +x it (or name a .sh script, run with bash)")
            return None
    return path


def _human_bytes(count: float) -> str:
    for unit, size in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if count >= size:
            return f"{count / size:.3g} {unit}"
    return f"{count:.0f} bytes"


def _driving_field(spec: dict, distribution: str) -> tuple[str, str]:
    """The field that makes an instance plan many invocations, and how to lower it."""
    if spec.get("interarrivals_list") is not None:
        return "interarrivals_list", "shorten the list"
    if distribution in ("Poisson", "Uniform"):
        return "rate", "lower the rate or shorten the activity window"
    if distribution == "Burst":
        return ("burst_size", "lower burst_size, raise burst_gap_s or shorten the window") if spec.get("burst_size", 1) > 1 else ("burst_gap_s", "raise burst_gap_s or shorten the window")
    return "trace_scale", "lower trace_scale or shorten the window"


def _size_problems(instances: list[Instance], data: dict, problems: _Problems) -> None:
    """Refuse schedules too large to build or run, naming the instance that makes them so."""
    total = sum(instance.planned_estimate for instance in instances)
    if total <= MAX_PLANNED_INVOCATIONS:
        available = _available_memory_bytes()
        if available is None or total * SCHEDULE_BYTES_PER_INVOCATION <= available / 2:
            return
        limit_text = f"half of the {_human_bytes(available)} of memory available now"
    else:
        limit_text = f"faasprof's limit of {MAX_PLANNED_INVOCATIONS:,} invocations per run"
    biggest = max(instances, key=lambda instance: instance.planned_estimate)
    spec = data["instances"][biggest.name]
    key, fix = _driving_field(spec, biggest.distribution)
    share = "" if len(instances) == 1 else f" (this instance plans about {biggest.planned_estimate:.3g})"
    problems.add(
        f"instances.{biggest.name}.{key}",
        f"the workload plans about {total:.3g} invocations{share}, beyond {limit_text}; building the schedule would need about "
        f"{_human_bytes(total * SCHEDULE_BYTES_PER_INVOCATION)} of memory; {fix}",
    )


def _available_memory_bytes() -> float | None:
    try:
        with open("/proc/meminfo", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return float(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def _default_memory_mb(instance: Instance) -> int | None:
    if instance.memory_mb is not None:
        return instance.memory_mb
    if instance.source is not None:
        return DEFAULT_OWN_MEMORY_MB
    entry = catalogue.lookup(instance.function.strip("/").split("/")[-1])
    return entry.memory_mb if entry is not None else None


def request_body_bytes(instance: Instance) -> int | None:
    """The size of one invocation's request body, or None when a file cannot be measured."""
    try:
        params_bytes = len(json.dumps(instance.params or {}).encode())
        if instance.data_file is None:
            return params_bytes
        size = instance.data_file.stat().st_size
    except (OSError, TypeError, ValueError):
        return None
    if instance.data_mode == "web":
        return size
    return params_bytes + 4 * ((size + 2) // 3) + len(',"data":""')


def limit_problems(instances: list[Instance] | tuple[Instance, ...], data: dict, limits: PlatformLimits, problems: _Problems) -> None:
    """Memory limits and request sizes that ``limits``' platform would refuse."""
    low, high = limits.min_memory_mb, limits.max_memory_mb
    for instance in instances:
        if not instance.names_functions:
            continue  # the limits are those of a platform hosting the functions
        where = f"instances.{instance.name}"
        memory_mb = _default_memory_mb(instance)
        if memory_mb is not None and ((low is not None and memory_mb < low) or (high is not None and memory_mb > high)):
            key = "memory_mb" if instance.memory_mb is not None else "application"
            what = f"{memory_mb} MB" if instance.memory_mb is not None else f"{instance.function}'s default memory ({memory_mb} MB)"
            problems.add(f"{where}.{key}", f"{what} is outside the {low or '?'}..{high or '?'} MB that {limits.description} accepts; {limits.memory_fix}")
        if limits.max_payload_bytes is not None:
            size = request_body_bytes(instance)
            if size is not None and size > limits.max_payload_bytes:
                key = "data_file" if instance.data_file is not None else ("param_file" if instance.param_file is not None else "params")
                problems.add(f"{where}.{key}", f"one request would carry {size:,} bytes, more than the {limits.max_payload_bytes:,} bytes {limits.description} accepts (it answers 413); {limits.payload_fix}")
    sweep_memory = (((data.get("sweep") or {}).get("parameters") or {}).get("memory_mb")) or []
    for index, memory_mb in enumerate(sweep_memory):
        if (low is not None and memory_mb < low) or (high is not None and memory_mb > high):
            problems.add(f"sweep.parameters.memory_mb[{index}]", f"{memory_mb} MB is outside the {low or '?'}..{high or '?'} MB that {limits.description} accepts; {limits.memory_fix}")


def _schema_fields(lines: list[str]) -> list[str]:
    return [line.split(": ", 1)[0] for line in lines]


def _covers(field_path: str, bad: list[str]) -> bool:
    """Whether a schema problem sits at or under ``field_path`` (its semantic checks are skipped)."""
    return any(b == field_path or b.startswith(field_path + ".") or b.startswith(field_path + "[") for b in bad)


def _top_level_problem(data: Any) -> str:
    if isinstance(data, list):
        return "(top level): the file holds a JSON list [...]; a workload is one object {...} with test_name, test_duration_in_seconds and instances; unwrap it"
    return f"(top level): must be an object {{...}} with test_name, test_duration_in_seconds and instances (got {_got(data)})"


def workload_from_dict(data: Any, origin: str = "<workload>", path: Path | None = None, check_catalogue: bool = True, seed: int | None = None,
                       parse_problems: Iterable[str] = (), non_finite: Iterable[str] = (), limits: PlatformLimits | None = None,
                       missing_files_warn: bool = False) -> Workload:
    """Validate and resolve a workload given as a dict; raise ConfigError listing every problem.

    Schema and semantic problems are reported together: semantic checks run on every part the
    schema accepted. ``seed`` overrides ``random_seed`` (sweeps and capacity searches pass the
    parent's). ``limits``: the platform's memory and request-size limits, checked when given.
    Functions outside the catalogue are warnings (``Workload.warnings``) when ``check_catalogue``:
    the platform may have them, which only a run (or ``validate`` with a platform) can ask.
    ``missing_files_warn``: files that are not there yet are warnings (a dry run plans without them).
    """
    problems = _Problems(origin, missing_files_warn)
    for line in parse_problems:
        problems.lines.append(f"{origin}: {line}")
    if not isinstance(data, dict):
        problems.lines.append(f"{origin}: {_top_level_problem(data)}")
        raise ConfigError(problems.lines[0], problems=problems.lines)
    skipped = set(non_finite)
    schema_lines = [line for line in schema_problems(data) if line.split(": ", 1)[0] not in skipped]
    for line in schema_lines:
        problems.lines.append(f"{origin}: {line}")
    bad = _schema_fields(schema_lines) + sorted(skipped)

    base_dir = path.parent if path else None
    duration_s = None if _covers("test_duration_in_seconds", bad) or "test_duration_in_seconds" not in data else float(data["test_duration_in_seconds"])
    test_name = data.get("test_name")
    if isinstance(test_name, str) and len(test_name) > MAX_TEST_NAME_CHARS:
        problems.add("test_name", f"is {len(test_name)} characters, more than the {MAX_TEST_NAME_CHARS} a run directory name allows; shorten it")
    instances: list[Instance] = []
    raw_instances = data.get("instances") if isinstance(data.get("instances"), dict) else {}
    if not _covers("instances", [b for b in bad if b == "instances"]):
        for name, spec in raw_instances.items():
            if _covers(f"instances.{name}", bad) or not isinstance(spec, dict):
                continue
            instance = _resolve_instance(name, spec, data, base_dir, duration_s, problems)
            if instance is not None:
                instances.append(instance)

    platform = data.get("platform") if isinstance(data.get("platform"), dict) else {}
    apihost = platform.get("apihost")
    if isinstance(apihost, str) and not _covers("platform.apihost", bad):
        reason = apihost_problem(apihost)
        if reason:
            problems.add("platform.apihost", reason)
    if check_catalogue and not platform.get("actions_deployed"):
        warned: set[str] = set()
        for instance in instances:
            if instance.function in warned:
                continue  # one warning per function, at its first instance
            if instance.names_functions and instance.source is None and not _in_catalogue(instance.function):
                warned.add(instance.function)
                if looks_like_path(instance.function):
                    fix = "fix the path to your function's file or folder (an action's full name must already exist on the platform)"
                else:
                    fix = (f"it must already exist on the platform (deploy it with `faasprof deploy PATH --name {instance.function}`, "
                           "or give the instance a source folder)")
                problems.warn(f"instances.{instance.name}.application", f"{unknown_function(instance.function, base_dir)}; {fix}")

    sweep = data.get("sweep") if isinstance(data.get("sweep"), dict) else None
    if sweep and isinstance(sweep.get("instances"), list) and not _covers("sweep.instances", bad):
        names = set(raw_instances)
        for index, name in enumerate(sweep["instances"]):
            if name not in names:
                problems.add(f"sweep.instances[{index}]", f'"{name}" is not an instance of this workload; use one of {", ".join(sorted(names))}')

    perf_monitoring = data.get("perf_monitoring") if isinstance(data.get("perf_monitoring"), dict) else {}
    runtime_script = post_script = None
    if not _covers("perf_monitoring", bad):
        runtime_script = _script(perf_monitoring.get("runtime_script"), "perf_monitoring.runtime_script", base_dir, problems)
        post_script = _script(perf_monitoring.get("post_script"), "perf_monitoring.post_script", base_dir, problems)

    if instances and all(instance.rate == 0 for instance in instances):
        problems.warn("instances", "every instance is muted (rate 0): a run would send nothing; give one a rate > 0")
    if instances and len(instances) == len(raw_instances) and duration_s is not None:
        # Without a valid duration every window is open-ended: the duration's own line says what to fix.
        _size_problems(instances, data, problems)
    if limits is not None:
        limit_problems(instances, data, limits, problems)

    if problems.lines:
        error = ConfigError(problems.lines[0], problems=problems.lines)
        error.warnings = list(problems.warnings)
        raise error

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
        duration_s=float(duration_s),
        seed=resolved_seed,
        seed_was_null=seed_was_null,
        instances=tuple(instances),
        blocking_cli=bool(data.get("blocking_cli", False)),
        endpoint=data.get("endpoint", registry.DEFAULT_ENDPOINT),
        description=data.get("description"),
        platform=platform,
        monitoring=data.get("monitoring") or {},
        sweep=sweep,
        runtime_script=runtime_script,
        post_script=post_script,
        raw=data,
        serverless_platform=data.get("serverless_platform"),
        warnings=tuple(problems.warnings),
    )


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
                problems.append(f"{path}: {value.text} is not a number JSON allows (NaN, Infinity and numbers beyond 1.8e308 are not); write a finite number")
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


def read_text_file(path: Path, limit_bytes: int | None = None) -> str:
    """The text of a file the user named; OSError passes through, ValueError says what is wrong."""
    with open(path, "rb") as handle:
        raw = handle.read() if limit_bytes is None else handle.read(limit_bytes + 1)
    if limit_bytes is not None and len(raw) > limit_bytes:
        raise ValueError(f"is larger than {limit_bytes:,} bytes; a workload or parameter file this big is a mistake")
    problem = describe_bad_bytes(raw)
    if problem:
        raise ValueError(problem)
    return raw.decode("utf-8")


def parse_json_document(text: str, where: str) -> tuple[Any, list[str], set[str]]:
    """Parse JSON text strictly: ``(data, problems, non-finite paths)``; ConfigError when it cannot.

    Duplicate keys, NaN/Infinity and nesting deeper than MAX_NESTING_DEPTH are problems (lines
    without the ``where`` prefix); syntax errors raise with line and column."""
    if not text.strip():
        raise ConfigError(f"{where}: the file is empty; a workload is a JSON object with test_name, test_duration_in_seconds and instances (see workload_configs/)")
    try:
        data = json.loads(text, object_pairs_hook=_pairs_hook, parse_constant=_NonFinite, parse_float=_parse_float)
    except json.JSONDecodeError as error:
        raise ConfigError(f"{where}: not valid JSON: {error.msg} at line {error.lineno} column {error.colno}; fix the syntax") from None
    except RecursionError:
        raise ConfigError(f"{where}: nested too deeply to read (more than {MAX_NESTING_DEPTH} levels); flatten the structure") from None
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
    """Read and parse a workload file; ConfigError (one line) when it cannot be read or parsed."""
    path = Path(path)
    try:
        text = read_text_file(path, MAX_WORKLOAD_BYTES)
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file; check the path of the workload") from None
    except IsADirectoryError:
        raise ConfigError(f"{path}: is a directory; name a workload JSON file") from None
    except PermissionError:
        raise ConfigError(f"{path}: cannot read (permission denied); fix its permissions") from None
    except OSError as error:
        raise ConfigError(f"{path}: cannot read ({error.strerror or error}); fix the file") from None
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
    """Whether ``data`` is a JSON Schema (workload_configs/schema.json), not a workload."""
    return isinstance(data, dict) and "instances" not in data and "$schema" in data and ("$defs" in data or "properties" in data)


def load_workload(path: str | os.PathLike, check_catalogue: bool = True, seed: int | None = None, limits: PlatformLimits | None = None,
                  missing_files_warn: bool = False) -> Workload:
    """Read, validate and resolve a workload file; raise ConfigError listing every problem."""
    path = Path(path)
    parsed = parse_workload_file(path)
    return workload_from_dict(parsed.data, origin=str(path), path=path.resolve(), check_catalogue=check_catalogue, seed=seed,
                              parse_problems=parsed.problems, non_finite=parsed.non_finite, limits=limits, missing_files_warn=missing_files_warn)
