#!/usr/bin/env bash
# Start the OpenWhisk standalone server that build.sh built, with faasprof's settings, and wait
# until it serves invocations.
#
#   setup/openwhisk-standalone/start.sh [options]
#
# Options (defaults in brackets; each also from the environment variable named):
#   --build-dir DIR          build.sh's folder [$OPENWHISK_STANDALONE_HOME or <faasprof cache>/openwhisk-standalone]
#   --state-dir DIR          logs, data, runtimes manifest, pid, wskprops [BUILD_DIR/run]
#   --port N                 API port on 127.0.0.1 [3233] (OW_PORT)
#   --user-memory MB         invoker container-pool memory [4096] (OW_USER_MEMORY_MB)
#   --pause-grace MS         idle time before a warm container is paused [50] (OW_PAUSE_GRACE_MS)
#   --idle-container S       idle time before a paused container is removed [600] (OW_IDLE_CONTAINER_S)
#   --invokes-per-minute N   per-namespace throttle [999999] (OW_INVOKES_PER_MINUTE)
#   --concurrent N           per-namespace concurrent invocations [999999] (OW_CONCURRENT)
#   --max-action-memory MB   largest memory an action may ask for [2048] (OW_MAX_ACTION_MEMORY_MB)
#   --python-image IMAGE     image of kind python:3 [faasprof/action-python-v3.11:latest]
#   --nodejs-image IMAGE     image of kind nodejs:20 [faasprof/action-nodejs-v20:latest]
#   --log-store file|cli     how the invoker collects action logs [file where Docker's containers
#                            folder is readable, else cli]: file reads each container's json log as
#                            a deployed invoker does; cli runs `docker logs` per activation, as the
#                            standalone server does by default (about 100 ms each on 2 cores)
#   --wait S                 seconds to wait until it serves [180]
#
# The runtime images must exist locally: OpenWhisk pulls only images named openwhisk/*, so these are
# used as they are. Writes STATE_DIR/wskprops (APIHOST, AUTH and NAMESPACE of the guest user,
# plus faasprof's PAUSE_GRACE_MS, USER_MEMORY_MB and IDLE_TIMEOUT_S) and STATE_DIR/settings.json; use it with
#   export WSK_CONFIG_FILE=STATE_DIR/wskprops
set -euo pipefail

# BUILD_DIR: $OPENWHISK_STANDALONE_HOME, else openwhisk-standalone in faasprof's cache.
# shellcheck source=setup/openwhisk-standalone/build_dir.sh
. "$(dirname "${BASH_SOURCE[0]}")/build_dir.sh"
STATE_DIR=""
PORT="${OW_PORT:-3233}"
USER_MEMORY_MB="${OW_USER_MEMORY_MB:-4096}"
PAUSE_GRACE_MS="${OW_PAUSE_GRACE_MS:-50}"
IDLE_CONTAINER_S="${OW_IDLE_CONTAINER_S:-600}"
INVOKES_PER_MINUTE="${OW_INVOKES_PER_MINUTE:-999999}"
CONCURRENT="${OW_CONCURRENT:-999999}"
MAX_ACTION_MEMORY_MB="${OW_MAX_ACTION_MEMORY_MB:-2048}"
PYTHON_IMAGE="faasprof/action-python-v3.11:latest"
NODEJS_IMAGE="faasprof/action-nodejs-v20:latest"
WAIT_S=180
LOG_STORE=""
# The guest key that the standalone server bootstraps (its standalone.conf, whisk.users.guest).
GUEST_AUTH="23bc46b1-71f6-4ed5-8c54-816aa4f8c502:123zO3xZCLrMN6v2BKK1dXYFpXlPkccOFqm12CdAsMgRU4VrNZ9lyGVCGuMDGIwP"

die() {
    echo "start.sh: $1" >&2
    exit "${2:-1}"
}

need_value() {
    [ "$2" -ge 2 ] || die "$1 needs a value (see --help)" 2
}

is_count() {
    case "$1" in
        ''|*[!0-9]*) return 1 ;;
        *) [ "$1" -gt 0 ] ;;
    esac
}

