"""Collectors on remote hosts without Docker: the inventory read, the clock offset from fake clocks,
the ssh command, the agent run locally (it stops when its stdin ends), and ``faasprof run --hosts``
refusing a bad inventory or an unreachable host before the run starts.

The runs on real hosts (containers reached by ssh) are in ``test_hosts_docker.py``.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from faasprof.errors import ConfigError, NotReadyError
from faasprof.monitoring import tools
from faasprof.monitoring.collectors.base import SAFETY_MARGIN_S
from faasprof.monitoring.collectors.perf import PerfCollector
from faasprof.monitoring.collectors.rdt import PqosCollector
from faasprof.monitoring.host import Root
from faasprof.monitoring.hosts import HostsOption, RemoteHosts, hosts_option, toolrun
from faasprof.monitoring.hosts.clock import Exchange, estimate_offset, measure_offset
from faasprof.monitoring.hosts.dockerwatch import docker_problem
from faasprof.monitoring.hosts.inventory import read_inventory
from faasprof.monitoring.hosts.session import HostSession
from faasprof.monitoring.hosts.ssh import BOOT, agent_code, ssh_argv
from faasprof.monitoring.hosts.toolrun import ToolPlan, ToolRun, plan_tool
from tests.helpers import run_cli

REPO = Path(__file__).resolve().parent.parent
PERF_DATA = REPO / "tests" / "data" / "monitoring" / "perf"
HOSTS_DATA = REPO / "tests" / "data" / "monitoring" / "hosts"


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


# -- the inventory ----------------------------------------------------------------------------------


def test_inventory_reads_hosts_with_group_and_all_vars(tmp_path):
    key = write(tmp_path / "key", "k")
    inventory = write(
        tmp_path / "inv.ini",
        "# a comment\n"
        "[openwhisk_controller]\nctrl ansible_connection=local\n\n"
        "[openwhisk_invokers]\n"
        "node1 ansible_host=10.0.0.11 ansible_port=2201\n"
        "node2 ansible_host=10.0.0.12 ansible_user=admin faasprof_cgroup_parent=/\n"
        "[openwhisk_invokers:vars]\n"
        "ansible_user=ubuntu\nansible_ssh_private_key_file=key\n"
        "ansible_ssh_common_args='-o StrictHostKeyChecking=no -o \"ProxyJump=bastion\"'\n"
        "[all:vars]\nansible_port=2222\n"
        "[testbed:children]\nopenwhisk_controller\nopenwhisk_invokers\n",
    )
    node1, node2 = read_inventory(inventory)
    assert (node1.name, node1.address, node1.port, node1.user) == ("node1", "10.0.0.11", 2201, "ubuntu")
    assert node1.key_file == str(key)  # relative to the inventory's folder
    assert node1.common_args == ("-o", "StrictHostKeyChecking=no", "-o", "ProxyJump=bastion")
    assert node1.cgroup_parent is None
    # The host's own line wins over its group's vars, which win over all's.
    assert (node2.port, node2.user, node2.cgroup_parent) == (2222, "admin", "/")


def test_inventory_group_of_children(tmp_path):
    inventory = write(
        tmp_path / "inv.ini",
        "[a]\nh1\n[b]\nh2 ansible_host=1.2.3.4\n[both:children]\na\nb\n",
    )
    assert [(h.name, h.address) for h in read_inventory(inventory, "both")] == [("h1", "h1"), ("h2", "1.2.3.4")]


def test_the_testbed_example_inventory_reads(tmp_path):
    hosts = read_inventory(REPO / "setup" / "inventory" / "multi-node.example.ini")
    assert [h.name for h in hosts] == ["node1.example.org", "node2.example.org", "node3.example.org"]
    assert {h.user for h in hosts} == {"ubuntu"}


@pytest.mark.parametrize(
    ("text", "group", "message"),
    [
        (
            "[x]\nh1\n",
            "openwhisk_invokers",
            "group 'openwhisk_invokers' has no host (groups with hosts: x); name another group (--hosts-group)",
        ),
        (
            "[openwhisk_invokers]\nnode[1:3]\n",
            "openwhisk_invokers",
            "{p}:2: host pattern 'node[1:3]' is not supported by faasprof; list each host on its own line",
        ),
        (
            "[openwhisk_invokers]\nh1 ansible_port=ssh\n",
            "openwhisk_invokers",
            "{p}: host h1: ansible_port='ssh' is not a port; give a number 1-65535",
        ),
        (
            "[openwhisk_invokers]\nlocalhost ansible_connection=local\n",
            "openwhisk_invokers",
            "{p}: host localhost: ansible_connection=local is this machine, whose collectors already run here; list only remote hosts in the group",
        ),
        (
            "[openwhisk_invokers]\nvmstat\n",
            "openwhisk_invokers",
            "{p}: host vmstat: the name is a collector's (monitors/vmstat/ is taken); rename the host",
        ),
        (
            "[openwhisk_invokers]\nunknown\n",
            "openwhisk_invokers",
            "{p}: host unknown: 'unknown' marks activations whose host is not known; rename the host",
        ),
        (
            "[openwhisk_invokers]\nh@1\n",
            "openwhisk_invokers",
            "{p}: host h@1: the name must be letters, digits, '.', '_' or '-', not beginning with '-'; rename the host",
        ),
        (
            "[openwhisk_invokers]\nh1 ansible_ssh_private_key_file=/nonexistent/key\n",
            "openwhisk_invokers",
            "{p}: host h1: ansible_ssh_private_key_file=/nonexistent/key: not a readable file; fix the path",
        ),
        (
            "[openwhisk_invokers]\nh1 oops\n",
            "openwhisk_invokers",
            "{p}:2: 'oops' is not key=value; write each variable as key=value",
        ),
        (
            "[openwhisk_invokers:weird]\n",
            "openwhisk_invokers",
            "{p}:1: [openwhisk_invokers:weird]: unknown section kind 'weird'; use :vars or :children",
        ),
    ],
)
def test_inventory_problems_are_one_line(tmp_path, text, group, message):
    path = write(tmp_path / "inv.ini", text)
    with pytest.raises(ConfigError) as error:
        read_inventory(path, group, reserved=("vmstat", "cgroups"))
    expected = message.format(p=path)
    assert str(error.value) == (expected if expected.startswith(str(path)) else f"{path}: {expected}")


def test_missing_inventory(tmp_path):
    with pytest.raises(ConfigError, match=r"nope.ini: the inventory does not exist; fix the path"):
        read_inventory(tmp_path / "nope.ini")


def test_hosts_option_forms(tmp_path):
    assert hosts_option({}, "w.json", tmp_path) is None
    assert hosts_option({"hosts": "inv.ini"}, "w.json", tmp_path) == HostsOption(tmp_path / "inv.ini")
    assert hosts_option({"hosts": {"inventory": "/x.ini", "group": "g"}}, "w.json", tmp_path) == HostsOption(
        Path("/x.ini"), "g"
    )
    with pytest.raises(ConfigError, match=r"^w.json: monitoring.hosts: give the inventory's path"):
        hosts_option({"hosts": {"group": "g"}}, "w.json", tmp_path)


def test_hosts_without_a_collector_is_refused(tmp_path):
    inventory = write(tmp_path / "inv.ini", "[openwhisk_invokers]\nh1\n")
    with pytest.raises(ConfigError, match=r"monitoring.hosts: no collector to run on the hosts; add vmstat or cgroups"):
        RemoteHosts.for_workload(HostsOption(inventory), {"hosts": str(inventory)}, 5.0, "w.json")


# -- the clock --------------------------------------------------------------------------------------


def test_offset_is_the_midpoint_of_the_shortest_round_trip():
    exchanges = [
        Exchange(local_wall_ns=1_000, round_trip_ns=400, remote_wall_ns=6_000),  # host read late in a slow trip
        Exchange(local_wall_ns=2_000, round_trip_ns=100, remote_wall_ns=7_050),
        Exchange(local_wall_ns=3_000, round_trip_ns=300, remote_wall_ns=8_000),
    ]
    offset = estimate_offset(exchanges)
    assert (offset.offset_ns, offset.uncertainty_ns) == (7_050 - 2_050, 50)


def test_measure_offset_with_fake_clocks():
    """The host's clock is 5 s ahead; the trips take 1 ms, except the third, 10 µs, answered at its middle."""
    state = {"now": 1_000_000_000}
    trips = iter([1_000_000, 1_000_000, 10_000, 1_000_000])

    def ask() -> int:
        trip = next(trips)
        state["now"] += trip // 2
        answer = state["now"] + 5_000_000_000
        state["now"] += trip - trip // 2
        return answer

    offset = measure_offset(ask, count=4, wall_ns=lambda: state["now"], monotonic_ns=lambda: state["now"])
    assert (offset.offset_ns, offset.uncertainty_ns) == (5_000_000_000, 5_000)
    assert offset.monotonic_ns == 1_000_000_000 + 2 * 1_000_000 + 5_000  # when it held: the third trip's middle
    with pytest.raises(ValueError):
        estimate_offset([])


