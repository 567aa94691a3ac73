"""TF1's control-flow primitives and the contexts that build cond branches and while bodies with them.

The primitives are TF's op types, so a graph with control flow exports to TF and back: Switch (forward a value to
one of two outputs, the other is dead), Merge (the first live input), Enter/Exit (into and out of a loop's frame),
NextIteration (the value for the next iteration), LoopCond (the loop predicate), and their Ref forms.

A context is pushed on the graph while a branch or body is built (`Graph._set_control_flow_context`); the graph asks
it to bring in each input coming from outside (`enter_inputs`): a cond branch switches it on the predicate, a loop
body makes it a loop invariant (Enter with is_constant). An op built with no inputs gets a control input from the
context's pivot, so it runs only when the branch is taken or the iteration runs, as in TF.
"""
from __future__ import annotations

from adplace.framework import dtypes as _dtypes
from adplace.framework.indexed_slices import IndexedSlices
from adplace.framework.operation import Operation, Tensor
from adplace.framework.registry import register_op
from adplace.framework.tensor_shape import TensorShape
from adplace.ops import array_ops, math_ops
from adplace.ops.op_builder import SCALAR, apply_op, shapes_text

LOOP_EXITS = frozenset({"Exit"})


def _forward(inputs, attrs, name):
    return [(inputs[0]._dtype, inputs[0]._shape)]


def _check_scalar_pred(op_type: str, name: str, inputs, pred_at: int) -> None:
    pred = inputs[pred_at]
    if pred._dtype.base_dtype is not _dtypes.bool:
        raise TypeError(f"Input 'pred' of '{op_type}' Op has type {pred._dtype.base_dtype.name} that does not match "
                        f"expected type of bool.")
    rank = pred._shape.rank
    if rank not in (None, 0):
        raise ValueError(f"Shape must be rank 0 but is rank {rank} for '{name}' (op: '{op_type}') with input shapes: "
                         f"{shapes_text(inputs)}.")


def _switch(op_type: str):
    def infer(inputs, attrs, name):
        _check_scalar_pred(op_type, name, inputs, 1)
        return [(inputs[0]._dtype, inputs[0]._shape)] * 2
    return infer


def _merge(op_type: str):
    def infer(inputs, attrs, name):
        first = inputs[0]._dtype
        for t in inputs[1:]:
            if t._dtype.base_dtype is not first.base_dtype:
                raise TypeError(f"Inputs to '{name}' (op: '{op_type}') must have one type: {first.base_dtype.name} "
                                f"and {t._dtype.base_dtype.name}")
        shape = inputs[0]._shape
        for t in inputs[1:]:  # TF's Merge: the dims all inputs agree on; unknown where they differ
            if shape.rank is None or t._shape.rank != shape.rank:
                shape = TensorShape(None)
                break
            shape = TensorShape([a if a == b else None for a, b in zip(shape.as_tuple(), t._shape.as_tuple())])
        return [(first, shape), (_dtypes.int32, SCALAR)]
    return infer


def _loop_cond(inputs, attrs, name):
    _check_scalar_pred("LoopCond", name, inputs, 0)
    return [(_dtypes.bool, SCALAR)]


register_op("Switch", _switch("Switch"), is_view=True)  # outputs are its input: fetches copy
register_op("RefSwitch", _switch("RefSwitch"), ref_inputs=(0,))
register_op("Merge", _merge("Merge"), is_view=True)
for _name in ("Enter", "Exit", "NextIteration"):
    register_op(_name, _forward, is_view=True)
register_op("RefEnter", _forward, ref_inputs=(0,))  # a variable used in a loop body (RefMerge, RefExit and
register_op("LoopCond", _loop_cond)                 # RefNextIteration, for reference loop variables, are not built)
register_op("ControlTrigger", lambda inputs, attrs, name: [])  # a NoOp that runs even when what it waits on is dead


def _t_attr(t: Tensor) -> dict:
    return {"T": t._dtype.base_dtype}


def switch(data, pred: Tensor, name: str | None = None) -> tuple:
    """(output_false, output_true): `data` on the output `pred` selects; the other output is dead (tf.switch). An
    IndexedSlices is switched part by part."""
    if isinstance(data, IndexedSlices):
        parts = [switch(t, pred, name) for t in slices_parts(data)]
        return tuple(IndexedSlices(*(p[side] for p in parts)) for side in (0, 1))
    op_type = "RefSwitch" if data._dtype._is_ref else "Switch"
    return apply_op(op_type, [data, pred], _t_attr(data), name or "Switch")._outputs


