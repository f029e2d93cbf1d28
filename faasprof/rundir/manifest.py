"""``manifest.json``: the typed ``Manifest`` every writer builds and every reader gets.

A writer starts from ``new_manifest`` (a run) or ``study_manifest`` (a study's folder), changes its
fields and writes it with ``write_manifest``; ``update_manifest`` changes a few top-level keys of
one on disk. A reader calls ``read_manifest``, which rejects a damaged file, an unknown format
version and a folder of another kind (below) in one line each.

``clock`` holds the run's one wall-clock anchor (``wall_ns`` read at ``monotonic_ns``), so
``wall_ns(t) = clock.wall_ns + (t - (clock.monotonic_ns - clock.monotonic_zero_ns))``; in practice
the invoker takes the anchor at the zero itself, so ``wall_ns(t) = clock.wall_ns + t``.

Format versions of a run directory (``FORMAT_VERSION``):
  1: first version.
  2: adds ``plan.bin`` and the send journal ``sends.csv``, and the outcomes ``unanswered`` and
     ``unrecorded`` of rows reconstructed for a torn run (``faasprof.rundir.plan``). Version 1
     runs are still read; a torn one is counted from the manifest, until ``faasprof analyze``
     re-derives its plan from the manifest's resolved workload and seed and saves it.

Kinds: a study that writes a folder of its own (``faasprof mpki``, ``faasprof slowdown``) writes a
manifest there too, with its ``kind`` and the study's own format version. A manifest without
``kind`` is a run's (every run directory written before the key existed). ``read_manifest`` reads
a run's unless the caller names another kind, so a study's folder passed where a run directory is
expected is refused with what to do instead.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import time
from dataclasses import MISSING, dataclass, field, fields
from enum import Enum
from pathlib import Path
from typing import Any

from faasprof import __version__
from faasprof.errors import ConfigError, FolderKindError, FormatError
from faasprof.paths import CHECKOUT_ROOT
from faasprof.rundir.hosts import HostInfo, host_infos, hosts_by_name
from faasprof.rundir.layout import MANIFEST, manifest_path, write_json_atomic

FORMAT_VERSION = 2
SUPPORTED_FORMAT_VERSIONS = (1, 2)


class RunStatus(str, Enum):
    """A run's ``status`` in its manifest: ``running`` until it ends, then how it ended. A ``str``
    so that the manifest's JSON and comparisons with the text stay as they were."""

    RUNNING = "running"
    COMPLETE = "complete"  # every planned invocation sent and answered or timed out
    INTERRUPTED = "interrupted"  # stopped early: Ctrl-C/SIGTERM, a dead platform or collector, a failure
    ABORTED = "aborted"  # stopped by the abort threshold, or a write that failed (a full disk)

    def __str__(self) -> str:  # the value in f-strings on every Python (3.11 formats a mixin by name)
        return self.value


STATUSES = tuple(status.value for status in RunStatus)
# ``platform.kind`` of a ``faasprof native`` run: no platform, so no activation records; its rows
# are the results (``activation_id`` holds the worker call's label).
NATIVE_PLATFORM_KIND = "native"
# The ``distribution`` of a native run's instance: each worker calls again when answered, so a
# rate is achieved, never offered.
CLOSED_LOOP = "closed-loop"

RUN = "run"
# Every kind of folder that holds a manifest, and what to do with one (``{dir}``: the folder).
KINDS = {
    RUN: "read it with `faasprof analyze {dir}`",
    "mpki": "its runs are in {dir}/runs/: pass one of those, or recompute its table with `faasprof mpki --from-runs {dir}/runs/*`",
    "slowdown": "its results are slowdown.csv and calls.csv in it, as `faasprof slowdown` wrote them",
}


class ClockAnchor:
    """The run's monotonic zero and its one wall-clock anchor, read back to back."""

    def __init__(self, monotonic_zero_ns: int | None = None, wall_ns: int | None = None):
        if monotonic_zero_ns is None:
            monotonic_zero_ns = time.monotonic_ns()
            wall_ns = time.time_ns()
        self.monotonic_zero_ns = int(monotonic_zero_ns)
        self.wall_ns = int(wall_ns if wall_ns is not None else time.time_ns())

    def since_zero_ns(self, monotonic_ns: int | None = None) -> int:
        return (time.monotonic_ns() if monotonic_ns is None else monotonic_ns) - self.monotonic_zero_ns

    def wall_ns_at(self, since_zero_ns: int) -> int:
        return self.wall_ns + int(since_zero_ns)

    def to_json(self) -> dict[str, int]:
        return {"monotonic_zero_ns": self.monotonic_zero_ns, "wall_ns_at_zero": self.wall_ns}

    @classmethod
    def from_json(cls, data: dict[str, int]) -> "ClockAnchor":
        return cls(data["monotonic_zero_ns"], data["wall_ns_at_zero"])


