"""A workload from someone else reaches only its own folder and this machine (issue 44, item 3).

A file outside the workload's folder (and outside faasprof's own files) needs ``--allow-file PATH``
or ``--allow-outside-files``; a host that is not loopback needs ``--apihost`` (the user names the
platform) or ``--allow-remote``; credentials in a URL are refused, shown redacted, and never stored.
``validate`` lists what the workload would read and where it would send.
"""

from __future__ import annotations

import json
import os

import pytest

from faasprof.errors import ConfigError
from faasprof.workload.access import Grants
from faasprof.workload.spec import load_workload, workload_from_dict
from tests.helpers import run_cli


def _write(folder, instance: dict, **top) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "w.json"
    data = {"test_name": "a", "test_duration_in_seconds": 1, "random_seed": 1, "instances": {"i0": instance}, **top}
    path.write_text(json.dumps(data))
    return str(path)


def _problems(path: str, grants: Grants | None = None) -> list[str]:
    with pytest.raises(ConfigError) as raised:
        load_workload(path, grants=grants)
    return raised.value.problems


@pytest.fixture
def outside(tmp_path):
    secret = tmp_path / "elsewhere" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text("private\n")
    return secret


def _data_instance(value: str) -> dict:
    return {
        "application": "json_dumps",
        "distribution": "Poisson",
        "rate": 1,
        "data_file": value,
        "data_mode": "base64",
    }


def test_a_file_outside_the_workloads_folder_needs_the_users_leave(tmp_path, outside):
    path = _write(tmp_path / "w", _data_instance(str(outside)))
    (line,) = _problems(path)
    assert line == (
        f"{path}: instances.i0.data_file: {outside} is outside the workload's folder {tmp_path / 'w'}; a workload reads "
        f"only its own files unless you say so: pass --allow-file {outside} (or --allow-outside-files)"
    )
    assert load_workload(path, grants=Grants(allow_files=(outside,))).instances[0].data_file == outside
    assert load_workload(path, grants=Grants(allow_files=(outside.parent,))).instances[0].data_file == outside
    assert load_workload(path, grants=Grants(allow_outside_files=True)).instances[0].data_file == outside


@pytest.mark.parametrize("how", ["dotdot", "link"])
def test_a_relative_path_or_a_link_that_leaves_the_folder_is_refused(tmp_path, outside, how):
    folder = tmp_path / "w"
    folder.mkdir()
    if how == "link":
        os.symlink(outside, folder / "inside.txt")
        value = "inside.txt"
    else:
        value = "../elsewhere/secret.txt"
    (line,) = _problems(_write(folder, _data_instance(value)))
    assert f"instances.i0.data_file: {outside} is outside the workload's folder" in line


def test_param_and_trace_files_outside_are_refused_too(tmp_path, outside):
    trace = tmp_path / "elsewhere" / "t.csv"
    trace.write_text("0.1\n0.2\n")
    path = _write(
        tmp_path / "w",
        {"application": "json_dumps", "distribution": "Trace", "trace_file": str(trace)},
    )
    (line,) = _problems(path)
    assert "instances.i0.trace_file: " in line and "--allow-file" in line


@pytest.mark.parametrize(
    "top, instance, field, flag",
    [
        (
            {"platform": {"apihost": "http://10.9.8.7:3233"}},
            {},
            "platform.apihost",
            "pass --apihost http://10.9.8.7:3233",
        ),
        (
            {"endpoint": "generic"},
            {"url": "http://10.9.8.7/run", "data": {}},
            "instances.i0.url",
            "pass --allow-remote",
        ),
    ],
)
def test_a_host_off_this_machine_needs_the_users_leave(tmp_path, top, instance, field, flag):
    spec = {"application": "json_dumps", "distribution": "Poisson", "rate": 1, **instance}
    path = _write(tmp_path / "w", spec, **top)
    (line,) = _problems(path)
    assert f"{field}: " in line and "is not this machine" in line and flag in line, line
    load_workload(path, grants=Grants(allow_remote=True))
    if field == "platform.apihost":
        load_workload(path, grants=Grants(apihost_from_flags=True))


