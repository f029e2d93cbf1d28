"""``faasprof slowdown``: statistics and fit on constructed calls, and the command end to end on the
embedded localwhisk (the issue's acceptance run, with a small repeat)."""

from __future__ import annotations

import argparse
import csv
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from faasprof.analyzer.stats import quantile_ci
from faasprof.commands import slowdown as slowdown_command
from faasprof.docker import docker_problem
from faasprof.errors import ConfigError, RunError
from faasprof.experiments import native
from faasprof.experiments.slowdown import REMOTE_PAUSE_WAIT_S, platform_interpreter_matches, remote_pause_wait_s
from faasprof.experiments.slowdown_measure import Call, NativeSide, apply_record, measure_function
from faasprof.experiments.slowdown_report import MEDIAN_CI_MIN_SAMPLES, fit_power_law, judge_factor, summarise_function
from faasprof.functions.catalogue import require
from faasprof.platforms.openwhisk.connection import Connection

REPO = Path(__file__).resolve().parent.parent


def _calls(function: str, phase: str, exec_ms: list[float], latency_ms: list[float], state: str = "") -> list[Call]:
    return [
        Call(function, phase, i, "success", container_state=state, exec_ms=exec_one, latency_ms=latency_one)
        for i, (exec_one, latency_one) in enumerate(zip(exec_ms, latency_ms))
    ]


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
    for call in calls:
        call.exec_resolution_ms = 0.001 if call.phase == "native" else 1.0  # OpenWhisk's whole-ms records
    row = summarise_function("g", calls)
    assert math.isnan(row["warm_exec_ms_ci_low"]) and math.isnan(row["warm_exec_ms_ci_high"])
    assert math.isnan(row["slowdown_exec_warm"])  # median 0 ms: no time at all
    # Median 1 ms at 1 ms resolution: rounding alone could double it; no factor, and the notes say why.
    assert math.isnan(row["slowdown_exec_resumed"])
    assert "execution resumed: below resolution" in row["notes"]
    assert row["resumed_exec_resolution_ms"] == 1.0
    assert row["slowdown_latency_warm"] == pytest.approx(10.0)
    # The same medians measured in µs (localwhisk's runTimeUs) give the factor.
    for call in calls:
        call.exec_resolution_ms = 0.001
    row = summarise_function("g", calls)
    assert row["slowdown_exec_resumed"] == pytest.approx(5.0) and "below resolution" not in row["notes"]


def test_factors_at_or_below_one_and_within_the_native_range_are_said_plainly():
    calls = _calls("h", "native", [100, 102, 104, 98, 101, 99], [101] * 6)
    calls += _calls("h", "warm", [90] * 6, [95] * 6, state="warm")  # under every native call
    calls += _calls("h", "resumed", [101.5] * 6, [150] * 6, state="resumed")  # inside the native range
    row = summarise_function("h", calls)
    assert row["slowdown_exec_warm"] == pytest.approx(90 / 100.5)
    assert "execution warm ×0.896: FaaS faster than native" in row["notes"]
    assert "execution resumed ×1.01: not significant" in row["notes"]
    assert "latency resumed" not in row["notes"]  # ×1.49, outside the native range: a plain slowdown
    assert "waited for a CPU" not in row["notes"]  # no CPU times: nothing to say
    assert judge_factor("exec", "warm", 1.3, 130.0, [100.0, 101.0]) == ""
    assert judge_factor("exec", "warm", math.nan, 130.0, [100.0]) == ""


