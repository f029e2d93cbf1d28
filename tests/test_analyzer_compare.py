"""Choosing the parameter of a comparison and the environment warnings, from manifests alone."""

from __future__ import annotations

import pandas as pd
import pyarrow.parquet as pq
import pytest
from test_units import _check

from faasprof import rundir
from faasprof.analyzer import compare_latencies, frame_loader
from faasprof.analyzer import stats as stats_mod
from faasprof.analyzer.analysis import analyze_run
from faasprof.analyzer.compare import (
    column_units,
    compare_runs,
    default_out_dir,
    differing_keys,
    environment_warnings,
    percentile_verdicts,
    pick_parameter,
    summary_table,
    unmatched_phase_warnings,
    unrelated_workload_warnings,
    verdict_lines,
)
from faasprof.analyzer.compare_sides import Side
from faasprof.analyzer.frames import parquet_description


def _manifest(memory=256, rate=10.0, seed=1, port=4000, applied=None, kernel="6.1.0", grace=50):
    manifest = {
        "test_name": f"t{seed}",
        "workload": {
            "seed": seed,
            "duration_s": 10.0,
            "instances": {
                "i0": {"function": f"markdown-{memory}", "rate_per_s": rate, "memory_mb": memory, "window_s": [0, 10]}
            },
            "as_given": {
                "test_name": f"t{seed}",
                "instances": {"i0": {"application": f"markdown-{memory}", "rate": rate}},
            },
        },
        "platform": {
            "kind": "localwhisk",
            "apihost": f"http://127.0.0.1:{port}",
            "localwhisk": {"pause_grace_ms": grace, "data_dir": f"/tmp/lw{port}"},
        },
        "host": {"hostname": "box", "kernel": kernel, "cpu_model": "Xeon"},
        "faasprof": {"version": "0.1.0"},
    }
    if applied is not None:
        manifest["sweep_point"] = {"values": dict(applied), "applied": dict(applied)}
    return rundir.Manifest.from_json({"format_version": rundir.FORMAT_VERSION, **manifest})


def test_volatile_settings_are_not_parameters():
    runs = [_manifest(seed=1, port=4000), _manifest(seed=2, port=5000)]
    assert differing_keys(runs) == []
    assert pick_parameter(runs, differing_keys(runs)) is None


def test_memory_variants_pick_the_numeric_memory_limit():
    runs = [_manifest(memory=256), _manifest(memory=512)]
    differing = differing_keys(runs)
    assert set(differing) == {"workload.instances.i0.function", "workload.instances.i0.memory_mb"}
    assert pick_parameter(runs, differing) == "workload.instances.i0.memory_mb"


def test_a_sweep_point_names_the_parameter():
    runs = [_manifest(rate=r, applied={"rate": r}) for r in (10.0, 20.0)]
    assert pick_parameter(runs, differing_keys(runs)) == "sweep_point.applied.rate"


def test_environment_warnings_name_hosts_and_platform_settings_but_not_the_parameter():
    runs = [_manifest(kernel="6.1.0", grace=50), _manifest(kernel="6.1.1", grace=10000)]
    warnings = environment_warnings(runs, ["a", "b"], parameter=None)
    assert any(w.startswith("runs differ in host.kernel (a=6.1.0, b=6.1.1)") for w in warnings)
    assert any("platform setting platform.localwhisk.pause_grace_ms" in w for w in warnings)
    assert environment_warnings(runs[:1] * 2, ["a", "b"], None) == []
    warnings = environment_warnings(
        [_manifest(grace=50), _manifest(grace=10000)], ["a", "b"], parameter="platform.localwhisk.pause_grace_ms"
    )
    assert warnings == []


def test_labelling_unrelated_workloads_warns():
    same = [_manifest(memory=256), _manifest(memory=512)]
    assert unrelated_workload_warnings(same, ["a", "b"], "workload.instances.i0.memory_mb", differing_keys(same)) == []
    other = _manifest(rate=20.0)
    other.workload["instances"]["i0"]["function"] = "json_dumps"
    runs = [_manifest(), other]
    warnings = unrelated_workload_warnings(runs, ["a", "b"], "workload.instances.i0.rate_per_s", differing_keys(runs))
    assert any("call different functions" in w and "json_dumps" in w for w in warnings)


