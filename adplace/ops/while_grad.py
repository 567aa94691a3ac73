"""The gradient of a while loop, as TF 1.x builds it: a backward loop over the forward loop's iterations.

For each forward loop the gradient meets, `tf.gradients` gets a `GradLoopState`:
- the forward loop gains an iteration counter (`f_count`), and the backward loop counts it down (`b_count`);
- each loop variable's gradient enters the backward loop at its Exit (`b_exit`), is merged with the next
  iteration's gradient (`b_switch`) and leaves at the loop variable's Enter;
- a loop invariant's gradient is summed over the iterations (`b_acc`);
- a forward value that a gradient op in the backward loop reads is pushed on a stack in every forward iteration and
  popped, in reverse order, in the backward loop (StackV2/StackPushV2/StackPopV2); a loop invariant is entered as
  it is.
Nested loops nest the same way: an inner loop's backward loop runs in its outer loop's backward loop.
"""
from __future__ import annotations

import contextlib
import threading

from adplace.framework import dtypes as _dtypes
from adplace.framework.conversion import convert_to_tensor
from adplace.framework.default_graph import control_dependencies
from adplace.framework.indexed_slices import IndexedSlices
from adplace.framework.tensor_shape import TensorShape
from adplace.framework.operation import Operation, Tensor
from adplace.ops import array_ops, math_ops, stack_ops
from adplace.ops.constant_op import constant
from adplace.ops.control_flow_contexts import CondContext, WhileContext, builder, encloses, switch, while_of
from adplace.ops.op_builder import apply_op

_active = threading.local()  # .states: {forward WhileContext: GradLoopState} of the tf.gradients call being built


class GradWhileContext(WhileContext):
    """The backward loop of a forward loop: forward values come in through the state's stacks."""

    def __init__(self, state: "GradLoopState", outer, frame_name: str):
        forward = state.forward
        graph = forward.graph
        saved = graph._get_control_flow_context()
        graph._set_control_flow_context(outer)
        try:
            super().__init__(graph, frame_name, forward.parallel_iterations, forward.back_prop, forward.swap_memory,
                             None)
        finally:
            graph._set_control_flow_context(saved)
        self.state = state

    def value(self, t: Tensor) -> Tensor:
        if self.contains(t._op):
            return t
        if self.state.forward.contains(t._op):
            return self.state.real_value(t)
        return super().value(t)


class GradLoopState:
    """What the gradient of one forward loop needs: its backward loop and the forward values it reads."""

    def __init__(self, forward: WhileContext, outer: "GradLoopState | None"):
        self.forward, self.switch_map, self.history, self.sync, self.forward_sync = forward, {}, {}, None, None
        total, self.forward_index, self.forward_next = _add_forward_counter(forward, outer)
        forward.grad_loops = getattr(forward, "grad_loops", 0) + 1  # one backward loop per tf.gradients call
        frame = forward.frame_name.replace("while_context", f"grad_{forward.grad_loops}/while_context")
        # nested: in the outer loop's backward loop; else where tf.gradients was called (maybe an outer body)
        self.grad = GradWhileContext(self, _active.call_context if outer is None else outer.grad, frame)
        _add_backward_counter(self.grad, total, outer)

    def real_value(self, t: Tensor) -> Tensor:
        """The backward loop's view of the forward value `t` in the matching iteration."""
        got = self.history.get(t)
        if got is not None:
            return got
        op = t._op
        if op._type == "Enter" and op._attrs.get("is_constant"):  # a loop invariant: the same in every iteration
            got = self.grad.value(op._inputs[0])
        else:
            got = self._pop(t)
        self.history[t] = got
        return got

    def _pop(self, t: Tensor) -> Tensor:
        forward, grad, graph = self.forward, self.grad, self.forward.graph
        branch = _innermost_cond(t._op, forward)
        # one stack for the whole run, in the context tf.gradients was called in, as TF makes it: a nested loop's
        # values from every outer iteration go on it, and come off in reverse
        with control_dependencies(None), _in_context(graph, _active.call_context), graph.colocate_with(t._op, True):
            handle = stack_ops.stack(constant(-1, _dtypes.int32, name="f_acc/max_size"), t.dtype, name="f_acc")
        # the push runs where `t` is computed: in a cond's branch only when that branch is taken (its handle comes
        # in through the branch's Switch). As TF orders it: after this iteration's count (forward_index), and before
        # the next iteration's (its NextIteration waits for the push, or for f_sync, which waits for a branch's push)
        with control_dependencies(None), _in_context(graph, branch or forward):
            push = stack_ops.stack_push(forward.value(handle), t, forward.swap_memory, name="f_acc_push")
        push.op._add_control_input(self.forward_index.op)
        if branch is None:
            self.forward_next._add_control_input(push.op)
        else:
            self._forward_sync()._add_control_input(push.op)
        with control_dependencies(None), _in_context(graph, grad):
            source = grad.value(handle)
            if branch is not None:  # popped only in the backward iterations whose forward one took the branch
                source = switch(source, self.real_value(branch.pred))[branch.branch]
            pop = stack_ops.stack_pop(source, t.dtype, name="b_acc_pop")
        pop.set_shape(t.shape)
        # each backward iteration pops once (after its pivot: an op reading only loop invariants would run once
        # in TF), and the next iteration starts after this one's pops (b_sync), as TF orders them
        pop.op._add_control_input(grad.body_pivot.op)
        self._sync()._add_control_input(pop.op)
        return pop

    def _forward_sync(self):
        if self.forward_sync is None:
            graph, forward = self.forward.graph, self.forward
            with control_dependencies(None), _in_context(graph, forward):
                self.forward_sync = apply_op("ControlTrigger", [], {}, "f_sync")
            self.forward_next._add_control_input(self.forward_sync)
        return self.forward_sync

    def _sync(self):
        if self.sync is None:
            graph, grad = self.forward.graph, self.grad
            with control_dependencies(None), _in_context(graph, grad):
                self.sync = apply_op("ControlTrigger", [], {}, "b_sync")
            grad.count_next.op._add_control_input(self.sync)
        return self.sync