def git_commit() -> str | None:
    """The commit of the faasprof checkout, read from .git without running git."""
    if CHECKOUT_ROOT is None:
        return None
    git_dir = CHECKOUT_ROOT / ".git"
    try:
        head = (git_dir / "HEAD").read_text().strip()
        if head.startswith("ref: "):
            ref = head[5:]
            ref_path = git_dir / ref
            if ref_path.exists():
                return ref_path.read_text().strip()
            packed = git_dir / "packed-refs"
            if packed.exists():
                for line in packed.read_text().splitlines():
                    if line.endswith(" " + ref):
                        return line.split()[0]
            return None
        return head
    except OSError:
        return None


# Top-level manifest keys the typed Manifest names; everything else is kept in ``extra``.
_DICT_FIELDS = ("faasprof", "clock", "workload", "counts", "platform", "host", "tools", "invoker")
_OPTIONAL_DICT_FIELDS = (
    "local_settings",
    "verdict",
    "sweep_point",
    "activations",
    "allocation",
    "native",
    "latency_reference",
    "scripts",
)
_TEXT_FIELDS = ("status_reason", "created_utc", "finished_utc", "analysis_error")


@dataclass
class Manifest:
    """``manifest.json`` typed: what every writer changes and every reader of a run directory uses.

    Sub-blocks that carry their own schema (the resolved workload, the platform's ``GET /``, host
    metadata) stay dicts. ``monitors`` is always ``{name: description}`` whatever the file holds
    (the invoker writes a list of collector descriptions, each with its ``name``; ``to_json``
    writes that list). Keys this version does not name are kept in ``extra``. ``to_json`` gives
    the file's dict: the keys it held, in its order, then the fields set since.
    """

    format_version: int
    test_name: str | None
    status: str | None  # one of STATUSES (None: not recorded)
    kind: str = RUN  # one of KINDS
    clock: dict = field(default_factory=dict)
    workload: dict = field(default_factory=dict)
    counts: dict = field(default_factory=dict)
    platform: dict = field(default_factory=dict)
    host: dict = field(default_factory=dict)
    tools: dict = field(default_factory=dict)
    faasprof: dict = field(default_factory=dict)
    invoker: dict = field(default_factory=dict)
    monitors: dict[str, dict] = field(default_factory=dict)
    hosts: dict[str, dict] = field(
        default_factory=dict
    )  # remote hosts measured: {host: its host.json, collectors by name}
    warnings: list = field(default_factory=list)
    status_reason: str | None = None
    created_utc: str | None = None
    finished_utc: str | None = None
    analysis_error: str | None = None
    local_settings: dict | None = None
    verdict: dict | None = None
    sweep_point: dict | None = None
    activations: dict | None = None
    allocation: dict | None = None
    native: dict | None = None
    latency_reference: dict | None = (
        None  # {function: reference latency}: a capacity probe's (analyzer.stats rule 2(d))
    )
    scripts: dict | None = None
    extra: dict = field(default_factory=dict)
    _keys: list = field(default_factory=list, repr=False, compare=False)  # top-level keys in file order, then as set

    @classmethod
    def from_json(cls, data: Any, path: str | os.PathLike = MANIFEST) -> "Manifest":
        """Validate a manifest's JSON dict and type it (``FormatError`` naming the field)."""
        if not isinstance(data, dict):
            raise FormatError(f"{path}: not a JSON object; the file is not a faasprof manifest")
        kind = data.get("kind", RUN)
        if not isinstance(kind, str):
            raise FormatError(f"{path}: kind {kind!r} is not text (one of {', '.join(KINDS)}); the manifest is damaged")
        if kind not in KINDS:
            raise FormatError(
                f"{path}: kind {kind!r} is not one faasprof {__version__} knows ({', '.join(KINDS)}); upgrade faasprof to read it"
            )
        if kind == RUN:
            check_format_version(path, data)
        elif not isinstance(data.get("format_version"), int):
            raise FormatError(
                f"{path}: format_version {data.get('format_version')!r} is not an integer; the manifest is damaged"
            )
        status = data.get("status")
        if status is not None and not isinstance(status, str):
            raise FormatError(
                f"{path}: status {status!r} is not text (one of {', '.join(STATUSES)}); the manifest is damaged"
            )
        values: dict[str, Any] = {
            "format_version": int(data["format_version"]),
            "status": status,
            "kind": kind,
            "test_name": None if data.get("test_name") is None else str(data["test_name"]),
        }
        for name in _DICT_FIELDS:
            value = data.get(name)
            if value is not None and not isinstance(value, dict):
                raise FormatError(
                    f"{path}: {name} is {type(value).__name__}, expected an object; the manifest is damaged"
                )
            values[name] = value or {}
        for name in _OPTIONAL_DICT_FIELDS:
            value = data.get(name)
            if value is not None and not isinstance(value, dict):
                raise FormatError(
                    f"{path}: {name} is {type(value).__name__}, expected an object; the manifest is damaged"
                )
            values[name] = value
        for name in _TEXT_FIELDS:
            value = data.get(name)
            values[name] = None if value is None else str(value)
        clock = values["clock"]
        for key in ("monotonic_zero_ns", "wall_ns_at_zero"):
            if key in clock and not (isinstance(clock[key], int) and not isinstance(clock[key], bool)):
                raise FormatError(
                    f"{path}: clock.{key} is {clock[key]!r}, expected integer nanoseconds; the manifest is damaged"
                )
        values["monitors"] = monitors_by_name(data.get("monitors"), path)
        values["hosts"] = hosts_by_name(data.get("hosts"), path)
        warnings = data.get("warnings")
        values["warnings"] = list(warnings) if isinstance(warnings, list) else []
        values["extra"] = {k: v for k, v in data.items() if k not in _NAMED}
        return cls(**values, _keys=list(data))

    def __setattr__(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)
        keys = self.__dict__.get("_keys")  # absent while __init__ runs
        if keys is not None and name in _NAMED and name not in keys:
            keys.append(name)

    def to_json(self) -> dict:
        """The manifest as ``manifest.json`` holds it: a field is written when the file held its
        key, it was set since, or it no longer has its default; ``monitors`` as the list of
        descriptions. Keys in the file's order, then in the order they were set."""
        named: dict[str, Any] = {}
        for spec in fields(self):
            if spec.name in ("extra", "_keys"):
                continue
            value = getattr(self, spec.name)
            if spec.name in self._keys or value != _default(spec):
                named[spec.name] = list(value.values()) if spec.name == "monitors" else value
        named.update(self.extra)
        ordered = {key: named[key] for key in self._keys if key in named}
        ordered.update((key, value) for key, value in named.items() if key not in ordered)
        return ordered

    def update(self, keys: dict | None = None, /, **more: Any) -> None:
        """Set top-level keys as ``dict.update`` does: a key the manifest names sets its field
        (``monitors`` as a list of descriptions or by name), any other goes to ``extra``."""
        for key, value in {**(keys or {}), **more}.items():
            if key in _NAMED:
                setattr(self, key, monitors_by_name(value) if key == "monitors" else value)
            else:
                self.extra[key] = value
                if key not in self._keys:
                    self._keys.append(key)

    @property
    def wall_ns_at_zero(self) -> int:
        """Wall-clock ns at the run's monotonic zero (0 when the run recorded no clock)."""
        return int(self.clock.get("wall_ns_at_zero", 0))

    @property
    def monotonic_zero_ns(self) -> int | None:
        value = self.clock.get("monotonic_zero_ns")
        return None if value is None else int(value)

    @property
    def host_infos(self) -> dict[str, HostInfo]:
        """The remote hosts the run measured (``hosts``), typed, by name ({}: none)."""
        return host_infos(self.hosts)

    @property
    def local_host_name(self) -> str:
        """The name of the machine that ran ``faasprof run``: its ``host.hostname`` as recorded,
        else ``local`` (what the frames' ``host`` column calls it:
        ``faasprof.monitoring.frames.local_host_label``)."""
        name = self.host.get("hostname")
        return name if isinstance(name, str) and name else "local"

    @property
    def native_run(self) -> bool:
        """A ``faasprof native`` run (``NATIVE_PLATFORM_KIND``): there are no records to join or fetch."""
        return self.platform.get("kind") == NATIVE_PLATFORM_KIND

    @property
    def instances(self) -> dict[str, dict]:
        """The resolved workload's instances by name (a list of instances, as ``faasprof native``
        writes, by each one's ``name``)."""
        instances = self.workload.get("instances")
        if isinstance(instances, list):
            return {item.get("name", f"i{k}"): item for k, item in enumerate(instances) if isinstance(item, dict)}
        return instances if isinstance(instances, dict) else {}

    @property
    def planned(self) -> int | None:
        """The planned count the invoker recorded (None when unknown)."""
        planned = self.counts.get("planned")
        return int(planned) if isinstance(planned, int) and not isinstance(planned, bool) and planned > 0 else None


