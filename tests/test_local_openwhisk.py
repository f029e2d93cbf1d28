"""``./setup.sh --openwhisk`` and ``faasprof local start|stop --platform openwhisk``, with a fake build.

The build folder is real in shape (build.env naming a jar, the launchers that install.sh copies
beside it) but ``java`` and ``docker`` are fakes on PATH: java serves HTTP on 127.0.0.1 as the
standalone server would once ready, docker answers the launchers' checks and logs what it is told
to remove. The real server is exercised by the ``-m openwhisk`` tier (tests/test_openwhisk_tier.py).
"""

from __future__ import annotations

import os
import signal
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import REPO_ROOT, run_cli

INSTALL = REPO_ROOT / "setup" / "openwhisk-standalone" / "install.sh"

FAKE_JAVA = f"""#!{sys.executable}
# A standalone server's stand-in: serves 200 on every GET at --port until SIGTERM.
import http.server, signal, sys
port = int(sys.argv[sys.argv.index("--port") + 1])
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.send_header("Content-Length", "2"); self.end_headers(); self.wfile.write(b"[]")
    def log_message(self, *args):
        pass
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
http.server.HTTPServer(("127.0.0.1", port), Handler).serve_forever()
"""

FAKE_DOCKER = """#!/usr/bin/env bash
# docker's stand-in: answers the launchers' checks; `ps` lists $FAKE_DOCKER_PS, `rm` is logged.
case "$1" in
    info) [ "${2:-}" = --format ] && echo /nonexistent-docker-root; exit 0 ;;
    image) exit 0 ;;
    ps) cat "$FAKE_DOCKER_PS"; exit 0 ;;
    rm) shift; echo "rm $*" >> "$FAKE_DOCKER_LOG"; exit 0 ;;
esac
exit 1
"""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _executable(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


@pytest.fixture
def fake_host(tmp_path, isolated_home):
    """An environment with fake java and docker first on PATH and faasprof's cache in tmp_path."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _executable(bin_dir / "java", FAKE_JAVA)
    _executable(bin_dir / "docker", FAKE_DOCKER)
    containers = tmp_path / "docker-ps.txt"
    containers.write_text(
        "c0ffee wsk0_3_guest_json_dumps faasprof/action-python-v3.11:latest\nbeef00 wsk0_4_guest_other ubuntu:latest\n"
    )
    env = {
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "FAASPROF_CACHE_DIR": str(tmp_path / "cache"),
        "FAKE_DOCKER_PS": str(containers),
        "FAKE_DOCKER_LOG": str(tmp_path / "docker.log"),
        "OPENWHISK_REPO_URL": "http://127.0.0.1:9/openwhisk.git",
    }
    for name in ("OPENWHISK_SRC", "OPENWHISK_STANDALONE_HOME"):
        os.environ.pop(name, None)
    return env


def _fake_build(home: Path) -> None:
    home.mkdir(parents=True)
    (home / "openwhisk-standalone.jar").write_bytes(b"PK")
    (home / "build.env").write_text(f"OW_ROUTE=gradle\nOW_SRC={home}\nOW_JAR={home / 'openwhisk-standalone.jar'}\n")


def _install(env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(INSTALL), *args], capture_output=True, text=True, timeout=60, env={**os.environ, **env})


def test_install_without_source_or_github_says_what_to_pass_in_one_line(fake_host):
    result = _install(fake_host)
    assert result.returncode == 3
    assert result.stderr == (
        "setup.sh --openwhisk: no OpenWhisk source and http://127.0.0.1:9/openwhisk.git is not reachable: "
        "pass --source DIR (or set OPENWHISK_SRC) naming an export of the tag 2.0.0\n"
    )


def test_install_refuses_a_source_that_does_not_exist(fake_host, tmp_path):
    result = _install(fake_host, "--source", str(tmp_path / "nowhere"))
    assert result.returncode == 2
    assert (
        result.stderr.strip()
        == f"setup.sh --openwhisk: --source {tmp_path / 'nowhere'}: no such directory; pass an export of OpenWhisk's tag 2.0.0"
    )


def test_setup_sh_passes_openwhisk_to_the_install_script():
    text = (REPO_ROOT / "setup.sh").read_text()
    assert 'if [ "${1:-}" = "--openwhisk" ]; then' in text
    assert "exec setup/openwhisk-standalone/install.sh" in text


def test_a_second_install_finds_the_build_and_copies_the_launchers(fake_host, tmp_path):
    home = tmp_path / "cache" / "openwhisk-standalone"
    _fake_build(home)
    for _ in range(2):
        result = _install(fake_host)
        assert result.returncode == 0, result.stderr
        assert f"OpenWhisk 2.0.0 standalone is already built in {home} (--rebuild builds it again)" in result.stdout
    assert os.access(home / "start.sh", os.X_OK) and os.access(home / "stop.sh", os.X_OK)
    # The copies find the build folder's rule (build_dir.sh) beside them, away from the checkout.
    assert (home / "build_dir.sh").read_text() == (INSTALL.parent / "build_dir.sh").read_text()
    usage = subprocess.run([str(home / "stop.sh"), "--help"], capture_output=True, text=True, timeout=30, cwd=tmp_path)
    assert usage.returncode == 0 and "build_dir.sh" not in usage.stderr, usage.stderr


def test_local_start_openwhisk_without_a_build_names_setup(fake_host, tmp_path):
    result = run_cli("local", "start", "--platform", "openwhisk", env=fake_host)
    assert result.returncode == 3
    home = tmp_path / "cache" / "openwhisk-standalone"
    assert result.stderr.strip().endswith(
        f"{home}: OpenWhisk standalone is not built there; run ./setup.sh --openwhisk "
        "(or set OPENWHISK_STANDALONE_HOME to its build folder)"
    )
    assert result.stderr.count("\n") == 1


def test_local_start_openwhisk_refuses_a_localwhisk_only_setting(fake_host, tmp_path):
    _fake_build(tmp_path / "cache" / "openwhisk-standalone")
    assert _install(fake_host).returncode == 0
    result = run_cli("local", "start", "--platform", "openwhisk", "--isolation", "docker", env=fake_host)
    assert result.returncode == 2
    assert "--isolation: a localwhisk setting that OpenWhisk standalone does not take" in result.stderr


def _pid_gone(pid: int, within_s: float = 10.0) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_local_start_and_stop_openwhisk_record_the_connection_and_remove_its_containers(
    fake_host, tmp_path, isolated_home
):
    home = tmp_path / "cache" / "openwhisk-standalone"
    _fake_build(home)
    assert _install(fake_host).returncode == 0
    port = _free_port()
    pid = None
    try:
        started = run_cli(
            "local",
            "start",
            "--platform",
            "openwhisk",
            "--port",
            str(port),
            "--pause-grace-ms",
            "10000",
            "--idle-timeout-s",
            "1",
            env=fake_host,
        )
        assert started.returncode == 0, started.stderr
        assert started.stdout.strip() == f"http://127.0.0.1:{port}"
        pid = int((home / "run" / "standalone.pid").read_text())
        assert (
            f"OpenWhisk 2.0.0 standalone running at http://127.0.0.1:{port} (pid {pid}, pause grace 10000 ms, idle timeout 1 s"
            in started.stderr
        )
        props = (isolated_home / ".local" / "share" / "faasprof" / "localwhisk.wskprops").read_text().splitlines()
        for line in (
            f"APIHOST=http://127.0.0.1:{port}",
            "NAMESPACE=guest",
            "PAUSE_GRACE_MS=10000",
            "USER_MEMORY_MB=4096",
            "IDLE_TIMEOUT_S=1",
            f"LOCALWHISK_PID={pid}",
            "FAASPROF_LOCAL_PLATFORM=openwhisk",
            f"LOCALWHISK_DATA_DIR={home / 'run'}",
        ):
            assert line in props

        again = run_cli("local", "start", "--platform", "openwhisk", env=fake_host)
        assert again.returncode == 0 and f"already running at http://127.0.0.1:{port} (pid {pid}" in again.stderr

        stopped = run_cli("local", "stop", env=fake_host)
        assert stopped.returncode == 0, stopped.stderr
        assert f"stop.sh: stopped pid {pid}" in stopped.stderr
        assert "stop.sh: removed 1 leftover action containers" in stopped.stderr
        assert _pid_gone(pid)
        # Only the action container of the server's own runtime images is removed.
        assert (tmp_path / "docker.log").read_text() == "rm -f c0ffee\n"
        assert not (isolated_home / ".local" / "share" / "faasprof" / "localwhisk.wskprops").exists()

        second = run_cli("local", "stop", "--platform", "openwhisk", env=fake_host)
        assert second.returncode == 0
        assert "nothing to stop" in second.stderr
    finally:
        if pid is not None and not _pid_gone(pid, 0.1):
            os.kill(pid, signal.SIGKILL)