def merge(inputs, name: str | None = None) -> tuple:
    """(output, value_index): the first live input and its index (TF's control_flow_ops.merge). When one input is
    an IndexedSlices, all are taken as IndexedSlices (a dense one: all its rows) and merged part by part."""
    inputs = list(inputs)
    if any(isinstance(t, IndexedSlices) for t in inputs):
        slices = [t if isinstance(t, IndexedSlices) else _all_rows(t) for t in inputs]
        if len({s.indices.dtype.base_dtype for s in slices}) > 1:  # int32 and int64 indices: int64, as TF
            slices = [IndexedSlices(s.values, math_ops.cast(s.indices, _dtypes.int64), s.dense_shape) for s in slices]
        values, index = merge([s.values for s in slices], name)
        indices = merge([s.indices for s in slices], name)[0]
        shapes = [s.dense_shape for s in slices]
        dense_shape = None if any(d is None for d in shapes) else merge(shapes, name)[0]
        return IndexedSlices(values, indices, dense_shape), index
    return apply_op("Merge", inputs, {**_t_attr(inputs[0]), "N": len(inputs)}, name or "Merge")._outputs


def slices_parts(value: IndexedSlices) -> list:
    """The tensors of an IndexedSlices, as they cross a Switch, a Merge or a loop."""
    return [value.values, value.indices] + ([] if value.dense_shape is None else [value.dense_shape])


def _all_rows(t: Tensor) -> IndexedSlices:
    """A dense tensor as the IndexedSlices of all its rows."""
    shape = array_ops.shape(t, optimize=False)  # computed from `t`, so dead exactly when `t` is
    return IndexedSlices(t, math_ops.range(shape[0]), shape)


def builder(op_type: str, inputs: list, attrs: dict, name: str, context=False) -> Operation:
    """Create a control-flow primitive with its inputs as given (no context brings them in), in `context` (default:
    the current one)."""
    graph = inputs[0]._op._graph
    saved = graph._get_control_flow_context()
    if context is False:
        context = saved
    graph._set_control_flow_context(None)
    try:
        op = apply_op(op_type, inputs, attrs, name)
    finally:
        graph._set_control_flow_context(saved)
    op._control_flow_context = context
    if context is not None and op_type != "Exit":
        context.seal(op)
    return op


_FRAME_OPS = frozenset({"Enter", "RefEnter", "Merge", "Switch", "RefSwitch", "NextIteration", "Exit", "LoopCond"})


def while_of(context):
    """The innermost while loop a context is in (itself, or an outer one), or None."""
    while context is not None and not isinstance(context, WhileContext):
        context = context.outer
    return context


def _differentiates(loop, context) -> bool:
    """Is `context` inside the backward loop of `loop` (or of a loop nested in it)? Its gradient ops read the
    forward values (they come in through stacks)."""
    while context is not None:
        state = getattr(context, "state", None)
        if state is not None and encloses(loop, state.forward):
            return True
        context = context.outer
    return False


def encloses(outer, context) -> bool:
    """Is `context` the context `outer` or nested in it?"""
    while context is not None:
        if context is outer:
            return True
        context = context.outer
    return False


class ControlFlowContext:
    """A cond branch or while body being built: which ops are in it, and how outside values come in."""

    def __init__(self, graph, outer: "ControlFlowContext | None"):
        self.graph, self.outer = graph, outer
        self._entered: dict = {}  # outside tensor -> the tensor ops in this context read instead

    def __enter__(self):
        self._saved = self.graph._get_control_flow_context()
        self.graph._set_control_flow_context(self)
        return self

    def __exit__(self, *exc):
        self.graph._set_control_flow_context(self._saved)
        return False

    def contains(self, op: Operation) -> bool:
        """Is `op` built in this context or one nested in it?"""
        return encloses(self, op._control_flow_context)

    def enter_inputs(self, inputs: tuple) -> tuple:
        return tuple(t if self.contains(t._op) else self.value(t) for t in inputs)

    def value(self, t: Tensor) -> Tensor:
        """The tensor ops in this context read for the outside tensor `t` (made once, then reused)."""
        if self.contains(t._op):
            return t
        inside = self._entered.get(t)
        if inside is None:
            outer_value = t if self.outer is None else self.outer.value(t)
            inside = self._entered[t] = self._bring_in(outer_value)
        return inside

    def _bring_in(self, t: Tensor) -> Tensor:
        raise NotImplementedError

    def added(self, op: Operation) -> None:
        """After `op` joined the graph inside this context: an op with no inputs from the context waits for the
        pivot, so it runs only when its branch or iteration does."""
        self.seal(op)
        if not op._inputs and not any(self.contains(c) for c in op._control_inputs):
            op._add_control_input(self.pivot.op)

    def check_use(self, t: Tensor, op: Operation, consumer) -> None:
        """ValueError (TF's CheckInputFromValidContext) when `op`, built in context `consumer`, reads `t` of this
        context from outside the while loop `t` is in; a loop's own Enter/Merge/Switch/NextIteration/Exit ops may."""
        loop = while_of(self)
        if loop is None or op._type in _FRAME_OPS or encloses(loop, consumer) or _differentiates(loop, consumer):
            return
        if while_of(consumer) is not None:
            raise ValueError(f"Cannot use '{t._op.name}' as input to '{op.name}' because they are in different while "
                             f"loops. See info log for more details.")
        raise ValueError(f"Cannot use '{t._op.name}' as input to '{op.name}' because '{t._op.name}' is in a while "
                         f"loop. See info log for more details.")

    def seal(self, op: Operation) -> None:
        """An op inside a while loop has a value per iteration: neither fetched nor fed by Session.run (TF)."""
        if while_of(self) is not None:
            self.graph.prevent_fetching(op)
            for t in op._outputs:
                self.graph.prevent_feeding(t)


