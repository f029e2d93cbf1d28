"""A run that measured other hosts, read back: a synthetic run directory written as the multi-host
contract says (``monitors/<host>/host.json`` and ``monitors/<host>/<collector>/``, through
``faasprof.rundir``), with recorded vmstat and cgroups output (``tests/data/monitoring``) on two
remote hosts: ``h1`` whose clock reads 2.5 s ahead and drifts 1 ms over the run, ``h2`` 0.75 s
behind and lost at 6 s. Checked: each remote sample lands on the run axis where its host's clock
says, every monitor frame's ``host`` column, where activations ran, the report and the plots per
host, a ``host.json`` of another version refused in one line."""

from __future__ import annotations

import datetime as dt
import json
import shutil

import pandas as pd
import pytest
from test_analyzer_synthetic import WALL_ZERO_NS, write_synthetic_run

from faasprof import rundir
from faasprof.analyzer import hosts as hosts_mod
from faasprof.analyzer.analysis import analyze_run, load_run
from faasprof.errors import FormatError
from faasprof.monitoring.frames import load_run_monitors
from tests.helpers import DATA_DIR, run_cli

S = 1_000_000_000
RUN_END_NS = 10 * S
VMSTAT = DATA_DIR / "monitoring" / "vmstat" / "vmstat_dev_vm.csv"
CGROUPS = DATA_DIR / "monitoring" / "cgroups" / "cgroups_dev_vm.csv"
H1_OFFSET_START, H1_OFFSET_END = 2_500_000_000, 2_501_000_000  # h1 ahead by 2.5 s, 1 ms more at the end
H2_OFFSET = -750_000_000
H1_STARTED_AT_NS, H2_STARTED_AT_NS, LOCAL_STARTED_AT_NS = 1 * S, 5 * S, S // 2
LOST_AT_NS = 6 * S
LOST_REASON = "ssh to 127.0.0.1 port 2223: connection reset by peer"


def h1_offset_at(run_ns: float) -> float:
    return H1_OFFSET_START + (H1_OFFSET_END - H1_OFFSET_START) * run_ns / RUN_END_NS


def _host_info(offset_start, offset_end, collectors, **more) -> dict:
    return {
        "address": "127.0.0.1",
        "port": 2222,
        "kernel": "6.1.0-28-amd64",
        "cpu_model": "AMD EPYC 7B13",
        "cpus": 2,
        "collectors": {
            name: {"name": name, "status": "stopped", "settings": {"interval_ms": 200}} for name in collectors
        },
        "skipped": {},
        "clock": {
            "offset_ns_start": offset_start,
            "uncertainty_ns_start": 150_000,
            "offset_ns_end": offset_end,
            "uncertainty_ns_end": None if offset_end is None else 120_000,
            "method": "ssh round trip midpoint, best of 5",
        },
        "status": "ok",
        "lost_reason": None,
        "lost_at_ns": None,
        **more,
    }


def _collector_dir(directory, raw_name: str, raw_text: str, wall_ns_at_start: int, monotonic_ns_at_start: int):
    (directory / raw_name).write_text(raw_text)
    (directory / "command.txt").write_text("proc-read /proc/stat /proc/vmstat\n")
    (directory / "stdout.log").write_text("")
    (directory / "stderr.log").write_text("")
    meta = {"wall_ns_at_start": wall_ns_at_start, "monotonic_ns_at_start": monotonic_ns_at_start, "layout": {}}
    rundir.write_json_atomic(directory / "meta.json", meta)


