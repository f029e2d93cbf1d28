"""Every column of every analysis frame, of the long view and of every Parquet file carries the unit
its name says, checked against this test's own table (not the code's): a new column whose name
does not end in its unit, and that the exceptions below do not name, fails here."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from test_analyzer_synthetic import write_synthetic_run

from faasprof.analyzer import frames as frames_mod
from faasprof.analyzer.analysis import analyze_run, load_run
from faasprof.outcomes import FINAL_OUTCOMES, HTTP_OUTCOMES

DATA = Path(__file__).resolve().parent / "data" / "monitoring"

# A name's last part says its unit; a statistic (percentile, its interval, mean, max) keeps the
# unit of what it summarises; a sample count is a count.
SUFFIXES = (
    ("_ms_per_s", "ms/s"),
    ("_kib_per_s", "KiB/s"),
    ("_pages_per_s", "pages/s"),
    ("_rps", "1/s"),
    ("_per_s", "1/s"),
    ("_iops", "1/s"),
    ("_mbps", "MB/s"),
    ("_mpki", "1/kinstr"),
    ("_pki", "1/kinstr"),
    ("_fraction", "1"),
    ("_share", "1"),
    ("_pct", "%"),
    ("_cores", "CPUs"),
    ("_ms", "ms"),
    ("_ns", "ns"),
    ("_s", "s"),
    ("_mb", "MB"),
    ("_bytes", "B"),
)
COUNT_SUFFIXES = ("_n", "_count")
STATISTICS = ("_ci_low", "_ci_high", "_mean", "_max", "_p50", "_p90", "_p99_9", "_p99")
# Names that do not end in their unit.
EXCEPTIONS = {
    "gb_s": "GB·s",
    "gb_s_1ms": "GB·s",
    "gb_s_100ms": "GB·s",  # 1ms/100ms: the billing granularity
    "achieved_over_offered": "ratio",
    "trend_last_over_first": "ratio",
    "seq": None,
    "phase": None,
    "http_status": None,
    "sample": None,
    "sweep_repeat": None,  # identifiers and codes
    # Monitors' columns named after what they measure; perf's events (the fixture's) as perf says.
    "ipc": "instructions/cycle",
    "branch_miss_rate": "ratio",
    "llc_miss_rate": "ratio",
    "cpu_utilization": "CPUs",
    "procs_running": "count",
    "procs_blocked": "count",
    "memory_failcnt": "count",
    "oom_kills": "count",
    "frozen": "1",
    "completions": "count",
    "task-clock": "ms",
    "context-switches": "count",
    "page-faults": "count",
    "cycles": "count",
    "instructions": "count",
    **{
        name: "count"
        for name in (
            "planned",
            "sent",
            "answered",
            "successful",
            "failures",
            "rejected",
            "with_activation_id",
            "with_record",
            "successful_with_record",
            "missing_records",
            *HTTP_OUTCOMES,
            *(f"final_{o}" for o in FINAL_OUTCOMES),
        )
    },
}


def _labels_flags_or_times(dtype) -> bool:
    return (
        isinstance(dtype, pd.CategoricalDtype)
        or pd.api.types.is_bool_dtype(dtype)
        or (pd.api.types.is_string_dtype(dtype) and not pd.api.types.is_object_dtype(dtype))
        or pd.api.types.is_datetime64_any_dtype(dtype)
        or pd.api.types.is_timedelta64_dtype(dtype)
    )


def expected_unit(column: str, dtype) -> str | None:
    if _labels_flags_or_times(dtype):
        return None
    if column in EXCEPTIONS:
        return EXCEPTIONS[column]
    if column.endswith(COUNT_SUFFIXES):
        return "count"
    if "_over_" in column:  # a ratio of two like quantities: tail_p99_over_p50_warm
        return "ratio"
    name = column
    while name.endswith(STATISTICS):
        name = name.removesuffix(next(s for s in STATISTICS if name.endswith(s)))
    return next((unit for suffix, unit in SUFFIXES if name.endswith(suffix)), None)


def _check(kind: str, columns: dict, units: dict) -> None:
    """``columns``: name → dtype; ``units``: name → the unit the code gave."""
    for column, dtype in columns.items():
        expected = expected_unit(column, dtype)
        if pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype) and column not in EXCEPTIONS:
            assert expected is not None, (
                f"{kind}: {column} ({dtype}) has no unit its name says: end it in its unit or name it in EXCEPTIONS"
            )
        assert units.get(column) == expected, (
            f"{kind}: {column}: unit {units.get(column)!r}, its name says {expected!r}"
        )


CGROUP_SAMPLES = (
    "elapsed_ns,sandbox,cpu_usage_ns,cpu_user_ns,cpu_system_ns,nr_periods,nr_throttled,throttled_ns,memory_usage_bytes,memory_limit_bytes,memory_rss_bytes,memory_cache_bytes,memory_failcnt,oom_kills\n"
    "0,sb1,0,,,0,0,0,100,268435456,90,10,0,0\n"
    "500000000,sb1,250000000,,,10,5,50000000,110,268435456,95,15,0,0\n"
)
RESCTRL_SAMPLES = "elapsed_ns,group,domain,llc_occupancy,mbm_total_bytes,mbm_local_bytes\n0,g,0,10,100,50\n100000000,g,0,20,300,100\n200000000,g,0,20,600,300\n"


def _monitor(run_dir: Path, name: str, files: dict[str, str], **meta) -> None:
    """A monitor's raw output as its collector leaves it, started at the run's zero."""
    directory = run_dir / "monitors" / name
    directory.mkdir(parents=True)
    (directory / "meta.json").write_text(json.dumps({"monotonic_ns_at_start": 0, **meta}))
    for file, text in files.items():
        (directory / file).write_text(text)


@pytest.fixture(scope="module")
def analysed(tmp_path_factory):
    """A run with a blocking and a non-blocking instance of one function in two phases, a failure,
    and every monitor's output (recorded real perf, vmstat and blkparse outputs)."""
    instances = {
        "sync": {"application": "fn", "distribution": "Uniform", "rate": 20.0, "activity_window": [0, 3]},
        "async": {
            "application": "fn",
            "distribution": "Uniform",
            "rate": 20.0,
            "blocking": False,
            "activity_window": [3, 6],
        },
    }
    run_dir, _ = write_synthetic_run(
        tmp_path_factory.mktemp("units"), duration_s=6.0, instances=instances, failures={5: "application_error"}
    )
    _monitor(run_dir, "perf", {"perf_stat.csv": (DATA / "perf" / "perf_stat_percore_interval.csv").read_text()})
    _monitor(run_dir, "vmstat", {"vmstat.csv": (DATA / "vmstat" / "vmstat_dev_vm.csv").read_text()})
    _monitor(run_dir, "cgroups", {"samples.csv": CGROUP_SAMPLES})
    _monitor(run_dir, "rdt", {"resctrl_samples.csv": RESCTRL_SAMPLES})
    _monitor(
        run_dir,
        "blktrace",
        {"sata.blkparse.txt": (DATA / "blkparse" / "blkparse_sata_fio.txt").read_text()},
        outputs=["sata.blkparse.txt"],
    )
    analyze_run(run_dir, plots=False)
    return run_dir


