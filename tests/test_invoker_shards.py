"""The multi-process send mode (``faasprof.invoker.shards``, ``faasprof run --send-processes``).

Checked: the split (every planned invocation in exactly one process, whole instances kept whole
when they fit, a hot instance alternating, shares in plan order), ``--send-processes`` values, a
real two-process run against a server on 127.0.0.1 merged into one run directory (every planned
invocation once, plan fields and ids intact, journal coherent with the rows), a child killed mid-run,
and the CLI (a complete run, bad values, the parent killed with SIGKILL). No timing is asserted.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from run_harness import (
    assert_interrupted_with_a_row_each,
    run_against,
    run_dirs,
    start_run,
    wait_for_lines,
    write_workload,
)
from test_invoker_fakeserver import AUTH, FakeOpenWhisk
from test_invoker_run import assert_no_secret

from faasprof import rundir
from faasprof.errors import ConfigError
from faasprof.invoker.dispatch import REALTIME_HINT_PER_S, DispatchOptions, realtime_hint, realtime_permitted
from faasprof.invoker.shards import (
    AUTO_RATE_PER_PROCESS,
    SHARDS_DIR,
    ShardedDispatch,
    choose_processes,
    peak_rate_per_s,
    resolve_processes,
    split_plan,
)
from faasprof.platforms.openwhisk.connection import Connection
from faasprof.platforms.registry import prepare_request
from faasprof.progress import QUIET, Progress
from tests.helpers import run_cli

# -- the split ------------------------------------------------------------------------------------


def test_every_invocation_goes_to_exactly_one_process_and_whole_instances_stay_whole():
    rng = np.random.default_rng(3)
    owners = rng.choice(4, size=4000, p=[0.25, 0.25, 0.25, 0.25]).astype(np.int32)
    shard_of = split_plan(owners, 4)
    assert shard_of.shape == owners.shape and set(np.unique(shard_of).tolist()) == {0, 1, 2, 3}
    # Four instances of about a quarter each: one per process, none split.
    for instance in range(4):
        assert np.unique(shard_of[owners == instance]).size == 1
    assert sorted(np.unique(shard_of[owners == i])[0] for i in range(4)) == [0, 1, 2, 3]


def test_a_single_hot_instance_alternates_between_processes():
    owners = np.zeros(9, dtype=np.int32)
    assert split_plan(owners, 2).tolist() == [0, 1, 0, 1, 0, 1, 0, 1, 0]
    assert split_plan(owners, 3).tolist() == [0, 1, 2] * 3


def test_an_instance_too_big_for_one_process_is_split_in_proportion_to_the_room_left():
    # Three equal instances over two processes: two go whole, the third is shared half and half.
    owners = np.repeat(np.arange(3, dtype=np.int32), 100)[np.random.default_rng(1).permutation(300)]
    shard_of = split_plan(owners, 2)
    loads = np.bincount(shard_of, minlength=2)
    assert loads.tolist() == [150, 150]
    split = [i for i in range(3) if np.unique(shard_of[owners == i]).size == 2]
    assert len(split) == 1
    # One big and one small instance: the big one fills up what the small one leaves.
    owners = np.array([0] * 90 + [1] * 10, dtype=np.int32)
    loads = np.bincount(split_plan(owners, 2), minlength=2)
    assert loads.tolist() == [50, 50]


def test_one_process_or_an_empty_plan_needs_no_split():
    assert split_plan(np.array([0, 1, 2], dtype=np.int32), 1).tolist() == [0, 0, 0]
    assert split_plan(np.zeros(0, dtype=np.int32), 4).tolist() == []


def test_send_processes_values():
    assert resolve_processes("3", 0) == 3 and resolve_processes(2, 0) == 2
    # auto: enough for the busiest second, never more than the cores.
    assert resolve_processes("auto", 100, cores=2) == 1
    assert resolve_processes("auto", 1_000_000, cores=2) == 2
    assert resolve_processes("auto", 1_000_000, cores=16) == 16
    assert resolve_processes("AUTO", 20_000, cores=16) == 3
    for bad in ("0", "-2", "many", ""):
        with pytest.raises(ConfigError, match="--send-processes"):
            resolve_processes(bad, 0)
    assert peak_rate_per_s(np.array([0, 1, 2, 1_000_000_000], dtype=np.int64)) == 3


def test_auto_send_processes_from_the_peak_rate_and_the_cores():
    """Issue 27: 20,000/s on a 2-core host lands late from one process and holds from two; the
    cap of the cores minus one left auto at one."""
    choice = choose_processes("auto", 20_412, cores=2)
    assert (choice.processes, choice.capped, choice.worth_saying) == (2, True, True)
    assert (
        choice.why
        == "auto: the busiest second plans 20,412 invocations and one process holds about 8,000/s; 3 wanted, capped at the cores (2)"
    )
    assert choice.describe() == {
        "requested": "auto",
        "processes": 2,
        "busiest_second_invocations": 20_412,
        "per_process_per_s": AUTO_RATE_PER_PROCESS,
        "cores": 2,
        "why": choice.why,
    }
    assert (
        choose_processes("auto", 16_000, cores=4).processes,
        choose_processes("auto", 16_001, cores=4).processes,
    ) == (2, 3)
    quiet = choose_processes("auto", 100, cores=16)
    assert (quiet.processes, quiet.capped, quiet.worth_saying) == (1, False, False)
    given = choose_processes("1", 20_412)
    assert (given.processes, given.requested, given.cores, given.worth_saying, given.why) == (
        1,
        "1",
        None,
        False,
        "--send-processes 1",
    )


def test_realtime_hint_only_for_a_busy_plan_without_realtime_that_may_use_it():
    hint = realtime_hint(REALTIME_HINT_PER_S, None, True)
    assert hint is not None and "pass --realtime" in hint and f"{REALTIME_HINT_PER_S:,} invocations" in hint
    assert realtime_hint(REALTIME_HINT_PER_S - 1, None, True) is None  # a slow plan does not need it
    assert realtime_hint(20_000, 10, True) is None  # already asked for
    assert realtime_hint(20_000, None, False) is None  # not allowed: the flag would only warn
    assert isinstance(realtime_permitted(), bool)


# -- a real run -----------------------------------------------------------------------------------


def _plan(server: FakeOpenWhisk, rates: dict[str, float], duration_s: float, seed: int = 5):
    """A uniform-rate plan of several instances, the run directory's plan.bin and the requests."""
    connection = Connection(apihost=server.apihost, auth=AUTH, namespace="guest", source="flags")
    times, owners = [], []
    for index, rate in enumerate(rates.values()):
        count = int(rate * duration_s)
        offset = np.random.default_rng(seed + index).integers(0, int(1e9 / rate))
        times.append(offset + (np.arange(count) * (1e9 / rate)).astype(np.int64))
        owners.append(np.full(count, index, dtype=np.int32))
    intended, owners = np.concatenate(times), np.concatenate(owners)
    order = np.argsort(intended, kind="stable")
    intended, owners = intended[order], owners[order]
    instances = [(name, "ok") for name in rates]
    requests = []
    for name in rates:
        instance = type(
            "I",
            (),
            dict(
                name=name,
                function="ok",
                endpoint="local_openwhisk",
                blocking=False,
                params={},
                data_file=None,
                data_mode="web",
                content_type=None,
                url=None,
                data=None,
                host=None,
            ),
        )
        requests.append(prepare_request(instance, connection))
    return intended, owners, instances, requests


