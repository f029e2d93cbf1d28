#!/usr/bin/env bash
# Set up faasprof on this machine. Safe to run twice; each step says what it does and how long.
#
#   ./setup.sh            what the quick start and the catalogue's Python functions need: .venv
#                         with faasprof and its Python packages, the function archives (about a
#                         minute with pip's cache warm); no optional extra
#   ./setup.sh --with EXTRA[,EXTRA]   that, plus the named optional extras (below)
#   ./setup.sh --full     that, plus every optional extra but bench
#   ./setup.sh --dev      that, plus every optional extra and the test tools (pytest, ansible,
#                         ansible-lint, shellcheck): what the full test suite needs (CI)
#   ./setup.sh --testbed [OPTIONS]   the bare-metal testbed (extras node, ocr, storage, then
#                         Docker, OpenWhisk, perf, intel-cmt-cat, blktrace); OPTIONS (--openwhisk-only,
#                         --tools-only, --check, --undo, --set NAME=VALUE, --inventory FILE) go to
#                         setup/testbed.sh (setup/README.md)
#   ./setup.sh --openwhisk [--source DIR]   that with the extra docker (the runtime images), then
#                         Apache OpenWhisk 2.0.0 standalone built once into faasprof's cache
#                         (setup/openwhisk-standalone/install.sh --help; JDK 17 and Maven)
#
# Optional extras (`faasprof doctor` lists those not installed, with what needs each):
#   node     Node.js, npm, img-resize's npm packages: autocomplete, img-resize, ocr-img (~30 s)
#   ocr      tesseract-ocr: ocr-img (~20 s)
#   storage  versitygw (S3 server, go install) and iperf3: workloads with a storage block, the
#            I/O studies, io-object, io-net (1 to 5 min: go builds versitygw)
#   docker   Docker, dockerd, faasprof's runtime images: --isolation docker (minutes)
#   perf     linux-perf: the perf collector, faasprof mpki (~20 s)
#   bench    nginx for bench/bench_invoker.py (~20 s)
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")"

# --openwhisk: faasprof with its runtime images, then OpenWhisk standalone (its options go to install.sh).
if [ "${1:-}" = "--openwhisk" ]; then
    shift
    ./setup.sh --with docker
    exec setup/openwhisk-standalone/install.sh "$@"
fi
ROOT=$(pwd)
VENV="$ROOT/.venv"
# shellcheck source=setup/lib.sh
. "$ROOT/setup/lib.sh"

ALL_EXTRAS="node ocr storage docker perf bench"
FULL_EXTRAS="node ocr storage docker perf"
# What a plain ./setup.sh installed before the extras were split off; the testbed's functions use them.
TESTBED_EXTRAS="node ocr storage"

# The comment block above, without its '# ' (it ends at the first line that is no comment).
usage() { sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; }

add_extras() {
    local name
    for name in ${1//,/ }; do
        case " $ALL_EXTRAS " in
            *" $name "*) ;;
            *) echo "setup.sh: --with: unknown extra '$name' (extras: ${ALL_EXTRAS// /, })" >&2; exit 2 ;;
        esac
        want "$name" || FAASPROF_EXTRAS="${FAASPROF_EXTRAS:+$FAASPROF_EXTRAS }$name"
    done
}

dev=0
testbed=0
testbed_args=()
FAASPROF_EXTRAS=""
expect_with=0
for arg in "$@"; do
    if [ "$testbed" -eq 1 ]; then
        # Everything after --testbed belongs to setup/testbed.sh (it checks its own options).
        testbed_args+=("$arg")
        continue
    fi
    if [ "$expect_with" -eq 1 ]; then
        add_extras "$arg"
        expect_with=0
        continue
    fi
    case "$arg" in
        --dev) dev=1; add_extras "${ALL_EXTRAS// /,}" ;;
        --full) add_extras "${FULL_EXTRAS// /,}" ;;
        --with) expect_with=1 ;;
        --with=*) add_extras "${arg#--with=}" ;;
        --testbed) testbed=1; add_extras "${TESTBED_EXTRAS// /,}" ;;
        -h|--help) usage; exit 0 ;;
        --openwhisk-only|--tools-only|--check|--undo|--set*|--inventory*)
            echo "setup.sh: $arg goes after --testbed (./setup.sh --testbed $arg)" >&2; exit 2 ;;
        *) echo "setup.sh: unknown option $arg (try --help)" >&2; exit 2 ;;
    esac
