"""Workload validation: every bad workload gets a one-line message naming the file, the field and
the fix; FaaSProfiler workloads are accepted unchanged."""

from __future__ import annotations

import copy
import json
import os
import re

import pytest

from faasprof.errors import ConfigError
from faasprof.functions.catalogue import lookup
from faasprof.platforms.openwhisk.connection import resolve_connection, write_local_props
from faasprof.workload.spec import load_workload, workload_from_dict
from tests.helpers import DATA_DIR, REPO_ROOT

BASE = {
    "test_name": "t",
    "test_duration_in_seconds": 25,
    "random_seed": 110,
    "blocking_cli": False,
    "instances": {
        "i0": {"application": "json_dumps", "distribution": "Poisson", "rate": 20, "activity_window": [5, 20]}
    },
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
    ("negative rate", {"instances.i0.rate": -5}, "instances.i0.rate: must be a number >= 0 (got -5)"),
    ("rate not a number", {"instances.i0.rate": "fast"}, 'instances.i0.rate: must be a number (got "fast")'),
    (
        "zero capacity fraction",
        {"instances.i0.rate": {"capacity_fraction": 0}},
        "instances.i0.rate.capacity_fraction: must be a number > 0 (got 0)",
    ),
    ("missing test_name", {"test_name": _DELETE}, "test_name: required; add it"),
    ("empty test_name", {"test_name": ""}, "test_name: must not be empty"),
    ("zero duration", {"test_duration_in_seconds": 0}, "test_duration_in_seconds: must be a number > 0 (got 0)"),
    ("missing duration", {"test_duration_in_seconds": _DELETE}, "test_duration_in_seconds: required; add it"),
    ("negative seed", {"random_seed": -1}, "random_seed: must be an integer >= 0 (got -1)"),
    ("float seed", {"random_seed": 1.5}, "random_seed: must be an integer or null (got 1.5)"),
    ("blocking_cli string", {"blocking_cli": "yes"}, 'blocking_cli: must be true or false (got "yes")'),
    (
        "bad endpoint",
        {"endpoint": "openwhisk"},
        'endpoint: must be one of "local_openwhisk", "generic" (got "openwhisk")',
    ),
    ("no instances", {"instances": {}}, "instances: must have at least 1 entry (got none)"),
    ("missing instances", {"instances": _DELETE}, "instances: required; add it"),
    ("missing application", {"instances.i0.application": _DELETE}, "instances.i0.application: required; add it"),
    (
        "misspelt distribution",
        {"instances.i0.distribution": "Poison"},
        'instances.i0.distribution: must be one of "Poisson", "Uniform", "Burst", "Trace" (got "Poison"); did you mean "Poisson"?',
    ),
    (
        "missing distribution",
        {"instances.i0.distribution": _DELETE},
        "instances.i0.distribution: required; add one of Poisson, Uniform, Burst, Trace (or an interarrivals_list)",
    ),
    (
        "Poisson without rate",
        {"instances.i0.rate": _DELETE},
        'instances.i0.rate: required when distribution is "Poisson" or "Uniform"; add it',
    ),
    (
        "window of one item",
        {"instances.i0.activity_window": [5]},
        "instances.i0.activity_window: must have exactly 2 items (got 1)",
    ),
    (
        "window reversed",
        {"instances.i0.activity_window": [10, 5]},
        "instances.i0.activity_window: start must be before end (got [10, 5])",
    ),
    (
        "window past the test",
        {"instances.i0.activity_window": [5, 30]},
        "instances.i0.activity_window: ends at 30 s, after the test (25.0 s); shorten it or raise test_duration_in_seconds",
    ),
    (
        "negative window",
        {"instances.i0.activity_window": [-1, 5]},
        "instances.i0.activity_window[0]: must be a number >= 0 (got -1)",
    ),
    (
        "window not a list",
        {"instances.i0.activity_window": "5-20"},
        'instances.i0.activity_window: must be a list [...] or null (got "5-20")',
    ),
    (
        "unknown top-level key",
        {"test_duraton": 5},
        'test_duraton: unknown key; did you mean "test_duration_in_seconds"?',
    ),
    ("unknown instance key", {"instances.i0.rat": 5}, 'instances.i0.rat: unknown key; did you mean "rate"?'),
    (
        "missing param_file",
        {"instances.i0.param_file": "nope.json"},
        "instances.i0.param_file: file nope.json not found",
    ),
    ("missing data_file", {"instances.i0.data_file": "nope.jpg"}, "instances.i0.data_file: file nope.jpg not found"),
    (
        "Burst without gap",
        {"instances.i0.distribution": "Burst", "instances.i0.rate": _DELETE},
        'instances.i0.burst_gap_s: required when distribution is "Burst"; add it',
    ),
    (
        "shifted exponential without mean",
        {
            "instances.i0": {
                "application": "json_dumps",
                "distribution": "Burst",
                "burst_gap_s": 1,
                "burst_gap_distribution": "shifted_exponential",
            }
        },
        'instances.i0.burst_gap_mean_s: required when burst_gap_distribution is "shifted_exponential"; add it',
    ),
    (
        "zero burst size",
        {"instances.i0": {"application": "json_dumps", "distribution": "Burst", "burst_gap_s": 1, "burst_size": 0}},
        "instances.i0.burst_size: must be an integer >= 1 (got 0)",
    ),
    (
        "burst key on Poisson",
        {"instances.i0.burst_size": 4},
        'instances.i0.burst_size: only used with distribution "Burst" (got "Poisson"); remove it',
    ),
    (
        "phase on Poisson",
        {"instances.i0.phase": False},
        'instances.i0.phase: only used with distribution "Uniform" (got "Poisson"); remove it',
    ),
    (
        "phase out of range",
        {"instances.i0.distribution": "Uniform", "instances.i0.phase": 1.5},
        "instances.i0.phase: must be a number < 1 (got 1.5)",
    ),
    (
        "Trace without a trace",
        {"instances.i0.distribution": "Trace", "instances.i0.rate": _DELETE},
        'instances.i0.trace_file: required when distribution is "Trace"; add a trace_file or an interarrivals_list',
    ),
    (
        "trace row not found",
        {
            "instances.i0": {
                "application": "json_dumps",
                "distribution": "Trace",
                "trace_file": str(DATA_DIR / "traces/azure_small.csv"),
                "trace_row": 5,
            }
        },
        "no data row 5 in the trace; set trace_row to an existing row index or HashFunction",
    ),
    (
        "negative interarrival",
        {"instances.i0.interarrivals_list": [0.5, -1]},
        "instances.i0.interarrivals_list[1]: must be a number >= 0 (got -1)",
    ),
    (
        "generic without url",
        {"endpoint": "generic", "instances.i0.data": {}},
        'instances.i0.url: required when endpoint is "generic"; add it',
    ),
    (
        "url on OpenWhisk",
        {"instances.i0.url": "http://127.0.0.1:9/x"},
        'instances.i0.url: only used when endpoint is "generic" (the workload\'s endpoint is "local_openwhisk"); remove it',
    ),
    (
        "data_mode without data_file",
        {"instances.i0.data_mode": "base64"},
        "instances.i0.data_mode: only used with data_file; add data_file or remove it",
    ),
    (
        "bad data_mode",
        {"instances.i0.data_mode": "hex"},
        'instances.i0.data_mode: must be one of "web", "base64" (got "hex")',
    ),
    (
        "params not an object",
        {"instances.i0.params": [1, 2]},
        "instances.i0.params: must be an object {...} (got [1, 2])",
    ),
    (
        "perf interval too short",
        {"monitoring": {"perf": {"interval_ms": 1}}},
        "monitoring.perf.interval_ms: must be an integer >= 10 (got 1)",
    ),
    ("misspelt collector", {"monitoring": {"perff": True}}, 'monitoring.perff: unknown key; did you mean "perf"?'),
    (
        "bad perf aggregation",
        {"monitoring": {"perf": {"per": "socket"}}},
        'monitoring.perf.per: must be one of "system", "cpu", "core", "cgroup" (got "socket")',
    ),
    ("auth without colon", {"platform": {"apihost": "https://x", "auth": "secret"}}, "platform.auth: "),
    (
        "missing runtime script",
        {"perf_monitoring": {"runtime_script": "monitor.sh"}},
        "perf_monitoring.runtime_script: file monitor.sh not found",
    ),
    (
        "sweep of unknown instance",
        {"sweep": {"parameters": {"rate": [1, 2]}, "instances": ["i9"]}},
        'sweep.instances[0]: "i9" is not an instance of this workload; use one of i0',
    ),
    (
        "empty sweep values",
        {"sweep": {"parameters": {"rate": []}}},
        "sweep.parameters.rate: must have at least 1 item(s) (got 0)",
    ),
    ("bad LLC mask", {"sweep": {"parameters": {"llc_ways": ["zz"]}}}, "sweep.parameters.llc_ways[0]: "),
    ("memory too small", {"instances.i0.memory_mb": 64}, "instances.i0.memory_mb: must be an integer >= 128 (got 64)"),
    (
        "bad instance name",
        {"instances": {"my instance": {"application": "json_dumps", "distribution": "Poisson", "rate": 1}}},
        'instances: instance name "my instance" may hold only letters, digits, _ . and -; rename it',
    ),
    # absurd sizes: bounded with the figure and the fix
    (
        "rate 1e9",
        {"instances.i0.rate": 1e9},
        "instances.i0.rate: the workload plans about 1.5e+10 invocations, beyond faasprof's limit of 20,000,000 invocations per run; building the schedule would need about 720 GB of memory; lower the rate or shorten the activity window",
    ),
    (
        "duration 1e12",
        {"test_duration_in_seconds": 1e12},
        "test_duration_in_seconds: must be a number <= 2678400 (got 1000000000000.0)",
    ),
    (
        "burst 1e9",
        {
            "instances.i0": {
                "application": "json_dumps",
                "distribution": "Burst",
                "burst_gap_s": 1,
                "burst_size": 1000000000,
            }
        },
        "instances.i0.burst_size: the workload plans about 2.6e+10 invocations",
    ),
    (
        "tiny burst gap",
        {"instances.i0": {"application": "json_dumps", "distribution": "Burst", "burst_gap_s": 1e-9}},
        "instances.i0.burst_gap_s: the workload plans about 2.5e+10 invocations",
    ),
    (
        "two instances together too big",
        {
            "instances.i0.rate": 600000,
            "instances.i1": {"application": "json_dumps", "distribution": "Uniform", "rate": 1000000},
        },
        "instances.i1.rate: the workload plans about 3.4e+07 invocations (this instance plans about 2.5e+07)",
    ),
    (
        "huge activity window end",
        {"instances.i0.activity_window": [0, 1e300]},
        "instances.i0.activity_window: ends at 1e+300 s, after the test (25.0 s)",
    ),
    (
        "test name too long",
        {"test_name": "x" * 300},
        "test_name: is 300 characters, more than the 200 a run directory name allows; shorten it",
    ),
    # URLs and hosts
    (
        "generic url without host",
        {"endpoint": "generic", "instances.i0.url": "http:///x", "instances.i0.data": {}},
        'instances.i0.url: "http:///x" has no host; write it as http://HOST[:PORT]/PATH',
    ),
    (
        "generic url port too big",
        {"endpoint": "generic", "instances.i0.url": "http://127.0.0.1:70000/x", "instances.i0.data": {}},
        'instances.i0.url: "http://127.0.0.1:70000/x" has a bad port',
    ),
    (
        "generic url port not a number",
        {"endpoint": "generic", "instances.i0.url": "http://127.0.0.1:http/x", "instances.i0.data": {}},
        "has a bad port",
    ),
    (
        "generic url port 0",
        {"endpoint": "generic", "instances.i0.url": "http://127.0.0.1:0/x", "instances.i0.data": {}},
        "has port 0; use a port in 1..65535",
    ),
    (
        "generic url with spaces",
        {"endpoint": "generic", "instances.i0.url": "http://127.0.0.1/a b", "instances.i0.data": {}},
        "contains spaces; percent-encode them (%20) or remove them",
    ),
    (
        "generic url placeholder",
        {"endpoint": "generic", "instances.i0.url": "{Publicly accessible trigger URL}", "instances.i0.data": {}},
        'instances.i0.url: "{Publicly accessible trigger URL}" is not an http:// or https:// URL; write it as http://HOST[:PORT]/PATH',
    ),
    (
        "generic url not http",
        {"endpoint": "generic", "instances.i0.url": "ftp://127.0.0.1/x y", "instances.i0.data": {}},
        'instances.i0.url: "ftp://127.0.0.1/x y" is not an http:// or https:// URL; write it as http://HOST[:PORT]/PATH',
    ),
    (
        "generic without data",
        {"endpoint": "generic", "instances.i0.url": "http://127.0.0.1:9/x"},
        'instances.i0.data: required when endpoint is "generic"; add it',
    ),
    (
        "source on generic",
        {
            "endpoint": "generic",
            "instances.i0.url": "http://127.0.0.1:9/x",
            "instances.i0.data": {},
            "instances.i0.source": ".",
        },
        'instances.i0.source: only used when endpoint is "local_openwhisk"',
    ),
    (
        "apihost with spaces",
        {"platform": {"apihost": "http://127.0.0.1 :3233", "auth": "u:k"}},
        "platform.apihost: 'http://127.0.0.1 :3233' contains spaces",
    ),
    (
        "apihost bad port",
        {"platform": {"apihost": "http://127.0.0.1:99999", "auth": "u:k"}},
        "platform.apihost: 'http://127.0.0.1:99999' has a bad port",
    ),
    (
        "apihost bad scheme",
        {"platform": {"apihost": "ftp://127.0.0.1", "auth": "u:k"}},
        "platform.apihost: 'ftp://127.0.0.1' has the scheme ftp://; use http:// or https://",
    ),
    (
        "apihost without host",
        {"platform": {"apihost": "https://:443", "auth": "u:k"}},
        "platform.apihost: 'https://:443' has no host",
    ),
    (
        "host header with spaces",
        {"instances.i0.host": "my host"},
        'instances.i0.host: "my host" is not a host name for the Host header',
    ),
    (
        "host header with scheme",
        {"instances.i0.host": "http://x"},
        'instances.i0.host: "http://x" is not a host name for the Host header',
    ),
    ("host header empty", {"instances.i0.host": ""}, "instances.i0.host: must not be empty"),
    ("serverless_platform not a string", {"serverless_platform": 3}, "serverless_platform: must be a string (got 3)"),
    # own functions
    (
        "missing source folder",
        {"instances.i0.source": "no/such/folder"},
        "instances.i0.source: file or folder no/such/folder not found",
    ),
    ("kind without source", {"instances.i0.kind": "python:3"}, "instances.i0.kind: only used with source"),
    ("bad kind", {"instances.i0.kind": "Python 3"}, 'instances.i0.kind: "Python 3" does not match the expected form'),
    # more schema mistakes researchers make
    ("rate as a list", {"instances.i0.rate": [1, 2]}, "instances.i0.rate: must be a number (got [1, 2])"),
    (
        "duration as a string",
        {"test_duration_in_seconds": "25"},
        'test_duration_in_seconds: must be a number (got "25")',
    ),
    ("seed as a string", {"random_seed": "110"}, 'random_seed: must be an integer or null (got "110")'),
    ("instances as a list", {"instances": [{"application": "json_dumps"}]}, "instances: must be an object {...}"),
    (
        "instance as a string",
        {"instances.i0": "json_dumps"},
        'instances.i0: must be an object {...} (got "json_dumps")',
    ),
    ("application empty", {"instances.i0.application": ""}, "instances.i0.application: must not be empty"),
    (
        "application with a space",
        {"instances.i0.application": " spaced"},
        'instances.i0.application: " spaced" does not match the expected form',
    ),
    (
        "window of three items",
        {"instances.i0.activity_window": [1, 2, 3]},
        "instances.i0.activity_window: must have exactly 2 items (got 3)",
    ),
    (
        "window of strings",
        {"instances.i0.activity_window": ["5", "20"]},
        'instances.i0.activity_window[0]: must be a number (got "5")',
    ),
    (
        "interarrivals not a list",
        {"instances.i0.interarrivals_list": "1,2"},
        'instances.i0.interarrivals_list: must be a list [...] (got "1,2")',
    ),
    (
        "trace and interarrivals",
        {
            "instances.i0": {
                "application": "json_dumps",
                "interarrivals_list": [1],
                "trace_file": str(DATA_DIR / "traces/azure_small.csv"),
            }
        },
        "instances.i0.trace_file: give either interarrivals_list or trace_file, not both",
    ),
    (
        "trace_file on Poisson",
        {"instances.i0.trace_file": str(DATA_DIR / "traces/azure_small.csv")},
        'instances.i0.trace_file: only used with distribution "Trace" (got "Poisson")',
    ),
    (
        "trace start minute 0",
        {
            "instances.i0": {
                "application": "json_dumps",
                "distribution": "Trace",
                "trace_file": str(DATA_DIR / "traces/azure_small.csv"),
                "trace_start_minute": 0,
            }
        },
        "instances.i0.trace_start_minute: must be an integer >= 1 (got 0)",
    ),
    (
        "missing trace file",
        {"instances.i0": {"application": "json_dumps", "distribution": "Trace", "trace_file": "nope.csv"}},
        "instances.i0.trace_file: file nope.csv not found",
    ),
    (
        "negative trace scale",
        {
            "instances.i0": {
                "application": "json_dumps",
                "distribution": "Trace",
                "trace_file": str(DATA_DIR / "traces/azure_small.csv"),
                "trace_scale": -1,
            }
        },
        "instances.i0.trace_scale: must be a number > 0 (got -1)",
    ),
    (
        "memory too large",
        {"instances.i0.memory_mb": 100000},
        "instances.i0.memory_mb: must be an integer <= 65536 (got 100000)",
    ),
    ("memory as float", {"instances.i0.memory_mb": 256.5}, "instances.i0.memory_mb: must be an integer (got 256.5)"),
    ("platform auth empty", {"platform": {"apihost": "https://x", "auth": ""}}, "platform.auth: "),
    (
        "platform unknown key",
        {"platform": {"api_host": "https://x"}},
        'platform.api_host: unknown key; did you mean "apihost"?',
    ),
    (
        "localwhisk memory too small",
        {"platform": {"localwhisk": {"user_memory_mb": 64}}},
        "platform.localwhisk.user_memory_mb: must be an integer >= 128 (got 64)",
    ),
    (
        "perf_monitoring unknown key",
        {"perf_monitoring": {"runtime": "x.sh"}},
        'perf_monitoring.runtime: unknown key; did you mean "runtime_script"?',
    ),
    ("runtime script is a folder", {"perf_monitoring": {"runtime_script": "."}}, "perf_monitoring.runtime_script: "),
    ("sweep without parameters", {"sweep": {"repeat": 2}}, "sweep.parameters: required; add it"),
    (
        "sweep repeat zero",
        {"sweep": {"parameters": {"rate": [1]}, "repeat": 0}},
        "sweep.repeat: must be an integer >= 1 (got 0)",
    ),
    (
        "sweep order misspelt",
        {"sweep": {"parameters": {"rate": [1]}, "order": "shuffled"}},
        'sweep.order: must be one of "sequential", "random" (got "shuffled")',
    ),
    (
        "bad function_cpus",
        {"sweep": {"parameters": {"rate": [1]}, "function_cpus": "2-"}},
        'sweep.function_cpus: "2-" does not match the expected form',
    ),
    (
        "burst gap distribution misspelt",
        {
            "instances.i0": {
                "application": "json_dumps",
                "distribution": "Burst",
                "burst_gap_s": 1,
                "burst_gap_distribution": "exponential",
            }
        },
        'instances.i0.burst_gap_distribution: must be one of "fixed", "shifted_exponential" (got "exponential")',
    ),
    (
        "trace spread misspelt",
        {
            "instances.i0": {
                "application": "json_dumps",
                "distribution": "Trace",
                "trace_file": str(DATA_DIR / "traces/azure_small.csv"),
                "trace_spread": "even",
            }
        },
        'instances.i0.trace_spread: must be one of "uniform", "equidistant" (got "even")',
    ),
    (
        "content_type without data_file",
        {"instances.i0.content_type": "image/png"},
        "instances.i0.content_type: only used with data_file; add data_file or remove it",
    ),
    (
        "blocking as a string",
        {"instances.i0.blocking": "true"},
        'instances.i0.blocking: must be true or false (got "true")',
    ),
    ("description as a number", {"description": 5}, "description: must be a string (got 5)"),
    (
        "collector interval too long",
        {"monitoring": {"cgroups": {"interval_ms": 120000}}},
        "monitoring.cgroups.interval_ms: must be an integer <= 60000 (got 120000)",
    ),
    (
        "blktrace device not in /dev",
        {"monitoring": {"blktrace": {"devices": ["sda"]}}},
        'monitoring.blktrace.devices[0]: "sda" does not match the expected form ^/dev/',
    ),
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


def test_at_least_eighty_distinct_bad_workloads_counting_the_file_level_ones():
    assert len({expected for _, _, expected in BAD}) + len(BAD_FILES) >= 80


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
    for name, expected in (
        ("p.json", "p.json: not valid JSON: Expecting property name"),
        ("list.json", "must hold a JSON object of parameters"),
    ):
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
    data["instances"]["i1"] = {
        "application": "json_dumps",
        "distribution": "Poisson",
        "rate": 1,
        "data_file": "img.bin",
        "blocking": True,
    }
    path = tmp_path / "w.json"
    path.write_text(json.dumps(data))
    workload = load_workload(path)
    assert workload.instance("i0").params == {"a": 1, "b": 3}
    assert workload.instance("i1").data_file == (tmp_path / "img.bin").resolve()
    assert workload.instance("i1").blocking and not workload.instance("i0").blocking


def test_catalogue_function_without_input_gets_its_sample_input():
    """As `faasprof native` calls it: without it markdown answers only "no document" errors."""
    workload = workload_from_dict(
        {
            "test_name": "sample",
            "test_duration_in_seconds": 1,
            "random_seed": 1,
            "instances": {
                "md": {"application": "markdown", "distribution": "Uniform", "rate": 1},
                "variant": {"application": "markdown-256", "distribution": "Uniform", "rate": 1},
                "img": {"application": "img-resize", "distribution": "Uniform", "rate": 1},
                "given": {"application": "markdown", "distribution": "Uniform", "rate": 1, "params": {"text": "# T"}},
                "own": {"application": "not_in_the_catalogue", "distribution": "Uniform", "rate": 1},
            },
        },
        check_catalogue=False,
    )
    markdown = lookup("markdown")
    assert workload.instance("md").params == markdown.sample_params() and "markdown" in workload.instance("md").params
    assert workload.instance("md").param_file == markdown.param_file
    assert workload.instance("md").params == workload.instance("variant").params
    assert (
        workload.instance("img").params == lookup("img-resize").sample_params()
        and "image" in workload.instance("img").params
    )
    assert workload.instance("given").params == {"text": "# T"}  # input given: used as given
    assert workload.instance("own").params is None


def test_resolved_never_contains_the_auth_key():
    data = copy.deepcopy(BASE)
    data["platform"] = {"apihost": "https://10.0.0.1", "auth": "user:supersecret", "actions_deployed": True}
    resolved = workload_from_dict(data).resolved()
    assert "supersecret" not in json.dumps(resolved)


def test_shipped_workloads_are_valid():
    configs = sorted((REPO_ROOT / "faasprof" / "workload_configs").glob("*.json"))
    configs = [c for c in configs if c.name != "schema.json"]
    assert configs, "faasprof/workload_configs/ ships ready workloads"
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
        f"{bad}: instances.i0.rate: must be a number >= 0 (got -5)",
    ]
    assert f"{good}: ok" in result.stdout


