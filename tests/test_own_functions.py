"""A researcher's own functions: a Python folder whose requirements.txt names a package, and a
Node.js folder with a dependency, deploy to the embedded default from a workload that names them
(``source``) and run; ``faasprof deploy PATH`` is idempotent and binds default parameters; a
workload of FaaSProfiler's shape naming functions outside the catalogue validates, plans and,
with them deployed, runs. Everything works offline: the Python dependency is a wheel built here,
the Node.js one a local ``file:`` package."""

from __future__ import annotations

import base64
import csv
import hashlib
import json
import shutil
import zipfile
from pathlib import Path

import pytest

from faasprof.platforms.openwhisk.client import OpenWhiskClient
from faasprof.platforms.openwhisk.connection import Connection
from tests.helpers import run_cli

embedded = pytest.importorskip("faasprof.localwhisk.embedded")
needs_node = pytest.mark.skipif(
    shutil.which("node") is None or shutil.which("npm") is None, reason="node and npm are needed"
)


def build_wheel(folder: Path, name: str = "tinyshout", version: str = "1.0") -> Path:
    """A minimal pure-Python wheel (PEP 427) with one module, so pip installs it offline."""
    wheel = folder / f"{name}-{version}-py3-none-any.whl"
    module = "def shout(text):\n    return text.upper() + '!'\n".encode()
    dist = f"{name}-{version}.dist-info"
    files = {
        f"{name}.py": module,
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode(),
        f"{dist}/WHEEL": b"Wheel-Version: 1.0\nGenerator: faasprof-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for path, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(data)}")
    record.append(f"{dist}/RECORD,,")
    files[f"{dist}/RECORD"] = ("\n".join(record) + "\n").encode()
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, data in files.items():
            archive.writestr(path, data)
    return wheel


def python_function(root: Path) -> Path:
    folder = root / "shouter"
    folder.mkdir()
    wheel = build_wheel(folder)
    (folder / "requirements.txt").write_text(f"./{wheel.name}\n")
    (folder / "__main__.py").write_text(
        "import tinyshout\n\n\ndef main(args):\n    return {'said': tinyshout.shout(args.get('text', 'hello'))}\n"
    )
    return folder


def node_function(root: Path) -> Path:
    folder = root / "greeter"
    (folder / "lib" / "tinygreet").mkdir(parents=True)
    (folder / "lib" / "tinygreet" / "package.json").write_text(
        json.dumps({"name": "tinygreet", "version": "1.0.0", "main": "index.js"})
    )
    (folder / "lib" / "tinygreet" / "index.js").write_text("exports.greet = (name) => `hello ${name}`;\n")
    (folder / "package.json").write_text(
        json.dumps(
            {
                "name": "greeter",
                "version": "1.0.0",
                "main": "index.js",
                "dependencies": {"tinygreet": "file:./lib/tinygreet"},
            }
        )
    )
    (folder / "index.js").write_text(
        "const { greet } = require('tinygreet');\nfunction main(args) { return { said: greet(args.name || 'world') }; }\nexports.main = main;\n"
    )
    return folder


def rows(run_dir: Path) -> list[dict]:
    with open(run_dir / "invocations.csv", newline="") as handle:
        return list(csv.DictReader(handle))


@pytest.fixture(scope="module")
def platform():
    handle = embedded.start_embedded()
    try:
        with OpenWhiskClient(Connection(handle.apihost, handle.auth, handle.namespace, source="embedded")) as client:
            yield handle, client
    finally:
        handle.stop()


@pytest.mark.slow
def test_python_function_with_requirements_deploys_idempotently_with_parameters(platform, tmp_path, isolated_home):
    handle, client = platform
    folder = python_function(tmp_path)
    flags = ["--apihost", handle.apihost, "--auth", handle.auth]
    first = run_cli(
        "deploy", folder, "--name", "shouter", "--param", "text", "from default", "--memory", "192", *flags, timeout=180
    )
    assert first.returncode == 0, first.stderr
    assert first.stdout.split()[:2] == ["shouter", "created"]
    again = run_cli(
        "deploy", folder, "--name", "shouter", "--param", "text", "from default", "--memory", "192", *flags, timeout=180
    )
    assert again.returncode == 0, again.stderr
    assert again.stdout.split()[:2] == ["shouter", "unchanged"]
    action = client.get_action("shouter")
    assert action["limits"]["memory"] == 192
    answer = client.invoke("shouter", {}, blocking=True, result=True).json()
    assert answer == {"said": "FROM DEFAULT!"}
    assert client.invoke("shouter", {"text": "own"}, blocking=True, result=True).json() == {"said": "OWN!"}


