"""Collectors: live perf software events and live cgroups on this machine, resctrl against a fake
tree, the checks of the tools this machine lacks, lifecycle edge cases, and frames on a run clock."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from faasprof import rundir
from faasprof.monitoring import tools
from faasprof.monitoring.collectors import base as col_base
from faasprof.monitoring.collectors import blktrace as col_blktrace
from faasprof.monitoring.collectors import build_collectors, normalise_block
from faasprof.monitoring.collectors.blktrace import BlktraceCollector, data_device
from faasprof.monitoring.collectors.cgroups import CgroupCollector
from faasprof.monitoring.collectors.perf import PerfCollector
from faasprof.monitoring.collectors.rdt import RdtCollector
from faasprof.monitoring.frames import load_run_monitors, start_offset_s
from faasprof.monitoring.host import Root
from faasprof.monitoring.parsers.cgroups import parse_cgroup_samples
from faasprof.monitoring.parsers.perf import parse_perf_stat
from faasprof.monitoring.parsers.resctrl import parse_resctrl_samples
from faasprof.monitoring.sampling import read_cgroup

HOSTS = Path(__file__).resolve().parent / "data" / "monitoring" / "hosts"
HAVE_PERF = shutil.which("perf") is not None and os.geteuid() == 0
needs_perf = pytest.mark.skipif(not HAVE_PERF, reason="needs perf and root (system-wide software events)")


def _v1_writable(*controllers: str) -> bool:
    return all(
        os.access(f"/sys/fs/cgroup/{c}", os.W_OK) and os.path.exists(f"/sys/fs/cgroup/{c}/cgroup.procs")
        for c in controllers
    )


needs_cgroup_v1 = pytest.mark.skipif(
    not _v1_writable("cpu", "cpuacct", "memory", "freezer"),
    reason="needs writable cgroup v1 cpu, cpuacct, memory, freezer",
)


def test_build_collectors_keys_true_false_and_order():
    built = build_collectors(
        {"cgroups": True, "perf": {"interval_ms": 200}, "rdt": False, "blktrace": None}, {"duration_s": 1}
    )
    assert [c.name for c in built] == ["perf", "cgroups"]
    assert built[0].interval_ms == 200 and built[0].per == "system" and built[0].required is False
    assert normalise_block({"perf": {"required": True}})["perf"]["required"] is True
    assert build_collectors(None, None) == []


# -- perf (live, software events) ------------------------------------------------------------------


@needs_perf
def test_perf_live_drops_unsupported_events_and_stops_with_sigint(tmp_path):
    perf = PerfCollector(
        {"interval_ms": 100, "events": ["task-clock", "context-switches", "page-faults", "cycles"]}, {"duration_s": 1}
    )
    assert perf.check() is None
    supported, dropped, _ = tools.probe_perf_events(["task-clock", "cycles"])
    if "cycles" in dropped:  # this VM: no PMU
        assert perf.events == ["task-clock", "context-switches", "page-faults"]
        assert any("cycles" in w for w in perf.warnings)
    perf.start(tmp_path)
    assert perf.alive()
    time.sleep(0.45)
    perf.stop()
    perf.stop()  # safe twice
    described = perf.describe()
    assert described["status"] == "stopped"
    assert described["returncode"] in (0, -signal.SIGINT, 130)
    out = tmp_path / "monitors" / "perf"
    for name in ("command.txt", "stdout.log", "stderr.log", "perf_stat.csv", "meta.json"):
        assert (out / name).exists(), name
    assert (out / "command.txt").read_text().startswith("perf stat -x, -I 100 -a -e ")
    meta = json.loads((out / "meta.json").read_text())
    assert meta["wall_ns_at_start"] and meta["monotonic_ns_at_start"] and meta["status"] == "stopped"
    long = parse_perf_stat((out / "perf_stat.csv").read_text())
    assert set(long["event"]) == set(perf.events)
    assert (long["status"] == "ok").all()  # nothing unsupported was recorded as a value


@needs_perf
def test_perf_bad_event_name_is_named_and_dropped(tmp_path):
    perf = PerfCollector({"events": ["task-clock", "no-such-event-xyz"]}, {})
    assert perf.check() is None
    assert perf.events == ["task-clock"]
    assert any("no-such-event-xyz" in w and "rejected by perf" in w for w in perf.warnings)
    only_bad = PerfCollector({"events": ["no-such-event-xyz"]}, {})
    reason = only_bad.check()
    assert reason.startswith("perf: none of the events no-such-event-xyz is supported")
    only_bad.start(tmp_path)
    assert only_bad.describe()["status"] == "failed" and not only_bad.alive()
    only_bad.stop()  # a failed collector stops as a no-op


@needs_perf
def test_perf_dying_mid_run_is_reported(tmp_path):
    perf = PerfCollector({"events": ["task-clock"]}, {})
    assert perf.check() is None
    perf.start(tmp_path)
    os.kill(perf.process.pid, signal.SIGKILL)
    perf.process.wait(5)
    assert not perf.alive()
    described = perf.describe()
    assert described["status"] == "died" and described["returncode"] == -signal.SIGKILL
    assert "exited during the run with code -9" in described["errors"][0]
    perf.stop()
    perf.stop()
    assert perf.describe()["status"] == "died"


def test_perf_per_cgroup_needs_a_perf_event_hierarchy(tmp_path):
    vm = PerfCollector(
        {"per": "cgroup"},
        {"host_root": str(HOSTS / "this_vm"), "cgroup_parents": {"memory": "/sys/fs/cgroup/memory/lw"}},
    )
    if shutil.which("perf") is None:
        pytest.skip("perf missing")
    assert "perf_event hierarchy" in (vm.check() or "")
    xeon = PerfCollector(
        {"per": "cgroup"},
        {
            "host_root": str(HOSTS / "xeon_11way"),
            "cgroup_parents": {
                "perf_event": "/sys/fs/cgroup/perf_event/docker",
                "memory": "/sys/fs/cgroup/memory/docker",
            },
        },
    )
    assert tools.perf_cgroups(xeon.root, xeon.context["cgroup_parents"]) == ["docker"]
    xeon.cgroups = ["docker"]
    argv = xeon.argv("perf_stat.csv")
    assert argv[argv.index("--for-each-cgroup") + 1] == "docker"


def test_perf_argv_layouts():
    cpu = PerfCollector({"per": "cpu", "interval_ms": 250, "events": ["task-clock"]}, {"duration_s": 10})
    argv = cpu.argv("x.csv")
    assert argv[:7] == ["perf", "stat", "-x,", "-I", "250", "-a", "-A"]
    # Bounded by the duration plus a safety margin even if nobody stops it.
    assert int(argv[argv.index("--interval-count") + 1]) == (10 + col_base.SAFETY_MARGIN_S) * 4
    assert "--per-core" in PerfCollector({"per": "core"}, {}).argv("x.csv")


# -- RDT ------------------------------------------------------------------------------------------


def test_rdt_check_on_this_vm_and_xeon_trees():
    vm = RdtCollector({}, {"host_root": str(HOSTS / "this_vm")})
    assert vm.check().startswith("rdt: the CPU reports no RDT monitoring")
    not_mounted = RdtCollector({"interface": "resctrl"}, {"host_root": str(HOSTS / "xeon_20way")})
    assert "resctrl is not mounted" in not_mounted.check()
    xeon = RdtCollector({}, {"host_root": str(HOSTS / "xeon_11way")})
    assert xeon.check() is None and xeon.interface == "resctrl"


def test_resctrl_sampler_reads_a_fake_tree_and_cleans_up(tmp_path):
    root = tmp_path / "root"
    shutil.copytree(HOSTS / "xeon_11way", root, symlinks=True)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    rdt = RdtCollector({"interval_ms": 20, "cores": [[0, 1], [2, 3]]}, {"host_root": str(root)})
    assert rdt.check() is None
    # A MON group under the root group gets a kernel-made mon_data; the fake tree needs it by hand.
    rdt.start(run_dir)
    assert rdt.alive(), rdt.describe()
    groups = rdt.describe()["groups"]
    assert list(groups) == ["g0:0+1", "g1:2+3"]
    for path in groups.values():
        assert Path(path, "cpus_list").read_text().strip() in ("0,1", "2,3")
        for domain in ("00", "01"):
            d = Path(path, "mon_data", f"mon_L3_{domain}")
            d.mkdir(parents=True)
            (d / "llc_occupancy").write_text("1000\n")
            (d / "mbm_total_bytes").write_text("0\n")
            (d / "mbm_local_bytes").write_text("Unavailable\n")
    for step in range(1, 4):
        time.sleep(0.05)
        for path in groups.values():
            (Path(path, "mon_data", "mon_L3_00", "mbm_total_bytes")).write_text(f"{step * 1_000_000}\n")
    for path in groups.values():  # in resctrl these are kernel files that go with the group
        shutil.rmtree(Path(path, "mon_data"))
        Path(path, "cpus_list").unlink()
    rdt.stop()
    rdt.stop()
    assert rdt.describe()["status"] == "stopped"
    assert not any(Path(p).exists() for p in groups.values())  # our MON groups are removed
    raw = (run_dir / "monitors" / "rdt" / "resctrl_samples.csv").read_text()
    assert raw.startswith("elapsed_ns,group,domain,")
    frame = parse_resctrl_samples(raw, per_domain=True)
    assert set(frame["group"]) == {"g0:0+1", "g1:2+3"}
    bandwidth = frame[frame["domain"] == "00"]["mem_bw_mbps"].dropna()
    assert (bandwidth >= 0).all() and bandwidth.gt(0).any()  # the counter we advanced
    assert frame["mem_bw_local_mbps"].isna().all()  # "Unavailable" stays missing


# -- blktrace --------------------------------------------------------------------------------------


def test_blktrace_checks_and_data_device():
    assert data_device(Root(HOSTS / "xeon_11way")) == "/dev/sda"  # /var/lib/docker on sda2 → the disk
    assert data_device(Root(HOSTS / "this_vm")) == "/dev/vda"
    vm = BlktraceCollector({}, {"host_root": str(HOSTS / "this_vm")})
    reason = vm.check()
    if shutil.which("blktrace") is None:
        assert reason == "blktrace: blktrace is not installed; apt-get install blktrace (or drop monitoring.blktrace)"
    else:
        assert "debugfs is not mounted" in reason
    bad = BlktraceCollector({"devices": ["/dev/sda2"]}, {"host_root": str(HOSTS / "xeon_11way")})
    if shutil.which("blktrace") and shutil.which("blkparse") and os.geteuid() == 0:
        assert "/dev/sda2 cannot be traced" in bad.check()


@pytest.mark.parametrize("missing", ["blktrace", "debugfs", "root"])
def test_blktrace_doctor_says_a_disk_can_be_traced_only_when_blktrace_can_run(monkeypatch, missing):
    monkeypatch.setattr(
        col_blktrace.shutil, "which", lambda tool: None if missing == "blktrace" else f"/usr/sbin/{tool}"
    )
    monkeypatch.setattr(col_blktrace, "is_root", lambda: missing != "root")
    host = {"debugfs_mounted": missing != "debugfs"}
    findings = BlktraceCollector.doctor(Root(HOSTS / "this_vm"), host, False, {"devices": ["/dev/vda"]})
    assert any(f.state == col_base.NO for f in findings)
    vda = [f for f in findings if f.text.startswith("/dev/vda")]
    assert [(f.state, f.text) for f in vda] == [
        (col_base.INFO, "/dev/vda has a trace interface; it can be traced once the problems above are fixed")
    ]
    monkeypatch.setattr(col_blktrace.shutil, "which", lambda tool: f"/usr/sbin/{tool}")
    monkeypatch.setattr(col_blktrace, "is_root", lambda: True)
    ready = BlktraceCollector.doctor(
        Root(HOSTS / "this_vm"), {"debugfs_mounted": True}, False, {"devices": ["/dev/vda"]}
    )
    assert [(f.state, f.text) for f in ready if f.text.startswith("/dev/vda")] == [
        (col_base.OK, "/dev/vda can be traced")
    ]


# -- cgroups (live) ---------------------------------------------------------------------------------


@pytest.fixture
def sandboxes():
    """A parent cgroup with two sandbox children in cpu, cpuacct, memory and freezer (v1); a busy
    process in sb-a with a 64 MiB memory limit; sb-b frozen (paused). Everything is removed
    afterwards."""
    name = f"faasprof-test-{os.getpid()}"
    controllers = ("cpu", "cpuacct", "memory", "freezer")
    parents = {c: Path(f"/sys/fs/cgroup/{c}/{name}") for c in controllers}
    busy = None
    try:
        for parent in parents.values():
            for child in ("sb-a", "sb-b"):
                (parent / child).mkdir(parents=True, exist_ok=True)
        (parents["memory"] / "sb-a" / "memory.limit_in_bytes").write_text(str(64 * 1024 * 1024))
        (parents["cpu"] / "sb-a" / "cpu.cfs_quota_us").write_text("20000")  # 0.2 CPU: throttled
        (parents["freezer"] / "sb-b" / "freezer.state").write_text("FROZEN")
        busy = subprocess.Popen([sys.executable, "-c", "import time\nwhile True: pass"])
        for c in controllers:
            (parents[c] / "sb-a" / "cgroup.procs").write_text(str(busy.pid))
        yield {c: str(p) for c, p in parents.items()}, parents
    finally:
        if busy is not None:
            busy.kill()
            busy.wait()
        if (parents["freezer"] / "sb-b").exists():
            (parents["freezer"] / "sb-b" / "freezer.state").write_text("THAWED")
        for parent in parents.values():
            for child in sorted(parent.glob("sb-*")) if parent.exists() else []:
                for _ in range(50):
                    try:
                        child.rmdir()
                        break
                    except OSError:
                        time.sleep(0.02)
            if parent.exists():
                parent.rmdir()


@needs_cgroup_v1
def test_cgroups_live_samples_sandboxes(tmp_path, sandboxes):
    paths, parents = sandboxes
    # What localwhisk gives on v1: CPU time is found in the separately mounted cpuacct hierarchy.
    given = {"cpu": paths["cpu"], "memory": paths["memory"], "freezer": paths["freezer"]}
    collector = CgroupCollector({"interval_ms": 100}, {"cgroup_parents": given})
    assert collector.check() is None
    assert collector.parents["cpuacct"] == paths["cpuacct"]
    collector.start(tmp_path)
    assert collector.alive()
    time.sleep(0.35)
    for c in ("cpu", "cpuacct", "memory", "freezer"):  # a sandbox created during the run
        (parents[c] / "sb-late").mkdir()
    time.sleep(0.3)
    collector.stop()
    collector.stop()
    for c in ("cpu", "cpuacct", "memory", "freezer"):
        (parents[c] / "sb-late").rmdir()
    described = collector.describe()
    assert described["status"] == "stopped" and described["samples"] >= 3
    assert described["sandboxes_seen"] == 3
    out = tmp_path / "monitors" / "cgroups"
    for name in ("command.txt", "stdout.log", "stderr.log", "samples.csv", "meta.json"):
        assert (out / name).exists()
    frame = parse_cgroup_samples((out / "samples.csv").read_text())
    assert set(frame["sandbox"]) == {".", "sb-a", "sb-b", "sb-late"}
    a = frame[frame["sandbox"] == "sb-a"]
    assert (a["memory_limit_bytes"] == 64 * 1024 * 1024).all()
    assert (a["cpu_cores"].dropna() >= 0).all() and a["cpu_cores"].notna().any()
    assert a["throttled_share"].notna().any()  # cpu.stat of v1 gives periods and throttling
    b = frame[frame["sandbox"] == "sb-b"]
    assert (b["cpu_cores"].dropna() == 0).all()  # nothing runs there
    assert (b["frozen"] == 1).all() and (a["frozen"] == 0).all()


@needs_cgroup_v1
def test_read_cgroup_v1_files(sandboxes):
    paths, _ = sandboxes
    sample = read_cgroup([Path(paths[c]) / "sb-a" for c in ("cpu", "cpuacct", "memory")])
    assert sample["memory_limit_bytes"] == 64 * 1024 * 1024
    assert sample["cpu_usage_ns"] is not None and sample["nr_periods"] is not None
    # Without cpuacct (localwhisk on v1 makes cpu, memory, freezer cgroups only): CPU time of the
    # processes inside, from /proc.
    no_acct = read_cgroup([Path(paths[c]) / "sb-a" for c in ("cpu", "memory")])
    assert no_acct["cpu_usage_ns"] is not None and no_acct["cpu_usage_ns"] >= 0
    assert no_acct["cpu_usage_ns"] == no_acct["cpu_user_ns"] + no_acct["cpu_system_ns"]
    empty = read_cgroup([Path(paths["memory"]) / "sb-b"])
    assert empty["cpu_usage_ns"] == 0  # no process inside: no CPU time
    assert read_cgroup([Path(paths["memory"]) / "gone"])["cpu_usage_ns"] is None  # nothing readable: missing


def test_cgroups_check_without_parents_names_the_fix(tmp_path):
    collector = CgroupCollector({}, {"cgroup_parents": {}, "host_root": str(HOSTS / "xeon_20way")})
    assert collector.check().startswith("cgroups: the platform reported no cgroup parent")
    gone = CgroupCollector({}, {"cgroup_parents": {"memory": str(tmp_path / "missing")}})
    assert "none of the cgroup parents exists" in gone.check()


# -- frames on the run clock ------------------------------------------------------------------------


@needs_perf
@needs_cgroup_v1
def test_frames_align_live_monitors_to_the_run_clock(tmp_path, sandboxes):
    paths, _ = sandboxes
    run_dir = rundir.create_run_dir(tmp_path, "frames")
    built = build_collectors(
        {"perf": {"events": ["task-clock", "page-faults"]}, "cgroups": {"interval_ms": 100}},
        {"cgroup_parents": paths, "duration_s": 1},
    )
    for collector in built:
        assert collector.check() is None
        collector.start(run_dir)
    clock = rundir.ClockAnchor()  # zero after the collectors started, as the invoker does
    time.sleep(0.5)
    for collector in built:
        collector.stop()
    manifest = rundir.new_manifest("frames", {}, clock, monitors=[c.describe() for c in built])
    rundir.write_manifest(run_dir, manifest)
    frames = load_run_monitors(run_dir, rundir.read_manifest(run_dir))
    assert set(frames) == {"perf", "cgroups"}
    perf = frames["perf"]
    offset = start_offset_s(built[0].describe(), manifest.clock)
    assert offset < 0  # perf started before the zero
    assert perf["t_s"].tolist() == pytest.approx((offset + perf["time_s"]).tolist())
    assert perf["t_s"].is_monotonic_increasing
    assert {"cpu_utilization", "ipc", "page_faults_per_s"} <= set(perf.columns)
    assert perf["ipc"].isna().all() or "cycles" in perf.columns
    cg = frames["cgroups"]
    assert cg["t_s"].min() < 0.1 and cg["t_s"].max() > 0.3
    # The wall-clock path gives the same offset within a few ms.
    wall = start_offset_s({"wall_ns_at_start": built[0].wall_ns_at_start}, manifest.clock)
    assert abs(wall - offset) < 0.05


def test_frames_skip_failed_and_empty_monitors(tmp_path):
    run_dir = rundir.create_run_dir(tmp_path, "empty")
    failed = BlktraceCollector({}, {"host_root": str(HOSTS / "this_vm")})
    failed.start(run_dir)  # check fails here (no blktrace or no debugfs): meta.json says why
    assert failed.describe()["status"] == "failed"
    perf_dir = rundir.monitor_dir(run_dir, "perf")
    rundir.write_json_atomic(
        perf_dir / "meta.json", {"format_version": 1, "wall_ns_at_start": 5, "monotonic_ns_at_start": 5}
    )
    (perf_dir / "perf_stat.csv").write_text("")
    clock = rundir.ClockAnchor(0, 0)
    assert load_run_monitors(run_dir, rundir.new_manifest("empty", {}, clock)) == {}


def test_frames_rdt_pqos_and_blktrace_offsets(tmp_path):
    """Recorded pqos/blkparse outputs placed in a run directory as their collectors would."""
    data = Path(__file__).resolve().parent / "data" / "monitoring"
    run_dir = rundir.create_run_dir(tmp_path, "offsets")
    clock = rundir.ClockAnchor(10_000_000_000, 1_000_000_000_000)
    rdt_dir = rundir.monitor_dir(run_dir, "rdt")
    # Three samples of the issue-28 CSV row, 100 ms apart; the first is dropped.
    text = data.joinpath("pqos", "pqos_csv_issue28.csv").read_text()
    header, row = text.splitlines()
    (rdt_dir / "pqos.csv").write_text("\n".join([header, row, row, row]) + "\n")
    rundir.write_json_atomic(
        rdt_dir / "meta.json",
        {
            "format_version": 1,
            "monotonic_ns_at_start": 9_500_000_000,
            "interval_ms": 100,
            "settings": {"peak_mbps": 2_000_000},
        },
    )
    blk_dir = rundir.monitor_dir(run_dir, "blktrace")
    marker = "  8,0    1        0     0.500000000     0  m   N faasprof-start\n"
    (blk_dir / "sda.blkparse.txt").write_text(
        marker + data.joinpath("blkparse", "blkparse_ext3_doc.txt").read_text().replace("     0.0", "     1.0")
    )
    rundir.write_json_atomic(
        blk_dir / "meta.json",
        {
            "format_version": 1,
            "monotonic_ns_at_start": 11_000_000_000,
            "marker": "faasprof-start",
            "marker_monotonic_ns": 11_200_000_000,
            "outputs": ["sda.blkparse.txt"],
        },
    )
    frames = load_run_monitors(
        run_dir, rundir.new_manifest("offsets", {}, clock, monitors=[{"name": "rdt", "status": "stopped"}])
    )
    rdt = frames["rdt"]
    assert rdt["t_s"].tolist() == pytest.approx([-0.4, -0.3])  # started 0.5 s before zero; samples 1, 2
    assert rdt["mem_bw_share"].iloc[0] == pytest.approx((976274.4 + 5309.5) * 1.048576 / 2e6)
    blk = frames["blktrace"]
    # Start 1.0 s after zero, marker 0.2 s later; the completion 0.51 s after the marker falls in
    # the first 1 s bucket, whose end is at 1.0 + 0.2 + 1.0.
    assert blk["t_s"].tolist() == pytest.approx([2.2]) and blk["aligned_by"].tolist() == ["marker"]
