"""Checks of a real testbed deployed by setup/testbed.sh (marked openwhisk; skipped by default).

Run on the testbed, after `./setup.sh --testbed`, as the user that got ~/.wskprops:

    .venv/bin/python -m pytest -q -m openwhisk tests/test_setup_openwhisk_live.py

They check what setup/README.md ("To verify on the real box") lists: the limits of the
settings table are the effective ones, the invokers run with the table's pause grace and user
memory, and a paused container is reused warm (runc or docker pause works).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import REPO_ROOT

pytestmark = pytest.mark.openwhisk

sys.path.insert(0, str(REPO_ROOT / "setup"))
import openwhisk_vars  # noqa: E402


def _wskprops() -> dict[str, str]:
    # WSK_CONFIG_FILE as wsk reads it: setup/openwhisk-standalone/start.sh writes its own file.
    path = Path(os.environ.get("WSK_CONFIG_FILE") or Path.home() / ".wskprops")
    if not path.exists():
        pytest.fail(f"{path} is missing: run ./setup.sh --testbed first (it writes it for the guest namespace)")
    props = {}
    for line in path.read_text().splitlines():
        key, sep, value = line.partition("=")
        if sep:
            props[key.strip()] = value.strip()
    return props


@pytest.fixture(scope="module")
def platform():
    requests = pytest.importorskip("requests")
    import urllib3

    urllib3.disable_warnings()
    props = _wskprops()
    session = requests.Session()
    session.verify = False  # nginx serves OpenWhisk's self-signed certificate
    session.auth = tuple(props["AUTH"].split(":", 1))
    return props["APIHOST"].rstrip("/"), session


@pytest.fixture(scope="module")
def table():
    deployed = Path("/opt/faasprof/openwhisk/ansible/environments/faasprof/faasprof-extra-vars.json")
    if deployed.exists():
        return json.loads(deployed.read_text())
    return openwhisk_vars.render(openwhisk_vars.resolve(openwhisk_vars.load_table(), {"invoker_use_runc": False}))


def test_effective_limits_are_the_tables(platform, table):
    apihost, session = platform
    info = session.get(f"{apihost}/", timeout=10).json()
    limits = info["limits"]
    assert int(limits["actions_per_minute"]) == int(table["limit_invocations_per_minute"])
    assert int(limits["concurrent_actions"]) == int(table["limit_invocations_concurrent"])
    if "max_action_memory" in limits:
        assert (
            int(limits["max_action_memory"]) == openwhisk_vars.size_mb(table["limit_action_memory_max"]) * 1024 * 1024
        )


@pytest.mark.skipif(shutil.which("docker") is None, reason="needs the docker CLI of an invoker host")
def test_invoker_runs_with_the_tables_pool_settings(table):
    inspected = subprocess.run(
        ["docker", "inspect", "--format", "{{json .Config.Env}}", "invoker0"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    if inspected.returncode != 0 and "No such object" in inspected.stderr:
        pytest.skip("no invoker0 container: a standalone server's invoker runs inside its JVM")
    assert inspected.returncode == 0, inspected.stderr
    env = json.loads(inspected.stdout)
    for name, value in table["invoker_extraEnv"].items():
        assert f"{name}={value}" in env
    assert f"CONFIG_whisk_containerPool_userMemory={table['invoker_user_memory']}" in env


def _invoke(apihost, session, action: str) -> dict:
    response = session.post(
        f"{apihost}/api/v1/namespaces/guest/actions/{action}", params={"blocking": "true"}, json={}, timeout=120
    )
    assert response.status_code == 200, response.text[:300]
    return response.json()


def test_a_paused_container_is_reused_warm(platform):
    apihost, session = platform
    _invoke(apihost, session, "json_dumps")  # may be cold
    time.sleep(1.0)  # well past the 50 ms pause grace: the container is paused now
    record = _invoke(apihost, session, "json_dumps")
    annotations = {a["key"]: a["value"] for a in record.get("annotations", [])}
    assert "initTime" not in annotations, (
        "the second call was cold: pausing failed and the container was destroyed; "
        "re-run setup/testbed.sh --openwhisk-only --set invoker_use_runc=false"
    )
