"""The capacity store keeps each capacity's interval and the host's load during its search, flags a
capacity measured at a load far from today's, and says before a run which band of the platform's
each capacity-relative rate falls in (or that the balanced band is empty here, and why)."""

from __future__ import annotations

import json
import os

import pytest

from faasprof.analyzer import stats
from faasprof.experiments import capacity_store
from faasprof.platforms.openwhisk.connection import Connection, resolve_connection, write_local_props
from faasprof.progress import Progress
from faasprof.workload.spec import workload_from_dict
from tests.helpers import run_cli

QUICK_START = {
    "test_name": "modes",
    "test_duration_in_seconds": 30,
    "instances": {
        "under": {
            "application": "json_dumps",
            "distribution": "Uniform",
            "rate": {"capacity_fraction": 0.05},
            "activity_window": [0, 10],
        },
        "balanced": {
            "application": "json_dumps",
            "distribution": "Uniform",
            "rate": {"capacity_fraction": 0.5},
            "activity_window": [10, 20],
        },
        "over": {
            "application": "json_dumps",
            "distribution": "Uniform",
            "rate": {"capacity_fraction": 2.0},
            "activity_window": [20, 30],
        },
    },
}
RESULT = {
    "capacity_rps": 59.0,
    "plus_minus_rps": 6.0,
    "interval_rps": [53.0, 65.0],
    "capacity_text": "59 ± 6/s, 7 probes",
    "load_1min": {"before": 1.5, "peak": 2.5, "cpus": 2},
    "bounds_rps": [53.0, 65.0],
    "result_file": "runs/capacity/c.json",
}


def _key():
    return capacity_store.key(
        capacity_store.host_identity(), capacity_store.platform_identity(None, {}), "json_dumps", None
    )


def test_the_interval_and_the_load_are_stored_and_a_version_1_store_still_reads(tmp_path):
    path = tmp_path / "store.json"
    old = {
        "format_version": 1,
        "entries": {"k1": {"capacity_rps": 40.0, "lower_bound": False, "measured_utc": "2026-01-01T00:00:00Z"}},
    }
    path.write_text(json.dumps(old))
    assert capacity_store.lookup("k1", path)["capacity_rps"] == 40.0
    entry = capacity_store.record("k2", RESULT, path)
    assert entry["load_1min"] == {"before": 1.5, "peak": 2.5, "cpus": 2} and entry["interval_rps"] == [53.0, 65.0]
    assert capacity_store.describe("json_dumps", entry) == "59 ± 6/s, 7 probes"
    stored = json.loads(path.read_text())
    assert stored["format_version"] == 2 and stored["entries"]["k1"]["capacity_rps"] == 40.0  # the old entry kept
    assert capacity_store.describe("json_dumps", stored["entries"]["k1"]) == "40/s"


def test_a_capacity_measured_at_a_far_load_is_flagged():
    entry = {"load_1min": {"before": 1.5, "peak": 2.5, "cpus": 2}, "measured_utc": "2026-11-26T22:00:00Z"}
    line = capacity_store.load_warning("json_dumps", entry, 9.4, 2)
    assert line == (
        "capacity of json_dumps was measured at a 1-min load of 1.5–2.5 (2 CPUs, 2026-11-26T22:00:00Z); the load is 9.4 now, "
        "so it may not hold today: measure it again with faasprof capacity json_dumps"
    )
    assert capacity_store.load_warning("json_dumps", entry, 4.0, 2) is None  # within a CPU's worth per CPU
    assert (
        capacity_store.load_warning("json_dumps", {"load_1min": {"before": 20.0, "peak": 20.0}}, 1.0, 2) is not None
    )  # quieter now
    assert capacity_store.load_warning("json_dumps", {}, 9.4, 2) is None  # a version-1 entry: load unknown


