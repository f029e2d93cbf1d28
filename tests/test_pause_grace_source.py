"""Where the analyzer's pause grace comes from: recorded by the set-up, the workload, or inferred.

The resumed/warm split of OpenWhisk records (which carry no ``containerState``) rests on the
platform's pause grace; 1.x defaults to 50 ms, 2.x to 10 s. A wrong grace turned 32 of 37 warm
activations on a 2.0.0 standalone into "resumed", so the grace must be the platform's, and the
analysis must say when it only guessed it.
"""

from __future__ import annotations

import argparse

import pytest
from test_analyzer_synthetic import write_synthetic_run

from faasprof import rundir
from faasprof.analyzer import frames as frames_mod
from faasprof.analyzer.analysis import analyze_run
from faasprof.errors import ConfigError
from faasprof.platforms.openwhisk.connection import resolve_connection

NO_FLAGS = dict(apihost=None, auth=None, namespace=None, insecure=None)
LIMITS_1X = {"actions_per_minute": 60, "concurrent_actions": 30, "max_action_memory": 536870912}
LIMITS_2X = {**LIMITS_1X, "default_max_action_memory": 536870912, "default_min_action_memory": 134217728}


def _openwhisk(limits: dict, **extra) -> dict:
    return {"kind": "openwhisk", "info": {"description": "OpenWhisk", "limits": limits}, **extra}


def test_wskprops_settings_are_recorded_for_the_host_it_names(tmp_path):
    props = tmp_path / "wskprops"
    props.write_text(
        "APIHOST=http://127.0.0.1:3233\nAUTH=u:k\nNAMESPACE=guest\nPAUSE_GRACE_MS=50\nUSER_MEMORY_MB=4096\n"
    )
    connection = resolve_connection(argparse.Namespace(**NO_FLAGS), {}, wskprops_path=props)
    assert connection.describe()["settings"] == {"pause_grace_ms": 50.0, "user_memory_mb": 4096.0}
    # The same host named by a flag still is the platform the file describes.
    flags = argparse.Namespace(**{**NO_FLAGS, "apihost": "http://127.0.0.1:3233/", "auth": "f:k"})
    assert resolve_connection(flags, {}, wskprops_path=props).settings == {
        "pause_grace_ms": 50.0,
        "user_memory_mb": 4096.0,
    }
    # Another host: the file's settings are not that platform's.
    flags = argparse.Namespace(**{**NO_FLAGS, "apihost": "http://127.0.0.1:9999", "auth": "f:k"})
    other = resolve_connection(flags, {}, wskprops_path=props)
    assert other.settings == {} and "settings" not in other.describe()


def test_a_bad_wskprops_setting_is_one_line_naming_file_and_key(tmp_path):
    props = tmp_path / "wskprops"
    props.write_text("APIHOST=http://127.0.0.1:3233\nAUTH=u:k\nPAUSE_GRACE_MS=10s\n")
    with pytest.raises(ConfigError) as caught:
        resolve_connection(argparse.Namespace(**NO_FLAGS), {}, wskprops_path=props)
    assert (
        str(caught.value) == f"{props}: PAUSE_GRACE_MS: '10s' is not a non-negative number; fix it or remove the line"
    )


@pytest.mark.parametrize(
    "manifest, expected_ms, source_start",
    [
        ({"platform": _openwhisk(LIMITS_2X, settings={"pause_grace_ms": 50})}, 50.0, "manifest platform"),
        ({"platform": {"kind": "localwhisk", "localwhisk": {"pause_grace_ms": 200}}}, 200.0, "manifest platform"),
        ({"platform": _openwhisk(LIMITS_2X)}, 10_000.0, "inferred: OpenWhisk 2.x"),
        ({"platform": _openwhisk(LIMITS_1X)}, 50.0, "inferred: OpenWhisk 1.x"),
        # A real OpenWhisk ignores the workload's localwhisk block: it says nothing of its grace.
        (
            {"platform": _openwhisk(LIMITS_2X), "workload": {"platform": {"localwhisk": {"pause_grace_ms": 50}}}},
            10_000.0,
            "inferred",
        ),
        (
            {"platform": {"kind": "localwhisk"}, "workload": {"platform": {"localwhisk": {"pause_grace_ms": 75}}}},
            75.0,
            "workload platform block",
        ),
        ({"platform": {"kind": "none"}}, 50.0, "unknown"),
    ],
)
def test_pause_grace_resolution_order(manifest, expected_ms, source_start):
    grace_ms, source = frames_mod.pause_grace_ms(
        rundir.Manifest.from_json({"format_version": rundir.FORMAT_VERSION, **manifest})
    )
    assert grace_ms == expected_ms
    assert source.startswith(source_start), source
    assert frames_mod.pause_grace_known(source) == (not source.startswith(("inferred", "unknown")))


def _as_openwhisk_run(run_dir, limits: dict, settings: dict | None = None):
    manifest = rundir.read_manifest(run_dir)
    manifest.platform = _openwhisk(limits, **({"settings": settings} if settings else {}))
    rundir.write_manifest(run_dir, manifest)


def test_a_2x_run_without_recorded_grace_is_classified_with_10s_and_warned(tmp_path):
    # 10/s against one container paused after 50 ms: with the true 50 ms grace nearly every warm
    # start is a resume; with 2.x's 10 s default none would be.
    run_dir, _ = write_synthetic_run(tmp_path, duration_s=3.0, pause_grace_ms=50.0)
    _as_openwhisk_run(run_dir, LIMITS_2X)
    summary = analyze_run(run_dir, plots=False)
    assert summary["records"]["pause_grace_ms"] == 10_000.0
    assert any("pause grace 10000 ms is inferred" in warning for warning in summary["warnings"]), summary["warnings"]
    counts = summary["start_classes"]["counts"]
    assert counts["resumed"] == 0 and counts["warm"] > 0 and counts["cold"] == 1


def test_a_recorded_grace_is_used_without_warning(tmp_path):
    run_dir, _ = write_synthetic_run(tmp_path, duration_s=3.0, pause_grace_ms=50.0)
    _as_openwhisk_run(run_dir, LIMITS_2X, settings={"pause_grace_ms": 50.0})
    summary = analyze_run(run_dir, plots=False)
    assert summary["records"]["pause_grace_ms"] == 50.0
    assert summary["records"]["pause_grace_source"] == "manifest platform"
    assert not any("pause grace" in warning for warning in summary["warnings"])
    assert summary["start_classes"]["counts"]["resumed"] > 20  # 30 calls 100 ms apart, grace 50 ms