def write_multi_host_run(tmp_path, platform: dict | None = None, hosts: bool = True):
    """The synthetic run with a local vmstat and, with ``hosts``, h1 (vmstat, cgroups) and h2 (vmstat, lost)."""
    run_dir, _ = write_synthetic_run(tmp_path, duration_s=10.0)
    manifest = rundir.read_manifest(run_dir)
    manifest.host = {"hostname": "loadgen"}
    manifest.platform = platform or {"kind": "localwhisk", "embedded": True, "settings": {"pause_grace_ms": 50.0}}
    finished = dt.datetime.fromtimestamp((WALL_ZERO_NS + RUN_END_NS) / S, dt.timezone.utc)
    manifest.finished_utc = finished.isoformat(timespec="seconds")
    local = rundir.monitor_dir(run_dir, "vmstat")
    _collector_dir(local, "vmstat.csv", VMSTAT.read_text(), WALL_ZERO_NS + LOCAL_STARTED_AT_NS, LOCAL_STARTED_AT_NS)
    if hosts:
        h1 = _host_info(H1_OFFSET_START, H1_OFFSET_END, ["vmstat", "cgroups"], skipped={"rdt": "no resctrl on h1"})
        h2 = _host_info(
            H2_OFFSET, None, ["vmstat"], port=2223, status="lost", lost_reason=LOST_REASON, lost_at_ns=LOST_AT_NS
        )
        for name, info in (("h1", h1), ("h2", h2)):
            rundir.write_host_info(run_dir, name, info)
        # The remote anchors are read on the host's own clocks: its wall clock (ahead or behind)
        # and a monotonic clock of another boot, which must never be held against ours.
        h1_wall = WALL_ZERO_NS + H1_STARTED_AT_NS + int(h1_offset_at(H1_STARTED_AT_NS))
        for collector, raw_name, source in (("vmstat", "vmstat.csv", VMSTAT), ("cgroups", "samples.csv", CGROUPS)):
            directory = rundir.host_monitor_dir(run_dir, "h1", collector)
            _collector_dir(directory, raw_name, source.read_text(), h1_wall, 987_654_321_000_000)
        cut = "".join(VMSTAT.read_text().splitlines(keepends=True)[:5])  # the samples fetched before it was lost
        h2_wall = WALL_ZERO_NS + H2_STARTED_AT_NS + H2_OFFSET
        _collector_dir(rundir.host_monitor_dir(run_dir, "h2", "vmstat"), "vmstat.csv", cut, h2_wall, 12_000_000)
        manifest.update(hosts={"h1": rundir.manifest_entry(h1), "h2": rundir.manifest_entry(h2)})
    rundir.write_manifest(run_dir, manifest)
    return run_dir


def _elapsed_s(source) -> list[float]:
    """The end of each parsed interval, in the host's seconds since the collector started."""
    elapsed = pd.read_csv(source)["elapsed_ns"].drop_duplicates().tolist()
    return [value / 1e9 for value in elapsed[1:]]


def test_remote_samples_land_where_their_hosts_clock_says(tmp_path):
    run_dir = write_multi_host_run(tmp_path)
    frames = load_run_monitors(run_dir, rundir.read_manifest(run_dir))
    vmstat = frames["vmstat"]
    h1 = vmstat[vmstat["host"] == "h1"]["t_s"].tolist()
    h1_start_wall = WALL_ZERO_NS + H1_STARTED_AT_NS + h1_offset_at(H1_STARTED_AT_NS)
    for placed, elapsed in zip(h1, _elapsed_s(VMSTAT), strict=True):
        remote_wall = h1_start_wall + elapsed * S
        # run_ns = remote_wall - offset(run_ns) - wall zero, the offset linear in run time: solved for run_ns.
        drift_per_ns = (H1_OFFSET_END - H1_OFFSET_START) / RUN_END_NS
        expected = (remote_wall - WALL_ZERO_NS - H1_OFFSET_START) / (1 + drift_per_ns)
        assert placed * S == pytest.approx(expected, abs=1_000)  # within a microsecond
    # The first sample, 0.204 s after h1's collector started at run time 1 s: 0.1 ms of drift
    # interpolated at the start, 20 µs over the interval; a constant start offset misses by 120 µs.
    assert h1[0] == pytest.approx(1.204080535 - 0.0000204, abs=2e-6)
    h2 = vmstat[vmstat["host"] == "h2"]["t_s"].tolist()
    assert h2 == pytest.approx([5 + e for e in _elapsed_s(VMSTAT)[:3]], abs=1e-9)  # lost: the start offset holds
    local = vmstat[vmstat["host"] == "loadgen"]["t_s"].tolist()
    assert local == pytest.approx([0.5 + e for e in _elapsed_s(VMSTAT)], abs=1e-9)
    cgroups = frames["cgroups"]
    assert set(cgroups["host"]) == {"h1"}
    assert cgroups["t_s"].min() == pytest.approx(1 + 0.002791178 * (1 - 1e-4), abs=1e-9)  # its first read


