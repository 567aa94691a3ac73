"""A while loop's iterations in flight together (`parallel_iterations`), on the session's inter-op threads.

TF's executor runs an op of iteration k+1 as soon as its inputs for that iteration exist, with up to
`parallel_iterations` iterations started. Here the same holds for the steps of a loop's body sub-plan: an iteration
starts once the loop variables its predicate reads have their values (the predicate runs on the caller's thread),
each body step of it runs on the pool once the steps and loop variables it reads are done, and a loop variable of
iteration k+1 is there as soon as iteration k's step computing it ends. In a `map_fn` the work on element k+1
overlaps that on element k; a chain (each step of k+1 needing the end of k) runs as it would in turn.

Only loops whose body writes no variable, has no nested loop, no GPU step, no kernel that may wait for another
(py_func), and no op its NextIteration waits on (a gradient's stack pushes) run this way, and only once their first
iterations, timed in turn, show an iteration long enough for threads to gain (`judge`); the others, and every loop
without a pool, run iteration after iteration (runtime/control_flow.py). The values are the same either way.
"""
from __future__ import annotations

import threading
import time
from collections import deque
from typing import Callable

import numpy as np

from adplace.kernels.control_flow import predicate

MIN_ITERATION_NS = 100_000  # per body step: below, an iteration is too short for threads to gain anything
from adplace.runtime.executor import _as_tuple, run_step
from adplace.runtime.parallel import BLOCKING_OPS, Schedule


def can_pipeline(body_plan, n_vars: int, targets: int, direct: bool) -> bool:
    """Whether the body sub-plan's steps may run for several iterations at once (see the module's docstring)."""
    return (direct and not targets and not body_plan.has_writes and not body_plan.has_loops
            and len(body_plan.fetch_slots) == n_vars
            and not any(getattr(d, "is_cuda", False) for d in body_plan.devices)
            and not any(op._type in BLOCKING_OPS for op in body_plan.ops))


class _Iteration:
    __slots__ = ("slots", "pending", "remaining")

    def __init__(self, n_slots: int, pending: list, remaining: int):
        self.slots, self.pending, self.remaining = [None] * n_slots, pending, remaining


class PipelinedLoop:
    """Runs a loop whose body sub-plan qualifies (`can_pipeline`) with up to `width` iterations in flight.

    Body feeds are, in order: the loop variables' Merge values (n), their value indices (n), their Switch outputs
    (n: the same values), the invariants, and the predicate; its fetches the next values of the loop variables.
    """

    def __init__(self, cond_plan, body_plan, n_vars: int, width: int, pool_of: Callable):
        self.cond_plan, self.body_plan, self.n, self.width, self.pool_of = cond_plan, body_plan, n_vars, width, \
            pool_of
        self.worth_it: bool | None = None  # decided by `judge` from the loop's first iterations
        schedule = Schedule(body_plan)
        self.succs, self.pending = schedule.succs, schedule.pending
        feeds = body_plan.feed_slots
        self.var_slots = [(feeds[j], feeds[n_vars + j], feeds[2 * n_vars + j]) for j in range(n_vars)]
        self.const_slots = feeds[3 * n_vars:-1]
        self.pred_slot = feeds[-1]
        var_of_slot = {s: j for j, slots in enumerate(self.var_slots) for s in slots}
        self.readers_of_var: list[list[int]] = [[] for _ in range(n_vars)]
        for step, ins in enumerate(body_plan.ins):
            for j in sorted({var_of_slot[s] for s in _as_tuple(ins) if s in var_of_slot}):
                self.readers_of_var[j].append(step)
        self.fetch_var = {s: j for j, s in enumerate(body_plan.fetch_slots)}
        cond_feeds = cond_plan.feed_slots
        read = {s for ins in cond_plan.ins for s in _as_tuple(ins)} | set(cond_plan.fetch_slots)
        self.cond_needs = [j for j in range(n_vars) if cond_feeds[j] in read or cond_feeds[n_vars + j] in read]

    def judge(self, iteration_ns: int) -> bool:
        """Decide, once, from an iteration's time in turn: threads pay when an iteration is far longer than handing
        its steps to them costs (a few tens of us a step)."""
        self.worth_it = iteration_ns >= MIN_ITERATION_NS * max(1, len(self.body_plan.kernels))
        return self.worth_it

    def run(self, state: list, invariants: list, read_predicate: Callable, deadline, deadline_error: Callable,
            loop_cond, first_iteration: int = 0) -> list:
        """The loop variables' values at the end, from their values `state` at iteration `first_iteration`."""
        run = _Run(self, self.pool_of(), invariants)
        k = first_iteration
        run.values[k] = dict(enumerate(state))
        cond_fn = self.cond_plan.fn
        try:
            while True:
                known = run.wait_for(k, self.cond_needs, deadline, deadline_error, loop_cond)
                feeds = [known.get(j) for j in range(self.n)] + [np.int32(1 if k else 0)] * self.n + invariants
                pred = read_predicate(cond_fn(feeds)[0])
                if not (bool(pred) if type(pred) is np.bool_ else predicate(loop_cond, pred)):
                    break
                run.start(k, pred)
                k += 1
            final = run.wait_for(k, range(self.n), deadline, deadline_error, loop_cond, drained=True)
        except BaseException:
            run.stop()
            raise
        run.stop()
        return [final[j] for j in range(self.n)]


