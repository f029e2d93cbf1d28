"""The analyzer: from a finished run directory to frames, latency modes, plots and a report.

Notebook use::

    from faasprof import analyzer
    run = analyzer.load_run("runs/json_dumps-20261121T031500")
    run.invocations          # one row per planned invocation, joined with its activation record
    run.phase_stats          # per instance × steady phase: percentiles with CIs, mode, evidence
    run.manifest.platform     # the typed manifest (faasprof.rundir.Manifest)
    # An analysed run too large to load whole: some columns, one phase or a window, size-checked.
    analyzer.read_frame("runs/...", columns=["intended_s", "completion_latency_ms"], phase=1)

``analyze_run(run_dir, connection=None)`` writes ``analysis/`` (fetching the activation records
first when the run did not save them, from the platforms of its instances that keep records,
through the platform registry; one reached through a connection only when it is given) and
returns the summary dict.
It runs on a laptop with a finished run directory: nothing here needs the invoker or localwhisk.
"""

from __future__ import annotations

from faasprof.analyzer.analysis import Run, analyze_run, load_run
from faasprof.analyzer.frame_loader import read_frame

__all__ = ["load_run", "analyze_run", "Run", "read_frame"]
