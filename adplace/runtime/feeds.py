"""Feed values: what Session.run accepts for a fed tensor, converted once per run into an owned array.

TF's rules (session.py `_run`): no Tensors as values, Python ints must fit the tensor's dtype, the value is converted
with NumPy to the tensor's dtype, and its shape must be compatible with the tensor's static shape.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from adplace.framework import dtypes as _dtypes
from adplace.framework.operation import Operation, Tensor


def feed_converter(tensor: Tensor) -> Callable:
    """A function turning a fed value into an owned array of the tensor's dtype, checking its static shape."""
    dtype = tensor.dtype.base_dtype
    np_dtype = dtype.as_numpy_dtype
    static = tensor.shape
    name = tensor.name
    dims = static.as_tuple()
    rank = None if dims is None else len(dims)
    known = tuple((i, d) for i, d in enumerate(dims or ()) if d is not None)  # checked without building shapes
    is_string = dtype is _dtypes.string

    def convert(value):
        if isinstance(value, (Tensor, Operation)) or hasattr(value, "_as_graph_element"):
            raise TypeError(f"The value of a feed cannot be a tf.Tensor object. Acceptable feed values include "
                            f"Python scalars, strings, lists, numpy ndarrays, or TensorHandles. Feeding {name}.")
        try:
            array = _dtypes.string_array(value) if is_string else np.array(value, dtype=np_dtype)
        except OverflowError as e:  # TF: "Type of feed value ... is not compatible with Tensor type"
            raise TypeError(f"Type of feed value {value!r} is not compatible with Tensor '{name}' of type "
                            f"{dtype.name} ({e}). Try a larger type (e.g. int64).") from None
        except (TypeError, ValueError) as e:
            raise type(e)(f"Cannot feed value {value!r} for Tensor '{name}' of dtype {dtype.name}: {e}") from None
        if rank is not None:
            shape = array.shape
            if len(shape) != rank or any(shape[i] != d for i, d in known):
                raise ValueError(f"Cannot feed value of shape {shape!r} for Tensor '{name}', which has shape "
                                 f"'{static}'")
        return array
    return convert
