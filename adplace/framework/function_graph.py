"""Function graphs: a Python function traced once into a Graph of its own, which an op of the outer graph names in a
function attr (tf.data's `map` fn, `filter` predicate, a one-shot iterator's dataset factory), as TF's Defun does.

    fn = trace("map_fn", lambda x: x * scale, [(tf.float32, [2])], outer_graph)
    fn.graph.inputs       # [args_0 (the argument), captured scale (a placeholder for the outer tensor)]
    fn.captured_inputs    # [scale]: the outer tensors the op feeds the function with, after its own inputs

A tensor of an enclosing graph that the function uses is captured: the function graph gets a placeholder for it,
and the op that calls the function takes the outer tensor as an extra input, so its value is the one the outer
graph computes when that op runs (TF's `other_arguments`). The functions live in the outer graph's library
(`Graph._functions`), under names unique in it, for GraphDef export and for the kernels that run them.
"""
from __future__ import annotations

import itertools
import re
from typing import Callable

from adplace.framework.graph import Graph
from adplace.framework.operation import Tensor
from adplace.framework.tensor_shape import as_shape

_numbers = itertools.count()  # atomic in CPython: function names stay unique across threads
tracing = [0]  # how many function graphs are being traced now; op_builder.apply_op looks at it


class FuncGraph(Graph):
    """The graph of a function body: argument placeholders, captured outer tensors, outputs."""

    def __init__(self, name: str, outer_graph: Graph):
        super().__init__()
        self.name = name
        self.outer_graph = outer_graph
        self.seed = outer_graph.seed  # random ops in the body take their op seeds from the outer graph's seed
        self.inputs: list[Tensor] = []   # argument placeholders, then one per captured tensor (set by trace)
        self.outputs: list[Tensor] = []
        self.captures: list[tuple[Tensor, Tensor]] = []  # (outer tensor, its placeholder here)
        self._captured: dict[Tensor, Tensor] = {}

    building_function = property(lambda self: True, doc="True: this graph is a function's body.")

    def capture(self, tensor: Tensor) -> Tensor:
        """`tensor` as this graph sees it: itself when it is this graph's, else the placeholder standing for it."""
        if tensor._op._graph is self:
            return tensor
        inner = self._captured.get(tensor)
        if inner is None:
            outer = tensor
            if tensor._op._graph is not self.outer_graph:
                if not isinstance(self.outer_graph, FuncGraph):
                    raise ValueError(f"Tensor {tensor.name!r} is not from the graph that function {self.name!r} is "
                                     f"defined in, nor from a graph around it.")
                outer = self.outer_graph.capture(tensor)
            inner = self._placeholder(outer, f"captured_{_base_name(tensor.op.name)}")
            self._captured[tensor] = inner
            self.captures.append((outer, inner))
        return inner

    def _placeholder_for_arg(self, dtype, shape, index: int) -> Tensor:
        attrs = {"dtype": dtype.base_dtype, "shape": as_shape(shape)}
        return self._create_op_internal("Placeholder", [], attrs, f"args_{index}")._outputs[0]

    def _placeholder(self, like: Tensor, name: str) -> Tensor:
        attrs = {"dtype": like.dtype.base_dtype, "shape": like.shape}
        with self.name_scope(None):  # at the top level, whichever scope the capturing op is made in
            placeholder = self._create_op_internal("Placeholder", [], attrs, name)._outputs[0]
        return placeholder

    def _create_op_internal(self, op_type: str, inputs, attrs: dict | None = None, name: str | None = None,
                            **kwargs):
        return super()._create_op_internal(op_type, [self.capture(t) if isinstance(t, Tensor) else t
                                                     for t in inputs], attrs, name, **kwargs)


def _base_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.\-/]", "_", name).replace("/", "_")


class DefinedFunction:
    """A traced function: its graph, the outer tensors it captured, and where it is registered."""

    def __init__(self, name: str, graph: FuncGraph, num_args: int):
        self.name = name
        self.graph = graph
        self.num_args = num_args

    captured_inputs = property(lambda self: [outer for outer, _ in self.graph.captures],
                               doc="The outer tensors the calling op passes after its own arguments.")
    output_dtypes = property(lambda self: [t.dtype.base_dtype for t in self.graph.outputs])
    output_shapes = property(lambda self: [t.shape for t in self.graph.outputs])

    def __repr__(self) -> str:
        return f"<DefinedFunction {self.name}: {self.num_args} args, {len(self.graph.captures)} captured>"


def trace(name: str, fn: Callable[..., list], arg_specs: list, outer_graph: Graph,
          finish: Callable[[FuncGraph, object], list] | None = None) -> tuple[DefinedFunction, object]:
    """Trace `fn(*args)` into a new function graph whose arguments are placeholders of `arg_specs` ((dtype, shape)
    pairs); `finish(graph, result)`, called inside the graph, turns fn's result into the list of output tensors (by
    default: the result itself). Returns the function, registered in `outer_graph`'s library, and fn's result."""
    unique = f"{_base_name(name)}_{next(_numbers)}"
    graph = FuncGraph(unique, outer_graph)
    with graph.as_default():
        args = [graph._placeholder_for_arg(dtype, shape, i) for i, (dtype, shape) in enumerate(arg_specs)]
        tracing[0] += 1
        try:
            result = fn(*args)
            outputs = finish(graph, result) if finish is not None else result
        finally:
            tracing[0] -= 1
        graph.outputs = [graph.capture(t) for t in outputs]
    # Captured placeholders were appended as they were met: the arguments come first, in order.
    graph.inputs = args + [inner for _, inner in graph.captures]
    function = DefinedFunction(unique, graph, len(args))
    outer_graph._add_function(function)
    return function, result

