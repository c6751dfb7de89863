"""DeviceTaintRules through the local endpoint: with DRADeviceTaintRules the scheduler watches
them and keeps a rule's tainted device from untolerating claims; deleting the rule requeues the
pod; with the gate off (the default) rules are not read."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.features import FeatureGates
from scheduler.testing.dra import device_taint_rule
from simcluster import SimCluster
from tests.support.cluster import eventually, node_of
from tests.support.dra import (
    DRIVER,
    UNSATISFIABLE,
    claim_pod,
    devices_of,
    fleet,
    pending_message,
    template,
)

BROKEN = device_taint_rule("broken-gpu", selector={"driver": DRIVER, "device": "gpu-0"})
RULES_ON = FeatureGates.parse("DRADeviceTaintRules=true")


@pytest.fixture
async def one_gpu() -> Any:
    devices = [{"driver": DRIVER, "count": 1, "namePrefix": "gpu-"}]
    async with SimCluster(node_template=fleet(*devices), kubelet=True, bookmark_interval=0.5) as cluster:
        await cluster.create("resourceclaimtemplates", template("any"))
        await cluster.create("devicetaintrules", BROKEN)
        yield cluster


async def test_a_rules_taint_keeps_the_device_until_the_rule_goes(one_gpu, start_scheduler):
    await start_scheduler(one_gpu, features=RULES_ON)
    await one_gpu.create("pods", claim_pod("p", "any"))
    assert await eventually(lambda: pending_message(one_gpu, "p")) == UNSATISFIABLE
    rules = one_gpu.api.resource("devicetaintrules")
    one_gpu.api.delete(rules, None, "broken-gpu", {})
    await eventually(lambda: node_of(one_gpu, "p") == "gpu-0000", timeout=30)
    assert devices_of(one_gpu, "p") == ["gpu-0"]


async def test_a_toleration_of_the_rules_taint_gets_the_device(one_gpu, start_scheduler):
    tolerating = template("tolerating")
    exactly = tolerating["spec"]["spec"]["devices"]["requests"][0]["exactly"]
    exactly["tolerations"] = [{"key": "example.com/broken", "operator": "Exists", "effect": "NoSchedule"}]
    await one_gpu.create("resourceclaimtemplates", tolerating)
    await start_scheduler(one_gpu, features=RULES_ON)
    await one_gpu.create("pods", claim_pod("p", "tolerating"))
    await eventually(lambda: node_of(one_gpu, "p") == "gpu-0000")
    assert devices_of(one_gpu, "p") == ["gpu-0"]


async def test_without_the_gate_rules_are_not_read(one_gpu, start_scheduler):
    app = await start_scheduler(one_gpu)
    assert "devicetaintrules" not in app.informers.synced()
    await one_gpu.create("pods", claim_pod("p", "any"))
    await eventually(lambda: node_of(one_gpu, "p") == "gpu-0000")