def test_calls_that_waited_for_a_cpu_are_said_with_the_cpu_time_factors():
    calls = _calls("l", "native", [600.0] * 6, [601.0] * 6)  # 600 ms wall for 240 ms of CPU: preempted
    calls += _calls("l", "warm", [480.0] * 6, [490.0] * 6, state="warm")
    calls += _calls("l", "resumed", [250.0] * 6, [260.0] * 6, state="resumed")
    for call, cpu in zip(calls, [240.0] * 6 + [242.0] * 6 + [245.0] * 6):
        call.cpu_ms = cpu
    row = summarise_function("l", calls)
    assert row["slowdown_cpu_warm"] == pytest.approx(242 / 240)
    assert "calls waited for a CPU (native 600 ms wall vs 240 ms CPU, warm 480 ms wall vs 242 ms CPU)" in row["notes"]
    assert "CPU-time factors ×1.01 warm, ×1.02 resumed" in row["notes"]
    # Each note is one item of the list, whatever punctuation it holds.
    (waited,) = [note for note in row["notes"].split(" | ") if note.startswith("calls waited")]
    assert "CPU-time factors" in waited
    assert "CPU time warm" not in row["notes"]  # ×1.01: the processes ran at one speed
    for call in calls:
        if call.phase == "native":
            call.cpu_ms = 280.0
    row = summarise_function("l", calls)
    assert "CPU time warm ×0.864: the same code took less CPU in the sandbox" in row["notes"]


def test_records_give_microsecond_execution_where_the_platform_has_it():
    fine = Call("f", "warm", 0, "success")
    apply_record(
        fine,
        {
            "activationId": "a",
            "duration": 2,
            "annotations": [
                {"key": "containerState", "value": "warm"},
                {"key": "waitTime", "value": 0},
                {"key": "runTimeUs", "value": 1534},
                {"key": "runCpuTimeUs", "value": 1210},
            ],
        },
    )
    assert (
        fine.exec_ms == pytest.approx(1.534) and fine.exec_resolution_ms == 0.001 and fine.cpu_ms == pytest.approx(1.21)
    )
    assert fine.container_state == "warm" and fine.wait_ms == 0
    # OpenWhisk: whole milliseconds, and a cold record's duration holds initTime, which is no execution.
    coarse = Call("f", "warmup", 0, "success")
    apply_record(coarse, {"activationId": "b", "duration": 40, "annotations": [{"key": "initTime", "value": 12}]})
    assert coarse.exec_ms == 28 and coarse.exec_resolution_ms == 1.0 and math.isnan(coarse.cpu_ms)


class FakeClock:
    def __init__(self):
        self.now_ns = 0

    def __call__(self) -> int:
        return self.now_ns

    def advance_ms(self, ms: float) -> None:
        self.now_ns += int(ms * 1e6)


class FakeResponse:
    def __init__(self, status_code: int, body: dict):
        self.status_code = status_code
        self._body = body

    def json(self):
        return self._body


class FakeClient:
    """A platform whose calls take 5 ms and whose sandbox pauses after ``grace_ms`` idle, on a fake clock."""

    def __init__(self, clock: FakeClock, log: list, grace_ms: float = 50):
        self.clock, self.log, self.grace_ms = clock, log, grace_ms
        self.last_ns: int | None = None

    def invoke(self, name, params, blocking=True):
        if self.last_ns is None:
            state = "cold"
        else:
            state = "warm" if (self.clock() - self.last_ns) / 1e6 < self.grace_ms else "resumed"
        self.clock.advance_ms(5)
        self.last_ns = self.clock()
        self.log.append(("faas", state))
        return FakeResponse(
            200,
            {
                "activationId": f"id{len(self.log)}",
                "duration": 4,
                "response": {"status": "success", "success": True, "result": {}},
                "annotations": [
                    {"key": "containerState", "value": state},
                    {"key": "waitTime", "value": 0},
                    {"key": "runTimeUs", "value": 4000},
                    {"key": "runCpuTimeUs", "value": 3900},
                ],
            },
        )


