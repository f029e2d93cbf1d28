"""The workload model: ``Workload`` and its ``Instance``s, resolved from a workload JSON and checked.

Every FaaSProfiler workload is accepted unchanged, with its README's intent where its code
disagreed: a null ``random_seed`` draws a fresh seed (recorded), a null or absent
``activity_window`` is the whole test, an absent ``endpoint`` is ``local_openwhisk``, and
``activity_window`` also cuts traces. The file is read strictly (``faasprof.workload.jsonread``) and
checked against ``faasprof/workload_configs/schema.json``, whose errors become one line each
(``faasprof.workload.messages``: ``CONFIG: instances.i0.rate: must be a number >= 0 (got -5)``); this module
adds the checks a schema cannot express (windows inside the test, files that exist
(``faasprof.workload.references``), the keys only an instance's distribution takes, checked by it and
its files resolved by it (``faasprof.workload.arrivals``), the keys only its platform takes, checked
by it (``faasprof.platforms.registry``), hosts, the planned invocation count and its memory, a
platform's memory and request-size limits (``faasprof.workload.limits``)).

An instance is resolved in steps, one job each (``_resolve_instance``: window, distribution,
inputs, parameters, key checks, the ``Instance``, its planned count), and the workload around
them likewise (``workload_from_dict``: schema, instances, platform block, catalogue, sweep,
scripts, what it plans, seed).

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

from faasprof.addresses import redact_url
from faasprof.errors import ConfigError
from faasprof.functions import catalogue
from faasprof.functions.own import default_name, detect_runtime, looks_like_path
from faasprof.platforms import registry
from faasprof.platforms.base import PlatformLimits
from faasprof.platforms.openwhisk.connection import apihost_problem
from faasprof.workload.access import Grants, Reach, access_problems, reach
from faasprof.workload.arrivals import (
    DISTRIBUTIONS,
    ArrivalError,
    Distribution,
    arrival_problems,
    distribution_for,
    distribution_of,
)
from faasprof.workload.jsonread import ParsedWorkload, parse_workload_file
from faasprof.workload.limits import limit_problems, size_problems
from faasprof.workload.messages import (
    CAPACITY_FRACTION,
    Problems,
    covers,
    got,
    schema_fields,
    schema_problems,
    top_level_problem,
)
from faasprof.workload.references import (
    application_source,
    find_input,
    in_catalogue,
    load_param_file,
    script_path,
    unknown_function,
)
from faasprof.workload.shipped import find_workload

# The run directory is <test_name>-<YYYYmmddTHHMMSS>[-N]: 21 characters beside the name, within
# the 255 bytes most filesystems allow for one directory name.
MAX_TEST_NAME_CHARS = 200


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
    # The keys only its distribution takes (``Distribution.keys``), as given, its file keys as it
    # resolved them (``Distribution.resolve_files``: a path, or None in a dry run without the file):
    # a distribution reads its own here (Uniform's, Burst's and Trace's others are also fields).
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
    # What the user allowed on the command line (``faasprof.workload.access``): never from the JSON.
    grants: Grants = field(default_factory=Grants)

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

    def with_capacities(
        self, capacities: dict[str, dict], partial: bool = False, missing_files_warn: bool = False
    ) -> "Workload":
        """This workload with each capacity-fraction rate resolved: ``capacities`` maps an instance
        name to ``{"capacity_rps": C, ...provenance}``; the rate becomes fraction × C, and the
        provenance is kept in the raw JSON (``capacity_resolution``) so the manifest records it.
        ``partial``: instances missing from ``capacities`` stay unresolved (a dry run shows them).
        ``missing_files_warn``: as ``workload_from_dict`` takes it, for a dry run."""
        raw = json.loads(json.dumps(self.raw))
        resolution = {}
        for instance in self.needs_capacity():
            fraction = instance.capacity_fraction
            assert fraction is not None  # needs_capacity: a fraction and no rate
            entry = capacities.get(instance.name)
            if not entry or not entry.get("capacity_rps"):
                if partial:
                    continue
                raise ConfigError(
                    f"{self.origin}: instances.{instance.name}.rate: no capacity of {instance.function} to take {instance.capacity_fraction:g} of; run faasprof capacity {instance.function} first"
                )
            # A rate placed inside its band (``band`` of the rate) comes with the entry; else F × capacity.
            rate = float(entry.get("rate_rps") or float(fraction) * float(entry["capacity_rps"]))
            raw["instances"][instance.name]["rate"] = round(rate, 6)
            resolution[instance.name] = {
                CAPACITY_FRACTION: instance.capacity_fraction,
                "rate_per_s": round(rate, 6),
                **entry,
            }
        raw["capacity_resolution"] = resolution
        resolved = workload_from_dict(
            raw,
            origin=self.origin,
            path=self.path,
            seed=self.seed,
            missing_files_warn=missing_files_warn,
            grants=self.grants,
        )
        return replace(resolved, seed_was_null=self.seed_was_null)

    def reach(self) -> list[Reach]:
        """Every file the workload reads and every host it sends to (``validate`` lists them)."""
        base_dir = self.path.parent if self.path else None
        return reach(self.instances, self.platform, self.runtime_script, self.post_script, self.monitoring, base_dir)

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
        _redact_urls(raw)
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
                    # Each file its distribution resolved (a Trace's trace_file), under its key.
                    **{key: str(value) for key, value in instance.arrival_keys.items() if isinstance(value, Path)},
                    "memory_mb": instance.memory_mb,
                    "host": instance.host,
                    "function_source": str(instance.source) if instance.source else None,
                }
                for instance in self.instances
            },
        }


def _redact_urls(raw: dict) -> None:
    """The credentials of every URL of the workload as given (``platform.apihost``, an instance's
    ``url``) redacted in place: a manifest never holds a password (validation refuses them; a
    workload resolved without checks may still carry one)."""
    platform = raw.get("platform")
    if isinstance(platform, dict) and isinstance(platform.get("apihost"), str):
        platform["apihost"] = redact_url(platform["apihost"])
    instances = raw.get("instances")
    for spec in instances.values() if isinstance(instances, dict) else ():
        if isinstance(spec, dict) and isinstance(spec.get("url"), str):
            spec["url"] = redact_url(spec["url"])


# -- resolution and semantic checks -----------------------------------------------------------


def fresh_seed() -> int:
    return secrets.randbits(63)


# -- one instance, step by step: window, distribution, inputs, parameters, keys, the instance, its count


@dataclass(frozen=True)
class _Inputs:
    """What an instance names outside the workload, found: the function and the files it reads."""

    function: str  # as invoked: "application", or the name a researcher's function deploys as
    param_file: Path | None
    data_file: Path | None
    source: Path | None  # a researcher's function (file or folder), from "source" or "application"
    own: Path | None  # "application" itself was that path
    arrival_files: dict  # the distribution's file keys, as it resolved them


def _resolve_instance(
    name: str, spec: dict, top: dict, base_dir: Path | None, duration_s: float | None, problems: Problems
) -> Instance | None:
    """One instance resolved, each step adding its own problems; None when its distribution is not
    known (or lacks a key it requires), as nothing else of it can be checked then."""
    where = f"instances.{name}"
    endpoint = top.get("endpoint", registry.DEFAULT_ENDPOINT)
    window_s = _activity_window(spec, where, duration_s, problems)
    process = _distribution(spec, where, problems)
    if process is None:
        return None
    inputs = _find_inputs(spec, where, endpoint, base_dir, process, problems)
    params, param_file = _params(spec, where, endpoint, inputs, problems)
    _key_problems(spec, where, endpoint, inputs, problems)
    instance = _new_instance(name, spec, top, endpoint, process, window_s, inputs, params, param_file)
    return replace(instance, planned_estimate=_planned_estimate(process, instance, where, problems))


def _activity_window(spec: dict, where: str, duration_s: float | None, problems: Problems) -> tuple[float, float]:
    """``[start, end)`` in seconds: the whole test without ``activity_window``, else the window cut at the test's end."""
    test_s = duration_s if duration_s is not None else math.inf
    window = spec.get("activity_window")
    if window is None:
        return (0.0, float(test_s))
    start, end = float(window[0]), float(window[1])
    if start >= end:
        problems.add(f"{where}.activity_window", f"start must be before end (got [{window[0]}, {window[1]}])")
    if end > test_s:
        problems.add(
            f"{where}.activity_window",
            f"ends at {window[1]} s, after the test ({duration_s} s); shorten it or raise test_duration_in_seconds",
        )
    return (start, min(end, float(test_s)))


