"""NodeDeclaredFeatures: a pod that needs a node feature fits only nodes declaring it.

Kubelets list what they support in ``node.status.declaredFeatures`` (KEP-5328), so pods that
rely on a newer node capability never land on an older or differently configured node during
a version-skewed rollout. The requirements are inferred from the pod spec, not declared by the
user. Most pods need nothing, so PreFilter answers Skip and Filter never runs for them.

The catalogue mirrors ``k8s.io/component-helpers/nodedeclaredfeatures`` as shipped with v1.36.
Only the two features below can be required at scheduling time; the library's others (the
in-place resize variants such as ``InPlacePodLevelResourcesVerticalScaling``, and
``ExtendWebSocketsToKubelet``) only concern pod updates, which the kubelet and the API server
check, so the scheduler never requires them. No feature has a maximum version yet, so the
scheduler's own version never drops a requirement.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from scheduler.api import Pod
from scheduler.framework import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    Handle,
    NodeInfo,
    NodeLister,
    NodeTable,
    NodeVerdicts,
    PreFilterResult,
    QueueingHint,
    SignFragment,
    Status,
    signers,
)
from scheduler.framework.interface import NODE, POD
from scheduler.plugins import names
from scheduler.plugins.helper import verdicts_from_mask

NAME = names.NODE_DECLARED_FEATURES

ERR_REASON = "node(s) didn't match Pod's required features"

# The container restart rule action that makes the kubelet restart every container of the pod.
RESTART_ALL_CONTAINERS = "RestartAllContainers"

_PRE_FILTER_KEY = "PreFilter" + NAME
# Evicting pods cannot give a node a feature, so preemption is pointless: unresolvable.
_REJECTED = Status.unresolvable(ERR_REASON)


@dataclass(slots=True, frozen=True)
class DeclaredFeature:
    """A node feature by its declared name, and when a pod needs it to be scheduled."""

    name: str
    required_by: Callable[[Pod], bool]


# A feature reading a spec fact not listed in required_features' guard must extend that guard.
FEATURES: tuple[DeclaredFeature, ...] = (
    # A container restart rule with action RestartAllContainers (ContainerRestartRules).
    DeclaredFeature(
        "RestartAllContainersOnContainerExits",
        lambda pod: RESTART_ALL_CONTAINERS in pod.restart_rule_actions,
    ),
    # Host networking inside a user namespace needs runtime support as well as the gate.
    DeclaredFeature(
        "UserNamespacesHostNetworkSupport",
        lambda pod: pod.host_network and pod.host_users is False,
    ),
)

_NOTHING: frozenset[str] = frozenset()


def required_features(pod: Pod) -> frozenset[str]:
    """The declared features a node must list for ``pod`` to run there (usually none).

    Runs for every pod in PreFilter: a pod with none of the spec facts that FEATURES read
    (restart rules, host networking) is answered without consulting the catalogue.
    """
    if not (pod.restart_rule_actions or pod.host_network):
        return _NOTHING
    required = [feature.name for feature in FEATURES if feature.required_by(pod)]
    return frozenset(required) if required else _NOTHING


class NodeDeclaredFeatures:
    name: ClassVar[str] = NAME

    __slots__ = ()

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        """Takes no args."""

    def sign_pod(self, pod: Pod) -> tuple[Sequence[SignFragment], Status | None]:
        """Filtering depends on the features the pod requires: their names, sorted."""
        return (SignFragment(signers.FEATURES, sorted(required_features(pod))),), None

    def events_to_register(self) -> Iterable[ClusterEventWithHint]:
        return (
            # upstream registers Add | UpdateNodeDeclaredFeature; the hint narrows updates to that
            ClusterEventWithHint(
                ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE), self._after_node_change
            ),
            ClusterEventWithHint(ClusterEvent(POD, ActionType.UPDATE), self._after_pod_update),
        )

    @staticmethod
    def _after_node_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
        if old is not None and old.declared_features == new.declared_features:
            return QueueingHint.SKIP
        return QueueingHint.QUEUE

    @staticmethod
    def _after_pod_update(pod: Pod, old: Pod, new: Pod) -> QueueingHint:
        # only the rejected pod's own update can change what it requires
        if new.uid != pod.uid or required_features(old) == required_features(new):
            return QueueingHint.SKIP
        return QueueingHint.QUEUE

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: NodeLister
    ) -> tuple[PreFilterResult | None, Status | None]:
        required = required_features(pod)
        if not required:
            return None, Status.skip()
        state.write(_PRE_FILTER_KEY, required)
        return None, None

    def _required(self, state: CycleState, pod: Pod) -> frozenset[str]:
        required = state.get(_PRE_FILTER_KEY)
        return required_features(pod) if required is None else required

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        required = self._required(state, pod)
        if required and not required <= node_info.node.declared_features:
            return _REJECTED
        return None

    def filter_nodes(
        self, state: CycleState, pod: Pod, table: NodeTable, slots: np.ndarray
    ) -> NodeVerdicts | None:
        required = self._required(state, pod)
        if not required:
            return None
        infos = table.infos
        rejected = np.fromiter(
            (not required <= infos[slot].node.declared_features for slot in slots.tolist()),
            dtype=bool,
            count=len(slots),
        )
        return verdicts_from_mask(rejected, _REJECTED)
