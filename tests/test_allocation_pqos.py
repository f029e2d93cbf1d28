"""Allocation through pqos (intel-cmt-cat), with a fake ``pqos`` on PATH that records its args.

The fake keeps a small state (class masks per socket, the class of every core) in a JSON file and
answers ``-d`` with a real ``pqos -d`` output (tests/data/resctrl/pqos/d-xeon.txt) and ``-s``
in the format of real ``pqos -s -v`` output (research notes §2.5; s-v-xeon-excerpt.txt is the
real excerpt). ``-e`` and ``-a`` print pqos 4.x's messages and change the state; a
non-contiguous mask is refused with pqos 4.5's error text.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from faasprof.errors import RunError
from faasprof.monitoring import allocation as al
from faasprof.monitoring.allocation import pqos as pqos_backend

DATA = Path(__file__).resolve().parent / "data" / "resctrl"

FAKE_PQOS = r"""#!{python}
import json, os, re, sys
args = sys.argv[1:]
with open(os.environ["FAKE_PQOS_LOG"], "a") as log:
    log.write(json.dumps(args) + "\n")
path = os.environ["FAKE_PQOS_STATE"]
st = json.load(open(path))
if st.get("abort"):
    print("WARN: Cache allocation not supported on model name 'AMD EPYC'!")
    sys.stderr.write("free(): double free detected in tcache 2\n")
    sys.exit(134)
sockets = range(st["sockets"])
per = st["cores_per_socket"]
full = (1 << st["ways"]) - 1

def cpus(text):
    out = []
    for part in text.split(","):
        a, _, b = part.partition("-")
        out += list(range(int(a), int(b or a) + 1))
    return out

def contiguous(m):
    m >>= (m & -m).bit_length() - 1
    return m != 0 and m & (m + 1) == 0

if args[0] == "-d":
    sys.stdout.write(open(os.environ["FAKE_PQOS_D"]).read())
elif args[0] == "-s":
    if "-v" in args:
        print(f"INFO: L3 CAT details: CDP support=1, CDP on=0, #COS={{st['l3_cos']}}, #ways={{st['ways']}}, ways contention bit-mask 0x0")
        print(f"INFO: MBA details: #COS={{st['mba_cos']}}, linear, max=90, step=10")
    for s in sockets:
        print(f"L3CA/MBA COS definitions for Socket {{s}}:")
        for cos in range(st["l3_cos"]):
            print(f"    L3CA COS{{cos}} => MASK 0x{{st['l3'][str(s)][str(cos)]:x}}")
        for cos in range(st["mba_cos"]):
            print(f"    MBA COS{{cos}} => {{st['mba'][str(s)][str(cos)]}}% available")
    for s in sockets:
        print(f"Core information for socket {{s}}:")
        for core in range(s * per, (s + 1) * per):
            print(f"    Core {{core}}, L2ID {{core}}, L3ID {{s}} => COS{{st['assoc'][str(core)]}}, RMID0")