def _distribution(spec: dict, where: str, problems: Problems) -> Distribution | None:
    """The instance's distribution from the table, its keys checked by it (and the other
    distributions' keys refused); None when it is missing, unknown or lacks a required key."""
    name = distribution_of(spec)
    if name is None:
        problems.add(
            f"{where}.distribution", f"required; add one of {', '.join(DISTRIBUTIONS)} (or an interarrivals_list)"
        )
        return None
    try:
        process = distribution_for(name, f"{problems.origin}: {where}.distribution")
    except ConfigError as error:  # a name the schema takes and the table lacks: they must agree
        problems.lines.append(str(error))
        return None
    for key, text in arrival_problems(name, spec):
        problems.add(f"{where}.{key}", text)
    if any(spec.get(key) is None for key in process.required):
        return None  # reported by the schema
    return process


def _find_inputs(
    spec: dict, where: str, endpoint: str, base_dir: Path | None, process: Distribution, problems: Problems
) -> _Inputs:
    """The instance's files, found (each missing one a problem), its distribution's resolved by it,
    and its function: a path in ``application`` on a platform that deploys the researcher's own
    functions is that function, named as ``faasprof deploy PATH`` names it."""
    param_file = find_input(spec, "param_file", where, base_dir, problems)
    data_file = find_input(spec, "data_file", where, base_dir, problems)
    arrival_files = process.resolve_files(spec, where, base_dir, problems)
    source = find_input(spec, "source", where, base_dir, problems, folder_ok=True)
    function, source_field = spec["application"], "source"
    platform = registry.platform_for(endpoint)  # None for an endpoint the schema refuses
    takes_source = platform is not None and "source" in platform.instance_keys
    own = application_source(function, base_dir) if takes_source and "source" not in spec else None
    if own is not None:
        source, function, source_field = own, default_name(own), "application"
    if source is not None:
        _source_problems(spec, f"{where}.{source_field}", f"{where}.kind", source, problems)
    return _Inputs(function, param_file, data_file, source, own, arrival_files)


