"""The real platform in the tests (issue 35 item 6): faasprof against Apache OpenWhisk 2.0.0 standalone.

Marked ``openwhisk`` (out of the default suite). Needs the build of ``./setup.sh --openwhisk``,
Docker and faasprof's runtime images; without the build every test skips with one line. The tier
owns its server: it stops one already running, starts its own with ``faasprof local start
--platform openwhisk --pause-grace-ms 250`` (the main job of docs/platforms.md: with the paper's 50 ms a
balanced band needs a capacity above about 40/s, more than a small host gives), restarts it with
2.0.0's 10 s grace,
then with a 1 s idle-container timeout for reproduce, and at the end stops it and checks that no
action container is left. In a HOME of its own, so the capacity it measures and the connection it
records touch nothing of yours. About 4.5 minutes on a 2-core host once built (4 min 17 s and
4 min 27 s at load 5 to 8; ``reproduce --quick`` 96 s of it, 5 min before its resumed calls waited
the server's 50 ms grace instead of 11 s):

    .venv/bin/python -m pytest -m openwhisk -n 0 tests/test_openwhisk_tier.py
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from faasprof import rundir
from faasprof.platforms.openwhisk.standalone import standalone_home
from faasprof.workload.trace_synth import write_day
from tests.doc_commands import shown
from tests.helpers import REPO_ROOT, run_cli

pytestmark = [pytest.mark.openwhisk, pytest.mark.timeout(420)]

HOME_DIR = standalone_home()
MAIN_JOB = REPO_ROOT / "faasprof" / "workload_configs" / "first_run_modes.json"
MAIN_JOB_PAUSE_GRACE_MS = 250
# The main job against OpenWhisk as docs/platforms.md shows it (tests/doc_commands.py).
MAIN_JOB_COMMAND = (
    "./setup.sh --openwhisk && .venv/bin/faasprof local start --platform openwhisk --pause-grace-ms 250 "
    "&& .venv/bin/faasprof run faasprof/workload_configs/first_run_modes.json --analyze; "
    ".venv/bin/faasprof local stop"
)


def _skip_reason() -> str | None:
    if not (HOME_DIR / "build.env").is_file():
        return f"OpenWhisk standalone is not built in {HOME_DIR}: run ./setup.sh --openwhisk"
    if (
        shutil.which("docker") is None
        or subprocess.run(["docker", "info"], capture_output=True, timeout=30).returncode != 0
    ):
        return "docker does not answer: OpenWhisk standalone runs its actions in Docker"
    return None


def _containers() -> list[str]:
    listed = subprocess.run(
        ["docker", "ps", "-a", "--filter", "name=wsk0_", "--format", "{{.Names}}"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    return [name for name in listed.stdout.split() if name]


class Tier:
    """The tier's HOME and the faasprof commands run in it (the build found through OPENWHISK_STANDALONE_HOME)."""

    def __init__(self, home: Path):
        self.home = home
        self.env = {"FAASPROF_TEST_HOME": str(home), "HOME": str(home), "OPENWHISK_STANDALONE_HOME": str(HOME_DIR)}

    def cli(self, *args, timeout: float = 240, env: dict | None = None) -> subprocess.CompletedProcess:
        return run_cli(*args, env={**self.env, **(env or {})}, timeout=timeout)

    def popen(self, *args) -> subprocess.Popen:
        return subprocess.Popen(
            [sys.executable, "-m", "faasprof", *map(str, args)],
            cwd=REPO_ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, **self.env},
        )

    def start(self, *flags: str) -> None:
        started = self.cli("local", "start", "--platform", "openwhisk", *flags)
        assert started.returncode == 0, started.stderr

    def stop(self) -> subprocess.CompletedProcess:
        return self.cli("local", "stop", "--platform", "openwhisk", timeout=180)


@pytest.fixture(scope="module")
def tier(tmp_path_factory):
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)
    tier = Tier(tmp_path_factory.mktemp("tier-home"))
    tier.stop()  # the tier owns its server: a fresh one, cold caches and all
    tier.start("--pause-grace-ms", str(MAIN_JOB_PAUSE_GRACE_MS))
    yield tier
    stopped = tier.stop()
    assert stopped.returncode == 0, stopped.stderr
    assert _containers() == [], "action containers left behind after local stop"
    assert "nothing to stop" in tier.stop().stderr  # a second stop is a no-op


def _workload(tmp_path: Path, name: str, duration_s: float, instances: dict) -> Path:
    path = tmp_path / f"{name}.json"
    path.write_text(
        json.dumps(
            {
                "test_name": name,
                "test_duration_in_seconds": duration_s,
                "random_seed": 5,
                "blocking_cli": False,
                "instances": instances,
            }
        )
    )
    return path


