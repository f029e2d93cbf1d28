"""A user of its own per process sandbox, and the process limit that goes with it (issue 44).

When the server runs as root, each process sandbox runs as a fresh unprivileged uid (and gid)
taken from a range no account uses: ``UID_BASE + (server pid % 100000) * UIDS_PER_SERVER +
n``. The launcher drops to it after making its private /tmp. An action then cannot read another
sandbox's files (its folder is 0700 and its own), its /tmp through ``/proc/<pid>/root`` (another
user's process), the server's environment (``/proc/<ppid>/environ``: root's) or /etc/shadow;
``RLIMIT_NPROC``, counted per user, becomes a limit per sandbox; and every process of that uid,
a double-forked daemon too, is killed when the sandbox goes. The sandboxes' folders lie in a
folder of their own under /tmp (0711), since the data directory's parents (/root) are closed to
other users. Without root none of this is possible: the server says so once at start
(docs/security.md).
"""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import tempfile
import time
from pathlib import Path

from faasprof.procfs import kill_all, process_start_ticks

UID_BASE = 1_900_000_000
UIDS_PER_SERVER = 1000
HOMES_PREFIX = "localwhisk-homes-"
NOT_ROOT_WARNING = (
    "process sandboxes run as the server's own user (it is not root): an action can read other actions' "
    "files, the server's environment and everything this user can; run as root for a user per sandbox, "
    "or use --isolation docker (docs/security.md)"
)


def closed_to_others(path: str) -> str | None:
    """The first folder on ``path``'s way (or the file itself) that other users cannot pass
    through or read, or None when a sandbox user can run it."""
    real = Path(os.path.realpath(path))
    for folder in reversed(real.parents):
        if not os.stat(folder).st_mode & 0o001:
            return str(folder)
    if not os.stat(real).st_mode & 0o004:
        return str(real)
    return None


def available() -> bool:
    """Whether sandboxes can get users of their own (the server is root)."""
    return os.geteuid() == 0


def uids_of(server_pid: int) -> range:
    """The uids a server with this pid gives its sandboxes."""
    first = UID_BASE + (server_pid % 100_000) * UIDS_PER_SERVER
    return range(first, first + UIDS_PER_SERVER)


def _all_processes() -> list[tuple[int, int]]:
    """(real uid, pid) of every process."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status", encoding="ascii", errors="replace") as handle:
                for line in handle:
                    if line.startswith("Uid:"):
                        found.append((int(line.split()[1]), int(entry)))
                        break
        except (OSError, ValueError, IndexError):
            continue
    return found


def processes_of(uid: int) -> list[int]:
    """The pids whose real uid is ``uid``."""
    return [pid for owner, pid in _all_processes() if owner == uid]


def kill_user(uid: int, rounds: int = 20) -> int:
    """SIGKILL every process of ``uid`` until none is left (a forking one may add more while it
    runs); returns how many were killed."""
    killed = 0
    for _ in range(rounds):
        pids = processes_of(uid)
        if not pids:
            break
        killed += kill_all(pids)
    return killed


class SandboxUsers:
    """Hands out the uids of one server's sandboxes and the folder their homes live in."""

    def __init__(self, interpreters: dict[str, str], server_pid: int | None = None):
        self.server_pid = server_pid if server_pid is not None else os.getpid()
        # Per runtime family: None when its sandboxes can run as users of their own, else why not.
        self.refused: dict[str, str | None] = {}
        for family, program in interpreters.items():
            try:
                closed = closed_to_others(program)
            except OSError as error:
                closed = str(error)
            self.refused[family] = (
                None
                if closed is None
                else f"{family} sandboxes run as the server's user: its interpreter {program} is not readable by other "
                f"users ({closed} is closed to them); give one they can read (--{family} /usr/bin/...) for a user per sandbox"
            )
        self.uids = uids_of(self.server_pid)
        self._next = 0
        remove_stale_homes()
        self.homes = Path(tempfile.mkdtemp(prefix=f"{HOMES_PREFIX}{self.server_pid}-"))
        os.chmod(self.homes, 0o711)  # others may pass through to their own folder, not list it

    def allocate(self, family: str) -> int | None:
        """A uid no live sandbox of this server has (its leftovers, if any, are killed first); None
        where the family's interpreter cannot run as another user."""
        if self.refused.get(family):
            return None
        uid = self.uids[self._next % len(self.uids)]
        self._next += 1
        if self._next > len(self.uids):  # used before: its sandbox is gone, make sure all of it is
            kill_user(uid)
        return uid

    def close(self) -> None:
        for uid in self.uids[: min(self._next, len(self.uids))]:
            kill_user(uid)
        shutil.rmtree(self.homes, ignore_errors=True)


