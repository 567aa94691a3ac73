"""SparseTensors through the batchers' queues, as TF1's input.py sends them: each SparseTensor input is stored in a
SparseTensorsMap (AddSparseToTensorsMap, or AddManySparseToTensorsMap per row with enqueue_many) and its int64
handle, as a [1] vector, is what the queue holds; after the dequeue TakeManySparseFromTensorsMap turns a batch of
handles back into one SparseTensor with a batch dimension. Dense inputs pass through untouched.
"""
from __future__ import annotations

from adplace.framework import dtypes as _dtypes
from adplace.framework.conversion import convert_to_tensor
from adplace.framework.sparse_tensor import SparseTensor, SparseTensorValue
from adplace.framework.tensor_shape import Dimension
from adplace.framework.tensor_util import constant_value
from adplace.ops import array_ops, math_ops
from adplace.ops.constant_op import constant
from adplace.ops.control_flow_ops import with_dependencies
from adplace.ops.control_flow_v1 import cond
from adplace.ops.slicing_ops import gather
from adplace.ops.sparse_ops import sparse_retain
from adplace.ops.sparse_tensors_map_ops import (add_many_sparse_to_tensors_map, add_sparse_to_tensors_map,
                                                take_many_sparse_from_tensors_map)


class SparseInfo:
    """How one queue component was stored: `map_op` (the storing op, None for a dense input) and the stored
    SparseTensors' static rank (a Dimension)."""

    def __init__(self, map_op=None, rank=None):
        self.map_op, self.rank = map_op, Dimension(rank) if not isinstance(rank, Dimension) else rank

    sparse = property(lambda self: self.map_op is not None)

    def matches(self, other: "SparseInfo") -> bool:
        return self.sparse == other.sparse and (not self.sparse or self.rank.is_compatible_with(other.rank))


def convert(tensors: list) -> list:
    """Tensors as tensors, SparseTensors (and their values) as SparseTensors."""
    return [SparseTensor.from_value(t) if isinstance(t, SparseTensorValue) else
            t if isinstance(t, SparseTensor) else convert_to_tensor(t) for t in tensors]


def _store_one(t: SparseTensor, enqueue_many: bool, keep_input, shared_map_op):
    """(the handle(s) of `t`, the storing op): stored only if `keep_input` keeps it (TF's _maybe_store)."""
    shared_name = shared_map_op.name if shared_map_op is not None else None
    made = []

    def store(st, add):
        handle = add(st, shared_name=shared_name)
        made.append(handle.op)
        return handle

    if keep_input.shape.ndims == 1:  # a keep flag per row: drop the other rows' values, store every row
        t = sparse_retain(t, gather(keep_input, t.indices[:, 0]))
        return store(t, add_many_sparse_to_tensors_map), made[0]
    add = add_many_sparse_to_tensors_map if enqueue_many else add_sparse_to_tensors_map
    if constant_value(keep_input) is not None and bool(constant_value(keep_input)):
        return store(t, add), made[0]
    if enqueue_many:
        skipped = lambda: -1 * array_ops.ones(math_ops.cast(t.dense_shape[0:1], _dtypes.int32),  # noqa: E731
                                              dtype=_dtypes.int64)
    else:
        skipped = lambda: constant(-1, _dtypes.int64)  # noqa: E731
    handles = cond(keep_input, lambda: store(t, add), skipped)
    if enqueue_many:
        handles.set_shape([None])
    return handles, made[0]


def store(tensors: list, enqueue_many: bool, keep_input, shared: list | None = None) -> tuple[list, list]:
    """(`tensors` with each SparseTensor replaced by its handles, expanded to [1] per example; a SparseInfo per
    component). `shared`: the SparseInfos of the first list of a join, whose maps the SparseTensors go to."""
    stored, infos = [], []
    for i, t in enumerate(tensors):
        if not isinstance(t, SparseTensor):
            stored.append(t)
            infos.append(SparseInfo())
            continue
        shared_op = shared[i].map_op if shared is not None else None
        handles, op = _store_one(t, enqueue_many, keep_input, shared_op)
        rank = t.dense_shape.shape.with_rank(1).dims[0]
        stored.append(array_ops.expand_dims(handles, -1))
        infos.append(SparseInfo(shared_op or op, rank - 1 if enqueue_many else rank))
    return stored, infos


def store_lists(lists: list, enqueue_many: bool, keep_input) -> tuple[list, list]:
    """store() for every tensor list of a join, all into the first list's maps.

    Raises:
      ValueError: the lists do not have SparseTensors at the same places, of compatible ranks.
    """
    first, infos = store(lists[0], enqueue_many, keep_input)
    stored = [first]
    for tensors in lists[1:]:
        more, candidates = store(tensors, enqueue_many, keep_input, shared=infos)
        if not all(a.matches(b) for a, b in zip(infos, candidates)):
            raise ValueError(f"Inconsistent SparseTensors list: {lists[0]} vs. {tensors}")
        infos = [SparseInfo(a.map_op, a.rank.merge_with(b.rank)) if a.sparse else a for a, b in zip(infos, candidates)]
        stored.append(more)
    return stored, infos


def restore(dequeued, infos: list):
    """The dequeued batch with each sparse component's handles taken back out of its map as one SparseTensor;
    every component then waits for all of them (TF's ensure_restore_tensors). A single tensor stays single."""
    single = not isinstance(dequeued, (list, tuple))
    items = [dequeued] if single else list(dequeued)
    if not any(info.sparse for info in infos):
        return dequeued
    out = [take_many_sparse_from_tensors_map(info.map_op, array_ops.squeeze(t, [1]),
                                             rank=None if info.rank.value is None else info.rank.value + 1)
           if info.sparse else t for t, info in zip(items, infos)]
    values = [t.values if isinstance(t, SparseTensor) else t for t in out]

    def after(t):
        return with_dependencies(values, t)

    out = [SparseTensor(after(t.indices), after(t.values), after(t.dense_shape)) if isinstance(t, SparseTensor)
           else after(t) for t in out]
    return out[0] if single else out
