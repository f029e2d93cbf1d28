"""localwhisk's isolation docker: each sandbox a real container speaking the action protocol.

Needs a running Docker daemon and faasprof's runtime images (./setup.sh --dev provides both);
without them every test here but the last skips, naming the reason and the fix. Containers are
found through their owner label (the server's pid), so concurrent localwhisks do not interfere.
"""

from __future__ import annotations

import asyncio
import base64
import io
import json
import os
import signal
import socket
import subprocess
import time
import urllib.request
import venv
import zipfile
from datetime import datetime

import pytest

from faasprof.docker import bridge_gateway, docker_problem, interface_ipv4
from faasprof.errors import ConfigError
from faasprof.localwhisk.docker_sandbox import (
    LABEL_INSTANCE,
    LABEL_OWNER_PID,
    LABEL_OWNER_START,
    NOT_PAUSED,
    DockerError,
)
from faasprof.localwhisk.embedded import start_embedded
from faasprof.localwhisk.pool import Pool
from faasprof.outcomes import SHARED_TMP_FRAGMENT
from tests.localwhisk_driver import SANDBOX_KEYS, Lw, annotation

pytestmark = [pytest.mark.timeout(180), pytest.mark.slow]  # containers start in seconds each

PROBLEM = docker_problem()
needs_docker = pytest.mark.skipif(PROBLEM is not None, reason=f"isolation docker unavailable: {PROBLEM}")

INSPECT_PY = """import os, socket
def main(args):
    print('stdout line', flush=True)
    import sys; print('stderr line', file=sys.stderr, flush=True)
    env = {k: v for k, v in os.environ.items() if k.startswith('__OW_')}
    with open('/proc/1/cmdline', 'rb') as f:
        pid1 = f.read().replace(b'\\0', b' ').decode()
    return {'hostname': socket.gethostname(), 'pid1': pid1, 'env': env, 'x': args.get('x')}
"""
NOOP_PY = "def main(args):\n    return {'ok': True}\n"
CRASH_PY = "import os\ndef main(args):\n    os._exit(3)\n"
OOM_PY = "def main(args):\n    blob = bytearray(400 * 1024 * 1024)\n    return {'n': len(blob)}\n"


def containers(owner_pid: int, all_states: bool = True) -> list[dict]:
    """``docker ps`` rows (name, status, labels) of one localwhisk server's containers."""
    argv = ["docker", "ps", "--no-trunc", "--filter", f"label={LABEL_OWNER_PID}={owner_pid}", "--format", "{{json .}}"]
    if all_states:
        argv.insert(2, "-a")
    out = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=True).stdout
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def inspect(name: str) -> dict:
    out = subprocess.run(["docker", "inspect", name], capture_output=True, text=True, timeout=30, check=True).stdout
    return json.loads(out)[0]


def docker_lw(tmp_path, **settings):
    return start_embedded(data_dir=tmp_path / "lw", isolation="docker", **settings)


