"""Ops that lay out coordinates: tf.lin_space/tf.linspace (LinSpace) and the composite tf.meshgrid."""
from __future__ import annotations

from adplace.framework import dtypes as _dtypes
from adplace.framework.conversion import convert_to_tensor
from adplace.framework.default_graph import name_scope
from adplace.framework.operation import Tensor
from adplace.framework.registry import register_op
from adplace.framework.tensor_shape import TensorShape
from adplace.ops import array_ops
from adplace.ops.op_builder import apply_op_1, check_dtype, constant_value, shapes_text

_LINSPACE_TYPES = (_dtypes.float32, _dtypes.float64)


def _lin_space_infer(inputs, attrs, name):
    start, stop, num = inputs
    check_dtype("LinSpace", "start", start._dtype, _LINSPACE_TYPES)
    check_dtype("LinSpace", "num", num._dtype, (_dtypes.int32, _dtypes.int64))
    if stop._dtype.base_dtype is not start._dtype.base_dtype:
        raise TypeError(f"Input 'stop' of 'LinSpace' Op has type {stop._dtype.base_dtype.name} that does not match "
                        f"type {start._dtype.base_dtype.name} of argument 'start'.")
    for t in inputs:
        if t._shape.ndims not in (None, 0):
            raise ValueError(f"Shape must be rank 0 but is rank {t._shape.ndims} for '{name}' (op: 'LinSpace') with "
                             f"input shapes: {shapes_text(inputs)}.")
    value = constant_value(num)
    if value is not None and int(value) <= 0:
        raise ValueError(f"Requires num > 0: {int(value)} for '{name}' (op: 'LinSpace')")
    return [(start._dtype.base_dtype, TensorShape([None if value is None else int(value)]))]


register_op("LinSpace", _lin_space_infer)


def lin_space(start, stop, num, name: str | None = None) -> Tensor:
    """`num` evenly spaced values from `start` to `stop`, both included (tf.lin_space, tf.linspace).

        tf.lin_space(10.0, 12.0, 3)   # [10., 11., 12.]
    """
    with name_scope(name, "LinSpace", [start, stop, num]) as scope:
        start = convert_to_tensor(start, name="start")
        stop = convert_to_tensor(stop, dtype=start.dtype.base_dtype, name="stop")
        num = convert_to_tensor(num, name="num")
        return apply_op_1("LinSpace", [start, stop, num], {"T": start.dtype.base_dtype,
                                                           "Tidx": num.dtype.base_dtype}, name=scope)


linspace = lin_space


def meshgrid(*args, **kwargs) -> list[Tensor]:
    """N-D coordinate grids from N coordinate vectors (tf.meshgrid, keyword arguments `indexing` = "xy" (default:
    the first two output dims swapped, as NumPy's meshgrid) or "ij", and `name`). Built as TF builds it: each vector
    reshaped to its own axis and multiplied by ones of the grid's shape.

        x, y = tf.meshgrid([1, 2, 3], [4, 5])   # x: [[1, 2, 3], [1, 2, 3]], y: [[4, 4, 4], [5, 5, 5]]
    """
    from adplace.ops import math_ops  # math_ops builds on array_ops
    indexing = kwargs.pop("indexing", "xy")
    name = kwargs.pop("name", "meshgrid")
    if kwargs:
        raise TypeError(f"'{next(iter(kwargs))}' is an invalid keyword argument for this function")
    if indexing not in ("xy", "ij"):
        raise ValueError("indexing parameter must be either 'xy' or 'ij'")
    with name_scope(name, "meshgrid", args):
        ndim = len(args)
        ones_shape = (1,) * ndim
        outputs = [array_ops.reshape(convert_to_tensor(x), ones_shape[:i] + (-1,) + ones_shape[i + 1:])
                   for i, x in enumerate(args)]
        sizes = [array_ops.size(x) for x in args]
        dtype = convert_to_tensor(args[0]).dtype.base_dtype
        if indexing == "xy" and ndim > 1:
            outputs[0] = array_ops.reshape(outputs[0], (1, -1) + (1,) * (ndim - 2))
            outputs[1] = array_ops.reshape(outputs[1], (-1, 1) + (1,) * (ndim - 2))
            sizes[0], sizes[1] = sizes[1], sizes[0]
        grid = array_ops.ones(sizes, dtype)
        return [math_ops.multiply(x, grid) for x in outputs]
