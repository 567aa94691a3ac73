"""Running a plan on several threads: ready counts, inline chains, and the cost model that decides when to.

A plan's steps form a DAG: data edges (a step reads a slot another step wrote), control edges, and ordering edges
between steps touching the same variable when one of them writes it (so every schedule sees what the sequential one
sees). `Schedule` holds that DAG as successor lists and initial pending counts, built once per plan. A parallel run
starts every ready step; a thread finishing a step runs the first step it made ready itself (TF's inline
processing) and queues the others for the pool; the caller's thread works too. Slots are freed when their last
reader finishes. A failed or cancelled run stops starting steps, waits for the running ones, and reports.

`predict_parallel_ns` replays a plan's measured step costs through that policy (list scheduling with dispatch
costs) to say whether threads would beat the sequential path.
"""
from __future__ import annotations

import heapq
import queue
import threading
import time
from collections import deque

from adplace.framework.operation import is_variable_op, ref_variable
from adplace.runtime.executor import _as_tuple, deadline_exceeded, run_step
from adplace.runtime.variable_state import interrupts_deferred

DISPATCH_NS = 25_000      # handing a step to another thread: queue, wake-up, GIL hand-over (measured, 2-core host)
STEP_NS = 3_000           # bookkeeping per step in a parallel run (lock, ready counts, frees)
BLAS_OPS = frozenset({"MatMul", "BatchMatMul", "BatchMatMulV2"})  # kernels that use every core on their own
# Kernels that may wait for another step of the same run: a plan holding several runs on the pool, so that one can
# wait while another proceeds (an enqueue and a dequeue of one queue).
BLOCKING_OPS = frozenset({"PyFunc", "PyFuncStateless", "QueueEnqueueV2", "QueueEnqueueManyV2", "QueueDequeueV2",
                          "QueueDequeueManyV2", "QueueDequeueUpToV2", "QueueCloseV2", "ReaderReadV2",
                          "ReaderReadUpToV2", "ReaderResetV2", "ReaderRestoreStateV2"})
_DONE = object()


class Schedule:
    """A plan's dependency DAG: successors and pending counts per step, readers per slot, the initial ready set."""

    __slots__ = ("succs", "pending", "initial", "readers", "critical_steps")

    def __init__(self, plan):
        n = len(plan.kernels)
        producer = [-1] * plan.n_slots
        for i, outs in enumerate(plan.outs):
            for s in _as_tuple(outs):
                if s is not None:
                    producer[s] = i
        transfers = plan.transfer_steps
        main_step = {}
        for i, op in enumerate(plan.ops):
            if i not in transfers:
                main_step[op._id] = i
        preds: list[set] = [set() for _ in range(n)]
        last_write: dict[int, int] = {}
        reads_since: dict[int, list] = {}
        readers = [0] * plan.n_slots
        for i, (in_slots, op) in enumerate(zip(plan.ins, plan.ops)):
            deps = preds[i]
            for s in _as_tuple(in_slots):
                readers[s] += 1
                if producer[s] >= 0:
                    deps.add(producer[s])
            if i in transfers:
                continue
            for c in op._control_inputs:
                j = main_step.get(c._id, -1)
                if 0 <= j < i:
                    deps.add(j)
            for resource, writes in _variable_accesses(op):
                if resource in last_write:
                    deps.add(last_write[resource])
                if writes:
                    deps.update(reads_since.pop(resource, ()))
                    last_write[resource] = i
                else:
                    reads_since.setdefault(resource, []).append(i)
        for s in plan.fetch_slots:
            readers[s] += 1  # fetched values outlive the run
        self.succs: list[list] = [[] for _ in range(n)]
        for i, deps in enumerate(preds):
            deps.discard(i)
            for j in sorted(deps):
                self.succs[j].append(i)
        self.pending = [len(deps) for deps in preds]
        self.initial = [i for i in range(n) if not preds[i]]
        self.readers = readers
        depth = [1] * n  # longest path, in steps, ending at each step
        for i in range(n):
            for j in self.succs[i]:
                if depth[i] + 1 > depth[j]:
                    depth[j] = depth[i] + 1
        self.critical_steps = max(depth, default=0)

    @property
    def can_overlap(self) -> bool:
        """False when the DAG is a chain: no two steps could ever run at once."""
        return self.critical_steps < len(self.pending)


