"""localwhisk's optional control-plane delay model (localwhisk/delays.py) and its pool hook."""

from __future__ import annotations

import concurrent.futures
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
    assert explicit.before_s("cold") == explicit.before_s("recreated") == 0.3
    assert explicit.before_s("resumed") == 0.0 and explicit.before_s("warm") == 0.002


@pytest.mark.parametrize(
    "spec, message",
    [
        (
            "fast",
            "control_plane: 'fast' is neither a preset (openwhisk-2.0.0-standalone) nor KEY=MS with KEY one of cold, resumed, warm",
        ),
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
