"""`faasprof trace sample`: seeded, nested, representative samples of a generated trace day,
written as workloads that validate and plan, with their distances, scaling and mapping stated."""

from __future__ import annotations

import datetime
import json
import os
import shutil
import socket
import tarfile

import numpy as np
import pytest

from faasprof.errors import NotReadyError
from faasprof.experiments.trace_calibration import (
    SPIN_REQUESTS_MS,
    calibration_path,
    calibration_workload,
    cpu_model,
    fit_spin,
    stale_because,
)
from faasprof.workload.azure_files import find_day, read_invocations
from faasprof.workload.trace_sample import distances, load_population, sample_order, sampled_counts, scale_effect
from faasprof.workload.trace_synth import write_day
from faasprof.workload.trace_workload import Calibration, Mapping, map_function, read_calibration, write_calibration
from tests.doc_commands import REPO_ROOT, sh_shown
from tests.helpers import run_cli

CALIBRATION = Calibration(
    "h", "cpu", "localwhisk isolation=auto", "2026-01-01T00:00:00Z", 2.0, 1.0, {"markdown": 1.0, "float": 300.0}
)
EMBEDDED = "localwhisk isolation=auto"  # capacity_store.platform_identity of the embedded localwhisk


def store_calibration(cache, monkeypatch, offset_ms: float, slope: float) -> dict:
    """A calibration of this host on the embedded localwhisk in ``cache`` (so that the CLI measures
    nothing); the environment that points the CLI at it."""
    monkeypatch.setenv("FAASPROF_CACHE_DIR", str(cache))
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    path = calibration_path(EMBEDDED)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_calibration(path, Calibration(socket.gethostname(), cpu_model(), EMBEDDED, now, offset_ms, slope))
    return {"FAASPROF_CACHE_DIR": str(cache)}


@pytest.fixture(scope="module")
def day(tmp_path_factory):
    return write_day(tmp_path_factory.mktemp("day"), functions=3000, seed=11)


@pytest.fixture(scope="module")
def population(day):
    return load_population(find_day([day.invocations.parent]), (600, 629))


def test_samples_are_nested_and_seeded(population):
    big = sample_order(population, 200, seed=4)
    assert sample_order(population, 100, seed=4) == big[:100]
    assert sample_order(population, 50, seed=4) == big[:50]
    assert len(set(big)) == 200
    assert sample_order(population, 50, seed=5) != big[:50]


def test_a_sample_is_closer_to_the_whole_than_random_draws(population):
    chosen = sample_order(population, 100, seed=1)
    ours = distances(population, chosen)
    rng = np.random.default_rng(1)
    for name in ("rate_per_min", "duration_ms", "memory_mb"):
        random_w = [
            distances(population, rng.choice(len(population.keys), 100, replace=False).tolist())[name].wasserstein_log10
            for _ in range(5)
        ]
        assert ours[name].wasserstein_log10 < np.median(random_w), name


def test_population_leaves_out_functions_without_calls_and_says_so(population, day):
    rows = list(read_invocations(day.invocations, (600, 629)))
    silent = sum(1 for r in rows if r.counts.sum() == 0)
    assert population.excluded == {"no invocation in the window": silent}
    assert len(population.keys) == len(rows) - silent


def test_scaling_states_what_rounding_does(population):
    chosen = sample_order(population, 40, seed=2)
    counts = sampled_counts(population, chosen, population.minutes)
    effect = scale_effect(population, chosen, counts, 0.5)
    expected = sum(int(np.rint(c * 0.5).sum()) for c in counts)
    assert effect.total_after == expected and effect.total_before == sum(int(c.sum()) for c in counts)
    assert effect.functions_muted == sum(1 for c in counts if np.rint(c * 0.5).sum() == 0)
    assert "rates x0.5" in effect.describe()


