"""The Python processes the suite starts keep their compiled bytecode, outside the sources.

Under PYTHONDONTWRITEBYTECODE (this testbed's shells set it) with a venv installed by
``pip --no-compile`` (./setup.sh), every ``faasprof`` a test started compiled numpy, pandas and
faasprof from source again: 1.5 of its 2.3 s of CPU. tests/conftest.py gives the session one
bytecode folder (PYTHONPYCACHEPREFIX) under pytest's cache instead.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.helpers import REPO_ROOT

CHILD = """
import importlib.util, sys
import faasprof.cli
print(sys.dont_write_bytecode)
print(importlib.util.cache_from_source(faasprof.cli.__file__))
"""


def test_a_process_a_test_starts_writes_its_bytecode_into_the_sessions_folder_not_the_checkout():
    done = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=120, cwd=REPO_ROOT)
    assert done.returncode == 0, done.stderr
    dont_write, cached = done.stdout.splitlines()
    assert dont_write == "False" and "PYTHONDONTWRITEBYTECODE" not in os.environ
    folder = Path(os.environ.get("PYTHONPYCACHEPREFIX", "/nowhere"))
    assert Path(cached).is_relative_to(folder) and Path(cached).is_file()
    assert not Path(cached).is_relative_to(REPO_ROOT / "faasprof")
