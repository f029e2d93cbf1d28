#!/usr/bin/env bash
# Build faasprof's runtime images for localwhisk's docker isolation, without any registry:
#
#   faasprof/debian-bookworm-base:<hash>   debootstrap (minbase + python3) from the Debian archive, docker import
#   faasprof/action-python-v3.11:latest    base + faasprof's action proxy + localwhisk's launcher.py
#   faasprof/action-nodejs-v20:latest      base + the host's Node.js 20 binary + the proxy + launcher.js
#   faasprof/test-host:latest              (only with `host`) debootstrap (minbase + python3, openssh-server,
#                                          procps) + test-host-entry.sh: a machine reached by ssh, which the
#                                          tests of collectors on several hosts start two or three of
#
# Idempotent: an image whose label faasprof.recipe equals the hash of its recipe (this script, the
# Dockerfile, the proxy, the launcher, the Node.js version) is kept; --force rebuilds.
# Usage: build.sh [--force] [python|nodejs|host ...]   (default: python nodejs). Needs root (debootstrap) and dockerd.
# Env: DEBIAN_MIRROR (default http://deb.debian.org/debian), NODE (default: node on PATH).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
SUITE=bookworm
BASE_PACKAGES=python3
log() { printf '[runtime-images] %s\n' "$*" >&2; }

force=0
wanted=()
for arg in "$@"; do
    case "$arg" in
        --force) force=1 ;;
        python|nodejs|host) wanted+=("$arg") ;;
        -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
        *) echo "build.sh: unknown argument $arg (try --help)" >&2; exit 2 ;;
    esac
