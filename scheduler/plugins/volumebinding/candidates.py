"""A StorageClass's candidate PVs for one pod, with the local ones indexed by the host they are on.

Filter looks for a matching PV on every node it checks; scanning every PV of the class there made
WaitForFirstConsumer pods cost pods x nodes x PVs (local volumes: one or two per node). A PV
whose required node affinity needs ``kubernetes.io/hostname In [...]`` in every term can only
fit a node with one of those hostnames, so a node is shown those PVs plus the ones not pinned so,
in the class list's order: what ``find_matching_volume`` picks from them is what it would pick
from the whole list (the others fail its node-affinity check).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from scheduler.plugins.volumebinding.storage import IdentityMemo, Obj, spec

HOSTNAME = "kubernetes.io/hostname"


def pinned_hostnames(pv: Obj) -> frozenset[str] | None:
    """The hostnames a PV's required node affinity limits it to; None when it is not so limited
    (no affinity, or a term without a ``kubernetes.io/hostname In`` requirement)."""
    required = (spec(pv).get("nodeAffinity") or {}).get("required")
    if not isinstance(required, Mapping):
        return None
    return _PINNED.get(required)


def _required_hostnames(required: Mapping[str, Any]) -> frozenset[str] | None:
    terms = required.get("nodeSelectorTerms")
    if not isinstance(terms, list) or not terms:
        return None
    hosts: set[str] = set()
    for term in terms:
        term_hosts = _term_hostnames(term)
        if term_hosts is None:
            return None
        hosts |= term_hosts
    return frozenset(hosts)


def _term_hostnames(term: Any) -> set[str] | None:
    """The hostnames one term needs (a term ANDs its requirements: one ``In`` on the hostname
    is enough to bound it); None when it has no such requirement."""
    expressions = term.get("matchExpressions") if isinstance(term, Mapping) else None
    for expression in expressions if isinstance(expressions, list) else ():
        if not isinstance(expression, Mapping):
            continue
        values = expression.get("values")
        if (
            expression.get("key") == HOSTNAME
            and expression.get("operator") == "In"
            and isinstance(values, list)
            and all(isinstance(value, str) for value in values)
        ):
            return set(values)
    return None


_PINNED: IdentityMemo[frozenset[str] | None] = IdentityMemo(_required_hostnames)


class CandidateVolumes:
    """One class's PVs (in the order listed), and which of them each hostname may use."""

    __slots__ = ("_by_host", "_unpinned", "volumes")

    def __init__(self) -> None:
        self.volumes: list[Obj] = []
        self._by_host: dict[str, list[int]] = {}  # hostname -> positions in ``volumes``
        self._unpinned: list[int] = []

    def append(self, pv: Obj) -> None:
        position = len(self.volumes)
        self.volumes.append(pv)
        hosts = pinned_hostnames(pv)
        if hosts is None:
            self._unpinned.append(position)
        else:
            for host in hosts:
                self._by_host.setdefault(host, []).append(position)

    def for_node(self, node_labels: Mapping[str, str]) -> Sequence[Obj]:
        """The PVs that may fit a node with these labels, in list order."""
        if not self._by_host:
            return self.volumes
        host = node_labels.get(HOSTNAME)
        pinned = self._by_host.get(host, []) if isinstance(host, str) else []
        if not pinned:
            return [self.volumes[i] for i in self._unpinned]
        return [self.volumes[i] for i in sorted(pinned + self._unpinned)]

    def __len__(self) -> int:
        return len(self.volumes)
