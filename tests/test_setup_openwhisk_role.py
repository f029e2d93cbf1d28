"""The openwhisk role's deploy logic, run for real against a stand-in OpenWhisk checkout.

The checkout is a local git repository whose playbooks (setup.yml, couchdb.yml, ...) only append
their name and the settings they received to a log; the controller is a real HTTP server on
127.0.0.1 answering like OpenWhisk's `GET /`; `docker inspect` is a script printing an invoker's
environment. What is tested is faasprof's role: which OpenWhisk playbooks run when, with which
extra vars, that a second run with the same settings changes nothing, and that settings the running
platform did not take are caught.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.helpers import REPO_ROOT

SETUP = REPO_ROOT / "setup"
VENV_BIN = REPO_ROOT / ".venv" / "bin"
sys.path.insert(0, str(SETUP))
import openwhisk_vars  # noqa: E402

# Stand-in for OpenWhisk's ansible-playbook (its venv's bin/): records each call and the extra
# vars it was given. argv: -i environments/faasprof PLAYBOOK -e @FILE
FAKE_ANSIBLE_PLAYBOOK = """#!/bin/sh
vars_file=${5#@}
printf '{"playbook": "%s", "inventory": "%s", "cwd": "%s", "config": "%s", "tmp_dir": "%s", "vars": %s}\\n' \\
    "$3" "$2" "$PWD" "$ANSIBLE_CONFIG" "$OPENWHISK_TMP_DIR" "$(tr -d '\\n' < "$vars_file")" >> "$FAKE_OW_LOG"
"""

ROLE_PLAYBOOK = """- name: openwhisk role against a stand-in
  hosts: localhost
  connection: local
  gather_facts: false
  vars_files: ["{setup}/group_vars/all.yml"]
  roles:
    - role: openwhisk
"""


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        timeout=30,
        env={
            **os.environ,
            "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@t",
            "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@t",
        },
    )


@pytest.fixture
def stand_in(tmp_path):
    """A fake OpenWhisk repo tagged 1.0.0, a fake controller, a fake docker; returns a runner."""
    repo = tmp_path / "openwhisk-src"
    ansible_dir = repo / "ansible"
    (ansible_dir / "environments" / "local" / "group_vars").mkdir(parents=True)
    (ansible_dir / "environments" / "local" / "group_vars" / "all").write_text("openwhisk_tmp_dir: /tmp\n")
    (ansible_dir / "files").mkdir()
    (ansible_dir / "files" / "auth.guest").write_text("uuid-guest:secret\n")
    (ansible_dir / "ansible.cfg").write_text("[defaults]\nretry_files_enabled = False\n")
    for name in ("setup.yml", "couchdb.yml", "initdb.yml", "wipe.yml", "openwhisk.yml"):
        (ansible_dir / name).write_text("- name: OpenWhisk's own playbook, never run by this test\n  hosts: all\n")
    ow_venv = tmp_path / "openwhisk-venv"
    (ow_venv / "bin").mkdir(parents=True)
    (ow_venv / "bin" / "ansible-playbook").write_text(FAKE_ANSIBLE_PLAYBOOK)
    (ow_venv / "bin" / "ansible-playbook").chmod(0o755)
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "stand-in")
    _git(repo, "tag", "1.0.0")

    controller = {"limits": {}}
    posts: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (http.server's name)
            body = json.dumps({"limits": controller["limits"]} if self.path == "/" else {"api_paths": ["/api/v1"]})
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body.encode())

        def do_POST(self):  # noqa: N802
            length = int(self.headers.get("Content-Length") or 0)
            posts.append(
                {"path": self.path, "auth": self.headers.get("Authorization"), "body": self.rfile.read(length).decode()}
            )
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(b'{"json_chars": 1234}')

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    docker_env = tmp_path / "invoker-env.json"
    (bin_dir / "docker").write_text(f'#!/bin/sh\n[ "$1" = inspect ] && exec cat "{docker_env}"\nexit 1\n')
    (bin_dir / "docker").chmod(0o755)

    log = tmp_path / "openwhisk-calls.jsonl"
    playbook = tmp_path / "role.yml"
    playbook.write_text(ROLE_PLAYBOOK.format(setup=SETUP))
    inventory = tmp_path / "inventory.ini"
    inventory.write_text(
        f"[openwhisk_controller]\nlocalhost ansible_connection=local openwhisk_address=127.0.0.1 ansible_python_interpreter={sys.executable}\n"
        f"[openwhisk_invokers]\nlocalhost ansible_connection=local openwhisk_address=127.0.0.1 ansible_python_interpreter={sys.executable}\n"
        "[testbed:children]\nopenwhisk_controller\nopenwhisk_invokers\n"
    )

    def platform_takes(overrides: dict) -> dict:
        """Make the fake controller and invoker report what the table (with overrides) asks."""
        extra = openwhisk_vars.render(openwhisk_vars.resolve(openwhisk_vars.load_table(), overrides))
        controller["limits"] = {
            "actions_per_minute": extra["limit_invocations_per_minute"],
            "concurrent_actions": extra["limit_invocations_concurrent"],
            "max_action_memory": openwhisk_vars.size_mb(extra["limit_action_memory_max"]) * 1048576,
        }
        env = [f"{k}={v}" for k, v in extra["invoker_extraEnv"].items()]
        env.append(f"CONFIG_whisk_containerPool_userMemory={extra['invoker_user_memory']}")
        docker_env.write_text(json.dumps(["PATH=/usr/bin", *env]) + "\n")
        return extra

    def run(
        overrides: dict | None = None, check: bool = False, playbook_text: str | None = None, extra: dict | None = None
    ) -> subprocess.CompletedProcess:
        if playbook_text is not None:
            playbook.write_text(playbook_text.format(setup=SETUP))
        variables = {
            "openwhisk_git_repo": f"file://{repo}",
            "openwhisk_home": str(tmp_path / "checkout"),
            "faasprof_state_dir": str(tmp_path / "state"),
            "faasprof_root": str(REPO_ROOT),
            "faasprof_venv": str(REPO_ROOT / ".venv"),
            # OpenWhisk's ansible would come from PyPI: a recording stand-in instead.
            "openwhisk_venv": str(ow_venv),
            "openwhisk_ansible_packages": [],
            "docker_openwhisk_python_packages": [],
            "openwhisk_apihost": f"http://127.0.0.1:{server.server_address[1]}",
            "openwhisk_overrides": overrides or {},
            "docker_cgroup_v2": True,
            "openwhisk_tmp_dir": str(tmp_path / "state" / "openwhisk"),
            **(extra or {}),
        }
        (tmp_path / "state").mkdir(exist_ok=True)
        env = dict(os.environ)
        env.update(
            {
                "ANSIBLE_CONFIG": str(SETUP / "ansible.cfg"),
                "ANSIBLE_NOCOLOR": "1",
                "ANSIBLE_LOCAL_TEMP": str(tmp_path / "ansible-tmp"),
                "FAKE_OW_LOG": str(log),
                "PATH": f"{bin_dir}:{VENV_BIN}:{env.get('PATH', '')}",
            }
        )
        return subprocess.run(
            [
                str(VENV_BIN / "ansible-playbook"),
                "-i",
                str(inventory),
                str(playbook),
                "-e",
                json.dumps(variables),
                *(["--check"] if check else []),
            ],
            capture_output=True,
            text=True,
            timeout=180,
            env=env,
            cwd=SETUP,
        )

    def calls() -> list[dict]:
        return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []

    try:
        run.posts = posts
        yield run, calls, platform_takes, tmp_path
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.slow
def test_check_then_deploy_then_nothing_then_redeploy_then_mismatches(stand_in):
    """One scenario (each ansible run costs seconds on a shared 2-core box)."""
    run, calls, platform_takes, tmp_path = stand_in
    platform_takes({"invoker_use_runc": False})

    # --check: says what would run, runs nothing, fails nowhere.
    check = run(check=True)
    assert check.returncode == 0, check.stdout[-3000:] + check.stderr
    assert "Would run OpenWhisk playbooks: setup.yml, couchdb.yml, initdb.yml, wipe.yml, openwhisk.yml" in check.stdout
    assert calls() == []

    # First deployment: the whole sequence, with the table's settings.
    first = run()
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr
    names = [c["playbook"] for c in calls()]
    assert names == ["setup.yml", "couchdb.yml", "initdb.yml", "wipe.yml", "openwhisk.yml"]
    last = calls()[-1]
    assert last["vars"]["invoker_user_memory"] == "4096m" and last["vars"]["scheduler_enable"] is False
    assert last["vars"]["invoker_use_runc"] is False, "auto on a cgroup v2 invoker means docker pause"
    assert last["vars"]["invoker_extraEnv"]["CONFIG_whisk_containerProxy_timeouts_pauseGrace"] == "50 milliseconds"
    assert last["inventory"] == "environments/faasprof"
    assert last["cwd"] == str(tmp_path / "checkout" / "ansible")
    assert last["config"] == str(tmp_path / "checkout" / "ansible" / "ansible.cfg"), "OpenWhisk's own ansible.cfg"
    assert last["tmp_dir"] == str(tmp_path / "state" / "openwhisk")
    env_dir = tmp_path / "checkout/ansible/environments/faasprof"
    hosts = (env_dir / "hosts").read_text()
    assert "[invokers]\ninvoker0 ansible_host=127.0.0.1" in hosts and (env_dir / "hosts.j2.ini").read_text() == hosts
    assert (env_dir / "group_vars" / "all").exists(), "the local environment's group_vars are the base"
    assert json.loads((env_dir / "faasprof-extra-vars.json").read_text())["invoker_user_memory"] == "4096m"
    assert json.loads((env_dir / "runtimes.json").read_text())["runtimes"]

    # Same settings again: nothing runs, nothing changes.
    second = run()
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr
    assert len(calls()) == 5, "a second run with the same settings must not run OpenWhisk's playbooks"
    assert "changed=0" in second.stdout, second.stdout[-3000:]

    # A changed setting: redeploy without wiping the databases. (The invoker host now has cgroup v1,
    # so "auto" means runc pause.)
    platform_takes({"invoker_use_runc": True, "invoker_user_memory": "8192m"})
    third = run({"invoker_user_memory": "8192m"}, extra={"docker_cgroup_v2": False})
    assert third.returncode == 0, third.stdout[-3000:] + third.stderr
    assert [c["playbook"] for c in calls()[5:]] == ["setup.yml", "openwhisk.yml"], (
        "a redeploy must not wipe the databases"
    )
    assert calls()[-1]["vars"]["invoker_user_memory"] == "8192m"
    assert calls()[-1]["vars"]["invoker_use_runc"] is True

    # The running platform ignored settings (as a release without invoker_extraEnv would): every
    # mismatch is named and the run fails, even though nothing needed redeploying.
    platform_takes(
        {
            "invoker_use_runc": True,
            "invoker_user_memory": "8192m",
            "limit_invocations_per_minute": 60,
            "CONFIG_whisk_containerProxy_timeouts_pauseGrace": "10 seconds",
        }
    )
    fourth = run({"invoker_user_memory": "8192m"}, extra={"docker_cgroup_v2": False})
    assert fourth.returncode != 0
    assert len(calls()) == 7
    assert "controller reports actions_per_minute=60, the table asks 999999" in fourth.stdout
    assert (
        "invoker0 on localhost lacks CONFIG_whisk_containerProxy_timeouts_pauseGrace=50 milliseconds" in fourth.stdout
    )


SMOKE_PLAYBOOK = """- name: smoke tasks of the faasprof role against a stand-in
  hosts: localhost
  connection: local
  gather_facts: false
  vars_files: ["{setup}/group_vars/all.yml"]
  tasks:
    - name: Settings
      ansible.builtin.import_role:
        name: openwhisk
        tasks_from: settings.yml
    - name: The guest key the client role read from the checkout
      ansible.builtin.set_fact:
        faasprof_auth: "uuid-guest:secret"
    - name: Smoke test
      ansible.builtin.include_role:
        name: faasprof
        tasks_from: smoke.yml
    - name: Report
      ansible.builtin.debug:
        msg: "fallback={{{{ faasprof_runc_fallback }}}}"
"""


@pytest.mark.slow
def test_smoke_invocation_and_runc_failure_detection(stand_in):
    run, _, _, tmp_path = stand_in
    log_dir = tmp_path / "state" / "openwhisk" / "wsklogs" / "invoker0"
    log_dir.mkdir(parents=True)
    log_file = log_dir / "invoker0_logs.log"

    # runc pause works: one invocation, no fallback.
    log_file.write_text("[2026-11-21T02:00:00.000Z] [INFO] [#tid_sid_invokerHealth] [ContainerPool] ready\n")
    ok = run({"invoker_use_runc": True}, playbook_text=SMOKE_PLAYBOOK)
    assert ok.returncode == 0, ok.stdout[-3000:] + ok.stderr
    assert "fallback=False" in ok.stdout
    post = run.posts[-1]
    assert post["path"] == "/api/v1/namespaces/guest/actions/json_dumps?blocking=true&result=true"
    assert post["auth"] == "Basic " + base64.b64encode(b"uuid-guest:secret").decode()
    assert not (tmp_path / "state" / "openwhisk-runc-failed").exists()

    # The invoker logged runc errors: remembered, and the playbook falls back to docker pause.
    with log_file.open("a") as handle:
        handle.write("[2026-11-21T02:00:01.000Z] [ERROR] [#tid_1] [RuncClient] runc pause failed: error\n")
    failed = run({"invoker_use_runc": True}, playbook_text=SMOKE_PLAYBOOK)
    assert failed.returncode == 0, failed.stdout[-3000:] + failed.stderr
    assert "fallback=True" in failed.stdout
    assert (tmp_path / "state" / "openwhisk-runc-failed").exists()
    assert len(run.posts) == 2