_NAMED = frozenset(spec.name for spec in fields(Manifest)) - {"extra", "_keys"}


def _default(spec) -> Any:
    """A field's value when the file does not hold its key (None for the required ones)."""
    if spec.default_factory is not MISSING:
        return spec.default_factory()
    return None if spec.default is MISSING else spec.default


def monitors_by_name(monitors: Any, path: str | os.PathLike = MANIFEST) -> dict[str, dict]:
    """``monitors`` as ``{name: description}``: the invoker writes a list of descriptions, each
    with its ``name``; a dict by name (older files) is read as it is."""
    if monitors is None:
        return {}
    if isinstance(monitors, dict):
        return {
            str(name): dict(value, name=str(name)) if isinstance(value, dict) else {"name": str(name)}
            for name, value in monitors.items()
        }
    if isinstance(monitors, list):
        out = {}
        for entry in monitors:
            if isinstance(entry, dict) and isinstance(entry.get("name"), str):
                out[entry["name"]] = entry
        return out
    raise FormatError(
        f"{path}: monitors is {type(monitors).__name__}, expected a list of monitor descriptions; the manifest is damaged"
    )


def new_manifest(test_name: str, workload: dict, clock: ClockAnchor, **extra: Any) -> Manifest:
    """A run's manifest in state ``running``; ``extra`` sets further keys (``platform``, ``host``,
    ``tools``, ``monitors`` as a list of descriptions, ...)."""
    data: dict[str, Any] = {
        "format_version": FORMAT_VERSION,
        "kind": RUN,
        "test_name": test_name,
        "status": RunStatus.RUNNING,
        "created_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "faasprof": {"version": __version__, "git_commit": git_commit()},
        "clock": clock.to_json(),
        "workload": workload,
        "counts": {"planned": 0, "sent": 0, "failed": 0},
    }
    data.update(extra)
    return Manifest.from_json(data)


