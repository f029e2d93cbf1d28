"""ARCHITECTURE.md's recipes, followed literally with a dummy: only the names a recipe lists change.

The metric: a record's annotation ``dummyUs`` becomes the record column ``dummy_us``, the invocation
frame's ``dummy_ms`` and its percentiles in ``phase_stats`` and ``summary.json``. Each step of "Add
a metric" is one ``monkeypatch`` of a name the recipe names; if anything else were hard-wired (a
copy of the column tuples, a reader that ignores them), the column would not arrive.

The platform: "toyfaas", a FaaS whose instances name the functions it hosts behind a gateway URL
(their own key, ``gateway``), served by a real HTTP server on 127.0.0.1. "Add a platform" is one
class (here, in this file, as ``faasprof/platforms/toyfaas.py`` would hold it), its place in the registry's
table and its endpoint and key in the schema (both ``monkeypatch``-ed); a workload of it is then
validated and run end to end by ``faasprof.invoker.run.execute``. Were anything else hard-wired to the two
platforms faasprof ships (an OpenWhisk slot, a ``generic`` branch, a copy of the table), the
workload would be refused or the run would not reach the server.

The distribution: "Every", one invocation every ``every_s`` seconds (its own key). "Add a
distribution" is one class (here, as ``faasprof/workload/arrivals.py`` would hold it), its place in the
table and its name, key and requirement in the schema (both ``monkeypatch``-ed); ``validate``,
``plan``, the schedule and a sweep's ``rate_scale`` then handle it. Were anything else hard-wired to
the four distributions faasprof ships (an if-chain on the name, a copy of the table), the workload
would be refused, plan nothing, or sweep unscaled.
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import re
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd
import pytest
from test_analyzer_synthetic import write_synthetic_run

from faasprof import rundir
from faasprof.analyzer import frames as frames_mod
from faasprof.analyzer import plots as plots_mod
from faasprof.analyzer import stats as stats_mod
from faasprof.analyzer.analysis import analyze_run, load_run
from faasprof.commands import analyze as cmd_analyze
from faasprof.commands import plan as cmd_plan
from faasprof.commands import validate as cmd_validate
from faasprof.errors import ConfigError, NotReadyError
from faasprof.experiments import sweep as sweep_mod
from faasprof.invoker.run import execute
from faasprof.monitoring import collectors
from faasprof.monitoring.collectors import base as collectors_base
from faasprof.platforms import registry
from faasprof.platforms.base import (
    Platform,
    PreparedRequest,
    classify_status,
    format_request,
    parse_json,
    split_origin,
    url_problem,
)
from faasprof.rundir import record_columns, record_fields
from faasprof.rundir import records as records_mod
from faasprof.workload import arrivals, messages
from faasprof.workload.schedule import NS_PER_S, build_schedule
from faasprof.workload.spec import load_workload, workload_from_dict
from tests.helpers import send_json

REPO_ROOT = Path(__file__).resolve().parent.parent

DUMMY_US = {"fa": 2500.0, "fb": 4000.0}  # the annotation's value, per function: a known answer
INSTANCES = {
    "i0": {"application": "fa", "distribution": "Uniform", "rate": 5.0},
    "i1": {"application": "fb", "distribution": "Uniform", "rate": 4.0},
}

# What the recipe says to change, file by file (the test below changes these and nothing else).
METRIC_RECIPE = {
    "faasprof/rundir/record_fields.py": ("RECORD_COLUMNS", "FLOAT_COLUMNS", "flatten_record", "flatten_fast"),
    "faasprof/rundir/records.py": ("_DUCKDB_QUERY",),
    "faasprof/analyzer/frames.py": ("ALIGNED_FLOAT_COLUMNS", "build_from_aligned"),
    "faasprof/analyzer/stats.py": ("group_stats", "STATS_COLUMNS", "percentile_block"),
}


def _recipe(title: str) -> str:
    text = (REPO_ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
    return re.search(rf"^### {re.escape(title)}\n(.*?)(?=^### |\Z)", text, re.S | re.M).group(1)


def test_the_metric_recipe_names_what_the_dummy_changes():
    recipe = _recipe("Add a metric")
    for path, names in METRIC_RECIPE.items():
        assert f"`{path}`" in recipe
        for name in names:
            assert re.search(rf"`{re.escape(name)}[`(]", recipe), name


def _dummy_value(record: dict) -> float:
    annotations = record.get("annotations")
    pairs = (
        annotations.items()
        if isinstance(annotations, dict)
        else ((a.get("key"), a.get("value")) for a in annotations or () if isinstance(a, dict))
    )
    value = dict(pairs).get("dummyUs")
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else math.nan


def _add_the_dummy_metric(monkeypatch) -> None:
    """Each step of the recipe, as a change of the name it lists."""
    # 1. record_fields.py: the column, its type, and both flatteners.
    monkeypatch.setattr(record_fields, "RECORD_COLUMNS", (*record_fields.RECORD_COLUMNS, "dummy_us"))
    monkeypatch.setattr(record_fields, "FLOAT_COLUMNS", (*record_fields.FLOAT_COLUMNS, "dummy_us"))
    flatten_record, flatten_fast = record_fields.flatten_record, record_fields.flatten_fast
    monkeypatch.setattr(record_fields, "flatten_record", lambda record: (*flatten_record(record), _dummy_value(record)))

    def fast(record):
        if type(record.get("annotations")) is not list:  # flatten_fast's own fallback
            return record_fields.flatten_record(record)
        return (*flatten_fast(record), _dummy_value(record))

    monkeypatch.setattr(record_fields, "flatten_fast", fast)
    # ... records.py: DuckDB selects it (and a boolean where a number belongs is unusual).
    query = records_mod._DUCKDB_QUERY
    for old, new in (
        (
            "    CAST(rev[list_position(rkeys, 'initTime')].value AS VARCHAR) AS init_text,\n",
            "    CAST(rev[list_position(rkeys, 'initTime')].value AS VARCHAR) AS init_text,\n"
            "    CAST(rev[list_position(rkeys, 'dummyUs')].value AS VARCHAR) AS dummy_text,\n",
        ),
        (
            "TRY_CAST(init_text AS DOUBLE) AS init_ms,",
            "TRY_CAST(init_text AS DOUBLE) AS init_ms, TRY_CAST(dummy_text AS DOUBLE) AS dummy_us,",
        ),
        ("OR wait_text IN ('true', 'false')", "OR dummy_text IN ('true', 'false') OR wait_text IN ('true', 'false')"),
    ):
        assert query.count(old) == 1, old
        query = query.replace(old, new)
    monkeypatch.setattr(records_mod, "_DUCKDB_QUERY", query)
    # 2. frames.py: aligned to the invocations, and the frame's column derived from it.
    monkeypatch.setattr(frames_mod, "ALIGNED_FLOAT_COLUMNS", (*frames_mod.ALIGNED_FLOAT_COLUMNS, "dummy_us"))
    build_from_aligned = frames_mod.build_from_aligned

    def build(invocations, aligned, manifest):
        dummy_us = aligned.pop("dummy_us")
        frame = build_from_aligned(invocations, aligned, manifest)
        frame["dummy_ms"] = dummy_us / 1e3
        return frame

    monkeypatch.setattr(frames_mod, "build_from_aligned", build)
    # 3. stats.py: its percentiles over the successful invocations of each group.
    monkeypatch.setattr(stats_mod, "STATS_COLUMNS", (*stats_mod.STATS_COLUMNS, "dummy_ms"))
    group_stats = stats_mod.group_stats

    def stats(rows, start_s, end_s, done_s=None):
        out = group_stats(rows, start_s, end_s, done_s)
        out.update(
            stats_mod.percentile_block(
                rows["dummy_ms"].to_numpy(dtype="float64")[rows["successful"].to_numpy(dtype=bool)], "dummy_ms"
            )
        )
        return out

    monkeypatch.setattr(stats_mod, "group_stats", stats)


def _synthetic_run_with_the_annotation(tmp_path):
    run_dir, raws = write_synthetic_run(tmp_path, duration_s=3.0, instances=INSTANCES, save_records=False)
    for raw in raws:
        raw["annotations"].append({"key": "dummyUs", "value": DUMMY_US[raw["name"]]})
    rundir.write_records(rundir.activations_path(run_dir), raws)  # with today's column index, which lacks the column
    return run_dir, raws


def test_a_dummy_metric_added_by_the_recipe_reaches_the_frame_the_statistics_and_the_summary(tmp_path, monkeypatch):
    run_dir, raws = _synthetic_run_with_the_annotation(tmp_path)
    path = rundir.activations_path(run_dir)
    assert record_columns.load(path) is not None
    _add_the_dummy_metric(monkeypatch)
    # The index written before the column existed is no longer today's: rejected, then rebuilt.
    assert record_columns.load(path) is None
    run = load_run(run_dir)
    index = record_columns.load(path)
    assert index is not None and index.state(path) == "current"
    index.close()

    frame = run.invocations
    expected = np.where(frame["has_record"], frame["function"].map(DUMMY_US).astype("float64") / 1e3, np.nan)
    assert frame["has_record"].sum() == len(raws)
    np.testing.assert_array_equal(frame["dummy_ms"].to_numpy(dtype="float64"), expected)
    for row in run.phase_stats.itertuples():
        assert row.dummy_ms_p50 == DUMMY_US[row.function] / 1e3 and row.dummy_ms_n == row.successful

    summary = analyze_run(run_dir, None, plots=False)
    phases = [(instance["function"], phase) for instance in summary["instances"] for phase in instance["phases"]]
    assert phases and all(phase["dummy_ms_p50"] == DUMMY_US[function] / 1e3 for function, phase in phases)
    written = json.loads((run_dir / "analysis" / "summary.json").read_text())
    assert [phase["dummy_ms_p50"] for instance in written["instances"] for phase in instance["phases"]] == [
        p["dummy_ms_p50"] for _, p in phases
    ]
    assert "dummy_ms" in pd.read_parquet(run_dir / "analysis" / "invocations.parquet", columns=["dummy_ms"]).columns


@pytest.mark.parametrize("reader", ["index", "duckdb", "python"])
def test_every_record_reader_gives_the_dummy_column(tmp_path, monkeypatch, reader):
    run_dir, raws = _synthetic_run_with_the_annotation(tmp_path)
    _add_the_dummy_metric(monkeypatch)
    path = rundir.activations_path(run_dir)
    if reader == "index":
        rundir.write_records(path, raws)  # the index written now holds the column
        assert record_columns.load(path) is not None
        frame, _ = records_mod.read_records(path)
    elif reader == "duckdb":
        record_columns.remove(path)
        frame, _ = records_mod._read_records_duckdb(str(path))
    else:
        frame, _ = records_mod.read_records_python(path)
    by_id = dict(zip(frame["activation_id"], frame["dummy_us"]))
    assert by_id == {raw["activationId"]: DUMMY_US[raw["name"]] for raw in raws}


# -- the collector ------------------------------------------------------------------------------

# What "Add a collector" says to write (the dummy below declares these and nothing else changes).
COLLECTOR_RECIPE = {
    "faasprof/monitoring/collectors/__init__.py": ("COLLECTORS",),
    "faasprof/monitoring/collectors/base.py": ("SamplingCollector", "ProcessCollector", "Plot"),
}
COLLECTOR_ATTRIBUTES = (
    "name",
    "summary",
    "tool",
    "raw_outputs",
    "defaults",
    "options_schema",
    "parse_kinds",
    "plots",
    "plot_lines_by",
    "plot_busiest_by",
    "unplottable_columns",
    "load_frame",
    "doctor",
)


class Widgets(collectors_base.SamplingCollector):
    """The dummy collector: widgets made per second, in ``widgets.csv`` (``elapsed_s,widgets_per_s``)."""

    name = "widgets"
    summary = "Widgets made per second."
    tool = "the widget counter"
    raw_outputs = "`widgets.csv`"
    plots = (collectors_base.Plot("widgets_per_s", "widgets made", "thousand per s", 1e-3),)

    @classmethod
    def load_frame(cls, directory, meta, offset_s, manifest):
        frame = pd.read_csv(directory / "widgets.csv")
        frame["t_s"] = frame["elapsed_s"] + offset_s
        return frame


def test_the_collector_recipe_names_what_the_dummy_changes():
    assert_the_recipe_names("Add a collector", COLLECTOR_RECIPE, COLLECTOR_ATTRIBUTES)


def test_a_new_collector_declaring_its_plots_gets_them_in_the_report(tmp_path, monkeypatch):
    """The collector's class in the registry (step 2) is all the analyzer needs: its frame is
    plotted beside latency with the label, unit and scale it declares, and listed in the report."""
    monkeypatch.setattr(collectors, "COLLECTORS", (*collectors.COLLECTORS, Widgets))
    monkeypatch.setitem(collectors.REGISTRY, Widgets.name, Widgets)
    run_dir, _ = write_synthetic_run(tmp_path, duration_s=3.0, instances=INSTANCES)
    directory = rundir.monitor_dir(run_dir, Widgets.name)
    rundir.write_json_atomic(
        directory / rundir.MONITOR_META, {"wall_ns_at_start": rundir.read_manifest(run_dir).wall_ns_at_zero}
    )
    (directory / "widgets.csv").write_text("elapsed_s,widgets_per_s\n1,2000\n2,4000\n3,3000\n")

    run = load_run(run_dir)
    panels = dict(plots_mod._monitor_series(run))
    assert list(panels) == ["widgets: widgets made (thousand per s)"]
    [(_, t_s, values)] = panels["widgets: widgets made (thousand per s)"]
    assert t_s.tolist() == [1.0, 2.0, 3.0] and values.tolist() == [2.0, 4.0, 3.0]

    summary = analyze_run(run_dir)
    assert "plots/monitors.png" in summary["outputs"]["plots"]
    report = (run_dir / "analysis" / "report.html").read_text()
    assert "widgets made (thousand per s)" in report and ">widgets_per_s<" in report


# -- the platform -------------------------------------------------------------------------------

# What "Add a platform" says to change, file by file (the test below changes these and nothing else).
PLATFORM_RECIPE = {
    "faasprof/platforms/registry.py": ("PLATFORMS", "record_keepers"),
    "faasprof/workload_configs/schema.json": ("endpoint",),
}
PLATFORM_ATTRIBUTES = (
    "endpoint",
    "names_functions",
    "instance_keys",
    "required_keys",
    "validate_instance",
    "check",
    "ensure_deployed",
    "prepare_request",
    "fetch_records",
    "find_records",
    "keeps_records",
    "describe",
)


# -- the toy platform's server ------------------------------------------------------------------


class _ToyHandler(BaseHTTPRequestHandler):
    """``GET /``: who it is; ``GET /functions``: what it hosts; ``POST /call/NAME``: a call, answered
    200 with the parameters (``echo``) or 500 with an error (``fail``), each with its call id."""

    protocol_version = "HTTP/1.1"
    server: "ToyServer"

    def log_message(self, *args) -> None:  # keep test output clean
        pass

    def do_GET(self) -> None:
        if self.path == "/":
            send_json(self, 200, {"name": "toyfaas"})
        elif self.path == "/functions":
            send_json(self, 200, sorted(ToyServer.FUNCTIONS))
        elif self.path == "/records":
            with self.server.lock:
                send_json(self, 200, list(self.server.records))
        else:
            send_json(self, 404, {"error": "no such path"})

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        name = self.path.removeprefix("/call/")
        if name not in ToyServer.FUNCTIONS:
            send_json(self, 404, {"error": f"no function {name}"})
            return
        with self.server.lock:
            self.server.calls.append((name, json.loads(body)))
            call_id = f"toy-{len(self.server.calls)}"
            start_ms = time.time_ns() // 1_000_000
            status = "application error" if name == "fail" else "success"
            self.server.records.append(
                {
                    "activationId": call_id,
                    "name": name,
                    "namespace": "toy",
                    "start": start_ms,
                    "end": start_ms + 2,
                    "duration": 2,
                    "annotations": [],
                    "response": {"status": status, "success": name != "fail"},
                }
            )
        if name == "fail":
            send_json(self, 500, {"id": call_id, "error": "boom"})
        else:
            send_json(self, 200, {"id": call_id, "result": json.loads(body)})


class ToyServer(ThreadingHTTPServer):
    FUNCTIONS = ("echo", "fail")
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _ToyHandler)
        self.calls: list[tuple[str, dict]] = []
        self.records: list[dict] = []  # the toy's own record of each call, as a platform keeps them
        self.lock = threading.Lock()

    @property
    def gateway(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def __enter__(self) -> "ToyServer":
        threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.shutdown()
        self.server_close()


# -- the toy platform: what faasprof/platforms/toyfaas.py would hold ---------------------------------------


def toy_classify(status: int, activation_id: str | None, body: bytes) -> tuple[str, str | None, str | None]:
    """A toy answer: the call id is in the body; 500 means the function failed."""
    parsed = parse_json(body)
    call_id = parsed.get("id") if isinstance(parsed, dict) else None
    return classify_status(status, call_id, body, parsed, app_error_status=500)


class ToyPlatform(Platform):
    """Functions hosted behind a gateway URL that each instance names."""

    endpoint = "toyfaas"
    names_functions = True
    instance_keys = ("gateway",)
    required_keys = ("gateway",)

    def __init__(self) -> None:
        self.gateways: set[str] = set()

    @classmethod
    def validate_instance(cls, spec: dict) -> list[tuple[str, str]]:
        problems = super().validate_instance(spec)
        reason = url_problem(spec["gateway"]) if "gateway" in spec else None
        return problems + ([("gateway", reason)] if reason else [])

    def _get(self, url: str) -> Any:
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                return json.loads(response.read())
        except (OSError, urllib.error.URLError) as error:
            raise NotReadyError(f"{url}: no answer ({error}); is the toyfaas gateway running?") from None

    def check(self, instances: Sequence[Any] = ()) -> dict:
        self.gateways = {instance.platform_keys["gateway"] for instance in instances if self.serves(instance)}
        self.info = {gateway: self._get(gateway + "/") for gateway in sorted(self.gateways)}
        return self.info

    def ensure_deployed(self, workload: Any) -> dict[str, str]:
        found = {}
        for instance in workload.instances:
            if self.serves(instance) and instance.function not in self._get(
                instance.platform_keys["gateway"] + "/functions"
            ):
                raise NotReadyError(
                    f"{workload.origin}: instances.{instance.name}.application: {instance.function} is not on its gateway"
                )
            found[instance.function] = "existing"
        return found

    def prepare_request(self, instance: Any, origin_name: str = "<workload>") -> PreparedRequest:
        url = f"{instance.platform_keys['gateway']}/call/{instance.function}"
        origin, path = split_origin(url)
        payload = format_request(origin, path, json.dumps(instance.params or {}).encode(), "application/json")
        return PreparedRequest("toy", origin, payload, f"POST {url}", toy_classify, 1.0)

    def fetch_records(self, run_dir, say=None, wait: bool = True, report: dict | None = None) -> dict:
        return {} if report is None else report  # the toy keeps no records

    def describe(self) -> dict:
        return {"kind": "toyfaas", "gateways": sorted(self.gateways)}


@pytest.fixture
def toy_platform_added(monkeypatch):
    """Steps 2 and 3 of "Add a platform": the class in the registry's table, the endpoint and the
    key its instances take in the schema (the validator built from it is rebuilt, and again after)."""
    monkeypatch.setattr(registry, "PLATFORMS", (*registry.PLATFORMS, ToyPlatform))
    schema = copy.deepcopy(messages.load_schema())
    schema["properties"]["endpoint"]["enum"].append(ToyPlatform.endpoint)
    schema["$defs"]["instance"]["properties"]["gateway"] = {
        "type": "string",
        "minLength": 1,
        "description": "toyfaas endpoint: the gateway URL.",
    }
    monkeypatch.setattr(messages, "load_schema", lambda: schema)
    messages._validator.cache_clear()
    yield
    messages._validator.cache_clear()


def toy_workload(address: str, **instance_keys) -> dict:
    return {
        "test_name": "toy",
        "test_duration_in_seconds": 1,
        "random_seed": 5,
        "endpoint": "toyfaas",
        "instances": {
            "e": {
                "application": "echo",
                "distribution": "Uniform",
                "rate": 10,
                "params": {"n": 1},
                "gateway": address,
                **instance_keys,
            },
            "f": {"application": "fail", "distribution": "Uniform", "rate": 4, "gateway": address},
        },
    }


def assert_the_recipe_names(title: str, files: dict[str, tuple[str, ...]], attributes: tuple[str, ...]) -> None:
    """The recipe ``title`` names each file and each name listed for it, and each attribute of the
    class it adds (as `name` or `name(...)`)."""
    recipe = _recipe(title)
    for path, names in files.items():
        assert f"`{path}`" in recipe
        for name in names:
            assert f"`{name}`" in recipe, name
    for name in attributes:
        assert re.search(rf"`{re.escape(name)}[`(]", recipe), name


def test_the_platform_recipe_names_what_the_dummy_changes():
    assert_the_recipe_names("Add a platform", PLATFORM_RECIPE, PLATFORM_ATTRIBUTES)


def test_add_a_platform_touching_only_the_recipes_files(tmp_path, toy_platform_added):
    with ToyServer() as server:
        # The platform's shape of an instance holds: its key required and checked, the others' refused.
        for keys, expected in (
            ({"gateway": None}, 'instances.e.gateway: required when endpoint is "toyfaas"; add it'),
            ({"gateway": "toy:9"}, 'instances.e.gateway: "toy:9" is not an http:// or https:// URL'),
            (
                {"url": server.gateway},
                'instances.e.url: only used when endpoint is "generic" (the workload\'s endpoint is "toyfaas"); remove it',
            ),
            ({"source": "."}, 'instances.e.source: only used when endpoint is "local_openwhisk"'),
        ):
            data = toy_workload(server.gateway, **keys)
            data["instances"]["e"] = {key: value for key, value in data["instances"]["e"].items() if value is not None}
            with pytest.raises(ConfigError) as caught:
                workload_from_dict(data, origin="toy.json")
            assert any(expected in line for line in caught.value.problems), caught.value.problems

        workload = workload_from_dict(toy_workload(server.gateway), origin="toy.json")
        run_dir = execute(workload, tmp_path / "runs")
        calls = list(server.calls)

    manifest = rundir.read_manifest(run_dir)
    rows = rundir.read_invocations(run_dir)
    assert manifest.status == "complete" and len(rows) == manifest.counts["planned"] == len(calls) > 0
    echo = [row for row in rows if row["instance"] == "e"]
    fail = [row for row in rows if row["instance"] == "f"]
    assert echo and all(row["outcome"] == "ok" and row["activation_id"].startswith("toy-") for row in echo)
    assert fail and all(row["outcome"] == "app_error" and row["error"] == "boom" for row in fail)
    assert {json.dumps(params) for name, params in calls if name == "echo"} == {'{"n": 1}'}
    # A platform hosting functions: the run says it did not start it and what it found deployed.
    assert manifest.platform == {
        "kind": "toyfaas",
        "embedded": False,
        "gateways": [server.gateway],
        "actions": {"echo": "existing", "fail": "existing"},
    }


class ToyKeeper(ToyPlatform):
    """The toy platform keeping a record of each call, as OpenWhisk keeps activation records, which
    ``faasprof analyze`` saves (``fetch_records``) and the analyzer finds (``find_records``)."""

    keeps_records = True

    def fetch_records(self, run_dir, say=None, wait: bool = True, report: dict | None = None) -> dict:
        wanted = {row["activation_id"] for row in rundir.read_invocations(run_dir) if row["activation_id"]}
        records, found = self.find_records(wanted, 0, 2**62)
        report = {} if report is None else report
        report.update(
            expected=len(wanted),
            saved=rundir.write_records(rundir.activations_path(run_dir), records),
            missing=found["missing"],
        )
        return report

    records_gateway = ""  # where its records are read, as a connection's settings would say

    def find_records(self, activation_ids, since_ms, upto_ms, retry_delays_s=None, say=None, stragglers=False):
        wanted = set(activation_ids)
        records = [
            record for record in self._get(self.records_gateway + "/records") if record["activationId"] in wanted
        ]
        return rundir.sort_records(records), {
            "wanted": len(wanted),
            "found": len(records),
            "missing": len(wanted) - len(records),
        }


@pytest.mark.slow
def test_add_a_platform_that_keeps_records_and_the_analyzer_fetches_them_through_the_registry(
    tmp_path, monkeypatch, toy_platform_added
):
    """A platform that keeps records: ``analyze_run`` and ``faasprof analyze`` fetch them through
    the registry, by the manifest's endpoint, with nothing outside the recipe changed."""
    monkeypatch.setattr(registry, "PLATFORMS", (*registry.PLATFORMS[:-1], ToyKeeper))
    with ToyServer() as server:
        monkeypatch.setattr(ToyKeeper, "records_gateway", server.gateway)
        run_dir = execute(workload_from_dict(toy_workload(server.gateway), origin="toy.json"), tmp_path / "runs")
        calls = len(server.calls)
        assert calls > 0 and not rundir.has_records(run_dir)  # a platform not started by the run: analyze fetches them

        summary = analyze_run(run_dir, plots=False)
        assert summary["records"]["found"] == calls and summary["records"]["missing"] == 0
        assert len(rundir.read_record_ids(rundir.activations_path(run_dir))) == calls

        rundir.activations_path(run_dir).unlink()
        assert (
            cmd_analyze.main(argparse.Namespace(run_dir=str(run_dir), no_fetch=False, no_plots=True, apihost=None)) == 0
        )
        assert len(rundir.read_record_ids(rundir.activations_path(run_dir))) == calls
    frame = load_run(run_dir).invocations
    assert frame["has_record"].all() and set(frame.loc[frame["instance"] == "f", "final_outcome"]) == {
        "application_error"
    }


