#!/usr/bin/env bash
# Set up the bare-metal testbed: profiling tools, Docker, Apache OpenWhisk (pinned, classic invoker),
# wsk and ~/.wskprops, faasprof's functions and a smoke invocation; then `faasprof doctor`.
# Safe to run twice (the second run changes nothing). Run as root or a user with sudo.
#
#   setup/testbed.sh                    everything (./setup.sh --testbed calls this)
#   setup/testbed.sh --tools-only       perf, intel-cmt-cat, blktrace, tesseract, resctrl, sysctl
#   setup/testbed.sh --openwhisk-only   Docker, OpenWhisk, wsk, functions, smoke test
#   setup/testbed.sh --check            show what would change, change nothing
#   setup/testbed.sh --undo             remove OpenWhisk and restore the kernel/CPU settings
#   --set NAME=VALUE                    override a row of setup/openwhisk_settings.yml (repeatable),
#                                       e.g. --set invoker_user_memory=8192m
#   --inventory FILE                    another inventory (default setup/inventory/single-node.ini,
#                                       or $FAASPROF_INVENTORY); see inventory/multi-node.example.ini
#   -- ARGS                             passed to ansible-playbook (e.g. -- -e tools_cpu_governor=performance)
# Variables for the playbooks can also go in local/testbed.yml (or $FAASPROF_TESTBED_VARS).
set -euo pipefail

SETUP=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$SETUP")
VENV=${VENV:-$ROOT/.venv}

die() { printf 'testbed.sh: %s\n' "$*" >&2; exit "${2:-2}"; }
log() { printf '[testbed] %s\n' "$*" >&2; }

playbook=site.yml
check=0
inventory=${FAASPROF_INVENTORY:-$SETUP/inventory/single-node.ini}
sets=()
extra=()
while [ $# -gt 0 ]; do
    case "$1" in
        --tools-only|--openwhisk-only|--undo)
            [ "$playbook" = site.yml ] || die "--tools-only, --openwhisk-only and --undo exclude each other"
            case "$1" in
                --tools-only) playbook=tools.yml ;;
                --openwhisk-only) playbook=openwhisk.yml ;;
                *) playbook=undo.yml ;;
            esac ;;
        --check) check=1 ;;
        --set)
            [ $# -ge 2 ] || die "--set needs NAME=VALUE"
            sets+=(--set "$2"); shift ;;
        --set=*) sets+=(--set "${1#--set=}") ;;
        --inventory)
            [ $# -ge 2 ] || die "--inventory needs a file"
            inventory=$2; shift ;;
        --inventory=*) inventory=${1#--inventory=} ;;
        --) shift; extra=("$@"); break ;;
        -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
        *) die "unknown option $1 (try --help)" ;;
    esac
    shift
done

[ -x "$VENV/bin/python" ] || die "no venv at $VENV: run ./setup.sh first" 3
[ -f "$inventory" ] || die "inventory $inventory: no such file (copy setup/inventory/multi-node.example.ini)"

# ansible-core comes with ./setup.sh --dev; a plain ./setup.sh does not install it.
if ! "$VENV/bin/ansible-playbook" --version >/dev/null 2>&1; then
    log "installing ansible-core into $VENV"
    "$VENV/bin/python" -m pip install -q 'ansible-core>=2.15,<2.18'
fi

vars_file=${FAASPROF_TESTBED_VARS:-$ROOT/local/testbed.yml}
vars_args=()
override_args=()
if [ -f "$vars_file" ]; then
    log "using variables from $vars_file"
    vars_args=(-e "@$vars_file")
    override_args=(--overrides-file "$vars_file")
fi

# Validate the OpenWhisk overrides before touching the machine: an unknown name is an error here.
overrides=$("$VENV/bin/python" "$SETUP/openwhisk_vars.py" --allow-auto --print-overrides \
    "${override_args[@]}" "${sets[@]}") || die "fix the settings above (names: setup/openwhisk_settings.yml)"

become_args=()
if [ "$(id -u)" -ne 0 ] && ! sudo -n true 2>/dev/null; then
    become_args=(--ask-become-pass)
fi
check_args=()
[ "$check" -eq 1 ] && check_args=(--check --diff)

log "ansible-playbook $playbook on $(basename "$inventory")${check_args[*]:+ (check mode: nothing changes)}"
set +e
ANSIBLE_CONFIG="$SETUP/ansible.cfg" "$VENV/bin/ansible-playbook" \
    -i "$inventory" "$SETUP/$playbook" \
    "${vars_args[@]}" -e "{\"openwhisk_overrides\": $overrides}" \
    "${become_args[@]}" "${check_args[@]}" "${extra[@]}"
status=$?
set -e

# What this host can measure now, whatever the playbooks did.
if [ -x "$VENV/bin/faasprof" ] && [ "$playbook" != undo.yml ]; then
    log "faasprof doctor"
    "$VENV/bin/faasprof" doctor || log "faasprof doctor exited with $? (see above)"
fi
if [ "$status" -ne 0 ]; then
    die "ansible-playbook $playbook failed (exit $status); the task above says why. Safe to re-run." 1
fi
log "done${check_args[*]:+ (check mode: nothing was changed)}"
