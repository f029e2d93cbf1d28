"""The run's tools stopped when faasprof is no longer there to stop them (kill -9, the OOM killer).

A collector's tool (perf, pqos, blktrace) runs in a session of its own, so that a Ctrl-C in the
terminal reaches faasprof alone, which then stops the tool itself once the run's last interval is
in. The price: when faasprof dies without stopping it, nothing else signals the tool, and perf went
on writing into the run directory for the rest of its ``--interval-count`` (found by killing a run
with ``kill -9``: perf ran on for the run's planned length).

The reaper is a small process of its own (its own session, SIGINT ignored, so a Ctrl-C meant for
faasprof leaves it alone) whose stdin is a pipe from faasprof. Each tool's process group is
announced as the tool starts (``watch``, with the signal that stops it) and withdrawn once faasprof
has stopped it (``unwatch``). The pipe ends when faasprof exits, however it exits; the reaper then
stops every group still announced, as faasprof would have (the tool's own signal, then SIGTERM,
then SIGKILL, waiting between), says so on stderr, and exits. A faasprof that stopped its tools
leaves nothing announced, and the reaper exits without a word.

Standard library only: the reaper runs as ``python -I -S reaper.py``, importing nothing of faasprof.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

# Each signal and how long the group has to end after it (a tool's own signal: perf writes its last
# interval; the collectors' STOP_WAIT_S).
_ESCALATION_WAIT_S = (5.0, 2.0, 2.0)
_POLL_S = 0.05


class Reaper:
    """faasprof's side: the pipe to one reaper process, started at the first ``watch``."""

    def __init__(self) -> None:
        self._process: subprocess.Popen | None = None
        self._lock = threading.Lock()

    def watch(self, pgid: int, stop_signal: int = signal.SIGINT) -> None:
        """Stop process group ``pgid`` with ``stop_signal`` (then SIGTERM, SIGKILL) if faasprof ends
        before ``unwatch(pgid)``."""
        self._send(f"watch {int(pgid)} {int(stop_signal)}\n", start=True)

    def unwatch(self, pgid: int) -> None:
        """faasprof stopped (or saw the end of) group ``pgid``: the reaper leaves it alone."""
        self._send(f"unwatch {int(pgid)}\n", start=False)

    def _send(self, line: str, start: bool) -> None:
        with self._lock:
            if self._process is None or self._process.poll() is not None:
                if not start:
                    return
                # -I -S: the reaper is this one file, standard library only; its stderr is faasprof's.
                self._process = subprocess.Popen(
                    [sys.executable, "-I", "-S", os.path.abspath(__file__)],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.DEVNULL,
                    start_new_session=True,
                )
            assert self._process.stdin is not None
            try:
                self._process.stdin.write(line.encode("ascii"))
                self._process.stdin.flush()
            except BrokenPipeError:  # the reaper died (killed by hand): the next watch starts another
                self._process = None

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None


# The one reaper of this faasprof process: the pipe must end exactly when the process does.
REAPER = Reaper()


def _group_alive(pgid: int) -> bool:
    """Whether group ``pgid`` has a member that is not a zombie (a dead tool whose parent has not
    reaped it yet still counts for ``killpg``, and is as stopped as it will be)."""
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):  # gone, or another user's group now: not ours
        return False
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue  # ended meanwhile
        # After the command's closing parenthesis: state, ppid, pgrp.
        if len(fields) > 2 and fields[2] == str(pgid).encode() and fields[0] != b"Z":
            return True
    return False


def stop_group(pgid: int, first_signal: int) -> str:
    """Signal group ``pgid`` with ``first_signal``, SIGTERM, SIGKILL until it is gone; which ended it."""
    for sig, wait_s in zip((first_signal, signal.SIGTERM, signal.SIGKILL), _ESCALATION_WAIT_S):
        if not _group_alive(pgid):
            return "gone already"
        try:
            os.killpg(pgid, sig)
        except (ProcessLookupError, PermissionError):
            return "gone already"
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            if not _group_alive(pgid):
                return signal.Signals(sig).name
            time.sleep(_POLL_S)
    return "still running after SIGKILL" if _group_alive(pgid) else "SIGKILL"


def serve(lines) -> dict[int, str]:
    """Read ``watch``/``unwatch`` lines until they end, then stop what is still watched; returns
    each group stopped and what ended it."""
    watched: dict[int, int] = {}
    for raw in lines:
        words = raw.split()
        try:
            if len(words) == 3 and words[0] == "watch":
                watched[int(words[1])] = int(words[2])
            elif len(words) == 2 and words[0] == "unwatch":
                watched.pop(int(words[1]), None)
        except ValueError:
            continue  # not a line faasprof writes; nothing to act on
    return {pgid: stop_group(pgid, sig) for pgid, sig in sorted(watched.items())}


def main() -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    stopped = serve(line.decode("ascii", "replace") for line in sys.stdin.buffer)
    for pgid, how in stopped.items():
        print(
            f"faasprof reaper: process group {pgid} of a collector was still running after faasprof ended "
            f"without stopping it: stopped ({how})",
            file=sys.stderr,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