# -- the distribution ---------------------------------------------------------------------------

# What "Add a distribution" says to change, file by file (the test below changes these and nothing else).
DISTRIBUTION_RECIPE = {
    "faasprof/workload/arrivals.py": ("Distribution", "DISTRIBUTIONS"),
    "faasprof/workload_configs/schema.json": ("distribution",),
}
DISTRIBUTION_ATTRIBUTES = (
    "name",
    "keys",
    "required",
    "rated",
    "arrivals",
    "expected_count",
    "driving_field",
    "scale",
    "problems",
    "claims",
    "file_keys",
    "resolve_files",
)


class Every(arrivals.Distribution):
    """The dummy: one invocation every ``every_s`` seconds from the window start."""

    name = "Every"
    keys = ("every_s",)
    required = ("every_s",)

    def arrivals(self, instance, rng, start_s, end_s):
        return np.arange(start_s, end_s, float(instance.arrival_keys["every_s"]))

    def expected_count(self, instance):
        return float(math.ceil(instance.window_length_s / instance.arrival_keys["every_s"]))

    def driving_field(self, instance):
        return "every_s", "raise every_s or shorten the activity window"

    def scale(self, spec, factor):
        spec["every_s"] = spec["every_s"] / factor


@pytest.fixture
def every_added(monkeypatch):
    """Both steps of "Add a distribution": the class in the table; its name in the schema's enum,
    its key and the if/then that requires it (the validator built from it is rebuilt, and again after)."""
    monkeypatch.setitem(arrivals.DISTRIBUTIONS, Every.name, Every())
    schema = copy.deepcopy(messages.load_schema())
    instance = schema["$defs"]["instance"]
    instance["properties"]["distribution"]["enum"].append(Every.name)
    instance["properties"]["every_s"] = {
        "type": "number",
        "exclusiveMinimum": 0,
        "description": "Every only: the interval.",
    }
    instance["allOf"].append(
        {
            "if": {"required": ["distribution"], "properties": {"distribution": {"const": Every.name}}},
            "then": {"required": ["every_s"]},
        }
    )
    monkeypatch.setattr(messages, "load_schema", lambda: schema)
    messages._validator.cache_clear()
    yield
    monkeypatch.undo()
    messages._validator.cache_clear()