class CondContext(ControlFlowContext):
    """One branch of a cond: outside values pass through a Switch on the predicate, taking this branch's output."""

    def __init__(self, graph, pred: Tensor, pivot: Tensor, branch: int):
        super().__init__(graph, graph._get_control_flow_context())
        self.pred, self.pivot, self.branch = pred, pivot, branch

    def _bring_in(self, t: Tensor) -> Tensor:
        op_type = "RefSwitch" if t._dtype._is_ref else "Switch"
        with self.graph.colocate_with(t._op, ignore_existing=True), self.graph.control_dependencies(None):
            return builder(op_type, [t, self.pred], _t_attr(t), "Switch", context=self)._outputs[self.branch]


class WhileContext(ControlFlowContext):
    """A while loop's frame being built: outside values become loop invariants (Enter with is_constant=True), and
    control inputs from outside the loop are moved onto its Enter ops (an edge may enter a frame only there)."""

    def __init__(self, graph, frame_name: str, parallel_iterations: int, back_prop: bool, swap_memory: bool,
                 maximum_iterations):
        super().__init__(graph, graph._get_control_flow_context())
        self.frame_name, self.parallel_iterations = frame_name, parallel_iterations
        self.back_prop, self.swap_memory, self.maximum_iterations = back_prop, swap_memory, maximum_iterations
        self.pivot: Tensor | None = None  # what input-less ops wait on: the first Merge, then the first body input
        self.loop_cond: Tensor | None = None
        self.external_controls: list = []
        self.enters: list = []

    def enter(self, t: Tensor, is_constant: bool, name: str = "Enter") -> Tensor:
        """An Enter (RefEnter for a reference) of `t` into this frame."""
        if self.outer is not None and not self.outer.contains(t._op):
            t = self.outer.value(t)  # from further out (or, in a backward loop, a forward value): through the outer
        source = while_of(t._op._control_flow_context)
        if source is not None and not encloses(source, self.outer):
            raise ValueError(f"Cannot use '{t._op.name}' in the while loop '{self.frame_name}' because they are in "
                             f"different while loops. See info log for more details.")
        op_type = "RefEnter" if t._dtype._is_ref else "Enter"
        attrs = {**_t_attr(t), "frame_name": self.frame_name, "is_constant": is_constant,
                 "parallel_iterations": self.parallel_iterations}
        with self.graph.control_dependencies(None):
            op = builder(op_type, [t], attrs, name, context=self)
        self.enters.append(op)
        return op._outputs[0]

    def _bring_in(self, t: Tensor) -> Tensor:
        return self.enter(t, is_constant=True)

    def added(self, op: Operation) -> None:
        outside = [c for c in op._control_inputs if not self.contains(c)]
        if outside:
            with self.graph._lock:
                op._control_inputs = [c for c in op._control_inputs if self.contains(c)]
                for c in outside:
                    if op in c._control_outputs:
                        c._control_outputs.remove(op)
            self.external_controls.extend(c for c in outside if c not in self.external_controls)
        super().added(op)


def output_context(op: Operation):
    """The context an op's outputs belong to: a loop's Exit hands its value to the loop's outer context."""
    context = op._control_flow_context
    if op._type in LOOP_EXITS and isinstance(context, WhileContext):
        return context.outer
    return context
