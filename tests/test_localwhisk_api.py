"""localwhisk's REST API through a real client: paths, bodies, status codes, messages, records."""

from __future__ import annotations

import base64
import io
import sys
import time
import zipfile

import pytest
import requests

from faasprof.localwhisk.config import GUEST_AUTH
from faasprof.localwhisk.embedded import start_embedded
from tests.localwhisk_driver import Lw, annotation

pytestmark = pytest.mark.timeout(60)

ECHO_PY = "def main(args):\n    print('hello', args.get('x'))\n    return {'x': args.get('x'), 'p': args.get('p')}\n"
ECHO_JS = "function main(args) { console.log('hi from node'); return {x: args.x}; }\n"
SLEEP_PY = (
    "import time\ndef main(args):\n    time.sleep(float(args.get('s', 1)))\n    return {'slept': args.get('s', 1)}\n"
)
APP_ERROR_PY = "def main(args):\n    return {'error': 'bad input'}\n"


@pytest.fixture(scope="module")
def lw(tmp_path_factory):
    with start_embedded(data_dir=tmp_path_factory.mktemp("lwapi"), max_blocking_wait_ms=60000) as handle:
        driver = Lw(handle)
        yield driver
        driver.client.close()


def test_info_describes_runtimes_limits_and_isolation(lw):
    info = lw.session.get(lw.handle.apihost + "/", timeout=5).json()
    assert info["api_paths"] == ["/api/v1"]
    kinds = {r["kind"] for family in info["runtimes"].values() for r in family}
    assert "python:3" in kinds and any(k.startswith("nodejs:") for k in kinds)
    assert info["limits"]["concurrent_actions"] >= 1
    local = info["localwhisk"]
    assert local["pause_grace_ms"] == 50 and local["user_memory_mb"] == 4096
    assert local["isolation"] in ("cgroup-v1", "cgroup-v2", "rlimit")
    assert lw.handle.settings["isolation"] == local["isolation"] and local["apihost"] == lw.handle.apihost
    assert lw.handle.settings["cgroup_parents"] == local["cgroup_parents"]
    if local["isolation"] != "rlimit":
        assert local["cgroup_parents"] and all(p.startswith("/sys/fs/cgroup") for p in local["cgroup_parents"].values())


def test_wrong_or_missing_key_is_401(lw):
    wrong = requests.get(lw.base + "/actions", auth=("23bc46b1-71f6-4ed5-8c54-816aa4f8c502", "nope"), timeout=5)
    assert wrong.status_code == 401
    assert wrong.json()["error"] == "The supplied authentication is invalid"
    assert requests.post(lw.base + "/actions/x?blocking=true", json={}, timeout=5).status_code == 401
    other_ns = lw.session.get(lw.handle.apihost + "/api/v1/namespaces/someone/actions", timeout=5)
    assert other_ns.status_code == 403


def test_action_crud_and_conflict(lw):
    doc = lw.put("crud", ECHO_PY, parameters=[{"key": "p", "value": 7}])
    assert doc["name"] == "crud" and doc["version"] == "0.0.1" and doc["exec"]["kind"] == "python:3"
    assert doc["limits"] == {"timeout": 60000, "memory": 256, "logs": 10, "concurrency": 1}
    assert {"key": "provide-api-key", "value": False} in doc["annotations"]
    again = lw.session.put(lw.base + "/actions/crud", json={"exec": {"kind": "python:3", "code": ECHO_PY}})
    assert again.status_code == 409
    assert again.json()["error"] == "resource already exists"
    updated = lw.put("crud", ECHO_PY, memory=128)
    assert updated["version"] == "0.0.2" and updated["limits"]["memory"] == 128
    got = lw.session.get(lw.base + "/actions/crud?code=false").json()
    assert "code" not in got["exec"]
    assert lw.session.delete(lw.base + "/actions/crud").status_code == 200
    missing = lw.session.get(lw.base + "/actions/crud")
    assert missing.status_code == 404 and missing.json()["error"] == "The requested resource does not exist."


