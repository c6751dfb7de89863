"""HTTPExtender against a real HTTP(S) extender: the wire format, upstream's error wording, TLS,
managedResources. Upstream's counterparts: pkg/scheduler/extender.go and extender_test.go."""

from __future__ import annotations

import asyncio
import base64
import os
import re
from typing import Any

import pytest

from scheduler.api import Node, Pod
from scheduler.config import Extender as ExtenderConfig
from scheduler.config import ExtenderManagedResource, ExtenderTLSConfig
from scheduler.extender import ApiObjects, ExtenderConfigError, ExtenderError, HTTPExtender, tls_context
from scheduler.framework import NodeInfo, Victims
from scheduler.testing import FakeSnapshot, node_dict, pod_dict, table_of
from tests.support.extender import ExtenderServer, free_port, make_pki, record_key_files
from tests.support.rawhttp import Server, TunnelProxy, answers, ok

PKI = make_pki()


def objects_with(
    pods: list[dict[str, Any]], node_objects: list[dict[str, Any]], **keep: bool
) -> tuple[ApiObjects, list[Pod], list[NodeInfo]]:
    """Pods and nodes decoded as the informers decode them, their JSON kept for the extender."""
    objects = ApiObjects(**keep)
    decode_pod, decode_node = objects.pods.decoder(Pod.from_dict), objects.nodes.decoder(Node.from_dict)
    views = [decode_pod(p) for p in pods]
    cluster = table_of([decode_node(n) for n in node_objects])
    return objects, views, [cluster.table.info(int(slot)) for slot in cluster.slots]


def extender(url: str, objects: ApiObjects | None = None, **fields: Any) -> HTTPExtender:
    return HTTPExtender(ExtenderConfig(url_prefix=url, **fields), objects or ApiObjects())


NODES = [node_dict("n1", labels={"disk": "ssd"}), node_dict("n2"), node_dict("n3")]


# ---------------------------------------------------------------------------- filter


async def test_a_node_cache_capable_extender_is_sent_node_names_and_answers_with_node_names():
    objects, (pod,), nodes = objects_with([pod_dict("web")], NODES)
    answer = {"NodeNames": ["n2", "n1"], "FailedNodes": {"n3": "too hot"}}
    async with ExtenderServer({"filter": lambda body: answer}) as server:
        ext = extender(server.url, objects, filter_verb="filter", node_cache_capable=True)
        result = await ext.filter(pod, nodes)
        await ext.close()

    (body,) = server.bodies("filter")
    assert body["NodeNames"] == ["n1", "n2", "n3"]
    assert body["Nodes"] is None
    assert body["Pod"]["metadata"]["name"] == "web"
    assert [info.name for info in result.nodes] == ["n2", "n1"]  # the extender's order
    assert result.nodes[0] is nodes[1]  # the cached NodeInfo, pods and all
    assert result.failed == {"n3": "too hot"}


async def test_an_extender_without_node_cache_is_sent_whole_nodes_and_answers_with_nodes():
    objects, (pod,), nodes = objects_with([pod_dict("web")], NODES, nodes=True)

    def keep_ssd(body: dict[str, Any]) -> dict[str, Any]:
        items = [n for n in body["Nodes"]["items"] if n["metadata"]["labels"].get("disk") == "ssd"]
        return {"Nodes": {"items": items}, "FailedAndUnresolvableNodes": {"n2": "no ssd", "n3": "no ssd"}}

    async with ExtenderServer({"filter": keep_ssd}) as server:
        ext = extender(server.url, objects, filter_verb="filter")
        result = await ext.filter(pod, nodes)
        await ext.close()

    (body,) = server.bodies("filter")
    assert body["NodeNames"] is None
    sent = body["Nodes"]["items"]
    assert [n["metadata"]["name"] for n in sent] == ["n1", "n2", "n3"]
    assert sent[0]["status"]["allocatable"]["cpu"] == "4"  # the API object, not a summary
    assert "kind" not in sent[0]  # as an informer's object
    assert [info.name for info in result.nodes] == ["n1"]
    assert result.failed_and_unresolvable == {"n2": "no ssd", "n3": "no ssd"}


