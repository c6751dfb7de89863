"""OpenAPI v3 (`/openapi/v3`, per group-version) and v2 (`/openapi/v2`) documents of the served kinds.

Schemas are generated at run time: built-in kinds from the kubernetes_asyncio models
(`schema.model_fields`), custom resources from their CRD version's `openAPIV3Schema`. Paths
carry what kubectl reads: `x-kubernetes-group-version-kind` and `x-kubernetes-action` on every
operation, and the `fieldValidation` query parameter on writes (kubectl then leaves field
validation to the server). PATCH bodies list JSON patch, merge patch and apply, but not strategic
merge patch: kubectl then builds strategic patches of built-in kinds from its own compiled-in
types, whose patch strategies these generated schemas do not know. Documents are built on first
use and kept until the set of kinds changes.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from functools import cache
from typing import Any

import orjson

from simcluster import openapi_pb
from simcluster.resources import RESOURCES, Kinds, ResourceType
from simcluster.schema import is_model, model_fields

Obj = dict[str, Any]

_CLASS = re.compile(r"^((?:[A-Z][a-z0-9]+)*?)(V\d+(?:alpha\d+|beta\d+)?)([A-Z]\w*)$")
_LIST = re.compile(r"^list\[(.+)\]$")
_DICT = re.compile(r"^dict\(str, (.+)\)$")
META = "io.k8s.apimachinery.pkg.apis.meta.v1"
_META_TYPES = frozenset(
    {
        "ObjectMeta",
        "ListMeta",
        "LabelSelector",
        "LabelSelectorRequirement",
        "ManagedFieldsEntry",
        "OwnerReference",
        "Condition",
        "DeleteOptions",
        "Preconditions",
        "Status",
        "StatusDetails",
        "StatusCause",
        "FieldSelectorRequirement",
        "GroupVersionKind",
    }
)
PATCH_TYPES = ("application/json-patch+json", "application/merge-patch+json", "application/apply-patch+yaml")
SCALARS: dict[str, Obj] = {
    "str": {"type": "string"},
    "int": {"type": "integer", "format": "int64"},
    "float": {"type": "number", "format": "double"},
    "bool": {"type": "boolean"},
    "datetime": {"type": "string", "format": "date-time"},
    "date": {"type": "string", "format": "date"},
    "bytearray": {"type": "string", "format": "byte"},
    "object": {},
}


def _package(group: str, version: str) -> str:
    if not group:
        return f"io.k8s.api.core.{version}"
    if group == "apiextensions.k8s.io":
        return f"io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.{version}"
    return f"io.k8s.api.{group.split('.')[0]}.{version}"


@cache
def _homes() -> dict[str, str]:
    """Which group's package each model belongs to: the first built-in kind that reaches it."""
    homes: dict[str, str] = {}
    for rt in RESOURCES:
        stack = [rt.model_name]
        while stack:
            model = stack.pop()
            if model in homes:
                continue
            homes[model] = rt.group
            stack.extend(m for m in (_inner(f.type) for f in model_fields(model)) if m and m not in homes)
    return homes


def _inner(type_name: str) -> str | None:
    """The model a python type string refers to (through list[...] and dict(str, ...)), if any."""
    while m := (_LIST.match(type_name) or _DICT.match(type_name)):
        type_name = m.group(1)
    return type_name if is_model(type_name) else None


_names: dict[str, str] = {}
_taken: dict[str, str] = {}


def definition(model: str) -> str:
    """The definition name of a model, e.g. V1PodSpec -> io.k8s.api.core.v1.PodSpec."""
    if model in _names:
        return _names[model]
    m = _CLASS.match(model)
    prefix, version, name = (m.group(1), m.group(2).lower(), m.group(3)) if m else ("", "v1", model)
    if name in _META_TYPES and version == "v1":
        full = f"{META}.{name}"
    elif model == "V1Scale":
        full = "io.k8s.api.autoscaling.v1.Scale"
    else:
        full = f"{_package(_homes().get(model, ''), version)}.{name}"
    if _taken.get(full, model) != model:
        full = f"{full}{prefix}"
    _taken[full] = model
    _names[model] = full
    return full


def _ref(model: str) -> Obj:
    return {"$ref": f"#/components/schemas/{definition(model)}"}


def _type_schema(type_name: str, needed: list[str]) -> Obj:
    if type_name in SCALARS:
        return dict(SCALARS[type_name])
    if m := _LIST.match(type_name):
        return {"type": "array", "items": _type_schema(m.group(1), needed)}
    if m := _DICT.match(type_name):
        return {"type": "object", "additionalProperties": _type_schema(m.group(1), needed)}
    if is_model(type_name):
        needed.append(type_name)
        return _ref(type_name)
    return {}


