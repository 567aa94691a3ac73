"""Kernels of the SparseTensorsMap ops (adplace/ops/sparse_tensors_map_ops.py), CPU only as in TF. The map lives in
the session's resources (`ctx.resources`) under the container and the name the op gives (its `shared_name`, else
its own name); handles count up from 0 per map, and a taken SparseTensor leaves the map."""
from __future__ import annotations

import threading

import numpy as np

from adplace.framework import dtypes as _dtypes
from adplace.framework.errors import InvalidArgumentError
from adplace.kernels.registration import NO_GPU, kernel, multi_output


class SparseTensorsMap:
    """Stored SparseTensors (indices, values, shape) by handle."""

    def __init__(self, name: str):
        self.name, self._lock, self._next, self._tensors = name, threading.Lock(), 0, {}

    def add(self, tensors: list) -> np.ndarray:
        with self._lock:
            handles = np.arange(self._next, self._next + len(tensors), dtype=np.int64)
            self._next += len(tensors)
            self._tensors.update(zip(handles.tolist(), tensors))
        return handles

    def take(self, handles, op) -> list:
        """The SparseTensors of `handles`, removed from the map; none is removed when one is missing."""
        with self._lock:
            missing = [h for h in handles if h not in self._tensors]
            if missing:
                raise InvalidArgumentError(None, op, f"Unable to find SparseTensor: {missing[0]} in map: {self.name}")
            taken = [self._tensors[h] for h in handles]
            for h in handles:
                self._tensors.pop(h, None)
            return taken


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value or "")


def _map(op, ctx, shared_name: str) -> SparseTensorsMap:
    name = shared_name or op.name
    return ctx.resources.lookup_or_create(_text(op._attrs.get("container")), name, False,
                                          lambda: SparseTensorsMap(name), lambda found: None)


def _checked(op, indices, values, shape) -> tuple:
    indices, values, shape = np.asarray(indices), np.asarray(values), np.asarray(shape)
    if indices.ndim != 2:
        raise InvalidArgumentError(None, op, f"Input indices should be a matrix but received shape {indices.shape}")
    if values.ndim != 1:
        raise InvalidArgumentError(None, op, f"Input values should be a vector but received shape {values.shape}")
    if shape.ndim != 1:
        raise InvalidArgumentError(None, op, f"Input shape should be a vector but received shape {shape.shape}")
    if indices.shape[0] != values.shape[0] or indices.shape[1] != shape.shape[0]:
        raise InvalidArgumentError(None, op, f"Number of indices ({indices.shape[0]}) and values "
                                             f"({values.shape[0]}), or the rank of indices ({indices.shape[1]}) and "
                                             f"of the shape ({shape.shape[0]}), differ")
    return indices.astype(np.int64), values, shape.astype(np.int64)


@kernel("AddSparseToTensorsMap", None, NO_GPU)
def _add_sparse(op, ctx):
    shared_name = _text(op._attrs.get("shared_name"))

    def add_sparse(indices, values, shape):
        stored = _checked(op, indices, values, shape)
        return _map(op, ctx, shared_name).add([stored])[0]
    return add_sparse


@kernel("AddManySparseToTensorsMap", None, NO_GPU)
def _add_many_sparse(op, ctx):
    shared_name = _text(op._attrs.get("shared_name"))

    def add_many_sparse(indices, values, shape):
        indices, values, shape = _checked(op, indices, values, shape)
        if shape.size <= 1:
            raise InvalidArgumentError(None, op, f"Rank of input SparseTensor should be > 1, but saw rank: "
                                                 f"{shape.size}")
        rows = int(shape[0])
        if indices.size and (indices[:, 0].min() < 0 or indices[:, 0].max() >= rows):
            raise InvalidArgumentError(None, op, f"Input SparseTensor has a batch index outside [0, {rows})")
        order = np.argsort(indices[:, 0], kind="stable")
        indices, values = indices[order], values[order]
        starts = np.searchsorted(indices[:, 0], np.arange(rows + 1))
        tensors = [(indices[a:b, 1:], values[a:b], shape[1:]) for a, b in zip(starts[:-1], starts[1:])]
        return _map(op, ctx, shared_name).add(tensors)
    return add_many_sparse


@kernel("TakeManySparseFromTensorsMap", None, NO_GPU)
def _take_many_sparse(op, ctx):
    shared_name = _text(op._attrs.get("shared_name"))
    dtype = _dtypes.as_dtype(op._attrs["dtype"])

    def take_many_sparse(handles):
        handles = np.asarray(handles)
        if handles.ndim != 1:
            raise InvalidArgumentError(None, op, f"sparse_handles should be a vector but received shape "
                                                 f"{handles.shape}")
        taken = _map(op, ctx, shared_name).take(handles.tolist(), op)
        if not taken:
            raise InvalidArgumentError(None, op, "Must have at least 1 serialized SparseTensor, but has 0")
        rank = taken[0][2].size
        for i, (_, values, shape) in enumerate(taken):
            if shape.size != rank:
                raise InvalidArgumentError(None, op, f"Inconsistent rank across SparseTensors: rank prior to "
                                                     f"SparseTensor[{i}] was: {rank} but rank of SparseTensor[{i}] "
                                                     f"is: {shape.size}")
            if values.dtype != (object if dtype == _dtypes.string else dtype.as_numpy_dtype):
                raise InvalidArgumentError(None, op, f"Requested SparseTensor of type {dtype.name} but "
                                                     f"SparseTensor[{i}].values.dtype() == {values.dtype}")
        indices = np.concatenate([np.concatenate([np.full((len(ix), 1), b, np.int64), ix], axis=1)
                                  for b, (ix, _, _) in enumerate(taken)])
        values = np.concatenate([v for _, v, _ in taken])
        shape = np.concatenate([[len(taken)], np.max([s for _, _, s in taken], axis=0)]).astype(np.int64)
        return multi_output([indices, values, shape])
    return take_many_sparse
