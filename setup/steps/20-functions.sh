#!/usr/bin/env bash
# Benchmark functions: npm packages of the Node.js functions, the Tesseract binary for ocr-img,
# then the action archives (functions/build/*.zip). Safe to run twice.
#
# A missing optional dependency makes only the function that needs it unavailable; the message
# says how to install it. Env from setup.sh: FAASPROF_DEV (0/1), VENV, ROOT.
set -uo pipefail

ROOT=${ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
VENV=${VENV:-$ROOT/.venv}
log() { printf '[setup:functions] %s\n' "$*" >&2; }

# Node.js functions: install exactly what each package-lock.json pins (npm ci), only when the
# lock changed since the last install (node_modules/.package-lock.json is npm's own copy).
if command -v npm >/dev/null 2>&1; then
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
    if command -v apt-get >/dev/null 2>&1; then
        sudo=""
        [ "$(id -u)" -eq 0 ] || sudo="sudo"
        log "installing tesseract-ocr for ocr-img"
        if ! { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq tesseract-ocr >/dev/null; }; then
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
