"""A capacity search with real short runs on the embedded localwhisk.

``spin`` burning 25 ms of CPU in a 128 MB pool (one sandbox) serves at most 40/s: the search
must find 12/s kept up and 48/s over-invoked, and keep every probe's run directory (under
``<out>/capacity/``), each after the first judged against the first's latency. A search whose
every rate kept up reaches its ceiling: ``faasprof capacity`` says "≥ N/s" and stores it as a
lower bound, and a workload that takes a fraction of it is warned.

The rates are high enough for short probes: a probe's judged window holds at least
``MIN_PROBE_CALLS`` calls, 11 s at 6/s, 5.8 s at 12/s (``capacity.probe_windows``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("faasprof.localwhisk.embedded")

from faasprof import rundir  # noqa: E402
from faasprof.experiments import capacity_store  # noqa: E402
from faasprof.experiments.capacity import find_capacity, probes_dir  # noqa: E402
from faasprof.progress import Progress  # noqa: E402
from faasprof.workload.spec import workload_from_dict  # noqa: E402
from tests.helpers import run_cli  # noqa: E402


@pytest.mark.slow
def test_capacity_search_on_localwhisk(tmp_path):
    result = find_capacity(
        "spin",
        out_dir=tmp_path,
        duration_s=2.5,
        local_settings={"pause_grace_ms": 50, "user_memory_mb": 128},
        params={"service_ms": 25},
        start_rate=12,
        factor=4,
        tolerance=1.0,
        max_runs=4,
        cooldown_s=0,
    )
    probes = result["probes"]
    assert [p["rate_rps"] for p in probes][:2] == [12, 48]
    assert probes[1]["mode"] == "over-invoked"
    low, high = result["bounds_rps"]
    assert 12 <= low < high <= 48 and high / low <= 2.0
    interval = result["interval_rps"]
    assert interval[0] <= low < high <= interval[1] and result["capacity_rps"] == sum(interval) / 2
    # Each probe warmed the pool at its rate before its judged window.
    for probe in probes:
        instances = rundir.read_manifest(probe["run_dir"]).instances
        assert instances["warm-up"]["window_s"][1] == instances["probe"]["window_s"][0] > 0
    for probe in probes:
        assert rundir.read_manifest(probe["run_dir"]).to_json()["status"] == "complete"
        assert (Path(probe["run_dir"]) / "analysis" / "summary.json").exists()
        assert Path(probe["run_dir"]).parent == probes_dir(tmp_path)
    assert Path(result["result_file"]).parent == probes_dir(tmp_path)
    # The first probe is the reference; every later one carries it, and its analysis judged by it.
    reference = result["reference"]
    assert reference["rate_rps"] == 12 and reference["completion_latency_ms_p50"] == probes[0]["p50_ms"]
    for probe in probes[1:]:
        assert rundir.read_manifest(probe["run_dir"]).to_json()["latency_reference"] == {"spin": reference}
        summary = json.loads((Path(probe["run_dir"]) / "analysis" / "summary.json").read_text())
        assert (
            summary["instances"][0]["phases"][-1]["mode_evidence"]["reference_latency_ms"]
            == reference["completion_latency_ms_p50"]
        )
    assert not result["capacity_is_lower_bound"]
    # One localwhisk served every probe, as a long-lived platform does: a later probe starts on the
    # sandbox the first left (its first call resumed or warm, not a cold start).
    apihosts = {rundir.read_manifest(p["run_dir"]).platform.get("apihost") for p in probes}
    assert len(apihosts) == 1, apihosts
    first_states = []
    for probe in probes[1:]:
        records = [
            json.loads(line)
            for line in (Path(probe["run_dir"]) / rundir.ACTIVATIONS).read_text().splitlines()
            if line.strip()
        ]
        first = min(records, key=lambda r: r["start"])
        first_states.append(next(a["value"] for a in first["annotations"] if a["key"] == "containerState"))
    assert "cold" not in first_states, first_states


@pytest.mark.slow
def test_a_search_that_reaches_its_ceiling_reports_and_stores_a_lower_bound(tmp_path, isolated_home, monkeypatch):
    store = tmp_path / "store.json"
    monkeypatch.setenv(capacity_store.STORE_ENV, str(store))
    result = run_cli(
        "capacity",
        "spin",
        "--params",
        '{"service_ms": 1}',
        "--start-rate",
        "10",
        "--max-rate",
        "20",
        "--factor",
        "2",
        "--duration",
        "2.5",
        "--cooldown",
        "0",
        "--out",
        tmp_path / "runs",
        "--quiet",
        timeout=180,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert (
        lines[0].startswith("spin: capacity ≥ 20/s (lower bound), 2 probes (mode there: ")
        and "kept up at the ceiling --max-rate 20/s" in lines[0]
    )
    assert lines[1] == f"stored as a lower bound in {store}: workloads that take fractions of it are warned"
    assert Path(lines[-1]).parent == probes_dir(tmp_path / "runs")
    (entry,) = json.loads(store.read_text())["entries"].values()
    assert entry["capacity_rps"] == 20 and entry["lower_bound"] is True and entry["latency_reference"]["rate_rps"] == 10
    # A run whose rate is a fraction of it reads it from the store, and is warned. (The load now is
    # the search's: on a shared host it moved by more than one per CPU in a second, a second warning.)
    monkeypatch.setattr(capacity_store, "_load_now", lambda: entry["load_1min"]["before"])
    warnings = []
    workload = workload_from_dict(
        {
            "test_name": "f",
            "test_duration_in_seconds": 2,
            "instances": {"s": {"application": "spin", "distribution": "Uniform", "rate": {"capacity_fraction": 0.5}}},
        }
    )
    resolved = capacity_store.resolve_workload(
        workload, None, {}, tmp_path, measure=None, progress=Progress(warnings.append, quiet=True)
    )
    assert resolved.instance("s").rate == 10
    assert len(warnings) == 1 and warnings[0].startswith("warning: capacity of spin: ≥ 20/s, a lower bound: ")
    resolution = resolved.resolved()["as_given"]["capacity_resolution"]["s"]
    assert resolution["capacity_lower_bound"] is True and resolution["latency_reference"] == entry["latency_reference"]
