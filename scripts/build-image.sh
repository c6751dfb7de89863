#!/usr/bin/env bash
# `make image`: builds the Dockerfile into $IMAGE on any machine with a Docker daemon
# (scripts/install-docker.sh brings one), with the classic builder and the host's network, so that
# nothing but the package registries has to be reachable.
#
# The base: $BASE_IMAGE when given; otherwise the registry's python:3.12-slim-bookworm when it is
# present or can be pulled, else the stand-in that scripts/base-image.sh builds from Debian
# packages ($BASE_IMAGE_LOCAL, Python 3.11). pip in the build stage gets the host's index settings
# and CA bundle (scripts/image_pip_config.py writes them to image/pip/) and the proxy variables
# of this environment, if any. PLUGINS and EXTRAS are passed on as build arguments.
set -euo pipefail
cd "$(dirname "$0")/.."
image=${IMAGE:-pyscheduler:dev}
registry_base=python:3.12-slim-bookworm
local_base=${BASE_IMAGE_LOCAL:-pyscheduler-base:bookworm}
base=${BASE_IMAGE:-}

if [ -z "$base" ]; then
  if docker image inspect "$registry_base" >/dev/null 2>&1 \
      || timeout 120 docker pull --quiet "$registry_base" >/dev/null 2>&1; then
    base=$registry_base
  else
    echo "build-image: $registry_base cannot be pulled; building on $local_base (make base-image)"
    BASE_IMAGE_LOCAL=$local_base bash scripts/base-image.sh
    base=$local_base
  fi
fi
python3 scripts/image_pip_config.py image/pip
proxies=()
for name in HTTP_PROXY HTTPS_PROXY NO_PROXY http_proxy https_proxy no_proxy; do
  if [ -n "${!name:-}" ]; then proxies+=(--build-arg "$name"); fi
done
mkdir -p .tools
log=.tools/image-build-$(echo "$image" | tr -c "A-Za-z0-9.\n-" _).log
echo "build-image: $image on $base (PLUGINS=${PLUGINS:-} EXTRAS=${EXTRAS:-}); full log: $log"
start=$(date +%s)
if ! DOCKER_BUILDKIT=0 docker build --network host --tag "$image" \
    --build-arg BASE_IMAGE="$base" --build-arg PLUGINS="${PLUGINS:-}" --build-arg EXTRAS="${EXTRAS:-}" \
    "${proxies[@]}" . >"$log" 2>&1; then
  echo "build-image: docker build failed; the end of $log:" >&2
  tail -n 30 "$log" >&2
  exit 1
fi
seconds=$(($(date +%s) - start))
size=$(docker image inspect "$image" --format '{{.Size}}')
cached=$(grep -c -- '---> Using cache' "$log" || true)
echo "build-image: $image: $((size / 100000 / 10)).$((size / 100000 % 10)) MB, built in $seconds s ($cached steps from cache)"
