#!/usr/bin/env bash
# localwhisk's docker isolation: Docker itself and faasprof's runtime images
# (faasprof/action-python-v3.11, faasprof/action-nodejs-v20; recipes in setup/runtime-images/),
# and faasprof/test-host, the ssh host the tests of collectors on several hosts start.
# The extra `docker`: runs only with ./setup.sh --with docker, --full or --dev (so CI runs the
# docker tests); otherwise it says how. Installs docker.io and debootstrap when missing, starts
# dockerd when it is not running, builds the images unless they are up to date (build.sh compares
# recipe hashes). Safe to run twice.
# A failure here never fails setup: the docker tests skip and `faasprof doctor` says why.
# Env from setup.sh: FAASPROF_EXTRAS, FAASPROF_DEV (0/1), VENV, ROOT.
set -uo pipefail

ROOT=${ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
LOG_TAG=docker
# shellcheck source=setup/lib.sh
. "$ROOT/setup/lib.sh"

if ! want docker; then
    log "skipped (localwhisk's docker isolation): ./setup.sh --with docker"
    exit 0
fi
started=$(date +%s)
sudo=$(sudo_prefix)

missing=()
command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
if [ ${#missing[@]} -gt 0 ]; then
    if ! command -v apt-get >/dev/null 2>&1; then
        log "please install ${missing[*]} (no apt-get here); localwhisk's docker isolation stays unavailable"
        exit 0
    fi
    if ! apt_get_install "Docker" "1 min" "${missing[@]}"; then
        log "could not install ${missing[*]}; localwhisk's docker isolation stays unavailable"
        exit 0
    fi
fi

if ! docker info >/dev/null 2>&1; then
    if [ -S /var/run/docker.sock ] && pgrep -x dockerd >/dev/null 2>&1; then
        log "dockerd runs but does not answer this user (add the user to group docker, or run as root)"
        exit 0
    fi
    if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
        log "starting docker.service"
        $sudo systemctl start docker || true
    else
        # No systemd (containers, CI sandboxes): start the daemon in the background ourselves.
        # In a session of its own (setsid): the daemon must outlive this shell's process group,
        # which a job runner may kill when setup ends. The previous log is kept beside the new one.
        log "starting dockerd (log: /var/log/dockerd.log)"
        $sudo sh -c '[ -f /var/log/dockerd.log ] && mv -f /var/log/dockerd.log /var/log/dockerd.log.1; setsid nohup dockerd >/var/log/dockerd.log 2>&1 < /dev/null &'
    fi
    log "waiting for dockerd to answer (up to 30 s)"
    for _ in $(seq 1 60); do
        docker info >/dev/null 2>&1 && break
        sleep 0.5
    done
    if ! docker info >/dev/null 2>&1; then
        log "dockerd did not come up (see /var/log/dockerd.log); localwhisk's docker isolation stays unavailable"
        exit 0
    fi
fi

# host: the test host image, which the tests of collectors on several hosts start (tests/test_hosts_docker.py).
if ! run_timed "building the runtime images (setup/runtime-images/build.sh)" "3 to 10 min the first time, seconds when up to date" \
    ${sudo:+"$sudo"} bash "$ROOT/setup/runtime-images/build.sh" python nodejs host; then
    log "building the runtime images failed; retry: sudo $ROOT/setup/runtime-images/build.sh"
    exit 0
fi
log "docker isolation ready in $(( $(date +%s) - started )) s"
exit 0
