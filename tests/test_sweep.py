"""Sweeps: points, per-point workloads, up-front checks, allocation applied and restored per point."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pandas as pd
import pytest
from run_harness import write_workload
from test_invoker_fakeserver import AUTH, FakeOpenWhisk
from test_units import _check

from faasprof import rundir
from faasprof.analyzer import markup
from faasprof.analyzer.analysis import load_summary
from faasprof.analyzer.frames import parquet_description
from faasprof.errors import ConfigError, NotReadyError
from faasprof.experiments import sweep as sw
from faasprof.experiments import sweep_report
from faasprof.monitoring import allocation as al
from faasprof.platforms.openwhisk.connection import Connection
from faasprof.workload.spec import workload_from_dict
from tests.helpers import run_cli
from tests.test_allocation_resctrl import KernelEmulation, copy_tree

BASE = {
    "test_name": "sw",
    "test_duration_in_seconds": 10,
    "random_seed": 5,
    "instances": {
        "p": {"application": "json_dumps", "distribution": "Poisson", "rate": 10},
        "b": {
            "application": "markdown",
            "distribution": "Burst",
            "burst_gap_s": 2,
            "burst_gap_distribution": "shifted_exponential",
            "burst_gap_mean_s": 1,
        },
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
    point = sw.SweepPoint(
        order=3, index=1, repeat=1, values={"memory_mb": 256, "rate_scale": 2, "pause_grace_ms": 10000}
    )
    data = sw.apply_point(BASE, point)
    assert "sweep" not in data
    assert data["test_name"] == "sw-p003-memory_mb=256_rate_scale=2_pause_grace_ms=10000_r1"
    assert data["random_seed"] == 6
    assert data["instances"]["p"] == {
        "application": "json_dumps-256",
        "distribution": "Poisson",
        "rate": 20,
        "memory_mb": 256,
    }
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


def test_rate_scale_scales_every_distribution_and_refuses_one_the_table_lacks():
    data = copy.deepcopy(BASE)
    data["instances"]["t"] = {
        "application": "json_dumps",
        "trace_file": "tests/data/traces/azure_small.csv",
    }  # a Trace by its key alone
    data["instances"]["l"] = {
        "application": "json_dumps",
        "distribution": "Poisson",
        "rate": 10,
        "interarrivals_list": [1, 2],
    }  # a Trace too
    point = sw.SweepPoint(0, 0, 0, {"rate_scale": 2})
    out = sw.apply_point(data, point)
    assert out["instances"]["p"]["rate"] == 20
    assert (out["instances"]["b"]["burst_gap_s"], out["instances"]["b"]["burst_gap_mean_s"]) == (1, 0.5)
    assert out["instances"]["t"]["trace_scale"] == 2
    assert out["instances"]["l"]["interarrivals_list"] == [0.5, 1] and out["instances"]["l"]["rate"] == 10
    # A distribution no table entry scales is an error naming the instance, never a point left unscaled.
    data["instances"]["x"] = {"application": "json_dumps", "distribution": "Every", "every_s": 2}
    with pytest.raises(ConfigError) as caught:
        sw.apply_point(data, point, origin="sw.json")
    assert (
        str(caught.value)
        == "sw.json: instances.x.distribution: 'Every' is no distribution faasprof knows; use one of Poisson, Uniform, Burst, Trace"
    )


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


@pytest.mark.slow
def test_plan_shows_points_and_wall_time(cli):
    result = cli("plan", "faasprof/workload_configs/sweep_markdown_memory.json")
    assert result.returncode == 0, result.stderr
    assert "sweep: 12 points x 2 repeat(s) = 24 runs, order random" in result.stdout
    assert "memory_mb: 128, 256, 384, 512" in result.stdout
    assert "estimated wall time: 21 min 07 s" in result.stdout


@pytest.mark.slow
def test_sweep_without_sweep_block_is_bad_input(cli):
    result = cli("sweep", "faasprof/workload_configs/paper_listing1.json")
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
        rundir.write_manifest(
            run_dir, rundir.new_manifest(point_workload.test_name, point_workload.resolved(), rundir.ClockAnchor())
        )
        return run_dir

    sweep_dir = sw.run_sweep(
        workload_from_dict(data),
        tmp_path / "out",
        root=str(root),
        analyze=False,
        run_point=run_point,
        allocation_options={"fs": kernel, "state_dir": tmp_path / "state"},
    )
    assert all(any(name.startswith("faasprof-") for name in groups) for groups in seen)
    assert not any(g.name.startswith("faasprof-") for g in kernel.groups())  # restored
    log = sweep_report.load_sweep(sweep_dir)
    assert log["status"] == "complete"
    applied = {}
    for point in log["points"]:
        manifest = rundir.read_manifest(sweep_dir / point["run_dir"]).to_json()
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

    sweep_dir = sw.run_sweep(workload_from_dict(data), tmp_path, analyze=False, run_point=run_point)
    log = json.loads((sweep_dir / "sweep.json").read_text())
    assert [p["status"] for p in log["points"]] == ["failed", "done"]
    assert log["points"][0]["error"] == "platform refused the action"
    assert log["status"] == "incomplete"


def rate_points(*points):
    """A sweep's compare frame over `rate` alone: (rate, modes, median completion latency ms) per point."""
    return pd.DataFrame(
        [
            {
                "instance": "i0",
                "phase": 0,
                "function": "json_dumps",
                "sweep_rate": rate,
                "mode": mode,
                "completion_latency_ms_p50": latency,
            }
            for rate, mode, latency in points
        ]
    )