def study_manifest(kind: str, format_version: int, **keys: Any) -> Manifest:
    """The manifest of a study's own folder (``kind`` one of ``KINDS``; the study's format version)."""
    if kind not in KINDS or kind == RUN:
        raise ValueError(f"{kind!r} is no study kind; add it to faasprof.rundir.manifest.KINDS")
    return Manifest.from_json({"format_version": format_version, "kind": kind, **keys})


def write_manifest(run_dir: str | os.PathLike, manifest: Manifest) -> None:
    """``manifest.json``, through a temporary file and a rename."""
    write_json_atomic(manifest_path(run_dir), manifest.to_json())


def read_manifest(run_dir: str | os.PathLike, kind: str | None = RUN) -> Manifest:
    """The folder's typed manifest (read once by a reader and passed on).

    ``kind`` is the folder the caller expects (a run directory unless it says otherwise; None:
    any): another kind raises ``FolderKindError`` saying what the folder is and what to do with
    it. ``FormatError`` for a missing or damaged file, an unknown format version or a field of the
    wrong type; ``ConfigError`` for a path that is not a directory.
    """
    path = manifest_path(run_dir)
    if not Path(run_dir).is_dir():
        raise ConfigError(f"{run_dir}: not a directory; pass a run directory (runs/<test>-<stamp>)")
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except FileNotFoundError:
        raise FormatError(f"{path}: missing; {run_dir} is not a faasprof run directory") from None
    except json.JSONDecodeError as error:
        raise FormatError(f"{path}: not valid JSON ({error.msg} at line {error.lineno})") from None
    found = data.get("kind", RUN) if isinstance(data, dict) else RUN
    if kind is not None and found != kind and isinstance(found, str) and found in KINDS:
        raise FolderKindError(
            f"{run_dir} is {_named(found)}, not {_named(kind)} (its manifest says kind {found!r}); {KINDS[found].format(dir=run_dir)}"
        )
    return Manifest.from_json(data, path)


def _named(kind: str) -> str:
    return "a run directory" if kind == RUN else f"a `faasprof {kind}` folder"


def check_format_version(path: str | os.PathLike, data: dict) -> None:
    version = data.get("format_version") if isinstance(data, dict) else None
    if version not in SUPPORTED_FORMAT_VERSIONS:
        raise FormatError(
            f"{path}: format_version {version!r} is not supported by faasprof {__version__} "
            f"(it reads {', '.join(map(str, SUPPORTED_FORMAT_VERSIONS))}); upgrade faasprof to read this run"
        )


def update_manifest(run_dir: str | os.PathLike, **changes: Any) -> Manifest:
    """Read a run's manifest, change top-level keys, write it back atomically; returns it."""
    manifest = read_manifest(run_dir)
    manifest.update(changes)
    write_manifest(run_dir, manifest)
    return manifest
