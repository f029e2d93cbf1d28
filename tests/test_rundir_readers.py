"""The columnar readers of the run directory give exactly what the row-by-row readers gave.

``faasprof.rundir.records.read_records`` (DuckDB) is held to ``read_records_python`` (orjson and
``flatten_record``, the reader before the 10-million-row work) and
``faasprof.rundir.tables.read_invocations_frame`` (Arrow) to pandas' CSV reader with the plan's
reconstruction, as the analyzer read runs before: on synthetic runs with every failure kind, on
files with malformed lines and records, on torn runs and on format-1 runs.
"""

from __future__ import annotations

import json
from array import array

import numpy as np
import pandas as pd
import pytest
from test_analyzer_synthetic import record, write_synthetic_run

from faasprof import rundir
from faasprof.analyzer import frames as frames_mod
from faasprof.analyzer.analysis import load_run
from faasprof.rundir import records as records_mod
from faasprof.rundir import tables

FAILURES = {3: "application_error", 7: "developer_error", 11: "internal_error", 13: "action_timeout", 17: "no_record"}


def _both(path):
    fast, fast_bad = records_mod.read_records(path)
    slow, slow_bad = records_mod.read_records_python(path)
    pd.testing.assert_frame_equal(fast, slow, check_exact=True)
    assert fast_bad == slow_bad
    # The ids are Arrow-backed strings (as invocations.csv's), not a Python object per record.
    assert fast["activation_id"].dtype == records_mod.TEXT_DTYPE and isinstance(
        fast["activation_id"].array, pd.arrays.ArrowStringArray
    )
    return fast, fast_bad


@pytest.mark.parametrize("blocking", [True, False])
def test_records_of_a_run_with_every_failure_read_the_same_both_ways(tmp_path, blocking):
    run_dir, _ = write_synthetic_run(
        tmp_path,
        duration_s=3.0,
        failures=FAILURES,
        blocking=blocking,
        instances={
            "i0": {"application": "fa", "distribution": "Uniform", "rate": 5.0},
            "i1": {"application": "fb", "distribution": "Poisson", "rate": 4.0},
        },
    )
    path = run_dir / rundir.ACTIVATIONS
    assert records_mod._read_records_duckdb(str(path)) is not None  # the fast path itself, not the fallback
    frame, bad = _both(path)
    assert bad == 0 and set(frame["record_outcome"].astype(str)) == {
        "success",
        "application_error",
        "developer_error",
        "internal_error",
        "action_timeout",
    }
    assert (
        frame.loc[frame["record_outcome"] == "action_timeout", "error_text"]
        .str.contains("exceeded its time limits")
        .all()
    )


def _write_lines(path, lines, torn_tail=""):
    path.write_text("".join(line + "\n" for line in lines) + torn_tail)


def test_localwhisk_shaped_records_with_status_codes_and_timeouts_by_message(tmp_path):
    records = []
    for k, (status, code) in enumerate(
        [("success", 0), ("application error", 1), ("action developer error", 2), ("whisk internal error", 3)]
    ):
        raw = record(
            f"{k:032x}",
            "fn",
            1_790_000_000_000 + k,
            2,
            0,
            5,
            status=status,
            error={"nested": [1, 2.5], "b": "x"} if k == 1 else "boom",
        )
        raw["response"]["statusCode"] = code
        raw["annotations"].append({"key": "containerState", "value": "warm" if k else "cold"})
        records.append(raw)
    slow = record(
        "f" * 32,
        "fn",
        1_790_000_000_100,
        2,
        0,
        5,
        status="action developer error",
        error="The action exceeded its time limits of 100 milliseconds.",
    )
    records.append(slow)
    duplicate = dict(records[0], duration=99)  # the same id again: the last record wins
    records.append(duplicate)
    _write_lines(tmp_path / "a.jsonl", [json.dumps(r) for r in records])
    frame, _ = _both(tmp_path / "a.jsonl")
    assert len(frame) == 5 and frame["duration_ms"].iloc[-1] == 99.0
    assert frame.set_index("activation_id").loc["f" * 32, "record_outcome"] == "action_timeout"
    assert sorted(frame["container_state"].dropna().astype(str)) == ["cold", "warm", "warm", "warm"]


