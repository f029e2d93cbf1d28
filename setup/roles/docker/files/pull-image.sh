#!/usr/bin/env bash
# pull-image.sh IMAGE [SUBSTITUTE] [required|optional]
# Make IMAGE present locally: keep it if there, else pull it, else pull SUBSTITUTE and tag it as
# IMAGE. Prints "present", "pulled ..." or "missing ..."; exits 1 only for a required image.
set -uo pipefail
image=$1
substitute=${2:-}
need=${3:-required}

if docker image inspect "$image" >/dev/null 2>&1; then
    echo "present $image"
    exit 0
fi
if docker pull -q "$image" >/dev/null; then
    echo "pulled $image"
    exit 0
fi
if [ -n "$substitute" ] && docker pull -q "$substitute" >/dev/null && docker tag "$substitute" "$image"; then
    echo "pulled $substitute as $image"
    exit 0
fi
msg="missing $image: it could not be pulled"
[ -n "$substitute" ] && msg="$msg, nor its substitute $substitute"
msg="$msg; set openwhisk_image_substitutes {\"$image\": \"<another source>\"} in local/testbed.yml"
echo "$msg"
[ "$need" = required ] && exit 1
exit 0
