"""The run directory: the contract between the invoker, the collectors and the analyzer.

::

    runs/<test_name>-<UTC yyyymmddThhmmss>/
      manifest.json      format_version, resolved workload, platform, host, tools, clock anchor,
                         status, counts (``manifest``: the typed ``Manifest``)
      plan.bin           the planned schedule (intended time and instance of every seq), written
                         before the first send (``plan``)
      invocations.csv    one row per planned invocation (``invocation_log``: ``INVOCATION_COLUMNS``)
      sends.csv          the send journal: ``seq,sent_ns`` per request written, on disk within a
                         second of the send; the invocation's row completes it (``invocation_log``)
      monitors/<name>/   command.txt, stdout.log, stderr.log and the tool's raw output (``monitors``)
      monitors/<host>/   a remote host: host.json (its facts, clock offset, ok or lost) and a
                         <collector>/ directory per collector run there (``hosts``)
      activations.jsonl  raw activation records (``activations``)
      activations.columns.npz
                         their flat columns, written beside them (``record_columns``): derived,
                         used only while it describes the file, safe to delete
      analysis/          derived, rebuildable

One module per kind of file; ``layout`` names them all, and no module outside this package names
one. Everything a caller uses is imported here, so ``from faasprof import rundir; rundir.X`` reaches
it. The frames the analyzer reads (``tables``, ``records``) are modules of their own, not imported
here, so that the invoker, which only writes, loads neither pandas nor Arrow.

A run directory is never overwritten: creation uses ``mkdir`` (which fails if the path exists) and
adds a ``-2``, ``-3`` … suffix when two runs start in the same second.
"""

from __future__ import annotations

from faasprof.rundir.activations import (
    activations_path,
    append_records,
    has_records,
    has_saved_records,
    iter_records,
    raw_records_gone,
    read_record_ids,
    read_records_counting_torn,
    records_mention,
    sort_records,
    whole_lines,
    write_records,
)
from faasprof.rundir.hosts import (
    HOST_FORMAT_VERSION,
    HOST_JSON,
    HOST_STATUSES,
    SUPPORTED_HOST_FORMAT_VERSIONS,
    HostClock,
    HostInfo,
    check_host_name,
    host_dir,
    host_dirs,
    host_monitor_dir,
    host_monitor_dirs,
    is_host_dir,
    manifest_entry,
    read_host_info,
    read_host_json,
    write_host_info,
    write_host_json,
)
from faasprof.rundir.invocation_log import (
    FLUSH_INTERVAL_S,
    INVOCATION_COLUMNS,
    OUTCOMES,
    SENDS_HEADER,
    InvocationLog,
    LogFollower,
    append_rows,
    completeness,
    format_row,
    read_invocations,
)
from faasprof.rundir.layout import (
    ACTIVATIONS,
    ACTIVATIONS_PARQUET,
    ANALYSIS,
    INVOCATIONS,
    MANIFEST,
    MONITORS,
    PLAN,
    PRIVATE_DIR_MODE,
    PRIVATE_FILE_MODE,
    SENDS,
    create_run_dir,
    is_run_dir,
    make_private_dir,
    manifest_path,
    open_private,
    private_files,
    safe_name,
    utc_stamp,
    write_json_atomic,
)
from faasprof.rundir.manifest import (
    CLOSED_LOOP,
    FORMAT_VERSION,
    KINDS,
    NATIVE_PLATFORM_KIND,
    STATUSES,
    SUPPORTED_FORMAT_VERSIONS,
    ClockAnchor,
    Manifest,
    RunStatus,
    check_format_version,
    git_commit,
    monitors_by_name,
    new_manifest,
    read_manifest,
    study_manifest,
    update_manifest,
    write_manifest,
)
from faasprof.rundir.monitors import MONITOR_META, monitor_dir, monitor_dirs, monitor_file, read_monitor_meta
from faasprof.rundir.plan import (
    PLAN_MAGIC,
    UNANSWERED_ERROR,
    UNRECORDED_ERROR,
    Completeness,
    Plan,
    read_plan,
    read_sends,
    reconstruct_missing,
    write_plan,
)