@pytest.mark.slow
def test_significance_verdicts_against_the_first_run(tmp_path):
    from test_analyzer_synthetic import write_synthetic_run

    one = {"i0": {"application": "fn", "distribution": "Uniform", "rate": 30.0}}
    dirs = [
        write_synthetic_run(tmp_path / "a", test_name="a", duration_s=4.0, instances=one, service_ms=5.0)[0],
        write_synthetic_run(tmp_path / "b", test_name="b", duration_s=4.0, instances=one, service_ms=5.0)[0],
        write_synthetic_run(tmp_path / "c", test_name="c", duration_s=4.0, instances=one, service_ms=15.0)[0],
    ]
    for d in dirs:
        analyze_run(d, plots=False)
    result = compare_runs(dirs, out_dir=tmp_path / "cmp")
    by_run = {e["run"]: e for e in result["significance"]}
    slower = by_run[dirs[2].name]
    assert slower["median_ratio"] > 2 and slower["prob_slower"] > 0.8
    verdicts = {p["percentile"]: p for p in slower["percentiles"]}
    assert verdicts[50]["verdict"] == "higher in this run" and verdicts[50]["ratio_ci"][0] > 1
    same = {p["percentile"]: p["verdict"] for p in by_run[dirs[1].name]["percentiles"]}
    assert same[50] == same[90] == "overlapping"
    assert "Is the difference significant?" in (tmp_path / "cmp" / "report.html").read_text()
    # The verdicts' percentiles come from the summaries: those of the latencies themselves.
    base = compare_latencies.read_latencies(dirs[0])[("i0", 0)]
    mine = compare_latencies.read_latencies(dirs[2])[("i0", 0)]
    assert slower["percentiles"] == stats_mod.clean(
        percentile_verdicts(stats_mod.percentile_block(base, "v"), stats_mod.percentile_block(mine, "v"))
    )

    # Each frame cut to the columns compare reads: the same comparison, so it reads no other.
    for d in dirs:
        path = frame_loader.frame_path(d)
        keep = [*compare_latencies.READ_COLUMNS, *compare_latencies.FILTER_COLUMNS]
        pq.write_table(pq.read_table(path, columns=keep), path)
    again = compare_runs(dirs)
    assert again["significance"] == result["significance"] and again["rows"] == result["rows"]
    # Repeats (no per-invocation tests) and no plots: summaries alone, no frame opened.
    for d in dirs:
        frame_loader.frame_path(d).unlink()
    sides = [Side("ab", dirs[:2]), Side("c", dirs[2:])]
    repeats = compare_runs([], sides=sides)
    assert [{k: v for k, v in row.items() if k != "side"} for row in repeats["rows"]] == [
        {k: v for k, v in row.items() if k != "side"} for row in result["rows"]
    ]
    assert [row["side"] for row in repeats["rows"]] == ["ab", "ab", "c"] and repeats["significance"] == []


def faster_202s_slower_completion(tmp_path):
    """Two non-blocking runs: the second is answered sooner (202 in 0.8 ms, not 6.5 ms) and runs its
    function sooner at the median, but queues at a higher, random rate, so its completion latency's
    tail is several times the first's."""
    from test_analyzer_synthetic import write_synthetic_run

    common = dict(duration_s=20.0, blocking=False, cold_wait_ms=1.0, init_ms=0.0, pause_grace_ms=10_000.0)
    steady = {"i0": {"application": "fn", "distribution": "Uniform", "rate": 100.0, "blocking": False}}
    bursty = {"i0": {"application": "fn", "distribution": "Poisson", "rate": 130.0, "blocking": False}}
    first = write_synthetic_run(tmp_path / "runs", test_name="slow202", instances=steady, accept_ms=6.0, **common)[0]
    second = write_synthetic_run(tmp_path / "runs", test_name="fast202", instances=bursty, accept_ms=0.3, **common)[0]
    return [first, second]


@pytest.mark.slow
def test_completion_latency_is_the_headline_with_a_verdict_per_percentile(tmp_path):
    runs = faster_202s_slower_completion(tmp_path)
    result = compare_runs(runs)
    frame = result["frame"]
    assert frame["calls"].tolist() == ["non-blocking", "non-blocking"]
    # The time to a 202 (6.5 then 0.8 ms) is no latency of the function: not in the frame.
    assert frame["client_latency_ms_p50"].isna().all() and frame["client_latency_ms_p99"].isna().all()
    assert frame["completion_latency_ms_p99"].iloc[1] > 3 * frame["completion_latency_ms_p99"].iloc[0]
    (entry,) = result["significance"]
    verdicts = {p["percentile"]: p for p in entry["percentiles"]}
    assert verdicts[50]["verdict"] == "lower in this run" and verdicts[50]["ratio"] < 1
    assert verdicts[99]["verdict"] == "higher in this run" and verdicts[99]["ratio_ci"][0] > 3
    assert verdicts[99]["run_ci_ms"][0] > verdicts[99]["baseline_ci_ms"][1]
    assert "p50 lower in this run" in entry["verdict"] and "p99 higher in this run" in entry["verdict"]
    table = summary_table(frame)
    assert list(table.columns[:9]) == [
        "label",
        "instance",
        "phase",
        "function",
        "calls",
        "mode",
        "offered",
        "achieved",
        "completion p50",
    ]
    assert not any("client" in column for column in table.columns)
    lines = verdict_lines(result)
    assert (
        lines[0].startswith("per-invocation view (describes these runs only")
        and "completion latency (planned send → function end" in lines[0]
    )
    p99 = next(line for line in lines if line.strip().startswith("p99 "))
    assert p99.endswith("higher in this run") and " ms → " in p99 and "e+" not in p99