def test_bad_action_bodies_are_400(lw):
    r = lw.session.put(
        lw.base + "/actions/bad?overwrite=true", data=b"{not json", headers={"Content-Type": "application/json"}
    )
    assert r.status_code == 400 and r.json()["error"].startswith("The request content was malformed")
    r = lw.session.put(lw.base + "/actions/bad?overwrite=true", json={"exec": {"kind": "cobol:1", "code": "x"}})
    assert r.status_code == 400 and "cobol:1" in r.json()["error"]
    r = lw.session.put(
        lw.base + "/actions/bad?overwrite=true",
        json={"exec": {"kind": "python:3", "code": "x"}, "limits": {"memory": 64}},
    )
    assert r.status_code == 400 and "memory size 64 MB below allowed threshold of 128 MB" in r.json()["error"]


def test_blocking_invoke_shapes_and_record_fields(lw):
    lw.put("echo", ECHO_PY, parameters=[{"key": "p", "value": "dflt"}])
    response = lw.invoke("echo", {"x": 5})
    assert response.status_code == 200
    record = response.json()
    assert response.headers["x-openwhisk-activation-id"] == record["activationId"]
    assert len(record["activationId"]) == 32
    assert record["response"] == {
        "result": {"x": 5, "p": "dflt"},
        "status": "success",
        "success": True,
        "size": len('{"x":5,"p":"dflt"}'),
    }
    for key in (
        "namespace",
        "name",
        "subject",
        "version",
        "publish",
        "start",
        "end",
        "duration",
        "logs",
        "annotations",
    ):
        assert key in record
    assert record["namespace"] == "guest" and record["name"] == "echo"
    assert record["duration"] == record["end"] - record["start"]
    assert annotation(record, "path") == "guest/echo"
    assert annotation(record, "kind") == "python:3"
    assert annotation(record, "timeout") is False
    assert annotation(record, "limits") == {"concurrency": 1, "logs": 10, "memory": 256, "timeout": 60000}
    assert isinstance(annotation(record, "waitTime"), int)
    assert any(line.endswith("stdout: hello 5") for line in record["logs"])
    assert len(record["logs"][0].split(" stdout:")[0].rstrip()) == 30  # ISO timestamp with ns
    only = lw.invoke("echo", {"x": 6}, result=True)
    assert only.status_code == 200 and only.json() == {"x": 6, "p": "dflt"}
    # Readable by id as soon as the blocking call answered, and via /result and /logs.
    stored = lw.session.get(f"{lw.base}/activations/{record['activationId']}").json()
    assert stored == record
    assert lw.session.get(f"{lw.base}/activations/{record['activationId']}/result").json()["result"] == {
        "x": 5,
        "p": "dflt",
    }
    assert lw.session.get(f"{lw.base}/activations/{record['activationId']}/logs").json()["logs"] == record["logs"]


def test_non_blocking_invoke_and_malformed_body(lw):
    lw.put("echo2", ECHO_PY)
    response = lw.invoke("echo2", {"x": 1}, blocking=False)
    assert response.status_code == 202
    activation_id = response.json()["activationId"]
    assert response.headers["x-openwhisk-activation-id"] == activation_id
    assert lw.record(activation_id)["response"]["result"]["x"] == 1
    bad = lw.session.post(
        lw.base + "/actions/echo2?blocking=true", data=b"{oops", headers={"Content-Type": "application/json"}
    )
    assert bad.status_code == 400 and bad.json()["error"].startswith("The request content was malformed")
    assert lw.session.post(lw.base + "/actions/nothere?blocking=true", json={}).status_code == 404


@pytest.mark.slow
def test_in_flight_counts_the_activations_accepted_and_not_yet_recorded(lw):
    """``GET /localwhisk/v1/activations`` (issue 34): what faasprof waits for before stopping an embedded localwhisk."""
    lw.put("sleeper", SLEEP_PY, memory=128)
    ids = [lw.invoke("sleeper", {"s": 1.5}, blocking=False).json()["activationId"] for _ in range(3)]
    counts = lw.handle.in_flight()
    assert counts["inFlight"] == 3 == counts["queued"] + counts["running"] and counts["running"] >= 1, counts
    deadline = time.monotonic() + 30
    while lw.handle.in_flight()["inFlight"] and time.monotonic() < deadline:
        time.sleep(0.1)
    assert lw.handle.in_flight()["inFlight"] == 0 and all(lw.record(i)["response"]["success"] for i in ids)