def test_malformed_lines_and_records_read_the_same_and_are_counted(tmp_path):
    good = record("a" * 32, "fn", 1_790_000_000_000, 2, 0, 5)
    lines = [
        json.dumps(good),
        "[1, 2]",
        "42",
        "",
        json.dumps(
            {
                "activationId": "b" * 32,
                "annotations": {"waitTime": 3, "kind": "nodejs:20"},
                "response": "not an object",
                "start": 5,
                "end": 9,
            }
        ),
        json.dumps({"activationId": "c" * 32, "statusCode": 1, "start": 7}),
        json.dumps({**good, "activationId": "d" * 32, "response": {"status": 7, "statusCode": "0"}}),
        json.dumps(
            {
                **good,
                "activationId": "e" * 32,
                "annotations": [*good["annotations"], "junk", {"key": "waitTime", "value": True}],
            }
        ),
    ]
    _write_lines(tmp_path / "bad.jsonl", lines, torn_tail='{"activationId": "f')
    assert (
        records_mod._read_records_duckdb(str(tmp_path / "bad.jsonl")) is None
    )  # unusual records: the reference reader decides
    frame, bad = _both(tmp_path / "bad.jsonl")
    assert bad == 3 and len(frame) == 5


@pytest.mark.parametrize("field, value", [("name", 7), ("namespace", True), ("activationId", 12345)])
def test_an_id_or_label_that_is_not_a_string_reads_the_same(tmp_path, field, value):
    lines = [json.dumps(record(f"{k:032x}", "fn", 1_790_000_000_000 + k, 2, 0, 5)) for k in range(3)]
    lines.append(json.dumps({**record("e" * 32, "fn", 1_790_000_000_009, 2, 0, 5), field: value}))
    _write_lines(tmp_path / "odd.jsonl", lines)
    assert (
        records_mod._read_records_duckdb(str(tmp_path / "odd.jsonl")) is None
    )  # not cast to text: the reference decides
    frame, bad = _both(tmp_path / "odd.jsonl")
    assert bad == 0 and len(frame) == 4


def test_a_torn_last_line_alone_keeps_the_fast_path(tmp_path):
    good = [json.dumps(record(f"{k:032x}", "fn", 1_790_000_000_000 + k, 2, 0, 5)) for k in range(3)]
    _write_lines(tmp_path / "torn.jsonl", good, torn_tail='{"activationId": "ff", "annot')
    assert records_mod._read_records_duckdb(str(tmp_path / "torn.jsonl"))[1] == 1
    frame, bad = _both(tmp_path / "torn.jsonl")
    assert bad == 1 and len(frame) == 3


def test_an_empty_records_file_reads_as_no_records(tmp_path):
    (tmp_path / "empty.jsonl").write_text("")
    frame, bad = _both(tmp_path / "empty.jsonl")
    assert len(frame) == 0 and bad == 0 and list(frame.columns) == list(records_mod.RECORD_COLUMNS)


# -- invocations.csv ------------------------------------------------------------------------------


def _reference_invocations(run_dir, manifest=None):
    """How the analyzer read invocations.csv before: pandas' CSV reader, then the plan's
    reconstruction, sorted and de-duplicated by seq."""
    data = (run_dir / rundir.INVOCATIONS).read_bytes()
    data = data[: data.rfind(b"\n") + 1]
    frame = tables._parse_invocations(data)
    missing, completeness = rundir.reconstruct_missing(run_dir, frame["seq"].tolist(), manifest)
    if missing:
        text = ",".join(rundir.INVOCATION_COLUMNS) + "\n" + "".join(rundir.format_row(row) for row in missing)
        as_str = {"instance": str, "function": str, "outcome": str}
        frame = pd.concat(
            [frame.astype(as_str), tables._parse_invocations(text.encode()).astype(as_str)], ignore_index=True
        )
        frame = frame.astype({"instance": "category", "function": "category", "outcome": "category"})
    frame = frame.sort_values("seq", kind="stable").drop_duplicates("seq", keep="last").reset_index(drop=True)
    return frame, completeness.to_json()


def _check_invocations(run_dir, manifest=None):
    fast = tables.read_invocations_frame(run_dir, manifest)
    slow, completeness = _reference_invocations(run_dir, manifest)
    pd.testing.assert_frame_equal(fast, slow, check_exact=True)
    assert fast.attrs["completeness"] == completeness
    assert tables.completeness(run_dir, manifest).to_json() == completeness
    return fast


def test_invocations_of_a_synthetic_run_read_the_same(tmp_path):
    run_dir, _ = write_synthetic_run(tmp_path, duration_s=2.0, failures=FAILURES, interrupt_at_s=1.5)
    frame = _check_invocations(run_dir)
    assert (frame["outcome"] == "not_sent").any() and frame["seq"].is_monotonic_increasing


