"""The run is the sample (issue 43): run-level effects with intervals over runs, the sides of
``faasprof compare``, and its one-run and mislabelling defects; the CLI as subprocesses."""

from __future__ import annotations

import argparse
import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats as scipy_stats
from test_analyzer_synthetic import write_synthetic_run

from faasprof import rundir
from faasprof.analyzer import analyze_run
from faasprof.analyzer.compare import compare_runs
from faasprof.analyzer.compare_sides import (
    RepeatsEntry,
    Side,
    check_sides,
    noise_warnings,
    read_repeats,
    sides_from_groups,
    write_repeats,
)
from faasprof.analyzer.run_stats import (
    NO_DIFFERENCE,
    NO_VERDICT,
    ONE_RUN_NOTE,
    RUN_FIGURES,
    figure_effect,
    side_effects,
    welch_interval,
)
from faasprof.commands import compare as cmd_compare
from faasprof.errors import ConfigError, FormatError
from faasprof.experiments import sweep_report
from tests.doc_commands import sh_shown
from tests.helpers import run_cli

P50, ACHIEVED, COLD = RUN_FIGURES[0], RUN_FIGURES[3], RUN_FIGURES[4]
ONE = {"i0": {"application": "fn", "distribution": "Uniform", "rate": 30.0}}


def test_the_welch_interval_is_scipys():
    a, b = np.array([1.0, 1.2, 0.9, 1.1]), np.array([1.5, 1.9, 1.6])
    diff, low, high = welch_interval(a, b)
    expected = scipy_stats.ttest_ind(b, a, equal_var=False).confidence_interval(0.95)
    assert diff == pytest.approx(b.mean() - a.mean())
    assert (low, high) == pytest.approx((expected.low, expected.high))


def test_one_run_a_side_gives_the_ratio_and_no_verdict():
    entry = figure_effect(P50, [18.4], [87.0])
    assert entry.effect == pytest.approx(87.0 / 18.4) and entry.effect_ci is None
    assert entry.verdict == NO_VERDICT and not entry.significant
    (effect,) = side_effects({"A": [_row(18.4)], "B": [_row(87.0)]})
    assert effect.note == ONE_RUN_NOTE
    assert {f.verdict for f in effect.figures} == {NO_VERDICT}


def test_a_clear_effect_over_runs_is_slower_and_a_noisy_one_is_not():
    slower = figure_effect(P50, [20.0, 21.0, 19.5, 20.4, 20.8], [25.1, 24.6, 25.9, 25.0, 24.4])
    assert slower.verdict == "slower" and slower.significant
    assert 1.15 < slower.effect_ci[0] < slower.effect < slower.effect_ci[1] < 1.35
    # Run to run the medians move as much as between the sides: no verdict on the workloads.
    noisy = figure_effect(P50, [18.4, 40.0, 25.0], [87.0, 20.0, 30.0])
    assert noisy.verdict == NO_DIFFERENCE and noisy.effect_ci[0] < 1 < noisy.effect_ci[1]


def test_an_effect_below_the_smallest_that_matters_is_no_difference():
    tight = figure_effect(P50, [20.0, 20.01, 19.99, 20.0], [20.6, 20.61, 20.59, 20.6])
    assert tight.effect_ci[0] > 1  # the interval excludes no change ...
    assert tight.verdict == NO_DIFFERENCE  # ... but 3 % is under the 5 % that matters
    assert (
        figure_effect(P50, [20.0, 20.01, 19.99, 20.0], [20.6, 20.61, 20.59, 20.6], min_effect=0.02).verdict == "slower"
    )


def test_rates_and_cold_shares_have_their_own_words():
    assert figure_effect(ACHIEVED, [100.0, 101.0, 99.0], [80.0, 81.0, 79.5]).verdict == "lower"
    cold = figure_effect(COLD, [0.0, 0.0, 0.01], [0.2, 0.22, 0.19])
    assert cold.verdict == "more cold" and cold.scale == "points" and cold.effect == pytest.approx(0.2, abs=0.01)
    assert figure_effect(COLD, [0.0, 0.0], [0.0, 0.0]).verdict == NO_DIFFERENCE


def _row(p50: float, instance: str = "i0", phase: int = 0) -> dict:
    return {
        "instance": instance,
        "phase": phase,
        "function": "fn",
        "completion_latency_ms_p50": p50,
        "completion_latency_ms_p90": p50 * 1.5,
        "completion_latency_ms_p99": p50 * 2,
        "achieved_rps": 10.0,
        "cold_fraction": 0.0,
    }


def test_sides_from_the_command_line(tmp_path):
    assert [s.name for s in sides_from_groups([["x/a", "x/b", "x/c"]])] == ["a", "b", "c"]
    two = sides_from_groups([["x/a1", "x/a2"], ["x/b1", "x/b2"]])
    assert [(s.name, [r.name for r in s.runs]) for s in two] == [("A", ["a1", "a2"]), ("B", ["b1", "b2"])]
    with pytest.raises(ConfigError, match=r"compare: one run given \(x/a\); give two or more"):
        check_sides(sides_from_groups([["x/a"]]))
    with pytest.raises(ConfigError, match="on one side only"):
        check_sides([Side("A", [tmp_path / "a", tmp_path / "b"])])