def test_run_warns_in_one_line_when_taking_a_capacity_of_another_load(tmp_path, monkeypatch):
    monkeypatch.setenv(capacity_store.STORE_ENV, str(tmp_path / "store.json"))
    capacity_store.record(_key(), RESULT)
    lines = []
    monkeypatch.setattr(capacity_store, "_load_now", lambda: 30.0)
    workload = workload_from_dict(json.loads(json.dumps(QUICK_START)))
    capacity_store.resolve_workload(workload, None, {}, tmp_path, measure=None, progress=Progress(lines.append))
    assert sum("may not hold today" in line for line in lines) == 1
    lines.clear()
    monkeypatch.setattr(capacity_store, "_load_now", lambda: 2.0)
    capacity_store.resolve_workload(workload, None, {}, tmp_path, measure=None, progress=Progress(lines.append))
    assert not any("may not hold today" in line for line in lines)


def test_the_quick_start_says_before_running_which_band_each_phase_is_in_or_that_balanced_is_empty(
    tmp_path, monkeypatch
):
    monkeypatch.setenv(capacity_store.STORE_ENV, str(tmp_path / "store.json"))
    monkeypatch.setattr(capacity_store, "_load_now", lambda: 2.0)
    workload = workload_from_dict(json.loads(json.dumps(QUICK_START)))
    capacity_store.record(_key(), RESULT)
    lines = []
    capacity_store.resolve_workload(workload, None, {}, tmp_path, measure=None, progress=Progress(lines.append))
    bands = [line.split(", in the ")[1].split(" band")[0] for line in lines if ", in the " in line]
    assert bands == ["under-invoked", "balanced", "over-invoked"]  # 2.95/s, 29.5/s, 118/s around 20/s and 53-65/s
    # Capacity 11.4/s under localwhisk's 50 ms pause grace: no rate is both warm and sustained.
    capacity_store.record(
        _key(),
        {**RESULT, "capacity_rps": 11.4, "interval_rps": [10.8, 12.0], "capacity_text": "11.4 ± 0.6/s, 6 probes"},
    )
    lines.clear()
    capacity_store.resolve_workload(workload, None, {}, tmp_path, measure=None, progress=Progress(lines.append))
    empty = [line for line in lines if "is empty here" in line]
    assert len(empty) == 1 and "is empty here: a sandbox paused after 50 ms idle stays warm only above 20/s" in empty[0]
    assert "its capacity here is 11.4/s" in empty[0] and "a pause grace of 250 ms" in empty[0]
    # ...said before the run: resolve_workload returns the workload the run takes.
    assert lines.index(empty[0]) < len(lines)
    # A longer pause grace (the workload's or --pause-grace) opens the band.
    lines.clear()
    capacity_store.resolve_workload(
        workload, None, {"pause_grace_ms": 250}, tmp_path, measure=None, progress=Progress(lines.append)
    )
    assert not any("is empty here" in line for line in lines)


@pytest.mark.slow
def test_plan_says_the_balanced_band_is_empty_before_anything_runs(tmp_path, isolated_home):
    path = tmp_path / "modes.json"
    path.write_text(json.dumps(QUICK_START))
    env = {capacity_store.STORE_ENV: str(tmp_path / "store.json")}
    capacity_store.record(
        _key(),
        {**RESULT, "capacity_rps": 11.4, "interval_rps": [10.8, 12.0], "capacity_text": "11.4 ± 0.6/s, 6 probes"},
        path=tmp_path / "store.json",
    )
    plan = run_cli("plan", path, env=env)
    assert plan.returncode == 0 and "Traceback" not in plan.stderr, plan.stderr
    warning = [line for line in plan.stderr.splitlines() if "is empty here" in line]
    assert len(warning) == 1 and warning[0].startswith("warning: the balanced band of json_dumps is empty here"), (
        plan.stderr
    )
    assert "instances.balanced: 0.5 × 11.4/s = 5.7/s, in the under-invoked band of json_dumps" in plan.stdout