class FakeWorker:
    """A native worker whose calls take ``exec_ms`` on the fake clock; ``die_at`` calls die mid-call."""

    def __init__(self, clock: FakeClock, log: list, exec_ms: float = 200, die_at: tuple = (), start_error: str = ""):
        self.clock, self.log, self.exec_ms, self.die_at, self.start_error = clock, log, exec_ms, die_at, start_error
        self.calls = self.starts = 0

    def start(self):
        if self.start_error:
            raise RunError(self.start_error)
        self.starts += 1

    def call(self, params, timeout_s=None):
        self.calls += 1
        if self.calls in self.die_at:
            raise native.WorkerDied("the worker exited (status -9)")
        self.clock.advance_ms(self.exec_ms)
        self.log.append(("native", self.calls))
        return {"ok": True, "exec_ns": int(self.exec_ms * 1e6), "rusage": {"user_ms": self.exec_ms - 1, "sys_ms": 0.5}}

    def stderr_tail(self):
        return "Killed"

    def stop(self):
        pass

    def kill(self):
        pass


def test_native_and_faas_calls_interleave_and_every_recorded_warm_call_finds_its_sandbox_alive():
    clock, log, sleeps = FakeClock(), [], []
    client = FakeClient(clock, log, grace_ms=50)
    worker = FakeWorker(clock, log, exec_ms=200)  # longer than the grace: without keep_warm, warm calls would resume

    def sleep(seconds):
        sleeps.append(seconds)
        clock.advance_ms(seconds * 1000)

    calls = measure_function(require("nbody"), client, 3, 0.55, None, sleep=sleep, clock=clock, worker=worker)
    phases = [c.phase for c in calls]
    assert phases == [
        "native_warmup",
        "warmup",
        "native",
        "keep_warm",
        "warm",
        "keep_warm",
        "warm",
        "native",
        "native",
        "keep_warm",
        "warm",
        "native",
        "resumed",
        "native",
        "resumed",
        "native",
        "resumed",
    ]
    assert [c.container_state for c in calls if c.phase == "warm"] == ["warm"] * 3
    assert [c.container_state for c in calls if c.phase == "resumed"] == ["resumed"] * 3
    # The resumed calls wait the pause time since the previous FaaS answer, the native call included.
    assert sleeps == pytest.approx([0.35] * 3)
    native_calls = [c for c in calls if c.phase == "native"]
    assert len(native_calls) == 6 and [c.seq for c in native_calls] == list(range(6))
    assert (
        native_calls[0].exec_ms == 200
        and native_calls[0].cpu_ms == pytest.approx(199.5)
        and native_calls[0].latency_ms == 200
    )
    warm = [c for c in calls if c.phase == "warm"][0]
    assert warm.exec_ms == pytest.approx(4.0) and warm.exec_resolution_ms == 0.001
    row = summarise_function("nbody", calls)
    assert row["native_n"] == 6 and row["warm_n"] == 3 and row["resumed_n"] == 3 and row["warm_other_start"] == 0


def test_a_native_worker_that_dies_is_restarted_and_warmed_up_again():
    clock, log = FakeClock(), []
    worker = FakeWorker(clock, log, exec_ms=10, die_at=(3,))  # dies in the second recorded call
    side = NativeSide(require("nbody"), {}, None, worker=worker, clock=clock)
    first, second, third = side.call("native", 0), side.call("native", 1), side.call("native", 2)
    assert (first.outcome, second.outcome, third.outcome) == ("success", "failed", "success")
    assert "the worker exited" in second.error and "Killed" in second.error
    assert worker.starts == 2
    assert [c.phase for c in side.take_warmups()] == ["native_warmup", "native_warmup"]


def test_a_native_worker_that_cannot_start_leaves_rows_not_sent():
    clock, log = FakeClock(), []
    client = FakeClient(clock, log)
    worker = FakeWorker(clock, log, start_error="nbody: cannot load the function: ImportError: x")
    calls = measure_function(
        require("nbody"), client, 2, 0.1, None, sleep=lambda s: clock.advance_ms(s * 1000), clock=clock, worker=worker
    )
    native_calls = [c for c in calls if c.phase == "native"]
    assert [c.outcome for c in native_calls] == ["not_sent"] * 4 and "cannot load" in native_calls[0].error
    row = summarise_function("nbody", calls)
    assert row["native_n"] == 0 and row["warm_n"] == 2 and math.isnan(row["slowdown_exec_warm"])