def _innermost_cond(op: Operation, forward: WhileContext) -> CondContext | None:
    """The innermost cond branch inside `forward`'s body that `op` is in, or None."""
    context = op._control_flow_context
    while context is not None and context is not forward:
        if isinstance(context, CondContext):
            return context
        context = context.outer
    return None


@contextlib.contextmanager
def _in_context(graph, context):
    saved = graph._get_control_flow_context()
    graph._set_control_flow_context(context)
    try:
        yield
    finally:
        graph._set_control_flow_context(saved)


def _add_forward_counter(forward: WhileContext, outer: "GradLoopState | None") -> tuple:
    """A new loop variable of the forward loop counting its iterations: (the count at exit, count + 1 in the body,
    its NextIteration op).
    A nested loop's run in one outer iteration starts after the previous one's values are all pushed (its counter
    waits for the outer counter, which waits for those pushes), so TF's parallel iterations keep the stacks in
    order."""
    graph = forward.graph
    with control_dependencies(None), _in_context(graph, forward.outer):
        zero = constant(0, _dtypes.int32, name="f_count")
    if outer is not None:
        zero.op._add_control_input(outer.forward_index.op._inputs[0]._op)
    enter = forward.enter(zero, is_constant=False, name="f_count")
    with control_dependencies(None), _in_context(graph, forward):
        merge = builder("Merge", [enter, enter], {"T": _dtypes.int32, "N": 2}, "f_count")._outputs[0]
        false, true = switch(merge, forward.loop_cond, name="f_count")
        index = math_ops.add(true, 1)
        next_iteration = builder("NextIteration", [index], {"T": _dtypes.int32}, "f_count")._outputs[0]
        merge.op._update_input(1, next_iteration)
    with _in_context(graph, forward.outer):
        total = builder("Exit", [false], {"T": _dtypes.int32}, "f_count")._outputs[0]
    return total, index, next_iteration.op


