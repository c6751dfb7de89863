"""Gangs in the queue: the members of a pod group scheduled all or nothing wait and move as one.

A member fails for its own reasons (no node passed the filters for it) or for its gang's (the
gang plugin rejected it because a sibling failed: Coscheduling's PostFilter or Unreserve, the
gang's Permit timeout, a pod-group cycle that could not place the whole group). What may help the
gang is what may help any member's own reasons, so the queue keeps each member's latest rejection
here, and a rejection by the gang plugin alone does not erase the member's own reasons: when the
member that hit the real obstacle is tried again and then released because a sibling gave up its
node, the gang still waits for that obstacle to go, not for a gang event that never comes.
"""

from __future__ import annotations

from dataclasses import dataclass

from scheduler.api import Pod
from scheduler.framework import QueuedPodInfo


@dataclass(frozen=True, slots=True)
class Gang:
    plugin: str  # the gang plugin: a rejection by it alone is the gang's, not the member's
    key: str  # unique among the gangs of every plugin


@dataclass(frozen=True, slots=True)
class Rejection:
    """What rejected one member in its latest attempt (its own reasons kept, see above)."""

    pod: Pod
    unschedulable: frozenset[str]
    pending: frozenset[str]


class GangRejections:
    """The latest rejection of every member of every gang, while the member is pending."""

    __slots__ = ("_gang_of", "_gangs")

    def __init__(self) -> None:
        self._gangs: dict[str, dict[str, Rejection]] = {}  # gang key -> member uid -> rejection
        self._gang_of: dict[str, str] = {}  # member uid -> gang key

    def record(self, gang: Gang, info: QueuedPodInfo) -> None:
        """The member's attempt was rejected (an error records nothing: errors retry anyway)."""
        uid = info.pod.uid
        unschedulable, pending = frozenset(info.unschedulable_plugins), frozenset(info.pending_plugins)
        if not unschedulable | pending:
            return
        if self._gang_of.get(uid, gang.key) != gang.key:
            self.forget(uid)  # it changed gangs
        members = self._gangs.setdefault(gang.key, {})
        previous = members.get(uid)
        if previous is not None and unschedulable | pending <= {gang.plugin}:
            unschedulable |= previous.unschedulable
            pending |= previous.pending
        members[uid] = Rejection(info.pod, unschedulable, pending)
        self._gang_of[uid] = gang.key

    def update(self, pod: Pod) -> None:
        """A newer version of a member: its hints read that one."""
        key = self._gang_of.get(pod.uid)
        if key is not None:
            rejection = self._gangs[key][pod.uid]
            self._gangs[key][pod.uid] = Rejection(pod, rejection.unschedulable, rejection.pending)

    def rejections(self, gang: Gang, *, exclude: str = "") -> list[Rejection]:
        """The members' rejections, but ``exclude``'s (a uid)."""
        members = self._gangs.get(gang.key, {})
        return [rejection for uid, rejection in members.items() if uid != exclude]

    def gang_key(self, uid: str) -> str | None:
        """The gang of a member with a rejection on record."""
        return self._gang_of.get(uid)

    def members(self, gang: Gang) -> list[str]:
        """uids of the members with a rejection on record."""
        return list(self._gangs.get(gang.key, ()))

    def forget(self, uid: str) -> None:
        """The member is no longer pending (bound or deleted)."""
        key = self._gang_of.pop(uid, None)
        if key is None:
            return
        members = self._gangs[key]
        del members[uid]
        if not members:
            del self._gangs[key]

    def __len__(self) -> int:
        return len(self._gang_of)