async def test_the_pod_is_sent_as_its_api_object_without_managed_fields():
    manifest = pod_dict("web", requests={"cpu": "1"})
    manifest["metadata"]["managedFields"] = [{"manager": "kubectl"}]
    objects, (pod,), nodes = objects_with([manifest], NODES)
    async with ExtenderServer({"filter": lambda body: {"NodeNames": []}}) as server:
        ext = extender(server.url, objects, filter_verb="filter", node_cache_capable=True)
        await ext.filter(pod, nodes)
        await ext.close()
    sent = server.bodies("filter")[0]["Pod"]
    assert sent["spec"]["containers"][0]["resources"] == {"requests": {"cpu": "1"}}
    assert "managedFields" not in sent["metadata"]
    assert "managedFields" in manifest["metadata"]  # the informer's copy is untouched


async def test_answers_are_read_as_go_reads_them_field_names_in_any_case():
    objects, (pod,), nodes = objects_with([pod_dict("web")], NODES)
    answer = {
        "nodenames": ["n1"],
        "failedNodes": {"n2": "full"},
        "FAILEDANDUNRESOLVABLENODES": {"n3": "gone"},
    }
    async with ExtenderServer({"filter": lambda body: answer}) as server:
        ext = extender(server.url, objects, filter_verb="filter", node_cache_capable=True)
        result = await ext.filter(pod, nodes)
        await ext.close()
    assert [info.name for info in result.nodes] == ["n1"]
    assert result.failed == {"n2": "full"}
    assert result.failed_and_unresolvable == {"n3": "gone"}


async def test_a_node_cache_capable_extender_naming_a_node_it_was_not_given_fails_the_call():
    objects, (pod,), nodes = objects_with([pod_dict("web")], NODES)
    async with ExtenderServer({"filter": lambda body: {"NodeNames": ["n9"]}}) as server:
        ext = extender(server.url, objects, filter_verb="filter", node_cache_capable=True)
        with pytest.raises(ExtenderError) as info:
            await ext.filter(pod, nodes)
        await ext.close()
    assert str(info.value) == (
        f'extender "{server.url}" claims a filtered node "n9" which is not found in the input node list'
    )


async def test_an_extender_without_a_filter_verb_keeps_every_node_without_a_call():
    objects, (pod,), nodes = objects_with([pod_dict("web")], NODES)
    result = await extender(f"http://127.0.0.1:{free_port()}", objects).filter(pod, nodes)
    assert result.nodes == nodes


# ---------------------------------------------------------------------------- failures, worded as upstream


async def test_an_answer_other_than_200_fails_with_upstreams_message():
    objects, (pod,), nodes = objects_with([pod_dict("web")], NODES)
    async with ExtenderServer({"filter": lambda body: (500, {})}) as server:
        ext = extender(server.url + "/", objects, filter_verb="filter")
        with pytest.raises(ExtenderError) as info:
            await ext.filter(pod, nodes)
        await ext.close()
    assert str(info.value) == f"failed filter with extender at URL {server.url}/filter, code 500"


async def test_an_error_in_the_answer_fails_the_call_with_that_error():
    objects, (pod,), nodes = objects_with([pod_dict("web")], NODES)
    async with ExtenderServer({"filter": lambda body: {"Error": "quota exhausted"}}) as server:
        ext = extender(server.url, objects, filter_verb="filter")
        with pytest.raises(ExtenderError, match=r"^quota exhausted$"):
            await ext.filter(pod, nodes)
        await ext.close()


async def test_an_unreachable_extender_fails_as_go_words_a_refused_connection():
    objects, (pod,), nodes = objects_with([pod_dict("web")], NODES)
    port = free_port()
    ext = extender(f"http://127.0.0.1:{port}", objects, filter_verb="filter")
    with pytest.raises(ExtenderError) as info:
        await ext.filter(pod, nodes)
    await ext.close()
    assert str(info.value) == (
        f'Post "http://127.0.0.1:{port}/filter": dial tcp 127.0.0.1:{port}: connect: connection refused'
    )


