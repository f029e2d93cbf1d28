#!/usr/bin/env bash
# Benchmark functions: npm packages of the Node.js functions, the Tesseract binary for ocr-img,
# then the action archives (functions/build/*.zip). Safe to run twice.
#
# The npm packages come with the extra `node`, tesseract with the extra `ocr` (./setup.sh --with
# node,ocr, --full or --dev); the archives always. A missing optional dependency makes only the
# function that needs it unavailable; the message says how to install it.
# Env from setup.sh: FAASPROF_EXTRAS, FAASPROF_DEV (0/1), VENV, ROOT.
set -uo pipefail

ROOT=${ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
VENV=${VENV:-$ROOT/.venv}
LOG_TAG=functions
# shellcheck source=setup/lib.sh
. "$ROOT/setup/lib.sh"

# Node.js functions: install exactly what each package-lock.json pins (npm ci), only when the
# lock changed since the last install (node_modules/.package-lock.json is npm's own copy).
if ! want node; then
    log "npm packages skipped (the extra node: img-resize needs them, autocomplete and ocr-img need Node.js): ./setup.sh --with node"
elif command -v npm >/dev/null 2>&1; then
    for dir in "$ROOT"/functions/*/; do
        [ -f "$dir/package.json" ] || continue
        name=$(basename "$dir")
        if ! grep -q '"dependencies"' "$dir/package.json"; then
            continue
        fi
        if [ -f "$dir/package-lock.json" ] && [ -f "$dir/node_modules/.package-lock.json" ] \
            && [ "$dir/node_modules/.package-lock.json" -nt "$dir/package-lock.json" ]; then
            log "$name: node_modules up to date"
            continue
        fi
        log "$name: installing npm packages"
        if [ -f "$dir/package-lock.json" ]; then
            cmd=(npm ci --omit=dev --no-audit --no-fund --loglevel=error)
        else
            cmd=(npm install --omit=dev --no-audit --no-fund --loglevel=error)
        fi
        if ! (cd "$dir" && "${cmd[@]}" >/dev/null); then
            log "$name: npm install failed; $name stays unavailable until 'cd functions/$name && npm ci' succeeds"
        fi
    done
else
    log "npm not found: the Node.js functions stay unavailable; install nodejs and npm (apt-get install nodejs npm)"
fi

# ocr-img calls the tesseract binary (with English data, which tesseract-ocr pulls in).
if ! command -v tesseract >/dev/null 2>&1; then
    if ! want ocr; then
        log "tesseract not installed (ocr-img needs it): ./setup.sh --with ocr"
    elif command -v apt-get >/dev/null 2>&1; then
        if ! apt_get_install "tesseract-ocr for ocr-img" "20 s" tesseract-ocr; then
            log "could not install tesseract-ocr: ocr-img stays unavailable (install it with: apt-get install tesseract-ocr)"
        fi
    else
        log "no apt-get: ocr-img stays unavailable until tesseract is installed (e.g. brew install tesseract)"
    fi
fi

# Archives: reproducible zips of every available function; unavailable ones are reported.
if [ -x "$VENV/bin/python" ]; then
    (cd "$ROOT" && "$VENV/bin/python" -m faasprof.functions.package --all --out "$ROOT/functions/build") \
        || log "building the function archives failed; rerun: $VENV/bin/python -m faasprof.functions.package --all"
fi
exit 0
