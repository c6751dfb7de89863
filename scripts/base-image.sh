#!/usr/bin/env bash
# A stand-in Python base image built from Debian packages, for hosts that reach Debian's archive
# but no container registry: `make base-image` (BASE_IMAGE_LOCAL=pyscheduler-base:bookworm).
#
# mmdebstrap builds Debian bookworm's Essential packages plus python3 (3.11), python3-venv,
# ca-certificates and libstdc++6 (numpy's and cel-expr-python's wheels link it) into a tarball, without documentation, manual pages or translations (as the
# registry's slim images); `docker import` makes it an image. Merged /usr comes from mmdebstrap's
# hook rather than the usrmerge package (which would bring perl). There is no apt in it: the
# image only has to run `python3 -m venv` and pip. Installs mmdebstrap where missing (root and
# apt-get), and is skipped when the image exists already (`docker rmi` it to rebuild).
set -euo pipefail
cd "$(dirname "$0")/.."
tag=${BASE_IMAGE_LOCAL:-pyscheduler-base:bookworm}

if docker image inspect "$tag" >/dev/null 2>&1; then
  echo "base-image: $tag exists already"
  exit 0
fi
if ! command -v mmdebstrap >/dev/null; then
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    echo "base-image: mmdebstrap is missing and cannot be installed here (needs root and apt-get)" >&2
    exit 1
  fi
  install() { DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends mmdebstrap >/dev/null; }
  install || { apt-get update >/dev/null && install; }
fi
mkdir -p .tools
tarball=$(mktemp .tools/base-image.XXXXXX.tar)
trap 'rm -f "$tarball"' EXIT
log=.tools/base-image.log
start=$(date +%s)
if ! mmdebstrap --variant=essential --include=python3,python3-venv,ca-certificates,libstdc++6 \
  --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
  --dpkgopt='path-exclude=/usr/share/man/*' \
  --dpkgopt='path-exclude=/usr/share/info/*' \
  --dpkgopt='path-exclude=/usr/share/locale/*' \
  --dpkgopt='path-include=/usr/share/locale/locale.alias' \
  --dpkgopt='path-exclude=/usr/share/doc/*' \
  --dpkgopt='path-include=/usr/share/doc/*/copyright' \
  --aptopt='Acquire::Languages "none"' \
  bookworm "$tarball" >"$log" 2>&1; then
  echo "base-image: mmdebstrap failed; the end of $log:" >&2
  tail -n 20 "$log" >&2
  exit 1
fi
docker import \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENV LANG=C.UTF-8' \
  --change 'CMD ["python3"]' \
  --message "Debian bookworm: python3, python3-venv, ca-certificates (scripts/base-image.sh)" \
  "$tarball" "$tag" >/dev/null
size=$(docker image inspect "$tag" --format '{{.Size}}')
echo "base-image: $tag built in $(($(date +%s) - start)) s, $((size / 1000000)) MB"
