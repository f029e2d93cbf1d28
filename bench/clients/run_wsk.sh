#!/usr/bin/env bash
# shellcheck disable=SC1091,SC2154  # $repo, $work, $auth, $apihost come from localwhisk_server.sh
# Drives the `wsk` CLI (built from apache/openwhisk-cli) against a fresh localwhisk on 127.0.0.1:
# actions, activations (get, result, logs, list, poll), namespaces and `wsk list`. Prints one
# line per check and a summary; exit 1 if any check failed.
#
#   bench/clients/run_wsk.sh PATH_TO_WSK
set -uo pipefail
wsk_bin=${1:?usage: run_wsk.sh PATH_TO_WSK}
source "$(dirname "$0")/localwhisk_server.sh"
start_localwhisk lw-wsk
export WSK_CONFIG_FILE=$work/wskprops
printf 'APIHOST=%s\nAUTH=%s\nNAMESPACE=_\n' "$apihost" "$auth" >"$WSK_CONFIG_FILE"
wsk() { "$wsk_bin" -i "$@"; }
printf 'def main(args):\n    print("log line", args.get("name"))\n    return {"greeting": "hello " + args.get("name", "you")}\n' >"$work/hello.py"
printf 'function main(p) { return {n: (p.n || 0) + 1}; }\n' >"$work/inc.js"

pass=0; fail=0
check() {  # check NAME EXPECTED_SUBSTRING COMMAND...
    local name=$1 want=$2; shift 2
    local out
    if out=$("$@" 2>&1) && grep -qF -- "$want" <<<"$out"; then pass=$((pass + 1)); echo "ok   $name"
    else fail=$((fail + 1)); echo "FAIL $name: $(head -c 300 <<<"$out" | tr '\n' ' ')"; fi
}
check "action create (python)"        "created action hello"   wsk action create hello "$work/hello.py" --kind python:3
check "action create (nodejs)"        "created action inc"     wsk action create inc "$work/inc.js" --kind nodejs:default
check "package create"                "created package tools"  wsk package create tools -p n 100
check "action create in a package"    "created action tools/inc" wsk action create tools/inc "$work/inc.js" --kind nodejs:default
check "package get"                   "inc"                    wsk package get tools
check "package list"                  "/guest/tools"           wsk package list
check "action update (memory)"        "updated action hello"   wsk action update hello "$work/hello.py" --memory 128
check "action get"                    '"memory": 128'          wsk action get hello
check "action list"                   "/guest/hello"           wsk action list
check "action invoke --result"        "hello faas"             wsk action invoke hello -p name faas --result
check "action invoke --blocking"      '"status": "success"'    wsk action invoke inc -p n 41 --blocking
check "packaged action invoke"        '"n": 8'                 wsk action invoke tools/inc -p n 7 --result
check "package parameter as default"  '"n": 101'               wsk action invoke tools/inc --result
id=$(wsk action invoke hello -p name async 2>&1 | grep -o '[0-9a-f]\{32\}' | head -1)
sleep 1
check "activation get"                "$id"                    wsk activation get "$id"
check "activation result"             "hello async"            wsk activation result "$id"
check "activation logs"               "log line async"         wsk activation logs "$id"
check "activation list"               "hello"                  wsk activation list
check "activation list --limit"       "inc"                    wsk activation list inc --limit 5
check "activation get --last"         '"activationId"'         wsk activation get --last
( sleep 2; wsk action invoke hello -p name polled >/dev/null 2>&1 ) &
check "activation poll"               "log line polled"        sh -c "timeout 8 \"$wsk_bin\" -i activation poll --exit 6; true"  # poll exits non-zero when --exit ends it
check "namespace list"                "guest"                  wsk namespace list
check "namespace get"                 "Entities in namespace"  wsk namespace get
check "wsk list"                      "/guest/hello"           wsk list
check "action delete"                 "deleted action inc"     wsk action delete inc
check "action delete in a package"    "deleted action tools/inc" wsk action delete tools/inc
check "package delete"                "deleted package tools"  wsk package delete tools
check "trigger create is refused"     "does not support triggers" sh -c "\"$wsk_bin\" -i trigger create t; true"
echo "wsk checks: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
