"""One rule decides the latency modes everywhere: ``reproduce``'s Figure 4 phases (absolute rates)
are judged with the capacity search's reference latency, as ``run`` judges fractions of a capacity
and ``capacity`` its probes, so a standing queue is never labelled balanced there."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from faasprof.experiments import analyzed, reproduce_runs
from tests.test_analyzer_synthetic import write_synthetic_run

# json_dumps's reference: its median completion latency at the capacity search's lowest rate.
REFERENCE = {"completion_latency_ms_p50": 40.0, "rate_rps": 1.0, "source": "lowest-rate probe capacity-json_dumps-1ps"}


def _reproduce_modes(tmp_path: Path, monkeypatch, reference):
    """reproduce's modes run of one phase, its platform a modelled one: every call waits behind
    the one before (500 ms of work at 1.9/s), a queue that stands still (no growth, all kept up)."""

    def execute(workload, out_dir, **options):
        run_dir, _ = write_synthetic_run(
            out_dir,
            duration_s=20.0,
            service_ms=500.0,
            pause_grace_ms=50.0,
            instances={"at-1x": {"application": "json_dumps", "distribution": "Uniform", "rate": 1.9}},
        )
        return run_dir

    monkeypatch.setattr(analyzed, "execute", execute)
    ctx = SimpleNamespace(runs=tmp_path, connection=None, monitoring={}, settings=lambda **extra: {})
    phases = [{"fraction": 1.0, "rate_rps": 1.9, "length_s": 20.0, "instance": "at-1x"}]
    return reproduce_runs._modes_run(ctx, phases, 50.0, reference=reference)["rows"][0]


def test_reproduce_labels_a_standing_queue_over_invoked_as_run_does(tmp_path, monkeypatch):
    row = _reproduce_modes(tmp_path / "with", monkeypatch, REFERENCE)
    assert row["p50_ms"] > 500 and row["mode"] == "over-invoked" and "standing queue" in row["reasons"]


def test_the_capacity_hands_its_reference_to_the_modes(tmp_path, monkeypatch):
    given = []
    monkeypatch.setattr(
        reproduce_runs,
        "_modes_run",
        lambda ctx, phases, grace, warmup=None, reference=None: (
            given.append(reference)
            or {
                "run_dir": "r",
                "rows": [{"instance": "a", "mode": "over-invoked", "rate_rps": 1.0, "fraction": 1.0}],
                "calls": [],
                "bandwidth": [],
            }
        ),
    )
    profile = SimpleNamespace(fractions=(0.5,), phase_s=10.0, min_phase_calls=10, escalations=1)
    ctx = SimpleNamespace(connection=None, profile=profile, progress=None)
    reproduce_runs.modes(ctx, {"capacity_rps": 20.0, "latency_reference": REFERENCE})
    assert given == [REFERENCE]
