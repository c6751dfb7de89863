"""resource.k8s.io/v1 on the local endpoint: DeviceClass, ResourceClaim (with status),
ResourceClaimTemplate and ResourceSlice through a real client, with the API server's defaults,
validation errors and kubectl's table columns."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp
import orjson
import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.rest import ApiException

from scheduler.testing.dra import BROKEN_TAINT, device_taint_rule
from simcluster import SimCluster
from tests.support.kubectl import Kubectl, uses_kubectl

GROUP = "/apis/resource.k8s.io/v1"
BAD = 'ResourceClaim.resource.k8s.io "c" is invalid: '
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"


@pytest.fixture
def resource(api_client: client.ApiClient) -> client.ResourceV1Api:
    return client.ResourceV1Api(api_client)


def claim_spec(**request: Any) -> dict[str, Any]:
    exact = {"deviceClassName": "gpu.example.com", **request}
    return {"devices": {"requests": [{"name": "gpu", "exactly": exact}]}}


def claim(name: str, **request: Any) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": claim_spec(**request)}


def node_slice(name: str, node: str, **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {
            "driver": "gpu.example.com",
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "nodeName": node,
            "devices": [{"name": "gpu-0", "attributes": {"model": {"string": "a100"}}}],
            **spec,
        },
    }


def error_of(err: ApiException) -> tuple[int, str]:
    body = json.loads(err.body)
    return err.status, body["message"]


async def test_discovery_lists_the_four_kinds_with_their_scope(sim: SimCluster) -> None:
    async with aiohttp.ClientSession() as http, http.get(sim.url + GROUP) as resp:
        listing = await resp.json()
    scope = {r["name"]: r["namespaced"] for r in listing["resources"]}
    assert scope == {
        "deviceclasses": False,
        "resourceclaims": True,
        "resourceclaims/status": True,
        "resourceclaimtemplates": True,
        "resourceslices": False,
    }


async def test_a_claim_gets_the_servers_request_defaults_and_an_empty_status(
    resource: client.ResourceV1Api,
) -> None:
    created = await resource.create_namespaced_resource_claim("default", claim("c"))
    request = created.spec.devices.requests[0].exactly
    assert (request.allocation_mode, request.count) == ("ExactCount", 1)
    assert created.status is None or created.status.allocation is None
    everything = await resource.create_namespaced_resource_claim(
        "default", claim("all", allocationMode="All", tolerations=[{"key": "k", "effect": "NoSchedule"}])
    )
    request = everything.spec.devices.requests[0].exactly
    assert (request.allocation_mode, request.count) == ("All", None)
    assert request.tolerations[0].operator == "Equal"


async def test_a_template_defaults_the_claim_spec_it_carries(resource: client.ResourceV1Api) -> None:
    body = {"metadata": {"name": "t"}, "spec": {"spec": claim_spec(count=2)}}
    await resource.create_namespaced_resource_claim_template("default", body)
    got = await resource.read_namespaced_resource_claim_template("t", "default")
    request = got.spec.spec.devices.requests[0].exactly
    assert (request.allocation_mode, request.count) == ("ExactCount", 2)
    listed = await resource.list_resource_claim_template_for_all_namespaces()
    assert [t.metadata.name for t in listed.items] == ["t"]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            {"metadata": {"name": "c"}, "spec": {"devices": {"requests": [{"name": "gpu"}]}}},
            BAD + "spec.devices.requests[0]: Required value: "
            "exactly one of `exactly` or `firstAvailable` is required",
        ),
        (
            {"metadata": {"name": "c"}, "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {}}]}}},
            BAD + "spec.devices.requests[0].exactly.deviceClassName: Required value",
        ),
        (
            claim("c", count=-1),
            BAD + "spec.devices.requests[0].exactly.count: Invalid value: -1: must be greater than zero",
        ),
        (
            claim("c", allocationMode="All", count=2),
            BAD + "spec.devices.requests[0].exactly.count: "
            "Invalid value: 2: must not be specified when allocationMode is 'All'",
        ),
        (
            claim("c", allocationMode="Some"),
            BAD + "spec.devices.requests[0].exactly.allocationMode: "
            'Unsupported value: "Some": supported values: "All", "ExactCount"',
        ),
        (
            claim("c", selectors=[{}]),
            BAD + "spec.devices.requests[0].exactly.selectors[0].cel: Required value",
        ),
        (
            {
                "metadata": {"name": "c"},
                "spec": {
                    **claim_spec(),
                    "devices": {**claim_spec()["devices"], "constraints": [{"requests": ["x"]}]},
                },
            },
            BAD + "spec.devices.constraints[0].requests[0]: Invalid value: "
            '"x": must be the name of a request in the claim or the name of a request and a subrequest '
            "separated by '/'",
        ),
    ],
    ids=[
        "no request kind",
        "no class",
        "negative count",
        "All with a count",
        "unknown mode",
        "empty selector",
        "bad ref",
    ],
)
async def test_a_bad_claim_is_refused_with_the_servers_field_path(
    resource: client.ResourceV1Api, body: dict[str, Any], message: str
) -> None:
    with pytest.raises(ApiException) as caught:
        await resource.create_namespaced_resource_claim("default", body)
    assert error_of(caught.value) == (422, message)


async def test_a_template_error_names_the_nested_spec(resource: client.ResourceV1Api) -> None:
    body = {
        "metadata": {"name": "t"},
        "spec": {"spec": {"devices": {"requests": [{"name": "g", "exactly": {}}]}}},
    }
    with pytest.raises(ApiException) as caught:
        await resource.create_namespaced_resource_claim_template("default", body)
    assert error_of(caught.value) == (
        422,
        'ResourceClaimTemplate.resource.k8s.io "t" is invalid: '
        "spec.spec.devices.requests[0].exactly.deviceClassName: Required value",
    )


async def test_a_claims_spec_is_immutable(resource: client.ResourceV1Api) -> None:
    await resource.create_namespaced_resource_claim("default", claim("c"))
    with pytest.raises(ApiException) as caught:
        await resource.patch_namespaced_resource_claim(
            "c", "default", {"spec": claim_spec(count=3)}, _content_type="application/merge-patch+json"
        )
    status, message = error_of(caught.value)
    assert status == 422 and message.startswith(BAD + "spec: Invalid value:")
    assert message.endswith(": field is immutable")
    # the same manifest again (defaults left out) is no change at all
    same = await resource.replace_namespaced_resource_claim(
        "c", "default", {**claim("c"), "metadata": {"name": "c"}}
    )
    assert same.spec.devices.requests[0].exactly.count == 1


async def test_a_templates_spec_is_immutable(resource: client.ResourceV1Api) -> None:
    await resource.create_namespaced_resource_claim_template(
        "default", {"metadata": {"name": "t"}, "spec": {"spec": claim_spec()}}
    )
    labelled = await resource.patch_namespaced_resource_claim_template(
        "t", "default", {"metadata": {"labels": {"a": "b"}}}, _content_type="application/merge-patch+json"
    )
    assert labelled.metadata.labels == {"a": "b"}
    with pytest.raises(ApiException) as caught:
        await resource.patch_namespaced_resource_claim_template(
            "t",
            "default",
            {"spec": {"spec": claim_spec(count=2)}},
            _content_type="application/merge-patch+json",
        )
    status, message = error_of(caught.value)
    assert status == 422 and message.startswith(
        'ResourceClaimTemplate.resource.k8s.io "t" is invalid: spec: '
    )
    assert message.endswith(": field is immutable")


def allocation(device: str = "gpu-0") -> dict[str, Any]:
    result = {"request": "gpu", "driver": "gpu.example.com", "pool": "node-0000", "device": device}
    return {"devices": {"results": [result]}}


def consumer(name: str, uid: str) -> dict[str, Any]:
    return {"resource": "pods", "name": name, "uid": uid}


async def test_the_status_subresource_owns_allocation_and_reservations(
    resource: client.ResourceV1Api,
) -> None:
    await resource.create_namespaced_resource_claim(
        "default", {**claim("c"), "status": {"allocation": allocation()}}
    )
    assert (await resource.read_namespaced_resource_claim("c", "default")).status.allocation is None
    status = {"allocation": allocation(), "reservedFor": [consumer("p", "u-1")]}
    updated = await resource.patch_namespaced_resource_claim_status(
        "c", "default", {"status": status}, _content_type="application/merge-patch+json"
    )
    assert updated.status.allocation.devices.results[0].device == "gpu-0"
    assert [r.name for r in updated.status.reserved_for] == ["p"]
    # a write to the main resource keeps the status
    body = (await resource.read_namespaced_resource_claim("c", "default")).to_dict()
    body["metadata"]["labels"] = {"a": "b"}
    kept = await resource.replace_namespaced_resource_claim(
        "c", "default", {"metadata": body["metadata"], "spec": claim_spec()}
    )
    assert kept.status.allocation.devices.results[0].device == "gpu-0"
    # deallocation: both go at once
    cleared = await resource.patch_namespaced_resource_claim_status(
        "c",
        "default",
        {"status": {"allocation": None, "reservedFor": None}},
        _content_type="application/merge-patch+json",
    )
    assert cleared.status is None or (cleared.status.allocation is None and not cleared.status.reserved_for)


@pytest.mark.parametrize(
    ("before", "after", "message"),
    [
        (
            {},
            {"reservedFor": [consumer("p", "u-1")]},
            "status.reservedFor: Forbidden: may not be specified when `allocated` is not set",
        ),
        (
            {"allocation": allocation()},
            {"allocation": allocation("gpu-1")},
            "status.allocation: Invalid value: ",
        ),
        (
            {},
            {"allocation": allocation(), "reservedFor": [{"resource": "pods", "name": "p"}]},
            "status.reservedFor[0].uid: Required value",
        ),
    ],
    ids=["reserved without allocation", "allocation changed", "consumer without uid"],
)
async def test_bad_status_writes_are_refused(
    resource: client.ResourceV1Api, before: dict[str, Any], after: dict[str, Any], message: str
) -> None:
    await resource.create_namespaced_resource_claim("default", claim("c"))
    if before:
        await resource.patch_namespaced_resource_claim_status(
            "c", "default", {"status": before}, _content_type="application/merge-patch+json"
        )
    with pytest.raises(ApiException) as caught:
        await resource.patch_namespaced_resource_claim_status(
            "c", "default", {"status": after}, _content_type="application/merge-patch+json"
        )
    status, text = error_of(caught.value)
    assert status == 422 and text.startswith(BAD + message)


async def test_slices_and_classes_get_a_generation_and_validated_specs(
    resource: client.ResourceV1Api,
) -> None:
    cls = await resource.create_device_class({"metadata": {"name": "gpu.example.com"}, "spec": {}})
    assert cls.metadata.generation == 1
    created = await resource.create_resource_slice(node_slice("s", "node-0000"))
    assert created.metadata.generation == 1
    assert created.spec.devices[0].attributes["model"].string == "a100"
    bad = node_slice("t", "node-0000")
    del bad["spec"]["nodeName"]
    with pytest.raises(ApiException) as caught:
        await resource.create_resource_slice(bad)
    assert error_of(caught.value) == (
        422,
        'ResourceSlice.resource.k8s.io "t" is invalid: spec: Required value: exactly one of `nodeName`, '
        "`nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required",
    )
    bad = node_slice("t", "node-0000")
    bad["spec"]["pool"]["resourceSliceCount"] = 0
    with pytest.raises(ApiException) as caught:
        await resource.create_resource_slice(bad)
    assert error_of(caught.value)[1].endswith(
        "spec.pool.resourceSliceCount: Invalid value: 0: must be greater than zero"
    )
    with pytest.raises(ApiException) as caught:
        await resource.patch_resource_slice(
            "s", {"spec": {"nodeName": "node-0001"}}, _content_type="application/merge-patch+json"
        )
    assert error_of(caught.value)[1].endswith('spec.nodeName: Invalid value: "node-0001": field is immutable')


@pytest.mark.parametrize(
    "name, valid",
    [
        ("example.com/gpu", True),
        ("gpu", False),  # not prefixed: a native resource name
        ("kubernetes.io/gpu", False),
        ("requests.example.com/gpu", False),
        ("example.com/-gpu", False),
    ],
)
async def test_a_class_may_name_the_extended_resource_it_serves(
    resource: client.ResourceV1Api, name: str, valid: bool
) -> None:
    body = {"metadata": {"name": "gpu"}, "spec": {"extendedResourceName": name}}
    if valid:
        created = await resource.create_device_class(body)
        assert created.spec.extended_resource_name == name
        return
    with pytest.raises(ApiException) as caught:
        await resource.create_device_class(body)
    assert error_of(caught.value) == (
        422,
        f'DeviceClass.resource.k8s.io "gpu" is invalid: spec.extendedResourceName: Invalid value: "{name}": '
        "must be a valid extended resource name",
    )


async def test_each_kind_is_watched(sim: SimCluster) -> None:
    paths = {
        "deviceclasses": "/deviceclasses",
        "resourceslices": "/resourceslices",
        "resourceclaims": "/resourceclaims",
        "resourceclaimtemplates": "/namespaces/default/resourceclaimtemplates",
    }
    params = {"watch": "true", "timeoutSeconds": "5"}
    async with aiohttp.ClientSession() as http:
        streams = {
            name: await http.get(sim.url + GROUP + path, params=params) for name, path in paths.items()
        }
        await sim.create("deviceclasses", {"metadata": {"name": "w"}, "spec": {}})
        await sim.create("resourceslices", node_slice("w", "node-0000"))
        await sim.create("resourceclaims", claim("w"), "default")
        await sim.create(
            "resourceclaimtemplates", {"metadata": {"name": "w"}, "spec": {"spec": claim_spec()}}, "default"
        )
        got = {}
        for name, resp in streams.items():
            event = json.loads(await asyncio.wait_for(resp.content.readline(), 10))
            got[name] = (event["type"], event["object"]["kind"], event["object"]["metadata"]["name"])
            resp.close()
    kinds = {
        "deviceclasses": "DeviceClass",
        "resourceslices": "ResourceSlice",
        "resourceclaims": "ResourceClaim",
    }
    kinds["resourceclaimtemplates"] = "ResourceClaimTemplate"
    assert got == {name: ("ADDED", kind, "w") for name, kind in kinds.items()}


async def test_tables_show_claim_state_and_slice_columns(sim: SimCluster) -> None:
    await sim.create("resourceclaims", claim("pending"), "default")
    await sim.create("resourceclaims", claim("held"), "default")
    user = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    uid = (await sim.create("pods", user, "default"))["metadata"]["uid"]
    rt = sim.api.resource("resourceclaims")
    status = {"allocation": allocation(), "reservedFor": [consumer("p", uid)]}
    current = sim.api.get(rt, "default", "held")
    sim.api.update(rt, "default", "held", {**current.obj, "status": status}, subresource="status")
    await sim.create("resourceslices", node_slice("s", "node-0000"))

    async def rows(path: str) -> tuple[list[str], list[list[Any]]]:
        async with (
            aiohttp.ClientSession() as http,
            http.get(sim.url + path, headers={"Accept": TABLE}) as resp,
        ):
            table = await resp.json()
        return [c["name"] for c in table["columnDefinitions"]], [r["cells"][:-1] for r in table["rows"]]

    assert await rows(GROUP + "/namespaces/default/resourceclaims") == (
        ["Name", "State", "Age"],
        [["held", "allocated,reserved"], ["pending", "pending"]],
    )
    assert await rows(GROUP + "/resourceslices") == (
        ["Name", "Node", "Driver", "Pool", "Age"],
        [["s", "node-0000", "gpu.example.com", "node-0000"]],
    )


@uses_kubectl
async def test_kubectl_applies_and_gets_claims(tmp_path: Any) -> None:
    async with SimCluster(nodes=1, kubelet=False) as sim:
        kubectl = Kubectl(sim, sim.write_kubeconfig(tmp_path / "kubeconfig"), tmp_path)
        manifest = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", **claim("gpu")}
        (tmp_path / "claim.yaml").write_text(json.dumps(manifest))
        assert "resourceclaim.resource.k8s.io/gpu created" in await kubectl("apply", "-f", "claim.yaml")
        out = (await kubectl("get", "resourceclaims")).splitlines()
        assert out[0].split() == ["NAME", "STATE", "AGE"]
        assert out[1].split()[:2] == ["gpu", "pending"]


def claim_pod(claims: list[Any], refs: list[Any]) -> dict[str, Any]:
    container = {"name": "c", "image": "busybox", "resources": {"claims": refs}}
    return {"metadata": {"name": "p"}, "spec": {"containers": [container], "resourceClaims": claims}}


@pytest.mark.parametrize(
    ("claims", "refs", "message"),
    [
        ([{"resourceClaimName": "c"}], [], "spec.resourceClaims[0].name: Required value"),
        (
            [{"name": "g", "resourceClaimName": "c"}, {"name": "g", "resourceClaimName": "d"}],
            [],
            'spec.resourceClaims[1].name: Duplicate value: "g"',
        ),
        (
            [{"name": "g"}],
            [],
            'spec.resourceClaims[0]: Invalid value: {"name":"g"}: must specify one of: `resourceClaimName`, '
            "`resourceClaimTemplateName`",
        ),
        (
            [{"name": "g", "resourceClaimName": "c", "resourceClaimTemplateName": "t"}],
            [],
            "at most one of `resourceClaimName` or `resourceClaimTemplateName` may be specified",
        ),
        (
            [],
            [{"name": "gpu"}],
            'spec.containers[0].resources.claims[0]: Not found: "gpu": must be one of the names in '
            "pod.spec.resourceClaims which is empty",
        ),
        (
            [{"name": "g", "resourceClaimTemplateName": "t"}],
            [{"name": "gpu"}],
            'spec.containers[0].resources.claims[0]: Not found: "gpu": must be one of the names in '
            "pod.spec.resourceClaims: g",
        ),
    ],
    ids=["no name", "duplicate", "neither source", "both sources", "no claims", "unknown claim"],
)
async def test_a_pods_bad_claim_references_are_refused(
    core: client.CoreV1Api, claims: list[Any], refs: list[Any], message: str
) -> None:
    with pytest.raises(ApiException) as caught:
        await core.create_namespaced_pod("default", claim_pod(claims, refs))
    status, text = error_of(caught.value)
    assert status == 422 and text.startswith('Pod "p" is invalid: ') and message in text


# ---- DeviceTaintRule (resource.k8s.io/v1beta2) --------------------------------------------

RULE_BAD = 'DeviceTaintRule.resource.k8s.io "r" is invalid: '


def taint_rule(name: str = "r", selector: dict | None = None, **taint: Any) -> dict[str, Any]:
    return device_taint_rule(name, {**BROKEN_TAINT, **taint}, selector)


async def test_a_device_taint_rule_is_served_and_gets_the_servers_time(api_client: client.ApiClient) -> None:
    beta = client.ResourceV1beta2Api(api_client)
    rule = taint_rule(selector={"driver": "gpu.example.com", "pool": "node-1", "device": "gpu-0"})
    created = await beta.create_device_taint_rule(rule)
    assert created.spec.taint.time_added is not None
    assert created.spec.device_selector.device == "gpu-0"
    # a new effect without a new time gets the server's time again; the key alone keeps it
    stamp = created.spec.taint.time_added
    listed = await beta.list_device_taint_rule()
    assert [r.metadata.name for r in listed.items] == ["r"]
    status = {"status": {"conditions": []}}
    await beta.patch_device_taint_rule_status("r", status)
    assert (await beta.read_device_taint_rule("r")).spec.taint.time_added == stamp


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        (
            taint_rule(effect="PreferNoSchedule"),
            'spec.taint.effect: Unsupported value: "PreferNoSchedule": '
            'supported values: "NoExecute", "NoSchedule", "None"',
        ),
        (taint_rule(effect=""), "spec.taint.effect: Required value"),
        (taint_rule(key=""), 'spec.taint.key: Invalid value: "": name part must be non-empty'),
        (
            taint_rule(key="Bad_Prefix/x"),
            'spec.taint.key: Invalid value: "Bad_Prefix/x": prefix part a lowercase '
            "RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
            "start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
            "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
        ),
        (
            taint_rule(value="-bad"),
            'spec.taint.value: Invalid value: "-bad": a valid label must be an empty string '
            "or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
            "alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for "
            "validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
        ),
        (
            taint_rule(selector={"device": "GPU_0"}),
            'spec.deviceSelector.device: Invalid value: "GPU_0": a '
            "lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
            "start and end with an alphanumeric character",
        ),
        (taint_rule(selector={"pool": ""}), "spec.deviceSelector.pool: Required value"),
    ],
)
async def test_a_bad_device_taint_rule_is_refused_with_the_servers_field_path(
    api_client: client.ApiClient, rule: dict, message: str
) -> None:
    beta = client.ResourceV1beta2Api(api_client)
    with pytest.raises(ApiException) as caught:
        await beta.create_device_taint_rule(rule)
    assert error_of(caught.value) == (422, RULE_BAD + message)


async def test_changing_a_rules_effect_stamps_a_new_time(sim: SimCluster) -> None:
    rules = sim.api.resource("devicetaintrules")

    def replaced(obj: dict[str, Any], **taint: Any) -> dict[str, Any]:
        body = {**obj, "spec": {"taint": {**obj["spec"]["taint"], **taint}}}
        return orjson.loads(sim.api.update(rules, None, "r", body).raw)

    created = await sim.create("devicetaintrules", taint_rule(timeAdded="2026-01-01T00:00:00Z"))
    assert created["spec"]["taint"]["timeAdded"] == "2026-01-01T00:00:00Z"
    kept = replaced(created, key="example.com/other")  # the key alone keeps the time
    assert kept["spec"]["taint"]["timeAdded"] == "2026-01-01T00:00:00Z"
    stamped = replaced(kept, effect="NoExecute")
    assert stamped["spec"]["taint"]["timeAdded"] != "2026-01-01T00:00:00Z"
