"""Replay kube-scheduler v1.36.2's recorded decisions against pyscheduler and compare.

    python -m bench.parity [--corpus tests/parity/corpus.json] [--scenario NAME]

The corpus (see its ``about``) holds small clusters and, for each pod created in order, either
the nodes kube-scheduler could have chosen (every node sharing its top final score) or the exact
PodScheduled message, with its per-plugin weighted scores. Each scenario is replayed as it was
recorded: a fresh local API endpoint, the nodes, the background pods (already bound), the real
scheduler app with the corpus's profile, then each pod in turn, waiting for its outcome. In
sequential scenarios a pod that landed elsewhere than kube-scheduler's node is moved there
(deleted, re-created bound to it) so every later pod sees the cluster kube-scheduler saw.

Prints ``agreement N/M`` and, for each miss, our outcome, kube's acceptable set and the per-plugin
score differences. tests/parity runs the same replay and requires every pod to agree.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import copy
import logging
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import yaml

from scheduler.app import SchedulerApp
from scheduler.config import parse_config
from scheduler.serving.options import ServingOptions
from scheduler.testing.score_log import score_records_to
from simcluster import SimCluster

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "parity" / "corpus.json"
NAMESPACE = "parity"
PROFILE = "pyscheduler"
OUTCOME_TIMEOUT = 20.0
# node -> plugin -> weighted score, with the sum under "final"
Scores = dict[str, dict[str, int]]


@dataclass(slots=True)
class Outcome:
    scenario: str
    pod: str
    expect: dict[str, Any]
    node: str = ""  # where we bound it, or ""
    message: str = ""  # our PodScheduled message when we did not bind it
    ours: Scores = field(default_factory=dict)
    kube: Scores = field(default_factory=dict)

    @property
    def agrees(self) -> bool:
        if "unschedulable" in self.expect:
            return not self.node and self.message == self.expect["unschedulable"]
        return self.node in self.expect["acceptable"]

    def describe(self) -> str:
        ours = f"bound to {self.node}" if self.node else f"unschedulable: {self.message!r}"
        if "unschedulable" in self.expect:
            kube = f"unschedulable: {self.expect['unschedulable']!r}"
        else:
            kube = f"one of {sorted(self.expect['acceptable'])}"
        lines = [f"{self.scenario}/{self.pod}: ours {ours}; kube-scheduler {kube}"]
        lines.extend(f"    {line}" for line in score_differences(self.ours, self.kube))
        return "\n".join(lines)


def score_differences(ours: Scores, kube: Scores) -> list[str]:
    """One line per node whose scores differ: ``node: Plugin ours/kube, ...``."""
    lines = []
    for node in sorted(set(ours) | set(kube)):
        mine, theirs = ours.get(node, {}), kube.get(node, {})
        differing = [
            f"{plugin} {mine.get(plugin, '-')}/{theirs.get(plugin, '-')}"
            for plugin in sorted(set(mine) | set(theirs), key=lambda p: (p == "final", p))
            if mine.get(plugin) != theirs.get(plugin)
        ]
        if differing:
            lines.append(f"{node}: " + ", ".join(differing) + "  (ours/kube)")
    return lines


class ScoreLog(logging.Handler):
    """Collects the framework's -v=10 score records: the last scoring round of each pod."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.rounds: dict[str, Scores] = {}
        self._finished: set[str] = set()

    def emit(self, record: logging.LogRecord) -> None:
        pod = getattr(record, "pod", None)
        if pod is None:
            return
        plugin, node, score = record.plugin, record.node, record.score  # type: ignore[attr-defined]
        if plugin and pod in self._finished:  # a new round begins
            self._finished.discard(pod)
            self.rounds[pod] = {}
        self.rounds.setdefault(pod, {}).setdefault(node, {})[plugin or "final"] = score
        if not plugin:
            self._finished.add(pod)


def scores_logged() -> contextlib.AbstractContextManager[ScoreLog]:
    """Turn on the framework's score records (verbosity 10) for the duration."""
    return score_records_to(ScoreLog())


def load_corpus(path: Path = CORPUS) -> dict[str, Any]:
    return orjson.loads(path.read_bytes())


def scheduler_config(corpus: dict[str, Any], kubeconfig: Path) -> Any:
    text = corpus["config"].replace("<kubeconfig>", str(kubeconfig)).replace("<profile name>", PROFILE)
    return parse_config(yaml.safe_load(text))


async def eventually(predicate: Callable[[], Any], what: str, timeout: float = OUTCOME_TIMEOUT) -> Any:
    deadline = time.monotonic() + timeout
    while not (value := predicate()):
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not within {timeout:.0f}s")
        await asyncio.sleep(0.005)
    return value


