"""The PVs of each StorageClass, with the local ones indexed by the host they are on, kept from
one pod to the next.

Filter looks for a matching PV on every node it checks; scanning every PV of the class there made
WaitForFirstConsumer pods cost pods x nodes x PVs (local volumes: one or two per node), and
listing every PV once per pod cost pods x PVs. A PV whose required node affinity needs
``kubernetes.io/hostname In [...]`` in every term can only fit a node with one of those hostnames,
so a node is shown those PVs plus the ones not pinned so, by name: what ``find_matching_volume``
picks from them is what it would pick from the whole class (the others fail its node-affinity
check; upstream walks the class's PVs in its cache's map order, so any fixed order is one it may
take). The index follows the PV lister's changes key by key (`RevisionedLister`), rebuilt only
when the lister cannot say what changed; each pod's view reads the PVs through the assume cache,
so a PV this scheduler just assumed bound is seen as such.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from scheduler.framework import ObjectLister, RevisionedLister
from scheduler.plugins.volumebinding.storage import IdentityMemo, Obj, name_of, spec, volume_class

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


class ClassVolumes:
    """The names of one class's PVs: the ones each hostname pins, and the ones pinned nowhere."""

    __slots__ = ("_by_host", "_count", "_sorted_unpinned", "_unpinned")

    def __init__(self) -> None:
        self._by_host: dict[str, set[str]] = {}
        self._unpinned: set[str] = set()
        self._sorted_unpinned: list[str] | None = []
        self._count = 0  # PVs of the class (one pinned to no hostname is on no list)

    def add(self, name: str, hosts: frozenset[str] | None) -> None:
        self._count += 1
        if hosts is None:
            self._unpinned.add(name)
            self._sorted_unpinned = None
        else:
            for host in hosts:
                self._by_host.setdefault(host, set()).add(name)

    def remove(self, name: str, hosts: frozenset[str] | None) -> None:
        self._count -= 1
        if hosts is None:
            self._unpinned.discard(name)
            self._sorted_unpinned = None
            return
        for host in hosts:
            names = self._by_host.get(host)
            if names is not None:
                names.discard(name)
                if not names:
                    del self._by_host[host]

    def for_node(self, node_labels: Mapping[str, str]) -> list[str]:
        """The names of the PVs that may fit a node with these labels, sorted."""
        if self._sorted_unpinned is None:
            self._sorted_unpinned = sorted(self._unpinned)
        host = node_labels.get(HOSTNAME)
        pinned = self._by_host.get(host) if isinstance(host, str) else None
        if not pinned:
            return self._sorted_unpinned
        return sorted([*pinned, *self._sorted_unpinned])

    def __bool__(self) -> bool:
        return self._count > 0


class VolumeIndex:
    """Every PV of the lister by StorageClass, kept up to date from the lister's changes."""

    __slots__ = ("_classes", "_indexed", "_lister", "_revision")

    def __init__(self, lister: Callable[[], ObjectLister]) -> None:
        self._lister = lister  # looked up lazily: the app fills the listers after building plugins
        self._classes: dict[str, ClassVolumes] = {}
        self._indexed: dict[str, tuple[str, frozenset[str] | None]] = {}  # name -> (class, hosts)
        self._revision: int | None = None

    def of_class(self, storage_class: str) -> ClassVolumes | None:
        """The class's PVs as the lister holds them now."""
        self._refresh()
        return self._classes.get(storage_class)

    def _refresh(self) -> None:
        lister = self._lister()
        if not isinstance(lister, RevisionedLister):
            self._rebuild(lister)
            return
        revision = lister.revision
        if revision == self._revision:
            return
        changed = lister.changed_since(self._revision) if self._revision is not None else None
        if changed is None:
            self._rebuild(lister)
        else:
            for name in changed:
                self._update(name, lister.get(name))
        self._revision = revision

    def _rebuild(self, lister: ObjectLister) -> None:
        self._classes, self._indexed = {}, {}
        for pv in lister.list():
            self._update(name_of(pv), pv)

    def _update(self, name: str, pv: Obj | None) -> None:
        old = self._indexed.pop(name, None)
        if old is not None:
            volumes = self._classes[old[0]]
            volumes.remove(name, old[1])
            if not volumes:
                del self._classes[old[0]]
        if pv is None:
            return
        entry = (volume_class(pv), pinned_hostnames(pv))
        self._indexed[name] = entry
        self._classes.setdefault(entry[0], ClassVolumes()).add(name, entry[1])


class CandidateVolumes:
    """One pod's view of a class's PVs: each read through ``read`` (the assume cache), so the
    scheduler's own assumptions are seen."""

    __slots__ = ("_read", "_volumes")

    def __init__(self, volumes: ClassVolumes, read: Callable[[str], Obj | None]) -> None:
        self._volumes, self._read = volumes, read

    def for_node(self, node_labels: Mapping[str, str]) -> list[Obj]:
        """The PVs that may fit a node with these labels, by name."""
        read = self._read
        return [pv for name in self._volumes.for_node(node_labels) if (pv := read(name)) is not None]