def _run_dir(stdout: str) -> Path:
    return Path(stdout.strip().splitlines()[-1])


def _summary(run_dir: Path) -> dict:
    return json.loads((run_dir / "analysis" / "summary.json").read_text())


def _assert_records_complete(run_dir: Path, summary: dict) -> None:
    """planned = rows = final outcomes; every activation id has its record or a reason it is missing."""
    manifest = rundir.read_manifest(run_dir).to_json()
    rows = rundir.read_invocations(run_dir)
    assert manifest["counts"]["planned"] == len(rows)
    records = summary["records"]
    assert records["with_activation_id"] == sum(1 for row in rows if row["activation_id"])
    assert records["found"] + records["missing"] == records["with_activation_id"]
    assert records["missing"] == 0 or (manifest.get("activations") or {}).get("missing_why"), manifest.get(
        "activations"
    )


def test_deploy_creates_the_catalogue_action(tier):
    done = tier.cli("deploy", "json_dumps")
    assert done.returncode == 0, done.stderr
    assert "json_dumps" in done.stdout + done.stderr


def test_main_job_measures_the_capacity_then_gives_three_modes_with_every_record(tier, tmp_path):
    """The main job as docs/platforms.md shows it: a capacity search first (the tier's HOME has none
    stored), then under-invoked, balanced and over-invoked phases, planned = rows = records."""
    words = shown(MAIN_JOB_COMMAND)  # the guide's command, as run here: this server, this grace, this workload
    assert words[words.index("--pause-grace-ms") + 1] == str(MAIN_JOB_PAUSE_GRACE_MS)
    assert str(MAIN_JOB.relative_to(REPO_ROOT)) in words
    done = tier.cli("run", MAIN_JOB, "--analyze", "--out", tmp_path / "runs", timeout=330)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "no stored capacity of json_dumps" in done.stderr and "capacity of json_dumps: " in done.stderr
    assert "json_dumps" in (tier.home / ".local" / "share" / "faasprof" / "capacity.json").read_text()
    assert "interrupted" not in done.stderr
    run_dir = _run_dir(done.stdout)
    summary = _summary(run_dir)
    assert summary["run"]["status"] == "complete"
    modes = {instance["instance"]: instance["phases"][0]["mode"] for instance in summary["instances"]}
    assert modes == {"under": "under-invoked", "balanced": "balanced", "over": "over-invoked"}, modes
    _assert_records_complete(run_dir, summary)


def _wait_for_rows(out: Path, proc: subprocess.Popen, rows: int, timeout_s: float = 120) -> Path:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for run_dir in sorted(p for p in out.glob("*") if p.is_dir()):
            csv = run_dir / "invocations.csv"
            if csv.exists() and csv.read_text().count("\n") > rows:
                return run_dir
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.2)
    proc.kill()
    raise AssertionError("no rows appeared")


def test_ctrl_c_mid_run_is_interrupted_without_a_traceback_and_keeps_its_records(tier, tmp_path):
    config = _workload(
        tmp_path, "ctrlc", 30, {"a": {"application": "json_dumps", "distribution": "Uniform", "rate": 5}}
    )
    out = tmp_path / "runs"
    proc = tier.popen("run", config, "--analyze", "--out", out)
    try:
        _wait_for_rows(out, proc, rows=15)
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 1, stderr[-3000:]
    assert "Traceback" not in stderr
    run_dir = _run_dir(stdout)
    manifest = rundir.read_manifest(run_dir).to_json()
    assert manifest["status"] == "interrupted" and "SIGINT" in manifest["status_reason"]
    _assert_records_complete(run_dir, _summary(run_dir))


def test_kill_9_mid_run_then_analyze_with_no_flags_fetches_its_records(tier, tmp_path):
    config = _workload(
        tmp_path, "kill9", 30, {"a": {"application": "json_dumps", "distribution": "Uniform", "rate": 5}}
    )
    out = tmp_path / "runs"
    proc = tier.popen("run", config, "--out", out, "--quiet")
    try:
        run_dir = _wait_for_rows(out, proc, rows=15)
        proc.kill()
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert rundir.read_manifest(run_dir).status == "running"  # nobody could finish it
    done = tier.cli("analyze", run_dir, "--no-plots")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "activation records from platform http://127.0.0.1:" in done.stderr
    summary = _summary(run_dir)
    records = summary["records"]
    assert records["found"] >= 15 and records["found"] + records["missing"] == records["with_activation_id"]


