#!/usr/bin/env bash
# Shared by setup.sh and setup/steps/*.sh (sourced, never run): progress lines, long commands
# timed and ticking, and which optional extras this setup installs.
#
# FAASPROF_EXTRAS (set by setup.sh from --with, --full, --dev) is a space-separated list of extra
# names; setup.sh --help lists them. A step installs an extra only when it is named there, and
# otherwise says in one line what stays unavailable and the command that installs it.
# LOG_TAG (optional, set by the sourcing script) names the step in its lines: [setup:TAG].

# Seconds between the "still running" lines of run_timed; no step is silent for longer.
SETUP_TICK_S=${SETUP_TICK_S:-10}

log() { printf '[setup%s] %s\n' "${LOG_TAG:+:$LOG_TAG}" "$*" >&2; }

# want EXTRA: true when this setup installs EXTRA.
want() {
    case " ${FAASPROF_EXTRAS:-} " in
        *" $1 "*) return 0 ;;
    esac
    return 1
}

# run_timed WHAT ESTIMATE CMD...: a line before (with the expected time), a line every
# SETUP_TICK_S seconds while CMD runs (pip, apt-get and go install print nothing for minutes), and
# a line after with the elapsed time. Returns CMD's status.
run_timed() {
    local what=$1 estimate=$2
    shift 2
    local started
    started=$(date +%s)
    log "$what (about $estimate) ..."
    (
        # The sleep is killed with the ticker, so no stray process keeps setup's stderr open.
        trap 'kill "$nap" 2>/dev/null; exit 0' TERM
        waited=0
        while :; do
            sleep 1 &
            nap=$!
            wait "$nap"
            waited=$((waited + 1))
            if [ $((waited % SETUP_TICK_S)) -eq 0 ]; then
                log "... $what: still running ($waited s)"
            fi
        done
    ) &
    local ticker=$!
    local status=0
    "$@" || status=$?
    kill "$ticker" 2>/dev/null || true
    wait "$ticker" 2>/dev/null || true
    local elapsed=$(($(date +%s) - started))
    if [ "$status" -eq 0 ]; then
        log "$what: done in $elapsed s"
    else
        log "$what: failed (exit $status) after $elapsed s"
    fi
    return "$status"
}

# sudo_prefix: "sudo" unless root (apt-get, systemctl).
sudo_prefix() {
    if [ "$(id -u)" -eq 0 ]; then
        echo ""
    else
        echo "sudo"
    fi
}

# apt_get_install WHAT ESTIMATE PACKAGE...: apt-get update and install, quiet and timed.
apt_get_install() {
    local what=$1 estimate=$2
    shift 2
    local sudo
    sudo=$(sudo_prefix)
    run_timed "$what: apt-get install $*" "$estimate" \
        sh -c "$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq $* >/dev/null"
}
