"""A bare JSON client of the local endpoint, and a CustomResourceDefinition (Widget) to serve."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import orjson

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
WIDGETS = "/apis/example.com/v1/namespaces/default/widgets"

WIDGET_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {
        "group": "example.com",
        "scope": "Namespaced",
        "names": {"plural": "widgets", "kind": "Widget", "shortNames": ["wd"], "categories": ["all"]},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {
                    "status": {},
                    "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"},
                },
                "additionalPrinterColumns": [
                    {"name": "Size", "type": "string", "jsonPath": ".spec.size"},
                    {
                        "name": "Ready",
                        "type": "string",
                        "jsonPath": '.status.conditions[?(@.type=="Ready")].status',
                    },
                ],
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "required": ["size"],
                                "properties": {
                                    "size": {"type": "string", "enum": ["small", "large"]},
                                    "replicas": {
                                        "type": "integer",
                                        "minimum": 0,
                                        "maximum": 10,
                                        "default": 1,
                                    },
                                    "name": {"type": "string", "pattern": "^[a-z]+$", "maxLength": 5},
                                    "port": {"x-kubernetes-int-or-string": True},
                                    "note": {"type": "string", "nullable": True},
                                    "tags": {"type": "array", "maxItems": 2, "items": {"type": "string"}},
                                    "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                                    "policy": {
                                        "type": "object",
                                        "default": {},
                                        "properties": {"mode": {"type": "string", "default": "Auto"}},
                                    },
                                    "template": {"type": "object", "x-kubernetes-embedded-resource": True},
                                },
                            },
                            "status": {
                                "type": "object",
                                "x-kubernetes-preserve-unknown-fields": True,
                                "properties": {"replicas": {"type": "integer"}},
                            },
                        },
                    }
                },
            },
            {
                "name": "v1beta1",
                "served": True,
                "storage": False,
                "schema": {
                    "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
                },
            },
            {
                "name": "v1alpha1",
                "served": False,
                "storage": False,
                "schema": {
                    "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
                },
            },
        ],
    },
}


def widget(object_name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": object_name}, "spec": spec}


class Http:
    """A bare JSON client of the endpoint: status code, body and headers of each call."""

    def __init__(self, session: aiohttp.ClientSession, url: str) -> None:
        self.session, self.url = session, url

    async def call(
        self, method: str, path: str, body: Any = None, content_type: str = "application/json", **params: str
    ) -> tuple[int, Any, Any]:
        data = None if body is None else (body if isinstance(body, bytes) else orjson.dumps(body))
        async with self.session.request(
            method, self.url + path, data=data, params=params, headers={"Content-Type": content_type}
        ) as resp:
            raw = await resp.read()
            return resp.status, orjson.loads(raw) if raw else None, resp.headers


async def established(http: Http, crd: dict[str, Any] = WIDGET_CRD) -> dict[str, Any]:
    code, body, _ = await http.call("POST", CRDS, crd)
    assert code == 201, body
    name = crd["metadata"]["name"]
    for _ in range(100):
        _, found, _ = await http.call("GET", f"{CRDS}/{name}")
        conditions = {c["type"]: c for c in (found.get("status") or {}).get("conditions") or []}
        if conditions.get("Established", {}).get("status") == "True":
            return found
        await asyncio.sleep(0.01)
    raise AssertionError(f"CRD {name} never became Established")
