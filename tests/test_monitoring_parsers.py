"""Parsers and derived metrics on recorded real outputs (tests/data/monitoring/, origins in its README)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from faasprof.monitoring.derived import DERIVED_COLUMNS, add_bandwidth_share, add_perf_metrics
from faasprof.monitoring.parsers.blkparse import blk_intervals, direction, parse_blkparse_events, parse_blkparse_line
from faasprof.monitoring.parsers.cgroups import parse_cgroup_samples
from faasprof.monitoring.parsers.perf import base_event, parse_perf_line, parse_perf_stat, perf_wide, probe_support
from faasprof.monitoring.parsers.pqos import parse_pqos, parse_pqos_csv, parse_pqos_text
from faasprof.monitoring.parsers.resctrl import parse_resctrl_samples

DATA = Path(__file__).resolve().parent / "data" / "monitoring"


def read(*parts: str) -> str:
    return (DATA.joinpath(*parts)).read_text()


# -- perf ------------------------------------------------------------------------------------------


def test_perf_system_interval_not_supported_is_missing_never_zero():
    long = parse_perf_stat(read("perf", "perf_stat_system_interval.csv"))
    assert set(long["agg"]) == {"system"}
    cycles = long[long["event"] == "cycles"]
    assert len(cycles) == 4 and cycles["value"].isna().all()
    assert set(cycles["status"]) == {"not_supported"}
    task = long[long["event"] == "task-clock"]
    assert task["value"].tolist()[:2] == [200.77, 201.23]
    assert set(task["unit"]) == {"msec"}
    assert long.attrs["noise_lines"] == 0
    # Modifiers are kept: cycles:u and cycles:k are separate events.
    assert {"cycles:u", "cycles:k"} <= set(long["event"])


def test_perf_truncated_final_interval_has_its_real_length():
    wide = perf_wide(parse_perf_stat(read("perf", "perf_stat_system_interval.csv")))
    assert len(wide) == 4
    assert wide["interval_s"].iloc[:3].round(2).tolist() == [0.10, 0.10, 0.10]
    # `-- sleep 0.35` ends perf 51 ms into the 4th interval.
    assert wide["interval_s"].iloc[-1] == pytest.approx(0.352732 - 0.301330, abs=1e-5)
    derived = add_perf_metrics(wide)
    # task-clock over the real interval: about 2 busy CPUs in every interval, the short one too.
    assert derived["cpu_utilization"].between(1.9, 2.1).all()
    assert derived["ipc"].isna().all()  # cycles/instructions not supported: NaN, not 0 or inf


def test_perf_sigint_output_keeps_the_partial_interval():
    wide = perf_wide(parse_perf_stat(read("perf", "perf_stat_sigint.csv")))
    assert len(wide) == 5
    assert wide["interval_s"].iloc[-1] < 0.05
    assert wide["task-clock"].iloc[-1] == 79.44


def test_perf_per_cpu_and_per_core_layouts():
    cpu = parse_perf_stat(read("perf", "perf_stat_percpu_interval.csv"))
    assert set(cpu["agg"]) == {"cpu"} and set(cpu["unit_id"]) == {"CPU0", "CPU1"}
    assert cpu["n_cpus"].isna().all()
    core = parse_perf_stat(read("perf", "perf_stat_percore_interval.csv"))
    assert set(core["agg"]) == {"core"} and set(core["unit_id"]) == {"S0-D0-C0", "S0-D0-C1"}
    assert set(core["n_cpus"]) == {1.0}
    wide = perf_wide(core)
    assert len(wide) == 6 and set(wide["unit_id"]) == {"S0-D0-C0", "S0-D0-C1"}


def test_perf_per_cgroup_layout():
    long = parse_perf_stat(read("perf", "perf_stat_cgroup_interval.csv"))
    assert set(long["agg"]) == {"cgroup"}
    assert set(long["unit_id"]) == {"faasprof-rec-a", "faasprof-rec-b"}
    busy = long[(long["unit_id"] == "faasprof-rec-a") & (long["event"] == "task-clock")]
    assert busy["value"].iloc[0] == 100.03
    assert busy["runtime_ns"].iloc[0] == 100034102


def test_perf_not_counted_is_missing():
    long = parse_perf_stat(read("perf", "perf_stat_not_counted.csv"))
    assert set(long["status"]) == {"not_counted"} and long["value"].isna().all()


def test_perf_multiplexing_and_metric_only_lines():
    long = parse_perf_stat(read("perf", "perf_stat_multiplexed.csv"))
    assert list(long["event"]) == ["instructions:u", "cycles:u", "branch-misses:u", "L1-dcache-load-misses:u"]
    assert set(long["running_pct"]) == {85.0}
    assert long["time_s"].isna().all()  # no -I
    assert long.attrs["noise_lines"] == 0  # the metric-only row is not noise either
    metric_only = parse_perf_stat(read("perf", "perf_stat_metric_only_lkml.csv"))
    assert len(metric_only) == 1 and metric_only["event"].iloc[0] == "instructions"
    assert metric_only["agg"].iloc[0] == "socket" and metric_only["n_cpus"].iloc[0] == 1
    wide = perf_wide(long)
    assert wide["min_running_pct"].iloc[0] == 85.0


def test_perf_intel_hardware_sample_derives_ipc_and_branch_mpki():
    wide = add_perf_metrics(perf_wide(parse_perf_stat(read("perf", "perf_stat_intel_hw_lkml.csv"))))
    row = wide.iloc[0]
    assert row["ipc"] == pytest.approx(4380820799 / 2953214077)
    assert row["ipc"] == pytest.approx(1.48, abs=0.005)  # perf's own metric on that row
    assert row["branch_mpki"] == pytest.approx(1000 * 12439843 / 4380820799)
    assert row["branch_miss_rate"] == pytest.approx(0.0154, abs=0.0001)
    assert row["page_faults_pki"] == pytest.approx(1000 * 13244 / 4380820799)
    assert row["context_switches_pki"] == pytest.approx(1000 * 11243 / 4380820799)
    # cpu-clock counts as task-clock: 4003.55 ms over ~1.0008 s = 4 CPUs busy.
    assert row["cpu_utilization"] == pytest.approx(4.0, abs=0.01)
    assert math.isnan(row["llc_mpki"]) and math.isnan(row["kernel_cycle_share"])


def test_perf_noise_lines_header_and_cut_last_line():
    text = "# started on Sat Nov 21 00:53:54 2026\n\nEvents disabled\n" + read("perf", "perf_stat_sigint.csv")
    text += "     0.501,12,,context-swi"  # cut off mid-line (no newline)
    long = parse_perf_stat(text)
    assert long.attrs["noise_lines"] == 1
    assert len(long) == 20  # the cut line is dropped
    assert "context-swi" not in set(long["event"])


def test_perf_variance_column_and_summary_and_other_separator():
    row = parse_perf_line("49,,page-faults,0.00%,775869,100.00,68.930,K/sec")
    assert row.event == "page-faults" and row.variance_pct == 0.0 and row.agg == "system"
    assert parse_perf_line("         summary,401.09,msec,task-clock,401085044,100.00,1.997,CPUs utilized") is None
    semi = parse_perf_line("     0.300412824;601.23;msec;task-clock;601231835;100.00;2.004;CPUs utilized", sep=";")
    assert semi.time_s == 0.300412824 and semi.value == 601.23
    thread = parse_perf_line("bash-4144,<not counted>,msec,task-clock,0,100.00,,")
    assert thread.agg == "thread" and thread.unit_id == "bash-4144" and thread.value is None


def test_perf_probe_output_and_bad_event_stderr():
    statuses = probe_support(read("perf", "perf_stat_probe_stderr.txt"))
    assert statuses == {
        "task-clock": "ok",
        "context-switches": "ok",
        "page-faults": "ok",
        "cycles": "not_supported",
        "instructions": "not_supported",
    }
    assert probe_support(read("perf", "perf_stat_bad_event_stderr.txt")) == {}
    # Without -o the counters go to stderr and have no "# started on" header.
    assert len(parse_perf_stat(read("perf", "perf_stat_stderr_no_o.txt"))) == 4
    assert base_event("task-clock:u") == "task-clock" and base_event("cycles") == "cycles"


def test_derived_zero_denominators_are_nan():
    wide = pd.DataFrame(
        {
            "time_s": [0.1, 0.2],
            "unit_id": ["", ""],
            "interval_s": [0.1, 0.1],
            "cycles": [0.0, 100.0],
            "instructions": [0.0, 250.0],
            "cycles:u": [0.0, 60.0],
            "cycles:k": [0.0, 40.0],
            "LLC-load-misses": [5.0, 5.0],
            "LLC-loads": [0.0, 50.0],
        }
    )
    out = add_perf_metrics(wide)
    assert list(out.columns[-len(DERIVED_COLUMNS) :]) == list(DERIVED_COLUMNS)
    assert out["ipc"].isna().iloc[0] and out["ipc"].iloc[1] == 2.5
    assert out["kernel_cycle_share"].iloc[1] == pytest.approx(0.4)
    assert out["llc_mpki"].iloc[1] == pytest.approx(20.0)
    assert out["llc_miss_rate"].iloc[1] == pytest.approx(0.1)
    assert np.isinf(out.select_dtypes("number")).sum().sum() == 0


# -- pqos ------------------------------------------------------------------------------------------


def test_pqos_text_samples_k_suffix_and_units():
    frame = parse_pqos_text(read("pqos", "pqos_text_issue163.txt"), drop_first=False)
    assert frame["group"].tolist() == ["18", "27", "23", "8"]
    assert frame["llc_misses"].tolist() == [9013000.0, 3117000.0, 9286000.0, 7408000.0]
    assert frame["llc_kib"].iloc[0] == 1584.0
    # MiB/s → MB/s: (534.0 + 21.8) MiB/s.
    assert frame["mem_bw_mbps"].iloc[0] == pytest.approx((534.0 + 21.8) * 1.048576)
    old = parse_pqos_text(read("pqos", "pqos_text_issue59.txt"), drop_first=False)
    assert old["group"].tolist() == ["0", "14"] and old["mbr_mibps"].tolist() == [3.0, 16.5]
    noisy = parse_pqos(read("pqos", "pqos_text_blog2021.txt"), drop_first=False)
    assert noisy["llc_misses"].tolist() == [0.0, 1000.0]  # the NOTE: lines are skipped


def test_pqos_drops_the_first_sample_by_block_not_by_time():
    one_sample = parse_pqos_text(read("pqos", "pqos_text_issue163.txt"))
    assert one_sample.empty
    text = read("pqos", "pqos_text_issue59.txt") * 3  # three samples of the same two cores
    frame = parse_pqos_text(text, interval_s=0.1)
    assert frame["sample"].tolist() == [1, 1, 2, 2]
    assert frame["elapsed_s"].tolist() == pytest.approx([0.1, 0.1, 0.2, 0.2])


def test_pqos_csv_quoted_and_unquoted_groups():
    fixed = parse_pqos_csv(read("pqos", "pqos_csv_issue28.csv"), drop_first=False)
    assert fixed["group"].iloc[0] == "0-15,32-47"
    assert fixed["mbl_mibps"].iloc[0] == 976274.4
    pid = parse_pqos_csv(read("pqos", "pqos_csv_telegraf_pid.csv"), drop_first=False)
    assert pid["pids"].iloc[0] == "45417,29170" and pid["group"].iloc[0] == "37,44"
    assert pid["mbt_mibps"].iloc[0] == 0.0 and pid["mem_bw_mbps"].iloc[0] == 0.0
    shared = add_bandwidth_share(fixed, peak_mbps=2_000_000)
    assert shared["mem_bw_share"].iloc[0] == pytest.approx((976274.4 + 5309.5) * 1.048576 / 2e6)
    assert add_bandwidth_share(fixed, None)["mem_bw_share"].isna().all()


# -- resctrl ---------------------------------------------------------------------------------------


def test_resctrl_cumulative_bytes_to_bandwidth_unavailable_and_reset():
    # The rdt collector's own format (its output is tested live against a fake resctrl tree in
    # test_monitoring_collectors.py); values chosen for easy arithmetic.
    text = (
        "elapsed_ns,group,domain,llc_occupancy,mbm_total_bytes,mbm_local_bytes\n"
        "0,.,00,16234000,1000000,600000\n"
        "0,.,01,1000,0,0\n"
        "100000000,.,00,16234000,11000000,6600000\n"
        "100000000,.,01,2000,1000000,1000000\n"
        "200000000,.,00,Unavailable,21000000,12600000\n"
        "200000000,.,01,3000,500,500\n"  # went backwards: the counter was reset
        "300000000,.,00,1"  # cut off
    )
    per_domain = parse_resctrl_samples(text, per_domain=True)
    first = per_domain[(per_domain["domain"] == "00")].iloc[0]
    assert first["mem_bw_mbps"] == pytest.approx(100.0)  # 10e6 B in 0.1 s
    assert first["mem_bw_local_mbps"] == pytest.approx(60.0)
    assert first["mem_bw_remote_mbps"] == pytest.approx(40.0)
    later = per_domain[(per_domain["domain"] == "00")].iloc[1]
    assert math.isnan(later["llc_occupancy_bytes"])  # Unavailable: missing, not 0
    reset = per_domain[(per_domain["domain"] == "01")].iloc[1]
    assert math.isnan(reset["mem_bw_mbps"])
    summed = parse_resctrl_samples(text)
    assert len(summed) == 2
    assert summed["mem_bw_mbps"].iloc[0] == pytest.approx(110.0)
    assert summed["llc_occupancy_bytes"].iloc[0] == 16236000


# -- blkparse --------------------------------------------------------------------------------------


def test_blkparse_one_request_life_d2c():
    frame = blk_intervals(read("blkparse", "blkparse_sata_fio.txt"), interval_s=1.0)
    assert len(frame) == 1
    row = frame.iloc[0]
    assert row["device"] == "8,64" and row["elapsed_s"] == 33.0
    assert row["write_iops"] == 1 and row["read_iops"] == 0
    assert row["write_mbps"] == pytest.approx(8 * 512 / 1e6)
    assert row["d2c_mean_ms"] == pytest.approx((33.799933777 - 33.791612977) * 1e3)


def test_blkparse_doc_sample_merge_and_plug_lines():
    events = parse_blkparse_events(read("blkparse", "blkparse_ext3_doc.txt"))
    assert list(events["action"]) == ["G", "P", "Q", "M", "D", "C"]
    assert math.isnan(events["sector"].iloc[1])  # P has no sector
    frame = blk_intervals(read("blkparse", "blkparse_ext3_doc.txt"), interval_s=0.1)
    assert frame["write_mbps"].iloc[0] == pytest.approx(56 * 512 / 0.1 / 1e6)  # the merged request once
    assert frame["d2c_max_ms"].iloc[0] == pytest.approx((0.009507758 - 0.000024062) * 1e3)


def test_blkparse_remap_wide_pid_and_unmatched_completion():
    events = parse_blkparse_events(read("blkparse", "blkparse_btrfs_remap.txt"))
    assert events["pid"].iloc[-1] == 2342076 and events["action"].iloc[-1] == "U"
    frame = blk_intervals(read("blkparse", "blkparse_btrfs_remap.txt"))
    assert frame["device"].tolist() == ["8,3"] and frame["d2c_n"].iloc[0] == 1
    # NVMe sample: an issue without its completion gives no throughput row at all.
    assert blk_intervals(read("blkparse", "blkparse_nvme_fio.txt")).empty
    # The summary block is not events.
    assert parse_blkparse_events(read("blkparse", "blkparse_summary_sas.txt")).empty
    assert parse_blkparse_line("Input file sda.blktrace.0 added") is None


def test_blkparse_rwbs_directions():
    assert direction("R") == "read" and direction("RA") == "read" and direction("WS") == "write"
    assert direction("FWS") == "write" and direction("FN") is None and direction("N") is None and direction("D") is None


def test_blkparse_marker_sets_time_zero():
    text = "  8,0    1        0     0.500000000     0  m   N faasprof-start\n" + read(
        "blkparse", "blkparse_ext3_doc.txt"
    ).replace("     0.0", "     1.0")
    frame = blk_intervals(text, interval_s=1.0, marker="faasprof-start")
    assert frame.attrs["marker_s"] == 0.5
    assert frame["elapsed_s"].iloc[0] == 0.0  # the completion at 1.0095 s is 0.51 s after the marker


# -- cgroup samples --------------------------------------------------------------------------------


def test_cgroup_samples_rates_and_throttling():
    text = (
        "elapsed_ns,sandbox,cpu_usage_ns,cpu_user_ns,cpu_system_ns,nr_periods,nr_throttled,throttled_ns,memory_usage_bytes,memory_limit_bytes,memory_rss_bytes,memory_cache_bytes,memory_failcnt,oom_kills\n"
        "0,.,1000000000,,,10,0,0,500,,,,,\n"
        "0,sb1,0,,,0,0,0,100,268435456,90,10,0,0\n"
        "500000000,.,1500000000,,,20,5,50000000,600,,,,,\n"
        "500000000,sb1,250000000,,,10,5,50000000,110,268435456,95,15,0,0\n"
        "1000000000,sb2,5,,,,,,7,,,,,\n"
    )
    frame = parse_cgroup_samples(text)
    sb1 = frame[frame["sandbox"] == "sb1"]
    assert math.isnan(sb1["cpu_cores"].iloc[0])
    assert sb1["cpu_cores"].iloc[1] == pytest.approx(0.5)
    assert sb1["throttled_share"].iloc[1] == pytest.approx(0.5)
    assert sb1["throttled_ms_per_s"].iloc[1] == pytest.approx(100.0)
    assert sb1["memory_limit_bytes"].iloc[1] == 268435456
    parent = frame[frame["sandbox"] == "."]
    assert parent["cpu_cores"].iloc[1] == pytest.approx(1.0)
    assert math.isnan(parent["cpu_user_cores"].iloc[1])  # not provided: missing, not 0
    assert frame[frame["sandbox"] == "sb2"]["cpu_cores"].isna().all()