@needs_docker
def test_python_action_runs_in_its_own_container_started_like_openwhisk(tmp_path):
    with docker_lw(tmp_path, pause_grace_ms=50, user_memory_mb=1024) as handle:
        assert handle.settings["isolation"] == "docker"
        lw = Lw(handle)
        lw.put("inspect", INSPECT_PY, memory=256, annotations=[{"key": "provide-api-key", "value": True}])
        before_ns = time.time_ns()
        record = lw.invoke("inspect", {"x": 7}).json()
        assert record["response"]["success"], record["response"]
        result = record["response"]["result"]
        # Own UTS and PID namespaces: the container's hostname, and PID 1 is the action proxy.
        assert result["hostname"] != socket.gethostname()
        assert "actionproxy.py" in result["pid1"]
        assert result["x"] == 7
        env = result["env"]
        # The container's loopback is its own: the API host is the bridge gateway, where the server listens too.
        api_host = env["__OW_API_HOST"]
        assert api_host.startswith("http://") and not api_host.startswith("http://127.") and api_host != handle.apihost
        with urllib.request.urlopen(api_host + "/", timeout=5) as response:
            assert response.status == 200
        assert env["__OW_NAMESPACE"] == "guest" and env["__OW_ACTION_NAME"] == "/guest/inspect"
        assert env["__OW_ACTIVATION_ID"] == record["activationId"]
        assert env["__OW_API_KEY"] == handle.auth
        assert int(env["__OW_DEADLINE"]) > before_ns // 1_000_000
        assert any(line.endswith("stdout: stdout line") for line in record["logs"]), record["logs"]
        assert any(line.endswith("stderr: stderr line") for line in record["logs"]), record["logs"]
        assert not any("XXX_THE_END" in line for line in record["logs"])

        # Cold start = a real container start: created after the request, initialised over HTTP.
        assert annotation(record, "containerState") == "cold" and annotation(record, "initTime") is not None
        rows = containers(handle.pid)
        assert len(rows) == 1
        info = inspect(rows[0]["ID"])
        created_ns = int(datetime.fromisoformat(info["Created"][:26].rstrip("Z") + "+00:00").timestamp() * 1e9)
        assert created_ns >= before_ns - 1_000_000_000  # clock granularity and daemon rounding
        assert info["Config"]["Hostname"] == result["hostname"][: len(info["Config"]["Hostname"])]
        host_config = info["HostConfig"]
        assert host_config["Memory"] == host_config["MemorySwap"] == 256 * 1024 * 1024
        assert host_config["CpuShares"] == 1024 // (1024 // 256)
        assert {"Name": "nofile", "Soft": 1024, "Hard": 1024} in host_config["Ulimits"]
        assert host_config["NetworkMode"] == "bridge" and info["NetworkSettings"]["IPAddress"]
        labels = info["Config"]["Labels"]
        assert labels[LABEL_OWNER_PID] == str(handle.pid) and labels[LABEL_OWNER_START]
        assert str(tmp_path / "lw") in labels[LABEL_INSTANCE]
        (sandbox,) = lw.pool()["sandboxes"]
        assert list(sandbox) == SANDBOX_KEYS + ["container", "container_id", "ip"]
        assert (sandbox["action"], sandbox["container"], sandbox["ip"]) == (
            "inspect",
            rows[0]["Names"],
            info["NetworkSettings"]["IPAddress"],
        )
        assert rows[0]["ID"].startswith(sandbox["container_id"]) and len(sandbox["container_id"]) == 12

        # Idle past the grace period → paused, as docker ps shows it; the next call resumes it.
        assert Lw(handle).wait_for(lambda: "Paused" in containers(handle.pid)[0]["Status"], 10.0)
        assert inspect(rows[0]["ID"])["State"]["Paused"] is True
        resumed = lw.invoke("inspect", {"x": 8}).json()
        assert annotation(resumed, "containerState") == "resumed", resumed["annotations"]
        assert resumed["response"]["result"]["hostname"] == result["hostname"]
    assert containers(handle.pid) == [], "containers left after a clean stop"


@needs_docker
def test_a_failed_resume_is_the_platforms_fault_never_the_users_call(tmp_path):
    """A container unpaused behind localwhisk's back answers the next unpause "is not paused" (500
    on Docker 20.10, 409 later): it runs, and the call succeeds on it. A container gone while paused
    (its unpause fails) is taken out of service and the call runs on a new one, a cold start; the
    user's call was charged as "exited unexpectedly" before, and nothing was logged."""
    with docker_lw(tmp_path, pause_grace_ms=50, user_memory_mb=1024) as handle:
        lw = Lw(handle)
        lw.put("echo", NOOP_PY, memory=256)
        first = lw.invoke("echo", {}).json()
        assert first["response"]["success"], first["response"]
        (row,) = containers(handle.pid)
        assert lw.wait_for(lambda: "Paused" in containers(handle.pid)[0]["Status"], 10.0)
        subprocess.run(["docker", "unpause", row["ID"]], check=True, capture_output=True, timeout=30)
        again = lw.invoke("echo", {}).json()
        assert again["response"]["success"], again
        assert annotation(again, "containerState") == "resumed"

        assert lw.wait_for(lambda: "Paused" in containers(handle.pid)[0]["Status"], 10.0)
        subprocess.run(["docker", "rm", "-f", row["ID"]], check=True, capture_output=True, timeout=30)
        third = lw.invoke("echo", {}).json()
        assert third["response"]["success"], third
        assert annotation(third, "containerState") == "cold"
    log = (tmp_path / "lw" / "localwhisk.log").read_text()
    assert "sandbox wsk1 (echo) gone: exited with status 137 (killed by signal 9, not by localwhisk)" in log, log[
        -3000:
    ]