def _variable_accesses(op) -> list[tuple[int, bool]]:
    """(variable op id, writes?) for each variable a step touches: its own cell, or its reference inputs."""
    if is_variable_op(op):
        return [(op._id, False)]
    ref_inputs = op._op_def.ref_inputs
    if not ref_inputs:
        return []
    writes = op._op_def.is_stateful
    return [(ref_variable(op._inputs[k])._id, writes) for k in ref_inputs if k < len(op._inputs)]


def predict_parallel_ns(schedule: Schedule, costs: list, workers: int) -> int:
    """Simulated wall time of a parallel run with `workers` threads, given each step's cost in ns."""
    pending = schedule.pending[:]
    succs = schedule.succs
    ready: deque = deque((0, i) for i in schedule.initial)  # (time it became ready, step)
    running: list = []                                     # heap of (finish time, step)
    idle, now, end = workers, 0, 0
    first = True
    while ready or running:
        while idle and ready:
            at, i = ready.popleft()
            start = max(at, now) + (0 if first else DISPATCH_NS)
            first = False
            heapq.heappush(running, (start + costs[i] + STEP_NS, i))
            idle -= 1
        now, i = heapq.heappop(running)
        end = max(end, now)
        inline = None
        for j in succs[i]:
            pending[j] -= 1
            if pending[j] == 0:
                if inline is None:
                    inline = j
                else:
                    ready.append((now, j))
        if inline is None:
            idle += 1
        else:
            heapq.heappush(running, (now + costs[inline] + STEP_NS, inline))
    return end


class _Run:
    """The mutable state of one parallel run."""

    __slots__ = ("slots", "pending", "readers", "queue", "cond", "remaining", "active", "error", "cancelled",
                 "timed_out", "deadline", "records", "journal", "late_step")

    def __init__(self, plan, schedule: Schedule, deadline, records, journal):
        self.slots = [None] * plan.n_slots
        self.pending = schedule.pending[:]
        self.readers = schedule.readers[:]
        self.queue: queue.SimpleQueue = queue.SimpleQueue()
        self.cond = threading.Condition(threading.Lock())
        self.remaining = len(plan.kernels)
        self.active = 0
        self.error: BaseException | None = None
        self.cancelled = self.timed_out = False
        self.deadline, self.records, self.journal = deadline, records, journal
        self.late_step: int | None = None  # the step that ended past the deadline