def test_loopback_hosts_need_no_leave(tmp_path):
    path = _write(
        tmp_path / "w",
        {"application": "json_dumps", "distribution": "Poisson", "rate": 1},
        platform={"apihost": "http://127.0.0.1:3233"},
    )
    assert load_workload(path).platform["apihost"] == "http://127.0.0.1:3233"


@pytest.mark.parametrize(
    "top, instance",
    [
        ({"platform": {"apihost": "http://user:s3cret@127.0.0.1:3233"}}, {}),
        ({"endpoint": "generic"}, {"url": "http://user:s3cret@127.0.0.1:9/run", "data": {}}),
    ],
)
def test_credentials_in_a_url_are_refused_and_never_printed(tmp_path, top, instance):
    spec = {"application": "json_dumps", "distribution": "Poisson", "rate": 1, **instance}
    path = _write(tmp_path / "w", spec, **top)
    result = run_cli("validate", "--offline", path, timeout=60)
    assert result.returncode == 2, result.stderr
    assert "s3cret" not in result.stderr + result.stdout
    assert "(redacted)@127.0.0.1" in result.stderr and "holds credentials" in result.stderr, result.stderr


def test_the_manifests_workload_never_holds_a_urls_password():
    workload = workload_from_dict(
        {
            "test_name": "a",
            "test_duration_in_seconds": 1,
            "random_seed": 1,
            "endpoint": "generic",
            "instances": {
                "i0": {
                    "application": "x",
                    "distribution": "Poisson",
                    "rate": 1,
                    "url": "http://127.0.0.1:9/",
                    "data": {},
                }
            },
        }
    )
    raw = json.loads(json.dumps(workload.raw))
    raw["instances"]["i0"]["url"] = "http://u:s3cret@127.0.0.1:9/"
    raw.setdefault("platform", {})["apihost"] = "http://u:s3cret@127.0.0.1:3233"
    resolved = type(workload)(**{**workload.__dict__, "raw": raw}).resolved()
    assert "s3cret" not in json.dumps(resolved)
    assert resolved["as_given"]["instances"]["i0"]["url"] == "http://(redacted)@127.0.0.1:9/"


def test_validate_says_what_the_workload_reads_and_where_it_sends(tmp_path):
    folder = tmp_path / "w"
    folder.mkdir()
    (folder / "in.bin").write_bytes(b"abc")
    path = _write(folder, _data_instance("in.bin"), platform={"apihost": "http://127.0.0.1:3233"})
    result = run_cli("validate", "--offline", path, timeout=60)
    assert result.returncode == 0, result.stderr
    assert f"  reads {folder / 'in.bin'} (instances.i0.data_file)" in result.stdout, result.stdout
    assert "  sends to http://127.0.0.1:3233 (platform.apihost)" in result.stdout


def test_run_refuses_a_workload_that_sends_a_file_from_elsewhere_before_any_work(tmp_path, outside, isolated_home):
    path = _write(tmp_path / "w", _data_instance(str(outside)), platform={"apihost": "http://10.9.8.7:3233"})
    result = run_cli("run", path, "--out", tmp_path / "runs", timeout=60)
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert "instances.i0.data_file: " in result.stderr and "--allow-file" in result.stderr
    assert "platform.apihost: http://10.9.8.7:3233 is not this machine" in result.stderr
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_a_hosts_inventory_outside_the_folder_needs_the_users_leave(tmp_path, outside):
    inventory = outside.parent / "inv.ini"
    inventory.write_text("[openwhisk_invokers]\nh1\n")
    spec = {"application": "json_dumps", "distribution": "Poisson", "rate": 1}
    path = _write(tmp_path / "w", spec, monitoring={"vmstat": True, "hosts": str(inventory)})
    (line,) = _problems(path)
    assert line.split(": ", 2)[1] == "monitoring.hosts" and "--allow-file" in line, line
    load_workload(path, grants=Grants(allow_files=(inventory,)))
