#!/usr/bin/env bash
# Get Apache OpenWhisk 2.0.0 standalone for faasprof: built once into faasprof's cache, then reused.
#
#   ./setup.sh --openwhisk [--source DIR] [--rebuild]
#   setup/openwhisk-standalone/install.sh [--source DIR] [--build-dir DIR] [--rebuild]
#
#   --source DIR      an export or checkout of OpenWhisk's tag 2.0.0 (else $OPENWHISK_SRC; else the
#                     tag is cloned from GitHub when it is reachable)
#   --build-dir DIR   where the build goes [$OPENWHISK_STANDALONE_HOME or <faasprof cache>/openwhisk-standalone]
#   --rebuild         build again even when a build is there
#
# A second call finds the build and says where it is (seconds). Either way the launchers (start.sh,
# stop.sh) are copied beside the build, where `faasprof local start --platform openwhisk` finds them.
# The build's log is BUILD_DIR/build.log.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
OPENWHISK_TAG="2.0.0"
OPENWHISK_REPO="${OPENWHISK_REPO_URL:-https://github.com/apache/openwhisk.git}"
# BUILD_DIR: $OPENWHISK_STANDALONE_HOME, else openwhisk-standalone in faasprof's cache.
# shellcheck source=setup/openwhisk-standalone/build_dir.sh
. "$(dirname "${BASH_SOURCE[0]}")/build_dir.sh"
SOURCE="${OPENWHISK_SRC:-}"
REBUILD=0

die() {
    echo "setup.sh --openwhisk: $1" >&2
    exit "${2:-1}"
}

while [ $# -gt 0 ]; do
    case "$1" in
        --source) [ $# -ge 2 ] || die "--source needs a directory (an export of OpenWhisk's tag $OPENWHISK_TAG)" 2; SOURCE="$2"; shift 2 ;;
        --build-dir) [ $# -ge 2 ] || die "--build-dir needs a directory" 2; BUILD_DIR="$2"; shift 2 ;;
        --rebuild) REBUILD=1; shift ;;
        -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) die "unknown argument '$1' (see --help)" 2 ;;
    esac
done

# The build is there when build.env names what start.sh launches and that exists.
built() {
    local env="$BUILD_DIR/build.env"
    [ -f "$env" ] || return 1
    local classes jar
    classes="$(sed -n 's/^OW_CLASSES=//p' "$env")"
    jar="$(sed -n 's/^OW_JAR=//p' "$env")"
    if [ -n "$classes" ]; then
        [ -f "$classes/org/apache/openwhisk/standalone/StandaloneOpenWhisk.class" ]
    else
        [ -n "$jar" ] && [ -f "$jar" ]
    fi
}

copy_launchers() {
    install -m 0755 "$HERE/start.sh" "$HERE/stop.sh" "$BUILD_DIR/"
    install -m 0644 "$HERE/build_dir.sh" "$BUILD_DIR/"
}

mkdir -p "$BUILD_DIR" || die "$BUILD_DIR: cannot create it; set FAASPROF_CACHE_DIR or OPENWHISK_STANDALONE_HOME to a writable folder" 3
BUILD_DIR="$(cd "$BUILD_DIR" && pwd)"

if [ "$REBUILD" -eq 0 ] && built; then
    copy_launchers
    echo "setup.sh --openwhisk: OpenWhisk $OPENWHISK_TAG standalone is already built in $BUILD_DIR (--rebuild builds it again)"
    echo "setup.sh --openwhisk: start it with: faasprof local start --platform openwhisk"
    exit 0
fi

build_args=(--build-dir "$BUILD_DIR")
if [ -n "$SOURCE" ]; then
    [ -d "$SOURCE" ] || die "--source $SOURCE: no such directory; pass an export of OpenWhisk's tag $OPENWHISK_TAG" 2
    build_args+=(--source "$SOURCE")
elif [ ! -d "$BUILD_DIR/openwhisk-src/core/standalone" ]; then
    # build.sh clones the tag itself; find out first whether it can, so that the answer is one line.
    if ! command -v git >/dev/null || ! timeout 20 git ls-remote --exit-code --tags "$OPENWHISK_REPO" "$OPENWHISK_TAG" >/dev/null 2>&1; then
        die "no OpenWhisk source and $OPENWHISK_REPO is not reachable: pass --source DIR (or set OPENWHISK_SRC) naming an export of the tag $OPENWHISK_TAG" 3
    fi
fi

started_s=$SECONDS
echo "setup.sh --openwhisk: building OpenWhisk $OPENWHISK_TAG standalone into $BUILD_DIR (log: $BUILD_DIR/build.log)"
set +e
"$HERE/build.sh" "${build_args[@]}" 2>&1 | tee "$BUILD_DIR/build.log"
status="${PIPESTATUS[0]}"
set -e
[ "$status" -eq 0 ] || die "the build failed with status $status (its log: $BUILD_DIR/build.log)" "$status"
built || die "$BUILD_DIR/build.env: the build finished but what it names is missing (its log: $BUILD_DIR/build.log)" 1
copy_launchers
echo "setup.sh --openwhisk: built in $((SECONDS - started_s)) s into $BUILD_DIR"
echo "setup.sh --openwhisk: start it with: faasprof local start --platform openwhisk"