@pytest.mark.slow
def test_a_muted_instance_validates_and_plans_as_muted(cli, tmp_path):
    data = copy.deepcopy(BASE)
    data["instances"]["i1"] = {"application": "json_dumps", "distribution": "Uniform", "rate": 0}
    path = tmp_path / "muted.json"
    path.write_text(json.dumps(data))
    validated = cli("validate", path)
    assert validated.returncode == 0 and validated.stderr == "", validated.stderr
    plan = cli("plan", path)
    assert plan.returncode == 0, plan.stderr
    row = next(line for line in plan.stdout.splitlines() if line.startswith("i1 "))
    assert row.split()[3:6] == ["0", "(muted)", "0"] and row.split()[-1] == "0"
    data["instances"]["i0"]["rate"] = 0
    path.write_text(json.dumps(data))
    # validate and run refuse it alike before anything starts: one line, exit 2, no run directory
    # (validate said ok, and run crashed in the verdict).
    refusal = [
        f"{path}: instances: the plan has no invocation (every instance is muted, rate 0, or its activity window is empty); "
        "give an instance a rate > 0 and a window inside test_duration_in_seconds"
    ]
    validated = cli("validate", path)
    assert validated.returncode == 2 and validated.stderr.splitlines() == refusal, validated.stderr
    ran = cli("run", path, "--out", tmp_path / "runs", timeout=60)
    assert ran.returncode == 2 and ran.stderr.splitlines() == refusal, ran.stderr
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


