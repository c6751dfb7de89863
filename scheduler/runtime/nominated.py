"""Nodes seen with the nominated pods a pod must leave room for, kept from one cycle to the next.

A node that holds nominations is filtered twice per pod: once on a copy with the nominated pods
(of equal or higher priority) added, once as it is. While preemptions are pending, every pod
looks at the same few hundred such nodes, and copying each, pod after pod, cost more than the
filters themselves. The copy depends only on the node (its NodeInfo object, unchanged while its
generation is) and on the nominated pods added (the same Pod objects, in order), so it is kept
and given again while both stand. Filters only read what they are shown, so a kept copy answers
as a fresh one would; with a PreFilter extension in play (AddPod changes the cycle state) the
framework copies afresh instead.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from operator import is_

from scheduler.api import Pod
from scheduler.framework import NodeInfo


@dataclass(slots=True)
class _Kept:
    source: NodeInfo
    generation: int
    added: tuple[Pod, ...]
    view: NodeInfo


class NominatedViews:
    """Per node name, the last copy made of it with nominated pods added."""

    def __init__(self) -> None:
        self._kept: dict[str, _Kept] = {}

    def of(self, info: NodeInfo, nominated: Sequence[Pod]) -> NodeInfo:
        """``info`` with ``nominated`` added: the kept copy when it was made of the same."""
        kept = self._kept.get(info.name)
        if (
            kept is not None
            and kept.source is info
            and kept.generation == info.generation
            and len(kept.added) == len(nominated)
            and all(map(is_, kept.added, nominated))
        ):
            return kept.view
        view = info.clone()
        for other in nominated:
            view.add_pod(other)
        self._kept[info.name] = _Kept(info, info.generation, tuple(nominated), view)
        return view

    def keep_only(self, names: Collection[str]) -> None:
        """Forget the copies of nodes that no longer hold nominations (``names`` do)."""
        for name in [n for n in self._kept if n not in names]:
            del self._kept[name]

    def __len__(self) -> int:
        return len(self._kept)