def test_a_trace_sample_runs_on_openwhisk_with_its_fidelity_report(tier, tmp_path):
    """A 4-function, 1-minute sample of a generated trace day (issue 45): calibrated on OpenWhisk
    standalone (in a cache of its own, which holds no calibration: `trace sample` measures it on the
    platform `local start` left; in the user's cache, which conftest keeps for every test, an
    earlier tier's was taken instead), run there, and its fidelity report: per-minute counts equal
    to the trace's as scaled, every record."""
    day = write_day(tmp_path / "day", functions=300, seed=4, median_duration_ms=5.0, median_rate_per_min=0.5)
    sample = tmp_path / "sample"
    done = tier.cli(
        "trace", "sample", day.invocations.parent, "-n", "4", "--minutes", "700-700", "--warmup-minutes", "0",
        "--scale-to", "1", "--no-alloc", "--out", sample, env={"FAASPROF_CACHE_DIR": str(tmp_path / "cache")},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "calibration stored in" in done.stderr
    calibration = json.loads((sample / "workload.json").read_text())["trace"]["calibration"]
    assert calibration["platform"].startswith("openwhisk http://127.0.0.1:"), calibration
    done = tier.cli("run", sample / "workload.json", "--analyze", "--out", tmp_path / "runs", timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    run_dir = _run_dir(done.stdout)
    summary = _summary(run_dir)
    assert summary["run"]["status"] == "complete"
    total = summary["trace_fidelity"]["total"]
    assert total["exact"] and total["sent"] == total["trace"] == len(rundir.read_invocations(run_dir))
    assert all(f["duration"].get("n", 0) >= 1 for f in summary["trace_fidelity"]["functions"] if f["sent"])
    assert summary["trace_fidelity"]["calibration"]["warning"] is None
    _assert_records_complete(run_dir, summary)


def test_start_classes_follow_the_servers_pause_grace(tier, tmp_path):
    """With 2.0.0's own 10 s grace a container is never paused between calls 1 s apart: after the
    first (cold) call every call is warm, and the analyzer knows the grace from the run. It restarts
    the server, so it runs after the tests on the default settings."""
    tier.stop()
    tier.start("--pause-grace-ms", "10000")
    config = _workload(
        tmp_path, "grace", 8, {"steady": {"application": "json_dumps", "distribution": "Uniform", "rate": 1}}
    )
    done = tier.cli("run", config, "--analyze", "--out", tmp_path / "runs")
    assert done.returncode == 0, done.stderr[-3000:]
    run_dir = _run_dir(done.stdout)
    manifest = rundir.read_manifest(run_dir).to_json()
    assert manifest["platform"]["settings"]["pause_grace_ms"] == 10000
    summary = _summary(run_dir)
    assert (
        summary["records"]["pause_grace_ms"] == 10000
        and summary["records"]["pause_grace_source"] == "manifest platform"
    )
    counts = summary["start_classes"]["counts"]
    assert counts.get("resumed", 0) == 0 and counts.get("unknown", 0) == 0, counts
    assert counts.get("cold", 0) >= 1 and counts.get("warm", 0) >= 5, counts
    _assert_records_complete(run_dir, summary)


REPRODUCED_FIGURES = ("4", "5", "15", "16")


def test_reproduce_quick_gives_a_verdict_per_figure(tier, tmp_path):
    """``faasprof reproduce --quick`` on the standalone (issue 35 item 2): every experiment runs to
    its end and each of Figs 4, 5, 15 and 16 gets a verdict, reproduced or not, none "not measurable"
    or failed. Its capacity is the one the main job stored (no second search), so it runs after it;
    last, on a server restarted with the default grace and OpenWhisk's idle-container timeout at 1 s
    (its default is 10 minutes), so that Fig 5's cold calls, 2.5 s apart, each find no container."""
    tier.stop()
    tier.start("--idle-timeout-s", "1")
    figures = ",".join(REPRODUCED_FIGURES)
    done = tier.cli("reproduce", "--quick", "--figures", figures, "--out", tmp_path / "repro", timeout=400)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr and "interrupted" not in done.stderr
    out = Path(done.stdout.strip().splitlines()[-1])
    document = json.loads((out / "reproduce.json").read_text())
    assert document["isolation"]["chosen"] == "openwhisk", document["isolation"]
    verdicts = {entry["figure"]: entry["verdict"] for entry in document["figures"]}
    assert sorted(verdicts) == sorted(REPRODUCED_FIGURES), verdicts
    # "indicative": beyond noise on fewer cold starts or functions than a verdict needs, which --quick gives
    # Fig 5 (reproduce_rules.INDICATIVE); never "not measurable here".
    assert set(verdicts.values()) <= {"reproduced", "not reproduced", "indicative"}, verdicts
    for number in REPRODUCED_FIGURES:
        assert f"Fig {number} (" in done.stdout, done.stdout
