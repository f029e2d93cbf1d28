"""The out-of-core engine (``faasprof.analyzer.engine``) and the columnar invocation log
(``faasprof.rundir.columnar``): the engine's figures are the in-memory analyzer's, its memory is
bounded by its setting, the columnar file is versioned, kept current and refused when unknown."""

from __future__ import annotations

import math
import os

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from test_analyzer_synthetic import write_synthetic_run

from faasprof import analyzer
from faasprof.analyzer import engine, frame_loader, order_stats
from faasprof.analyzer import stats as stats_mod
from faasprof.analyzer.analysis import analyze_run, load_run
from faasprof.errors import ConfigError, FormatError
from faasprof.rundir import columnar

FOUR = {f"i{k}": {"application": f"fn{k % 2}", "distribution": "Uniform", "rate": 40.0} for k in range(4)}


def same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == b


@pytest.fixture
def connection(tmp_path):
    con = engine.connect(engine.EngineSettings(memory_limit="256MB", temp_directory=tmp_path / "spill", threads=2))
    yield con
    con.close()


@pytest.mark.parametrize("n", [0, 1, 2, 7, 8, 99, 1000, 20_001])
def test_percentile_blocks_are_stats_percentile_block_exactly(tmp_path, connection, n):
    rng = np.random.default_rng(n)
    values = rng.lognormal(2.0, 1.0, n)
    values[::13] = np.nan  # not finite: left out by both
    groups = rng.choice(["a", "b"], n)
    path = tmp_path / "v.parquet"
    pd.DataFrame({"g": groups, "v": values, "ok": rng.random(n) > 0.2}).to_parquet(path)
    blocks = engine.percentile_blocks(connection, engine.parquet_source(path), "v", ["g"], "ok")
    frame = pd.read_parquet(path)
    for name in ("a", "b"):
        expected = stats_mod.percentile_block(frame["v"][(frame["g"] == name) & frame["ok"]].to_numpy(), "v")
        if expected["v_n"] == 0:
            assert (name,) not in blocks
            continue
        got = blocks[(name,)]
        assert set(got) == set(expected)
        for key, value in expected.items():
            if key == "v_mean":  # a sum in another order: equal to the last bits
                assert got[key] == pytest.approx(value, rel=1e-12)
            else:
                assert same(got[key], value), key


def test_steady_phase_blocks_equal_the_in_memory_phase_stats(tmp_path, connection):
    run_dir, _ = write_synthetic_run(tmp_path, duration_s=20.0, instances=FOUR, seed=3)
    run = load_run(run_dir)
    path = tmp_path / "frame.parquet"
    run.invocations[list(stats_mod.STATS_COLUMNS[:14])].to_parquet(path)
    blocks = engine.steady_phase_blocks(connection, engine.parquet_source(path), run.phases)
    assert len(blocks) == len(run.phase_stats) > 0
    for row in run.phase_stats.to_dict("records"):
        got = blocks[(row["instance"], row["phase"])]
        for key, value in got.items():
            if key.endswith("_mean"):
                assert value == pytest.approx(row[key], rel=1e-12)
            else:
                assert same(value, float(row[key])), key


