"""Workload validation: every bad workload gets a one-line message naming the file, the field and
the fix; FaaSProfiler workloads are accepted unchanged."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from faasprof.errors import ConfigError
from invoker.workload import load_workload, workload_from_dict
from tests.conftest import DATA_DIR, REPO_ROOT

BASE = {
    "test_name": "t",
    "test_duration_in_seconds": 25,
    "random_seed": 110,
    "blocking_cli": False,
    "instances": {"i0": {"application": "json_dumps", "distribution": "Poisson", "rate": 20, "activity_window": [5, 20]}},
}


def _set(data: dict, dotted: str, value) -> None:
    keys = dotted.split(".")
    node = data
    for key in keys[:-1]:
        node = node.setdefault(key, {})
    if value is _DELETE:
        node.pop(keys[-1], None)
    else:
        node[keys[-1]] = value


_DELETE = object()

# (id, changes {dotted key: value}, expected message after "CONFIG: ")
BAD = [
    ("negative rate", {"instances.i0.rate": -5}, "instances.i0.rate: must be a number > 0 (got -5)"),
    ("rate not a number", {"instances.i0.rate": "fast"}, 'instances.i0.rate: must be a number (got "fast")'),
    ("zero rate", {"instances.i0.rate": 0}, "instances.i0.rate: must be a number > 0 (got 0)"),
    ("missing test_name", {"test_name": _DELETE}, "test_name: required; add it"),
    ("empty test_name", {"test_name": ""}, "test_name: must not be empty"),
    ("zero duration", {"test_duration_in_seconds": 0}, "test_duration_in_seconds: must be a number > 0 (got 0)"),
    ("missing duration", {"test_duration_in_seconds": _DELETE}, "test_duration_in_seconds: required; add it"),
    ("negative seed", {"random_seed": -1}, "random_seed: must be an integer >= 0 (got -1)"),
    ("float seed", {"random_seed": 1.5}, "random_seed: must be an integer or null (got 1.5)"),
    ("blocking_cli string", {"blocking_cli": "yes"}, 'blocking_cli: must be true or false (got "yes")'),
    ("bad endpoint", {"endpoint": "openwhisk"}, 'endpoint: must be one of "local_openwhisk", "generic" (got "openwhisk")'),
    ("no instances", {"instances": {}}, "instances: must have at least 1 entry (got none)"),
    ("missing instances", {"instances": _DELETE}, "instances: required; add it"),
    ("missing application", {"instances.i0.application": _DELETE}, "instances.i0.application: required; add it"),
    ("misspelt distribution", {"instances.i0.distribution": "Poison"}, 'instances.i0.distribution: must be one of "Poisson", "Uniform", "Burst", "Trace" (got "Poison"); did you mean "Poisson"?'),
    ("missing distribution", {"instances.i0.distribution": _DELETE}, "instances.i0.distribution: required; add one of Poisson, Uniform, Burst, Trace (or an interarrivals_list)"),
    ("Poisson without rate", {"instances.i0.rate": _DELETE}, 'instances.i0.rate: required when distribution is "Poisson" or "Uniform"; add it'),
    ("window of one item", {"instances.i0.activity_window": [5]}, "instances.i0.activity_window: must have exactly 2 items (got 1)"),
    ("window reversed", {"instances.i0.activity_window": [10, 5]}, "instances.i0.activity_window: start must be before end (got [10, 5])"),
    ("window past the test", {"instances.i0.activity_window": [5, 30]}, "instances.i0.activity_window: ends at 30 s, after the test (25.0 s); shorten it or raise test_duration_in_seconds"),
    ("negative window", {"instances.i0.activity_window": [-1, 5]}, "instances.i0.activity_window[0]: must be a number >= 0 (got -1)"),
    ("window not a list", {"instances.i0.activity_window": "5-20"}, 'instances.i0.activity_window: must be a list [...] or null (got "5-20")'),
    ("unknown top-level key", {"test_duraton": 5}, 'test_duraton: unknown key; did you mean "test_duration_in_seconds"?'),
    ("unknown instance key", {"instances.i0.rat": 5}, 'instances.i0.rat: unknown key; did you mean "rate"?'),
    ("missing param_file", {"instances.i0.param_file": "nope.json"}, "instances.i0.param_file: file nope.json not found"),
    ("missing data_file", {"instances.i0.data_file": "nope.jpg"}, "instances.i0.data_file: file nope.jpg not found"),
    ("Burst without gap", {"instances.i0.distribution": "Burst", "instances.i0.rate": _DELETE}, 'instances.i0.burst_gap_s: required when distribution is "Burst"; add it'),
    ("shifted exponential without mean", {"instances.i0": {"application": "json_dumps", "distribution": "Burst", "burst_gap_s": 1, "burst_gap_distribution": "shifted_exponential"}}, 'instances.i0.burst_gap_mean_s: required when burst_gap_distribution is "shifted_exponential"; add it'),
    ("zero burst size", {"instances.i0": {"application": "json_dumps", "distribution": "Burst", "burst_gap_s": 1, "burst_size": 0}}, "instances.i0.burst_size: must be an integer >= 1 (got 0)"),
    ("burst key on Poisson", {"instances.i0.burst_size": 4}, 'instances.i0.burst_size: only used with distribution "Burst" (got "Poisson"); remove it'),
    ("phase on Poisson", {"instances.i0.phase": False}, 'instances.i0.phase: only used with distribution "Uniform" (got "Poisson"); remove it'),
    ("phase out of range", {"instances.i0.distribution": "Uniform", "instances.i0.phase": 1.5}, "instances.i0.phase: must be a number < 1 (got 1.5)"),
    ("Trace without a trace", {"instances.i0.distribution": "Trace", "instances.i0.rate": _DELETE}, 'instances.i0.trace_file: required when distribution is "Trace"; add a trace_file or an interarrivals_list'),
    ("trace row not found", {"instances.i0": {"application": "json_dumps", "distribution": "Trace", "trace_file": str(DATA_DIR / "traces/azure_small.csv"), "trace_row": 5}}, "no data row 5 in the trace; set trace_row to an existing row index or HashFunction"),
    ("negative interarrival", {"instances.i0.interarrivals_list": [0.5, -1]}, "instances.i0.interarrivals_list[1]: must be a number >= 0 (got -1)"),
    ("generic without url", {"endpoint": "generic", "instances.i0.data": {}}, 'instances.i0.url: required when endpoint is "generic"; add it'),
    ("url on OpenWhisk", {"instances.i0.url": "http://127.0.0.1:9/x"}, 'instances.i0.url: only used when endpoint is "generic" (the workload\'s endpoint is "local_openwhisk"); remove it'),
    ("data_mode without data_file", {"instances.i0.data_mode": "base64"}, "instances.i0.data_mode: only used with data_file; add data_file or remove it"),
    ("bad data_mode", {"instances.i0.data_mode": "hex"}, 'instances.i0.data_mode: must be one of "web", "base64" (got "hex")'),
    ("params not an object", {"instances.i0.params": [1, 2]}, "instances.i0.params: must be an object {...} (got [1, 2])"),
    ("perf interval too short", {"monitoring": {"perf": {"interval_ms": 1}}}, "monitoring.perf.interval_ms: must be an integer >= 10 (got 1)"),
    ("misspelt collector", {"monitoring": {"perff": True}}, 'monitoring.perff: unknown key; did you mean "perf"?'),
    ("bad perf aggregation", {"monitoring": {"perf": {"per": "socket"}}}, 'monitoring.perf.per: must be one of "system", "cpu", "core", "cgroup" (got "socket")'),
    ("auth without colon", {"platform": {"apihost": "https://x", "auth": "secret"}}, "platform.auth: "),
    ("missing runtime script", {"perf_monitoring": {"runtime_script": "monitor.sh"}}, "perf_monitoring.runtime_script: file monitor.sh not found"),
    ("sweep of unknown instance", {"sweep": {"parameters": {"rate": [1, 2]}, "instances": ["i9"]}}, 'sweep.instances[0]: "i9" is not an instance of this workload; use one of i0'),
    ("empty sweep values", {"sweep": {"parameters": {"rate": []}}}, "sweep.parameters.rate: must have at least 1 item(s) (got 0)"),
    ("bad LLC mask", {"sweep": {"parameters": {"llc_ways": ["zz"]}}}, "sweep.parameters.llc_ways[0]: "),
    ("memory too small", {"instances.i0.memory_mb": 64}, "instances.i0.memory_mb: must be an integer >= 128 (got 64)"),
    ("bad instance name", {"instances": {"my instance": {"application": "json_dumps", "distribution": "Poisson", "rate": 1}}}, 'instances: instance name "my instance" may hold only letters, digits, _ . and -; rename it'),
]


@pytest.mark.parametrize("changes,expected", [(c, e) for _, c, e in BAD], ids=[i for i, _, _ in BAD])
def test_bad_workload_message(tmp_path, changes, expected):
    data = copy.deepcopy(BASE)
    for key, value in changes.items():
        _set(data, key, value)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ConfigError) as caught:
        load_workload(path)
    problems = caught.value.problems
    assert all(line.startswith(f"{path}: ") for line in problems), problems
    assert any(expected in line for line in problems), problems
    assert all("\n" not in line for line in problems)


def test_at_least_thirty_distinct_bad_workloads():
    assert len({expected for _, _, expected in BAD}) >= 30


def test_every_problem_is_reported_at_once(tmp_path):
    data = copy.deepcopy(BASE)
    data["instances"]["i0"]["rate"] = -5
    data["instances"]["i1"] = {"application": "json_dumps", "distribution": "Poison", "rate": 1}
    data["blocking_cli"] = "no"
    with pytest.raises(ConfigError) as caught:
        workload_from_dict(data, origin="w.json")
    assert len(caught.value.problems) == 3


def test_param_file_bad_json_and_not_object(tmp_path):
    (tmp_path / "p.json").write_text("{nope")
    (tmp_path / "list.json").write_text("[1]")
    for name, expected in (("p.json", "p.json: not valid JSON: Expecting property name"), ("list.json", "must hold a JSON object of parameters")):
        data = copy.deepcopy(BASE)
        data["instances"]["i0"]["param_file"] = name
        path = tmp_path / "w.json"
        path.write_text(json.dumps(data))
        with pytest.raises(ConfigError) as caught:
            load_workload(path)
        assert expected in caught.value.problems[0]


def test_unparseable_workload_names_line_and_column(tmp_path):
    path = tmp_path / "w.json"
    path.write_text('{"test_name": "x",\n "instances": }')
    with pytest.raises(ConfigError, match=r"w.json: not valid JSON: Expecting value at line 2 column 15"):
        load_workload(path)


def test_faasprofiler_sample_accepted_unchanged(tmp_path):
    """FaaSProfiler's own sample (no endpoint key, null window, interarrivals list) validates."""
    data = {
        "test_name": "sample_test",
        "test_duration_in_seconds": 15,
        "random_seed": None,
        "blocking_cli": False,
        "instances": {
            "instance1": {"application": "json_dumps", "distribution": "Uniform", "rate": 5, "activity_window": None},
            "instance2": {"application": "json_dumps", "interarrivals_list": [1, 2, 0.5]},
        },
        "perf_monitoring": {"runtime_script": None, "post_script": None},
    }
    workload = workload_from_dict(data)
    assert workload.seed_was_null and workload.seed >= 0
    assert workload.endpoint == "local_openwhisk"
    assert workload.instance("instance1").window_s == (0.0, 15.0)
    assert workload.instance("instance2").distribution == "Trace"


