"""localwhisk's REST API through a real client: paths, bodies, status codes, messages, records."""

from __future__ import annotations

import base64
import io
import time
import zipfile

import pytest
import requests

from localwhisk.config import GUEST_AUTH
from localwhisk.embedded import start_embedded
from tests.localwhisk_driver import Lw, annotation

pytestmark = pytest.mark.timeout(60)

ECHO_PY = "def main(args):\n    print('hello', args.get('x'))\n    return {'x': args.get('x'), 'p': args.get('p')}\n"
ECHO_JS = "function main(args) { console.log('hi from node'); return {x: args.x}; }\n"
SLEEP_PY = "import time\ndef main(args):\n    time.sleep(float(args.get('s', 1)))\n    return {'slept': args.get('s', 1)}\n"
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
    r = lw.session.put(lw.base + "/actions/bad?overwrite=true", data=b"{not json", headers={"Content-Type": "application/json"})
    assert r.status_code == 400 and r.json()["error"].startswith("The request content was malformed")
    r = lw.session.put(lw.base + "/actions/bad?overwrite=true", json={"exec": {"kind": "cobol:1", "code": "x"}})
    assert r.status_code == 400 and "cobol:1" in r.json()["error"]
    r = lw.session.put(lw.base + "/actions/bad?overwrite=true", json={"exec": {"kind": "python:3", "code": "x"}, "limits": {"memory": 64}})
    assert r.status_code == 400 and "memory size 64 MB below allowed threshold of 128 MB" in r.json()["error"]


def test_blocking_invoke_shapes_and_record_fields(lw):
    lw.put("echo", ECHO_PY, parameters=[{"key": "p", "value": "dflt"}])
    response = lw.invoke("echo", {"x": 5})
    assert response.status_code == 200
    record = response.json()
    assert response.headers["x-openwhisk-activation-id"] == record["activationId"]
    assert len(record["activationId"]) == 32
    assert record["response"] == {"result": {"x": 5, "p": "dflt"}, "status": "success", "success": True,
                                  "size": len('{"x":5,"p":"dflt"}')}
    for key in ("namespace", "name", "subject", "version", "publish", "start", "end", "duration", "logs", "annotations"):
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
    assert lw.session.get(f"{lw.base}/activations/{record['activationId']}/result").json()["result"] == {"x": 5, "p": "dflt"}
    assert lw.session.get(f"{lw.base}/activations/{record['activationId']}/logs").json()["logs"] == record["logs"]


def test_non_blocking_invoke_and_malformed_body(lw):
    lw.put("echo2", ECHO_PY)
    response = lw.invoke("echo2", {"x": 1}, blocking=False)
    assert response.status_code == 202
    activation_id = response.json()["activationId"]
    assert response.headers["x-openwhisk-activation-id"] == activation_id
    assert lw.record(activation_id)["response"]["result"]["x"] == 1
    bad = lw.session.post(lw.base + "/actions/echo2?blocking=true", data=b"{oops", headers={"Content-Type": "application/json"})
    assert bad.status_code == 400 and bad.json()["error"].startswith("The request content was malformed")
    assert lw.session.post(lw.base + "/actions/nothere?blocking=true", json={}).status_code == 404


def test_blocking_wait_is_capped_then_202(lw):
    lw.put("sleepy", SLEEP_PY)
    response = lw.session.post(lw.base + "/actions/sleepy?blocking=true&timeout=200", json={"s": 1})
    assert response.status_code == 202
    activation_id = response.json()["activationId"]
    assert lw.record(activation_id)["response"]["result"] == {"slept": 1}
    assert lw.session.post(lw.base + "/actions/sleepy?blocking=true&timeout=70000", json={}).json()["error"] == \
        "Timeout must be number of milliseconds up to 60000."


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

    lw.put("pyzip", zipped({"__main__.py": "from helper import value\ndef main(a):\n    return {'v': value}\n", "helper.py": "value = 42\n"}))
    assert lw.invoke("pyzip").json()["response"]["result"] == {"v": 42}
    assert lw.session.get(lw.base + "/actions/pyzip").json()["exec"]["binary"] is True
    lw.put("jszip", zipped({"package.json": '{"main": "lib.js"}', "lib.js": "exports.main = () => ({z: 1});"}), kind="nodejs:default")
    assert lw.invoke("jszip").json()["response"]["result"] == {"z": 1}


def test_web_action_receives_raw_body(lw):
    code = ("import base64\ndef main(a):\n    body = base64.b64decode(a.get('__ow_body', ''))\n"
            "    return {'statusCode': 200, 'headers': {'Content-Type': 'application/json'}, "
            "'body': {'n': len(body), 'method': a['__ow_method']}}\n")
    lw.put("webby", code, annotations=[{"key": "web-export", "value": True}, {"key": "raw-http", "value": True}])
    payload = bytes(range(256)) * 4
    response = requests.post(lw.handle.apihost + "/api/v1/web/guest/default/webby", data=payload,
                             headers={"Content-Type": "application/octet-stream"}, timeout=10)
    assert response.status_code == 200, response.text
    assert response.json() == {"n": 1024, "method": "post"}
    assert "x-openwhisk-activation-id" in response.headers
    lw.put("notweb", ECHO_PY)
    assert requests.post(lw.handle.apihost + "/api/v1/web/guest/default/notweb", data=b"x", timeout=5).status_code == 404


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
    page = lw.session.get(lw.base + "/activations", params={"name": "lister", "limit": 2, "skip": 1, "docs": "true"}).json()
    assert [r["activationId"] for r in page] == ids[::-1][1:3] and "response" in page[0]
    first = lw.record(ids[0])
    last = lw.record(ids[-1])
    window = lw.session.get(lw.base + "/activations", params={"name": "lister", "since": first["start"], "upto": last["start"]}).json()
    assert {r["activationId"] for r in window} == set(ids)
    after = lw.session.get(lw.base + "/activations", params={"name": "lister", "since": last["start"] + 1}).json()
    assert after == []
    count = lw.session.get(lw.base + "/activations", params={"name": "lister", "count": "true"}).json()
    assert count == {"activations": 4}
    too_many = lw.session.get(lw.base + "/activations", params={"limit": 201})
    assert too_many.status_code == 400
    assert too_many.json()["error"] == "The value '201' is not in the range of 0 to 200 for activations."
    assert [r["activationId"] for r in lw.client.iter_activations(name="lister")] == ids[::-1]


def test_guest_key_is_the_default(lw):
    assert lw.handle.auth == GUEST_AUTH and lw.handle.namespace == "guest"
    assert lw.handle.apihost.startswith("http://127.0.0.1:")


def test_actions_see_openwhisk_environment_and_init_parameters(lw):
    code = ("import os\ndef main(args):\n    keys = ['__OW_API_HOST', '__OW_ACTIVATION_ID', '__OW_ACTION_NAME', '__OW_NAMESPACE',"
            " '__OW_DEADLINE', '__OW_API_KEY', 'SECRET']\n    return {k: os.environ.get(k) for k in keys}\n")
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
