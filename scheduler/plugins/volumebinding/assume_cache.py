"""The informer's objects of one kind with this scheduler's own, not yet confirmed, writes on top.

Reserve assumes a PV's new claimRef (or a PVC's selected node) here, so the next pod's cycle
already sees that PV as taken; the assumption lasts until the informer delivers a newer version
of the object (our write, or anyone's) or Unreserve restores it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from scheduler.framework import ObjectLister
from scheduler.plugins.volumebinding.storage import Obj, key_of, resource_version


@dataclass(slots=True)
class _Assumed:
    base_version: int  # resourceVersion of the informer's object the assumption was made on
    obj: Obj


class AssumeCache:
    __slots__ = ("_assumed", "_lister")

    def __init__(self, lister: Callable[[], ObjectLister]) -> None:
        self._lister = lister  # looked up lazily: the app fills the listers after building plugins
        self._assumed: dict[str, _Assumed] = {}

    def _overlay(self, key: str, latest: Obj | None) -> Obj | None:
        assumed = self._assumed.get(key)
        if assumed is None:
            return latest
        if latest is None or resource_version(latest) != assumed.base_version:
            del self._assumed[key]  # the informer moved on: its object is the truth now
            return latest
        return assumed.obj

    def get(self, key: str) -> Obj | None:
        return self._overlay(key, self._lister().get(key))

    def get_api(self, key: str) -> Obj | None:
        """The informer's object, ignoring assumptions."""
        return self._lister().get(key)

    def assume(self, obj: Obj) -> None:
        """Lay ``obj`` over the informer's version of it; KeyError when the informer has none."""
        key = key_of(obj)
        latest = self._lister().get(key)
        if latest is None:
            raise KeyError(f"{key} is not in the informer's cache")
        self._assumed[key] = _Assumed(resource_version(latest), obj)

    def restore(self, key: str, assumed: Obj | None = None) -> None:
        """Drop the assumption on ``key``; with ``assumed``, only if it is still that very object."""
        current = self._assumed.get(key)
        if current is not None and (assumed is None or current.obj is assumed):
            del self._assumed[key]

    def is_assumed(self, key: str) -> bool:
        return key in self._assumed


__all__ = ["AssumeCache"]