def every_workload(**every) -> dict:
    return {
        "test_name": "every",
        "test_duration_in_seconds": 10,
        "random_seed": 3,
        "instances": {
            "e": {"application": "json_dumps", "distribution": "Every", "every_s": 2.0, **every},
            "p": {"application": "json_dumps", "distribution": "Poisson", "rate": 1},
        },
    }


def _problems(data: dict) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        workload_from_dict(data, origin="every.json")
    return caught.value.problems


def test_the_distribution_recipe_names_what_the_dummy_changes():
    assert_the_recipe_names("Add a distribution", DISTRIBUTION_RECIPE, DISTRIBUTION_ATTRIBUTES)


def test_the_schema_names_the_distributions_of_the_table_and_requires_their_keys():
    instance = messages.load_schema()["$defs"]["instance"]
    assert instance["properties"]["distribution"]["enum"] == list(arrivals.DISTRIBUTIONS)
    required = {}
    for rule in instance["allOf"]:
        condition = rule["if"].get("properties", {}).get("distribution", {})
        for name in condition.get("enum", [condition["const"]] if "const" in condition else []):
            required[name] = tuple(rule["then"]["required"])
    assert required == {d.name: d.required for d in arrivals.DISTRIBUTIONS.values() if d.required}
    for d in arrivals.DISTRIBUTIONS.values():
        assert set(d.keys) <= set(instance["properties"]) and set(d.required) <= set(d.keys) | {"rate"}


