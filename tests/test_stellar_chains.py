"""Function chains (faasprof/functions/chain_hop, faasprof/analyzer/chains.py): hop timestamps to transfer figures,
and a chain of 3 on the embedded localwhisk with inline and storage transfer at two sizes."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from faasprof import rundir
from faasprof.analyzer import chains
from faasprof.docker import docker_problem
from faasprof.invoker.storage import find_binary
from faasprof.rundir import activations
from tests.doc_commands import sh_shown
from tests.helpers import REPO_ROOT, run_cli

MS = 1_000_000


def _hop(start_ms, received_ms, send_ms=None, end_ms=None, payload=4096, left=1, cold=False, received=4096):
    hop = {
        "start_ns": start_ms * MS,
        "received_ns": received_ms * MS,
        "received_bytes": received,
        "mode": "storage",
        "payload_bytes": payload,
        "hops_left": left,
        "cold": cold,
        "end_ns": (end_ms or received_ms + 1) * MS,
    }
    if send_ms is not None:
        hop["send_start_ns"] = send_ms * MS
    return hop


def test_hop_frame_transfer_bandwidth_and_end_to_end(tmp_path):
    # head starts at 1000 ms, sends at 1002; hop 1 holds the payload at 1006 (4 ms), sends at 1010;
    # hop 2 (cold) holds it at 1018 (8 ms) and ends at 1020: end to end 20 ms.
    hops = [
        _hop(1000, 1000, send_ms=1002, end_ms=1020, left=3, received=0),
        _hop(1005, 1006, send_ms=1010, end_ms=1019, left=2),
        _hop(1015, 1018, end_ms=1020, cold=True),
    ]
    records = [
        {"activationId": "a" * 32, "response": {"result": {"hops": hops}}},
        {"activationId": "b" * 32, "response": {"result": {"hops": hops}}},  # not sent by this run: ignored
        {"activationId": "c" * 32, "response": {"result": {"error": "boom"}}},
    ]
    (tmp_path / rundir.ACTIVATIONS).write_text("".join(json.dumps(r) + "\n" for r in records) + "{cut short")
    invocations = pd.DataFrame(
        {
            "instance": ["i0", "i0"],
            "function": ["chain_hop"] * 2,
            "activation_id": ["a" * 32, "c" * 32],
            "client_latency_ms": [25.0, 3.0],
        }
    )
    frame = chains.hop_frame(tmp_path, invocations)
    chain = frame[frame["hop"] == -1].iloc[0]
    assert len(frame[frame["hop"] == -1]) == 1
    assert chain["chain_ms"] == pytest.approx(20.0) and chain["client_latency_ms"] == 25.0 and chain["complete"]
    transfers = frame[frame["hop"] >= 0].set_index("hop")
    assert transfers.loc[0, "transfer_ms"] == pytest.approx(4.0) and transfers.loc[1, "transfer_ms"] == pytest.approx(
        8.0
    )
    assert transfers.loc[0, "bandwidth_mbps"] == pytest.approx(4096 / 0.004 / 1e6)
    assert not transfers.loc[0, "consumer_cold"] and transfers.loc[1, "consumer_cold"]


def file_only_chains(folder) -> tuple[str, list[tuple[str, int]]]:
    """Where versitygw is missing: the guide's chains of three without s3 (inline and the shared
    directory, 1 KB and 128 KB, 3 s each), as a workload file in ``folder``."""
    instances, start = {}, 0.0
    for mode in ("inline", "file"):
        for payload in (1024, 131072):
            params = {"hops": 3, "payload_bytes": payload, "mode": "inline" if mode == "inline" else "storage"}
            if mode != "inline":
                params["backend"] = mode
            instances[f"{mode}-{payload}"] = {
                "application": "chain_hop",
                "source": str(REPO_ROOT / "faasprof" / "functions" / "chain_hop"),
                "distribution": "Uniform",
                "rate": 1,
                "activity_window": [start, start + 3],
                "params": params,
            }
            start += 3
    storage = {"object_store": False, "shared_dir": True, "bucket": "faasprof-chains"}
    data = {"test_name": "chain3", "test_duration_in_seconds": start, "random_seed": 1, "blocking_cli": True}
    (folder / "chain.json").write_text(json.dumps({**data, "storage": storage, "instances": instances}))
    return "chain.json", [(mode, payload) for mode in ("inline", "storage:file") for payload in (1024, 131072)]


@pytest.mark.slow
def test_chain_of_three_inline_and_storage_on_localwhisk(isolated_home, tmp_path):
    """docs/experiments.md's ``faasprof run faasprof/workload_configs/stellar_chain_smoke.json
    --analyze`` as shown (inline, s3 through versitygw and the shared directory, 1 KB and 256 KB);
    without versitygw (./setup.sh --with storage installs it) the same chains without s3."""
    (tmp_path / "faasprof").symlink_to(REPO_ROOT / "faasprof")
    if find_binary("versitygw"):
        result = sh_shown("faasprof run faasprof/workload_configs/stellar_chain_smoke.json --analyze", tmp_path)
        modes = ["inline", "storage:s3", "storage:file"]
        expected = {(mode, payload) for mode in modes for payload in (1024, 262144)}
    else:
        workload, configurations = file_only_chains(tmp_path)
        result = run_cli("run", workload, "--analyze", cwd=tmp_path, timeout=240)
        expected = set(configurations)
    assert result.returncode == 0, result.stderr[-2000:]
    run_dir = tmp_path / result.stdout.strip().splitlines()[-1]
    summary = json.loads((run_dir / "analysis" / "summary.json").read_text())
    groups = {(g["mode"], g["payload_bytes"]): g for g in summary["chains"]["groups"]}
    assert set(groups) == expected
    for group in groups.values():
        assert group["chain_length"] == 3 and group["complete"] == group["chains"] >= 2
        assert [h["hop"] for h in group["hops"]] == [0, 1]
        for hop in group["hops"]:
            assert 0 < hop["transfer_ms_p50"] < group["chain_ms_p50"]
    frame = chains.hop_frame(run_dir, pd.read_parquet(run_dir / "analysis" / "invocations.parquet"))
    handed = frame[frame["hop"] >= 0]
    assert (handed["received_bytes"] == handed["payload_bytes"]).all()  # every consumer got all P bytes
    # Each hand-over's bandwidth is its payload over its transfer time; a hop's p50 is theirs (with an
    # even count of chains not the payload over the transfer p50: the median of 1/x is not 1/median).
    assert handed["bandwidth_mbps"].to_numpy() == pytest.approx(
        (handed["payload_bytes"] / handed["transfer_ms"] / 1e3).to_numpy()
    )
    for group in groups.values():
        for hop in group["hops"]:
            rows = handed[(handed["instance"] == group["instance"]) & (handed["hop"] == hop["hop"])]
            assert hop["bandwidth_mbps_p50"] == pytest.approx(rows["bandwidth_mbps"].median(), rel=1e-3)
    report = (run_dir / "analysis" / "report.html").read_text()
    assert "Function chains (STeLLAR)" in report and "Per-hop transfer" in report and "transfer p50 ms" in report


@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.skipif(docker_problem() is not None, reason=f"isolation docker unavailable: {docker_problem()}")
def test_chain_under_docker_isolation_reaches_the_api(cli, isolated_home, tmp_path):
    # Each hop runs in a container: it calls the next through __OW_API_HOST, which must not be
    # the server's loopback address (the container's own) but the bridge gateway where it listens.
    workload = tmp_path / "chain-docker.json"
    workload.write_text(
        json.dumps(
            {
                "test_name": "chain-docker",
                "test_duration_in_seconds": 4,
                "random_seed": 1,
                "blocking_cli": True,
                "instances": {
                    "c": {
                        "application": "chain_hop",
                        "source": str(REPO_ROOT / "faasprof" / "functions" / "chain_hop"),
                        "distribution": "Uniform",
                        "rate": 1,
                        "params": {"hops": 2, "payload_bytes": 2048, "mode": "inline"},
                    }
                },
            }
        )
    )
    result = cli("run", workload, "--isolation", "docker", "--analyze", "--out", tmp_path / "runs", timeout=280)
    assert result.returncode == 0, result.stderr[-2000:]
    run_dir = tmp_path / "runs" / result.stdout.strip().splitlines()[-1].rsplit("/", 1)[-1]
    (group,) = json.loads((run_dir / "analysis" / "summary.json").read_text())["chains"]["groups"]
    assert group["chain_length"] == 2 and group["complete"] == group["chains"] >= 3
    frame = chains.hop_frame(run_dir, pd.read_parquet(run_dir / "analysis" / "invocations.parquet"))
    assert (frame.loc[frame["hop"] == 0, "received_bytes"] == 2048).all()


def test_the_hops_key_is_found_across_a_block_boundary_and_not_where_absent(tmp_path, monkeypatch):
    monkeypatch.setattr(activations, "SCAN_BLOCK_BYTES", 8)
    path = tmp_path / "a.jsonl"
    for offset in range(12):
        path.write_bytes(b"x" * offset + chains.HOPS_KEY + b"y" * 5)
        assert activations.scan_mentions(path, chains.HOPS_KEY), offset
    path.write_bytes(b"x" * 40 + chains.HOPS_KEY[:-1] + b"y" * 40)
    assert not activations.scan_mentions(path, chains.HOPS_KEY)
