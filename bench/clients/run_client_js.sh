#!/usr/bin/env bash
# shellcheck disable=SC1091,SC2154  # $repo, $work, $auth, $apihost come from localwhisk_server.sh
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
source "$(dirname "$0")/localwhisk_server.sh"
start_localwhisk lw-clientjs --pause-grace 10s
echo "localwhisk at $apihost" >&2
cd "$client_dir"
# The client's tests read these (test/integration/README.md); ava runs the files one at a time
# so that their list-and-count tests do not see each other's entities.
__OW_API_HOST=$apihost __OW_API_KEY=$auth __OW_NAMESPACE=guest __OW_APIGW_TOKEN=unused \
    npx ava --serial --concurrency 1 --timeout 60s "${@:-test/integration/*.test.js}"