def test_a_rate_given_a_band_is_placed_inside_it_where_the_fraction_misses_it(tmp_path, monkeypatch):
    monkeypatch.setenv(capacity_store.STORE_ENV, str(tmp_path / "store.json"))
    monkeypatch.setattr(capacity_store, "_load_now", lambda: 2.0)
    data = json.loads(json.dumps(QUICK_START))
    for name, band in (("under", "under-invoked"), ("balanced", "balanced"), ("over", "over-invoked")):
        data["instances"][name]["rate"]["band"] = band
    workload = workload_from_dict(data)
    # 24.3 ± 1.7/s: half of it (12/s) is below the 20/s at which a sandbox stays warm under 50 ms.
    capacity_store.record(
        _key(),
        {**RESULT, "capacity_rps": 24.3, "interval_rps": [22.6, 26.0], "capacity_text": "24.3 ± 1.7/s, 7 probes"},
    )
    lines = []
    resolved = capacity_store.resolve_workload(
        workload, None, {}, tmp_path, measure=None, progress=Progress(lines.append)
    )
    rates = {name: resolved.instance(name).rate for name in ("under", "balanced", "over")}
    assert rates["under"] == 30 / 8.0  # 1.2/s left 10 calls in its 8 s steady window: raised to 30, still below 10/s
    assert 20.0 < rates["balanced"] < 22.6  # placed: the middle of 20-22.6/s
    assert rates["over"] == pytest.approx(2 * 24.3)  # above the interval's 26/s already
    placed = [line for line in lines if "placed at" in line]
    assert len(placed) == 2 and placed[1].startswith(
        "instances.balanced: 0.5 × 24.3/s = 12.15/s, outside the balanced band: placed at 21.26/s"
    )
    # 20-22.6/s leaves no margin for a capacity that moves by x2: said before the run.
    (empty,) = [line for line in lines if "is empty here" in line]
    assert "a balanced phase needs 1.25 × 20/s up to 22.6/2/s, none" in empty and "pause grace of 125 ms" in empty
    assert resolved.resolved()["as_given"]["capacity_resolution"]["balanced"]["rate_per_s"] == round(
        rates["balanced"], 6
    )
    # Without a band the fraction is taken as given.
    assert workload_from_dict(json.loads(json.dumps(QUICK_START))).instance("balanced").capacity_band is None


def test_a_balanced_phase_is_placed_where_it_holds_when_the_host_gets_busier():
    """The quick start of stop 38: capacity 72.9/s (kept up at 67.9/s), its balanced phase at half
    of it, 36.5/s, ran over-invoked when other work started after the search (execution 13 → 166
    ms). It is placed where it holds: >= 1.25 × the warm rate and <= half the highest rate kept up."""
    assert capacity_store.balanced_hold(20.0, 67.94) == (25.0, 33.97)
    placed = capacity_store.place_in_band("balanced", 0.5 * 72.94, 20.0, 67.94, 77.94, 13.0)
    assert placed == pytest.approx((25.0 * 33.97) ** 0.5)  # 29.1/s; before: 36.5/s
    # A fraction that holds is kept; a band with no holding rate falls back to the warm-kept middle.
    assert capacity_store.place_in_band("balanced", 30.0, 20.0, 67.94, 77.94, 13.0) == 30.0
    assert capacity_store.place_in_band("balanced", 12.15, 20.0, 22.6, 26.0, 13.0) == pytest.approx(
        (20.0 * 22.6) ** 0.5
    )


def test_an_under_invoked_phase_is_given_calls_enough_for_a_mode():
    # 0.05 × 27.9/s over a 15 s phase left 18 calls in its 13 s steady window: "unknown".
    assert capacity_store.steady_seconds((0, 15)) == 13.0 and capacity_store.steady_seconds((0, 5)) == 4.0
    rate = capacity_store.place_in_band("under-invoked", 0.05 * 27.9, 20.0, 25.98, 29.81, 13.0)
    assert rate * 13.0 == pytest.approx(capacity_store.MODE_CALLS) and rate < 10.0  # still two pause graces apart
    assert (
        capacity_store.place_in_band("under-invoked", 0.05 * 27.9, 4.0, 25.98, 29.81, 13.0) == 2.0
    )  # at most half the warm rate
    assert capacity_store.MODE_CALLS >= stats.MIN_SAMPLES_FOR_MODE
    assert (capacity_store.ANALYZER_WARMUP_MAX_S, capacity_store.ANALYZER_WARMUP_FRACTION) == (
        stats.WARMUP_MAX_S,
        stats.WARMUP_FRACTION,
    )