elif args[0] == "-e":
    for item in args[1].split(";"):
        m = re.fullmatch(r"(llc|mba)(?:@(\d+))?:(\d+)=(\w+)", item)
        kind, sock, cos, value = m.groups()
        targets = [int(sock)] if sock else list(sockets)
        for s in targets:
            if kind == "llc":
                mask = int(value, 16)
                if not contiguous(mask) or mask > full:
                    print(f"ERROR: L3 COS{{cos}} bit mask is not contiguous!")
                    print("Allocation configuration error!")
                    sys.exit(1)
                st["l3"][str(s)][cos] = mask
                print(f"SOCKET {{s}} L3CA COS{{cos}} => MASK 0x{{mask:x}}")
            else:
                applied = min(100, -(-int(value) // 10) * 10)
                st["mba"][str(s)][cos] = applied
                print(f"SOCKET {{s}} MBA COS{{cos}} => {{value}}% requested, {{applied}}% applied")
    print("Allocation configuration altered.")
elif args[0] == "-a":
    for item in args[1].split(";"):
        if not item:
            continue
        kind, _, rest = item.partition(":")
        cos, _, cores = rest.partition("=")
        for core in cpus(cores):
            st["assoc"][str(core)] = int(cos)
    print("Allocation configuration altered.")
elif args[0] == "-R":
    for s in sockets:
        st["l3"][str(s)] = {{str(c): full for c in range(st["l3_cos"])}}
        st["mba"][str(s)] = {{str(c): 100 for c in range(st["mba_cos"])}}
    st["assoc"] = {{k: 0 for k in st["assoc"]}}
    print("Allocation reset successful")
json.dump(st, open(path, "w"))
"""


class FakePqos:
    def __init__(self, directory: Path):
        self.bin = directory / "bin"
        self.bin.mkdir()
        self.path = self.bin / "pqos"
        self.path.write_text(FAKE_PQOS.format(python=sys.executable))
        self.path.chmod(0o755)
        self.log = directory / "pqos-args.jsonl"
        self.state_path = directory / "pqos-state.json"
        sockets, per, ways = 2, 8, 20
        full = (1 << ways) - 1
        self.state = {
            "sockets": sockets,
            "cores_per_socket": per,
            "ways": ways,
            "l3_cos": 16,
            "mba_cos": 8,
            "l3": {str(s): {str(c): full for c in range(16)} for s in range(sockets)},
            "mba": {str(s): {str(c): 100 for c in range(8)} for s in range(sockets)},
            "assoc": {str(core): 0 for core in range(sockets * per)},
        }
        self.save()

    def save(self) -> None:
        self.state_path.write_text(json.dumps(self.state))

    def load(self) -> dict:
        return json.loads(self.state_path.read_text())

    def calls(self) -> list[list[str]]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]

    def clear(self) -> None:
        self.log.unlink(missing_ok=True)


@pytest.fixture
def pqos(tmp_path, monkeypatch):
    fake = FakePqos(tmp_path)
    monkeypatch.setenv("PATH", f"{fake.bin}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_PQOS_LOG", str(fake.log))
    monkeypatch.setenv("FAKE_PQOS_STATE", str(fake.state_path))
    monkeypatch.setenv("FAKE_PQOS_D", str(DATA / "pqos" / "d-xeon.txt"))
    return fake


@pytest.fixture
def root(tmp_path):
    """An RDT-capable host (20-way Xeon layout) where resctrl is not mounted: pqos is the way."""
    root = tmp_path / "host"
    shutil.copytree(DATA / "xeon-20way-mba", root)
    mounts = root / "proc" / "mounts"
    mounts.write_text("".join(line for line in mounts.read_text().splitlines(True) if "resctrl" not in line))
    shutil.rmtree(root / "sys" / "fs" / "resctrl")
    return root


@pytest.fixture
def state_dir(tmp_path):
    return tmp_path / "state"


def test_parse_real_pqos_capabilities():
    caps = al.parse_pqos_capabilities((DATA / "pqos" / "d-xeon.txt").read_text())
    assert caps == {"l3_cat": True, "l3_num_cos": 16, "cdp_enabled": False, "mba": True, "mba_num_cos": 8}
    assert al.parse_pqos_capabilities("Hardware capabilities\n    Monitoring\n")["l3_cat"] is False


def test_parse_real_pqos_show():
    show = al.parse_pqos_show((DATA / "pqos" / "s-v-xeon-excerpt.txt").read_text())
    assert show["l3"] == {0: {0: 0x7FF}} and show["mba"] == {0: {0: 100}}
    assert show["cores"] == {0: {"socket": 0, "cos": 0}}
    assert show["l3_details"] == {
        "cdp_support": 1,
        "cdp_on": 0,
        "num_cos": 16,
        "num_ways": 11,
        "contention_mask": 0x600,
    }
    assert show["mba_details"] == {"num_cos": 8, "linear": True, "max": 90, "step": 10}


def test_parse_old_pqos_show_layout():
    # pqos before MBA printed "L3CA COS definitions" and "Core N, L2ID N, L3ID N => COSn" (alloc.c).
    text = "L3CA COS definitions for Socket 1:\n    L3CA COS0 => MASK 0xfffff\n    L3CA COS1 => DATA 0xff,CODE 0xf0\nCore information for socket 1:\n    Core 8, L2ID 4, L3ID 1 => COS1\n"
    show = al.parse_pqos_show(text)
    assert show["l3"] == {1: {0: 0xFFFFF, 1: 0xFF}} and show["cores"] == {8: {"socket": 1, "cos": 1}}


def test_discover_through_pqos(root, pqos):
    caps = al.discover(root)
    assert caps.interface == "pqos", caps.reason
    assert pqos.calls() == [["-d"], ["-s", "-v"]]
    assert caps.l3.num_ways == 20 and caps.l3.cache_ids == (0, 1) and caps.l3.num_closids == 16
    assert (caps.mb.min_percent, caps.mb.granularity_percent, caps.mb.num_closids) == (10, 10, 8)
    assert caps.pqos == str(pqos.path)
    assert caps.describe()["interface"] == "pqos"


def test_pqos_not_run_on_a_cpu_without_rdt_flags(tmp_path, pqos):
    root = tmp_path / "nordt"
    shutil.copytree(DATA / "no-rdt", root)
    caps = al.discover(root, interface="pqos")
    assert caps.interface is None and "rdt_a" in caps.reason
    assert pqos.calls() == []  # pqos can abort on such CPUs (research notes §2.7)


def test_pqos_abort_is_a_clear_reason(root, pqos):
    pqos.state["abort"] = True
    pqos.save()
    caps = al.discover(root)
    assert caps.interface is None
    assert "rc 134" in caps.reason and "double free" in caps.reason


def test_apply_and_restore_command_lines(root, pqos, state_dir):
    caps = al.discover(root)
    pqos.clear()
    plan = al.plan_allocation(caps, llc_ways=4, mba_percent=35, control_plane_cpus="0-1")
    with al.Allocation(caps, plan, state_dir=state_dir) as alloc:
        assert pqos.calls() == [
            ["-s"],
            ["-e", "llc:7=0xf"],  # highest class usable by both L3 (16) and MBA (8)
            ["-e", "mba:7=40"],
            ["-a", "core:7=2-15"],
            ["-s"],
        ]
        assert alloc.applied["cos"] == 7
        assert alloc.applied["llc_masks"] == {"0": "0xf", "1": "0xf"}
        assert alloc.applied["mba_percent"] == {"0": 40, "1": 40}
        assert alloc.applied["cpus"] == "2-15"
        assert len(list(state_dir.glob("allocation-*.json"))) == 1
        pqos.clear()
    assert pqos.calls() == [["-a", "core:0=2-15"], ["-e", "llc:7=0xfffff"], ["-e", "mba:7=100"]]
    state = pqos.load()
    assert set(state["assoc"].values()) == {0}
    assert state["l3"]["0"]["7"] == 0xFFFFF and state["mba"]["1"]["7"] == 100
    assert list(state_dir.glob("*.json")) == []


def test_pqos_restores_previous_masks_and_classes(root, pqos, state_dir):
    pqos.state["assoc"]["15"] = 7  # someone uses COS7 on core 15
    pqos.state["assoc"]["5"] = 3
    pqos.state["l3"]["0"]["6"] = 0xFF
    pqos.state["l3"]["1"]["6"] = 0xF00
    pqos.save()
    caps = al.discover(root)
    pqos.clear()
    with al.Allocation(caps, al.plan_allocation(caps, llc_ways=2, cpus="4-7"), state_dir=state_dir) as alloc:
        assert alloc.applied["cos"] == 6
        assert ["-a", "core:6=4-7"] in pqos.calls()
        pqos.clear()
    assert pqos.calls() == [["-a", "core:0=4,6-7;core:3=5"], ["-e", "llc@0:6=0xff;llc@1:6=0xf00"]]
    state = pqos.load()
    assert state["assoc"]["5"] == 3 and state["assoc"]["15"] == 7
    assert state["l3"]["0"]["6"] == 0xFF and state["l3"]["1"]["6"] == 0xF00


def test_pqos_restore_on_exception_and_ctrl_c(root, pqos, state_dir):
    caps = al.discover(root)
    for exc in (RuntimeError("boom"), KeyboardInterrupt()):
        with pytest.raises(type(exc)):
            with al.Allocation(caps, al.plan_allocation(caps, llc_ways=1), state_dir=state_dir):
                assert pqos.load()["assoc"]["3"] == 7
                raise exc
        state = pqos.load()
        assert set(state["assoc"].values()) == {0} and state["l3"]["0"]["7"] == 0xFFFFF
        assert list(state_dir.glob("*.json")) == []


def test_pqos_reset_option(root, pqos, state_dir):
    caps = al.discover(root)
    with al.Allocation(caps, al.plan_allocation(caps, mba_percent=50), state_dir=state_dir, pqos_reset=True):
        pqos.clear()
    assert pqos.calls() == [["-R"]]


def test_pqos_refusal_is_a_run_error_and_is_undone(root, pqos, state_dir):
    caps = al.discover(root)
    bad = al.AllocationPlan(l3_mask=0x5, mba_percent=None, cpus=(2, 3))  # bypasses validation on purpose
    with pytest.raises(RunError, match="bit mask is not contiguous"):
        with al.Allocation(caps, bad, state_dir=state_dir):
            pytest.fail("must not get here")
    assert pqos.calls()[-1] == ["-e", "llc:7=0xfffff"]  # the previous mask, written back
    assert list(state_dir.glob("*.json")) == []


def test_no_free_class(root, pqos, state_dir):
    for core, cos in zip(range(7), range(1, 8)):
        pqos.state["assoc"][str(core)] = cos
    pqos.save()
    caps = al.discover(root)
    with pytest.raises(RunError, match="every class of service 1..7"):
        with al.Allocation(caps, al.plan_allocation(caps, llc_ways=1), state_dir=state_dir):
            pass
    assert list(state_dir.glob("*.json")) == []


def test_pqos_leftover_after_crash_is_restored(root, pqos, state_dir, tmp_path):
    script = (
        "import os, signal\n"
        "from faasprof.monitoring import allocation as al\n"
        f"caps = al.discover({str(root)!r})\n"
        f"al.Allocation(caps, al.plan_allocation(caps, llc_ways=3, cpus='8-15'), state_dir={str(state_dir)!r}).apply()\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert pqos.load()["assoc"]["8"] == 7
    pqos.clear()
    messages = al.cleanup_leftovers(root, state_dir=state_dir)
    assert len(messages) == 1 and "restored pqos class COS7" in messages[0] and "no longer running" in messages[0]
    assert pqos.calls() == [["-a", "core:0=8-15"], ["-e", "llc:7=0xfffff"]]
    assert set(pqos.load()["assoc"].values()) == {0}
    assert list(state_dir.glob("*.json")) == []


def test_pqos_output_checks_on_real_text():
    real = (DATA / "pqos" / "e-two-sockets.txt").read_text()

    def runner(text, rc=0):
        return lambda argv, timeout_s: subprocess.CompletedProcess(argv, rc, stdout=text, stderr="")

    assert pqos_backend.run_pqos("pqos", runner(real), 5, ["-e", "llc:4=0x1"]) == real
    with pytest.raises(RunError, match="Allocation configuration error!"):
        pqos_backend.run_pqos(
            "pqos", runner("SOCKET 0 L3CA COS4 => MASK 0x1\nAllocation configuration error!\n"), 5, ["-e", "llc:4=0x1"]
        )
    with pytest.raises(RunError, match=r"rc 1\): boom"):
        pqos_backend.run_pqos("pqos", runner("boom\n", rc=1), 5, ["-s"])

    def timeout(argv, timeout_s):
        raise subprocess.TimeoutExpired(argv, timeout_s)

    with pytest.raises(RunError, match="no answer within 5 s"):
        pqos_backend.run_pqos("pqos", timeout, 5, ["-s"])