class Replay:
    """One scenario against a fresh endpoint and scheduler."""

    def __init__(self, corpus: dict[str, Any], scenario: dict[str, Any], scores: ScoreLog) -> None:
        self.corpus = corpus
        self.scenario = scenario
        self.scores = scores
        self.sim: SimCluster
        self.app: SchedulerApp

    async def run(self, workdir: Path) -> list[Outcome]:
        async with SimCluster(nodes=0, kubelet=False, controllers=False) as sim:
            self.sim = sim
            await sim.create("namespaces", {"metadata": {"name": NAMESPACE}})
            for node in self.scenario["nodes"]:
                await sim.create("nodes", node)
            for pod in self.scenario["background"]:
                await sim.create("pods", pod, namespace=NAMESPACE)
            config = scheduler_config(self.corpus, sim.write_kubeconfig(workdir / "kubeconfig"))
            self.app = SchedulerApp(config, serving=ServingOptions(bind_address="127.0.0.1", port=0))
            task = asyncio.create_task(self.app.run())
            try:
                await eventually(self.app.ready, "informers synced")
                return [await self._place(entry) for entry in self.scenario["pods"]]
            finally:
                self.app.shutting_down.set()
                with contextlib.suppress(asyncio.CancelledError):
                    await asyncio.wait_for(task, 15)

    def _stored(self, name: str) -> dict[str, Any] | None:
        return self.sim.store.get("pods", NAMESPACE, name)

    async def _place(self, entry: dict[str, Any]) -> Outcome:
        manifest = copy.deepcopy(entry["pod"])
        manifest["spec"]["schedulerName"] = PROFILE
        name = manifest["metadata"]["name"]
        await self.sim.create("pods", manifest, namespace=NAMESPACE)
        decided = await eventually(lambda: _decision(self._stored(name)), f"an outcome for pod {name}")
        node, message = decided
        outcome = Outcome(
            self.scenario["name"],
            name,
            entry["expect"],
            node=node,
            message=message,
            ours=self.scores.rounds.pop(f"{NAMESPACE}/{name}", {}),
            kube=entry.get("kube_scores") or {},
        )
        expected_node = entry["expect"].get("node", "")
        if self.scenario["independent_probes"]:
            await self._delete(name)
        elif node != expected_node:
            await self._delete(name)
            if expected_node:
                manifest["spec"]["nodeName"] = expected_node
                await self.sim.create("pods", manifest, namespace=NAMESPACE)
                await eventually(lambda: self._cached_on(name, expected_node), f"{name} on {expected_node}")
        return outcome

    async def _delete(self, name: str) -> None:
        uid = self._stored(name)["metadata"]["uid"]  # type: ignore[index]
        self.sim.api.delete(self.sim.api.resource("pods"), NAMESPACE, name, {"gracePeriodSeconds": 0})
        await eventually(lambda: self._forgotten(uid), f"pod {name} gone from the scheduler")

    def _forgotten(self, uid: str) -> bool:
        app = self.app
        on_a_node = any(uid in info.pods for info in app.cache.snapshot().node_infos())
        return not on_a_node and not app.queue.has(uid) and not app.cache.is_assumed(uid)

    def _cached_on(self, name: str, node: str) -> bool:
        info = self.app.cache.get_node_info(node)
        return info is not None and any(pod.name == name for pod in info.pods.values())


def _decision(pod: dict[str, Any] | None) -> tuple[str, str] | None:
    """(node, "") once bound, ("", message) once reported unschedulable, else None."""
    if pod is None:
        return None
    node = (pod.get("spec") or {}).get("nodeName")
    if node:
        return node, ""
    for condition in (pod.get("status") or {}).get("conditions") or ():
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
            return "", condition.get("message", "")
    return None


async def replay(corpus: dict[str, Any], only: str | None = None) -> list[Outcome]:
    outcomes: list[Outcome] = []
    with scores_logged() as scores, tempfile.TemporaryDirectory() as workdir:
        for scenario in corpus["scenarios"]:
            if only is None or scenario["name"] == only:
                outcomes.extend(await Replay(corpus, scenario, scores).run(Path(workdir)))
    return outcomes


def summary(outcomes: list[Outcome]) -> str:
    agreed = sum(outcome.agrees for outcome in outcomes)
    lines = [f"agreement {agreed}/{len(outcomes)}"]
    lines.extend(outcome.describe() for outcome in outcomes if not outcome.agrees)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.parity", description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--scenario", help="replay only this scenario")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    outcomes = asyncio.run(replay(load_corpus(args.corpus), args.scenario))
    print(summary(outcomes))
    return 0 if all(outcome.agrees for outcome in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
