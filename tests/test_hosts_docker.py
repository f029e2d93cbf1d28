"""Collectors on real remote hosts: containers of ``faasprof/test-host`` (sshd, python3, procps;
``setup/runtime-images/build.sh host``, run here so that a changed recipe is rebuilt) reached over
ssh on 127.0.0.1 ports Docker publishes, with a key pair made for the module.

One run on the embedded localwhisk measures three hosts, and one of them is killed mid-run: the
other two leave vmstat and cgroups rows, offsets and host.json, the dead one is reported lost with
its rows up to then, and the run completes. Then a run stopped by Ctrl-C and one whose faasprof is
killed (SIGKILL) leave nothing running on the hosts.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Iterator

import pytest
from test_invoker_fakeserver import AUTH, FakeOpenWhisk

from faasprof import rundir
from faasprof.analyzer.analysis import load_run
from faasprof.monitoring.collectors.vmstat import parse_vmstat_samples
from faasprof.monitoring.frames import load_run_monitors, local_host_label
from faasprof.monitoring.parsers.cgroups import parse_cgroup_samples
from tests.helpers import REPO_ROOT

# slow: the module takes about 45 s (a 20 s run on localwhisk and its analysis, two more, three containers).
pytestmark = [pytest.mark.docker, pytest.mark.slow]

IMAGE = "faasprof/test-host:latest"
BUILD = REPO_ROOT / "setup" / "runtime-images" / "build.sh"
PERF_DATA = REPO_ROOT / "tests" / "data" / "monitoring" / "perf"
# perf on a test host: a stand-in answering with recorded real perf output. Real perf counting
# system-wide needs perf_event_open with CAP_PERFMON, which this Docker (20.10) cannot grant alone
# ("unknown capability"), and CAP_SYS_ADMIN is far more than a test host should hold.
FAKE_PERF = ("fake_perf", "perf_stat_probe_stderr.txt", "perf_stat_system_interval.csv")
# docker on a test host: a stand-in answering with recorded real docker output and one live action
# container (the hosts run no Docker daemon; tests/data/monitoring/README.md says what it answers).
CONTAINERS_DATA = REPO_ROOT / "tests" / "data" / "monitoring" / "containers"
FAKE_DOCKER = ("fake_docker", "events.jsonl", "ps_start.jsonl")
NO_DOCKER = {"containers": "containers: no docker on PATH here, so its action containers are not listed"}
PERF_EVENTS = ["task-clock", "context-switches", "page-faults", "cycles"]
NO_TOOLS = {
    "blktrace": "blktrace: blktrace is not installed; apt-get install blktrace (or drop monitoring.blktrace)",
    "rdt": "rdt: the CPU reports no RDT monitoring (no cqm_llc/cqm_mbm_* flag in /proc/cpuinfo); use an Intel Xeon "
    "with CMT/MBM (and rdt= not disabling it on the kernel command line), or drop monitoring.rdt",
}
NO_PERF = (
    "perf: not found on PATH; install it (Debian: apt-get install linux-perf; Ubuntu: linux-tools-$(uname -r)) "
    "or drop monitoring.perf"
)


def _docker(*args: str, check: bool = True, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout, check=check)


@pytest.fixture(scope="module")
def host_image() -> str:
    """The test host's image, built (or found up to date) by setup's script."""
    if subprocess.run(["docker", "info"], capture_output=True).returncode != 0:
        pytest.skip("Docker is not reachable here (./setup.sh --with docker)")
    for tool in ("ssh", "ssh-keygen"):
        if subprocess.run(["which", tool], capture_output=True).returncode != 0:
            pytest.skip(f"{tool} is missing (install the OpenSSH client)")
    done = subprocess.run(["bash", str(BUILD), "host"], capture_output=True, text=True, timeout=900)
    if done.returncode == 3:
        pytest.skip(f"the test host image cannot be built here: {done.stderr.strip().splitlines()[-1]}")
    assert done.returncode == 0, done.stderr
    return IMAGE


def _wait_for_sshd(port: int, timeout_s: float = 20.0) -> None:
    """Until sshd itself answers (Docker's proxy accepts before the container listens)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1.0) as sock:
                if sock.recv(64).startswith(b"SSH-"):
                    return
        except OSError:
            pass
        time.sleep(0.1)
    raise AssertionError(f"sshd on 127.0.0.1:{port} did not answer within {timeout_s:g} s")


class Hosts:
    """Containers acting as hosts, their inventory, and what runs in them."""

    def __init__(self, image: str, folder: Path, count: int):
        self.folder = folder
        self.key = folder / "id_ed25519"
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(self.key)], check=True)
        public = (folder / "id_ed25519.pub").read_text().strip()
        tag = uuid.uuid4().hex[:8]
        self.containers: dict[str, str] = {}
        ports = {}
        try:
            for index in range(1, count + 1):
                name = f"h{index}"
                container = f"faasprof-test-host-{tag}-{name}"
                _docker(
                    "run", "-d", "--name", container, "--label", "faasprof.test=hosts",
                    "-e", f"AUTHORIZED_KEY={public}", "-p", "127.0.0.1::22", image,
                )  # fmt: skip
                self.containers[name] = container
                ports[name] = int(_docker("port", container, "22/tcp").stdout.split(":")[-1].split()[0])
            for port in ports.values():
                _wait_for_sshd(port)
        except BaseException:
            self.remove()
            raise
        lines = ["[openwhisk_invokers]"]
        lines += [f"{name} ansible_host=127.0.0.1 ansible_port={port}" for name, port in ports.items()]
        lines += [
            "[openwhisk_invokers:vars]",
            "ansible_user=root",
            f"ansible_ssh_private_key_file={self.key}",
            "ansible_ssh_common_args='-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null'",
            # The container's own cgroup: its "." rows (no sandboxes run in it).
            "faasprof_cgroup_parent=/",
        ]
        self.inventory = folder / "inventory.ini"
        self.inventory.write_text("\n".join(lines) + "\n")

    def processes(self, name: str) -> list[str]:
        """What runs in host ``name`` besides sshd's listener and this ps."""
        listing = _docker("exec", self.containers[name], "ps", "-eo", "args=").stdout.splitlines()
        return [line for line in listing if "[listener]" not in line and not line.startswith("ps ")]

    def port(self, name: str) -> int:
        return int(_docker("port", self.containers[name], "22/tcp").stdout.split(":")[-1].split()[0])

    def install_fake(self, name: str, tool: str, data: Path, files: tuple[str, ...]) -> None:
        """``tool`` on host ``name``: a recorded stand-in (``FAKE_PERF``, ``FAKE_DOCKER`` say why),
        ``files[0]`` linked as it, the recordings it answers with beside it."""
        container = self.containers[name]
        _docker("exec", container, "mkdir", "-p", f"/opt/fake-{tool}")
        for file in files:
            _docker("cp", str(data / file), f"{container}:/opt/fake-{tool}/{file}")
        _docker("exec", container, "ln", "-sf", f"/opt/fake-{tool}/{files[0]}", f"/usr/local/bin/{tool}")

    def kill(self, name: str) -> None:
        _docker("kill", self.containers[name])

    def remove(self) -> None:
        if self.containers:
            _docker("rm", "-f", *self.containers.values(), check=False)


