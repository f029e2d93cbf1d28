"""``PlatformSet``: the platforms one run talks to, and the embedded localwhisk it may start.

One platform per endpoint the workload's instances use (``faasprof.platforms.registry``), each asked for
the instances it serves; when a platform ``reached_by_connection`` (OpenWhisk) is named by no
connection, the invoker starts the embedded localwhisk for it, its data kept in the run directory
(platforms and localwhisk stay apart, so starting it is the invoker's job).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from faasprof.errors import ConfigError, FaasprofError, NotReadyError
from faasprof.localwhisk.embedded import LocalwhiskHandle, start_embedded
from faasprof.localwhisk.run_records import EMBEDDED_DATA_DIR
from faasprof.platforms.base import Platform
from faasprof.progress import Progress

LOCALWHISK_STOP_TIMEOUT_S = 10.0
LOCALWHISK_DIR = EMBEDDED_DATA_DIR  # the embedded platform's data directory inside the run directory


class PlatformSet:
    """The platforms of this run, one per endpoint its instances use (``faasprof.platforms.registry``, in the
    table's order), each asked for the instances it serves, and the embedded localwhisk's handle
    when the run started one for a platform ``reached_by_connection`` (starting it is the invoker's
    job: platforms and localwhisk stay apart)."""

    def __init__(self) -> None:
        self.used: list[Platform] = []
        self.handle: LocalwhiskHandle | None = None  # the embedded localwhisk, when the run started one
        self.log_dir: Path | None = None
        self.actions: dict[str, str] = {}

    @property
    def embedded(self) -> bool:
        return self.handle is not None

    @property
    def info(self) -> dict:
        """What the first platform's ``check`` learnt (OpenWhisk's ``GET /``: limits, localwhisk)."""
        return self.used[0].info if self.used else {}

    def of(self, instance: Any) -> Platform:
        """The platform that serves ``instance``."""
        for platform in self.used:
            if platform.serves(instance):
                return platform
        raise ConfigError(
            f"instances.{instance.name}.endpoint: {instance.endpoint!r} names no platform faasprof can reach"
        )

    def describe(self) -> dict:
        """The manifest's ``platform`` block: the first platform's own description; one that hosts
        the functions adds whether the run started it (embedded) and what deploying did."""
        if not self.used:
            return {"kind": "none"}
        platform = self.used[0].describe()
        if not self.used[0].names_functions:
            return platform
        described = {
            "kind": "localwhisk" if self.embedded else platform.pop("kind"),
            "embedded": self.embedded,
            **{key: value for key, value in platform.items() if key not in ("kind", "localwhisk")},
            "actions": self.actions,
        }
        if self.embedded:
            described["localwhisk"] = getattr(self.handle, "settings", None) or self.info.get("localwhisk")
            # Its records and log live in the run directory: a crashed run's records are there.
            described["data_dir"] = LOCALWHISK_DIR
            described["log"] = f"{LOCALWHISK_DIR}/localwhisk.log"
        elif "localwhisk" in platform:
            described["localwhisk"] = platform["localwhisk"]
        return described

    def stop(self) -> None:
        for platform in self.used:
            try:
                platform.close()
            except Exception:
                pass
        if self.handle is not None:
            self.handle.stop(timeout_s=LOCALWHISK_STOP_TIMEOUT_S)


def start_embedded_platform(
    local_settings: dict | None, data_dir: Path, progress: Progress
) -> tuple[LocalwhiskHandle, Path]:
    """Start localwhisk with its data (records, logs) in ``data_dir``, inside the run directory,
    so that its records survive a crash of the invoker and ``analyze`` finds them."""
    settings = dict(local_settings or {})
    settings["data_dir"] = data_dir
    settings.setdefault("log_dir", data_dir)
    progress.say("starting the embedded localwhisk (no --apihost, platform block or ~/.wskprops names a platform)")
    try:
        handle = start_embedded(**settings)
    except FaasprofError:
        raise
    except Exception as error:
        raise NotReadyError(
            f"the embedded localwhisk did not start: {str(error).splitlines()[0] if str(error) else type(error).__name__}"
        ) from None
    return handle, Path(settings["log_dir"])


def _peak_per_minute(intended_ns: np.ndarray) -> int:
    if intended_ns.size == 0:
        return 0
    return int(np.bincount(intended_ns // 60_000_000_000).max())


def limit_warnings(platform: PlatformSet, schedule: Any) -> list[str]:
    limits = (platform.info or {}).get("limits") or {}
    warnings = []
    per_minute = limits.get("actions_per_minute")
    peak = _peak_per_minute(schedule.intended_ns)
    if isinstance(per_minute, (int, float)) and peak > per_minute:
        warnings.append(
            f"the platform allows {per_minute} invocations per minute and this schedule sends up to {peak} in one minute: "
            "expect throttled (429) rows; raise the platform's limit (localwhisk: faasprof local start --help; OpenWhisk: limit_invocations_per_minute)"
        )
    return warnings


__all__ = ["LOCALWHISK_DIR", "PlatformSet", "limit_warnings", "start_embedded_platform"]
