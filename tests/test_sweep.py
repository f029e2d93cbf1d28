"""Sweeps: points, per-point workloads, up-front checks, allocation applied and restored per point."""

from __future__ import annotations

import copy
import json

import pytest

from experiments import sweep as sw
from experiments import sweep_report
from faasprof import rundir
from faasprof.errors import ConfigError, NotReadyError
from platforms.openwhisk.connection import Connection
from workload.spec import workload_from_dict
from monitoring import allocation as al
from tests.test_allocation_resctrl import KernelEmulation, copy_tree

BASE = {
    "test_name": "sw",
    "test_duration_in_seconds": 10,
    "random_seed": 5,
    "instances": {
        "p": {"application": "json_dumps", "distribution": "Poisson", "rate": 10},
        "b": {"application": "markdown", "distribution": "Burst", "burst_gap_s": 2, "burst_gap_distribution": "shifted_exponential", "burst_gap_mean_s": 1},
    },
    "sweep": {"parameters": {"memory_mb": [128, 256], "rate_scale": [0.5, 2]}, "repeat": 2, "cooldown_s": 0},
}


def workload(**changes):
    data = copy.deepcopy(BASE)
    data["sweep"].update(changes)
    return workload_from_dict(data)


def test_points_are_the_product_times_repeats_in_a_seeded_order():
    points = sw.expand_points(workload())
    assert len(points) == 2 * 2 * 2
    assert sorted((p.index, p.repeat) for p in points) == [(i, r) for i in range(4) for r in range(2)]
    again = sw.expand_points(workload())
    assert [p.label for p in points] == [p.label for p in again]
    sequential = sw.expand_points(workload(order="sequential"))
    assert [(p.index, p.repeat) for p in sequential] == [(i, r) for i in range(4) for r in range(2)]
    assert [p.label for p in points] != [p.label for p in sequential]


def test_point_workload_carries_the_values():
    point = sw.SweepPoint(order=3, index=1, repeat=1, values={"memory_mb": 256, "rate_scale": 2, "pause_grace_ms": 10000})
    data = sw.apply_point(BASE, point)
    assert "sweep" not in data
    assert data["test_name"] == "sw-p003-memory_mb=256_rate_scale=2_pause_grace_ms=10000_r1"
    assert data["random_seed"] == 6
    assert data["instances"]["p"] == {"application": "json_dumps-256", "distribution": "Poisson", "rate": 20, "memory_mb": 256}
    assert data["instances"]["b"]["burst_gap_s"] == 1 and data["instances"]["b"]["burst_gap_mean_s"] == 0.5
    assert data["instances"]["b"]["application"] == "markdown-256"
    assert data["platform"]["localwhisk"] == {"pause_grace_ms": 10000}
    # The variant of a variant replaces the suffix instead of stacking it.
    again = sw.apply_point(data, sw.SweepPoint(0, 0, 0, {"memory_mb": 512}))
    assert again["instances"]["p"]["application"] == "json_dumps-512"


def test_rate_applies_only_to_rated_instances_or_the_named_ones():
    data = copy.deepcopy(BASE)
    data["sweep"] = {"parameters": {"rate": [3]}, "instances": ["p"]}
    point = sw.expand_points(workload_from_dict(data))[0]
    out = sw.apply_point(data, point)
    assert out["instances"]["p"]["rate"] == 3 and "rate" not in out["instances"]["b"]
    only_burst = copy.deepcopy(data)
    only_burst["sweep"]["instances"] = ["b"]
    with pytest.raises(ConfigError, match=r"sweep.parameters.rate: no Poisson or Uniform instance to apply it to"):
        sw.check_sweep(workload_from_dict(only_burst))


def test_openwhisk_refuses_localwhisk_only_parameters():
    data = copy.deepcopy(BASE)
    data["sweep"] = {"parameters": {"pause_grace_ms": [50, 10000]}}
    connection = Connection("https://127.0.0.1:9", "a:b")
    with pytest.raises(ConfigError) as caught:
        sw.check_sweep(workload_from_dict(data), connection)
    assert "sweep.parameters.pause_grace_ms: a real OpenWhisk needs a redeploy" in caught.value.problems[0]
    sw.check_sweep(workload_from_dict(data), None)  # fine on localwhisk


def test_invalid_llc_values_are_refused_before_anything_runs(tmp_path):
    root = copy_tree(tmp_path, "xeon-11way")
    data = copy.deepcopy(BASE)
    data["sweep"] = {"parameters": {"llc_ways": [11, 12, "0x5"]}}
    with pytest.raises(ConfigError) as caught:
        sw.check_sweep(workload_from_dict(data), root=str(root))
    problems = caught.value.problems
    assert any("sweep.parameters.llc_ways[1]" in line for line in problems), problems
    assert any("sweep.parameters.llc_ways[2]" in line for line in problems), problems


def test_no_rdt_host_is_not_ready(tmp_path):
    root = copy_tree(tmp_path, "no-rdt")
    data = copy.deepcopy(BASE)
    data["sweep"] = {"parameters": {"llc_ways": [4]}}
    with pytest.raises(NotReadyError):
        sw.check_sweep(workload_from_dict(data), root=str(root))


