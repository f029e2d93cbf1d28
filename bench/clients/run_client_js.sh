#!/usr/bin/env bash
# Runs the `openwhisk` npm client's own integration suite (apache/openwhisk-client-js,
# test/integration) against a fresh localwhisk on 127.0.0.1 and prints ava's summary.
#
#   bench/clients/run_client_js.sh CLIENT_JS_DIR [ava args...]
#
# CLIENT_JS_DIR is a checkout of apache/openwhisk-client-js with `npm install` done. Nothing of the
# client is kept in this repository. Exit status: ava's.
set -euo pipefail
client_dir=${1:?usage: run_client_js.sh CLIENT_JS_DIR [ava args...]}
shift
repo=$(cd "$(dirname "$0")/../.." && pwd)
python=${PYTHON:-$repo/.venv/bin/python}
work=$(mktemp -d /tmp/lw-clientjs.XXXXXX)
cleanup() { [ -n "${server_pid:-}" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
auth=23bc46b1-71f6-4ed5-8c54-816aa4f8c502:123zO3xZCLrMN6v2BKK1dXYFpXlPkccOFqm12CdAsMgRU4VrNZ9lyGVCGuMDGIwP
LOCALWHISK_AUTH=$auth PYTHONPATH=$repo "$python" -m localwhisk serve --port 0 --port-file "$work/port.json" \
    --data-dir "$work/data" --pause-grace 10s >"$work/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 200); do [ -s "$work/port.json" ] && break; sleep 0.1; done
apihost=$("$python" -c 'import json,sys; print(json.load(open(sys.argv[1]))["apihost"])' "$work/port.json")
echo "localwhisk at $apihost" >&2
cd "$client_dir"
# The client's tests read these (test/integration/README.md); ava runs the files one at a time
# so that their list-and-count tests do not see each other's entities.
__OW_API_HOST=$apihost __OW_API_KEY=$auth __OW_NAMESPACE=guest __OW_APIGW_TOKEN=unused \
    npx ava --serial --concurrency 1 --timeout 60s "${@:-test/integration/*.test.js}"