def test_param_file_merged_with_inline_params_and_paths_resolved(tmp_path):
    (tmp_path / "params.json").write_text(json.dumps({"a": 1, "b": 2}))
    (tmp_path / "img.bin").write_bytes(b"\x00\x01")
    data = copy.deepcopy(BASE)
    data["instances"]["i0"].update({"param_file": "params.json", "params": {"b": 3}})
    data["instances"]["i1"] = {"application": "json_dumps", "distribution": "Poisson", "rate": 1, "data_file": "img.bin", "blocking": True}
    path = tmp_path / "w.json"
    path.write_text(json.dumps(data))
    workload = load_workload(path)
    assert workload.instance("i0").params == {"a": 1, "b": 3}
    assert workload.instance("i1").data_file == (tmp_path / "img.bin").resolve()
    assert workload.instance("i1").blocking and not workload.instance("i0").blocking


def test_resolved_never_contains_the_auth_key():
    data = copy.deepcopy(BASE)
    data["platform"] = {"apihost": "https://10.0.0.1", "auth": "user:supersecret", "actions_deployed": True}
    resolved = workload_from_dict(data).resolved()
    assert "supersecret" not in json.dumps(resolved)


def test_shipped_workloads_are_valid():
    configs = sorted((REPO_ROOT / "workload_configs").glob("*.json"))
    configs = [c for c in configs if c.name != "schema.json"]
    assert configs, "workload_configs/ ships ready workloads"
    for config in configs:
        load_workload(config)


