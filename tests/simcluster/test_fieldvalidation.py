"""Server-side field validation of built-in kinds: Strict, Warn (the default) and Ignore."""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp
import pytest

from simcluster import SimCluster
from tests.support.crds import Http

CONFIGMAPS = "/api/v1/namespaces/default/configmaps"


def configmap(name: str, **extra: object) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"a": "b"}, **extra}


def pod_with_unknown_fields(name: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "colour": "red"},
        "spec": {"containers": [{"name": "c", "image": "busybox", "sizes": 3}], "foo": {"bar": 1}},
    }


@pytest.fixture
async def http() -> AsyncIterator[Http]:
    async with (
        SimCluster(nodes=1, kubelet=False, controllers=False) as sim,
        aiohttp.ClientSession() as session,
    ):
        yield Http(session, sim.url)


async def test_strict_rejects_unknown_fields_with_the_decoders_paths(http: Http) -> None:
    code, body, _ = await http.call(
        "POST", "/api/v1/namespaces/default/pods", pod_with_unknown_fields("p"), fieldValidation="Strict"
    )
    assert code == 400 and body["reason"] == "BadRequest"
    assert body["message"] == (
        'Pod in version "v1" cannot be handled as a Pod: strict decoding error: '
        'unknown field "metadata.colour", unknown field "spec.containers[0].sizes", unknown field "spec.foo"'
    )
    code, _, _ = await http.call("GET", "/api/v1/namespaces/default/pods/p")
    assert code == 404


async def test_warn_is_the_default_and_drops_the_fields(http: Http) -> None:
    for directive, name in (("Warn", "p1"), (None, "p2")):
        params = {"fieldValidation": directive} if directive else {}
        code, pod, headers = await http.call(
            "POST", "/api/v1/namespaces/default/pods", pod_with_unknown_fields(name), **params
        )
        assert code == 201
        assert headers.getall("Warning") == [
            '299 - "unknown field \\"metadata.colour\\""',
            '299 - "unknown field \\"spec.containers[0].sizes\\""',
            '299 - "unknown field \\"spec.foo\\""',
        ]
        assert "colour" not in pod["metadata"] and "foo" not in pod["spec"]
        assert "sizes" not in pod["spec"]["containers"][0]


async def test_ignore_drops_unknown_fields_silently(http: Http) -> None:
    code, cm, headers = await http.call(
        "POST", CONFIGMAPS, configmap("c", spec={"x": 1}), fieldValidation="Ignore"
    )
    assert code == 201 and "Warning" not in headers and "spec" not in cm


async def test_duplicate_fields_are_strict_decoding_errors(http: Http) -> None:
    raw = (
        b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"d","name":"d"},"data":{"a":"1","a":"2"}}'
    )
    code, body, _ = await http.call("POST", CONFIGMAPS, raw, fieldValidation="Strict")
    assert code == 400
    assert body["message"].endswith(
        'strict decoding error: duplicate field "metadata.name", duplicate field "data.a"'
    )
    code, cm, headers = await http.call("POST", CONFIGMAPS, raw)
    assert code == 201 and cm["data"] == {"a": "2"}
    assert headers.getall("Warning") == [
        '299 - "duplicate field \\"metadata.name\\""',
        '299 - "duplicate field \\"data.a\\""',
    ]
    # a colon inside a string value is no duplicate
    code, _, headers = await http.call(
        "POST", CONFIGMAPS, configmap("colon", data={"k": 'x":y'}), fieldValidation="Strict"
    )
    assert code == 201 and "Warning" not in headers


async def test_updates_and_patches_are_validated_too(http: Http) -> None:
    _, cm, _ = await http.call("POST", CONFIGMAPS, configmap("c"))
    code, body, _ = await http.call("PUT", f"{CONFIGMAPS}/c", {**cm, "extra": 1}, fieldValidation="Strict")
    assert code == 400
    assert body["message"].endswith(
        'cannot be handled as a ConfigMap: strict decoding error: unknown field "extra"'
    )
    code, body, _ = await http.call(
        "PATCH", f"{CONFIGMAPS}/c", {"extra": 1}, "application/merge-patch+json", fieldValidation="Strict"
    )
    assert code == 422 and body["reason"] == "Invalid"
    assert body["message"].startswith(' "" is invalid: patch: Invalid value: "{')
    assert body["message"].endswith('": strict decoding error: unknown field "extra"')
    code, body, _ = await http.call(
        "PATCH",
        f"{CONFIGMAPS}/c",
        {"extra": 1},
        "application/strategic-merge-patch+json",
        fieldValidation="Strict",
    )
    assert code == 422
    assert body["message"] == (
        ' "" is invalid: patch: Invalid value: "map[extra:1]": strict decoding error: unknown field "extra"'
    )
    code, patched, headers = await http.call(
        "PATCH", f"{CONFIGMAPS}/c", {"extra": 1, "data": {"z": "1"}}, "application/merge-patch+json"
    )
    assert code == 200 and "extra" not in patched and patched["data"] == {"a": "b", "z": "1"}
    assert headers.getall("Warning") == ['299 - "unknown field \\"extra\\""']


async def test_server_side_apply_refuses_undeclared_fields(http: Http) -> None:
    manifest = b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: s}\nspec: {x: 1}\n"
    code, body, _ = await http.call(
        "PATCH", f"{CONFIGMAPS}/s", manifest, "application/apply-patch+yaml", fieldManager="t"
    )
    assert code == 500
    assert body["message"] == (
        "failed to create typed patch object (/v1, Kind=ConfigMap): .spec: field not declared in schema"
    )


async def test_an_unknown_directive_is_invalid(http: Http) -> None:
    code, body, _ = await http.call("POST", CONFIGMAPS, configmap("c"), fieldValidation="Loose")
    assert code == 422
    assert body["message"] == (
        'CreateOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: "Loose": '
        'supported values: "", "Ignore", "Strict", "Warn"'
    )
