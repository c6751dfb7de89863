"""`pyscheduler snapshot`: every kind scheduling reads round-trips through a file into a new
local endpoint; kinds a cluster does not serve are skipped with one line each."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from scheduler.simulate.snapshot import parse_snapshot, take_snapshot
from simcluster import SimCluster
from tests.support.simulate import (
    populate,
    snapshot_of,
)

ROUND_TRIP: dict[str, list[dict[str, Any]]] = {
    "namespaces": [{"metadata": {"name": "team", "labels": {"tier": "gold"}}}],
    "persistentvolumes": [
        {
            "metadata": {"name": "pv-1"},
            "spec": {
                "capacity": {"storage": "1Gi"},
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": "slow",
                "local": {"path": "/mnt/pv-1"},
                "nodeAffinity": {
                    "required": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {"key": "kubernetes.io/hostname", "operator": "In", "values": ["n-a"]}
                                ]
                            }
                        ]
                    }
                },
            },
        }
    ],
    "storageclasses": [
        {
            "metadata": {"name": "slow"},
            "provisioner": "kubernetes.io/no-provisioner",
            "volumeBindingMode": "WaitForFirstConsumer",
        }
    ],
    "persistentvolumeclaims": [
        {
            "metadata": {"name": "data", "namespace": "team"},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": "slow",
                "resources": {"requests": {"storage": "1Gi"}},
            },
        }
    ],
    "csinodes": [
        {"metadata": {"name": "n-a"}, "spec": {"drivers": [{"name": "csi.example.com", "nodeID": "n-a"}]}}
    ],
    "poddisruptionbudgets": [
        {
            "metadata": {"name": "pdb", "namespace": "team"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "x"}}},
        }
    ],
    "priorityclasses": [{"metadata": {"name": "high"}, "value": 1000}],
    "deviceclasses": [
        {"metadata": {"name": "gpu"}, "spec": {"selectors": [{"cel": {"expression": "true"}}]}}
    ],
    "resourceslices": [
        {
            "metadata": {"name": "n-a-gpu"},
            "spec": {
                "driver": "gpu.example.com",
                "nodeName": "n-a",
                "pool": {"name": "n-a", "generation": 1, "resourceSliceCount": 1},
                "devices": [{"name": "gpu-0"}],
            },
        }
    ],
    "resourceclaims": [
        {
            "metadata": {"name": "claim", "namespace": "team"},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}},
        }
    ],
    "resourceclaimtemplates": [
        {
            "metadata": {"name": "tmpl", "namespace": "team"},
            "spec": {
                "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}}
            },
        }
    ],
}


def comparable(obj: dict[str, Any]) -> dict[str, Any]:
    meta = {k: v for k, v in obj["metadata"].items() if k not in ("resourceVersion", "generation")}
    return {**obj, "metadata": meta}


async def test_a_snapshot_round_trips_through_a_sim_cluster(tmp_path: Path) -> None:
    async with SimCluster(nodes=0, kubelet=False, controllers=False) as first:
        await populate(first)
        for resource, objects in ROUND_TRIP.items():
            for obj in objects:
                await first.create(resource, obj)
        path = await snapshot_of(first, tmp_path)
        original = {
            name: [comparable(o) for o in first.store.list(name)] for name in [*ROUND_TRIP, "nodes", "pods"]
        }
    objects = parse_snapshot(json.loads(path.read_text()), str(path))
    assert {name for name, items in objects.items() if items} == set(original)
    async with SimCluster(nodes=0, kubelet=False, controllers=False) as second:
        assert second.load(objects) == []
        restored = {name: [comparable(o) for o in second.store.list(name)] for name in original}
    assert restored == original
    assert {p["spec"]["nodeName"] for p in restored["pods"]} == {"n-a", "n-c", "n-d"}


class NoDra:
    """A cluster without resource.k8s.io: every DRA collection answers 404."""

    def __init__(self, client: Any) -> None:
        self.client = client

    async def request(self, method: str, path: str, body: Any = None, **kwargs: Any) -> Any:
        from scheduler.framework.interface import ApiResponse

        if path.startswith("/apis/resource.k8s.io/"):
            return ApiResponse(404, {"kind": "Status", "code": 404})
        return await self.client.request(method, path, body, **kwargs)


async def test_kinds_the_cluster_does_not_serve_are_skipped_with_one_line_each(tmp_path: Path) -> None:
    from scheduler.client.config import load_client_config
    from scheduler.client.rest import KubeClient

    async with SimCluster(nodes=2, kubelet=False, controllers=False) as sim:
        config = await load_client_config(str(sim.write_kubeconfig(tmp_path / "kubeconfig")))
        async with KubeClient(config) as client:
            snapshot, skipped = await take_snapshot(NoDra(client), config.server)
    assert sorted(skipped) == sorted(
        [
            *(
                f"{name} (resource.k8s.io/v1): not served by the cluster, skipped"
                for name in ("deviceclasses", "resourceslices", "resourceclaims", "resourceclaimtemplates")
            ),
            "devicetaintrules (resource.k8s.io/v1beta2): not served by the cluster, skipped",
        ]
    )
    assert snapshot["skipped"] == skipped
    assert len(snapshot["objects"]["nodes"]) == 2 and "deviceclasses" not in snapshot["objects"]
