"""localwhisk under faults and hostile input: stop under load, kill -9 with paused sandboxes, the
key off every command line, non-loopback listening only by explicit opt-in."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import requests

from faasprof.localwhisk.config import AUTH_ENV, GUEST_AUTH, Settings, validate_settings
from faasprof.localwhisk.embedded import start_embedded
from faasprof.localwhisk.sandbox_users import reap_orphans
from tests.helpers import REPO_ROOT, run_cli
from tests.localwhisk_driver import Lw

pytestmark = pytest.mark.timeout(120)

SLEEP_PY = "import time\ndef main(args):\n    time.sleep(float(args.get('s', 0.2)))\n    return {'s': args.get('s')}\n"
NOOP_PY = "def main(args):\n    return {'ok': True}\n"
OWN_KEY = "0b6a2b64-58a5-4bd4-9d0b-3c4c1f2a7e11:s3cr3t-key-for-tests-only-XYZ"


def _process_state(pid: int) -> str | None:
    """The one-letter state of /proc/PID/stat (R, S, D, T, Z), None if the process is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None


def _serve(data_dir: Path, *extra: str, env: dict | None = None) -> tuple[subprocess.Popen, str]:
    port_file = data_dir.parent / f"port-{time.monotonic_ns()}.json"
    full_env = dict(os.environ, PYTHONPATH=str(REPO_ROOT), **(env or {}))
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "faasprof.localwhisk",
            "serve",
            "--port",
            "0",
            "--data-dir",
            str(data_dir),
            "--port-file",
            str(port_file),
            *extra,
        ],
        env=full_env,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if port_file.exists() and port_file.stat().st_size:
            return process, json.loads(port_file.read_text())["apihost"]
        assert process.poll() is None, process.stderr.read().decode()
        time.sleep(0.05)
    process.kill()
    raise AssertionError("localwhisk serve did not come up")


class _Handle:
    def __init__(self, apihost: str, auth: str = GUEST_AUTH):
        self.apihost, self.auth = apihost, auth


@pytest.mark.slow
def test_local_stop_under_load_finishes_in_seconds_and_records_every_accepted_activation(tmp_path, isolated_home):
    data_dir = tmp_path / "lw"
    started = run_cli("local", "start", "--port", "0", "--data-dir", data_dir, "--user-memory", "256", timeout=60)
    assert started.returncode == 0, started.stderr
    key = (data_dir / "auth.key").read_text().strip()  # the data directory's own (no key was given)
    lw = Lw(_Handle(started.stdout.strip().splitlines()[-1], key))
    lw.put("slow", SLEEP_PY)
    accepted, statuses, stop_sending = [], [], threading.Event()

    def keep_sending():
        session = requests.Session()
        session.auth = tuple(key.split(":", 1))
        while not stop_sending.is_set():
            try:
                response = session.post(lw.base + "/actions/slow", json={"s": 20}, timeout=5)
            except requests.RequestException:
                statuses.append("refused")
                time.sleep(0.01)
                continue
            statuses.append(response.status_code)
            if response.status_code == 202:
                accepted.append(response.json()["activationId"])

    sender = threading.Thread(target=keep_sending, daemon=True)
    sender.start()
    try:
        assert lw.wait_for(lambda: len(accepted) >= 5, 20.0)  # one runs (256 MB pool), the rest queue
        began = time.monotonic()
        stopped = run_cli("local", "stop", "--data-dir", data_dir, timeout=60)
        stop_s = time.monotonic() - began
    finally:
        stop_sending.set()
        sender.join(10)
    assert stopped.returncode == 0, stopped.stderr
    assert stop_s < 10, f"stop took {stop_s:.1f} s"
    assert set(statuses) <= {202, 503, "refused"}, set(statuses)
    with sqlite3.connect(data_dir / "localwhisk.sqlite") as db:
        docs = {row[0]: json.loads(row[1]) for row in db.execute("SELECT activation_id, doc FROM activations")}
    missing = [a for a in accepted if a not in docs]
    assert not missing, f"{len(missing)} accepted activations have no record"
    failed = [docs[a] for a in accepted if docs[a]["response"]["status"] == "whisk internal error"]
    assert len(failed) == len(accepted)  # none can have finished its 20 s sleep: queued and running ones failed
    assert all(
        d["response"]["result"] == {"error": "localwhisk stopped before the activation completed."} for d in failed
    )


def test_stop_leaves_no_paused_or_frozen_sandbox(tmp_path):
    with start_embedded(data_dir=tmp_path / "lw", pause_grace_ms=0) as handle:
        lw = Lw(handle)
        lw.put("pausy", NOOP_PY)
        for _ in range(3):
            lw.invoke("pausy")
        assert lw.wait_for(lambda: [sb["state"] for sb in lw.sandboxes("pausy")] == ["paused"], 5.0)
        pids = [sb["pid"] for sb in lw.sandboxes("pausy")]
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(_process_state(pid) not in (None, "Z") for pid in pids):
        time.sleep(0.05)
    assert [_process_state(pid) for pid in pids] in ([None], ["Z"])


