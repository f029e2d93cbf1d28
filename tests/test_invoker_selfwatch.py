"""The self-watch verdicts, driven with fake clock and CPU readings."""

from __future__ import annotations

from faasprof.invoker.selfwatch import SelfWatch

MS = 1_000_000


def watch(warn=10.0, abort=None):
    w = SelfWatch(warn, abort, max_connections=64, planned=1000, duration_s=30, interval_s=5)
    w.restart(now_ns=0, cpu_s=0.0)
    return w


def test_quiet_interval_prints_progress_only():
    w = watch()
    w.window.extend([0, 1 * MS, 2 * MS])
    v = w.verdict(5.0, sent=3, in_flight=1, waiting=0, outcomes={"ok": 2, "throttled": 1}, now_ns=5_000 * MS, cpu_s=0.5)
    assert v.warning is None and v.abort is None
    assert (
        "sent 3/1,000" in v.progress
        and "cpu 10%" in v.progress
        and "not ok 1" in v.progress
        and "max 2.00 ms" in v.progress
    )
    assert w.window == []


def test_warning_names_the_cause():
    w = watch()
    w.window.extend([50 * MS] * 10)
    cpu_bound = w.verdict(5.0, 10, 0, 0, {}, now_ns=5_000 * MS, cpu_s=4.8)
    assert "CPU-bound (96% of a core)" in cpu_bound.warning and "taskset" in cpu_bound.warning
    w.window.extend([50 * MS] * 10)
    others = w.verdict(10.0, 20, 0, 0, {}, now_ns=10_000 * MS, cpu_s=5.0)
    assert "other processes delay it" in others.warning
    w.window.extend([50 * MS] * 10)
    pool = w.verdict(15.0, 30, 64, 12, {}, now_ns=15_000 * MS, cpu_s=5.1)
    assert "all 64 connections are busy" in pool.warning and "--max-connections" in pool.warning
    assert w.warnings == [
        f"lateness passed the warning threshold in 3 of 3 progress intervals; worst: {cpu_bound.warning}"
    ]


def test_abort_threshold():
    w = watch(warn=1.0, abort=20.0)
    w.window.extend([30 * MS] * 100)
    v = w.verdict(5.0, 100, 0, 0, {}, now_ns=5_000 * MS, cpu_s=1.0)
    assert v.abort and "abort threshold 20 ms" in v.abort and v.warning is None


def test_no_sends_no_judgement():
    v = watch(warn=0.001).verdict(5.0, 0, 0, 0, {}, now_ns=5_000 * MS, cpu_s=0.0)
    assert v.warning is None and "p99 -" in v.progress