@pytest.mark.slow
@pytest.mark.parametrize(
    "duration", [{"test_duration_in_secnds": 25}, {"test_duration_in_seconds": "25"}], ids=["misspelt", "a string"]
)
def test_a_bad_duration_is_one_line_and_never_an_infinite_plan(cli, tmp_path, duration):
    data = {key: value for key, value in copy.deepcopy(BASE).items() if key != "test_duration_in_seconds"}
    data.update(duration)
    del data["instances"]["i0"]["activity_window"]  # the whole test: an open end without a valid duration
    path = tmp_path / "w.json"
    path.write_text(json.dumps(data))
    expected = (
        f'{path}: test_duration_in_secnds: unknown key; did you mean "test_duration_in_seconds"?'
        if "test_duration_in_secnds" in duration
        else f'{path}: test_duration_in_seconds: must be a number (got "25")'
    )
    for command in ("validate", "plan"):
        done = cli(command, path)
        assert done.returncode == 2 and done.stderr.splitlines() == [expected], done.stderr


def test_validate_cli_ok_exits_0(cli):
    result = cli("validate", "faasprof/workload_configs/paper_listing1.json")
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""


def test_validate_missing_file_exits_2(cli, tmp_path):
    result = cli("validate", tmp_path / "nope.json")
    assert result.returncode == 2
    assert result.stderr.strip() == (
        f"{tmp_path / 'nope.json'}: no such file; check the path of the workload "
        "(faasprof examples lists the shipped ones, which run by bare name)"
    )


