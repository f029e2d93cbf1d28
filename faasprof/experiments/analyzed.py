"""A run followed by its analysis (``faasprof run --analyze``, interference, mpki).

The invoker runs and saves the platform's records (``faasprof.invoker.run.execute(save_records=True)``);
the analysis is the analyzer's. Joining the two happens here, above both, so the invoker never
imports the analyzer. A failed analysis never costs the run: it is recorded in the manifest
(``analysis_error``) and reported.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from faasprof import rundir
from faasprof.analyzer.analysis import analyze_run
from faasprof.analyzer.report import summary_lines
from faasprof.errors import FaasprofError
from faasprof.invoker.run import execute
from faasprof.progress import QUIET, Progress


def execute_analyzed(
    workload: Any,
    out_dir: str | os.PathLike,
    connection: Any = None,
    analyze: bool = True,
    progress: Progress = QUIET,
    latency_reference: dict | None = None,
    save_records: bool = False,
    **options: Any,
) -> Path:
    """``faasprof.invoker.run.execute`` and, when ``analyze``, its analysis: also of a run that stopped
    early (interrupted, aborted), whose phases end where it stopped (``faasprof.analyzer.stats``).
    ``latency_reference``: ``{function: reference}`` from a capacity search, written into the
    manifest before the analysis, so that a run at absolute rates (``reproduce``'s modes) is
    judged by the same rule, the standing-queue test included, as one at fractions of a capacity.
    The records are saved when ``analyze`` or ``save_records`` asks for them."""
    run_dir = execute(
        workload, out_dir, connection=connection, progress=progress, save_records=analyze or save_records, **options
    )
    if latency_reference:
        rundir.update_manifest(run_dir, latency_reference=latency_reference)
    if analyze:
        analyze_after_run(run_dir, connection, progress)
    return run_dir


def analyze_after_run(run_dir: Path, connection: Any, progress: Progress = QUIET) -> None:
    """Analyze a run just finished; a failure is recorded in the manifest and alerted (also under
    --quiet), not raised."""
    manifest = rundir.read_manifest(run_dir)
    platform = manifest.platform
    saved = manifest.activations or {}
    progress.say("analyzing")
    try:
        # The records were saved (waited for) by the run; the platform is asked again only for
        # those still missing, and only when it outlived the run (not the embedded one, and not
        # when the run used generic endpoints only). It is asked once, without the retries of
        # `faasprof analyze` (the run waited until nothing could still be running: 7.5 s more of
        # retries found nothing), and not at all when a second Ctrl-C stopped that wait.
        summary = analyze_run(
            run_dir,
            connection=connection if platform.get("embedded") is False else None,
            fetch=not saved.get("interrupted"),
            retry_delays_s=() if saved else None,
        )
    except (FaasprofError, OSError, ValueError) as error:
        text = f"analysis failed ({error}); the run directory is intact ({manifest.status}): retry with faasprof analyze {run_dir}"
        rundir.update_manifest(run_dir, analysis_error=text)
        progress.alert(text)
        return
    for warning in summary["warnings"]:
        progress.warn(warning)
    for line in summary_lines(summary):
        progress.say(line)
    progress.say(f"report: {run_dir / rundir.ANALYSIS / 'report.html'}")