def _sharded_run(
    tmp_path: Path, server, rates, duration_s: float, processes: int, during=None, options=None, progress=QUIET
):
    intended, owners, instances, requests = _plan(server, rates, duration_s)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    rundir.write_plan(run_dir, intended, owners, [n for n, _ in instances], [f for _, f in instances])
    log = rundir.InvocationLog(run_dir, flush_interval_s=0.1)
    options = options or DispatchOptions(send_processes=processes, lateness_warn_ms=None)
    sharded = ShardedDispatch(
        run_dir, intended, owners, instances, requests, log, options, duration_s=duration_s, progress=progress
    )
    sharded.start(timeout_s=60)
    helper = None
    if during is not None:
        helper = threading.Thread(target=during, args=(sharded, run_dir), daemon=True)
        helper.start()
    try:
        result = sharded.run(time.monotonic_ns() + 50_000_000)
    finally:
        log.close()
        if helper is not None:
            helper.join(30)
    return run_dir, intended, owners, sharded, result


@pytest.mark.slow
def test_two_processes_merge_into_one_run_directory(tmp_path):
    with FakeOpenWhisk() as server:
        run_dir, intended, owners, sharded, result = _sharded_run(
            tmp_path, server, {"a": 40, "b": 25, "hot": 60}, 2.0, 2
        )
        answered = len(server.requests)
    n = intended.size
    assert result.status == "complete" and result.planned == n and result.sent == n == answered
    assert result.outcomes == {"ok": n}
    rows = rundir.read_invocations(run_dir, reconstruct=False)
    seqs = [int(r["seq"]) for r in rows]
    assert sorted(seqs) == list(range(n))  # every planned invocation exactly once
    for row in rows:
        seq = int(row["seq"])
        assert int(row["intended_ns"]) == intended[seq]
        assert row["instance"] == ["a", "b", "hot"][owners[seq]] and row["function"] == "ok"
        assert row["outcome"] == "ok" and len(row["activation_id"]) == 32
    assert len({r["activation_id"] for r in rows}) == n
    sends = rundir.read_sends(run_dir)
    assert sends == {int(r["seq"]): int(r["sent_ns"]) for r in rows}  # journal and rows agree
    assert not (run_dir / SHARDS_DIR).exists()  # merged: nothing left over
    described = sharded.describe()
    assert described["send_mode"] == "multi-process" and described["send_processes"] == 2
    shares = described["processes"]
    assert sum(p["planned"] for p in shares) == n and all(
        p["status"] == "complete" and p["exit"] == "exit 0" for p in shares
    )
    # In each process, its invocations were sent in plan order (lateness never reorders one stream).
    for share in sharded.children:
        sent = [sends[int(seq)] for seq in share.seqs]
        assert sent == sorted(sent)


