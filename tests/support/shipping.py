"""Helpers of the shipping tests: render the Helm chart, load deploy/, pick objects.

The chart is rendered by the real ``helm`` binary (``make tools`` puts it in ``.tools/bin``):
what is asserted is what ``helm install`` would send to a cluster.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "helm" / "pyscheduler"
DEPLOY = ROOT / "deploy"

Manifest = dict[str, Any]


def find_tool(name: str) -> str | None:
    """The virtualenv's copy first (kubectl v1.36 from the `dev` extra), then .tools/bin, then PATH."""
    for folder in (Path(sys.executable).parent, ROOT / ".tools" / "bin"):
        if (folder / name).is_file():
            return str(folder / name)
    return shutil.which(name)


HELM = find_tool("helm")
KUBECTL = find_tool("kubectl")
NO_HELM = "helm binary not found in .tools/bin or on PATH (run `make tools`)"
NO_KUBECTL = "kubectl binary not found in the virtualenv or on PATH (run `make install`)"


def run_helm(*args: str) -> subprocess.CompletedProcess[str]:
    assert HELM is not None
    return subprocess.run([HELM, *args], capture_output=True, text=True, timeout=60, check=False)


@cache
def render_chart(
    release: str, namespace: str, values: tuple[str, ...], sets: tuple[str, ...], set_json: tuple[str, ...]
) -> str:
    args = ["template", release, str(CHART), "--namespace", namespace]
    for name in values:
        args += ["--values", str(CHART / "ci" / name)]
    for item in sets:
        args += ["--set", item]
    for item in set_json:
        args += ["--set-json", item]
    result = run_helm(*args)
    if result.returncode != 0:
        raise RenderError(result.stderr)
    return result.stdout


class RenderError(Exception):
    """helm refused the values (schema, or a `fail` in a template); the message is helm's."""


class _StrictLoader(yaml.SafeLoader):
    """Refuses a mapping that repeats a key: the API server would keep one value silently."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        keys = [self.construct_object(key, deep=deep) for key, _ in node.value]
        repeated = sorted({str(k) for k in keys if keys.count(k) > 1})
        if repeated:
            raise yaml.constructor.ConstructorError(None, None, f"repeated keys {repeated}", node.start_mark)
        return super().construct_mapping(node, deep=deep)


def parse(text: str) -> list[Manifest]:
    return [doc for doc in yaml.load_all(text, Loader=_StrictLoader) if doc]


def pick(objects: list[Manifest], kind: str, name: str | None = None) -> Manifest:
    """The one object of that kind (and name); fails loudly when absent or ambiguous."""
    found = [o for o in objects if o["kind"] == kind and name in (None, o["metadata"]["name"])]
    assert len(found) == 1, (
        f"expected one {kind} {name or ''}, found {[o['metadata']['name'] for o in found]}"
    )
    return found[0]


def kinds(objects: list[Manifest]) -> set[str]:
    return {o["kind"] for o in objects}


def scheduler_config(objects: list[Manifest]) -> dict[str, Any]:
    configmap = next(o for o in objects if o["kind"] == "ConfigMap" and "config.yaml" in o.get("data", {}))
    return yaml.safe_load(configmap["data"]["config.yaml"])


def container(objects: list[Manifest]) -> dict[str, Any]:
    return pick(objects, "Deployment")["spec"]["template"]["spec"]["containers"][0]


def selects(selector: dict[str, str], labels: dict[str, str]) -> bool:
    """Whether an equality selector (matchLabels, or a Service's selector) matches these labels."""
    return all(labels.get(key) == value for key, value in selector.items())


def permissions(rules: list[dict[str, Any]]) -> set[tuple[str, str, str, str]]:
    """Rules flattened to (apiGroup, resource, verb, resourceName or '*') grants."""
    return {
        (group, resource, verb, name)
        for rule in rules
        for group in rule.get("apiGroups", [])
        for resource in rule.get("resources", [])
        for verb in rule.get("verbs", [])
        for name in rule.get("resourceNames") or ["*"]
    }
