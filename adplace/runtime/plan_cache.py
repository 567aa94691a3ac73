"""A bounded cache for compiled runs and plans: a dict whose reads are plain dict reads, evicting by second chance.

A session caches one compiled run per fetch structure and one plan per normalised (fetch elements, feed tensors)
set; a program that fetches ever new structures (a dict keyed by step, a growing list) must not grow without bound.
Lookups stay `cache.get(key)` plus one flag store (`entry.recent = True`), with no lock: only insertion takes the
cache's lock, and evicts the oldest entries that were not used since the last sweep (CLOCK, as OS page caches do).

    cache = PlanCache(capacity=512)
    cache.put(key, compiled)              # may evict old, unused entries
    hit = cache.get(key)                  # a dict read
"""
from __future__ import annotations

import os
import threading

DEFAULT_CAPACITY = 512
CAPACITY_ENV = "ADPLACE_PLAN_CACHE_SIZE"


def default_capacity() -> int:
    """Entries per plan cache: $ADPLACE_PLAN_CACHE_SIZE when set (>= 1), else DEFAULT_CAPACITY."""
    text = os.environ.get(CAPACITY_ENV, "").strip()
    if not text:
        return DEFAULT_CAPACITY
    try:
        capacity = int(text)
    except ValueError:
        raise ValueError(f"{CAPACITY_ENV}={text!r} is not an integer; set it to the number of compiled plans a "
                         f"session may keep (e.g. {DEFAULT_CAPACITY}).") from None
    if capacity < 1:
        raise ValueError(f"{CAPACITY_ENV}={capacity} must be at least 1.")
    return capacity


class PlanCache(dict):
    """key -> entry (an object with a `recent` attribute), holding at most `capacity` entries."""

    def __init__(self, capacity: int | None = None):
        super().__init__()
        self.capacity = default_capacity() if capacity is None else capacity
        if self.capacity < 1:
            raise ValueError(f"A plan cache needs a capacity of at least 1, got {self.capacity}")
        self._lock = threading.Lock()
        self.evictions = 0

    def put(self, key, entry) -> None:
        """Insert `entry`, first evicting entries unused since they were last passed over, oldest first."""
        entry.recent = False
        with self._lock:
            self.pop(key, None)
            while len(self) >= self.capacity:
                oldest = next(iter(self))
                candidate = self.pop(oldest)
                if candidate.recent:  # used since the last sweep: a second chance, at the back
                    candidate.recent = False
                    self[oldest] = candidate
                else:
                    self.evictions += 1
            self[key] = entry
