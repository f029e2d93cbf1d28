"""What the steps of ``faasprof.invoker.run.Run`` hand each other, typed: pre-flight's findings
(``Preflight``), what ``prepare`` wrote (``Prepared``), the monitors started (``Monitors``), and
the checks the send loop calls (``log_check``, ``hosts_check``). Each is made whole by the step
that returns it, so no step reads a value a step before it may not have set.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from faasprof import rundir
from faasprof.invoker.dispatch import Dispatcher
from faasprof.invoker.scripts import ScriptRun
from faasprof.invoker.shards import ShardedDispatch
from faasprof.monitoring.collectors import Collector
from faasprof.monitoring.hosts import RemoteHosts
from faasprof.platforms.base import PreparedRequest
from faasprof.rundir import RunStatus
from faasprof.workload.spec import Workload


@dataclass(frozen=True)
class Preflight:
    """What pre-flight checked and started: the run's inputs, ready to send."""

    workload: Workload  # with the storage's endpoints in its instances' params
    run_dir: Path
    requests: list[PreparedRequest]  # one per instance, in the workload's order
    collectors: list[Collector]  # those that passed their check
    hosts: RemoteHosts | None  # the remote hosts measured (monitoring.hosts), None without the option
    host: dict  # this host's metadata (monitoring.host)
    tools: dict  # the versions of the tools the collectors run


@dataclass(frozen=True)
class Prepared:
    """What ``prepare`` wrote: the manifest (status ``running``) and the open invocation log."""

    manifest: rundir.Manifest
    log: rundir.InvocationLog
    send_processes: int  # chosen for the plan's peak rate (``--send-processes auto``) or as given


@dataclass(frozen=True)
class Monitors:
    """What ``start_monitors`` started, filled as each starts, so that a failure half-way still
    stops (and the manifest describes) those that did."""

    collectors: list[Collector] = field(default_factory=list)
    scripts: dict[str, ScriptRun] = field(default_factory=dict)


Sending = Dispatcher | ShardedDispatch  # what sends the schedule: one dispatcher, or the send processes


def log_check(log: rundir.InvocationLog) -> Callable[[], tuple[RunStatus, str] | None]:
    """The first failed write (a full disk) stops the run: sending on would only lose more rows."""

    def check() -> tuple[RunStatus, str] | None:
        return (RunStatus.ABORTED, log.error) if log.error is not None else None

    return check


def hosts_check(hosts: RemoteHosts | None, warn: Callable[[str], None]) -> Callable[[], None]:
    """A lost host is a warning: the run goes on with the others (``RemoteHosts.check``)."""

    def check() -> None:
        if hosts is not None:
            hosts.check(warn)

    return check


__all__ = ["Monitors", "Prepared", "Preflight", "Sending", "hosts_check", "log_check"]