def test_spin_mapping_follows_the_calibration_and_states_its_error(population):
    key = population.keys[0]
    row = population.durations[key]
    mapped = map_function("f0", row, 150.0, Mapping.SPIN, CALIBRATION)
    requested = dict((p, ms) for p, ms in mapped.params["service_ms_percentiles"])
    assert requested[50] == pytest.approx(max(row.percentiles_ms[50] - 2.0, 0.0), abs=1e-3)
    assert mapped.params["alloc_mb"] == 150 and mapped.memory_mb == 256  # room for the runtime beside it
    short = type(row)(row.key, 1.0, 1, 0.5, 1.5, {p: 1.0 for p in row.percentiles_ms})
    assert map_function("f1", short, 0.0, Mapping.SPIN, CALIBRATION).error == pytest.approx(1.0)  # 2 ms floor vs 1 ms
    nearest = map_function("f2", short, 0.0, Mapping.NEAREST, CALIBRATION)
    assert nearest.application == "markdown" and nearest.error == pytest.approx(0.0)


def test_calibration_file_round_trips_and_refuses_other_versions(tmp_path):
    path = tmp_path / "h.json"
    write_calibration(path, CALIBRATION)
    assert read_calibration(path) == CALIBRATION
    data = json.loads(path.read_text())
    data["format_version"] = 99
    path.write_text(json.dumps(data))
    with pytest.raises(Exception, match="format_version 99 is not 2"):
        read_calibration(path)


def test_a_stored_calibration_holds_for_its_own_host_and_platform_only():
    now = datetime.datetime(2026, 2, 1, tzinfo=datetime.timezone.utc)
    mine = Calibration(socket.gethostname(), cpu_model(), EMBEDDED, "2026-01-20T00:00:00Z", 2.0, 1.0)
    assert stale_because(mine, EMBEDDED, now) is None
    other_host = Calibration("elsewhere", cpu_model(), EMBEDDED, "2026-01-20T00:00:00Z", 2.0, 1.0)
    assert "host elsewhere's, not this host's" in stale_because(other_host, EMBEDDED, now)
    assert "measured on localwhisk isolation=auto, not openwhisk" in stale_because(
        mine, "openwhisk http://127.0.0.1:3233 (OpenWhisk standalone)", now
    )
    assert "over 30" in stale_because(mine, EMBEDDED, now + datetime.timedelta(days=40))
    # One file per host and platform: the embedded localwhisk's is not OpenWhisk's.
    assert calibration_path(EMBEDDED) != calibration_path("openwhisk http://127.0.0.1:3233")
    assert socket.gethostname() in calibration_path(EMBEDDED).name


def test_the_calibration_run_calls_spin_one_level_at_a_time_and_fits_its_records():
    workload = calibration_workload({"markdown": 2.0, "float": 300.0})
    windows = [tuple(i["activity_window"]) for i in workload["instances"].values()]
    assert all(a[1] <= b[0] for a, b in zip(windows, windows[1:]))  # one at a time, in order
    assert [
        i["params"]["service_ms"]
        for n, i in workload["instances"].items()
        if n.startswith("spin-") and n != "spin-warmup"
    ] == list(SPIN_REQUESTS_MS)
    assert "markdown" in workload["instances"] and "params" not in workload["instances"]["markdown"]
    # A catalogue function's calls are spaced by its native time: float's (300 ms) 1 s apart, not 0.4 s.
    assert (
        workload["instances"]["float"]["rate"] == pytest.approx(1.0) and workload["instances"]["markdown"]["rate"] > 2
    )
    executed = {f"spin-{v:g}ms": np.full(5, 3.0 + 1.1 * v) for v in SPIN_REQUESTS_MS}
    offset, slope = fit_spin(executed)
    assert offset == pytest.approx(3.0) and slope == pytest.approx(1.1)
    with pytest.raises(NotReadyError, match="fewer than two of its levels"):
        fit_spin({"spin-1ms": np.ones(5)})


@pytest.fixture
def calibrated(tmp_path, monkeypatch, isolated_home):
    """A stored calibration of this host on the embedded localwhisk (so that the CLI measures nothing)."""
    return store_calibration(tmp_path / "cache", monkeypatch, 2.0, 1.0)


