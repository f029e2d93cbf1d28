"""Where faasprof's own files live: found through the installed package, never the working directory.

The benchmark functions (``faasprof.functions``), the ready workloads and their schema
(``faasprof.workload_configs``) and the documents read at run time (``faasprof.docs``) are package
data: an editable install finds them in the checkout's folders, a wheel in site-packages. A
package's folder is looked up with ``importlib.util.find_spec``, which imports only ``faasprof``
itself, so this core module reaches no layer above it.

``CHECKOUT_ROOT`` is the source checkout when faasprof runs from one (an editable install), else
``None``: only the developer tools that regenerate the README and the manifest's git commit use it.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path


def package_dir(name: str) -> Path:
    """The folder of the subpackage ``faasprof.<name>``, wherever faasprof is installed."""
    spec = importlib.util.find_spec(f"faasprof.{name}")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(f"faasprof.{name} is not installed with faasprof; reinstall faasprof (pip install faasprof)")
    return Path(next(iter(spec.submodule_search_locations))).resolve()


def _checkout_root() -> Path | None:
    root = Path(__file__).resolve().parent.parent
    return root if (root / "pyproject.toml").is_file() and (root / "workload_configs").is_dir() else None


CHECKOUT_ROOT = _checkout_root()
FUNCTIONS_DIR = package_dir("functions")
WORKLOAD_CONFIGS_DIR = package_dir("workload_configs")
WORKLOAD_SCHEMA_PATH = WORKLOAD_CONFIGS_DIR / "schema.json"
DOCS_DIR = package_dir("docs")
# The folder that holds functions/ and workload_configs/ (the checkout, or site-packages/faasprof):
# a workload may name a file relative to it, as "workload_configs/traces/azure_sample.csv".
DATA_ROOT = WORKLOAD_CONFIGS_DIR.parent
