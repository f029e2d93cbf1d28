"""Rates given as a fraction of a function's measured capacity: parsed, resolved from the store,
measured first when missing, recorded in the manifest's workload."""

from __future__ import annotations

import argparse
import inspect
import json

import pytest

from faasprof.commands import capacity as cmd_capacity
from faasprof.errors import ConfigError
from faasprof.experiments import capacity_store
from faasprof.experiments.capacity import SEARCH_DEFAULTS, Probe, find_capacity, search
from faasprof.experiments.sweep import sweep_eta
from faasprof.invoker.run import execute
from faasprof.workload.spec import workload_from_dict
from tests.helpers import run_cli

WORKLOAD = {
    "test_name": "cf",
    "test_duration_in_seconds": 10,
    "instances": {
        "low": {
            "application": "json_dumps",
            "distribution": "Uniform",
            "rate": {"capacity_fraction": 0.25},
            "activity_window": [0, 5],
        },
        "fixed": {"application": "json_dumps", "distribution": "Uniform", "rate": 3, "activity_window": [5, 10]},
    },
}


def test_a_fraction_is_left_unresolved_until_capacities_are_given():
    workload = workload_from_dict(json.loads(json.dumps(WORKLOAD)))
    assert [i.name for i in workload.needs_capacity()] == ["low"]
    resolved = workload.with_capacities({"low": {"capacity_rps": 80.0, "capacity_source": "test"}})
    assert resolved.instance("low").rate == pytest.approx(20.0) and resolved.instance("fixed").rate == 3
    assert not resolved.needs_capacity()
    assert resolved.resolved()["as_given"]["capacity_resolution"]["low"]["capacity_rps"] == 80.0
    with pytest.raises(ConfigError, match="instances.low.rate"):
        workload.with_capacities({})


def test_a_bad_fraction_is_a_schema_problem():
    data = json.loads(json.dumps(WORKLOAD))
    data["instances"]["low"]["rate"] = {"capacity_fraction": -1}
    with pytest.raises(ConfigError, match="instances.low.rate"):
        workload_from_dict(data)


def test_resolve_measures_once_then_reads_the_store(tmp_path, monkeypatch):
    monkeypatch.setenv(capacity_store.STORE_ENV, str(tmp_path / "store.json"))
    calls = []

    def measure(function, **kwargs):
        # The search's own defaults (SEARCH_DEFAULTS, faasprof capacity's too): none overridden here.
        calls.append((function, kwargs["out_dir"], sorted(set(kwargs) & set(SEARCH_DEFAULTS))))
        return {
            "capacity_rps": 40.0,
            "bounds_rps": [40.0, 52.0],
            "result_file": str(tmp_path / "capacity-json_dumps.json"),
        }

    workload = workload_from_dict(json.loads(json.dumps(WORKLOAD)))
    first = capacity_store.resolve_workload(workload, None, {}, tmp_path, measure=measure)
    assert first.instance("low").rate == pytest.approx(10.0)
    assert calls == [("json_dumps", tmp_path, [])]
    second = capacity_store.resolve_workload(workload, None, {}, tmp_path, measure=measure)
    assert second.instance("low").rate == pytest.approx(10.0) and len(calls) == 1  # from the store
    # Another platform (docker isolation) is another key: measured again.
    capacity_store.resolve_workload(workload, None, {"isolation": "docker"}, tmp_path, measure=measure)
    assert len(calls) == 2
    stored = json.loads((tmp_path / "store.json").read_text())
    assert stored["format_version"] == capacity_store.STORE_FORMAT_VERSION and len(stored["entries"]) == 2


def test_capacity_and_the_quick_start_share_one_set_of_defaults():
    # faasprof capacity's options and find_capacity (which resolve_workload calls with none of
    # them, test above) both take SEARCH_DEFAULTS.
    parser = argparse.ArgumentParser()
    cmd_capacity.add_arguments(parser)
    args = parser.parse_args(["json_dumps"])
    options = {
        "duration_s": args.duration,
        "start_rate": args.start_rate,
        "max_rate": args.max_rate,
        "factor": args.factor,
        "tolerance": args.tolerance,
        "max_runs": args.max_runs,
        "cooldown_s": args.cooldown,
        "repeats": args.repeats,
        "budget_s": args.budget_s,
    }
    assert options == SEARCH_DEFAULTS
    parameters = inspect.signature(find_capacity).parameters
    assert {name: parameters[name].default for name in SEARCH_DEFAULTS} == SEARCH_DEFAULTS


def test_the_invoker_refuses_an_unresolved_fraction(tmp_path):
    workload = workload_from_dict(json.loads(json.dumps(WORKLOAD)))
    with pytest.raises(ConfigError, match="capacity"):
        execute(workload, tmp_path)


def test_sweep_eta_from_planned_then_measured_times():
    assert sweep_eta(0, 3, 0.0, 30.0, 5.0) == "ETA about 1 min 45 s (planned)"
    assert sweep_eta(1, 3, 40.0, 30.0, 5.0) == "ETA 1 min 20 s"
    assert sweep_eta(3, 3, 120.0, 30.0, 5.0) == "done"


