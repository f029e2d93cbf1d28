"""The collectors of a run: built from the workload's monitoring block and checked before the run
(``usable_collectors``), watched while it sends (``collector_check``); the remote hosts the
block's ``hosts`` names, reached before the run (``connect_hosts``)."""

from __future__ import annotations

from typing import Any, Callable

from faasprof.errors import NotReadyError
from faasprof.invoker.platform_set import PlatformSet
from faasprof.monitoring.collectors import Collector, build_collectors
from faasprof.monitoring.hosts import RemoteHosts, hosts_option
from faasprof.progress import Progress
from faasprof.rundir import RunStatus


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


def collector_check(
    collectors: list[Collector], warn: Callable[[str], None]
) -> Callable[[], tuple[RunStatus, str] | None]:
    """A required collector that died stops the run; an optional one is a warning, given once."""
    reported: set[str] = set()

    def check() -> tuple[RunStatus, str] | None:
        for collector in collectors:
            if collector.name in reported or collector.alive():
                continue
            reported.add(collector.name)
            if collector.required:
                return (
                    RunStatus.INTERRUPTED,
                    f"required collector {collector.name} stopped during the run; see monitors/{collector.name}/stderr.log",
                )
            warn(
                f"collector {collector.name} stopped during the run (optional, the run goes on); see monitors/{collector.name}/stderr.log"
            )
        return None

    return check


def connect_hosts(workload: Any, progress: Progress) -> RemoteHosts | None:
    """The hosts of ``monitoring.hosts``, every one reached and its collectors checked there (a
    line each on ``progress``); None without the option. ConfigError for a bad inventory,
    NotReadyError (one line) for a host that cannot be reached."""
    option = hosts_option(workload.monitoring, workload.origin, workload.path.parent if workload.path else None)
    if option is None:
        return None
    hosts = RemoteHosts.for_workload(
        option,
        workload.monitoring,
        workload.duration_s,
        workload.origin,
        allow_ssh_commands=workload.grants.allow_ssh_commands,  # the user's flag, never the workload's
    )
    for line in hosts.connect():
        progress.say(line)
    return hosts
