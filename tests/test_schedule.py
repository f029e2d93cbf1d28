"""Arrival processes and merged schedules: exact, independent, reproducible, inside their windows."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from scipy import stats

from faasprof.workload import arrivals
from faasprof.workload.schedule import build_schedule, instance_rng, read_schedule_csv, stream_key
from faasprof.workload.spec import workload_from_dict
from tests.helpers import DATA_DIR


def make(instances: dict, duration_s: float = 100, seed: int | None = 7):
    return workload_from_dict(
        {"test_name": "s", "test_duration_in_seconds": duration_s, "random_seed": seed, "instances": instances},
        check_catalogue=False,
    )


def times_of(workload, name):
    schedule = build_schedule(workload)
    index = schedule.instance_names.index(name)
    return schedule.intended_ns[schedule.instance_idx == index] / 1e9


def test_poisson_gaps_are_exponential():
    workload = make({"p": {"application": "f", "distribution": "Poisson", "rate": 50}}, duration_s=200)
    times = times_of(workload, "p")
    gaps = np.diff(times)
    result = stats.kstest(gaps, "expon", args=(0, 1 / 50))
    assert result.pvalue > 0.001, result
    # The first arrival is also exponential from the window start, not at the start.
    assert times[0] > 0


def test_poisson_counts_within_confidence_bounds():
    rate, window_s, seeds = 5.0, 10.0, 400
    counts = np.array([arrivals.poisson(instance_rng(seed, "p"), rate, 0.0, window_s).size for seed in range(seeds)])
    mean = rate * window_s
    # Mean within 4 standard errors, dispersion index (variance / mean) near 1 as for Poisson.
    assert abs(counts.mean() - mean) < 4 * np.sqrt(mean / seeds)
    assert 0.8 < counts.var() / mean < 1.2


def test_poisson_at_low_rate_loses_no_events():
    """rate·T = 0.3: FaaSProfiler drew int(0.6) = 0 gaps and never sent anything."""
    seeds = 3000
    nonzero = sum(arrivals.poisson(instance_rng(seed, "rare"), 0.005, 0.0, 60.0).size > 0 for seed in range(seeds))
    expected = 1 - np.exp(-0.3)  # 0.259
    assert abs(nonzero / seeds - expected) < 4 * np.sqrt(expected * (1 - expected) / seeds)


def test_same_rate_instances_are_independent():
    workload = make(
        {
            "a": {"application": "f", "distribution": "Poisson", "rate": 10},
            "b": {"application": "f", "distribution": "Poisson", "rate": 10},
        },
        duration_s=1000,
    )
    a, b = times_of(workload, "a"), times_of(workload, "b")
    bins = np.arange(0, 1001, 1.0)
    counts_a, _ = np.histogram(a, bins)
    counts_b, _ = np.histogram(b, bins)
    r, _ = stats.pearsonr(counts_a, counts_b)
    assert abs(r) < 0.15  # 1000 bins: |r| of independent series is ~N(0, 0.032)
    assert len(np.intersect1d(a, b)) == 0


def test_adding_an_instance_leaves_the_others_unchanged():
    base = {
        "a": {"application": "f", "distribution": "Poisson", "rate": 10},
        "u": {"application": "f", "distribution": "Uniform", "rate": 3},
    }
    more = dict(base, z={"application": "g", "distribution": "Poisson", "rate": 40})
    for name in ("a", "u"):
        assert np.array_equal(times_of(make(base), name), times_of(make(more), name))


def test_a_muted_instance_plans_nothing_and_leaves_the_others_unchanged():
    """``"rate": 0`` is FaaSProfiler's "no invocations": valid, planned empty, the others as without it."""
    base = {"a": {"application": "f", "distribution": "Poisson", "rate": 10}}
    muted = dict(
        base,
        p={"application": "f", "distribution": "Poisson", "rate": 0},
        u={"application": "f", "distribution": "Uniform", "rate": 0},
    )
    workload = make(muted)
    assert [workload.instance(name).planned_estimate for name in ("p", "u")] == [0.0, 0.0]
    counts = build_schedule(workload).counts()
    assert counts["p"] == counts["u"] == 0 and counts["a"] > 0
    assert np.array_equal(times_of(make(base), "a"), times_of(workload, "a"))


def test_stream_key_is_stable():
    # A fixed value: changing the derivation would silently change every recorded schedule.
    assert stream_key("instance1") == stream_key("instance1")
    assert stream_key("instance1") != stream_key("instance2")
    first = arrivals.poisson(instance_rng(110, "instance1"), 20, 5, 20)
    assert round(float(first[0]), 9) == round(float(arrivals.poisson(instance_rng(110, "instance1"), 20, 5, 20)[0]), 9)


