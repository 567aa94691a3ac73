"""Resources: stateful objects other than variables (queues now; readers, accumulators later), kept under a
(container, name) key and reached by a handle, as TF's ResourceMgr keeps them.

    resources = SessionResources(b"")                       # one per session (KernelContext.resources)
    queue = resources.lookup_or_create("", "shared_q", True, make, check)   # a shared_name: one per target
    queue = resources.lookup_or_create("", "_7_fifo_queue", False, make, check)   # this session's, op 7's

Where a resource lives:
- with a `shared_name`, in the process-wide manager of the session's target (b"" for in-process sessions): every
  session on that target that runs a creation op with the same (container, shared_name) gets the same object. This
  is TF's documented `shared_name` contract ("shared under the given name across multiple sessions"), which TF keeps
  on server targets; TF's in-process DirectSession gives each session its own devices, so its "shared" queues are
  only shared within a session. adplace shares them between the sessions of the process, so that threads with
  sessions of their own can feed one queue. A shared resource lives while a session that opened it is open: when
  the last one closes, the resource is closed and dropped (as a server would drop it on `Session.reset`).
- without one, in the session's own manager under a key private to the creating op, so two ops never share and
  two sessions never share (TF names such resources after the kernel instance).
A second creation op for an existing key must ask for the same thing: `check(resource)` raises TF's
InvalidArgumentError ("Shared queue 'q' has capacity 10 but requested capacity was 15") otherwise.

A resource may define `close_resource()`, called when it is dropped (a queue cancels its pending operations).
"""
from __future__ import annotations

import threading
from typing import Callable


class ResourceManager:
    """Resources by (container, name), each with the set of owners (sessions) that opened it."""

    def __init__(self):
        self._lock = threading.Lock()
        self._entries: dict[tuple[str, str], list] = {}  # key -> [resource, set of owner tokens]

    def lookup_or_create(self, container: str, name: str, owner: object, create: Callable[[], object],
                         check: Callable[[object], None]):
        """The resource under (container, name), made by `create()` when absent, else checked by `check()`; either
        way `owner` now holds it. A failing `create` or `check` leaves the manager as it was."""
        key = (container, name)
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                entry = self._entries[key] = [create(), set()]
            else:
                check(entry[0])
            entry[1].add(owner)
            return entry[0]

    def release(self, owner: object) -> None:
        """`owner` lets go of everything it opened; resources nobody holds any more are closed and dropped."""
        dropped = []
        with self._lock:
            for key, (resource, owners) in list(self._entries.items()):
                owners.discard(owner)
                if not owners:
                    del self._entries[key]
                    dropped.append(resource)
        for resource in dropped:
            close = getattr(resource, "close_resource", None)
            if close is not None:
                close()

    def clear(self, containers: list[str] | None = None) -> None:
        """Close and drop the resources of `containers` (all when None or empty), whoever holds them
        (tf.Session.reset on a cluster task)."""
        with self._lock:
            dropped = [(key, entry[0]) for key, entry in self._entries.items()
                       if not containers or key[0] in containers]
            for key, _ in dropped:
                del self._entries[key]
        for _, resource in dropped:
            close = getattr(resource, "close_resource", None)
            if close is not None:
                close()

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def keys(self) -> list[tuple[str, str]]:
        with self._lock:
            return list(self._entries)


_TARGETS_LOCK = threading.Lock()
_TARGET_MANAGERS: dict[bytes, ResourceManager] = {}


def target_manager(target: bytes | None) -> ResourceManager:
    """The process-wide manager of shared resources of sessions on `target` (b"" and None: in-process)."""
    target = target or b""
    with _TARGETS_LOCK:
        manager = _TARGET_MANAGERS.get(target)
        if manager is None:
            manager = _TARGET_MANAGERS[target] = ResourceManager()
        return manager


class SessionResources:
    """One session's resources: its private ones, and its hold on shared ones of its target (see the module)."""

    def __init__(self, target: bytes | None = b""):
        self._shared = target_manager(target)
        self._own = ResourceManager()
        self._token = object()  # this session, as an owner in the shared manager

    def lookup_or_create(self, container: str, name: str, shared: bool, create: Callable[[], object],
                         check: Callable[[object], None]):
        """The resource (container, name) of this session: the target's when `shared` (a shared_name), else the
        session's own (the creating kernel picks a name private to its op, TF's `_<n>_<op name>`)."""
        manager = self._shared if shared else self._own
        return manager.lookup_or_create(container, name, self._token, create, check)

    def close(self) -> None:
        """Drop this session's private resources and its hold on shared ones (Session.close)."""
        self._own.release(self._token)
        self._shared.release(self._token)
