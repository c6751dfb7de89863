"""`--html`: the report renders in a real headless Chromium and shows the numbers.

The numbers in the page's text (formatted as "2000m", "100%") exist only once its script ran:
the embedded data holds plain integers. Chromium comes from Debian's packages (`make tools`);
where `make tools` could install it (CI: root with apt-get, or $CI set) its absence fails.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from scheduler.testing.builders import node_dict, pod_dict
from tests.support.simulate import node, pod, run_cli

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CI_LIKE = bool(os.environ.get("CI")) or (os.geteuid() == 0 and shutil.which("apt-get") is not None)


def dump_dom(page: Path) -> str:
    if CHROMIUM is None:
        if CI_LIKE:
            pytest.fail("chromium is missing: `make tools` installs it from Debian's packages")
        pytest.skip("chromium is not installed (`make tools` installs it where apt-get may, as root)")
    result = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", page.as_uri()],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


def test_the_html_report_renders_placements_utilization_and_reasons(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    snapshot = tmp_path / "cluster.json"
    objects = {"nodes": [node("n-a", "2", memory="4Gi"), node("n-b", "4", memory="8Gi")]}
    snapshot.write_text(json.dumps({"kind": "ClusterSnapshot", "formatVersion": 1, "objects": objects}))
    manifests = tmp_path / "add.yaml"
    manifests.write_text(yaml.safe_dump_all([pod("small-1", "1500m", "1Gi"), pod("huge-1", "64")]))
    page = tmp_path / "report.html"
    code, _, err = run_cli(
        capsys, "simulate", "--snapshot", str(snapshot), "--add", str(manifests), "--html", str(page)
    )
    assert code == 0, err
    source = page.read_text()
    assert not re.search(r"(src|href)=\"?(https?:)?//", source)  # self-contained: no external URL

    dom = dump_dom(page)
    assert 'data-rendered="true"' in dom
    assert re.search(r'<p id="summary">1 of 2 added pods scheduled, 1 pending</p>', dom)
    placed = re.search(r"<td>default/small-1</td><td>(n-[ab])</td>", dom)
    assert placed is not None
    target = placed.group(1)
    allocatable = {"n-a": 2000, "n-b": 4000}[target]
    share = round(100 * 1500 / allocatable)
    assert f"cpu 0m → 1500m / {allocatable}m (0% → {share}%)" in dom
    other = "n-b" if target == "n-a" else "n-a"
    assert f"cpu 0m → 0m / { ({'n-a': 2000, 'n-b': 4000}[other]) }m (0% → 0%)" in dom
    memory = "4Gi" if target == "n-a" else "8Gi"
    assert f"memory 0 → 1Gi / {memory}" in dom
    assert dom.count("<svg") == 2
    pending = re.search(
        r'<li class="pending-pod"><b>default/huge-1</b> \(Pod default/huge-1\): Unschedulable: ([^<]*)', dom
    )
    assert pending is not None
    assert pending.group(1).startswith("0/2 nodes are available: 2 Insufficient cpu.")
    free = 4000 - (1500 if target == "n-b" else 0)
    shown = f"{free // 1000}" if free % 1000 == 0 else f"{free}m"
    assert f'<ul class="suggestions"><li>suggestion: fits 1 node(s) with cpu &lt;= {shown}</li></ul>' in dom


def test_the_html_report_shows_the_what_ifs_per_node_and_per_zone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A drain, a removal and --fit's nodes: each node marked, each zone before and after."""
    zone = "topology.kubernetes.io/zone"
    owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": "rs", "controller": True}
    pods = [pod_dict(f"web-{i}", node_name="n-a", requests={"cpu": "1"}) for i in range(2)]
    for each in pods:
        each["metadata"]["ownerReferences"] = [owner]
        each["status"] = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
    objects = {
        "nodes": [
            node_dict("n-a", cpu="2", labels={zone: "east"}),
            node_dict("n-b", cpu="1", labels={zone: "west"}),
            node_dict("n-c", cpu="1", labels={zone: "west"}),
        ],
        "pods": pods,
        "replicasets": [
            {"metadata": {"name": "web", "namespace": "default", "uid": "rs"}, "spec": {"replicas": 2}}
        ],
    }
    snapshot = tmp_path / "cluster.json"
    snapshot.write_text(json.dumps({"kind": "ClusterSnapshot", "formatVersion": 1, "objects": objects}))
    page = tmp_path / "report.html"
    args = ["--snapshot", str(snapshot), "--drain", "n-a", "--remove-node", "n-b", "--fit", "--like", "n-c"]
    code, _, err = run_cli(capsys, "simulate", *args, "--html", str(page))
    assert code == 0, err

    dom = dump_dom(page)
    assert 'data-rendered="true"' in dom
    assert '<li class="removed-node">removed node n-b</li>' in dom
    assert '<li class="drained-node">drained node n-a</li>' in dom
    assert (
        '<li class="eviction replaced">default/web-0 on n-a: evicted, its controller makes a new one</li>'
        in dom
    )
    # n-c takes one replica; the other needs one more node like n-c
    assert "fit: 1 node(s) like n-c place all 1 pending pod(s); tried 1: 0 pending" in dom
    assert re.search(r'<div class="node drained"><h3>n-a<span class="state">zone east, drained</span>', dom)
    assert re.search(r'<div class="node removed"><h3>n-b<span class="state">zone west, removed</span>', dom)
    assert re.search(r'<div class="node added"><h3>n-c-fit-1<span class="state">zone west, added</span>', dom)
    assert (
        '<tr class="zone"><td>east</td><td>1 → 1</td><td>2000m / 2000m (100%) → 0m / 2000m (0%)</td>' in dom
    )
    assert (
        '<tr class="zone"><td>west</td><td>2 → 2</td><td>0m / 2000m (0%) → 2000m / 2000m (100%)</td>' in dom
    )
