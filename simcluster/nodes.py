"""Simulated nodes: the default fleet for `--nodes N` and the YAML node-template format.

Template format (see nodes-example.yaml): a mapping with `nodeGroups`, or a bare list of
groups; each group has `namePrefix`, `count`, `capacity`, optional `allocatable` (defaults to
capacity), `labels`, `taints`, `zones` (round-robin), `region`, `images`, `unschedulable`,
`ready`, `devices` (DRA devices its simulated drivers publish, see `simcluster.dra_drivers`).
Nodes are named `<namePrefix><index:04d>`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from simcluster.dra_drivers import DeviceSet, parse_devices

Obj = dict[str, Any]

DEFAULT_CAPACITY = {"cpu": "4", "memory": "16Gi", "pods": "110", "ephemeral-storage": "100Gi"}
DEFAULT_ZONES = ("zone-a", "zone-b", "zone-c")
KUBELET_VERSION = "v1.36.0"


@dataclass(slots=True)
class NodeGroup:
    name_prefix: str = "node-"
    count: int = 1
    capacity: dict[str, str] = field(default_factory=lambda: dict(DEFAULT_CAPACITY))
    allocatable: dict[str, str] | None = None
    labels: dict[str, str] = field(default_factory=dict)
    taints: list[Obj] = field(default_factory=list)
    zones: tuple[str, ...] = DEFAULT_ZONES
    region: str = "region-1"
    images: list[Obj] = field(default_factory=list)
    unschedulable: bool = False
    ready: bool = True
    devices: tuple[DeviceSet, ...] = ()


class TemplateError(ValueError):
    """A node template that cannot be used; the message names the group and field."""


def _group(raw: Any, index: int) -> NodeGroup:
    if not isinstance(raw, dict):
        raise TemplateError(f"nodeGroups[{index}]: expected a mapping, got {type(raw).__name__}")
    known = {
        "namePrefix",
        "count",
        "capacity",
        "allocatable",
        "labels",
        "taints",
        "zones",
        "region",
        "images",
        "unschedulable",
        "ready",
        "devices",
    }
    unknown = set(raw) - known
    if unknown:
        raise TemplateError(f"nodeGroups[{index}]: unknown field(s) {', '.join(sorted(unknown))}")
    count = raw.get("count", 1)
    if not isinstance(count, int) or count < 0:
        raise TemplateError(f"nodeGroups[{index}].count: must be a non-negative integer")
    zones = raw.get("zones", list(DEFAULT_ZONES))
    try:
        devices = parse_devices(raw.get("devices"), f"nodeGroups[{index}].devices")
    except ValueError as err:
        raise TemplateError(str(err)) from None
    if isinstance(zones, str):
        zones = [zones]
    return NodeGroup(
        name_prefix=str(raw.get("namePrefix", "node-")),
        count=count,
        capacity={k: str(v) for k, v in (raw.get("capacity") or DEFAULT_CAPACITY).items()},
        allocatable={k: str(v) for k, v in raw["allocatable"].items()} if raw.get("allocatable") else None,
        labels={k: str(v) for k, v in (raw.get("labels") or {}).items()},
        taints=list(raw.get("taints") or []),
        zones=tuple(zones),
        region=str(raw.get("region", "region-1")),
        images=list(raw.get("images") or []),
        unschedulable=bool(raw.get("unschedulable", False)),
        ready=bool(raw.get("ready", True)),
        devices=devices,
    )


def load_template(source: str | Path | Obj | list[Any]) -> list[NodeGroup]:
    """Node groups from a YAML file path or already-parsed data."""
    data: Any = source
    if isinstance(source, str | Path):
        try:
            data = yaml.safe_load(Path(source).read_text())
        except (OSError, yaml.YAMLError) as err:
            raise TemplateError(f"{source}: {err}") from err
    if isinstance(data, dict):
        data = data.get("nodeGroups")
    if not isinstance(data, list):
        raise TemplateError("node template: expected a list of node groups (or a mapping with nodeGroups)")
    return [_group(raw, i) for i, raw in enumerate(data)]


def build_node(group: NodeGroup, index: int, ordinal: int) -> Obj:
    """One Node object as a kubelet would register it (status included: nodes keep it on create)."""
    name = f"{group.name_prefix}{index:04d}"
    zone = group.zones[index % len(group.zones)] if group.zones else None
    labels = {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "topology.kubernetes.io/region": group.region,
        **({"topology.kubernetes.io/zone": zone} if zone else {}),
        **group.labels,
    }
    ready = {
        "type": "Ready",
        "status": "True" if group.ready else "False",
        "reason": "KubeletReady" if group.ready else "KubeletNotReady",
        "message": "kubelet is posting ready status"
        if group.ready
        else "container runtime network not ready",
    }
    pressure = [
        {
            "type": kind,
            "status": "False",
            "reason": f"KubeletHas{reason}",
            "message": f"kubelet has {message}",
        }
        for kind, reason, message in (
            ("MemoryPressure", "SufficientMemory", "sufficient memory available"),
            ("DiskPressure", "NoDiskPressure", "no disk pressure"),
            ("PIDPressure", "SufficientPID", "sufficient PID available"),
        )
    ]
    spec: Obj = {}
    taints = list(group.taints)
    if not group.ready:
        taints.append({"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"})
    if group.unschedulable:
        spec["unschedulable"] = True
        taints.append({"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"})
    if taints:
        spec["taints"] = taints
    status: Obj = {
        "capacity": dict(group.capacity),
        "allocatable": dict(group.allocatable or group.capacity),
        "conditions": [*pressure, ready],
        "addresses": [
            {"type": "InternalIP", "address": f"10.0.{ordinal // 250}.{ordinal % 250 + 1}"},
            {"type": "Hostname", "address": name},
        ],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
        "nodeInfo": {
            "machineID": f"{ordinal:032x}",
            "systemUUID": f"{ordinal:08x}-0000-0000-0000-000000000000",
            "bootID": f"{ordinal:08x}-1111-1111-1111-111111111111",
            "kernelVersion": "6.8.0-sim",
            "osImage": "pyscheduler simulated node",
            "containerRuntimeVersion": "containerd://2.1.0",
            "kubeletVersion": KUBELET_VERSION,
            "kubeProxyVersion": "",
            "operatingSystem": "linux",
            "architecture": "amd64",
        },
    }
    if group.images:
        status["images"] = list(group.images)
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": spec,
        "status": status,
    }


def build_fleet(
    count: int = 0, template: str | Path | Obj | list[Any] | None = None
) -> tuple[list[Obj], dict[str, tuple[DeviceSet, ...]]]:
    """The nodes, and the DRA devices of the groups that have any (by namePrefix: a node the API
    registers later under such a name gets them too)."""
    groups = load_template(template) if template is not None else [NodeGroup(count=count)]
    nodes = []
    devices: dict[str, tuple[DeviceSet, ...]] = {}
    ordinal = 0
    for group in groups:
        if group.devices:
            devices[group.name_prefix] = group.devices
        for index in range(group.count):
            nodes.append(build_node(group, index, ordinal))
            ordinal += 1
    return nodes, devices


def build_nodes(count: int = 0, template: str | Path | Obj | list[Any] | None = None) -> list[Obj]:
    return build_fleet(count, template)[0]