def test_every_monitor_frame_has_its_host_column(tmp_path):
    run_dir = write_multi_host_run(tmp_path)
    frames = load_run_monitors(run_dir, rundir.read_manifest(run_dir))
    vmstat = frames["vmstat"]
    assert list(vmstat.columns[:2]) == ["t_s", "host"]
    assert isinstance(vmstat["host"].dtype, pd.CategoricalDtype)
    assert vmstat["host"].value_counts().to_dict() == {"loadgen": 6, "h1": 6, "h2": 3}
    assert set(frames["cgroups"]["sandbox"]) == {".", "sb-a", "sb-b"}


def test_a_single_host_run_is_labelled_local_or_by_its_hostname(tmp_path):
    run_dir = write_multi_host_run(tmp_path, hosts=False)
    manifest = rundir.read_manifest(run_dir)
    assert set(load_run_monitors(run_dir, manifest)["vmstat"]["host"]) == {"loadgen"}
    manifest.host = {}
    assert set(load_run_monitors(run_dir, manifest)["vmstat"]["host"]) == {"local"}


@pytest.mark.slow  # 5 s: the plots of three hosts
def test_analysis_reports_counters_per_host_with_offsets_and_the_lost_host(tmp_path):
    run_dir = write_multi_host_run(tmp_path)
    summary = analyze_run(run_dir)
    hosts = summary["hosts"]
    assert hosts["local"] == "loadgen"
    assert hosts["activations"]["host"] == "loadgen"
    h1, h2 = hosts["remote"]["h1"], hosts["remote"]["h2"]
    assert h1["clock"]["offset_ms_start"] == 2500.0 and h1["clock"]["uncertainty_ms_start"] == 0.15
    assert h1["skipped"] == {"rdt": "no resctrl on h1"} and set(h1["monitors"]) == {"vmstat", "cgroups"}
    assert (h2["status"], h2["lost_at_s"], h2["lost_reason"]) == ("lost", 6.0, LOST_REASON)
    assert h2["clock"]["offset_ms_end"] is None
    assert summary["monitors"]["vmstat"]["rows"] == 6  # the local host's, as in a single-host run
    assert h2["monitors"]["vmstat"]["rows"] == 3
    assert summary["outputs"]["plots"][-3:] == ["plots/monitors.png", "plots/monitors_h1.png", "plots/monitors_h2.png"]
    report = (run_dir / "analysis" / "report.html").read_text()
    assert "<h2>Hosts</h2>" in report
    assert f"lost at 6 s: {LOST_REASON}" in report
    assert "+2,500.000 ms ± 0.15 ms" in report and "+2,501.000 ms ± 0.12 ms" in report
    assert "-750.000 ms ± 0.15 ms" in report and "not measured" in report
    assert "Activations ran on: <b>loadgen</b>" in report
    for host in ("loadgen", "h1", "h2"):
        assert f"<td class='l'>{host}</td><td class='l'>vmstat</td>" in report
    assert "<td class='l'>h1</td><td class='l'>cgroups</td>" in report
    vmstat = pd.read_parquet(run_dir / "analysis" / "monitor_vmstat.parquet")
    assert set(vmstat["host"]) == {"loadgen", "h1", "h2"}
    invocations = pd.read_parquet(run_dir / "analysis" / "invocations.parquet", columns=["host"])
    assert set(invocations["host"]) == {"loadgen"}