def test_the_platform_interpreter_is_compared_with_the_native_one():
    entries = [require("nbody")]
    assert platform_interpreter_matches(entries, {"isolation": "cgroup-v1", "python": sys.executable}) is True
    assert platform_interpreter_matches(entries, {"isolation": "cgroup-v1", "python": "/usr/bin/false"}) is False
    assert platform_interpreter_matches(entries, {"isolation": "docker", "python": sys.executable}) is None
    assert platform_interpreter_matches(entries, None) is None


def test_power_law_fit_recovers_exponent():
    x = [0.5, 2.0, 10.0, 80.0, 400.0]
    y = [3.0 * v**-0.6 for v in x]
    fit = fit_power_law(x, y + [])
    assert fit["exponent"] == pytest.approx(-0.6)
    assert fit["coefficient"] == pytest.approx(3.0)
    assert fit["r2"] == pytest.approx(1.0)
    assert fit_power_law([1.0, float("nan")], [2.0, 3.0]) is None


def test_notes_on_long_functions_read_in_seconds():
    note = judge_factor("exec", "warm", 0.9, 14970.0, [15020.0, 16100.0])
    assert note.startswith(
        "execution warm ×0.9: FaaS faster than native (median 14.97 s under every native call, 15.02 s–16.1 s)"
    )
    assert "e+" not in note


def test_a_median_has_an_interval_from_the_repeat_the_warning_names():
    assert MEDIAN_CI_MIN_SAMPLES == 8
    assert math.isnan(quantile_ci(np.arange(7.0), 0.5)[1]) and math.isfinite(quantile_ci(np.arange(8.0), 0.5)[1])


@pytest.mark.slow
def test_cli_warns_that_few_repeats_give_no_interval(tmp_path):
    # The warning comes first, before anything is measured (here the platform is down: exit 3).
    few = _faasprof(
        "slowdown",
        "json_loads",
        "--repeat",
        "2",
        "--apihost",
        "http://127.0.0.1:1",
        "--auth",
        "a:b",
        "--out",
        str(tmp_path),
        timeout=60,
    )
    assert few.returncode == 3
    assert few.stderr.splitlines()[0] == (
        "warning: --repeat 2: with fewer than 8 calls per phase a median has no 95 % interval, "
        "so a factor cannot be told from noise; use --repeat 10 (the default) or more"
    )
    enough = _faasprof(
        "slowdown",
        "json_loads",
        "--repeat",
        "8",
        "--apihost",
        "http://127.0.0.1:1",
        "--auth",
        "a:b",
        "--out",
        str(tmp_path),
        timeout=60,
    )
    assert enough.returncode == 3 and "warning: --repeat" not in enough.stderr


def _faasprof(*args: str, timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "faasprof", *args], capture_output=True, text=True, timeout=timeout, cwd=REPO
    )


