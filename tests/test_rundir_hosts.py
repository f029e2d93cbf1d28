"""The run directory's remote hosts (``faasprof.rundir.hosts``): ``monitors/<host>/host.json``
written and read back, unknown versions refused in one line, host directories apart from the local
collectors', the manifest's ``hosts``, and the clock placement of a remote time on the run axis."""

from __future__ import annotations

import json

import pytest

from faasprof import rundir
from faasprof.errors import ConfigError, FormatError
from faasprof.rundir.hosts import HostClock

S = 1_000_000_000
WALL_ZERO = 1_790_000_000 * S


def _info(**changes) -> dict:
    info = {
        "address": "127.0.0.1",
        "port": 2222,
        "kernel": "6.1.0-28-amd64",
        "cpu_model": "AMD EPYC 7B13",
        "cpus": 2,
        "collectors": {"vmstat": {"name": "vmstat", "status": "stopped"}},
        "skipped": {"rdt": "no resctrl on h1"},
        "clock": {
            "offset_ns_start": 2_500_000_000,
            "uncertainty_ns_start": 150_000,
            "offset_ns_end": 2_500_400_000,
            "uncertainty_ns_end": 120_000,
            "method": "ssh round trip midpoint, best of 5",
        },
        "status": "ok",
        "lost_reason": None,
        "lost_at_ns": None,
    }
    info.update(changes)
    return info


def test_host_info_written_and_read_back_beside_local_collectors(tmp_path):
    path = rundir.write_host_info(tmp_path, "h1", _info())
    assert path == tmp_path / "monitors" / "h1" / "host.json"
    assert json.loads(path.read_text())["format_version"] == 1
    collector = rundir.host_monitor_dir(tmp_path, "h1", "vmstat")
    assert collector.is_dir() and collector == tmp_path / "monitors" / "h1" / "vmstat"
    rundir.monitor_dir(tmp_path, "cgroups")
    assert list(rundir.monitor_dirs(tmp_path)) == ["cgroups"]  # the host's directory is no collector's
    assert list(rundir.host_dirs(tmp_path)) == ["h1"]
    assert list(rundir.host_monitor_dirs(tmp_path, "h1")) == ["vmstat"]
    info = rundir.read_host_info(tmp_path / "monitors" / "h1")
    assert (info.host, info.status, info.collectors, info.cpus) == ("h1", "ok", ("vmstat",), 2)
    assert info.clock.offset_ns_end == 2_500_400_000
    assert info.collector_description("vmstat")["status"] == "stopped"


@pytest.mark.parametrize("version", [2, 0, None, "1"])
def test_host_info_of_another_version_is_refused_in_one_line(tmp_path, version):
    rundir.write_host_info(tmp_path, "h1", _info())
    path = tmp_path / "monitors" / "h1" / "host.json"
    data = json.loads(path.read_text())
    data["format_version"] = version
    path.write_text(json.dumps(data))
    with pytest.raises(FormatError) as caught:
        rundir.read_host_info(path.parent)
    message = str(caught.value)
    assert (
        "\n" not in message and str(path) in message and "format_version" in message and "upgrade faasprof" in message
    )


@pytest.mark.parametrize(
    "changes, field",
    [
        ({"status": "gone"}, "status"),
        ({"clock": {"offset_ns_start": 1.5, "uncertainty_ns_start": 1}}, "clock.offset_ns_start"),
        ({"clock": {"offset_ns_start": 1, "uncertainty_ns_start": 1, "offset_ns_end": "x"}}, "clock.offset_ns_end"),
        ({"lost_at_ns": "soon"}, "lost_at_ns"),
    ],
)
def test_a_damaged_host_info_is_refused_before_it_is_written(tmp_path, changes, field):
    with pytest.raises(FormatError, match=field.replace(".", r"\.")):
        rundir.write_host_info(tmp_path, "h1", _info(**changes))
    assert not (tmp_path / "monitors" / "h1" / "host.json").exists()


@pytest.mark.parametrize("name", ["", "a/b", "..", "h 1", "h1;rm"])
def test_a_host_name_that_cannot_name_a_directory_is_refused(tmp_path, name):
    with pytest.raises(ConfigError, match="inventory"):
        rundir.write_host_info(tmp_path, name, _info())
    with pytest.raises(ConfigError):
        rundir.host_monitor_dir(tmp_path, name, "vmstat")


