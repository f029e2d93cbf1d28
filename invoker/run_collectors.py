"""The collectors of a run: built from the workload's monitoring block and checked before the run
(``usable_collectors``), watched while it sends (``collector_check``)."""

from __future__ import annotations

from typing import Any, Callable

from faasprof.errors import NotReadyError
from faasprof.invoker.platform_set import PlatformSet
from faasprof.monitoring.collectors import build_collectors
from faasprof.progress import Progress


def usable_collectors(workload: Any, platform: PlatformSet, progress: Progress) -> tuple[list, list[str]]:
    """The workload's collectors that pass their ``check()``; a required one that does not is a
    NotReadyError, an optional one a warning (returned, and said on ``progress``)."""
    block = {key: value for key, value in (workload.monitoring or {}).items() if value not in (None, False)}
    if not block:
        return [], []
    cgroup_parents = ((platform.info or {}).get("localwhisk") or {}).get("cgroup_parents") or {}
    collectors = build_collectors(
        block, {"cgroup_parents": cgroup_parents, "duration_s": workload.duration_s, "host_root": "/"}
    )
    warnings, usable = [], []
    for collector in collectors:
        reason = collector.check()
        if reason is None:
            usable.append(collector)
            continue
        if collector.required:
            raise NotReadyError(f"{workload.origin}: monitoring.{collector.name}: required but unavailable: {reason}")
        text = f"monitoring.{collector.name}: unavailable, running without it: {reason}"
        warnings.append(text)
        progress.warn(text)
    return usable, warnings


def collector_check(collectors: list, warn: Callable[[str], None]) -> Callable[[], tuple[str, str] | None]:
    """A required collector that died stops the run; an optional one is a warning, given once."""
    reported: set[str] = set()

    def check() -> tuple[str, str] | None:
        for collector in collectors:
            if collector.name in reported or collector.alive():
                continue
            reported.add(collector.name)
            if collector.required:
                return (
                    "interrupted",
                    f"required collector {collector.name} stopped during the run; see monitors/{collector.name}/stderr.log",
                )
            warn(
                f"collector {collector.name} stopped during the run (optional, the run goes on); see monitors/{collector.name}/stderr.log"
            )
        return None

    return check
