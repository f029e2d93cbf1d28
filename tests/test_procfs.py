"""The one reader of a process's start time (faasprof/procfs.py): a real process, a stat line whose
comm holds ') ' and bytes that are not UTF-8, a pid that is gone."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from faasprof import procfs
from faasprof.procfs import owner_alive, process_start_ticks

# Fields 3 to 52 of a stat line (proc(5)); field 22, starttime, is the 20th of them.
_AFTER_COMM = "S 1 4242 4242 0 -1 4194560 90 0 0 0 0 0 0 0 20 0 1 0 987654321 1000 100 " + " ".join(["0"] * 30)


def _fake_proc(tmp_path: Path, pid: int, stat: bytes) -> Path:
    (tmp_path / str(pid)).mkdir(parents=True)
    (tmp_path / str(pid) / "stat").write_bytes(stat)
    return tmp_path


def test_a_real_process_has_the_start_time_its_stat_line_gives_until_it_is_gone():
    child = subprocess.Popen(["sleep", "30"])
    try:
        # comm "sleep" holds no space, so here a plain split of the line finds field 22 too.
        plain = int(Path(f"/proc/{child.pid}/stat").read_text().split()[21])
        assert process_start_ticks(child.pid) == plain
        assert process_start_ticks(child.pid) >= process_start_ticks(os.getpid())
    finally:
        child.kill()
        child.wait()
    assert process_start_ticks(child.pid) is None


def test_comm_with_parentheses_spaces_and_bytes_that_are_not_utf8_is_skipped_whole(tmp_path):
    root = _fake_proc(tmp_path, 4242, b"4242 (a) b (\xff) 7 " + b") " + _AFTER_COMM.encode() + b"\n")
    assert process_start_ticks(4242, proc_root=root) == 987654321


def test_a_missing_pid_or_a_line_without_the_field_is_none(tmp_path):
    assert process_start_ticks(4243, proc_root=tmp_path) is None
    assert process_start_ticks(4244, proc_root=_fake_proc(tmp_path, 4244, b"4244 (short) S 1 2 3\n")) is None
    assert process_start_ticks(4245, proc_root=_fake_proc(tmp_path, 4245, b"4245 no comm at all\n")) is None


def test_a_process_that_renames_itself_to_odd_bytes_keeps_its_start_time():
    # An action may rename its own process (the kernel takes any bytes but NUL and '/' in comm).
    # The child tells its start time while its comm is still the interpreter's, then renames itself.
    script = (
        "import time; print(open('/proc/self/stat').read().split()[21], flush=True); "
        "open('/proc/self/comm', 'wb').write(b'\\xff(x) ) y'); print(flush=True); time.sleep(30)"
    )
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE)
    try:
        before = int(child.stdout.readline())
        child.stdout.readline()
        assert Path(f"/proc/{child.pid}/comm").read_bytes() == b"\xff(x) ) y\n"
        assert process_start_ticks(child.pid) == before
    finally:
        child.kill()
        child.wait()


def test_the_owner_is_alive_while_its_pid_runs_with_the_recorded_start_time():
    child = subprocess.Popen(["sleep", "30"])
    try:
        ticks = process_start_ticks(child.pid)
        assert ticks is not None
        assert owner_alive(child.pid, ticks) and owner_alive(child.pid, None)
        assert not owner_alive(child.pid, ticks + 1)  # the pid now names another process
    finally:
        child.kill()
        child.wait()
    assert not owner_alive(child.pid, ticks) and not owner_alive(child.pid, None)


def test_a_pid_of_zero_or_below_is_no_owner():
    # kill(0, 0) and kill(-1, 0) ask a process group, which exists: that said nothing of an owner.
    assert not owner_alive(0, None)
    assert not owner_alive(-1, None)


def test_kill_all_counts_what_it_killed_and_skips_a_pid_gone():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        gone = subprocess.Popen([sys.executable, "-c", "pass"])
        gone.wait(timeout=30)
        assert procfs.kill_all([child.pid, gone.pid]) == 1
        assert child.wait(timeout=30) == -signal.SIGKILL
    finally:
        child.kill()