def test_sweep_capacity_is_the_highest_rate_without_a_standing_queue():
    # Issue 27's quick start: balanced by throughput and trend at 135/s, but its median latency is
    # 19x the lowest rate's: the capacity is 45/s, not the highest rate tried.
    (entry,) = sweep_report.capacities(
        rate_points((15, "under-invoked", 13.0), (45, "balanced", 13.5), (135, "balanced", 252.0)), ["rate"]
    )
    assert entry["capacity_rps"] == 45 and entry["capacity_is_lower_bound"] is False
    assert entry["reference"] == {
        "completion_latency_ms_p50": 13.0,
        "rate_rps": 15.0,
        "source": "the sweep's lowest rate",
    }
    assert [e["queueing"] for e in entry["evidence"]] == [False, False, True]
    assert entry["evidence"][2]["queueing_evidence"].startswith(
        "median completion latency 252 ms is 19x the reference 13 ms"
    )


def test_sweep_capacity_takes_a_cold_start_ramp_for_no_queue_as_the_analyzer_does():
    # 45/s: median 300 ms (23x the lowest rate's) from the cold starts of its first seconds, its last
    # third back at 14 ms: a ramp that drained, not a standing queue (analyzer.stats.standing_queue,
    # which run and capacity apply). Before, the sweep called it over-invoked and its capacity 15/s.
    frame = rate_points((15, "under-invoked", 13.0), (45, "balanced", 300.0), (135, "over-invoked", 900.0))
    frame["trend_completion_last_third_median_ms"] = [13.0, 14.0, 950.0]
    (entry,) = sweep_report.capacities(frame, ["rate"])
    assert entry["capacity_rps"] == 45 and entry["capacity_is_lower_bound"] is False
    assert [e["queueing"] for e in entry["evidence"]] == [False, False, True]
    assert "a ramp that drained" in entry["evidence"][1]["queueing_evidence"]
    # A queue that still stands in the last third is one.
    frame["trend_completion_last_third_median_ms"] = [13.0, 290.0, 950.0]
    (entry,) = sweep_report.capacities(frame, ["rate"])
    assert entry["capacity_rps"] == 15 and entry["evidence"][1]["queueing"] is True


def test_sweep_capacity_where_every_rate_kept_up_is_a_lower_bound():
    (entry,) = sweep_report.capacities(
        rate_points((15, "under-invoked", 13.0), (45, "balanced", 13.5), (135, "balanced", 14.0)), ["rate"]
    )
    assert entry["capacity_rps"] == 135 and entry["capacity_is_lower_bound"] is True
    (entry,) = sweep_report.capacities(
        rate_points((15, "balanced", 13.0), (45, "over-invoked", 900.0), (135, "balanced", 14.0)), ["rate"]
    )
    assert (
        entry["capacity_rps"] == 15 and entry["capacity_is_lower_bound"] is False
    )  # above the first failure nothing counts


