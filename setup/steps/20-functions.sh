#!/usr/bin/env bash
# Benchmark functions: the Tesseract binary for ocr-img, then, in faasprof's cache, the action archives and the
# Node.js functions' npm packages ($FAASPROF_CACHE_DIR, else
# ${XDG_CACHE_HOME:-~/.cache}/faasprof; `faasprof cache list` shows it). Safe to run twice.
#
# A missing optional dependency makes only the function that needs it unavailable; the message
# says how to install it. Env from setup.sh: FAASPROF_DEV (0/1), VENV, ROOT.
set -uo pipefail

ROOT=${ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
VENV=${VENV:-$ROOT/.venv}
log() { printf '[setup:functions] %s\n' "$*" >&2; }

# Node.js functions: their npm packages go to faasprof's cache (npm ci of each package-lock.json,
# once per lock hash), installed by the archive build below; nothing is written into functions/.
if ! command -v npm >/dev/null 2>&1; then
    log "npm not found: the Node.js functions with npm packages stay unavailable; install nodejs and npm (apt-get install nodejs npm)"
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

# Archives: reproducible zips of every available function (npm packages installed first, with a
# line saying what and how long); unavailable ones are reported.
if [ -x "$VENV/bin/python" ]; then
    (cd "$ROOT" && "$VENV/bin/python" -m faasprof.functions.package --all) \
        || log "building the function archives failed; rerun: $VENV/bin/python -m faasprof.functions.package --all"
fi
exit 0
