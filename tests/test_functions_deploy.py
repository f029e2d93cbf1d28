"""Deploying against a real HTTP server on 127.0.0.1 that answers the OpenWhisk action API:
idempotent deploys, variants, ensure_actions semantics, and the ``faasprof deploy`` CLI."""

from __future__ import annotations

import base64
import io
import json
import threading
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

import pytest

from faasprof.errors import NotReadyError, RunError
from faasprof.functions.catalogue import lookup, names
from faasprof.localwhisk.embedded import start_embedded
from faasprof.paths import CACHE_ENV
from faasprof.platforms.base import PlatformError
from faasprof.platforms.openwhisk.client import OpenWhiskClient
from faasprof.platforms.openwhisk.connection import Connection
from faasprof.platforms.openwhisk.deploy import CODE_DIGEST_ANNOTATION, deploy, ensure_actions, resolve_kind
from tests.helpers import run_cli, send_json
from tests.test_cache import FAKE_NPM

AUTH = "user:secret"


class FakeWhisk:
    """The action part of the OpenWhisk REST API, kept in memory; records every request."""

    def __init__(self):
        self.actions: dict[str, dict] = {}
        self.requests: list[tuple[str, str]] = []
        self.lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _send(self, status, body):
                send_json(self, status, body)

            def _route(self):
                parts = urlsplit(self.path)
                with fake.lock:
                    fake.requests.append((self.command, parts.path))
                expected = "Basic " + base64.b64encode(AUTH.encode()).decode()
                if self.headers.get("Authorization") != expected:
                    return self._send(401, {"error": "The supplied authentication is invalid"})
                return parts, parse_qs(parts.query)

            def do_GET(self):
                routed = self._route()
                if routed is None:
                    return
                parts, query = routed
                if parts.path == "/":
                    return self._send(
                        200,
                        {
                            "description": "fake",
                            "runtimes": {
                                "nodejs": [{"kind": "nodejs:20", "default": True}],
                                "python": [
                                    {"kind": "python:3.11", "default": False},
                                    {"kind": "python:3", "default": True},
                                ],
                            },
                        },
                    )
                name = self._action_name(parts.path)
                with fake.lock:
                    action = fake.actions.get(name)
                if action is None:
                    return self._send(404, {"error": "The requested resource does not exist."})
                if query.get("code") == ["false"]:
                    action = {**action, "exec": {k: v for k, v in action["exec"].items() if k != "code"}}
                return self._send(200, action)

            def do_PUT(self):
                routed = self._route()
                if routed is None:
                    return
                parts, query = routed
                name = self._action_name(parts.path)
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with fake.lock:
                    if name in fake.actions and query.get("overwrite") != ["true"]:
                        return self._send(409, {"error": "resource already exists"})
                    old = fake.actions.get(name)
                    action = {
                        "name": name,
                        "namespace": "guest",
                        "exec": body["exec"],
                        "limits": {
                            "memory": 256,
                            "timeout": 60000,
                            "logs": 10,
                            "concurrency": 1,
                            **body.get("limits", {}),
                        },
                        "annotations": body.get("annotations", []),
                        "version": "0.0.%d" % (1 + (old is not None)),
                    }
                    fake.actions[name] = action
                return self._send(200, action)

            @staticmethod
            def _action_name(path):
                prefix = "/api/v1/namespaces/guest/actions/"
                return unquote(path[len(prefix) :]) if path.startswith(prefix) else None

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.apihost = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def puts(self):
        return [path for method, path in self.requests if method == "PUT"]

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def whisk():
    fake = FakeWhisk()
    yield fake
    fake.close()


@pytest.fixture
def client(whisk):
    with OpenWhiskClient(Connection(whisk.apihost, AUTH, "guest", source="flags")) as c:
        yield c


def test_deploy_creates_then_leaves_unchanged(whisk, client):
    assert deploy(client, ["markdown", "autocomplete"]) == {"markdown": "created", "autocomplete": "created"}
    assert len(whisk.puts()) == 2
    assert deploy(client, ["markdown", "autocomplete"]) == {"markdown": "unchanged", "autocomplete": "unchanged"}
    assert len(whisk.puts()) == 2, "an identical deploy writes nothing"
    action = whisk.actions["markdown"]
    assert (
        action["exec"]["kind"] == "python:3" and action["exec"]["binary"] is True and action["exec"]["main"] == "main"
    )
    assert whisk.actions["autocomplete"]["exec"]["kind"] == "nodejs:20"
    archive = zipfile.ZipFile(io.BytesIO(base64.b64decode(action["exec"]["code"])))
    assert "__main__.py" in archive.namelist()
    assert action["limits"]["memory"] == lookup("markdown").memory_mb