def test_blocking_wait_is_capped_then_202(lw):
    lw.put("sleepy", SLEEP_PY)
    response = lw.session.post(lw.base + "/actions/sleepy?blocking=true&timeout=200", json={"s": 1})
    assert response.status_code == 202
    activation_id = response.json()["activationId"]
    assert lw.record(activation_id)["response"]["result"] == {"slept": 1}
    assert (
        lw.session.post(lw.base + "/actions/sleepy?blocking=true&timeout=70000", json={}).json()["error"]
        == "Timeout must be number of milliseconds up to 60000."
    )


def test_application_error_is_502_and_keeps_the_sandbox(lw):
    lw.put("apperr", APP_ERROR_PY)
    first = lw.invoke("apperr")
    assert first.status_code == 502
    assert first.json()["response"]["status"] == "application error"
    assert first.json()["response"]["result"] == {"error": "bad input"}
    second = lw.invoke("apperr").json()
    assert annotation(second, "initTime") is None  # the same sandbox served it: no new init


def test_nodejs_and_zip_actions(lw):
    lw.put("njs", ECHO_JS, kind="nodejs:default")
    record = lw.invoke("njs", {"x": 3}).json()
    assert record["response"]["result"] == {"x": 3}
    assert annotation(record, "kind").startswith("nodejs:")
    assert any("stdout: hi from node" in line for line in record["logs"])

    def zipped(files):
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as archive:
            for name, text in files.items():
                archive.writestr(name, text)
        return base64.b64encode(buffer.getvalue()).decode()

    lw.put(
        "pyzip",
        zipped(
            {
                "__main__.py": "from helper import value\ndef main(a):\n    return {'v': value}\n",
                "helper.py": "value = 42\n",
            }
        ),
    )
    assert lw.invoke("pyzip").json()["response"]["result"] == {"v": 42}
    assert lw.session.get(lw.base + "/actions/pyzip").json()["exec"]["binary"] is True
    lw.put(
        "jszip",
        zipped({"package.json": '{"main": "lib.js"}', "lib.js": "exports.main = () => ({z: 1});"}),
        kind="nodejs:default",
    )
    assert lw.invoke("jszip").json()["response"]["result"] == {"z": 1}


def test_web_action_receives_raw_body(lw):
    code = (
        "import base64\ndef main(a):\n    body = base64.b64decode(a.get('__ow_body', ''))\n"
        "    return {'statusCode': 200, 'headers': {'Content-Type': 'application/json'}, "
        "'body': {'n': len(body), 'method': a['__ow_method']}}\n"
    )
    lw.put("webby", code, annotations=[{"key": "web-export", "value": True}, {"key": "raw-http", "value": True}])
    payload = bytes(range(256)) * 4
    response = requests.post(
        lw.handle.apihost + "/api/v1/web/guest/default/webby",
        data=payload,
        headers={"Content-Type": "application/octet-stream"},
        timeout=10,
    )
    assert response.status_code == 200, response.text
    assert response.json() == {"n": 1024, "method": "post"}
    assert "x-openwhisk-activation-id" in response.headers
    lw.put("notweb", ECHO_PY)
    assert (
        requests.post(lw.handle.apihost + "/api/v1/web/guest/default/notweb", data=b"x", timeout=5).status_code == 404
    )


def test_activation_list_filters_order_and_limits(lw):
    lw.put("lister", ECHO_PY)
    ids = []
    for i in range(4):
        ids.append(lw.invoke("lister", {"x": i}).json()["activationId"])
        time.sleep(0.005)
    listed = lw.session.get(lw.base + "/activations", params={"name": "lister", "limit": 200}).json()
    assert [r["activationId"] for r in listed] == ids[::-1]  # newest first
    assert "response" not in listed[0] and listed[0]["statusCode"] == 0
    assert annotation(listed[0], "waitTime") is not None  # annotations are in the summary too
    page = lw.session.get(
        lw.base + "/activations", params={"name": "lister", "limit": 2, "skip": 1, "docs": "true"}
    ).json()
    assert [r["activationId"] for r in page] == ids[::-1][1:3] and "response" in page[0]
    first = lw.record(ids[0])
    last = lw.record(ids[-1])
    window = lw.session.get(
        lw.base + "/activations", params={"name": "lister", "since": first["start"], "upto": last["start"]}
    ).json()
    assert {r["activationId"] for r in window} == set(ids)
    after = lw.session.get(lw.base + "/activations", params={"name": "lister", "since": last["start"] + 1}).json()
    assert after == []
    count = lw.session.get(lw.base + "/activations", params={"name": "lister", "count": "true"}).json()
    assert count == {"activations": 4}
    too_many = lw.session.get(lw.base + "/activations", params={"limit": 201})
    assert too_many.status_code == 400
    assert too_many.json()["error"] == "The value '201' is not in the range of 0 to 200 for activations."
    assert [r["activationId"] for r in lw.client.iter_activations(name="lister")] == ids[::-1]