@pytest.mark.slow
def test_cli_refuses_bad_input_before_measuring(tmp_path):
    result = _faasprof("slowdown", "no_such_function", "--out", str(tmp_path), timeout=60)
    assert result.returncode == 2
    assert "no_such_function" in result.stderr
    result = _faasprof("slowdown", "json_dumps", "--all", "--out", str(tmp_path), timeout=60)
    assert result.returncode == 2 and "--all" in result.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_cli_unreachable_platform_leaves_nothing(tmp_path):
    result = _faasprof(
        "slowdown", "json_loads", "--apihost", "http://127.0.0.1:1", "--auth", "a:b", "--out", str(tmp_path), timeout=60
    )
    assert result.returncode == 3
    assert result.stderr.strip().startswith("http://127.0.0.1:1: cannot connect")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_cli_slowdown_on_embedded_localwhisk(tmp_path):
    pytest.importorskip("faasprof.localwhisk.embedded")
    result = _faasprof(
        "slowdown", "json_dumps", "json_loads", "nbody", "--repeat", "3", "--out", str(tmp_path), timeout=420
    )
    assert result.returncode == 0, result.stderr[-2000:]
    out = Path(result.stdout.strip().splitlines()[-1])
    assert out.parent == tmp_path
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["format_version"] == 2 and manifest["status"] == "complete"
    assert manifest["platform"]["embedded"] is True
    # The fair baseline: the same interpreter on both sides, said in the manifest.
    assert manifest["native"]["same_interpreter_as_platform"] is True
    with open(out / "slowdown.csv", newline="") as handle:
        rows = {row["function"]: row for row in csv.DictReader(handle)}
    assert set(rows) == {"json_dumps", "json_loads", "nbody"}
    for name, row in rows.items():
        assert int(row["native_n"]) == 6 and int(row["warm_n"]) == 3, name
        # localwhisk's runTimeUs: every execution factor is defined, none is "below resolution".
        assert float(row["warm_exec_resolution_ms"]) == 0.001 and float(row["slowdown_exec_warm"]) > 0, name
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
    # One pass: its factors describe its calls only, and it says how to get an interval over rounds.
    assert "one round: these factors describe this pass's calls only" in result.stdout and "--rounds 5" in result.stdout
    # Never overwritten: a second directory would get a new name.
    assert len(list(tmp_path.glob("slowdown-*"))) == 1


@pytest.mark.slow
def test_cli_slowdown_with_docker_sandboxes(tmp_path):
    problem = docker_problem()
    if problem is not None:
        pytest.skip(f"isolation docker unavailable: {problem}")
    result = _faasprof(
        "slowdown", "json_loads", "--repeat", "2", "--isolation", "docker", "--out", str(tmp_path), timeout=300
    )
    assert result.returncode == 0, result.stderr[-2000:]
    out = Path(result.stdout.strip().splitlines()[-1])
    assert json.loads((out / "manifest.json").read_text())["platform"]["localwhisk"]["isolation"] == "docker"
    with open(out / "calls.csv", newline="") as handle:
        calls = list(csv.DictReader(handle))
    assert [c["container_state"] for c in calls if c["phase"] in ("warm", "resumed")] == [
        "warm",
        "warm",
        "resumed",
        "resumed",
    ]
    # Unpausing a container costs more than a warm call's round trip, however loaded the host.
    with open(out / "slowdown.csv", newline="") as handle:
        (row,) = list(csv.DictReader(handle))
    assert float(row["slowdown_latency_resumed"]) > 1


def test_remote_pause_wait_follows_the_grace_the_connection_states():
    """The standalone of ``local start`` records its 50 ms grace in the connection: the resumed call
    waits just past it (not 11 s, past its 1 s idle timeout too); a platform stating none gets the
    wait past OpenWhisk 2.x's 10 s default."""
    stated = Connection(apihost="http://127.0.0.1:1", auth="a:b", settings={"pause_grace_ms": 50.0})
    assert remote_pause_wait_s(stated) == pytest.approx(0.55)
    assert remote_pause_wait_s(Connection(apihost="http://127.0.0.1:1", auth="a:b")) == REMOTE_PAUSE_WAIT_S == 11.0


def test_rounds_below_one_are_refused_before_measuring(tmp_path):
    """In process (a CLI subprocess costs the import): one line naming the flag and the fix."""
    parser = argparse.ArgumentParser()
    slowdown_command.add_arguments(parser)
    with pytest.raises(ConfigError, match=r"^--rounds 0: give at least 1"):
        slowdown_command.main(parser.parse_args(["json_loads", "--rounds", "0", "--out", str(tmp_path)]))
    assert list(tmp_path.iterdir()) == []
