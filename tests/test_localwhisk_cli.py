"""``faasprof local start|status|stop`` and ``python -m faasprof.localwhisk serve`` as subprocesses."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from faasprof.localwhisk.config import GUEST_AUTH
from tests.helpers import REPO_ROOT, not_private, process_alive, run_cli

pytestmark = pytest.mark.timeout(90)


@pytest.mark.slow
def test_local_start_status_stop(tmp_path, isolated_home):
    data_dir = tmp_path / "lw"
    started = run_cli(
        "local",
        "start",
        "--port",
        "0",
        "--data-dir",
        data_dir,
        "--pause-grace",
        "10s",
        "--max-sandbox-processes",
        "40",
        timeout=60,
    )
    try:
        assert started.returncode == 0, started.stderr
        apihost = started.stdout.strip().splitlines()[-1]
        assert apihost.startswith("http://127.0.0.1:")
        assert "localwhisk running at" in started.stderr
        # No key given: the data directory's own (issue 44), never the public guest key.
        auth = tuple((data_dir / "auth.key").read_text().strip().split(":", 1))
        assert (
            requests.get(
                apihost + "/api/v1/namespaces/_/actions", auth=tuple(GUEST_AUTH.split(":", 1)), timeout=5
            ).status_code
            == 401
        )
        info = requests.get(apihost + "/", auth=auth, timeout=5).json()["localwhisk"]
        assert info["pause_grace_ms"] == 10000 and info["data_dir"] == str(data_dir)

        # A sandbox shows up in status as warm (pause grace 10 s keeps it unpaused).
        base = apihost + "/api/v1/namespaces/_"
        requests.put(
            base + "/actions/hello?overwrite=true",
            auth=auth,
            timeout=10,
            json={"exec": {"kind": "python:3", "code": "def main(a):\n    return {}\n"}},
        ).raise_for_status()
        assert requests.post(base + "/actions/hello?blocking=true", auth=auth, json={}, timeout=30).status_code == 200

        status = run_cli("local", "status", "--data-dir", data_dir, timeout=30)
        assert status.returncode == 0, status.stderr
        assert "isolation" in status.stdout
        line = next(row for row in status.stdout.splitlines() if row.startswith("hello"))
        assert line.split()[1:4] == ["1", "0", "0"]  # warm 1, paused 0, busy 0

        port = apihost.rsplit(":", 1)[1]
        wrong_port = run_cli("local", "status", "--data-dir", data_dir, "--port", str(int(port) + 1), timeout=30)
        assert wrong_port.returncode == 2 and f"listens on port {port}" in wrong_port.stderr

        again = run_cli("local", "start", "--data-dir", data_dir, timeout=30)
        assert again.returncode == 0 and "already running" in again.stderr
        leftovers = _hostile_round(apihost, auth)
    finally:
        stopped = run_cli("local", "stop", "--data-dir", data_dir, timeout=60)
    assert stopped.returncode == 0, stopped.stderr
    assert "localwhisk stopped" in stopped.stderr
    # Nothing an action started outlives the stop, and what the server kept is private (issue 44).
    deadline = time.monotonic() + 5
    while any(process_alive(pid) for pid in leftovers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [pid for pid in leftovers if process_alive(pid)]
    assert not_private(data_dir) == []
    after = run_cli("local", "status", "--data-dir", data_dir, timeout=30)
    assert after.returncode == 3
    assert "no localwhisk is running" in after.stderr


# The hostile actions (issue 44), each with what it does: a lone surrogate in every third
# result (Node.js), a fork loop and a double-forked daemon, an oversized result, a time limit
# passed, a web response with framing headers of its own.
HOSTILE = {
    "surrogate": (
        "nodejs:default",
        "let n = 0;\nfunction main(a) { n += 1; return n % 3 === 0 ? {s: '\\udc00'} : {s: 'ok'}; }\n",
    ),
    "forks": (
        "python:3",
        "import os, subprocess, time\n"
        "def main(a):\n"
        "    children, refused = [], ''\n"
        "    for _ in range(100):\n"
        "        try:\n"
        "            children.append(subprocess.Popen(['sleep', '30']))\n"
        "        except OSError as error:\n"
        "            refused = type(error).__name__\n"
        "            break\n"
        "    for child in children:\n"
        "        child.kill()\n"
        "        child.wait()\n"
        "    r, w = os.pipe()\n"
        "    if os.fork() == 0:\n"
        "        os.setsid()\n"
        "        if os.fork() == 0:\n"
        "            os.write(w, str(os.getpid()).encode())\n"
        "            time.sleep(300)\n"
        "        os._exit(0)\n"
        "    return {'started': len(children), 'refused': refused, 'daemon': int(os.read(r, 32))}\n",
    ),
    "big": ("python:3", "def main(a):\n    return {'s': 'x' * 2_000_000}\n"),
    "slow": ("python:3", "import time\ndef main(a):\n    time.sleep(5)\n    return {}\n"),
    "web": (
        "python:3",
        "def main(a):\n    return {'headers': {'Content-Length': '2', 'Connection': 'close'}, 'body': 'hello'}\n",
    ),
}


def _hostile_round(apihost: str, auth: tuple[str, str]) -> list[int]:
    """Run the hostile actions through a standing server: every request is answered, every call
    has its record, no sandbox stays busy; returns the pids that must not outlive the stop."""
    base = apihost + "/api/v1/namespaces/_"
    with requests.Session() as session:
        session.auth = auth
        for name, (kind, code) in HOSTILE.items():
            annotations = [{"key": "web-export", "value": True}] if name == "web" else []
            limits = {"timeout": 300 if name == "slow" else 30000}
            body = {"exec": {"kind": kind, "code": code}, "limits": limits, "annotations": annotations}
            session.put(f"{base}/actions/{name}?overwrite=true", json=body, timeout=30).raise_for_status()
        answers = [session.post(f"{base}/actions/surrogate?blocking=true", json={}, timeout=30) for _ in range(6)]
        answers += [session.post(f"{base}/actions/big?blocking=true", json={}, timeout=30)]
        answers += [session.post(f"{base}/actions/slow?blocking=true", json={}, timeout=30)]
        forks = session.post(f"{base}/actions/forks?blocking=true", json={}, timeout=60)
        raw = json.dumps({"a": "\ud800"}, ensure_ascii=True)
        queued = [
            session.post(
                f"{base}/actions/surrogate", data=raw, headers={"Content-Type": "application/json"}, timeout=30
            )
            for _ in range(4)
        ]
        web = requests.get(apihost + "/api/v1/web/guest/default/web", timeout=30)
        assert web.status_code == 200 and web.text == "hello" and web.headers["Content-Length"] == "5"
        assert [a.status_code for a in answers] == [200, 200, 200, 200, 200, 200, 502, 502], [a.text for a in answers]
        result = forks.json()["response"]["result"]
        assert forks.status_code == 200 and 0 < result["started"] <= 40 and result["refused"], result
        assert all(q.status_code == 202 for q in queued)
        ids = [a.json()["activationId"] for a in answers + [forks] + queued]
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            found = [session.get(f"{base}/activations/{i}", timeout=10).status_code for i in ids]
            pool = session.get(apihost + "/localwhisk/v1/pool", timeout=10).json()["pool"]["sandboxes"]
            if found == [200] * len(ids) and not [sb for sb in pool if sb["state"] == "busy"]:
                break
            time.sleep(0.05)
        assert found == [200] * len(ids), found
        assert not [sb for sb in pool if sb["state"] == "busy"], pool
    return [result["daemon"]]


@pytest.mark.slow
def test_a_local_server_killed_with_sigkill_leaves_no_sandbox_frozen(tmp_path, isolated_home):
    """Its watchdog stops the sandboxes it left (kill -9 of the server left them frozen, with their
    cgroups, until the next localwhisk started)."""
    data_dir = tmp_path / "lw"
    started = run_cli("local", "start", "--port", "0", "--data-dir", data_dir, "--pause-grace", "50", timeout=60)
    assert started.returncode == 0, started.stderr
    apihost = started.stdout.strip().splitlines()[-1]
    state = json.loads((data_dir / "localwhisk.json").read_text())
    server_pid = int(state["pid"])
    try:
        auth = tuple((data_dir / "auth.key").read_text().strip().split(":", 1))
        base = apihost + "/api/v1/namespaces/_"
        requests.put(
            base + "/actions/hello?overwrite=true",
            auth=auth,
            timeout=10,
            json={"exec": {"kind": "python:3", "code": "def main(a):\n    return {}\n"}},
        ).raise_for_status()
        assert requests.post(base + "/actions/hello?blocking=true", auth=auth, json={}, timeout=30).status_code == 200
        time.sleep(0.5)  # past the pause grace: the sandbox is paused (frozen or stopped)
        sandbox_pids = [int(path.read_text().split()[0]) for path in (data_dir / "sandboxes").glob("*.pid")]
        assert sandbox_pids and all(process_alive(pid) for pid in sandbox_pids)
    finally:
        os.kill(server_pid, signal.SIGKILL)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and any(process_alive(pid) for pid in sandbox_pids):
        time.sleep(0.2)
    assert not any(process_alive(pid) for pid in sandbox_pids), (data_dir / "localwhisk.log").read_text()[-2000:]
    deadline = time.monotonic() + 10
    while (
        time.monotonic() < deadline and "localwhisk watchdog: server" not in (data_dir / "localwhisk.log").read_text()
    ):
        time.sleep(0.2)
    assert (
        f"localwhisk watchdog: server {server_pid} died without stopping its sandboxes"
        in (data_dir / "localwhisk.log").read_text()
    )
    assert not Path(f"/sys/fs/cgroup/freezer/localwhisk-{server_pid}").exists(), (
        "the dead server's cgroup parent is left"
    )
    run_cli("local", "stop", "--data-dir", data_dir, timeout=60)


def test_stop_without_instance_succeeds_and_says_so(tmp_path, isolated_home):
    result = run_cli("local", "stop", "--data-dir", tmp_path / "none", timeout=30)
    assert result.returncode == 0, result.stderr
    assert result.stderr.strip() == f"localwhisk not running for data dir {tmp_path / 'none'}; nothing to stop"


@pytest.mark.slow
def test_local_start_is_found_by_deploy_until_stopped(tmp_path, isolated_home):
    """`local start` then `deploy hello.py` with no flags deploys there; it shows its key and the
    lines for wsk; the user's ~/.wskprops stays theirs and comes first; a second stop succeeds."""
    data_dir = tmp_path / "lw"
    hello = tmp_path / "hello.py"
    hello.write_text('def main(args):\n    return {"hello": args.get("name", "world")}\n')
    props = isolated_home / ".local" / "share" / "faasprof" / "localwhisk.wskprops"
    started = run_cli("local", "start", "--port", "0", "--data-dir", data_dir, timeout=60)
    try:
        assert started.returncode == 0, started.stderr
        apihost = started.stdout.strip().splitlines()[-1]
        key_file = data_dir / "auth.key"
        assert f"it accepts the key of this data directory, in {key_file}, namespace guest" in started.stderr
        assert f"export WSK_CONFIG_FILE={props}" in started.stderr
        assert f'wsk property set --apihost {apihost} --auth "$(cat {key_file})" --namespace guest' in started.stderr
        assert oct(key_file.stat().st_mode & 0o777) == "0o600"
        assert oct(props.stat().st_mode & 0o777) == "0o600"
        assert f"APIHOST={apihost}" in props.read_text().splitlines()

        deployed = run_cli("deploy", hello, timeout=60)
        assert deployed.returncode == 0, deployed.stderr
        assert deployed.stdout.split()[:2] == ["hello", "created"]
        assert f"to {apihost} (namespace guest)" in deployed.stderr
        auth = tuple(key_file.read_text().strip().split(":", 1))
        answer = requests.post(
            apihost + "/api/v1/namespaces/_/actions/hello?blocking=true", auth=auth, json={}, timeout=30
        )
        assert answer.json()["response"]["result"] == {"hello": "world"}

        # A ~/.wskprops naming another platform is never rewritten, and it comes first.
        user_props = isolated_home / ".wskprops"
        user_props.write_text("APIHOST=http://127.0.0.1:1\nAUTH=u:theirs\n")
        again = run_cli("local", "start", "--data-dir", data_dir, timeout=30)
        assert again.returncode == 0 and "already running" in again.stderr
        assert "note: ~/.wskprops names http://127.0.0.1:1, which faasprof uses first" in again.stderr
        assert user_props.read_text() == "APIHOST=http://127.0.0.1:1\nAUTH=u:theirs\n"
        elsewhere = run_cli("deploy", hello, timeout=60)
        assert elsewhere.returncode == 3 and "http://127.0.0.1:1" in elsewhere.stderr
        user_props.unlink()
    finally:
        stopped = run_cli("local", "stop", "--data-dir", data_dir, timeout=60)
    assert stopped.returncode == 0 and "localwhisk stopped" in stopped.stderr
    assert not props.exists()
    twice = run_cli("local", "stop", "--data-dir", data_dir, timeout=30)
    assert twice.returncode == 0 and "nothing to stop" in twice.stderr
    orphan = run_cli("deploy", hello, timeout=60)
    assert orphan.returncode == 3
    assert orphan.stderr.strip().startswith(
        "no platform configured: start localwhisk with `faasprof local start` (deploy then finds it)"
    )
    help_text = run_cli("deploy", "--help", timeout=30).stdout
    assert (
        "platform connection (default: the localwhisk of `faasprof local start`; deploy never starts one)"
        in " ".join(help_text.split())
    )


