"""``faasprof native``: the run directory it writes, failures as rows, perf counts."""

from __future__ import annotations

import csv
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from faasprof.analyzer.outcome_columns import final_outcomes
from faasprof.errors import NotReadyError
from faasprof.experiments import native
from faasprof.functions.catalogue import lookup
from faasprof.monitoring.parsers.perf import perf_counts
from faasprof.rundir import INVOCATION_COLUMNS, read_invocations, read_manifest
from tests.helpers import DATA_DIR, run_cli


def _native_rows(run_dir):
    with open(Path(run_dir) / "native.csv", newline="") as handle:
        return list(csv.DictReader(handle))


def test_cli_writes_a_run_directory(tmp_path):
    done = run_cli(
        "native", "json_loads", "--repeat", "4", "--concurrency", "2", "--out", tmp_path, "--check", timeout=90
    )
    assert done.returncode == 0, done.stderr
    run_dir = Path(done.stdout.strip().splitlines()[-1])
    assert run_dir.parent == tmp_path and run_dir.name.startswith("native-json_loads-")
    manifest = read_manifest(run_dir).to_json()
    assert manifest["status"] == "complete"
    assert manifest["counts"] == {"planned": 4, "sent": 4, "failed": 0}
    assert manifest["platform"]["kind"] == "native"
    block = manifest["native"]
    assert block["repeat"] == 4 and block["concurrency"] == 2 and block["format_version"] == 1
    assert block["summary"]["outcomes"] == {"ok": 4} and block["summary"]["exec_ms"]["min"] > 0
    assert block["command"][0].endswith("python") or "python" in block["command"][0]
    rows = read_invocations(run_dir)
    assert [int(row["seq"]) for row in rows] == [0, 1, 2, 3] or sorted(int(r["seq"]) for r in rows) == [0, 1, 2, 3]
    assert all(row["outcome"] == "ok" and int(row["done_ns"]) > int(row["sent_ns"]) for row in rows)
    native_rows = _native_rows(run_dir)
    assert [row["seq"] for row in native_rows] == ["0", "1", "2", "3"]
    assert {row["worker"] for row in native_rows} <= {"0", "1"}
    assert sum(int(row["cold"]) for row in native_rows) == len({row["worker"] for row in native_rows})
    assert all(float(row["exec_ms"]) <= float(row["round_trip_ms"]) for row in native_rows)
    assert "check passed" in done.stderr
    assert (run_dir / "native" / "worker-0.stderr.log").exists()


def test_cli_node_function_with_params_and_app_errors(tmp_path):
    params = tmp_path / "params.json"
    params.write_text(json.dumps({"limit": 2}))  # no term: the function answers with an error
    done = run_cli(
        "native", "autocomplete", "--repeat", "2", "--params", params, "--out", tmp_path / "runs", timeout=90
    )
    assert done.returncode == 1
    run_dir = Path(done.stdout.strip().splitlines()[-1])
    rows = read_invocations(run_dir)
    assert [row["outcome"] for row in rows] == ["app_error", "app_error"]
    assert "term" in rows[0]["error"]
    assert read_manifest(run_dir).to_json()["native"]["params"]["source"] == str(params)
    assert "app_error" in done.stderr


def test_cli_unknown_function(tmp_path):
    done = run_cli("native", "json_dump", "--out", tmp_path, timeout=60)
    assert done.returncode == 2
    assert "json_dump" in done.stderr and "json_dumps" in done.stderr
    assert not any(tmp_path.iterdir())


def test_cli_bad_repeat(tmp_path):
    done = run_cli("native", "spin", "--repeat", "0", "--out", tmp_path, timeout=60)
    assert done.returncode == 2 and "--repeat" in done.stderr


def _broken_entry(tmp_path, body):
    folder = tmp_path / "broken"
    folder.mkdir()
    (folder / "__main__.py").write_text(body)
    return replace(lookup("spin"), name="broken", base="broken", directory=folder, param_file=None)


def test_a_crashing_worker_is_a_failed_row_and_is_restarted(tmp_path):
    entry = _broken_entry(
        tmp_path,
        "import os\ncount = 0\ndef main(args):\n    global count\n    count += 1\n"
        "    if count == 2:\n        os._exit(7)\n    return {'n': count}\n",
    )
    run_dir, summary = native.run_native(entry, tmp_path / "runs", native.NativeOptions(repeat=4))
    rows = read_invocations(run_dir)
    # The second call of each process crashes it; the restarted process counts from 1 again.
    assert [row["outcome"] for row in rows] == ["ok", "failed", "ok", "failed"]
    assert "exited" in rows[1]["error"]
    native_rows = _native_rows(run_dir)
    assert [row["cold"] for row in native_rows] == ["1", "0", "1", "0"]  # the restarted worker is cold again
    manifest = read_manifest(run_dir).to_json()
    assert manifest["native"]["workers"][0]["starts"] == 3
    assert manifest["counts"]["failed"] == 2 and summary["outcomes"] == {"ok": 2, "failed": 2}