def test_platform_bookkeeping_is_no_difference():
    # What the embedded platform cleaned up when it started differs from run to run: no warning.
    runs = [_manifest(), _manifest()]
    runs[1].platform["localwhisk"].update(
        stale_cgroups_removed=["/sys/fs/cgroup/faasprof/old"],
        stale_containers_removed=["abc"],
        orphan_sandboxes_killed=[4242],
    )
    assert differing_keys(runs) == []
    assert environment_warnings(runs, ["a", "b"], parameter=None) == []


def test_default_output_goes_beside_the_first_run(tmp_path):
    out = default_out_dir([tmp_path / "runs" / "a-20260101T000000", tmp_path / "other" / "b"])
    assert out.parent == (tmp_path / "runs").resolve() and out.name.startswith("compare-")


def quick_start_like(tmp_path, service_ms=(5.0, 5.0)):
    """Two runs of the quick start's shape: one function called by three instances, one per phase,
    under-invoked (5/s: paused between calls), balanced (60/s) and over-invoked (400/s, twice what
    one 5 ms container serves)."""
    from test_analyzer_synthetic import write_synthetic_run

    phases = {
        "under": {"application": "fn", "distribution": "Uniform", "rate": 5.0, "activity_window": [0, 6]},
        "balanced": {"application": "fn", "distribution": "Uniform", "rate": 60.0, "activity_window": [6, 12]},
        "over": {"application": "fn", "distribution": "Uniform", "rate": 400.0, "activity_window": [12, 18]},
    }
    return [
        write_synthetic_run(
            tmp_path / "runs", test_name=f"quick{k}", duration_s=18.0, instances=phases, service_ms=ms, seed=k + 1
        )[0]
        for k, ms in enumerate(service_ms)
    ]


@pytest.mark.slow
def test_compare_of_three_phase_runs_has_a_row_and_a_verdict_per_phase(tmp_path):
    runs = quick_start_like(tmp_path, service_ms=(5.0, 6.0))
    result = compare_runs(runs, out_dir=tmp_path / "cmp")
    frame = result["frame"]
    written = pd.read_parquet(tmp_path / "cmp" / "compare.parquet")
    assert len(written) == 6
    _check(
        "compare.parquet", written.dtypes.to_dict(), parquet_description(tmp_path / "cmp" / "compare.parquet")["units"]
    )
    # One row per run × instance × phase, each with its phase's own mode: never "over-invoked,under-invoked,...".
    assert len(frame) == 6
    assert frame[["instance", "phase", "mode"]].iloc[:3].values.tolist() == [
        ["under", 0, "under-invoked"],
        ["balanced", 1, "balanced"],
        ["over", 2, "over-invoked"],
    ]
    assert not frame["mode"].astype(str).str.contains(",").any()
    # Each row's rates are its phase's: 5/s offered in the first phase, 400/s in the last (the pool of the three was ~154/s).
    offered = frame.set_index(["run", "instance"])["offered_rps"]
    assert offered[(runs[0].name, "under")] < 6 and offered[(runs[0].name, "over")] > 350
    over = frame[(frame["run"] == runs[0].name) & (frame["instance"] == "over")].iloc[0]
    assert over["achieved_rps"] < over["offered_rps"]  # one container cannot keep up: achieved is the phase's own
    # A verdict per instance × phase against the baseline's same phase, its modes beside it.
    verdicts = {(e["instance"], e["phase"]): e for e in result["significance"]}
    assert sorted(verdicts) == [("balanced", 1), ("over", 2), ("under", 0)]
    assert verdicts[("over", 2)]["mode_baseline"] == verdicts[("over", 2)]["mode"] == "over-invoked"
    assert verdicts[("balanced", 1)]["n_baseline"] < 400  # the balanced phase's steady calls alone, not the run's
    table = summary_table(frame)
    assert len(table) == 6 and table["phase"].tolist() == ["0", "1", "2", "0", "1", "2"]
    lines = verdict_lines(result)
    assert any("over phase 2 (fn, over-invoked)" in line and "baseline over-invoked" in line for line in lines)


def test_the_parameter_and_monitor_columns_carry_their_units():
    from_rows = column_units(
        [{"perf_ipc": 1.2, "rdt_mem_bw_mbps": 3.0, "monitor_window": "the run's steady phases together"}],
        "workload.instances.i0.memory_mb",
    )
    assert from_rows == {"parameter_value": "MB", "perf_ipc": "instructions/cycle"}  # rdt_mem_bw_mbps says its own
    assert column_units([], "workload.instances.i0.rate") == {"parameter_value": "1/s"}


def test_phases_without_their_match_in_the_baseline_are_named():
    modes = {
        "a": {("i0", 0): ("fn", "balanced"), ("i0", 1): ("fn", "over-invoked")},
        "b": {("i0", 0): ("fn", "balanced")},
    }
    (warning,) = unmatched_phase_warnings(["a", "b"], modes)
    assert warning == "b and the baseline a do not have the same instances × phases; no verdict for i0 phase 1"
    assert unmatched_phase_warnings(["a", "a2"], {"a": modes["a"], "a2": dict(modes["a"])}) == []
