"""The inter-op thread pool and the intra-op (BLAS) thread count, resolved from ConfigProto as TF does.

`inter_op_parallelism_threads`: > 0 as given; 0 -> $TF_NUM_INTEROP_THREADS when > 0, else the schedulable CPUs;
< 0 -> run every op in the caller's thread. The first session asking for N threads creates the process-wide pool of
that size and later sessions share it, unless `use_per_session_threads` gives a session its own.
`intra_op_parallelism_threads`: the threads one kernel may use. adplace's kernels get theirs from the BLAS library
(NumPy has no thread pool of its own), managed through threadpoolctl (`pip install "adplace[threads]"`) while a step
runs: > 0 bounds every BLAS call of the step; 0 sizes each product's count by its size (adplace.kernels.blas_threads).
"""
from __future__ import annotations

import functools
import logging
import os
import queue
import threading
from typing import Callable

from adplace.kernels import blas_threads

_log = logging.getLogger("adplace")


def available_cpus() -> int:
    """CPUs this process may run on (its affinity mask where the OS has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


def _env_threads(name: str) -> int:
    try:
        return int(os.environ.get(name, "0"))
    except ValueError:
        return 0


def inter_op_threads(configured: int) -> int:
    """The inter-op pool size for a ConfigProto value; 1 means the caller's thread only."""
    if configured > 0:
        return configured
    if configured == 0:
        env = _env_threads("TF_NUM_INTEROP_THREADS")
        if env > 0:
            return env
        if env == 0:
            return available_cpus()
    return 1


def intra_op_threads(configured: int) -> int:
    """Threads one kernel may use for a ConfigProto value; 0 means the library's own choice."""
    if configured > 0:
        return configured
    return max(0, _env_threads("TF_NUM_INTRAOP_THREADS"))


class WorkerPool:
    """`size` daemon threads running submitted `fn(arg)` calls in order, from one C-implemented queue."""

    def __init__(self, size: int, name: str = "adplace-inter-op"):
        self.size = size
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._threads = [threading.Thread(target=self._work, name=f"{name}-{i}", daemon=True) for i in range(size)]
        for thread in self._threads:
            thread.start()

    def submit(self, fn: Callable, arg) -> None:
        self._queue.put((fn, arg))

    def _work(self) -> None:
        get = self._queue.get
        while True:
            fn, arg = get()
            if fn is None:
                return
            try:
                fn(arg)
            except BaseException:  # noqa: BLE001 - a worker must survive; runs report their own errors
                _log.exception("adplace worker thread: uncaught error")

    def shutdown(self) -> None:
        for _ in self._threads:
            self._queue.put((None, None))


_shared_pools: dict[int, WorkerPool] = {}
_shared_lock = threading.Lock()


def shared_pool(size: int) -> WorkerPool:
    """The process-wide pool of `size` threads, created on first use (TF's global inter-op pool)."""
    with _shared_lock:
        pool = _shared_pools.get(size)
        if pool is None:
            pool = _shared_pools[size] = WorkerPool(size)
        return pool


class BlasLimiter:
    """A session's BLAS bound: `limiter(n).run(fn, *args)` runs a step whose BLAS kernels use at most n threads (0: the
    library's own count, each product sized by adplace.kernels.blas_threads), restored when the last step in flight
    ends. A no-op without threadpoolctl (a one-time warning when a bound was asked for)."""

    _controller = None
    # threadpoolctl failed to import: not tried again. Each try cost ~25 us a parallel step and went through the
    # import lock on the caller's thread, where a Ctrl-C landing inside importlib can leave it held (workers hang).
    _missing = False
    _warned = False

    def __init__(self, n: int):
        self.n = n
        self._scopes: dict = {}

    def __call__(self, n: int | None = None):
        n = self.n if n is None else n
        scope = self._scopes.get(n)
        if scope is None:
            if self._get_controller() is None:
                scope = _NoBound()
                if n > 0 and not BlasLimiter._warned:
                    BlasLimiter._warned = True
                    _log.warning('intra_op_parallelism_threads is not applied: it needs threadpoolctl '
                                 '(pip install "adplace[threads]")')
            else:
                scope = _StepBound(n)
            self._scopes[n] = scope
        return scope

    @classmethod
    def _get_controller(cls):
        if cls._controller is None and not cls._missing:
            try:
                from threadpoolctl import ThreadpoolController
            except ImportError:
                cls._missing = True
                return None
            cls._controller = ThreadpoolController()
            blas_threads.POLICY.attach(cls._controller)
        return cls._controller


class _StepBound:
    """The scope a step runs in: its BLAS bound registered with the process-wide policy (reusable, any thread).
    `run(fn, *args)` is fn(*args) in the scope; a Ctrl-C landing anywhere in it, the registration and its removal
    included, leaves no bound behind (a leaked one would cap every later product's threads): see
    blas_threads.counted_call, which holds where a `with` block's __exit__, interrupted at its own start, would not."""

    __slots__ = ("bound", "_end")

    def __init__(self, bound: int):
        self.bound = bound
        self._end = functools.partial(blas_threads.POLICY.end_step, bound)

    def run(self, fn, *args):
        return blas_threads.counted_call(blas_threads.POLICY.begin_step, self._end, self.bound, _then, fn, *args)


def _then(_, fn, *args):
    return fn(*args)


class _NoBound:
    """The scope without threadpoolctl: nothing to register."""

    @staticmethod
    def run(fn, *args):
        return fn(*args)