# -- ssh and the agent ------------------------------------------------------------------------------


def test_ssh_argv_puts_the_inventorys_options_first(tmp_path):
    write(tmp_path / "key", "k")
    inventory = write(
        tmp_path / "inv.ini",
        "[openwhisk_invokers]\nh1 ansible_host=10.1.2.3 ansible_port=2200 ansible_user=u "
        "ansible_ssh_private_key_file=key ansible_ssh_common_args='-o BatchMode=no'\n",
    )
    (host,) = read_inventory(inventory)
    argv = ssh_argv(host)
    assert argv[:4] == ["ssh", "-T", "-o", "BatchMode=no"]  # ssh keeps the first value given
    assert argv.index("BatchMode=yes") > argv.index("BatchMode=no")
    assert argv[argv.index("-p") + 1] == "2200" and argv[argv.index("-i") + 1] == str(tmp_path / "key")
    assert argv[argv.index("-l") + 1] == "u" and argv[-2] == "10.1.2.3" and argv[-1].startswith("python3 -u -c ")
    assert argv[-3] == "--"  # the destination is never read as an option


@pytest.mark.parametrize(
    "line, says",
    [
        (
            "h1 ansible_ssh_common_args='-o ProxyCommand=touch\\ /tmp/owned'",
            "ansible_ssh_common_args holds -o 'ProxyCommand=touch /tmp/owned'",
        ),
        (
            "h1 ansible_ssh_extra_args='-oLocalCommand=id -o PermitLocalCommand=yes'",
            "ansible_ssh_extra_args holds -o 'LocalCommand=id'",
        ),
        ("h1 ansible_ssh_common_args='-o proxycommand nc %h %p'", "ansible_ssh_common_args holds -o 'proxycommand'"),
        ("h1 ansible_ssh_common_args='-F /tmp/other_config'", "ansible_ssh_common_args holds '-F'"),
    ],
)
def test_inventory_ssh_options_that_run_a_local_command_need_the_users_leave(tmp_path, line, says):
    inventory = write(tmp_path / "inv.ini", f"[openwhisk_invokers]\n{line}\n")
    with pytest.raises(ConfigError) as raised:
        read_inventory(inventory)
    message = str(raised.value)
    assert "\n" not in message and says in message and "runs a command on this machine" in message, message
    assert "--allow-ssh-commands" in message
    (host,) = read_inventory(inventory, allow_ssh_commands=True)
    assert host.common_args and ssh_argv(host)[-3] == "--"