def test_a_single_host_report_has_no_hosts_section(tmp_path):
    run_dir = write_multi_host_run(tmp_path, hosts=False)
    summary = analyze_run(run_dir, plots=False)
    assert summary["hosts"]["remote"] == {}
    report = (run_dir / "analysis" / "report.html").read_text()
    assert "<h2>Hosts</h2>" not in report and "<th class='l'>host</th>" not in report


@pytest.mark.parametrize(
    "platform, hosts, expected",
    [
        ({"kind": "localwhisk", "embedded": True}, ["h1", "h2"], "loadgen"),
        ({"kind": "localwhisk", "embedded": False, "apihost": "http://127.0.0.1:3233"}, [], "loadgen"),
        ({"kind": "localwhisk", "embedded": False, "apihost": "http://10.0.0.11:3233"}, ["h1"], "h1"),
        ({"kind": "localwhisk", "embedded": False, "apihost": "http://10.0.0.99:3233"}, ["h1"], "unknown"),
        ({"kind": "openwhisk", "apihost": "https://10.0.0.10", "source": "local"}, [], "loadgen"),
        ({"kind": "openwhisk", "apihost": "https://10.0.0.10", "source": "flags"}, ["h1"], "h1"),
        ({"kind": "openwhisk", "apihost": "https://10.0.0.10", "source": "flags"}, ["h1", "h2"], "unknown"),
        ({"kind": "openwhisk", "apihost": "https://10.0.0.10", "source": "flags"}, ["ctrl"], "unknown"),
        ({"kind": "openwhisk", "apihost": "https://10.0.0.10", "source": "flags"}, ["ctrl", "h1"], "h1"),
        ({"kind": "openwhisk", "apihost": "https://127.0.0.1", "source": "wskprops"}, [], "unknown"),
        ({"kind": "generic"}, ["h1"], "unknown"),
    ],
)
def test_activations_are_placed_only_where_the_platform_says(platform, hosts, expected):
    manifest = _attribution_manifest(platform, hosts)
    host, basis = hosts_mod.activation_host(manifest, manifest.host_infos)
    assert host == expected and basis and "\n" not in basis


def test_hosts_measured_from_another_group_hold_no_activation():
    platform = {"kind": "openwhisk", "apihost": "https://10.0.0.10", "source": "flags"}
    workload = {"monitoring": {"hosts": {"inventory": "testbed.ini", "group": "openwhisk_controller"}}}
    manifest = _attribution_manifest(platform, ["h1"], workload)
    assert hosts_mod.activation_host(manifest, manifest.host_infos)[0] == "unknown"
    manifest.workload = {"as_given": {"monitoring": {"hosts": {"inventory": "t.ini", "group": "my_invokers"}}}}
    assert hosts_mod.activation_host(manifest, manifest.host_infos)[0] == "h1"


def _attribution_manifest(platform: dict, hosts: list[str], workload: dict | None = None) -> rundir.Manifest:
    entries = {
        "h1": {"address": "10.0.0.11"},
        "h2": {"address": "10.0.0.12"},
        "ctrl": {"address": "10.0.0.10", "group": "openwhisk_controller"},
    }
    clock = {"offset_ns_start": 0, "uncertainty_ns_start": 1}
    return rundir.new_manifest(
        "t",
        workload or {},
        rundir.ClockAnchor(0, WALL_ZERO_NS),
        host={"hostname": "loadgen"},
        platform=platform,
        hosts={name: {**entries[name], "clock": clock, "status": "ok", "collectors": []} for name in hosts},
    )


