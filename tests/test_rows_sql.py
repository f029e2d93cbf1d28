"""The analysed rows built out of core (``faasprof.analyzer.rows_sql``) equal ``load_run``'s frame as
``frames.write_parquet`` writes it: column by column (names, order, dtypes, values bit for bit),
the Arrow schema, the file's description, ``records_info`` and the warnings, on synthetic runs that
cover each rule the frame applies; and the records' Parquet copy (``rundir.record_parquet``)."""

from __future__ import annotations

import json
import os

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from faasprof import rundir
from faasprof.analyzer import analysis, engine, frames, metrics, rows_sql
from faasprof.errors import FormatError
from faasprof.rundir import record_parquet, records
from tests.test_analyzer_attribution import OPENWHISK, _host
from tests.test_analyzer_synthetic import record, write_synthetic_run

FAILURES = {
    3: "application_error",
    5: "no_record",
    8: "developer_error",
    11: "internal_error",
    14: "action_timeout",
}


def _append(run_dir, lines: list[dict | str]) -> None:
    with open(rundir.activations_path(run_dir), "a", encoding="utf-8") as handle:
        for line in lines:
            handle.write((line if isinstance(line, str) else json.dumps(line)) + "\n")


def _foreign(run_dir, kept):
    _append(run_dir, [record(f"{k:032x}", "other", 1_790_000_000_000 + k, 1, 0, 3) for k in range(3)])


def _duplicates(run_dir, kept):
    # The same ids again, later in the file: the last record of an id wins (another status and duration).
    again = []
    for original in kept[2:6]:
        copy = json.loads(json.dumps(original))
        copy["duration"] += 7.25  # localwhisk's durations have fractions of a millisecond
        copy["response"] = {"status": "application error", "success": False, "result": {"error": "second"}}
        again.append(copy)
    again[0]["duration"] = 0.4  # under a millisecond: billed as one
    _append(run_dir, [*again, "{cut short"])


def _container_state(run_dir, kept):
    states = ["cold", "warm", "resumed", "prewarmed", "warming", "odd"]
    path = rundir.activations_path(run_dir)
    lines = path.read_text().splitlines()
    out = []
    for k, line in enumerate(lines):
        item = json.loads(line)
        if k % 3 == 0:
            item["annotations"].append({"key": "containerState", "value": states[k % len(states)]})
        out.append(json.dumps(item))
    path.write_text("\n".join(out) + "\n")


def _overlapping(run_dir, kept):
    # Two containers: activations that overlap, the second starting just before the first (start
    # order is not seq order), the first running long past the next ones' starts (the latest
    # earlier end is not the previous row's), each after a long wait, behind one that waited long
    # too (the platform's queue, not an unpause) or a short one; some within the pause grace of
    # the function's first start.
    path = rundir.activations_path(run_dir)
    items = [json.loads(line) for line in path.read_text().splitlines()]
    for k in range(2, len(items) - 3, 4):
        first, second, third = items[k], items[k + 1], items[k + 2]
        for item, value in ((first, 80 if k % 8 == 2 else 10), (second, 90), (third, 50)):
            for annotation in item["annotations"]:
                if annotation["key"] == "waitTime":
                    annotation["value"] = value
        first["duration"] = 250
        second["start"], second["duration"] = first["start"] + (1 if k % 8 == 2 else -1), 2
        for item in (first, second):
            item["end"] = item["start"] + item["duration"]
    path.write_text("".join(json.dumps(item) + "\n" for item in items))


def _container_watches(run_dir, kept):
    # A several-invoker OpenWhisk whose hosts watched their containers: each activation's host by them.
    hosts = {
        "h1": {"containers": {"wsk0_1_guest_fn": (-0.5, 1.8)}, "offset_ns": 2_500_000_000},
        "h2": {"containers": {"wsk1_1_guest_fn": (1.4, 3.5)}, "watch": (-1.0, 2.6)},
    }
    manifest = rundir.read_manifest(run_dir)
    manifest.platform = dict(OPENWHISK)
    infos = {name: _host(run_dir, name, **spec) for name, spec in hosts.items()}
    manifest.update(hosts={name: rundir.manifest_entry(info) for name, info in infos.items()})
    rundir.write_manifest(run_dir, manifest)


def _without_end(run_dir, kept):
    # Records without an end (a platform that left it out): the next start has no earlier end to
    # measure its idle gap from.
    path = rundir.activations_path(run_dir)
    items = [json.loads(line) for line in path.read_text().splitlines()]
    for item in items[5:7] + items[12:13]:
        del item["end"]
    path.write_text("".join(json.dumps(item) + "\n" for item in items))


def _warmup(run_dir, kept):
    rundir.update_manifest(run_dir, self_check={"limits": {"warmup_s": 1.5}})


def _shuffled_log(run_dir, kept):
    # The invoker writes rows as they end: out of seq order, and a row written twice (the last wins).
    path = run_dir / rundir.INVOCATIONS
    header, *rows = path.read_text().splitlines()
    order = np.random.default_rng(3).permutation(len(rows))
    again = rows[4].replace(",ok,", ",timeout,", 1)
    path.write_text("\n".join([header, *[rows[k] for k in order], again]) + "\n")