def test_connection_order_flags_workload_wskprops(tmp_path):
    import argparse

    props = tmp_path / "wskprops"
    props.write_text("APIHOST=10.1.1.1\nAUTH=u:fromprops\nNAMESPACE=guest\nINSECURE=true\n")
    flags = argparse.Namespace(apihost=None, auth=None, namespace=None, insecure=None)
    connection = resolve_connection(flags, {}, wskprops_path=props)
    assert (connection.apihost, connection.namespace, connection.insecure, connection.source) == (
        "https://10.1.1.1",
        "guest",
        True,
        "wskprops",
    )
    connection = resolve_connection(
        flags, {"apihost": "http://127.0.0.1:3233", "auth": "w:fromworkload"}, wskprops_path=props
    )
    assert (connection.apihost, connection.auth, connection.source) == (
        "http://127.0.0.1:3233",
        "w:fromworkload",
        "workload",
    )
    flags.apihost, flags.auth = "https://x", "f:fromflags"
    connection = resolve_connection(flags, {"apihost": "http://y", "auth": "w:k"}, wskprops_path=props)
    assert (connection.apihost, connection.auth) == ("https://x", "f:fromflags")
    assert "fromflags" not in repr(connection) and "fromflags" not in json.dumps(connection.describe())
    assert (
        resolve_connection(
            argparse.Namespace(apihost=None, auth=None, namespace=None, insecure=None),
            {},
            wskprops_path=tmp_path / "none",
        )
        is None
    )