async def test_http_timeout_bounds_the_whole_call():
    objects, (pod,), nodes = objects_with([pod_dict("web")], NODES)

    async def slow(body: dict[str, Any]) -> dict[str, Any]:
        await asyncio.sleep(2)
        return {}

    async with ExtenderServer({"filter": slow}) as server:
        ext = extender(server.url, objects, filter_verb="filter", http_timeout=0.2)
        with pytest.raises(ExtenderError) as info:
            await ext.filter(pod, nodes)
        await ext.close()
    assert str(info.value) == (
        f'Post "{server.url}/filter": context deadline exceeded '
        "(Client.Timeout exceeded while awaiting headers)"
    )


async def test_a_mistyped_answer_fails_the_call():
    objects, (pod,), nodes = objects_with([pod_dict("web")], NODES)
    async with ExtenderServer({"prioritize": lambda body: [{"Host": "n1", "Score": "high"}]}) as server:
        ext = extender(server.url, objects, prioritize_verb="prioritize", weight=1)
        with pytest.raises(ExtenderError) as info:
            await ext.prioritize(pod, nodes)
        await ext.close()
    assert str(info.value) == (
        "json: cannot unmarshal string into Go struct field HostPriority.Score of type int64"
    )


# ---------------------------------------------------------------------------- prioritize and bind


async def test_prioritize_returns_the_hosts_scores_and_the_extenders_weight():
    objects, (pod,), nodes = objects_with([pod_dict("web")], NODES)
    answer = [{"Host": "n1", "Score": 3}, {"host": "n3", "score": 10}]
    async with ExtenderServer({"prioritize": lambda body: answer}) as server:
        ext = extender(server.url, objects, prioritize_verb="prioritize", weight=4, node_cache_capable=True)
        assert await ext.prioritize(pod, nodes) == ([("n1", 3), ("n3", 10)], 4)
        await ext.close()
    assert server.bodies("prioritize")[0]["NodeNames"] == ["n1", "n2", "n3"]


async def test_bind_sends_the_pod_and_the_node_as_upstreams_binding_args():
    objects, (pod,), _ = objects_with([pod_dict("web", uid="uid-web", namespace="shop")], NODES)
    async with ExtenderServer({"bind": lambda body: {}}) as server:
        ext = extender(server.url, objects, bind_verb="bind")
        await ext.bind(pod, "n2")
        server.handlers["bind"] = lambda body: {"Error": "node n2 is sold out"}
        with pytest.raises(ExtenderError, match=r"^node n2 is sold out$"):
            await ext.bind(pod, "n2")
        await ext.close()
    assert server.bodies("bind")[0] == {
        "PodName": "web",
        "PodNamespace": "shop",
        "PodUID": "uid-web",
        "Node": "n2",
    }


# ---------------------------------------------------------------------------- preemption


def victims_on_nodes() -> tuple[ApiObjects, Pod, Any, dict[str, Victims]]:
    low = [pod_dict(f"low{i}", uid=f"uid-low{i}", node_name=f"n{i}", priority=1) for i in (1, 2)]
    objects = ApiObjects(bound_pods=True)
    decode = objects.pods.decoder(Pod.from_dict)
    preemptor = decode(pod_dict("vip", uid="uid-vip", priority=100))
    placed = [decode(p) for p in low]
    cluster = FakeSnapshot(table_of([Node.from_dict(n) for n in NODES[:2]], placed))
    return objects, preemptor, cluster, {"n1": Victims([placed[0]]), "n2": Victims([placed[1]], 1)}


async def test_a_node_cache_capable_extender_is_sent_the_victims_uids_and_its_choice_is_read_back():
    objects, preemptor, cluster, victims = victims_on_nodes()
    answer = {"NodeNameToMetaVictims": {"n2": {"Pods": [{"UID": "uid-low2"}], "NumPDBViolations": 1}}}
    async with ExtenderServer({"preempt": lambda body: answer}) as server:
        ext = extender(server.url, objects, preempt_verb="preempt", node_cache_capable=True)
        kept = await ext.process_preemption(preemptor, victims, cluster)
        await ext.close()
    (body,) = server.bodies("preempt")
    assert body["NodeNameToVictims"] is None
    assert body["NodeNameToMetaVictims"] == {
        "n1": {"Pods": [{"UID": "uid-low1"}], "NumPDBViolations": 0},
        "n2": {"Pods": [{"UID": "uid-low2"}], "NumPDBViolations": 1},
    }
    assert list(kept) == ["n2"]
    assert [p.name for p in kept["n2"].pods] == ["low2"] and kept["n2"].num_pdb_violations == 1


