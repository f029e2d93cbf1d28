"""``faasprof slowdown``: statistics and fit on constructed calls, and the command end to end on the
embedded localwhisk (the issue's acceptance run, with a small repeat)."""

from __future__ import annotations

import csv
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from experiments.slowdown import Call, fit_power_law, summarise_function
from faasprof.docker import docker_problem

REPO = Path(__file__).resolve().parent.parent


def _calls(function: str, phase: str, exec_ms: list[float], latency_ms: list[float], state: str = "") -> list[Call]:
    return [Call(function, phase, i, "success", container_state=state, exec_ms=e, latency_ms=l) for i, (e, l) in enumerate(zip(exec_ms, latency_ms))]


def test_summary_medians_ci_and_factors():
    calls = _calls("f", "native", [2.0] * 8, [2.5] * 8)
    calls += _calls("f", "warm", [4, 4, 4, 4, 5, 5, 5, 5], [10] * 8, state="warm")
    calls += _calls("f", "resumed", [8] * 8, [20] * 8, state="resumed")
    # A "warm" call that found no warm sandbox and a failure: counted, never in the medians.
    calls.append(Call("f", "warm", 8, "success", container_state="cold", exec_ms=500, latency_ms=900))
    calls.append(Call("f", "resumed", 8, "application_error", container_state="resumed", exec_ms=1, latency_ms=1))
    row = summarise_function("f", calls)
    assert row["native_n"] == 8 and row["warm_n"] == 8 and row["resumed_n"] == 8
    assert row["warm_other_start"] == 1 and row["resumed_failed"] == 1
    assert row["warm_exec_ms"] == 4.5
    assert row["warm_exec_ms_ci_low"] == 4 and row["warm_exec_ms_ci_high"] == 5
    assert row["slowdown_exec_warm"] == pytest.approx(2.25)
    assert row["slowdown_exec_resumed"] == pytest.approx(4.0)
    assert row["slowdown_latency_warm"] == pytest.approx(4.0)
    assert row["slowdown_latency_resumed"] == pytest.approx(8.0)


def test_small_samples_have_no_interval_and_sub_resolution_execution_no_factor():
    calls = _calls("g", "native", [0.2, 0.2, 0.2], [0.3, 0.3, 0.3])
    calls += _calls("g", "warm", [0, 0, 1], [3, 3, 3])
    calls += _calls("g", "resumed", [1, 1, 1], [6, 6, 6])
    row = summarise_function("g", calls)
    assert math.isnan(row["warm_exec_ms_ci_low"]) and math.isnan(row["warm_exec_ms_ci_high"])
    assert math.isnan(row["slowdown_exec_warm"])  # median 0 ms: under the record's 1 ms resolution
    assert row["slowdown_exec_resumed"] == pytest.approx(5.0)
    assert row["slowdown_latency_warm"] == pytest.approx(10.0)


def test_power_law_fit_recovers_exponent():
    x = [0.5, 2.0, 10.0, 80.0, 400.0]
    y = [3.0 * v ** -0.6 for v in x]
    fit = fit_power_law(x, y + [])
    assert fit["exponent"] == pytest.approx(-0.6)
    assert fit["coefficient"] == pytest.approx(3.0)
    assert fit["r2"] == pytest.approx(1.0)
    assert fit_power_law([1.0, float("nan")], [2.0, 3.0]) is None


def _faasprof(*args: str, timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "faasprof", *args], capture_output=True, text=True, timeout=timeout, cwd=REPO)


def test_cli_refuses_bad_input_before_measuring(tmp_path):
    result = _faasprof("slowdown", "no_such_function", "--out", str(tmp_path), timeout=60)
    assert result.returncode == 2
    assert "no_such_function" in result.stderr
    result = _faasprof("slowdown", "json_dumps", "--all", "--out", str(tmp_path), timeout=60)
    assert result.returncode == 2 and "--all" in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_cli_unreachable_platform_leaves_nothing(tmp_path):
    result = _faasprof("slowdown", "json_loads", "--apihost", "http://127.0.0.1:1", "--auth", "a:b", "--out", str(tmp_path), timeout=60)
    assert result.returncode == 3
    assert result.stderr.strip().startswith("http://127.0.0.1:1: cannot connect")
    assert list(tmp_path.iterdir()) == []


def test_cli_slowdown_on_embedded_localwhisk(tmp_path):
    pytest.importorskip("localwhisk.embedded")
    result = _faasprof("slowdown", "json_dumps", "json_loads", "nbody", "--repeat", "3", "--out", str(tmp_path), timeout=420)
    assert result.returncode == 0, result.stderr[-2000:]
    out = Path(result.stdout.strip().splitlines()[-1])
    assert out.parent == tmp_path
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["format_version"] == 1 and manifest["status"] == "complete"
    assert manifest["platform"]["embedded"] is True
    with open(out / "slowdown.csv", newline="") as handle:
        rows = {row["function"]: row for row in csv.DictReader(handle)}
    assert set(rows) == {"json_dumps", "json_loads", "nbody"}
    for name, row in rows.items():
        assert int(row["native_n"]) == 3 and int(row["warm_n"]) + int(row["warm_other_start"]) == 3, name
        assert float(row["slowdown_latency_warm"]) > 0 and float(row["slowdown_latency_resumed"]) > 0, name
    # json_loads runs ~1 ms natively: the platform's HTTP path dominates its FaaS latency, a factor
    # far above 1 even on a loaded host (the longer functions' factors sit near 1 and move with load).
    assert float(rows["json_loads"]["slowdown_latency_warm"]) > 1
    assert float(rows["json_loads"]["slowdown_latency_resumed"]) > 1
    with open(out / "calls.csv", newline="") as handle:
        calls = list(csv.DictReader(handle))
    resumed = [c for c in calls if c["phase"] == "resumed"]
    assert len(resumed) == 9 and {c["container_state"] for c in resumed} == {"resumed"}
    for figure in ("fig15_slowdown_per_function.png", "fig16_slowdown_vs_native.png"):
        assert (out / figure).stat().st_size > 10_000
    assert "power law latency_warm" in result.stdout
    # Never overwritten: a second directory would get a new name.
    assert len(list(tmp_path.glob("slowdown-*"))) == 1


def test_cli_slowdown_with_docker_sandboxes(tmp_path):
    problem = docker_problem()
    if problem is not None:
        pytest.skip(f"isolation docker unavailable: {problem}")
    result = _faasprof("slowdown", "json_loads", "--repeat", "2", "--isolation", "docker", "--out", str(tmp_path), timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    out = Path(result.stdout.strip().splitlines()[-1])
    assert json.loads((out / "manifest.json").read_text())["platform"]["localwhisk"]["isolation"] == "docker"
    with open(out / "calls.csv", newline="") as handle:
        calls = list(csv.DictReader(handle))
    assert [c["container_state"] for c in calls if c["phase"] in ("warm", "resumed")] == ["warm", "warm", "resumed", "resumed"]
    # Unpausing a container costs more than a warm call's round trip, however loaded the host.
    with open(out / "slowdown.csv", newline="") as handle:
        (row,) = list(csv.DictReader(handle))
    assert float(row["slowdown_latency_resumed"]) > 1
