"""Constant folding's node simplifications (grappler's SimplifyReduction, SimplifyReshape, SimplifyTile and kin):
a step whose folded inputs make it compute nothing becomes an alias of its data input, and a reshape to a known
shape becomes a bare `reshape` call.

Aliased (the step's kernel passes its input on, as Identity's does, and reads only that input): a reduction
(Sum, Mean, Prod, Max, Min, Any, All) over a folded empty axis list, or with keep_dims over axes of size 1 only; a
Reshape or BroadcastTo to a folded shape equal to the input's; a Tile by folded multiples of 1; a Transpose by
the folded identity permutation. Reshaped in one call (`x.reshape(dims)`, no checks): a Reshape to a folded shape,
a Squeeze and an ExpandDims by a folded axis, where the input's shape is known and the op would succeed. What is
not known to succeed keeps its kernel, which raises TF's error when the step runs.

Shapes come from the plan's static shapes, refined where the plan is specialized to its fed values' shapes
(runtime/shape_specialization.py); axes, shapes and multiples from the values constant folding computed. Only
steps on the host (CPU and virtual GPUs) of plans without conds or loops are simplified, never a fetched op's.
"""
from __future__ import annotations

import operator
from typing import Callable

import numpy as np

from adplace.kernels.registration import forward
from adplace.runtime.plan_slots import as_tuple as _as_tuple

_REDUCTIONS = frozenset({"Sum", "Mean", "Prod", "Max", "Min", "Any", "All"})


def _axes(value, rank: int | None) -> list | None:
    """Folded axes as non-negative ints (None when out of range or when negative axes meet an unknown rank)."""
    axes = [int(a) for a in np.reshape(value, [-1])]
    if rank is None:
        return None if any(a < 0 for a in axes) else axes
    if any(not -rank <= a < rank for a in axes):
        return None
    return [a % rank for a in axes]


def _target(value, dims: tuple) -> tuple | None:
    """A Reshape's folded shape with its -1 resolved against the input's `dims`, or None when it does not fit."""
    target = [int(d) for d in np.reshape(value, [-1])]
    size = int(np.prod(dims))
    unknown = [k for k, d in enumerate(target) if d == -1]
    if len(unknown) > 1 or any(d < -1 for d in target):
        return None
    rest = int(np.prod([d for d in target if d != -1]))
    if unknown:
        if rest == 0 or size % rest:
            return None
        target[unknown[0]] = size // rest
    return tuple(target) if int(np.prod(target)) == size else None


def _simplified(op, dims: tuple | None, rank: int | None, value) -> tuple | Callable | None:
    """What a step of `op` may become, given its data input's `dims` (None unless fully known), its rank, and the
    folded value of its second input: () to alias its input, a reshape kernel, or None to keep it."""
    kind = op._type
    if kind in _REDUCTIONS:
        axes = _axes(value, rank)
        if axes is None:
            return None
        if not axes:
            return ()
        if op._attrs.get("keep_dims") and dims is not None and all(dims[a] == 1 for a in axes):
            return ()
        return None
    if kind == "Tile":
        multiples = np.reshape(value, [-1])
        return () if rank == len(multiples) and all(int(m) == 1 for m in multiples) else None
    if kind == "Transpose":
        perm = [int(p) for p in np.reshape(value, [-1])]
        return () if rank == len(perm) and perm == list(range(rank)) else None
    if dims is None:
        return None
    if kind == "BroadcastTo":
        return () if tuple(int(d) for d in np.reshape(value, [-1])) == dims else None
    if kind == "Reshape":
        target = _target(value, dims)
        if target is None:
            return None
        return () if target == dims else operator.methodcaller("reshape", target)
    if kind == "ExpandDims":
        axes = _axes(value, len(dims) + 1)
        if axes is None or len(axes) != 1:
            return None
        return operator.methodcaller("reshape", dims[:axes[0]] + (1,) + dims[axes[0]:])
    return None


def _squeezed(op, dims: tuple | None) -> Callable | None:
    """A Squeeze's reshape kernel when its input's shape is known and every dim it removes has size 1."""
    if dims is None:
        return None
    axes = _axes(op._attrs.get("squeeze_dims") or [], len(dims))
    if axes is None or any(dims[a] != 1 for a in axes):
        return None
    kept = tuple(d for k, d in enumerate(dims) if (k not in axes if axes else d != 1))
    return operator.methodcaller("reshape", kept)


KINDS = _REDUCTIONS | {"Tile", "Transpose", "BroadcastTo", "Reshape", "ExpandDims", "Squeeze"}


def simplify(index: int, plan_lists: tuple, known: dict, shape_of: Callable) -> bool:
    """Simplify step `index` (of kind KINDS, reading exactly its op's inputs) in place where it computes nothing or
    only a reshape; `shape_of(slot, tensor)` gives a slot's (refined) static shape. Whether it changed."""
    kernels, ins, _, ops, _ = plan_lists
    op = ops[index]
    in_slots = _as_tuple(ins[index])
    x = in_slots[0]
    shape = shape_of(x, op._inputs[0])
    dims = shape.as_tuple() if shape.is_fully_defined() else None
    rank = shape.ndims
    if op._type == "Squeeze":
        result = _squeezed(op, dims)
    elif len(in_slots) == 2 and in_slots[1] in known:
        result = _simplified(op, dims, rank, known[in_slots[1]])
    else:
        result = None
    if result is None:
        return False
    kernels[index], ins[index] = forward if result == () else result, x
    return True