def test_plan_shows_points_and_wall_time(cli):
    result = cli("plan", "workload_configs/sweep_markdown_memory.json")
    assert result.returncode == 0, result.stderr
    assert "sweep: 12 points x 2 repeat(s) = 24 runs, order random" in result.stdout
    assert "memory_mb: 128, 256, 384, 512" in result.stdout
    assert "estimated wall time: 21 min 07 s" in result.stdout


def test_sweep_without_sweep_block_is_bad_input(cli):
    result = cli("sweep", "workload_configs/paper_listing1.json")
    assert result.returncode == 2
    assert "sweep: the workload has no sweep block" in result.stderr


def test_allocation_applied_per_point_read_back_and_restored(tmp_path):
    """Each point runs inside its own allocation; the manifest holds what resctrl reports."""
    root = copy_tree(tmp_path, "xeon-20way-mba")
    caps = al.discover(root)
    kernel = KernelEmulation(caps.resctrl_path)
    data = copy.deepcopy(BASE)
    data["sweep"] = {"parameters": {"llc_ways": [20, 2], "mba_percent": [35]}, "repeat": 1, "cooldown_s": 0}
    seen = []

    def run_point(point_workload, sweep_dir, local_settings):
        groups = [g.name for g in kernel.groups()]
        seen.append(groups)
        run_dir = rundir.create_run_dir(sweep_dir, point_workload.test_name)
        rundir.write_manifest(run_dir, rundir.new_manifest(point_workload.test_name, point_workload.resolved(), rundir.ClockAnchor()))
        return run_dir

    sweep_dir = sw.run_sweep(
        workload_from_dict(data),
        tmp_path / "out",
        root=str(root),
        analyze=False,
        progress=False,
        run_point=run_point,
        allocation_options={"fs": kernel, "state_dir": tmp_path / "state"},
    )
    assert all(any(name.startswith("faasprof-") for name in groups) for groups in seen)
    assert not any(g.name.startswith("faasprof-") for g in kernel.groups())  # restored
    log = sweep_report.load_sweep(sweep_dir)
    assert log["status"] == "complete"
    applied = {}
    for point in log["points"]:
        manifest = rundir.load_manifest(sweep_dir / point["run_dir"])
        applied[point["values"]["llc_ways"]] = manifest["sweep_point"]["applied"]
    assert applied[2]["llc_ways"] == 2 and applied[20]["llc_ways"] == 20
    assert applied[2]["mba_percent"] == 40  # 35 % rounds up to the next 10 % step on this CPU
    assert set(applied[2]["allocation"]["llc_masks"].values()) == {"0x3"}


def test_failed_point_is_recorded_and_the_sweep_goes_on(tmp_path):
    data = copy.deepcopy(BASE)
    data["sweep"] = {"parameters": {"rate_scale": [1, 2]}, "order": "sequential", "cooldown_s": 0}
    calls = []

    def run_point(point_workload, sweep_dir, local_settings):
        calls.append(point_workload.test_name)
        if len(calls) == 1:
            raise ConfigError("platform refused the action")
        run_dir = rundir.create_run_dir(sweep_dir, point_workload.test_name)
        rundir.write_manifest(run_dir, rundir.new_manifest(point_workload.test_name, {}, rundir.ClockAnchor()))
        return run_dir

    sweep_dir = sw.run_sweep(workload_from_dict(data), tmp_path, analyze=False, progress=False, run_point=run_point)
    log = json.loads((sweep_dir / "sweep.json").read_text())
    assert [p["status"] for p in log["points"]] == ["failed", "done"]
    assert log["points"][0]["error"] == "platform refused the action"
    assert log["status"] == "incomplete"


def test_memory_and_rate_sweep_on_localwhisk(tmp_path, isolated_home):
    """A real sweep on the embedded platform: 2 memory limits x 2 rates, analysed and compared."""
    data = {
        "test_name": "live",
        "test_duration_in_seconds": 3,
        "random_seed": 3,
        "instances": {"s": {"application": "spin", "distribution": "Uniform", "rate": 5, "params": {"service_ms": 5}}},
        "sweep": {"parameters": {"memory_mb": [128, 256], "rate": [4, 8]}, "cooldown_s": 0},
    }
    config = tmp_path / "sweep.json"
    config.write_text(json.dumps(data))
    from tests.conftest import run_cli

    result = run_cli("sweep", config, "--out", tmp_path / "out", "--quiet", timeout=240)
    assert result.returncode == 0, result.stderr
    sweep_dir = tmp_path / "out" / result.stdout.strip().splitlines()[-1].rsplit("/", 1)[-1]
    log = sweep_report.load_sweep(sweep_dir)
    assert log["status"] == "complete" and len(log["points"]) == 4
    frame = __import__("pandas").read_parquet(sweep_dir / "sweep.parquet")
    assert sorted(frame["sweep_memory_mb"].unique().tolist()) == [128, 256]
    # The memory limit the platform actually applied (from the records) matches the point's.
    assert (frame["memory_mb"] == frame["sweep_memory_mb"]).all()
    rates = frame.groupby("sweep_rate")["achieved_rps"].mean()
    assert rates[8] > rates[4]
    summary = json.loads((sweep_dir / "sweep_summary.json").read_text())
    assert summary["capacity"] and all(entry["capacity_rps"] == 8 for entry in summary["capacity"])
    assert (sweep_dir / "plots" / "client_latency_ms_p50_vs_memory_mb.png").exists()
    assert "<h1>Sweep" in (sweep_dir / "report.html").read_text()