def test_the_default_key_is_the_data_directorys_own_not_the_guest_key(lw):
    assert lw.handle.auth != GUEST_AUTH and lw.handle.namespace == "guest"
    assert lw.handle.auth == (lw.handle.data_dir / "auth.key").read_text().strip()
    assert lw.handle.apihost.startswith("http://127.0.0.1:")


def test_actions_see_openwhisk_environment_and_init_parameters(lw):
    code = (
        "import os\ndef main(args):\n    keys = ['__OW_API_HOST', '__OW_ACTIVATION_ID', '__OW_ACTION_NAME', '__OW_NAMESPACE',"
        " '__OW_DEADLINE', '__OW_API_KEY', 'SECRET']\n    return {k: os.environ.get(k) for k in keys}\n"
    )
    lw.put("envy", code, parameters=[{"key": "SECRET", "value": "s3", "init": True}])
    record = lw.invoke("envy").json()
    env = record["response"]["result"]
    assert env["__OW_API_HOST"] == lw.handle.apihost
    assert env["__OW_ACTIVATION_ID"] == record["activationId"]
    assert env["__OW_ACTION_NAME"] == "/guest/envy" and env["__OW_NAMESPACE"] == "guest"
    assert int(env["__OW_DEADLINE"]) > record["start"]
    assert env["__OW_API_KEY"] is None  # provide-api-key defaults to false, as OpenWhisk ≥ 1.0
    assert env["SECRET"] == "s3"


def test_nodejs_exception_is_developer_error_and_rejection_application_error(lw):
    lw.put("jsthrow", "function main() { throw new Error('boom'); }", kind="nodejs:default")
    record = lw.invoke("jsthrow").json()
    assert record["response"]["status"] == "action developer error"
    assert record["response"]["result"]["error"].startswith("An error has occurred: Error: boom")
    lw.put("jsreject", "function main() { return Promise.reject({error: 'nope'}); }", kind="nodejs:default")
    record = lw.invoke("jsreject").json()
    assert record["response"]["status"] == "application error"
    assert record["response"]["result"] == {"error": "nope"}


# -- issue 12: revisions, packaged records, auth on every path, what real clients see ----------------

V1_PY = "def main(args):\n    return {'v': 1}\n"
V2_PY = "def main(args):\n    return {'v': 2}\n"


def test_a_recreated_action_never_runs_in_the_old_sandbox(lw):
    lw.put("reborn", V1_PY)
    assert lw.invoke("reborn").json()["response"]["result"] == {"v": 1}
    assert lw.session.delete(lw.base + "/actions/reborn").status_code == 200
    lw.put("reborn", V2_PY)  # same name, same memory, same version 0.0.1: still a new revision
    record = lw.invoke("reborn").json()
    assert record["response"]["result"] == {"v": 2}
    assert annotation(record, "containerState") in ("cold", "recreated", "prewarmed")


def test_a_memory_change_never_reuses_a_sandbox_of_the_old_size(lw):
    lw.put("resized", V1_PY, memory=256)
    lw.invoke("resized")
    lw.put("resized", V1_PY, memory=128)
    record = lw.invoke("resized").json()
    assert annotation(record, "limits")["memory"] == 128
    assert annotation(record, "containerState") in ("cold", "recreated", "prewarmed")
    busy_or_idle = [sb for sb in lw.sandboxes("resized") if sb["state"] != "removing"]
    assert 128 in [sb["memory_mb"] for sb in busy_or_idle]


def test_packaged_action_records_live_in_the_invoking_namespace(lw):
    lw.put("tools/echo", ECHO_PY)
    record = lw.invoke("tools/echo", {"x": 9}).json()
    assert record["namespace"] == "guest" and record["name"] == "echo"
    assert annotation(record, "path") == "guest/tools/echo"
    got = lw.session.get(f"{lw.base}/activations/{record['activationId']}")
    assert got.status_code == 200 and got.json()["response"]["result"]["x"] == 9
    listed = lw.session.get(lw.base + "/activations", params={"limit": 200}).json()
    assert record["activationId"] in [r["activationId"] for r in listed]
    by_name = lw.session.get(lw.base + "/activations", params={"name": "tools/echo"}).json()
    assert [r["activationId"] for r in by_name] == [record["activationId"]]


