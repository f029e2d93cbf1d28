"""Collectors on the hosts where the sandboxes run: a run's remote hosts, reached over ssh.

A workload's ``monitoring.hosts`` (or ``faasprof run --hosts INVENTORY [--hosts-group G]``) names an
ansible inventory (``inventory``) and its group of hosts (default ``openwhisk_invokers``). On each
host faasprof runs the monitoring block's collectors that the host supports, its own check deciding
(``agent.py``, shipped over ssh: nothing of faasprof is installed there; the tools perf, blktrace and
pqos run under it, ``toolrun.py``), a ``required`` one that a host cannot run stopping the run
before it starts, and writes their rows under
``monitors/<host>/<collector>/`` as they arrive, with ``monitors/<host>/host.json``
(``faasprof.rundir.hosts``: written at the start, when the host is lost, and at the end) and the
manifest's ``hosts``.

* ``inventory``: the inventory read (``read_inventory``, ``Host``);
* ``ssh``: the ssh command and the agent's code;
* ``toolrun``: the tool collectors on a host (their check and command line from ``faasprof.monitoring.tools``);
* ``session``: one host's session (``HostSession``);
* ``clock``: a host's clock offset from ssh round trips;
* here: the hosts of a run together (``RemoteHosts``): all reached before the run starts (one line
  naming the unreachable host otherwise), started, watched (a lost host is a warning; the run goes
  on), stopped, recorded.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from faasprof import rundir
from faasprof.errors import ConfigError, NotReadyError
from faasprof.monitoring.collectors import REGISTRY, normalise_block
from faasprof.monitoring.hosts.dockerwatch import NAME as CONTAINERS
from faasprof.monitoring.hosts.inventory import DEFAULT_GROUP, Host, read_inventory
from faasprof.monitoring.hosts.session import HostSession


@dataclass(frozen=True)
class HostsOption:
    """Which hosts a run measures: an inventory and its group."""

    inventory: Path
    group: str = DEFAULT_GROUP


def hosts_option(monitoring: dict, origin: str, base_dir: Path | None) -> HostsOption | None:
    """The workload's ``monitoring.hosts`` (a path, or ``{"inventory": path, "group": G}``), its
    relative path taken from the workload's folder; None when absent."""
    value = (monitoring or {}).get("hosts")
    if value in (None, False):
        return None
    if isinstance(value, str):
        value = {"inventory": value}
    if not isinstance(value, dict) or not isinstance(value.get("inventory"), str):
        raise ConfigError(
            f'{origin}: monitoring.hosts: give the inventory\'s path, or {{"inventory": PATH, "group": GROUP}}'
        )
    path = Path(os.path.expanduser(value["inventory"]))
    if not path.is_absolute() and base_dir is not None:
        path = base_dir / path
    return HostsOption(path, str(value.get("group") or DEFAULT_GROUP))


class RemoteHosts:
    """The hosts of one run (the module docstring says what it does with them)."""

    def __init__(self, hosts: list[Host], collectors: dict[str, dict], duration_s: float):
        self.sessions = [HostSession(host, collectors, duration_s) for host in hosts]
        self.zero_ns: int | None = None
        self.run_dir: Path | None = None
        self.reported: set[str] = set()

    @classmethod
    def for_workload(
        cls, option: HostsOption, monitoring: dict, duration_s: float, origin: str, allow_ssh_commands: bool = False
    ) -> "RemoteHosts":
        """The inventory read and checked; ConfigError when there is nothing to run on the hosts.
        ``allow_ssh_commands``: the user allowed ssh options that run a local command."""
        collectors = normalise_block(monitoring)
        if not collectors:
            raise ConfigError(
                f"{origin}: monitoring.hosts: no collector to run on the hosts; add vmstat or cgroups to the monitoring block"
            )
        hosts = read_inventory(
            option.inventory, option.group, reserved=(*REGISTRY, CONTAINERS), allow_ssh_commands=allow_ssh_commands
        )
        return cls(hosts, collectors, duration_s)

    def _each(self, action: Callable[[HostSession], object]) -> list:
        """``action`` on every host at once (one slow host does not delay the others); the results
        or exceptions, in the hosts' order."""

        def guarded(session: HostSession):
            try:
                return action(session)
            except Exception as error:  # handed back to the caller, which decides
                return error

        with ThreadPoolExecutor(max_workers=max(1, len(self.sessions))) as pool:
            return list(pool.map(guarded, self.sessions))

    def connect(self) -> list[str]:
        """Every host reached (ssh, the agent's hello); NotReadyError naming the first that is not,
        in one line. Returns a line per host: what it is, what it runs, what it skips."""
        results = self._each(HostSession.connect)
        failures = [result for result in results if isinstance(result, Exception)]
        if failures:
            self.close()
            first = failures[0]
            if not isinstance(first, NotReadyError):
                raise first
            more = [s.name for s, r in zip(self.sessions, results) if isinstance(r, Exception)][1:]
            raise NotReadyError(str(first) + (f" (also unreachable: {', '.join(more)})" if more else ""))
        self._refuse_required_skipped()
        return [self._summary(session) for session in self.sessions]

    def _refuse_required_skipped(self) -> None:
        """A ``required`` collector that a host cannot run stops the run before it starts (one line)."""
        for session in self.sessions:
            for name, reason in session.skipped.items():
                if session.wanted.get(name, {}).get("required"):
                    self.close()
                    raise NotReadyError(
                        f"hosts: {session.name}: monitoring.{name}: required but unavailable there: {reason}"
                    )

    @staticmethod
    def _summary(session: HostSession) -> str:
        facts = session.facts
        runs = [name for name in session.wanted if name not in session.skipped]
        runs += [CONTAINERS] if session.containers and CONTAINERS not in session.skipped else []
        text = f"host {session.name} ({facts.get('kernel')}, {facts.get('cpus')} CPUs): {', '.join(runs) or 'nothing'}"
        return text + "".join(f"; skipped {reason}" for reason in session.skipped.values())

    def start(self, run_dir: Path) -> None:
        """Every host started (at once), and its ``host.json`` written: a run cut short (faasprof
        killed) still says what each host is and its offset."""
        self.run_dir = run_dir
        self._each(lambda session: session.start(run_dir))
        self._write_all()

    def _write(self, session: HostSession) -> None:
        if self.run_dir is not None:
            rundir.write_host_info(self.run_dir, session.name, session.describe(self.zero_ns))

    def _write_all(self) -> None:
        for session in self.sessions:
            self._write(session)

    def set_zero(self, zero_ns: int) -> None:
        """The run's monotonic zero: the clock's exchanges and a host's loss are placed on the run's
        axis from here (``host.json`` written again with them)."""
        self.zero_ns = zero_ns
        self._write_all()

    def check(self, warn: Callable[[str], None]) -> None:
        """A host lost since the last check is said once; the run goes on with the others."""
        for session in self.sessions:
            if session.alive() or session.name in self.reported:
                continue
            self.reported.add(session.name)
            self._write(session)
            warn(f"host {session.name} lost ({session.lost_reason}); the run goes on with the other hosts")

    def stop(self) -> None:
        """Every host stopped (at once), then its ``host.json`` written."""
        self._each(HostSession.stop)
        self._write_all()

    def close(self) -> None:
        """Every session ended, whatever state it is in (pre-flight failed, or a failure unwound)."""
        for session in self.sessions:
            session.close()

    def manifest_entry(self) -> dict:
        """The manifest's ``hosts``: each host's ``host.json`` with its collectors by name only."""
        entry = {}
        for session in self.sessions:
            entry[session.name] = rundir.manifest_entry(session.describe(self.zero_ns))
        return entry