def model_schema(model: str, needed: list[str]) -> Obj:
    """The schema of one model; models it refers to are appended to `needed`."""
    props: Obj = {}
    required = []
    for f in model_fields(model):
        prop = _type_schema(f.type, needed)
        if f.description:
            prop = {"allOf": [prop], "description": f.description} if "$ref" in prop else {**prop}
            prop["description"] = f.description
        props[f.name] = prop
        if f.required:
            required.append(f.name)
    out: Obj = {"type": "object", "properties": props}
    if required:
        out["required"] = required
    return out


def _gvk(group: str, version: str, kind: str) -> Obj:
    return {"group": group, "version": version, "kind": kind}


def _param(name: str, where: str = "query", kind: str = "string") -> Obj:
    param: Obj = {"name": name, "in": where, "schema": {"type": kind, "uniqueItems": True}}
    if where == "path":
        param["required"] = True
    return param


_WRITE = [_param("dryRun"), _param("fieldManager"), _param("fieldValidation"), _param("pretty")]
_LIST_PARAMS = [
    _param("allowWatchBookmarks", kind="boolean"),
    _param("continue"),
    _param("fieldSelector"),
    _param("labelSelector"),
    _param("limit", kind="integer"),
    _param("resourceVersion"),
    _param("resourceVersionMatch"),
    _param("sendInitialEvents", kind="boolean"),
    _param("timeoutSeconds", kind="integer"),
    _param("watch", kind="boolean"),
]
_JSON_TYPES = ("application/json", "application/yaml")


def _response(ref: Obj, *codes: str) -> Obj:
    content = {t: {"schema": ref} for t in _JSON_TYPES}
    out: Obj = {
        code: {"description": "OK" if code == "200" else "Created", "content": content} for code in codes
    }
    out["401"] = {"description": "Unauthorized"}
    return out


