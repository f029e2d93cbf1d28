"""Workload files are read bounded (issue 44, item 4): each kind has a stated limit
(``faasprof.bounded.LIMITS``), a device or a FIFO is refused before a byte is read, at most
limit + 1 bytes are ever read, and a trace is streamed with its columns capped. Each refusal is one
line naming the file, the field, the limit and the fix; ``validate`` ends in exit 2, never a
MemoryError.
"""

from __future__ import annotations

import json
import os
import stat

import pytest

from faasprof import bounded
from faasprof.errors import ConfigError
from faasprof.workload import arrivals
from faasprof.workload.spec import load_workload
from tests.helpers import run_cli


def _workload(folder, instance: dict) -> str:
    path = folder / "w.json"
    data = {"test_name": "b", "test_duration_in_seconds": 2, "random_seed": 1, "instances": {"i0": instance}}
    path.write_text(json.dumps(data))
    return str(path)


def _one_problem(path: str) -> str:
    with pytest.raises(ConfigError) as raised:
        load_workload(path)
    (line,) = raised.value.problems
    return line


@pytest.mark.parametrize("key", ["trace_file", "data_file", "param_file"])
def test_a_device_named_as_a_workload_file_is_refused_without_reading_it(tmp_path, key):
    os.symlink("/dev/zero", tmp_path / "zero")  # inside the folder: only the bounded read can refuse it
    instance = {"application": "json_dumps", "distribution": "Poisson", "rate": 1, key: "zero"}
    if key == "trace_file":
        instance = {"application": "json_dumps", "distribution": "Trace", "trace_file": "zero"}
    line = _one_problem(_workload(tmp_path, instance))
    assert f"instances.i0.{key}: " in line and "is not a regular file" in line and "name a file" in line, line


def test_validate_of_a_trace_on_dev_zero_is_one_line_and_exit_2(tmp_path):
    os.symlink("/dev/zero", tmp_path / "zero.csv")
    path = _workload(tmp_path, {"application": "json_dumps", "distribution": "Trace", "trace_file": "zero.csv"})
    result = run_cli("validate", path, timeout=60)
    assert result.returncode == 2, result.stderr
    assert "MemoryError" not in result.stderr and "Traceback" not in result.stderr
    assert "instances.i0.trace_file: " in result.stderr and "is not a regular file" in result.stderr


def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path):
    os.mkfifo(tmp_path / "pipe.csv")
    path = _workload(tmp_path, {"application": "json_dumps", "distribution": "Trace", "trace_file": "pipe.csv"})
    assert "is not a regular file" in _one_problem(path)
    os.mkfifo(tmp_path / "w2.json")
    with pytest.raises(ConfigError, match="the workload is not a regular file"):
        load_workload(tmp_path / "w2.json")


def test_a_data_file_over_its_limit_is_refused_naming_the_limit(tmp_path, monkeypatch):
    monkeypatch.setitem(bounded.LIMITS, "data_file", 1000)
    (tmp_path / "big.bin").write_bytes(b"x" * 1001)
    line = _one_problem(
        _workload(tmp_path, {"application": "json_dumps", "distribution": "Poisson", "rate": 1, "data_file": "big.bin"})
    )
    assert "instances.i0.data_file: " in line and "is 1,001 bytes, more than the 1,000 faasprof reads for it" in line


def test_read_bounded_never_reads_past_the_limit(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(b"y" * 10)
    assert bounded.read_bounded(path, 10, "data_file") == b"y" * 10
    with pytest.raises(bounded.BoundedReadError, match="is 10 bytes, more than the 9"):
        bounded.read_bounded(path, 9, "data_file")
    with bounded.open_bounded_text(path, 10, "trace_file") as handle:
        assert handle.read() == "y" * 10
    assert stat.S_ISREG(os.stat(path).st_mode)


def test_a_trace_of_absurdly_many_columns_is_refused_before_it_is_split(tmp_path):
    columns = arrivals.MAX_TRACE_COLUMNS + 1
    header = ",".join(["HashOwner", "HashApp", "HashFunction", "Trigger", *map(str, range(1, columns - 3))])
    (tmp_path / "wide.csv").write_text(header + "\n")
    path = _workload(tmp_path, {"application": "json_dumps", "distribution": "Trace", "trace_file": "wide.csv"})
    line = _one_problem(path)
    assert f"more than the {arrivals.MAX_TRACE_COLUMNS:,} a trace may have" in line, line
    long_line = "1," * (arrivals.MAX_TRACE_LINE_CHARS // 2 + 1)
    (tmp_path / "wide.csv").write_text(long_line + "\n")
    arrivals._read_trace_cached.cache_clear()
    line = _one_problem(path)
    assert f"line 1 is longer than {arrivals.MAX_TRACE_LINE_CHARS:,} bytes" in line, line