def own(path: Path, uid: int) -> None:
    """Give ``path`` (a sandbox's folder, recursively) to the sandbox's user, private to it."""
    os.chown(path, uid, uid)
    os.chmod(path, 0o700)
    for root, dirs, files in os.walk(path):
        for name in dirs + files:
            try:
                os.lchown(os.path.join(root, name), uid, uid)
            except OSError:
                pass


def remove_stale_homes() -> None:
    """Remove the home folders (and kill the users) of servers that are gone (killed with -9)."""
    for path in Path(tempfile.gettempdir()).glob(f"{HOMES_PREFIX}*"):
        pid_text = path.name[len(HOMES_PREFIX) :].split("-")[0]
        if not pid_text.isdigit() or Path(f"/proc/{pid_text}").exists():
            continue
        _kill_range(uids_of(int(pid_text)))
        shutil.rmtree(path, ignore_errors=True)


def _kill_range(uids: range) -> None:
    for _ in range(20):
        pids = [pid for uid, pid in _all_processes() if uid in uids]
        if not pids:
            return
        kill_all(pids)


# prctl(2) option: orphans among this process's descendants are re-parented to it, not to init.
PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> bool:
    """Adopt what an action's processes leave behind (a double-forked daemon leaves its process
    group and session, but not its subreaper), so that ``kill_adopted`` finds it at stop."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _children() -> set[int]:
    found: set[int] = set()
    try:
        for task in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{task}/children", encoding="ascii") as handle:
                found.update(int(word) for word in handle.read().split())
    except (OSError, ValueError):
        pass
    return found


def _state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            return handle.read().rpartition(")")[2].split()[0]
    except (OSError, IndexError):
        return ""


def reap_adopted(keep: set[int]) -> None:
    """Collect the exit of adopted processes that ended (not those in ``keep``: sandboxes whose
    exit their own handler reads)."""
    for pid in _children() - keep:
        if _state(pid) == "Z":
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass


def kill_adopted(keep: set[int], rounds: int = 50) -> int:
    """SIGKILL every child of this process but ``keep`` (what sandboxes left), and what they
    leave in turn (re-parented to us as they die); returns how many were killed."""
    killed = 0
    for _ in range(rounds):
        pids = {pid for pid in _children() - keep if _state(pid) not in ("Z", "")}
        reap_adopted(keep)
        if not pids:
            break
        killed += kill_all(pids)
        time.sleep(0.01)
    reap_adopted(keep)
    return killed


def reap_orphans(workroot: Path) -> list[int]:
    """Kill the sandboxes a crashed (kill -9) instance left in ``workroot``; returns their pids.

    Each sandbox leads its own process group; a paused one (SIGSTOP) would otherwise stay stopped
    forever. SIGKILL ends even a stopped process; SIGCONT follows for good measure. A sandbox
    frozen in its cgroup is thawed first: a frozen task holds a pending SIGKILL until thawed. Used
    at a server's start and by the embedded platform's handle right after its server died.
    """
    reaped = []
    for pid_file in sorted(Path(workroot).glob("*.pid")):
        try:
            pid, started, *uid = (int(word) for word in pid_file.read_text().split())
        except (OSError, ValueError):  # unreadable, or "None": the sandbox was gone when written
            continue
        if uid:  # a sandbox with a user of its own: all of that user's processes go
            kill_user(uid[0])
        if pid <= 1 or process_start_ticks(pid) != started:
            continue  # gone, or the pid now belongs to another process
        try:
            _thaw((Path("/proc") / str(pid) / "cgroup").read_text())
        except OSError:
            pass
        for sig in (signal.SIGKILL, signal.SIGCONT):
            try:
                os.killpg(pid, sig)
            except OSError:
                pass
        reaped.append(pid)
    return reaped


def _thaw(proc_cgroup: str) -> None:
    """Thaw the freezer cgroup (v1) or the frozen unified cgroup (v2) named in /proc/PID/cgroup."""
    for line in proc_cgroup.splitlines():
        _, controllers, path = line.split(":", 2)
        if "freezer" in controllers.split(","):
            target = Path("/sys/fs/cgroup/freezer") / path.lstrip("/") / "freezer.state"
            value = "THAWED"
        elif controllers == "":
            target = Path("/sys/fs/cgroup") / path.lstrip("/") / "cgroup.freeze"
            value = "0"
        else:
            continue
        try:
            target.write_text(value)
        except OSError:
            pass
