"""Blocking waits of kernels (queues; readers later): one helper that waits on a condition until it holds, the step's
deadline passes, the step is cancelled, or the session closes.

    with queue.cond:
        ctx.waits.wait(queue.cond, lambda: len(items) > 0, op, "Dequeue")   # then take the element

What a waiting kernel must know about the step its thread runs is in the thread's `steps.slot.run` (an object with
`deadline`, a runtime.executor.Deadline or None, and `cancelled`, a bool): the sequential runner sets it for runs
with a deadline (StepRunner.run_observed), a parallel run sets it to its own state in every thread working for it
(parallel.chain), so a run cancelled because another kernel failed, or past its deadline, or by Ctrl-C, stops its
waiters. Session.close() cancels the waits of every run of the session at once (`close`), including runs without a
deadline or threads.

A wait checks those flags at least every SLICE_S seconds and is woken at once by the condition's notify (the
element arrived, the queue closed) and by the session closing; the deadline is met to the millisecond, since the
last slice ends at it. Past the deadline it raises TF's DeadlineExceededError naming the op (executor's message);
cancelled, TF's CancelledError ("Dequeue operation was cancelled"). Either way the kernel's own state is as before
the wait: callers take nothing until `wait` returns.
"""
from __future__ import annotations

import threading
import time
from typing import Callable

from adplace.framework import errors
from adplace.runtime.executor import deadline_exceeded

SLICE_S = 0.05  # how often a waiter looks at its step's cancellation flag (which nothing notifies)


class SequentialRun:
    """The `steps.slot.run` of a run in the caller's thread: its deadline; nothing else cancels it (Ctrl-C raises in
    that thread by itself)."""

    __slots__ = ("deadline",)
    cancelled = False

    def __init__(self, deadline):
        self.deadline = deadline


class Waits:
    """A session's blocking waits: the conditions its kernels wait on, and whether the session closed."""

    def __init__(self, steps, placement):
        self._steps = steps              # per thread: slot.run (see the module)
        self._placement = placement      # to name the device of a timed-out op
        self._lock = threading.Lock()
        self._waiting: dict = {}         # condition -> number of waits on it
        self.closed = False

    def wait(self, cond: threading.Condition, ready: Callable[[], bool], op, action: str) -> None:
        """Block, holding `cond` (released while waiting), until `ready()`; raise DeadlineExceededError past the
        step's deadline and CancelledError when the step is cancelled or the session closes. `action` ("Enqueue",
        "Dequeue") names the operation in TF's cancellation message."""
        if ready():
            return
        run = self._steps.slot.run
        deadline = None if run is None else run.deadline
        clock = time.perf_counter_ns
        self._track(cond, 1)
        try:
            while True:
                if self.closed:  # first: closing the session also closes its queues, which makes them "ready"
                    raise errors.CancelledError(None, op, f"{action} operation was cancelled: the session was "
                                                f"closed while '{op.name}' ({op.type}) waited.")
                if ready():
                    return
                timeout = SLICE_S
                if deadline is not None:
                    left = deadline.at_ns - clock()
                    if left <= 0:
                        raise deadline_exceeded(deadline, op, self._placement.device_by_op_id[op._id])
                    timeout = min(timeout, left / 1e9)
                if run is not None and run.cancelled:
                    raise errors.CancelledError(None, op, f"{action} operation was cancelled: its step was "
                                                f"cancelled while '{op.name}' ({op.type}) waited.")
                cond.wait(timeout)
        finally:
            self._track(cond, -1)

    def _track(self, cond, delta: int) -> None:
        with self._lock:
            count = self._waiting.get(cond, 0) + delta
            if count:
                self._waiting[cond] = count
            else:
                self._waiting.pop(cond, None)

    def close(self) -> None:
        """Cancel every wait of the session's runs, now and later (Session.close)."""
        self.closed = True
        with self._lock:
            waiting = list(self._waiting)
        for cond in waiting:
            with cond:
                cond.notify_all()
