"""``python -m faasprof.localwhisk.watchdog PID START DATA_DIR``: clean up after a localwhisk server
that died without stopping its sandboxes.

A server stopped normally stops its sandboxes itself. One killed with ``kill -9`` cannot: its
sandboxes stay behind, frozen in their cgroups or stopped by SIGSTOP, with their cgroups and
containers, until the next localwhisk on the host reaps them. ``faasprof local start`` therefore
starts this watchdog beside the server it leaves running: it waits, asleep, until the server is
gone (its pid gone or reused, told apart by the start time in ``/proc/PID/stat``), then kills the
server's sandboxes (``sandbox.reap_orphans``), removes cgroup parents whose server is dead
(``CgroupManager.cleanup_stale``) and the server's containers, writes one line to the server's
log, and exits. After a normal stop it finds nothing to do.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from faasprof.docker import LABEL_OWNER_PID, remove_labelled_containers
from faasprof.localwhisk.cgroups import CgroupManager, detect
from faasprof.localwhisk.sandbox import SANDBOXES_DIR
from faasprof.localwhisk.sandbox_users import reap_orphans
from faasprof.procfs import process_start_ticks

POLL_S = 0.5


def clean_after(server_pid: int, data_dir: Path) -> list[str]:
    """Kill the dead server's sandboxes and remove its cgroups and containers; what was removed."""
    removed = [f"sandbox pid {pid}" for pid in reap_orphans(data_dir / SANDBOXES_DIR)]
    mode, roots = detect()
    if mode.startswith("cgroup"):
        removed += [
            f"cgroup {path}" for path in CgroupManager(mode, roots, "watchdog", 1, "shares", 0.0).cleanup_stale()
        ]
    removed += [f"container {cid[:12]}" for cid in remove_labelled_containers(LABEL_OWNER_PID, str(server_pid))]
    return removed


def wait_until_gone(pid: int, start_ticks: int, poll_s: float = POLL_S) -> None:
    while process_start_ticks(pid) == start_ticks:
        time.sleep(poll_s)


def launch(server_pid: int, data_dir: Path, log_path: Path) -> subprocess.Popen | None:
    """Start the watchdog of ``server_pid`` in its own session (it must outlive a kill of the
    server's group); None when the server is already gone."""
    start_ticks = process_start_ticks(server_pid)
    if start_ticks is None:
        return None
    with open(log_path, "ab") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "faasprof.localwhisk.watchdog", str(server_pid), str(start_ticks), str(data_dir)],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
            close_fds=True,
        )


def main(argv: list[str]) -> int:
    server_pid, start_ticks, data_dir = int(argv[0]), int(argv[1]), Path(argv[2])
    wait_until_gone(server_pid, start_ticks)
    removed = clean_after(server_pid, data_dir)
    if removed:
        print(
            f"localwhisk watchdog: server {server_pid} died without stopping its sandboxes; removed {len(removed)}: {', '.join(removed)}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