@needs_node
def test_node_function_with_a_file_dependency_deploys(platform, tmp_path, isolated_home):
    handle, client = platform
    folder = node_function(tmp_path)
    done = run_cli("deploy", folder, "--apihost", handle.apihost, "--auth", handle.auth, timeout=180)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[:2] == ["greeter", "created"]
    assert client.invoke("greeter", {"name": "faasprof"}, blocking=True, result=True).json() == {
        "said": "hello faasprof"
    }
    assert not (folder / "node_modules").exists(), "the researcher's folder is left as it was"


@pytest.mark.slow
@needs_node
def test_workload_naming_own_folders_runs_on_the_embedded_default(tmp_path, isolated_home):
    python_function(tmp_path)
    node_function(tmp_path)
    workload = tmp_path / "own.json"
    workload.write_text(
        json.dumps(
            {
                "test_name": "own",
                "test_duration_in_seconds": 3,
                "random_seed": 3,
                "blocking_cli": True,
                "instances": {
                    "py": {
                        "application": "shouter",
                        "source": "shouter",
                        "distribution": "Uniform",
                        "rate": 2,
                        "params": {"text": "hi"},
                    },
                    "js": {"application": "greeter", "source": "greeter", "distribution": "Uniform", "rate": 2},
                },
            }
        )
    )
    assert run_cli("validate", workload).returncode == 0
    done = run_cli("run", workload, "--out", tmp_path / "runs", "--quiet", timeout=240)
    assert done.returncode == 0, done.stderr
    run_dir = Path(done.stdout.strip().splitlines()[-1])
    found = rows(run_dir)
    assert len(found) == 12
    assert {row["outcome"] for row in found} == {"ok"}, [row["error"] for row in found if row["outcome"] != "ok"][:3]
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["workload"]["instances"]["py"]["function_source"] == str((tmp_path / "shouter").resolve())


@pytest.mark.slow
def test_a_path_in_application_is_the_function_for_validate_and_run_alike(tmp_path, isolated_home):
    """``"application": "/tmp/own1/myfn"`` as a researcher means it: that folder (or file) is the
    function, deployed under its folder or file name as `faasprof deploy PATH` names it; a path that
    is not there gets one line, the same from validate and run, with no template around it."""
    own = tmp_path / "own1"
    (own / "myfn").mkdir(parents=True)
    (own / "myfn" / "__main__.py").write_text("def main(args):\n    return {'from': 'folder'}\n")
    (own / "single.py").write_text("def main(args):\n    return {'from': 'file'}\n")
    workload = tmp_path / "w.json"
    base = {"test_name": "own_path", "test_duration_in_seconds": 2, "random_seed": 5, "blocking_cli": True}
    workload.write_text(
        json.dumps(
            {
                **base,
                "instances": {
                    "folder": {"application": str(own / "myfn"), "distribution": "Uniform", "rate": 2},
                    "file": {
                        "application": "own1/single.py",
                        "distribution": "Uniform",
                        "rate": 2,
                    },  # relative to the workload's folder
                },
            }
        )
    )
    validated = run_cli("validate", workload)
    assert validated.returncode == 0 and validated.stderr == "", validated.stderr
    done = run_cli("run", workload, "--out", tmp_path / "runs", "--quiet", timeout=240)
    assert done.returncode == 0, done.stderr
    run_dir = Path(done.stdout.strip().splitlines()[-1])
    found = rows(run_dir)
    assert {(row["instance"], row["function"]) for row in found} == {("folder", "myfn"), ("file", "single")}
    assert {row["outcome"] for row in found} == {"ok"}, [row["error"] for row in found if row["outcome"] != "ok"][:3]
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["workload"]["instances"]["folder"]["function_source"] == str(own / "myfn")

    gone = own / "nosuch"
    workload.write_text(
        json.dumps({**base, "instances": {"a": {"application": str(gone), "distribution": "Uniform", "rate": 2}}})
    )
    expected = [
        f'{workload}: instances.a.application: "{gone}" is neither in the function catalogue nor an existing file or folder '
        f"(looked in {gone}); fix the path to your function's file or folder"
    ]
    validated = run_cli("validate", workload)
    refused = run_cli("run", workload, "--out", tmp_path / "runs", timeout=120)
    assert (validated.returncode, validated.stderr.splitlines()) == (2, expected)
    assert (refused.returncode, refused.stderr.splitlines()) == (2, expected)


