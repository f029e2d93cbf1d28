"""Real runs on the embedded localwhisk whose latency modes are known by construction.

* ``spin`` (5 ms of CPU) at 8/s with a 50 ms pause grace: every sandbox is paused between two
  invocations (125 ms apart), so every warm start resumes from pause: under-invoked.
* ``spin`` (50 ms of CPU) at 40/s with a pool of 128 MB (one 128 MB sandbox): one sandbox serves at
  most 20/s, so 40/s is twice its capacity: over-invoked.
"""

from __future__ import annotations

import pytest

pytest.importorskip("faasprof.localwhisk.embedded")

from faasprof import rundir  # noqa: E402
from faasprof.analyzer import analyze_run  # noqa: E402
from faasprof.analyzer.report import summary_lines  # noqa: E402
from faasprof.invoker.run import execute  # noqa: E402
from faasprof.localwhisk.embedded import start_embedded
from faasprof.platforms.openwhisk.client import OpenWhiskClient
from faasprof.platforms.openwhisk.connection import Connection
from faasprof.rundir.tables import read_invocations_frame  # noqa: E402
from faasprof.workload.spec import workload_from_dict  # noqa: E402


def _run(tmp_path, rate, service_ms, duration_s, local_settings):
    workload = workload_from_dict(
        {
            "test_name": f"spin-{rate:g}ps",
            "test_duration_in_seconds": duration_s,
            "random_seed": 7,
            "blocking_cli": True,
            "instances": {
                "spin": {
                    "application": "spin",
                    "distribution": "Uniform",
                    "rate": rate,
                    "params": {"service_ms": service_ms},
                }
            },
        }
    )
    run_dir = execute(workload, tmp_path, local_settings=local_settings)
    return run_dir, analyze_run(run_dir, plots=False)


@pytest.mark.slow
def test_spin_at_8_per_s_with_50ms_grace_is_under_invoked(tmp_path):
    run_dir, summary = _run(tmp_path, 8.0, 5, 4.0, {"pause_grace_ms": 50})
    phase = summary["instances"][0]["phases"][0]
    assert summary["run"]["status"] == "complete"
    assert summary["records"]["missing"] == 0
    assert phase["mode"] == "under-invoked", phase["mode_reasons"]
    assert phase["resumed_fraction"] > 0.8
    assert summary["start_classes"]["counts"]["cold"] >= 1


@pytest.mark.slow
def test_spin_at_twice_its_capacity_is_over_invoked(tmp_path):
    run_dir, summary = _run(tmp_path, 40.0, 50, 3.0, {"pause_grace_ms": 50, "user_memory_mb": 128})
    phase = summary["instances"][0]["phases"][0]
    assert phase["mode"] == "over-invoked", phase["mode_reasons"]
    assert phase["achieved_rps"] <= 0.9 * phase["offered_rps"]
    assert phase["wait_ms_mean"] > phase["execution_ms_mean"]  # queueing shows up in waitTime


RAISER = "def main(args):\n    raise ValueError('raised on purpose by the test')\n"


@pytest.mark.slow
def test_non_blocking_run_of_an_action_that_always_raises_counts_application_errors(tmp_path):
    """The run the issue reported as ``ok 24, app_error 0`` with the failures in the percentiles."""
    handle = start_embedded(pause_grace_ms=50)
    try:
        connection = Connection(handle.apihost, handle.auth, handle.namespace, source="embedded")
        with OpenWhiskClient(connection) as client:
            client.put_action(
                "raiser", {"exec": {"kind": "python:3", "code": RAISER}, "limits": {"memory": 128, "timeout": 10000}}
            )
        workload = workload_from_dict(
            {
                "test_name": "raiser",
                "test_duration_in_seconds": 3,
                "random_seed": 3,
                "blocking_cli": False,
                "platform": {"actions_deployed": True},
                "instances": {"raiser": {"application": "raiser", "distribution": "Uniform", "rate": 8}},
            }
        )
        run_dir = execute(workload, tmp_path, connection=connection)
        # Records of the last activations may still be on their way: the analysis asks again.
        summary = analyze_run(run_dir, connection, plots=False)
    finally:
        handle.stop()
    assert summary["run"]["outcomes"]["ok"] == 24 and summary["run"]["outcomes"]["app_error"] == 0
    assert summary["run"]["final_outcomes"]["application_error"] == 24
    assert summary["run"]["final_outcomes"]["success"] == 0
    (group,) = summary["failures"]["by_function"]
    assert group["final_outcome"] == "application_error" and "raised on purpose" in group["example_error"]
    function = summary["functions"][0]
    assert function["client_latency_ms_n"] == 0 and function["platform_latency_ms_n"] == 0
    assert function["failure_completion_latency_ms_n"] == 24
    phase = summary["instances"][0]["phases"][0]
    assert phase["mode"] == "unknown" and "0 successful" in phase["mode_reasons"]


@pytest.mark.slow
def test_a_muted_instance_sends_nothing_and_is_analyzed_without_a_phase(tmp_path):
    """``"rate": 0`` (FaaSProfiler's "no invocations"), alone in its window: no row, no phase, no
    division by its zero offered rate."""
    workload = workload_from_dict(
        {
            "test_name": "muted",
            "test_duration_in_seconds": 4,
            "random_seed": 3,
            "blocking_cli": True,
            "instances": {
                "live": {"application": "json_dumps", "distribution": "Uniform", "rate": 4, "activity_window": [0, 2]},
                "muted": {"application": "json_dumps", "distribution": "Poisson", "rate": 0, "activity_window": [2, 4]},
            },
        }
    )
    run_dir = execute(workload, tmp_path)
    manifest = rundir.read_manifest(run_dir)
    assert manifest.status == "complete" and manifest.verdict["passed"], manifest.verdict
    assert set(read_invocations_frame(run_dir)["instance"].astype(str)) == {"live"}
    summary = analyze_run(run_dir, plots=False)
    instances = {item["instance"]: item for item in summary["instances"]}
    assert (
        instances["muted"]["planned"] == 0
        and instances["muted"]["rate_rps"] == 0
        and instances["muted"]["phases"] == []
    )
    assert instances["live"]["planned"] == 8 and len(instances["live"]["phases"]) == 1
    # Said, not dropped: the modes table has no row for it.
    assert "  muted (muted, rate 0): not invoked" in summary_lines(summary)
    page = (run_dir / "analysis" / "report.html").read_text()
    assert "Not invoked: muted (muted, rate 0)." in page and "Blocking calls: live." in page
