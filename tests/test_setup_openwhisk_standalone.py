"""setup/openwhisk-standalone/: the scripts' checks (always), and faasprof against a running server.

The scripts' own checks run anywhere: bad arguments exit 2, a missing build or source exits with a
one-line message naming the fix. The ``openwhisk``-marked test needs a server started by start.sh:

    setup/openwhisk-standalone/start.sh
    WSK_CONFIG_FILE=~/.cache/faasprof/openwhisk-standalone/run/wskprops \\
        .venv/bin/python -m pytest -q -m openwhisk tests/test_setup_openwhisk_standalone.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import REPO_ROOT

SCRIPTS = REPO_ROOT / "setup" / "openwhisk-standalone"


def _script(name: str, *args: str, env_extra: dict | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, **(env_extra or {})}
    return subprocess.run([str(SCRIPTS / name), *args], capture_output=True, text=True, timeout=60, env=env)


@pytest.mark.parametrize(
    "args, message",
    [
        (["--port", "http"], "start.sh: --port: 'http' is not a port number"),
        (["--pause-grace", "10s"], "start.sh: --pause-grace: '10s' is not a whole number of ms"),
        (["--user-memory", "0"], "start.sh: --user-memory: '0' is not a whole number of MB"),
        (["--idle-container", "2.5"], "start.sh: --idle-container: '2.5' is not a positive whole number of seconds"),
        (["--bogus"], "start.sh: unknown argument '--bogus' (see --help)"),
    ],
)
def test_start_refuses_bad_arguments_with_exit_2(args, message):
    result = _script("start.sh", *args)
    assert result.returncode == 2
    assert result.stderr.strip() == message


def test_start_without_a_build_names_build_sh(tmp_path):
    result = _script("start.sh", "--build-dir", str(tmp_path))
    assert result.returncode == 3
    assert (
        result.stderr.strip()
        == f"start.sh: {tmp_path}/build.env: missing; run setup/openwhisk-standalone/build.sh first (or pass --build-dir)"
    )


def test_build_refuses_a_folder_that_is_not_openwhisk(tmp_path):
    result = _script("build.sh", "--source", str(tmp_path), "--build-dir", str(tmp_path / "b"))
    assert result.returncode == 2
    assert "not an OpenWhisk source tree" in result.stderr and result.stderr.count("\n") == 1


def test_build_refuses_a_source_other_than_2_0_0(tmp_path):
    (tmp_path / "core" / "standalone" / "src" / "main" / "scala").mkdir(parents=True)
    (tmp_path / "settings.gradle").write_text("gradle.ext.pekko = [version : '1.1.5']\n")
    result = _script("build.sh", "--source", str(tmp_path), "--build-dir", str(tmp_path / "b"), "--route", "maven")
    assert result.returncode == 2
    assert (
        result.stderr.strip()
        == f"build.sh: {tmp_path}/settings.gradle: not OpenWhisk 2.0.0 (Akka 2.6.12 expected); check out the tag 2.0.0"
    )


def test_stop_without_a_server_says_so_and_succeeds(tmp_path):
    result = _script("stop.sh", "--state-dir", str(tmp_path))
    assert result.returncode == 0
    assert "nothing to stop" in result.stdout


def test_the_pom_names_the_pins_maven_needs():
    pom = (SCRIPTS / "pom.xml").read_text()
    for needle in (
        "<grpc.version>1.30.0</grpc.version>",
        "<artifactId>akka-http-xml_${scala.binary}</artifactId><version>${akka.http.version}</version>",
        "<artifactId>elastic4s-http_${scala.binary}</artifactId><version>6.7.4</version>",
        "<artifactId>embedded-kafka_${scala.binary}</artifactId><version>2.8.0</version>",
        "<akka.version>2.6.12</akka.version>",
    ):
        assert needle in pom, needle
    assert "-Xfatal-warnings" not in pom.split("<args>")[1].split("</args>")[0]


@pytest.mark.openwhisk
def test_faasprof_runs_and_analyzes_on_the_standalone_with_its_recorded_pause_grace(tmp_path):
    wskprops = os.environ.get("WSK_CONFIG_FILE")
    if not wskprops or "PAUSE_GRACE_MS=" not in Path(wskprops).read_text():
        pytest.fail("set WSK_CONFIG_FILE to the wskprops that setup/openwhisk-standalone/start.sh wrote")
    workload = tmp_path / "w.json"
    workload.write_text(
        json.dumps(
            {
                "test_name": "standalone-smoke",
                "test_duration_in_seconds": 10,
                "random_seed": 3,
                "blocking_cli": True,
                "instances": {
                    "blocking": {"application": "json_dumps", "distribution": "Uniform", "rate": 1.5},
                    "nonblocking": {
                        "application": "json_dumps",
                        "distribution": "Uniform",
                        "rate": 0.5,
                        "blocking": False,
                    },
                },
            }
        )
    )
    result = subprocess.run(
        [sys.executable, "-m", "faasprof", "run", str(workload), "--analyze", "--out", str(tmp_path / "runs")],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO_ROOT,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    run_dir = Path(result.stdout.strip().splitlines()[-1])
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["platform"]["kind"] == "openwhisk"
    assert manifest["platform"]["settings"]["pause_grace_ms"] >= 0
    summary = json.loads((run_dir / "analysis" / "summary.json").read_text())
    assert summary["records"]["pause_grace_source"] == "manifest platform"
    assert summary["records"]["found"] == summary["records"]["with_activation_id"] > 0
    counts = summary["start_classes"]["counts"]
    # Every record classified (whether resumes appear depends on how long the cold starts take on
    # the host; the synthetic runs of test_pause_grace_source check the grace's effect).
    assert counts["unknown"] == 0 and sum(counts.values()) == summary["records"]["found"]
    assert summary["records"]["pause_grace_ms"] == manifest["platform"]["settings"]["pause_grace_ms"]
