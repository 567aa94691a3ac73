"""How a session runs its plans: in the caller's thread or on the inter-op pool, with how many BLAS threads,
and, when asked, traced (step stats) or under a deadline.

Threads pay only where ops can overlap and are heavy enough to hide the hand-over cost (~25 us a step in Python):
- `inter_op_parallelism_threads` > 1 set explicitly: every plan whose steps can overlap runs on the pool.
- 0 (TF's default, "pick for the machine"): a plan runs sequentially, is timed once on its third run, and moves to
  the pool only when replaying those timings through the scheduler (`parallel.predict_parallel_ns`) predicts a
  gain of 20% or more. A 1,000-op chain of tiny ops never leaves the fast path; 200 independent matmuls may.
- 1 or negative: always the caller's thread.
BLAS threads (adplace.kernels.blas_threads): a step's BLAS kernels use at most `intra_op_parallelism_threads` threads
when it is set; when it is 0 each product gets a count by its size (one thread under 2**19 multiply-adds, more as it
grows, up to the library's count), and while a plan runs on the pool at most an equal share of the CPUs, so kernels
running side by side do not oversubscribe the cores. The library's count is restored after each BLAS call.
"""
from __future__ import annotations

import time
from typing import Callable

from adplace.runtime import fusion, parallel
from adplace.runtime.executor import Deadline, Plan
from adplace.runtime.waits import SequentialRun
from adplace.runtime.thread_pool import (BlasLimiter, WorkerPool, available_cpus, inter_op_threads, intra_op_threads,
                                         shared_pool)

HEAVY_NS = 100_000        # a step this long is worth handing to another thread
MIN_PARALLEL_NS = 2_000_000  # below this much heavy work a run stays sequential
MIN_GAIN = 0.8            # go parallel when predicted time <= 80% of the measured sequential time


class StepRunner:
    """A session's execution policy: thread counts from its ConfigProto, its pool, each plan's mode."""

    def __init__(self, config, ctx):
        configured = config.inter_op_parallelism_threads
        self.inter_threads = inter_op_threads(configured)
        self.explicit = configured > 0
        self.intra_threads = intra_op_threads(config.intra_op_parallelism_threads)
        self.cpus = available_cpus()
        self._per_session = config.use_per_session_threads
        self._ctx = ctx
        self._pool = None
        self._blas = BlasLimiter(self.intra_threads)
        self.parallel_blas_threads = self.intra_threads or max(1, self.cpus // self.inter_threads)

    @property
    def pool(self):
        """The inter-op pool: the caller's thread plus `inter_threads - 1` workers."""
        if self._pool is None:
            size = self.inter_threads - 1
            self._pool = WorkerPool(size) if self._per_session else shared_pool(size)
        return self._pool

    def prepare(self, plan: Plan) -> None:
        """Set a new plan's mode: parallel at once when its steps can overlap and threads were asked for, or when
        it holds several kernels that may wait on each other (py_funcs: run in turn, one could wait forever)."""
        plan.mode, plan.parallel_run = "sequential", None
        may_wait = sum(op.type in parallel.BLOCKING_OPS for op in plan.ops) > 1
        if self.inter_threads > 1 and (self.explicit or may_wait) and len(plan.kernels) > 1 and not plan.has_loops:
            schedule = parallel.Schedule(plan)
            if schedule.can_overlap:
                self._go_parallel(plan, schedule)
                return
        self._install(plan)

    def tier_up(self, plan: Plan) -> None:
        """After a plan's first runs: compile it, and in adaptive mode time its next run to choose a mode."""
        if plan.mode != "sequential":
            return
        plan.tier_up()
        fusion.watch_cpu(plan, self._ctx, self._install)  # may count runs through plan.sequential: before _install
        self._install(plan)
        if self.inter_threads > 1 and not self.explicit and len(plan.kernels) > 1 and not plan.has_loops:
            plan.fn = self._calibrating(plan)

    def run_observed(self, plan: Plan, feeds, deadline: Deadline | None, records: list | None) -> list:
        """A run that checks a deadline and/or records step timings, in the plan's mode."""
        if plan.parallel_run is not None:
            return self._blas(self.parallel_blas_threads).run(plan.parallel_run, feeds, deadline, records)
        if deadline is None:
            return self._blas().run(plan.run_checked, feeds, deadline, records)
        slot = self._ctx.steps.slot
        outer = slot.run
        slot.run = SequentialRun(deadline)  # blocking kernels (queues) stop waiting at the deadline
        try:
            return self._blas().run(plan.run_checked, feeds, deadline, records)
        finally:
            slot.run = outer

    # --- modes ------------------------------------------------------------------------------------------------
    def _install(self, plan: Plan) -> None:
        """Point plan.fn at the sequential runner, inside the step's BLAS bound when one is set. Without one, BLAS
        kernels size each product themselves (blas_threads.POLICY, attached here to the BLAS libraries once), each
        reading the libraries' own count first and restoring it after."""
        sequential = plan.sequential
        if not self.intra_threads:
            if any(op.type in parallel.BLAS_OPS for op in plan.ops):
                self._blas()
            plan.fn = sequential
            return
        run = self._blas().run

        def limited(feeds):
            return run(sequential, feeds)
        plan.fn = limited

    def _go_parallel(self, plan: Plan, schedule) -> None:
        run = plan.parallel_run = parallel.make_parallel_runner(plan, schedule, self.pool, self._ctx)
        plan.mode = "parallel"
        bounded = self._blas(self.parallel_blas_threads).run

        def parallel_fn(feeds):
            return bounded(run, feeds)
        plan.fn = parallel_fn

    def _calibrating(self, plan: Plan) -> Callable:
        def calibrate(feeds):
            records: list = []
            result = self._blas().run(plan.run_checked, feeds, None, records)
            costs = [0] * len(plan.kernels)
            for index, start, end, _, _ in records:
                costs[index] = end - start
            self._choose(plan, costs)
            return result
        return calibrate

    def _choose(self, plan: Plan, costs: list) -> None:
        """Parallel when the scheduler, replaying `costs`, predicts a clear gain over running them in turn."""
        sequential_ns = sum(costs)
        self._install(plan)
        plan.mode = "sequential"
        if sum(c for c in costs if c >= HEAVY_NS) < MIN_PARALLEL_NS:
            return
        schedule = parallel.Schedule(plan)
        if not schedule.can_overlap:
            return
        if not self.intra_threads:  # timed with BLAS on every core; on the pool each gets its share
            slowdown = self.cpus / self.parallel_blas_threads
            costs = [int(c * slowdown) if op.type in parallel.BLAS_OPS else c for c, op in zip(costs, plan.ops)]
        predicted = parallel.predict_parallel_ns(schedule, costs, self.inter_threads)
        plan.prediction = (sequential_ns, predicted)
        if predicted <= MIN_GAIN * sequential_ns:
            self._go_parallel(plan, schedule)

    def close(self) -> None:
        if self._per_session and self._pool is not None:
            self._pool.shutdown()
        self._pool = None


def clock_pair() -> tuple[int, int]:
    """(epoch ns, perf-counter ns) read together: maps perf-counter stamps to epoch times."""
    return time.time_ns(), time.perf_counter_ns()
