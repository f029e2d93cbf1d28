"""The workload model: ``Workload`` and its ``Instance``s, resolved from a workload JSON and checked.

Every FaaSProfiler workload is accepted unchanged, with its README's intent where its code
disagreed: a null ``random_seed`` draws a fresh seed (recorded), a null or absent
``activity_window`` is the whole test, an absent ``endpoint`` is ``local_openwhisk``, and
``activity_window`` also cuts traces. The file is read strictly (``faasprof.workload.jsonread``) and
checked against ``workload_configs/schema.json``, whose errors become one line each
(``faasprof.workload.messages``: ``CONFIG: instances.i0.rate: must be a number >= 0 (got -5)``); this module
adds the checks a schema cannot express (windows inside the test, files that exist
(``faasprof.workload.references``), the keys only an instance's distribution takes, checked by it
(``faasprof.workload.arrivals``), the keys only its platform takes, checked by it (``faasprof.platforms.registry``),
hosts, the planned invocation count and its memory, a platform's memory and request-size limits).

Validation collects every problem (parse, schema and semantic checks together) before raising, so
a user fixes a workload in one pass. A function outside the catalogue is a warning
(``Workload.warnings``): only the platform knows whether it exists.
"""

from __future__ import annotations

import json
import math
import os
import secrets
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterable

from faasprof.errors import ConfigError
from faasprof.functions import catalogue
from faasprof.functions.own import default_name, detect_runtime, looks_like_path
from faasprof.platforms import registry
from faasprof.platforms.base import PlatformLimits
from faasprof.platforms.openwhisk.connection import apihost_problem
from faasprof.workload.arrivals import DISTRIBUTIONS, ArrivalError, arrival_problems, distribution_for, distribution_of
from faasprof.workload.jsonread import ParsedWorkload, parse_workload_file
from faasprof.workload.messages import CAPACITY_FRACTION, Problems, covers, got, schema_fields, schema_problems, top_level_problem
from faasprof.workload.references import application_source, in_catalogue, load_param_file, resolve_input_path, script_path, unknown_function

# Bounds that keep a typo from exhausting the machine. The schedule costs about
# SCHEDULE_BYTES_PER_INVOCATION while it is built (float64 times, int64 ns, int32 owner, the sort's
# index) and the run keeps one row per invocation, so the planned count is what must be bounded.
MAX_PLANNED_INVOCATIONS = 20_000_000
SCHEDULE_BYTES_PER_INVOCATION = 48
# The run directory is <test_name>-<YYYYmmddTHHMMSS>[-N]: 21 characters beside the name, within
# the 255 bytes most filesystems allow for one directory name.
MAX_TEST_NAME_CHARS = 200
DEFAULT_OWN_MEMORY_MB = 256  # a researcher's function deploys with this unless memory_mb says otherwise


@dataclass(frozen=True)
class Instance:
    """One invocation stream, resolved: defaults filled, paths absolute, params loaded."""

    name: str
    function: str  # action name (FaaSProfiler's "application")
    endpoint: str  # its platform's (platforms.registry): "local_openwhisk" | "generic"
    distribution: str  # a name in workload.arrivals.DISTRIBUTIONS ("Trace" also for interarrivals_list)
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
    capacity_band: str | None = None  # the platform's band that rate must stay in (capacity_store.band_lines)
    # The keys only its platform takes (``Platform.instance_keys``), as given: a platform reads its
    # own here (generic's url and data are also fields of their own).
    platform_keys: dict = field(default_factory=dict)
    # The keys only its distribution takes (``Distribution.keys``), as given: a distribution reads
    # its own here (Poisson's, Uniform's, Burst's and Trace's are also fields of their own).
    arrival_keys: dict = field(default_factory=dict)

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
            # A rate placed inside its band (``band`` of the rate) comes with the entry; else F × capacity.
            rate = float(entry.get("rate_rps") or float(instance.capacity_fraction) * float(entry["capacity_rps"]))
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
        problems = Problems(self.origin)
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


# -- resolution and semantic checks -----------------------------------------------------------


def fresh_seed() -> int:
    return secrets.randbits(63)





def _resolve_instance(name: str, spec: dict, top: dict, base_dir: Path | None, duration_s: float | None, problems: Problems) -> Instance | None:
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

    distribution = distribution_of(spec)
    if distribution is None:
        problems.add(f"{where}.distribution", f"required; add one of {', '.join(DISTRIBUTIONS)} (or an interarrivals_list)")
        return None
    try:
        process = distribution_for(distribution, f"{problems.origin}: {where}.distribution")
    except ConfigError as error:  # a name the schema takes and the table lacks: they must agree
        problems.lines.append(str(error))
        return None
    for key, text in arrival_problems(distribution, spec):
        problems.add(f"{where}.{key}", text)
    if any(spec.get(key) is None for key in process.required):
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
    params: dict | None = None
    if param_file is not None:
        params = load_param_file(param_file, f"{where}.param_file", problems)
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
        problems.add(f"{where}.host", f"{got(host)} is not a host name for the Host header; write HOST or HOST:PORT without spaces, scheme or path")
    if data_file is None and ("data_mode" in spec or "content_type" in spec):
        key = "data_mode" if "data_mode" in spec else "content_type"
        problems.add(f"{where}.{key}", "only used with data_file; add data_file or remove it")

    interarrivals = spec.get("interarrivals_list")
    interarrivals_s = tuple(float(x) for x in interarrivals) if interarrivals is not None else None
    rate = spec.get("rate")
    instance = Instance(
        name=name,
        function=function,
        endpoint=endpoint,
        distribution=distribution,
        rate=float(rate) if isinstance(rate, (int, float)) else None,
        capacity_fraction=float(rate[CAPACITY_FRACTION]) if isinstance(rate, dict) else None,
        capacity_band=rate.get("band") if isinstance(rate, dict) else None,
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
        arrival_keys={key: spec[key] for key in process.keys if key in spec},
    )
    try:
        estimate = process.expected_count(instance)
    except ArrivalError as error:  # a trace that cannot be read
        problems.add(f"{where}.{error.key}", str(error))
        estimate = 0.0
    return replace(instance, planned_estimate=estimate if instance.window_length_s > 0 else 0.0)



