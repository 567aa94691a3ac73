"""Kernels of TF1's control-flow primitives (adplace/ops/control_flow_contexts.py) and the dead value they pass.

A Switch sends its input to the output its predicate selects and DEAD to the other; the plan skips every op with a
dead input (its outputs are dead too: adplace/runtime/control_flow.py) and a Merge forwards its first live input.
A Switch of a variable reference (RefSwitch) passes LIVE or DEAD: the reference itself is bound when the plan is
built. Enter, Exit and NextIteration forward their input: the runtime runs a loop's frame itself, not these.
Predicates are host values on every device, as TF keeps them in host memory.
"""
from __future__ import annotations

import numpy as np

from adplace.framework.errors import InvalidArgumentError
from adplace.framework.tensor_shape import dims_text
from adplace.kernels.gpu import to_host
from adplace.kernels.registration import fixed, kernel


class _Dead:
    """The value of a tensor on the branch not taken."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "DEAD"


class _Live:
    """A live reference output (RefSwitch, RefEnter): the reference is bound at plan time."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "LIVE"


DEAD, LIVE = _Dead(), _Live()


def predicate(op, value) -> bool:
    """A scalar bool tensor's value; InvalidArgumentError naming `op` for any other shape."""
    value = np.asarray(to_host(value))
    if value.ndim != 0:
        raise InvalidArgumentError(None, op, f"The second input must be a scalar, but it has shape "
                                   f"{dims_text(value.shape)}\n\t [[{{{{node {op.name}}}}}]]")
    return bool(value)


@kernel("Switch", cpu_types=None, gpu_types=None)
def _switch(op, ctx):
    def run(data, pred):
        return (DEAD, data) if predicate(op, pred) else (data, DEAD)
    return run


@kernel("RefSwitch", cpu_types=None, gpu_types=None)
def _ref_switch(op, ctx):
    def run(pred):
        return (DEAD, LIVE) if predicate(op, pred) else (LIVE, DEAD)
    return run


def _merge(*inputs):
    for index, value in enumerate(inputs):
        if value is not DEAD:
            return value, np.int32(index)
    return DEAD, DEAD


kernel("Merge", cpu_types=None, gpu_types=None)(fixed(_merge))
for _op_type in ("Enter", "Exit", "NextIteration"):
    kernel(_op_type, cpu_types=None, gpu_types=None)(fixed(lambda x: x))
kernel("RefEnter", cpu_types=None, gpu_types=None)(fixed(lambda: LIVE))
kernel("ControlTrigger", cpu_types=None, gpu_types=None)(fixed(lambda: None))


@kernel("LoopCond", cpu_types=None, gpu_types=None)
def _loop_cond(op, ctx):
    return lambda pred: np.asarray(predicate(op, pred))