def test_deploy_with_other_memory_updates(whisk, client):
    deploy(client, ["sentiment"])
    assert deploy(client, ["sentiment"], memory_mb=512) == {"sentiment": "updated"}
    assert whisk.actions["sentiment"]["limits"]["memory"] == 512
    assert deploy(client, ["sentiment"], memory_mb=512) == {"sentiment": "unchanged"}


def test_variant_deploys_the_same_code_with_its_memory(whisk, client):
    assert deploy(client, ["markdown", "markdown-384"]) == {"markdown": "created", "markdown-384": "created"}
    base, variant = whisk.actions["markdown"], whisk.actions["markdown-384"]
    assert variant["limits"]["memory"] == 384
    assert variant["exec"]["code"] == base["exec"]["code"]
    digests = {a["key"]: a["value"] for a in variant["annotations"]}
    assert (
        digests[CODE_DIGEST_ANNOTATION] == {a["key"]: a["value"] for a in base["annotations"]}[CODE_DIGEST_ANNOTATION]
    )


def test_web_functions_are_raw_web_actions(whisk, client):
    deploy(client, ["ocr-img"])
    annotations = {a["key"]: a["value"] for a in whisk.actions["ocr-img"]["annotations"]}
    assert annotations["web-export"] is True and annotations["raw-http"] is True


def test_ensure_actions_leaves_existing_actions_alone(whisk, client):
    whisk.actions["markdown"] = {
        "name": "markdown",
        "exec": {"kind": "python:3", "code": "def main(a): return a"},
        "limits": {"memory": 128, "timeout": 1000},
        "annotations": [],
    }
    assert ensure_actions(client, ["markdown", "spin", "spin"]) == {"markdown": "existing", "spin": "deployed"}
    assert whisk.actions["markdown"]["exec"]["code"] == "def main(a): return a"
    assert whisk.puts() == ["/api/v1/namespaces/guest/actions/spin"]
    assert ensure_actions(client, ["spin"]) == {"spin": "existing"}
    assert len(whisk.puts()) == 1


def test_ensure_actions_accepts_actions_only_on_the_platform(whisk, client):
    whisk.actions["my-own"] = {"name": "my-own", "exec": {"kind": "python:3"}, "limits": {}, "annotations": []}
    assert ensure_actions(client, ["my-own"]) == {"my-own": "existing"}


def test_ensure_actions_unknown_names_listed_with_deploy_commands_and_nothing_written(whisk, client):
    with pytest.raises(NotReadyError) as caught:
        ensure_actions(client, ["spin", "no-such-function", "other-missing"])
    lines = caught.value.problems
    assert len(lines) == 2 and str(caught.value) == lines[0]  # one line per missing action, nothing overlapping
    assert (
        "action no-such-function does not exist on" in lines[0] and "action other-missing does not exist on" in lines[1]
    )
    assert f"faasprof deploy PATH --name no-such-function --apihost {whisk.apihost}" in lines[0]
    assert whisk.puts() == []


def test_ensure_actions_memory_for_variants(whisk, client):
    assert ensure_actions(client, ["spin-512"], memory_mb=None) == {"spin-512": "deployed"}
    assert whisk.actions["spin-512"]["limits"]["memory"] == 512
    assert ensure_actions(client, ["chaos"], memory_mb=192) == {"chaos": "deployed"}
    assert whisk.actions["chaos"]["limits"]["memory"] == 192


def test_resolve_kind_prefers_the_manifest_kind_then_the_default():
    runtimes = {"runtimes": {"python": [{"kind": "python:3.11", "default": True}], "nodejs": [{"kind": "nodejs:18"}]}}
    assert resolve_kind(lookup("markdown"), runtimes) == "python:3.11"
    assert resolve_kind(lookup("autocomplete"), runtimes) == "nodejs:18"
    assert (
        resolve_kind(
            lookup("markdown"),
            {"runtimes": {"python": [{"kind": "python:3"}, {"kind": "python:3.11", "default": True}]}},
        )
        == "python:3"
    )
    assert resolve_kind(lookup("autocomplete"), {}) == "nodejs:default"
    # a runtime listed without a kind names nothing: skipped, not returned as None
    assert (
        resolve_kind(lookup("markdown"), {"runtimes": {"python": [{"default": True}, {"kind": "python:3.10"}]}})
        == "python:3.10"
    )


# -- the CLI --------------------------------------------------------------------------------------