def test_rows_without_an_activation_ran_nowhere(tmp_path):
    failures = {0: "no_record"}
    run_dir, _ = write_synthetic_run(tmp_path, duration_s=2.0, interrupt_at_s=1.0, failures=failures)
    manifest = rundir.read_manifest(run_dir)
    manifest.platform = {"kind": "localwhisk", "embedded": True}
    rundir.write_manifest(run_dir, manifest)
    frame = load_run(run_dir).invocations
    never_sent = frame["outcome"] == "not_sent"
    assert never_sent.any() and (frame.loc[never_sent, "host"] == "unknown").all()
    assert (frame.loc[~never_sent, "host"] == "local").all()  # row 0: an id, its record lost: it ran here


def _set_host_version(run_dir, version) -> str:
    path = run_dir / "monitors" / "h2" / "host.json"
    data = json.loads(path.read_text())
    data["format_version"] = version
    path.write_text(json.dumps(data))
    return str(path)


def test_a_host_json_of_another_version_is_refused(tmp_path):
    run_dir = write_multi_host_run(tmp_path)
    path = _set_host_version(run_dir, 2)
    with pytest.raises(FormatError) as caught:
        load_run(run_dir)
    assert str(caught.value) == f"{path}: format_version 2 is not 1; upgrade faasprof to read this run"


@pytest.mark.slow
def test_analyze_refuses_a_host_json_of_another_version_in_one_line(tmp_path, isolated_home):
    run_dir = write_multi_host_run(tmp_path, platform={"kind": "synthetic"})
    path = _set_host_version(run_dir, 3)
    result = run_cli("analyze", run_dir, "--no-plots")
    assert result.returncode == 2, result.stderr
    refused = [line for line in result.stderr.splitlines() if "host.json" in line]
    assert refused == [result.stderr.strip().splitlines()[-1]]  # one line, the last
    assert refused[0] == f"{path}: format_version 3 is not 1; upgrade faasprof to read this run"


def test_a_host_left_without_its_directory_still_reported(tmp_path):
    run_dir = write_multi_host_run(tmp_path)
    shutil.rmtree(run_dir / "monitors" / "h2")  # nothing fetched from it
    run = load_run(run_dir)
    assert set(run.hosts) == {"h1", "h2"} and run.hosts["h2"].status == "lost"
    assert set(run.monitors["vmstat"]["host"]) == {"loadgen", "h1"}


def test_a_local_host_named_as_a_remote_one_stays_apart(tmp_path):
    run_dir = write_multi_host_run(tmp_path)
    manifest = rundir.read_manifest(run_dir)
    manifest.host = {"hostname": "h1"}
    vmstat = load_run_monitors(run_dir, manifest)["vmstat"]
    assert vmstat["host"].value_counts().to_dict() == {"h1 (local)": 6, "h1": 6, "h2": 3}


def test_a_crashed_runs_host_is_read_from_the_manifest(tmp_path):
    # Killed before its end: the host's folders hold what arrived, host.json was never written.
    run_dir = write_multi_host_run(tmp_path)
    (run_dir / "monitors" / "h1" / "host.json").unlink()
    vmstat = load_run_monitors(run_dir, rundir.read_manifest(run_dir))["vmstat"]
    assert vmstat["host"].value_counts().to_dict() == {"loadgen": 6, "h1": 6, "h2": 3}


def test_a_host_lost_before_its_clock_was_measured_is_reported_without_samples(tmp_path):
    run_dir = write_multi_host_run(tmp_path)
    path = run_dir / "monitors" / "h2" / "host.json"
    data = json.loads(path.read_text())
    data["clock"].update(offset_ns_start=None, uncertainty_ns_start=None)
    path.write_text(json.dumps(data))
    run = load_run(run_dir)
    assert set(run.monitors["vmstat"]["host"]) == {"loadgen", "h1"}
    entry = hosts_mod.summary(run)["remote"]["h2"]
    assert entry["status"] == "lost" and entry["clock"]["offset_ms_start"] is None
    assert "not measured at start" in hosts_mod.summary_lines(hosts_mod.summary(run))[1]
