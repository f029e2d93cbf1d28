"""The run plots show the data faithfully however they are thinned: the CDF's marked percentiles are
those of all the data and its curve passes through the exact order statistics behind them, sampled
scatter plots keep every point of the tail, monitor lines keep every slice's extremes, and writing
the plots twice gives the same bytes."""

from __future__ import annotations

import types

import numpy as np
import pandas as pd
import pytest
from test_analyzer_synthetic import write_synthetic_run

from faasprof.analyzer import markup
from faasprof.analyzer import plots as plots_mod
from faasprof.analyzer.analysis import load_run

PERCENTILES = (50, 99, 99.9)


def heavy_tailed_run(rows_per_function: int = 30_000) -> types.SimpleNamespace:
    """What ``cdf`` reads of a run: two instances (each its own function, one steady phase) with
    log-normal latencies, a few huge outliers, a few NaN latencies and a few failures (which the
    CDF leaves out)."""
    rng = np.random.default_rng(22)
    latency_ms = rng.lognormal(mean=2.0, sigma=0.8, size=2 * rows_per_function)
    latency_ms[rng.choice(len(latency_ms), 40, replace=False)] *= 1000.0
    latency_ms[rng.choice(len(latency_ms), 25, replace=False)] = np.nan
    successful = np.ones(len(latency_ms), dtype=bool)
    successful[rng.choice(len(latency_ms), 300, replace=False)] = False
    names = np.repeat(["fa", "fb"], rows_per_function)
    frame = pd.DataFrame(
        {
            "instance": pd.Categorical(names),
            "function": pd.Categorical(names),
            "phase": np.zeros(len(names), dtype=np.int32),
            "steady": np.ones(len(names), dtype=bool),
            "completion_latency_ms": latency_ms,
            "successful": successful,
        }
    )
    phase_stats = pd.DataFrame({"instance": ["fa", "fb"], "phase": [0, 0], "mode": ["balanced", "balanced"]})
    return types.SimpleNamespace(invocations=frame, phase_stats=phase_stats, test_name="tails")


def drawn_figure(monkeypatch, plot, run, path):
    """The figure ``plot`` drew and saved (the plot functions drop theirs once saved)."""
    kept = []
    save = plots_mod._save

    def keep(fig, to):
        kept.append(fig)
        save(fig, to)

    monkeypatch.setattr(plots_mod, "_save", keep)
    plot(run, path)
    monkeypatch.undo()
    assert len(kept) == 1 and path.exists()
    return kept[0]


def test_cdf_marks_are_the_quantiles_of_all_the_data_and_the_curve_passes_through_them(tmp_path, monkeypatch):
    run = heavy_tailed_run()
    fig = drawn_figure(monkeypatch, plots_mod.cdf, run, tmp_path / "cdf.png")
    frame = run.invocations
    lines = fig.axes[0].lines
    curves = [line for line in lines if line.get_label().startswith("f")]
    assert [c.get_label().split(",")[0] for c in curves] == ["fa phase 0", "fb phase 0"]
    for curve in curves:
        function = curve.get_label().split(" ")[0]
        values = frame.loc[(frame["function"] == function) & frame["successful"], "completion_latency_ms"].to_numpy()
        data = np.sort(values[np.isfinite(values)])
        n = len(data)
        x, y = np.asarray(curve.get_xdata()), np.asarray(curve.get_ydata())
        assert len(x) < n / 5  # thinned, yet exact where it matters:
        assert x[-1] == data[-1] and y[-1] == 1.0  # the largest value, at the top
        marks = [line for line in lines if line is not curve and line.get_color() == curve.get_color()]
        marked = [(float(m.get_ydata()[0]), float(m.get_xdata()[0])) for m in marks]
        for pct in PERCENTILES:
            p = pct / 100
            expected = float(np.percentile(data, pct))  # what nanpercentile of all the values gives
            assert np.isclose(expected, np.quantile(data, p), rtol=1e-12, atol=0)
            at_p = [x_mark for y_mark, x_mark in marked if np.isclose(y_mark, p, rtol=0, atol=1e-12)]
            assert at_p == [expected]  # computed on all the data, not on the drawn points
            assert markup.ms(expected) in curve.get_label()
            below, above = int(np.floor(p * (n - 1))), int(np.ceil(p * (n - 1)))
            assert data[below] <= expected <= data[above]
            for rank in (below, above):  # the curve steps at both order statistics it lies between
                at = np.flatnonzero(x == data[rank])
                assert len(at) and np.isclose(y[at[-1]], (rank + 1) / n)