def test_manifest_hosts_typed_and_kept(tmp_path):
    entry = rundir.manifest_entry({"format_version": 1, "host": "h1", **_info()})
    assert entry["collectors"] == ["vmstat"]
    manifest = rundir.new_manifest("t", {}, rundir.ClockAnchor(0, WALL_ZERO), hosts={"h1": entry})
    rundir.write_manifest(tmp_path, manifest)
    back = rundir.read_manifest(tmp_path)
    assert back.hosts["h1"]["clock"]["offset_ns_start"] == 2_500_000_000
    assert back.host_infos["h1"].collectors == ("vmstat",)
    assert back.local_host_name == "local"
    data = json.loads((tmp_path / "manifest.json").read_text())
    data["hosts"]["h1"]["format_version"] = 7
    (tmp_path / "manifest.json").write_text(json.dumps(data))
    with pytest.raises(FormatError, match=r"hosts\.h1: format_version 7 is not 1; upgrade faasprof"):
        rundir.read_manifest(tmp_path)


def test_a_manifest_without_hosts_writes_none():
    manifest = rundir.new_manifest("t", {}, rundir.ClockAnchor(0, WALL_ZERO), host={"hostname": "box"})
    assert "hosts" not in manifest.to_json() and manifest.local_host_name == "box"


def test_remote_time_placed_with_start_offset_only():
    clock = HostClock(offset_ns_start=2_500_000_000, uncertainty_ns_start=1)
    # The host's clock reads 2.5 s ahead: its 12.5 s after our zero is our 10 s.
    assert clock.run_ns(WALL_ZERO + 12_500_000_000, WALL_ZERO, 20 * S) == 10 * S
    assert clock.rate(20 * S) == 1.0


def test_remote_time_placed_with_drift_interpolated():
    # +2.5 s at the start, +2.502 s at the end of a 20 s run: 100 µs per second of drift.
    clock = HostClock(2_500_000_000, 1, offset_ns_end=2_502_000_000, uncertainty_ns_end=1)
    assert clock.run_ns(WALL_ZERO + 2_500_000_000, WALL_ZERO, 20 * S) == 0
    assert clock.run_ns(WALL_ZERO + 22_502_000_000, WALL_ZERO, 20 * S) == pytest.approx(20 * S, abs=1)
    # Half-way through, the offset is half-way too.
    assert clock.run_ns(WALL_ZERO + 12_501_000_000, WALL_ZERO, 20 * S) == pytest.approx(10 * S, abs=1)
    assert clock.rate(20 * S) == pytest.approx(20 / 20.002)
    # The exchanges' own times, when recorded, are the interpolation's ends.
    timed = HostClock(2_500_000_000, 1, 2_502_000_000, 1, at_ns_start=-1 * S, at_ns_end=19 * S)
    assert timed.run_ns(WALL_ZERO + 1_500_000_000, WALL_ZERO, 20 * S) == -1 * S
    assert timed.run_ns(WALL_ZERO + 21_502_000_000, WALL_ZERO, None) == pytest.approx(19 * S, abs=1)


def test_host_json_written_as_given_and_read_as_a_dict(tmp_path):
    # The engine's plain writer takes the object as it is; the reader still checks the version.
    rundir.write_host_json(tmp_path, "h2", {"host": "h2", "status": "ok"})
    assert rundir.read_host_json(tmp_path / "monitors" / "h2") == {"format_version": 1, "host": "h2", "status": "ok"}
    assert rundir.read_host_json(tmp_path / "monitors") is None  # no host.json: not a host's folder
    (tmp_path / "monitors" / "h2" / "host.json").write_text('{"format_version": 2}')
    with pytest.raises(FormatError, match=r"host\.json: format_version 2 is not 1; upgrade faasprof"):
        rundir.read_host_json(tmp_path / "monitors" / "h2")


def test_a_host_lost_before_its_clock_was_measured_is_read_but_not_placed(tmp_path):
    clock = {"offset_ns_start": None, "uncertainty_ns_start": None, "offset_ns_end": None, "uncertainty_ns_end": None}
    rundir.write_host_info(tmp_path, "h1", _info(clock=clock, status="lost", lost_reason="lost while starting"))
    info = rundir.read_host_info(tmp_path / "monitors" / "h1")
    assert not info.clock.placeable and info.clock.rate(20 * S) == 1.0
    with pytest.raises(ValueError):
        info.clock.run_ns(WALL_ZERO, WALL_ZERO, 20 * S)
    with pytest.raises(FormatError, match=r"clock\.offset_ns_start is missing"):
        rundir.write_host_info(tmp_path, "h3", _info(clock={"uncertainty_ns_start": 1}))