def test_every_column_of_every_frame_and_parquet_file_has_the_unit_its_name_says(analysed):
    run = load_run(analysed)
    files = sorted((analysed / "analysis").glob("*.parquet"))
    assert {f.name for f in files} == {
        "invocations.parquet",
        "phase_stats.parquet",
        "function_stats.parquet",
        "monitor_perf.parquet",
        "monitor_vmstat.parquet",
        "monitor_cgroups.parquet",
        "monitor_rdt.parquet",
        "monitor_blktrace.parquet",
    }
    for path in files:
        described = frames_mod.parquet_description(path)
        schema = pd.read_parquet(path).dtypes.to_dict()
        _check(path.name, {str(c): d for c, d in schema.items()}, described["units"])
    for kind, frame in (
        ("invocations", run.invocations),
        ("phase_stats", run.phase_stats),
        ("function_stats", run.function_stats),
        *run.monitors.items(),
    ):
        _check(kind, {str(c): d for c, d in frame.dtypes.items()}, frames_mod.units_mod.frame_units(frame))


def test_the_long_view_gives_each_metric_its_own_unit(analysed):
    run = load_run(analysed)
    long = run.phase_stats_long()
    units = long.groupby(long["metric"].astype(str), observed=True)["unit"].agg(lambda u: set(u))
    assert all(len(u) == 1 for u in units)
    given = {metric: next(iter(u)) for metric, u in units.items()}
    _check("phase_stats_long", {m: run.phase_stats[m].dtype for m in given}, given)
    # The ones the issue found wrong: a sample count, a slope, a ratio and the cost.
    assert given["completion_latency_ms_n"] == "count" and given["trend_slope_ms_per_s"] == "ms/s"
    assert given["achieved_over_offered"] == "ratio" and given["gb_s"] == given["gb_s_100ms"] == "GB·s"
    assert (
        given["completion_latency_ms_p99_ci_low"] == "ms"
        and given["planned"] == "count"
        and given["cold_fraction"] == "1"
    )


def test_a_new_column_without_its_unit_fails_the_check():
    with pytest.raises(AssertionError, match="has no unit its name says"):
        _check("frame", {"queue_depth": pd.Series([1.0]).dtype}, {})
    with pytest.raises(AssertionError, match="unit 'ms', its name says 'count'"):
        _check("frame", {"latency_ms_n": pd.Series([1]).dtype}, {"latency_ms_n": "ms"})
