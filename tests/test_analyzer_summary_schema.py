"""``summary.json`` against its declared shape (``faasprof/analyzer/summary.py``'s TypedDicts) and
its guide (docs/analysis.md): a key written but not declared, or declared but not documented, fails."""

from __future__ import annotations

from typing import is_typeddict

from test_analyzer_synthetic import write_synthetic_run

from faasprof.analyzer import analyze_run
from faasprof.analyzer import summary as summary_mod
from faasprof.analyzer.analysis import load_summary
from tests.helpers import REPO_ROOT

MIXED = {
    "blocking": {"application": "fn", "distribution": "Uniform", "rate": 20.0, "blocking": True},
    "async": {"application": "fn", "distribution": "Uniform", "rate": 20.0, "blocking": False},
}


def declared(typed: type) -> set[str]:
    return set(typed.__required_keys__) | set(typed.__optional_keys__)


def check(value: dict, typed: type, where: str) -> None:
    assert set(typed.__required_keys__) <= set(value), f"{where}: missing {set(typed.__required_keys__) - set(value)}"
    assert set(value) <= declared(typed), f"{where}: undeclared {set(value) - declared(typed)}"


def test_summary_json_has_exactly_the_declared_keys(tmp_path):
    failures = {seq: "application_error" for seq in range(0, 40, 5)}
    run_dir, _ = write_synthetic_run(tmp_path, duration_s=3.0, instances=MIXED, failures=failures, interrupt_at_s=2.5)
    analyze_run(run_dir, plots=False)
    summary = load_summary(run_dir)
    check(summary, summary_mod.Summary, "summary")
    check(summary["generated_by"], summary_mod.GeneratedBy, "generated_by")
    check(summary["run"], summary_mod.RunInfo, "run")
    check(summary["run"]["pushback"], summary_mod.Pushback, "run.pushback")
    assert summary["run"]["phases"]
    for phase in summary["run"]["phases"]:
        check(phase, summary_mod.Phase, "run.phases[]")
    check(summary["failures"], summary_mod.Failures, "failures")
    assert summary["failures"]["by_function"]
    for group in summary["failures"]["by_function"]:
        check(group, summary_mod.FailureGroup, "failures.by_function[]")
    check(summary["records"], summary_mod.RecordsInfo, "records")
    check(summary["records"]["monitors"], summary_mod.MonitorsInfo, "records.monitors")
    check(summary["start_classes"], summary_mod.StartClasses, "start_classes")
    assert len(summary["instances"]) == 2
    for instance in summary["instances"]:
        check(instance, summary_mod.Instance, "instances[]")
    check(summary["outputs"], summary_mod.Outputs, "outputs")


def test_every_key_of_the_summary_is_in_the_guide():
    guide = (REPO_ROOT / "docs" / "analysis.md").read_text(encoding="utf-8")
    undocumented = [
        f"{name}.{key}"
        for name, typed in vars(summary_mod).items()
        if is_typeddict(typed)
        for key in sorted(declared(typed))
        if f"`{key}`" not in guide
    ]
    assert undocumented == []
