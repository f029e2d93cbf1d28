"""``faasprof run --isolation docker``: a workload on the embedded localwhisk with Docker sandboxes,
its cgroup samples taken from Docker's cgroups. Skips (with the reason) where Docker cannot run."""

from __future__ import annotations

import csv
import json
import subprocess

import pytest

from faasprof.docker import docker_problem
from faasprof.rundir import read_invocations, read_manifest
from tests.helpers import run_cli

pytestmark = [pytest.mark.timeout(300), pytest.mark.slow]  # whole runs in containers

PROBLEM = docker_problem()


@pytest.mark.skipif(PROBLEM is not None, reason=f"isolation docker unavailable: {PROBLEM}")
def test_run_with_isolation_docker_flag_over_the_workload_setting(tmp_path, isolated_home):
    workload = {
        "test_name": "dockerrun",
        "test_duration_in_seconds": 3,
        "random_seed": 3,
        "blocking_cli": True,
        # The flag below overrides this: the run must use containers.
        "platform": {"localwhisk": {"isolation": "rlimit", "pause_grace_ms": 50}},
        "instances": {"j": {"application": "json_dumps", "distribution": "Uniform", "rate": 2}},
        "monitoring": {"cgroups": {"interval_ms": 100, "required": True}},
    }
    config = tmp_path / "dockerrun.json"
    config.write_text(json.dumps(workload))
    out = tmp_path / "runs"
    done = run_cli("run", config, "--out", out, "--isolation", "docker", "--quiet", timeout=280)
    assert done.returncode == 0, done.stderr
    run_dir = out / done.stdout.strip().splitlines()[-1].rsplit("/", 1)[-1]
    manifest = read_manifest(run_dir).to_json()
    assert manifest["status"] == "complete"
    described = json.dumps(manifest["platform"])
    assert '"isolation": "docker"' in described, described[:2000]
    rows = read_invocations(run_dir)
    assert rows and all(r["outcome"] == "ok" for r in rows), [r["outcome"] for r in rows]
    records = [json.loads(line) for line in (run_dir / "activations.jsonl").read_text().splitlines() if line.strip()]
    assert len(records) == len(rows)
    first = min(records, key=lambda r: r["start"])
    assert {a["key"]: a["value"] for a in first["annotations"]}["containerState"] == "cold"
    # The cgroup collector sampled Docker's cgroups: children named by 64-hex container ids.
    with open(run_dir / "monitors" / "cgroups" / "samples.csv") as handle:
        sandboxes = {row["sandbox"] for row in csv.DictReader(line for line in handle if not line.startswith("#"))}
    ids = {s for s in sandboxes if len(s) == 64 and all(c in "0123456789abcdef" for c in s)}
    assert ids, sandboxes
    # ... and nothing of this run is left in Docker.
    left = subprocess.run(
        ["docker", "ps", "-aq", "--filter", "label=faasprof.localwhisk.owner_pid"],
        capture_output=True,
        text=True,
        timeout=30,
    ).stdout.split()
    assert not set(left) & {i[:12] for i in ids}


def test_bad_isolation_flag_is_exit_2(tmp_path, isolated_home):
    config = tmp_path / "w.json"
    config.write_text(
        json.dumps(
            {
                "test_name": "w",
                "test_duration_in_seconds": 1,
                "instances": {"j": {"application": "json_dumps", "distribution": "Uniform", "rate": 1}},
            }
        )
    )
    done = run_cli("run", config, "--out", tmp_path / "runs", "--isolation", "vm", timeout=60)
    assert done.returncode == 2
    assert "--isolation" in done.stderr and "docker" in done.stderr