def test_per_minute_series_and_class_counts_match_pandas(tmp_path, connection):
    run_dir, _ = write_synthetic_run(tmp_path, duration_s=130.0, instances=FOUR, seed=4)
    frame = load_run(run_dir).invocations
    path = tmp_path / "frame.parquet"
    frame[["instance", "intended_s", "successful", "completion_latency_ms", "start_class"]].to_parquet(path)
    source = engine.parquet_source(path)
    series = engine.per_minute_series(connection, source)
    ok = frame[frame["successful"]]
    expected = ok.groupby([ok["instance"].astype(str), (ok["intended_s"] // 60).astype("int64")])[
        "completion_latency_ms"
    ].median()
    assert len(series) == len(expected) == 4 * 3
    for row in series.itertuples():
        assert row.completion_latency_ms_p50 == pytest.approx(expected[(row.instance, row.minute)], rel=1e-12)
    counts = engine.class_counts(connection, source, ["instance"])
    assert counts["count"].sum() == len(frame)
    for row in counts.itertuples():
        assert row.count == int(((frame["instance"] == row.instance) & (frame["start_class"] == row.start_class)).sum())


def test_memory_limit_bounds_the_engine_which_spills_rather_than_fails(tmp_path):
    # 3 million rows sorted in one group under a 64 MB limit: more than the limit to sort in memory.
    n = 3_000_000
    path = tmp_path / "big.parquet"
    pq.write_table(pa.table({"v": np.random.default_rng(0).random(n)}), path)
    spill = tmp_path / "spill"
    con = engine.connect(engine.EngineSettings(memory_limit="64MB", temp_directory=spill, threads=1))
    try:
        blocks = engine.percentile_blocks(con, engine.parquet_source(path), "v", [])
        assert con.execute("SELECT current_setting('memory_limit')").fetchone()[0].startswith("61")
    finally:
        con.close()
    assert blocks[(0,)]["v_n"] == n
    assert blocks[(0,)]["v_p50"] == stats_mod.percentile_block(pq.read_table(path)["v"].to_numpy(), "v")["v_p50"]


def test_engine_settings_from_environment_and_bad_values(tmp_path):
    settings = engine.EngineSettings.from_environment(
        {engine.MEMORY_ENV: "2 GB", engine.TEMP_ENV: str(tmp_path), engine.THREADS_ENV: "1"}
    )
    assert (settings.memory_limit, settings.temp_directory, settings.threads) == ("2GB", tmp_path, 1)
    with pytest.raises(ConfigError, match="FAASPROF_ENGINE_MEMORY='lots': not a size; set it to"):
        engine.EngineSettings.from_environment({engine.MEMORY_ENV: "lots"})
    with pytest.raises(ConfigError, match="FAASPROF_ENGINE_THREADS='0'"):
        engine.EngineSettings.from_environment({engine.THREADS_ENV: "0"})


def test_columnar_log_is_written_versioned_and_read_as_the_csv(tmp_path, connection):
    run_dir, _ = write_synthetic_run(tmp_path, duration_s=10.0, instances=FOUR, seed=5)
    from_csv = connection.execute(f"SELECT count(*), sum(done_ns) FROM {columnar.csv_scan_sql(run_dir)}").fetchone()
    source = columnar.invocations_scan_sql(run_dir, connection)
    assert "read_parquet" in source and columnar.is_current(run_dir)
    version, _ = columnar.parquet_version(columnar.invocations_parquet_path(run_dir))
    assert version == columnar.COLUMNAR_FORMAT_VERSION
    assert connection.execute(f"SELECT count(*), sum(done_ns) FROM {source}").fetchone() == from_csv
    assert from_csv[0] == len(load_run(run_dir).invocations)
    # The log grew (a run still being written): the columnar copy no longer describes it.
    with open(columnar.invocations_csv_path(run_dir), "a", encoding="utf-8") as log:
        log.write("999999,i0,fn0,1,2,3,ok,200,,\n")
    os.utime(columnar.invocations_csv_path(run_dir), ns=(1, 1))
    assert not columnar.is_current(run_dir)
    source = columnar.invocations_scan_sql(run_dir, connection)
    assert connection.execute(f"SELECT count(*) FROM {source}").fetchone()[0] == from_csv[0] + 1


def test_columnar_file_of_an_unknown_version_is_refused_in_one_line(tmp_path):
    path = tmp_path / "x.parquet"
    pq.write_table(pa.table({"seq": [1]}).replace_schema_metadata({columnar.VERSION_KEY: "99"}), path)
    with pytest.raises(
        FormatError, match=r"x.parquet: faasprof_columnar_version 99 is not supported .*delete the file"
    ):
        columnar.check_parquet(path)


def test_read_frame_loads_columns_a_phase_or_a_window_only_and_refuses_too_much(tmp_path):
    run_dir, _ = write_synthetic_run(tmp_path, duration_s=20.0, instances=FOUR, seed=6)
    analyze_run(run_dir, fetch=False, plots=False)
    whole = pd.read_parquet(frame_loader.frame_path(run_dir))
    part = analyzer.read_frame(run_dir, columns=["instance", "completion_latency_ms"], phase=0)
    expected = whole.loc[whole["phase"] == 0, ["instance", "completion_latency_ms"]].reset_index(drop=True)
    pd.testing.assert_frame_equal(part.reset_index(drop=True), expected)
    window = load_run(run_dir).frame(columns=["intended_s"], window_s=(5.0, 7.5))
    assert len(window) == int(((whole["intended_s"] >= 5.0) & (whole["intended_s"] < 7.5)).sum()) > 0
    assert window["intended_s"].between(5.0, 7.5, inclusive="left").all()
    with pytest.raises(
        ConfigError, match=r"invocations.parquet: 3,200 rows of 1 columns need about .* GiB .*max_bytes"
    ):
        analyzer.read_frame(run_dir, columns=["intended_s"], max_bytes=1000)
    with pytest.raises(ConfigError, match="no column latency_s"):
        analyzer.read_frame(run_dir, columns=["latency_s"])
    other, _ = write_synthetic_run(tmp_path / "other", duration_s=2.0, instances=FOUR)
    with pytest.raises(FormatError, match="missing; run faasprof analyze"):
        analyzer.read_frame(other)


def test_log_figures_from_the_columnar_log_equal_pandas_over_the_loaded_frame(tmp_path, connection):
    run_dir, _ = write_synthetic_run(tmp_path, duration_s=20.0, instances=FOUR, seed=8, save_records=False)
    run = load_run(run_dir)
    figures = engine.log_figures(connection, run_dir, run.phases)
    frame = run.invocations
    assert columnar.is_current(run_dir) and len(figures) == len(run.phase_stats) > 0
    for phase in run.phases:
        for name in phase["instances"]:
            got = figures[(name, phase["phase"])]
            t = frame["intended_s"]
            rows = frame[(frame["instance"] == name) & (t >= phase["steady_start_s"]) & (t < phase["end_s"])]
            assert got["planned"] == len(rows) == sum(v for k, v in got.items() if k.startswith("outcome_"))
            lateness = rows["lateness_ms"].to_numpy(dtype="float64")
            lateness = lateness[np.isfinite(lateness)]
            assert got["lateness_ms_p99"] == pytest.approx(np.quantile(lateness, 0.99), rel=1e-12)
            assert got["lateness_ms_max"] == pytest.approx(lateness.max(), rel=1e-12)
            ok = rows[rows["outcome"] == "ok"]
            for column in ("client_latency_ms", "corrected_latency_ms"):
                expected = stats_mod.percentile_block(ok[column].to_numpy(dtype="float64"), column)
                for key, value in expected.items():
                    assert got[key] == pytest.approx(value, rel=1e-12, nan_ok=True), key


def test_a_run_directory_that_cannot_be_written_is_read_from_its_csv(tmp_path, connection, monkeypatch):
    run_dir, _ = write_synthetic_run(tmp_path, duration_s=5.0, instances=FOUR, seed=9)
    rows = connection.execute(f"SELECT count(*) FROM {columnar.csv_scan_sql(run_dir)}").fetchone()[0]

    def refused(*_args):  # what a read-only directory answers (a test as root could write there)
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(columnar, "write_invocations_parquet", refused)
    source = columnar.invocations_scan_sql(run_dir, connection)
    assert "read_csv" in source and not columnar.invocations_parquet_path(run_dir).exists()
    assert connection.execute(f"SELECT count(*) FROM {source}").fetchone()[0] == rows > 0


@pytest.mark.parametrize("shape", ["ties", "signs", "one_value", "spread"])
def test_order_statistics_cut_big_bins_and_stay_exact(tmp_path, connection, monkeypatch, shape):
    # Bins of more than 40 rows are cut again (into 8 slices), so every path of the narrowing runs
    # on a few thousand rows: one-value bins, bins cut twice or more, negative values and zeros.
    monkeypatch.setattr(order_stats, "SORT_ROWS", 40)
    monkeypatch.setattr(order_stats, "SPLIT_BINS", 8)
    sorted_rows: list[int] = []  # the rows of every bin read and sorted: none over SORT_ROWS
    read_and_sort = order_stats._read_and_sort

    def counted(connection, rows_sql, keys, bins, figures):
        sorted_rows.extend(b.rows for b in bins)
        read_and_sort(connection, rows_sql, keys, bins, figures)

    monkeypatch.setattr(order_stats, "_read_and_sort", counted)
    rng = np.random.default_rng(11)
    n = 5000
    values = {
        "ties": rng.integers(0, 7, n).astype("float64"),  # a handful of values, thousands of each
        "signs": np.concatenate([-rng.lognormal(0, 2, n // 2), np.zeros(50), rng.lognormal(0, 2, n // 2)]),
        "one_value": np.full(n, 3.25),
        "spread": rng.lognormal(3, 0.01, n) + np.linspace(0, 1e-9, n),  # close values: one first-pass bin
    }[shape]
    groups = rng.choice(["a", "b"], len(values))
    path = tmp_path / "v.parquet"
    pd.DataFrame({"g": groups, "v": values}).to_parquet(path)
    blocks = engine.percentile_blocks(connection, engine.parquet_source(path), "v", ["g"])
    quantiles = engine.linear_quantiles(connection, engine.parquet_source(path), "v", ["g"], [0.5, 0.99, 1.0])
    for name in ("a", "b"):
        mine = values[groups == name]
        expected = stats_mod.percentile_block(mine, "v")
        for key, value in expected.items():
            if key != "v_mean":
                assert same(blocks[(name,)][key], value), key
        assert blocks[(name,)]["v_mean"] == pytest.approx(expected["v_mean"], rel=1e-12, abs=1e-12)
        assert quantiles[(name,)][2] == [float(np.quantile(mine, p)) for p in (0.5, 0.99, 1.0)]
    assert max(sorted_rows, default=0) <= 40 and (shape in ("ties", "one_value")) == (not sorted_rows)