async def test_an_extender_without_node_cache_is_sent_the_victims_whole():
    objects, preemptor, cluster, victims = victims_on_nodes()
    answer = {"NodeNameToMetaVictims": {"n1": {"Pods": [{"UID": "uid-low1"}]}}}
    async with ExtenderServer({"preempt": lambda body: answer}) as server:
        ext = extender(server.url, objects, preempt_verb="preempt")
        kept = await ext.process_preemption(preemptor, victims, cluster)
        await ext.close()
    (body,) = server.bodies("preempt")
    assert body["NodeNameToMetaVictims"] is None
    sent = body["NodeNameToVictims"]["n1"]
    assert sent["Pods"][0]["metadata"]["name"] == "low1" and sent["Pods"][0]["spec"]["nodeName"] == "n1"
    assert [p.name for p in kept["n1"].pods] == ["low1"]


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (
            {"NodeNameToMetaVictims": {"n1": {"Pods": [{"UID": "uid-low2"}]}}},
            "extender: {url} claims to preempt pod (UID: &{{uid-low2}}) on node: n1, "
            "but the pod is not found on that node",
        ),
        ({"NodeNameToMetaVictims": {"n7": {"Pods": []}}}, 'nodeinfo not found for node name "n7"'),
    ],
    ids=["a victim that is not on the node", "a node the scheduler does not know"],
)
async def test_victims_the_scheduler_cannot_find_fail_the_preemption_call(answer, message):
    objects, preemptor, cluster, victims = victims_on_nodes()
    async with ExtenderServer({"preempt": lambda body: answer}) as server:
        ext = extender(server.url, objects, preempt_verb="preempt", node_cache_capable=True)
        with pytest.raises(ExtenderError) as info:
            await ext.process_preemption(preemptor, victims, cluster)
        await ext.close()
    assert str(info.value) == message.format(url=server.url)


# ---------------------------------------------------------------------------- managedResources


@pytest.mark.parametrize(
    ("containers", "init_containers", "interested"),
    [
        ([{"name": "a", "resources": {"requests": {"example.com/gpu": "1"}}}], [], True),
        ([{"name": "a", "resources": {"limits": {"example.com/gpu": "1"}}}], [], True),
        ([{"name": "a"}], [{"name": "i", "resources": {"requests": {"example.com/gpu": "1"}}}], True),
        ([{"name": "a", "resources": {"requests": {"cpu": "1", "example.com/fpga": "1"}}}], [], False),
    ],
    ids=["a container request", "a container limit", "an init container", "other resources only"],
)
def test_an_extender_with_managed_resources_is_interested_only_in_pods_asking_for_one(
    containers, init_containers, interested
):
    objects, (pod,), _ = objects_with(
        [pod_dict("p", containers=containers, init_containers=init_containers)], []
    )
    managed = [ExtenderManagedResource("example.com/gpu")]
    assert extender("http://x", objects, managed_resources=managed).is_interested(pod) is interested
    assert extender("http://x", objects).is_interested(pod)  # no managed resources: every pod


# ---------------------------------------------------------------------------- TLS


async def tls_call(
    tmp_path, tls: ExtenderTLSConfig | None, *, enable_https=False, client_certificates=False
) -> Any:
    """One prioritize call to an HTTPS extender signed by the test CA (None when it worked)."""
    objects, (pod,), nodes = objects_with([pod_dict("web")], NODES)
    context = PKI.server_context(tmp_path, client_certificates=client_certificates)
    async with ExtenderServer({"prioritize": lambda body: []}, tls=context) as server:
        ext = extender(
            server.url,
            objects,
            prioritize_verb="prioritize",
            weight=1,
            tls_config=tls,
            enable_https=enable_https,
        )
        try:
            await ext.prioritize(pod, nodes)
        except ExtenderError as exc:
            return exc
        finally:
            await ext.close()
    return None