def _every_authenticated_path(lw, activation_id):
    ns = "/api/v1/namespaces/_"
    return [
        ("GET", "/api/v1/namespaces"),
        ("GET", ns + "/limits"),
        ("GET", ns + "/actions"),
        ("GET", ns + "/actions/echo"),
        ("PUT", ns + "/actions/intruder"),
        ("DELETE", ns + "/actions/echo"),
        ("POST", ns + "/actions/echo"),
        ("POST", ns + "/actions/tools/echo"),
        ("GET", ns + "/activations"),
        ("GET", f"{ns}/activations/{activation_id}"),
        ("GET", f"{ns}/activations/{activation_id}/result"),
        ("GET", f"{ns}/activations/{activation_id}/logs"),
        ("GET", ns + "/packages"),
        ("GET", ns + "/triggers"),
        ("GET", ns + "/rules"),
        ("PUT", ns + "/triggers/t"),
        ("POST", ns + "/triggers/t"),
        ("PUT", ns + "/rules/r"),
        ("PUT", ns + "/packages/p"),
        ("GET", "/api/v1/namespaces/guest/actions"),
        ("GET", "/api/v1/unknown"),
        ("GET", "/localwhisk/v1/pool"),
        ("GET", "/localwhisk/v1/activations"),
    ]


def test_every_api_path_requires_the_key(lw):
    lw.put("echo", ECHO_PY)
    activation_id = lw.invoke("echo", {"x": 1}).json()["activationId"]
    for method, path in _every_authenticated_path(lw, activation_id):
        url = lw.handle.apihost + path
        missing = requests.request(method, url, json={}, timeout=5)
        assert missing.status_code == 401, (method, path, missing.status_code)
        assert (
            missing.json()["error"] == "The resource requires authentication, which was not supplied with the request"
        )
        assert missing.headers["WWW-Authenticate"].startswith("Basic")
        wrong = requests.request(method, url, json={}, auth=("23bc46b1-71f6-4ed5-8c54-816aa4f8c502", "nope"), timeout=5)
        assert wrong.status_code == 401, (method, path, wrong.status_code)
        assert wrong.json()["error"] == "The supplied authentication is invalid"
        garbled = requests.request(method, url, json={}, headers={"Authorization": "Basic %%%"}, timeout=5)
        assert garbled.status_code == 401, (method, path)
    # Nothing ran and nothing changed without the key.
    assert lw.session.get(lw.base + "/actions/intruder").status_code == 404
    assert lw.session.get(lw.base + "/actions/echo").status_code == 200


def test_root_without_the_key_shows_no_host_details(lw):
    public = requests.get(lw.handle.apihost + "/", timeout=5)
    assert public.status_code == 200 and public.json()["api_paths"] == ["/api/v1"]
    text = public.text
    assert 'localwhisk":{' not in text and str(lw.handle.data_dir) not in text and sys.executable not in text
    assert '"pid":' not in text and str(lw.handle.process.pid) not in text
    assert "data_dir" in lw.session.get(lw.handle.apihost + "/", timeout=5).json()["localwhisk"]


def test_api_info_carries_build_and_buildno(lw):
    info = requests.get(lw.handle.apihost + "/api/v1", timeout=5).json()
    assert info["api_version_path"] == "v1" and info["build"] and info["buildno"]


def test_triggers_rules_are_empty_and_creating_them_is_refused(lw):
    for collection in ("triggers", "rules"):
        response = lw.session.get(f"{lw.base}/{collection}")
        assert response.status_code == 200 and response.json() == []
        assert lw.session.get(f"{lw.base}/{collection}/x").status_code == 404
    assert isinstance(lw.session.get(f"{lw.base}/packages").json(), list)
    for path, word in (("triggers/t", "triggers"), ("rules/r", "rules")):
        refused = lw.session.put(f"{lw.base}/{path}", json={})
        assert refused.status_code == 400
        assert refused.json()["error"].startswith(f"localwhisk does not support {word}")
    fired = lw.session.post(f"{lw.base}/triggers/t", json={})
    assert fired.status_code == 400 and "does not support triggers" in fired.json()["error"]
    sequence = lw.session.put(
        lw.base + "/actions/seq", json={"exec": {"kind": "sequence", "components": ["/guest/echo"]}}
    )
    assert sequence.status_code == 400 and "does not support sequences" in sequence.json()["error"]
    route = requests.post(lw.handle.apihost + "/api/v1/web/whisk.system/apimgmt/createApi.http", json={}, timeout=5)
    assert route.status_code == 400 and "does not support API routes" in route.json()["error"]