def test_a_running_platforms_recorded_pause_grace_places_the_bands():
    """OpenWhisk (standalone via `local start`, or the testbed) records its pause grace with the
    connection: the bands are placed by it as for the embedded localwhisk (it was ignored, and the
    quick start's balanced phase ran at 0.5 x 27.9/s = 13.9/s, under the 20/s warm rate)."""
    recorded = Connection(
        apihost="http://127.0.0.1:3233", auth="u:k", source="local", settings={"pause_grace_ms": 50.0}
    )
    assert capacity_store.pause_grace_of(recorded, None) == 50.0
    assert capacity_store.pause_grace_of(Connection(apihost="http://127.0.0.1:3233", auth="u:k"), None) is None
    workload = workload_from_dict(
        {
            "test_name": "q",
            "test_duration_in_seconds": 30,
            "random_seed": 1,
            "instances": {
                "balanced": {
                    "application": "json_dumps",
                    "distribution": "Uniform",
                    "rate": {"capacity_fraction": 0.5, "band": "balanced"},
                    "activity_window": [0, 30],
                }
            },
        },
        origin="q",
    )
    capacities = {"balanced": {"capacity_rps": 27.9, "interval_rps": [26.0, 29.8]}}
    _, lines = capacity_store.band_lines(workload, capacities, capacity_store.pause_grace_of(recorded, None))
    assert capacities["balanced"]["rate_rps"] == pytest.approx((20.0 * 26.0) ** 0.5, rel=1e-4)
    assert "placed at" in lines[0]


def test_a_capacity_belongs_to_what_served_it(tmp_path, isolated_home):
    """OpenWhisk standalone and a localwhisk that `local start` left on the same port are two
    platforms: a localwhisk capacity once answered for OpenWhisk's on 127.0.0.1:3233. A pause
    grace is not (each run takes the band's warm edge from its own); a control-plane model is."""
    identities = []
    for platform, grace in (("localwhisk", 50), ("openwhisk", 50), ("openwhisk", 250)):
        write_local_props(
            "http://127.0.0.1:3233", "u:k", "guest", os.getpid(), tmp_path, {"pause_grace_ms": grace}, platform=platform
        )
        connection = resolve_connection(None, None, wskprops_path=tmp_path / "none")
        assert connection is not None and connection.source == "local"
        identities.append(capacity_store.platform_identity(connection, None))
    assert identities[0] != identities[1] == identities[2] and "(OpenWhisk standalone)" in identities[1]
    embedded = {
        capacity_store.platform_identity(None, settings)
        for settings in ({}, {"pause_grace_ms": 275}, {"control_plane": "openwhisk-2.0.0-standalone"})
    }
    assert len(embedded) == 2


def test_an_over_invoked_rate_outside_its_band_is_placed_a_quarter_above_the_interval():
    """A busy host's quick start: capacity 58 ± 36/s (interval 21.8–94.3/s, widened by the host's
    noise; over-invoked at 48.6/s in the probes). 1.5 × 58 = 87/s lies inside the interval; placed
    at 2 × 94.3 = 188.6/s it left 2,400 activations queued, drained for 53 s after the run. A
    quarter above the interval's top is over-invoked at every capacity the search found plausible."""
    assert capacity_store.place_in_band("over-invoked", 87.04, 14.5, 21.76, 94.3) == pytest.approx(1.25 * 94.3)
    assert capacity_store.place_in_band("over-invoked", 120.0, 14.5, 21.76, 94.3) == 120.0  # above it: kept


def test_an_over_invoked_rate_just_above_the_interval_is_placed_where_it_holds():
    """10 quick starts on a busy host: 1.5 × 39.2/s = 58.7/s lay 5 % above the interval's top
    (22.6–55.8/s), was kept, and read balanced twice, the host's other work having eased since the
    search. Over-invoked holds from a quarter above the top, as a balanced phase holds inside its
    margins; the line before the run says why it moved, in words true of the numbers."""
    assert capacity_store.place_in_band("over-invoked", 58.7, 15.4, 22.6, 55.8) == pytest.approx(1.25 * 55.8)
    assert capacity_store.place_in_band("over-invoked", 1.25 * 55.8 + 1, 15.4, 22.6, 55.8) == 1.25 * 55.8 + 1
    why = capacity_store._why_placed("over-invoked", 58.7, 15.4, 22.6, 55.8, 8.0)
    assert why == "inside the over-invoked band but less than 1.25 × its edge (where it holds)"