@pytest.fixture(scope="module")
def hosts(host_image, tmp_path_factory):
    made = Hosts(host_image, tmp_path_factory.mktemp("hosts"), 3)
    yield made
    made.remove()


def _workload(folder: Path, duration_s: float, instances: dict, **monitoring) -> Path:
    data = {
        "test_name": "hosts",
        "test_duration_in_seconds": duration_s,
        "random_seed": 5,
        "instances": instances,
        "monitoring": {"vmstat": {"interval_ms": 250}, "cgroups": {"interval_ms": 250}, **monitoring},
    }
    path = folder / f"w-{uuid.uuid4().hex[:6]}.json"
    path.write_text(json.dumps(data))
    return path


def _start(config: Path, out: Path, home: Path, *extra: str) -> subprocess.Popen:
    env = {**os.environ, "HOME": str(home)}
    env.pop("WSK_CONFIG_FILE", None)
    return subprocess.Popen(
        [sys.executable, "-m", "faasprof", "run", str(config), "--out", str(out), *extra],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def _wait_for_rows(out: Path, host: str, rows: int, process: subprocess.Popen, timeout_s: float = 60) -> Path:
    """The run directory once ``host``'s vmstat.csv holds ``rows`` samples."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and process.poll() is None:
        for run_dir in out.glob("*/"):
            path = run_dir / "monitors" / host / "vmstat" / "vmstat.csv"
            if path.exists() and len(path.read_text().splitlines()) > rows:
                return run_dir
        time.sleep(0.1)
    raise AssertionError(
        f"no {rows} vmstat rows from {host}: {process.stderr.read() if process.poll() is not None else ''}"
    )


@pytest.fixture(scope="module")
def killed_run(hosts, tmp_path_factory):
    """A run on the embedded localwhisk measuring h1-h3; h2 killed once it has sent rows."""
    folder = tmp_path_factory.mktemp("killed")
    home = folder / "home"  # no ~/.wskprops: the embedded localwhisk
    home.mkdir()
    # The tool collectors too: perf where h1 has it (the stand-in), and each host's reasons for the rest.
    hosts.install_fake("h1", "perf", PERF_DATA, FAKE_PERF)
    hosts.install_fake("h1", "docker", CONTAINERS_DATA, FAKE_DOCKER)
    config = _workload(
        folder,
        20,
        {"j": {"application": "json_dumps", "distribution": "Uniform", "rate": 2}},
        perf={"interval_ms": 100, "events": PERF_EVENTS},
        blktrace=True,
        rdt=True,
    )
    out = folder / "runs"
    process = _start(config, out, home, "--hosts", str(hosts.inventory))
    try:
        _wait_for_rows(out, "h2", 3, process)
        hosts.kill("h2")
        stdout, stderr = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
    return process.returncode, stdout, stderr


def test_each_host_leaves_vmstat_and_cgroups_rows_and_its_clock(hosts, killed_run):
    returncode, stdout, stderr = killed_run
    assert returncode == 0, stderr
    run_dir = Path(stdout.strip().splitlines()[-1])
    manifest = rundir.read_manifest(run_dir)
    assert manifest.status == "complete"
    entries = manifest.to_json()["hosts"]
    assert sorted(entries) == ["h1", "h2", "h3"]
    for name in ("h1", "h3"):
        host_json = rundir.read_host_info(run_dir / "monitors" / name).data
        assert host_json["status"] == "ok" and host_json["lost_reason"] is None and host_json["lost_at_ns"] is None
        assert host_json["kernel"] == os.uname().release and host_json["cpus"] >= 1
        # Each host's own check: h1 has perf, h3 has not; neither has blktrace nor RDT.
        runs = ["cgroups", "containers", "perf", "vmstat"] if name == "h1" else ["cgroups", "vmstat"]
        assert sorted(host_json["collectors"]) == runs
        assert host_json["skipped"] == (NO_TOOLS if name == "h1" else {"perf": NO_PERF, **NO_TOOLS, **NO_DOCKER})
        # The manifest's entry is host.json with the collectors by name.
        expected = {key: value for key, value in host_json.items() if key != "format_version"}
        assert entries[name] == {**expected, "collectors": runs}
        clock = host_json["clock"]
        # The containers share this machine's clock: the true offset is 0, within the uncertainty.
        for when in ("start", "end"):
            assert 0 < clock[f"uncertainty_ns_{when}"] < 50_000_000
            assert abs(clock[f"offset_ns_{when}"]) <= clock[f"uncertainty_ns_{when}"] + 1_000_000
        # When each held on the run's axis: the start one just before the zero, the end one after the run.
        assert -10_000_000_000 < clock["at_ns_start"] < 0 and clock["at_ns_end"] > 20_000_000_000
        monitors = run_dir / "monitors" / name
        vmstat = parse_vmstat_samples((monitors / "vmstat" / "vmstat.csv").read_text())
        assert len(vmstat) >= 15 and vmstat["cpu_busy_share"].between(0, 1).all()
        cgroups = parse_cgroup_samples((monitors / "cgroups" / "samples.csv").read_text())
        assert len(cgroups) >= 15 and set(cgroups["sandbox"]) == {"."}
        meta = rundir.read_monitor_meta(monitors / "vmstat")
        assert meta["status"] == "stopped" and meta["outputs"] == ["vmstat.csv"]
        assert abs(meta["wall_ns_at_start"] - manifest.clock["wall_ns_at_zero"]) < 10_000_000_000
        assert (monitors / "cgroups" / "command.txt").read_text().startswith(f"# on {name} (root@127.0.0.1:")
        assert rundir.read_monitor_meta(monitors / "cgroups")["parents"]


def test_a_host_killed_mid_run_is_reported_and_the_others_go_on(killed_run):
    returncode, stdout, stderr = killed_run
    assert "host h2 lost (connection lost: " in stderr and "the run goes on with the other hosts" in stderr
    run_dir = Path(stdout.strip().splitlines()[-1])
    lost = rundir.read_host_info(run_dir / "monitors" / "h2").data
    assert lost["status"] == "lost" and lost["lost_reason"].startswith("connection lost: ")
    assert 0 < lost["lost_at_ns"] < 20_000_000_000
    assert lost["clock"]["offset_ns_start"] is not None and lost["clock"]["offset_ns_end"] is None
    rows = (run_dir / "monitors" / "h2" / "vmstat" / "vmstat.csv").read_text().splitlines()
    assert len(rows) > 3  # what it sent before it died is kept
    meta = rundir.read_monitor_meta(run_dir / "monitors" / "h2" / "vmstat")
    assert meta["status"] == "died" and "h2" in meta["errors"][0]
    samples = (run_dir / "monitors" / "h2" / "cgroups" / "samples.csv").read_text().splitlines()
    assert rundir.read_monitor_meta(run_dir / "monitors" / "h2" / "cgroups")["samples"] == len(samples) - 1


def test_nothing_keeps_running_on_the_hosts_after_the_run(hosts, killed_run):
    for name in ("h1", "h3"):
        assert hosts.processes(name) == []


def _local_ssh(key: Path, port: int | None = None) -> list[str]:
    """This machine's ssh processes that use ``key`` (the hosts' sessions), to ``port`` if given."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv and argv[0].endswith(b"ssh") and str(key).encode() in argv:
            if port is None or str(port).encode() in argv:
                found.append(pid)
    return found