@pytest.fixture
def dataset(tmp_path):
    """A made-up day as the 2019 release packs it: ``azurefunctions-dataset2019.tar.xz`` holding the
    folder ``azurefunctions-dataset2019`` with the day's three files (600 functions)."""
    write_day(tmp_path / "azurefunctions-dataset2019", functions=600, seed=11)
    with tarfile.open(tmp_path / "azurefunctions-dataset2019.tar.xz", "w:xz") as archive:
        archive.add(tmp_path / "azurefunctions-dataset2019", arcname="azurefunctions-dataset2019")
    shutil.rmtree(tmp_path / "azurefunctions-dataset2019")
    return tmp_path


@pytest.mark.slow
def test_the_guides_sample_of_an_unpacked_day_is_a_workload_that_validate_and_plan_take(dataset, calibrated):
    """docs/traces.md's lines as shown, from the archive to the plan, in the folder that holds it."""
    env = {**os.environ, **calibrated, "PYTHONPATH": str(REPO_ROOT)}
    unpacked = sh_shown("tar -xJf azurefunctions-dataset2019.tar.xz", dataset, env=env)
    assert unpacked.returncode == 0, unpacked.stderr
    done = sh_shown(
        "faasprof trace sample azurefunctions-dataset2019/*d01.csv -n 200 --minutes 600-629 --seed 1 --out study/n200",
        dataset,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert "Wasserstein" in done.stdout and "KS" in done.stdout
    out = dataset / "study" / "n200"
    workload = json.loads((out / "workload.json").read_text())
    assert len(workload["instances"]) == 200 and workload["self_check"] == {"warmup_s": 60}
    assert set(workload["trace"]["distances"]) == {"rate_per_min", "duration_ms", "memory_mb"}
    assert all("mapping_error" in f for f in workload["trace"]["functions"].values())
    assert any("mapping spin, calibrated on localwhisk isolation=auto" in note for note in workload["notes"])
    per_function = next(n for n in workload["notes"] if n.startswith("mapping error per function"))
    assert all(f"{name} " in per_function for name in workload["instances"])
    validated = sh_shown("faasprof validate study/n200/workload.json", dataset, env=env)
    assert validated.returncode == 0, validated.stderr
    assert "study/n200/workload.json: ok (200 instances" in validated.stdout + validated.stderr
    plan = sh_shown("faasprof plan study/n200/workload.json", dataset, env=env)
    assert plan.returncode == 0, plan.stderr
    assert workload["trace"]["scale"] is None  # no --scale-to: the trace's own counts
    planned = sum(int(r.counts.sum()) for r in read_invocations(out / "trace_invocations.csv"))
    assert f"total {planned} invocations over 1860 s" in plan.stdout + plan.stderr
    # The same seed and a smaller n, scaled: its 20 are the first 20 of the 200, at 5 per second.
    smaller = dataset / "n20"
    scaled = run_cli(
        "trace", "sample", dataset / "azurefunctions-dataset2019", "-n", "20", "--minutes", "600-629", "--seed", "1",
        "--scale-to", "5", "--out", smaller, env=calibrated,
    )  # fmt: skip
    assert scaled.returncode == 0 and "rates x" in scaled.stdout, scaled.stderr
    small = json.loads((smaller / "workload.json").read_text())
    assert small["trace"]["scale"]["factor"] > 0
    names = [f["function"] for f in small["trace"]["functions"].values()]
    assert names == [f["function"] for f in workload["trace"]["functions"].values()][:20]


@pytest.mark.parametrize(
    "args, message",
    [
        (["-n", "5", "--minutes", "9-3"], "--minutes '9-3': give A-B"),
        (["-n", "5", "--minutes", "1400-1500"], "minutes 1400-1500 are not within its minute columns 1-1440"),
        (["-n", "5", "--scale-to", "-1"], "--scale-to: must be > 0"),
    ],
)
def test_cli_sample_refuses_bad_input_in_one_line(day, tmp_path, calibrated, args, message):
    done = run_cli("trace", "sample", day.invocations.parent, *args, "--out", tmp_path / "o", env=calibrated)
    assert done.returncode == 2, done.stderr
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()


def test_cli_sample_never_overwrites(day, tmp_path, calibrated):
    (tmp_path / "o").mkdir()
    done = run_cli("trace", "sample", day.invocations.parent, "-n", "5", "--out", tmp_path / "o", env=calibrated)
    assert done.returncode == 2 and "already exists" in done.stderr
