"""The paper's Figure 4 latency modes, produced for real by localwhisk's pool.

One function (a 50 ms sleep) on a one-slot pool has a capacity of about 19 activations/s. An
open-loop driver sends at fixed instants: 8/s (under-invoked: the sandbox pauses between calls,
so activations are resumed and waits stay small), ~80 % of capacity (balanced: warm reuse, small
waits) and twice the capacity (over-invoked: the FIFO buffer grows, so waits grow over time).
Assertions are on the qualitative patterns, never on absolute timings.
"""

from __future__ import annotations

import statistics
import time

import pytest
import requests

from faasprof.localwhisk.embedded import start_embedded

pytestmark = pytest.mark.timeout(90)

WORK_PY = "import time\ndef main(args):\n    time.sleep(0.05)\n    return {'i': args.get('i')}\n"


def annotation(record, key, default=None):
    for item in record.get("annotations", []):
        if item["key"] == key:
            return item["value"]
    return default


def drive(session, base, action, rate_per_s, duration_s):
    """Open loop: request i is sent at t0 + i / rate, whatever happened to the earlier ones."""
    count = int(rate_per_s * duration_s)
    ids = []
    t0 = time.monotonic()
    for i in range(count):
        delay = t0 + i / rate_per_s - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        response = session.post(f"{base}/actions/{action}?blocking=false", json={"i": i}, timeout=10)
        assert response.status_code == 202, response.text
        ids.append(response.json()["activationId"])
    return ids


def fetch(session, base, ids, timeout_s=30.0):
    records = []
    deadline = time.monotonic() + timeout_s
    for activation_id in ids:
        while True:
            response = session.get(f"{base}/activations/{activation_id}", timeout=10)
            if response.status_code == 200:
                records.append(response.json())
                break
            assert time.monotonic() < deadline, "records did not arrive"
            time.sleep(0.05)
    return records


@pytest.mark.slow
def test_under_balanced_and_over_invoked_patterns(tmp_path):
    with start_embedded(data_dir=tmp_path / "lw", user_memory_mb=256, pause_grace_ms=50) as handle:
        base = handle.apihost + "/api/v1/namespaces/_"
        session = requests.Session()
        session.auth = tuple(handle.auth.split(":", 1))
        phases = {}
        for action, rate in (("under", 8.0), ("balanced", 15.0), ("over", 40.0)):
            session.put(
                f"{base}/actions/{action}?overwrite=true", json={"exec": {"kind": "python:3", "code": WORK_PY}}
            ).raise_for_status()
            ids = drive(session, base, action, rate, 2.5)
            phases[action] = fetch(session, base, ids)

        def states(records):
            return [annotation(r, "containerState") for r in records]

        def waits(records):
            return [annotation(r, "waitTime") for r in records]

        under, balanced, over = phases["under"], phases["balanced"], phases["over"]
        # Under-invoked: every call after the first finds its sandbox paused (resumed), no re-init.
        resumed = states(under)[1:].count("resumed")
        assert resumed >= 0.6 * (len(under) - 1), states(under)
        assert states(under)[0] in ("cold", "recreated")
        assert all(annotation(r, "initTime") is None for r in under[1:])
        # Balanced: mostly warm reuse without pausing, waits small compared with overload.
        assert states(balanced)[1:].count("warm") >= 0.5 * (len(balanced) - 1), states(balanced)
        # Over-invoked: the run buffer grows, so waits grow over the phase.
        over_waits = waits(over)
        quarter = len(over_waits) // 4
        first, last = statistics.median(over_waits[:quarter]), statistics.median(over_waits[-quarter:])
        assert last > 4 * max(first, 25), (first, last)
        rising = sum(b >= a for a, b in zip(over_waits, over_waits[1:])) / (len(over_waits) - 1)
        assert rising >= 0.8, over_waits
        assert statistics.median(waits(balanced)) * 4 < statistics.median(over_waits)
        assert statistics.median(waits(under)) * 4 < statistics.median(over_waits)