async def test_the_extenders_certificate_is_verified_against_ca_data(tmp_path):
    assert await tls_call(tmp_path, ExtenderTLSConfig(ca_data=PKI.ca)) is None


async def test_the_extenders_certificate_is_verified_against_a_ca_file(tmp_path):
    (tmp_path / "ca.pem").write_bytes(PKI.ca)
    assert await tls_call(tmp_path, ExtenderTLSConfig(ca_file=str(tmp_path / "ca.pem"))) is None


async def test_server_name_is_what_the_certificate_is_checked_against(tmp_path):
    assert await tls_call(tmp_path, ExtenderTLSConfig(ca_data=PKI.ca, server_name="extender.test")) is None
    failed = await tls_call(tmp_path, ExtenderTLSConfig(ca_data=PKI.ca, server_name="other.test"))
    assert failed is not None and "tls: failed to verify certificate" in str(failed)


async def test_without_a_ca_the_system_roots_reject_a_self_signed_extender(tmp_path):
    failed = await tls_call(tmp_path, None)
    assert failed is not None and "tls: failed to verify certificate" in str(failed)


async def test_enable_https_without_a_ca_skips_verification_as_upstream(tmp_path):
    assert await tls_call(tmp_path, None, enable_https=True) is None


async def test_insecure_skips_verification(tmp_path):
    assert await tls_call(tmp_path, ExtenderTLSConfig(insecure=True)) is None


async def test_a_client_certificate_is_presented_from_cert_and_key_data_or_files(tmp_path):
    assert await tls_call(tmp_path, ExtenderTLSConfig(ca_data=PKI.ca), client_certificates=True) is not None
    with_data = ExtenderTLSConfig(ca_data=PKI.ca, cert_data=PKI.client_cert, key_data=PKI.client_key)
    assert await tls_call(tmp_path, with_data, client_certificates=True) is None
    (tmp_path / "client.crt").write_bytes(PKI.client_cert)
    (tmp_path / "client.key").write_bytes(PKI.client_key)
    with_files = ExtenderTLSConfig(
        ca_data=PKI.ca, cert_file=str(tmp_path / "client.crt"), key_file=str(tmp_path / "client.key")
    )
    assert await tls_call(tmp_path, with_files, client_certificates=True) is None


def test_a_client_key_given_as_data_reaches_openssl_through_no_named_file(monkeypatch):
    key_files = record_key_files(monkeypatch)
    tls = ExtenderTLSConfig(ca_data=PKI.ca, cert_data=PKI.client_cert, key_data=PKI.client_key)
    assert tls_context(ExtenderConfig(url_prefix="https://x", tls_config=tls)) is not None
    assert key_files and all(name.startswith("/memfd:") for name in key_files)


def test_a_ca_with_insecure_is_refused_as_client_go_does():
    config = ExtenderConfig(
        url_prefix="https://x", tls_config=ExtenderTLSConfig(insecure=True, ca_data=PKI.ca)
    )
    with pytest.raises(
        ExtenderConfigError, match=r"^specifying a root certificates file with the insecure flag"
    ):
        tls_context(config)


def test_unreadable_tls_material_is_refused_naming_the_extender(tmp_path):
    config = ExtenderConfig(
        url_prefix="https://x", tls_config=ExtenderTLSConfig(ca_file=str(tmp_path / "missing"))
    )
    with pytest.raises(ExtenderConfigError, match=r"^extender https://x: .*No such file"):
        tls_context(config)
    bad = ExtenderConfig(
        url_prefix="https://x", tls_config=ExtenderTLSConfig(ca_data=base64.b64encode(b"junk"))
    )
    with pytest.raises(ExtenderConfigError):
        tls_context(bad)


def test_plain_http_and_default_https_need_no_tls_settings():
    assert tls_context(ExtenderConfig(url_prefix="http://x")) is None
    assert tls_context(ExtenderConfig(url_prefix="https://x")) is None


# ---------------------------------------------------------------------------- proxies, credentials


@pytest.fixture
async def raw_servers():
    """``await raw_servers(script)``: a loopback server running ``script`` per connection."""
    started: list[Server] = []

    async def start(script: Any) -> Server:
        server = await Server(script).start()
        started.append(server)
        return server

    yield start
    for server in started:
        await server.stop()