while [ $# -gt 0 ]; do
    case "$1" in
        --build-dir) need_value "$1" $#; BUILD_DIR="$2"; shift 2 ;;
        --state-dir) need_value "$1" $#; STATE_DIR="$2"; shift 2 ;;
        --port) need_value "$1" $#; PORT="$2"; shift 2 ;;
        --user-memory) need_value "$1" $#; USER_MEMORY_MB="$2"; shift 2 ;;
        --pause-grace) need_value "$1" $#; PAUSE_GRACE_MS="$2"; shift 2 ;;
        --idle-container) need_value "$1" $#; IDLE_CONTAINER_S="$2"; shift 2 ;;
        --invokes-per-minute) need_value "$1" $#; INVOKES_PER_MINUTE="$2"; shift 2 ;;
        --concurrent) need_value "$1" $#; CONCURRENT="$2"; shift 2 ;;
        --max-action-memory) need_value "$1" $#; MAX_ACTION_MEMORY_MB="$2"; shift 2 ;;
        --python-image) need_value "$1" $#; PYTHON_IMAGE="$2"; shift 2 ;;
        --nodejs-image) need_value "$1" $#; NODEJS_IMAGE="$2"; shift 2 ;;
        --log-store) need_value "$1" $#; LOG_STORE="$2"; shift 2 ;;
        --wait) need_value "$1" $#; WAIT_S="$2"; shift 2 ;;
        -h|--help) sed -n '2,28p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) die "unknown argument '$1' (see --help)" 2 ;;
    esac
done

is_count "$PORT" && [ "$PORT" -lt 65536 ] || die "--port: '$PORT' is not a port number" 2
is_count "$USER_MEMORY_MB" || die "--user-memory: '$USER_MEMORY_MB' is not a whole number of MB" 2
case "$PAUSE_GRACE_MS" in
    ''|*[!0-9]*) die "--pause-grace: '$PAUSE_GRACE_MS' is not a whole number of ms" 2 ;;
esac
is_count "$IDLE_CONTAINER_S" || die "--idle-container: '$IDLE_CONTAINER_S' is not a positive whole number of seconds" 2
is_count "$INVOKES_PER_MINUTE" || die "--invokes-per-minute: '$INVOKES_PER_MINUTE' is not a positive whole number" 2
is_count "$CONCURRENT" || die "--concurrent: '$CONCURRENT' is not a positive whole number" 2
is_count "$MAX_ACTION_MEMORY_MB" || die "--max-action-memory: '$MAX_ACTION_MEMORY_MB' is not a whole number of MB" 2
is_count "$WAIT_S" || die "--wait: '$WAIT_S' is not a positive whole number of seconds" 2
case "$LOG_STORE" in
    ''|file|cli) ;;
    *) die "--log-store: '$LOG_STORE' is neither file nor cli" 2 ;;
esac

[ -f "$BUILD_DIR/build.env" ] || die "$BUILD_DIR/build.env: missing; run setup/openwhisk-standalone/build.sh first (or pass --build-dir)" 3
BUILD_DIR="$(cd "$BUILD_DIR" && pwd)"
STATE_DIR="${STATE_DIR:-$BUILD_DIR/run}"
mkdir -p "$STATE_DIR/data"
STATE_DIR="$(cd "$STATE_DIR" && pwd)"
PID_FILE="$STATE_DIR/standalone.pid"
LOG="$STATE_DIR/standalone.log"
API="http://127.0.0.1:$PORT"

if [ -f "$PID_FILE" ] && kill -0 "$(cat "$PID_FILE")" 2>/dev/null; then
    die "already running (pid $(cat "$PID_FILE"), $PID_FILE); stop it first with setup/openwhisk-standalone/stop.sh" 1
fi
command -v java >/dev/null || die "java is missing: install a JDK 17" 3
command -v curl >/dev/null || die "curl is missing: apt-get install curl" 3
command -v docker >/dev/null || die "docker is missing: the invoker runs actions in Docker (apt-get install docker.io)" 3
docker info >/dev/null 2>&1 || die "docker does not answer ('docker info' failed): start dockerd" 3
for image in "$PYTHON_IMAGE" "$NODEJS_IMAGE"; do
    docker image inspect "$image" >/dev/null 2>&1 \
        || die "runtime image $image is not present locally (it is never pulled): build it first, or pass --python-image/--nodejs-image" 3
