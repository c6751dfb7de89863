"""sign_pod of the in-tree plugins (OpportunisticBatching, KEP-5598).

Signatures are composed here as the framework composes them: the JSON of {key: value} of every
fragment, keys sorted. Each plugin: pods that differ only in what it ignores sign alike, pods
that differ in what it reads do not, orders that mean nothing do not matter, and the pods it
cannot sign are refused with upstream's message.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Mapping, Sequence
from typing import Any

import orjson
import pytest

from scheduler.api import Pod, Resource
from scheduler.build import DiscardEvents, DiscardStatus, build_scheduler
from scheduler.config import API_VERSION, KIND, InterPodAffinityArgs, PodTopologySpreadArgs, parse_config
from scheduler.framework import (
    Code,
    FilterPlugin,
    PreFilterPlugin,
    PreScorePlugin,
    ScorePlugin,
    SignFragment,
    SignPlugin,
    Status,
    signers,
)
from scheduler.plugins.dynamicresources import DynamicResources
from scheduler.plugins.imagelocality import ImageLocality
from scheduler.plugins.interpodaffinity import InterPodAffinity
from scheduler.plugins.nodeaffinity import NodeAffinity
from scheduler.plugins.nodedeclaredfeatures import NodeDeclaredFeatures
from scheduler.plugins.nodename import NodeName
from scheduler.plugins.nodeports import NodePorts
from scheduler.plugins.noderesources import BalancedAllocation, Fit
from scheduler.plugins.nodeunschedulable import NodeUnschedulable
from scheduler.plugins.nodevolumelimits import NodeVolumeLimits
from scheduler.plugins.podtopologyspread import PodTopologySpread
from scheduler.plugins.registry import in_tree_registry
from scheduler.plugins.tainttoleration import TaintToleration
from scheduler.plugins.volumebinding import VolumeBinding
from scheduler.plugins.volumerestrictions import VolumeRestrictions
from scheduler.plugins.volumezone import VolumeZone
from scheduler.testing import FakeClient, FakeHandle, pod_dict, table_of

# ---------------------------------------------------------------------------- helpers


def pod(name: str = "p", spec: Mapping[str, Any] | None = None, **kwargs: Any) -> Pod:
    """make_pod, with ``spec`` merged into the spec (volumes, claims, constraints, ...)."""
    obj = pod_dict(name, **kwargs)
    obj["spec"].update(spec or {})
    return Pod.from_dict(obj)


def compose(fragments: Sequence[SignFragment]) -> bytes:
    return orjson.dumps({f.key: f.value for f in fragments}, option=orjson.OPT_SORT_KEYS)


def sign(plugin: Any, p: Pod) -> bytes:
    """The plugin's part of the pod's signature; the pod must be signable."""
    fragments, status = plugin.sign_pod(p)
    assert status is None, status
    return compose(fragments)


def refusal(plugin: Any, p: Pod) -> Status:
    fragments, status = plugin.sign_pod(p)
    assert status is not None and not status.is_success and tuple(fragments) == ()
    return status


def assert_alike(plugin: Any, a: Pod, b: Pod) -> None:
    assert sign(plugin, a) == sign(plugin, b)


def assert_apart(plugin: Any, a: Pod, b: Pod) -> None:
    assert sign(plugin, a) != sign(plugin, b)


def container(name: str = "c", image: str = "app:1", **extra: Any) -> dict[str, Any]:
    return {"name": name, "image": image, **extra}


def handle() -> FakeHandle:
    return FakeHandle(table_of([]))


# a pod that differs from the plain one in nearly everything the plugins below do not read
def busy(name: str = "other") -> Pod:
    return pod(
        name,
        namespace="elsewhere",
        labels={"app": "other", "tier": "x"},
        requests={"cpu": "3", "memory": "1Gi"},
        tolerations=[{"key": "k", "operator": "Exists"}],
        node_selector={"zone": "a"},
        host_ports=[(8080, "TCP")],
        images=["busybox:1"],
    )


# ---------------------------------------------------------------------------- the default profile


def build(document: Mapping[str, Any] | None = None) -> Any:
    config = parse_config({"apiVersion": API_VERSION, "kind": KIND, **(document or {})})
    parts = build_scheduler(
        config,
        in_tree_registry(),
        FakeClient(),
        events=DiscardEvents(),
        status=DiscardStatus(),
        current_pod=lambda _: None,
        rng=random.Random(0),
    )
    return parts.frameworks[config.profiles[0].scheduler_name]


_POINTS = (PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin)


def signing_plugins(framework: Any) -> list[Any]:
    """The plugins of a (multiPoint) profile that must sign: those at PreFilter, Filter,
    PreScore or Score."""
    return [p for p in framework.plugins.values() if isinstance(p, _POINTS)]


def profile_signature(framework: Any, p: Pod) -> bytes | None:
    """The signature as the framework builds it, None when a plugin cannot sign the pod."""
    merged: dict[str, Any] = {signers.SCHEDULER_NAME: p.scheduler_name}
    for plugin in signing_plugins(framework):
        fragments, status = plugin.sign_pod(p)
        if status is not None:
            return None
        for fragment in fragments:
            assert merged.get(fragment.key, fragment.value) == fragment.value, fragment.key
            merged[fragment.key] = fragment.value
    return orjson.dumps(merged, option=orjson.OPT_SORT_KEYS)


def test_every_plugin_of_the_default_profile_at_filter_or_score_signs_pods() -> None:
    framework = build()
    plugins = signing_plugins(framework)
    unsigned = [p.name for p in plugins if not isinstance(p, SignPlugin)]
    assert not unsigned, f"{unsigned} would turn batching off for the default profile"
    names = {p.name for p in plugins}
    # the plugins of the default profile that are at none of these points
    assert set(framework.plugins) - names == {
        "PrioritySort",
        "SchedulingGates",
        "DefaultPreemption",
        "DefaultBinder",
    }
    assert "PodTopologySpread" in names and "NodeDeclaredFeatures" in names and "DynamicResources" in names


def test_the_default_profile_signs_no_pod_as_upstream() -> None:
    # System defaulting gives PodTopologySpread default constraints, so no pod is signable
    assert profile_signature(build(), pod("plain")) is None


def test_a_profile_without_default_spreading_signs_pods_of_one_template_alike() -> None:
    framework = build(
        {
            "profiles": [
                {
                    "schedulerName": "pyscheduler",
                    "pluginConfig": [
                        {"name": "PodTopologySpread", "args": {"defaultingType": "List"}},
                    ],
                }
            ]
        }
    )

    def replica(name: str, **extra: Any) -> Pod:
        spec = {
            "volumes": [
                {"name": f"token-{name}", "projected": {"sources": [{"serviceAccountToken": {"path": "t"}}]}},
                {"name": "config", "configMap": {"name": f"cm-{name}"}},
            ]
        }
        return pod(
            name, spec=spec, labels={"app": "web"}, requests={"cpu": "100m"}, images=["web:1"], **extra
        )

    first = profile_signature(framework, replica("web-1"))
    assert first is not None
    assert orjson.loads(first)[signers.SCHEDULER_NAME] == "pyscheduler"
    assert first == profile_signature(framework, replica("web-2"))
    assert first != profile_signature(framework, replica("web-3", tolerations=[{"operator": "Exists"}]))
    claimed = pod("claimed", spec={"resourceClaims": [{"name": "gpu", "resourceClaimName": "gpu-1"}]})
    assert profile_signature(framework, claimed) is None


# ---------------------------------------------------------------------------- NodeName


def test_node_name() -> None:
    plugin = NodeName()
    assert_alike(plugin, pod("a"), busy())
    assert_apart(plugin, pod("a", node_name="n1"), pod("b", node_name="n2"))
    assert_apart(plugin, pod("a"), pod("b", node_name="n1"))
    assert orjson.loads(sign(plugin, pod("a", node_name="n1"))) == {signers.NODE_NAME: "n1"}


# ---------------------------------------------------------------------------- tolerations


@pytest.mark.parametrize("plugin", [TaintToleration(), NodeUnschedulable()], ids=lambda p: p.name)
def test_tolerations(plugin: Any) -> None:
    t1 = {"key": "a", "operator": "Equal", "value": "1", "effect": "NoSchedule"}
    t2 = {"key": "a", "operator": "Equal", "value": "0", "effect": "NoExecute"}
    t3 = {"key": "b", "operator": "Exists"}
    plain = pod("a", tolerations=[t1, t2, t3])
    # not read: labels, requests, ports, node selector, images, namespace
    assert_alike(
        plugin,
        plain,
        pod(
            "b",
            tolerations=[t1, t2, t3],
            labels={"x": "y"},
            requests={"cpu": "1"},
            host_ports=[(80, "TCP")],
            node_selector={"z": "1"},
            images=["other:2"],
            namespace="ns",
        ),
    )
    # the order of the tolerations does not matter
    assert_alike(plugin, plain, pod("c", tolerations=[t3, t1, t2]))
    assert_alike(plugin, plain, pod("d", tolerations=[t2, t3, t1]))
    # what they say does
    assert_apart(plugin, plain, pod("e", tolerations=[t1, t3]))
    assert_apart(plugin, plain, pod("f", tolerations=[t1, t2, {**t3, "effect": "NoSchedule"}]))
    assert_apart(plugin, plain, pod("g", tolerations=[t1, {**t2, "value": "2"}, t3]))
    assert_apart(plugin, pod("h"), pod("i", tolerations=[{"operator": "Exists"}]))
    fragments, _ = plugin.sign_pod(plain)
    assert [f.key for f in fragments] == [signers.TOLERATIONS]
    # ordered by key, then value (upstream's order)
    assert [(t["key"], t["value"]) for t in fragments[0].value] == [("a", "0"), ("a", "1"), ("b", "")]


def test_taint_toleration_and_node_unschedulable_share_their_fragment() -> None:
    p = pod("a", tolerations=[{"key": "b", "operator": "Exists"}, {"key": "a", "value": "v"}])
    assert TaintToleration().sign_pod(p) == NodeUnschedulable().sign_pod(p)


# ---------------------------------------------------------------------------- NodePorts


def test_node_ports() -> None:
    plugin = NodePorts()
    plain = pod("a", host_ports=[(80, "TCP"), (443, "TCP")])
    assert_alike(plugin, plain, pod("b", host_ports=[(443, "TCP"), (80, "TCP")], labels={"x": "y"}))
    # each number once; as upstream, the numbers only (not the protocol or the host IP)
    assert_alike(plugin, plain, pod("c", host_ports=[(80, "TCP"), (443, "TCP"), (80, "UDP")]))
    assert_alike(plugin, plain, pod("d", host_ports=[(80, "TCP", "10.0.0.1"), (443, "UDP")]))
    assert_apart(plugin, plain, pod("e", host_ports=[(80, "TCP")]))
    assert_apart(plugin, plain, pod("f", host_ports=[(80, "TCP"), (8443, "TCP")]))
    assert_apart(plugin, pod("g"), plain)
    assert orjson.loads(sign(plugin, plain)) == {signers.HOST_PORTS: [80, 443]}


def test_node_ports_include_sidecars() -> None:
    plugin = NodePorts()
    ported = container("side", ports=[{"containerPort": 9, "hostPort": 9}], restartPolicy="Always")
    sidecar = pod("a", init_containers=[ported])
    assert orjson.loads(sign(plugin, sidecar)) == {signers.HOST_PORTS: [9]}
    moved = pod("b", containers=[container("c0", ports=[{"containerPort": 9, "hostPort": 9}])])
    assert_alike(plugin, sidecar, moved)


# ---------------------------------------------------------------------------- NodeAffinity


def requirement(key: str, operator: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": operator, "values": list(values)}


def node_affinity(required: list[dict] | None = None, preferred: list[dict] | None = None) -> dict:
    affinity: dict[str, Any] = {}
    if required is not None:
        affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": required}
    if preferred is not None:
        affinity["preferredDuringSchedulingIgnoredDuringExecution"] = preferred
    return {"nodeAffinity": affinity}


def test_node_affinity_canonical_forms_sign_alike() -> None:
    plugin = NodeAffinity()
    zone = requirement("zone", "In", "a", "b", "c")
    arch = requirement("arch", "NotIn", "arm64")
    by_name = requirement("metadata.name", "In", "n1", "n2")
    ssd = {"weight": 5, "preference": {"matchExpressions": [requirement("disk", "In", "ssd", "nvme")]}}
    big = {"weight": 2, "preference": {"matchExpressions": [requirement("size", "Gt", "4")]}}
    required = [{"matchExpressions": [zone, arch]}, {"matchFields": [by_name]}]
    plain = pod("a", affinity=node_affinity(required, [ssd, big]), node_selector={"x": "1", "y": "2"})
    shuffled = pod(
        "b",
        affinity=node_affinity(
            [
                {"matchFields": [requirement("metadata.name", "In", "n2", "n1")]},
                {"matchExpressions": [arch, requirement("zone", "In", "c", "a", "b")]},
            ],
            [big, {**ssd, "preference": {"matchExpressions": [requirement("disk", "In", "nvme", "ssd")]}}],
        ),
        node_selector={"y": "2", "x": "1"},
        labels={"unrelated": "label"},
        tolerations=[{"operator": "Exists"}],
        requests={"cpu": "2"},
    )
    assert_alike(plugin, plain, shuffled)
    # what the terms say matters
    assert_apart(plugin, plain, pod("c", affinity=node_affinity(required, [ssd])))
    assert_apart(plugin, plain, pod("d", affinity=node_affinity(required, [ssd, {**big, "weight": 3}])))
    assert_apart(plugin, plain, pod("e", affinity=node_affinity(required[:1], [ssd, big])))
    moved = [{"matchExpressions": [zone]}, {"matchExpressions": [arch]}, {"matchFields": [by_name]}]
    assert_apart(plugin, plain, pod("f", affinity=node_affinity(moved, [ssd, big])))
    assert_apart(
        plugin,
        plain,
        pod("g", affinity=node_affinity(required, [ssd, big]), node_selector={"x": "1", "y": "3"}),
    )
    fragments, _ = plugin.sign_pod(plain)
    assert {f.key for f in fragments} == {signers.NODE_AFFINITY, signers.NODE_SELECTOR}


def test_node_affinity_without_affinity() -> None:
    plugin = NodeAffinity()
    plain = pod("a")
    assert orjson.loads(sign(plugin, plain)) == {signers.NODE_AFFINITY: None, signers.NODE_SELECTOR: {}}
    # pod (anti-)affinity is not this plugin's business
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": []}}
    assert_alike(plugin, plain, pod("b", affinity=anti, labels={"app": "x"}))
    assert_apart(plugin, plain, pod("c", node_selector={"zone": "a"}))
    preferred_only = pod("d", affinity=node_affinity(preferred=[{"weight": 1, "preference": {}}]))
    assert_apart(plugin, plain, preferred_only)
    value = orjson.loads(sign(plugin, preferred_only))[signers.NODE_AFFINITY]
    assert value["required"] is None


# ---------------------------------------------------------------------------- resources


@pytest.mark.parametrize("plugin", [Fit(), BalancedAllocation()], ids=lambda p: p.name)
def test_resources(plugin: Any) -> None:
    plain = pod("a", requests={"cpu": "200m", "memory": "100Mi"})
    # not read: labels, tolerations, ports, images, affinity, namespace
    assert_alike(
        plugin,
        plain,
        pod(
            "b",
            requests={"cpu": "200m", "memory": "100Mi"},
            labels={"a": "b"},
            tolerations=[{"operator": "Exists"}],
            host_ports=[(80, "TCP")],
            images=["x:1"],
            namespace="ns",
            affinity=node_affinity([{"matchExpressions": [requirement("z", "In", "a")]}]),
        ),
    )
    # the same requests however they are written or split
    assert_alike(plugin, plain, pod("c", requests={"cpu": "0.2", "memory": f"{100 * 1024 * 1024}"}))
    half = {"resources": {"requests": {"cpu": "100m", "memory": "50Mi"}}}
    assert_alike(plugin, plain, pod("d", containers=[container("x", **half), container("y", **half)]))
    assert_apart(plugin, plain, pod("e", requests={"cpu": "300m", "memory": "100Mi"}))
    assert_apart(plugin, plain, pod("f", requests={"cpu": "200m", "memory": "100Mi", "example.com/gpu": "1"}))
    assert_apart(
        plugin, plain, pod("g", requests={"cpu": "200m", "memory": "100Mi"}, overhead={"cpu": "10m"})
    )
    # equal requests sign alike even where a request-less container adds the scoring defaults
    # (upstream signs the requests alone)
    alone = pod("h", containers=[container("x", resources={"requests": {"cpu": "200m", "memory": "100Mi"}})])
    with_empty = pod(
        "i",
        containers=[
            container("x", resources={"requests": {"cpu": "200m", "memory": "100Mi"}}),
            container("y"),
        ],
    )
    assert alone.requests == with_empty.requests
    assert alone.scoring_requests != with_empty.scoring_requests
    assert_alike(plugin, alone, with_empty)
    # init containers count as they run: the larger of the init and the regular phase
    init = {"resources": {"requests": {"cpu": "100m", "memory": "100Mi"}}}
    assert_alike(
        plugin,
        plain,
        pod("j", requests={"cpu": "200m", "memory": "100Mi"}, init_containers=[container("i", **init)]),
    )
    assert_apart(
        plugin,
        plain,
        pod(
            "k",
            requests={"cpu": "200m", "memory": "100Mi"},
            init_containers=[container("i", resources={"requests": {"cpu": "1"}})],
        ),
    )
    value = orjson.loads(sign(plugin, plain))[signers.RESOURCES]
    assert value["cpu"] == 200 and value["memory"] == 100 * 1024 * 1024


def test_fit_and_balanced_allocation_share_their_fragment() -> None:
    p = pod("a", requests={"cpu": "1", "memory": "1Gi", "example.com/gpu": "2", "hugepages-2Mi": "4Mi"})
    assert Fit().sign_pod(p) == BalancedAllocation().sign_pod(p)
    assert sign(Fit(), p) == sign(BalancedAllocation(), p)


def test_resources_beyond_64_bits_still_encode() -> None:
    # the view bounds each quantity, not their sum over containers
    huge = dataclasses.replace(pod("a"), requests=Resource(memory=2**70, scalar={"example.com/x": -(2**64)}))
    value = orjson.loads(sign(Fit(), huge))[signers.RESOURCES]
    assert value["memory"] == str(2**70)
    assert value["example.com/x"] == str(-(2**64))


# ---------------------------------------------------------------------------- volumes


def volume(name: str, **source: Any) -> dict[str, Any]:
    return {"name": name, **source}


def claim(claim_name: str) -> dict[str, Any]:
    return {"persistentVolumeClaim": {"claimName": claim_name}}


VOLUME_PLUGINS = [
    lambda: VolumeBinding(None, handle()),
    lambda: VolumeZone(None, handle()),
    lambda: VolumeRestrictions(None, handle()),
    lambda: NodeVolumeLimits(None, handle()),
]


@pytest.mark.parametrize(
    "make", VOLUME_PLUGINS, ids=["VolumeBinding", "VolumeZone", "VolumeRestrictions", "NodeVolumeLimits"]
)
def test_volumes(make: Any) -> None:
    plugin = make()
    data = volume("data", **claim("data-0"))
    scratch = volume("scratch", emptyDir={})
    disk = volume("disk", gcePersistentDisk={"pdName": "pd-1", "readOnly": True})
    plain = pod("a", spec={"volumes": [data, scratch, disk]})
    # ConfigMap and Secret volumes, volume names and the volumes' order are not signed
    other = pod(
        "b",
        spec={
            "volumes": [
                volume("cfg", configMap={"name": "settings-b"}),
                {**disk, "name": "renamed-disk"},
                volume("creds", secret={"secretName": "token-b"}),
                {**scratch, "name": "tmp"},
                data,
            ]
        },
        labels={"x": "y"},
        requests={"cpu": "1"},
        images=["other:1"],
    )
    assert_alike(plugin, plain, other)
    # the sources are
    assert_apart(
        plugin, plain, pod("c", spec={"volumes": [volume("data", **claim("data-1")), scratch, disk]})
    )
    assert_apart(plugin, plain, pod("d", spec={"volumes": [data, disk]}))
    assert_apart(
        plugin,
        plain,
        pod("e", spec={"volumes": [data, scratch, {**disk, "gcePersistentDisk": {"pdName": "pd-1"}}]}),
    )
    assert_apart(plugin, plain, pod("f", spec={"volumes": [data, scratch, disk, scratch]}))
    assert_alike(plugin, pod("g"), pod("h", spec={"volumes": [volume("c", configMap={"name": "x"})]}))
    (fragment,), _ = plugin.sign_pod(plain)
    assert fragment.key == signers.VOLUMES
    assert all("name" not in source for source in fragment.value)


def test_the_volume_plugins_share_their_fragment() -> None:
    p = pod(
        "a",
        spec={
            "volumes": [volume("b", **claim("x")), volume("a", emptyDir={}), volume("c", csi={"driver": "d"})]
        },
    )
    answers = {compose(make().sign_pod(p)[0]) for make in VOLUME_PLUGINS}
    assert len(answers) == 1


# ---------------------------------------------------------------------------- DynamicResources


def test_dynamic_resources() -> None:
    plugin = DynamicResources(None, handle())
    assert plugin.sign_pod(pod("a")) == ((), None)
    assert plugin.sign_pod(busy()) == ((), None)
    claimed = pod("b", spec={"resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "gpus"}]})
    status = refusal(plugin, claimed)
    assert status.code == Code.UNSCHEDULABLE
    assert status.message() == "pods with dra resource claims are not signable"


# ---------------------------------------------------------------------------- NodeDeclaredFeatures


def test_node_declared_features() -> None:
    plugin = NodeDeclaredFeatures()
    plain = pod("a")
    assert orjson.loads(sign(plugin, plain)) == {signers.FEATURES: []}
    assert_alike(plugin, plain, busy())
    # host networking alone needs no feature
    assert_alike(plugin, plain, pod("b", spec={"hostNetwork": True}))
    userns = pod("c", spec={"hostNetwork": True, "hostUsers": False})
    assert orjson.loads(sign(plugin, userns)) == {signers.FEATURES: ["UserNamespacesHostNetworkSupport"]}
    rule = {"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": [42]}}
    restart = container("r", restartPolicy="Never", restartPolicyRules=[rule])
    both = pod("d", spec={"hostNetwork": True, "hostUsers": False}, containers=[container("x"), restart])
    assert orjson.loads(sign(plugin, both)) == {
        signers.FEATURES: ["RestartAllContainersOnContainerExits", "UserNamespacesHostNetworkSupport"]
    }
    assert_apart(plugin, userns, both)
    assert_apart(plugin, plain, userns)


# ---------------------------------------------------------------------------- InterPodAffinity


def pod_affinity_term(app: str) -> dict[str, Any]:
    return {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": "kubernetes.io/hostname"}


def test_inter_pod_affinity_signs_labels() -> None:
    plugin = InterPodAffinity(InterPodAffinityArgs(), handle())
    plain = pod("a", labels={"app": "web", "tier": "front"})
    assert_alike(
        plugin,
        plain,
        pod(
            "b",
            labels={"tier": "front", "app": "web"},
            requests={"cpu": "1"},
            tolerations=[{"operator": "Exists"}],
            affinity=node_affinity([{"matchExpressions": [requirement("z", "In", "a")]}]),
        ),
    )
    assert_apart(plugin, plain, pod("c", labels={"app": "web"}))
    assert_apart(plugin, plain, pod("d", labels={"app": "web", "tier": "back"}))
    assert orjson.loads(sign(plugin, plain)) == {signers.LABELS: {"app": "web", "tier": "front"}}


@pytest.mark.parametrize("kind", ["podAffinity", "podAntiAffinity"])
@pytest.mark.parametrize("ignore", [False, True])
def test_inter_pod_affinity_refuses_pods_with_pod_affinity(kind: str, ignore: bool) -> None:
    plugin = InterPodAffinity(InterPodAffinityArgs(ignore_preferred_terms_of_existing_pods=ignore), handle())
    terms = {"requiredDuringSchedulingIgnoredDuringExecution": [pod_affinity_term("web")]}
    status = refusal(plugin, pod("a", affinity={kind: terms}))
    assert status.code == Code.UNSCHEDULABLE
    assert status.message() == "pods with InterPodAffinity are not signable"
    # an empty one counts too, as upstream (a non-nil field)
    refusal(plugin, pod("b", affinity={kind: {}}))


def test_inter_pod_affinity_ignoring_existing_preferred_terms_signs_nothing() -> None:
    plugin = InterPodAffinity(InterPodAffinityArgs(ignore_preferred_terms_of_existing_pods=True), handle())
    assert plugin.sign_pod(pod("a", labels={"app": "web"})) == ((), None)


# ---------------------------------------------------------------------------- PodTopologySpread


SPREAD = {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {}}


def test_pod_topology_spread_with_system_defaults_signs_no_pod() -> None:
    plugin = PodTopologySpread(PodTopologySpreadArgs(), handle())
    status = refusal(plugin, pod("a"))
    assert status.code == Code.UNSCHEDULABLE
    assert status.message() == "pods with default topology constraints are not signable"
    # the pod's own constraints are named first
    status = refusal(plugin, pod("b", spec={"topologySpreadConstraints": [SPREAD]}))
    assert status.message() == "pods with topology constraints are not signable"


def test_pod_topology_spread_without_defaults() -> None:
    plugin = PodTopologySpread(PodTopologySpreadArgs(defaulting_type="List"), handle())
    assert plugin.sign_pod(pod("a")) == ((), None)
    assert plugin.sign_pod(busy()) == ((), None)
    status = refusal(plugin, pod("b", spec={"topologySpreadConstraints": [SPREAD]}))
    assert status.code == Code.UNSCHEDULABLE
    assert status.message() == "pods with topology constraints are not signable"


def test_pod_topology_spread_with_listed_defaults() -> None:
    args = PodTopologySpreadArgs(
        defaulting_type="List", default_constraints=[{**SPREAD, "labelSelector": None}]
    )
    status = refusal(PodTopologySpread(args, handle()), pod("a"))
    assert status.message() == "pods with default topology constraints are not signable"


# ---------------------------------------------------------------------------- ImageLocality


def test_image_locality() -> None:
    plugin = ImageLocality(None, handle())
    plain = pod("a", images=["nginx", "registry.example.com:5000/app:2"])
    # order, duplicates and the implicit :latest do not matter; nor do requests or labels
    assert_alike(
        plugin,
        plain,
        pod("b", images=["registry.example.com:5000/app:2", "nginx:latest", "nginx"], requests={"cpu": "1"}),
    )
    assert_apart(plugin, plain, pod("c", images=["nginx:1.27", "registry.example.com:5000/app:2"]))
    assert_apart(plugin, plain, pod("d", images=["nginx"]))
    # init containers' images count
    with_init = pod(
        "e", images=["nginx"], init_containers=[container("i", image="registry.example.com:5000/app:2")]
    )
    assert_alike(plugin, plain, with_init)
    assert orjson.loads(sign(plugin, plain)) == {
        signers.IMAGE_NAMES: ["nginx:latest", "registry.example.com:5000/app:2"]
    }


# ---------------------------------------------------------------------------- helpers of signers


def test_signer_helpers_remember_only_the_same_pod() -> None:
    a = pod("a", tolerations=[{"key": "x", "operator": "Exists"}])
    b = pod("b", tolerations=[{"key": "y", "operator": "Exists"}])
    assert signers.tolerations(a) is signers.tolerations(a)
    assert signers.tolerations(b)[0]["key"] == "y"
    assert signers.tolerations(a)[0]["key"] == "x"