def test_connection_falls_back_to_the_localwhisk_of_local_start(tmp_path, isolated_home):
    import argparse
    import subprocess

    no_flags = argparse.Namespace(apihost=None, auth=None, namespace=None, insecure=None)
    none = tmp_path / "none"
    write_local_props(
        "http://127.0.0.1:3233", "u:local", "guest", os.getpid(), tmp_path / "lw", {"pause_grace_ms": 10000.0}
    )
    connection = resolve_connection(no_flags, {}, wskprops_path=none)
    assert (connection.apihost, connection.auth, connection.namespace, connection.source) == (
        "http://127.0.0.1:3233",
        "u:local",
        "guest",
        "local",
    )
    assert connection.settings == {"pause_grace_ms": 10000.0}
    # Anything else naming an API host comes first, the user's wskprops included.
    props = tmp_path / "wskprops"
    props.write_text("APIHOST=10.1.1.1\nAUTH=u:fromprops\n")
    assert resolve_connection(no_flags, {}, wskprops_path=props).source == "wskprops"
    assert resolve_connection(no_flags, {"apihost": "http://y", "auth": "w:k"}, wskprops_path=none).source == "workload"
    # A server that has exited is not a platform: the embedded one is used.
    exited = subprocess.Popen(["true"])
    exited.wait()
    write_local_props("http://127.0.0.1:3233", "u:local", "guest", exited.pid, tmp_path / "lw", {})
    assert resolve_connection(no_flags, {}, wskprops_path=none) is None
    # Nor is a pid that names another process now (a reboot reused it): its start time differs.
    path = write_local_props("http://127.0.0.1:3233", "u:local", "guest", os.getpid(), tmp_path / "lw", {})
    path.write_text(re.sub(r"LOCALWHISK_START=\d+", "LOCALWHISK_START=1", path.read_text()))
    assert resolve_connection(no_flags, {}, wskprops_path=none) is None


