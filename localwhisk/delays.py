"""Control-plane delays: an optional model of the time OpenWhisk's invoker spends around an activation.

localwhisk starts, resumes and frees its sandboxes in microseconds to milliseconds. OpenWhisk's
invoker drives every container through the Docker CLI (``docker run``/``inspect`` for a cold start,
``docker unpause`` for a resume, ``docker pause`` and log collection around each activation) and
passes each activation through its message bus: on a quiet 2-core host its cold starts wait
~0.3 s and its resumes ~50 ms longer than localwhisk's process sandboxes, and ~50 and ~35 ms
longer than localwhisk's Docker sandboxes (docs/localwhisk-vs-openwhisk.md). The model moves the
start latencies; it does not bring capacity down to OpenWhisk's (see the document).

The model adds three fixed delays (milliseconds), off unless the ``control_plane`` setting names
them. Each is spent after the sandbox was chosen, so it holds the sandbox as OpenWhisk's container
is held, and it falls inside the record's ``waitTime`` as OpenWhisk's does:

* ``cold``: before a new sandbox's ``/init`` (container creation): inside ``waitTime``;
* ``resumed``: before ``/run`` on a paused sandbox (unpause): inside ``waitTime``;
* ``warm``: before ``/run`` on a warm sandbox (the invoker's dispatch): inside ``waitTime``.

A spec is empty (off), a preset name (``PRESETS``: its values depend on the isolation, since
Docker sandboxes already pay part of what OpenWhisk's containers cost), or
``cold=MS,resumed=MS,warm=MS`` (missing keys are 0, whatever the isolation). Fixed delays, not distributions: the model moves medians and capacity, not tails.
"""

from __future__ import annotations

from dataclasses import dataclass

# Fitted to OpenWhisk 2.0.0 standalone on a quiet 2-core host (Docker CLI; log store reading the
# json log file; user memory 4096 MB; pause grace 50 ms): OpenWhisk's waitTime medians over two
# rounds of bench/bench_calibration.py less localwhisk's, per isolation, rounded to 5 ms (the
# figures: docs/localwhisk-vs-openwhisk.md). Warm stays 0: at its capacity OpenWhisk's warm
# waitTime was 3 ms; its sequential warm calls' pause race is no fixed delay.
PRESETS = {
    "openwhisk-2.0.0-standalone": {
        "process": {"cold": 310.0, "resumed": 50.0, "warm": 0.0},
        "docker": {"cold": 50.0, "resumed": 35.0, "warm": 0.0},
    },
}
KEYS = ("cold", "resumed", "warm")


@dataclass(frozen=True)
class Delays:
    cold_ms: float = 0.0
    resumed_ms: float = 0.0
    warm_ms: float = 0.0

    def __bool__(self) -> bool:
        return any((self.cold_ms, self.resumed_ms, self.warm_ms))

    def before_s(self, how: str) -> float:
        """Seconds to wait before the sandbox is used, for the pool's start state ``how``."""
        if how in ("cold", "recreated"):
            return self.cold_ms / 1000.0
        if how == "resumed":
            return self.resumed_ms / 1000.0
        return self.warm_ms / 1000.0  # warm, prewarmed (a prewarmed container still needs /init: no creation)


def parse(spec: str, docker: bool = False) -> Delays:
    """``""`` → no delays; a preset name (its values for Docker sandboxes when ``docker``, else
    for process sandboxes); or ``cold=650,resumed=95,warm=200``.

    Raises ValueError (one line naming the setting and the fix) for anything else.
    """
    spec = (spec or "").strip()
    if not spec:
        return Delays()
    if spec in PRESETS:
        values = PRESETS[spec]["docker" if docker else "process"]
    else:
        values = {}
        for part in spec.split(","):
            key, sep, text = part.partition("=")
            key = key.strip()
            if not sep or key not in KEYS:
                raise ValueError(
                    f"control_plane: {part.strip()!r} is neither a preset ({', '.join(PRESETS)}) nor KEY=MS with KEY one of {', '.join(KEYS)}"
                )
            try:
                value = float(text)
            except ValueError:
                value = -1.0
            if not value >= 0:
                raise ValueError(f"control_plane: {key}={text.strip()!r} must be a number of ms >= 0")
            values[key] = value
    return Delays(values.get("cold", 0.0), values.get("resumed", 0.0), values.get("warm", 0.0))