def test_a_repeats_folder_names_its_sides_and_rejects_an_unknown_version(tmp_path):
    for name in ("a1", "b1", "a2"):
        (tmp_path / name).mkdir()
    write_repeats(
        tmp_path,
        [RepeatsEntry("a", "a.json", ["a1", "a2"]), RepeatsEntry("b", "b.json", ["b1"])],
        [("a", "a1"), ("b", "b1"), ("a", "a2")],
        "alternate",
        None,
    )
    sides = sides_from_groups([[str(tmp_path)]])
    assert [(s.name, [r.name for r in s.runs]) for s in sides] == [("a", ["a1", "a2"]), ("b", ["b1"])]
    document = json.loads((tmp_path / "repeats.json").read_text())
    assert document["sequence"][1] == {"side": "b", "run": "b1"}
    (tmp_path / "repeats.json").write_text(json.dumps({**document, "format_version": 99}))
    with pytest.raises(FormatError, match="repeats.json: format_version 99 is not one this faasprof reads"):
        read_repeats(tmp_path)


def test_sides_under_different_host_noise_are_warned():
    manifests = {}
    sides = [Side("A", []), Side("B", [])]
    for side, share in ((sides[0], 0.05), (sides[1], 0.6)):
        for k in range(2):
            path = f"{side.name}{k}"
            side.runs.append(path)
            manifests[path] = rundir.Manifest.from_json(
                {"format_version": rundir.FORMAT_VERSION, "test_name": "t", "host_noise": {"other_cpu_share": share}}
            )
    (warning,) = noise_warnings(sides, manifests)
    assert "different host noise" in warning and "A 5 %, B 60 %" in warning
    for path in sides[1].runs:
        manifests[path].extra["host_noise"]["other_cpu_share"] = 0.1
    assert noise_warnings(sides, manifests) == []


def drifted_runs(tmp_path, service_ms, prefix="r", instances=ONE, folder="runs"):
    """Runs of one workload; ``service_ms`` per run stands for the host's state that run met."""
    return [
        write_synthetic_run(
            tmp_path / folder, test_name=f"{prefix}{k}", duration_s=4.0, instances=instances, service_ms=ms, seed=k + 1
        )[0]
        for k, ms in enumerate(service_ms)
    ]


@pytest.mark.slow
def test_two_identical_runs_compared_one_against_one_give_no_slower_or_faster(tmp_path, isolated_home):
    # The same workload twice; the second run met a busier host (its functions ran 20 % longer).
    # Its invocations all differ, so a per-invocation test calls it slower; the runs cannot say.
    first, second = drifted_runs(tmp_path, (5.0, 6.0))
    result = run_cli("compare", first, second, "--out", tmp_path / "cmp")
    assert result.returncode == 0, result.stderr
    assert "slower" not in result.stdout and "faster" not in result.stdout
    assert ONE_RUN_NOTE in result.stdout
    assert "completion p50" in result.stdout and "no verdict" in result.stdout
    assert "per-invocation view (describes these runs only" in result.stdout
    document = json.loads((tmp_path / "cmp" / "compare.json").read_text())
    assert document["format_version"] == 4 and document["run_level"][0]["note"] == ONE_RUN_NOTE


@pytest.mark.slow
def test_compare_of_a_single_run_is_an_error(tmp_path, isolated_home):
    (run,) = drifted_runs(tmp_path, (5.0,))
    result = run_cli("compare", run, "--out", tmp_path / "cmp")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"compare: one run given ({run}); give two or more: faasprof compare A B, or repeats of each side: "
        "faasprof compare A1 A2 A3 -- B1 B2 B3 (or a folder of faasprof run --repeats N)"
    ]
    assert result.stdout == "" and not (tmp_path / "cmp").exists()


def repeats_folder(runs: list, name: str) -> None:
    """The runs, made in ``runs/<name>``, as a folder of ``faasprof run --repeats`` (one side)."""
    entry = RepeatsEntry(name, f"{name}.json", [run.name for run in runs])
    write_repeats(runs[0].parent, [entry], [(name, run.name) for run in runs], "alternate", None)


