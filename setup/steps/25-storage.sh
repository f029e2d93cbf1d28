#!/usr/bin/env bash
# Storage servers for the I/O studies (faasprof/experiments/storage.py starts them on loopback per run), the
# extra `storage` (./setup.sh --with storage, --full or --dev): versitygw, an S3 server, built with
# `go install` from the Go module proxy (pinned version) into the venv's bin (found there whatever
# HOME is); iperf3 from the Debian packages. Only what is missing is installed; safe twice.
# A missing server makes only the workloads with a `storage` block unavailable, with this fix.
# Env from setup.sh: FAASPROF_EXTRAS, FAASPROF_DEV (0/1), VENV, ROOT.
set -uo pipefail

VERSITYGW_VERSION=v1.8.0
ROOT=${ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
VENV=${VENV:-$ROOT/.venv}
LOG_TAG=storage
# shellcheck source=setup/lib.sh
. "$ROOT/setup/lib.sh"

gobin="$VENV/bin"
# go install does not stamp the version into the binary: a marker beside it records what was built.
marker="$gobin/.versitygw-version"
have=""
if [ -x "$gobin/versitygw" ] && [ -f "$marker" ]; then
    have=$(cat "$marker")
fi

if ! want storage; then
    missing=()
    [ "$have" = "$VERSITYGW_VERSION" ] || command -v versitygw >/dev/null 2>&1 || missing+=(versitygw)
    command -v iperf3 >/dev/null 2>&1 || missing+=(iperf3)
    if [ ${#missing[@]} -gt 0 ]; then
        log "${missing[*]} not installed (needed by workloads with a storage block, the I/O studies, io-object, io-net): ./setup.sh --with storage"
    fi
    exit 0
fi

if ! command -v iperf3 >/dev/null 2>&1; then
    if command -v apt-get >/dev/null 2>&1; then
        if ! apt_get_install "iperf3 for io-net" "20 s" iperf3; then
            log "could not install iperf3 (apt-get install iperf3): io-net stays unavailable"
        fi
    else
        log "no apt-get: install iperf3 for io-net"
    fi
fi

if [ "$have" = "$VERSITYGW_VERSION" ]; then
    log "versitygw $have in $gobin"
elif command -v go >/dev/null 2>&1; then
    # Outside the repository, so our pyproject is never mistaken for a Go module.
    if (cd / && run_timed "building versitygw $VERSITYGW_VERSION with go install" "1 to 5 min the first time, seconds after" \
        env GOBIN="$gobin" go install "github.com/versity/versitygw/cmd/versitygw@$VERSITYGW_VERSION"); then
        echo "$VERSITYGW_VERSION" > "$marker"
        log "versitygw installed in $gobin"
    else
        log "go install of versitygw failed: the object store stays unavailable (re-run ./setup.sh --with storage)"
    fi
else
    log "go not found: install Go (apt-get install golang-go), then re-run ./setup.sh --with storage for the object store"
fi
# Like the other steps, a missing optional server does not fail the whole setup.
exit 0
