"""Protobuf request bodies: the wire decoder, and kubectl's `create <kind>` generators end to end."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from simcluster import SimCluster
from simcluster.errors import ApiError
from simcluster.protobuf import MAGIC, PROTOBUF, decode
from tests.support.kubectl import Kubectl, uses_kubectl

# ---- a test-side encoder: just enough wire format to build bodies by hand ------------------


def varint(n: int) -> bytes:
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def f_int(number: int, value: int) -> bytes:
    return varint(number << 3) + varint(value)


def f_len(number: int, payload: bytes | str) -> bytes:
    data = payload.encode() if isinstance(payload, str) else payload
    return varint(number << 3 | 2) + varint(len(data)) + data


def entry(number: int, key: str, value: bytes | str) -> bytes:
    return f_len(number, f_len(1, key) + f_len(2, value))


def envelope(api_version: str, kind: str, raw: bytes) -> bytes:
    return MAGIC + f_len(1, f_len(1, api_version) + f_len(2, kind)) + f_len(2, raw)


def meta(name: str, *extra: bytes) -> bytes:
    # Go writes every non-pointer field: empty strings, zero generation, a zero creationTimestamp
    zeros = f_len(2, "") + f_len(3, "") + f_int(7, 0) + f_len(8, f_int(1, 0) + f_int(2, 0))
    return f_len(1, name) + zeros + b"".join(extra)


def test_a_deployment_decodes_to_the_json_a_client_would_send() -> None:
    selector = f_len(2, entry(1, "app", "web"))
    container = (
        f_len(1, "nginx")
        + f_len(2, "nginx:1.27")
        + f_len(5, "")  # workingDir "" is dropped (omitempty)
        + f_len(6, f_int(3, 80))  # containerPort has no omitempty
        + f_len(8, entry(2, "cpu", f_len(1, "100m")))
    )
    template = f_len(1, meta("", entry(11, "app", "web"))) + f_len(2, f_len(2, container))
    spec = f_int(1, 0) + selector + f_len(3, template) + f_len(4, b"") + f_int(5, 0)
    body = envelope("apps/v1", "Deployment", f_len(1, meta("web")) + f_len(2, spec) + f_len(3, b""))
    assert decode(body) == {
        "kind": "Deployment",
        "apiVersion": "apps/v1",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 0,  # a pointer: zero is kept, unlike minReadySeconds
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "containers": [
                        {
                            "name": "nginx",
                            "image": "nginx:1.27",
                            "ports": [{"containerPort": 80}],
                            "resources": {"requests": {"cpu": "100m"}},
                        }
                    ]
                },
            },
            "strategy": {},
        },
        "status": {},
    }


def test_bytes_times_int_or_string_and_negative_numbers() -> None:
    secret = envelope("v1", "Secret", f_len(1, meta("s")) + entry(2, "key", b"\x00\xff") + f_len(3, "Opaque"))
    assert decode(secret)["data"] == {"key": base64.b64encode(b"\x00\xff").decode()}
    stamp = f_len(9, f_int(1, 1767225600))  # deletionTimestamp 2026-01-01T00:00:00Z
    ns = decode(envelope("v1", "Namespace", f_len(1, meta("x", stamp))))
    assert ns["metadata"]["deletionTimestamp"] == "2026-01-01T00:00:00Z"
    pdb_spec = f_len(1, f_int(1, 1) + f_len(3, "50%")) + f_len(3, f_int(1, 0) + f_int(2, 2))
    pdb = decode(envelope("policy/v1", "PodDisruptionBudget", f_len(1, meta("p")) + f_len(2, pdb_spec)))
    assert pdb["spec"] == {"minAvailable": "50%", "maxUnavailable": 2}
    pc = decode(envelope("scheduling.k8s.io/v1", "PriorityClass", f_len(1, meta("low")) + f_int(2, -5)))
    assert pc["value"] == -5


def test_unknown_fields_are_skipped_only_when_they_carry_nothing() -> None:
    empty_struct = f_len(99, f_len(1, "") + f_int(2, 0))
    ok = decode(envelope("v1", "ConfigMap", f_len(1, meta("c")) + empty_struct + entry(2, "a", "b")))
    assert ok["data"] == {"a": "b"}
    with pytest.raises(ApiError) as err:
        decode(envelope("v1", "ConfigMap", f_len(1, meta("c")) + f_len(99, "something")))
    assert err.value.code == 400
    assert "field 99 of ConfigMap" in err.value.message


@pytest.mark.parametrize(
    ("body", "code", "text"),
    [
        (b'{"kind":"Pod"}', 400, "missing the 'k8s\\x00' prefix"),
        (MAGIC + b"\x0a\xff", 400, "invalid protobuf"),
        (envelope("v1", "LimitRange", b""), 415, "protobuf form of LimitRange"),
    ],
)
def test_bodies_that_cannot_be_read_are_refused(body: bytes, code: int, text: str) -> None:
    with pytest.raises(ApiError) as err:
        decode(body)
    assert err.value.code == code
    assert text in err.value.message


async def test_a_protobuf_post_creates_the_object(sim: SimCluster) -> None:
    body = envelope("v1", "ConfigMap", f_len(1, meta("from-proto")) + entry(2, "k", "v"))
    headers = {"Content-Type": PROTOBUF, "Accept": f"{PROTOBUF},application/json"}
    url = f"{sim.url}/api/v1/namespaces/default/configmaps"
    async with aiohttp.ClientSession() as http, http.post(url, data=body, headers=headers) as resp:
        assert resp.status == 201
        assert resp.content_type == "application/json"  # client-go decodes the JSON it was offered
        assert (await resp.json())["data"] == {"k": "v"}
    assert sim.store.get("configmaps", "default", "from-proto")["data"] == {"k": "v"}


# ---- kubectl's generators, which all send protobuf -----------------------------------------


@pytest.fixture
async def kubectl(tmp_path: Path) -> AsyncIterator[Kubectl]:
    async with SimCluster(nodes=2, kubelet_delay=0.01) as sim:
        yield Kubectl(sim, sim.write_kubeconfig(tmp_path / "kubeconfig"), tmp_path)


CREATE = [
    (("namespace", "team-a"), "namespaces", None, "team-a", lambda o: o["status"]["phase"] == "Active"),
    (
        ("configmap", "settings", "--from-literal=mode=fast"),
        "configmaps",
        "default",
        "settings",
        lambda o: o["data"] == {"mode": "fast"},
    ),
    (
        ("secret", "generic", "creds", "--from-literal=password=s3cr3t"),
        "secrets",
        "default",
        "creds",
        lambda o: base64.b64decode(o["data"]["password"]) == b"s3cr3t" and o["type"] == "Opaque",
    ),
    (
        ("deployment", "web", "--image=nginx:1.27", "--replicas=0", "--port=80"),
        "deployments",
        "default",
        "web",
        lambda o: (
            o["spec"]["replicas"] == 0
            and o["spec"]["template"]["spec"]["containers"][0]["ports"] == [{"containerPort": 80}]
            and o["spec"]["strategy"]["type"] == "RollingUpdate"
        ),
    ),
    (
        ("priorityclass", "batch-low", "--value=0", "--description=low"),
        "priorityclasses",
        None,
        "batch-low",
        lambda o: o["value"] == 0 and o["description"] == "low",
    ),
    (
        ("poddisruptionbudget", "web-pdb", "--selector=app=web", "--min-available=50%"),
        "poddisruptionbudgets",
        "default",
        "web-pdb",
        lambda o: o["spec"] == {"minAvailable": "50%", "selector": {"matchLabels": {"app": "web"}}},
    ),
    (
        ("service", "clusterip", "web", "--tcp=80:8080"),
        "services",
        "default",
        "web",
        lambda o: (
            o["spec"]["ports"] == [{"name": "80-8080", "port": 80, "protocol": "TCP", "targetPort": 8080}]
            and o["spec"]["type"] == "ClusterIP"
        ),
    ),
    (
        ("serviceaccount", "robot"),
        "serviceaccounts",
        "default",
        "robot",
        lambda o: o["metadata"]["name"] == "robot",
    ),
    (
        ("job", "once", "--image=busybox", "--", "echo", "hi"),
        "jobs",
        "default",
        "once",
        lambda o: (
            o["spec"]["template"]["spec"]["containers"][0]["command"] == ["echo", "hi"]
            and o["spec"]["template"]["spec"]["restartPolicy"] == "Never"
        ),
    ),
]


@uses_kubectl
@pytest.mark.parametrize(
    ("args", "resource", "namespace", "name", "check"), CREATE, ids=[c[0][0] for c in CREATE]
)
async def test_kubectl_create_generators(kubectl: Kubectl, args, resource, namespace, name, check) -> None:
    out = await kubectl("create", *args)
    assert out.strip().endswith(f"/{name} created")
    stored = kubectl.sim.store.get(resource, namespace, name)
    assert stored is not None and check(stored), stored
    # what kubectl reads back is the same object
    shown = json.loads(
        await kubectl("get", resource, name, "-o", "json", *(["-n", namespace] if namespace else []))
    )
    assert shown["metadata"]["uid"] == stored["metadata"]["uid"]


@uses_kubectl
async def test_kubectl_create_job_runs_its_pod(kubectl: Kubectl) -> None:
    await kubectl("create", "job", "once", "--image=busybox", "--", "true")
    for _ in range(200):
        pods = kubectl.sim.store.list("pods", "default")
        if pods:
            break
        await asyncio.sleep(0.01)
    [pod] = pods
    assert pod["metadata"]["labels"]["job-name"] == "once"
    assert pod["metadata"]["ownerReferences"][0]["kind"] == "Job"
    out = await kubectl("get", "jobs")
    assert out.splitlines()[0].split() == ["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"]
    assert out.splitlines()[1].split()[:3] == ["once", "Running", "0/1"]
