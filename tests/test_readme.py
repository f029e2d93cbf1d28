"""README.md stays true: its reference is generated from the schema, its commands exist, every CLI command
has its row in the Commands table."""

from __future__ import annotations

import re
from collections import Counter

from faasprof.cli import COMMANDS
from faasprof.invoker import schema_doc
from tests.helpers import REPO_ROOT


def test_workload_reference_matches_the_schema():
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    assert schema_doc.render() in readme, "run: .venv/bin/python -m faasprof.invoker.schema_doc --write"


def test_readme_names_the_two_setup_commands():
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    assert "./setup.sh && .venv/bin/faasprof run faasprof/workload_configs/paper_listing1.json --analyze" in readme
    assert "./setup.sh --dev && .venv/bin/python -m pytest -q" in readme
    assert (REPO_ROOT / "faasprof/workload_configs/paper_listing1.json").exists()


def test_every_command_has_a_row_in_the_commands_table():
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    table = readme.partition("## Commands")[2].partition("\n\n")[2].partition("\n\n")[0]
    rows = {line.split("`")[1].split()[1] for line in table.splitlines() if line.startswith("| `faasprof ")}
    assert set(COMMANDS) - rows == set(), "add a row to the README's Commands table"
    assert rows - set(COMMANDS) == set(), "the README's Commands table names a command the CLI lacks"


def test_the_experiments_table_points_to_reproduce():
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    experiments = readme.partition("## Experiments: the paper's figures")[2].partition("\n## ")[0]
    assert "`faasprof reproduce --quick`" in experiments


def repeated_passages(text: str, words: int = 15) -> list[str]:
    """Runs of ``words`` words that the prose (code blocks and tables left out) says twice."""
    prose = " ".join(
        line for line in re.sub(r"```.*?```", "", text, flags=re.S).splitlines() if not line.startswith("|")
    )
    tokens = prose.split()
    runs = Counter(tuple(tokens[i : i + words]) for i in range(len(tokens) - words + 1))
    return [" ".join(run) for run, count in runs.items() if count > 1]


def test_the_readme_says_nothing_twice():
    """Its "Benchmark functions" repeated half a paragraph (issue 34)."""
    assert repeated_passages((REPO_ROOT / "README.md").read_text(encoding="utf-8")) == []
    assert repeated_passages("a b c d e f g h i j k l m n o p. " * 2) != []