@pytest.mark.slow
def test_sweep_report_leads_with_completion_latency_in_the_run_reports_look(tmp_path):
    """A rate sweep of non-blocking calls whose 202 comes sooner as the rate rises while the queue
    behind it grows: the report plots and tabulates completion latency, never the time to the 202."""
    from test_analyzer_synthetic import write_synthetic_run

    sweep_dir = tmp_path / "sweep"
    points = []
    for order, (rate, accept_ms) in enumerate(((50.0, 6.0), (120.0, 2.0), (260.0, 0.3))):
        instances = {"i0": {"application": "fn", "distribution": "Poisson", "rate": rate, "blocking": False}}
        run_dir, _ = write_synthetic_run(
            sweep_dir,
            test_name=f"r{rate:g}",
            duration_s=8.0,
            instances=instances,
            blocking=False,
            accept_ms=accept_ms,
            cold_wait_ms=1.0,
            init_ms=0.0,
            pause_grace_ms=10_000.0,
            seed=order + 1,
        )
        rundir.update_manifest(
            run_dir, sweep_point={"values": {"rate": rate}, "repeat": 0, "order": order, "applied": {"rate": rate}}
        )
        points.append(
            {"order": order, "repeat": 0, "values": {"rate": rate}, "status": "done", "run_dir": run_dir.name}
        )
    rundir.write_json_atomic(
        sweep_dir / sweep_report.SWEEP_FILE,
        {"format_version": 1, "kind": "sweep", "status": "complete", "parameters": ["rate"], "points": points},
    )
    report = sweep_report.write_sweep_report(sweep_dir)
    summary = json.loads((sweep_dir / "sweep_summary.json").read_text())
    assert summary["plots"][0] == "plots/completion_latency_ms_p50_vs_rate.png"
    assert not any("client_latency" in name for name in summary["plots"])
    p50 = [setting["completion_latency_ms_p50"]["mean"] for setting in summary["settings"]]
    p99 = [setting["completion_latency_ms_p99"]["mean"] for setting in summary["settings"]]
    assert p50[-1] > 10 * p50[0] and p99[-1] > 3 * p99[0]  # completion rises with the rate,
    client = [
        load_summary(sweep_dir / p["run_dir"])["instances"][0]["phases"][0]["client_latency_ms_p50"] for p in points
    ]
    assert client == sorted(client, reverse=True)  # while the time to the 202 falls
    assert all("client_latency_ms_p50" not in setting for setting in summary["settings"])
    page = report.read_text()
    assert markup.STYLE in page and "<div class='scroll'><table>" in page  # the run report's look
    assert page.index("completion latency p50") < page.index("<h2>Plots</h2>")
    assert not re.search(r"\d\.\d+e[+-]\d", page) and " ms" in page


@pytest.mark.slow
def test_rate_sweep_on_localwhisk(tmp_path, isolated_home):
    """A real sweep on the embedded platform: 2 rates, analysed, compared and given a capacity (the
    memory a point applies is checked by test_run_level_compare's sweep of the statistics guide)."""
    data = {
        "test_name": "live",
        "test_duration_in_seconds": 3,
        "random_seed": 3,
        "instances": {"s": {"application": "spin", "distribution": "Uniform", "rate": 5, "params": {"service_ms": 5}}},
        "sweep": {"parameters": {"rate": [4, 8]}, "cooldown_s": 0},
    }
    config = tmp_path / "sweep.json"
    config.write_text(json.dumps(data))
    from tests.helpers import run_cli

    result = run_cli("sweep", config, "--out", tmp_path / "out", "--quiet", timeout=240)
    assert result.returncode == 0, result.stderr
    sweep_dir = tmp_path / "out" / result.stdout.strip().splitlines()[-1].rsplit("/", 1)[-1]
    log = sweep_report.load_sweep(sweep_dir)
    assert log["status"] == "complete" and len(log["points"]) == 2
    frame = __import__("pandas").read_parquet(sweep_dir / "sweep.parquet")
    rates = frame.groupby("sweep_rate")["achieved_rps"].mean()
    assert rates[8] > rates[4]
    summary = json.loads((sweep_dir / "sweep_summary.json").read_text())
    assert summary["capacity"]
    for entry in summary["capacity"]:
        # 8/s of 5 ms calls keeps up on a quiet host; on one at load 20 it may not (seen once): the
        # capacity is then 4/s, and in either case it says what its points' evidence says.
        kept_up = {point["rate"]: point["kept_up"] for point in entry["evidence"]}
        assert kept_up[4.0], entry
        assert entry["capacity_rps"] == (8 if kept_up[8.0] else 4)
        assert entry["capacity_is_lower_bound"] == kept_up[8.0]
    assert (sweep_dir / "plots" / "completion_latency_ms_p50_vs_rate.png").exists()
    assert "<h1>Sweep" in (sweep_dir / "report.html").read_text()