def _add_backward_counter(grad: GradWhileContext, total: Tensor, outer: "GradLoopState | None") -> None:
    """The backward loop's counter, from the forward count down to 0; its LoopCond is the backward loop's. A nested
    backward loop ends before its outer backward iteration does (the outer's b_sync waits for it)."""
    graph = grad.graph
    enter = grad.enter(total, is_constant=False, name="b_count")
    with control_dependencies(None), _in_context(graph, grad):
        merge = builder("Merge", [enter, enter], {"T": _dtypes.int32, "N": 2}, "b_count")._outputs[0]
        grad.pivot = merge
        pred = math_ops.greater_equal(merge, 1)
        grad.loop_cond = builder("LoopCond", [pred], {}, "b_count")._outputs[0]
        grad.pivot = grad.loop_cond
        false, true = switch(merge, grad.loop_cond, name="b_count")
        index = math_ops.subtract(true, 1)
        grad.pivot = grad.body_pivot = index
        next_iteration = builder("NextIteration", [index], {"T": _dtypes.int32}, "b_count")._outputs[0]
        grad.count_next = next_iteration
        merge.op._update_input(1, next_iteration)
    with _in_context(graph, grad.outer):
        done = builder("Exit", [false], {"T": _dtypes.int32}, "b_count")
    if outer is not None:
        outer._sync()._add_control_input(done)


# --- the calls tf.gradients makes ----------------------------------------------------------------------------------
@contextlib.contextmanager
def gradient_pass(graph):
    """Around one tf.gradients call: the backward loops it builds, closed up at its end."""
    saved = getattr(_active, "states", None), getattr(_active, "call_context", None)
    _active.states, _active.call_context = {}, graph._get_control_flow_context()
    try:
        yield
        for state in _active.states.values():
            _close_merges(state)
    finally:
        _active.states, _active.call_context = saved


def _close_merges(state: GradLoopState) -> None:
    """A loop variable whose next-iteration gradient never came (the body does not depend on it) gets zeros."""
    for merge_grad in state.switch_map.values():
        if merge_grad.op._inputs[1]._op._type != "NextIteration":
            with control_dependencies(None), _in_context(state.forward.graph, state.grad):
                zeros = array_ops.zeros_like(merge_grad)
                next_iteration = builder("NextIteration", [zeros], {"T": zeros.dtype.base_dtype}, "b_switch")
            merge_grad.op._update_input(1, next_iteration._outputs[0])


def _loop_of(op: Operation) -> WhileContext | None:
    return while_of(op._control_flow_context)


def state_for(forward: WhileContext) -> GradLoopState:
    states = getattr(_active, "states", None)
    if states is None:
        raise RuntimeError("while-loop gradients are built by tf.gradients")
    state = states.get(forward)
    if state is None:
        outer = while_of(forward.outer)
        if outer is not None and _called_inside(outer):  # tf.gradients called in the outer body: no outer backward
            outer = None
        state = states[forward] = GradLoopState(forward, None if outer is None else state_for(outer))
    return state


def _called_inside(forward: WhileContext) -> bool:
    """Is the running tf.gradients call made inside `forward`'s body? Its gradients then stay in the iteration."""
    return encloses(forward, getattr(_active, "call_context", None))


def grad_context(op: Operation):
    """The context an op's gradient is built in: the backward loop of the loop it is in (an Exit: of the loop it
    leaves), or none (also for tf.gradients called inside that loop's body)."""
    forward = _loop_of(op._inputs[0]._op) if op._type == "Exit" else _loop_of(op)
    if forward is None or getattr(_active, "states", None) is None or _called_inside(forward):
        return contextlib.nullcontext()
    if isinstance(forward, GradWhileContext):
        raise NotImplementedError(f"The gradient of a gradient's while loop ({op.name}) is not built")
    if not forward.back_prop:
        return contextlib.nullcontext()
    state = state_for(forward)
    return _in_context(op._graph, state.grad.outer if op._type == "Exit" else state.grad)


def exit_grad(op: Operation, grad):
    """A loop variable's gradient at its Exit enters the backward loop."""
    forward = _loop_of(op._inputs[0]._op)
    if forward is None:  # a loop imported from a GraphDef: which ops form it was not recorded
        raise LookupError(f"No gradient for the while loop ending at {op.name}: it was imported from a GraphDef, "
                          f"which does not record the loop's structure (build the loop with tf.while_loop, or import "
                          f"a graph whose gradients TF already built)")
    if not forward.back_prop:
        return None
    if grad is None:
        return None
    state = state_for(forward)
    return state.grad.enter(_dense(grad), is_constant=False, name="b_exit")