done
DOCKER_CONTAINERS="$(docker info --format '{{.DockerRootDir}}')/containers"
if [ -z "$LOG_STORE" ]; then
    if [ -r "$DOCKER_CONTAINERS" ] && [ -x "$DOCKER_CONTAINERS" ]; then LOG_STORE="file"; else LOG_STORE="cli"; fi
fi
[ "$LOG_STORE" != file ] || [ -r "$DOCKER_CONTAINERS" ] \
    || die "--log-store file: cannot read $DOCKER_CONTAINERS (run as root, or pass --log-store cli)" 3
if [ "$LOG_STORE" = file ]; then
    LOG_STORE_CLASS=org.apache.openwhisk.core.containerpool.logging.DockerToActivationLogStoreProvider
else
    LOG_STORE_CLASS=org.apache.openwhisk.core.containerpool.docker.DockerCliLogStoreProvider
fi
if curl -s -o /dev/null --max-time 2 "$API/"; then
    die "port $PORT already answers HTTP: another server is there; pass --port" 1
fi

# shellcheck source=/dev/null
. "$BUILD_DIR/build.env"

split_image() {  # IMAGE -> "prefix name tag" as OpenWhisk's manifest wants them
    local image="$1" tag="latest" repo prefix name
    case "${image##*/}" in
        *:*) tag="${image##*:}"; image="${image%:*}" ;;
    esac
    case "$image" in
        */*) prefix="${image%/*}"; name="${image##*/}" ;;
        *) die "image '$1' has no prefix (want PREFIX/NAME[:TAG]): OpenWhisk's manifest needs one" 2 ;;
    esac
    repo="$prefix $name $tag"
    echo "$repo"
}
read -r PY_PREFIX PY_NAME PY_TAG <<< "$(split_image "$PYTHON_IMAGE")"
read -r JS_PREFIX JS_NAME JS_TAG <<< "$(split_image "$NODEJS_IMAGE")"

MANIFEST="$STATE_DIR/runtimes.json"
cat > "$MANIFEST" <<EOF
{
  "runtimes": {
    "python": [
      {"kind": "python:3", "default": true, "deprecated": false,
       "image": {"prefix": "$PY_PREFIX", "name": "$PY_NAME", "tag": "$PY_TAG"},
       "attached": {"attachmentName": "codefile", "attachmentType": "text/plain"}}
    ],
    "nodejs": [
      {"kind": "nodejs:20", "default": true, "deprecated": false,
       "image": {"prefix": "$JS_PREFIX", "name": "$JS_NAME", "tag": "$JS_TAG"},
       "attached": {"attachmentName": "codefile", "attachmentType": "text/plain"}}
    ]
  },
  "blackboxes": []
}
EOF

JAVA_ARGS=(
    # Without these two the invoker looks for an etcd configuration it does not need (the scheduler's).
    -Dwhisk.spi.InvokerProvider=org.apache.openwhisk.core.invoker.InvokerReactive
    -Dwhisk.spi.InvokerServerProvider=org.apache.openwhisk.core.invoker.DefaultInvokerServer
    # Without these the server runs `docker run alpine ip route` to find the host's address.
    -Dwhisk.standalone.host.name=127.0.0.1
    -Dwhisk.standalone.host.internal=127.0.0.1
    -Dwhisk.standalone.host.ip=127.0.0.1
    -Dwhisk.standalone.host.external=127.0.0.1
    -Dwhisk.docker.standalone.container-factory.pull-standard-images=false
    "-Dwhisk.spi.LogStoreProvider=$LOG_STORE_CLASS"
    "-Dwhisk.config.limits-actions-invokes-perMinute=$INVOKES_PER_MINUTE"
    "-Dwhisk.config.limits-actions-invokes-concurrent=$CONCURRENT"
    "-Dwhisk.config.limits-triggers-fires-perMinute=$INVOKES_PER_MINUTE"
    "-Dwhisk.memory.max=${MAX_ACTION_MEMORY_MB}m"
    "-Dwhisk.container-pool.user-memory=${USER_MEMORY_MB}m"
    "-Dwhisk.container-proxy.timeouts.pause-grace=${PAUSE_GRACE_MS}ms"
    "-Dwhisk.container-proxy.timeouts.idle-container=${IDLE_CONTAINER_S}s"
)
# Extra JVM options (heap, GC) from OW_JAVA_OPTS, split on spaces.
read -r -a EXTRA_JAVA <<< "${OW_JAVA_OPTS:--Xmx2g}"

