"""Plug-ins: collectors, platforms, distributions and metrics that installed packages add.

A package adds one by an entry point in one of ``GROUPS`` (its ``pyproject.toml``'s
``[project.entry-points."faasprof.collectors"]``, ...), the entry point's name being the plug-in's
name. Each registry loads its own group when it is imported (``load_group``), after its built-in
table, and gives each loaded object its own check (``accept``: the right type, a name no built-in
takes); what passes joins the table, what fails is kept as one line naming the entry point and its
package (``PluginFailure.line``), never a traceback, and the built-ins stay. ``faasprof doctor``
lists both (``loaded`` and ``failures``); every other command prints the failures as warnings.

Entry points are read with ``importlib.metadata``, so nothing here imports a layer above the core:
the registries pass in the type check that needs their classes. ``FAASPROF_NO_PLUGINS=1`` turns the
loading off (a plug-in suspected of breaking a run).
"""

from __future__ import annotations

import importlib.metadata
import os
from dataclasses import dataclass
from typing import Any, Callable

DISABLE_ENV = "FAASPROF_NO_PLUGINS"
# entry-point group -> the kind of plug-in it holds (as doctor and the docs name it).
GROUPS: dict[str, str] = {
    "faasprof.collectors": "collector",
    "faasprof.platforms": "platform",
    "faasprof.distributions": "distribution",
    "faasprof.metrics": "metric",
}


@dataclass(frozen=True)
class Plugin:
    """One plug-in that loaded and passed its registry's check."""

    name: str  # the entry point's name: the collector key, endpoint, distribution or metric column
    kind: str  # GROUPS' value: collector | platform | distribution | metric
    package: str  # the distribution package that declares the entry point
    version: str
    target: str  # the entry point's value, "module:attribute"
    value: Any  # what the entry point loaded (after the registry's check: a class or an instance)


@dataclass(frozen=True)
class PluginFailure:
    """One plug-in that did not load, or that its registry refused: why, in one line."""

    name: str
    kind: str
    package: str
    version: str
    target: str
    reason: str

    def line(self) -> str:
        return (
            f"plug-in {self.kind} {self.name!r} ({self.target}) of {self.package} {self.version} not loaded: "
            f"{self.reason}; fix or uninstall {self.package} (FAASPROF_NO_PLUGINS=1 skips all plug-ins)"
        )


# Per group, what load_group found (filled once per process, by the registry of that group).
_LOADED: dict[str, list[Plugin]] = {}
_FAILED: dict[str, list[PluginFailure]] = {}


def _package_of(entry_point: importlib.metadata.EntryPoint) -> tuple[str, str]:
    dist = getattr(entry_point, "dist", None)
    if dist is None:
        return "an unknown package", "?"
    return str(dist.metadata["Name"] or dist.name), str(dist.version)


def _error_text(error: BaseException) -> str:
    text = " ".join(str(error).split())
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def entry_points(group: str) -> list[importlib.metadata.EntryPoint]:
    """The installed entry points of ``group``, by name (one per name: the first package's)."""
    if os.environ.get(DISABLE_ENV, "").strip() not in ("", "0"):
        return []
    found: dict[str, importlib.metadata.EntryPoint] = {}
    for entry_point in sorted(importlib.metadata.entry_points(group=group), key=lambda e: (e.name, e.value)):
        found.setdefault(entry_point.name, entry_point)
    return list(found.values())


def load_group(group: str, accept: Callable[[str, Any], tuple[Any, str | None]]) -> list[Plugin]:
    """Load every entry point of ``group`` (once per process) and keep those ``accept`` takes.

    ``accept(name, loaded)`` returns ``(value, None)`` to take the plug-in as ``value`` (the class,
    or an instance it made), or ``(None, reason)`` to refuse it. An import that fails (any
    exception: a plug-in's import must never take faasprof down) is a failure like a refusal."""
    if group in _LOADED:
        return list(_LOADED[group])
    kind = GROUPS[group]
    loaded: list[Plugin] = []
    failed: list[PluginFailure] = []
    for entry_point in entry_points(group):
        package, version = _package_of(entry_point)
        try:
            value, reason = accept(entry_point.name, entry_point.load())
        except Exception as error:  # an import error, or a class whose attributes fail its check
            value, reason = None, f"cannot be loaded ({_error_text(error)})"
        if reason is None:
            loaded.append(Plugin(entry_point.name, kind, package, version, entry_point.value, value))
        else:
            failed.append(PluginFailure(entry_point.name, kind, package, version, entry_point.value, reason))
    _LOADED[group], _FAILED[group] = loaded, failed
    return list(loaded)


def loaded() -> list[Plugin]:
    """Every plug-in the registries imported so far have taken, by group then name."""
    return [plugin for group in GROUPS for plugin in _LOADED.get(group, [])]


def failures() -> list[PluginFailure]:
    """Every plug-in the registries imported so far could not load or refused."""
    return [failure for group in GROUPS for failure in _FAILED.get(group, [])]


def not_loaded() -> list[Plugin]:
    """The entry points of the groups no registry has loaded in this process (the analyzer's
    metrics in ``faasprof doctor``, which does not import the analyzer), as found, not imported:
    ``value`` is None."""
    return [
        Plugin(entry_point.name, kind, *_package_of(entry_point), entry_point.value, None)
        for group, kind in GROUPS.items()
        if group not in _LOADED
        for entry_point in entry_points(group)
    ]