@pytest.mark.parametrize(
    "name, message",
    [
        ("%2E%2E", "The name of the entity contains illegal characters."),
        (".hidden", "The name of the entity contains illegal characters."),
        ("%20lead", "The name of the entity contains illegal characters."),
        ("trail%20", "The name of the entity contains illegal characters."),
        ("dollar$", "The name of the entity contains illegal characters."),
        ("%C3%BCmlaut", "The name of the entity contains illegal characters."),
        ("a/b/c", "The name of the entity contains illegal characters."),
        ("x" * 257, "Name segement longer than allowed: 257 > 256."),
    ],
)
def test_entity_names_are_validated_as_openwhisk(lw, name, message):
    response = lw.session.put(
        f"{lw.base}/actions/{name}", json={"exec": {"kind": "python:3", "code": V1_PY}}, params={"overwrite": "true"}
    )
    assert response.status_code == 400 and response.json()["error"] == message


def test_legal_names_pass(lw):
    for name in ("a", "x" * 256, "ok-name_1.2@x&y", "with%20space", "pkg/a.b"):
        response = lw.session.put(
            f"{lw.base}/actions/{name}?overwrite=true", json={"exec": {"kind": "python:3", "code": V1_PY}}
        )
        assert response.status_code == 200, (name, response.text)


def test_memory_limit_error_is_openwhisks(lw):
    response = lw.session.put(
        lw.base + "/actions/huge?overwrite=true",
        json={"exec": {"kind": "python:3", "code": V1_PY}, "limits": {"memory": 100000}},
    )
    assert response.status_code == 400
    assert response.json()["error"] == (
        "The request content was malformed:\nmemory size 100000 MB exceeds allowed threshold of 2048 MB"
    )


