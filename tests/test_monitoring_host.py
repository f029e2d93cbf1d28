"""Host metadata from fake /proc+/sys trees, and the `faasprof doctor` / `faasprof parse` commands."""

from __future__ import annotations

import json
import shutil
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from faasprof.monitoring.collectors import tool_versions
from faasprof.monitoring.host import Root, collect_host, mount_of, parse_cpu_list
from tests.helpers import run_cli

DATA = Path(__file__).resolve().parent / "data" / "monitoring"
HOSTS = DATA / "hosts"


def test_collect_host_xeon_11way():
    host = collect_host(HOSTS / "xeon_11way")
    assert host["cpu_model"].startswith("Intel(R) Xeon(R) Gold 6142")
    assert (host["logical_cpus"], host["physical_cores"], host["sockets"]) == (16, 8, 2)
    assert host["smt"] == "on" and host["smt_active"] is True
    assert host["governor"] == "powersave" and host["turbo"] is True
    assert host["hardware_pmu"] == "cpu" and host["pmu_name"] == "skylake"
    assert {"cqm_llc", "cqm_mbm_total", "cat_l3", "mba", "rdt_a"} <= set(host["rdt_flags"])
    resctrl = host["resctrl"]
    assert resctrl["mounted"] and resctrl["l3"] == {
        "num_closids": 16,
        "cbm_mask": "7ff",
        "ways": 11,
        "min_cbm_bits": 1,
        "shareable_bits": "600",
    }
    assert resctrl["mba"] == {"num_closids": 8, "min_bandwidth": 10, "bandwidth_gran": 10}
    assert resctrl["monitoring"]["features"] == ["llc_occupancy", "mbm_total_bytes", "mbm_local_bytes"]
    assert host["cgroup"]["version"] == "1" and {"cpu", "cpuacct", "memory", "freezer", "perf_event"} <= set(
        host["cgroup"]["controllers"]
    )
    assert host["kernel"] == "5.15.0-91-generic" and host["memory_bytes"] == 196608000 * 1024
    json.dumps(host)  # manifest-ready


def test_collect_host_xeon_20way_and_this_vm():
    xeon = collect_host(HOSTS / "xeon_20way")
    assert xeon["resctrl"] == {"supported": True, "mounted": False, "mount_point": None}
    assert xeon["governor"] == "performance" and xeon["turbo"] is False and xeon["smt"] == "off"
    assert xeon["cgroup"]["version"] == "2" and "memory" in xeon["cgroup"]["controllers"]
    vm = collect_host(HOSTS / "this_vm")
    assert vm["cpu_model"] == "AMD EPYC" and vm["logical_cpus"] == 2
    assert vm["hardware_pmu"] is None and vm["rdt_flags"] == [] and vm["governor"] is None and vm["turbo"] is None
    assert vm["resctrl"]["supported"] is False and vm["perf_event_paranoid"] == 2
    assert vm["cgroup"]["version"] == "hybrid"


def test_collect_host_empty_root_gives_nones(tmp_path):
    host = collect_host(tmp_path)
    assert host["cpu_model"] is None and host["logical_cpus"] is None and host["cgroup"]["version"] is None


def test_parse_cpu_list_and_tool_versions():
    assert parse_cpu_list("0-3,8,10-11\n") == [0, 1, 2, 3, 8, 10, 11]
    assert parse_cpu_list("") == []
    # Newlines separate like commas (cpus_list written by hand); strict refuses reversed ranges.
    assert parse_cpu_list("0-1\n4") == [0, 1, 4]
    assert parse_cpu_list("3-1") == []
    with pytest.raises(ValueError, match="bad CPU range '3-1'"):
        parse_cpu_list("3-1", strict=True)
    versions = tool_versions()
    if shutil.which("perf"):
        assert versions["perf"] and versions["perf"][0].isdigit()
    if not shutil.which("blktrace"):
        assert versions["blktrace"] is None


def test_mount_of_reads_proc_mounts_through_the_root():
    assert mount_of(Root(HOSTS / "xeon_11way"), "resctrl") == ("/sys/fs/resctrl", ("rw", "relatime"))
    assert mount_of(Root(HOSTS / "this_vm"), "resctrl") is None


# -- doctor -----------------------------------------------------------------------------------------


