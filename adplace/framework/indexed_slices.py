"""tf.IndexedSlices: a sparse slice-wise value, `dense[indices[i]] = values[i]` for the rows named, zero elsewhere.

The gradient of `tf.gather` (and so of `tf.nn.embedding_lookup`) is one: only the gathered rows of a large
embedding get a gradient row, and optimizers update only those rows (SparseApply* ops, scatter updates).
Converting one to a Tensor sums the rows into a dense tensor (UnsortedSegmentSum, registered by adplace.ops).

    g, = tf.gradients(tf.reduce_sum(tf.gather(params, [0, 2, 0])), params)
    g.indices, g.values, g.dense_shape     # [0, 2, 0], ones [3, ...], shape(params)
"""
from __future__ import annotations

import collections

from adplace.framework.composite import CompositeTensor
from adplace.framework.operation import Tensor
from adplace.framework.tensor_shape import TensorShape, unknown_shape
from adplace.framework.tensor_util import shape_from_tensor

IndexedSlicesValue = collections.namedtuple("IndexedSlicesValue", ["values", "indices", "dense_shape"])
IndexedSlicesValue.__doc__ = "The fetched value of an IndexedSlices: NumPy values, indices and dense_shape."


class IndexedSlices(CompositeTensor):
    """Rows `values[i]` of a dense tensor of shape `dense_shape`, at rows `indices[i]` (repeats are summed)."""

    _value_type = IndexedSlicesValue

    def __init__(self, values: Tensor, indices: Tensor, dense_shape: Tensor | None = None):
        self._values = values
        self._indices = indices
        self._dense_shape = dense_shape

    values = property(lambda self: self._values, doc="The rows: a Tensor of shape [len(indices)] + dense row shape.")
    indices = property(lambda self: self._indices, doc="1-D int Tensor: the dense row of each value row.")
    dense_shape = property(lambda self: self._dense_shape, doc="1-D int Tensor: the dense shape, or None.")
    name = property(lambda self: self._values.name)
    device = property(lambda self: self._values.device)
    op = property(lambda self: self._values.op)
    dtype = property(lambda self: self._values.dtype)
    graph = property(lambda self: self._values.graph)

    @property
    def shape(self) -> TensorShape:
        """The dense shape as far as it is known while building (TF: unknown when dense_shape is None)."""
        if self._dense_shape is None:
            return unknown_shape()
        return shape_from_tensor(self._dense_shape)

    def get_shape(self) -> TensorShape:
        return self.shape

    def consumers(self) -> list:
        return self._values.consumers()

    def _components(self) -> tuple:
        return self._values, self._indices, self._dense_shape

    def __neg__(self) -> "IndexedSlices":
        return IndexedSlices(-self._values, self._indices, self._dense_shape)

    def __str__(self) -> str:
        shape = "" if self._dense_shape is None else f", dense_shape={self._dense_shape}"
        return f"IndexedSlices(indices={self._indices}, values={self._values}{shape})"

    __repr__ = __str__
