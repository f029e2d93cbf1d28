"""The linters' script, .ci/lint, on a small tree of its own: every finding fails it, mypy runs from
the root with the tree's own configuration, and .ci/run calls it before the tests."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.helpers import REPO_ROOT

VENV = REPO_ROOT / ".venv"

PYPROJECT = """
[tool.ruff]
line-length = 120

[tool.mypy]
files = ["faasprof/workload"]
"""

GOOD = '"""A module."""\n\n\ndef double(count: int) -> int:\n    return 2 * count\n'


def _tree(root: Path, module: str) -> Path:
    """A checkout of one package with a part, faasprof/workload/, and .ci/lint."""
    (root / ".ci").mkdir(parents=True)
    shutil.copy(REPO_ROOT / ".ci" / "lint", root / ".ci" / "lint")
    shutil.copy(REPO_ROOT / ".ci" / "pyright-imports.json", root / ".ci" / "pyright-imports.json")
    (root / "pyproject.toml").write_text(PYPROJECT)
    for folder in ("faasprof", "faasprof/workload", "tests", "bench"):
        (root / folder).mkdir()
        (root / folder / "__init__.py").write_text('"""A package."""\n')
    (root / "faasprof" / "workload" / "model.py").write_text(module)
    return root


def _lint(root: Path, skip_format: bool = False) -> subprocess.CompletedProcess:
    if not (VENV / "bin" / "ruff").exists() or not (VENV / "bin" / "mypy").exists():
        pytest.fail(f"ruff or mypy is missing from {VENV}: run ./setup.sh --dev")
    env = {**os.environ, "VENV": str(VENV)}
    env.pop("FAASPROF_SKIP_FORMAT_CHECK", None)
    if skip_format:
        env["FAASPROF_SKIP_FORMAT_CHECK"] = "1"
    return subprocess.run([str(root / ".ci" / "lint")], capture_output=True, text=True, timeout=120, env=env)


def test_a_clean_tree_passes(tmp_path):
    done = _lint(_tree(tmp_path, GOOD))
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_type_error_fails_and_is_said_with_the_path_in_the_checkout(tmp_path):
    done = _lint(_tree(tmp_path, GOOD.replace("return 2 * count", 'return "2" * count')))
    assert done.returncode == 1
    assert "faasprof/workload/model.py:5: error: Incompatible return value type" in done.stdout


def test_an_import_no_tool_can_resolve_fails(tmp_path):
    """What an editor cannot follow fails the build: basedpyright resolves imports through the venv."""
    module = GOOD.replace('"""A module."""\n', '"""A module."""\n\nfrom faasprof.nowhere import double as _double\n')
    done = _lint(_tree(tmp_path, module), skip_format=True)
    assert done.returncode == 1
    assert 'Import "faasprof.nowhere" could not be resolved' in done.stdout


PAYLOAD = (
    '"""A payload."""\n\nfrom paramlib import double\n\n\ndef main(count: int) -> int:\n    return double(count)\n'
)
PAYLOADS_CONFIG = 'files = ["faasprof/workload", "faasprof/functions"]\nexclude = [\'^faasprof/functions/[^/]+/\']'


def _payloads(root: Path, second: str) -> Path:
    """Two function payloads, each a program whose module is __main__ importing its sibling paramlib."""
    pyproject = root / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace('files = ["faasprof/workload"]', PAYLOADS_CONFIG))
    (root / "faasprof" / "functions").mkdir()
    (root / "faasprof" / "functions" / "__init__.py").write_text('"""A package."""\n')
    for name, main in (("first", PAYLOAD), ("second-one", second)):
        folder = root / "faasprof" / "functions" / name
        folder.mkdir()
        (folder / "__main__.py").write_text(main)
        (folder / "paramlib.py").write_text(GOOD)
    return root


def test_function_payloads_are_checked_one_folder_at_a_time_with_their_siblings(tmp_path):
    clean = _lint(_payloads(_tree(tmp_path / "clean", GOOD), PAYLOAD), skip_format=True)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    # A type error seen only through the sibling module: paramlib.double returns an int.
    wrong = PAYLOAD.replace("-> int:\n    return double", "-> str:\n    return double")
    done = _lint(_payloads(_tree(tmp_path / "wrong", GOOD), wrong), skip_format=True)
    assert done.returncode == 1
    assert (
        'faasprof/functions/second-one/__main__.py:7: error: Incompatible return value type (got "int"' in done.stdout
    )


def test_a_pyflakes_finding_fails(tmp_path):
    done = _lint(_tree(tmp_path, GOOD.replace('"""A module."""\n', '"""A module."""\n\nimport os\n')), skip_format=True)
    assert done.returncode == 1 and "F401" in done.stdout


def test_the_format_check_is_skipped_only_when_asked(tmp_path):
    root = _tree(tmp_path, GOOD.replace("2 * count", "2*count"))
    assert _lint(root).returncode == 1
    skipped = _lint(root, skip_format=True)
    assert skipped.returncode == 0 and "FAASPROF_SKIP_FORMAT_CHECK=1" in skipped.stderr


def test_ci_runs_the_linters_after_setup_and_before_the_tests():
    lines = [line.strip() for line in (REPO_ROOT / ".ci" / "run").read_text().splitlines()]
    setup, lint = lines.index("./setup.sh --dev"), lines.index(".ci/lint")
    tests = next(i for i, line in enumerate(lines) if "pytest" in line and not line.startswith("#"))
    assert setup < lint < tests
    assert "FAASPROF_SKIP_FORMAT_CHECK" not in (REPO_ROOT / ".ci" / "run").read_text()


def test_the_script_passes_shellcheck():
    shellcheck = VENV / "bin" / "shellcheck"
    if not shellcheck.exists():
        pytest.fail(f"{shellcheck} is missing: run ./setup.sh --dev")
    done = subprocess.run(
        [str(shellcheck), str(REPO_ROOT / ".ci" / "lint")], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stdout + done.stderr