done
[ ${#wanted[@]} -gt 0 ] || wanted=(python nodejs)

if ! docker info >/dev/null 2>&1; then
    log "docker is not reachable (is dockerd running? try: dockerd >/var/log/dockerd.log 2>&1 &)"
    exit 3
fi

started=$(date +%s.%N)
label_of() { docker image inspect -f '{{index .Config.Labels "faasprof.recipe"}}' "$1" 2>/dev/null || true; }

# debootstrap_image TAG RECIPE PACKAGES KIND [FILE DEST] [--change ...]: a debootstrap root (minbase +
# PACKAGES, comma-separated) imported as TAG with the labels faasprof.recipe=RECIPE and faasprof.image=KIND,
# FILE copied to DEST inside it first when given.
debootstrap_image() {
    local tag=$1 recipe=$2 packages=$3 kind=$4 file=${5:-} dest=${6:-}
    shift 6 2>/dev/null || shift $#
    command -v debootstrap >/dev/null || { log "debootstrap is missing (apt-get install debootstrap)"; exit 3; }
    [ "$(id -u)" -eq 0 ] || { log "debootstrap needs root (run setup as root or with sudo)"; exit 3; }
    tmp=$(mktemp -d /var/tmp/faasprof-rootfs.XXXXXX)
    trap 'rm -rf "$tmp"' EXIT
    local t0
    t0=$(date +%s)
    log "debootstrap $SUITE ($packages) from $MIRROR ..."
    debootstrap --variant=minbase --include="$packages" "$SUITE" "$tmp/root" "$MIRROR" >"$tmp/debootstrap.log" 2>&1 \
        || { tail -20 "$tmp/debootstrap.log" >&2; log "debootstrap failed (log above)"; exit 1; }
    rm -rf "$tmp/root/var/cache/apt/archives/"*.deb "$tmp/root/var/lib/apt/lists/"* "$tmp/root/usr/share/doc" "$tmp/root/usr/share/man"
    rm -f "$tmp/root/etc/ssh/ssh_host_"*  # openssh-server's postinst made some: each container makes its own
    if [ -n "$file" ]; then
        install -m 0755 "$file" "$tmp/root$dest"
    fi
    tar -C "$tmp/root" --numeric-owner -c . | docker import --change "LABEL faasprof.recipe=$recipe" --change "LABEL faasprof.image=$kind" "$@" - "$tag" >/dev/null
    rm -rf "$tmp"
    trap - EXIT
    log "$tag built in $(( $(date +%s) - t0 )) s ($(docker image inspect -f '{{.Size}}' "$tag" | awk '{printf "%.0f MB", $1/1e6}'))"
}

# The base: its recipe is the suite, mirror-independent package list and this script's base part.
base_hash=$(printf '%s %s %s\n' "$SUITE" "$BASE_PACKAGES" minbase | sha256sum | cut -c1-16)
BASE="faasprof/debian-bookworm-base:$base_hash"
if [[ " ${wanted[*]} " != *" python "* && " ${wanted[*]} " != *" nodejs "* ]]; then
    :  # only the test host asked for: it has a root of its own
elif [ "$force" -eq 1 ] || [ "$(label_of "$BASE")" != "$base_hash" ]; then
    debootstrap_image "$BASE" "$base_hash" "$BASE_PACKAGES" runtime-base
else
    log "base $BASE up to date"
fi

# The test host: sshd in the foreground, the key it accepts from the container's AUTHORIZED_KEY.
build_host_image() {
    local tag=faasprof/test-host:latest packages=python3,openssh-server,procps recipe
    recipe=$( { printf '%s %s\n' "$SUITE" "$packages"; cat "$HERE/test-host-entry.sh"; } | sha256sum | cut -c1-16)
    if [ "$force" -eq 0 ] && [ "$(label_of "$tag")" = "$recipe" ]; then
        log "$tag up to date (recipe $recipe)"
        return 0
    fi
    debootstrap_image "$tag" "$recipe" "$packages" test-host "$HERE/test-host-entry.sh" /usr/local/sbin/test-host-entry \
        --change 'CMD ["/usr/local/sbin/test-host-entry"]' --change 'EXPOSE 22'
}

build_image() {
    local family=$1 tag=$2 launcher=$3 extra=$4
    local recipe
    recipe=$( { printf '%s\n' "$BASE" "$extra"; cat "$HERE/build.sh" "$HERE/Dockerfile.$family" "$HERE/actionproxy.py" "$launcher"; } | sha256sum | cut -c1-16)
    if [ "$force" -eq 0 ] && [ "$(label_of "$tag")" = "$recipe" ]; then
        log "$tag up to date (recipe $recipe)"
        return 0
    fi
    local ctx t0
    t0=$(date +%s.%N)
    ctx=$(mktemp -d /var/tmp/faasprof-image.XXXXXX)
    cp "$HERE/actionproxy.py" "$launcher" "$ctx/"
    if [ "$family" = nodejs ]; then
        cp "$NODE_BIN" "$ctx/node"
    fi
    DOCKER_BUILDKIT=0 docker build -q -f "$HERE/Dockerfile.$family" --build-arg "BASE=$BASE" \
        --label "faasprof.recipe=$recipe" --label faasprof.image=runtime -t "$tag" "$ctx" >/dev/null 2>"$ctx/build.err" \
        || { cat "$ctx/build.err" >&2; rm -rf "$ctx"; log "building $tag failed"; return 1; }
    rm -rf "$ctx"
    log "$tag built in $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}') s (recipe $recipe)"
}

status=0
for family in "${wanted[@]}"; do
    case "$family" in
        python)
            build_image python faasprof/action-python-v3.11:latest "$ROOT/faasprof/localwhisk/runtimes/launcher.py" "" || status=1 ;;
        nodejs)
            NODE_BIN=$(readlink -f "$(command -v "${NODE:-node}" || true)" 2>/dev/null || true)
            version=$([ -x "$NODE_BIN" ] && "$NODE_BIN" --version || true)
            if [ "${version%%.*}" != v20 ]; then
                log "faasprof/action-nodejs-v20 not built: it copies the host's Node.js 20 binary, found '${version:-no node}' (install nodejs 20 or set NODE=/path/to/node20)"
                status=1
                continue
            fi
            build_image nodejs faasprof/action-nodejs-v20:latest "$ROOT/faasprof/localwhisk/runtimes/launcher.js" "$version $(sha256sum "$NODE_BIN" | cut -c1-16)" || status=1 ;;
        host)
            build_host_image || status=1 ;;
    esac
done
# Images these recipes replaced are left untagged: remove those (only ours, by label).
docker image prune -f --filter label=faasprof.image=runtime >/dev/null 2>&1 || true
docker image prune -f --filter label=faasprof.image=test-host >/dev/null 2>&1 || true
log "runtime images done in $(awk -v a="$started" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}') s"
exit $status
