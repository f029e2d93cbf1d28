"""The Azure Functions trace layouts read as published (faasprof.workload.azure_files), on days
generated in the 2019 layout (faasprof.workload.trace_synth): nothing is downloaded."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from faasprof.workload.azure_files import (
    FileKind,
    TraceFileError,
    file_kind,
    find_day,
    minute_labels,
    read_durations,
    read_invocations,
    read_invocations_2021,
    read_memory,
)
from faasprof.workload.trace_synth import write_day


@pytest.fixture(scope="module")
def day(tmp_path_factory):
    return write_day(tmp_path_factory.mktemp("day"), functions=300, seed=5)


def test_a_generated_day_has_the_published_layout(day):
    header = day.invocations.read_text().splitlines()[0].split(",")
    assert header[:4] == ["HashOwner", "HashApp", "HashFunction", "Trigger"]
    assert header[4:] == [str(m) for m in range(1, 1441)]
    assert file_kind(day.durations) is FileKind.DURATIONS and file_kind(day.memory) is FileKind.MEMORY
    rows = list(read_invocations(day.invocations))
    assert len(rows) == 300 and all(r.counts.size == 1440 for r in rows)
    assert sum(int(r.counts.sum()) for r in rows) == day.total_invocations
    assert {r.key for r in rows} == {d.key for d in read_durations(day.durations)}
    apps = {(m.owner, m.app) for m in read_memory(day.memory)}
    assert {(r.key.owner, r.key.app) for r in rows} == apps


def test_a_day_is_found_from_its_folder_or_its_files_in_any_order(day):
    by_folder = find_day([day.invocations.parent])
    by_files = find_day([day.memory, day.invocations, day.durations])
    assert by_folder == by_files
    assert by_folder.kind is FileKind.INVOCATIONS and by_folder.minute_labels[0] == 1


def test_a_window_keeps_only_its_minutes(day):
    whole = next(read_invocations(day.invocations))
    window = next(read_invocations(day.invocations, (600, 629)))
    assert np.array_equal(window.counts, whole.counts[599:629])


def test_invitro_samples_keep_the_days_minute_labels(tmp_path):
    path = tmp_path / "invocations.csv"
    path.write_text("HashOwner,HashApp,HashFunction,Trigger,900,901,902\no,a,f,http,1,2,3\n")
    assert minute_labels(path) == [900, 901, 902]
    (row,) = read_invocations(path, (901, 902))
    assert row.counts.tolist() == [2, 3]
    with pytest.raises(TraceFileError, match=r"minutes 1-2 are not within its minute columns 900-902"):
        list(read_invocations(path, (1, 2)))


@pytest.mark.parametrize(
    "row, message",
    [
        ("o,a,f,http,1,x,3", r"row 2, column 6 \(minute 2\): 'x' is not a whole number"),
        ("o,a,f,http,1,-2,3", r"row 2, column 6 \(minute 2\): '-2' is not a whole number"),
        ("o,a,f,http,1,2", r"row 2, column 7: 6 columns, the header has 7"),
    ],
)
def test_a_malformed_invocations_row_names_the_file_row_and_column(tmp_path, row, message):
    path = tmp_path / "inv.csv"
    path.write_text("HashOwner,HashApp,HashFunction,Trigger,1,2,3\n" + row + "\n")
    with pytest.raises(TraceFileError, match=f"^{path}: " + message):
        list(read_invocations(path))


def test_a_malformed_durations_row_names_its_column(day, tmp_path):
    path = tmp_path / "function_durations_percentiles.anon.d01.csv"
    lines = day.durations.read_text().splitlines()
    fields = lines[3].split(",")
    fields[9] = "fast"
    path.write_text("\n".join([lines[0], lines[1], ",".join(fields)]) + "\n")
    with pytest.raises(TraceFileError, match=r"row 3, column 10 \(percentile_Average_25\): 'fast' is not a number"):
        list(read_durations(path))


def test_an_overlong_line_is_refused_without_reading_it_whole(tmp_path, monkeypatch):
    monkeypatch.setattr("faasprof.workload.azure_files.MAX_LINE_BYTES", 100)
    path = tmp_path / "inv.csv"
    path.write_text("HashOwner,HashApp,HashFunction,Trigger,1\n" + "o,a,f,http," + "1" * 200 + "\n")
    with pytest.raises(TraceFileError, match=r"row 2: a line of over 100 characters"):
        list(read_invocations(path))


def test_unknown_layouts_and_missing_durations_are_one_line(day, tmp_path):
    other = tmp_path / "other.csv"
    other.write_text("a,b,c\n1,2,3\n")
    with pytest.raises(TraceFileError, match=r"other.csv: row 1: header a,b,c... is none of the Azure trace layouts"):
        find_day([other])
    with pytest.raises(TraceFileError, match="no durations file given beside it"):
        find_day([day.invocations])
    with pytest.raises(TraceFileError, match="holds none of the day files"):
        find_day([tmp_path])


def test_the_2021_trace_is_folded_per_function_and_minute(tmp_path):
    path = tmp_path / "AzureFunctionsInvocationTraceForTwoWeeksJan2021.txt"
    rows = ["app,func,end_timestamp,duration"]
    # f1: starts in minute 1 (twice) and minute 3; f2: one call starting in minute 2.
    rows += ["a1,f1,10.5,0.5", "a1,f1,30.0,1.0", "a1,f1,150.0,2.0", "a2,f2,61.0,0.25"]
    path.write_text("\n".join(rows) + "\n")
    assert file_kind(path) is FileKind.INVOCATIONS_2021
    day = find_day([path])
    assert day.kind is FileKind.INVOCATIONS_2021
    counts, durations = read_invocations_2021(path, (1, 3))
    by_function = {c.key.function: c.counts.tolist() for c in counts}
    assert by_function == {"f1": [2, 0, 1], "f2": [0, 1, 0]}
    f1 = next(d for d in durations if d.key.function == "f1")
    assert f1.count == 3 and f1.average_ms == pytest.approx(1166.667, abs=0.01)
    assert f1.minimum_ms == 500.0 and f1.maximum_ms == 2000.0 and f1.percentiles_ms[50] == 1000.0
    bad = tmp_path / "bad.txt"
    bad.write_text("app,func,end_timestamp,duration\na,f,soon,1\n")
    with pytest.raises(TraceFileError, match=r"bad.txt: row 2, column 3 \(end_timestamp\): 'soon' is not a number"):
        read_invocations_2021(bad)


def test_the_shipped_sample_is_read_as_the_2019_layout():
    shipped = Path(__file__).resolve().parent.parent / "faasprof" / "workload_configs" / "traces" / "azure_sample.csv"
    assert file_kind(shipped) is FileKind.INVOCATIONS
    assert len(list(read_invocations(shipped))) >= 1


def test_generator_is_seeded(tmp_path):
    a = write_day(tmp_path / "a", functions=50, seed=3, minutes=30)
    b = write_day(tmp_path / "b", functions=50, seed=3, minutes=30)
    assert a.invocations.read_bytes() == b.invocations.read_bytes()
    shutil.rmtree(tmp_path / "b")
