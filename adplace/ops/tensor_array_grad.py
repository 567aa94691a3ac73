"""Gradients of the TensorArray ops (adplace.ops.tensor_array_ops), as TF 1.x forms them (tensor_array_grad.py).

The gradient of a TensorArray is another TensorArray, made by TensorArrayGradV3 from the forward one and keyed by
the `tf.gradients` call it belongs to (its name scope: "gradients", "gradients_1", ...), so two gradient
computations never add into each other's array. Reading and writing swap: a read's gradient writes into the
gradient array (repeated writes to an index add up), a write's gradient reads it back; gather and scatter, concat
and split swap the same way. The flow carries the ordering: a read's gradient is the flow of its gradient write.
"""
from __future__ import annotations

from adplace.framework.default_graph import get_default_graph
from adplace.framework.registry import NotDifferentiable, RegisterGradient
from adplace.ops import array_ops
from adplace.ops.tensor_array_ops import TensorArray

for _op_type in ("TensorArrayV3", "TensorArrayGradV3", "TensorArraySizeV3", "TensorArrayCloseV3"):
    NotDifferentiable(_op_type)


def grad_source(op_or_tensor) -> str:
    """Which tf.gradients call built `op_or_tensor`: its name up to the last scope starting with "gradients"."""
    tokens = op_or_tensor.name.split("/")
    positions = [i for i, token in enumerate(tokens) if token.startswith("gradients")]
    if not positions:
        raise ValueError(f"Expected op/tensor name to start with gradients (excluding scope), got: "
                         f"{op_or_tensor.name}")
    return "/".join(tokens[:positions[-1] + 1])


def _grad_array(op, dtype, flow, source: str) -> TensorArray:
    forward = TensorArray(dtype, handle=op.inputs[0], flow=flow, colocate_with_first_write_call=False)
    return forward.grad(source=source, flow=flow)


def _after_forward_write(op, flow_grad):
    """The incoming flow gradient, ordered after the forward write `op` (its gradient array must see the write)."""
    flow_out = array_ops.identity(op.outputs[0], "flow_out")
    with get_default_graph().control_dependencies([flow_out]):
        return array_ops.identity(flow_grad, "write_barrier")


@RegisterGradient("TensorArrayReadV3")
def _read_grad(op, grad):
    handle, index, flow = op.inputs
    g = _grad_array(op, op.get_attr("dtype"), flow, grad_source(grad))
    return [None, None, g.write(index, grad).flow]


@RegisterGradient("TensorArrayWriteV3")
def _write_grad(op, flow):
    source = grad_source(flow)
    flow = _after_forward_write(op, flow)
    g = _grad_array(op, op.get_attr("T"), flow, source)
    return [None, None, g.read(op.inputs[1]), flow]


@RegisterGradient("TensorArrayGatherV3")
def _gather_grad(op, grad):
    handle, indices, flow = op.inputs
    g = _grad_array(op, op.get_attr("dtype"), flow, grad_source(grad))
    return [None, None, g.scatter(indices, grad).flow]


@RegisterGradient("TensorArrayScatterV3")
def _scatter_grad(op, flow):
    source = grad_source(flow)
    flow = _after_forward_write(op, flow)
    g = _grad_array(op, op.get_attr("T"), flow, source)
    return [None, None, g.gather(op.inputs[1]), flow]


@RegisterGradient("TensorArrayConcatV3")
def _concat_grad(op, grad, unused_lengths_grad):
    handle, flow = op.inputs
    g = _grad_array(op, op.get_attr("dtype"), flow, grad_source(grad))
    return [None, g.split(grad, lengths=op.outputs[1]).flow]


@RegisterGradient("TensorArraySplitV3")
def _split_grad(op, flow):
    source = grad_source(flow)
    flow = _after_forward_write(op, flow)
    g = _grad_array(op, op.get_attr("T"), flow, source)
    return [None, g.concat(), None, flow]
