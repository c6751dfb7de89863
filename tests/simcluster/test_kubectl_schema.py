"""kubectl with default flags against the endpoint's OpenAPI, field validation and CRDs.

kubectl's default `--validate=strict` asks the OpenAPI v3 document whether the server does
field validation, then sends `fieldValidation=Strict`; `kubectl explain` renders the v3 schemas.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import yaml

from simcluster import SimCluster
from tests.support.crds import WIDGET_CRD
from tests.support.kubectl import Kubectl, needs_kubectl

ROOT = Path(__file__).resolve().parents[2]
HELM = ROOT / ".tools" / "bin" / "helm"
pytestmark = needs_kubectl

UNKNOWN_FIELD = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: odd
data: {a: b}
spec: {x: 1}
"""
WIDGET = """\
apiVersion: example.com/v1
kind: Widget
metadata: {name: w1}
spec: {size: small}
"""


@pytest.fixture
async def kubectl(tmp_path: Path) -> AsyncIterator[Kubectl]:
    async with SimCluster(nodes=2, kubelet_delay=0.01) as sim:
        yield Kubectl(sim, sim.write_kubeconfig(tmp_path / "kubeconfig"), tmp_path)


async def test_apply_create_and_server_side_apply_work_with_default_flags(kubectl: Kubectl) -> None:
    deployment = str(ROOT / "examples" / "deployment.yaml")
    done = await kubectl.run("apply", "-f", deployment)
    assert done.out.strip() == "deployment.apps/web created" and "Warning" not in done.err
    assert (await kubectl("apply", "-f", deployment)).strip() == "deployment.apps/web unchanged"
    out = await kubectl("apply", "--server-side", "-f", deployment)
    assert out.strip() == "deployment.apps/web serverside-applied"
    manifest = await kubectl(
        "create", "deployment", "plain", "--image=nginx", "--dry-run=client", "-o", "yaml"
    )
    (kubectl.cwd / "plain.yaml").write_text(manifest)
    assert (await kubectl("create", "-f", "plain.yaml")).strip() == "deployment.apps/plain created"
    # a client-side apply that renames the container: kubectl builds the strategic merge patch
    # from its compiled-in types (the OpenAPI documents offer no strategic merge patch)
    (kubectl.cwd / "renamed.yaml").write_text(
        Path(deployment).read_text().replace("- name: web", "- name: www")
    )
    await kubectl("apply", "-f", "renamed.yaml")
    names = await kubectl(
        "get", "deployment", "web", "-o", "jsonpath={.spec.template.spec.containers[*].name}"
    )
    assert names == "www"


async def test_unknown_fields_fail_strict_and_warn_on_request(kubectl: Kubectl) -> None:
    (kubectl.cwd / "odd.yaml").write_text(UNKNOWN_FIELD)
    failed = await kubectl.run("create", "-f", "odd.yaml", check=False)
    assert failed.code == 1
    assert (
        'Error from server (BadRequest): error when creating "odd.yaml": ConfigMap in version "v1" cannot be '
        'handled as a ConfigMap: strict decoding error: unknown field "spec"'
    ) in failed.err
    done = await kubectl.run("apply", "--validate=warn", "-f", "odd.yaml")
    assert done.out.strip() == "configmap/odd created"
    assert 'Warning: unknown field "spec"' in done.err
    assert "spec" not in yaml.safe_load(await kubectl("get", "configmap", "odd", "-o", "yaml"))
    failed = await kubectl.run("apply", "--server-side", "-f", "odd.yaml", check=False)
    assert failed.code == 1 and ".spec: field not declared in schema" in failed.err


async def test_explain_renders_the_generated_schemas(kubectl: Kubectl) -> None:
    out = await kubectl("explain", "pod.spec")
    assert out.startswith("KIND:       Pod\nVERSION:    v1\n\nFIELD: spec <PodSpec>")
    assert "  containers\t<[]Container> -required-\n    List of containers belonging to the pod." in out
    assert "  nodeSelector\t<map[string]string>" in out
    out = await kubectl("explain", "deployment.spec.replicas")
    assert "GROUP:      apps" in out and "FIELD: replicas <integer>" in out
    assert "Number of desired pods." in out
    # the v2 document, which client-go reads as protobuf
    out = await kubectl("explain", "pods.spec.nodeName", "--output=plaintext-openapiv2")
    assert "FIELD:    nodeName <string>" in out and "NodeName indicates in which node" in out


async def test_a_crd_applied_with_kubectl_serves_its_kind(kubectl: Kubectl) -> None:
    (kubectl.cwd / "crd.yaml").write_text(yaml.safe_dump(WIDGET_CRD))
    (kubectl.cwd / "widget.yaml").write_text(WIDGET)
    await kubectl("apply", "-f", "crd.yaml")
    out = await kubectl("wait", "--for=condition=Established", "crd/widgets.example.com", "--timeout=10s")
    assert "condition met" in out
    assert (await kubectl("apply", "-f", "widget.yaml")).strip() == "widget.example.com/w1 created"
    assert (await kubectl("apply", "-f", "widget.yaml")).strip() == "widget.example.com/w1 unchanged"
    lines = (await kubectl("get", "wd")).splitlines()
    assert lines[0].split() == ["NAME", "SIZE", "READY"]  # the CRD's printer columns
    assert lines[1].split() == ["w1", "small"]
    await kubectl("patch", "widget", "w1", "--type=merge", "-p", '{"spec":{"size":"large"}}')
    out = await kubectl("get", "widget", "w1", "-o", "jsonpath={.spec.size}/{.spec.replicas}")
    assert out == "large/1"
    (kubectl.cwd / "bad.yaml").write_text(WIDGET.replace("small", "huge").replace("w1", "w2"))
    failed = await kubectl.run("apply", "-f", "bad.yaml", check=False)
    assert failed.code == 1
    assert (
        'The Widget "w2" is invalid: spec.size: Unsupported value: "huge": supported values: "small", "large"'
        in failed.err
    )
    out = await kubectl("explain", "widget.spec.size")
    assert "FIELD: size <string>" in out and "ENUM:" in out
    out = await kubectl("delete", "crd", "widgets.example.com")
    assert 'customresourcedefinition.apiextensions.k8s.io "widgets.example.com" deleted' in out


@pytest.mark.helm
@pytest.mark.skipif(
    not HELM.exists() and shutil.which("helm") is None, reason="helm missing: run `make tools`"
)
async def test_helm_installs_the_chart_after_validating_it_against_the_v2_document(kubectl: Kubectl) -> None:
    helm = str(HELM if HELM.exists() else shutil.which("helm"))
    proc = await asyncio.create_subprocess_exec(
        helm,
        "install",
        "psch",
        str(ROOT / "helm" / "pyscheduler"),
        "--kubeconfig",
        str(kubectl.kubeconfig),
        "--namespace",
        "pyscheduler",
        "--create-namespace",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "HOME": str(kubectl.cwd)},
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, err.decode()
    assert "STATUS: deployed" in out.decode()
    assert "psch-pyscheduler" in await kubectl("get", "clusterroles", "-o", "name")