def make_parallel_runner(plan, schedule: Schedule, pool, ctx):
    """`run(feeds, deadline=None, records=None)` running `plan` on `pool` plus the caller's thread.

    Kernels record variable writes in the journal of the step their thread works for (`steps.slot.journal`): every
    thread working on the run uses the caller's, so a failed run undoes writes from all threads. Blocking kernels
    find the run itself in `steps.slot.run` (its deadline and cancelled flag: runtime/waits.py). The run returns or
    raises only when no thread is running one of its kernels any more, also when the caller is interrupted.
    """
    kernels, ins, outs, succs = plan.kernels, plan.ins, plan.outs, schedule.succs
    fetches = plan.fetch_converters()
    clock = time.perf_counter_ns
    get_ident = threading.get_ident
    steps = ctx.steps

    def chain(run: _Run, index: int) -> None:
        """Run `index`, then the first step each step makes ready, until none does; queue the rest."""
        cond, slots, pending, readers, records = run.cond, run.slots, run.pending, run.readers, run.records
        with cond:
            if run.cancelled:
                return
            run.active += 1
        slot = steps.slot
        outer_journal, outer_run = slot.journal, slot.run
        deadline_ns = None if run.deadline is None else run.deadline.at_ns
        try:
            slot.journal, slot.run = run.journal, run  # blocking kernels read run.deadline and run.cancelled
            while index is not None:
                if run.cancelled:
                    break
                start = clock() if records is not None else 0
                result = run_step(kernels[index], ins[index], outs[index], slots)
                if records is not None:
                    records.append((index, start, clock(), get_ident(), result))
                if deadline_ns is not None and clock() > deadline_ns:
                    run.late_step = index
                    _cancel(run, timed_out=True)
                    break
                inline = None
                with cond:
                    for j in succs[index]:
                        pending[j] -= 1
                        if pending[j] == 0:
                            if inline is None:
                                inline = j
                            else:
                                run.queue.put(j)
                                pool.submit(help_run, run)
                    for s in _as_tuple(ins[index]):
                        readers[s] -= 1
                        if readers[s] == 0:
                            slots[s] = None
                    run.remaining -= 1
                    if run.remaining == 0:
                        run.queue.put(_DONE)
                index = inline
        except BaseException as exc:  # noqa: BLE001 - reported to the caller's thread, which re-raises it
            with cond:
                if run.error is None:
                    run.error = exc
            _cancel(run)
        finally:
            slot.journal, slot.run = outer_journal, outer_run
            with cond:
                run.active -= 1
                if run.active == 0:
                    cond.notify_all()

    def help_run(run: _Run) -> None:
        try:
            index = run.queue.get_nowait()
        except queue.Empty:
            return
        if index is _DONE:
            run.queue.put(_DONE)
            return
        chain(run, index)

    def run(feeds, deadline=None, records=None):
        state = _Run(plan, schedule, deadline, records, steps.slot.journal)
        slots = state.slots
        for slot, value in zip(plan.feed_slots, feeds):
            slots[slot] = value
        if not kernels:
            return [convert(slots[slot]) for slot, convert in fetches]
        # A KeyboardInterrupt raised inside this thread's bookkeeping could leave the run's lock held or its count of
        # working threads wrong, and hang the run: Ctrl-C cancels the run instead, and is raised once every worker
        # has stopped.
        with interrupts_deferred(lambda: _interrupt(state)):
            try:
                _drive(state, feeds)
            except BaseException as exc:  # noqa: BLE001 - a kernel's error in this thread: cancel, wait, re-raise
                with state.cond:
                    if state.error is None:
                        state.error = exc
                _cancel(state)
            interrupt = _wait_for_workers(state)
        if state.error is not None:
            raise state.error
        if interrupt is not None:
            raise interrupt
        if state.timed_out:
            late = state.late_step
            raise deadline_exceeded(deadline, None if late is None else plan.ops[late],
                                    None if late is None else plan.devices[late])
        return [convert(slots[slot]) for slot, convert in fetches]

    def _drive(state: _Run, feeds) -> None:
        """The caller's share: start the ready steps, run chains from the queue until the run is done."""
        first, *others = schedule.initial
        for index in others:
            state.queue.put(index)
            pool.submit(help_run, state)
        chain(state, first)
        deadline_ns = None if state.deadline is None else state.deadline.at_ns
        while True:
            timeout = None if deadline_ns is None else max(0.0, (deadline_ns - clock()) / 1e9)
            try:
                index = state.queue.get(timeout=timeout)
            except queue.Empty:
                _cancel(state, timed_out=True)
                return
            if index is _DONE:
                return
            chain(state, index)

    return run


def _wait_for_workers(run: _Run) -> BaseException | None:
    """Block until no thread runs a kernel of `run` (TF waits for its executors too); a Ctrl-C meanwhile cancels
    the run and is returned, to be raised once the workers have stopped (each stops within one kernel)."""
    interrupt = None
    while True:
        try:
            with run.cond:
                while run.active:
                    run.cond.wait()
            return interrupt
        except BaseException as exc:  # noqa: BLE001 - KeyboardInterrupt while waiting
            interrupt = exc
            with run.cond:
                run.cancelled = True


def _interrupt(run: _Run) -> None:
    """Ctrl-C in the caller's thread: called from a signal handler, which may run while that thread holds the lock."""
    run.cancelled = True
    run.queue.put(_DONE)  # SimpleQueue.put may be called from a signal handler


def _cancel(run: _Run, timed_out: bool = False) -> None:
    with run.cond:
        run.cancelled = True
        run.timed_out = run.timed_out or timed_out
    run.queue.put(_DONE)
