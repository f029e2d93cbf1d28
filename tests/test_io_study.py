"""I/O studies end to end on the embedded localwhisk with real storage servers: every io-*
function's breakdown adds up to its activation's run time within the stated tolerance
(analyzer.io_breakdown.TOLERANCE_MS / TOLERANCE_SHARE), a memory x concurrency study writes its
CSV and plots, and the batch cost arithmetic (GB-s, 1 ms and 100 ms billing)."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from faasprof.analyzer import io_breakdown
from faasprof.experiments import io_study
from faasprof.invoker.run import execute
from faasprof.invoker.storage import find_binary
from faasprof.workload.spec import load_workload, workload_from_dict
from tests.helpers import REPO_ROOT, tracked_files

needs_servers = pytest.mark.skipif(
    find_binary("versitygw") is None or find_binary("iperf3") is None,
    reason="versitygw and iperf3 needed (./setup.sh --with storage installs them)",
)


def test_batch_cost_with_billing_rounding():
    frame = pd.DataFrame(
        {
            "batch": [0, 0, 1],
            "duration_ms": [150.0, 201.0, 40.0],
            "memory_mb": [256.0, 256.0, 512.0],
            "start_ms": [1000.0, 1010.0, 5000.0],
            "end_ms": [1150.0, 1211.0, 5040.0],
            "client_latency_ms": [160.0, 215.0, 45.0],
            "network_in_bytes": [10_000_000, 10_000_000, 5_000_000],
            "network_out_bytes": [0, 0, 0],
            "network_mb_per_s": [80.0, 70.0, 150.0],
        }
    )
    batches = io_breakdown.batch_frame(frame)
    first, second = batches.iloc[0], batches.iloc[1]
    assert first["concurrency"] == 2 and first["response_ms"] == 211.0
    assert first["gb_s"] == pytest.approx(0.25 * (0.150 + 0.201))
    assert first["gb_s_1ms"] == pytest.approx(0.25 * (0.150 + 0.201))
    assert first["gb_s_100ms"] == pytest.approx(0.25 * (0.2 + 0.3))
    assert first["aggregate_network_mb_per_s"] == pytest.approx(20.0 / 0.211)
    assert second["gb_s_100ms"] == pytest.approx(0.5 * 0.1) and second["concurrency"] == 1


def test_study_points_are_the_product_in_order():
    points = io_study.study_points({"memory_mb": [128, 256], "concurrency": [1, 4], "params": {"size_bytes": [1, 2]}})
    assert len(points) == 8
    assert points[0] == {"memory_mb": 128, "concurrency": 1, "params": {"size_bytes": 1}}
    assert io_study.point_label(points[-1]) == "mem256-c4-size_bytes2"


def test_point_workload_is_a_burst_of_the_variant():
    data = json.loads((REPO_ROOT / "faasprof" / "workload_configs" / "io_concurrency_cost.json").read_text())
    point = {"memory_mb": 512, "concurrency": 8, "params": {"size_bytes": 5}}
    applied = io_study.apply_point(data, point, 3)
    spec = applied["instances"]["download"]
    assert spec["application"] == "io-object-512" and spec["burst_size"] == 8 and spec["params"]["size_bytes"] == 5
    assert "io_study" not in applied and applied["test_duration_in_seconds"] == 15
    workload_from_dict(applied)
    # A studied instance that replayed a trace (or was periodic) loses every key of its distribution.
    data["instances"]["download"].update(distribution="Trace", trace_file="x.csv", trace_scale=2, phase=False)
    data["instances"]["download"].pop("rate", None)
    workload_from_dict(io_study.apply_point(data, point, 3))


@pytest.mark.parametrize(
    "name",
    sorted(
        p.name
        for p in tracked_files(REPO_ROOT / "faasprof" / "workload_configs")
        if p.match("io_*.json") and p.parent.name == "workload_configs"
    ),
)
def test_ready_workloads_are_valid_studies(name):
    workload = load_workload(REPO_ROOT / "faasprof" / "workload_configs" / name)
    assert io_study.check_study(workload)
    assert "Kookmin" in workload.description or "FunctionBench" in workload.description


@pytest.mark.slow
def test_cli_refuses_a_workload_without_a_study(tmp_path):
    path = tmp_path / "w.json"
    path.write_text(
        json.dumps(
            {
                "test_name": "t",
                "test_duration_in_seconds": 2,
                "random_seed": 1,
                "blocking_cli": True,
                "instances": {
                    "a": {"application": "io-disk", "distribution": "Burst", "burst_size": 1, "burst_gap_s": 1}
                },
            }
        )
    )
    done = subprocess.run(
        [sys.executable, "-m", "faasprof.experiments.io_study", str(path), "--out", str(tmp_path / "runs")],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO_ROOT,
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"io_study: {path}: no io_study block; add io_study with memory_mb, concurrency or params to sweep"
    ]


@pytest.mark.slow
@needs_servers
def test_every_io_function_breakdown_adds_up_to_its_run_time_on_localwhisk(tmp_path, isolated_home):
    # Batches 3 s apart: under load a cold start here takes 1-2 s, and a batch that finds its
    # sandbox still busy starts another cold one.
    burst = {"distribution": "Burst", "burst_size": 1, "burst_gap_s": 3}
    data = {
        "test_name": "io_all",
        "test_duration_in_seconds": 9,
        "random_seed": 5,
        "blocking_cli": True,
        "storage": {
            "object_store": True,
            "iperf3": True,
            "shared_dir": True,
            "objects": [{"key": "chunk-2000000", "size_bytes": 2000000}],
        },
        "instances": {
            "download": {
                "application": "io-object",
                **burst,
                "params": {"op": "download", "backend": "s3", "size_bytes": 2000000},
            },
            "upload": {
                "application": "io-object",
                **burst,
                "params": {"op": "upload", "backend": "file", "size_bytes": 1000000},
            },
            "disk": {"application": "io-disk", **burst, "params": {"pattern": "random", "size_bytes": 1048576}},
            "net": {"application": "io-net", **burst, "params": {"bytes": 4194304}},
            "image": {
                "application": "io-image",
                **burst,
                "params": {"backend": "s3", "count": 2, "width": 48, "height": 48, "prepare": True},
            },
            "words": {
                "application": "io-wordcount",
                **burst,
                "params": {"backend": "s3", "blocks": 2, "words_per_block": 3000, "prepare": True},
            },
        },
    }
    run_dir = execute(workload_from_dict(data), tmp_path / "runs")
    frame = io_breakdown.breakdown_frame(run_dir)
    assert set(frame["function"]) == {"io-object", "io-disk", "io-net", "io-image", "io-wordcount"}
    assert len(frame) == 18  # three batches of each instance in 9 s
    # Warm invocations: the stated tolerance. A cold start's first /run also pays the new
    # process's first-touch costs, which is why the studies leave their warm-up batch out.
    warm = frame[frame["init_ms"] == 0]
    assert set(warm["function"]) == set(frame["function"]), frame[["function", "init_ms", "run_ms"]].to_string()
    within = io_breakdown.within_tolerance(warm)
    assert within.all(), warm.loc[~within, ["function", "run_ms", "accounted_ms", "unaccounted_ms"]].to_string()
    assert (frame["accounted_ms"] <= frame["run_ms"] + 1).all()


@pytest.mark.slow
@needs_servers
def test_memory_and_concurrency_study_writes_bandwidth_and_cost_plots(tmp_path, isolated_home):
    data = {
        "test_name": "io_small",
        "test_duration_in_seconds": 2,
        "random_seed": 3,
        "blocking_cli": True,
        "storage": {"object_store": True, "objects": [{"key": "chunk-1000000", "size_bytes": 1000000}]},
        "instances": {
            "dl": {
                "application": "io-object",
                "distribution": "Burst",
                "burst_size": 1,
                "burst_gap_s": 1,
                "params": {"op": "download", "backend": "s3", "size_bytes": 1000000},
            }
        },
        "io_study": {"memory_mb": [128, 256], "concurrency": [1, 3], "batches": 2, "batch_gap_s": 1, "cooldown_s": 0},
    }
    study_dir = io_study.run_study(workload_from_dict(data), tmp_path / "runs")
    frame = pd.read_csv(study_dir / io_study.STUDY_CSV)
    assert list(zip(frame["memory_mb"], frame["concurrency"])) == [(128, 1), (128, 3), (256, 1), (256, 3)]
    assert (frame["invocations"] == frame["concurrency"]).all()  # the warm-up batch is left out
    assert (frame["network_mb_per_s_median"] > 0).all() and (frame["response_ms_median"] > 0).all()
    assert (frame["gb_s_100ms_per_batch"] >= frame["gb_s_1ms_per_batch"]).all()
    assert np.allclose(frame["breakdown_within_tolerance"], 1.0)
    for plot in ("io_bandwidth.png", "io_cost_response.png"):
        assert (study_dir / plot).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert json.loads((study_dir / io_study.STUDY_FILE).read_text())["format_version"] == io_study.FORMAT_VERSION
