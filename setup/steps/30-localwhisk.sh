#!/usr/bin/env bash
# localwhisk (the embedded OpenWhisk stand-in): check that its server imports, that Node.js is
# there for nodejs actions (setup.sh installs it when missing), and say which sandbox isolation
# this host allows (cgroup-v1/v2 when writable, else SIGSTOP + rlimits). Installs nothing; safe twice.
# Env from setup.sh: FAASPROF_DEV (0/1), VENV, ROOT.
set -uo pipefail

ROOT=${ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
VENV=${VENV:-$ROOT/.venv}
log() { printf '[setup:localwhisk] %s\n' "$*" >&2; }

if ! "$VENV/bin/python" -c 'import faasprof.localwhisk.server' 2>/dev/null; then
    log "localwhisk does not import in $VENV (is aiohttp installed? re-run ./setup.sh)"
    exit 1
fi
if command -v node >/dev/null 2>&1; then
    log "nodejs actions run on $(node --version)"
else
    log "node not found: nodejs actions will fail to start (the Node.js functions); ./setup.sh --with node"
fi
mode=$(cd "$ROOT" && "$VENV/bin/python" -c 'from faasprof.localwhisk.cgroups import detect; print(detect()[0])' 2>/dev/null || echo unknown)
case "$mode" in
    cgroup-v1|cgroup-v2) log "sandbox isolation: $mode (memory limit, cpu shares, freezer per sandbox)" ;;
    *) log "sandbox isolation: $mode (no writable cgroups: pause = SIGSTOP/SIGCONT, limits = rlimits; run as root for cgroups)" ;;
esac
exit 0
