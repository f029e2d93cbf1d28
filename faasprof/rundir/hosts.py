"""``monitors/<host>/``: a remote host's collectors and its ``host.json``.

A run that measures other hosts (the invokers of a deployed OpenWhisk) keeps, beside the local
collectors' ``monitors/<collector>/``, one directory per remote host, named as its inventory names
it::

    monitors/<host>/host.json          the host: kernel, CPU, collectors started and skipped, its
                                       clock offset to the invoker's, ok or lost (below)
    monitors/<host>/<collector>/       what a local collector's directory holds; its meta.json's
                                       anchors were read on that host's clocks

A directory under ``monitors/`` that holds ``host.json`` is a host's; any other is a local
collector's (``monitor_dirs`` lists those only). The engine writes the file with
``write_host_json`` (as given) or ``write_host_info`` (checked first, as a reader checks it);
``read_host_json`` gives it as a dict, ``read_host_info`` typed (``HostInfo``).

``host.json`` (``HOST_FORMAT_VERSION`` 1; a reader rejects any other in one line)::

    {"format_version": 1, "host": "h1", "address": "127.0.0.1", "port": 2222,
     "kernel": "...", "cpu_model": "...", "cpus": 16,
     "collectors": {"vmstat": {<the collector's describe()>}, ...},
     "skipped": {"rdt": "why not, on that host"},
     "clock": {"offset_ns_start": int, "uncertainty_ns_start": int,
               "offset_ns_end": int | null, "uncertainty_ns_end": int | null, "method": "..."},
     "status": "ok" | "lost", "lost_reason": null | "one line", "lost_at_ns": null | int}

The offset is the host's ``CLOCK_REALTIME`` minus the invoker's, in ns; its uncertainty half the
round trip of the exchange that measured it. A host lost before an exchange has null there: its
samples cannot be placed without the start one. ``lost_at_ns`` is on the run axis (ns since the run's
monotonic zero). The manifest's ``hosts`` holds the same object per host, with the collectors'
names instead of their descriptions.

Placing a remote wall-clock time on the run axis (``HostClock.run_ns``): ``run_ns = remote_wall_ns
- offset(t) - wall_ns_at_zero``, where the offset is ``offset_ns_start`` when the end one is
missing, else interpolated linearly between the start one (measured at run time 0) and the end
one (measured when the run ended): the host's clock drifts. The optional ``clock.at_ns_start``
and ``clock.at_ns_end`` (run-axis ns of each exchange) move those two points when a writer
records them.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from faasprof.errors import ConfigError, FormatError
from faasprof.rundir.layout import MONITORS, make_private_dir, write_json_atomic

HOST_JSON = "host.json"
HOST_FORMAT_VERSION = 1
SUPPORTED_HOST_FORMAT_VERSIONS = (1,)
HOST_STATUSES = ("ok", "lost")
_HOST_NAME = re.compile(r"[A-Za-z0-9._-]+")


def check_host_name(host: str) -> None:
    """``ConfigError`` (one line) unless ``host`` can name a directory under ``monitors/``."""
    if not isinstance(host, str) or not _HOST_NAME.fullmatch(host) or host in (".", ".."):
        raise ConfigError(
            f"host name {host!r} cannot name a run directory's monitors/<host>/; "
            "rename it in the inventory to letters, digits, '.', '_' and '-' only"
        )


def _host_path(run_dir: str | os.PathLike, host: str) -> Path:
    check_host_name(host)
    return Path(run_dir) / MONITORS / host


def host_dir(run_dir: str | os.PathLike, host: str) -> Path:
    """``monitors/<host>/`` (created)."""
    return make_private_dir(_host_path(run_dir, host), exist_ok=True)


def host_monitor_dir(run_dir: str | os.PathLike, host: str, collector: str) -> Path:
    """``monitors/<host>/<collector>/`` (created): where host ``host``'s collector's raw output,
    logs and ``meta.json`` go, as a local collector's go to ``monitor_dir``."""
    if not _HOST_NAME.fullmatch(collector) or collector in (".", ".."):
        raise ConfigError(f"collector name {collector!r} cannot name a directory under monitors/{host}/")
    return make_private_dir(host_dir(run_dir, host) / collector, exist_ok=True)