def test_add_a_distribution_touching_only_the_recipes_files(tmp_path, monkeypatch, capsys, every_added):
    # validate: the dummy's key required, checked by the schema, refused under another distribution.
    for data, expected in (
        (
            {**every_workload(), "instances": {"e": {"application": "json_dumps", "distribution": "Every"}}},
            'every.json: instances.e.every_s: required when distribution is "Every"; add it',
        ),
        (every_workload(every_s=0), "every.json: instances.e.every_s: must be a number > 0 (got 0)"),
        (
            {
                **every_workload(),
                "instances": {"p": {"application": "json_dumps", "distribution": "Poisson", "rate": 1, "every_s": 2}},
            },
            'every.json: instances.p.every_s: only used with distribution "Every" (got "Poisson"); remove it',
        ),
        # The size check asks the dummy what drives its count, and names that key.
        (
            every_workload(every_s=1e-7),
            "every.json: instances.e.every_s: the workload plans about 1e+08 invocations (this instance plans about 1e+08)",
        ),
    ):
        problems = _problems(data)
        assert any(line.startswith(expected) for line in problems), problems
    assert _problems(every_workload(every_s=1e-7))[0].endswith("raise every_s or shorten the activity window")

    path = tmp_path / "every.json"
    path.write_text(json.dumps(every_workload()))
    monkeypatch.chdir(tmp_path)
    assert cmd_validate.main(argparse.Namespace(configs=[path.name], quiet=False, offline=True)) == 0
    assert capsys.readouterr().out == "every.json: ok (2 instances, 10 s; checked offline)\n"

    # plan: the dummy's expected count, and the schedule it draws.
    workload = workload_from_dict(every_workload(), origin="every.json")
    every = workload.instance("e")
    assert (every.distribution, every.arrival_keys, every.planned_estimate) == ("Every", {"every_s": 2.0}, 5.0)
    schedule = build_schedule(workload)
    mine = schedule.intended_ns[schedule.instance_idx == schedule.instance_names.index("e")]
    assert mine.tolist() == [k * 2 * NS_PER_S for k in range(5)]
    assert cmd_plan.main(argparse.Namespace(config=path.name, out=None, seed=None)) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[1].split() == ["e", "json_dumps", "Every", "-", "0.5", "[0,", "10)", "5"], table

    # A sweep's rate_scale: the dummy scales its own key; a rate sweep knows the dummy has no rate.
    data = every_workload()
    data["sweep"] = {"parameters": {"rate_scale": [2]}, "instances": ["e"]}
    point = sweep_mod.expand_points(workload_from_dict(data))[0]
    scaled = sweep_mod.apply_point(data, point)
    assert scaled["instances"]["e"]["every_s"] == 1.0 and scaled["instances"]["p"] == data["instances"]["p"]
    assert workload_from_dict(scaled).instance("e").planned_estimate == 10.0
    data["sweep"] = {"parameters": {"rate": [3]}, "instances": ["e"]}
    with pytest.raises(ConfigError, match=r"sweep.parameters.rate: no Poisson or Uniform instance to apply it to"):
        sweep_mod.check_sweep(workload_from_dict(data))


