"""Kernels of TF's stacks (adplace/ops/stack_ops.py): each run of StackV2 makes a new list behind its handle (a 1-D
object array, so copies of the handle between devices share the list); pushes keep values where they are."""
from __future__ import annotations

import itertools

import numpy as np

from adplace.framework.errors import InvalidArgumentError, OutOfRangeError
from adplace.kernels.gpu import to_host
from adplace.kernels.registration import kernel

_COUNTER = itertools.count()


@kernel("StackV2", cpu_types=None, gpu_types=None)
def _stack(op, ctx):
    name = op._attrs.get("stack_name") or op.name

    def make(max_size):
        handle = np.empty(3, dtype=object)
        handle[0], handle[1], handle[2] = f"{name}_{next(_COUNTER)}", [], int(np.asarray(to_host(max_size)))
        return handle
    return make


@kernel("StackPushV2", cpu_types=None, gpu_types=None)
def _push(op, ctx):
    def push(handle, elem):
        values, limit = handle[1], handle[2]
        if 0 <= limit <= len(values):
            raise InvalidArgumentError(None, op, f"Stack[{handle[0]}] overflowed its max_size ({limit})")
        values.append(elem)
        return elem
    return push


@kernel("StackPopV2", cpu_types=None, gpu_types=None)
def _pop(op, ctx):
    def pop(handle):
        if not handle[1]:
            raise OutOfRangeError(None, op, f"Stack[{handle[0]}] is empty.")
        return handle[1].pop()
    return pop
