"""A run followed by its analysis (``faasprof run --analyze``, interference, mpki).

The invoker runs and saves the platform's records (``invoker.run.execute(save_records=True)``);
the analysis is the analyzer's. Joining the two happens here, above both, so the invoker never
imports the analyzer. A failed analysis never costs the run: it is recorded in the manifest
(``analysis_error``) and reported.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, Callable

from analyzer.analysis import analyze_run
from analyzer.report import print_summary
from faasprof import rundir
from faasprof.errors import FaasprofError
from invoker.run import execute


def _say_to_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def execute_analyzed(workload: Any, out_dir: str | os.PathLike, connection: Any = None, analyze: bool = True,
                     progress: bool = True, **options: Any) -> Path:
    """``invoker.run.execute`` and, when ``analyze``, its analysis: also of a run that stopped
    early (interrupted, aborted), whose phases end where it stopped (``analyzer.stats``)."""
    run_dir = execute(workload, out_dir, connection=connection, progress=progress, save_records=analyze, **options)
    if analyze:
        analyze_after_run(run_dir, connection, _say_to_stderr if progress else None)
    return run_dir


def analyze_after_run(run_dir: Path, connection: Any, say: Callable[[str], None] | None) -> None:
    """Analyze a run just finished; a failure is recorded in the manifest and reported, not raised."""
    manifest = rundir.read_manifest(run_dir)
    platform = manifest.platform
    if say:
        say("analyzing")
    try:
        # The records were saved (waited for) by the run; the platform is asked again only for
        # those still missing, and only when it outlived the run (not the embedded one, and not
        # when the run used generic endpoints only).
        summary = analyze_run(run_dir, connection=connection if platform.get("embedded") is False else None)
    except (FaasprofError, OSError, ValueError) as error:
        text = f"analysis failed ({error}); the run directory is intact ({manifest.status}): retry with faasprof analyze {run_dir}"
        rundir.update_manifest(run_dir, analysis_error=text)
        print("warning: " + text, file=sys.stderr, flush=True)
        return
    if say:
        for warning in summary["warnings"]:
            say(f"warning: {warning}")
        print_summary(summary, out=sys.stderr)
        say(f"report: {run_dir / rundir.ANALYSIS / 'report.html'}")
