"""``faasprof reproduce`` end to end, reduced: the hidden ``--tiny`` profile on the embedded
localwhisk with process sandboxes, Figs 4, 5, 15 and 16 (half a minute on 2 cores). The capacity
comes from a store seeded in the test's own directory, so no capacity search runs. The verdicts of
such short runs mean nothing; what is checked is that each one carries its evidence: the numbers,
n, the interval fields, the rule, the platform and run directories that exist and re-analyse."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

pytest.importorskip("faasprof.localwhisk.embedded")

from faasprof.experiments import capacity_store  # noqa: E402
from faasprof.experiments.reproduce_rules import INDICATIVE, NOT_REPRODUCED, REPRODUCED, contradiction  # noqa: E402
from tests.helpers import REPO_ROOT  # noqa: E402


@pytest.mark.slow
def test_a_reduced_reproduce_writes_the_report_with_each_verdicts_evidence(cli, tmp_path, isolated_home):
    store = tmp_path / "capacity.json"
    key = capacity_store.key(
        capacity_store.host_identity(),
        capacity_store.platform_identity(None, {"isolation": "auto"}),
        "json_dumps",
        None,
    )
    # Seeded near json_dumps' real capacity on 2 cores (about 70/s): Fig 4's 2x phase is then
    # over-invoked. Seeded at 20/s, 40/s kept up and Fig 4 ran a third phase at 80/s (10 s more).
    capacity_store.record(
        key, {"capacity_rps": 50.0, "bounds_rps": [50.0, 100.0], "result_file": "seeded by the test"}, path=store
    )
    done = cli(
        "reproduce",
        "--tiny",
        "--isolation",
        "process",
        "--figures",
        "4,5,15-16",
        "--out",
        tmp_path / "out",
        timeout=300,
        env={"FAASPROF_CAPACITY_STORE": str(store)},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = Path(done.stdout.strip().splitlines()[-1])
    assert "expected about" in done.stderr and "ETA" in done.stderr
    doc = json.loads((out / "reproduce.json").read_text())
    assert doc["format_version"] == 1 and doc["profile"] == "tiny" and doc["isolation"]["chosen"] == "process"
    assert doc["platform"] == "localwhisk, process isolation" and doc["wall_s"] > 0
    assert [f["figure"] for f in doc["figures"]] == ["4", "5", "15", "16"]
    page = (out / "report.html").read_text()
    for entry in doc["figures"]:
        assert entry["verdict"] in (REPRODUCED, NOT_REPRODUCED, INDICATIVE), entry
        assert entry["reason"] and entry["rule"] and entry["paper_value"] and entry["finding"]
        assert isinstance(entry["value"], (int, float)) and entry["n"] > 0
        assert {"ci_low", "ci_high", "unit", "label"} <= set(entry)
        assert entry["platform"] == "localwhisk, process isolation"
        assert entry["run_dirs"] and entry["plots"] and entry["details"]
        for run, command in zip(entry["run_dirs"], entry["commands"], strict=True):
            assert (out / run / "manifest.json").is_file(), run
            # The command runs from where reproduce ran (the checkout), not from its folder.
            assert command in page and (REPO_ROOT / shlex.split(command)[2] / "manifest.json").is_file()
        for plot in entry["plots"]:
            assert (out / plot).is_file()
        assert f"Fig {entry['figure']}: {entry['title']}: {entry['verdict']}" in page
    modes = doc["figures"][0]
    assert modes["capacity"] == {"capacity_rps": 50.0, "source": "seeded by the test"}
    assert {"fraction", "rate_rps", "mode", "n", "p50_ms", "ci_low", "ci_high", "pause_grace_ms"} <= set(
        modes["details"][0]
    )
    assert modes["localwhisk_vs_openwhisk"][0]["text"].startswith("Capacity (changes conclusions).")
    breakdown = doc["figures"][1]
    assert [d["marker"] for d in breakdown["details"]] == ["cold start / execution", "wait share when over-invoked"]
    slowdown = doc["figures"][2]
    assert {d["function"] for d in slowdown["details"]} == {"json_loads", "nbody"}
    assert all(d["ci_low"] is not None and d["n"] >= 6 for d in slowdown["details"])
    # Fig 15 over rounds (each round's median one sample), its baseline and what a short run can claim said.
    assert all(d["rounds"] == 2 and d["notes"].startswith(f"{d['measure']} warm ×") for d in slowdown["details"])
    assert "native baseline measured as the FaaS side is" in slowdown["reason"] and "--quick:" in slowdown["reason"]
    # No verdict stands against its own notes: a reproduced figure has no detail whose note denies it.
    for entry in doc["figures"]:
        if entry["verdict"] == REPRODUCED:
            assert not any(contradiction(d) for d in entry["details"] if isinstance(d, dict) and "notes" in d), entry
    # The page analyses again from a run directory it names.
    run = out / modes["run_dirs"][0]
    again = cli("analyze", run, timeout=120)
    assert again.returncode == 0, again.stderr[-2000:]
    assert sum(1 for line in done.stdout.splitlines() if line.startswith("Fig ")) == 4


@pytest.mark.slow
def test_an_unknown_figure_is_one_line_and_exit_2(cli, tmp_path):
    done = cli("reproduce", "--figures", "4,8", "--out", tmp_path)
    assert done.returncode == 2
    assert (
        done.stderr.strip()
        == "--figures: 8: not a figure reproduce knows; choose from 4, 5, 6, 7, 9, 10, 11, 12, 13, 14, 15, 16"
    )
    assert not list(tmp_path.iterdir())
