"""The collectors against the real thing: run on the testbed with ``pytest -m hardware``
(root, a PMU, Intel RDT with resctrl or pqos, blktrace and debugfs)."""

from __future__ import annotations

import time

import pytest

from faasprof import rundir
from faasprof.monitoring.collectors import build_collectors
from faasprof.monitoring.frames import load_run_monitors

pytestmark = pytest.mark.hardware


def _run(tmp_path, block: dict, seconds: float = 1.5):
    run_dir = rundir.create_run_dir(tmp_path, "hw")
    collectors = build_collectors(block, {"duration_s": seconds})
    for collector in collectors:
        reason = collector.check()
        assert reason is None, reason
        collector.start(run_dir)
        assert collector.alive(), collector.describe()
    clock = rundir.ClockAnchor()
    time.sleep(seconds)
    for collector in collectors:
        collector.stop()
    manifest = rundir.new_manifest("hw", {}, clock, monitors=[c.describe() for c in collectors])
    return load_run_monitors(run_dir, manifest), collectors


def test_perf_hardware_events_give_ipc(tmp_path):
    frames, _ = _run(tmp_path, {"perf": True})
    perf = frames["perf"]
    assert perf["ipc"].notna().any() and perf["branch_mpki"].notna().any()


def test_rdt_gives_occupancy_and_bandwidth(tmp_path):
    frames, collectors = _run(tmp_path, {"rdt": {"interval_ms": 100}})
    rdt = frames["rdt"]
    assert rdt["llc_occupancy_bytes"].notna().any()
    assert rdt["mem_bw_mbps"].notna().any()
    assert collectors[0].describe()["interface"] in ("resctrl", "pqos")


def test_blktrace_traces_the_data_device(tmp_path):
    frames, collectors = _run(tmp_path, {"blktrace": True}, seconds=2.0)
    described = collectors[0].describe()
    assert described["status"] == "stopped" and not described["errors"], described
    run_dir = next(tmp_path.glob("hw-*"))
    for name in described["outputs"]:
        # blkparse ran after the stop; an idle disk may complete nothing in 2 s, so the text may
        # hold only the summary, but it is there.
        assert (run_dir / "monitors" / "blktrace" / name).exists()
    assert described["marker_wall_ns"] is not None  # the time marker reached debugfs