FAASPROFILER_SHAPED = {
    "test_name": "example_test",
    "test_duration_in_seconds": 4,
    "random_seed": 100,
    "blocking_cli": True,
    "endpoint": "local_openwhisk",
    "serverless_platform": "openwhisk",
    "instances": {
        "instance1": {"application": "shouter-fp", "distribution": "Poisson", "rate": 2, "activity_window": [1, 3]},
        "instance2": {"application": "shouter-fp", "distribution": "Uniform", "rate": 2, "activity_window": None},
        "instance3": {"application": "shouter-fp", "interarrivals_list": [0.5, 0.5, 1.0], "param_file": "params.json"},
    },
    "perf_monitoring": {"runtime_script": None, "post_script": None},
}


@pytest.mark.slow
def test_faasprofiler_workload_outside_the_catalogue_validates_plans_and_runs_once_deployed(
    platform, tmp_path, isolated_home
):
    handle, client = platform
    workload = tmp_path / "fp.json"
    workload.write_text(json.dumps(FAASPROFILER_SHAPED))
    (tmp_path / "params.json").write_text(json.dumps({"text": "param file"}))
    flags = ["--apihost", handle.apihost, "--auth", handle.auth]

    offline = run_cli("validate", "--offline", workload)
    assert offline.returncode == 0, offline.stderr
    assert 'instances.instance1.application: "shouter-fp" is not in the function catalogue' in offline.stderr
    embedded = run_cli("validate", workload)  # no platform named: the embedded localwhisk, which starts empty
    assert (
        embedded.returncode == 2
        and 'instances.instance1.application: "shouter-fp" is not in the function catalogue' in embedded.stderr
    )
    plan = run_cli("plan", workload)
    assert plan.returncode == 0, plan.stderr
    assert "shouter-fp" in plan.stdout

    missing = run_cli("validate", workload, *flags)
    assert missing.returncode == 3
    [line] = missing.stderr.splitlines()  # one line per missing action
    assert line.startswith(
        f"{workload}: instances.instance1.application: action shouter-fp does not exist on {handle.apihost} (namespace _)"
    )
    assert line.endswith(
        f"; deploy your function under this name: faasprof deploy PATH --name shouter-fp --apihost {handle.apihost} --auth UUID:KEY, "
        'or give the instance a "source" (your function\'s file or folder)'
    )
    refused = run_cli("run", workload, "--out", tmp_path / "runs", *flags, timeout=60)
    assert refused.returncode == 3 and line in refused.stderr.splitlines() and "Traceback" not in refused.stderr

    folder = python_function(tmp_path)
    assert run_cli("deploy", folder, "--name", "shouter-fp", *flags, timeout=180).returncode == 0
    assert run_cli("validate", workload, *flags).returncode == 0
    done = run_cli("run", workload, "--out", tmp_path / "runs", "--quiet", *flags, timeout=120)
    assert done.returncode == 0, done.stderr
    run_dir = Path(done.stdout.strip().splitlines()[-1])
    assert {row["outcome"] for row in rows(run_dir)} == {"ok"}
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["workload"]["serverless_platform"] == "openwhisk"


@pytest.mark.slow
def test_a_missing_action_is_one_line_suggesting_the_platforms_closest_action(platform, tmp_path, isolated_home):
    handle, _ = platform
    flags = ["--apihost", handle.apihost, "--auth", handle.auth]
    function = tmp_path / "zebra_counter.py"
    function.write_text("def main(args):\n    return {'zebras': 1}\n")
    assert run_cli("deploy", function, *flags, timeout=120).returncode == 0
    workload = tmp_path / "w.json"
    workload.write_text(
        json.dumps(
            {
                "test_name": "z",
                "test_duration_in_seconds": 2,
                "random_seed": 1,
                "instances": {
                    "a": {"application": "zebra_countr", "interarrivals_list": [1]},
                    "b": {"application": "zebra_countr", "interarrivals_list": [1]},
                },
            }
        )
    )
    validated = run_cli("validate", workload, *flags, timeout=60)
    refused = run_cli("run", workload, "--out", tmp_path / "runs", *flags, timeout=60)
    for done in (validated, refused):
        assert done.returncode == 3
        [line] = done.stderr.splitlines()  # one line for the action both instances name
        assert line.startswith(
            f'{workload}: instances.a.application: action zebra_countr does not exist on {handle.apihost} (namespace _) (did you mean "zebra_counter"?); '
        )