def test_rows_out_of_order_repeated_and_with_quoted_errors_read_the_same(tmp_path):
    header = ",".join(rundir.INVOCATION_COLUMNS) + "\n"
    rows = [
        (2, "i1", "g", 30, 31, 40, "failed", None, None, 'refused, "twice"\nthen gave up'),
        (0, "i0", "f", 10, 11, 20, "ok", 200, "a" * 32, None),
        (1, "i0", "f", 20, None, None, "not_sent", None, None, "run interrupted"),
        (0, "i0", "f", 10, 12, 22, "ok", 200, "b" * 32, None),  # seq 0 again: the last row wins
        (3, "9", "h", 40, 41, 45, "throttled", 429, "", "HTTP 429"),
    ]
    (tmp_path / rundir.INVOCATIONS).write_text(header + "".join(rundir.format_row(r) for r in rows) + "4,i0,f,5")
    rundir.write_manifest(tmp_path, rundir.new_manifest("t", {}, rundir.ClockAnchor(0, 1)))
    frame = _check_invocations(tmp_path)
    assert frame["seq"].tolist() == [0, 1, 2, 3] and frame["activation_id"].iloc[0] == "b" * 32
    assert frame["error"].iloc[2] == 'refused, "twice"\nthen gave up' and frame["activation_id"].iloc[3] == ""


def test_a_torn_run_reads_the_same_with_its_reconstructed_rows(tmp_path):
    clock = rundir.ClockAnchor(0, 1_000)
    manifest = rundir.new_manifest("t", {"test_name": "t"}, clock)
    manifest.counts["planned"] = 10
    rundir.write_manifest(tmp_path, manifest)
    rundir.write_plan(
        tmp_path,
        array("q", [i * 100 for i in range(10)]),
        array("i", [i % 2 for i in range(10)]),
        ["a", "b"],
        ["fa", "fb"],
    )
    log = rundir.InvocationLog(tmp_path, flush_interval_s=0.05)
    for seq in range(7):
        log.sent(seq, seq * 100 + 5)
    for seq in (3, 0, 2, 1):
        log.append(
            (
                seq,
                "ab"[seq % 2],
                ("fa", "fb")[seq % 2],
                seq * 100,
                seq * 100 + 5,
                seq * 100 + 50,
                "ok",
                202,
                f"id{seq}",
                None,
            )
        )
    log.close()
    frame = _check_invocations(tmp_path)
    assert frame["outcome"].astype(str).tolist() == ["ok"] * 4 + ["unanswered"] * 3 + ["unrecorded"] * 3
    assert frame.attrs["completeness"]["unanswered"] == 3


def test_a_format_1_run_reads_the_same_and_loads(tmp_path):
    run_dir, _ = write_synthetic_run(tmp_path, duration_s=2.0, format_version=1)
    # A format-1 run cut short: rows missing, no plan, the manifest's count says how many.
    lines = (run_dir / rundir.INVOCATIONS).read_text().splitlines(keepends=True)
    (run_dir / rundir.INVOCATIONS).write_text("".join(lines[:-5]))
    manifest = rundir.read_manifest(run_dir)
    assert manifest.format_version == 1
    frame = _check_invocations(run_dir, manifest)
    assert (
        frame.attrs["completeness"]["uncounted"] == 5
        and frame.attrs["completeness"]["plan_source"] == "manifest counts"
    )
    run = load_run(run_dir)
    assert len(run.invocations) == 15 and run.manifest.format_version == 1


# -- the join -------------------------------------------------------------------------------------


def test_records_are_matched_to_invocations_as_by_index_lookup(tmp_path):
    run_dir, _ = write_synthetic_run(tmp_path, duration_s=2.0, failures={4: "no_record"}, missing_every=3)
    invocations = tables.read_invocations_frame(run_dir)
    records, _ = records_mod.read_records(run_dir / rundir.ACTIVATIONS)
    expected = pd.Index(records["activation_id"].to_numpy(dtype=object)).get_indexer(frames_mod.match_ids(invocations))
    got = frames_mod.match_records(invocations, records)
    assert got.tolist() == expected.tolist() and (got == -1).sum() >= 6
    assert frames_mod.has_activation_id(invocations).tolist() == (frames_mod.match_ids(invocations) != "").tolist()
    plain = invocations.assign(
        activation_id=invocations["activation_id"].astype(object)
    )  # any string column matches alike
    assert frames_mod.match_records(plain, records).tolist() == expected.tolist()
    assert np.all(frames_mod.match_records(invocations, records.iloc[:0]) == -1)