@pytest.mark.slow
def test_a_child_killed_mid_run_still_leaves_every_planned_invocation_once(tmp_path):
    def kill_first_child(sharded: ShardedDispatch, run_dir: Path) -> None:
        journal = run_dir / SHARDS_DIR / "0" / rundir.SENDS
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and (not journal.exists() or journal.stat().st_size < 200):
            time.sleep(0.05)
        os.kill(sharded.children[0].proc.pid, signal.SIGKILL)

    with FakeOpenWhisk() as server:
        run_dir, intended, owners, sharded, result = _sharded_run(
            tmp_path, server, {"a": 50, "b": 50}, 8.0, 2, during=kill_first_child
        )
    n = intended.size
    assert result.status == "aborted"
    assert "send process 1 of 2" in result.reason and "killed by signal 9" in result.reason
    rows = rundir.read_invocations(run_dir, reconstruct=False)
    assert sorted(int(r["seq"]) for r in rows) == list(range(n))
    by_outcome: dict[str, int] = {}
    for row in rows:
        by_outcome[row["outcome"]] = by_outcome.get(row["outcome"], 0) + 1
    assert by_outcome.get("ok", 0) > 0
    # The killed process's share: answered rows, then what its journal says (unanswered) or not
    # (unrecorded); the other process was stopped: not_sent for what it had not sent yet.
    assert by_outcome.get("unrecorded", 0) > 0 and by_outcome.get("not_sent", 0) > 0
    assert sum(by_outcome.values()) == n
    assert rundir.completeness(run_dir).missing == 0
    # The dead child's files stay for inspection only when the merge could not be completed.
    assert sharded.describe()["processes"][0]["exit"] == "killed by signal 9"