class Replay(arrivals.Distribution):
    """A dummy with a file key: one invocation at each number of seconds ``replay_file`` lists."""

    name = "Replay"
    keys = ("replay_file",)
    required = ("replay_file",)

    def arrivals(self, instance, rng, start_s, end_s):
        path = instance.arrival_keys["replay_file"]
        times = start_s + np.loadtxt(path, ndmin=1) if path is not None else np.empty(0)
        return times[times < end_s]

    def expected_count(self, instance):
        path = instance.arrival_keys["replay_file"]
        return float(np.loadtxt(path, ndmin=1).size) if path is not None else 0.0

    def driving_field(self, instance):
        return "replay_file", "list fewer instants"

    def scale(self, spec, factor):
        raise NotImplementedError


@pytest.fixture
def replay_added(monkeypatch):
    """ "Add a distribution" for a distribution whose key names a file: its class and its schema."""
    monkeypatch.setitem(arrivals.DISTRIBUTIONS, Replay.name, Replay())
    schema = copy.deepcopy(messages.load_schema())
    instance = schema["$defs"]["instance"]
    instance["properties"]["distribution"]["enum"].append(Replay.name)
    instance["properties"]["replay_file"] = {"$ref": "#/$defs/path", "description": "Replay only: the instants."}
    monkeypatch.setattr(messages, "load_schema", lambda: schema)
    messages._validator.cache_clear()
    yield
    monkeypatch.undo()
    messages._validator.cache_clear()


