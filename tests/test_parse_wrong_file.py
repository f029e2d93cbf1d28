"""``faasprof parse KIND FILE`` of another tool's file: one line naming the file and what it is not,
exit 2, never a traceback or a CSV of empty rows (issue 34: ``parse cgroups`` of a wrong file gave
``KeyError: 'elapsed_ns'``; ``parse vmstat`` of a perf file wrote 1,159 empty rows with exit 0)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from faasprof.monitoring.collectors import parse_kinds

DATA = Path(__file__).resolve().parent / "data" / "monitoring"
PERF_STDERR = DATA / "perf" / "perf_stat_bad_event_stderr.txt"
VMSTAT_CSV = DATA / "vmstat" / "vmstat_dev_vm.csv"
PQOS_CSV = DATA / "pqos" / "pqos_csv_issue28.csv"


def _parse(kind: str, path: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "faasprof", "parse", kind, str(path)], capture_output=True, text=True, timeout=120
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    "kind, path",
    [
        ("vmstat", PERF_STDERR),
        ("vmstat", PQOS_CSV),
        ("cgroups", PERF_STDERR),
        ("cgroups", VMSTAT_CSV),
        ("resctrl", VMSTAT_CSV),
        ("resctrl", PQOS_CSV),
    ],
)
def test_a_samplers_parser_refuses_another_tools_file_in_one_line(kind, path):
    done = _parse(kind, path)
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert (
        lines[0].startswith(f"{path}: not the ")
        and "lacks the column(s)" in lines[0]
        and f"raw {kind} output" in lines[0]
    )


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(parse_kinds()))
def test_every_kind_given_a_perf_error_file_says_so_without_a_traceback(kind):
    done = _parse(kind, PERF_STDERR) if kind != "perf" else _parse(kind, VMSTAT_CSV)
    assert done.returncode == 2 and "Traceback" not in done.stderr and done.stdout == "", done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


@pytest.mark.slow
def test_the_samplers_own_file_still_parses():
    done = _parse("vmstat", VMSTAT_CSV)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0].startswith("elapsed_s,interval_s,cpu_busy_share")