def test_validate_cli_reports_each_problem_and_exits_2(cli, tmp_path):
    data = copy.deepcopy(BASE)
    data["instances"]["i0"]["rate"] = -5
    data["instances"]["i0"]["rat"] = 1
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    good = tmp_path / "good.json"
    good.write_text(json.dumps(BASE))
    result = cli("validate", good, bad)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert lines == [
        f'{bad}: instances.i0.rat: unknown key; did you mean "rate"?',
        f"{bad}: instances.i0.rate: must be a number > 0 (got -5)",
    ]
    assert f"{good}: ok" in result.stdout


def test_validate_cli_ok_exits_0(cli):
    result = cli("validate", "workload_configs/paper_listing1.json")
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""


def test_validate_missing_file_exits_2(cli, tmp_path):
    result = cli("validate", tmp_path / "nope.json")
    assert result.returncode == 2
    assert result.stderr.strip() == f"{tmp_path / 'nope.json'}: no such file; check the path of the workload"


def test_connection_order_flags_workload_wskprops(tmp_path):
    import argparse

    from invoker.connection import resolve_connection

    props = tmp_path / "wskprops"
    props.write_text("APIHOST=10.1.1.1\nAUTH=u:fromprops\nNAMESPACE=guest\nINSECURE=true\n")
    flags = argparse.Namespace(apihost=None, auth=None, namespace=None, insecure=None)
    connection = resolve_connection(flags, {}, wskprops_path=props)
    assert (connection.apihost, connection.namespace, connection.insecure, connection.source) == ("https://10.1.1.1", "guest", True, "wskprops")
    connection = resolve_connection(flags, {"apihost": "http://127.0.0.1:3233", "auth": "w:fromworkload"}, wskprops_path=props)
    assert (connection.apihost, connection.auth, connection.source) == ("http://127.0.0.1:3233", "w:fromworkload", "workload")
    flags.apihost, flags.auth = "https://x", "f:fromflags"
    connection = resolve_connection(flags, {"apihost": "http://y", "auth": "w:k"}, wskprops_path=props)
    assert (connection.apihost, connection.auth) == ("https://x", "f:fromflags")
    assert "fromflags" not in repr(connection) and "fromflags" not in json.dumps(connection.describe())
    assert resolve_connection(argparse.Namespace(apihost=None, auth=None, namespace=None, insecure=None), {}, wskprops_path=tmp_path / "none") is None