def _raw_gone(run_dir, kept):
    record_parquet.write_records_parquet(run_dir)
    rundir.activations_path(run_dir).unlink()
    records_index = run_dir / "activations.columns.npz"
    records_index.unlink(missing_ok=True)


PHASED = {
    "i0": {"application": "fa", "distribution": "Uniform", "rate": 8.0, "activity_window": [0.0, 4.0]},
    "i1": {"application": "fb", "distribution": "Poisson", "rate": 12.0, "activity_window": [2.0, 6.0]},
    "i2": {"application": "fa", "distribution": "Uniform", "rate": 5.0, "blocking": False},
}

MIXED = {
    "i0": {"application": "fa", "distribution": "Uniform", "rate": 8.0},
    "g": {"application": "fg", "distribution": "Uniform", "rate": 6.0, "endpoint": "generic"},
}

CASES = {
    "failures of every kind": dict(failures=FAILURES),
    "missing records": dict(missing_every=4),
    "foreign records": dict(edit=_foreign),
    "records without an end": dict(edit=_without_end),
    "duplicate records and a torn line": dict(edit=_duplicates, failures={2: "internal_error"}),
    "non-blocking calls": dict(blocking=False, failures={4: "application_error", 6: "no_record"}),
    "blocking wait expired (202)": dict(blocking_wait_ms=3.0, service_ms=6.0),
    "warm-up": dict(edit=_warmup),
    "interrupted with unsent rows": dict(interrupt_at_s=2.2, failures={1: "no_record"}),
    "several phases and instances": dict(
        instances=PHASED, duration_s=6.0, failures={9: "action_timeout"}, init_ms=40.0, pause_grace_ms=120.0
    ),
    "overlapping activations that waited": dict(edit=_overlapping, duration_s=4.0, pause_grace_ms=400.0),
    "container state present": dict(edit=_container_state),
    "hosts' container watches decide the host": dict(edit=_container_watches, missing_every=6),
    "an endpoint that keeps no records": dict(instances=MIXED, missing_every=3, failures={4: "application_error"}),
    "no records saved": dict(save_records=False),
    "log out of order, a row twice": dict(edit=_shuffled_log, failures={7: "developer_error"}),
    "raw records gone: the Parquet stands for them": dict(edit=_raw_gone, missing_every=5),
}


def _run(tmp_path, case: dict):
    options = dict(case)
    edit = options.pop("edit", None)
    options.setdefault("duration_s", 3.0)
    run_dir, kept = write_synthetic_run(tmp_path, **options)
    if edit is not None:
        edit(run_dir, kept)
    return run_dir


def _compare(run_dir, tmp_path) -> rows_sql.RowsInfo:
    run = analysis.load_run(run_dir)
    expected, actual = tmp_path / "pandas.parquet", tmp_path / "sql.parquet"
    frames.write_parquet(run.invocations, expected, kind="invocations")
    con = engine.connect()
    try:
        info = rows_sql.write_invocation_rows(run_dir, rundir.read_manifest(run_dir), actual, con)
        # Its work tables are dropped (at 100 million rows they hold gigabytes).
        assert con.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_catalog = 'temp'"
        ).fetchall() == [(0,)]
    finally:
        con.close()
    want, got = pd.read_parquet(expected), pd.read_parquet(actual)
    assert list(got.columns) == list(want.columns)
    for column in want.columns:  # one column at a time: a failure names it
        assert got[column].dtype == want[column].dtype, column
        pd.testing.assert_series_equal(got[column], want[column], check_exact=True, obj=column)
    assert pq.read_schema(actual).equals(pq.read_schema(expected), check_metadata=False)
    assert frames.parquet_description(actual) == frames.parquet_description(expected)
    figures = {
        k: v for k, v in run.records_info.items() if k not in ("monitors", "pause_grace_ms", "pause_grace_source")
    }
    assert info.records_info == figures
    assert info.rows == len(want) and info.phases == run.phases and info.end_s == run.end_s
    assert info.specs == run.specs and info.warmup_s == run.warmup_s
    # load_run's warnings: the records', the phases' stability (figures), the run's, the grace's.
    head, tail = info.records_warnings, info.run_warnings + info.grace_warnings
    assert run.warnings[: len(head)] == head
    assert run.warnings[len(run.warnings) - len(tail) :] == tail if tail else True
    return info


@pytest.mark.parametrize("name", list(CASES))
def test_rows_equal_the_pandas_frame(tmp_path, name):
    _compare(_run(tmp_path, CASES[name]), tmp_path)


@pytest.mark.parametrize(
    "name",
    ["duplicate records and a torn line", "log out of order, a row twice", "hosts' container watches decide the host"],
)
def test_rows_equal_the_pandas_frame_block_by_block(tmp_path, monkeypatch, name):
    """A run longer than a block (of 7 seqs here) is sorted and written block by block."""
    monkeypatch.setattr(rows_sql, "BLOCK_ROWS", 7)
    _compare(_run(tmp_path, CASES[name]), tmp_path)