done
if [ "$expect_with" -eq 1 ]; then
    echo "setup.sh: --with needs a list of extras, e.g. --with storage,ocr (extras: ${ALL_EXTRAS// /, })" >&2
    exit 2
fi
# FAASPROF_DOCKER=1 ./setup.sh asked for the docker extra before --with existed.
if [ "${FAASPROF_DOCKER:-0}" = 1 ]; then
    add_extras docker
fi
export FAASPROF_EXTRAS
setup_started=$(date +%s)
log "installing the core${FAASPROF_EXTRAS:+ and the extras: $FAASPROF_EXTRAS}$([ "$dev" -eq 1 ] && echo ', with the test tools')"

# OS packages, only those missing; needs root or sudo.
apt_install() {
    local what=$1
    shift
    local missing=()
    for pkg in "$@"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    if ! command -v apt-get >/dev/null; then
        log "please install: ${missing[*]} (no apt-get here)"
        return 1
    fi
    apt_get_install "$what" "30 s" "${missing[@]}"
}

PYTHON=${PYTHON:-python3}
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null; then
    echo "setup.sh: faasprof needs Python >= 3.10 ($PYTHON is older or missing); set PYTHON=/path/to/python3" >&2
    exit 3
fi
if ! "$PYTHON" -c 'import venv, ensurepip' 2>/dev/null; then
    apt_install "Python's venv module" python3-venv
fi
if want node && ! command -v node >/dev/null; then
    apt_install "Node.js for the Node.js functions" nodejs npm
fi

if [ ! -x "$VENV/bin/python" ]; then
    run_timed "creating $VENV" "5 s" "$PYTHON" -m venv "$VENV"
fi
# An old pip (Debian's venv) cannot install editable pyproject packages; a recent one is kept as is
# (asking the index for a newer pip costs seconds on every run).
if ! "$VENV/bin/python" -c 'import sys, pip; sys.exit(int(pip.__version__.split(".")[0]) < 23)' 2>/dev/null; then
    run_timed "upgrading pip" "10 s" "$VENV/bin/python" -m pip install -q --upgrade pip setuptools wheel
fi
# --no-compile: byte-compiling every installed module was half of pip's CPU time (19.8 s against
# 37.5 s on a 2-core host); Python compiles a module when it is first imported instead.
pip_install=("$VENV/bin/python" -m pip install -q --no-compile --disable-pip-version-check)
if [ "$dev" -eq 1 ]; then
    run_timed "installing faasprof, its Python packages and the test tools" "1 min, more without a pip cache" \
        "${pip_install[@]}" -e ".[dev]"
else
    run_timed "installing faasprof and its Python packages (numpy, pandas, matplotlib, ...)" "40 s, more without a pip cache" \
        "${pip_install[@]}" -e .
fi

# Each part installs what it needs beyond Python packages (its extras only when asked for).
for step in "$ROOT"/setup/steps/*.sh; do
    [ -e "$step" ] || continue
    log "step $(basename "$step")"
    FAASPROF_DEV=$dev VENV="$VENV" ROOT="$ROOT" bash "$step"
done

if [ "$testbed" -eq 1 ]; then
    exec bash "$ROOT/setup/testbed.sh" ${testbed_args[@]+"${testbed_args[@]}"}
fi

log "done in $(($(date +%s) - setup_started)) s: run '$VENV/bin/faasprof --help'"
skipped=()
for name in $ALL_EXTRAS; do
    want "$name" || skipped+=("$name")
done
if [ ${#skipped[@]} -gt 0 ]; then
    log "extras not asked for: ${skipped[*]}; '$VENV/bin/faasprof doctor' says what needs each, './setup.sh --with NAME' installs one"
fi
