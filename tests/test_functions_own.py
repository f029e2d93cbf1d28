"""Own functions packaged as OpenWhisk expects them (functions.own): single files and folders,
staging reused while nothing changes, dependency failures as one line, and the deploy CLI's
argument checks. The live deploys and runs are in tests/test_own_functions.py."""

from __future__ import annotations

import io
import json
import shutil
import zipfile

import pytest

from faasprof.errors import ConfigError
from faasprof.functions.own import own_entry, stage
from faasprof.functions.package import build_archive
from tests.test_own_functions import build_wheel, python_function


def archive_names(entry) -> list[str]:
    staged = stage(entry)
    data = build_archive(staged, cache_dir=staged.directory.parent)
    return zipfile.ZipFile(io.BytesIO(data)).namelist()


def test_python_file_becomes_main(tmp_path):
    source = tmp_path / "hello.py"
    source.write_text("def main(args):\n    return {'ok': True}\n")
    entry = own_entry(source)
    assert (entry.name, entry.kind, entry.memory_mb, entry.timeout_ms) == ("hello", "python:3", 256, 60000)
    assert archive_names(entry) == ["__main__.py"]


def test_node_file_gets_a_package_json(tmp_path):
    source = tmp_path / "greet.js"
    source.write_text("exports.main = () => ({ok: true});\n")
    entry = stage(own_entry(source, name="greet-fn", kind="nodejs:20", memory_mb=512, timeout_ms=5000))
    assert (entry.kind, entry.memory_mb, entry.timeout_ms, entry.runtime) == ("nodejs:20", 512, 5000, "nodejs")
    assert json.loads((entry.directory / "package.json").read_text())["main"] == "greet.js"
    assert archive_names(entry) == ["greet.js", "package.json"]


@pytest.mark.slow
def test_python_folder_with_requirements_has_a_virtualenv(tmp_path):
    folder = python_function(tmp_path)
    names = archive_names(own_entry(folder))
    assert "__main__.py" in names and "virtualenv/bin/activate_this.py" in names
    assert any(
        name.startswith("virtualenv/lib/python") and name.endswith("/site-packages/tinyshout.py") for name in names
    )
    assert not any("__pycache__" in name for name in names)


@pytest.mark.slow
def test_staging_is_reused_until_the_source_changes(tmp_path):
    folder = python_function(tmp_path)
    first = stage(own_entry(folder))
    data_first = build_archive(first, cache_dir=first.directory.parent)
    marker = first.directory / "virtualenv" / "marker"
    marker.write_text("kept while the source is unchanged")
    again = stage(own_entry(folder))
    assert marker.exists()
    assert build_archive(again, cache_dir=again.directory.parent) != b"" and again.directory == first.directory
    (folder / "__main__.py").write_text((folder / "__main__.py").read_text() + "\n# changed\n")
    changed = stage(own_entry(folder))
    assert not marker.exists(), "a changed source is staged anew"
    assert build_archive(changed, cache_dir=changed.directory.parent) != data_first


def test_what_is_not_a_function(tmp_path):
    (tmp_path / "empty").mkdir()
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(
        ConfigError,
        match="the folder has neither __main__.py \\(Python\\) nor package.json \\(Node.js\\); add the one your function needs",
    ):
        own_entry(tmp_path / "empty")
    with pytest.raises(ConfigError, match=r"notes.txt: not a Python \(.py\) or Node.js \(.js\) file"):
        own_entry(tmp_path / "notes.txt")
    with pytest.raises(ConfigError, match="missing: no such file or folder; check the path of your function"):
        own_entry(tmp_path / "missing")


def test_kind_of_the_other_language_is_refused(tmp_path):
    source = tmp_path / "hello.py"
    source.write_text("def main(args):\n    return {}\n")
    with pytest.raises(ConfigError, match=r"--kind: nodejs:20 does not run .*hello.py \(a Python function\)"):
        own_entry(source, kind="nodejs:20")
    with pytest.raises(ConfigError, match="--memory: must be 32..65536 MB"):
        own_entry(source, memory_mb=16)


def test_a_requirement_pip_cannot_install_is_one_line(tmp_path):
    folder = tmp_path / "broken"
    folder.mkdir()
    (folder / "__main__.py").write_text("def main(args):\n    return {}\n")
    (folder / "requirements.txt").write_text("./no-such-1.0-py3-none-any.whl\n")
    with pytest.raises(ConfigError) as caught:
        stage(own_entry(folder))
    message = str(caught.value)
    assert message.startswith(f"{folder / 'requirements.txt'}: pip could not install it (") and "\n" not in message
    assert message.endswith("fix the requirement, or check that the package index is reachable")


@pytest.mark.skipif(shutil.which("npm") is None, reason="npm is needed")
def test_a_dependency_npm_cannot_install_is_one_line(tmp_path):
    folder = tmp_path / "brokenjs"
    folder.mkdir()
    (folder / "package.json").write_text(
        json.dumps({"name": "x", "version": "1.0.0", "dependencies": {"gone": "file:./gone"}})
    )
    (folder / "index.js").write_text("exports.main = () => ({});\n")
    with pytest.raises(ConfigError) as caught:
        stage(own_entry(folder))
    assert str(caught.value).startswith(
        f"{folder / 'package.json'}: npm could not install its dependencies ("
    ) and "\n" not in str(caught.value)


def test_deploy_cli_argument_checks(cli, tmp_path, isolated_home):
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    for path in (a, b):
        path.write_text("def main(args):\n    return {}\n")
    two = cli("deploy", a, b, "--name", "x")
    assert two.returncode == 2 and two.stderr.strip() == "--name: names one action, so give exactly one PATH (got 2)"
    unknown = cli("deploy", "no_such_thing")
    assert unknown.returncode == 2 and unknown.stderr.startswith(
        "FUNCTION: 'no_such_thing' is neither a catalogue function nor a file or folder"
    )
    bad_params = tmp_path / "p.json"
    bad_params.write_text("[1]")
    params = cli("deploy", a, "--param-file", bad_params)
    assert params.returncode == 2 and "parameters must be a JSON object" in params.stderr
    no_platform = cli("deploy", a)
    assert no_platform.returncode == 3 and no_platform.stderr.startswith("no platform configured")


def test_wheel_fixture_is_a_valid_wheel(tmp_path):
    wheel = build_wheel(tmp_path)
    names = zipfile.ZipFile(wheel).namelist()
    assert "tinyshout.py" in names and "tinyshout-1.0.dist-info/RECORD" in names