def write_host_json(run_dir: str | os.PathLike, host: str, data: dict[str, Any]) -> Path:
    """``monitors/<host>/host.json``, written atomically with its ``format_version`` (the object
    as given: ``write_host_info`` checks it first)."""
    path = host_dir(run_dir, host) / HOST_JSON
    write_json_atomic(path, {"format_version": HOST_FORMAT_VERSION, **data})
    return path


def write_host_info(run_dir: str | os.PathLike, host: str, info: dict[str, Any]) -> Path:
    """``write_host_json`` of the object the module docstring shows (``host`` filled in when
    absent), checked as a reader checks it before anything is written, so that a writer cannot
    leave a file no reader takes."""
    data = {"host": host, **info}
    HostInfo.from_json({"format_version": HOST_FORMAT_VERSION, **data}, _host_path(run_dir, host) / HOST_JSON)
    return write_host_json(run_dir, host, data)


def read_host_json(directory: str | os.PathLike) -> dict | None:
    """A host folder's ``host.json`` as it is (None when the folder holds none: a local
    collector's); not JSON, or another format version, is a ``FormatError`` naming it and the fix."""
    path = Path(directory) / HOST_JSON
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except json.JSONDecodeError as error:
        raise FormatError(
            f"{path}: not valid JSON ({error.msg} at line {error.lineno}); faasprof was stopped while writing it"
        ) from None
    _check_version(data, path)
    return data


def _check_version(data: Any, path: str | os.PathLike) -> None:
    version = data.get("format_version") if isinstance(data, dict) else None
    if version not in SUPPORTED_HOST_FORMAT_VERSIONS or isinstance(version, bool):
        raise FormatError(
            f"{path}: format_version {version!r} is not {HOST_FORMAT_VERSION}; upgrade faasprof to read this run"
        )


def read_host_info(directory: str | os.PathLike) -> "HostInfo":
    """A host directory's ``host.json``, typed (``FormatError``, one line: missing, damaged,
    another format version, a field of the wrong type)."""
    path = Path(directory) / HOST_JSON
    data = read_host_json(directory)
    if data is None:
        raise FormatError(f"{path}: missing; {directory} is not a host's directory")
    info = HostInfo.from_json(data, path)
    if info.host != Path(directory).name:
        raise FormatError(
            f"{path}: host {info.host!r} is not its directory's name {Path(directory).name!r}; the file was moved"
        )
    return info


def is_host_dir(path: str | os.PathLike) -> bool:
    """Whether a directory under ``monitors/`` is a remote host's (it holds ``host.json``)."""
    return (Path(path) / HOST_JSON).is_file()


def host_dirs(run_dir: str | os.PathLike) -> dict[str, Path]:
    """``{host: monitors/<host>/}`` for every remote host of the run, by name."""
    base = Path(run_dir) / MONITORS
    if not base.is_dir():
        return {}
    return {path.name: path for path in sorted(base.iterdir()) if path.is_dir() and is_host_dir(path)}


def host_monitor_dirs(run_dir: str | os.PathLike, host: str) -> dict[str, Path]:
    """``{collector: monitors/<host>/<collector>/}`` for every collector that left a directory on
    host ``host``, by name."""
    base = _host_path(run_dir, host)
    if not base.is_dir():
        return {}
    return {path.name: path for path in sorted(base.iterdir()) if path.is_dir()}


