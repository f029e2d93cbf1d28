"""Standard tools follow the code as it is laid out (issue 42): an editor's go-to-definition (jedi)
finds faasprof's modules through the venv's install, and the CLI says when it runs the code of a
checkout other than the one the working directory is in."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import jedi
import pytest

from faasprof import paths

REPO = Path(__file__).resolve().parent.parent
VENV_PYTHON = REPO / ".venv" / "bin" / "python"


@pytest.mark.parametrize(
    ("source", "name", "defined_in"),
    [
        ("from faasprof.workload.schedule import build_schedule\n", "build_schedule", "faasprof/workload/schedule.py"),
        (
            "from faasprof.analyzer.frames import build_from_aligned\n",
            "build_from_aligned",
            "faasprof/analyzer/frames.py",
        ),
        ("import faasprof.invoker.run\n", "run", "faasprof/invoker/run.py"),
    ],
)
def test_an_editor_finds_where_a_name_is_defined(tmp_path, source, name, defined_in):
    if not VENV_PYTHON.exists():
        pytest.fail(f"{VENV_PYTHON} is missing: run ./setup.sh --dev")
    # A file outside the checkout: only the venv's install can lead jedi to faasprof.
    script = tmp_path / "notebook.py"
    script.write_text(source)
    environment = jedi.create_environment(str(VENV_PYTHON), safe=False)
    found = jedi.Script(source, path=script, environment=environment).goto(
        1, source.index(name) + 1, follow_imports=True
    )
    assert found, f"jedi found no definition of {name}"
    assert {str(definition.module_path) for definition in found} == {str(REPO / defined_in)}


def test_foreign_checkout_is_the_checkout_the_working_directory_is_in(tmp_path):
    other = tmp_path / "clone"
    (other / "faasprof").mkdir(parents=True)
    (other / "setup.sh").write_text("#!/bin/sh\n")
    (other / "faasprof" / "paths.py").write_text('"""A module."""\n')
    (other / "sub").mkdir()
    assert paths.foreign_checkout(other / "sub") == other.resolve()
    assert paths.foreign_checkout(tmp_path) is None
    if paths.CHECKOUT_ROOT is not None:
        assert paths.foreign_checkout(paths.CHECKOUT_ROOT / "tests") is None


def test_the_cli_says_when_it_runs_another_checkouts_code(tmp_path):
    other = tmp_path / "clone"
    (other / "faasprof").mkdir(parents=True)
    (other / "setup.sh").write_text("#!/bin/sh\n")
    (other / "faasprof" / "paths.py").write_text('"""A module."""\n')
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from faasprof.cli import main; sys.exit(main(sys.argv[1:]))",
            "validate",
            "x.json",
        ],
        cwd=other,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    first = done.stderr.splitlines()[0]
    assert (
        first.startswith("faasprof: note: running the faasprof at ") and f"not the checkout {other.resolve()}" in first
    )