def _human_bytes(count: float) -> str:
    for unit, size in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if count >= size:
            return f"{count / size:.3g} {unit}"
    return f"{count:.0f} bytes"



def _size_problems(instances: list[Instance], problems: Problems) -> None:
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
    key, fix = distribution_for(biggest.distribution).driving_field(biggest)
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


def limit_problems(instances: list[Instance] | tuple[Instance, ...], data: dict, limits: PlatformLimits, problems: Problems) -> None:
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
    problems = Problems(origin, missing_files_warn)
    for line in parse_problems:
        problems.lines.append(f"{origin}: {line}")
    if not isinstance(data, dict):
        problems.lines.append(f"{origin}: {top_level_problem(data)}")
        raise ConfigError(problems.lines[0], problems=problems.lines)
    skipped = set(non_finite)
    schema_lines = [line for line in schema_problems(data) if line.split(": ", 1)[0] not in skipped]
    for line in schema_lines:
        problems.lines.append(f"{origin}: {line}")
    bad = schema_fields(schema_lines) + sorted(skipped)

    base_dir = path.parent if path else None
    duration_s = None if covers("test_duration_in_seconds", bad) or "test_duration_in_seconds" not in data else float(data["test_duration_in_seconds"])
    test_name = data.get("test_name")
    if isinstance(test_name, str) and len(test_name) > MAX_TEST_NAME_CHARS:
        problems.add("test_name", f"is {len(test_name)} characters, more than the {MAX_TEST_NAME_CHARS} a run directory name allows; shorten it")
    instances: list[Instance] = []
    raw_instances = data.get("instances") if isinstance(data.get("instances"), dict) else {}
    if not covers("instances", [b for b in bad if b == "instances"]):
        for name, spec in raw_instances.items():
            if covers(f"instances.{name}", bad) or not isinstance(spec, dict):
                continue
            instance = _resolve_instance(name, spec, data, base_dir, duration_s, problems)
            if instance is not None:
                instances.append(instance)

    platform = data.get("platform") if isinstance(data.get("platform"), dict) else {}
    apihost = platform.get("apihost")
    if isinstance(apihost, str) and not covers("platform.apihost", bad):
        reason = apihost_problem(apihost)
        if reason:
            problems.add("platform.apihost", reason)
    if check_catalogue and not platform.get("actions_deployed"):
        warned: set[str] = set()
        for instance in instances:
            if instance.function in warned:
                continue  # one warning per function, at its first instance
            if instance.names_functions and instance.source is None and not in_catalogue(instance.function):
                warned.add(instance.function)
                if looks_like_path(instance.function):
                    fix = "fix the path to your function's file or folder (an action's full name must already exist on the platform)"
                else:
                    fix = (f"it must already exist on the platform (deploy it with `faasprof deploy PATH --name {instance.function}`, "
                           "or give the instance a source folder)")
                problems.warn(f"instances.{instance.name}.application", f"{unknown_function(instance.function, base_dir)}; {fix}")

    sweep = data.get("sweep") if isinstance(data.get("sweep"), dict) else None
    if sweep and isinstance(sweep.get("instances"), list) and not covers("sweep.instances", bad):
        names = set(raw_instances)
        for index, name in enumerate(sweep["instances"]):
            if name not in names:
                problems.add(f"sweep.instances[{index}]", f'"{name}" is not an instance of this workload; use one of {", ".join(sorted(names))}')

    perf_monitoring = data.get("perf_monitoring") if isinstance(data.get("perf_monitoring"), dict) else {}
    runtime_script = post_script = None
    if not covers("perf_monitoring", bad):
        runtime_script = script_path(perf_monitoring.get("runtime_script"), "perf_monitoring.runtime_script", base_dir, problems)
        post_script = script_path(perf_monitoring.get("post_script"), "perf_monitoring.post_script", base_dir, problems)

    if instances and all(instance.rate == 0 for instance in instances):
        problems.warn("instances", "every instance is muted (rate 0): a run would send nothing; give one a rate > 0")
    if instances and len(instances) == len(raw_instances) and duration_s is not None:
        # Without a valid duration every window is open-ended: the duration's own line says what to fix.
        _size_problems(instances, problems)
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



def load_workload(path: str | os.PathLike, check_catalogue: bool = True, seed: int | None = None, limits: PlatformLimits | None = None,
                  missing_files_warn: bool = False) -> Workload:
    """Read, validate and resolve a workload file; raise ConfigError listing every problem."""
    return workload_from_parsed(parse_workload_file(path), path, check_catalogue=check_catalogue, seed=seed, limits=limits,
                                missing_files_warn=missing_files_warn)


def workload_from_parsed(parsed: ParsedWorkload, path: str | os.PathLike, check_catalogue: bool = True, seed: int | None = None,
                         limits: PlatformLimits | None = None, missing_files_warn: bool = False) -> Workload:
    """``load_workload`` of a file already parsed (``parse_workload_file``), for a command that
    looked at the document first: the file is read once."""
    path = Path(path)
    return workload_from_dict(parsed.data, origin=str(path), path=path.resolve(), check_catalogue=check_catalogue, seed=seed,
                              parse_problems=parsed.problems, non_finite=parsed.non_finite, limits=limits, missing_files_warn=missing_files_warn)
