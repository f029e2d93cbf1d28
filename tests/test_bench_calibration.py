"""bench/bench_calibration.py: its statistics, its table, and one short real run on localwhisk."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from tests.helpers import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "bench"))
import bench_calibration as cal  # noqa: E402


def test_percentiles_ignore_missing_values():
    assert cal.pct([5.0, 1.0, None, float("nan"), 3.0], 50) == 3.0
    assert cal.pct([], 50) is None
    block = cal.summary_of([1.0, 2.0, 3.0, 4.0, None])
    assert block["n"] == 4 and block["p50"] == 3.0 and block["p99"] == 4.0 and block["mean"] == 2.5


def _result(label, capacity, probes, wait_p50, annotations, throttle=None):
    return {
        "format_version": cal.RESULT_FORMAT_VERSION,
        "label": label,
        "settings": {"pause_grace_ms": 50, "user_memory_mb": 4096},
        "scenarios": {
            "warm": {
                "client_ms": {"p50": 12.5, "p99": 30.0},
                "wait_ms": {"p50": wait_p50},
                "duration_ms": {"p50": 2.0},
                "overhead_ms": {"p50": 4.0},
            },
            "capacity": {"capacity_rps": capacity, "probes": probes},
            "fields": {"annotation_keys": annotations},
            "throttle": throttle or {"limits": {"concurrent_actions": 999999}, "concurrent": {"note": "not reachable"}},
        },
    }


def test_table_has_one_column_per_platform_and_the_figures():
    probes = [
        {"rate_rps": 1.0, "mode": "under-invoked", "wait_p50_ms": 30.0, "duration_p50_ms": 17.0},
        {"rate_rps": 32.0, "mode": "balanced", "wait_p50_ms": 1070.0, "duration_p50_ms": 440.0},
        {"rate_rps": 64.0, "mode": "over-invoked"},
    ]
    throttled = {
        "limits": {"concurrent_actions": 5},
        "concurrent": {
            "calls": 10,
            "status_codes": {"202": 5, "429": 5},
            "errors": ["Too many concurrent requests in flight (count: 5, allowed: 5)."],
        },
    }
    table = cal.render_table(
        [
            _result("OpenWhisk", 29.0, probes, 6.0, ["initTime", "kind", "waitTime"], throttled),
            _result("localwhisk", 117.0, [], 3.0, ["containerState", "kind", "waitTime"]),
        ]
    )
    lines = table.splitlines()
    assert lines[0] == "| | OpenWhisk | localwhisk |"
    row = {line.split(" | ")[0].lstrip("| "): line for line in lines[2:]}
    assert row["json_dumps capacity (req/s, balanced)"].endswith("| 29 | 117 |")
    assert "1→under-invoked, 32→balanced, 64→over-invoked" in row["Figure 4 modes (rate/s → mode)"]
    assert "1070 / 440 at 32/s" in row["top probe kept up: waitTime / duration p50 (ms)"]
    assert "5: 202×5, 429×5 (Too many concurrent requests" in row["throttle concurrent: limit → answers"]
    assert "999999: not exercised" in row["throttle concurrent: limit → answers"]
    assert "containerState" in row["record annotation keys"]
    assert all(line.count("|") == 4 for line in lines)


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_a_short_run_on_the_embedded_localwhisk_writes_a_result_and_renders(tmp_path):
    result = subprocess.run(
        [
            sys.executable,
            str(REPO_ROOT / "bench" / "bench_calibration.py"),
            "--only",
            "warm",
            "cold",
            "resume",
            "fields",
            "--warm",
            "3",
            "--cold",
            "1",
            "--resume",
            "1",
            "--idle-s",
            "0.3",
            "--out",
            str(tmp_path),
            "--label",
            "lw",
            "--quiet-below",
            "1000",
        ],
        capture_output=True,
        text=True,
        timeout=200,
        cwd=REPO_ROOT,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    files = list(tmp_path.glob("calibration-lw-*.json"))
    assert len(files) == 1
    data = json.loads(files[0].read_text())
    assert data["format_version"] == cal.RESULT_FORMAT_VERSION and data["kind"] == "localwhisk"
    assert data["settings"]["pause_grace_ms"] == 50
    warm = data["scenarios"]["warm"]
    assert warm["calls"] == warm["ok"] == 3 and warm["client_ms"]["p50"] > 0
    assert data["scenarios"]["cold"]["with_init"] == 1
    assert "waitTime" in data["scenarios"]["fields"]["annotation_keys"]
    loads = [data["scenarios"][name]["host_load"] for name in ("warm", "cold", "resume", "fields")]
    assert all(entry["quiet"] is True and entry["peak_1m"] >= 0 for entry in loads)
    assert data["host"]["quiet_below"] == 1000 and data["host"]["not_quiet"] == []
    assert data["host"]["load_1m_peak"] == max(entry["peak_1m"] for entry in loads)
    rendered = subprocess.run(
        [sys.executable, str(REPO_ROOT / "bench" / "bench_calibration.py"), "--table", str(files[0])],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO_ROOT,
    )
    assert rendered.returncode == 0 and rendered.stdout.startswith("| | lw |")


class _FakeHost:
    """A load average that follows a script, and a clock that moves only when slept."""

    def __init__(self, loads):
        self.loads = list(loads)
        self.now_s = 0.0

    def read(self):
        return self.loads.pop(0) if len(self.loads) > 1 else self.loads[0]

    def clock(self):
        return self.now_s

    def sleep(self, seconds):
        self.now_s += seconds


def test_load_watch_waits_for_a_quiet_host_and_marks_a_busy_one():
    host = _FakeHost([3.0, 2.0, 0.8])
    watch = cal.LoadWatch(read=host.read, clock=host.clock, sleep=host.sleep, interval_s=1.0)
    entry = watch.wait_quiet(1.0, timeout_s=60)
    assert entry == {"before_1m": 0.8, "waited_s": 10.0, "quiet": True}

    busy = _FakeHost([4.0])
    watch = cal.LoadWatch(read=busy.read, clock=busy.clock, sleep=busy.sleep, interval_s=1.0)
    entry = watch.wait_quiet(1.0, timeout_s=12)
    assert entry["quiet"] is False and entry["before_1m"] == 4.0 and entry["waited_s"] == 15.0
    assert "quiet" not in cal.LoadWatch(read=lambda: 9.0).wait_quiet(None, timeout_s=60)


def test_load_watch_reports_the_peak_and_stops_twice():
    loads = iter([0.5, 0.7, 1.9, 1.2] + [1.0] * 1000)
    watch = cal.LoadWatch(read=lambda: next(loads), interval_s=0.01)
    watch.start()
    time.sleep(0.1)
    assert watch.stop() == 1.9
    assert watch.stop() == 1.9


def test_table_states_the_host_load_and_names_scenarios_that_were_not_quiet():
    quiet = _result("quiet", 29.0, [], 6.0, ["waitTime"])
    quiet["host"] = {
        "load_1m": 1.4,
        **cal.host_load_summary(
            {
                "warm": {"host_load": {"before_1m": 0.4, "peak_1m": 1.1, "quiet": True}},
                "capacity": {"host_load": {"before_1m": 0.9, "peak_1m": 2.6, "quiet": True}},
            },
            1.0,
        ),
    }
    busy = _result("busy", 29.0, [], 6.0, ["waitTime"])
    busy["host"] = {
        "load_1m": 3.0,
        **cal.host_load_summary({"warm": {"host_load": {"before_1m": 2.5, "peak_1m": 3.1, "quiet": False}}}, 1.0),
    }
    old = _result("old", 29.0, [], 6.0, ["waitTime"])
    old["format_version"], old["host"] = 1, {"load_1m": 8.4}
    row = next(line for line in cal.render_table([quiet, busy, old]).splitlines() if line.startswith("| measured"))
    assert "≤ 0.9 before each scenario, peak 2.6 during" in row
    assert "≤ 2.5 before each scenario, peak 3.1 during (not quiet: warm)" in row
    assert "8.4 at the end" in row


@pytest.mark.slow
def test_table_refuses_a_result_of_an_unknown_version(tmp_path):
    path = tmp_path / "calibration-x.json"
    path.write_text(json.dumps({"format_version": 99, "label": "x"}))
    rendered = subprocess.run(
        [sys.executable, str(REPO_ROOT / "bench" / "bench_calibration.py"), "--table", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO_ROOT,
    )
    assert rendered.returncode == 2 and rendered.stdout == ""
    assert rendered.stderr.strip().splitlines() == [
        f"bench_calibration: {path}: format_version 99 is not one this script reads (1, 2); measure again with this checkout's bench_calibration.py"
    ]