@pytest.mark.slow
def test_repeats_a_side_give_a_verdict_with_its_interval(tmp_path, isolated_home):
    """docs/statistics.md's compare lines as shown: A1..B3 are runs of the folder they run in, and
    runs/repeats-ONE and runs/repeats-OTHER folders of repeats."""
    base = drifted_runs(tmp_path, (5.0, 5.1, 5.0), prefix="a", folder="runs/repeats-ONE")
    more = drifted_runs(tmp_path, (7.5, 7.4, 7.6), prefix="b")
    same = drifted_runs(tmp_path, (5.1, 5.0, 5.05), prefix="c", folder="runs/repeats-OTHER")
    for run in (*base, *more, *same):  # runs one has: analysed (here without plots, as compare reads them)
        analyze_run(run, fetch=False, plots=False)
    for k, (a, b) in enumerate(zip(base, more), start=1):
        (tmp_path / f"A{k}").symlink_to(a)
        (tmp_path / f"B{k}").symlink_to(b)
    result = sh_shown("faasprof compare A1 A2 A3 -- B1 B2 B3", tmp_path)
    assert result.returncode == 0, result.stderr
    p50 = next(line for line in result.stdout.splitlines() if line.strip().startswith("completion p50"))
    assert p50.endswith("slower") and "(interval ×" in p50
    assert "B, i0 phase 0 (fn): 3 runs against 3" in result.stdout
    assert "per-invocation view" not in result.stdout  # with repeats, the runs are the samples
    again = sh_shown("faasprof compare --a A1 A2 A3 --b B1 B2 B3", tmp_path)
    assert again.returncode == 0, again.stderr
    assert [line for line in again.stdout.splitlines() if line.strip().startswith("completion p50")] == [p50]
    repeats_folder(base, "a")
    repeats_folder(same, "c")
    alike = sh_shown("faasprof compare runs/repeats-ONE -- runs/repeats-OTHER", tmp_path)
    assert alike.returncode == 0, alike.stderr
    p50 = next(line for line in alike.stdout.splitlines() if line.strip().startswith("completion p50"))
    assert p50.endswith(NO_DIFFERENCE)


@pytest.mark.slow
def test_runs_of_different_functions_are_labelled_by_function(tmp_path, isolated_home):
    dumps = write_synthetic_run(
        tmp_path / "runs",
        test_name="dumps",
        duration_s=4.0,
        instances={"i0": {**ONE["i0"], "application": "json_dumps"}},
    )[0]
    loads = write_synthetic_run(
        tmp_path / "runs",
        test_name="loads",
        duration_s=5.0,
        instances={"i0": {**ONE["i0"], "application": "json_loads"}},
    )[0]
    result = compare_runs([dumps, loads])
    assert result["parameter"] is None
    assert result["frame"]["label"].tolist() == ["json_dumps", "json_loads"]
    assert any("labelled by function" in w for w in result["warnings"])
    assert any("also differ in workload.test_duration_in_seconds" in w for w in result["warnings"])


@pytest.mark.slow
def test_the_guides_sweep_of_repeats_compares_each_points_runs_as_a_side(tmp_path, isolated_home):
    """docs/statistics.md's ``faasprof sweep sweep.json --repeats 5`` as shown, on the embedded
    localwhisk: two memory limits, half a second each (two calls of spin), five runs a point."""
    workload = {
        "test_name": "sweep",
        "test_duration_in_seconds": 0.5,
        "random_seed": 3,
        "blocking_cli": True,
        "instances": {"s": {"application": "spin", "distribution": "Uniform", "rate": 4, "params": {"service_ms": 5}}},
        "sweep": {"parameters": {"memory_mb": [128, 256]}, "cooldown_s": 0},
    }
    (tmp_path / "sweep.json").write_text(json.dumps(workload))
    done = sh_shown("faasprof sweep sweep.json --repeats 5", tmp_path, timeout=480)
    assert done.returncode == 0, done.stderr[-3000:]
    sweep_dir = tmp_path / done.stdout.strip().splitlines()[-1]
    log = sweep_report.load_sweep(sweep_dir)
    assert log["status"] == "complete" and len(log["points"]) == 10
    (effect,) = sweep_report.sweep_effects(sweep_dir)
    assert (effect["side"], effect["baseline"], effect["n_runs"], effect["n_runs_baseline"]) == (
        "memory_mb=256",
        "memory_mb=128",
        5,
        5,
    )
    assert effect["note"] is None and all(f["effect_ci"] is not None for f in effect["figures"][:3])
    # The memory limit the platform applied (from the records) is the point's.
    frame = pd.read_parquet(sweep_dir / "sweep.parquet")
    assert sorted(frame["sweep_memory_mb"].unique().tolist()) == [128, 256]
    assert (frame["memory_mb"] == frame["sweep_memory_mb"]).all()
    assert (sweep_dir / "plots" / "completion_latency_ms_p50_vs_memory_mb.png").exists()


def test_the_command_line_splits_sides_at_the_separator_and_reads_options_after_the_runs():
    parser = argparse.ArgumentParser()
    cmd_compare.add_arguments(parser)
    args = parser.parse_args(["a1", "a2", "--", "b1", "b2", "--min-effect", "0.1", "--label", "k"])
    sides = cmd_compare.sides_of(args)
    assert [(s.name, [r.name for r in s.runs]) for s in sides] == [("A", ["a1", "a2"]), ("B", ["b1", "b2"])]
    assert args.min_effect == 0.1 and args.label == "k"
    both = parser.parse_args(["a0", "--a", "a1", "--b", "b1"])
    with pytest.raises(ConfigError, match="either as --a ... --b ... or as positional RUN_DIRs, not both"):
        cmd_compare.sides_of(both)