@pytest.mark.slow
def test_each_process_watches_itself_and_the_parent_reports_progress(tmp_path, capfd):
    # A warning threshold nothing can meet: every progress interval of every process warns.
    options = DispatchOptions(send_processes=2, lateness_warn_ms=1e-9, progress_interval_s=0.3)
    said: list[str] = []
    with FakeOpenWhisk() as server:
        _, intended, _, sharded, result = _sharded_run(
            tmp_path, server, {"a": 40, "b": 40}, 2.0, 2, options=options, progress=Progress(said.append)
        )
    assert result.status == "complete" and result.outcomes == {"ok": intended.size}
    stderr = capfd.readouterr().err
    # The children speak only to warn, each naming itself; the parent prints the run's progress.
    for index in (1, 2):
        assert (
            f"send process {index} of 2 (pid {sharded.children[index - 1].proc.pid}): warning: lateness p99" in stderr
        )
        assert any(
            w.startswith(f"send process {index} of 2 (pid ") and "passed the warning threshold" in w
            for w in result.warnings
        )
    assert "in flight" not in stderr  # the children's own progress lines are not printed
    assert said and all("by 2 processes" in line for line in said)


# -- the CLI --------------------------------------------------------------------------------------


@pytest.mark.slow
def test_cli_run_with_two_send_processes(tmp_path, isolated_home):
    config = write_workload(
        tmp_path,
        duration=2,
        instances={
            "a": {"application": "ok", "distribution": "Poisson", "rate": 40},
            "b": {"application": "ok2", "distribution": "Uniform", "rate": 30},
        },
    )
    out = tmp_path / "runs"
    with FakeOpenWhisk() as server:
        done = run_against(server, config, out, "--send-processes", "2", timeout=120)
    assert done.returncode == 0, done.stderr
    (run_dir,) = run_dirs(out)
    assert done.stdout.strip().splitlines()[-1] == str(run_dir)
    manifest = rundir.read_manifest(run_dir).to_json()
    assert manifest["status"] == "complete"
    assert manifest["invoker"]["send_processes"] == 2 and manifest["invoker"]["send_mode"] == "multi-process"
    assert manifest["invoker"]["send_processes_choice"]["why"] == "--send-processes 2"
    rows = rundir.read_invocations(run_dir)
    planned = manifest["counts"]["planned"]
    assert sorted(int(r["seq"]) for r in rows) == list(range(planned)) and all(r["outcome"] == "ok" for r in rows)
    assert "from 2 send processes" in done.stderr
    assert_no_secret(run_dir, done.stdout, done.stderr)


@pytest.mark.slow
def test_cli_run_chooses_send_processes_automatically_by_default(tmp_path, isolated_home):
    """No --send-processes: the count comes from the plan's busiest second (the split itself at
    high rates is ``choose_processes``'s test; whether a run then holds its schedule is timing,
    measured by bench/bench_invoker.py, not asserted here), and the manifest says why."""
    config = write_workload(
        tmp_path, duration=1.5, instances={"a": {"application": "ok", "distribution": "Uniform", "rate": 40}}
    )
    out = tmp_path / "runs"
    with FakeOpenWhisk() as server:
        done = run_against(server, config, out, timeout=120)
    assert done.returncode == 0, done.stderr
    (run_dir,) = run_dirs(out)
    invoker = rundir.read_manifest(run_dir).to_json()["invoker"]
    cores = len(os.sched_getaffinity(0))
    assert invoker["send_processes_choice"] == {
        "requested": "auto",
        "processes": 1,
        "busiest_second_invocations": 40,
        "per_process_per_s": AUTO_RATE_PER_PROCESS,
        "cores": cores,
        "why": f"auto: the busiest second plans 40 invocations and one process holds about {AUTO_RATE_PER_PROCESS:,}/s",
    }
    assert invoker["send_processes"] == 1 and invoker.get("send_mode") != "multi-process"
    # One process for a slow plan goes without saying, and it needs no --realtime.
    assert "send processes:" not in done.stderr and "--realtime" not in done.stderr