MODES = {  # one instance per phase: under-invoked, balanced, over-invoked (a queue growing to seconds)
    "under": {
        "application": "fn",
        "distribution": "Uniform",
        "rate": 5.0,
        "activity_window": [0, 10],
        "blocking": False,
    },
    "balanced": {
        "application": "fn",
        "distribution": "Uniform",
        "rate": 100.0,
        "activity_window": [10, 20],
        "blocking": False,
    },
    "over": {
        "application": "fn",
        "distribution": "Uniform",
        "rate": 400.0,
        "activity_window": [20, 30],
        "blocking": False,
    },
}


def test_breakdown_has_a_panel_per_phase_with_its_own_scale(tmp_path, monkeypatch):
    run_dir, _ = write_synthetic_run(tmp_path / "run", duration_s=30.0, instances=MODES, blocking=False)
    run = load_run(run_dir)
    panels = plots_mod.breakdown_bars(run)
    assert [[bar["instance"] for bar in panel["bars"]] for panel in panels] == [["under"], ["balanced"], ["over"]]
    phases = run.phase_stats.set_index("instance")
    for panel in panels:
        (bar,) = panel["bars"]
        row = phases.loc[bar["instance"]]
        assert bar["mode"] == row["mode"] and bar["n"] == row["successful_with_record"]
        assert (
            bar["means_ms"]["wait_ms"] == row["wait_ms_mean"]
            and bar["means_ms"]["execution_ms"] == row["execution_ms_mean"]
        )
        assert bar["means_ms"]["overhead_ms"] == 0.0  # non-blocking: no overhead to stack
    waits = [panel["bars"][0]["means_ms"]["wait_ms"] for panel in panels]
    assert waits[2] > 100 * max(waits[:2])  # seconds of queue against milliseconds
    fig = drawn_figure(monkeypatch, plots_mod.breakdown, run, tmp_path / "breakdown.png")
    assert len(fig.axes) == 3
    for ax, panel in zip(fig.axes, panels):
        assert ax.get_title(loc="left").startswith(f"phase {panel['phase']}")
        total = sum(patch.get_width() for patch in ax.patches)
        assert total > 0.8 * ax.get_xlim()[1]  # each phase fills its own axis: none flattened to zero


def test_cdf_has_a_curve_per_instance_and_phase_marked_as_the_phase_table(tmp_path, monkeypatch):
    run_dir, _ = write_synthetic_run(tmp_path / "run", duration_s=30.0, instances=MODES, blocking=False)
    run = load_run(run_dir)
    groups = plots_mod.cdf_groups(run)
    assert [(instance, phase, mode) for instance, phase, mode, _ in groups] == [
        ("under", 0, "under-invoked"),
        ("balanced", 1, "balanced"),
        ("over", 2, "over-invoked"),
    ]
    phases = run.phase_stats.set_index("instance")
    fig = drawn_figure(monkeypatch, plots_mod.cdf, run, tmp_path / "cdf.png")
    curves = [line for line in fig.axes[0].lines if line.get_label()[0] != "_"]
    assert [c.get_label().split(" (")[0] for c in curves] == [
        "under phase 0, under-invoked",
        "balanced phase 1, balanced",
        "over phase 2, over-invoked",
    ]
    for curve, (instance, _, _, values) in zip(curves, groups):
        row = phases.loc[instance]
        assert len(values) == row["completion_latency_ms_n"] and f"(n={len(values):,})" in curve.get_label()
        marks = {
            float(m.get_ydata()[0]): float(m.get_xdata()[0])
            for m in fig.axes[0].lines
            if m is not curve and m.get_color() == curve.get_color()
        }
        assert marks[0.5] == row["completion_latency_ms_p50"]  # the p50 of the modes table, not of a pooled curve


def test_the_cdf_curve_is_the_empirical_cdf_at_every_drawn_point():
    values = np.random.default_rng(3).exponential(5.0, 50_001)
    x, y, data = plots_mod._ecdf(values)
    assert np.array_equal(data, np.sort(values))
    assert all(np.array_equal(a, b) for a, b in zip(plots_mod._ecdf_points(values), (x, y)))  # compare's CDFs
    ranks = np.rint(y * len(values)).astype(int) - 1
    assert np.array_equal(x, data[ranks])
    assert np.array_equal(ranks[-1000:], np.arange(len(values) - 1000, len(values)))  # the whole tail
    x, y, data = plots_mod._ecdf(np.array([np.nan, np.inf]))
    assert not len(x) and not len(y)


