#!/usr/bin/env bash
# Invoker: nginx for bench/bench_invoker.py, the extra `bench` (./setup.sh --with bench or --dev;
# runs and tests never need it). Called by setup.sh with FAASPROF_EXTRAS, FAASPROF_DEV (0/1), VENV,
# ROOT. Safe to run twice.
set -euo pipefail

ROOT=${ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
LOG_TAG=invoker
# shellcheck source=setup/lib.sh
. "$ROOT/setup/lib.sh"

if command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ]; then
    exit 0
fi
if ! want bench; then
    log "nginx not installed (only bench/bench_invoker.py uses it): ./setup.sh --with bench"
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    log "install nginx to run bench/bench_invoker.py (no apt-get here)"
    exit 0
fi
sudo=$(sudo_prefix)
# The package's service is not wanted: the benchmark starts its own nginx on a free port.
apt_get_install "nginx (benchmark server for bench/bench_invoker.py)" "20 s" --no-install-recommends nginx-light \
    || apt_get_install "nginx (benchmark server for bench/bench_invoker.py)" "20 s" --no-install-recommends nginx
# Debian starts the packaged service on port 80; the benchmark never uses it.
if command -v systemctl >/dev/null 2>&1 && systemctl is-enabled nginx >/dev/null 2>&1; then
    $sudo systemctl disable --now nginx >/dev/null 2>&1 || true
fi