@pytest.mark.slow
@pytest.mark.host_exclusive
def test_kill_9_with_paused_sandboxes_is_reaped_at_the_next_start(tmp_path):
    data_dir = tmp_path / "lw"
    process, apihost = _serve(data_dir, "--pause-grace", "0")
    try:
        lw = Lw(_Handle(apihost, (data_dir / "auth.key").read_text().strip()))
        lw.put("orphan", NOOP_PY)
        lw.put("orphan2", NOOP_PY)
        lw.invoke("orphan")
        lw.invoke("orphan2")
        assert lw.wait_for(lambda: sorted(sb["state"] for sb in lw.pool()["sandboxes"]) == ["paused", "paused"], 5.0)
        pids = [sb["pid"] for sb in lw.pool()["sandboxes"]]
        process.kill()
        process.wait(10)
        time.sleep(0.2)
        # Orphaned and still paused (stopped or frozen): nobody else would ever end them.
        assert all(_process_state(pid) not in (None, "Z") for pid in pids)
    finally:
        if process.poll() is None:
            process.kill()
    restarted, apihost = _serve(data_dir)
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(_process_state(pid) not in (None, "Z") for pid in pids):
            time.sleep(0.05)
        assert all(_process_state(pid) in (None, "Z") for pid in pids)
        info = (
            Lw(_Handle(apihost, (data_dir / "auth.key").read_text().strip()))
            .session.get(apihost + "/", timeout=5)
            .json()["localwhisk"]
        )
        assert sorted(info["orphan_sandboxes_killed"]) == sorted(pids) or info["stale_cgroups_removed"]
    finally:
        restarted.send_signal(signal.SIGTERM)
        restarted.wait(20)


def test_a_sandbox_that_renamed_itself_to_odd_bytes_is_still_reaped(tmp_path):
    # An action may rename its process to any bytes (here not UTF-8, with ") " in it); the pid file
    # holds its pid and start time, told by the child itself before the rename.
    script = (
        "import time; print(open('/proc/self/stat').read().split()[21], flush=True); "
        "open('/proc/self/comm', 'wb').write(b'\\xff) x'); print(flush=True); time.sleep(60)"
    )
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, start_new_session=True)
    try:
        started_ticks = int(child.stdout.readline())
        child.stdout.readline()
        (tmp_path / "wsk1.pid").write_text(f"{child.pid} {started_ticks}\n")
        (tmp_path / "wsk2.pid").write_text(f"{child.pid} {started_ticks + 1}\n")  # the pid reused: left alone
        assert reap_orphans(tmp_path) == [child.pid]
        assert child.wait(10) == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


@pytest.mark.slow
def test_the_key_never_appears_on_a_command_line(tmp_path, isolated_home):
    secret = OWN_KEY.split(":", 1)[1]
    with start_embedded(data_dir=tmp_path / "emb", auth=OWN_KEY) as handle:
        lw = Lw(handle)
        lw.put("k", NOOP_PY)
        assert lw.invoke("k").status_code == 200
        key_file = tmp_path / "key"
        key_file.write_text(OWN_KEY + "\n")
        started = run_cli(
            "local", "start", "--port", "0", "--data-dir", tmp_path / "cli", "--auth-file", key_file, timeout=60
        )
        assert started.returncode == 0, started.stderr
        try:
            apihost = started.stdout.strip().splitlines()[-1]
            assert (
                requests.get(apihost + "/api/v1/namespaces", auth=tuple(OWN_KEY.split(":", 1)), timeout=5).status_code
                == 200
            )
            assert (
                requests.get(
                    apihost + "/api/v1/namespaces", auth=tuple(GUEST_AUTH.split(":", 1)), timeout=5
                ).status_code
                == 401
            )
            leaks = []
            for entry in Path("/proc").iterdir():
                if entry.name.isdigit():
                    try:
                        if secret.encode() in (entry / "cmdline").read_bytes():
                            leaks.append(entry.name)
                    except OSError:
                        pass
            assert leaks == []
            status = run_cli("local", "status", "--data-dir", tmp_path / "cli", env={AUTH_ENV: OWN_KEY}, timeout=30)
            assert status.returncode == 0, status.stderr
        finally:
            run_cli("local", "stop", "--data-dir", tmp_path / "cli", timeout=60)


def test_non_loopback_host_needs_opt_in_and_an_own_key(tmp_path, isolated_home):
    refused = run_cli("local", "start", "--host", "0.0.0.0", "--port", "0", "--data-dir", tmp_path / "lw", timeout=30)
    assert refused.returncode == 2 and "--allow-remote" in refused.stderr and "Traceback" not in refused.stderr
    guest = run_cli(
        "local",
        "start",
        "--host",
        "0.0.0.0",
        "--allow-remote",
        "--port",
        "0",
        "--data-dir",
        tmp_path / "lw",
        timeout=30,
    )
    assert guest.returncode == 2 and "guest key" in guest.stderr
    assert validate_settings(Settings(host="0.0.0.0", allow_remote=True, auth=OWN_KEY)) == []
    assert validate_settings(Settings(host="::1")) == [] and validate_settings(Settings(host="localhost")) == []
    assert validate_settings(Settings(host="192.0.2.7", allow_remote=False, auth=OWN_KEY))
