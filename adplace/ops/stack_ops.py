"""TF's stacks (StackV2, StackPushV2, StackPopV2): per-run LIFO stores behind a resource handle (a run's stacks go
when the run ends, so TF's StackCloseV2 is not needed).

A while loop's gradient pushes each forward value the backward loop needs in every forward iteration and pops it,
in reverse order, in the backward loop (adplace/ops/while_grad.py), as TF 1.x does.
"""
from __future__ import annotations

from adplace.framework import dtypes as _dtypes
from adplace.framework.operation import Tensor
from adplace.framework.registry import NotDifferentiable, register_op
from adplace.framework.tensor_shape import TensorShape
from adplace.ops.op_builder import SCALAR, apply_op_1

register_op("StackV2", lambda inputs, attrs, name: [(_dtypes.resource, SCALAR)], is_stateful=True)
register_op("StackPushV2", lambda inputs, attrs, name: [(inputs[1]._dtype.base_dtype, inputs[1]._shape)],
            is_stateful=True)
register_op("StackPopV2", lambda inputs, attrs, name: [(attrs["elem_type"], TensorShape(None))], is_stateful=True)
for _op_type in ("StackV2", "StackPushV2", "StackPopV2"):
    NotDifferentiable(_op_type)  # a loop's gradient reads stacks; nothing differentiates through them


def stack(max_size: Tensor, elem_type, stack_name: str = "", name: str | None = None) -> Tensor:
    """A new stack's handle (StackV2); `max_size` < 0 means unbounded."""
    return apply_op_1("StackV2", [max_size], {"elem_type": _dtypes.as_dtype(elem_type).base_dtype,
                                              "stack_name": stack_name}, name or "Stack")


def stack_push(handle: Tensor, elem: Tensor, swap_memory: bool = False, name: str | None = None) -> Tensor:
    """Push `elem`; outputs it (StackPushV2)."""
    return apply_op_1("StackPushV2", [handle, elem], {"T": elem.dtype.base_dtype, "swap_memory": swap_memory},
                      name or "StackPush")


def stack_pop(handle: Tensor, elem_type, name: str | None = None) -> Tensor:
    """Pop the last pushed value (StackPopV2)."""
    return apply_op_1("StackPopV2", [handle], {"elem_type": _dtypes.as_dtype(elem_type).base_dtype},
                      name or "StackPop")
