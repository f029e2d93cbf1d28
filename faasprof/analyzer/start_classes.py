"""Each activation's start class: ``cold``, ``resumed``, ``warm`` (``unknown`` without a record).

From a record's ``containerState`` annotation when it has one (localwhisk), else inferred from the
records' own times and ``waitTime`` (OpenWhisk: ``classify_starts``); the frames' ``start_class``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

# A ``docker unpause`` inside ``waitTime``: on OpenWhisk 2.0.0 standalone here (tests/data/openwhisk)
# activations that paid one waited 40 to 300 ms, the others (nothing queued) 2 to 14 ms.
RESUME_WAIT_MS = 30.0

START_CLASSES = ("cold", "resumed", "warm", "unknown")
# A ``containerState`` annotation (localwhisk writes one; OpenWhisk logs the same states in its
# invoker log as ``containerStart containerState: ...``) settles the class when a record has it.
CONTAINER_STATE_CLASS = {
    "cold": "cold",
    "recreated": "cold",
    "prewarmed": "cold",
    "recreatedPrewarm": "cold",
    "warm": "warm",
    "warming": "warm",
    "resumed": "resumed",
}


def classify_starts(
    function: np.ndarray,
    start_ms: np.ndarray,
    end_ms: np.ndarray,
    init_ms: np.ndarray,
    grace_ms: float,
    container_state: np.ndarray | None = None,
    wait_ms: np.ndarray | None = None,
) -> pd.Categorical:
    """Start class of each record: ``cold``, ``resumed`` or ``warm`` (``unknown`` without a record).

    A record's ``containerState`` annotation, when present, decides (``CONTAINER_STATE_CLASS``).
    Otherwise the class is inferred from the record:

    * ``cold``: the record has ``initTime`` — this activation ran ``/init`` in a new (or prewarmed)
      container.
    * ``resumed``: no ``initTime``, and *every* earlier activation of the same action had ended at
      least the pause grace before this one started (its invoker-clock ``start``). Then every
      container of the action had been idle longer than the grace, so each was paused, and this warm
      start must have resumed one (the resume cost is inside ``waitTime``). OpenWhisk records carry
      no container-state annotation (only the invoker's log does), so this is inferred from the
      records' own timestamps; it is a lower bound: a resume of one idle container while a sibling
      container was still busy is counted ``warm``, and so is the first activation of an action in
      the run when it has no ``initTime`` (nothing earlier to measure the idle gap from).
      With ``wait_ms``, a warm start is also ``resumed`` when it waited at least
      ``RESUME_WAIT_MS`` (the unpause is inside ``waitTime``) and did not queue: every earlier
      activation of the action had ended before it started, or the one started just before it
      waited less (a long wait after a long wait is the platform's queue, not an unpause). This
      catches OpenWhisk's choice of a paused container while a sibling was unpaused or busy:
      against the standalone's log (tests/data/openwhisk) the grace rule alone found 93 of 122
      resumes at 10/s and 3 of 20 at 20/s, with the wait 119 and 11; at 40/s, where calls queue,
      19 of 69 (12 more counted that were warm) where the grace rule found 1.
    * ``warm``: everything else with a record.

    Inputs are aligned arrays (``function`` any hashable labels or integer codes; NaN
    ``start_ms`` means no record; ``container_state`` a state per row, as an array or a
    ``pd.Categorical``, or None).
    """
    n = len(start_ms)
    codes = np.full(n, START_CLASSES.index("unknown"), dtype=np.int8)
    has = ~np.isnan(start_ms)
    if has.any():
        idx = np.nonzero(has)[0]
        order, prev_end = _previous_end_by_group(np.asarray(function)[idx], start_ms[idx], end_ms[idx])
        resumed = np.zeros(n, dtype=bool)
        gap_ms = start_ms[idx][order] - prev_end
        resumed[idx[order]] = gap_ms >= grace_ms  # NaN: False
        if wait_ms is not None:
            resumed[idx[order]] |= _unpaused_by_wait(
                np.asarray(function)[idx][order], start_ms[idx][order], gap_ms, wait_ms[idx][order], grace_ms
            )
        codes[has] = START_CLASSES.index("warm")
        codes[has & resumed] = START_CLASSES.index("resumed")
        codes[has & ~np.isnan(init_ms)] = START_CLASSES.index("cold")
        if container_state is not None:
            # Decided per distinct state and applied by code: no Python comparison per row.
            states = (
                container_state
                if isinstance(container_state, pd.Categorical)
                else pd.Categorical(np.asarray(container_state, dtype=object))
            )
            state_codes = np.asarray(states.codes)
            for k, state in enumerate(states.categories):
                name = CONTAINER_STATE_CLASS.get(state) if isinstance(state, str) else None
                if name is not None:
                    codes[has & (state_codes == k)] = START_CLASSES.index(name)
    return pd.Categorical.from_codes(codes, categories=START_CLASSES)


def _unpaused_by_wait(
    group: np.ndarray, start_ms: np.ndarray, gap_ms: np.ndarray, wait_ms: np.ndarray, grace_ms: float
) -> np.ndarray:
    """Rows in (group, start) order that waited ``RESUME_WAIT_MS`` or more and did not queue (the
    group's earlier rows had all ended, ``gap_ms`` >= 0, or its previous row waited less), once the
    group's first row had started a pause grace earlier: before that no container of the run can
    have idled long enough to be paused (with 2.0's 10 s grace and an 8 s run, none)."""
    previous_wait = np.full(len(wait_ms), np.nan)
    first_start = start_ms.copy()
    if len(wait_ms) > 1:
        same = group[1:] == group[:-1]
        previous_wait[1:][same] = wait_ms[:-1][same]
        # A group's rows are contiguous: carry each group's first start forward over its rows.
        heads = np.flatnonzero(np.concatenate(([True], ~same)))
        first_start = np.repeat(start_ms[heads], np.diff(np.append(heads, len(start_ms))))
    not_queued = (gap_ms >= 0) | (previous_wait < RESUME_WAIT_MS)
    return (wait_ms >= RESUME_WAIT_MS) & not_queued & (start_ms - first_start >= grace_ms)


def _previous_end_by_group(
    group: np.ndarray, start_ms: np.ndarray, end_ms: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Rows ordered by (group, start, end) (stable; NaN last), and for each, in that order, the
    latest end among the earlier rows of its group (NaN for a group's first row, after a row
    without an end, and for rows without a group label).

    Three stable sorts and a running maximum per group, in NumPy: what a pandas sort by three keys
    and a grouped ``cummax().shift(1)`` give, in a fraction of the time at ten million rows."""
    if group.dtype.kind in "iub":
        labels, grouped = group, np.ones(len(group), dtype=bool)
    else:
        labels, _ = pd.factorize(group, sort=True)  # codes in label order; -1: no label (not grouped)
        grouped = labels >= 0
    order = np.argsort(end_ms, kind="stable")
    order = order[np.argsort(start_ms[order], kind="stable")]
    order = order[np.argsort(labels[order], kind="stable")]
    sorted_labels, ends = labels[order], end_ms[order]
    prev_end = np.full(len(order), np.nan)
    cuts = np.flatnonzero(sorted_labels[1:] != sorted_labels[:-1]) + 1
    for first, last in zip(np.r_[0, cuts], np.r_[cuts, len(order)]):
        if not grouped[order[first]]:
            continue
        running = np.fmax.accumulate(ends[first:last])  # the latest end so far, ends without a value skipped
        running[np.isnan(ends[first:last])] = np.nan  # ... but not at their own row (as pandas' cummax)
        prev_end[first + 1 : last] = running[:-1]
    return order, prev_end
