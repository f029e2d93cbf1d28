"""Repeated runs (``faasprof run --repeats N --vs B``, ``faasprof.experiments.repeat``) and the
spread warning read from the completion latency (issue 43)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from faasprof import rundir
from faasprof.analyzer import analyze_run
from faasprof.analyzer import stats as stats_mod
from faasprof.analyzer.compare_sides import read_repeats
from faasprof.errors import ConfigError
from faasprof.experiments.repeat import Order, run_repeats, sequence, side_names
from faasprof.progress import Progress
from tests.doc_commands import sh_shown
from tests.helpers import run_cli


def test_orders_alternate_or_shuffle_with_a_seed():
    assert sequence(2, 3, Order.ALTERNATE, 1) == [0, 1, 0, 1, 0, 1]
    shuffled = sequence(2, 5, Order.SHUFFLED, 7)
    assert sorted(shuffled) == [0] * 5 + [1] * 5 and shuffled == sequence(2, 5, Order.SHUFFLED, 7)
    assert shuffled != sequence(2, 5, Order.ALTERNATE, 7)


def test_side_names_tell_one_workload_given_twice_apart():
    assert side_names(["w/a.json", "w/b.json"]) == ["a", "b"]
    assert side_names(["w/a.json", "v/a.json"]) == ["A-a", "B-a"]


class FakeRuns:
    """Stands for ``faasprof run``: makes a run folder in the repeats folder, exits as told."""

    def __init__(self, exits: list[int]):
        self.exits = list(exits)
        self.calls: list[str] = []

    def __call__(self, config: str, folder: Path) -> int:
        self.calls.append(config)
        rundir.create_run_dir(folder, Path(config).stem, monitors=False)
        return self.exits.pop(0) if self.exits else 0


def test_repeats_run_interleaved_into_one_folder_compare_reads(tmp_path):
    runs = FakeRuns([0, 1, 0, 0])
    lines: list[str] = []
    result = run_repeats(["a.json", "b.json"], 2, tmp_path, runs, progress=Progress(lines.append))
    assert runs.calls == ["a.json", "b.json", "a.json", "b.json"]
    assert result.exit_status == 1 and result.runs == 4 and result.folder.parent == tmp_path
    sides = read_repeats(result.folder)
    assert [(s.name, len(s.runs)) for s in sides] == [("a", 2), ("b", 2)]
    document = json.loads((result.folder / "repeats.json").read_text())
    assert [entry["side"] for entry in document["sequence"]] == ["a", "b", "a", "b"]
    assert any("run 2 (b) ended with exit 1" in line for line in lines)


def test_bad_input_stops_the_repeats_and_keeps_what_ran(tmp_path):
    runs = FakeRuns([0, 2])
    result = run_repeats(["a.json", "b.json"], 3, tmp_path, runs)
    assert result.exit_status == 2 and result.runs == 2 and len(runs.calls) == 2
    with pytest.raises(ConfigError, match="--vs needs --repeats N"):
        run_repeats(["a.json", "b.json"], 1, tmp_path, runs)


def test_the_wide_spread_warning_reads_the_completion_latency_not_the_202():
    # A non-blocking phase: the 202 comes in 0.2 ms or 10 ms (client p99/p50 52), the function's
    # completion barely spreads (1.05): no wide spread.
    stats = {
        "client_latency_ms_n": 500,
        "client_latency_ms_p50": 0.2,
        "client_latency_ms_p99": 10.44,
        "completion_latency_ms_p50": 20.0,
        "completion_latency_ms_p99": 21.0,
        "failures": 0,
        "missing_records": 0,
    }
    assert not any("wide spread" in w for w in stats_mod.stability_warnings("i0 phase 0", stats))
    stats.update(completion_latency_ms_p99=400.0)
    (warning,) = [w for w in stats_mod.stability_warnings("i0 phase 0", stats) if "wide spread" in w]
    assert "(p99/p50 = 20.0)" in warning


@pytest.mark.slow
def test_vs_without_repeats_is_one_line_exit_2(tmp_path, isolated_home):
    config = Path(__file__).resolve().parents[1] / "faasprof" / "workload_configs" / "burst_cold_warm.json"
    result = run_cli("run", config, "--vs", config, "--out", tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "--vs needs --repeats N (N ≥ 2 gives compare an interval over runs; 5 is a good start)"
    ]
    assert list(tmp_path.iterdir()) == [tmp_path / "home"] or list(tmp_path.iterdir()) == []


def test_a_shuffled_order_is_seeded_and_kept_in_the_folder(tmp_path):
    runs = FakeRuns([])
    result = run_repeats(["a.json", "b.json"], 3, tmp_path, runs, Order.SHUFFLED, 3)
    assert runs.calls == [["a.json", "b.json"][side] for side in sequence(2, 3, Order.SHUFFLED, 3)]
    document = json.loads((result.folder / "repeats.json").read_text())
    assert (document["order"], document["seed"]) == ("shuffled", 3)


def spin_workload(folder: Path, name: str, service_ms: float) -> None:
    """A half-second run of ``spin`` at 4/s: two invocations, the least that makes a run."""
    data = {
        "test_name": name,
        "test_duration_in_seconds": 0.5,
        "random_seed": 3,
        "blocking_cli": True,
        "instances": {
            "s": {"application": "spin", "distribution": "Uniform", "rate": 4, "params": {"service_ms": service_ms}}
        },
    }
    (folder / f"{name}.json").write_text(json.dumps(data))


@pytest.mark.slow
def test_the_guides_repeats_run_interleaved_on_the_embedded_localwhisk_and_compare_as_two_sides(
    tmp_path, isolated_home
):
    """docs/statistics.md's commands as shown, in a folder holding its A.json and B.json."""
    spin_workload(tmp_path, "A", 5)
    spin_workload(tmp_path, "B", 10)
    done = sh_shown("faasprof run A.json --vs B.json --repeats 5", tmp_path)
    assert done.returncode == 0, done.stderr
    folder = Path(done.stdout.strip().splitlines()[-1])
    assert folder.parent == Path("runs") and folder.name.startswith("repeats-")
    sides = read_repeats(tmp_path / folder)
    assert [(side.name, len(side.runs)) for side in sides] == [("A", 5), ("B", 5)]
    assert all(rundir.read_manifest(run).status == "complete" for side in sides for run in side.runs)
    assert f"compare them: faasprof compare {folder}" in done.stderr
    # Analysed here without plots: compare would analyse each run with its plots (3 s a run on 2
    # cores), the path test_run_level_compare's one-against-one test takes.
    for run in (run for side in sides for run in side.runs):
        analyze_run(run, fetch=False, plots=False)
    time = folder.name.removeprefix("repeats-")
    compared = sh_shown("faasprof compare runs/repeats-TIME", tmp_path, substitute={"TIME": time})
    assert compared.returncode == 0, compared.stderr
    assert "B, s phase 0 (spin): 5 runs against 5" in compared.stdout
    assert "per-invocation view" not in compared.stdout  # with repeats, the runs are the samples
