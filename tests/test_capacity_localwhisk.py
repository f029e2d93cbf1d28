"""A capacity search with real short runs on the embedded localwhisk.

``spin`` burning 50 ms of CPU in a 128 MB pool (one sandbox) serves at most 20/s: the search
must find 6/s kept up and 24/s over-invoked, and keep every probe's run directory.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("localwhisk.embedded")

from experiments.capacity import find_capacity  # noqa: E402
from faasprof import rundir  # noqa: E402


def test_capacity_search_on_localwhisk(tmp_path):
    result = find_capacity(
        "spin",
        out_dir=tmp_path,
        duration_s=2.5,
        local_settings={"pause_grace_ms": 50, "user_memory_mb": 128},
        params={"service_ms": 50},
        start_rate=6,
        factor=4,
        tolerance=1.0,
        max_runs=4,
        cooldown_s=0,
        progress=False,
    )
    probes = result["probes"]
    assert [p["rate_rps"] for p in probes][:2] == [6, 24]
    assert probes[1]["mode"] == "over-invoked"
    low, high = result["bounds_rps"]
    assert 6 <= low < high <= 24 and high / low <= 2.0
    assert result["capacity_rps"] == low
    for probe in probes:
        assert rundir.read_manifest(probe["run_dir"]).to_json()["status"] == "complete"
        assert (Path(probe["run_dir"]) / "analysis" / "summary.json").exists()
    assert Path(result["result_file"]).exists()
