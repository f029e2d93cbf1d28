"""The analyzer: from a finished run directory to frames, latency modes, plots and a report.

Notebook use::

    import analyzer
    run = analyzer.load_run("runs/json_dumps-20261121T031500")
    run.invocations          # one row per planned invocation, joined with its activation record
    run.phase_stats          # per instance × steady phase: percentiles with CIs, mode, evidence
    run.manifest.platform     # the typed manifest (faasprof.rundir.Manifest)

``analyze_run(run_dir, connection=None)`` writes ``analysis/`` (fetching the activation records
first when the run did not save them and a connection is given) and returns the summary dict.
"""

from __future__ import annotations

__all__ = ["load_run", "analyze_run", "Run"]


def __getattr__(name):
    # Imported lazily so `import analyzer` stays cheap for the CLI dispatcher.
    if name in __all__:
        from analyzer import analysis

        return getattr(analysis, name)
    raise AttributeError(name)


def load_run(path, progress=None):
    """Load a run directory into frames and its manifest (offline); see ``analyzer.analysis``."""
    from analyzer.analysis import load_run as _load_run

    return _load_run(path, progress=progress)


def analyze_run(run_dir, connection=None, **options):
    """Analyze a run directory, write ``analysis/`` and return the summary dict."""
    from analyzer.analysis import analyze_run as _analyze_run

    return _analyze_run(run_dir, connection, **options)