def _dense(grad):
    """A gradient crossing a backward loop's frame as a dense tensor (its loop variables keep one shape)."""
    return convert_to_tensor(grad) if isinstance(grad, IndexedSlices) else grad


def loop_switch_grad(op: Operation, false_grad, true_grad) -> tuple:
    """A loop Switch, visited twice: from its Exit (start the gradient's merge) and from the body (close it)."""
    false_grad, true_grad = _dense(false_grad), _dense(true_grad)
    state = state_for(_loop_of(op))
    merge_grad = state.switch_map.get(op)
    if merge_grad is not None:
        if true_grad is not None:
            next_iteration = builder("NextIteration", [true_grad], {"T": true_grad.dtype.base_dtype}, "b_switch")
            merge_grad.op._update_input(1, next_iteration._outputs[0])
        return None, None
    if false_grad is None:
        return None, None
    merge_grad = builder("Merge", [false_grad, false_grad], {"T": false_grad.dtype.base_dtype, "N": 2},
                         "b_switch")._outputs[0]
    state.switch_map[op] = merge_grad
    return merge_grad, None


def loop_merge_grad(op: Operation, grad) -> list:
    """A loop variable's Merge: the gradient leaves the backward loop (to the Enter) or goes round (to
    NextIteration)."""
    state = state_for(_loop_of(op))
    false, true = switch(_dense(grad), state.grad.loop_cond)
    return [false, true]


def enter_grad(op: Operation, grad):
    """At an Enter the gradient leaves the backward loop: a loop variable's directly, a loop invariant's summed over
    the iterations."""
    forward = op._control_flow_context
    if grad is None or not isinstance(forward, WhileContext) or not forward.back_prop or _called_inside(forward):
        return grad  # (called inside the loop: the value entering is the same in this iteration)
    state = state_for(forward)
    graph, context = op._graph, state.grad
    if not op._attrs.get("is_constant"):
        with _in_context(graph, context.outer):
            return builder("Exit", [grad], {"T": grad.dtype.base_dtype}, "b_exit")._outputs[0]
    value = op._inputs[0]
    if isinstance(grad, IndexedSlices):  # rows from every iteration, concatenated (TF's IndexedSlices accumulator)
        with control_dependencies(None), _in_context(graph, context.outer):
            rows = array_ops.concat([[0], array_ops.shape(value)[1:]], 0)
            no_values = array_ops.zeros(rows, dtype=grad.values.dtype, name="b_acc")
            no_indices = array_ops.zeros([0], dtype=grad.indices.dtype, name="b_acc")
            dense_shape = array_ops.shape(value, out_type=grad.indices.dtype)
        values = _accumulate(context, no_values, lambda acc: array_ops.concat([acc, grad.values], 0))
        indices = _accumulate(context, no_indices, lambda acc: array_ops.concat([acc, grad.indices], 0))
        return IndexedSlices(values, indices, dense_shape)
    with control_dependencies(None), _in_context(graph, context.outer):
        start = array_ops.zeros_like(value, name="b_acc")
    return _accumulate(context, start, lambda acc: math_ops.add(acc, grad))


def _accumulate(context: GradWhileContext, start: Tensor, step) -> Tensor:
    """A backward-loop variable from `start` (outside), `acc = step(acc)` each iteration; its value at the end."""
    graph, dtype = context.graph, start.dtype.base_dtype
    enter = context.enter(start, is_constant=False, name="b_acc")
    rows_vary = start.shape.rank is not None and start.shape.rank > 0 and start.shape.as_list()[0] == 0
    if rows_vary:  # a concatenating accumulator grows along its first dimension
        enter._shape = TensorShape([None] + start.shape.as_list()[1:])
    with control_dependencies(None), _in_context(graph, context):
        merge = builder("Merge", [enter, enter], {"T": dtype, "N": 2}, "b_acc")._outputs[0]
        false, true = switch(merge, context.loop_cond, name="b_acc")
        next_iteration = builder("NextIteration", [step(true)], {"T": dtype}, "b_acc")._outputs[0]
        merge.op._update_input(1, next_iteration)
    with _in_context(graph, context.outer):
        return builder("Exit", [false], {"T": dtype}, "b_acc")._outputs[0]


def is_loop_switch(op: Operation) -> bool:
    return op._type == "Switch" and op._inputs[1]._op._type == "LoopCond"