def _source_problems(spec: dict, source_where: str, kind_where: str, source: Path, problems: Problems) -> None:
    """A researcher's function whose runtime cannot be told, or whose ``kind`` does not run it."""
    try:
        runtime = detect_runtime(source)
    except ConfigError as error:
        problems.add(source_where, str(error))
        return
    kind = spec.get("kind")
    if isinstance(kind, str) and not kind.startswith("python" if runtime == "python" else "nodejs"):
        language = "Python" if runtime == "python" else "Node.js"
        problems.add(
            kind_where, f'"{kind}" does not run {source} (a {language} function); use a {runtime} kind or remove it'
        )


def _params(
    spec: dict, where: str, endpoint: str, inputs: _Inputs, problems: Problems
) -> tuple[dict | None, Path | None]:
    """The parameters (``param_file`` updated by ``params``) and the file they came from. Given no
    input, a catalogue function gets its sample input, as ``faasprof native`` calls it: without one
    most of them only fail (markdown: "no document")."""
    params = (
        load_param_file(inputs.param_file, f"{where}.param_file", problems) if inputs.param_file is not None else None
    )
    if spec.get("params") is not None:
        params = {**(params or {}), **spec["params"]}
    given_input = any(key in spec for key in ("params", "param_file", "data_file"))
    if registry.names_functions(endpoint) and inputs.source is None and not given_input:
        entry = catalogue.lookup(str(spec["application"]).strip("/").split("/")[-1])
        if entry is not None:
            return entry.sample_params(), entry.param_file
    return params, inputs.param_file


def _key_problems(spec: dict, where: str, endpoint: str, inputs: _Inputs, problems: Problems) -> None:
    """The keys only some platforms take (OpenWhisk: source, kind; generic: url, data), as the
    instance's platform sees them (a path in ``application`` is the instance's source), the Host
    header, and the keys that only go with a ``data_file``."""
    seen = spec if inputs.own is None else {**spec, "source": str(inputs.own)}
    for key, text in registry.instance_problems(endpoint, seen):
        problems.add(f"{where}.{key}", text)
    host = spec.get("host")
    if host is not None and (not host.strip() or any(ch.isspace() or ch in "/@" for ch in host)):
        problems.add(
            f"{where}.host",
            f"{got(host)} is not a host name for the Host header; write HOST or HOST:PORT without spaces, scheme or path",
        )
    if inputs.data_file is None and ("data_mode" in spec or "content_type" in spec):
        key = "data_mode" if "data_mode" in spec else "content_type"
        problems.add(f"{where}.{key}", "only used with data_file; add data_file or remove it")