def _integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True)
class HostClock:
    """A host's clock against the invoker's: offsets (host minus invoker, ns) and their
    uncertainties at the run's start and end (None: not measured, the host was lost before; a
    host without a start offset cannot have its samples placed)."""

    offset_ns_start: int | None
    uncertainty_ns_start: int | None
    offset_ns_end: int | None = None
    uncertainty_ns_end: int | None = None
    method: str | None = None
    at_ns_start: int | None = None  # run-axis ns of the start exchange (None: the run's zero)
    at_ns_end: int | None = None  # run-axis ns of the end exchange (None: the run's end)

    @classmethod
    def from_json(cls, data: Any, path: str | os.PathLike) -> "HostClock":
        if not isinstance(data, dict):
            raise FormatError(f"{path}: clock is {type(data).__name__}, expected an object; the file is damaged")
        if "offset_ns_start" not in data:
            raise FormatError(
                f"{path}: clock.offset_ns_start is missing (integer nanoseconds, or null); the file is damaged"
            )
        for key in (
            "offset_ns_start",
            "uncertainty_ns_start",
            "offset_ns_end",
            "uncertainty_ns_end",
            "at_ns_start",
            "at_ns_end",
        ):
            if data.get(key) is not None and not _integer(data[key]):
                raise FormatError(
                    f"{path}: clock.{key} is {data[key]!r}, expected integer nanoseconds or null; the file is damaged"
                )
        method = data.get("method")
        return cls(
            offset_ns_start=data.get("offset_ns_start"),
            uncertainty_ns_start=data.get("uncertainty_ns_start"),
            offset_ns_end=data.get("offset_ns_end"),
            uncertainty_ns_end=data.get("uncertainty_ns_end"),
            method=None if method is None else str(method),
            at_ns_start=data.get("at_ns_start"),
            at_ns_end=data.get("at_ns_end"),
        )

    @property
    def placeable(self) -> bool:
        """Whether the host's times can be placed on the run axis (its start offset was measured)."""
        return self.offset_ns_start is not None

    def _span(self, end_ns: int | None) -> tuple[int, int] | None:
        """The run-axis ns of the two exchanges, or None when the start offset holds throughout."""
        start_at = self.at_ns_start or 0
        end_at = self.at_ns_end if self.at_ns_end is not None else end_ns
        if self.offset_ns_start is None or self.offset_ns_end is None or end_at is None or end_at <= start_at:
            return None
        return start_at, end_at

    def rate(self, end_ns: int | None) -> float:
        """Run-axis ns per ns of the host's clock (1 without drift): scales an interval the host
        measured onto the run axis. ``end_ns`` as for ``run_ns``."""
        span = self._span(end_ns)
        if span is None or self.offset_ns_start is None or self.offset_ns_end is None:
            return 1.0
        elapsed = span[1] - span[0]
        return elapsed / (elapsed + self.offset_ns_end - self.offset_ns_start)

    def run_ns(self, remote_wall_ns: float, wall_ns_at_zero: int, end_ns: int | None) -> float:
        """A time read on the host's wall clock, as ns on the run axis. ``end_ns`` is the run's
        end on that axis (where the end offset was measured unless ``at_ns_end`` says); without
        it, or without an end offset, the start offset holds for the whole run. ``ValueError``
        without a start offset (``placeable``)."""
        if self.offset_ns_start is None:
            raise ValueError("the host's clock offset was never measured: its times cannot be placed")
        span = self._span(end_ns)
        if span is None:
            return remote_wall_ns - self.offset_ns_start - wall_ns_at_zero
        # Between the two exchanges the offset moves linearly, so the map from the host's wall
        # clock to the run axis is linear too: anchored at the start exchange, at the drift's rate.
        remote_start = wall_ns_at_zero + span[0] + self.offset_ns_start
        return span[0] + (remote_wall_ns - remote_start) * self.rate(end_ns)


