"""README.md stays short and true: under 2,000 words, no test timings, the two set-up commands, every CLI
command with its row in the Commands table; the workload reference of docs/workloads.md is generated from the
schema; no document says a passage twice. (tests/test_docs.py checks every document's commands, flags and
paths.)"""

from __future__ import annotations

import re
from collections import Counter

from faasprof.cli import COMMANDS
from faasprof.invoker import schema_doc
from tests.doc_commands import REPO_ROOT, documents

README_WORDS_MAX = 2000
# A test timing or a dated measurement: "9 min 22 s", "took 65 s", "4 min", "96 s", "a day later".
TIMING = re.compile(r"\b\d+(?:[.,]\d+)?\s*(?:min|minutes?|s|seconds?|ms)\b|\btook\b|\ba day later\b", re.I)


def test_workload_reference_matches_the_schema():
    guide = (REPO_ROOT / schema_doc.GUIDE).read_text(encoding="utf-8")
    assert schema_doc.render() in guide, "run: .venv/bin/python -m faasprof.invoker.schema_doc --write"
    assert schema_doc.BEGIN not in (REPO_ROOT / "README.md").read_text(encoding="utf-8")


def test_schema_doc_writes_the_reference_into_the_workloads_guide(tmp_path, monkeypatch):
    """The reference moved from README.md to docs/workloads.md (issue 42): --write writes it there."""
    (tmp_path / "docs").mkdir()
    guide = tmp_path / "docs" / "workloads.md"
    guide.write_text(f"# Workloads\n\n{schema_doc.BEGIN}\nstale\n{schema_doc.END}\n", encoding="utf-8")
    monkeypatch.setattr(schema_doc, "CHECKOUT_ROOT", tmp_path)
    assert schema_doc.main(["--write"]) == 0
    assert guide.read_text(encoding="utf-8") == "# Workloads\n\n" + schema_doc.render() + "\n"
    assert not (tmp_path / "README.md").exists()


def test_the_readme_is_under_2000_words():
    words = len((REPO_ROOT / "README.md").read_text(encoding="utf-8").split())
    assert words < README_WORDS_MAX, f"README.md has {words} words: move the detail into a guide under docs/"


# History: an issue it came from, a date, "this session".
HISTORY = re.compile(r"\bissue \d+|\b20\d\d-\d\d-\d\d\b|\bthis session\b|\byesterday\b", re.I)


def test_the_readme_logs_no_timings_and_no_history():
    """The suite's timings belong in docs/development.md; the README once kept a log of them."""
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    assert TIMING.findall(readme) == [], "move timings to docs/development.md"
    assert HISTORY.findall(readme) == [], "the README says what is, not how it came to be"
    assert HISTORY.findall("README: the suite's time this session (issue 42, 2026-11-25)") != []
    assert TIMING.findall("On four, 1,865 tests took 9 min 22 s there (10 min 18 s on three)") != []


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
    guide = (REPO_ROOT / "docs" / "experiments.md").read_text(encoding="utf-8")
    experiments = guide.partition("## The paper's figures")[2].partition("\n## ")[0]
    assert "`faasprof reproduce --quick`" in experiments


def repeated_passages(text: str, words: int = 15) -> list[str]:
    """Runs of ``words`` words that the prose (code blocks and tables left out) says twice."""
    prose = " ".join(
        line for line in re.sub(r"```.*?```", "", text, flags=re.S).splitlines() if not line.startswith("|")
    )
    tokens = prose.split()
    runs = Counter(tuple(tokens[i : i + words]) for i in range(len(tokens) - words + 1))
    return [" ".join(run) for run, count in runs.items() if count > 1]


def test_no_document_says_anything_twice_nor_what_another_says():
    """The README's "Benchmark functions" repeated half a paragraph (issue 34); a guide says a thing
    once, and the README points to it rather than repeating it."""
    assert repeated_passages("\n\n".join(path.read_text(encoding="utf-8") for path in documents())) == []
    assert repeated_passages("a b c d e f g h i j k l m n o p. " * 2) != []
