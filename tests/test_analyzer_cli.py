"""``faasprof analyze`` and ``faasprof compare`` as subprocesses: exit codes, stdout, stderr, files."""

from __future__ import annotations

import json
import threading
from http.server import ThreadingHTTPServer

import pandas as pd
import pytest
from test_analyzer_records import AUTH, FakeActivations, make_handler
from test_analyzer_synthetic import write_synthetic_run

from faasprof import rundir
from tests.helpers import run_cli


def _instances(rate):
    return {"i0": {"application": "fn", "distribution": "Uniform", "rate": rate}}


@pytest.mark.slow
def test_analyze_prints_modes_and_the_analysis_dir(tmp_path, isolated_home):
    run_dir, _ = write_synthetic_run(tmp_path, duration_s=4.0, instances=_instances(8.0))
    result = run_cli("analyze", run_dir, "--no-plots")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    assert lines[-1] == str(run_dir / "analysis")
    assert "under-invoked" in result.stdout
    assert "warning: i0 phase 0: only" in result.stderr  # 26 samples: the p99 advice
    assert (run_dir / "analysis" / "summary.json").exists()


@pytest.mark.slow
def test_analyze_prints_failures_before_the_modes(tmp_path, isolated_home):
    failures = {seq: "action_timeout" for seq in range(0, 32, 4)}
    run_dir, _ = write_synthetic_run(
        tmp_path, duration_s=4.0, instances=_instances(8.0), blocking=False, failures=failures
    )
    result = run_cli("analyze", run_dir, "--no-plots")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[1] == "  FAILURES: 8 of 32 did not succeed (8 action_timeout); kept out of the latency figures"
    assert lines[2] == "  outcomes: 24 success, 8 action_timeout"
    assert (
        "warning: i0 phase 0: 6 of 26 invocations did not succeed (6 action_timeout)" in result.stderr
    )  # the steady part