@dataclass(frozen=True)
class HostInfo:
    """``host.json`` (or the manifest's entry for a host) typed; ``data`` is the object as read."""

    host: str
    clock: HostClock
    status: str
    collectors: tuple[str, ...]
    skipped: dict[str, str] = field(default_factory=dict)
    lost_reason: str | None = None
    lost_at_ns: int | None = None
    kernel: str | None = None
    cpu_model: str | None = None
    cpus: int | None = None
    address: str | None = None
    data: dict = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_json(cls, data: Any, path: str | os.PathLike) -> "HostInfo":
        """Validate one host's object (``FormatError`` naming the file and the field)."""
        if not isinstance(data, dict):
            raise FormatError(f"{path}: not a JSON object; the file is damaged")
        _check_version(data, path)
        host = data.get("host")
        if not isinstance(host, str) or not _HOST_NAME.fullmatch(host):
            raise FormatError(f"{path}: host is {host!r}, expected the inventory's host name; the file is damaged")
        status = data.get("status")
        if status not in HOST_STATUSES:
            raise FormatError(
                f"{path}: status is {status!r}, expected one of {', '.join(HOST_STATUSES)}; the file is damaged"
            )
        lost_at = data.get("lost_at_ns")
        if lost_at is not None and not _integer(lost_at):
            raise FormatError(
                f"{path}: lost_at_ns is {lost_at!r}, expected integer nanoseconds or null; the file is damaged"
            )
        collectors = data.get("collectors") or {}
        if not isinstance(collectors, (dict, list)) or not all(isinstance(name, str) for name in collectors):
            raise FormatError(f"{path}: collectors is {collectors!r}, expected collector names; the file is damaged")
        skipped = data.get("skipped") or {}
        if not isinstance(skipped, dict):
            raise FormatError(f"{path}: skipped is {type(skipped).__name__}, expected an object; the file is damaged")
        cpus = data.get("cpus")
        return cls(
            host=host,
            clock=HostClock.from_json(data.get("clock"), path),
            status=status,
            collectors=tuple(collectors),
            skipped={str(k): str(v) for k, v in skipped.items()},
            lost_reason=None if data.get("lost_reason") is None else str(data["lost_reason"]),
            lost_at_ns=lost_at,
            kernel=None if data.get("kernel") is None else str(data["kernel"]),
            cpu_model=None if data.get("cpu_model") is None else str(data["cpu_model"]),
            cpus=cpus if _integer(cpus) else None,
            address=None if data.get("address") is None else str(data["address"]),
            data=data,
        )

    def collector_description(self, collector: str) -> dict:
        """What ``host.json`` says of one of the host's collectors ({} when only its name)."""
        collectors = self.data.get("collectors")
        entry = collectors.get(collector) if isinstance(collectors, dict) else None
        return entry if isinstance(entry, dict) else {}


def manifest_entry(info: dict[str, Any]) -> dict[str, Any]:
    """A host's ``host.json`` object as the manifest's ``hosts`` holds it: the collectors' names
    instead of their descriptions."""
    return {**info, "collectors": sorted(info.get("collectors") or {})}


def hosts_by_name(hosts: Any, path: str | os.PathLike) -> dict[str, dict]:
    """The manifest's ``hosts`` checked (each entry as ``HostInfo`` reads it, named as its key)."""
    if hosts is None:
        return {}
    if not isinstance(hosts, dict):
        raise FormatError(
            f"{path}: hosts is {type(hosts).__name__}, expected an object by host name; the manifest is damaged"
        )
    for name, entry in hosts.items():
        # The entry may leave out what its key and the manifest's own version already say.
        filled = {"format_version": HOST_FORMAT_VERSION, "host": name, **entry} if isinstance(entry, dict) else entry
        info = HostInfo.from_json(filled, f"{path}: hosts.{name}")
        if info.host != name:
            raise FormatError(f"{path}: hosts.{name}.host is {info.host!r}, not its key; the manifest is damaged")
    return {str(name): entry for name, entry in hosts.items()}


def host_infos(hosts: dict[str, dict]) -> dict[str, HostInfo]:
    """The manifest's ``hosts`` (as ``hosts_by_name`` checked them) typed, by name."""
    return {
        name: HostInfo.from_json({"format_version": HOST_FORMAT_VERSION, "host": name, **entry}, name)
        for name, entry in hosts.items()
    }
