"""ARCHITECTURE.md's recipes, followed literally with a dummy: only the names a recipe lists change.

The metric: a record's annotation ``dummyUs`` becomes the record column ``dummy_us``, the invocation
frame's ``dummy_ms`` and its percentiles in ``phase_stats`` and ``summary.json``. Each step of "Add
a metric" is one ``monkeypatch`` of a name the recipe names; if anything else were hard-wired (a
copy of the column tuples, a reader that ignores them), the column would not arrive.
"""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pandas as pd
import pytest

from analyzer import frames as frames_mod
from analyzer import stats as stats_mod
from analyzer.analysis import analyze_run, load_run
from faasprof import rundir
from faasprof.paths import REPO_ROOT
from faasprof.rundir import record_columns, record_fields
from faasprof.rundir import records as records_mod
from test_analyzer_synthetic import write_synthetic_run

DUMMY_US = {"fa": 2500.0, "fb": 4000.0}  # the annotation's value, per function: a known answer
INSTANCES = {"i0": {"application": "fa", "distribution": "Uniform", "rate": 5.0},
             "i1": {"application": "fb", "distribution": "Uniform", "rate": 4.0}}

# What the recipe says to change, file by file (the test below changes these and nothing else).
METRIC_RECIPE = {
    "faasprof/rundir/record_fields.py": ("RECORD_COLUMNS", "FLOAT_COLUMNS", "flatten_record", "flatten_fast"),
    "faasprof/rundir/records.py": ("_DUCKDB_QUERY",),
    "analyzer/frames.py": ("ALIGNED_FLOAT_COLUMNS", "build_from_aligned"),
    "analyzer/stats.py": ("group_stats", "STATS_COLUMNS", "percentile_block"),
}


