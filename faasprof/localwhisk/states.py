"""A sandbox's states and how an activation found its sandbox, as str-valued enums: their values
are what the pool's status, the log and the records (``containerState``) show."""

from __future__ import annotations

from enum import Enum


class SandboxState(str, Enum):
    """Where a sandbox is in its life; the value is what ``GET /localwhisk/v1/pool`` and the log show."""

    STARTING = "starting"
    PREWARM = "prewarm"  # a stem cell: started, no action yet
    BUSY = "busy"
    IDLE = "idle"  # warm, free, not yet paused
    PAUSED = "paused"
    REMOVING = "removing"
    DEAD = "dead"

    def __str__(self) -> str:
        return self.value


class StartKind(str, Enum):
    """How an activation found its sandbox: the record's ``containerState`` annotation."""

    COLD = "cold"  # created for it
    RECREATED = "recreated"  # created for it after idle ones were removed to make room
    PREWARMED = "prewarmed"  # a stem cell of its kind and memory
    WARM = "warm"  # idle and unpaused
    RESUMED = "resumed"  # paused, resumed for it

    def __str__(self) -> str:
        return self.value

    @property
    def creates(self) -> bool:
        """Whether the sandbox is created for this activation (and so started inside its waitTime)."""
        return self in (StartKind.COLD, StartKind.RECREATED)
