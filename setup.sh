#!/usr/bin/env bash
# Set up faasprof on this machine. Safe to run twice.
#
#   ./setup.sh            .venv with faasprof and its dependencies, function archives built
#   ./setup.sh --dev      the same plus the test tools (pytest, ansible, ansible-lint, shellcheck)
#   ./setup.sh --testbed [OPTIONS]   the bare-metal testbed: Docker, OpenWhisk, perf, intel-cmt-cat,
#                         blktrace; OPTIONS (--openwhisk-only, --tools-only, --check, --undo,
#                         --set NAME=VALUE, --inventory FILE) go to setup/testbed.sh (setup/README.md)
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")"
ROOT=$(pwd)
VENV="$ROOT/.venv"

dev=0
testbed=0
testbed_args=()
for arg in "$@"; do
    if [ "$testbed" -eq 1 ]; then
        # Everything after --testbed belongs to setup/testbed.sh (it checks its own options).
        testbed_args+=("$arg")
        continue
    fi
    case "$arg" in
        --dev) dev=1 ;;
        --testbed) testbed=1 ;;
        -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
        --openwhisk-only|--tools-only|--check|--undo|--set*|--inventory*)
            echo "setup.sh: $arg goes after --testbed (./setup.sh --testbed $arg)" >&2; exit 2 ;;
        *) echo "setup.sh: unknown option $arg (try --help)" >&2; exit 2 ;;
    esac
done

log() { printf '[setup] %s\n' "$*" >&2; }

# OS packages, only those missing; needs root or sudo.
apt_install() {
    local missing=()
    for pkg in "$@"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    if ! command -v apt-get >/dev/null; then
        log "please install: ${missing[*]} (no apt-get here)"
        return 1
    fi
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    log "installing OS packages: ${missing[*]}"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
}

PYTHON=${PYTHON:-python3}
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null; then
    echo "setup.sh: faasprof needs Python >= 3.10 ($PYTHON is older or missing); set PYTHON=/path/to/python3" >&2
    exit 3
fi
if ! "$PYTHON" -c 'import venv, ensurepip' 2>/dev/null; then
    apt_install python3-venv
fi
if ! command -v node >/dev/null; then
    apt_install nodejs npm
fi

if [ ! -x "$VENV/bin/python" ]; then
    log "creating $VENV"
    "$PYTHON" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install -q --upgrade pip setuptools wheel
if [ "$dev" -eq 1 ]; then
    log "installing faasprof with the test tools"
    "$VENV/bin/python" -m pip install -q -e ".[dev]"
else
    log "installing faasprof"
    "$VENV/bin/python" -m pip install -q -e .
fi

# Each part installs what it needs beyond Python packages.
for step in "$ROOT"/setup/steps/*.sh; do
    [ -e "$step" ] || continue
    log "step $(basename "$step")"
    FAASPROF_DEV=$dev VENV="$VENV" ROOT="$ROOT" bash "$step"
done

if [ "$testbed" -eq 1 ]; then
    exec bash "$ROOT/setup/testbed.sh" ${testbed_args[@]+"${testbed_args[@]}"}
fi

log "done: run '$VENV/bin/faasprof --help'"