def test_a_file_key_of_a_new_distribution_is_resolved_by_it(tmp_path, monkeypatch, replay_added):
    """Its file is found as every workload file is (the workload's folder first, whatever the
    current folder), checked, and planned from, with no change outside the recipe's files."""
    (tmp_path / "w").mkdir()
    (tmp_path / "w" / "instants.txt").write_text("0.5\n1.5\n2.5\n")
    data = {
        "test_name": "replay",
        "test_duration_in_seconds": 10,
        "random_seed": 1,
        "instances": {"r": {"application": "json_dumps", "distribution": "Replay", "replay_file": "instants.txt"}},
    }
    path = tmp_path / "w" / "replay.json"
    path.write_text(json.dumps(data))
    monkeypatch.chdir(tmp_path)
    workload = load_workload(path)
    replay = workload.instance("r")
    assert (
        replay.arrival_keys == {"replay_file": (tmp_path / "w" / "instants.txt").resolve()}
        and replay.planned_estimate == 3.0
    )
    assert workload.resolved()["instances"]["r"]["replay_file"] == str((tmp_path / "w" / "instants.txt").resolve())
    assert build_schedule(workload).intended_ns.tolist() == [NS_PER_S // 2, 3 * NS_PER_S // 2, 5 * NS_PER_S // 2]

    for name, expected in (("nope.txt", "file nope.txt not found (looked in "), (".", " is a directory; name a file")):
        data["instances"]["r"]["replay_file"] = name
        path.write_text(json.dumps(data))
        with pytest.raises(ConfigError) as caught:
            load_workload(path)
        assert len(caught.value.problems) == 1 and caught.value.problems[0].startswith(
            f"{path}: instances.r.replay_file: "
        )
        assert expected in caught.value.problems[0], caught.value.problems
    # A dry run plans without the file (a warning), as for any file a workload names.
    data["instances"]["r"]["replay_file"] = "nope.txt"
    path.write_text(json.dumps(data))
    dry = load_workload(path, missing_files_warn=True)
    assert dry.instance("r").arrival_keys == {"replay_file": None} and len(dry.warnings) == 1
