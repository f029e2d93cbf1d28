"""The testbed playbooks: syntax, lint, shell scripts, check mode on this host, rendered templates.

Nothing here touches the network or changes the machine: the tools role runs with --check, the
templates are rendered into a temporary directory. The real deployment is tested by
tests/test_setup_openwhisk_live.py (marked openwhisk).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.helpers import REPO_ROOT, tracked_files

SETUP = REPO_ROOT / "setup"
VENV_BIN = REPO_ROOT / ".venv" / "bin"
PLAYBOOKS = ["site.yml", "tools.yml", "openwhisk.yml", "undo.yml"]


def _tool(name: str) -> Path:
    path = VENV_BIN / name
    if not path.exists():
        pytest.fail(f"{path} is missing: run ./setup.sh --dev")
    return path


def _ansible_env(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["ANSIBLE_CONFIG"] = str(SETUP / "ansible.cfg")
    env["ANSIBLE_LOCAL_TEMP"] = str(tmp_path / "ansible-tmp")
    env["ANSIBLE_NOCOLOR"] = "1"
    env["PATH"] = f"{VENV_BIN}:{env.get('PATH', '')}"
    return env


def _can_become() -> bool:
    if os.geteuid() == 0:
        return True
    return (
        shutil.which("sudo") is not None and subprocess.run(["sudo", "-n", "true"], capture_output=True).returncode == 0
    )


@pytest.mark.slow
def test_playbooks_pass_syntax_check(tmp_path):
    result = subprocess.run(
        [
            str(_tool("ansible-playbook")),
            "-i",
            str(SETUP / "inventory" / "single-node.ini"),
            "--syntax-check",
            *[str(SETUP / p) for p in PLAYBOOKS],
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=_ansible_env(tmp_path),
        cwd=SETUP,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    for playbook in PLAYBOOKS:
        assert f"playbook: {SETUP / playbook}" in result.stdout


@pytest.mark.slow
def test_playbooks_pass_ansible_lint(tmp_path):
    # One run over every playbook (ansible-lint is slow to start); the profile is in setup/.ansible-lint.
    env = _ansible_env(tmp_path)
    env["HOME"] = str(tmp_path)  # its cache, not the user's
    result = subprocess.run(
        [
            str(_tool("ansible-lint")),
            "-c",
            str(SETUP / ".ansible-lint"),
            "--offline",
            "--nocolor",
            "-f",
            "pep8",
            *PLAYBOOKS,
        ],
        capture_output=True,
        text=True,
        timeout=240,
        env=env,
        cwd=SETUP,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Profile 'production' was required, and it passed" in result.stderr + result.stdout


def _shell_scripts() -> list[Path]:
    scripts = [REPO_ROOT / "setup.sh", REPO_ROOT / ".ci" / "run"]
    for path in tracked_files(REPO_ROOT):
        if path.suffix == ".sh" and path not in scripts:
            scripts.append(path)
    return [p for p in scripts if p.exists()]


@pytest.mark.slow
def test_every_shell_script_passes_shellcheck():
    scripts = _shell_scripts()
    assert SETUP / "testbed.sh" in scripts and REPO_ROOT / "setup.sh" in scripts
    result = subprocess.run(
        [str(_tool("shellcheck")), "--format=gcc", *map(str, scripts)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO_ROOT,
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.slow
@pytest.mark.skipif(
    not Path("/usr/bin/apt-get").exists(), reason="check mode of the tools role needs a Debian/Ubuntu host"
)
@pytest.mark.skipif(not _can_become(), reason="check mode of the tools role needs root or passwordless sudo")
def test_tools_role_runs_in_check_mode_on_this_host(tmp_path):
    """Packages, perf sysctl, resctrl and CPU frequency tasks in --check against localhost."""
    result = subprocess.run(
        [
            str(_tool("ansible-playbook")),
            "-i",
            str(SETUP / "inventory" / "single-node.ini"),
            "tools.yml",
            "--check",
            "-e",
            f"faasprof_state_dir={tmp_path / 'state'}",
            "-e",
            "tools_cpu_governor=performance",
            "-e",
            "tools_turbo=off",
        ],
        capture_output=True,
        text=True,
        timeout=180,
        env=_ansible_env(tmp_path),
        cwd=SETUP,
    )
    out = result.stdout + result.stderr
    assert result.returncode == 0, out
    assert "failed=0" in out and "unreachable=0" in out
    # The sysctl and resctrl tasks ran (not merely skipped by a tag or an early failure).
    assert "TASK [tools : Persist the perf sysctl settings]" in out
    assert "TASK [tools : Read the running perf sysctl values]" in out
    assert "TASK [tools : Decide whether resctrl applies]" in out
    assert "TASK [tools : Install the CPU frequency script]" in out
    has_rdt = Path("/sys/fs/resctrl").is_dir() and any(
        flag in Path("/proc/cpuinfo").read_text() for flag in (" rdt_a", " cqm_llc", " cqm_occup_llc")
    )
    if not has_rdt:
        assert "resctrl not mounted:" in out
    # Check mode wrote nothing.
    assert not (tmp_path / "state").exists()


RENDER_PLAYBOOK = """
- name: Render the openwhisk role's templates
  hosts: localhost
  connection: local
  gather_facts: false
  vars_files: ["{setup}/group_vars/all.yml"]
  vars:
    out: "{out}"
  tasks:
    - name: Runtimes manifest
      ansible.builtin.template:
        src: "{setup}/roles/openwhisk/templates/runtimes.json.j2"
        dest: "{{{{ out }}}}/runtimes.json"
        mode: "0644"
    - name: OpenWhisk inventory
      ansible.builtin.template:
        src: "{setup}/roles/openwhisk/templates/hosts.ini.j2"
        dest: "{{{{ out }}}}/hosts"
        mode: "0644"