@pytest.mark.slow
def test_same_seed_byte_identical_in_separate_processes(cli, tmp_path):
    config = tmp_path / "w.json"
    config.write_text(
        json.dumps(
            {
                "test_name": "repro",
                "test_duration_in_seconds": 30,
                "random_seed": 42,
                "platform": {"actions_deployed": True},
                "instances": {
                    "a": {"application": "f", "distribution": "Poisson", "rate": 30},
                    "b": {"application": "f", "distribution": "Uniform", "rate": 7},
                    "c": {
                        "application": "g",
                        "distribution": "Burst",
                        "burst_size": 3,
                        "burst_gap_s": 2,
                        "burst_gap_distribution": "shifted_exponential",
                        "burst_gap_mean_s": 1,
                    },
                },
            }
        )
    )
    outputs = []
    for hash_seed in ("1", "2"):
        out = tmp_path / f"s{hash_seed}.csv"
        result = cli("plan", config, "--out", out, env={"PYTHONHASHSEED": hash_seed})
        assert result.returncode == 0, result.stderr
        outputs.append(out.read_bytes())
    assert outputs[0] == outputs[1]
    assert outputs[0].startswith(b"seq,instance,function,intended_s\n0,")


@pytest.mark.parametrize(
    "spec",
    [
        {"distribution": "Poisson", "rate": 40},
        {"distribution": "Uniform", "rate": 40},
        {"distribution": "Uniform", "rate": 40, "phase": False},
        {"distribution": "Burst", "burst_size": 5, "burst_gap_s": 0.5},
        {
            "distribution": "Burst",
            "burst_size": 2,
            "burst_gap_s": 0.5,
            "burst_gap_distribution": "shifted_exponential",
            "burst_gap_mean_s": 0.2,
        },
        {"interarrivals_list": [3.0] + [0.25] * 100},
        {"distribution": "Trace", "trace_file": str(DATA_DIR / "traces/azure_small.csv")},
        {"distribution": "Trace", "trace_file": str(DATA_DIR / "traces/timestamps.csv")},
    ],
    ids=["poisson", "uniform", "uniform-nophase", "burst", "burst-shiftexp", "interarrivals", "azure", "timestamps"],
)
def test_window_edges_honoured(spec):
    workload = make({"x": {"application": "f", "activity_window": [5, 15], **spec}}, duration_s=300)
    times = times_of(workload, "x")
    assert times.size > 0
    assert times.min() >= 5.0 and times.max() < 15.0


def test_uniform_is_exactly_periodic_with_a_seeded_phase():
    workload = make({"u": {"application": "f", "distribution": "Uniform", "rate": 100, "activity_window": [10, 15]}})
    times = times_of(workload, "u")
    assert times.size == 500
    assert np.allclose(np.diff(times), 0.01, atol=2e-9)
    assert 10.0 <= times[0] < 10.01
    other_seed = times_of(
        make({"u": {"application": "f", "distribution": "Uniform", "rate": 100, "activity_window": [10, 15]}}, seed=8),
        "u",
    )
    assert times[0] != other_seed[0]
    fixed = times_of(make({"u": {"application": "f", "distribution": "Uniform", "rate": 4, "phase": 0.5}}), "u")
    assert fixed[0] == pytest.approx(0.125)


def test_uniform_below_one_event_per_test_does_not_crash():
    # FaaSProfiler raised IndexError for Uniform at 0.05/s over 10 s.
    times = times_of(make({"u": {"application": "f", "distribution": "Uniform", "rate": 0.05}}, duration_s=10), "u")
    assert times.size in (0, 1)


def test_burst_groups_and_gaps():
    fixed = times_of(
        make({"b": {"application": "f", "distribution": "Burst", "burst_size": 4, "burst_gap_s": 2.5}}, duration_s=20),
        "b",
    )
    assert fixed.size == 8 * 4
    starts = np.unique(fixed)
    assert np.allclose(np.diff(starts), 2.5) and starts[0] == 0.0
    shifted = times_of(
        make(
            {
                "b": {
                    "application": "f",
                    "distribution": "Burst",
                    "burst_gap_s": 1.0,
                    "burst_gap_distribution": "shifted_exponential",
                    "burst_gap_mean_s": 0.5,
                }
            },
            duration_s=3000,
        ),
        "b",
    )
    gaps = np.diff(shifted)
    assert gaps.min() >= 1.0
    assert stats.kstest(gaps - 1.0, "expon", args=(0, 0.5)).pvalue > 0.001


