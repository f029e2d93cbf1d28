#!/usr/bin/env bash
# Benchmark functions: the Tesseract binary for ocr-img, then, in faasprof's cache, the action archives and the
# Node.js functions' npm packages ($FAASPROF_CACHE_DIR, else
# ${XDG_CACHE_HOME:-~/.cache}/faasprof; `faasprof cache list` shows it). Safe to run twice.
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

# Node.js functions: their npm packages go to faasprof's cache (npm ci of each package-lock.json,
# once per lock hash), installed by the archive build below with the extra node; nothing is
# written into faasprof/functions/.
if ! want node; then
    log "npm packages skipped (the extra node: img-resize needs them, autocomplete and ocr-img need Node.js): ./setup.sh --with node"
elif ! command -v npm >/dev/null 2>&1; then
    log "npm not found: the Node.js functions with npm packages stay unavailable; install nodejs and npm (apt-get install nodejs npm)"
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

# Archives: reproducible zips of every available function (with the extra node, npm packages are
# installed first, with a line saying what and how long); unavailable ones are reported.
if [ -x "$VENV/bin/python" ]; then
    install=(--no-install)
    if want node; then install=(); fi
    (cd "$ROOT" && "$VENV/bin/python" -m faasprof.functions.package --all ${install[@]+"${install[@]}"}) \
        || log "building the function archives failed; rerun: $VENV/bin/python -m faasprof.functions.package --all"
fi
exit 0
