"""The run's self-check (faasprof.invoker.selfcheck): issued against intended each second and the
failure rate, on a fake clock; and a real run that falls behind aborts with every row kept."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np
import pytest
from run_harness import run_against, run_dirs, write_workload
from test_invoker_fakeserver import FakeOpenWhisk

from faasprof.errors import ConfigError
from faasprof.invoker.selfcheck import SelfCheck, SelfCheckLimits, parse_self_check, self_check_limits
from faasprof.rundir import read_invocations, read_manifest
from tests.helpers import run_cli

S = 1_000_000_000


@dataclass
class FakeSends:
    n: int
    outcomes: dict = field(default_factory=dict)

    def __post_init__(self):
        self.sent_rel = np.full(self.n, -1, dtype=np.int64)

    def send(self, count: int, ok: int | None = None, failed: int = 0) -> None:
        start = int(np.count_nonzero(self.sent_rel >= 0))
        self.sent_rel[start : start + count] = 0
        self.outcomes["ok"] = self.outcomes.get("ok", 0) + (count - failed if ok is None else ok)
        self.outcomes["failed"] = self.outcomes.get("failed", 0) + failed


class Clock:
    def __init__(self):
        self.ns = 0

    def __call__(self):
        return self.ns


def checker(limits: SelfCheckLimits, per_second: int = 100, seconds: int = 20):
    intended = np.repeat(np.arange(seconds, dtype=np.int64) * S, per_second) + np.tile(
        np.linspace(0, S - 1, per_second, dtype=np.int64), seconds
    )
    clock = Clock()
    check = SelfCheck(limits, intended, clock)
    sends = FakeSends(intended.size)
    check.watch(sends, 0)
    return check, sends, clock


def test_keeping_up_passes_and_counts_each_second():
    check, sends, clock = checker(SelfCheckLimits(behind_abort=0.2))
    for second in range(1, 6):
        sends.send(100)
        clock.ns = second * S + 1
        assert check.check() is None
    described = check.describe()
    assert described["per_second"][:3] == [[0, 100, 100, 100, 0], [1, 100, 100, 100, 0], [2, 100, 100, 100, 0]]
    assert described["aborted"] is None and described["warnings"] == []


def test_falling_behind_warns_at_10_and_aborts_at_20_percent():
    check, sends, clock = checker(SelfCheckLimits(behind_warn=0.1, behind_abort=0.2))
    sends.send(85)
    clock.ns = 2 * S  # 100 intended up to a second ago, 85 issued: 15 % behind
    assert check.check() is None
    assert check.warnings and "self-check behind: 15.0%" in check.warnings[0]
    sends.send(70)
    clock.ns = 3 * S  # 200 intended, 155 issued: 22.5 % behind
    status, reason = check.check()
    assert status == "aborted" and "22.5% of the 200 invocations intended after the warm-up not issued" in reason
    assert check.describe()["worst_behind"] == pytest.approx(0.225)


def test_failures_abort_and_the_warmup_is_left_out():
    check, sends, clock = checker(SelfCheckLimits(failure_abort=0.2, warmup_s=2.0))
    sends.send(200, failed=150)  # the warm-up's failures do not count
    clock.ns = 2 * S - 1  # a check as the warm-up ends (the dispatcher checks every 0.25 s)
    assert check.check() is None
    clock.ns = 3 * S
    assert check.check() is None
    sends.send(100, failed=30)
    clock.ns = 4 * S
    status, reason = check.check()
    assert status == "aborted" and "30.0% of the 100 answered invocations failed" in reason


def test_too_few_intended_are_not_judged():
    check, sends, clock = checker(SelfCheckLimits(behind_abort=0.2, min_intended=500), per_second=100)
    clock.ns = 3 * S
    assert check.check() is None  # nothing issued, but only 200 intended


def test_limits_defaults_block_and_flags():
    assert self_check_limits(None, replays_trace=False).behind_abort is None
    traced = self_check_limits({"warmup_s": 60}, replays_trace=True)
    assert (traced.behind_warn, traced.behind_abort, traced.failure_abort, traced.warmup_s) == (0.1, 0.2, 0.2, 60.0)
    flags = parse_self_check(["behind_abort=none", "failure_warn=0.3"])
    limits = self_check_limits({"behind_abort": 0.5}, True, flags)
    assert limits.behind_abort is None and limits.failure_warn == 0.3
    with pytest.raises(ConfigError, match="--self-check 'late=1': give KEY=VALUE with KEY one of behind_warn"):
        parse_self_check(["late=1"])
    with pytest.raises(ConfigError, match="'x' is not a number"):
        parse_self_check(["behind_warn=x"])


@pytest.mark.slow
def test_a_run_that_falls_20_percent_behind_aborts_with_every_row_kept(tmp_path, isolated_home):
    with FakeOpenWhisk() as server:
        server.slow_s = 0.5
        config = write_workload(
            tmp_path,
            duration=20,
            instances={"s": {"application": "slow", "distribution": "Uniform", "rate": 20, "blocking": True}},
            self_check={"behind_abort": 0.2, "min_intended": 10},
        )
        done = run_against(server, config, tmp_path / "runs", "--max-connections", "2")
    (run_dir,) = run_dirs(tmp_path / "runs")
    manifest = read_manifest(run_dir)
    assert done.returncode != 0
    assert manifest.status == "aborted" and manifest.status_reason.startswith("self-check:")
    rows = read_invocations(run_dir)
    assert len(rows) == manifest.counts["planned"] == 400
    assert {r["outcome"] for r in rows} >= {"ok", "not_sent"}
    described = manifest.to_json()["self_check"]
    assert described["aborted"] == manifest.status_reason and described["per_second"]
    assert json.loads(json.dumps(described))["limits"]["behind_abort"] == 0.2


def test_run_refuses_a_bad_self_check_flag_in_one_line(tmp_path, isolated_home):
    config = write_workload(tmp_path)
    done = run_cli("run", config, "--out", tmp_path / "runs", "--self-check", "behind_abort=lots")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "--self-check 'behind_abort=lots': 'lots' is not a number; give e.g. behind_abort=0.2"
    ]
    assert not (tmp_path / "runs").exists()