"""


def _render(tmp_path: Path, inventory: Path) -> Path:
    out = tmp_path / "out"
    out.mkdir()
    playbook = tmp_path / "render.yml"
    playbook.write_text(RENDER_PLAYBOOK.format(setup=SETUP, out=out))
    result = subprocess.run(
        [str(_tool("ansible-playbook")), "-i", str(inventory), str(playbook)],
        capture_output=True,
        text=True,
        timeout=120,
        env=_ansible_env(tmp_path),
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return out


@pytest.mark.slow
def test_runtimes_manifest_is_small_and_has_prewarms(tmp_path):
    out = _render(tmp_path, SETUP / "inventory" / "single-node.ini")
    manifest = json.loads((out / "runtimes.json").read_text())
    assert sorted(manifest["runtimes"]) == ["nodejs", "python"]
    for family, kinds in manifest["runtimes"].items():
        assert sum(1 for k in kinds if k["default"]) == 1, f"{family} needs exactly one default kind"
        for kind in kinds:
            assert {"prefix", "name", "tag"} <= set(kind["image"])
            assert kind["image"]["tag"] not in ("latest", "nightly"), "pin runtime image tags"
            for cell in kind.get("stemCells", []):
                assert cell["count"] >= 1 and cell["memory"].endswith("MB")
    assert [k["kind"] for k in manifest["runtimes"]["python"]] == ["python:3"]
    assert manifest["blackboxes"]
    # Every kind the benchmark functions are deployed with must exist on the testbed.
    kinds = {k["kind"] for family in manifest["runtimes"].values() for k in family}
    catalogue = pytest.importorskip("faasprof.functions.catalogue")
    used = {catalogue.lookup(name).kind for name in catalogue.names()}
    assert used and used <= kinds, f"add {sorted(used - kinds)} to openwhisk_runtimes in setup/group_vars/all.yml"


@pytest.mark.slow
def test_multi_node_inventory_becomes_one_controller_and_several_invokers(tmp_path):
    out = _render(tmp_path, SETUP / "inventory" / "multi-node.example.ini")
    hosts = (out / "hosts").read_text()
    lines = [line for line in hosts.splitlines() if line and not line.startswith(";")]
    groups: dict[str, list[str]] = {}
    current = None
    for line in lines:
        if line.startswith("["):
            current = line.strip("[]")
            groups[current] = []
        elif current:
            groups[current].append(line)
    assert [line.split()[0] for line in groups["invokers"]] == ["invoker0", "invoker1", "invoker2"]
    assert "ansible_host=10.0.0.12" in groups["invokers"][1] and "ansible_user=ubuntu" in groups["invokers"][1]
    assert groups["controllers"][0].startswith("controller0 ansible_host=10.0.0.10")
    assert "ansible_connection=local" in groups["controllers"][0]
    assert groups["edge"][0].startswith("10.0.0.10 ")
    assert groups["schedulers"] == [] and groups["etcd"] == []
    assert all(
        "ansible_python_interpreter=/opt/faasprof/openwhisk-venv/bin/python" in line
        for name in ("controllers", "invokers", "db")
        for line in groups[name]
    )


def _testbed(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", str(SETUP / "testbed.sh"), *args], capture_output=True, text=True, timeout=60, cwd=REPO_ROOT
    )


def test_testbed_rejects_conflicting_parts():
    result = _testbed("--tools-only", "--openwhisk-only")
    assert result.returncode == 2
    assert "exclude each other" in result.stderr


@pytest.mark.slow
def test_testbed_rejects_a_misspelled_setting_before_running_ansible():
    result = _testbed("--check", "--set", "limit_invocations_per_minut=5")
    assert result.returncode == 2
    assert "did you mean limit_invocations_per_minute" in result.stderr
    assert "ansible-playbook" not in result.stderr.replace("fix the settings", "")


def test_testbed_help_lists_the_parts():
    result = _testbed("--help")
    assert result.returncode == 0
    for flag in ("--tools-only", "--openwhisk-only", "--check", "--undo", "--set", "--inventory"):
        assert flag in result.stdout
