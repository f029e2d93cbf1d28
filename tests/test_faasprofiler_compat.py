"""FaaSProfiler's workloads unchanged: one workload of FaaSProfiler's shape per key it ever
documented or used (written here, not copied), each accepted with its meaning; the Host header of
``instances.*.host`` reaches the server; ``serverless_platform`` is recorded in the manifest."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from faasprof.platforms.openwhisk.connection import Connection
from faasprof.platforms.registry import prepare_request
from faasprof.workload.access import Grants
from faasprof.workload.spec import load_workload


def faasprofiler_workload(**changes) -> dict:
    """The skeleton every FaaSProfiler workload has: these six top-level keys, always present."""
    data = {
        "test_name": "example_test",
        "test_duration_in_seconds": 15,
        "random_seed": 100,
        "blocking_cli": False,
        "instances": {
            "instance1": {"application": "my-action", "distribution": "Poisson", "rate": 2, "activity_window": [5, 10]}
        },
        "perf_monitoring": {"runtime_script": None, "post_script": None},
    }
    data.update(changes)
    return data


def load(tmp_path: Path, data: dict):
    path = tmp_path / "workload_configs.json"
    path.write_text(json.dumps(data, indent=4))
    # FaaSProfiler's workloads name their cluster's hosts: its user passes --allow-remote.
    return load_workload(path, grants=Grants(allow_remote=True))


# (key, workload, check of the resolved workload)
CASES = [
    ("test_name", faasprofiler_workload(test_name="primes_test"), lambda w: w.test_name == "primes_test"),
    ("test_duration_in_seconds", faasprofiler_workload(test_duration_in_seconds=5760), lambda w: w.duration_s == 5760),
    ("random_seed int", faasprofiler_workload(random_seed=7), lambda w: w.seed == 7 and not w.seed_was_null),
    ("random_seed null", faasprofiler_workload(random_seed=None), lambda w: w.seed_was_null),
    ("blocking_cli", faasprofiler_workload(blocking_cli=True), lambda w: w.instance("instance1").blocking),
    ("endpoint absent", faasprofiler_workload(), lambda w: w.endpoint == "local_openwhisk"),
    (
        "endpoint local_openwhisk",
        faasprofiler_workload(endpoint="local_openwhisk"),
        lambda w: w.endpoint == "local_openwhisk",
    ),
    (
        "serverless_platform",
        faasprofiler_workload(serverless_platform="openwhisk"),
        lambda w: w.resolved()["serverless_platform"] == "openwhisk",
    ),
    (
        "application outside the catalogue",
        faasprofiler_workload(
            instances={
                "instance1": {
                    "application": "primes-python",
                    "distribution": "Uniform",
                    "rate": 1.5,
                    "activity_window": [5, 15],
                }
            }
        ),
        lambda w: (
            w.instance("instance1").function == "primes-python" and any("primes-python" in line for line in w.warnings)
        ),
    ),
    (
        "distribution Uniform",
        faasprofiler_workload(
            instances={
                "instance2": {
                    "application": "example_app1",
                    "distribution": "Uniform",
                    "rate": 10,
                    "activity_window": [5, 10],
                }
            }
        ),
        lambda w: w.instance("instance2").distribution == "Uniform",
    ),
    (
        "activity_window null",
        faasprofiler_workload(
            instances={"i": {"application": "a", "distribution": "Poisson", "rate": 1, "activity_window": None}}
        ),
        lambda w: w.instance("i").window_s == (0.0, 15.0),
    ),
    (
        "activity_window absent",
        faasprofiler_workload(instances={"i": {"application": "a", "distribution": "Poisson", "rate": 1}}),
        lambda w: w.instance("i").window_s == (0.0, 15.0),
    ),
    (
        "interarrivals_list",
        faasprofiler_workload(
            instances={"instance3": {"application": "example_app2", "interarrivals_list": [5, 0.13, 0.15, 0.8]}}
        ),
        lambda w: w.instance("instance3").distribution == "Trace" and w.instance("instance3").planned_estimate == 4,
    ),
    (
        "param_file",
        faasprofiler_workload(
            instances={
                "instance4": {
                    "application": "example_app3",
                    "param_file": "param_file.json",
                    "distribution": "Poisson",
                    "rate": 55,
                    "activity_window": [5, 10],
                }
            }
        ),
        lambda w: w.instance("instance4").params == {"n": 10},
    ),
    (
        "data_file",
        faasprofiler_workload(
            instances={
                "i": {"application": "img-resize", "data_file": "picture.jpg", "distribution": "Poisson", "rate": 1}
            }
        ),
        lambda w: w.instance("i").data_file.name == "picture.jpg" and w.instance("i").data_mode == "web",
    ),
    (
        "generic url, data and host",
        faasprofiler_workload(
            endpoint="generic",
            serverless_platform="generic",
            test_duration_in_seconds=5760,
            instances={
                "instance_0": {
                    "application": "application-0a1b",
                    "url": "http://application-0a1b.default.127.0.0.1.sslip.io/hello",
                    "host": "application-0a1b.default.127.0.0.1.sslip.io",
                    "data": {},
                    "interarrivals_list": [1.0, 0.09, 479.9],
                }
            },
        ),
        lambda w: (
            w.instance("instance_0").host == "application-0a1b.default.127.0.0.1.sslip.io"
            and w.instance("instance_0").url.endswith("/hello")
        ),
    ),
    (
        "perf_monitoring runtime_script",
        faasprofiler_workload(perf_monitoring={"runtime_script": "monitor.sh", "post_script": None}),
        lambda w: w.runtime_script is not None and w.runtime_script.name == "monitor.sh",
    ),
    (
        "FaaSProfiler's own monitoring script",
        faasprofiler_workload(
            perf_monitoring={"runtime_script": "monitoring/RuntimeMonitoring.sh", "post_script": None}
        ),
        lambda w: (
            w.runtime_script is None
            and any(
                "is FaaSProfiler's monitoring script, not part of faasprof; the run goes on without it" in line
                for line in w.warnings
            )
        ),
    ),
    (
        "perf_monitoring post_script",
        faasprofiler_workload(perf_monitoring={"runtime_script": None, "post_script": "after.sh"}),
        lambda w: w.post_script is not None and w.post_script.name == "after.sh",
    ),
]


@pytest.mark.parametrize("data,check", [(d, c) for _, d, c in CASES], ids=[k for k, _, _ in CASES])
def test_faasprofiler_key_accepted_with_its_meaning(tmp_path, data, check):
    (tmp_path / "param_file.json").write_text(json.dumps({"n": 10}))
    (tmp_path / "picture.jpg").write_bytes(b"\xff\xd8\xff\xe0fake jpeg")
    for script in ("monitor.sh", "after.sh"):
        (tmp_path / script).write_text("#!/bin/sh\nexit 0\n")
    workload = load(tmp_path, data)
    assert check(workload)


def test_host_is_the_host_header_of_openwhisk_requests_too(tmp_path):
    workload = load(
        tmp_path,
        faasprofiler_workload(
            instances={"i": {"application": "a", "distribution": "Poisson", "rate": 1, "host": "ingress.example"}}
        ),
    )
    request = prepare_request(workload.instance("i"), Connection("http://127.0.0.1:3233", "u:k", "guest"))
    assert b"\r\nHost: ingress.example\r\n" in request.payload
    without = load(tmp_path, faasprofiler_workload())
    assert (
        b"\r\nHost: 127.0.0.1:3233\r\n"
        in prepare_request(without.instance("instance1"), Connection("http://127.0.0.1:3233", "u:k", "guest")).payload
    )


class _Recorder(BaseHTTPRequestHandler):
    hosts: list[str] = []

    def log_message(self, *args):
        pass

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        type(self).hosts.append(self.headers.get("Host"))
        body = b"{}"
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.mark.slow
def test_generic_run_sends_the_host_header_and_records_serverless_platform(cli, tmp_path, isolated_home):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    _Recorder.hosts = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        port = server.server_address[1]
        data = faasprofiler_workload(
            endpoint="generic",
            serverless_platform="knative",
            test_duration_in_seconds=2,
            instances={
                "instance_0": {
                    "application": "app-0",
                    "url": f"http://127.0.0.1:{port}/hello",
                    "host": "app-0.default.example.com",
                    "data": {},
                    "interarrivals_list": [0.2, 0.2, 0.2],
                },
                "instance_1": {
                    "application": "app-1",
                    "url": f"http://127.0.0.1:{port}/hello",
                    "data": {},
                    "interarrivals_list": [0.3],
                },
            },
        )
        path = tmp_path / "generic.json"
        path.write_text(json.dumps(data))
        done = cli("run", path, "--out", tmp_path / "runs", "--quiet", timeout=120)
        assert done.returncode == 0, done.stderr
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
    assert sorted(_Recorder.hosts) == sorted(["app-0.default.example.com"] * 3 + [f"127.0.0.1:{port}"])
    run_dir = Path(done.stdout.strip().splitlines()[-1])
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["workload"]["serverless_platform"] == "knative"
    assert manifest["workload"]["instances"]["instance_0"]["host"] == "app-0.default.example.com"
