"""README.md stays true: its reference is generated from the schema, its commands exist."""

from __future__ import annotations

from invoker import schema_doc
from tests.conftest import REPO_ROOT


def test_workload_reference_matches_the_schema():
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    assert schema_doc.render() in readme, "run: .venv/bin/python -m invoker.schema_doc --write"


def test_readme_names_the_two_setup_commands():
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    assert "./setup.sh && .venv/bin/faasprof run workload_configs/paper_listing1.json --analyze" in readme
    assert "./setup.sh --dev && .venv/bin/python -m pytest -q" in readme
    assert (REPO_ROOT / "workload_configs/paper_listing1.json").exists()