@pytest.mark.parametrize(
    "text, says",
    [
        ("[openwhisk_invokers]\n-oProxyCommand=id\n", "not beginning with '-'"),
        (
            "[openwhisk_invokers]\nh1 ansible_host=-oProxyCommand=id\n",
            "ansible_host='-oProxyCommand=id' begins with '-'",
        ),
    ],
)
def test_a_host_or_address_that_ssh_would_read_as_an_option_is_refused(tmp_path, text, says):
    inventory = write(tmp_path / "inv.ini", text)
    with pytest.raises(ConfigError, match=re.escape(says)):
        read_inventory(inventory)


def test_an_inventory_that_is_a_fifo_or_too_large_is_refused_without_reading_it(tmp_path):
    fifo = tmp_path / "inv.ini"
    os.mkfifo(fifo)
    with pytest.raises(ConfigError, match="the inventory is not a regular file"):
        read_inventory(fifo)  # without the check this waits for a writer forever
    big = write(tmp_path / "big.ini", "[openwhisk_invokers]\n" + "#" * (1024 * 1024) + "\nh1\n")
    with pytest.raises(ConfigError, match=r"the inventory is 1,048,\d+ bytes, more than the 1,048,576"):
        read_inventory(big)


def _local_agent(settings: dict, path: str | None = None) -> subprocess.Popen:
    """The agent as ssh would start it, on this machine (python3 -c BOOT, the code on stdin);
    ``path``: its PATH (where its checks look for the tools)."""
    env = {**os.environ, "PATH": path} if path else None
    process = subprocess.Popen(
        [sys.executable, "-u", "-c", BOOT],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    process.stdin.write(agent_code() + json.dumps(settings).encode() + b"\n")
    process.stdin.flush()
    return process


def test_agent_answers_checks_and_streams_rows_until_stdin_ends(tmp_path):
    process = _local_agent({"collectors": {"vmstat": {"interval_ms": 50}, "perf": {}}, "bound_s": 30}, str(tmp_path))
    try:
        hello = json.loads(process.stdout.readline())
        assert hello["op"] == "hello" and hello["facts"]["cpus"] >= 1 and hello["facts"]["kernel"]
        assert hello["checks"]["vmstat"] is None
        # perf is checked on the host as here: no perf on its PATH.
        assert hello["checks"]["perf"].startswith("perf: not found on PATH; install it")
        process.stdin.write(b'{"op": "clock"}\n{"op": "start"}\n')
        process.stdin.flush()
        time.sleep(0.3)
        started = time.monotonic()
        process.stdin.close()  # what a dropped ssh connection does to the agent
        assert process.wait(5) == 0 and time.monotonic() - started < 2
    finally:
        process.kill()
    messages = [json.loads(line) for line in process.stdout.read().splitlines()]
    ops = [m["op"] for m in messages]
    assert ops[0] == "clock" and "started" in ops and ops[-1] == "stopped"
    rows = "".join(m["d"] for m in messages if m["op"] == "data" and m["f"] == "vmstat.csv").splitlines()
    assert rows[0].startswith("elapsed_ns,cpu_user_ticks") and len(rows) >= 4
    assert process.stderr.read() == b""


# -- the tool collectors on a host ------------------------------------------------------------------


@pytest.fixture
def fake_perf(tmp_path, monkeypatch) -> Path:
    """A folder whose ``perf`` is the recorded stand-in (tests/data/monitoring/perf/fake_perf), first
    on PATH here too, so that the local collector and a host's agent find the same perf."""
    folder = tmp_path / "bin"
    folder.mkdir()
    (folder / "perf").symlink_to(PERF_DATA / "fake_perf")
    monkeypatch.setenv("PATH", f"{folder}:{os.environ['PATH']}")
    monkeypatch.setattr(tools, "_probe_cache", {})
    return folder


def _needs_system_wide_counting() -> None:
    paranoid = Root("/").read_int("/proc/sys/kernel/perf_event_paranoid")
    if not tools.is_root() and (paranoid is None or paranoid > 0):
        pytest.skip("perf's check refuses system-wide counting here (not root, perf_event_paranoid > 0)")


def test_a_hosts_perf_runs_the_local_collectors_command_line(fake_perf):
    _needs_system_wide_counting()
    block = {"interval_ms": 250, "events": ["task-clock", "page-faults", "cycles"], "per": "cpu"}
    plan = plan_tool("perf", {**PerfCollector.defaults, **block}, Root("/"), None, 10 + SAFETY_MARGIN_S)
    local = PerfCollector(block, {"duration_s": 10})
    assert local.check() is None
    assert plan.argv == local.argv("perf_stat.csv")
    assert plan.argv[:9] == ["perf", "stat", "-x,", "-I", "250", "-a", "-A", "-e", "task-clock,page-faults"]
    # The probe there drops what the CPU lacks, as the check here does (the recorded probe: no cycles).
    assert plan.layout["dropped_events"] == local.dropped == {"cycles": "not supported here"}
    assert plan.warnings == local.warnings == ["perf: event cycles dropped (not supported here)"]
    assert plan.layout["layout"] == {"sep": ",", "interval_ms": 250, "per": "cpu", "cgroups": []}


def test_a_hosts_blktrace_plan_and_its_reasons(monkeypatch):
    xeon = Root(HOSTS_DATA / "xeon_11way")
    monkeypatch.setattr(tools.shutil, "which", lambda tool: None if tool == "blkparse" else f"/usr/sbin/{tool}")
    assert plan_tool("blktrace", {"devices": "auto"}, xeon, None, 610.0) == (
        "blktrace: blkparse is not installed; apt-get install blktrace (or drop monitoring.blktrace)"
    )
    monkeypatch.setattr(tools.shutil, "which", lambda tool: f"/usr/sbin/{tool}")
    monkeypatch.setattr(tools, "is_root", lambda: False)
    assert plan_tool("blktrace", {}, xeon, None, 610.0) == "blktrace: needs root (BLKTRACESETUP); run faasprof as root"
    monkeypatch.setattr(tools, "is_root", lambda: True)
    plan = plan_tool("blktrace", {"devices": "auto"}, xeon, None, 610.0)
    assert plan.argv == ["blktrace", "-d", "/dev/sda", "-D", "raw", "-w", "610"]
    assert plan.after == [["blkparse", "-D", "raw", "-i", "sda", "-o", "sda.blkparse.txt"]]
    assert plan.outputs == ["sda.blkparse.txt", "blkparse.log"] and plan.folders == ["raw"]
    assert plan.marker_devices == ["/dev/sda"] and plan.layout == {"devices": ["/dev/sda"], "marker": "faasprof-start"}


def test_a_hosts_rdt_runs_pqos_with_the_local_command_line(monkeypatch):
    xeon = HOSTS_DATA / "xeon_11way"
    assert plan_tool("rdt", {}, Root(HOSTS_DATA / "this_vm"), None, 610.0).startswith(
        "rdt: the CPU reports no RDT monitoring (no cqm_llc/cqm_mbm_* flag in /proc/cpuinfo)"
    )
    monkeypatch.setattr(tools.shutil, "which", lambda tool: None)
    assert plan_tool("rdt", {"interface": "auto"}, Root(xeon), None, 610.0) == (
        "rdt: pqos is not installed; apt-get install intel-cmt-cat (or mount resctrl and use interface resctrl); "
        "remote hosts measure RDT through pqos only"
    )
    assert plan_tool("rdt", {"interface": "resctrl"}, Root(xeon), None, 610.0) == (
        "rdt: resctrl is read only on the machine that runs faasprof; remote hosts run pqos (interface auto or pqos)"
    )
    monkeypatch.setattr(tools.shutil, "which", lambda tool: f"/usr/sbin/{tool}")
    monkeypatch.setattr(tools, "is_root", lambda: True)
    block = {"interval_ms": 250, "cores": [[0, 1], [2]]}
    plan = plan_tool("rdt", block, Root(xeon), None, 10 + SAFETY_MARGIN_S)
    assert plan.argv == PqosCollector(block, {"host_root": str(xeon), "duration_s": 10}).argv()
    assert plan.argv[:6] == ["pqos", "-r", "-m", "all:[0,1],[2];mbt:[0,1],[2]", "-i", "2"]
    assert plan.layout == {"interface": "pqos", "interval_ms": 200}


def _processes_under(folder: Path) -> list[str]:
    """This machine's processes whose command line names ``folder`` (the stand-in perf)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if str(folder) in argv:
            found.append(pid)
    return found


def _until(condition, timeout_s: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def test_agent_runs_perf_streams_its_output_and_stops_it_with_sigint(fake_perf):
    _needs_system_wide_counting()
    settings = {"collectors": {"perf": {"interval_ms": 50, "events": ["task-clock", "page-faults"]}}, "bound_s": 30}
    process = _local_agent(settings, os.environ["PATH"])
    try:
        assert json.loads(process.stdout.readline())["checks"] == {"perf": None}
        process.stdin.write(b'{"op": "start"}\n')
        process.stdin.flush()
        assert _until(lambda: _processes_under(fake_perf))
        time.sleep(0.6)  # the stand-in's five intervals
        process.stdin.write(b'{"op": "stop"}\n')
        process.stdin.flush()
        assert process.wait(10) == 0
    finally:
        process.kill()
    messages = [json.loads(line) for line in process.stdout.read().splitlines()]
    (started,) = [m["collectors"]["perf"] for m in messages if m["op"] == "started"]
    assert started["command"][:8] == ["perf", "stat", "-x,", "-I", "50", "-a", "-e", "task-clock,page-faults"]
    assert started["outputs"] == ["perf_stat.csv"] and started["error"] is None
    streamed = "".join(m["d"] for m in messages if m["op"] == "data" and m["f"] == "perf_stat.csv")
    assert streamed == (PERF_DATA / "perf_stat_system_interval.csv").read_text()
    assert messages[-1] == {
        "op": "stopped",
        "collectors": {"perf": {"layout": {**started["layout"], "returncode": 0}, "error": None}},
    }
    assert _processes_under(fake_perf) == []


def test_a_killed_agent_takes_its_tools_with_it(fake_perf):
    """The agent ended without stopping its tools (SIGKILL; its own bound ends it so too): the
    kernel kills perf with it."""
    _needs_system_wide_counting()
    process = _local_agent({"collectors": {"perf": {"events": ["task-clock"]}}, "bound_s": 30}, os.environ["PATH"])
    try:
        process.stdout.readline()
        process.stdin.write(b'{"op": "start"}\n')
        process.stdin.flush()
        assert _until(lambda: _processes_under(fake_perf))
        process.send_signal(signal.SIGKILL)
        process.wait(5)
        assert _until(lambda: not _processes_under(fake_perf)), _processes_under(fake_perf)
    finally:
        process.kill()


class Sent:
    """The agent's channel, kept."""

    def __init__(self) -> None:
        self.messages: list[dict] = []

    def send(self, message: dict) -> None:
        self.messages.append(message)


def test_a_tool_that_exits_at_once_is_a_failed_start_and_stopping_is_safe_twice(monkeypatch):
    plan = ToolPlan(["sh", "-c", "echo no permission >&2; exit 3"], ["out.csv"])
    monkeypatch.setitem(toolrun.PLANS, "perf", lambda *args: plan)
    sent = Sent()
    run = ToolRun("perf", {}, sent, Root("/"), None, 30.0)
    started = run.start()
    assert started["error"] == "perf: sh exited at once with code 3: no permission"
    assert started["command"] == plan.argv and started["layout"] == {"returncode": 3}
    first = run.stop()
    assert first == run.stop() == {"layout": {"returncode": 3}, "error": started["error"]}
    assert [m["d"] for m in sent.messages if m["f"] == "stderr.log"] == ["no permission\n"]
    assert not os.path.exists(run.dir)  # its folder on the host removed


def test_a_required_collector_a_host_cannot_run_stops_the_run_before_it_starts(tmp_path, monkeypatch):
    inventory = write(
        tmp_path / "inv.ini", "[openwhisk_invokers]\nh1 ansible_host=127.0.0.1\nh2 ansible_host=127.0.0.1\n"
    )
    no_perf = "perf: not found on PATH; install it"

    def connect(session: HostSession) -> None:
        if session.name == "h2":
            session.skipped["perf"] = no_perf

    closed: list[str] = []
    monkeypatch.setattr(HostSession, "connect", connect)
    monkeypatch.setattr(HostSession, "close", lambda session: closed.append(session.name))
    optional = RemoteHosts(read_inventory(inventory), {"perf": {"required": False}, "vmstat": {}}, 5)
    assert optional.connect() == [
        "host h1 (None, None CPUs): perf, vmstat, containers",  # the containers watched unless docker is absent
        f"host h2 (None, None CPUs): vmstat, containers; skipped {no_perf}",
    ]
    required = RemoteHosts(read_inventory(inventory), {"perf": {"required": True}, "vmstat": {}}, 5)
    with pytest.raises(NotReadyError) as refused:
        required.connect()
    assert str(refused.value) == f"hosts: h2: monitoring.perf: required but unavailable there: {no_perf}"
    assert closed == ["h1", "h2"]  # every session ended


# -- faasprof run --hosts -------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _workload(tmp_path: Path) -> Path:
    data = {
        "test_name": "hosts",
        "test_duration_in_seconds": 1,
        "random_seed": 1,
        "platform": {"actions_deployed": True},
        "instances": {"a": {"application": "ok", "distribution": "Uniform", "rate": 2}},
        "monitoring": {"vmstat": True},
    }
    return write(tmp_path / "w.json", json.dumps(data))


@pytest.mark.slow  # faasprof as a subprocess: 2 to 5 s
def test_unreachable_host_fails_before_the_run_in_one_line(tmp_path, isolated_home):
    port = _free_port()  # nothing listens there any more
    inventory = write(
        tmp_path / "inv.ini",
        f"[openwhisk_invokers]\nh1 ansible_host=127.0.0.1 ansible_port={port}\n"
        "[openwhisk_invokers:vars]\nansible_ssh_common_args='-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null'\n",
    )
    out = tmp_path / "runs"
    done = run_cli(
        "run",
        _workload(tmp_path),
        "--out",
        out,
        "--apihost",
        "http://127.0.0.1:9",
        "--auth",
        "u:k",
        "--hosts",
        inventory,
    )
    assert done.returncode == 3, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"hosts: h1 (127.0.0.1:{port}) cannot be reached over ssh: ")
    assert "Connection refused" in lines[0] and lines[0].endswith("and that sshd and python3 run there")
    assert not out.exists() or not any(out.iterdir())