def _until_clean(hosts: Hosts, names: tuple[str, ...], timeout_s: float = 15.0) -> dict[str, list[str]]:
    deadline = time.monotonic() + timeout_s
    while True:
        left = {name: hosts.processes(name) for name in names}
        if not any(left.values()) or time.monotonic() > deadline:
            return left
        time.sleep(0.2)


def _live_hosts(hosts: Hosts, folder: Path) -> Path:
    """An inventory of the hosts still alive after the killed run (h1, h3)."""
    live = folder / "inventory.ini"
    live.write_text(
        "".join(line + "\n" for line in hosts.inventory.read_text().splitlines() if not line.startswith("h2 "))
    )
    return live


@contextlib.contextmanager
def _long_run(hosts: Hosts, folder: Path, home: Path) -> Iterator[tuple[subprocess.Popen, Path]]:
    """A 30 s run against a fake OpenWhisk measuring h1 and h3: the process and its run directory
    once h1 has sent rows (the test ends it; killed if it has not)."""
    config = _workload(
        folder,
        30,
        {"a": {"application": "ok", "distribution": "Uniform", "rate": 2}},
        perf={"interval_ms": 100, "events": PERF_EVENTS},
    )
    out = folder / "runs"
    with FakeOpenWhisk() as server:
        process = _start(
            config, out, home, "--apihost", server.apihost, "--auth", AUTH, "--hosts", str(_live_hosts(hosts, folder))
        )
        try:
            yield process, _wait_for_rows(out, "h1", 2, process)
        finally:
            if process.poll() is None:
                process.kill()


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGKILL], ids=["sigint", "sigkill"])
def test_a_stopped_or_killed_faasprof_leaves_nothing_on_the_hosts(hosts, killed_run, tmp_path, isolated_home, stop):
    """Ctrl-C stops the hosts in order (host.json written); SIGKILL leaves ssh without its
    faasprof: the agent sees its stdin end and exits, and ssh with it."""
    with _long_run(hosts, tmp_path, isolated_home) as (process, run_dir):
        running = hosts.processes("h1")
        assert any("python3 -u -c" in line for line in running)  # the agent is there, and perf under it
        assert any(line.startswith("python3 /usr/local/bin/perf stat -x, -I 100 -a") for line in running), running
        process.send_signal(stop)
        process.communicate(timeout=60)
    assert _until_clean(hosts, ("h1", "h3")) == {"h1": [], "h3": []}
    assert _local_ssh(hosts.key) == []
    if stop == signal.SIGINT:
        assert rundir.read_manifest(run_dir).status == "interrupted"
        host_json = rundir.read_host_info(run_dir / "monitors" / "h1").data
        assert host_json["status"] == "ok" and host_json["clock"]["offset_ns_end"] is not None


