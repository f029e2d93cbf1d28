"""Per-sandbox cgroups (v1: cpu, memory, freezer; v2: unified), or the rlimit fallback.

OpenWhisk gives every container ``--memory M --memory-swap M --cpu-shares S`` and pauses it with
the cgroup freezer (runc/docker pause). localwhisk does the same with one cgroup per sandbox
under an instance parent ``localwhisk-<instance>``. Parents left behind by a crashed instance
(their owning pid no longer alive) are removed at start. Where no hierarchy is writable the
sandboxes are paused with SIGSTOP/SIGCONT to the process group and limited by rlimits.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from faasprof.procfs import kill_all, pid_alive

V1_CONTROLLERS = ("cpu", "memory", "freezer")
# Joined too when mounted and writable, so monitoring can read CPU time (cpuacct, which this
# host mounts apart from cpu) and block I/O per sandbox. Not required for isolation.
# pids (where mounted) holds max_sandbox_processes per sandbox, as docker run --pids-limit.
V1_OPTIONAL = ("cpuacct", "blkio", "pids")
PARENT_PREFIX = "localwhisk-"


def _writable_dir(path: Path) -> bool:
    probe = path / f"{PARENT_PREFIX}probe-{os.getpid()}"
    try:
        probe.mkdir()
    except OSError:
        return False
    try:
        probe.rmdir()
    except OSError:
        pass
    return True


def detect(root: Path = Path("/sys/fs/cgroup")) -> tuple[str, dict[str, Path]]:
    """Which isolation this host allows: ("cgroup-v1", {controller: dir}), ("cgroup-v2", ...) or ("rlimit", {})."""
    v1 = {c: root / c for c in V1_CONTROLLERS}
    if all((d / "cgroup.procs").exists() for d in v1.values()) and all(_writable_dir(d) for d in v1.values()):
        for controller in V1_OPTIONAL:
            d = root / controller
            # Skip a controller co-mounted with a required one (e.g. cpu,cpuacct): it is the same directory.
            if (
                (d / "cgroup.procs").exists()
                and not any(d.resolve() == r.resolve() for r in v1.values())
                and _writable_dir(d)
            ):
                v1[controller] = d
        return "cgroup-v1", v1
    if (root / "cgroup.controllers").exists():
        controllers = (root / "cgroup.controllers").read_text().split()
        if {"cpu", "memory"} <= set(controllers) and _writable_dir(root):
            return "cgroup-v2", {"unified": root}
    return "rlimit", {}


def _remove_tree(path: Path, kill: bool = True) -> None:
    """Remove a cgroup directory bottom-up, killing what is left inside (thawing it first)."""
    if not path.is_dir():
        return
    for child in sorted((p for p in path.iterdir() if p.is_dir()), reverse=True):
        _remove_tree(child, kill)
    if kill:
        # v1 freezer, v2 cgroup.freeze: a frozen task holds a pending SIGKILL until thawed.
        _try_write(path / "freezer.state", "THAWED", only_if_present=True)
        _try_write(path / "cgroup.freeze", "0", only_if_present=True)
        _kill_members(path)
    for _ in range(50):
        try:
            path.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.01)


def _kill_members(path: Path) -> None:
    """SIGKILL the processes in a cgroup until none is left (a forking one may add more)."""
    for _ in range(50):
        try:
            pids = [int(p) for p in (path / "cgroup.procs").read_text().split()]
        except OSError:
            pids = []
        if not pids:
            return
        kill_all(pids)
        time.sleep(0.01)


class CgroupManager:
    """Creates, limits, freezes and removes sandbox cgroups for one localwhisk instance."""

    def __init__(
        self,
        mode: str,
        roots: dict[str, Path],
        instance: str,
        user_memory_mb: int,
        cpu_policy: str,
        user_cpus: float,
        max_processes: int = 0,
    ):
        self.mode = mode
        self.max_processes = max_processes  # pids.max per sandbox; 0: none
        self.roots = roots
        self.instance = instance
        self.user_memory_mb = user_memory_mb
        self.cpu_policy = cpu_policy
        self.user_cpus = user_cpus or float(os.cpu_count() or 1)
        self.parents: dict[str, Path] = {c: r / f"{PARENT_PREFIX}{instance}" for c, r in roots.items()}

    @property
    def enabled(self) -> bool:
        return self.mode.startswith("cgroup")

    def cleanup_stale(self) -> list[str]:
        """Remove parents of instances whose pid is gone (named localwhisk-<pid>-...)."""
        removed = []
        for root in self.roots.values():
            for path in root.glob(f"{PARENT_PREFIX}*"):
                parts = path.name[len(PARENT_PREFIX) :].split("-")
                if not parts or not parts[0].isdigit() or path.name.startswith(f"{PARENT_PREFIX}probe"):
                    continue
                if int(parts[0]) != os.getpid() and not pid_alive(int(parts[0])):
                    _remove_tree(path)
                    removed.append(str(path))
        return removed

    def setup(self) -> None:
        for controller, parent in self.parents.items():
            parent.mkdir(exist_ok=True)
            if self.mode == "cgroup-v2":
                try:
                    (self.roots[controller] / "cgroup.subtree_control").write_text("+cpu +memory")
                    (parent / "cgroup.subtree_control").write_text("+cpu +memory")
                    _try_write(self.roots[controller] / "cgroup.subtree_control", "+pids")
                    _try_write(parent / "cgroup.subtree_control", "+pids")
                except OSError:
                    pass

    def cpu_shares(self, memory_mb: int) -> int:
        # OpenWhisk ContainerFactory.cpuShare: max(1024 / (userMemory / actionMemory), 2), integer division.
        return max(1024 // max(self.user_memory_mb // max(memory_mb, 1), 1), 2)

    def cpu_quota_us(self, memory_mb: int, period_us: int = 100000) -> int:
        # Lambda-like policy (OpenWhisk --cpus with user-cpus): cpus = userCpus * mem / userMemory, min 0.01.
        cpus = max(self.user_cpus * memory_mb / self.user_memory_mb, 0.01)
        return max(int(cpus * period_us), 1000)

    def create(self, name: str, memory_mb: int) -> dict[str, Path]:
        """Make the sandbox's cgroups with limits set; returns {controller: dir}."""
        dirs = {c: p / name for c, p in self.parents.items()}
        limit = str(memory_mb * 1024 * 1024)
        if self.mode == "cgroup-v1":
            for d in dirs.values():
                d.mkdir(exist_ok=True)
            mem = dirs["memory"]
            # Charge the launcher's start-up pages to the sandbox when it is moved in.
            _try_write(mem / "memory.move_charge_at_immigrate", "3")
            _try_write(mem / "memory.swappiness", "0")
            (mem / "memory.limit_in_bytes").write_text(limit)
            _try_write(mem / "memory.memsw.limit_in_bytes", limit)  # --memory-swap = --memory
            if self.cpu_policy == "quota":
                (dirs["cpu"] / "cpu.cfs_period_us").write_text("100000")
                (dirs["cpu"] / "cpu.cfs_quota_us").write_text(str(self.cpu_quota_us(memory_mb)))
            else:
                (dirs["cpu"] / "cpu.shares").write_text(str(self.cpu_shares(memory_mb)))
            if "pids" in dirs and self.max_processes:
                (dirs["pids"] / "pids.max").write_text(str(self.max_processes))
        else:
            d = dirs["unified"]
            d.mkdir(exist_ok=True)
            (d / "memory.max").write_text(limit)
            _try_write(d / "memory.swap.max", "0")
            if self.cpu_policy == "quota":
                (d / "cpu.max").write_text(f"{self.cpu_quota_us(memory_mb)} 100000")
            else:
                # cgroup v2 weight 1..10000 ≈ shares * 100 / 1024 (the runc/systemd conversion).
                weight = max(1, min(10000, 1 + ((self.cpu_shares(memory_mb) - 2) * 9999) // 262142))
                _try_write(d / "cpu.weight", str(weight))
            if self.max_processes:
                _try_write(d / "pids.max", str(self.max_processes))
        return dirs

    def attach(self, dirs: dict[str, Path], pid: int) -> None:
        for d in dirs.values():
            (d / "cgroup.procs").write_text(str(pid))

    def freeze(self, dirs: dict[str, Path]) -> None:
        if self.mode == "cgroup-v1":
            (dirs["freezer"] / "freezer.state").write_text("FROZEN")
        else:
            (dirs["unified"] / "cgroup.freeze").write_text("1")

    def thaw(self, dirs: dict[str, Path]) -> None:
        if self.mode == "cgroup-v1":
            (dirs["freezer"] / "freezer.state").write_text("THAWED")
        else:
            (dirs["unified"] / "cgroup.freeze").write_text("0")

    def oom_killed(self, dirs: dict[str, Path]) -> bool:
        """True if the kernel OOM-killed something in this sandbox's memory cgroup."""
        try:
            if self.mode == "cgroup-v1":
                text = (dirs["memory"] / "memory.oom_control").read_text()
            else:
                text = (dirs["unified"] / "memory.events").read_text()
        except OSError:
            return False
        for line in text.splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill" and value.strip().isdigit() and int(value) > 0:
                return True
        return False

    def memory_usage_bytes(self, dirs: dict[str, Path]) -> int | None:
        try:
            if self.mode == "cgroup-v1":
                return int((dirs["memory"] / "memory.usage_in_bytes").read_text())
            return int((dirs["unified"] / "memory.current").read_text())
        except (OSError, ValueError):
            return None

    def remove(self, dirs: dict[str, Path]) -> None:
        for d in dirs.values():
            _remove_tree(d)

    def teardown(self) -> None:
        for parent in self.parents.values():
            _remove_tree(parent)

    def describe(self) -> dict:
        return {c: str(p) for c, p in self.parents.items()}


def _try_write(path: Path, value: str, only_if_present: bool = False) -> None:
    """Write a cgroup file where the kernel allows; ``only_if_present``: never create it."""
    if only_if_present and not path.exists():
        return
    try:
        path.write_text(value)
    except OSError:
        pass