@pytest.fixture
def no_proxy_variables(monkeypatch):
    for name in list(os.environ):
        if name.lower().endswith("_proxy"):
            monkeypatch.delenv(name)


async def test_a_netrc_entry_adds_no_credentials_as_gos_client_adds_none(
    tmp_path, monkeypatch, raw_servers, no_proxy_variables
):
    netrc = tmp_path / ".netrc"
    netrc.write_text("machine 127.0.0.1 login someone password secret\n")
    netrc.chmod(0o600)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("NETRC", str(netrc))
    objects, (pod,), nodes = objects_with([pod_dict("web")], NODES)
    server = await raw_servers(answers(ok(b"[]")))
    ext = extender(server.url, objects, prioritize_verb="prioritize", weight=1)
    try:
        assert await ext.prioritize(pod, nodes) == ([], 1)
    finally:
        await ext.close()
    assert "authorization" not in server.seen[0].headers


async def test_the_environment_proxy_is_worked_out_once_with_its_credentials(
    monkeypatch, raw_servers, no_proxy_variables
):
    proxy = await raw_servers(answers(ok(b"[]"), ok(b"[]")))
    monkeypatch.setenv("HTTP_PROXY", f"http://me:s%3Acret@127.0.0.1:{proxy.port}")
    objects, (pod,), nodes = objects_with([pod_dict("web")], NODES)
    # extender.test resolves nowhere: only through the proxy is it reached at all
    ext = extender("http://extender.test:8888/prefix", objects, prioritize_verb="prioritize", weight=1)
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{free_port()}")  # later changes are not seen
    try:
        for _ in range(2):
            assert await ext.prioritize(pod, nodes) == ([], 1)
    finally:
        await ext.close()
    assert [seen.target for seen in proxy.seen] == ["http://extender.test:8888/prefix/prioritize"] * 2
    expected = "Basic " + base64.b64encode(b"me:s:cret").decode()
    assert proxy.seen[0].headers["proxy-authorization"] == expected


def test_an_environment_proxy_extenders_cannot_use_is_refused_naming_the_variable(
    monkeypatch, no_proxy_variables
):
    monkeypatch.setenv("HTTPS_PROXY", "socks5://proxy.corp:1080")
    with pytest.raises(
        ExtenderConfigError, match=re.escape("extender https://x.test: $HTTPS_PROXY names a socks5")
    ):
        extender("https://x.test")
    monkeypatch.setenv("HTTPS_PROXY", "ftp://proxy.corp")
    with pytest.raises(ExtenderConfigError, match=re.escape("$HTTPS_PROXY: proxy 'ftp://proxy.corp'")):
        extender("https://x.test")
    monkeypatch.setenv("NO_PROXY", "x.test")
    extender("https://x.test")  # not proxied: nothing to refuse


async def test_an_https_extender_is_reached_through_the_proxys_tunnel(
    tmp_path, monkeypatch, raw_servers, no_proxy_variables
):
    objects, (pod,), nodes = objects_with([pod_dict("web")], NODES)
    async with ExtenderServer({"prioritize": lambda body: []}, tls=PKI.server_context(tmp_path)) as server:
        tunnel = TunnelProxy(routes={"extender.test:443": ("127.0.0.1", server.port)})
        proxy = await raw_servers(tunnel)
        monkeypatch.setenv("HTTPS_PROXY", f"http://me:pw@127.0.0.1:{proxy.port}")
        tls = ExtenderTLSConfig(ca_data=PKI.ca)
        ext = extender(
            "https://extender.test", objects, prioritize_verb="prioritize", weight=1, tls_config=tls
        )
        try:
            assert await ext.prioritize(pod, nodes) == ([], 1)
        finally:
            await ext.close()
    assert (proxy.seen[0].method, proxy.seen[0].target) == ("CONNECT", "extender.test:443")
    assert proxy.seen[0].headers["proxy-authorization"] == "Basic " + base64.b64encode(b"me:pw").decode()
    assert server.pods_sent("prioritize") == ["web"]