def test_a_dropped_connection_stops_the_agent_on_a_living_host(hosts, killed_run, tmp_path, isolated_home):
    """h1's ssh killed on this side mid-run: sshd ends the session, the agent its samplers, and
    the run goes on with h3 (h1 reported lost)."""
    with _long_run(hosts, tmp_path, isolated_home) as (process, run_dir):
        assert any(" /usr/local/bin/perf stat " in line for line in hosts.processes("h1"))
        (ssh,) = _local_ssh(hosts.key, hosts.port("h1"))
        os.kill(int(ssh), signal.SIGKILL)
        assert _until_clean(hosts, ("h1",)) == {"h1": []}
        assert process.poll() is None and hosts.processes("h3")  # the run and h3 go on
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=60)
    assert "host h1 lost (connection lost: " in stderr
    lost = rundir.read_host_info(run_dir / "monitors" / "h1")
    assert lost.status == "lost" and lost.lost_at_ns is not None
    assert rundir.read_host_info(run_dir / "monitors" / "h3").status == "ok"
    assert _until_clean(hosts, ("h3",)) == {"h3": []}


def test_a_run_that_fails_before_it_starts_leaves_nothing_on_the_hosts(hosts, killed_run, tmp_path, isolated_home):
    """The hosts are reached first; the platform then refuses: pre-flight ends their sessions."""
    config = _workload(tmp_path, 5, {"a": {"application": "ok", "distribution": "Uniform", "rate": 2}})
    dead = ("--apihost", "http://127.0.0.1:9", "--auth", AUTH)
    process = _start(config, tmp_path / "runs", isolated_home, *dead, "--hosts", str(_live_hosts(hosts, tmp_path)))
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 3 and "cannot connect" in stderr
    assert "host h1 (" in stderr and "host h3 (" in stderr  # both were reached
    assert _until_clean(hosts, ("h1", "h3"), timeout_s=5) == {"h1": [], "h3": []}
    assert _local_ssh(hosts.key) == []


