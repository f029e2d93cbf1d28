"""What the steps of ``faasprof.invoker.run.Run`` hand each other, typed: pre-flight's findings
(``Preflight``), what ``prepare`` wrote (``Prepared``), the monitors started (``Monitors``), the
checks the send loop calls (``log_check``, ``hosts_check``), and the rows of a run whose send loop
never ran (``complete_rows_after_failure``), and the run directory made (``create_run_dir``). Each is made whole by the step
that returns it, so no step reads a value a step before it may not have set.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from faasprof import rundir
from faasprof.errors import ConfigError
from faasprof.invoker.dispatch import Dispatcher
from faasprof.invoker.scripts import ScriptRun
from faasprof.invoker.shards import ShardedDispatch
from faasprof.monitoring.collectors import Collector
from faasprof.monitoring.hosts import RemoteHosts
from faasprof.platforms.base import PreparedRequest
from faasprof.rundir import RunStatus
from faasprof.workload.schedule import Schedule
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


def complete_rows_after_failure(run_dir: Path, schedule: Schedule, workload: Workload, reason: str) -> None:
    """The send loop never ran: still one row per planned invocation, all ``not_sent``."""
    names = [i.name for i in workload.instances]
    functions = [i.function for i in workload.instances]
    rundir.append_rows(
        run_dir,
        (
            (seq, names[idx], functions[idx], intended, None, None, "not_sent", None, None, reason)
            for seq, (intended, idx) in enumerate(zip(schedule.intended_ns.tolist(), schedule.instance_idx.tolist()))
        ),
    )


def create_run_dir(out_dir: str | os.PathLike, test_name: str) -> Path:
    """A new run directory under ``out_dir``; ConfigError saying which --out to pass when it cannot be made."""
    try:
        return rundir.create_run_dir(out_dir, test_name)
    except OSError as error:
        raise ConfigError(
            f"--out {out_dir}: cannot create the run directory ({error.strerror or error}); pass --out DIR with a writable directory"
        ) from None