@pytest.mark.slow
def test_sweep_follows_each_phase_apart(tmp_path):
    """A rate sweep of a workload whose two phases call one function at 1x and 8x the rate: the
    summary has a setting per phase and rate, each with its phase's mode, and a capacity per phase."""
    from test_analyzer_synthetic import write_synthetic_run

    sweep_dir = tmp_path / "sweep"
    points = []
    for order, rate in enumerate((10.0, 40.0)):
        instances = {
            "slow": {"application": "fn", "distribution": "Uniform", "rate": rate, "activity_window": [0, 5]},
            "fast": {"application": "fn", "distribution": "Uniform", "rate": 8 * rate, "activity_window": [5, 10]},
        }
        run_dir, _ = write_synthetic_run(
            sweep_dir,
            test_name=f"r{rate:g}",
            duration_s=10.0,
            instances=instances,
            service_ms=5.0,
            pause_grace_ms=10_000.0,
            seed=order + 1,
        )
        rundir.update_manifest(
            run_dir, sweep_point={"values": {"rate": rate}, "repeat": 0, "order": order, "applied": {"rate": rate}}
        )
        points.append(
            {"order": order, "repeat": 0, "values": {"rate": rate}, "status": "done", "run_dir": run_dir.name}
        )
    rundir.write_json_atomic(
        sweep_dir / sweep_report.SWEEP_FILE,
        {"format_version": 1, "kind": "sweep", "status": "complete", "parameters": ["rate"], "points": points},
    )
    sweep_report.write_sweep_report(sweep_dir)
    summary = json.loads((sweep_dir / "sweep_summary.json").read_text())
    settings = {(s["instance"], s["phase"], s["sweep_rate"]): s for s in summary["settings"]}
    assert sorted(settings) == [("fast", 1, 10.0), ("fast", 1, 40.0), ("slow", 0, 10.0), ("slow", 0, 40.0)]
    assert all(len(s["modes"]) == 1 for s in settings.values())  # one phase's mode, never a pool of both
    assert settings[("fast", 1, 40.0)]["modes"] == ["over-invoked"] and settings[("slow", 0, 40.0)]["modes"] == [
        "balanced"
    ]
    # 320/s against one 5 ms container: the fast phase's achieved rate is its own, not the slow phase's pooled in.
    assert settings[("fast", 1, 40.0)]["achieved_rps"]["mean"] < 250
    capacity = {(c["instance"], c["phase"]): c["capacity_rps"] for c in summary["capacity"]}
    assert capacity == {("slow", 0): 40.0, ("fast", 1): 10.0}
    # sweep.parquet: a row per run × instance × phase, every column with its unit (sweep_rate: 1/s).
    written = pd.read_parquet(sweep_dir / "sweep.parquet")
    assert len(written) == 4
    units = parquet_description(sweep_dir / "sweep.parquet")["units"]
    assert units["sweep_rate"] == units["parameter_value"] == "1/s"  # the setting's unit, from its name (rate)
    _check(
        "sweep.parquet", {c: d for c, d in written.dtypes.items() if c not in ("sweep_rate", "parameter_value")}, units
    )


@pytest.mark.slow
def test_a_sweep_against_a_platform_at_an_api_host_saves_and_analyses_its_records(tmp_path, isolated_home):
    """A sweep against OpenWhisk (here the fake one) analysed every point without a single record:
    its runs never fetched them. Each point's run directory now has them, and its analysis joins them."""
    config = write_workload(
        tmp_path,
        name="remote",
        duration=1,
        instances={"a": {"application": "ok", "distribution": "Uniform", "rate": 10}},
        sweep={"parameters": {"rate": [5, 10]}, "cooldown_s": 0},
    )
    with FakeOpenWhisk() as server:
        platform = ["--apihost", server.apihost, "--auth", AUTH]
        result = run_cli("sweep", config, "--out", tmp_path / "out", "--quiet", *platform, timeout=120)
    assert result.returncode == 0, result.stderr
    sweep_dir = Path(result.stdout.strip().splitlines()[-1])
    runs = sorted(p for p in sweep_dir.iterdir() if p.is_dir() and (p / "manifest.json").exists())
    assert len(runs) == 2
    for run_dir in runs:
        summary = json.loads((run_dir / "analysis" / "summary.json").read_text())
        planned = summary["instances"][0]["planned"]
        assert planned in (5, 10)
        assert summary["records"]["found"] == planned and summary["records"]["missing"] == 0, summary["records"]
