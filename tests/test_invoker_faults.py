"""Fault tests of ``faasprof run``: kill -9 with slow answers, a full disk, an unwritable output.

Each asserts the contract of DESIGN's run directory: every planned invocation has one row, or the
stated loss bound (a kill -9 loses at most the last second: rows plus the send journal cover every
invocation due more than a second before the kill, and every reader reconstructs the rest).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from run_harness import run_against, run_dirs, start_run, wait_for_lines, write_workload
from test_invoker_fakeserver import AUTH, FakeOpenWhisk

from faasprof import rundir
from faasprof.errors import NotReadyError
from faasprof.localwhisk.embedded import start_embedded
from tests.helpers import REPO_ROOT, process_alive, run_cli

# Scheduling slack on a loaded 2-core test host, on top of the contract's one second.
SLACK_NS = 700_000_000


@pytest.mark.slow
def test_kill_9_with_slow_blocking_answers_loses_at_most_the_last_second(tmp_path, isolated_home):
    rate, duration = 20, 30
    config = write_workload(
        tmp_path,
        duration=duration,
        blocking_cli=True,
        instances={"a": {"application": "slow", "distribution": "Uniform", "rate": rate}},
    )
    out = tmp_path / "runs"
    with FakeOpenWhisk() as server:
        server.slow_s = 8.0  # every answer takes 8 s: at the kill, nothing sent in the last 8 s has a row
        proc = start_run(config, out, server, isolated_home, "--quiet")
        run_dir = wait_for_lines(out, proc, 20, name=rundir.SENDS, timeout_s=30)
        time.sleep(3.0)
        proc.kill()
        killed_wall_ns = time.time_ns()
        proc.communicate(timeout=10)
    manifest = rundir.read_manifest(run_dir).to_json()
    assert manifest["status"] == "running" and manifest["format_version"] == rundir.FORMAT_VERSION
    planned = manifest["counts"]["planned"]
    assert planned == rate * duration
    killed_at_ns = killed_wall_ns - manifest["clock"]["wall_ns_at_zero"]
    rows = rundir.read_invocations(run_dir)
    assert [int(r["seq"]) for r in rows] == list(range(planned))  # the plan, not the rows present
    by_outcome = {}
    for row in rows:
        by_outcome.setdefault(row["outcome"], []).append(row)
    due_before = [r for r in rows if int(r["intended_ns"]) < killed_at_ns - 1_000_000_000 - SLACK_NS]
    assert len(due_before) >= 40
    # Rows plus the journal cover every invocation due more than a second before the kill.
    assert all(r["outcome"] != "unrecorded" for r in due_before), [
        r["seq"] for r in due_before if r["outcome"] == "unrecorded"
    ][:5]
    assert len(by_outcome.get("unanswered", [])) >= 40  # answers take 8 s: these exist only in the journal
    assert all(r["sent_ns"] for r in by_outcome["unanswered"])
    # analyze states the loss and never takes the rows present for the plan.
    done = run_cli("analyze", str(run_dir), "--no-fetch", "--no-plots", timeout=120)
    assert done.returncode == 0, done.stderr
    report = rundir.completeness(run_dir)
    assert f"torn run: {report.missing:,} of {planned:,} planned invocations have no row" in done.stderr
    summary = json.loads((run_dir / "analysis" / "summary.json").read_text())
    assert summary["run"]["planned"] == planned


def _mount_tmpfs(path: Path, options: str) -> None:
    path.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "faasprof-test", str(path)], capture_output=True, text=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip()}); needs root")


def _umount(path: Path) -> None:
    subprocess.run(["umount", "-l", str(path)], capture_output=True)


@pytest.mark.slow
def test_full_disk_stops_the_run_at_the_first_failed_write(tmp_path, isolated_home):
    small = tmp_path / "small"
    # The plan (72 KB) and the manifest fit; the rows (about 13 KB/s at 200/s) fill the rest in
    # seconds (256k took 10 s of sending).
    _mount_tmpfs(small, "size=160k")
    try:
        rate, duration = 200, 30
        config = write_workload(
            tmp_path, duration=duration, instances={"a": {"application": "ok", "distribution": "Uniform", "rate": rate}}
        )
        with FakeOpenWhisk() as server:
            started = time.monotonic()
            done = run_cli(
                "run", config, "--out", small, "--apihost", server.apihost, "--auth", AUTH, "--quiet", timeout=120
            )
            elapsed_s = time.monotonic() - started
            sent = len(server.requests)
        assert done.returncode == 1, done.stderr
        assert "Traceback" not in done.stderr
        last = done.stderr.strip().splitlines()[-1]
        assert "No space left on device" in last and "--out" in last, done.stderr
        assert elapsed_s < duration / 2  # stopped at the failure, not at the end of the schedule
        assert sent < rate * duration / 2
        (run_dir,) = run_dirs(small)
        manifest = rundir.read_manifest(run_dir).to_json()
        if manifest["status"] != "running":  # the manifest is marked when it can be written
            assert manifest["status"] == "aborted" and "No space left on device" in manifest["status_reason"]
        rows = rundir.read_invocations(run_dir)
        assert [int(r["seq"]) for r in rows] == list(range(rate * duration))
        written = rundir.read_invocations(run_dir, reconstruct=False)
        assert len(written) > 100 and all(r["outcome"] == "ok" for r in written)  # everything written is kept
    finally:
        _umount(small)


def _fill(path: Path) -> None:
    """Fill the file system of ``path`` to the last byte (writes until the kernel refuses)."""
    try:
        with open(path / "filler", "wb") as handle:
            while True:
                handle.write(b"\0" * 4096)
                handle.flush()
    except OSError:
        pass


@pytest.mark.slow
def test_a_disk_full_at_the_start_is_one_line_before_anything_starts(tmp_path, isolated_home):
    """It said "localwhisk exited with status 1 while starting: no output" (its log could not be written)."""
    full = tmp_path / "full"
    _mount_tmpfs(full, "size=128k")
    try:
        _fill(full)
        config = write_workload(tmp_path, duration=5)
        done = run_cli("run", config, "--out", full / "runs", "--quiet", timeout=120)
        assert done.returncode == 3, done.stderr
        assert done.stderr.strip().splitlines() == [
            f"--out: the disk holding {full} is full (0 KiB free); free space there or choose another folder"
        ]
        assert not (full / "runs").exists()
        with pytest.raises(NotReadyError, match=f"the disk holding {full} is full"):
            with start_embedded(data_dir=full):
                pass
    finally:
        _umount(full)


@pytest.mark.slow
def test_analyze_on_a_full_disk_is_one_line_and_leaves_the_run_alone(tmp_path, isolated_home):
    config = write_workload(
        tmp_path, duration=2, instances={"a": {"application": "ok", "distribution": "Uniform", "rate": 20}}
    )
    with FakeOpenWhisk() as server:
        done = run_cli(
            "run",
            config,
            "--out",
            tmp_path / "runs",
            "--apihost",
            server.apihost,
            "--auth",
            AUTH,
            "--quiet",
            timeout=120,
        )
    assert done.returncode == 0, done.stderr
    (source,) = run_dirs(tmp_path / "runs")
    small = tmp_path / "small"
    _mount_tmpfs(small, "size=1m")
    try:
        run_dir = Path(shutil.copytree(source, small / source.name))
        before = {path.name: path.read_bytes() for path in run_dir.iterdir() if path.is_file()}
        _fill(small)
        done = run_cli("analyze", run_dir, "--no-fetch", timeout=120)
        assert done.returncode == 3, done.stderr  # the environment's, as a full --out at start
        assert "Traceback" not in done.stderr
        last = done.stderr.strip().splitlines()[-1]
        assert (
            last.startswith(f"analyze: cannot write {run_dir / 'analysis'} (")
            and "No space left on device" in last
            and "the run itself is unchanged" in last
        )
        assert {path.name: path.read_bytes() for path in run_dir.iterdir() if path.is_file()} == before
    finally:
        _umount(small)


@pytest.mark.slow
@pytest.mark.parametrize("where", ["read-only", "missing"])
def test_unwritable_out_is_one_line_and_exit_2_before_anything_starts(tmp_path, isolated_home, where):
    config = write_workload(tmp_path, duration=5)
    if where == "read-only":
        mount = tmp_path / "ro"
        _mount_tmpfs(mount, "size=64k,ro")
        out = mount
    else:
        mount = None
        (tmp_path / "a-file").write_text("not a directory")
        out = tmp_path / "a-file" / "runs"
    try:
        with FakeOpenWhisk() as server:
            done = run_against(server, config, out)
            posts = [r for r in server.requests]
        assert done.returncode == 2, done.stderr
        lines = done.stderr.strip().splitlines()
        assert (
            len(lines) == 1
            and lines[0].startswith("--out: ")
            and str(out) in lines[0]
            and "writable folder" in lines[0]
        ), done.stderr
        assert posts == []
        assert done.stdout == ""
    finally:
        if mount is not None:
            _umount(mount)


@pytest.mark.slow
def test_second_ctrl_c_while_waiting_for_records_saves_what_was_fetched(tmp_path, isolated_home):
    config = write_workload(
        tmp_path,
        duration=20,
        instances={
            "a": {"application": "ok", "distribution": "Uniform", "rate": 20},
            "b": {"application": "norecord", "distribution": "Uniform", "rate": 20},
        },
    )
    out = tmp_path / "runs"
    with FakeOpenWhisk() as server:
        proc = start_run(config, out, server, isolated_home, "--analyze")
        run_dir = wait_for_lines(out, proc, 40, name=rundir.SENDS, timeout_s=30)
        proc.send_signal(signal.SIGINT)
        deadline = time.monotonic() + 60
        seen = []
        for line in proc.stderr:  # progress lines: wait until it waits for the records
            seen.append(line)
            if "waiting for activation records" in line or time.monotonic() > deadline:
                break
        assert any("waiting for activation records" in line for line in seen), "".join(seen)
        proc.send_signal(signal.SIGINT)
        for line in proc.stderr:  # the record wait has ended once the analysis starts
            seen.append(line)
            if line.strip() == "analyzing":
                break
        reads_before_analysis = len(server.record_reads)
        stdout, stderr = proc.communicate(timeout=30)
        # The second Ctrl-C stopped the wait for records: the analysis does not wait for them again.
        assert len(server.record_reads) == reads_before_analysis, server.record_reads[reads_before_analysis:][:5]
    stderr = "".join(seen) + stderr
    assert proc.returncode == 1, stderr
    assert "Traceback" not in stderr
    manifest = rundir.read_manifest(run_dir).to_json()
    assert manifest["status"] == "interrupted" and "Ctrl-C (SIGINT) received" in manifest["status_reason"]
    assert manifest["activations"]["interrupted"] is True
    assert any("interrupted again while waiting for activation records" in w for w in manifest["warnings"])
    rows = rundir.read_invocations(run_dir)
    ok_ids = {r["activation_id"] for r in rows if r["instance"] == "a" and r["activation_id"]}
    saved = {json.loads(line)["activationId"] for line in (run_dir / rundir.ACTIVATIONS).read_text().splitlines()}
    assert ok_ids and saved == ok_ids  # every record the platform had was fetched and kept
    assert manifest["activations"]["saved"] == len(ok_ids)


def _descendants(pid: int) -> set[int]:
    """The processes below ``pid`` (children, theirs, ...), from each process's parent in /proc.
    A sandbox in a mount namespace of its own may show no working directory under the run's."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit():
                parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
    found: set[int] = set()
    frontier = {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def _processes_under(path: Path) -> list[tuple[int, str]]:
    """(pid, state) of every process whose working directory or command line is under ``path``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cwd = os.readlink(entry / "cwd")
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if cwd.startswith(str(path)) or str(path) in cmdline:
            found.append((int(entry.name), state))
    return found


@pytest.mark.slow
def test_kill_9_on_the_embedded_platform_keeps_its_records_and_leaves_nothing_running(tmp_path, isolated_home):
    data = {
        "test_name": "embedded-kill",
        "test_duration_in_seconds": 30,
        "random_seed": 5,
        "blocking_cli": True,
        "instances": {"j": {"application": "json_dumps", "distribution": "Uniform", "rate": 10}},
    }
    if shutil.which("perf"):  # a collector's tool, in a session of its own: the reaper must stop it
        data["monitoring"] = {"perf": {"events": ["task-clock", "context-switches"]}}
    config = tmp_path / "e.json"
    config.write_text(json.dumps(data))
    out = tmp_path / "runs"
    # A temporary directory of the run's own: the other test worker's localwhisks make theirs in /tmp.
    run_tmp = tmp_path / "tmp"
    run_tmp.mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-m", "faasprof", "run", str(config), "--out", str(out), "--quiet"],
        cwd=REPO_ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "HOME": str(isolated_home), "TMPDIR": str(run_tmp)},
    )
    try:
        run_dir = wait_for_lines(out, proc, 20, name=rundir.SENDS, timeout_s=120)
        time.sleep(1.5)
    finally:
        proc.kill()
        killed_wall_ns = time.time_ns()
        proc.communicate(timeout=10)
    manifest = rundir.read_manifest(run_dir).to_json()
    killed_at_ns = killed_wall_ns - manifest["clock"]["wall_ns_at_zero"]
    due_before = [
        r for r in rundir.read_invocations(run_dir) if int(r["intended_ns"]) < killed_at_ns - 1_000_000_000 - SLACK_NS
    ]
    assert due_before and all(r["outcome"] != "unrecorded" for r in due_before)  # rows + journal cover them
    data_dir = run_dir / "localwhisk"
    deadline = time.monotonic() + 20
    while _processes_under(data_dir) and time.monotonic() < deadline:
        time.sleep(0.2)
    # The embedded server died with its parent and stopped its sandboxes: nothing left, nothing frozen.
    assert _processes_under(data_dir) == []
    # And perf (its working directory monitors/perf/) was stopped by the reaper, not left writing
    # into the run directory for the rest of its planned 30 s (it was, before the reaper).
    while _processes_under(run_dir) and time.monotonic() < deadline + 10:
        time.sleep(0.2)
    assert _processes_under(run_dir) == []
    assert list(run_tmp.iterdir()) == []  # faasprof keeps nothing in temporary directories
    assert (data_dir / "localwhisk.sqlite").exists()
    assert not (run_dir / rundir.ACTIVATIONS).exists()
    done = run_cli("analyze", str(run_dir), "--no-plots", timeout=180)
    assert done.returncode == 0, done.stderr
    assert "reading activation records from the embedded platform's store" in done.stderr
    rows = rundir.read_invocations(run_dir)
    answered = {r["activation_id"] for r in rows if r["outcome"] == "ok" and r["activation_id"]}
    saved = {json.loads(line)["activationId"] for line in (run_dir / rundir.ACTIVATIONS).read_text().splitlines()}
    assert answered and answered <= saved  # every answered invocation's record survived the crash
    assert _processes_under(data_dir) == []


@pytest.mark.slow
def test_embedded_platform_killed_mid_run_stops_the_run_and_leaves_no_frozen_sandbox(tmp_path, isolated_home):
    data = {
        "test_name": "embedded-dies",
        "test_duration_in_seconds": 30,
        "random_seed": 5,
        "blocking_cli": False,
        # 150 ms apart with a 50 ms pause grace: the sandbox is paused (frozen) most of the time.
        "instances": {"j": {"application": "json_dumps", "distribution": "Uniform", "rate": 6.6}},
    }
    config = tmp_path / "e.json"
    config.write_text(json.dumps(data))
    out = tmp_path / "runs"
    proc = start_run(config, out, None, isolated_home, "--quiet")
    try:
        run_dir = wait_for_lines(out, proc, 8, name=rundir.SENDS, timeout_s=120)
        server_pid = json.loads((run_dir / "localwhisk" / "localwhisk.json").read_text())["pid"]
        sandboxes = _descendants(server_pid)
        assert sandboxes  # a sandbox is there
        os.kill(server_pid, signal.SIGKILL)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 1, stderr
    assert "Traceback" not in stderr
    manifest = rundir.read_manifest(run_dir).to_json()
    assert manifest["status"] == "interrupted" and "embedded localwhisk exited" in manifest["status_reason"]
    rows = rundir.read_invocations(run_dir, reconstruct=False)
    assert sorted(int(r["seq"]) for r in rows) == list(range(manifest["counts"]["planned"]))
    assert _processes_under(run_dir / "localwhisk") == []  # reaped by faasprof, none left frozen
    assert [pid for pid in sorted(sandboxes) if process_alive(pid)] == []
    # Issue 34: the store the killed platform left is the source of its records, for run and
    # analyze alike; "lost by the platform" is not said of a platform that was killed.
    stored = set(rundir.read_record_ids(rundir.activations_path(run_dir)))
    assert stored and manifest["activations"]["source"] == "localwhisk/localwhisk.sqlite", manifest["activations"]
    assert "lost by the platform" not in json.dumps(manifest)
    # A run directory as faasprof left it before: activations.jsonl saved empty. analyze reads the store.
    rundir.write_records(rundir.activations_path(run_dir), [])
    rundir.update_manifest(run_dir, activations={"expected": len(stored), "saved": 0, "missing": len(stored)})
    done = run_cli("analyze", str(run_dir), "--no-plots", timeout=180)
    assert done.returncode == 0, done.stderr
    assert (
        "reading activation records from the embedded platform's store" in done.stderr
        and "--apihost" not in done.stderr
    )
    assert set(rundir.read_record_ids(rundir.activations_path(run_dir))) == stored
    summary = json.loads((run_dir / "analysis" / "summary.json").read_text())
    assert summary["records"]["found"] == len(stored) >= 5


@pytest.mark.slow
def test_a_torn_format_1_run_gets_its_plan_re_derived_from_the_manifest(tmp_path, isolated_home):
    """A run directory of format 1 (no plan, no journal) torn by a kill: analyze re-derives the
    plan from the resolved workload and seed, and states what is missing."""
    config = write_workload(
        tmp_path, duration=2.0, instances={"a": {"application": "ok", "distribution": "Poisson", "rate": 20}}
    )
    out = tmp_path / "runs"
    with FakeOpenWhisk() as server:
        done = run_against(server, config, out, "--quiet", timeout=120)
    assert done.returncode == 0, done.stderr
    (run_dir,) = run_dirs(out)
    manifest = rundir.read_manifest(run_dir)
    planned = manifest.counts["planned"]
    full = sorted(rundir.read_invocations(run_dir), key=lambda r: int(r["seq"]))
    # Make it what faasprof 1 left after a kill -9: no plan, no journal, half the rows, still running.
    (run_dir / rundir.PLAN).unlink()
    (run_dir / rundir.SENDS).unlink()
    manifest.update(format_version=1, status="running")
    rundir.write_manifest(run_dir, manifest)
    kept = [r for r in full if int(r["seq"]) % 2 == 0]
    (run_dir / rundir.INVOCATIONS).write_text(
        ",".join(rundir.INVOCATION_COLUMNS)
        + "\n"
        + "".join(",".join(r[c] for c in rundir.INVOCATION_COLUMNS) + "\n" for r in kept)
    )
    assert rundir.completeness(run_dir).uncounted == planned - len(kept)
    done = run_cli("analyze", run_dir, "--no-fetch", "--no-plots", timeout=120)
    assert done.returncode == 0, done.stderr
    assert "re-derived the plan" in done.stderr
    assert f"torn run: {planned - len(kept):,} of {planned:,} planned invocations have no row" in done.stderr
    rows = rundir.read_invocations(run_dir)
    assert [int(r["seq"]) for r in rows] == list(range(planned))
    assert [r["intended_ns"] for r in rows] == [r["intended_ns"] for r in full]  # the same plan, re-derived
    assert {r["outcome"] for r in rows if int(r["seq"]) % 2} == {"unrecorded"}