def test_native_runs_an_own_function_folder(tmp_path, isolated_home):
    folder = python_function(tmp_path)
    params = tmp_path / "p.json"
    params.write_text(json.dumps({"text": "native"}))
    done = run_cli("native", folder, "--repeat", "3", "--params", params, "--out", tmp_path / "runs", timeout=180)
    assert done.returncode == 0, done.stderr
    run_dir = Path(done.stdout.strip().splitlines()[-1])
    with open(run_dir / "native.csv", newline="") as handle:
        native_rows = list(csv.DictReader(handle))
    assert [row["outcome"] for row in native_rows] == ["ok", "ok", "ok"]


@needs_node
def test_native_runs_an_own_node_function_folder(tmp_path, isolated_home):
    folder = node_function(tmp_path)
    done = run_cli("native", folder, "--repeat", "2", "--out", tmp_path / "runs", timeout=180)
    assert done.returncode == 0, done.stderr
    run_dir = Path(done.stdout.strip().splitlines()[-1])
    with open(run_dir / "native.csv", newline="") as handle:
        assert [row["outcome"] for row in csv.DictReader(handle)] == ["ok", "ok"]


@pytest.mark.slow
def test_plan_warns_but_plans_without_functions_or_files_a_run_needs(tmp_path, isolated_home):
    data = dict(FAASPROFILER_SHAPED)
    data["perf_monitoring"] = {"runtime_script": "scripts/monitor.sh", "post_script": None}
    workload = tmp_path / "fp.json"
    workload.write_text(json.dumps(data))
    plan = run_cli("plan", workload)
    assert plan.returncode == 0, plan.stderr
    warnings = [line for line in plan.stderr.splitlines() if line.startswith("warning: ")]
    assert len(warnings) == 3, warnings  # the function (once), the param file, the script
    assert any(
        "instances.instance3.param_file: file params.json not found" in line and line.endswith("(a run needs it)")
        for line in warnings
    )
    assert any("perf_monitoring.runtime_script: file scripts/monitor.sh not found" in line for line in warnings)
    assert "total " in plan.stdout
    validate = run_cli("validate", workload)
    assert validate.returncode == 2
    assert "instances.instance3.param_file: file params.json not found" in validate.stderr


@pytest.mark.slow
def test_a_source_that_cannot_be_built_is_refused_before_localwhisk_starts(tmp_path, isolated_home):
    folder = tmp_path / "broken"
    folder.mkdir()
    (folder / "__main__.py").write_text("def main(args):\n    return {}\n")
    (folder / "requirements.txt").write_text("./missing-1.0-py3-none-any.whl\n")
    (tmp_path / "notafunction").mkdir()
    workload = tmp_path / "w.json"
    base = {"test_name": "b", "test_duration_in_seconds": 2, "random_seed": 1, "blocking_cli": False}
    workload.write_text(
        json.dumps(
            {**base, "instances": {"a": {"application": "a", "source": "notafunction", "interarrivals_list": [1]}}}
        )
    )
    invalid = run_cli("validate", workload)
    assert invalid.returncode == 2
    assert invalid.stderr.strip() == (
        f"{workload}: instances.a.source: {tmp_path / 'notafunction'}: the folder has neither __main__.py (Python) "
        "nor package.json (Node.js); add the one your function needs"
    )
    workload.write_text(
        json.dumps({**base, "instances": {"a": {"application": "a", "source": "broken", "interarrivals_list": [1]}}})
    )
    done = run_cli("run", workload, "--out", tmp_path / "runs", timeout=120)
    assert done.returncode == 2
    assert done.stderr.startswith(
        f"{workload}: instances.a.source: {folder / 'requirements.txt'}: pip could not install it ("
    )
    assert "starting the embedded localwhisk" not in done.stderr and "Traceback" not in done.stderr


def test_validate_with_a_platform_checks_its_memory_limits(platform, tmp_path, isolated_home):
    handle, _ = platform
    workload = tmp_path / "mem.json"
    workload.write_text(
        json.dumps(
            {
                "test_name": "m",
                "test_duration_in_seconds": 2,
                "random_seed": 1,
                "blocking_cli": False,
                "instances": {"a": {"application": "spin", "memory_mb": 8192, "interarrivals_list": [1]}},
            }
        )
    )
    done = run_cli("validate", workload, "--apihost", handle.apihost, "--auth", handle.auth)
    assert done.returncode == 2
    assert done.stderr.strip() == (
        f"{workload}: instances.a.memory_mb: 8192 MB is outside the 128..2048 MB that {handle.apihost} accepts; "
        "lower memory_mb, or raise the platform's limit (OpenWhisk: limit_action_memory_max)"
    )
    offline = run_cli("validate", workload, "--apihost", handle.apihost, "--auth", handle.auth, "--offline")
    assert offline.returncode == 0 and "checked offline" in offline.stdout
