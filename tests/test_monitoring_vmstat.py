"""The vmstat collector, added through the registry alone: reading recorded /proc files, parsing
a recorded vmstat.csv, a live run on this machine, `faasprof parse vmstat`, the doctor and the
workload schema."""

from __future__ import annotations

import json
import math
import shutil
import time
from pathlib import Path

import pytest

from faasprof import rundir
from faasprof.monitoring.collectors import REGISTRY, build_collectors
from faasprof.monitoring.collectors.vmstat import VmstatCollector, parse_vmstat_samples
from faasprof.monitoring.frames import load_run_monitors
from faasprof.monitoring.host import Root
from faasprof.monitoring.sampling import VMSTAT_COLUMNS as COLUMNS
from faasprof.monitoring.sampling import read_vmstat_sample
from tests.helpers import run_cli

DATA = Path(__file__).resolve().parent / "data" / "monitoring" / "vmstat"
RECORDED = DATA / "vmstat_dev_vm.csv"


def test_read_sample_from_recorded_proc_files():
    sample = read_vmstat_sample(Root(DATA / "root"))
    # Values copied from the recorded /proc/stat and /proc/vmstat (tests/data/monitoring/README.md).
    assert (
        sample["cpu_user_ticks"] == 1228692
        and sample["cpu_idle_ticks"] == 623078
        and sample["cpu_steal_ticks"] == 13338
    )
    assert sample["ctxt"] == 45781976 and sample["intr"] == 21341060 and sample["forks"] == 443778
    assert sample["procs_running"] == 3 and sample["procs_blocked"] == 0
    assert sample["pgfault"] == 293741562 and sample["pgmajfault"] == 11945 and sample["pgpgout"] == 47913060
    assert set(sample) == set(COLUMNS[1:])


def test_parse_recorded_samples():
    frame = parse_vmstat_samples(RECORDED.read_text())
    assert (
        len(frame) == len(RECORDED.read_text().splitlines()) - 2
    )  # header, and the first read starts the first interval
    first = frame.iloc[0]
    # Between the first two recorded reads: 33 user and 7 system ticks of 40, 586 switches in 0.2039 s.
    assert first["cpu_user_share"] == pytest.approx(33 / 40) and first["cpu_system_share"] == pytest.approx(7 / 40)
    assert first["cpu_busy_share"] == pytest.approx(1.0)
    assert first["context_switches_per_s"] == pytest.approx(586 / 0.203882443)
    assert first["interval_s"] == pytest.approx(0.203882443) and first["elapsed_s"] == pytest.approx(0.204080535)
    assert (frame["cpu_busy_share"].between(0, 1)).all() and (frame["page_faults_per_s"] >= 0).all()
    assert frame["procs_running"].tolist() == [5, 3, 4, 4, 2, 3]


def test_a_counter_that_goes_down_gives_no_value_not_a_negative_rate():
    lines = RECORDED.read_text().splitlines()
    header, first, second = lines[0], lines[1].split(","), lines[2].split(",")
    second[COLUMNS.index("ctxt")] = str(int(first[COLUMNS.index("ctxt")]) - 1)
    frame = parse_vmstat_samples("\n".join([header, ",".join(first), ",".join(second)]) + "\n")
    assert math.isnan(frame["context_switches_per_s"].iloc[0])
    assert frame["page_faults_per_s"].iloc[0] > 0
    assert parse_vmstat_samples(header + "\n" + lines[1] + "\n").empty  # one read: no interval yet