@pytest.mark.slow
def test_analyze_fetches_records_from_the_platform_named_by_flags(tmp_path, isolated_home):
    run_dir, records = write_synthetic_run(tmp_path, duration_s=30.0, instances=_instances(10.0), save_records=False)
    server = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(FakeActivations(records)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        apihost = f"http://127.0.0.1:{server.server_address[1]}"
        result = run_cli("analyze", run_dir, "--apihost", apihost, "--auth", AUTH, "--namespace", "guest", "--no-plots")
    finally:
        server.shutdown()
        server.server_close()
    assert result.returncode == 0, result.stderr
    assert "listed 300 records in 2 pages" in result.stderr
    assert AUTH.split(":")[1] not in result.stdout + result.stderr
    summary = json.loads((run_dir / "analysis" / "summary.json").read_text())
    assert summary["records"]["found"] == 300 and summary["records"]["missing"] == 0
    assert len((run_dir / "activations.jsonl").read_text().splitlines()) == 300


@pytest.mark.slow
def test_analyze_without_records_or_platform_warns_and_still_works(tmp_path, isolated_home):
    run_dir, _ = write_synthetic_run(tmp_path, duration_s=2.0, instances=_instances(10.0), save_records=False)
    result = run_cli("analyze", run_dir, "--no-plots")
    assert result.returncode == 0, result.stderr
    assert "no platform is configured" in result.stderr


@pytest.mark.slow
@pytest.mark.parametrize(
    "setup, message",
    [
        ("missing", "not a directory"),
        ("not_a_run", "is not a faasprof run directory"),
        ("newer", "format_version 99 is not supported"),
    ],
)
def test_analyze_refuses_bad_input_with_one_line(tmp_path, isolated_home, setup, message):
    if setup == "missing":
        target = tmp_path / "nope"
    elif setup == "not_a_run":
        target = tmp_path / "empty"
        target.mkdir()
    else:
        target, _ = write_synthetic_run(tmp_path, duration_s=1.0, instances=_instances(10.0), format_version=99)
    result = run_cli("analyze", target)
    assert result.returncode == 2
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.stderr


@pytest.mark.slow
def test_compare_runs_that_differ_in_rate(tmp_path, isolated_home):
    runs = [
        write_synthetic_run(tmp_path, test_name=f"rate{r:g}", duration_s=4.0, instances=_instances(r))[0]
        for r in (8.0, 60.0, 400.0)
    ]
    out = tmp_path / "cmp"
    result = run_cli("compare", *runs, "--out", out)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == str(out)
    assert "parameter: workload.instances.i0.rate" in result.stdout
    frame = pd.read_parquet(out / "compare.parquet")
    assert frame.sort_values("parameter_value")["mode"].tolist() == ["under-invoked", "balanced", "over-invoked"]
    assert (out / "plots" / "cdfs.png").exists() and (out / "plots" / "versus_parameter.png").exists()
    assert "data:image/png;base64," in (out / "report.html").read_text()
    assert json.loads((out / "compare.json").read_text())["format_version"] == 4


@pytest.mark.slow
def test_compare_prints_completion_latency_and_verdicts_and_writes_beside_the_runs(tmp_path, isolated_home):
    from test_analyzer_compare import faster_202s_slower_completion

    runs = faster_202s_slower_completion(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    result = run_cli("compare", *runs, cwd=elsewhere)
    assert result.returncode == 0, result.stderr
    out = result.stdout.strip().splitlines()[-1]
    assert (
        out.startswith(str(runs[0].parent / "compare-"))
        and (runs[0].parent / out.rsplit("/", 1)[-1] / "report.html").exists()
    )
    assert list(elsewhere.iterdir()) == []  # nothing in the working directory
    assert f"compare: writing {out}" in result.stderr
    header = result.stdout.splitlines()[0].split()
    assert (
        header[:5] == ["label", "instance", "phase", "function", "calls"]
        and "completion" in header
        and "client" not in header
    )
    p99 = next(line for line in result.stdout.splitlines() if line.strip().startswith("p99 "))
    assert p99.endswith("higher in this run")
    # One run a side: the figures and their ratio, no verdict on the workloads.
    assert "one run each: run-to-run variation unknown; repeat with --repeats 5" in result.stdout
    assert not any(word in result.stdout for word in ("slower", "faster"))


@pytest.mark.slow
def test_compare_warns_when_hosts_differ_and_rejects_an_unknown_label(tmp_path, isolated_home):
    runs = [
        write_synthetic_run(tmp_path, test_name=f"h{k}", duration_s=2.0, instances=_instances(10.0))[0]
        for k in range(2)
    ]
    for k, run in enumerate(runs):
        rundir.update_manifest(run, host={"kernel": f"6.1.0-{k}", "cpu_model": "Xeon"})
    result = run_cli("compare", *runs, "--out", tmp_path / "c1")
    assert result.returncode == 0, result.stderr
    assert "warning: runs differ in host.kernel" in result.stderr
    assert "cpu_model" not in result.stderr
    result = run_cli("compare", *runs, "--label", "workload.nope", "--out", tmp_path / "c2")
    assert result.returncode == 2
    assert "--label workload.nope: no run's manifest has this key" in result.stderr


@pytest.mark.slow
def test_capacity_rejects_bad_flags(tmp_path, isolated_home):
    result = run_cli("capacity", "spin", "--duration", "0", "--out", tmp_path)
    assert result.returncode == 2
    assert "--duration: must be > 0 s" in result.stderr
    result = run_cli("capacity", "spin", "--params", "[1]", "--out", tmp_path)
    assert result.returncode == 2 and "--params: must be a JSON object" in result.stderr


@pytest.mark.slow
def test_compare_of_two_quick_start_like_runs_prints_a_row_per_phase(tmp_path, isolated_home):
    from test_analyzer_compare import quick_start_like

    runs = quick_start_like(tmp_path)
    result = run_cli("compare", *runs, "--out", tmp_path / "cmp")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    header = lines[0].split()
    assert header[:6] == ["label", "instance", "phase", "function", "calls", "mode"]
    rows = [line.split() for line in lines[1:7]]
    assert [(r[1], r[2], r[5]) for r in rows] == [
        ("under", "0", "under-invoked"),
        ("balanced", "1", "balanced"),
        ("over", "2", "over-invoked"),
    ] * 2
    assert not any("," in r[5] for r in rows)  # never "over-invoked,under-invoked,..."
    verdicts = [line.strip() for line in lines if line.startswith("  ") and " phase " in line and "(n " in line]
    assert len(verdicts) == 3 and verdicts[2].split(", ", 1)[1].startswith("over phase 2 (fn, over-invoked)")