def test_cli_deploys_and_reports(whisk, isolated_home):
    done = run_cli(
        "deploy",
        "json_loads",
        "nqueens-256",
        "--apihost",
        whisk.apihost,
        "--auth",
        AUTH,
        "--namespace",
        "guest",
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split()[:3] == ["json_loads", "created", "python:3"]
    assert lines[1].split()[:2] == ["nqueens-256", "created"] and "256 MB" in lines[1]
    again = run_cli(
        "deploy", "json_loads", "--apihost", whisk.apihost, "--auth", AUTH, "--namespace", "guest", timeout=60
    )
    assert again.returncode == 0 and again.stdout.split()[1] == "unchanged"
    assert AUTH.split(":")[1] not in done.stdout + done.stderr


def test_cli_without_a_platform_says_how_to_get_one(isolated_home):
    done = run_cli("deploy", "markdown", timeout=60)
    assert done.returncode == 3
    assert "faasprof local start" in done.stderr and "--apihost" in done.stderr


def test_cli_unknown_function_lists_the_known_ones(isolated_home):
    done = run_cli("deploy", "mardown", "--apihost", "http://127.0.0.1:9", "--auth", AUTH, timeout=60)
    assert done.returncode == 2
    assert "mardown" in done.stderr and "markdown" in done.stderr and "json_dumps" in done.stderr


def test_cli_needs_names_or_all(isolated_home):
    done = run_cli("deploy", timeout=60)
    assert done.returncode == 2 and "--all" in done.stderr


def test_cli_list_contacts_nothing(isolated_home):
    done = run_cli("deploy", "--list", timeout=60)
    assert done.returncode == 0
    assert any(line.startswith("markdown ") for line in done.stdout.splitlines())
    assert len(done.stdout.splitlines()) == len(names())


def test_cli_unreachable_platform_is_not_ready(isolated_home):
    done = run_cli("deploy", "markdown", "--apihost", "http://127.0.0.1:9", "--auth", AUTH, timeout=60)
    assert done.returncode == 3 and "cannot connect" in done.stderr


def test_too_large_archive_says_which_limit_to_raise(whisk, client, monkeypatch):
    def refuse(*args, **kwargs):
        raise PlatformError("413", status=413)

    monkeypatch.setattr(client, "put_action", refuse)
    # The flag is local start's: faasprof run, which starts the embedded localwhisk, has no such flag.
    with pytest.raises(RunError, match="start it yourself with `faasprof local start --max-action-code-bytes N`"):
        deploy(client, ["markdown"])


@pytest.mark.slow
def test_an_archive_over_localwhisks_code_limit_names_the_setting_that_moves_it(tmp_path):
    """A 40 MB zip was refused at 413 with advice to raise --max-payload-bytes, which changed nothing:
    the action code limit is its own setting, and raising it lets the same archive through."""
    for limit, refused in ((2_000, True), (48 * 1024 * 1024, False)):
        with start_embedded(data_dir=tmp_path / str(limit), max_action_code_bytes=limit) as handle:
            lw_client = OpenWhiskClient(Connection(handle.apihost, handle.auth, "guest", source="flags"))
            if refused:
                with pytest.raises(RunError) as caught:
                    deploy(lw_client, ["markdown"])
                message = str(caught.value)
                assert (
                    "--max-action-code-bytes" in message
                    and "413: exec larger than allowed" in message
                    and "max-payload-bytes" not in message
                )
            else:
                assert deploy(lw_client, ["markdown"]) == {"markdown": "created"}


def test_cli_all_installs_npm_packages_on_first_use_and_skips_a_function_without_npm(whisk, isolated_home, tmp_path):
    flags = ("--apihost", whisk.apihost, "--auth", AUTH, "--namespace", "guest")
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    cache = {CACHE_ENV: str(tmp_path / "cache")}
    without = run_cli("deploy", "--all", *flags, env={**cache, "PATH": str(empty)}, timeout=120)
    assert without.returncode == 0, without.stderr
    assert "skipping img-resize: img-resize: needs the npm packages jimp and npm is not installed" in without.stderr
    assert "img-resize" not in without.stdout and "json_loads" in without.stdout
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "npm").write_text(FAKE_NPM)
    (fake / "npm").chmod(0o755)
    with_npm = run_cli(
        "deploy",
        "--all",
        *flags,
        env={**cache, "PATH": f"{fake}:/usr/bin:/bin", "FAKE_NPM_LOG": str(tmp_path / "npm.log")},
        timeout=120,
    )
    assert with_npm.returncode == 0, with_npm.stderr
    assert "img-resize: installing npm packages jimp with npm ci" in with_npm.stderr
    assert any(line.split()[:2] == ["img-resize", "created"] for line in with_npm.stdout.splitlines())
