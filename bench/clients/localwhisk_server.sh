# shellcheck shell=bash disable=SC2034  # sets variables for the sourcing runner
# Sourced by the client runners: starts a localwhisk on 127.0.0.1 (a free port) in a fresh work
# directory, waits for it, and stops it and removes the directory on exit.
# start_localwhisk takes the work directory's prefix and extra `serve` arguments.
# Sets: $repo, $python, $work, $auth, $apihost, $server_pid.
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
python=${PYTHON:-$repo/.venv/bin/python}
auth=23bc46b1-71f6-4ed5-8c54-816aa4f8c502:123zO3xZCLrMN6v2BKK1dXYFpXlPkccOFqm12CdAsMgRU4VrNZ9lyGVCGuMDGIwP

start_localwhisk() {  # start_localwhisk WORK_PREFIX [serve args...]
    work=$(mktemp -d "/tmp/$1.XXXXXX"); shift
    trap 'cleanup_localwhisk' EXIT
    LOCALWHISK_AUTH=$auth PYTHONPATH=$repo "$python" -m faasprof.localwhisk serve --port 0 --port-file "$work/port.json" \
        --data-dir "$work/data" "$@" >"$work/server.log" 2>&1 &
    server_pid=$!
    for _ in $(seq 200); do [ -s "$work/port.json" ] && break; sleep 0.1; done
    apihost=$("$python" -c 'import json,sys; print(json.load(open(sys.argv[1]))["apihost"])' "$work/port.json")
}

cleanup_localwhisk() {
    [ -n "${server_pid:-}" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
    rm -rf "$work"
}