@needs_docker
def test_a_container_has_its_own_tmp_and_its_failures_never_say_it_shares_the_hosts(tmp_path):
    """A container's /tmp is its own: its failures naming a /tmp path got localwhisk's 'this
    sandbox shares /tmp' line (the process sandbox's default state), and the log said python:3
    sandboxes share the host's /tmp ('not started'), under isolation docker."""
    with docker_lw(tmp_path, pause_grace_ms=50, user_memory_mb=1024) as handle:
        lw = Lw(handle)
        lw.put("reads", "def main(args):\n    return {'error': str(open('/tmp/faasprof-absent/x'))}\n", memory=256)
        record = lw.invoke("reads", {}).json()
    assert "/tmp/faasprof-absent" in json.dumps(record["response"]), record["response"]
    assert not any(SHARED_TMP_FRAGMENT in line for line in record.get("logs") or []), record["logs"]
    assert "share the host's /tmp" not in (tmp_path / "lw" / "localwhisk.log").read_text()


class _Stub:
    """A sandbox as the pool's resume step sees it."""

    def __init__(self, resume, state="paused"):
        self._resume, self.state, self.dead, self.death_reason = resume, state, False, None

    def resume(self):
        return self._resume()

    def note_death(self, why):
        self.death_reason = self.death_reason or why


def test_the_pool_takes_a_sandbox_whose_resume_failed_out_of_service():
    async def unpause_failed():
        raise DockerError(500, "Cannot unpause container abc: OCI runtime resume failed")

    async def resumed():
        return None

    def thaw_failed():
        raise OSError("freezer.state: No such file or directory")

    async def check():
        loop = asyncio.get_running_loop()
        failed = _Stub(lambda: loop.create_task(unpause_failed()))
        assert await Pool._resumed(None, failed) is False
        thawless = _Stub(thaw_failed)
        assert await Pool._resumed(None, thawless) is False and "freezer.state" in thawless.death_reason
        assert await Pool._resumed(None, _Stub(lambda: loop.create_task(resumed()))) is True
        assert (
            await Pool._resumed(None, _Stub(lambda: None, state="removing")) is False
        )  # its pause failed: it is going

    asyncio.run(check())


def test_docker_s_answers_for_a_running_container_are_recognised():
    assert NOT_PAUSED.search("Error response from daemon: Container 4f2a is not paused")  # 20.10: 500
    assert NOT_PAUSED.search("Container 4f2a is not paused")  # 23+: 409
    assert not NOT_PAUSED.search("OCI runtime resume failed: unable to thaw")


@needs_docker
def test_direct_freezer_pause_resumes_and_stops_clean(tmp_path):
    with docker_lw(tmp_path, pause_grace_ms=50, docker_pause="freezer") as handle:
        assert handle.settings["pause_mechanism"] == "container's cgroup freezer, written directly"
        lw = Lw(handle)
        lw.put("noop", NOOP_PY)
        assert lw.invoke("noop").json()["response"]["success"]
        assert lw.wait_for(lambda: [sb["state"] for sb in lw.sandboxes("noop")] == ["paused"], 5.0)
        container_id = containers(handle.pid)[0]["ID"]
        freezer = f"/sys/fs/cgroup/freezer/docker/{container_id}/freezer.state"
        if os.path.exists(freezer):
            assert open(freezer).read().strip() == "FROZEN"
        resumed = lw.invoke("noop").json()
        assert annotation(resumed, "containerState") == "resumed" and resumed["response"]["success"]
        assert lw.wait_for(lambda: [sb["state"] for sb in lw.sandboxes("noop")] == ["paused"], 5.0)
    # Stopped while frozen: thawed, then removed.
    assert containers(handle.pid) == []