def test_live_on_this_machine_and_frames_on_the_run_clock(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (collector,) = build_collectors({"vmstat": {"interval_ms": 50}}, {"duration_s": 1})
    assert isinstance(collector, VmstatCollector) and collector.check() is None
    zero_ns = time.monotonic_ns()
    collector.start(run_dir)
    deadline = time.monotonic() + 10
    while (
        time.monotonic() < deadline
        and len((run_dir / rundir.MONITORS / "vmstat" / "vmstat.csv").read_text().splitlines()) < 4
    ):
        time.sleep(0.05)
    assert collector.alive()
    collector.stop()
    collector.stop()  # safe twice
    described = collector.describe()
    assert described["status"] == "stopped" and described["outputs"] == ["vmstat.csv"] and described["errors"] == []
    meta = json.loads((run_dir / rundir.MONITORS / "vmstat" / "meta.json").read_text())
    assert meta["status"] == "stopped" and meta["monotonic_ns_at_start"] >= zero_ns
    frames = load_run_monitors(
        run_dir, rundir.new_manifest("vmstat", {}, rundir.ClockAnchor(zero_ns, 0), monitors=[described])
    )
    frame = frames["vmstat"]
    assert len(frame) >= 3 and (frame["t_s"] > 0).all() and frame["t_s"].is_monotonic_increasing
    # An interval where a kernel counter went down (iowait does, by design) has no share: NaN, not 0.
    busy = frame["cpu_busy_share"].dropna()
    assert len(busy) >= 1 and busy.between(0, 1).all()


@pytest.mark.slow
def test_parse_cli_on_the_recorded_file(tmp_path):
    done = run_cli("parse", "vmstat", RECORDED, "--out", tmp_path / "out.csv")
    assert done.returncode == 0, done.stderr
    assert "6 rows" in done.stderr
    header = (tmp_path / "out.csv").read_text().splitlines()[0]
    assert header.startswith("elapsed_s,interval_s,cpu_busy_share")


def test_check_and_doctor_without_procfs(tmp_path):
    root = tmp_path / "root"
    shutil.copytree(DATA / "root", root)
    assert VmstatCollector({}, {"host_root": str(root)}).check() is None
    (root / "proc" / "vmstat").unlink()
    reason = VmstatCollector({}, {"host_root": str(root)}).check()
    assert (
        reason
        == f"vmstat: {root / 'proc' / 'vmstat'} has no pgfault counter (no procfs mounted?); mount proc on /proc or drop monitoring.vmstat"
    )
    (finding,) = VmstatCollector.doctor(Root(root), {}, False, None)
    assert (
        finding.state == "MISSING"
        and finding.blocks == ("vmstat",)
        and finding.fix == "mount proc on /proc or drop monitoring.vmstat"
    )


@pytest.mark.slow
def test_workload_schema_accepts_and_bounds_vmstat(tmp_path):
    assert REGISTRY["vmstat"] is VmstatCollector
    ok = {
        "test_name": "v",
        "test_duration_in_seconds": 2,
        # Uniform: Poisson at 1/s for 2 s with no seed planned nothing one time in seven (validate refused it).
        "instances": {"i0": {"application": "json_dumps", "distribution": "Uniform", "rate": 1}},
        "monitoring": {"vmstat": {"interval_ms": 200}},
    }
    (tmp_path / "ok.json").write_text(json.dumps(ok))
    done = run_cli("validate", "--offline", tmp_path / "ok.json")
    assert done.returncode == 0, done.stdout + done.stderr
    bad = {**ok, "monitoring": {"vmstat": {"interval_ms": 1}}}
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    done = run_cli("validate", "--offline", tmp_path / "bad.json")
    assert (
        done.returncode == 2
        and "monitoring.vmstat.interval_ms: must be an integer >= 10 (got 1)" in done.stdout + done.stderr
    )


def test_doctor_cli_reports_vmstat_and_requires_it_when_asked(tmp_path, isolated_home):
    root = tmp_path / "root"
    shutil.copytree(DATA / "root", root)
    workload = tmp_path / "w.json"
    workload.write_text(
        json.dumps({"test_name": "d", "test_duration_in_seconds": 1, "instances": {}, "monitoring": {"vmstat": True}})
    )
    done = run_cli("doctor", "--root", root, "--workload", workload, timeout=60)
    assert "vmstat    ok      /proc/stat and /proc/vmstat readable" in done.stdout
    assert "vmstat" in done.stderr.strip().splitlines()[-1] and done.stderr.strip().splitlines()[-1].startswith(
        "ready:"
    )
    (root / "proc" / "stat").unlink()
    done = run_cli("doctor", "--root", root, "--workload", workload, timeout=60)
    assert done.returncode == 3
    assert done.stderr.strip() == f"not ready: vmstat unavailable (asked for by {workload})"
