"""A user of its own per process sandbox, and the process limit that goes with it (issue 44).

When the server runs as root, each process sandbox runs as a fresh unprivileged uid (and gid)
taken from a range no account uses: ``UID_BASE + (server pid % 100000) * UIDS_PER_SERVER +
n``. The launcher drops to it after making its private /tmp. An action then cannot read another
sandbox's files (its folder is 0700 and its own), its /tmp through ``/proc/<pid>/root`` (another
user's process), the server's environment (``/proc/<ppid>/environ``: root's) or /etc/shadow;
``RLIMIT_NPROC``, counted per user, becomes a limit per sandbox; and every process of that uid,
a double-forked daemon too, is killed when the sandbox goes. The sandboxes' folders lie in a
folder of their own under /tmp (0711), since the data directory's parents (/root) are closed to
other users. An interpreter under a folder closed to other users is reached through the
sandbox's mount namespace (the launcher's ``reach_interpreter``); where the host refuses one,
python sandboxes do not start (``python_refused``): none runs as root. Without root none of this
is possible: the server says so once at start, and a sandbox's ``RLIMIT_NPROC`` is shared with
the server's user (``shared_process_limit``) (docs/security.md). What a sandbox leaves when it
goes is removed here too (``remove_sandbox``), and its pid file written for ``reap_orphans``.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from faasprof.localwhisk.cgroups import CgroupManager
from faasprof.procfs import kill_all, process_start_ticks

CLONE_NEWNS = 0x00020000  # unshare(2): a mount namespace of its own
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


def mount_namespace_allowed() -> bool:
    """Whether this host lets a process make a mount namespace of its own (a container without
    CAP_SYS_ADMIN does not): asked of a short-lived child, since the answer changes the asker."""
    probe = "import ctypes, sys; sys.exit(ctypes.CDLL(None, use_errno=True).unshare(%d) != 0)" % CLONE_NEWNS
    try:
        return subprocess.run([sys.executable, "-S", "-c", probe], timeout=30, check=False).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def python_refused(python: str) -> str | None:
    """Why python sandboxes of a root server cannot start, or None. A sandbox drops to its own
    user after start-up; an interpreter under a folder closed to other users (a venv or pyenv
    under /root) is then reached through the sandbox's mount namespace (the launcher's
    ``reach_interpreter``). Where the host refuses one, a sandbox would have to run as root:
    localwhisk never does that, and says so once, here."""
    try:
        closed = closed_to_others(python)
    except OSError as error:
        return f"python sandboxes cannot start: their interpreter {python}: {error}"
    if closed is None or mount_namespace_allowed():
        return None
    return (
        f"python sandboxes cannot start: their interpreter {python} lies under {closed}, which other users cannot "
        "reach, and this host refuses a mount namespace to open the way (no CAP_SYS_ADMIN); localwhisk never runs "
        "an action as root: pass --python with an interpreter others can read (e.g. /usr/bin/python3)"
    )


def available() -> bool:
    """Whether sandboxes can get users of their own (the server is root)."""
    return os.geteuid() == 0


def uids_of(server_pid: int) -> range:
    """The uids a server with this pid gives its sandboxes."""
    first = UID_BASE + (server_pid % 100_000) * UIDS_PER_SERVER
    return range(first, first + UIDS_PER_SERVER)


def _all_processes(with_threads: bool = False) -> list[tuple[int, int, int]]:
    """(real uid, pid, threads) of every process; threads is 0 unless asked for."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        uid, threads = -1, 0
        try:
            with open(f"/proc/{entry}/status", encoding="ascii", errors="replace") as handle:
                for line in handle:
                    if line.startswith("Uid:"):
                        uid = int(line.split()[1])
                        if not with_threads:
                            break
                    elif line.startswith("Threads:"):
                        threads = int(line.split()[1])
                        break
        except (OSError, ValueError, IndexError):
            continue
        if uid >= 0:
            found.append((uid, int(entry), threads))
    return found


def threads_of(uid: int) -> int:
    """How many threads the processes of real uid ``uid`` run: what ``RLIMIT_NPROC`` counts."""
    return sum(threads for owner, _, threads in _all_processes(with_threads=True) if owner == uid)


def shared_process_limit(max_processes: int, uid: int | None = None) -> int:
    """``RLIMIT_NPROC`` for a sandbox that runs as the server's own user (it is not root, and has
    no pids cgroup): the limit counts every thread of that user, so it is set at what the user
    runs now plus the sandbox's share. A fork bomb stops there; the server, whose own limit is
    unchanged, keeps starting threads and sandboxes (docs/security.md)."""
    return threads_of(os.getuid() if uid is None else uid) + max_processes


def processes_of(uid: int) -> list[int]:
    """The pids whose real uid is ``uid``."""
    return [pid for owner, pid, _ in _all_processes() if owner == uid]


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

    def __init__(self, python: str, server_pid: int | None = None):
        self.server_pid = server_pid if server_pid is not None else os.getpid()
        # None when python sandboxes can run as users of their own, else why they cannot start.
        self.python_refused = python_refused(python)
        self.uids = uids_of(self.server_pid)
        self._next = 0
        remove_stale_homes()
        self.homes = Path(tempfile.mkdtemp(prefix=f"{HOMES_PREFIX}{self.server_pid}-"))
        os.chmod(self.homes, 0o711)  # others may pass through to their own folder, not list it

    def allocate(self) -> int:
        """A uid no live sandbox of this server has (its leftovers, if any, are killed first)."""
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
        pids = [pid for uid, pid, _ in _all_processes() if uid in uids]
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


def remove_sandbox(
    cgroups: CgroupManager, dirs: dict[str, Path], workdir: Path, pid_file: Path, uid: int | None
) -> None:
    """What a sandbox leaves once its launcher has exited: its user's processes, its cgroups, its
    folders and its pid file."""
    if uid is not None:  # the launcher is gone; a daemon it started is not, until now
        kill_user(uid)
    if dirs:
        cgroups.remove(dirs)
    shutil.rmtree(workdir, ignore_errors=True)
    shutil.rmtree(workdir.parent / f"{workdir.name}.tmp", ignore_errors=True)
    try:
        pid_file.unlink()
    except OSError:
        pass


def write_pid_file(path: Path, pid: int, uid: int | None) -> None:
    """The pid file ``reap_orphans`` reads after a crash: pid, start time and user."""
    try:
        path.write_text(f"{pid} {process_start_ticks(pid)}" + (f" {uid}" if uid is not None else "") + "\n")
    except OSError:
        pass