@pytest.mark.slow  # two faasprof subprocesses
def test_bad_inventory_is_bad_input(tmp_path, isolated_home):
    inventory = write(tmp_path / "inv.ini", "[openwhisk_invokers]\nh1 ansible_port=x\n")
    dead = ("--apihost", "http://127.0.0.1:9", "--auth", "u:k")
    done = run_cli("run", _workload(tmp_path), "--out", tmp_path / "runs", *dead, "--hosts", inventory)
    assert done.returncode == 2
    assert done.stderr.strip().endswith(f"{inventory}: host h1: ansible_port='x' is not a port; give a number 1-65535")
    done = run_cli("run", _workload(tmp_path), "--out", tmp_path / "runs", *dead, "--hosts-group", "g")
    assert done.returncode == 2
    assert done.stderr.strip().endswith(
        "--hosts-group: no inventory to take the group from; pass --hosts INVENTORY as well"
    )


def test_a_host_without_docker_or_its_daemon_says_why_its_containers_are_not_watched(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert docker_problem() == "containers: no docker on PATH here, so its action containers are not listed"
    docker = write(
        tmp_path / "docker",
        "#!/bin/sh\necho 'Cannot connect to the Docker daemon at unix:///var/run/docker.sock.' >&2\nexit 1\n",
    )
    docker.chmod(0o755)
    assert docker_problem() == (
        "containers: docker does not answer here (Cannot connect to the Docker daemon at unix:///var/run/docker.sock.)"
    )


def test_why_ssh_ended_waits_for_its_stderr_when_the_reader_is_slow(tmp_path, monkeypatch):
    """On a loaded host the thread reading ssh's stderr once took more than the second the reason
    waited for it, and a refused connection was told as 'ssh ended (exit status 255)'."""
    port = _free_port()  # nothing listens there any more
    inventory = write(
        tmp_path / "inv.ini",
        f"[openwhisk_invokers]\nh1 ansible_host=127.0.0.1 ansible_port={port}\n"
        "[openwhisk_invokers:vars]\nansible_ssh_common_args='-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null'\n",
    )
    read_stderr = HostSession._read_stderr

    def slow_reader(session):
        time.sleep(2.0)  # the thread scheduled late
        read_stderr(session)

    monkeypatch.setattr(HostSession, "_read_stderr", slow_reader)
    (host,) = read_inventory(inventory)
    session = HostSession(host, {"vmstat": {}}, duration_s=1.0)
    with pytest.raises(NotReadyError) as raised:
        session.connect()
    session.close()
    assert "Connection refused" in str(raised.value), raised.value
