"""Server-level measurements taken during a run: collectors, raw-output parsers, derived metrics.

* ``collectors``: perf, Intel RDT (resctrl or pqos), blktrace and cgroup collectors with the
  check/start/stop/describe lifecycle; ``build_collectors`` turns a workload's ``monitoring`` block
  into collectors.
* ``parsers``: pure functions from a tool's raw output to tidy pandas frames.
* ``derived``: per-interval hardware metrics (IPC, MPKI, kernel share, memory bandwidth).
* ``frames``: a finished run's monitors as frames on the run clock (``t_s``).
* ``host``: host metadata read through one root, and tool versions.
* ``allocation`` / ``resctrl_tree``: cache and memory-bandwidth allocation (CAT/MBA).

This package imports only ``faasprof`` (and pandas inside parsers), so the analyzer can load a run
on a laptop without perf.
"""