class _Doc:
    """One group-version's document under construction."""

    def __init__(self, group: str, version: str) -> None:
        self.group, self.version = group, version
        self.paths: Obj = {}
        self.schemas: Obj = {}
        self._pending: list[str] = []

    def model(self, model: str, gvk: Obj | None = None) -> Obj:
        """Add a model (and all it refers to) to the components; returns its $ref."""
        self._pending.append(model)
        while self._pending:
            name = self._pending.pop()
            key = definition(name)
            if key not in self.schemas:
                self.schemas[key] = model_schema(name, self._pending)
        if gvk is not None:
            self.schemas[definition(model)]["x-kubernetes-group-version-kind"] = [gvk]
        return _ref(model)

    def custom(self, rt: ResourceType) -> Obj:
        """A custom resource's schema from its CRD, with the object metadata every kind has."""
        key = f"{_reverse(rt.group)}.{rt.version}.{rt.kind}"
        schema: Obj = dict(rt.schema or {})
        props = dict(schema.get("properties") or {})
        props["apiVersion"] = {"type": "string", "description": "APIVersion defines the versioned schema."}
        props["kind"] = {
            "type": "string",
            "description": "Kind is a string value representing the REST resource.",
        }
        props["metadata"] = {
            "allOf": [self.model("V1ObjectMeta")],
            "description": "Standard object's metadata.",
        }
        schema["type"] = "object"
        schema["properties"] = props
        schema["x-kubernetes-group-version-kind"] = [_gvk(rt.group, rt.version, rt.kind)]
        self.schemas[key] = schema
        list_key = f"{key}List"
        self.schemas[list_key] = {
            "type": "object",
            "required": ["items"],
            "properties": {
                "apiVersion": {"type": "string"},
                "items": {"type": "array", "items": {"$ref": f"#/components/schemas/{key}"}},
                "kind": {"type": "string"},
                "metadata": {"allOf": [self.model("V1ListMeta")]},
            },
            "x-kubernetes-group-version-kind": [_gvk(rt.group, rt.version, f"{rt.kind}List")],
        }
        return {"$ref": f"#/components/schemas/{key}"}

    def add(self, rt: ResourceType) -> None:
        gvk = _gvk(rt.group, rt.version, rt.kind)
        if rt.crd:
            ref = self.custom(rt)
            list_ref = {"$ref": ref["$ref"] + "List"}
        else:
            ref = self.model(rt.model_name, gvk)
            list_model = f"{rt.model_name}List"
            list_ref = (
                self.model(list_model, {**gvk, "kind": f"{rt.kind}List"}) if is_model(list_model) else ref
            )
        status_ref = self.model("V1Status")
        self.model("V1DeleteOptions")
        self.schemas[f"{META}.Patch"] = {"type": "object", "description": "A patch: JSON, merge or apply."}
        patch_ref = {"$ref": f"#/components/schemas/{META}.Patch"}
        prefix = f"/apis/{rt.group}/{rt.version}" if rt.group else f"/api/{rt.version}"
        scope = f"{prefix}/namespaces/{{namespace}}" if rt.namespaced else prefix
        ns = [_param("namespace", "path")] if rt.namespaced else []
        name = [_param("name", "path")]
        kind = rt.kind
        only_create = rt.verbs == ("create",)

        def op(
            action: str, verb: str, params: list[Obj], response: Obj, body: Obj | None = None, g: Obj = gvk
        ) -> Obj:
            operation: Obj = {
                "operationId": f"{verb}{kind}",
                "parameters": params,
                "responses": response,
                "x-kubernetes-action": action,
                "x-kubernetes-group-version-kind": g,
            }
            if body is not None:
                operation["requestBody"] = body
            return operation

        body = {"content": {"*/*": {"schema": ref}}, "required": True}
        patch_body = {"content": {t: {"schema": patch_ref} for t in PATCH_TYPES}, "required": True}
        collection: Obj = {
            "post": op("post", "create", ns + _WRITE, _response(ref, "200", "201", "202"), body),
        }
        if only_create:
            self.paths[f"{scope}/{rt.plural}"] = collection
            return
        collection["get"] = op("list", "list", ns + _LIST_PARAMS, _response(list_ref, "200"))
        collection["delete"] = op(
            "deletecollection", "deleteCollection", ns + _LIST_PARAMS, _response(status_ref, "200")
        )
        self.paths[f"{scope}/{rt.plural}"] = collection
        if rt.namespaced:
            self.paths[f"{prefix}/{rt.plural}"] = {
                "get": op("list", "listForAllNamespaces", _LIST_PARAMS, _response(list_ref, "200"))
            }
        item = f"{scope}/{rt.plural}/{{name}}"
        self.paths[item] = {
            "get": op("get", "read", ns + name, _response(ref, "200")),
            "put": op("put", "replace", ns + name + _WRITE, _response(ref, "200", "201"), body),
            "patch": op(
                "patch",
                "patch",
                ns + name + [*_WRITE, _param("force", kind="boolean")],
                _response(ref, "200", "201"),
                patch_body,
            ),
            "delete": op(
                "delete", "delete", ns + name + [_param("dryRun")], _response(status_ref, "200", "202")
            ),
        }
        for sub in rt.subresources:
            if sub == "status":
                sub_ref, sub_gvk = ref, gvk
            elif sub == "scale":
                sub_gvk = _gvk("autoscaling", "v1", "Scale")
                sub_ref = self.model("V1Scale", sub_gvk)
            else:
                continue
            sub_body = {"content": {"*/*": {"schema": sub_ref}}, "required": True}
            self.paths[f"{item}/{sub}"] = {
                "get": op("get", f"read{sub.title()}", ns + name, _response(sub_ref, "200"), g=sub_gvk),
                "put": op(
                    "put",
                    f"replace{sub.title()}",
                    ns + name + _WRITE,
                    _response(sub_ref, "200", "201"),
                    sub_body,
                    sub_gvk,
                ),
                "patch": op(
                    "patch",
                    f"patch{sub.title()}",
                    ns + name + [*_WRITE, _param("force", kind="boolean")],
                    _response(sub_ref, "200", "201"),
                    patch_body,
                    sub_gvk,
                ),
            }

    def v3(self) -> Obj:
        return {
            "openapi": "3.0.0",
            "info": {"title": "Kubernetes", "version": "v1.36.0"},
            "paths": self.paths,
            "components": {"schemas": self.schemas},
        }


def _reverse(group: str) -> str:
    return ".".join(reversed(group.split("."))) if group else "io.k8s.api.core"


def _to_v2(doc: Obj) -> tuple[Obj, Obj]:
    """A v3 document's paths and schemas in Swagger 2.0 form (parameters typed, bodies as params)."""
    paths: Obj = {}
    for path, item in doc["paths"].items():
        out_item: Obj = {}
        for method, operation in item.items():
            params = [
                {k: v for k, v in p.items() if k != "schema"}
                | {"type": p["schema"]["type"], "uniqueItems": True}
                for p in operation["parameters"]
            ]
            converted: Obj = {
                k: v for k, v in operation.items() if k not in ("parameters", "requestBody", "responses")
            }
            body = operation.get("requestBody")
            if body is not None:
                content = body["content"]
                params.append(
                    {
                        "name": "body",
                        "in": "body",
                        "required": True,
                        "schema": next(iter(content.values()))["schema"],
                    }
                )
                converted["consumes"] = list(content)
            converted["parameters"] = params
            converted["produces"] = list(_JSON_TYPES)
            responses = {}
            for code, response in operation["responses"].items():
                entry = {"description": response["description"]}
                if "content" in response:
                    entry["schema"] = next(iter(response["content"].values()))["schema"]
                responses[code] = entry
            converted["responses"] = responses
            converted["schemes"] = ["https"]
            out_item[method] = converted
        paths[path] = out_item
    return paths, {name: _v2_schema(value) for name, value in doc["components"]["schemas"].items()}


