"""localwhisk's optional control-plane delay model (faasprof/localwhisk/delays.py) and its pool hook."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time

import pytest
import requests

from faasprof.errors import ConfigError
from faasprof.localwhisk import delays
from faasprof.localwhisk.embedded import start_embedded

NOOP = "def main(args):\n    return {}\n"


def test_parse_off_preset_and_explicit():
    assert not delays.parse("")
    preset = delays.parse("openwhisk-2.0.0-standalone")
    assert preset and preset.cold_ms == delays.PRESETS["openwhisk-2.0.0-standalone"]["process"]["cold"]
    # Docker sandboxes pay part of it already: the preset adds less.
    in_docker = delays.parse("openwhisk-2.0.0-standalone", docker=True)
    assert (
        in_docker
        and in_docker.cold_ms == delays.PRESETS["openwhisk-2.0.0-standalone"]["docker"]["cold"] < preset.cold_ms
    )
    assert in_docker.resumed_ms < preset.resumed_ms
    assert delays.parse("cold=300", docker=True).cold_ms == 300.0
    explicit = delays.parse("cold=300, warm=2")
    assert (explicit.cold_ms, explicit.resumed_ms, explicit.warm_ms) == (300.0, 0.0, 2.0)
    assert explicit.reuse == "newest" and delays.parse("reuse=openwhisk").reuse == "openwhisk"
    assert not delays.parse("reuse=openwhisk")  # no delay to wait: the reuse rule is read on its own
    # The preset reuses as OpenWhisk's pool does, with either isolation.
    assert preset.reuse == in_docker.reuse == "openwhisk"
    assert preset.cpu_ms == in_docker.cpu_ms == delays.CPU_MS > 0 and delays.parse("cpu=5").cpu_ms == 5.0
    assert explicit.before_s("cold") == explicit.before_s("recreated") == 0.3
    assert explicit.before_s("resumed") == 0.0 and explicit.before_s("warm") == 0.002


@pytest.mark.parametrize(
    "spec, message",
    [
        (
            "fast",
            "control_plane: 'fast' is neither a preset (openwhisk-2.0.0-standalone) nor KEY=MS with KEY one of cold, resumed, warm, cpu "
            "(or reuse=newest|openwhisk)",
        ),
        ("reuse=lru", "control_plane: reuse='lru' must be one of newest, openwhisk"),
        ("cold=-5", "control_plane: cold='-5' must be a number of ms >= 0"),
        ("warm=x", "control_plane: warm='x' must be a number of ms >= 0"),
    ],
)
def test_parse_rejects_with_one_line(spec, message):
    with pytest.raises(ValueError) as caught:
        delays.parse(spec)
    assert str(caught.value) == message


def test_a_bad_spec_is_refused_before_starting():
    with pytest.raises(ConfigError) as caught:
        start_embedded(control_plane="cold=soon")
    assert "control_plane: cold='soon' must be a number of ms >= 0" in str(caught.value)


def _call(session, base, name):
    response = session.post(f"{base}/actions/{name}", params={"blocking": "true"}, json={}, timeout=60)
    assert response.status_code == 200, response.text
    record = response.json()
    return {a["key"]: a["value"] for a in record["annotations"]}


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_the_delays_land_in_wait_time_and_hold_the_sandbox():
    with start_embedded(control_plane="cold=300,warm=150,resumed=250", pause_grace_ms=50) as lw:
        session = requests.Session()
        session.auth = tuple(lw.auth.split(":", 1))
        base = f"{lw.apihost}/api/v1/namespaces/_"
        assert (
            session.get(lw.apihost + "/", timeout=10).json()["localwhisk"]["control_plane"]
            == "cold=300,warm=150,resumed=250"
        )
        assert (
            session.put(
                f"{base}/actions/noop",
                params={"overwrite": "true"},
                json={"exec": {"kind": "python:3", "code": NOOP}},
                timeout=30,
            ).status_code
            == 200
        )
        cold = _call(session, base, "noop")
        assert cold["containerState"] == "cold" and cold["waitTime"] >= 300
        time.sleep(0.5)  # past the 50 ms grace: paused
        resumed = _call(session, base, "noop")
        assert resumed["containerState"] == "resumed" and resumed["waitTime"] >= 250
        # Two calls at once: the sandbox is held during the first one's 150 ms warm delay, so the
        # second one starts another sandbox (the classic pool's rule for a busy container).
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            first, second = pool.map(lambda _: _call(session, base, "noop"), range(2))
        states = sorted((first["containerState"], second["containerState"]))
        assert states in (["cold", "warm"], ["warm", "warm"]), states
        assert min(first["waitTime"], second["waitTime"]) >= 150


def test_openwhisk_order_is_the_one_idle_longest_first_then_a_fixed_order_per_sandbox():
    """OpenWhisk's free pool: insertion order (idle longest first) up to 4 free containers ever,
    a fixed order per container after; the same names give the same order on every call."""
    idle = ["wsk3", "wsk1", "wsk2"]  # least recently freed first
    assert delays.openwhisk_order(idle, hashed=False, name=str) == idle
    many = [f"wsk{n}" for n in range(1, 7)]
    fixed = delays.openwhisk_order(many, hashed=True, name=str)
    assert sorted(fixed) == sorted(many) and fixed != many
    assert delays.openwhisk_order(list(reversed(many)), hashed=True, name=str) == fixed  # recency does not matter


def test_the_cpu_stage_runs_as_many_at_once_as_it_has_workers_and_queues_the_rest():
    """The modelled control-plane stage: with 2 workers, of 4 activations 2 spend their CPU at once
    and the other 2 wait until one finishes (a fake burn that holds until released: no clock)."""
    started: list[int] = []
    release = threading.Semaphore(0)
    lock = threading.Lock()

    def burn(seconds):
        with lock:
            started.append(len(started))
        release.acquire(timeout=10)
        return seconds

    async def scenario():
        with concurrent.futures.ThreadPoolExecutor(2) as executor:
            stage = delays.CpuStage(22.0, executor=executor, burn=burn)
            assert stage.cpu_s == 0.022
            spends = [asyncio.ensure_future(stage.spend()) for _ in range(4)]
            await _until(lambda: len(started) == 2)
            await asyncio.sleep(0.05)
            assert len(started) == 2 and not any(s.done() for s in spends)  # two queued behind two burning
            release.release()
            await _until(lambda: len(started) == 3)
            assert sum(s.done() for s in spends) == 1
            for _ in range(3):
                release.release()
            await asyncio.gather(*spends)
            assert len(started) == 4

    asyncio.run(scenario())


async def _until(condition, limit_s=10.0):
    deadline = time.monotonic() + limit_s
    while not condition():
        assert time.monotonic() < deadline
        await asyncio.sleep(0.005)


def test_burn_cpu_spends_process_cpu_time():
    assert delays.burn_cpu(0.01) >= 0.01


SLEEP_PID = "import os, time\ndef main(args):\n    time.sleep(args.get('s', 0))\n    return {'pid': os.getpid()}\n"


@pytest.mark.slow
@pytest.mark.timeout(120)
@pytest.mark.parametrize("reuse, alternates", [("openwhisk", True), ("newest", False)])
def test_openwhisk_reuse_rotates_calls_over_two_idle_sandboxes(reuse, alternates):
    """Two sandboxes made by two overlapping calls, then sequential calls: OpenWhisk's pool (up to 4
    free containers: the one idle longest) hands each to the other sandbox, so they alternate and
    each idles while the other works (under a short grace: paused, then resumed); localwhisk's own
    rule keeps to one. No timing is asserted: which sandbox (its pid) served each call."""
    with start_embedded(control_plane=f"reuse={reuse},cpu=5", pause_grace_ms=10000) as lw:
        call = _pid_caller(lw)
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            first, second = pool.map(call, (0.6, 0.3))
        assert first != second  # the second call found the first sandbox busy: a sandbox of its own
        pids = [call(0) for _ in range(4)]
        assert set(pids) <= {first, second}
        changes = sum(1 for a, b in zip(pids, pids[1:]) if a != b)
        assert changes == (3 if alternates else 0), pids


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_openwhisk_reuse_keeps_to_one_fixed_sandbox_once_five_were_free():
    """Once 5 containers were free at once, OpenWhisk's free pool is a hash map: sequential calls
    all go to the same container, first in its fixed order, whichever was used last."""
    with start_embedded(control_plane="reuse=openwhisk", pause_grace_ms=10000) as lw:
        call = _pid_caller(lw)
        with concurrent.futures.ThreadPoolExecutor(5) as pool:
            made = set(pool.map(call, [1.5] * 5))
        assert len(made) == 5
        pids = [call(0) for _ in range(4)]
        assert len(set(pids)) == 1 and pids[0] in made, pids


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_the_cpu_stage_comes_after_the_sandbox_is_free_again():
    """OpenWhisk holds a container for its /run only; its JVM's work on the record and the answer
    follows. A call that comes while the previous one's control-plane CPU is still being spent finds
    that sandbox free (the same pid), not busy (a new sandbox)."""
    with start_embedded(control_plane="cpu=2000", pause_grace_ms=10000) as lw:
        call = _pid_caller(lw)
        warm = call(0)  # the cold start, out of the way
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            first = pool.submit(call, 0)
            time.sleep(0.5)
            assert not first.done()  # its 2 s of control-plane CPU are still being spent
            second = call(0)
        assert first.result() == second == warm


def _pid_caller(lw):
    session = requests.Session()
    session.auth = tuple(lw.auth.split(":", 1))
    base = f"{lw.apihost}/api/v1/namespaces/_"
    put = session.put(
        f"{base}/actions/pid",
        params={"overwrite": "true"},
        json={"exec": {"kind": "python:3", "code": SLEEP_PID}},
        timeout=30,
    )
    assert put.status_code == 200, put.text

    def call(seconds):
        response = session.post(
            f"{base}/actions/pid", params={"blocking": "true", "result": "true"}, json={"s": seconds}, timeout=60
        )
        assert response.status_code == 200, response.text
        return response.json()["pid"]

    return call
