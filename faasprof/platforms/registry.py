"""The platforms faasprof knows, in one table, and which one serves a workload instance.

``PLATFORMS`` is the table: a platform is added here and nowhere else (ARCHITECTURE.md, "Add a
platform"). Everything that depends on an instance's platform asks through these functions, which
read the table when they run: the workload model (the shape of an instance, ``instance_problems``,
``names_functions``), a run (one platform object per endpoint its instances use,
``platforms_used``; ``faasprof.invoker.run``), a sweep, the analyzer and ``faasprof analyze`` (the
platforms that keep a finished run's records, by its manifest: ``record_keepers``), and tests and
benchmarks that format requests without a run (``prepare_request``).
"""

from __future__ import annotations

from typing import Any, Iterable

from faasprof.platforms.base import Platform, PreparedRequest
from faasprof.platforms.generic import GenericPlatform
from faasprof.platforms.openwhisk.connection import Connection
from faasprof.platforms.openwhisk.platform import OpenWhiskPlatform

PLATFORMS: tuple[type[Platform], ...] = (OpenWhiskPlatform, GenericPlatform)
# A workload without "endpoint" invokes OpenWhisk actions, as FaaSProfiler's did.
DEFAULT_ENDPOINT = OpenWhiskPlatform.endpoint


def platform_for(endpoint: str) -> type[Platform] | None:
    """The platform class whose ``endpoint`` is ``endpoint``; None when none is."""
    return next((cls for cls in PLATFORMS if cls.endpoint == endpoint), None)


def platform_class(instance: Any) -> type[Platform]:
    """The platform class serving ``instance``; ValueError when none does."""
    for cls in PLATFORMS:
        if cls.serves(instance):
            return cls
    raise ValueError(f"instances.{instance.name}.endpoint: {instance.endpoint!r} names no platform faasprof knows")


def platform_of_resolved(instance: dict) -> type[Platform] | None:
    """The platform class of a resolved instance as a run's manifest holds it (its ``endpoint``,
    else the default); None for an endpoint faasprof does not know."""
    return platform_for(instance.get("endpoint") or DEFAULT_ENDPOINT)


def record_keepers(resolved_instances: dict) -> dict[type[Platform], list[str]]:
    """The platforms of a finished run that keep records of its invocations, by the run manifest's
    resolved instances (``{name: {"endpoint": ...}}``; no endpoint: the default), each with the
    names of the instances it served, in the table's order. The analyzer and ``faasprof analyze``
    fetch a run's records through these (``Platform.fetch_records``, ``Platform.find_records``)."""
    served: dict[type[Platform], list[str]] = {}
    for name, spec in resolved_instances.items():
        platform = platform_of_resolved(spec if isinstance(spec, dict) else {})
        if platform is not None and platform.keeps_records:
            served.setdefault(platform, []).append(name)
    return {cls: served[cls] for cls in PLATFORMS if cls in served}


def platforms_used(instances: Iterable[Any]) -> list[type[Platform]]:
    """The platform classes serving some of ``instances``, in the table's order."""
    instances = list(instances)
    return [cls for cls in PLATFORMS if any(cls.serves(instance) for instance in instances)]


def names_functions(endpoint: str) -> bool:
    """Whether the instances of ``endpoint`` name a function their platform hosts (not a URL)."""
    cls = platform_for(endpoint)
    return cls is not None and cls.names_functions


def instance_problems(endpoint: str, spec: dict) -> list[tuple[str, str]]:
    """``(key, problem)`` of one instance's JSON on the platform of ``endpoint``: that platform's
    own checks (``Platform.validate_instance``), then each key only other platforms take."""
    platform = platform_for(endpoint)
    if platform is None:
        return []  # the schema's enum of endpoints reports it
    problems = platform.validate_instance(spec)
    for key in dict.fromkeys(key for cls in PLATFORMS for key in cls.instance_keys):
        if key in spec and key not in platform.instance_keys:
            owners = " or ".join(f'"{cls.endpoint}"' for cls in PLATFORMS if key in cls.instance_keys)
            problems.append(
                (key, f'only used when endpoint is {owners} (the workload\'s endpoint is "{endpoint}"); remove it')
            )
    return problems


def prepare_request(
    instance: Any, connection: Connection | None = None, origin_name: str = "<workload>", **settings: Any
) -> PreparedRequest:
    """The request of one instance on its platform, built as a run builds it (``for_workload``, with
    ``connection`` and the platform's own ``settings``) but without a workload: tests and benchmarks."""
    with platform_class(instance).for_workload(None, connection, **settings) as platform:
        return platform.prepare_request(instance, origin_name)
