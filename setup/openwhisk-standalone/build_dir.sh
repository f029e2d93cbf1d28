# shellcheck shell=bash
# Sourced by build.sh, install.sh, start.sh and stop.sh (install.sh copies it beside the build with
# the two launchers): sets BUILD_DIR to the build folder's default, $OPENWHISK_STANDALONE_HOME, else
# openwhisk-standalone in faasprof's cache (faasprof.paths.cache_root: $FAASPROF_CACHE_DIR, else
# $XDG_CACHE_HOME/faasprof when absolute, else ~/.cache/faasprof). --build-dir overrides it.
CACHE_ROOT="${FAASPROF_CACHE_DIR:-}"
if [ -z "$CACHE_ROOT" ]; then
    case "${XDG_CACHE_HOME:-}" in
        /*) CACHE_ROOT="$XDG_CACHE_HOME/faasprof" ;;
        *) CACHE_ROOT="$HOME/.cache/faasprof" ;;
    esac
fi
# shellcheck disable=SC2034  # read by the scripts that source this file
BUILD_DIR="${OPENWHISK_STANDALONE_HOME:-$CACHE_ROOT/openwhisk-standalone}"
