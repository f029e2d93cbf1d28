#!/usr/bin/env bash
# Monitoring: perf (linux-perf) for the perf collector and the live monitoring tests. Safe to run
# twice. The testbed's own tools (intel-cmt-cat, blktrace) come from ./setup.sh --testbed.
#
# perf is the extra `perf` (./setup.sh --with perf, --full or --dev: the tests count software
# events live). Without it, a missing perf is reported with the command that installs it; faasprof
# itself runs without perf (the perf collector then says why it cannot, and `faasprof doctor` too).
# Env from setup.sh: FAASPROF_EXTRAS, FAASPROF_DEV (0/1), VENV, ROOT.
set -uo pipefail

ROOT=${ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
LOG_TAG=monitoring
# shellcheck source=setup/lib.sh
. "$ROOT/setup/lib.sh"

if command -v perf >/dev/null 2>&1 && perf --version >/dev/null 2>&1; then
    log "perf present: $(perf --version 2>/dev/null)"
    exit 0
fi
if ! want perf; then
    log "perf not installed (needed only for the perf collector and faasprof mpki): ./setup.sh --with perf"
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    log "perf not installed and no apt-get here: install your distribution's perf package for the perf tests"
    exit 0
fi
if [ "$(id -u)" -ne 0 ] && ! command -v sudo >/dev/null 2>&1; then
    log "perf not installed and not root: run 'apt-get install linux-perf' as root for the perf tests"
    exit 0
fi
if ! apt_get_install "perf" "20 s" linux-perf; then
    log "could not install linux-perf; the live perf tests will be skipped (apt-get install linux-perf)"
fi
exit 0