@needs_docker
def test_nodejs_and_zip_with_virtualenv(tmp_path):
    # A virtualenv made on the host (same Python minor as the image's 3.11 is not needed: only
    # pure-Python packages), with a package only the virtualenv has.
    env_dir = tmp_path / "build" / "virtualenv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    site = next(env_dir.glob("lib/python3*/site-packages"))
    (site / "faasprof_venv_probe.py").write_text("MAGIC = 'from the virtualenv'\n")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(
            "__main__.py",
            "import faasprof_venv_probe, helper\ndef main(a):\n    return {'m': faasprof_venv_probe.MAGIC, 'h': helper.VALUE}\n",
        )
        archive.writestr("helper.py", "VALUE = 42\n")
        for path in env_dir.rglob("*"):
            if path.is_file() and not path.is_symlink():
                archive.write(path, "virtualenv/" + str(path.relative_to(env_dir)))
    code = base64.b64encode(buffer.getvalue()).decode()
    with docker_lw(tmp_path) as handle:
        lw = Lw(handle)
        lw.put("venvzip", code)
        record = lw.invoke("venvzip").json()
        assert record["response"]["result"] == {"m": "from the virtualenv", "h": 42}, record["response"]
        lw.put(
            "js",
            "function main(a) { console.log('node says hi'); return {pid: process.pid, v: process.version, id: process.env.__OW_ACTIVATION_ID}; }",
            kind="nodejs:20",
        )
        record = lw.invoke("js").json()
        result = record["response"]["result"]
        assert result["v"].startswith("v20.") and result["id"] == record["activationId"]
        assert result["pid"] < 100  # its own PID namespace
        assert any(line.endswith("stdout: node says hi") for line in record["logs"])
        images = sorted(inspect(row["ID"])["Config"]["Image"] for row in containers(handle.pid))
        assert images == ["faasprof/action-nodejs-v20:latest", "faasprof/action-python-v3.11:latest"]


@needs_docker
def test_crash_destroys_the_container_and_idle_timeout_removes_it(tmp_path):
    with docker_lw(tmp_path, pause_grace_ms=50, idle_timeout_s=1.0) as handle:
        lw = Lw(handle)
        lw.put("crash", CRASH_PY)
        record = lw.invoke("crash").json()
        assert record["response"]["status"] == "action developer error"
        assert "exited unexpectedly" in record["response"]["result"]["error"]
        assert lw.wait_for(lambda: containers(handle.pid) == [], 10.0), containers(handle.pid)
        # 128 MB container, 400 MB allocation: the kernel's OOM killer, reported as OpenWhisk does.
        lw.put("oom", OOM_PY, memory=128)
        record = lw.invoke("oom").json()
        assert record["response"]["status"] == "action developer error", record["response"]
        assert record["response"]["result"]["error"] == "The action exhausted its memory and was aborted."
        assert lw.wait_for(lambda: containers(handle.pid) == [], 10.0), containers(handle.pid)
        lw.put("noop", NOOP_PY)
        assert lw.invoke("noop").json()["response"]["success"]
        assert lw.wait_for(lambda: len(containers(handle.pid)) == 1, 5.0)
        # paused after 50 ms, removed 1 s later
        assert lw.wait_for(lambda: containers(handle.pid) == [], 15.0), containers(handle.pid)
        assert lw.sandboxes("noop") == []


@needs_docker
@pytest.mark.host_exclusive
def test_kill_9_leaves_containers_that_the_next_start_reaps_but_not_a_live_ones(tmp_path):
    live = docker_lw(tmp_path / "live")
    try:
        Lw(live).put("noop", NOOP_PY)
        assert Lw(live).invoke("noop").json()["response"]["success"]
        victim = docker_lw(tmp_path / "victim")
        Lw(victim).put("noop", NOOP_PY)
        assert Lw(victim).invoke("noop").json()["response"]["success"]
        orphan_names = [row["Names"] for row in containers(victim.pid)]
        assert len(orphan_names) == 1
        os.kill(victim.pid, signal.SIGKILL)
        victim.process.wait(timeout=10)
        assert [row["Names"] for row in containers(victim.pid)] == orphan_names  # left behind by the crash
        with docker_lw(tmp_path / "next") as successor:
            # (other dead servers' leftovers on this shared daemon may be reaped too)
            assert set(orphan_names) <= set(successor.settings["stale_containers_removed"])
            assert containers(victim.pid) == []
            assert len(containers(live.pid)) == 1, "a live localwhisk's container was reaped"
        victim.stop()
    finally:
        live.stop()
    assert containers(live.pid) == []