if [ "$OW_ROUTE" = gradle ]; then
    LAUNCH=(java "${EXTRA_JAVA[@]}" "${JAVA_ARGS[@]}" -jar "$OW_JAR")
else
    # Each module's resources stay a folder of its own: five ship an application.conf and two a
    # reference.conf, which Typesafe config merges across the classpath (one folder would keep one).
    CP="$OW_CLASSES"
    for module in core/standalone core/controller core/invoker core/scheduler tools/admin common/scala; do
        CP="$CP:$OW_SRC/$module/src/main/resources"
    done
    CP="$CP:$(cat "$OW_CLASSPATH_FILE")"
    LAUNCH=(java "${EXTRA_JAVA[@]}" "${JAVA_ARGS[@]}" -cp "$CP" org.apache.openwhisk.standalone.StandaloneOpenWhisk)
fi

echo "start.sh: starting OpenWhisk standalone on $API (log $LOG)"
cd "$STATE_DIR"
if [ "$LOG_STORE" = file ]; then
    # The invoker reads container logs (and config) from ./containers, where a deployed invoker's
    # image mounts Docker's folder; without it every activation waits for logs until a timeout.
    ln -sfn "$DOCKER_CONTAINERS" "$STATE_DIR/containers"
fi
# --dev-mode: no preflight (it wants the wsk CLI) and no docker pull of any image, ever.
nohup setsid "${LAUNCH[@]}" --manifest "$MANIFEST" --dev-mode --no-ui --no-browser --disable-color-logging \
    --port "$PORT" --data-dir "$STATE_DIR/data" > "$LOG" 2>&1 < /dev/null &
echo $! > "$PID_FILE"

deadline=$((SECONDS + WAIT_S))
# The lean balancer reports no invokers on /invokers; the in-JVM invoker is up before the
# controller binds its port, so an authenticated listing that answers 200 means ready.
until [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 -u "$GUEST_AUTH" "$API/api/v1/namespaces/guest/actions" 2>/dev/null)" = "200" ]; do
    if ! kill -0 "$(cat "$PID_FILE")" 2>/dev/null; then
        rm -f "$PID_FILE"
        tail -n 20 "$LOG" >&2
        die "the server exited while starting (last lines of $LOG above)" 1
    fi
    if [ "$SECONDS" -ge "$deadline" ]; then
        die "not serving after $WAIT_S s (see $LOG); stop it with setup/openwhisk-standalone/stop.sh" 1
    fi
    sleep 1
done

WSKPROPS="$STATE_DIR/wskprops"
{
    echo "APIHOST=$API"
    echo "AUTH=$GUEST_AUTH"
    echo "NAMESPACE=guest"
    # faasprof's own keys (wsk ignores them): the run records them with the platform, so the
    # analyzer knows the pause grace that separates resumed from warm starts.
    echo "PAUSE_GRACE_MS=$PAUSE_GRACE_MS"
    echo "USER_MEMORY_MB=$USER_MEMORY_MB"
    echo "IDLE_TIMEOUT_S=$IDLE_CONTAINER_S"
} > "$WSKPROPS"
cat > "$STATE_DIR/settings.json" <<EOF
{
  "format_version": 1,
  "platform": "openwhisk-standalone",
  "openwhisk_version": "2.0.0",
  "build_route": "$OW_ROUTE",
  "apihost": "$API",
  "pid": $(cat "$PID_FILE"),
  "user_memory_mb": $USER_MEMORY_MB,
  "pause_grace_ms": $PAUSE_GRACE_MS,
  "idle_container_s": $IDLE_CONTAINER_S,
  "invokes_per_minute": $INVOKES_PER_MINUTE,
  "concurrent_invocations": $CONCURRENT,
  "max_action_memory_mb": $MAX_ACTION_MEMORY_MB,
  "log_store": "$LOG_STORE",
  "runtimes": {"python:3": "$PYTHON_IMAGE", "nodejs:20": "$NODEJS_IMAGE"}
}
EOF
echo "start.sh: serving after $((SECONDS + WAIT_S - deadline)) s; pid $(cat "$PID_FILE")"
echo "export WSK_CONFIG_FILE=$WSKPROPS"
