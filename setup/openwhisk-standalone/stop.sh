#!/usr/bin/env bash
# Stop the OpenWhisk standalone server that start.sh started, and remove its action containers.
#
#   setup/openwhisk-standalone/stop.sh [--build-dir DIR] [--state-dir DIR]
#
# Sends SIGTERM (the server removes its containers on the way out), waits up to 30 s, then SIGKILL.
# Containers its invoker left behind are then removed: OpenWhisk names invoker 0's action
# containers wsk0_*, and only containers of that name created from this server's runtime images
# (STATE_DIR/runtimes.json) are touched.
set -euo pipefail

# BUILD_DIR: $OPENWHISK_STANDALONE_HOME, else openwhisk-standalone in faasprof's cache.
# shellcheck source=setup/openwhisk-standalone/build_dir.sh
. "$(dirname "${BASH_SOURCE[0]}")/build_dir.sh"
STATE_DIR=""

die() {
    echo "stop.sh: $1" >&2
    exit "${2:-1}"
}

while [ $# -gt 0 ]; do
    case "$1" in
        --build-dir) [ $# -ge 2 ] || die "--build-dir needs a directory" 2; BUILD_DIR="$2"; shift 2 ;;
        --state-dir) [ $# -ge 2 ] || die "--state-dir needs a directory" 2; STATE_DIR="$2"; shift 2 ;;
        -h|--help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) die "unknown argument '$1' (see --help)" 2 ;;
    esac
done
STATE_DIR="${STATE_DIR:-$BUILD_DIR/run}"
PID_FILE="$STATE_DIR/standalone.pid"

if [ -f "$PID_FILE" ]; then
    pid="$(cat "$PID_FILE")"
    if kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid"
        for _ in $(seq 30); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 1
        done
        if kill -0 "$pid" 2>/dev/null; then
            echo "stop.sh: pid $pid still running after 30 s: SIGKILL" >&2
            kill -KILL "$pid"
        fi
        echo "stop.sh: stopped pid $pid"
    else
        echo "stop.sh: pid $pid (from $PID_FILE) was not running"
    fi
    rm -f "$PID_FILE"
else
    echo "stop.sh: $PID_FILE: none; nothing to stop"
fi

if command -v docker >/dev/null && docker info >/dev/null 2>&1 && [ -f "$STATE_DIR/runtimes.json" ]; then
    images="$(sed -n 's/.*"prefix": "\([^"]*\)", "name": "\([^"]*\)", "tag": "\([^"]*\)".*/\1\/\2:\3/p' "$STATE_DIR/runtimes.json")"
    leftovers=()
    while read -r id name image; do
        [ -n "$id" ] || continue
        case "$name" in wsk0_*) ;; *) continue ;; esac
        if grep -qxF "$image" <<< "$images"; then
            leftovers+=("$id")
        fi
    done < <(docker ps -a --filter "name=wsk0_" --format '{{.ID}} {{.Names}} {{.Image}}')
    if [ "${#leftovers[@]}" -gt 0 ]; then
        docker rm -f "${leftovers[@]}" >/dev/null
        echo "stop.sh: removed ${#leftovers[@]} leftover action containers"
    fi
fi
