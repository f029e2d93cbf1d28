#!/usr/bin/env bash
# Monitoring: perf (linux-perf) for the perf collector and the live monitoring tests. Safe to run
# twice. The testbed's own tools (intel-cmt-cat, blktrace) come from ./setup.sh --testbed.
#
# Only with --dev (FAASPROF_DEV=1) is perf installed here: the tests count software events live.
# Without it, a missing perf is reported with the command that installs it; faasprof itself runs
# without perf (the perf collector then says why it cannot, and `faasprof doctor` too).
# Env from setup.sh: FAASPROF_DEV (0/1), VENV, ROOT.
set -uo pipefail

log() { printf '[setup:monitoring] %s\n' "$*" >&2; }

if command -v perf >/dev/null 2>&1 && perf --version >/dev/null 2>&1; then
    log "perf present: $(perf --version 2>/dev/null)"
    exit 0
fi
if [ "${FAASPROF_DEV:-0}" != "1" ]; then
    log "perf not installed (needed only for monitoring.perf): apt-get install linux-perf"
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    log "perf not installed and no apt-get here: install your distribution's perf package for the perf tests"
    exit 0
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
        sudo="sudo"
    else
        log "perf not installed and not root: run 'apt-get install linux-perf' as root for the perf tests"
        exit 0
    fi
fi
log "installing linux-perf"
if ! { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq linux-perf >/dev/null; }; then
    log "could not install linux-perf; the live perf tests will be skipped (apt-get install linux-perf)"
fi
exit 0
