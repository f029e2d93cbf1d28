"""One version string (``faasprof.version``): the package metadata, ``faasprof --version``, every
manifest and localwhisk's ``GET /`` build all state it."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

import tomllib

from faasprof import localwhisk, rundir
from faasprof.version import __version__
from tests.helpers import run_cli

REPO = Path(__file__).resolve().parent.parent


def test_pyproject_reads_the_version_from_faasprof_version():
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "faasprof.version.__version__"}
    assert importlib.metadata.version("faasprof") == __version__


def test_cli_manifest_and_localwhisk_state_the_same_version():
    done = run_cli("--version")
    assert done.returncode == 0 and done.stdout.strip() == f"faasprof {__version__}"
    manifest = rundir.new_manifest("t", {}, rundir.ClockAnchor(0, 0))
    assert manifest.faasprof["version"] == __version__
    assert localwhisk.__version__ == __version__
