"""Importing faasprof never changes matplotlib's backend, and neither does drawing its plots: a
notebook that chose its own (inline, widget, a GUI) keeps it. Every module of the namespace is
imported in a fresh interpreter that picked a backend other than Agg first."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from tests.helpers import REPO_ROOT
from tests.test_architecture import project_files

# The entry points run the CLI when imported; everything else must import quietly.
ENTRY_POINTS = ("__main__",)


def importable_modules() -> list[str]:
    """Every project module that ``import`` can name (the catalogue's function folders are no packages)."""
    files = project_files(REPO_ROOT)
    packages = {name for name, path in files.items() if path.name == "__init__.py"}
    return sorted(
        name
        for name in files
        if (name in packages or name.rpartition(".")[0] in packages) and name.rpartition(".")[2] not in ENTRY_POINTS
    )


IMPORT_ALL_THEN_PLOT = textwrap.dedent("""
    import importlib, json, sys, tempfile
    from pathlib import Path
    import matplotlib
    matplotlib.use("svg")
    changed_by = []
    for name in json.loads(sys.argv[1]):
        importlib.import_module(name)
        if matplotlib.get_backend() != "svg" and not changed_by:
            changed_by.append(name)
    from faasprof.analyzer.plots import new_figure
    figure, axes = new_figure(1, 2, figsize=(2, 1))
    axes[0].plot([0, 1], [1, 0])
    figure.savefig(Path(tempfile.mkdtemp()) / "plot.png")
    print(json.dumps({"backend": matplotlib.get_backend(), "changed_by": changed_by, "pyplot": "matplotlib.pyplot" in sys.modules}))
""")


@pytest.mark.slow
def test_importing_every_module_and_plotting_keeps_the_backend_a_notebook_chose():
    modules = importable_modules()
    assert "faasprof.experiments.mpki" in modules and "faasprof.analyzer.plots" in modules and len(modules) > 100
    done = subprocess.run(
        [sys.executable, "-c", IMPORT_ALL_THEN_PLOT, json.dumps(modules)],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=REPO_ROOT,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["changed_by"] == [], f"importing {seen['changed_by'][0]} switched matplotlib's backend"
    assert seen["backend"] == "svg"
    assert seen["pyplot"] is False, "a faasprof module imports matplotlib.pyplot (it picks a backend when imported)"