def test_the_cases_cover_what_they_say(tmp_path):
    """The synthetic runs hold what the table names (a case that lost its point would pass alike)."""
    run = analysis.load_run(_run(tmp_path / "a", CASES["duplicate records and a torn line"]))
    assert run.records_info["unreadable_lines"] == 1 and (run.invocations["error_text"] == "second").sum() == 4
    run = analysis.load_run(_run(tmp_path / "b", CASES["container state present"]))
    assert run.records_info["with_container_state"] > 0
    run = analysis.load_run(_run(tmp_path / "c", CASES["foreign records"]))
    assert run.records_info["foreign_ignored"] == 3
    run = analysis.load_run(_run(tmp_path / "d", CASES["several phases and instances"]))
    assert len(run.phases) >= 3 and set(run.invocations["start_class"]) >= {"cold", "warm", "resumed"}
    run = analysis.load_run(_run(tmp_path / "e", CASES["interrupted with unsent rows"]))
    assert (run.invocations["outcome"] == "not_sent").sum() > 0 and run.end_s is not None
    run = analysis.load_run(_run(tmp_path / "f", CASES["blocking wait expired (202)"]))
    assert (run.invocations["http_status"] == 202).sum() > 0
    run = analysis.load_run(_run(tmp_path / "h", CASES["hosts' container watches decide the host"]))
    counts = run.invocations.attrs["host_attribution"]
    assert (
        counts["attributed"]["h1"]
        and counts["attributed"]["h2"]
        and set(counts["unknown"]) >= {"ambiguous", "not watched"}
    )
    run = analysis.load_run(_run(tmp_path / "g", CASES["raw records gone: the Parquet stands for them"]))
    assert run.records_info["source"] == rundir.ACTIVATIONS_PARQUET and "is gone" in run.warnings[0]


def test_plugin_metric_columns(tmp_path, monkeypatch):
    metric = metrics.Metric(
        "queue_share_ratio", "wait over completion", lambda f: f["wait_ms"] / f["completion_latency_ms"]
    )
    monkeypatch.setattr(metrics, "METRICS", (metric,))
    monkeypatch.setattr("faasprof.analyzer.rows_arrow.METRICS", (metric,))
    _compare(_run(tmp_path, {"failures": FAILURES}), tmp_path)


def test_the_records_parquet_equals_the_records_frame(tmp_path):
    run_dir = _run(tmp_path, {"edit": _duplicates, "failures": FAILURES})
    path = record_parquet.write_records_parquet(run_dir)
    want, bad = records.read_records(rundir.activations_path(run_dir))
    got, got_bad = record_parquet.read_records_frame(path)
    assert got_bad == bad == 1
    pd.testing.assert_frame_equal(got, want, check_exact=True)
    assert record_parquet.is_current(run_dir)
    # The Python reader (records of unusual shape) gives the same file, and leaves the engine's
    # connection usable (DuckDB's reader stopped midway is closed).
    _append(run_dir, [{"activationId": 7, "annotations": [], "response": {}}])
    assert not record_parquet.is_current(run_dir)
    con = engine.connect()
    path = record_parquet.write_records_parquet(run_dir, con)
    assert con.execute("SELECT 1").fetchall() == [(1,)]
    con.close()
    want, bad = records.read_records(rundir.activations_path(run_dir))
    got, _ = record_parquet.read_records_frame(path)
    assert list(got["activation_id"].astype(str)) == list(want["activation_id"].astype(str))


def test_saving_records_drops_the_parquet_and_never_writes_over_it(tmp_path):
    run_dir = _run(tmp_path, {})
    record_parquet.write_records_parquet(run_dir)
    rundir.append_records(rundir.activations_path(run_dir), [])
    assert not record_parquet.records_parquet_path(run_dir).exists()  # it would describe the old file
    record_parquet.write_records_parquet(run_dir)
    rundir.activations_path(run_dir).unlink()
    with pytest.raises(FormatError, match="activations.parquet holds this run's records"):
        rundir.write_records(rundir.activations_path(run_dir), [])
    assert record_parquet.records_parquet_path(run_dir).exists()


def test_an_unknown_records_version_is_refused_in_one_line(tmp_path):
    run_dir = _run(tmp_path, {})
    path = record_parquet.write_records_parquet(run_dir)
    table = pq.read_table(path)
    pq.write_table(table.replace_schema_metadata({record_parquet.VERSION_KEY: "99"}), path)
    os.utime(path)
    rundir.activations_path(run_dir).unlink()
    with pytest.raises(FormatError, match="faasprof_records_version '99' is not supported"):
        record_parquet.ensure_records_parquet(run_dir)


def test_analyze_reads_a_run_whose_raw_records_are_gone(tmp_path):
    run_dir = _run(tmp_path, {"edit": _raw_gone, "failures": {3: "application_error"}})
    summary = analysis.analyze_run(run_dir, plots=False)
    assert summary["records"]["source"] == rundir.ACTIVATIONS_PARQUET and summary["records"]["found"] > 0
    assert any("activations.jsonl is gone" in line for line in summary["warnings"])
    assert not rundir.activations_path(run_dir).exists()  # nothing fetched or saved over the Parquet
