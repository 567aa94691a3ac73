"""Running traced functions (framework/function_graph.py) for kernels that call them: tf.data's map, filter,
flat_map, interleave and generator functions, and one-shot iterators' dataset factories.

    run = ctx.function(op._attrs["f"])        # KernelContext.function: one runner per (session, function)
    outputs = run(args + captured)             # one call: NumPy values in, NumPy values out

Each function runs in a private session over its graph with the CPU only (tf.data runs its functions on the host,
as TF does), so stateful ops of the body (random ops, py_funcs) keep their state across calls, and calls from
several threads (map's num_parallel_calls) run concurrently. The private sessions close with the session that made
them.
"""
from __future__ import annotations

import threading
from typing import Callable

from adplace.runtime import options as _options


class FunctionRunner:
    """One function's private session and the callable that feeds its inputs and fetches its outputs."""

    def __init__(self, function):
        from adplace.runtime.session import Session  # session imports kernel_context, which imports this module
        config = _options.ConfigProto(device_count={"GPU": 0}, allow_soft_placement=True)
        self._session = Session(graph=function.graph, config=config)
        graph = function.graph
        self._call = self._session.make_callable(list(graph.outputs), feed_list=list(graph.inputs))
        self.name = function.name

    def __call__(self, values: list) -> list:
        return self._call(*values)

    def close(self) -> None:
        self._session.close()


class FunctionRunners:
    """A session's runners, by function, made on first use and closed with the session."""

    def __init__(self):
        self._lock = threading.Lock()
        self._runners: dict = {}
        self._closed = False

    def get(self, function) -> Callable[[list], list]:
        runner = self._runners.get(function)
        if runner is None:
            with self._lock:
                runner = self._runners.get(function)
                if runner is None:
                    runner = self._runners[function] = FunctionRunner(function)
        return runner

    def close(self) -> None:
        with self._lock:
            runners, self._runners = list(self._runners.values()), {}
        for runner in runners:
            runner.close()
