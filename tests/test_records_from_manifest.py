"""Issue 35 item 3: every record a run's platform stored is fetched with no flags.

`analyze` fetches from the API host the run recorded in its manifest (not whatever platform is
configured now), with the key a wskprops or `local start` holds for that host; it completes records
that were still missing when the run saved them and records what is still missing in the manifest;
`run` on `local start`'s OpenWhisk standalone (its store is in memory until `local stop`) saves the
records itself.
"""

from __future__ import annotations

import json
import os

import pytest
from run_harness import run_dirs, write_workload
from test_invoker_fakeserver import AUTH, FakeOpenWhisk

from faasprof import rundir
from faasprof.invoker.run import execute
from faasprof.platforms.openwhisk.connection import Connection, write_local_props
from faasprof.workload.spec import workload_from_dict
from tests.helpers import run_cli

# Each runs faasprof as a subprocess against a fake OpenWhisk: seconds each.
pytestmark = pytest.mark.slow

WORKLOAD = {
    "test_name": "w",
    "test_duration_in_seconds": 1.0,
    "random_seed": 1,
    "blocking_cli": False,
    "platform": {"actions_deployed": True},
    "instances": {"a": {"application": "ok", "distribution": "Uniform", "rate": 6}},
}


def _saved_ids(run_dir) -> set[str]:
    return {json.loads(line)["activationId"] for line in (run_dir / rundir.ACTIVATIONS).read_text().splitlines()}


def _run_ids(run_dir) -> set[str]:
    return {row["activation_id"] for row in rundir.read_invocations(run_dir) if row["activation_id"]}


def test_analyze_fetches_from_the_manifests_api_host_with_the_key_held_for_it(tmp_path, isolated_home):
    with FakeOpenWhisk() as ran_on, FakeOpenWhisk() as configured_now:
        connection = Connection(apihost=ran_on.apihost, auth=AUTH, namespace="_", source="local")
        run_dir = execute(workload_from_dict(WORKLOAD, origin="w"), tmp_path / "runs", connection=connection)
        assert not rundir.has_records(run_dir)
        # ~/.wskprops now names another platform; only `local start`'s record names the run's.
        (isolated_home / ".wskprops").write_text(f"APIHOST={configured_now.apihost}\nAUTH={AUTH}\n")
        write_local_props(ran_on.apihost, AUTH, "_", os.getpid(), tmp_path / "data", {})
        done = run_cli("analyze", run_dir, "--no-plots", timeout=120)
    assert done.returncode == 0, done.stderr
    assert f"saved 6 of 6 activation records from platform {ran_on.apihost}" in done.stderr
    assert _saved_ids(run_dir) == _run_ids(run_dir) and len(_run_ids(run_dir)) == 6


def test_analyze_completes_records_missing_when_the_run_saved_them(tmp_path, isolated_home):
    with FakeOpenWhisk() as server:
        connection = Connection(apihost=server.apihost, auth=AUTH, namespace="_", source="wskprops")
        run_dir = execute(
            workload_from_dict(WORKLOAD, origin="w"), tmp_path / "runs", connection=connection, save_records=True
        )
        lines = (run_dir / rundir.ACTIVATIONS).read_text().splitlines()
        # As if two activations were still running when the run gave up waiting for them.
        (run_dir / rundir.ACTIVATIONS).write_text("\n".join(lines[2:]) + "\n")
        rundir.update_manifest(
            run_dir, activations={"expected": 6, "saved": 4, "missing": 2, "missing_why": "still running"}
        )
        (isolated_home / ".wskprops").write_text(f"APIHOST={server.apihost}\nAUTH={AUTH}\n")
        done = run_cli("analyze", run_dir, "--no-plots", timeout=120)
    assert done.returncode == 0, done.stderr
    assert _saved_ids(run_dir) == _run_ids(run_dir)
    activations = rundir.read_manifest(run_dir).activations
    assert activations["expected"] == 6 and activations["saved"] == 6 and activations["missing"] == 0


def test_run_on_local_openwhisk_standalone_saves_the_records_without_analyze(tmp_path, isolated_home):
    config = write_workload(
        tmp_path, duration=1.0, instances={"a": {"application": "ok", "distribution": "Uniform", "rate": 5}}
    )
    with FakeOpenWhisk() as server:
        write_local_props(
            server.apihost,
            AUTH,
            "guest",
            os.getpid(),
            tmp_path / "state",
            {"pause_grace_ms": 10000},
            platform="openwhisk",
        )
        done = run_cli("run", config, "--out", tmp_path / "runs", timeout=120)
    assert done.returncode == 0, done.stderr
    assert f"using the OpenWhisk standalone of `faasprof local start` at {server.apihost}" in done.stderr
    (run_dir,) = run_dirs(tmp_path / "runs")
    assert _saved_ids(run_dir) == _run_ids(run_dir) and len(_run_ids(run_dir)) == 5
    assert rundir.read_manifest(run_dir).activations["missing"] == 0