@pytest.mark.slow
@pytest.mark.parametrize("value", ["0", "lots"])
def test_cli_bad_send_processes_exit_2(tmp_path, isolated_home, value):
    config = write_workload(tmp_path)
    done = run_cli(
        "run",
        config,
        "--out",
        tmp_path / "runs",
        "--apihost",
        "http://127.0.0.1:9",
        "--auth",
        AUTH,
        "--send-processes",
        value,
    )
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "--send-processes" in lines[0]
    assert not run_dirs(tmp_path / "runs")


@pytest.mark.slow
@pytest.mark.parametrize("sig, label", [(signal.SIGINT, "Ctrl-C (SIGINT)"), (signal.SIGTERM, "SIGTERM")])
def test_cli_signal_stops_every_send_process_with_a_row_for_every_invocation(tmp_path, isolated_home, sig, label):
    config = write_workload(
        tmp_path, duration=20, instances={"a": {"application": "ok", "distribution": "Uniform", "rate": 50}}
    )
    out = tmp_path / "runs"
    with FakeOpenWhisk() as server:
        proc = start_run(config, out, server, isolated_home, "--send-processes", "2")
        try:
            wait_for_lines(out, proc, timeout_s=60)
            proc.send_signal(sig)
            stdout, stderr = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 1, stderr
    # The merged rows as the parent wrote them, none reconstructed.
    run_dir, manifest, _ = assert_interrupted_with_a_row_each(out, stdout, 1000, label, reconstruct=False)
    assert manifest["status_reason"] == f"{label} received"
    assert [p["status"] for p in manifest["invoker"]["processes"]] == ["interrupted", "interrupted"]
    assert not (run_dir / SHARDS_DIR).exists()
    assert_no_secret(run_dir, stdout, stderr)


def _children_of(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


@pytest.mark.slow
def test_cli_parent_killed_leaves_a_readable_torn_run_and_stops_its_children(tmp_path, isolated_home):
    config = write_workload(
        tmp_path, duration=20, instances={"a": {"application": "ok", "distribution": "Uniform", "rate": 40}}
    )
    out = tmp_path / "runs"
    with FakeOpenWhisk() as server:
        proc = start_run(
            config, out, server, isolated_home, "--quiet", "--send-processes", "2", output=subprocess.DEVNULL
        )
        children: list[int] = []
        try:
            deadline = time.monotonic() + 60
            run_dir = None
            while time.monotonic() < deadline:
                dirs = run_dirs(out)
                if (
                    dirs
                    and (dirs[0] / rundir.INVOCATIONS).exists()
                    and (dirs[0] / rundir.INVOCATIONS).stat().st_size > 200
                ):
                    run_dir = dirs[0]
                    break
                time.sleep(0.1)
            assert run_dir is not None, "no merged rows appeared"
            children = _children_of(proc.pid)
            assert len(children) == 2
            proc.kill()
            proc.wait(10)
            # The children see their control pipe close and stop on their own.
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and any(Path(f"/proc/{pid}").exists() for pid in children):
                time.sleep(0.1)
            alive = [pid for pid in children if Path(f"/proc/{pid}").exists()]
            assert not alive, f"send processes {alive} outlived their parent"
        finally:
            if proc.poll() is None:
                proc.kill()
            for pid in children:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
    manifest = rundir.read_manifest(run_dir).to_json()
    assert manifest["status"] == "running"  # nobody could finish it
    rows = rundir.read_invocations(run_dir)  # reconstructed: the whole plan
    report = rundir.completeness(run_dir)
    assert len(rows) == report.planned == 800
    assert sorted(int(r["seq"]) for r in rows) == list(range(800))
    assert report.rows > 0 and report.missing > 0 and report.rows + report.missing == report.planned
    # Each child finished its own files, kept for inspection.
    for index in ("0", "1"):
        assert (run_dir / SHARDS_DIR / index / rundir.INVOCATIONS).exists()
    assert_no_secret(run_dir)
