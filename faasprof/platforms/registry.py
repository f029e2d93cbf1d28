"""The platforms faasprof knows, in one table, and which one serves a workload instance.

``PLATFORMS`` is the table: a platform is added here and nowhere else (ARCHITECTURE.md, "Add a
platform"). Everything that depends on an instance's platform asks through these functions, which
read the table when they run: the workload model (the shape of an instance, ``instance_problems``,
``names_functions``), a run (one platform object per endpoint its instances use,
``platforms_used``; ``faasprof.invoker.run``), a sweep, the analyzer and ``faasprof analyze`` (the
platforms that keep a finished run's records, by its manifest: ``record_keepers``), and tests and
benchmarks that format requests without a run (``prepare_request``).

Out of the tree, an installed package adds a platform by an entry point in ``faasprof.platforms``
(``PLUGIN_GROUP``; ``faasprof.plugins``, docs/plugins.md): its class joins ``PLATFORMS`` after the
built-ins, and ``plugin_schema_parts`` gives the workload schema its endpoint and instance keys.
"""

from __future__ import annotations

from typing import Any, Iterable

from faasprof import plugins
from faasprof.platforms.base import Platform, PreparedRequest
from faasprof.platforms.generic import GenericPlatform
from faasprof.platforms.openwhisk.connection import Connection
from faasprof.platforms.openwhisk.platform import OpenWhiskPlatform

BUILTIN_PLATFORMS: tuple[type[Platform], ...] = (OpenWhiskPlatform, GenericPlatform)
# A workload without "endpoint" invokes OpenWhisk actions, as FaaSProfiler's did.
DEFAULT_ENDPOINT = OpenWhiskPlatform.endpoint


def plugin_schema_parts() -> tuple[list[str], dict[str, dict]]:
    """The plug-in platforms' endpoints and their instance keys' schemas, which
    ``faasprof.workload.messages.load_schema`` adds to the workload schema (schema.json holds the built-ins')."""
    added = [cls for cls in PLATFORMS if cls not in BUILTIN_PLATFORMS]
    return [cls.endpoint for cls in added], {
        key: schema for cls in added for key, schema in cls.instance_key_schemas.items()
    }


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


# -- plug-ins: loaded last, so that a plug-in module importing faasprof finds this one complete --

PLUGIN_GROUP = "faasprof.platforms"


def accept_plugin(name: str, loaded: object) -> tuple[type[Platform] | None, str | None]:
    """A plug-in platform as ``faasprof.plugins.load_group`` asks: a ``Platform`` subclass whose
    ``endpoint`` is the entry point's name and no built-in's, with a schema for each instance key."""
    if not (isinstance(loaded, type) and issubclass(loaded, Platform)):
        return None, f"{loaded!r} is not a subclass of faasprof.platforms.base.Platform"
    if loaded.endpoint != name:
        return None, f"its endpoint is {loaded.endpoint!r}; set endpoint = {name!r} (the entry point's name)"
    if any(cls.endpoint == name for cls in BUILTIN_PLATFORMS):
        return None, f"endpoint {name!r} is a built-in platform's; give the plug-in another name"
    builtin_keys = {key for cls in BUILTIN_PLATFORMS for key in cls.instance_keys}
    lacking = sorted(set(loaded.instance_keys) - set(loaded.instance_key_schemas))
    clash = sorted(set(loaded.instance_keys) & builtin_keys)
    if clash:
        return None, f"instance key(s) {', '.join(clash)} belong to a built-in platform; rename them"
    if lacking:
        return None, f"instance_key_schemas lacks {', '.join(lacking)}; give each instance key its JSON Schema"
    return loaded, None


PLATFORMS: tuple[type[Platform], ...] = BUILTIN_PLATFORMS + tuple(
    plugin.value for plugin in plugins.load_group(PLUGIN_GROUP, accept_plugin)
)
