"""Which keys of a lister changed since a revision: what ``RevisionedLister.changed_since``
answers, for stores to keep (``scheduler.client.informer.Store``, the testing fakes).

The log keeps the last ``KEPT`` changes (a few hundred kilobytes at most); a question about an
older revision gets None: look at every object then.
"""

from __future__ import annotations

from collections import deque

KEPT = 10_000


class ChangeLog:
    """The revision (a count of changes) and the keys of the latest changes."""

    __slots__ = ("_log", "_since", "revision")

    def __init__(self) -> None:
        self.revision = 0
        self._log: deque[tuple[int, str]] = deque()  # (revision after the change, key)
        self._since = 0  # the revision the log starts from

    def changed(self, key: str) -> None:
        self.revision += 1
        if len(self._log) == KEPT:
            self._since = self._log.popleft()[0]
        self._log.append((self.revision, key))

    def since(self, revision: int) -> list[str] | None:
        """The keys changed after ``revision`` (oldest first, repeats kept); None when the log
        does not go back that far."""
        if revision < self._since or revision > self.revision:
            return None
        keys = []
        for changed_at, key in reversed(self._log):
            if changed_at <= revision:
                break
            keys.append(key)
        keys.reverse()
        return keys
