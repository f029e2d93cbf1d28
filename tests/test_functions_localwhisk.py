"""Every available function deployed to localwhisk (the embedded platform) and invoked with its
sample input returns its expected result; and a workload naming an unknown function fails
validation with the list of known ones."""

from __future__ import annotations

import json

import pytest

from faasprof.functions.catalogue import lookup, names
from faasprof.functions.checks import check_result
from faasprof.platforms.openwhisk.client import OpenWhiskClient
from faasprof.platforms.openwhisk.connection import Connection
from faasprof.platforms.openwhisk.deploy import deploy, ensure_actions
from tests.helpers import run_cli

embedded = pytest.importorskip("faasprof.localwhisk.embedded")

# Real OpenWhisk accepts action code up to tens of MB (nginx and the controller's exec size
# limit) while invocation payloads stay at 1 MB; img-resize's archive (jimp) is several MB.
ACTION_BODY_LIMIT_BYTES = 32 * 1024 * 1024


@pytest.fixture(scope="module")
def platform():
    handle = embedded.start_embedded(max_payload_bytes=ACTION_BODY_LIMIT_BYTES)
    try:
        with OpenWhiskClient(Connection(handle.apihost, handle.auth, handle.namespace, source="embedded")) as client:
            yield client
    finally:
        handle.stop()


@pytest.fixture(scope="module")
def deployed(platform):
    available = [name for name in names() if lookup(name).available]
    first = deploy(platform, available)
    second = deploy(platform, available)
    return available, first, second


def test_deploy_to_localwhisk_is_idempotent(deployed):
    available, first, second = deployed
    assert set(first.values()) == {"created"} and set(first) == set(available)
    assert set(second.values()) == {"unchanged"}


@pytest.mark.parametrize("name", names())
def test_function_runs_on_localwhisk(platform, deployed, name):
    entry = lookup(name)
    if name not in deployed[0]:
        pytest.skip(entry.missing()[0])
    response = platform.invoke(name, entry.sample_params(), blocking=True, result=True)
    assert response.status_code == 200, response.text[:500]
    assert check_result(response.json(), entry.expected()) == []


def test_spin_reports_cold_then_warm_on_localwhisk(platform, deployed):
    assert ensure_actions(platform, ["spin-192"]) == {"spin-192": "deployed"}
    first = platform.invoke("spin-192", {"service_ms": 1}, blocking=True, result=True).json()
    second = platform.invoke("spin-192", {"service_ms": 1}, blocking=True, result=True).json()
    assert first["cold"] is True and second["cold"] is False
    assert first["instance_id"] == second["instance_id"]
    assert platform.get_action("spin-192")["limits"]["memory"] == 192


@pytest.mark.slow
def test_workload_with_unknown_function_is_refused_by_validate_and_run_in_one_line_with_a_suggestion(
    tmp_path, isolated_home
):
    workload = tmp_path / "w.json"
    workload.write_text(
        json.dumps(
            {
                "test_name": "t",
                "test_duration_in_seconds": 5,
                "random_seed": 1,
                "blocking_cli": False,
                "instances": {
                    "a": {"application": "markdwn", "distribution": "Poisson", "rate": 1},
                    "b": {"application": "markdwn", "distribution": "Poisson", "rate": 2},
                },
            }
        )
    )
    expected = (
        f'{workload}: instances.a.application: "markdwn" is not in the function catalogue (did you mean "markdown"?); '
        'the embedded localwhisk starts empty: fix the name, give the instance a "source" (your function\'s file or folder), '
        "or deploy it to a running platform (`faasprof local start`, `faasprof deploy`) and pass its --apihost/--auth"
    )
    validated = run_cli("validate", workload, timeout=60)
    assert validated.returncode == 2 and validated.stderr.splitlines() == [expected]
    done = run_cli("run", workload, "--out", tmp_path / "runs", timeout=60)
    assert done.returncode == 2 and done.stderr.splitlines() == [expected]
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())
    offline = run_cli(
        "validate", "--offline", workload, timeout=60
    )  # the file alone: the function may be on a platform
    assert offline.returncode == 0
    assert (
        f'warning: {workload}: instances.a.application: "markdwn" is not in the function catalogue (did you mean "markdown"?)'
        in offline.stderr
    )


@pytest.mark.parametrize("name", ["img-resize", "ocr-img"])
def test_data_file_functions_answer_as_raw_web_actions(platform, deployed, name):
    """The invoker's ``data_mode: web`` posts the data file's bytes to the web URL; the function
    reads them from ``__ow_body``."""
    entry = lookup(name)
    if name not in deployed[0]:
        pytest.skip(entry.missing()[0])
    url = f"{platform.connection.apihost}/api/v1/web/{platform.connection.namespace}/default/{name}.json"
    response = platform.session.post(
        url, data=entry.data_file.read_bytes(), headers={"Content-Type": "image/png"}, timeout=60
    )
    assert response.status_code == 200, response.text[:300]
    result = response.json()
    if name == "img-resize":
        assert [icon["width"] for icon in result["icons"]] == [16, 32, 48, 64, 128]
    else:
        assert check_result(result, entry.expected()) == []