@needs_docker
def test_a_server_that_must_be_killed_has_its_containers_removed_by_stop(tmp_path):
    # A server that does not stop in time (here: frozen) is killed and cannot remove its own
    # containers: stop() removes them, so none wait for the next localwhisk on this host.
    handle = docker_lw(tmp_path)
    try:
        lw = Lw(handle)
        lw.put("noop", NOOP_PY)
        assert lw.invoke("noop").json()["response"]["success"]
        assert len(containers(handle.pid)) == 1
        os.kill(handle.pid, signal.SIGSTOP)
        assert handle.stop(timeout_s=1) == -signal.SIGKILL
        assert containers(handle.pid) == []
    finally:
        handle.stop()


def test_docker_unavailable_is_one_line_and_exit_3(tmp_path, cli):
    proc = cli(
        "local",
        "start",
        "--isolation",
        "docker",
        "--port",
        "0",
        "--data-dir",
        str(tmp_path / "lw"),
        env={"FAASPROF_DOCKER_SOCKET": str(tmp_path / "no-docker.sock")},
        timeout=60,
    )
    assert proc.returncode == 3, proc.stderr
    lines = [line for line in proc.stderr.strip().splitlines() if line.strip()]
    assert "isolation docker" in lines[-1] and "no-docker.sock" in lines[-1] and "dockerd" in lines[-1], proc.stderr


def test_docker_settings_are_validated_up_front(tmp_path):
    with pytest.raises(ConfigError, match="docker_pause: must be api or freezer"):
        start_embedded(data_dir=tmp_path / "a", isolation="docker", docker_pause="sigstop")
    with pytest.raises(ConfigError, match="docker_images: 'ruby=x' is not FAMILY=IMAGE"):
        start_embedded(data_dir=tmp_path / "b", isolation="docker", docker_images="ruby=x")


# The bridge network as Debian's docker.io 20.10.24 reports it (GET /networks/bridge on a fresh
# machine after ./setup.sh --dev): the IPAM config has the subnet and no gateway.
DEBIAN_BRIDGE = {
    "Name": "bridge",
    "Driver": "bridge",
    "IPAM": {"Driver": "default", "Options": None, "Config": [{"Subnet": "172.17.0.0/16"}]},
    "Options": {"com.docker.network.bridge.default_bridge": "true", "com.docker.network.bridge.name": "docker0"},
}


def test_bridge_gateway_without_ipam_gateway_is_the_bridge_interfaces_address():
    assert bridge_gateway(DEBIAN_BRIDGE, {"docker0": "172.17.0.1"}.get) == (
        "172.17.0.1",
        "the address of interface docker0",
    )
    # The interface cannot be read (another network namespace): the subnet's first host, not loopback.
    assert bridge_gateway(DEBIAN_BRIDGE, lambda name: None) == ("172.17.0.1", "the first host of subnet 172.17.0.0/16")
    # An address outside the bridge's subnet is not the bridge's.
    assert bridge_gateway(DEBIAN_BRIDGE, lambda name: "10.0.0.5")[0] == "172.17.0.1"
    named = {**DEBIAN_BRIDGE, "IPAM": {"Config": [{"Subnet": "172.18.0.0/16", "Gateway": "172.18.0.1"}]}}
    assert bridge_gateway(named, lambda name: "172.18.9.9") == ("172.18.0.1", "the network's IPAM gateway")


def test_bridge_without_any_ipv4_address_is_an_error_never_loopback():
    gateway, why = bridge_gateway(
        {"IPAM": {"Config": [{"Subnet": "fd00::/64", "Gateway": "fd00::1"}]}}, lambda name: None
    )
    assert gateway is None and "no IPv4" in why


def test_interface_ipv4_reads_the_kernels_address():
    assert interface_ipv4("lo") == "127.0.0.1"
    assert interface_ipv4("faasprof-none0") is None
