"""OpenAPI v2 and v3 documents of the local endpoint: generated schemas, paths kubectl reads, CRDs."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import orjson
import pytest

from simcluster import SimCluster
from tests.support.crds import CRDS, WIDGET_CRD, Http, established


@pytest.fixture
async def http() -> AsyncIterator[Http]:
    async with (
        SimCluster(nodes=1, kubelet=False, controllers=False) as sim,
        aiohttp.ClientSession() as session,
    ):
        yield Http(session, sim.url)


async def v3(http: Http, group_version: str) -> dict[str, Any]:
    code, index, _ = await http.call("GET", "/openapi/v3")
    assert code == 200
    url = index["paths"][group_version]["serverRelativeURL"]
    assert url.startswith(f"/openapi/v3/{group_version}?hash=")
    async with http.session.get(http.url + url) as resp:
        assert resp.status == 200 and resp.content_type == "application/json"
        return orjson.loads(await resp.read())


def resolve(doc: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """Follow a property's $ref (directly or through a single allOf) to its component."""
    if "allOf" in schema:
        schema = schema["allOf"][0]
    if "$ref" in schema:
        return doc["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    return schema


async def test_the_v3_index_lists_every_served_group_version(http: Http) -> None:
    _, index, _ = await http.call("GET", "/openapi/v3")
    assert {"api/v1", "apis/apps/v1", "apis/apiextensions.k8s.io/v1", "apis/policy/v1"} <= set(index["paths"])
    code, _, _ = await http.call("GET", "/openapi/v3/apis/nothing/v1")
    assert code == 404


async def test_pod_schema_is_generated_from_the_model_metadata(http: Http) -> None:
    doc = await v3(http, "api/v1")
    schemas = doc["components"]["schemas"]
    pod = schemas["io.k8s.api.core.v1.Pod"]
    assert pod["x-kubernetes-group-version-kind"] == [{"group": "", "version": "v1", "kind": "Pod"}]
    assert set(pod["properties"]) == {"apiVersion", "kind", "metadata", "spec", "status"}
    spec = resolve(doc, pod["properties"]["spec"])
    assert spec["required"] == ["containers"]
    containers = spec["properties"]["containers"]
    assert containers["type"] == "array"
    container = resolve(doc, containers["items"])
    assert container["required"] == ["name"]
    assert container["properties"]["image"]["type"] == "string"
    assert container["properties"]["image"]["description"].startswith("Container image name.")
    assert spec["properties"]["nodeSelector"] == {
        "type": "object",
        "additionalProperties": {"type": "string"},
        "description": spec["properties"]["nodeSelector"]["description"],
    }
    meta = resolve(doc, pod["properties"]["metadata"])
    assert meta["properties"]["creationTimestamp"]["format"] == "date-time"
    assert "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta" in schemas


async def test_paths_carry_the_gvk_and_the_field_validation_parameter(http: Http) -> None:
    doc = await v3(http, "apis/apps/v1")
    item = doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]
    patch = item["patch"]
    assert patch["x-kubernetes-group-version-kind"] == {
        "group": "apps",
        "version": "v1",
        "kind": "Deployment",
    }
    assert patch["x-kubernetes-action"] == "patch"
    assert ("fieldValidation", "query") in [(p["name"], p["in"]) for p in patch["parameters"]]
    assert "application/merge-patch+json" in patch["requestBody"]["content"]
    scale = doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale"]["put"]
    assert scale["x-kubernetes-group-version-kind"] == {
        "group": "autoscaling",
        "version": "v1",
        "kind": "Scale",
    }
    deployment = doc["components"]["schemas"]["io.k8s.api.apps.v1.Deployment"]
    template = resolve(doc, resolve(doc, deployment["properties"]["spec"])["properties"]["template"])
    assert "spec" in template["properties"]


async def test_v2_is_one_swagger_document_of_all_kinds(http: Http) -> None:
    code, doc, _ = await http.call("GET", "/openapi/v2")
    assert code == 200 and doc["swagger"] == "2.0"
    assert {"io.k8s.api.core.v1.Pod", "io.k8s.api.apps.v1.Deployment"} <= set(doc["definitions"])
    raw = orjson.dumps(doc)
    assert b"#/components/" not in raw
    post = doc["paths"]["/api/v1/namespaces/{namespace}/pods"]["post"]
    assert post["parameters"][-1]["in"] == "body"
    assert post["x-kubernetes-group-version-kind"]["kind"] == "Pod"


async def test_crd_schemas_appear_once_the_crd_is_established(http: Http) -> None:
    _, before, _ = await http.call("GET", "/openapi/v3")
    assert "apis/example.com/v1" not in before["paths"]
    await established(http)
    doc = await v3(http, "apis/example.com/v1")
    widget = doc["components"]["schemas"]["com.example.v1.Widget"]
    assert widget["x-kubernetes-group-version-kind"] == [
        {"group": "example.com", "version": "v1", "kind": "Widget"}
    ]
    assert widget["properties"]["spec"]["properties"]["size"]["enum"] == ["small", "large"]
    assert resolve(doc, widget["properties"]["metadata"])["properties"]["name"]["type"] == "string"
    path = doc["paths"]["/apis/example.com/v1/namespaces/{namespace}/widgets/{name}"]
    assert "application/strategic-merge-patch+json" not in path["patch"]["requestBody"]["content"]
    assert "/apis/example.com/v1/namespaces/{namespace}/widgets/{name}/status" in doc["paths"]
    await http.call("DELETE", f"{CRDS}/{WIDGET_CRD['metadata']['name']}")
    code = 200
    for _ in range(100):  # the kind stops being served right after the delete is processed
        _, index, _ = await http.call("GET", "/openapi/v3")
        if "apis/example.com/v1" not in index["paths"]:
            code = 404
            break
        await asyncio.sleep(0.01)
    assert code == 404


def test_every_built_in_kind_has_a_model_and_a_document() -> None:
    """Adding a built-in kind is one `_r(...)` line: its model must exist for the schema to follow."""
    from kubernetes_asyncio.client import models

    from simcluster.openapi import OpenAPI
    from simcluster.resources import RESOURCES, Kinds

    missing = [rt.model_name for rt in RESOURCES if not hasattr(models, rt.model_name)]
    assert missing == []
    docs = OpenAPI(Kinds())
    for path in orjson.loads(docs.v3_index())["paths"]:
        doc = orjson.loads(docs.v3(path) or b"{}")
        kinds = {
            g["kind"]
            for s in doc["components"]["schemas"].values()
            for g in s.get("x-kubernetes-group-version-kind", ())
        }
        served = {
            rt.kind
            for rt in RESOURCES
            if (f"apis/{rt.group}/{rt.version}" if rt.group else f"api/{rt.version}") == path
        }
        assert served <= kinds, path