def _new_instance(
    name: str,
    spec: dict,
    top: dict,
    endpoint: str,
    process: Distribution,
    window_s: tuple[float, float],
    inputs: _Inputs,
    params: dict | None,
    param_file: Path | None,
) -> Instance:
    """The ``Instance`` of checked parts: defaults filled, the platform's and the distribution's own
    keys kept as given (the distribution's files as it resolved them)."""
    interarrivals = spec.get("interarrivals_list")
    rate = spec.get("rate")
    platform = registry.platform_for(endpoint)
    return Instance(
        name=name,
        function=inputs.function,
        endpoint=endpoint,
        distribution=process.name,
        rate=float(rate) if isinstance(rate, (int, float)) else None,
        capacity_fraction=float(rate[CAPACITY_FRACTION]) if isinstance(rate, dict) else None,
        capacity_band=rate.get("band") if isinstance(rate, dict) else None,
        window_s=window_s,
        blocking=bool(spec.get("blocking", top.get("blocking_cli", False))),
        params=params,
        param_file=param_file,
        data_file=inputs.data_file,
        data_mode=spec.get("data_mode", "web"),
        content_type=spec.get("content_type"),
        url=spec.get("url"),
        data=spec.get("data"),
        platform_keys={
            key: spec[key] for key in (platform.instance_keys if platform is not None else ()) if key in spec
        },
        memory_mb=spec.get("memory_mb"),
        phase=spec.get("phase", True),
        burst_size=int(spec.get("burst_size", 1)),
        burst_gap_s=spec.get("burst_gap_s"),
        burst_gap_distribution=spec.get("burst_gap_distribution", "fixed"),
        burst_gap_mean_s=spec.get("burst_gap_mean_s"),
        interarrivals_s=tuple(float(x) for x in interarrivals) if interarrivals is not None else None,
        trace_row=spec.get("trace_row", 0),
        trace_start_minute=int(spec.get("trace_start_minute", 1)),
        trace_spread=spec.get("trace_spread", "uniform"),
        trace_scale=float(spec.get("trace_scale", 1.0)),
        host=spec.get("host"),
        source=inputs.source,
        kind=spec.get("kind"),
        arrival_keys={**{key: spec[key] for key in process.keys if key in spec}, **inputs.arrival_files},
    )


def _planned_estimate(process: Distribution, instance: Instance, where: str, problems: Problems) -> float:
    """About how many invocations the instance plans, as its distribution counts them (0 for an
    empty window); an input it cannot read is a problem naming its key."""
    try:
        estimate = process.expected_count(instance)
    except ArrivalError as error:  # a trace that cannot be read
        problems.add(f"{where}.{error.key}", str(error))
        return 0.0
    return estimate if instance.window_length_s > 0 else 0.0


def workload_from_dict(
    data: Any,
    origin: str = "<workload>",
    path: Path | None = None,
    check_catalogue: bool = True,
    seed: int | None = None,
    parse_problems: Iterable[str] = (),
    non_finite: Iterable[str] = (),
    limits: PlatformLimits | None = None,
    missing_files_warn: bool = False,
    grants: Grants | None = None,
) -> Workload:
    """Validate and resolve a workload given as a dict; raise ConfigError listing every problem.

    Schema and semantic problems are reported together: semantic checks run on every part the
    schema accepted. ``seed`` overrides ``random_seed`` (sweeps and capacity searches pass the
    parent's). ``limits``: the platform's memory and request-size limits, checked when given.
    Functions outside the catalogue are warnings (``Workload.warnings``) when ``check_catalogue``:
    the platform may have them, which only a run (or ``validate`` with a platform) can ask.
    ``missing_files_warn``: files that are not there yet are warnings (a dry run plans without them).
    ``grants``: what the user allowed on the command line; given, every file outside the workload's
    folder and every host off this machine that they do not allow is a problem
    (``faasprof.workload.access``). None: the caller built the workload itself (a capacity probe, a
    sweep's point of a workload already checked), and nothing is checked.
    """
    problems = Problems(origin, missing_files_warn)
    bad = _schema_checked(data, parse_problems, non_finite, problems)
    base_dir = path.parent if path else None
    duration_s = (
        None
        if covers("test_duration_in_seconds", bad) or "test_duration_in_seconds" not in data
        else float(data["test_duration_in_seconds"])
    )
    _test_name_problems(data, problems)
    raw_instances = data.get("instances") if isinstance(data.get("instances"), dict) else {}
    instances = _resolve_instances(data, raw_instances, bad, base_dir, duration_s, problems)
    platform = _platform_block(data, bad, problems)
    if check_catalogue and not platform.get("actions_deployed"):
        _catalogue_warnings(instances, base_dir, problems)
    sweep = _sweep_block(data, raw_instances, bad, problems)
    runtime_script, post_script = _monitoring_scripts(data, bad, base_dir, problems)
    if grants is not None:
        reached = reach(instances, platform, runtime_script, post_script, data.get("monitoring"), base_dir)
        access_problems(reached, base_dir, grants, problems)
    _plan_problems(instances, len(raw_instances), duration_s, data, limits, problems)
    _raise_problems(problems)
    assert duration_s is not None  # the schema requires it: a file without one raised above
    resolved_seed, seed_was_null = _seed(data.get("random_seed"), seed)
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
        grants=grants if grants is not None else Grants(),
    )