class _Api(BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802
        if self.path == "/api/v1":
            body = json.dumps(
                {"description": "OpenWhisk", "limits": {"actions_per_minute": 600, "concurrent_actions": 100}}
            ).encode()
            self.send_response(200)
        else:
            body = b"{}"
            self.send_response(404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def api():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Api)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _workload(tmp_path: Path, monitoring: dict, platform: dict | None = None) -> Path:
    data = {"test_name": "doctor", "test_duration_in_seconds": 1, "instances": {}, "monitoring": monitoring}
    if platform:
        data["platform"] = platform
    path = tmp_path / "w.json"
    path.write_text(json.dumps(data))
    return path


def test_doctor_xeon_tree_ready_with_rdt_and_cgroups(tmp_path, api, isolated_home):
    workload = _workload(tmp_path, {"rdt": True, "cgroups": True}, {"apihost": api, "auth": "user:key"})
    done = run_cli("doctor", "--root", HOSTS / "xeon_11way", "--workload", workload, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "L3: 16 CLOSes, 11 ways (cbm_mask 7ff" in done.stdout
    assert "MBA: 8 CLOSes, min 10%, step 10%" in done.stdout
    assert f"OpenWhisk at {api} (workload); limits: actions_per_minute=600, concurrent_actions=100" in done.stdout
    assert "governor powersave: frequency varies with load; fix: cpupower frequency-set -g performance" in done.stdout
    assert "SMT on" in done.stdout and "turbo boost on" in done.stdout
    assert "hardware PMU present (cpu, skylake)" in done.stdout
    assert done.stderr.strip().splitlines()[-1] == "ready: cgroups, platform, rdt available"
    assert "user:key" not in done.stdout + done.stderr


def test_doctor_this_vm_tree_not_ready_for_rdt(tmp_path, api, isolated_home):
    workload = _workload(
        tmp_path, {"rdt": True, "perf": {"events": ["cycles", "instructions"]}}, {"apihost": api, "auth": "u:k"}
    )
    done = run_cli("doctor", "--root", HOSTS / "this_vm", "--workload", workload, "--json", timeout=60)
    assert done.returncode == 3, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["failing"] == ["perf", "rdt"]
    texts = [f["text"] for f in report["findings"] if f["state"] == "MISSING"]
    assert any("no RDT monitoring flags" in t for t in texts)
    assert any("no hardware PMU" in t for t in texts)
    assert done.stderr.strip() == f"not ready: perf, rdt unavailable (asked for by {workload})"


def test_doctor_unreachable_platform_and_20way_tree(tmp_path, isolated_home):
    workload = _workload(tmp_path, {"cgroups": True}, {"apihost": "http://127.0.0.1:9", "auth": "u:k"})
    done = run_cli("doctor", "--root", HOSTS / "xeon_20way", "--workload", workload, timeout=60)
    assert done.returncode == 3
    assert "platform  MISSING http://127.0.0.1:9/api/v1 unreachable" in done.stdout
    assert "resctrl is supported but not mounted; fix: mount -t resctrl resctrl /sys/fs/resctrl" in done.stdout
    assert "governor performance" in done.stdout and "turbo boost off" in done.stdout
    assert "cgroup v2" in done.stdout


@pytest.mark.slow
def test_doctor_bad_arguments(tmp_path, isolated_home):
    done = run_cli("doctor", "--root", tmp_path / "nope")
    assert done.returncode == 2 and "--root:" in done.stderr and "is not a directory" in done.stderr
    done = run_cli("doctor", "--workload", tmp_path / "missing.json")
    assert done.returncode == 2 and "missing.json: no such file" in done.stderr
    (tmp_path / "bad.json").write_text("{")
    done = run_cli("doctor", "--workload", tmp_path / "bad.json")
    assert done.returncode == 2 and "not valid JSON" in done.stderr


# -- parse ------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_parse_perf_to_csv(tmp_path):
    out = tmp_path / "perf.csv"
    done = run_cli("parse", "perf", DATA / "perf" / "perf_stat_percpu_interval.csv", "--out", out)
    assert done.returncode == 0, done.stderr
    assert "6 rows" in done.stderr
    import pandas as pd

    frame = pd.read_csv(out)
    assert {"time_s", "unit_id", "task-clock", "cpu_utilization", "ipc"} <= set(frame.columns)
    assert set(frame["unit_id"]) == {"CPU0", "CPU1"}
    assert frame["cycles"].isna().all()
    long = run_cli("parse", "perf", DATA / "perf" / "perf_stat_percpu_interval.csv", "--long")
    assert long.returncode == 0 and long.stdout.splitlines()[0].startswith(
        "time_s,agg,unit_id,n_cpus,event,value,status"
    )
    assert "not_supported" in long.stdout


@pytest.mark.slow
def test_parse_pqos_blktrace_to_stdout():
    done = run_cli("parse", "pqos", DATA / "pqos" / "pqos_csv_issue28.csv", "--keep-first", "--peak-mbps", "2000000")
    assert done.returncode == 0, done.stderr
    assert '"0-15,32-47"' in done.stdout and "mem_bw_share" in done.stdout.splitlines()[0]
    done = run_cli("parse", "blktrace", DATA / "blkparse" / "blkparse_sata_fio.txt", "--interval-ms", "100")
    assert done.returncode == 0
    header, row = done.stdout.splitlines()[:2]
    assert header.startswith("elapsed_s,device,read_mbps,write_mbps")
    assert row.startswith("33.7,8,64,") or row.startswith('33.7,"8,64",')


@pytest.mark.slow
def test_parse_errors(tmp_path):
    done = run_cli("parse", "perf", tmp_path / "none.csv")
    assert (
        done.returncode == 2
        and done.stderr.strip() == f"{tmp_path / 'none.csv'}: no such file; pass the raw perf output file"
    )
    (tmp_path / "empty.txt").write_text("hello\n")
    done = run_cli("parse", "pqos", tmp_path / "empty.txt")
    assert done.returncode == 2 and "no pqos rows found" in done.stderr
    done = run_cli("parse", "blktrace", DATA / "blkparse" / "blkparse_sata_fio.txt", "--interval-ms", "0")
    assert done.returncode == 2 and "--interval-ms: must be > 0" in done.stderr
