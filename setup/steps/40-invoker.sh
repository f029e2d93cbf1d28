#!/usr/bin/env bash
# Invoker: nginx for bench/bench_invoker.py (development machines only; runs and tests never need it).
# Called by setup.sh with FAASPROF_DEV (0/1), VENV, ROOT. Safe to run twice.
set -euo pipefail

[ "${FAASPROF_DEV:-0}" = "1" ] || exit 0
if command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ]; then
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "[setup] 40-invoker: install nginx to run bench/bench_invoker.py (no apt-get here)" >&2
    exit 0
fi
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "[setup] 40-invoker: installing nginx (benchmark server for bench/bench_invoker.py)" >&2
$sudo apt-get update -qq
# The package's service is not wanted: the benchmark starts its own nginx on a free port.
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends nginx-light >/dev/null 2>&1 \
    || DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends nginx >/dev/null
# Debian starts the packaged service on port 80; the benchmark never uses it.
if command -v systemctl >/dev/null 2>&1 && systemctl is-enabled nginx >/dev/null 2>&1; then
    $sudo systemctl disable --now nginx >/dev/null 2>&1 || true
fi