def test_action_code_over_48_mb_is_refused(lw):
    limit = 48 * 1024 * 1024
    body = b'{"exec": {"kind": "python:3", "code": "' + b"#" * (limit + 1) + b'"}}'
    response = lw.session.put(
        lw.base + "/actions/bigcode?overwrite=true", data=body, headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 413
    assert response.json()["error"] == f"exec larger than allowed: {limit + 1} > {limit} bytes."
    assert lw.session.get(lw.base + "/actions/bigcode").status_code == 404


def test_json_nested_too_deeply_is_400_not_500(lw):
    lw.put("echo", ECHO_PY)
    for depth in (300, 100000):
        body = b'{"x":' + b"[" * depth + b"]" * depth + b"}"
        invoked = lw.session.post(
            lw.base + "/actions/echo?blocking=true", data=body, headers={"Content-Type": "application/json"}
        )
        assert invoked.status_code == 400, depth
        assert invoked.json()["error"].startswith("The request content was malformed")
        put = lw.session.put(
            lw.base + "/actions/deep?overwrite=true", data=body, headers={"Content-Type": "application/json"}
        )
        assert put.status_code == 400
    brackets_in_strings = b'{"x": "' + b"[" * 5000 + b'"}'
    assert (
        lw.session.post(
            lw.base + "/actions/echo?blocking=true",
            data=brackets_in_strings,
            headers={"Content-Type": "application/json"},
        ).status_code
        == 200
    )
    nested_ok = b'{"x":' + b"[" * 200 + b"]" * 200 + b"}"
    assert (
        lw.session.post(
            lw.base + "/actions/echo?blocking=true", data=nested_ok, headers={"Content-Type": "application/json"}
        ).status_code
        == 200
    )


def test_each_activation_sees_its_own_openwhisk_environment(lw):
    code = (
        "import os\ndef main(args):\n    keys = ['__OW_API_HOST', '__OW_API_KEY', '__OW_NAMESPACE', '__OW_ACTION_NAME',"
        " '__OW_ACTIVATION_ID', '__OW_DEADLINE']\n    return {k: os.environ.get(k) for k in keys}\n"
    )
    lw.put("envkey", code, timeout=30000, annotations=[{"key": "provide-api-key", "value": True}])
    first = lw.invoke("envkey").json()
    second = lw.invoke("envkey").json()
    assert annotation(second, "initTime") is None  # the same sandbox served both
    for record in (first, second):
        env = record["response"]["result"]
        assert env["__OW_ACTIVATION_ID"] == record["activationId"]
        assert env["__OW_API_KEY"] == lw.handle.auth and env["__OW_API_HOST"] == lw.handle.apihost
        assert env["__OW_NAMESPACE"] == "guest" and env["__OW_ACTION_NAME"] == "/guest/envkey"
        assert 0 < int(env["__OW_DEADLINE"]) - record["start"] <= 30000 + 1000


def test_packages_crud_parameters_and_not_empty_delete(lw):
    assert lw.session.get(lw.base + "/packages/nopkg").status_code == 404
    created = lw.session.put(lw.base + "/packages/shelf", json={"parameters": [{"key": "p", "value": "from-package"}]})
    assert created.status_code == 200
    doc = created.json()
    assert doc["name"] == "shelf" and doc["namespace"] == "guest" and doc["version"] == "0.0.1"
    assert doc["annotations"] == [] and doc["binding"] == {}
    again = lw.session.put(lw.base + "/packages/shelf", json={})
    assert again.status_code == 409 and again.json()["error"] == "resource already exists"
    updated = lw.session.put(lw.base + "/packages/shelf?overwrite=true", json={})
    assert updated.json()["version"] == "0.0.2" and updated.json()["parameters"] == [
        {"key": "p", "value": "from-package"}
    ]
    assert "shelf" in [p["name"] for p in lw.session.get(lw.base + "/packages").json()]
    lw.put("shelf/book", ECHO_PY)
    assert lw.invoke("shelf/book", {"x": 1}).json()["response"]["result"] == {"x": 1, "p": "from-package"}
    assert lw.invoke("shelf/book", {"x": 1, "p": "mine"}).json()["response"]["result"]["p"] == "mine"
    assert [a["name"] for a in lw.session.get(lw.base + "/packages/shelf").json()["actions"]] == ["book"]
    busy = lw.session.delete(lw.base + "/packages/shelf")
    assert busy.status_code == 409
    assert busy.json()["error"] == "Package not empty (contains 1 entity). Set force param or delete package contents."
    binding = lw.session.put(
        lw.base + "/packages/bound", json={"binding": {"namespace": "whisk.system", "name": "utils"}}
    )
    assert binding.status_code == 400 and "does not support package bindings" in binding.json()["error"]
    assert lw.session.delete(lw.base + "/packages/shelf?force=true").status_code == 200
    assert lw.session.get(lw.base + "/actions/shelf/book").status_code == 404
    assert lw.session.get(lw.base + "/packages/shelf").status_code == 404


# -- pins found by the mutation sample (bench/MUTATION-localwhisk.md) ------------------------------


def test_action_list_has_plain_and_packaged_actions_without_code(lw):
    lw.put("listed", ECHO_PY)
    lw.put("box/listed2", ECHO_PY)
    listed = lw.session.get(lw.base + "/actions", params={"limit": 200}).json()
    by_name = {(d["namespace"], d["name"]): d for d in listed}
    assert ("guest", "listed") in by_name and ("guest/box", "listed2") in by_name
    assert all("code" not in d["exec"] for d in listed)


def test_a_packages_actions_are_listed_at_actions_package_slash_as_wsk_asks(lw):
    """``wsk action list PACKAGE`` asks ``GET actions/PACKAGE/?limit=..&skip=..`` (openwhisk-client-go's
    ActionService.List); localwhisk answered 400 "illegal characters"."""
    lw.put("shelf2/one", ECHO_PY)
    lw.put("shelf2/two", ECHO_PY)
    lw.put("loose", ECHO_PY)
    listed = lw.session.get(lw.base + "/actions/shelf2/", params={"limit": 30, "skip": 0})
    assert listed.status_code == 200, listed.text
    assert sorted((d["namespace"], d["name"]) for d in listed.json()) == [
        ("guest/shelf2", "one"),
        ("guest/shelf2", "two"),
    ]
    assert lw.session.get(lw.base + "/actions/shelf2/", params={"limit": 1}).json()[0]["name"] in ("one", "two")
    assert lw.session.get(lw.base + "/actions/nothing/").json() == []
    assert lw.session.get(lw.base + "/actions/shelf2/one").json()["name"] == "one"


def test_other_namespace_is_403_naming_it(lw):
    for path in ("/actions", "/activations", "/packages", "/limits", "/actions/x", "/triggers"):
        response = lw.session.get(lw.handle.apihost + "/api/v1/namespaces/someone" + path)
        assert response.status_code == 403, path
        assert response.json()["error"] == "The supplied authentication is not authorized to access 'someone'.", path


def test_timeout_zero_and_bad_methods_and_limits_messages(lw):
    lw.put("echo", ECHO_PY)
    zero = lw.session.post(lw.base + "/actions/echo?blocking=true&timeout=0", json={})
    assert zero.status_code == 400 and zero.json()["error"] == "Timeout must be number of milliseconds up to 60000."
    patch = lw.session.patch(lw.base + "/actions/echo", json={})
    assert patch.status_code == 405
    assert patch.json()["error"] == "HTTP method not allowed, supported methods: GET, PUT, DELETE, POST"
    conc = lw.session.put(
        lw.base + "/actions/c?overwrite=true",
        json={"exec": {"kind": "python:3", "code": V1_PY}, "limits": {"concurrency": 5}},
    )
    assert conc.json()["error"] == "The request content was malformed:\nconcurrency 5 exceeds allowed threshold of 1"
    cobol = lw.session.put(
        lw.base + "/actions/c?overwrite=true", json={"exec": {"kind": "cobol:1", "code": "x"}}
    ).json()["error"]
    assert "python:3" in cobol and "nodejs:" in cobol


def test_info_fields_and_buildno(lw):
    info = lw.session.get(lw.handle.apihost + "/").json()
    assert info["support"] and info["limits"]["std_action_memory"] == 256 * 1048576
    assert (
        info["limits"]["max_action_memory"] == 2048 * 1048576 and info["limits"]["min_action_memory"] == 128 * 1048576
    )
    assert any(r["default"] for r in info["runtimes"]["python"])
    assert requests.get(lw.handle.apihost + "/api/v1", timeout=5).json()["buildno"].startswith("localwhisk-")


def test_activation_summary_names_the_action(lw):
    lw.put("summ", ECHO_PY)
    activation_id = lw.invoke("summ").json()["activationId"]
    listed = lw.session.get(lw.base + "/activations", params={"name": "summ"}).json()
    assert [(r["name"], r["activationId"]) for r in listed] == [("summ", activation_id)]


def test_non_blocking_invokes_reuse_the_warm_sandbox(lw):
    lw.put("nbwarm", ECHO_PY)
    first = lw.record(lw.invoke("nbwarm", blocking=False).json()["activationId"])
    second = lw.record(lw.invoke("nbwarm", blocking=False).json()["activationId"])
    assert annotation(first, "containerState") in ("cold", "recreated")
    assert annotation(second, "containerState") in ("warm", "resumed")


def test_provide_api_key_false_as_string_withholds_the_key(lw):
    code = "import os\ndef main(args):\n    return {'key': os.environ.get('__OW_API_KEY')}\n"
    lw.put("nokey", code, annotations=[{"key": "provide-api-key", "value": "false"}])
    assert lw.invoke("nokey").json()["response"]["result"] == {"key": None}


def test_web_action_text_and_html_bodies(lw):
    code = "def main(a):\n    return {'body': 'plain words', 'html': '<p>hi</p>'}\n"
    lw.put("webtext", code, annotations=[{"key": "web-export", "value": True}])
    http = requests.get(lw.handle.apihost + "/api/v1/web/guest/default/webtext.http", timeout=10)
    assert (
        http.status_code == 200 and http.text == "plain words" and http.headers["Content-Type"].startswith("text/html")
    )
    # OpenWhisk's .html takes "body" before "html" (WebActions.scala, resultAsHtml).
    html = requests.get(lw.handle.apihost + "/api/v1/web/guest/default/webtext.html", timeout=10)
    assert html.text == "plain words" and html.headers["Content-Type"].startswith("text/html")