def _recipe(title: str) -> str:
    text = (REPO_ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
    return re.search(rf"^### {re.escape(title)}\n(.*?)(?=^### |\Z)", text, re.S | re.M).group(1)


def test_the_metric_recipe_names_what_the_dummy_changes():
    recipe = _recipe("Add a metric")
    for path, names in METRIC_RECIPE.items():
        assert f"`{path}`" in recipe
        for name in names:
            assert re.search(rf"`{re.escape(name)}[`(]", recipe), name


def _dummy_value(record: dict) -> float:
    annotations = record.get("annotations")
    pairs = annotations.items() if isinstance(annotations, dict) else ((a.get("key"), a.get("value")) for a in annotations or () if isinstance(a, dict))
    value = dict(pairs).get("dummyUs")
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else math.nan


def _add_the_dummy_metric(monkeypatch) -> None:
    """Each step of the recipe, as a change of the name it lists."""
    # 1. record_fields.py: the column, its type, and both flatteners.
    monkeypatch.setattr(record_fields, "RECORD_COLUMNS", (*record_fields.RECORD_COLUMNS, "dummy_us"))
    monkeypatch.setattr(record_fields, "FLOAT_COLUMNS", (*record_fields.FLOAT_COLUMNS, "dummy_us"))
    flatten_record, flatten_fast = record_fields.flatten_record, record_fields.flatten_fast
    monkeypatch.setattr(record_fields, "flatten_record", lambda record: (*flatten_record(record), _dummy_value(record)))

    def fast(record):
        if type(record.get("annotations")) is not list:  # flatten_fast's own fallback
            return record_fields.flatten_record(record)
        return (*flatten_fast(record), _dummy_value(record))

    monkeypatch.setattr(record_fields, "flatten_fast", fast)
    # ... records.py: DuckDB selects it (and a boolean where a number belongs is unusual).
    query = records_mod._DUCKDB_QUERY
    for old, new in (
        ("    CAST(rev[list_position(rkeys, 'initTime')].value AS VARCHAR) AS init_text,\n",
         "    CAST(rev[list_position(rkeys, 'initTime')].value AS VARCHAR) AS init_text,\n"
         "    CAST(rev[list_position(rkeys, 'dummyUs')].value AS VARCHAR) AS dummy_text,\n"),
        ("TRY_CAST(init_text AS DOUBLE) AS init_ms,", "TRY_CAST(init_text AS DOUBLE) AS init_ms, TRY_CAST(dummy_text AS DOUBLE) AS dummy_us,"),
        ("OR wait_text IN ('true', 'false')", "OR dummy_text IN ('true', 'false') OR wait_text IN ('true', 'false')"),
    ):
        assert query.count(old) == 1, old
        query = query.replace(old, new)
    monkeypatch.setattr(records_mod, "_DUCKDB_QUERY", query)
    # 2. frames.py: aligned to the invocations, and the frame's column derived from it.
    monkeypatch.setattr(frames_mod, "ALIGNED_FLOAT_COLUMNS", (*frames_mod.ALIGNED_FLOAT_COLUMNS, "dummy_us"))
    build_from_aligned = frames_mod.build_from_aligned

    def build(invocations, aligned, manifest):
        dummy_us = aligned.pop("dummy_us")
        frame = build_from_aligned(invocations, aligned, manifest)
        frame["dummy_ms"] = dummy_us / 1e3
        return frame

    monkeypatch.setattr(frames_mod, "build_from_aligned", build)
    # 3. stats.py: its percentiles over the successful invocations of each group.
    monkeypatch.setattr(stats_mod, "STATS_COLUMNS", (*stats_mod.STATS_COLUMNS, "dummy_ms"))
    group_stats = stats_mod.group_stats

    def stats(rows, start_s, end_s, done_s=None):
        out = group_stats(rows, start_s, end_s, done_s)
        out.update(stats_mod.percentile_block(rows["dummy_ms"].to_numpy(dtype="float64")[rows["successful"].to_numpy(dtype=bool)], "dummy_ms"))
        return out

    monkeypatch.setattr(stats_mod, "group_stats", stats)


def _synthetic_run_with_the_annotation(tmp_path):
    run_dir, raws = write_synthetic_run(tmp_path, duration_s=3.0, instances=INSTANCES, save_records=False)
    for raw in raws:
        raw["annotations"].append({"key": "dummyUs", "value": DUMMY_US[raw["name"]]})
    rundir.write_records(rundir.activations_path(run_dir), raws)  # with today's column index, which lacks the column
    return run_dir, raws


def test_a_dummy_metric_added_by_the_recipe_reaches_the_frame_the_statistics_and_the_summary(tmp_path, monkeypatch):
    run_dir, raws = _synthetic_run_with_the_annotation(tmp_path)
    path = rundir.activations_path(run_dir)
    assert record_columns.load(path) is not None
    _add_the_dummy_metric(monkeypatch)
    # The index written before the column existed is no longer today's: rejected, then rebuilt.
    assert record_columns.load(path) is None
    run = load_run(run_dir)
    index = record_columns.load(path)
    assert index is not None and index.state(path) == "current"
    index.close()

    frame = run.invocations
    expected = np.where(frame["has_record"], frame["function"].map(DUMMY_US).astype("float64") / 1e3, np.nan)
    assert frame["has_record"].sum() == len(raws)
    np.testing.assert_array_equal(frame["dummy_ms"].to_numpy(dtype="float64"), expected)
    for row in run.phase_stats.itertuples():
        assert row.dummy_ms_p50 == DUMMY_US[row.function] / 1e3 and row.dummy_ms_n == row.successful

    summary = analyze_run(run_dir, None, plots=False)
    phases = [(instance["function"], phase) for instance in summary["instances"] for phase in instance["phases"]]
    assert phases and all(phase["dummy_ms_p50"] == DUMMY_US[function] / 1e3 for function, phase in phases)
    written = json.loads((run_dir / "analysis" / "summary.json").read_text())
    assert [phase["dummy_ms_p50"] for instance in written["instances"] for phase in instance["phases"]] == [p["dummy_ms_p50"] for _, p in phases]
    assert "dummy_ms" in pd.read_parquet(run_dir / "analysis" / "invocations.parquet", columns=["dummy_ms"]).columns


@pytest.mark.parametrize("reader", ["index", "duckdb", "python"])
def test_every_record_reader_gives_the_dummy_column(tmp_path, monkeypatch, reader):
    run_dir, raws = _synthetic_run_with_the_annotation(tmp_path)
    _add_the_dummy_metric(monkeypatch)
    path = rundir.activations_path(run_dir)
    if reader == "index":
        rundir.write_records(path, raws)  # the index written now holds the column
        assert record_columns.load(path) is not None
        frame, _ = records_mod.read_records(path)
    elif reader == "duckdb":
        record_columns.remove(path)
        frame, _ = records_mod._read_records_duckdb(str(path))
    else:
        frame, _ = records_mod.read_records_python(path)
    by_id = dict(zip(frame["activation_id"], frame["dummy_us"]))
    assert by_id == {raw["activationId"]: DUMMY_US[raw["name"]] for raw in raws}
