#!/usr/bin/env bash
# Build Apache OpenWhisk 2.0.0's standalone server (controller and invoker in one JVM) for faasprof.
#
#   setup/openwhisk-standalone/build.sh --source DIR    # Maven Central route (default)
#   setup/openwhisk-standalone/build.sh --route gradle  # upstream Gradle build (needs internet)
#
# Routes:
#   maven   compiles the six modules the standalone server needs with this folder's pom.xml, every
#           dependency from Maven Central. For machines that reach Maven Central but not Gradle's
#           own distribution. Needs JDK 17 and Maven 3.8.
#   gradle  OpenWhisk's own `./gradlew :core:standalone:bootJar` (downloads Gradle itself).
# The source is a checkout or export of the tag 2.0.0 (--source DIR, or OPENWHISK_SRC); without
# one, the tag is cloned from GitHub into the build folder (needs internet).
# Output, in the build folder (--build-dir, default $OPENWHISK_STANDALONE_HOME or faasprof's cache,
# <cache>/openwhisk-standalone): build.env, which start.sh reads.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
OPENWHISK_TAG="2.0.0"
OPENWHISK_REPO="${OPENWHISK_REPO_URL:-https://github.com/apache/openwhisk.git}"
# BUILD_DIR: $OPENWHISK_STANDALONE_HOME, else openwhisk-standalone in faasprof's cache.
# shellcheck source=setup/openwhisk-standalone/build_dir.sh
. "$(dirname "${BASH_SOURCE[0]}")/build_dir.sh"
SOURCE="${OPENWHISK_SRC:-}"
ROUTE="maven"

usage() {
    sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'
}

die() {
    echo "build.sh: $1" >&2
    exit "${2:-1}"
}

while [ $# -gt 0 ]; do
    case "$1" in
        --source) [ $# -ge 2 ] || die "--source needs a directory" 2; SOURCE="$2"; shift 2 ;;
        --build-dir) [ $# -ge 2 ] || die "--build-dir needs a directory" 2; BUILD_DIR="$2"; shift 2 ;;
        --route) [ $# -ge 2 ] || die "--route needs maven or gradle" 2; ROUTE="$2"; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) die "unknown argument '$1' (see --help)" 2 ;;
    esac
done

case "$ROUTE" in
    maven|gradle) ;;
    *) die "--route: '$ROUTE' is neither maven nor gradle" 2 ;;
esac

mkdir -p "$BUILD_DIR"
BUILD_DIR="$(cd "$BUILD_DIR" && pwd)"

if [ -z "$SOURCE" ]; then
    SOURCE="$BUILD_DIR/openwhisk-src"
    if [ ! -d "$SOURCE/core/standalone" ]; then
        command -v git >/dev/null || die "no --source given and git is missing: install git or pass --source DIR (an export of OpenWhisk's tag $OPENWHISK_TAG)" 3
        echo "build.sh: cloning OpenWhisk $OPENWHISK_TAG into $SOURCE"
        git clone --quiet --depth 1 --branch "$OPENWHISK_TAG" "$OPENWHISK_REPO" "$SOURCE" \
            || die "cannot clone $OPENWHISK_REPO: without internet, export the tag elsewhere and pass --source DIR" 3
    fi
fi
[ -d "$SOURCE/core/standalone/src/main/scala" ] \
    || die "$SOURCE: not an OpenWhisk source tree (no core/standalone/src/main/scala); pass --source DIR of tag $OPENWHISK_TAG" 2
SOURCE="$(cd "$SOURCE" && pwd)"
# 2.0.0 is the last release on Akka; master moved to Pekko, whose artifacts this pom does not name.
grep -q "gradle.ext.akka = \[version : '2.6.12'\]" "$SOURCE/settings.gradle" \
    || die "$SOURCE/settings.gradle: not OpenWhisk $OPENWHISK_TAG (Akka 2.6.12 expected); check out the tag $OPENWHISK_TAG" 2

command -v java >/dev/null || die "java is missing: install a JDK 17 (Debian/Ubuntu: apt-get install openjdk-17-jdk-headless)" 3

if [ "$ROUTE" = gradle ]; then
    echo "build.sh: upstream Gradle build in $SOURCE"
    (cd "$SOURCE" && ./gradlew --no-daemon :core:standalone:bootJar) \
        || die "the Gradle build failed (see above); without Gradle's distribution use --route maven" 1
    JAR="$SOURCE/bin/openwhisk-standalone.jar"
    [ -f "$JAR" ] || die "$JAR: missing after the Gradle build" 1
    {
        echo "OW_ROUTE=gradle"
        echo "OW_SRC=$SOURCE"
        echo "OW_JAR=$JAR"
    } > "$BUILD_DIR/build.env"
    echo "build.sh: done; $BUILD_DIR/build.env names $JAR"
    exit 0
fi

command -v mvn >/dev/null || die "mvn is missing: install Maven 3.8 (Debian/Ubuntu: apt-get install maven)" 3

cp "$HERE/pom.xml" "$BUILD_DIR/pom.xml"
PROTO_DIR="$BUILD_DIR/src/main/protobuf"
mkdir -p "$PROTO_DIR"
# akka-grpc's Maven plugin takes a path relative to the project: the proto is copied beside it.
cp "$SOURCE/core/scheduler/src/main/protobuf/activation.proto" "$PROTO_DIR/"

MVN=(mvn -B -q -Dstyle.color=never -f "$BUILD_DIR/pom.xml" "-Dow.src=$SOURCE")
start_s=$SECONDS
echo "build.sh: resolving dependencies from Maven Central (about 240 jars, 140 MB, the first time)"
"${MVN[@]}" dependency:build-classpath "-Dmdep.outputFile=$BUILD_DIR/classpath.txt" \
    || die "dependency resolution failed (see above); Maven Central must be reachable" 1

# activation.proto imports protobuf's wrappers.proto, which the plugin does not find by itself;
# it ships inside the protobuf-java jar that was just resolved.
PROTOBUF_JAR="$(tr ':' '\n' < "$BUILD_DIR/classpath.txt" | grep '/protobuf-java-[0-9.]*\.jar$' | head -n 1)"
[ -n "$PROTOBUF_JAR" ] || die "$BUILD_DIR/classpath.txt: no protobuf-java jar; the pom's dependencies are incomplete" 1
(cd "$PROTO_DIR" && jar xf "$PROTOBUF_JAR" google/protobuf/wrappers.proto)

echo "build.sh: generating gRPC code and compiling (3-5 min on 2 cores, 1.6 GB of memory)"
"${MVN[@]}" compile || die "compilation failed (see above)" 1
CLASSES="$BUILD_DIR/target/classes"
[ -f "$CLASSES/org/apache/openwhisk/standalone/StandaloneOpenWhisk.class" ] \
    || die "$CLASSES: StandaloneOpenWhisk.class missing after compiling" 1

{
    echo "OW_ROUTE=maven"
    echo "OW_SRC=$SOURCE"
    echo "OW_CLASSES=$CLASSES"
    echo "OW_CLASSPATH_FILE=$BUILD_DIR/classpath.txt"
} > "$BUILD_DIR/build.env"
echo "build.sh: done in $((SECONDS - start_s)) s; start it with setup/openwhisk-standalone/start.sh --build-dir $BUILD_DIR"