def _v2_schema(node: Any) -> Any:
    """Swagger 2.0 has no `allOf` beside a description nor free-form markers: a single `allOf`
    becomes a `$ref` with siblings, and int-or-string or unknown-preserving nodes become
    free-form (as the real server publishes CRD schemas in v2)."""
    if isinstance(node, list):
        return [_v2_schema(v) for v in node]
    if not isinstance(node, dict):
        return node
    if node.get("x-kubernetes-int-or-string") or node.get("x-kubernetes-preserve-unknown-fields"):
        return {k: v for k, v in node.items() if k in ("description", "x-kubernetes-group-version-kind")}
    out = {k: _v2_schema(v) for k, v in node.items() if k not in ("nullable",)}
    if len(node.get("allOf") or ()) == 1 and "$ref" in node["allOf"][0]:
        out.pop("allOf")
        out["$ref"] = node["allOf"][0]["$ref"]
    return out


class OpenAPI:
    """The documents of one server's kinds, rebuilt when the registry's generation changes."""

    def __init__(self, kinds: Kinds) -> None:
        self.kinds = kinds
        self._token = uuid.uuid4().hex
        self._generation = -1
        self._docs: dict[str, bytes] = {}
        self._v2: Obj | None = None

    def _fresh(self) -> None:
        if self._generation != self.kinds.generation:
            self._docs.clear()
            self._v2 = None
            self._generation = self.kinds.generation

    def _group_versions(self) -> dict[str, list[ResourceType]]:
        groups: dict[str, list[ResourceType]] = {}
        for rt in self.kinds.all():
            path = f"apis/{rt.group}/{rt.version}" if rt.group else f"api/{rt.version}"
            groups.setdefault(path, []).append(rt)
        return groups

    def _hash(self, path: str) -> str:
        return hashlib.sha256(f"{self._token}:{self._generation}:{path}".encode()).hexdigest().upper()

    def v3_index(self) -> bytes:
        self._fresh()
        if "" not in self._docs:
            paths = {
                path: {"serverRelativeURL": f"/openapi/v3/{path}?hash={self._hash(path)}"}
                for path in self._group_versions()
            }
            self._docs[""] = orjson.dumps({"paths": paths})
        return self._docs[""]

    def v3(self, path: str) -> bytes | None:
        """The document of one group-version ("api/v1", "apis/apps/v1"), None if not served."""
        self._fresh()
        if path not in self._docs:
            kinds = self._group_versions().get(path)
            if kinds is None:
                return None
            self._docs[path] = orjson.dumps(self._build(kinds).v3())
        return self._docs[path]

    def etag(self, path: str) -> str:
        return self._hash(path)

    def v2_document(self) -> Obj:
        """One Swagger 2.0 document of every served kind."""
        self._fresh()
        if self._v2 is None:
            paths: Obj = {}
            definitions: Obj = {}
            for kinds in self._group_versions().values():
                doc_paths, schemas = _to_v2(self._build(kinds).v3())
                paths.update(doc_paths)
                definitions.update(schemas)
            info = {"title": "Kubernetes", "version": "v1.36.0"}
            doc = {"swagger": "2.0", "info": info, "paths": paths, "definitions": definitions}
            self._v2 = orjson.loads(orjson.dumps(doc).replace(b"#/components/schemas/", b"#/definitions/"))
        return self._v2

    def v2(self) -> bytes:
        self._fresh()
        if "/v2" not in self._docs:
            self._docs["/v2"] = orjson.dumps(self.v2_document())
        return self._docs["/v2"]

    def v2_protobuf(self) -> bytes:
        self._fresh()
        if "/v2.pb" not in self._docs:
            self._docs["/v2.pb"] = openapi_pb.document(self.v2_document())
        return self._docs["/v2.pb"]

    @staticmethod
    def _build(kinds: list[ResourceType]) -> _Doc:
        doc = _Doc(kinds[0].group, kinds[0].version)
        for rt in kinds:
            doc.add(rt)
        return doc