# -- the file itself: encodings, syntax, duplicate keys, non-finite numbers, nesting ----------------

_GOOD_TEXT = json.dumps(BASE)
# (id, file bytes, expected message after "PATH: ")
BAD_FILES = [
    (
        "empty file",
        b"",
        "the file is empty; a workload is a JSON object with test_name, test_duration_in_seconds and instances",
    ),
    ("whitespace only", b"  \n\t\n", "the file is empty;"),
    (
        "UTF-8 BOM",
        b"\xef\xbb\xbf" + _GOOD_TEXT.encode(),
        "starts with a UTF-8 byte-order mark (BOM); save it as UTF-8 without BOM",
    ),
    ("UTF-16", _GOOD_TEXT.encode("utf-16"), "is UTF-16 or UTF-32 text; save it as UTF-8"),
    (
        "Latin-1 byte",
        _GOOD_TEXT.replace('"t"', '"caf\u00e9"').encode("latin-1"),
        "is not UTF-8 text (byte 0xe9 at line 1 column 19); save it as UTF-8",
    ),
    ("binary", bytes(range(256)), "is a binary file, not text (a NUL byte at offset 0); name a text file"),
    ("a gzip file", b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03", "is a binary file, not text (a NUL byte at offset 3)"),
    (
        "JSON list",
        json.dumps([BASE]).encode(),
        "(top level): the file holds a JSON list [...]; a workload is one object {...}",
    ),
    (
        "JSON string",
        b'"workload"',
        '(top level): must be an object {...} with test_name, test_duration_in_seconds and instances (got "workload")',
    ),
    (
        "JSON null",
        b"null",
        "(top level): must be an object {...} with test_name, test_duration_in_seconds and instances (got null)",
    ),
    ("bare NaN", b"NaN", "the file holds only NaN; a workload is a JSON object {...}"),
    (
        "trailing comma",
        _GOOD_TEXT[:-1].encode() + b",}",
        "not valid JSON: Expecting property name enclosed in double quotes at line 1 column",
    ),
    ("truncated", _GOOD_TEXT[:40].encode(), "not valid JSON: "),
    (
        "single quotes",
        b"{'test_name': 't'}",
        "not valid JSON: Expecting property name enclosed in double quotes at line 1 column 2; fix the syntax",
    ),
    (
        "comment",
        b"// my workload\n" + _GOOD_TEXT.encode(),
        "not valid JSON: Expecting value at line 1 column 1; fix the syntax",
    ),
    (
        "duplicate instance",
        _GOOD_TEXT.replace(
            '"instances": {', '"instances": {"i0": {"application": "markdown", "distribution": "Poisson", "rate": 1}, '
        ).encode(),
        'instances.i0: the key "i0" appears more than once in instances; JSON keeps only the last one, so rename or remove the others',
    ),
    (
        "duplicate top-level key",
        _GOOD_TEXT.replace('"test_name": "t"', '"test_name": "t", "test_name": "u"').encode(),
        'test_name: the key "test_name" appears more than once at the top level',
    ),
    (
        "duplicate key in instance",
        _GOOD_TEXT.replace('"rate": 20', '"rate": 20, "rate": 30').encode(),
        'instances.i0.rate: the key "rate" appears more than once in instances.i0',
    ),
    (
        "NaN rate",
        _GOOD_TEXT.replace('"rate": 20', '"rate": NaN').encode(),
        "instances.i0.rate: NaN is not a number JSON allows (NaN, Infinity and numbers beyond 1.8e308 are not); write a finite number",
    ),
    (
        "Infinity duration",
        _GOOD_TEXT.replace('"test_duration_in_seconds": 25', '"test_duration_in_seconds": Infinity').encode(),
        "test_duration_in_seconds: Infinity is not a number JSON allows",
    ),
    (
        "-Infinity window",
        _GOOD_TEXT.replace("[5, 20]", "[-Infinity, 20]").encode(),
        "instances.i0.activity_window[0]: -Infinity is not a number JSON allows",
    ),
    (
        "1e999 seed",
        _GOOD_TEXT.replace('"random_seed": 110', '"random_seed": 1e999').encode(),
        "random_seed: 1e999 is not a number JSON allows",
    ),
    (
        "deep nesting",
        _GOOD_TEXT.replace('"rate": 20', '"params": ' + "[" * 50 + "]" * 50 + ', "rate": 20').encode(),
        "instances.i0.params: nested more than 32 levels deep; flatten the structure",
    ),
    (
        "very deep nesting",
        b'{"a": ' + b"[" * 100000 + b"]" * 100000 + b"}",
        "nested too deeply to read (more than 32 levels); flatten the structure",
    ),
]


@pytest.mark.parametrize("raw,expected", [(r, e) for _, r, e in BAD_FILES], ids=[i for i, _, _ in BAD_FILES])
def test_bad_workload_file(tmp_path, raw, expected):
    path = tmp_path / "bad.json"
    path.write_bytes(raw)
    with pytest.raises(ConfigError) as caught:
        load_workload(path)
    problems = caught.value.problems
    assert all(line.startswith(f"{path}: ") and "\n" not in line for line in problems), problems
    assert any(expected in line for line in problems), problems


def test_every_bad_workload_through_the_cli_is_one_line_each_and_no_traceback(cli, tmp_path):
    """The wall end to end: every bad workload above, validated in one command."""
    paths = []
    for index, (_name, changes, _) in enumerate(BAD):
        data = copy.deepcopy(BASE)
        for key, value in changes.items():
            _set(data, key, value)
        path = tmp_path / f"bad{index:03d}.json"
        path.write_text(json.dumps(data))
        paths.append(path)
    for index, (_name, raw, _) in enumerate(BAD_FILES):
        path = tmp_path / f"badfile{index:03d}.json"
        path.write_bytes(raw)
        paths.append(path)
    result = cli("validate", "--offline", *paths, timeout=300)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert all(line.startswith(str(tmp_path)) or line.startswith("warning: ") for line in lines), [
        line for line in lines if not line.startswith(str(tmp_path))
    ][:3]
    named = {line.split(": ", 1)[0] for line in lines}
    missing = [str(path) for path in paths if str(path) not in named]
    assert not missing, f"accepted although bad: {missing[:5]}"
    assert result.stdout == ""


def test_schema_and_semantic_problems_are_reported_together(tmp_path):
    data = copy.deepcopy(BASE)
    data["instances"]["i0"]["rate"] = "fast"  # schema
    data["instances"]["i1"] = {
        "application": "json_dumps",
        "distribution": "Poisson",
        "rate": 1,
        "activity_window": [5, 99],
    }  # semantic
    data["test_name"] = "n" * 250  # semantic
    path = tmp_path / "w.json"
    path.write_text(
        json.dumps(data).replace('"blocking_cli": false', '"blocking_cli": false, "blocking_cli": true')
    )  # parse level
    with pytest.raises(ConfigError) as caught:
        load_workload(path)
    text = "\n".join(caught.value.problems)
    for expected in (
        'instances.i0.rate: must be a number (got "fast")',
        "instances.i1.activity_window: ends at 99 s",
        "test_name: is 250 characters",
        'blocking_cli: the key "blocking_cli" appears more than once',
    ):
        assert expected in text, text


# -- trace files ----------------------------------------------------------------------------------

BAD_TRACES = [
    ("binary trace", bytes(range(256)), "is a binary file, not a CSV trace (a NUL byte at offset 0)"),
    (
        "latin-1 trace",
        "timestamp_s\n1.0\n2,5 s\u00e9\n".encode("latin-1"),
        "is not UTF-8 text (byte 0xe9 on line 3); save the trace as UTF-8 CSV",
    ),
    ("empty trace", b"", "empty trace file; write one count row (Azure layout) or one timestamp per line"),
    ("text in a timestamp trace", b"timestamp_s\n1.0\nsoon\n", "line 3: 'soon' is not a number of seconds"),
    ("infinite timestamp", b"1.0\ninf\n", "line 2: 'inf' is not a number of seconds"),
    (
        "infinite count",
        b"HashOwner,HashApp,HashFunction,Trigger,1,2\na,b,c,http,1,1e999\n",
        "data row 0 has a non-numeric count",
    ),
]


@pytest.mark.parametrize("raw,expected", [(r, e) for _, r, e in BAD_TRACES], ids=[i for i, _, _ in BAD_TRACES])
def test_bad_trace_file(tmp_path, raw, expected):
    trace = tmp_path / "trace.csv"
    trace.write_bytes(raw)
    data = copy.deepcopy(BASE)
    data["instances"]["i0"] = {"application": "json_dumps", "distribution": "Trace", "trace_file": "trace.csv"}
    path = tmp_path / "w.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ConfigError) as caught:
        load_workload(path)
    assert any(
        line.startswith(f"{path}: instances.i0.trace_file: {trace}: ") and expected in line
        for line in caught.value.problems
    ), caught.value.problems


def test_trace_with_a_bom_is_read(tmp_path):
    trace = tmp_path / "trace.csv"
    trace.write_bytes(b"\xef\xbb\xbftimestamp_s\n1.0\n2.0\n")
    data = copy.deepcopy(BASE)
    data["instances"]["i0"] = {"application": "json_dumps", "distribution": "Trace", "trace_file": str(trace)}
    assert load_workload_from(tmp_path, data).instance("i0").planned_estimate == 2


def load_workload_from(folder, data):
    path = folder / "w.json"
    path.write_text(json.dumps(data))
    return load_workload(path)


BAD_PARAM_FILES = [
    ("binary param file", bytes(range(256)), "is a binary file, not text"),
    ("param file with duplicate keys", b'{"a": 1, "a": 2}', 'a: the key "a" appears more than once'),
    ("param file with NaN", b'{"a": NaN}', "a: NaN is not a number JSON allows"),
    ("empty param file", b"", "the file is empty"),
]


@pytest.mark.parametrize(
    "raw,expected", [(r, e) for _, r, e in BAD_PARAM_FILES], ids=[i for i, _, _ in BAD_PARAM_FILES]
)
def test_bad_param_file(tmp_path, raw, expected):
    (tmp_path / "p.json").write_bytes(raw)
    data = copy.deepcopy(BASE)
    data["instances"]["i0"]["param_file"] = "p.json"
    with pytest.raises(ConfigError) as caught:
        load_workload_from(tmp_path, data)
    assert any(
        line.startswith(f"{tmp_path / 'w.json'}: instances.i0.param_file: ") and expected in line
        for line in caught.value.problems
    ), caught.value.problems


# -- what the platform would refuse, and the output folder ----------------------------------------


@pytest.mark.slow
def test_memory_and_payload_the_embedded_localwhisk_refuses(cli, tmp_path, isolated_home):
    (tmp_path / "big.bin").write_bytes(b"\x00" * (1024 * 1024 + 1))
    data = copy.deepcopy(BASE)
    data["instances"]["i0"]["memory_mb"] = 4096
    data["instances"]["i1"] = {
        "application": "img-resize",
        "distribution": "Poisson",
        "rate": 1,
        "data_file": "big.bin",
    }
    data["platform"] = {"localwhisk": {"user_memory_mb": 1024}}
    data["sweep"] = {"parameters": {"memory_mb": [256, 3000]}}
    path = tmp_path / "w.json"
    path.write_text(json.dumps(data))
    result = cli("validate", path)
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines() == [
        f"{path}: instances.i0.memory_mb: 4096 MB is outside the 128..1024 MB that the embedded localwhisk accepts; lower memory_mb to at most 1024, "
        "or raise platform.localwhisk.user_memory_mb (or --user-memory) (or run on an OpenWhisk with --apihost)",
        f"{path}: instances.i1.data_file: one request would carry 1,048,577 bytes, more than the 1,048,576 bytes the embedded localwhisk accepts (it answers 413); "
        "send a smaller file (OpenWhisk's default limit is 1 MiB too), or start localwhisk yourself with a larger --max-payload-bytes and pass --apihost",
        f"{path}: sweep.parameters.memory_mb[1]: 3000 MB is outside the 128..1024 MB that the embedded localwhisk accepts; lower memory_mb to at most 1024, "
        "or raise platform.localwhisk.user_memory_mb (or --user-memory) (or run on an OpenWhisk with --apihost)",
    ]
    run = cli("run", path, "--out", tmp_path / "runs")
    assert run.returncode == 2 and "4096 MB is outside" in run.stderr and "Traceback" not in run.stderr
    assert "starting the embedded localwhisk" not in run.stderr
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize(
    "out,expected",
    [
        ("{tmp}/file.txt", "--out: {tmp}/file.txt is a file, not a folder; choose a folder for the run directories"),
        (
            "{tmp}/no/such/runs",
            "--out: neither {tmp}/no/such/runs nor its parent {tmp}/no/such exists; create it (mkdir -p {tmp}/no/such/runs) or choose another folder",
        ),
        ("/proc/self", "--out: cannot write in /proc/self ("),
    ],
    ids=["a file", "missing parent", "read-only"],
)
@pytest.mark.slow
def test_run_refuses_an_output_folder_it_cannot_write_before_starting(cli, tmp_path, isolated_home, out, expected):
    (tmp_path / "file.txt").write_text("x")
    path = tmp_path / "w.json"
    path.write_text(json.dumps(BASE))
    result = cli("run", path, "--out", out.format(tmp=tmp_path))
    assert result.returncode == 2
    assert result.stderr.strip().startswith(expected.format(tmp=tmp_path)), result.stderr
    assert "starting the embedded localwhisk" not in result.stderr


@pytest.mark.slow
@pytest.mark.parametrize(
    "key,value,owner,fix",
    [
        ("trace_scale", 3, "Trace", 'remove it or set distribution to "Trace"'),
        ("trace_row", 2, "Trace", 'remove it or set distribution to "Trace"'),
        ("trace_spread", "equidistant", "Trace", 'remove it or set distribution to "Trace"'),
        ("trace_start_minute", 5, "Trace", 'remove it or set distribution to "Trace"'),
        ("burst_gap_mean_s", 1, "Burst", "remove it"),
    ],
    ids=lambda value: str(value),
)
def test_a_key_of_another_distribution_is_one_line_by_validate_and_run_alike(
    cli, tmp_path, isolated_home, key, value, owner, fix
):
    """Issue 33: trace_scale on a Poisson instance was accepted (and silently ignored). Each key of
    another distribution is refused in one line naming the file, the field and the fix; a second
    key of the same distribution adds no line."""
    data = copy.deepcopy(BASE)
    second = {"Trace": "trace_scale" if key != "trace_scale" else "trace_row", "Burst": "burst_size"}[owner]
    data["instances"]["i0"].update({key: value, second: 1})  # the first given is the one named
    path = tmp_path / "w.json"
    path.write_text(json.dumps(data))
    expected = [f'{path}: instances.i0.{key}: only used with distribution "{owner}" (got "Poisson"); {fix}']
    validated = cli("validate", "--offline", path)
    assert (validated.returncode, validated.stderr.splitlines()) == (2, expected)
    run = cli("run", path, "--out", tmp_path / "runs")
    assert (run.returncode, run.stderr.splitlines()) == (2, expected)
    assert not (tmp_path / "runs").exists()


def test_the_azure_keys_without_a_trace_file_are_refused_under_trace():
    data = copy.deepcopy(BASE)
    data["instances"]["i0"] = {"application": "json_dumps", "interarrivals_list": [1, 2], "trace_scale": 2}
    with pytest.raises(ConfigError) as caught:
        workload_from_dict(data, origin="w.json")
    assert caught.value.problems == [
        "w.json: instances.i0.trace_scale: only used with a trace_file (an interarrivals_list is sent as given); add a trace_file or remove it"
    ]


@pytest.mark.slow
def test_plan_out_in_a_missing_or_read_only_folder(cli, tmp_path):
    path = tmp_path / "w.json"
    path.write_text(json.dumps(BASE))
    missing = cli("plan", path, "--out", tmp_path / "no" / "plan.csv")
    assert missing.returncode == 2
    assert (
        missing.stderr.strip()
        == f"--out: the folder {tmp_path / 'no'} does not exist; create it (mkdir -p {tmp_path / 'no'}) or choose another path"
    )
    read_only = cli("plan", path, "--out", "/proc/self/plan.csv")
    assert read_only.returncode == 2 and read_only.stderr.startswith("--out: cannot write in /proc/self (")


def test_apihost_flag_with_spaces_is_one_line(cli, tmp_path, isolated_home):
    path = tmp_path / "w.json"
    path.write_text(json.dumps(BASE))
    result = cli("validate", path, "--apihost", "http://127.0.0.1 3233", "--auth", "u:k")
    assert result.returncode == 2
    assert (
        result.stderr.strip()
        == "--apihost: 'http://127.0.0.1 3233' contains spaces; write one host such as https://172.17.0.1 or http://127.0.0.1:3233"
    )


def test_validate_skips_the_schema_file(cli):
    result = cli("validate", "faasprof/workload_configs/schema.json", "faasprof/workload_configs/paper_listing1.json")
    assert result.returncode == 0, result.stderr
    assert (
        "faasprof/workload_configs/schema.json: skipped (the JSON Schema of workloads, not a workload)" in result.stdout
    )
