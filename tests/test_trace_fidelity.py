"""The trace fidelity report (faasprof.analyzer.trace_fidelity): its measures on known inputs, and a
sampled trace run end to end on the embedded localwhisk with `run --analyze`."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import numpy as np
import pytest

from faasprof.analyzer.trace_fidelity import _duration_fit, _within_minute
from faasprof.rundir import read_invocations, read_manifest
from faasprof.workload.trace_synth import write_day
from tests.helpers import run_cli


def test_durations_drawn_from_the_percentiles_fit_them_and_others_do_not():
    percentiles = {"0": 1.0, "1": 1.5, "25": 4.0, "50": 5.0, "75": 7.0, "99": 20.0, "100": 30.0}
    probs = np.array([0, 1, 25, 50, 75, 99, 100]) / 100.0
    values = np.array(list(percentiles.values()))
    drawn = np.interp(np.random.default_rng(1).uniform(0, 1, 2000), probs, values)
    fit = _duration_fit(drawn, percentiles)
    assert fit["ks_statistic"] < 0.05 and fit["wasserstein_ms"] < 0.5 and fit["trace_p50_ms"] == 5.0
    off = _duration_fit(drawn + 10.0, percentiles)
    assert off["ks_statistic"] > 0.5 and off["wasserstein_ms"] == pytest.approx(10.0, abs=0.5)
    assert _duration_fit(np.empty(0), percentiles) == {"n": 0}


def test_durations_in_whole_milliseconds_are_held_to_the_trace_at_that_resolution():
    """A function of ~1 ms executed exactly as the trace says, recorded in whole ms as OpenWhisk does:
    against the continuous distribution it read KS 0.3-0.9; at the records' resolution it fits."""
    percentiles = {"0": 0.2, "1": 0.3, "25": 0.6, "50": 0.8, "75": 1.1, "99": 2.5, "100": 4.0}
    probs = np.array([0, 1, 25, 50, 75, 99, 100]) / 100.0
    drawn = np.interp(np.random.default_rng(3).uniform(0, 1, 2000), probs, np.array(list(percentiles.values())))
    fit = _duration_fit(np.round(drawn), percentiles)
    assert fit["resolution_ms"] == 1.0 and fit["ks_statistic"] < 0.05, fit
    assert _duration_fit(drawn, percentiles)["resolution_ms"] is None
    assert _duration_fit(np.round(drawn) + 2.0, percentiles)["ks_statistic"] > 0.5


def test_arrivals_within_a_minute_against_the_spread():
    rng = np.random.default_rng(2)
    minutes = np.repeat(np.arange(5), 200)
    uniform = 60.0 * minutes + rng.uniform(0, 60, minutes.size)
    assert _within_minute(uniform, minutes, "uniform")["ks_statistic"] < 0.05
    bunched = 60.0 * minutes + rng.uniform(0, 6, minutes.size)
    assert _within_minute(bunched, minutes, "uniform")["ks_statistic"] > 0.8
    even = 60.0 * minutes + np.tile((np.arange(200) + 0.5) * 0.3, 5)
    assert _within_minute(even, minutes, "equidistant")["median_gap_error"] == pytest.approx(0.0, abs=1e-9)


@pytest.mark.slow
def test_a_sampled_trace_runs_with_its_fidelity_report(tmp_path, isolated_home):
    """No calibration stored: `trace sample` measures it on the embedded localwhisk, where the run goes."""
    day = write_day(tmp_path / "day", functions=400, seed=9, median_duration_ms=2.0, median_rate_per_min=0.5)
    env = {"FAASPROF_CACHE_DIR": str(tmp_path / "cache")}
    sample = tmp_path / "sample"
    done = run_cli(
        "trace", "sample", day.invocations.parent, "-n", "6", "--minutes", "700-700", "--warmup-minutes", "0",
        "--scale-to", "2", "--no-alloc", "--seed", "2", "--out", sample, env=env, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "calibrating on localwhisk isolation=auto" in done.stderr and "calibration stored in" in done.stderr
    calibration = json.loads((sample / "workload.json").read_text())["trace"]["calibration"]
    assert calibration["platform"] == "localwhisk isolation=auto" and calibration["host"] == socket.gethostname()
    # The platform's own overhead is in the calibration: spin's offset is well above the native 0.1 ms.
    assert calibration["spin_offset_ms"] > 0.3 and 0.5 < calibration["spin_slope"] < 2.0
    assert read_manifest(Path(calibration["run_dir"])).status == "complete"
    runs = tmp_path / "runs"
    ran = run_cli("run", sample / "workload.json", "--out", runs, "--analyze", env=env, timeout=400)
    (run_dir,) = list(runs.iterdir())
    manifest = read_manifest(run_dir)
    assert manifest.status == "complete", ran.stderr
    summary = json.loads((run_dir / "analysis" / "summary.json").read_text())
    fidelity = summary["trace_fidelity"]
    planned = len(read_invocations(run_dir))
    assert fidelity["total"]["exact"] and fidelity["total"]["sent"] == fidelity["total"]["trace"] == planned
    assert len(fidelity["functions"]) == 6
    measured = [f for f in fidelity["functions"] if f["duration"]["n"]]
    assert measured and all(
        {"wasserstein_ms", "ks_statistic", "executed_p50_ms"} <= set(f["duration"]) for f in measured
    )
    assert set(fidelity["sample_distance"]) == {"rate_per_min", "duration_ms", "memory_mb"}
    assert (
        fidelity["calibration"]["run_platform"] == "localwhisk (embedded)"
        and fidelity["calibration"]["warning"] is None
    )
    assert (run_dir / "analysis" / "plots" / "trace_sent_vs_trace.png").stat().st_size > 0
    assert "Trace fidelity" in (run_dir / "analysis" / "report.html").read_text()
    checked = manifest.to_json()["self_check"]
    assert checked["limits"]["behind_abort"] == 0.2 and checked["per_second"]