def test_capacity_search_says_an_eta():
    lines = []
    now_s = [0.0]

    def probe(rate, reference):
        now_s[0] += 10.0  # each probe takes 10 s
        return Probe(rate_rps=rate, mode="over-invoked" if rate > 4 else "balanced")

    search(probe, start_rate=1, max_rate=64, max_runs=6, say=lines.append, clock=lambda: now_s[0], budget_s=45.0)
    assert lines[0].startswith("[ 1/6]") and "ETA about 50 s" in lines[0]  # 5 rates left at 10 s each
    # Once the bracket stands (3/s kept up, 9/s not: the third probe) what is left of the budget bounds it.
    assert "ETA about 15 s" in lines[2] and "ETA about 5 s" in lines[3] and len(lines) == 4


@pytest.mark.slow
def test_plan_and_validate_show_a_fraction_from_the_store_or_as_not_measured_yet(tmp_path, isolated_home):
    """Offline: a fraction without a stored capacity is shown as such (counts unknown), never a
    crash; with one stored for this host and platform, as the rate ``run`` would use."""
    path = tmp_path / "cf.json"
    path.write_text(json.dumps(WORKLOAD))
    env = {capacity_store.STORE_ENV: str(tmp_path / "store.json")}
    note = "instances.low.rate: 0.25 × capacity of json_dumps (not measured yet: `run` measures it first, about 45 s)"
    plan = run_cli("plan", path, env=env)
    assert plan.returncode == 0 and "Traceback" not in plan.stderr, plan.stderr
    rows = {line.split()[0]: line.split() for line in plan.stdout.splitlines()[1:3]}
    assert rows["low"][3:6] == ["0.25", "×", "capacity"] and rows["low"][6] == "?" and rows["low"][-1] == "?"
    assert rows["fixed"][-1] == "15"
    assert note in plan.stdout.splitlines()
    assert "total 15 invocations and an unknown number for 1 instance whose capacity is not measured yet" in plan.stdout
    validate = run_cli("validate", path, env=env)
    assert validate.returncode == 0 and validate.stdout.splitlines()[1:] == [f"  {note}"], (
        validate.stdout + validate.stderr
    )

    store_key = capacity_store.key(
        capacity_store.host_identity(), capacity_store.platform_identity(None, None), "json_dumps", None
    )
    capacity_store.record(
        store_key,
        {"capacity_rps": 80.0, "result_file": str(tmp_path / "capacity-json_dumps.json")},
        path=tmp_path / "store.json",
    )
    plan = run_cli("plan", path, env=env)
    assert plan.returncode == 0, plan.stderr
    rows = {line.split()[0]: line.split() for line in plan.stdout.splitlines()[1:3]}
    assert rows["low"][3] == "20" and rows["low"][-1] == "100"  # Uniform at 0.25 × 80/s over 5 s
    resolved = "instances.low.rate: 0.25 × capacity of json_dumps = 20/s (capacity 80/s, measured "
    assert any(line.startswith(resolved) for line in plan.stdout.splitlines())
    validate = run_cli("validate", "--offline", path, env=env)
    assert validate.returncode == 0 and validate.stdout.splitlines()[1].startswith(f"  {resolved}"), validate.stdout


def test_capacity_isolation_docker_searches_and_stores_under_docker_sandboxes(tmp_path, monkeypatch, capsys):
    # `faasprof capacity --isolation docker` (issue 34: the docker repeats had no flag to take):
    # the embedded localwhisk gets it, and the store keys the result by it.
    monkeypatch.setenv(capacity_store.STORE_ENV, str(tmp_path / "store.json"))
    seen = {}

    def fake_find_capacity(function, **kwargs):
        seen.update(kwargs["local_settings"])
        return {
            "capacity_rps": 20.0,
            "capacity_text": "20 ± 2/s, 6 probes",
            "interval_rps": [18.0, 22.0],
            "bounds_rps": [18.0, 22.0],
            "capacity_is_lower_bound": False,
            "mode_at_capacity": "balanced",
            "stopped_because": "bracketed within 30%",
            "load_1min": {"before": 3.0, "peak": 4.0, "cpus": 2},
            "probes": [{"rate_rps": 18.0, "mode": "balanced", "run_dir": "runs/p", "load_1min": 3.5}],
            "split_rates_rps": {"22": [1, 3]},
            "result_file": str(tmp_path / "r.json"),
        }

    monkeypatch.setattr(cmd_capacity, "find_capacity", fake_find_capacity)
    monkeypatch.setattr(cmd_capacity, "resolve_connection", lambda *a, **k: None)
    parser = argparse.ArgumentParser()
    cmd_capacity.add_arguments(parser)
    assert cmd_capacity.main(parser.parse_args(["json_dumps", "--isolation", "docker"])) == 0
    assert seen == {"isolation": "docker"}
    stored = json.loads((tmp_path / "store.json").read_text())["entries"]
    assert [k for k in stored if "localwhisk isolation=docker" in k]
    out = capsys.readouterr().out
    assert "load 3.5" in out  # each probe with the load as it ended
    assert "probes disagreed (22/s kept up 1 of 3): the host's other work moved the capacity" in out