def test_azure_trace_spreads_each_minute_within_the_minute():
    path = DATA_DIR / "traces/azure_small.csv"
    workload = make({"t": {"application": "f", "distribution": "Trace", "trace_file": str(path)}}, duration_s=240)
    times = times_of(workload, "t")
    per_minute, _ = np.histogram(times, bins=[0, 60, 120, 180, 240])
    assert per_minute.tolist() == [30, 0, 120, 7]
    assert not np.any(np.isin(times, [0.0, 60.0, 120.0, 180.0]))  # never at the minute boundary
    equi = times_of(
        make(
            {
                "t": {
                    "application": "f",
                    "distribution": "Trace",
                    "trace_file": str(path),
                    "trace_spread": "equidistant",
                    "trace_row": "fb",
                }
            },
            duration_s=240,
        ),
        "t",
    )
    assert equi.size == 10
    assert np.allclose(np.diff(equi[:5]), 12.0)
    scaled = times_of(
        make(
            {"t": {"application": "f", "distribution": "Trace", "trace_file": str(path), "trace_scale": 0.5}},
            duration_s=240,
        ),
        "t",
    )
    assert scaled.size == 15 + 60 + 4


def test_timestamp_trace_starts_at_the_window_start():
    path = DATA_DIR / "traces/timestamps.csv"
    times = times_of(
        make(
            {"t": {"application": "f", "distribution": "Trace", "trace_file": str(path), "activity_window": [10, 30]}}
        ),
        "t",
    )
    assert times.tolist() == pytest.approx([10.5, 11.25, 11.25, 13.0, 19.999, 22.0])


def test_interarrivals_list_is_absolute_and_cut_to_the_window():
    times = times_of(
        make(
            {"t": {"application": "f", "interarrivals_list": [1, 2, 0.5, 10], "activity_window": [2, 12]}},
            duration_s=20,
        ),
        "t",
    )
    assert times.tolist() == pytest.approx([3.0, 3.5])


def test_merged_schedule_is_sorted_with_stable_ties(tmp_path):
    workload = make(
        {
            "first": {"application": "f", "distribution": "Burst", "burst_size": 2, "burst_gap_s": 1},
            "second": {"application": "g", "distribution": "Burst", "burst_size": 1, "burst_gap_s": 1},
        },
        duration_s=3,
    )
    schedule = build_schedule(workload)
    assert np.all(np.diff(schedule.intended_ns) >= 0)
    assert schedule.instance_idx.tolist() == [0, 0, 1] * 3
    path = tmp_path / "s.csv"
    schedule.write_csv(path)
    intended, names = read_schedule_csv(path)
    assert np.array_equal(intended, schedule.intended_ns)
    assert names[:3] == ["first", "first", "second"]
    with pytest.raises(FileExistsError):
        schedule.write_csv(path)


@pytest.mark.slow
def test_plan_cli_prints_per_instance_counts_and_refuses_overwrite(cli, tmp_path):
    out = tmp_path / "plan.csv"
    out.write_text("keep me")
    result = cli("plan", "faasprof/workload_configs/paper_listing1.json", "--out", out)
    assert result.returncode == 2
    assert result.stderr.strip() == f"--out: {out} already exists; choose another path or delete it"
    assert out.read_text() == "keep me"
    out.unlink()
    result = cli("plan", "faasprof/workload_configs/paper_listing1.json", "--out", out)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split() == [
        "instance",
        "function",
        "distribution",
        "rate/s",
        "planned/s",
        "window_s",
        "invocations",
    ]
    assert lines[2].split()[:3] == ["instance2", "json_dumps", "Uniform"] and lines[2].split()[-1] == "500"
    assert lines[-1].startswith("total ") and "seed 110" in lines[-1]
    assert sum(1 for _ in open(out)) - 1 == int(lines[-1].split()[1])


@pytest.mark.slow
def test_plan_makes_no_network_connection(cli, tmp_path):
    """plan must not contact a platform: it runs with an unreachable apihost configured."""
    home = tmp_path / "home"
    home.mkdir()
    (home / ".wskprops").write_text("APIHOST=https://127.0.0.1:9\nAUTH=a:b\n")
    result = cli(
        "plan",
        "faasprof/workload_configs/paper_listing1.json",
        env={"HOME": str(home), "FAASPROF_TEST_HOME": str(home)},
    )
    assert result.returncode == 0, result.stderr
    assert os.path.exists(home / ".wskprops")


def test_a_shifted_exponential_burst_without_its_mean_is_the_fixed_gap():
    """No ``gap_mean_s``: no exponential part (as ``Burst.expected_count`` counts it), not a TypeError."""
    fixed = arrivals.burst(np.random.default_rng(1), 2, 0.5, 0.0, 2.0)
    shifted = arrivals.burst(np.random.default_rng(1), 2, 0.5, 0.0, 2.0, "shifted_exponential", None)
    assert shifted.tolist() == fixed.tolist() == [0.0, 0.0, 0.5, 0.5, 1.0, 1.0, 1.5, 1.5]
