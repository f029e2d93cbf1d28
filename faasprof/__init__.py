"""faasprof: an on-premise FaaS profiling testbed around Apache OpenWhisk.

One namespace: every part is ``faasprof.<part>`` (``faasprof.analyzer``, ``faasprof.invoker``,
``faasprof.workload``, ...). This module is the front door a notebook imports::

    import faasprof
    run = faasprof.load_run("runs/json_dumps-20261121T031500")
    run.invocations          # one row per planned invocation, joined with its activation record
    run.phase_stats          # per instance × steady phase: percentiles with CIs, mode, evidence
    result = faasprof.compare_runs(["runs/a", "runs/b"])

The public names are loaded when first used, so ``import faasprof`` (and the CLI, which imports
it first) does not pay for pandas or matplotlib.
"""

from __future__ import annotations

import importlib
from typing import Any

from faasprof.version import __version__

# The front door: public name -> the module that defines it, imported on first use (PEP 562).
_PUBLIC = {
    "load_run": "faasprof.analyzer.analysis",
    "analyze_run": "faasprof.analyzer.analysis",
    "Run": "faasprof.analyzer.analysis",
    "compare_runs": "faasprof.analyzer.compare",
    "load_workload": "faasprof.workload.spec",
    "build_schedule": "faasprof.workload.schedule",
    "read_manifest": "faasprof.rundir",
}

__all__ = ["__version__", *_PUBLIC]


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'faasprof' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_PUBLIC))