def test_a_call_over_its_time_limit_is_a_timeout_row(tmp_path):
    entry = _broken_entry(tmp_path, "import time\ndef main(args):\n    time.sleep(args.get('s', 0))\n    return {}\n")
    options = native.NativeOptions(repeat=2, params={"s": 5}, params_source="test", timeout_s=0.3)
    run_dir, _ = native.run_native(entry, tmp_path / "runs", options)
    rows = read_invocations(run_dir)
    assert [row["outcome"] for row in rows] == ["timeout", "timeout"]
    assert all(row["done_ns"] == "" for row in rows)


def test_a_function_that_cannot_load_leaves_not_sent_rows(tmp_path):
    entry = _broken_entry(tmp_path, "raise ImportError('no such module: numpyy')\n")
    run_dir, summary = native.run_native(entry, tmp_path / "runs", native.NativeOptions(repeat=3))
    rows = read_invocations(run_dir)
    assert len(rows) == 3 and {row["outcome"] for row in rows} == {"not_sent"}
    assert "numpyy" in rows[0]["error"]
    assert read_manifest(run_dir).to_json()["status"] == "aborted"
    assert tuple(rows[0]) == INVOCATION_COLUMNS


def test_unavailable_function_is_not_ready_before_any_directory(tmp_path):
    entry = replace(lookup("img-resize"), directory=tmp_path / "empty")
    with pytest.raises(NotReadyError, match="jimp"):
        native.run_native(entry, tmp_path / "runs", native.NativeOptions(repeat=1))
    assert not (tmp_path / "runs").exists()


def test_parse_recorded_perf_stat_output():
    counts = perf_counts((DATA_DIR / "functions" / "perf_stat_native_worker.csv").read_text())
    assert counts["task-clock"] == {"value": 608.25, "unit": "msec"}
    assert counts["context-switches"]["value"] == 1367
    assert counts["major-faults"]["value"] == 4
    assert set(counts) == {
        "task-clock",
        "context-switches",
        "cpu-migrations",
        "page-faults",
        "minor-faults",
        "major-faults",
    }


def test_parse_perf_stat_not_supported():
    text = "# started on x\n\n<not supported>,,cycles,0,100.00,,\n12,,page-faults,1000,100.00,1.0,K/sec\n"
    assert perf_counts(text) == {"cycles": {"value": None, "unit": ""}, "page-faults": {"value": 12.0, "unit": ""}}


def test_perf_counts_when_perf_works(tmp_path):
    reason = native.check_perf()
    if reason:
        pytest.skip(reason)
    run_dir, _ = native.run_native(lookup("nqueens"), tmp_path, native.NativeOptions(repeat=2, perf=True))
    perf = read_manifest(run_dir).to_json()["native"]["perf"]
    assert perf["files"] == ["monitors/perf-native/worker-0.csv"]
    assert perf["counts"]["worker-0"]["task-clock"]["value"] > 0


def test_perf_that_cannot_count_is_not_ready(tmp_path):
    if native.check_perf() and "not found" in native.check_perf():
        pytest.skip("perf is not installed")
    with pytest.raises(NotReadyError, match="perf"):
        native.run_native(
            lookup("nqueens"), tmp_path, native.NativeOptions(repeat=1, perf=True, perf_events=("no-such-event",))
        )


@pytest.mark.slow
def test_analyze_of_a_native_run_counts_its_answers_not_missing_records(tmp_path, isolated_home):
    """A native run has no platform and so no activation records: its rows are the results."""
    done = run_cli("native", "json_dumps", "--repeat", "5", "--out", tmp_path, timeout=90)
    assert done.returncode == 0, done.stderr
    run_dir = Path(done.stdout.strip().splitlines()[-1])
    analyzed = run_cli("analyze", run_dir, "--no-plots", timeout=120)
    assert analyzed.returncode == 0, analyzed.stderr
    assert "no_record" not in analyzed.stdout + analyzed.stderr and "FAILURES" not in analyzed.stdout
    assert "outcomes: 5 success" in analyzed.stdout
    assert "no platform is configured" not in analyzed.stderr and "activations.jsonl" not in analyzed.stderr
    summary = json.loads((run_dir / "analysis" / "summary.json").read_text())
    assert {k: v for k, v in summary["run"]["final_outcomes"].items() if v} == {"success": 5}
    assert summary["records"]["missing"] == 0 and summary["records"]["source"].startswith("none: a faasprof native run")
    phase = summary["instances"][0]["phases"][0]
    assert phase["blocking"] and phase["completion_latency_ms_p50"] > 0
    # A closed loop offers no rate: its workers call again when answered.
    (line,) = [line for line in analyzed.stdout.splitlines() if " phase 0 " in line]
    assert " offered closed loop achieved " in line, line
    assert "<td class=''>closed loop</td>" in (run_dir / "analysis" / "report.html").read_text()


def test_a_native_answer_is_its_final_outcome():
    http = ["ok", "app_error", "failed", "timeout", "not_sent"]
    no_records = np.zeros(len(http), dtype=bool)
    assert list(final_outcomes(http, [None] * len(http), no_records, records_due=False)) == [
        "success",
        "application_error",
        "failed",
        "timeout",
        "not_sent",
    ]
    assert list(final_outcomes(http, [None] * len(http), no_records))[:2] == ["no_record", "no_record"]