class _Run:
    """One run of a pipelined loop: its iterations in flight, the values known, the first error."""

    def __init__(self, loop: PipelinedLoop, pool, invariants: list):
        self.loop, self.pool, self.invariants = loop, pool, invariants
        self.cond = threading.Condition()
        self.iterations: dict = {}
        self.values: dict = {}   # iteration -> {loop variable: value} known before the iteration started
        self.ready: deque = deque()  # (iteration, step) jobs not yet taken by a thread
        self.active = 0          # jobs being run
        self.error: BaseException | None = None
        self.cancelled = False

    def wait_for(self, k: int, needs, deadline, deadline_error, loop_cond, drained: bool = False) -> dict:
        """Iteration k's loop variables once those in `needs` are known and fewer than `width` iterations are in
        flight (with `drained`: once every iteration has ended); raises the first error, or the deadline's."""
        loop = self.loop
        with self.cond:
            while True:
                if self.error is not None:
                    raise self.error
                known = self.values.get(k, {})
                if all(j in known for j in needs) and (
                        not self.iterations if drained else len(self.iterations) < loop.width):
                    return dict(known)
                if deadline is not None and time.perf_counter_ns() > deadline.at_ns:
                    raise deadline_error(deadline, loop_cond)
                if self.ready:  # the loop's own thread works too (with one pool thread, half the work is here)
                    job = self.ready.popleft()
                    self.active += 1
                    self.cond.release()
                    try:
                        self._run_step(job)
                    finally:
                        self.cond.acquire()
                    continue
                self.cond.wait(0.05 if deadline is not None else None)

    def start(self, k: int, pred) -> None:
        loop = self.loop
        plan = loop.body_plan
        pending = list(loop.pending)
        iteration = _Iteration(plan.n_slots, pending, len(plan.kernels))
        slots = iteration.slots
        for s, value in zip(loop.const_slots, self.invariants):
            slots[s] = value
        slots[loop.pred_slot] = pred
        with self.cond:
            known = self.values.pop(k, {})
            for j in range(loop.n):
                if j in known:
                    self._deliver(iteration, k, j, known[j])
                else:
                    for step in loop.readers_of_var[j]:
                        pending[step] += 1
            self.iterations[k] = iteration
            ready = [i for i, count in enumerate(pending) if count == 0]
            if not plan.kernels:
                del self.iterations[k]
            self._submit(k, ready)

    def _deliver(self, iteration: _Iteration, k: int, j: int, value) -> None:
        """Loop variable j's value for iteration k into its slots (the lock held)."""
        merge_value, merge_index, switched = self.loop.var_slots[j]
        slots = iteration.slots
        slots[merge_value] = slots[switched] = value
        slots[merge_index] = np.int32(1 if k else 0)

    def _submit(self, k: int, steps: list) -> None:
        """Queue ready steps (the lock held); each wakes a pool thread, and the loop's thread takes some too."""
        for step in steps:
            self.ready.append((k, step))
            self.pool.submit(self._help, None)
        if steps:
            self.cond.notify_all()

    def _help(self, _) -> None:
        with self.cond:
            if not self.ready or self.cancelled:
                return
            job = self.ready.popleft()
            self.active += 1
        self._run_step(job)

    def _run_step(self, job) -> None:
        """Run one taken job (`active` counts it) and make its successors ready."""
        k, step = job
        loop = self.loop
        plan = loop.body_plan
        try:
            iteration = self.iterations[k]
            if not self.cancelled:
                run_step(plan.kernels[step], plan.ins[step], plan.outs[step], iteration.slots)
        except BaseException as exc:  # noqa: BLE001 - reported to the loop's thread
            with self.cond:
                if self.error is None:
                    self.error = exc
                self.cancelled = True
                self.active -= 1
                self.cond.notify_all()
            return
        with self.cond:
            self.active -= 1
            if self.cancelled:
                self.cond.notify_all()
                return
            ready = []
            pending = iteration.pending
            for nxt in loop.succs[step]:
                pending[nxt] -= 1
                if pending[nxt] == 0:
                    ready.append(nxt)
            for s in _as_tuple(plan.outs[step]):
                j = loop.fetch_var.get(s)
                if j is not None:  # a loop variable's value for the next iteration
                    self._known(k + 1, j, iteration.slots[s])
            iteration.remaining -= 1
            if iteration.remaining == 0:
                del self.iterations[k]
            self._submit(k, ready)
            self.cond.notify_all()

    def _known(self, k: int, j: int, value) -> None:
        iteration = self.iterations.get(k)
        if iteration is None:
            self.values.setdefault(k, {})[j] = value
            return
        self._deliver(iteration, k, j, value)
        ready = []
        for step in self.loop.readers_of_var[j]:
            iteration.pending[step] -= 1
            if iteration.pending[step] == 0:
                ready.append(step)
        self._submit(k, ready)

    def stop(self) -> None:
        """Start nothing more and wait until no step of this run is running (Ctrl-C meanwhile is kept for later)."""
        interrupt = None
        with self.cond:
            self.cancelled = True
            self.ready.clear()
        while True:
            try:
                with self.cond:
                    while self.active:
                        self.cond.wait()
                break
            except BaseException as exc:  # noqa: BLE001 - raised once the workers have stopped
                interrupt = exc
        if interrupt is not None:
            raise interrupt
