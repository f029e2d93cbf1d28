"""Server-level measurements taken during a run: collectors, raw-output parsers, derived metrics.

* ``collectors``: the collector registry, one module per collector (perf, Intel RDT through
  resctrl or pqos, blktrace, cgroups, ...); each collector class owns its name, defaults, schema
  fragment, check/start/stop/describe lifecycle, raw-output parsing, frame loader and doctor
  check; ``build_collectors`` turns a workload's ``monitoring`` block into collectors.
* ``sampling``: what vmstat and cgroups read, standard library only (a remote host runs it too).
* ``hosts``: the collectors on remote hosts, reached over ssh from an ansible inventory.
* ``parsers``: pure functions from a tool's raw output to tidy pandas frames.
* ``derived``: per-interval hardware metrics (IPC, MPKI, kernel share, memory bandwidth).
* ``frames``: a finished run's monitors as frames on the run clock (``t_s``).
* ``host``: host metadata read through one root, and tool versions.
* ``allocation``: cache and memory-bandwidth allocation (CAT/MBA), reading the host through ``host``.

This package imports only ``faasprof`` (and pandas inside parsers), so the analyzer can load a run
on a laptop without perf.
"""