# -- the workload, step by step: parse and schema problems, instances, blocks, plan, seed


def _schema_checked(
    data: Any, parse_problems: Iterable[str], non_finite: Iterable[str], problems: Problems
) -> list[str]:
    """The parse and schema problems added (a non-finite number, already reported by the parser,
    once); the fields they sit at, whose semantic checks are skipped. Not an object: raised at once."""
    origin = problems.origin
    for line in parse_problems:
        problems.lines.append(f"{origin}: {line}")
    if not isinstance(data, dict):
        problems.lines.append(f"{origin}: {top_level_problem(data)}")
        raise ConfigError(problems.lines[0], problems=problems.lines)
    skipped = set(non_finite)
    schema_lines = [line for line in schema_problems(data) if line.split(": ", 1)[0] not in skipped]
    for line in schema_lines:
        problems.lines.append(f"{origin}: {line}")
    return schema_fields(schema_lines) + sorted(skipped)


def _test_name_problems(data: dict, problems: Problems) -> None:
    test_name = data.get("test_name")
    if isinstance(test_name, str) and len(test_name) > MAX_TEST_NAME_CHARS:
        problems.add(
            "test_name",
            f"is {len(test_name)} characters, more than the {MAX_TEST_NAME_CHARS} a run directory name allows; shorten it",
        )


def _resolve_instances(
    data: dict, raw_instances: dict, bad: list[str], base_dir: Path | None, duration_s: float | None, problems: Problems
) -> list[Instance]:
    """Every instance the schema accepted, resolved (``_resolve_instance``)."""
    if covers("instances", [b for b in bad if b == "instances"]):
        return []
    instances = []
    for name, spec in raw_instances.items():
        if covers(f"instances.{name}", bad) or not isinstance(spec, dict):
            continue
        instance = _resolve_instance(name, spec, data, base_dir, duration_s, problems)
        if instance is not None:
            instances.append(instance)
    return instances


def _platform_block(data: dict, bad: list[str], problems: Problems) -> dict:
    """The workload's ``platform`` block ({} without one), its ``apihost`` checked."""
    platform = data.get("platform")
    if not isinstance(platform, dict):
        platform = {}
    apihost = platform.get("apihost")
    reason = apihost_problem(apihost) if isinstance(apihost, str) and not covers("platform.apihost", bad) else None
    if reason:
        problems.add("platform.apihost", reason)
    return platform


def _catalogue_warnings(instances: list[Instance], base_dir: Path | None, problems: Problems) -> None:
    """A warning for each function outside the catalogue, at its first instance: only the platform
    knows whether it exists."""
    warned: set[str] = set()
    for instance in instances:
        if (
            instance.function in warned
            or not instance.names_functions
            or instance.source is not None
            or in_catalogue(instance.function)
        ):
            continue
        warned.add(instance.function)
        if looks_like_path(instance.function):
            fix = "fix the path to your function's file or folder (an action's full name must already exist on the platform)"
        else:
            fix = (
                f"it must already exist on the platform (deploy it with `faasprof deploy PATH --name {instance.function}`, "
                "or give the instance a source folder)"
            )
        problems.warn(
            f"instances.{instance.name}.application", f"{unknown_function(instance.function, base_dir)}; {fix}"
        )