def test_the_monitor_frames_carry_each_hosts_rows_on_the_run_axis(killed_run):
    """End to end with the analyzer's side: one vmstat frame, a row per host and sample, the
    remote ones placed on the run's axis by their clock offsets."""
    returncode, stdout, stderr = killed_run
    run_dir = Path(stdout.strip().splitlines()[-1])
    manifest = rundir.read_manifest(run_dir)
    frames = load_run_monitors(run_dir, manifest)
    vmstat = frames["vmstat"]
    assert set(vmstat["host"]) == {"h1", "h2", "h3", local_host_label(manifest)}
    for name in ("h1", "h3"):
        times = vmstat.loc[vmstat["host"] == name, "t_s"]
        assert -1 < times.min() < 1 and 20 < times.max() < 45  # the run lasted 20 s, then drained
    assert vmstat.loc[vmstat["host"] == "h2", "t_s"].max() < 20  # killed mid-run
    assert set(frames["cgroups"]["host"]) >= {"h1", "h3"}


def test_the_report_shows_each_hosts_counters_offset_and_loss(killed_run, tmp_path):
    """``faasprof analyze`` of the three-host run: a plot per host, and the report's hosts
    section with each one's offset and h2's loss."""
    returncode, stdout, stderr = killed_run
    run_dir = Path(stdout.strip().splitlines()[-1])
    analyzed = subprocess.run(
        [sys.executable, "-m", "faasprof", "analyze", str(run_dir)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert analyzed.returncode == 0, analyzed.stderr
    for name in ("h1", "h2", "h3"):
        assert (run_dir / "analysis" / "plots" / f"monitors_{name}.png").is_file()
    report = (run_dir / "analysis" / "report.html").read_text(encoding="utf-8")
    hosts_section = report.split("<h2>Hosts</h2>", 1)[1]
    assert all(name in hosts_section for name in ("h1", "h2", "h3")) and "lost" in hosts_section
    assert "rdt: rdt:" not in hosts_section  # each skipped reason named once


def test_a_hosts_perf_runs_there_and_reaches_the_monitor_frame_with_its_host(killed_run):
    """perf on h1: the local collector's command line run there under the agent, its output
    streamed into monitors/h1/perf/, stopped by SIGINT, parsed into the perf frame as h1's rows."""
    returncode, stdout, stderr = killed_run
    run_dir = Path(stdout.strip().splitlines()[-1])
    manifest = rundir.read_manifest(run_dir)
    folder = run_dir / "monitors" / "h1" / "perf"
    meta = rundir.read_monitor_meta(folder)
    assert meta["status"] == "stopped" and meta["returncode"] == 0 and meta["errors"] == []
    # The probe there dropped cycles (the recorded probe says <not supported>), as perf's check does here.
    assert meta["events"] == PERF_EVENTS[:3] and meta["dropped_events"] == {"cycles": "not supported here"}
    assert meta["warnings"] == ["perf: event cycles dropped (not supported here)"]
    assert meta["layout"] == {"sep": ",", "interval_ms": 100, "per": "system", "cgroups": []}
    assert abs(meta["wall_ns_at_start"] - manifest.clock["wall_ns_at_zero"]) < 10_000_000_000
    command = (folder / "command.txt").read_text().splitlines()[1]
    assert command.startswith("perf stat -x, -I 100 -a -e task-clock,context-switches,page-faults --interval-count ")
    assert command.endswith(" -o perf_stat.csv") and (folder / "stderr.log").exists()
    assert (folder / "perf_stat.csv").read_text() == (PERF_DATA / "perf_stat_system_interval.csv").read_text()
    perf = load_run_monitors(run_dir, manifest)["perf"]
    remote = perf.loc[perf["host"] == "h1"]
    assert len(remote) == 4 and remote["task-clock"].notna().all()  # the recording's four intervals
    # Perf's interval stamps count from its start on h1: placed on the run's axis by h1's offset.
    assert remote["t_s"].is_monotonic_increasing and -1 < remote["t_s"].min() < 1.5


def test_a_hosts_containers_are_watched_there_and_attribute_its_activations(killed_run, tmp_path):
    """docker on h1 (the stand-in): its events and snapshots streamed into monitors/h1/containers/,
    the stream stopped at the end; the same run read as a several-invoker OpenWhisk's attributes
    every activation with a record to h1, the one host whose containers of the action existed."""
    returncode, stdout, stderr = killed_run
    run_dir = Path(stdout.strip().splitlines()[-1])
    folder = run_dir / "monitors" / "h1" / "containers"
    meta = rundir.read_monitor_meta(folder)
    assert meta["status"] == "stopped" and meta["errors"] == [] and meta["wall_ns_at_end"] > meta["wall_ns_at_start"]
    assert (folder / "ps_start.jsonl").read_text() == (CONTAINERS_DATA / "ps_start.jsonl").read_text()
    events = (folder / "events.jsonl").read_text().splitlines()
    assert [json.loads(line)["Action"] for line in events[-4:]] == ["create", "start", "die", "destroy"]
    copy = tmp_path / run_dir.name
    shutil.copytree(run_dir, copy, ignore=shutil.ignore_patterns("analysis"))
    manifest = rundir.read_manifest(copy)
    manifest.platform = {"kind": "openwhisk", "apihost": "https://10.0.0.10", "source": "flags"}
    rundir.write_manifest(copy, manifest)
    frame = load_run(copy).invocations
    ran = frame["has_record"]
    assert ran.sum() >= 20 and (frame.loc[ran, "host"] == "h1").all()
    assert frame.attrs["host_attribution"]["attributed"] == {"h1": int(ran.sum())}
