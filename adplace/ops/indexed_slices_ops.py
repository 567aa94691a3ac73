"""tf.IndexedSlices as ops use them: converted to a dense Tensor where an op needs one (TF's _IndexedSlicesToTensor,
registered here), dense tensors viewed as slices, and lists of slices made to agree on their index dtype.

    dense = tf.convert_to_tensor(tf.IndexedSlices(values, indices, dense_shape))   # UnsortedSegmentSum
"""
from __future__ import annotations

import warnings

import numpy as np

from adplace.framework import dtypes as _dtypes
from adplace.framework.composite import CompositeTensor
from adplace.framework.conversion import convert_to_tensor, register_tensor_conversion_function
from adplace.framework.indexed_slices import IndexedSlices
from adplace.framework.operation import Tensor
from adplace.framework.tensor_util import constant_value
from adplace.ops import array_ops, math_ops, segment_ops

_LARGE_SPARSE_NUM_ELEMENTS = 100_000_000  # TF warns before densifying more elements than this


def _indexed_slices_to_tensor(value: IndexedSlices, dtype=None, name: str | None = None,
                              as_ref: bool = False) -> Tensor:
    """Sum the slices into the dense tensor they describe; repeated indices add up."""
    if dtype is not None and not dtype.is_compatible_with(value.dtype):
        raise ValueError(f"Tensor conversion requested dtype {dtype.name} for IndexedSlices with dtype "
                         f"{value.dtype.name}: {value}")
    if value.dense_shape is None:
        raise ValueError(f"Tensor conversion requested for IndexedSlices without dense_shape: {value}")
    dense_shape = constant_value(value.dense_shape)
    if dense_shape is None:
        warnings.warn("Converting sparse IndexedSlices to a dense Tensor of unknown shape. This may consume a large "
                      "amount of memory.", stacklevel=3)
        rows = value.dense_shape[0]
    else:
        elements = int(np.prod(dense_shape))
        if elements >= _LARGE_SPARSE_NUM_ELEMENTS:
            warnings.warn(f"Converting sparse IndexedSlices to a dense Tensor with {elements} elements. This may "
                          f"consume a large amount of memory.", stacklevel=3)
        rows = int(dense_shape[0])
    return segment_ops.unsorted_segment_sum(value.values, value.indices, rows, name=name)


register_tensor_conversion_function(IndexedSlices, _indexed_slices_to_tensor)


def convert_to_tensor_or_indexed_slices(value, dtype=None, name: str | None = None):
    """IndexedSlices and other composites as they are (dtype checked), anything else through convert_to_tensor
    (tf.convert_to_tensor_or_indexed_slices)."""
    if isinstance(value, CompositeTensor):
        if dtype is not None and not _dtypes.as_dtype(dtype).is_compatible_with(value.dtype):
            raise ValueError(f"Tensor conversion requested dtype {_dtypes.as_dtype(dtype).name} for Tensor with "
                             f"dtype {value.dtype.name}: {value!r}")
        return value
    return convert_to_tensor(value, dtype=dtype, name=name)


def scalar_mul(scalar, x, name: str | None = None):
    """scalar * x for a scalar and a Tensor or IndexedSlices (tf.scalar_mul); an IndexedSlices stays sparse, only
    its values are scaled.

    Raises:
      ValueError: `scalar` is not a scalar ("Only scalar multiply works, got shape (2,)").
    """
    scalar = convert_to_tensor(scalar, dtype=x.dtype.base_dtype, name="scalar")
    if scalar.shape.ndims != 0:
        raise ValueError(f"Only scalar multiply works, got shape {scalar.shape}")
    if isinstance(x, IndexedSlices):
        return IndexedSlices(math_ops.multiply(scalar, x.values, name), x.indices, x.dense_shape)
    return math_ops.multiply(scalar, x, name)


def as_indexed_slices(x, optimize: bool = True) -> IndexedSlices:
    """`x` as IndexedSlices: itself, or a dense tensor as all of its rows (TF's math_ops._as_indexed_slices)."""
    if isinstance(x, IndexedSlices):
        return x
    if not isinstance(x, Tensor):
        raise TypeError(f"Not a Tensor or IndexedSlices: {type(x)}")
    x_shape = array_ops.shape(x, optimize=optimize)
    return IndexedSlices(x, math_ops.range(0, x_shape[0]), x_shape)


def as_indexed_slices_list(inputs: list, optimize: bool = True) -> list[IndexedSlices]:
    """Every input as IndexedSlices, with int64 indices throughout when some already are int64."""
    if not isinstance(inputs, (list, tuple)):
        raise TypeError(f"Expected a list or tuple, not a {type(inputs)}")
    slices = [as_indexed_slices(x, optimize=optimize) for x in inputs]
    if all(s.indices.dtype.base_dtype is _dtypes.int32 for s in slices) or \
            all(s.indices.dtype.base_dtype is _dtypes.int64 for s in slices):
        return slices
    return [IndexedSlices(s.values, math_ops.cast(s.indices, _dtypes.int64), s.dense_shape)
            if s.indices.dtype.base_dtype is _dtypes.int32 else s for s in slices]


def aggregate_indexed_slices(grads: list):
    """The sum of several gradients of which some are IndexedSlices: the slices concatenated (still sparse; dense
    ones taken as all their rows), as TF's gradients do, so an embedding's gradient never becomes dense."""
    grads = [g for g in grads if g is not None]
    if len(grads) < 2:
        return grads[0] if grads else None
    slices = as_indexed_slices_list(grads)
    return IndexedSlices(array_ops.concat([s.values for s in slices], 0),
                         array_ops.concat([s.indices for s in slices], 0), slices[0].dense_shape)