def _sweep_block(data: dict, raw_instances: dict, bad: list[str], problems: Problems) -> dict | None:
    """The ``sweep`` block (None without one), each instance it names checked against the workload's."""
    sweep = data.get("sweep") if isinstance(data.get("sweep"), dict) else None
    if not sweep or not isinstance(sweep.get("instances"), list) or covers("sweep.instances", bad):
        return sweep
    names = set(raw_instances)
    for index, name in enumerate(sweep["instances"]):
        if name not in names:
            problems.add(
                f"sweep.instances[{index}]",
                f'"{name}" is not an instance of this workload; use one of {", ".join(sorted(names))}',
            )
    return sweep


def _monitoring_scripts(
    data: dict, bad: list[str], base_dir: Path | None, problems: Problems
) -> tuple[Path | None, Path | None]:
    """FaaSProfiler's ``perf_monitoring`` scripts (runtime, post), found and checked."""
    perf_monitoring = data.get("perf_monitoring")
    if not isinstance(perf_monitoring, dict):
        perf_monitoring = {}
    if covers("perf_monitoring", bad):
        return None, None
    return (
        script_path(perf_monitoring.get("runtime_script"), "perf_monitoring.runtime_script", base_dir, problems),
        script_path(perf_monitoring.get("post_script"), "perf_monitoring.post_script", base_dir, problems),
    )


def _plan_problems(
    instances: list[Instance],
    given: int,
    duration_s: float | None,
    data: dict,
    limits: PlatformLimits | None,
    problems: Problems,
) -> None:
    """What the instances plan together: nothing at all (a warning), too much to build, and what
    the platform's ``limits`` refuse (when given)."""
    if instances and all(instance.rate == 0 for instance in instances):
        problems.warn("instances", "every instance is muted (rate 0): a run would send nothing; give one a rate > 0")
    if instances and len(instances) == given and duration_s is not None:
        # Without a valid duration every window is open-ended: the duration's own line says what to fix.
        size_problems(instances, problems)
    if limits is not None:
        limit_problems(instances, data, limits, problems)


def _raise_problems(problems: Problems) -> None:
    """ConfigError holding every problem line (and the warnings) when there is any."""
    if problems.lines:
        raise ConfigError(problems.lines[0], problems=problems.lines, warnings=list(problems.warnings))


def _seed(raw_seed: Any, seed: int | None) -> tuple[int, bool]:
    """The run's seed and whether ``random_seed`` was null (a fresh one drawn, and recorded)."""
    if seed is not None:
        return int(seed), False
    if raw_seed is None:
        return fresh_seed(), True
    return int(raw_seed), False


def load_workload(
    path: str | os.PathLike,
    check_catalogue: bool = True,
    seed: int | None = None,
    limits: PlatformLimits | None = None,
    missing_files_warn: bool = False,
    grants: Grants | None = None,
) -> Workload:
    """Read, validate and resolve a workload file (or a shipped workload's bare name); raise
    ConfigError listing every problem. A file may come from someone else: what it reaches is
    checked against ``grants`` (none: nothing beyond its folder and this machine)."""
    path = find_workload(path)
    return workload_from_parsed(
        parse_workload_file(path),
        path,
        check_catalogue=check_catalogue,
        seed=seed,
        limits=limits,
        missing_files_warn=missing_files_warn,
        grants=grants,
    )


def workload_from_parsed(
    parsed: ParsedWorkload,
    path: str | os.PathLike,
    check_catalogue: bool = True,
    seed: int | None = None,
    limits: PlatformLimits | None = None,
    missing_files_warn: bool = False,
    grants: Grants | None = None,
) -> Workload:
    """``load_workload`` of a file already parsed (``parse_workload_file``), for a command that
    looked at the document first: the file is read once. ``grants`` as ``load_workload`` takes them."""
    path = Path(path)
    return workload_from_dict(
        parsed.data,
        origin=str(path),
        path=path.resolve(),
        check_catalogue=check_catalogue,
        seed=seed,
        parse_problems=parsed.problems,
        non_finite=parsed.non_finite,
        limits=limits,
        missing_files_warn=missing_files_warn,
        grants=grants if grants is not None else Grants(),
    )
