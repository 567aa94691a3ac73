"""tf.SparseTensor: a tensor given by the coordinates and values of its non-default elements.

`dense[tuple(indices[i])] = values[i]`, zero (or the op's default) elsewhere. It is three tensors, int64
`indices` [N, rank], `values` [N] and int64 `dense_shape` [rank], and a CompositeTensor: `Session.run` fetches it
as a SparseTensorValue and feeds it from one (or from any tuple in that field order).

    st = tf.SparseTensor(indices=[[0, 1], [2, 0]], values=[5.0, 6.0], dense_shape=[3, 4])
    st.shape                          # TensorShape([3, 4]): dense_shape is a constant
    sess.run(st).values               # array([5., 6.], dtype=float32)
"""
from __future__ import annotations

import collections

from adplace.framework import dtypes as _dtypes
from adplace.framework.composite import CompositeTensor
from adplace.framework.conversion import convert_to_tensor
from adplace.framework.default_graph import name_scope
from adplace.framework.session_stack import session_for
from adplace.framework.tensor_shape import TensorShape, as_shape
from adplace.framework.tensor_util import shape_from_tensor

SparseTensorValue = collections.namedtuple("SparseTensorValue", ["indices", "values", "dense_shape"])
SparseTensorValue.__doc__ = "The fetched value of a SparseTensor: NumPy indices, values and dense_shape."


class SparseTensor(CompositeTensor):
    """A sparse tensor: `values[i]` at coordinates `indices[i]` of a dense tensor of shape `dense_shape`.

    Ops expect the indices in row-major (lexicographic) order; `tf.sparse_reorder` sorts them.
    """

    _value_type = SparseTensorValue

    @classmethod
    def from_value(cls, sparse_tensor_value) -> "SparseTensor":
        """A SparseTensor of constants from a SparseTensorValue (a SparseTensor is rebuilt from its tensors)."""
        if not is_sparse(sparse_tensor_value):
            raise TypeError(f"Neither a SparseTensor nor SparseTensorValue: {sparse_tensor_value}.")
        return SparseTensor(indices=sparse_tensor_value.indices, values=sparse_tensor_value.values,
                            dense_shape=sparse_tensor_value.dense_shape)

    def __init__(self, indices, values, dense_shape):
        """Wrap (converting) `indices` (int64 [N, rank]), `values` ([N]) and `dense_shape` (int64 [rank]).

        Raises:
          ValueError: a component has the wrong rank, or the static sizes of N or rank disagree.
        """
        with name_scope(None, "SparseTensor", [indices, values, dense_shape]):
            indices = convert_to_tensor(indices, name="indices", dtype=_dtypes.int64)
            values = convert_to_tensor(values, name="values")
            dense_shape = convert_to_tensor(dense_shape, name="dense_shape", dtype=_dtypes.int64)
        self._indices, self._values, self._dense_shape = indices, values, dense_shape
        indices_shape = indices.shape.with_rank(2)
        values_shape = values.shape.with_rank(1)
        dense_shape_shape = dense_shape.shape.with_rank(1)
        indices_shape.dims[0].merge_with(values_shape.dims[0])
        indices_shape.dims[1].merge_with(dense_shape_shape.dims[0])
        self._dense_shape_default = shape_from_tensor(dense_shape)

    indices = property(lambda self: self._indices, doc="2-D int64 Tensor [N, rank]: the coordinates of the values.")
    values = property(lambda self: self._values, doc="1-D Tensor [N]: the values at `indices`.")
    dense_shape = property(lambda self: self._dense_shape, doc="1-D int64 Tensor [rank]: the dense shape.")
    dtype = property(lambda self: self._values.dtype, doc="The dtype of the values.")
    op = property(lambda self: self._values.op, doc="The op producing `values`.")
    graph = property(lambda self: self._indices.graph, doc="The graph holding the three tensors.")

    @property
    def shape(self) -> TensorShape:
        """The dense shape as far as it is known while building (from a constant `dense_shape`)."""
        return self._dense_shape_default

    def get_shape(self) -> TensorShape:
        return self._dense_shape_default

    def set_shape(self, shape) -> None:
        """Narrow the static dense shape; ValueError when `shape` is incompatible with what is known."""
        self._dense_shape_default = self._dense_shape_default.merge_with(as_shape(shape))

    def with_values(self, new_values) -> "SparseTensor":
        """The same indices and dense_shape with other values (of the same length)."""
        return SparseTensor(self._indices, new_values, self._dense_shape)

    def consumers(self) -> list:
        return list(dict.fromkeys(op for t in self._components() for op in t.consumers()))

    def eval(self, feed_dict=None, session=None) -> SparseTensorValue:
        """The SparseTensorValue of this tensor in `session` (default: the default session)."""
        return session_for(self.graph, session, "evaluate tensor").run(self, feed_dict)

    def _components(self) -> tuple:
        return self._indices, self._values, self._dense_shape

    def __repr__(self) -> str:
        return f"SparseTensor(indices={self._indices}, values={self._values}, dense_shape={self._dense_shape})"


def is_sparse(x) -> bool:
    """Whether `x` is a SparseTensor or a SparseTensorValue."""
    return isinstance(x, (SparseTensor, SparseTensorValue))


def convert_to_tensor_or_sparse_tensor(value, dtype=None, name: str | None = None):
    """A SparseTensor (from a SparseTensorValue too) as it is, anything else through convert_to_tensor.

    Raises:
      RuntimeError: `dtype` differs from the SparseTensor's (TF's class for this case).
    """
    if dtype is not None:
        dtype = _dtypes.as_dtype(dtype)
    if isinstance(value, SparseTensorValue):
        value = SparseTensor.from_value(value)
    if isinstance(value, SparseTensor):
        if dtype is not None and not dtype.is_compatible_with(value.dtype):
            raise RuntimeError(f"Sparse dtype: requested = {dtype.name}, actual = {value.dtype.name}")
        return value
    return convert_to_tensor(value, dtype=dtype, name=name)
