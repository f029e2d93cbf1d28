"""The column index of ``activations.jsonl`` (``faasprof.rundir.record_columns``): every read
through it gives exactly what parsing the JSON gives, and it is used only while it describes the
file (appended to, copied, rewritten in place, cut short, torn, of another version)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from test_analyzer_synthetic import record, write_synthetic_run

from faasprof import rundir
from faasprof.analyzer import chains
from faasprof.analyzer import frames as frames_mod
from faasprof.rundir import activations, record_columns, record_fields
from faasprof.rundir import records as records_mod

REPO_ROOT = Path(__file__).resolve().parent.parent

FAILURES = {3: "application_error", 7: "developer_error", 11: "internal_error", 13: "action_timeout", 17: "no_record"}


def _raw_records(tmp_path, failures=FAILURES):
    run_dir, raws = write_synthetic_run(
        tmp_path,
        duration_s=3.0,
        failures=failures,
        save_records=False,
        instances={
            "i0": {"application": "fa", "distribution": "Uniform", "rate": 5.0},
            "i1": {"application": "fb", "distribution": "Poisson", "rate": 4.0},
        },
    )
    return run_dir / rundir.ACTIVATIONS, raws


def _state(path):
    index = record_columns.load(path)
    if index is None:
        return None
    try:
        return index.state(path)
    finally:
        index.close()


def _read_equal(path, **kwargs):
    """``read_records`` against the reference parser of the file as it is now."""
    frame, bad = records_mod.read_records(path, **kwargs)
    reference, reference_bad = records_mod.read_records_python(path)
    pd.testing.assert_frame_equal(frame, reference, check_exact=True)
    assert bad == reference_bad
    return frame, bad


def test_saved_records_are_read_from_their_index_without_parsing(tmp_path, monkeypatch):
    path, raws = _raw_records(tmp_path)
    raws.append(dict(raws[0], duration=99))  # an id again: the last record wins
    assert rundir.write_records(path, raws) == len(raws)
    assert record_columns.index_path(path).name == "activations.columns.npz" and _state(path) == "current"
    expected, _ = records_mod.read_records_python(path)

    def no_parsing(*args, **kwargs):
        raise AssertionError("the JSON was parsed")

    monkeypatch.setattr(records_mod, "_parse", no_parsing)
    monkeypatch.setattr(records_mod, "read_records_python", no_parsing)
    frame, bad = records_mod.read_records(path)
    pd.testing.assert_frame_equal(frame, expected, check_exact=True)
    assert bad == 0 and len(frame) == len(raws) - 1 and frame["duration_ms"].iloc[-1] == 99.0
    assert set(frame["record_outcome"].astype(str)) == {
        "success",
        "application_error",
        "developer_error",
        "internal_error",
        "action_timeout",
    }
    assert frame["error_text"].notna().sum() == 4


def test_records_appended_after_the_index_are_parsed_and_the_index_refreshed(tmp_path):
    path, raws = _raw_records(tmp_path)
    rundir.write_records(path, raws[:10])
    with open(path, "ab") as handle:
        handle.write(b'{"activationId": "cut')  # a line cut short before the append
    rundir.append_records(path, [dict(raws[0], duration=77), *raws[10:]])
    assert _state(path) == "prefix"
    frame, bad = _read_equal(path, refresh_index=True)
    assert (
        bad == 1
        and len(frame) == len(raws)
        and frame.set_index("activation_id").loc[raws[0]["activationId"], "duration_ms"] == 77.0
    )
    assert _state(path) == "current"
    _read_equal(path)


def test_a_copied_file_is_checked_by_its_content(tmp_path):
    path, raws = _raw_records(tmp_path)
    rundir.write_records(path, raws)
    copy = tmp_path / "copy"
    copy.mkdir()
    shutil.copy(path, copy / rundir.ACTIVATIONS)
    shutil.copy(record_columns.index_path(path), record_columns.index_path(copy / rundir.ACTIVATIONS))
    assert _state(copy / rundir.ACTIVATIONS) == "prefix"  # another inode: the CRC-32 decides
    _read_equal(copy / rundir.ACTIVATIONS)


@pytest.mark.parametrize("change", ["same size, other content", "cut short", "rewritten by another tool", "touched"])
def test_an_index_that_no_longer_describes_its_file_is_never_used(tmp_path, change):
    path, raws = _raw_records(tmp_path)
    rundir.write_records(path, raws)
    data = path.read_bytes()
    if change == "same size, other content":
        position = data.index(b'"duration":') + len(b'"duration":')
        digit = data[position : position + 1]
        path.write_bytes(data[:position] + (b"7" if digit != b"7" else b"8") + data[position + 1 :])
        assert path.stat().st_size == len(data)
        assert _state(path) == "stale"
    elif change == "cut short":
        path.write_bytes(data[: len(data) // 2])
        assert _state(path) == "stale"
    elif change == "rewritten by another tool":
        path.write_text("".join(json.dumps(r) + "\n" for r in reversed(raws)))
        assert _state(path) == "stale"
    else:
        os.utime(path, ns=(0, 0))
        assert _state(path) == "prefix"  # the identity changed, the bytes did not
    _read_equal(path)


def test_a_damaged_or_foreign_index_is_ignored(tmp_path):
    path, raws = _raw_records(tmp_path)
    rundir.write_records(path, raws)
    index = record_columns.index_path(path)
    whole = index.read_bytes()
    index.write_bytes(whole[: len(whole) // 2])
    assert record_columns.load(path) is None
    _read_equal(path)
    rundir.write_records(path, raws)
    loaded = record_columns.load(path)
    arrays = {name: loaded.array(name) for name in loaded._npz.files if name != "meta"}
    meta = dict(loaded.meta, format_version=record_columns.FORMAT_VERSION + 1)
    loaded.close()
    np.savez(index, meta=np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8), **arrays)
    assert record_columns.load(path) is None
    _read_equal(path)


@pytest.mark.parametrize("change", ["column added since", "column dropped since"])
def test_an_index_of_other_columns_is_rebuilt_not_read(tmp_path, change):
    # An index written before a metric's column joined RECORD_COLUMNS (or after one left) is of
    # the same version and still describes its file: its arrays are what give it away.
    path, raws = _raw_records(tmp_path)
    rundir.write_records(path, raws)
    loaded = record_columns.load(path)
    arrays = {name: loaded.array(name) for name in loaded._npz.files if name != "meta"}
    meta = loaded.meta
    loaded.close()
    if change == "column added since":
        del arrays[record_fields.FLOAT_COLUMNS[-1]]
    else:
        arrays["retired_ms"] = arrays[record_fields.FLOAT_COLUMNS[-1]]
    index = record_columns.index_path(path)
    np.savez(index, meta=np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8), **arrays)
    assert record_columns.load(path) is None
    _read_equal(path, refresh_index=True)
    assert _state(path) == "current"  # rebuilt by that parse


def test_records_an_index_cannot_hold_exactly_leave_none(tmp_path):
    path, raws = _raw_records(tmp_path)
    odd = [dict(raws[0], start="soon"), {**raws[1], "name": 7}, {**raws[1], "name": ["fa"]}]
    for bad_record in odd:
        rundir.write_records(path, [*raws[2:], bad_record])
        assert not record_columns.index_path(path).exists()
        _read_equal(path, refresh_index=True)
    # A number as text is converted as the readers convert it: the index holds it.
    rundir.write_records(path, [*raws[2:], dict(raws[0], start="1790000000000")])
    assert _state(path) == "current"
    _read_equal(path)


def test_a_parse_writes_the_index_for_the_next_read(tmp_path):
    path, raws = _raw_records(tmp_path)
    text = "".join(json.dumps(r) + "\n" for r in raws) + "not json\n\n[1]\n"
    path.write_text(text)
    frame, bad = _read_equal(path, refresh_index=True)
    assert bad == 2 and _state(path) == "current"
    again, again_bad = records_mod.read_records(path)
    pd.testing.assert_frame_equal(again, frame, check_exact=True)
    assert again_bad == bad
    path.write_text(text + '{"activationId": "torn')  # no line break at the end: left to the readers
    record_columns.remove(path)
    _read_equal(path, refresh_index=True)
    assert not record_columns.index_path(path).exists()


def test_unicode_ids_error_texts_and_labels_round_trip(tmp_path):
    raws = [
        record(
            "é" * 8 + f"{k:024x}",
            "función",
            1_790_000_000_000 + k,
            2,
            0,
            5,
            status="application error" if k % 2 else "success",
            error="fallo: ünïcode ✓" if k % 2 else None,
        )
        for k in range(6)
    ]
    raws.append({"start": 5, "end": 9, "annotations": [], "response": {"status": "success"}})  # no id at all
    path = tmp_path / rundir.ACTIVATIONS
    rundir.write_records(path, raws)
    assert _state(path) == "current"
    frame, _ = _read_equal(path)
    assert frame["activation_id"].isna().sum() == 1 and (frame["error_text"] == "fallo: ünïcode ✓").sum() == 3


def test_an_empty_file_has_an_empty_index(tmp_path):
    path = tmp_path / rundir.ACTIVATIONS
    rundir.write_records(path, [])
    assert _state(path) == "current"
    frame, bad = _read_equal(path)
    assert len(frame) == 0 and bad == 0 and list(frame.columns) == list(records_mod.RECORD_COLUMNS)


def test_writing_records_and_their_index_loads_neither_pandas_nor_arrow(tmp_path):
    script = (
        "import sys; from faasprof import rundir; "
        f"rundir.write_records({str(tmp_path / 'a.jsonl')!r}, [{{'activationId': 'a' * 32, 'start': 1, 'end': 2, 'annotations': [], 'response': {{'status': 'success'}}}}]); "
        "print(sorted(m for m in ('pandas', 'pyarrow', 'duckdb') if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", script], cwd=REPO_ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]" and (tmp_path / "a.columns.npz").exists()


@pytest.mark.parametrize(
    "ids, unique",
    [
        (["a" * 32, "b" * 32, "c" * 32], True),
        (["a" * 32, "b" * 32, "a" * 32], False),
        (["abc", "abd", "abc"], False),  # one width, not a multiple of 8
        (["abc", "abd", "abe"], True),
        (["ab", "abc", "ab"], False),  # mixed widths
        (["ab", "abc", "b"], True),
        (["ab", None, None], False),
        (["", ""], False),
    ],
)
def test_ids_unique(ids, unique):
    assert records_mod.ids_unique(pa.array(ids, type=pa.large_string())) is unique
    assert records_mod.ids_unique(pd.array(ids, dtype=records_mod.TEXT_DTYPE)) is unique


def test_the_index_says_whether_any_record_is_a_chain_head_without_a_scan(tmp_path, monkeypatch):
    path, raws = _raw_records(tmp_path)
    rundir.write_records(path, raws)
    assert record_columns.mentioned(path, chains.HOPS_KEY) is False
    head = dict(raws[0], response={"status": "success", "success": True, "result": {"hops": [{"start_ns": 1}]}})
    rundir.write_records(path, [*raws, dict(head, activationId="f" * 32)])
    assert record_columns.mentioned(path, chains.HOPS_KEY) is True

    def no_scan(*args):
        raise AssertionError("the file was scanned")

    monkeypatch.setattr(activations, "scan_mentions", no_scan)
    assert rundir.records_mention(path, chains.HOPS_KEY) is True
    rundir.append_records(path, raws[:1])  # no longer current: only a scan can tell
    assert record_columns.mentioned(path, chains.HOPS_KEY) is None
    monkeypatch.undo()
    assert rundir.records_mention(path, chains.HOPS_KEY) is True


def test_an_index_is_never_written_for_a_file_that_changed_while_it_was_made(tmp_path):
    path, raws = _raw_records(tmp_path)
    builder = record_columns.ColumnsBuilder()
    lines = [json.dumps(r).encode() + b"\n" for r in raws]
    for line in lines[:-1]:
        builder.add(line)
    path.write_bytes(b"".join(lines))  # one line more than the builder saw
    assert builder.write(path) is False and not record_columns.index_path(path).exists()
    path.write_bytes(b"".join(lines) + b'{"activationId": "torn')
    frame, bad = records_mod.read_records(path)
    assert record_columns.write_from_arrays(path, {}, {}, rows=0, bad_lines=0) is False  # a torn last line
    assert not record_columns.index_path(path).exists()


def test_an_index_written_after_a_parse_still_says_whether_chain_heads_are_there(tmp_path, monkeypatch):
    path, raws = _raw_records(tmp_path)
    head = dict(
        raws[0],
        activationId="f" * 32,
        response={"status": "success", "success": True, "result": {"hops": [{"start_ns": 1}]}},
    )
    monkeypatch.setattr(record_columns, "CRC_BLOCK_BYTES", 64)  # the key across block boundaries too
    for records, heads in ((raws, False), ([*raws, head], True)):
        path.write_text("".join(json.dumps(r) + "\n" for r in records))
        record_columns.remove(path)
        _read_equal(path, refresh_index=True)
        assert _state(path) == "current" and record_columns.mentioned(path, chains.HOPS_KEY) is heads


@pytest.mark.parametrize(
    "ids, values",
    [
        (["a" * 32, "", "c" * 32, "z" * 32, "b" * 32], ["b" * 32, "a" * 32, "c" * 32]),
        (["abc", "", "abd"], ["abd", "abc", "xyz"]),  # one width, not a multiple of 8
        (["", ""], ["abc"]),
        (["abc", "ab"], ["abc", "xyz"]),  # several widths: Arrow decides
        (["a" * 32], []),
        ([], ["a" * 32]),
    ],
)
def test_ids_are_matched_as_arrow_matches_them(ids, values):
    ids_array, value_array = pa.array(ids, type=pa.large_string()), pa.array(values, type=pa.large_string())
    expected = pc.fill_null(pc.index_in(ids_array, value_set=value_array), -1).to_numpy(zero_copy_only=False).tolist()
    fast = records_mod.match_positions(ids_array, value_array)
    assert fast is None or fast.tolist() == expected
    invocations = pd.DataFrame({"activation_id": pd.array(ids, dtype=records_mod.TEXT_DTYPE)})
    records = pd.DataFrame({"activation_id": pd.array(values, dtype=records_mod.TEXT_DTYPE)})
    assert frames_mod.match_records(invocations, records).tolist() == expected


def test_a_large_random_match_agrees_with_arrow():
    rng = np.random.default_rng(7)
    values = list(dict.fromkeys(f"{v:032x}" for v in rng.integers(0, 2**62, 5000)))
    ids = [
        values[k] if k < len(values) and k % 3 else ("" if k % 7 == 0 else f"{k:032x}")
        for k in rng.integers(0, 7000, 8000)
    ]
    ids_array, value_array = pa.array(ids, type=pa.large_string()), pa.array(values, type=pa.large_string())
    expected = pc.fill_null(pc.index_in(ids_array, value_set=value_array), -1).to_numpy(zero_copy_only=False)
    assert records_mod.match_positions(ids_array, value_array).tolist() == expected.tolist()
