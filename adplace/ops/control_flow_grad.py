"""Gradients of TF1's control-flow primitives (TF's control_flow_grad.py).

In a cond, the gradient of a Merge switches the incoming gradient on the cond's predicate (each branch gets it only
when it was taken: on the other side it is dead), and the gradient of a Switch merges its branches' gradients (the
live one wins; a branch without a gradient gets zeros switched the same way, made by tf.gradients). While-loop
gradients build a backward loop (adplace/ops/while_grad.py).
"""
from __future__ import annotations

from adplace.framework.registry import NotDifferentiable, RegisterGradient
from adplace.ops import array_ops, math_ops
from adplace.ops.control_flow_contexts import CondContext, WhileContext, merge, output_context, switch


@RegisterGradient("Switch")
def _switch_grad(op, false_grad, true_grad):
    if isinstance(op._control_flow_context, WhileContext) and op._inputs[1]._op._type == "LoopCond":
        from adplace.ops import while_grad  # noqa: PLC0415 - the backward-loop machinery, built on this module
        return while_grad.loop_switch_grad(op, false_grad, true_grad)
    if isinstance(op._control_flow_context, CondContext):  # a cond's: each branch's gradient is dead when untaken
        return merge([false_grad, true_grad], name="cond_grad")[0], None
    # a bare Switch: gate each output's gradient by the predicate, as its output was
    pred = op._inputs[1]
    return merge([switch(false_grad, pred)[0], switch(true_grad, pred)[1]])[0], None


@RegisterGradient("RefSwitch")
def _ref_switch_grad(op, false_grad, true_grad):
    return _switch_grad(op, false_grad, true_grad)


@RegisterGradient("Merge")
def _merge_grad(op, grad, _):
    input_op = op._inputs[0]._op
    context = output_context(input_op)
    if isinstance(context, WhileContext) and input_op._type == "Enter" and \
            input_op._control_flow_context is context:
        from adplace.ops import while_grad  # noqa: PLC0415
        return while_grad.loop_merge_grad(op, grad)
    if isinstance(context, CondContext) and len(op._inputs) == 2:
        return switch(grad, context.pred, name="cond_grad")
    # no context (an imported graph): input i gets the gradient when it was the live one
    return [switch(grad, math_ops.equal(op._outputs[1], i))[1] for i in range(len(op._inputs))]


NotDifferentiable("RefEnter")  # a variable's reference entering a loop: its reads carry the gradient
NotDifferentiable("ControlTrigger")


@RegisterGradient("LoopCond")
def _loop_cond_grad(op, _):
    return [None]


@RegisterGradient("NextIteration")
def _next_iteration_grad(op, grad):
    return [grad]


@RegisterGradient("Enter")
def _enter_grad(op, grad):
    from adplace.ops import while_grad  # noqa: PLC0415
    return [while_grad.enter_grad(op, grad)]


@RegisterGradient("Exit")
def _exit_grad(op, grad):
    from adplace.ops import while_grad  # noqa: PLC0415
    return [while_grad.exit_grad(op, grad)]


def missing_switch_grad(op, index: int):
    """The gradient of a cond Switch output nothing downstream differentiates: zeros, live exactly when that output
    is (a Switch of zeros on the same predicate), made from the Switch's input so that inside a loop body it needs
    no value of the branch."""
    zeros = array_ops.zeros_like(op._inputs[0])
    return switch(zeros, op._inputs[1])[index]
