"""CustomResourceDefinitions on the local endpoint: serving, validation, pruning, defaults, versions."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncIterator

import aiohttp
import orjson
import pytest

from simcluster import SimCluster
from tests.support.crds import CRDS, WIDGET_CRD, WIDGETS, Http, established, widget


@pytest.fixture
async def sim() -> AsyncIterator[SimCluster]:
    async with SimCluster(nodes=1, kubelet=False, controllers=False) as cluster:
        yield cluster


@pytest.fixture
async def http(sim: SimCluster) -> AsyncIterator[Http]:
    async with aiohttp.ClientSession() as session:
        yield Http(session, sim.url)


async def test_a_crd_is_established_and_its_kind_served_with_discovery(http: Http) -> None:
    crd = await established(http)
    conditions = {c["type"]: c for c in crd["status"]["conditions"]}
    assert conditions["NamesAccepted"]["reason"] == "NoConflicts"
    assert conditions["NamesAccepted"]["message"] == "no conflicts found"
    assert conditions["Established"]["reason"] == "InitialNamesAccepted"
    assert crd["status"]["acceptedNames"]["singular"] == "widget"  # defaulted like the real server
    assert crd["status"]["acceptedNames"]["listKind"] == "WidgetList"
    assert crd["status"]["storedVersions"] == ["v1"]
    assert crd["spec"]["conversion"] == {"strategy": "None"}

    _, group, _ = await http.call("GET", "/apis/example.com")
    assert [v["version"] for v in group["versions"]] == ["v1", "v1beta1"]  # v1alpha1 is not served
    assert group["preferredVersion"]["version"] == "v1"
    _, resources, _ = await http.call("GET", "/apis/example.com/v1")
    entries = {r["name"]: r for r in resources["resources"]}
    assert entries["widgets"]["kind"] == "Widget"
    assert entries["widgets"]["namespaced"] is True
    assert entries["widgets"]["shortNames"] == ["wd"]
    assert set(entries) == {"widgets", "widgets/status", "widgets/scale"}
    code, _, _ = await http.call("GET", "/apis/example.com/v1alpha1/namespaces/default/widgets")
    assert code == 404


async def test_custom_resources_are_created_read_listed_patched_and_deleted(http: Http) -> None:
    await established(http)
    code, w1, _ = await http.call("POST", WIDGETS, widget("w1", size="small"))
    assert code == 201, w1
    assert w1["metadata"]["generation"] == 1 and w1["metadata"]["uid"]
    await http.call(
        "POST", WIDGETS, {**widget("w2", size="large"), "metadata": {"name": "w2", "labels": {"a": "b"}}}
    )

    _, listed, _ = await http.call("GET", WIDGETS)
    assert listed["kind"] == "WidgetList" and [i["metadata"]["name"] for i in listed["items"]] == ["w1", "w2"]
    _, selected, _ = await http.call("GET", WIDGETS, labelSelector="a=b")
    assert [i["metadata"]["name"] for i in selected["items"]] == ["w2"]
    _, by_name, _ = await http.call("GET", "/apis/example.com/v1/widgets", fieldSelector="metadata.name=w1")
    assert [i["metadata"]["name"] for i in by_name["items"]] == ["w1"]
    _, by_ns, _ = await http.call(
        "GET", "/apis/example.com/v1/widgets", fieldSelector="metadata.namespace=other"
    )
    assert by_ns["items"] == []
    code, body, _ = await http.call("GET", WIDGETS, fieldSelector="spec.size=small")
    assert code == 400 and body["message"] == "field label not supported: spec.size"

    code, patched, _ = await http.call(
        "PATCH", f"{WIDGETS}/w1", {"spec": {"size": "large"}}, "application/merge-patch+json"
    )
    assert code == 200 and patched["spec"]["size"] == "large"
    assert patched["metadata"]["generation"] == 2
    assert int(patched["metadata"]["resourceVersion"]) > int(w1["metadata"]["resourceVersion"])
    code, body, _ = await http.call(
        "PATCH", f"{WIDGETS}/w1", {"spec": {"size": "large"}}, "application/strategic-merge-patch+json"
    )
    assert code == 415, body  # custom resources take no strategic merge patches

    replaced = {**patched, "spec": {**patched["spec"], "size": "small"}}
    code, updated, _ = await http.call("PUT", f"{WIDGETS}/w1", replaced)
    assert code == 200 and updated["spec"]["size"] == "small"
    stale = {**patched, "spec": {**patched["spec"], "size": "small"}}
    code, conflict, _ = await http.call("PUT", f"{WIDGETS}/w1", stale)
    assert code == 409 and conflict["reason"] == "Conflict"

    code, gone, _ = await http.call("DELETE", f"{WIDGETS}/w1")
    assert code == 200 and gone["status"] == "Success"
    assert gone["details"] == {
        "name": "w1",
        "group": "example.com",
        "kind": "widgets",
        "uid": w1["metadata"]["uid"],
    }
    code, missing, _ = await http.call("GET", f"{WIDGETS}/w1")
    assert code == 404 and missing["message"] == 'widgets.example.com "w1" not found'
    code, _, _ = await http.call("DELETE", WIDGETS)
    _, listed, _ = await http.call("GET", WIDGETS)
    assert listed["items"] == []


async def test_the_status_subresource_owns_status(http: Http) -> None:
    await established(http)
    _, w, _ = await http.call("POST", WIDGETS, {**widget("w", size="small"), "status": {"replicas": 5}})
    assert "status" not in w  # dropped on create, as the real server does with a status subresource

    code, w, _ = await http.call(
        "PATCH",
        f"{WIDGETS}/w/status",
        {"status": {"replicas": 2, "phase": "Up"}, "spec": {"size": "large"}},
        "application/merge-patch+json",
    )
    assert code == 200 and w["status"] == {"replicas": 2, "phase": "Up"}
    assert (
        w["spec"]["size"] == "small" and w["metadata"]["generation"] == 1
    )  # status writes touch only status

    code, w, _ = await http.call(
        "PATCH",
        f"{WIDGETS}/w",
        {"status": {"replicas": 9}, "spec": {"size": "large"}},
        "application/merge-patch+json",
    )
    assert w["status"]["replicas"] == 2 and w["spec"]["size"] == "large"  # main writes leave status alone

    _, scale, _ = await http.call("GET", f"{WIDGETS}/w/scale")
    assert scale["kind"] == "Scale" and scale["spec"] == {"replicas": 1} and scale["status"]["replicas"] == 2
    code, scale, _ = await http.call(
        "PATCH", f"{WIDGETS}/w/scale", {"spec": {"replicas": 4}}, "application/merge-patch+json"
    )
    assert code == 200 and scale["spec"]["replicas"] == 4
    _, w, _ = await http.call("GET", f"{WIDGETS}/w")
    assert w["spec"]["replicas"] == 4


async def test_validation_errors_are_worded_as_the_real_server(http: Http) -> None:
    await established(http)
    bad = widget("bad", size="huge", replicas=20, name="ABCDEFG", port=1.5, tags=["a", "b", "c"], note=None)
    code, body, _ = await http.call("POST", WIDGETS, bad)
    assert code == 422 and body["reason"] == "Invalid"
    assert body["message"] == (
        'Widget.example.com "bad" is invalid: ['
        'spec.size: Unsupported value: "huge": supported values: "small", "large", '
        "spec.replicas: Invalid value: 20: spec.replicas in body should be less than or equal to 10, "
        "spec.name: Too long: may not be more than 5 bytes, "
        "spec.name: Invalid value: \"ABCDEFG\": spec.name in body should match '^[a-z]+$', "
        'spec.port: Invalid value: "number": spec.port in body must be of type integer,string: "number", '
        "spec.tags: Too many: 3: must have at most 2 items]"
    )
    assert {c["field"] for c in body["details"]["causes"]} == {
        "spec.size",
        "spec.replicas",
        "spec.name",
        "spec.port",
        "spec.tags",
    }
    code, body, _ = await http.call("POST", WIDGETS, widget("nosize"))
    assert (
        code == 422 and body["message"] == 'Widget.example.com "nosize" is invalid: spec.size: Required value'
    )
    code, body, _ = await http.call("POST", WIDGETS, widget("typed", size="small", replicas="three"))
    assert body["message"] == (
        'Widget.example.com "typed" is invalid: spec.replicas: Invalid value: "string": '
        'spec.replicas in body must be of type integer: "string"'
    )
    code, body, _ = await http.call("POST", WIDGETS, widget("emb", size="small", template={"metadata": {}}))
    assert "spec.template.apiVersion: Required value: must not be empty" in body["message"]
    # an update is checked the same way
    code, _, _ = await http.call("POST", WIDGETS, widget("ok", size="small", port="http"))
    assert code == 201  # int-or-string takes a string
    code, body, _ = await http.call(
        "PATCH", f"{WIDGETS}/ok", {"spec": {"replicas": -1}}, "application/merge-patch+json"
    )
    assert code == 422 and "spec.replicas in body should be greater than or equal to 0" in body["message"]


async def test_unknown_fields_are_pruned_and_defaults_applied(http: Http) -> None:
    await established(http)
    body = widget(
        "w", size="small", bogus=1, extra={"free": {"form": [1]}}, policy={"other": True}, note=None
    )
    body["metadata"]["junk"] = "x"
    body["top"] = "level"
    code, w, headers = await http.call("POST", WIDGETS, body)
    assert code == 201
    assert w["spec"] == {
        "size": "small",
        "replicas": 1,  # default
        "extra": {"free": {"form": [1]}},  # x-kubernetes-preserve-unknown-fields keeps it
        "policy": {"mode": "Auto"},  # nested default inside a given object, unknown field pruned
        "note": None,  # nullable keeps null
    }
    assert "top" not in w and "junk" not in w["metadata"]
    assert headers.getall("Warning") == [
        '299 - "unknown field \\"metadata.junk\\""',
        '299 - "unknown field \\"spec.bogus\\""',
        '299 - "unknown field \\"spec.policy.other\\""',
        '299 - "unknown field \\"top\\""',
    ]
    _, w2, _ = await http.call("POST", WIDGETS, widget("w2", size="small", policy=None))
    assert w2["spec"]["policy"] == {"mode": "Auto"}  # null of a non-nullable field with a default
    code, body, _ = await http.call(
        "POST", WIDGETS, widget("w3", size="small", bogus=1), fieldValidation="Strict"
    )
    assert code == 400
    assert body["message"] == (
        'Widget in version "v1" cannot be handled as a Widget: '
        'strict decoding error: unknown field "spec.bogus"'
    )
    code, _, headers = await http.call(
        "POST", WIDGETS, widget("w4", size="small", bogus=1), fieldValidation="Ignore"
    )
    assert code == 201 and "Warning" not in headers


async def test_served_versions_share_one_store_and_convert_the_api_version(http: Http) -> None:
    await established(http)
    await http.call("POST", WIDGETS, widget("w", size="small"))
    beta = "/apis/example.com/v1beta1/namespaces/default/widgets"
    _, got, _ = await http.call("GET", f"{beta}/w")
    assert got["apiVersion"] == "example.com/v1beta1" and got["spec"]["size"] == "small"
    _, listed, _ = await http.call("GET", beta)
    assert listed["apiVersion"] == "example.com/v1beta1"
    assert [i["apiVersion"] for i in listed["items"]] == ["example.com/v1beta1"]
    code, made, _ = await http.call(
        "POST",
        beta,
        {
            "apiVersion": "example.com/v1beta1",
            "kind": "Widget",
            "metadata": {"name": "b"},
            "spec": {"size": "large"},
        },
    )
    assert code == 201 and made["apiVersion"] == "example.com/v1beta1"
    _, stored, _ = await http.call("GET", f"{WIDGETS}/b")
    assert stored["apiVersion"] == "example.com/v1" and stored["spec"] == {
        "size": "large",
        "replicas": 1,  # the storage version's defaults
        "policy": {"mode": "Auto"},
    }


async def test_watches_see_custom_resources_and_their_deletion_with_the_crd(
    http: Http, sim: SimCluster
) -> None:
    await established(http)
    _, first, _ = await http.call("POST", WIDGETS, widget("w", size="small"))
    seen: list[tuple[str, str]] = []

    async def watch() -> None:
        params = {"watch": "true", "resourceVersion": first["metadata"]["resourceVersion"]}
        async with http.session.get(f"{http.url}{WIDGETS}", params=params) as resp:
            async for line in resp.content:
                event = orjson.loads(line)
                seen.append((event["type"], event["object"]["metadata"]["name"]))

    task = asyncio.create_task(watch())
    await http.call("POST", WIDGETS, widget("w2", size="small"))
    await http.call("PATCH", f"{WIDGETS}/w2", {"spec": {"size": "large"}}, "application/merge-patch+json")
    code, _, _ = await http.call("DELETE", f"{CRDS}/widgets.example.com")
    assert code == 200
    await asyncio.wait_for(task, 5)  # the stream ends when the kind goes away
    assert seen == [("ADDED", "w2"), ("MODIFIED", "w2"), ("DELETED", "w"), ("DELETED", "w2")]
    code, _, _ = await http.call("GET", WIDGETS)
    assert code == 404
    _, groups, _ = await http.call("GET", "/apis")
    assert "example.com" not in [g["name"] for g in groups["groups"]]
    assert sim.store.count("widgets.example.com") == 0


async def test_cluster_scoped_crds_and_recreation(http: Http) -> None:
    crd = copy.deepcopy(WIDGET_CRD)
    crd["metadata"]["name"] = "gadgets.example.com"
    crd["spec"]["scope"] = "Cluster"
    crd["spec"]["names"] = {"plural": "gadgets", "kind": "Gadget"}
    await established(http, crd)
    gadget = {
        "apiVersion": "example.com/v1",
        "kind": "Gadget",
        "metadata": {"name": "g"},
        "spec": {"size": "small"},
    }
    code, made, _ = await http.call("POST", "/apis/example.com/v1/gadgets", gadget)
    assert code == 201 and "namespace" not in made["metadata"]
    code, _, _ = await http.call("GET", "/apis/example.com/v1/namespaces/default/gadgets/g")
    assert code == 404
    code, _, _ = await http.call("DELETE", f"{CRDS}/gadgets.example.com")
    assert code == 200
    await established(http, crd)  # the same name again serves an empty kind
    _, listed, _ = await http.call("GET", "/apis/example.com/v1/gadgets")
    assert listed["items"] == []


async def test_invalid_crds_are_rejected_as_the_real_server_does(http: Http) -> None:
    crd = copy.deepcopy(WIDGET_CRD)
    crd["metadata"]["name"] = "widgets.other.com"
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["size"] = {}
    crd["spec"]["versions"][1]["storage"] = True
    code, body, _ = await http.call("POST", CRDS, crd)
    assert code == 422
    assert body["message"] == (
        'CustomResourceDefinition.apiextensions.k8s.io "widgets.other.com" is invalid: ['
        'metadata.name: Invalid value: "widgets.other.com": must be spec.names.plural+"."+spec.group, '
        "spec.versions: Invalid value: "
        + orjson.dumps(crd["spec"]["versions"]).decode()
        + ": must have exactly one version marked as storage version, "
        "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[size].type: "
        "Required value: must not be empty for specified object fields]"
    )
