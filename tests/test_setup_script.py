"""./setup.sh installs only what the quick start needs: without --with/--full/--dev its steps never
call go, apt-get or npm for an optional extra, and each says in one line what stays out and the
command that brings it; asked for, an extra is installed with a line before, lines while it runs and
one after with the elapsed time. The steps run against stub tools on a PATH of their own (nothing
is installed); setup.sh's options are checked where it exits before installing anything."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from faasprof.commands.doctor import EXTRAS
from tests.helpers import REPO_ROOT

STEPS = REPO_ROOT / "setup" / "steps"
# What the steps may run from the host; everything else they look for is absent or a stub.
HOST_TOOLS = (
    "bash",
    "sh",
    "env",
    "cat",
    "date",
    "id",
    "dirname",
    "basename",
    "grep",
    "sleep",
    "seq",
    "dpkg-query",
    "uname",
)
# Stubs that log their arguments (one call a line) and succeed; go takes a while, as it does.
STUBS = ("apt-get", "sudo", "go", "npm", "systemctl")


def _sandbox(tmp_path: Path) -> tuple[dict, Path]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in HOST_TOOLS:
        found = shutil.which(tool)
        if found:
            (bin_dir / tool).symlink_to(found)
    calls = tmp_path / "calls.log"
    for stub in STUBS:
        pause = "sleep 2.5" if stub == "go" else ":"
        (bin_dir / stub).write_text(f'#!/bin/sh\necho "{stub} $*" >> {calls}\n{pause}\nexit 0\n')
        (bin_dir / stub).chmod(0o755)
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    env = {"PATH": str(bin_dir), "HOME": str(tmp_path), "ROOT": str(REPO_ROOT), "VENV": str(venv), "SETUP_TICK_S": "1"}
    return env, calls


def _step(name: str, env: dict, extras: str, dev: str = "0") -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", str(STEPS / name)],
        env={**env, "FAASPROF_EXTRAS": extras, "FAASPROF_DEV": dev},
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO_ROOT,
    )


ALL_STEPS = ("10-monitoring.sh", "20-functions.sh", "25-storage.sh", "35-docker-runtimes.sh", "40-invoker.sh")


def test_without_extras_no_step_installs_anything_and_each_names_the_command(tmp_path):
    env, calls = _sandbox(tmp_path)
    said = ""
    for name in ALL_STEPS:
        done = _step(name, env, extras="", dev="1")  # FAASPROF_DEV alone no longer installs extras
        assert done.returncode == 0, done.stderr
        said += done.stderr
    assert not calls.exists(), calls.read_text()  # no go, apt-get, npm, sudo
    # 40-invoker.sh also looks in /usr/sbin, which is outside the stub PATH: bench is there when nginx is.
    lacking = ("perf", "node", "ocr", "storage", "docker") + (() if Path("/usr/sbin/nginx").exists() else ("bench",))
    for extra in lacking:
        assert f"./setup.sh --with {extra}" in said, f"nothing says how to install {extra}:\n{said}"


@pytest.mark.slow
def test_an_extra_asked_for_is_installed_with_progress_and_its_time(tmp_path):
    env, calls = _sandbox(tmp_path)
    done = _step("25-storage.sh", env, extras="storage")
    assert done.returncode == 0, done.stderr
    logged = calls.read_text().splitlines()
    assert any(line.startswith("go install github.com/versity/versitygw/cmd/versitygw@v1.") for line in logged), logged
    assert any("install" in line and "iperf3" in line for line in logged if line.startswith(("apt-get", "sudo"))), (
        logged
    )
    lines = done.stderr.splitlines()
    start = next(i for i, line in enumerate(lines) if "building versitygw" in line and "(about 1 to 5 min" in line)
    assert any("still running" in line for line in lines[start:]), done.stderr  # go printed nothing for 2.5 s
    assert any(line.startswith("[setup:storage] building versitygw") and ": done in " in line for line in lines), (
        done.stderr
    )
    assert (Path(env["VENV"]) / "bin" / ".versitygw-version").is_file()


def test_the_node_and_ocr_extras_run_npm_and_apt_get(tmp_path):
    env, calls = _sandbox(tmp_path)
    done = _step("20-functions.sh", env, extras="node ocr")
    assert done.returncode == 0, done.stderr
    logged = calls.read_text().splitlines()
    # With node the archive build installs the npm packages into the cache (not skipped, never in faasprof/functions/).
    assert "npm packages skipped" not in done.stderr and "--no-install" not in done.stderr, done.stderr
    assert any("install" in line and "tesseract-ocr" in line for line in logged), logged
    assert "tesseract-ocr for ocr-img: apt-get install tesseract-ocr (about 20 s)" in done.stderr
    assert "tesseract-ocr for ocr-img: apt-get install tesseract-ocr: done in " in done.stderr


def test_setup_help_lists_the_extras_doctor_knows_and_refuses_an_unknown_one():
    helped = subprocess.run([str(REPO_ROOT / "setup.sh"), "--help"], capture_output=True, text=True, timeout=30)
    assert helped.returncode == 0
    listed = [
        line.split()[0]
        for line in helped.stdout.partition("Optional extras")[2].splitlines()[1:]
        if line.startswith("  ") and not line.startswith("   ")
    ]
    assert listed == [extra.name for extra in EXTRAS]
    for args, words in (
        (["--with", "nope"], "--with: unknown extra 'nope' (extras: node, ocr, storage, docker, perf, bench)"),
        (["--with"], "--with needs a list of extras"),
    ):
        done = subprocess.run([str(REPO_ROOT / "setup.sh"), *args], capture_output=True, text=True, timeout=30)
        assert done.returncode == 2 and words in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
