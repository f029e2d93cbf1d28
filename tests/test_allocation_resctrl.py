"""Allocation through resctrl, against fake resctrl trees (tests/data/resctrl/, see its README).

A plain directory does not behave like resctrl (mkdir creates no files, rmdir of a group with
files fails, writes are not validated). ``KernelEmulation`` stands in for the kernel side of the
four operations ``faasprof.monitoring.allocation`` performs (``ResctrlFs``), following
Documentation/arch/x86/resctrl.rst: a new group gets its files and the default schemata; a
schemata write is checked (mask in range, contiguous, min_cbm_bits; MB in [min, 100], rounded up
to the next step) and merged, and the file then reads back in the kernel's format (zero-padded
masks, space-padded MB values); writing ``cpus_list`` moves those CPUs out of every other group;
rmdir hands the group's CPUs back to the default group; failures set ``info/last_cmd_status``.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from faasprof.errors import NotReadyError, RunError
from faasprof.monitoring import allocation as al
from faasprof.monitoring.allocation import resctrl as resctrl_backend

DATA = Path(__file__).resolve().parent / "data" / "resctrl"
TESTS_DIR = Path(__file__).resolve().parent


class KernelEmulation(al.ResctrlFs):
    """The kernel's side of mkdir/rmdir/write on a fake resctrl tree (see the module docstring)."""

    def __init__(self, resctrl: Path):
        self.resctrl = Path(resctrl)
        self.before_rmdir = None  # hook: called with the path before a group is removed
        self.before_write = None  # hook: called with the path before a file is written
        info = self.resctrl / "info"
        l3 = info / "L3" if (info / "L3").is_dir() else info / "L3DATA"  # L3DATA/L3CODE under -o cdp
        self.cbm_mask = int((l3 / "cbm_mask").read_text(), 16) if l3.is_dir() else None
        self.min_cbm_bits = int((l3 / "min_cbm_bits").read_text()) if self.cbm_mask else 0
        self.sparse = (l3 / "sparse_masks").exists() and (l3 / "sparse_masks").read_text().strip() == "1"
        self.has_mb = (info / "MB").is_dir()
        self.min_bw = int((info / "MB" / "min_bandwidth").read_text()) if self.has_mb else None
        self.gran = int((info / "MB" / "bandwidth_gran").read_text()) if self.has_mb else None
        counts = [int((info / r / "num_closids").read_text()) for r in ("L3", "L3DATA", "MB") if (info / r).is_dir()]
        self.num_closids = min(counts)
        self.default_schemata = (self.resctrl / "schemata").read_text()

    def _status(self, text: str) -> None:
        (self.resctrl / "info" / "last_cmd_status").write_text(text + "\n")

    def _fail(self, text: str, code: int = errno.EINVAL) -> None:
        self._status(text)
        raise OSError(code, os.strerror(code))

    def groups(self) -> list[Path]:
        return [p for p in self.resctrl.iterdir() if p.is_dir() and p.name not in ("info", "mon_groups", "mon_data")]

    def mkdir(self, path: Path) -> None:
        path = Path(path)
        assert path.parent == self.resctrl, "only top-level CTRL_MON groups are emulated"
        if path.exists():
            raise FileExistsError(errno.EEXIST, "File exists", str(path))
        if len(self.groups()) + 1 >= self.num_closids:  # the default group holds one CLOSID
            self._fail("out of CLOSIDs", errno.ENOSPC)
        path.mkdir()
        for name, text in (("cpus", "0\n"), ("cpus_list", "\n"), ("mode", "shareable\n"), ("tasks", "")):
            (path / name).write_text(text)
        (path / "schemata").write_text(self.default_schemata)
        self._status("ok")

    def rmdir(self, path: Path) -> None:
        path = Path(path)
        if self.before_rmdir:
            self.before_rmdir(path)
        cpus = set(al.parse_cpu_list((path / "cpus_list").read_text()))
        default = set(al.parse_cpu_list((self.resctrl / "cpus_list").read_text()))
        self._set_cpus(self.resctrl, default | cpus)
        shutil.rmtree(path)

    def read(self, path: Path) -> str:
        return Path(path).read_text()

    def write(self, path: Path, text: str) -> None:
        path = Path(path)
        if self.before_write:
            self.before_write(path)
        if path.name == "schemata":
            self._write_schemata(path, text)
        elif path.name == "cpus_list":
            cpus = set(al.parse_cpu_list(text))
            for group in [self.resctrl, *self.groups()]:
                if group != path.parent:
                    others = set(al.parse_cpu_list((group / "cpus_list").read_text()))
                    self._set_cpus(group, others - cpus)
            if path.parent != self.resctrl:
                self._set_cpus(path.parent, cpus)
            else:  # a CPU can only leave the default group by joining another one
                self._set_cpus(self.resctrl, cpus | set(al.parse_cpu_list((self.resctrl / "cpus_list").read_text())))
            self._status("ok")
        else:
            path.write_text(text)

    @staticmethod
    def _set_cpus(group: Path, cpus: set[int]) -> None:
        (group / "cpus_list").write_text(al.format_cpu_list(cpus) + "\n")
        (group / "cpus").write_text(f"{sum(1 << c for c in cpus):x}\n")

    def _write_schemata(self, path: Path, text: str) -> None:
        current = al.parse_schemata(path.read_text())
        for line in text.splitlines():
            if not line.strip():
                continue
            name, _, rest = line.partition(":")
            name = name.strip()
            if name not in current:
                self._fail(f"Unknown or unsupported resource name '{name}'")
            for dom, value in (part.split("=") for part in rest.strip().strip(";").split(";")):
                dom = int(dom)
                if dom not in current[name]:
                    self._fail(f"Unknown domain {dom}")
                if name.startswith("L3"):
                    val = int(value, 16)
                    if (self.min_cbm_bits > 0 and val == 0) or val > self.cbm_mask:
                        self._fail("Mask out of range")
                    if not self.sparse and not al.mask_is_contiguous(val):
                        self._fail(f"The mask {val:x} has non-consecutive 1-bits")
                    if bin(val).count("1") < self.min_cbm_bits:
                        self._fail(f"Need at least {self.min_cbm_bits} bits in the mask")
                    current[name][dom] = f"{val:x}"
                else:
                    bw = int(value)
                    if bw < self.min_bw or bw > 100:
                        self._fail(f"MB value {bw} out of range [{self.min_bw},100]")
                    current[name][dom] = str(self.min_bw + -(-(bw - self.min_bw) // self.gran) * self.gran)
        width = max(len(n) for n in current)
        lines = []
        for name, values in current.items():
            if name.startswith("L3"):
                digits = (self.cbm_mask.bit_length() + 3) // 4
                body = ";".join(f"{d}={int(v, 16):0{digits}x}" for d, v in sorted(values.items()))
            else:
                body = ";".join(f"{d}={int(v):3d}" for d, v in sorted(values.items()))
            lines.append(f"{name:>{width}}:{body}")
        path.write_text("\n".join(lines) + "\n")
        self._status("ok")


def copy_tree(tmp_path: Path, name: str) -> Path:
    root = tmp_path / name
    shutil.copytree(DATA / name, root)
    return root


@pytest.fixture
def state_dir(tmp_path):
    return tmp_path / "state"


@pytest.fixture
def host20(tmp_path):
    root = copy_tree(tmp_path, "xeon-20way-mba")
    caps = al.discover(root)
    return root, caps, KernelEmulation(caps.resctrl_path)


@pytest.fixture
def host11(tmp_path):
    root = copy_tree(tmp_path, "xeon-11way")
    caps = al.discover(root)
    return root, caps, KernelEmulation(caps.resctrl_path)


def cpus_of(group: Path) -> str:
    return (group / "cpus_list").read_text().strip()


# ---------------------------------------------------------------------------------------------
# discovery


def test_discover_11way_cat_only(host11):
    _root, caps, _fs = host11
    assert caps.interface == "resctrl"
    assert (caps.l3.num_ways, caps.l3.cbm_mask, caps.l3.num_closids) == (11, 0x7FF, 16)
    assert caps.l3.shareable_bits == 0x600 and caps.l3.cache_ids == (0,)
    assert caps.mb is None
    described = caps.describe()
    assert described["l3"]["ways"] == 11 and described["num_closids"] == 16 and described["mb"] is None
    json.dumps(described)


def test_discover_20way_with_mba(host20):
    _root, caps, _fs = host20
    assert caps.l3.num_ways == 20 and caps.l3.cache_ids == (0, 1)
    assert (caps.mb.min_percent, caps.mb.granularity_percent, caps.mb.delay_linear) == (10, 10, True)
    assert caps.mb.thread_throttle_mode == "max"
    assert caps.num_closids == 8  # the kernel uses the smallest count of the enabled resources
    assert caps.online_cpus == tuple(range(16))


def test_no_rdt_host_is_not_ready(tmp_path, monkeypatch):
    root = copy_tree(tmp_path, "no-rdt")
    monkeypatch.setenv("PATH", str(tmp_path))  # no pqos either
    caps = al.discover(root)
    assert caps.interface is None
    assert "rdt_a" in caps.reason and "RDT-capable" in caps.reason
    with pytest.raises(NotReadyError) as info:
        al.plan_allocation(caps, llc_ways=4)
    assert "\n" not in str(info.value) and "llc_ways" in str(info.value)
    with pytest.raises(NotReadyError):
        al.check_sweep_values(caps, llc_ways=[4, 2])
    with pytest.raises(NotReadyError):
        al.Allocation(caps, al.AllocationPlan(l3_mask=1, mba_percent=None, cpus=(0,)))
    assert al.discover(root).describe()["interface"] is None
    forced = al.discover(root, interface="resctrl")
    assert "CONFIG_X86_CPU_RESCTRL" in forced.reason


def test_resctrl_known_but_not_mounted_says_how_to_mount(tmp_path, monkeypatch):
    root = copy_tree(tmp_path, "xeon-11way")
    mounts = root / "proc" / "mounts"
    mounts.write_text("".join(line for line in mounts.read_text().splitlines(True) if "resctrl" not in line))
    monkeypatch.setenv("PATH", str(tmp_path))
    caps = al.discover(root)
    assert caps.interface is None
    assert "mount -t resctrl resctrl /sys/fs/resctrl" in caps.reason and "pqos was not found" in caps.reason


def test_mba_mbps_mount_refuses_percentages(tmp_path):
    root = copy_tree(tmp_path, "xeon-20way-mba")
    mounts = root / "proc" / "mounts"
    mounts.write_text(mounts.read_text().replace("resctrl rw,relatime", "resctrl rw,relatime,mba_MBps"))
    caps = al.discover(root)
    assert caps.mb.mbps_mode
    with pytest.raises(NotReadyError, match="mba_MBps"):
        al.plan_allocation(caps, mba_percent=50)
    assert al.plan_allocation(caps, llc_ways=2).l3_mask == 0x3


def test_cdp_mount_writes_data_and_code_masks(tmp_path, state_dir):
    root = copy_tree(tmp_path, "xeon-11way")
    info = root / "sys" / "fs" / "resctrl" / "info"
    (info / "L3").rename(info / "L3DATA")
    shutil.copytree(info / "L3DATA", info / "L3CODE")
    (root / "sys" / "fs" / "resctrl" / "schemata").write_text("L3DATA:0=7ff\nL3CODE:0=7ff\n")
    caps = al.discover(root)
    assert caps.l3.cdp and caps.l3.num_ways == 11
    fs = KernelEmulation(caps.resctrl_path)
    with al.Allocation(caps, al.plan_allocation(caps, llc_ways=3), state_dir=state_dir, fs=fs) as alloc:
        text = (caps.resctrl_path / alloc.name / "schemata").read_text()
        assert "L3DATA:0=007" in text and "L3CODE:0=007" in text
        assert alloc.applied["llc_masks"] == {"0": "0x7"}


# ---------------------------------------------------------------------------------------------
# apply, read back, restore


def test_apply_reads_back_and_restores(host20, state_dir):
    _root, caps, fs = host20
    resctrl = caps.resctrl_path
    plan = al.plan_allocation(caps, llc_ways=4, mba_percent=35, control_plane_cpus=[0, 1])
    assert plan.mba_percent == 40 and any("rounded up to 40" in n for n in plan.notes)
    with al.Allocation(caps, plan, state_dir=state_dir, fs=fs, name="faasprof-test") as alloc:
        group = resctrl / "faasprof-test"
        assert group.is_dir()
        raw = (group / "schemata").read_text()
        assert "L3:0=0000f;1=0000f" in raw and "MB:0= 40;1= 40" in raw  # kernel formatting, parsed back
        assert alloc.applied["llc_masks"] == {"0": "0xf", "1": "0xf"}
        assert alloc.applied["llc_ways"] == {"0": 4, "1": 4}
        assert alloc.applied["mba_percent"] == {"0": 40, "1": 40}
        assert alloc.applied["cpus"] == "2-15" and alloc.applied["requested"]["mba_percent_requested"] == 35
        assert cpus_of(group) == "2-15" and cpus_of(resctrl) == "0-1"
        state_files = list(state_dir.glob("allocation-*.json"))
        assert len(state_files) == 1
        state = json.loads(state_files[0].read_text())
        assert state["stage"] == "applied" and state["group"] == "faasprof-test"
        json.dumps(alloc.applied)
    assert not group.exists()
    assert cpus_of(resctrl) == "0-15"
    assert list(state_dir.glob("*.json")) == []
    assert alloc.restore() == []  # safe twice


def test_default_group_name_carries_the_pid(host11, state_dir):
    _root, caps, fs = host11
    with al.Allocation(caps, al.plan_allocation(caps, llc_ways=2), state_dir=state_dir, fs=fs) as alloc:
        assert alloc.name == f"faasprof-{os.getpid()}"
        assert (caps.resctrl_path / alloc.name).is_dir()
        assert alloc.applied["llc_masks"] == {"0": "0x3"} and alloc.applied["mba_percent"] == {}


def test_restore_on_exception(host20, state_dir):
    _root, caps, fs = host20
    with pytest.raises(RuntimeError, match="boom"):
        with al.Allocation(caps, al.plan_allocation(caps, llc_ways=2), state_dir=state_dir, fs=fs, name="faasprof-x"):
            assert (caps.resctrl_path / "faasprof-x").is_dir()
            raise RuntimeError("boom")
    assert not (caps.resctrl_path / "faasprof-x").exists()
    assert cpus_of(caps.resctrl_path) == "0-15"
    assert list(state_dir.iterdir()) == []


def test_restore_on_keyboard_interrupt(host20, state_dir):
    _root, caps, fs = host20
    with pytest.raises(KeyboardInterrupt):
        with al.Allocation(
            caps, al.plan_allocation(caps, mba_percent=10), state_dir=state_dir, fs=fs, name="faasprof-k"
        ):
            os.kill(os.getpid(), signal.SIGINT)  # a real Ctrl-C, delivered to the main thread
            for _ in range(1000):  # the handler runs between bytecodes
                pass
            pytest.fail("SIGINT did not interrupt")
    assert not (caps.resctrl_path / "faasprof-k").exists()
    assert list(state_dir.iterdir()) == []


def test_ctrl_c_during_restore_is_held_until_restore_is_done(host20, state_dir):
    _root, caps, fs = host20
    fs.before_rmdir = lambda path: os.kill(os.getpid(), signal.SIGINT)
    alloc = al.Allocation(caps, al.plan_allocation(caps, llc_ways=3), state_dir=state_dir, fs=fs, name="faasprof-d")
    alloc.apply()
    with pytest.raises(KeyboardInterrupt):
        alloc.restore()
    assert not (caps.resctrl_path / "faasprof-d").exists()
    assert list(state_dir.iterdir()) == []
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_ctrl_c_during_apply_finishes_apply_then_restores(host20, state_dir):
    _root, caps, fs = host20
    seen = []

    def interrupt_once(path):
        if path.name == "schemata" and not seen:
            seen.append(path)
            os.kill(os.getpid(), signal.SIGINT)

    fs.before_write = interrupt_once
    with pytest.raises(KeyboardInterrupt):
        with al.Allocation(caps, al.plan_allocation(caps, llc_ways=3), state_dir=state_dir, fs=fs, name="faasprof-a"):
            pytest.fail("the body must not run after a Ctrl-C during apply")
    assert seen
    assert not (caps.resctrl_path / "faasprof-a").exists() and cpus_of(caps.resctrl_path) == "0-15"
    assert list(state_dir.iterdir()) == []


def test_state_dir_default(monkeypatch, tmp_path):
    monkeypatch.delenv("FAASPROF_STATE_DIR", raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    assert al.default_state_dir() == tmp_path / "xdg" / "faasprof"
    monkeypatch.delenv("XDG_STATE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert al.default_state_dir() == tmp_path / "home" / ".local" / "state" / "faasprof"
    monkeypatch.setenv("FAASPROF_STATE_DIR", str(tmp_path / "explicit"))
    assert al.default_state_dir() == tmp_path / "explicit"


def test_cpus_taken_from_another_group_go_back_to_it(host20, state_dir):
    _root, caps, fs = host20
    resctrl = caps.resctrl_path
    fs.mkdir(resctrl / "someone")
    fs.write(resctrl / "someone" / "cpus_list", "12-15")
    assert cpus_of(resctrl) == "0-11"
    with al.Allocation(
        caps, al.plan_allocation(caps, llc_ways=4, cpus="8-15"), state_dir=state_dir, fs=fs, name="faasprof-o"
    ) as alloc:
        assert cpus_of(resctrl / "someone") == ""
        assert alloc.applied["cpus"] == "8-15"
    messages = alloc.restore()
    assert cpus_of(resctrl / "someone") == "12-15"
    assert cpus_of(resctrl) == "0-11"
    assert messages == []  # already restored by the with block


def test_kernel_refusal_is_reported_and_undone(host11, state_dir):
    _root, caps, fs = host11
    bad = al.AllocationPlan(l3_mask=0x5, mba_percent=None, cpus=(0, 1))  # bypasses plan_allocation on purpose
    with pytest.raises(RunError) as info:
        with al.Allocation(caps, bad, state_dir=state_dir, fs=fs, name="faasprof-bad"):
            pytest.fail("must not get here")
    assert "non-consecutive 1-bits" in str(info.value) and "faasprof-bad/schemata" in str(info.value)
    assert not (caps.resctrl_path / "faasprof-bad").exists()
    assert cpus_of(caps.resctrl_path) == "0-7"
    assert list(state_dir.iterdir()) == []


def test_no_free_closid(host20, state_dir):
    _root, caps, fs = host20
    for i in range(caps.num_closids - 1):
        fs.mkdir(caps.resctrl_path / f"busy{i}")
    with pytest.raises(RunError, match="no free CLOSID"):
        al.Allocation(
            caps, al.plan_allocation(caps, llc_ways=1), state_dir=state_dir, fs=fs, name="faasprof-n"
        ).__enter__()
    assert not (caps.resctrl_path / "faasprof-n").exists()
    assert list(state_dir.iterdir()) == []


def test_existing_group_of_that_name_is_not_touched(host11, state_dir):
    _root, caps, fs = host11
    fs.mkdir(caps.resctrl_path / "faasprof-same")
    with pytest.raises(RunError, match="exists already"):
        with al.Allocation(
            caps, al.plan_allocation(caps, llc_ways=1), state_dir=state_dir, fs=fs, name="faasprof-same"
        ):
            pass
    assert (caps.resctrl_path / "faasprof-same").is_dir()
    assert list(state_dir.iterdir()) == []


def test_failed_restore_keeps_the_state_for_the_next_start(host11, state_dir):
    root, caps, fs = host11

    def busy(path):
        raise OSError(errno.EBUSY, os.strerror(errno.EBUSY), str(path))

    alloc = al.Allocation(caps, al.plan_allocation(caps, llc_ways=2), state_dir=state_dir, fs=fs, name="faasprof-busy")
    alloc.apply()
    fs.before_rmdir = busy
    with pytest.raises(RunError, match="retries at its next start"):
        alloc.restore()
    assert len(list(state_dir.glob("allocation-*.json"))) == 1
    fs.before_rmdir = None
    # The owner (this process) is alive, so cleanup leaves it; its own restore() finishes the job.
    assert al.cleanup_leftovers(root, state_dir=state_dir, fs=fs) == []
    assert alloc.restore() == [f"removed resctrl group {caps.resctrl_path / 'faasprof-busy'}"]
    assert list(state_dir.glob("*.json")) == []


def test_unwritable_state_dir_is_a_clear_error(host11, tmp_path):
    _root, caps, fs = host11
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(RunError, match="FAASPROF_STATE_DIR"):
        with al.Allocation(caps, al.plan_allocation(caps, llc_ways=2), state_dir=blocker / "sub", fs=fs):
            pass
    assert resctrl_backend.groups(caps.resctrl_path) == []


# ---------------------------------------------------------------------------------------------
# leftovers after a crash


CRASH_SCRIPT = textwrap.dedent(
    """
    import os, signal, sys
    sys.path.insert(0, {tests!r})
    from faasprof.monitoring import allocation as al
    from test_allocation_resctrl import KernelEmulation
    caps = al.discover({root!r})
    plan = al.plan_allocation(caps, llc_ways=2, mba_percent=50, control_plane_cpus=[0])
    alloc = al.Allocation(caps, plan, state_dir={state!r}, fs=KernelEmulation(caps.resctrl_path))
    alloc.apply()
    print(alloc.name, flush=True)
    os.kill(os.getpid(), signal.SIGKILL)  # a crash: no finally, no atexit
    """
)


def test_leftover_from_a_crashed_run_is_removed_at_next_start(host20, state_dir):
    root, caps, fs = host20
    script = CRASH_SCRIPT.format(tests=str(TESTS_DIR), root=str(root), state=str(state_dir))
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    name = proc.stdout.strip()
    group = caps.resctrl_path / name
    assert group.is_dir() and cpus_of(group) == "1-15"
    assert len(list(state_dir.glob("allocation-*.json"))) == 1

    messages = al.cleanup_leftovers(root, state_dir=state_dir, fs=fs)
    assert any(f"removed resctrl group {group}" in m and "no longer running" in m for m in messages), messages
    assert not group.exists()
    assert cpus_of(caps.resctrl_path) == "0-15"
    assert list(state_dir.glob("*.json")) == []
    assert al.cleanup_leftovers(root, state_dir=state_dir, fs=fs) == []


def test_leftover_group_without_state_file(host11, state_dir, tmp_path):
    root, caps, fs = host11
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid = int(gone.stdout)
    fs.mkdir(caps.resctrl_path / f"faasprof-{dead_pid}")
    fs.write(caps.resctrl_path / f"faasprof-{dead_pid}" / "cpus_list", "4-7")
    fs.mkdir(caps.resctrl_path / "not-ours")
    messages = al.cleanup_leftovers(root, state_dir=state_dir, fs=fs)
    assert len(messages) == 1 and "no state file" in messages[0] and str(dead_pid) in messages[0]
    assert not (caps.resctrl_path / f"faasprof-{dead_pid}").exists()
    assert (caps.resctrl_path / "not-ours").is_dir()
    assert cpus_of(caps.resctrl_path) == "0-7"


def test_allocation_of_a_live_faasprof_is_left_alone(host11, state_dir):
    root, caps, fs = host11
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        fs.mkdir(caps.resctrl_path / f"faasprof-{sleeper.pid}")
        assert al.cleanup_leftovers(root, state_dir=state_dir, fs=fs) == []
        assert (caps.resctrl_path / f"faasprof-{sleeper.pid}").is_dir()
    finally:
        sleeper.kill()
        sleeper.wait()
    messages = al.cleanup_leftovers(root, state_dir=state_dir, fs=fs)
    assert len(messages) == 1 and not (caps.resctrl_path / f"faasprof-{sleeper.pid}").exists()


def test_own_live_allocation_is_not_a_leftover(host11, state_dir):
    root, caps, fs = host11
    with al.Allocation(caps, al.plan_allocation(caps, llc_ways=1), state_dir=state_dir, fs=fs) as alloc:
        assert al.cleanup_leftovers(root, state_dir=state_dir, fs=fs) == []
        assert (caps.resctrl_path / alloc.name).is_dir()


def test_unreadable_state_file_is_reported(host11, state_dir):
    root, _caps, fs = host11
    state_dir.mkdir()
    (state_dir / "allocation-1-x.json").write_text("{not json")
    messages = al.cleanup_leftovers(root, state_dir=state_dir, fs=fs)
    assert len(messages) == 1 and "unreadable" in messages[0]


# ---------------------------------------------------------------------------------------------
# real hardware (run on the testbed: pytest -m hardware, as root, resctrl mounted)


@pytest.mark.hardware
def test_real_resctrl_round_trip(tmp_path):
    caps = al.discover("/")
    if caps.interface != "resctrl" or caps.l3 is None:
        pytest.skip(f"needs resctrl with L3 CAT: {caps.reason or caps.interface}")
    cpu = caps.online_cpus[-1]
    plan = al.plan_allocation(caps, llc_ways=max(1, caps.l3.min_cbm_bits), cpus=[cpu])
    with al.Allocation(caps, plan, state_dir=tmp_path) as alloc:
        assert set(alloc.applied["llc_masks"].values()) == {f"0x{plan.l3_mask:x}"}
        assert alloc.applied["cpus"] == str(cpu)
    assert not (caps.resctrl_path / alloc.name).exists()