def test_subsample_keeps_every_point_above_the_99th_percentile():
    rng = np.random.default_rng(5)
    values = rng.lognormal(1.0, 1.0, 300_000)
    values[::997] = np.nan
    idx = plots_mod._subsample(values)
    assert np.array_equal(idx, np.unique(idx))
    tail = np.flatnonzero(values >= np.nanpercentile(values, 99))
    assert np.isin(tail, idx).all()
    assert len(idx) <= plots_mod.MAX_POINTS + len(tail) + 1
    assert np.array_equal(plots_mod._subsample(values[:100]), np.arange(100))


def test_monitor_lines_keep_every_slice_extremes_and_gaps():
    rng = np.random.default_rng(9)
    t = np.arange(60_000) * 0.1
    values = rng.normal(size=len(t)).cumsum()
    values[1234] = np.nan
    values[40_000] = 1e6  # a spike
    drawn_t, drawn = plots_mod._envelope(t, values)
    assert len(drawn) <= 4 * plots_mod.LINE_BUCKETS + 1
    assert np.isnan(drawn[drawn_t == t[1234]]).all()  # the gap is kept
    slot = np.minimum(((t - t[0]) / (t[-1] - t[0]) * plots_mod.LINE_BUCKETS).astype(int), plots_mod.LINE_BUCKETS - 1)
    for k in (0, 17, 666, plots_mod.LINE_BUCKETS - 1):
        inside = slot == k
        kept = np.isin(t, drawn_t) & inside
        assert np.nanmax(values[kept]) == np.nanmax(values[inside]) and np.nanmin(values[kept]) == np.nanmin(
            values[inside]
        )
        assert kept[np.flatnonzero(inside)[[0, -1]]].all()  # first and last of the slice
    assert 1e6 in drawn
    unsorted = t[::-1].copy()
    assert plots_mod._envelope(unsorted, values)[0] is unsorted  # nothing it cannot thin safely is thinned
    assert plots_mod._envelope(t[:100], values[:100])[0] is not None


def test_top_functions_by_rows_then_name():
    codes = np.array([2, 2, 0, 1, 1, -1, 3, 3, 3])
    assert plots_mod._top_functions(codes, ["a", "b", "c", "d"]) == [("a", 0), ("b", 1), ("c", 2), ("d", 3)]
    monkey = plots_mod.MAX_FUNCTIONS
    try:
        plots_mod.MAX_FUNCTIONS = 2
        assert plots_mod._top_functions(codes, ["a", "b", "c", "d"]) == [("b", 1), ("d", 3)]
    finally:
        plots_mod.MAX_FUNCTIONS = monkey
    assert plots_mod._top_functions(np.zeros(0, dtype=np.int8), ["a"]) == []


@pytest.mark.slow
def test_write_plots_twice_gives_the_same_bytes(tmp_path, monkeypatch):
    run_dir, _ = write_synthetic_run(
        tmp_path / "run",
        duration_s=4.0,
        instances={
            "i0": {"application": "fa", "distribution": "Uniform", "rate": 60.0},
            "i1": {"application": "fb", "distribution": "Uniform", "rate": 40.0, "blocking": False},
        },
    )
    monkeypatch.setattr(plots_mod, "MAX_POINTS", 25)  # so the sampling runs on this small run
    run = load_run(run_dir)
    first = plots_mod.write_plots(run, tmp_path / "a")
    second = plots_mod.write_plots(load_run(run_dir), tmp_path / "b")
    assert first == second and {"latency_over_time.png", "breakdown.png", "cdf.png", "throughput.png"} <= set(first)
    for name in first:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name


def test_throughput_histogram_counts_as_numpy_does():
    rng = np.random.default_rng(11)
    edges = np.arange(0.0, 100.0 + 0.7, 0.7)
    values = np.concatenate([rng.uniform(-5, 110, 100_000), edges, [edges[-1], np.nan, np.inf, -np.inf]])
    finite = values[np.isfinite(values)]
    assert np.array_equal(plots_mod._histogram(values, edges), np.histogram(finite, bins=edges)[0])
    assert np.array_equal(plots_mod._histogram(np.zeros(0), edges), np.zeros(len(edges) - 1))