@pytest.mark.slow
def test_serve_port_file_and_sigterm(tmp_path):
    port_file = tmp_path / "port.json"
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "faasprof.localwhisk",
            "serve",
            "--port",
            "0",
            "--port-file",
            str(port_file),
            "--data-dir",
            str(tmp_path / "d"),
        ],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while not port_file.exists():
            assert process.poll() is None, process.stderr.read()
            assert time.monotonic() < deadline
            time.sleep(0.05)
        state = json.loads(port_file.read_text())
        assert state["pid"] == process.pid and state["port"] > 0
        assert requests.get(state["apihost"] + "/", timeout=5).status_code == 200
        # A second instance on the same data directory is refused with a one-line reason.
        second = subprocess.run(
            [sys.executable, "-m", "faasprof.localwhisk", "serve", "--port", "0", "--data-dir", str(tmp_path / "d")],
            env=env,
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert second.returncode != 0 and "is in use by another localwhisk" in second.stderr
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=20) == 0
    assert not (tmp_path / "d" / "localwhisk.json").exists()


def test_bad_start_flags_are_exit_2(tmp_path, isolated_home):
    result = run_cli("local", "start", "--port", "0", "--data-dir", tmp_path / "lw", "--isolation", "vm", timeout=30)
    assert result.returncode == 2
    assert "isolation: must be auto, cgroup, rlimit or docker" in result.stderr
    result = run_cli(
        "local", "start", "--port", "0", "--data-dir", tmp_path / "lw", "--pause-grace", "soon", timeout=30
    )
    assert result.returncode == 2 and "--pause-grace" in result.stderr
