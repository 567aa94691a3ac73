"""Const: constants, and the conversion of NumPy and Python values to tensors."""
from __future__ import annotations

import numpy as np

from adplace.framework import dtypes as _dtypes
from adplace.framework.conversion import convert_to_tensor, register_tensor_conversion_function
from adplace.framework.operation import Tensor
from adplace.framework.registry import register_op
from adplace.framework.tensor_shape import TensorShape
from adplace.ops.op_builder import apply_op_1

register_op("Const", lambda inputs, attrs, name: [(attrs["dtype"], TensorShape(attrs["value"].shape))], is_view=True)


def _default_dtype(value: np.ndarray) -> _dtypes.DType:
    """TF's defaults: Python floats -> float32, ints -> int32 (int64 when too large); NumPy keeps its dtype."""
    kind = value.dtype.kind
    if kind == "f" and value.dtype == np.float64:
        return _dtypes.float64
    if kind in "iu" and value.dtype == np.int64:
        return _dtypes.int64
    return _dtypes.as_dtype(value.dtype)


def _to_numpy(value, dtype: _dtypes.DType | None) -> np.ndarray:
    if value is None:
        raise ValueError("None values not supported.")
    if isinstance(value, Tensor) or hasattr(value, "_as_graph_element"):
        raise TypeError(f"Failed to convert object of type {type(value)} to a constant: {value!r} is symbolic. "
                        "Use tf.identity (or tf.stack for a list of tensors) instead of tf.constant.")
    if isinstance(value, np.ndarray) or isinstance(value, np.generic):
        array = np.asarray(value)
        if dtype is None:
            dtype = _default_dtype(array)
        elif dtype is not _dtypes.string and array.dtype.kind not in "USO":
            return np.array(array, dtype=dtype.as_numpy_dtype)  # TF casts NumPy values to the dtype asked for
    else:
        array = np.asarray(value)
        if array.dtype == object:
            raise TypeError(f"Failed to convert object of type {type(value)} to Tensor. Contents: {value!r}.")
        if dtype is None:
            if array.dtype.kind == "f":
                dtype = _dtypes.float32
            elif array.dtype.kind in "iu":
                fits = array.size == 0 or (array.min() >= -2**31 and array.max() < 2**31)
                dtype = _dtypes.int32 if fits else _dtypes.int64
            else:
                dtype = _dtypes.as_dtype(array.dtype)
    if dtype.is_integer and array.dtype.kind in "fc" and not np.all(np.mod(array, 1) == 0):
        raise TypeError(f"Expected {dtype.name}, got {value!r} of type '{type(value).__name__}' instead.")
    if dtype.is_bool and array.dtype.kind not in "b" and array.size:
        raise TypeError(f"Expected bool, got {value!r} of type '{type(value).__name__}' instead.")
    if dtype is _dtypes.string:
        return _dtypes.string_array(value)
    if array.dtype.kind in "USO" and dtype is not _dtypes.string:
        raise TypeError(f"Expected {dtype.name}, got {value!r} of type '{type(value).__name__}' instead.")
    return np.array(array, dtype=dtype.as_numpy_dtype)  # a copy: the Const owns it and freezes it


def constant(value, dtype=None, shape=None, name: str = "Const", verify_shape: bool = False):
    """A constant tensor (tf.constant). With `shape`, a scalar is broadcast and a shorter list is padded with its
    last element, as in TF1.

        tf.constant([1.0, 2.0, 3.0, 4.0], shape=[2, 2])   # [[1, 2], [3, 4]], float32
    """
    dtype = None if dtype is None else _dtypes.as_dtype(dtype).base_dtype
    array = _to_numpy(value, dtype)
    if dtype is None:
        dtype = _dtypes.string if array.dtype == object else _dtypes.as_dtype(array.dtype)
    if shape is not None:
        shape = [int(d) for d in (TensorShape(shape).as_list())]
        needed = int(np.prod(shape, dtype=np.int64))
        if verify_shape and list(array.shape) != shape:
            raise TypeError(f"Expected Tensor's shape: {tuple(shape)}, got {array.shape}.")
        if array.size == needed:
            array = array.reshape(shape)
        elif array.size == 1:
            array = np.full(shape, array.reshape(()), dtype=array.dtype)
        elif array.size < needed and array.size > 0:
            flat = array.reshape(-1)
            array = np.concatenate([flat, np.repeat(flat[-1:], needed - flat.size)]).reshape(shape)
        else:
            raise ValueError(f"Too many elements provided. Needed at most {needed}, but received {array.size}")
    array.setflags(write=False)
    return apply_op_1("Const", [], {"value": array, "dtype": dtype}, name=name)


def _contains_tensor(value) -> bool:
    if isinstance(value, (list, tuple)):
        return any(_contains_tensor(v) for v in value)
    return isinstance(value, Tensor) or hasattr(value, "_as_graph_element")


def _constant_conversion(value, dtype=None, name=None, as_ref=False):
    """Python/NumPy values become a Const; a list holding tensors is packed with tf.stack, as TF1 does."""
    if isinstance(value, (list, tuple)) and _contains_tensor(value):
        from adplace.ops import array_ops  # array_ops builds on this module
        return array_ops.stack([_constant_conversion(v, dtype) if isinstance(v, (list, tuple)) else
                                convert_to_tensor(v, dtype=dtype) for v in value], name=name or "packed")
    return constant(value, dtype=dtype, name=name or "Const")


register_tensor_conversion_function((list, tuple, int, float, complex, bool, str, bytes, np.ndarray, np.generic),
                                    _constant_conversion)
