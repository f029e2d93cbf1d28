"""A host's clock against the invoker's: offset and uncertainty from ssh round trips.

One exchange: the invoker reads its wall clock and its monotonic clock, asks the host for its
wall clock, and reads its monotonic clock again when the answer arrives. The host read its clock
somewhere within the round trip; taking the midpoint errs by at most half the round trip, so the
exchange with the shortest round trip of N gives the estimate and its uncertainty
(``offset = host's CLOCK_REALTIME - the invoker's``, in ns).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

EXCHANGES = 8
METHOD = f"ssh round trip midpoint, best of {EXCHANGES}"


@dataclass(frozen=True)
class Exchange:
    """One round trip: the invoker's wall and monotonic clocks when it asked, the round trip
    (monotonic), and the host's wall clock as it answered."""

    local_wall_ns: int
    round_trip_ns: int
    remote_wall_ns: int
    local_monotonic_ns: int = 0


@dataclass(frozen=True)
class Offset:
    offset_ns: int
    uncertainty_ns: int
    monotonic_ns: int = 0  # the invoker's monotonic clock at the best exchange's midpoint: when it holds


def estimate_offset(exchanges: list[Exchange]) -> Offset:
    """The offset of the exchange with the shortest round trip, and half that round trip."""
    if not exchanges:
        raise ValueError("no clock exchange to estimate from")
    best = min(exchanges, key=lambda exchange: exchange.round_trip_ns)
    midpoint_ns = best.local_wall_ns + best.round_trip_ns // 2
    return Offset(
        best.remote_wall_ns - midpoint_ns,
        (best.round_trip_ns + 1) // 2,
        best.local_monotonic_ns + best.round_trip_ns // 2,
    )


def measure_offset(
    ask: Callable[[], int],
    count: int = EXCHANGES,
    wall_ns: Callable[[], int] = time.time_ns,
    monotonic_ns: Callable[[], int] = time.monotonic_ns,
) -> Offset:
    """``count`` exchanges, ``ask()`` returning the host's wall clock (ns), estimated."""
    exchanges = []
    for _ in range(count):
        local_wall, start = wall_ns(), monotonic_ns()
        remote = ask()
        exchanges.append(Exchange(local_wall, monotonic_ns() - start, remote, start))
    return estimate_offset(exchanges)
