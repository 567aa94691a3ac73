"""Ops that choose elements by a condition or an index: tf.where (Select, Where), tf.where_v2 (SelectV2), tf.one_hot,
and the composites tf.sequence_mask and tf.boolean_mask."""
from __future__ import annotations

import math

from adplace.framework import dtypes as _dtypes
from adplace.framework.conversion import convert_to_tensor
from adplace.framework.default_graph import name_scope
from adplace.framework.operation import Tensor
from adplace.framework.registry import register_op
from adplace.framework.tensor_shape import TensorShape, unknown_shape
from adplace.ops import array_ops, math_ops, slicing_ops
from adplace.ops.op_builder import (apply_op_1, broadcast_dims, check_dtype, check_same_dtype, constant_value,
                                    merged_shape, shapes_text)


# --- Select, Where, SelectV2 ----------------------------------------------------------------------------------------
def _select_dtype(op_type: str, inputs) -> _dtypes.DType:
    """The dtype of Select's or SelectV2's t and e, which must agree, after checking that the condition is bool."""
    cond, t, e = inputs
    if cond._dtype.base_dtype is not _dtypes.bool:
        raise TypeError(f"Input 'condition' of '{op_type}' Op has type {cond._dtype.base_dtype.name} that does not "
                        f"match expected type of bool.")
    return check_same_dtype(op_type, [t, e], ("t", "e"))


def _select_infer(inputs, attrs, name):
    cond, t, e = inputs
    dtype = _select_dtype("Select", inputs)
    shape = merged_shape("Select", name, [t, e])
    c_dims, dims = cond._shape.as_tuple(), shape.as_tuple()
    if c_dims is not None and dims is not None and c_dims != () and not (
            TensorShape(c_dims).is_compatible_with(shape) or (len(c_dims) == 1 and dims and
                                                               TensorShape(c_dims[:1]).is_compatible_with(
                                                                   TensorShape(dims[:1])))):
        raise ValueError(f"Shapes must be equal rank, but are {len(c_dims)} and {len(dims)} for '{name}' "
                         f"(op: 'Select') with input shapes: {shapes_text(inputs)}.")
    return [(dtype, shape)]


register_op("Select", _select_infer)


def where(condition, x=None, y=None, name: str | None = None) -> Tensor:
    """Elements of `x` where `condition` holds, else of `y` (tf.where); with neither, the indices of true elements.

    As TF1's Select, `condition` has the shape of x and y, or is a vector choosing whole rows, or is a scalar.
    """
    with name_scope(name, "Where" if x is None and y is None else "Select", [condition, x, y]) as scope:
        condition = convert_to_tensor(condition, name="condition")
        if x is None and y is None:
            return apply_op_1("Where", [condition], name=scope)
        if x is None or y is None:
            raise ValueError("x and y must both be non-None or both be None.")
        x = convert_to_tensor(x, name="x")
        y = convert_to_tensor(y, dtype=x.dtype.base_dtype, name="y")
        return apply_op_1("Select", [condition, x, y], {"T": x.dtype.base_dtype}, name=scope)


register_op("Where", lambda inputs, attrs, name: [(_dtypes.int64, TensorShape([None, inputs[0]._shape.ndims]))])


def _select_v2_infer(inputs, attrs, name):
    cond, t, e = inputs
    dtype = _select_dtype("SelectV2", inputs)
    dims = broadcast_dims(t._shape.as_tuple(), e._shape.as_tuple(), name, "SelectV2", inputs)
    return [(dtype, TensorShape(broadcast_dims(cond._shape.as_tuple(), dims, name, "SelectV2", inputs)))]


register_op("SelectV2", _select_v2_infer)


def where_v2(condition, x=None, y=None, name: str | None = None) -> Tensor:
    """tf.where_v2 (TF2's tf.where): elements of `x` where `condition` holds, else of `y`, the three broadcast
    against each other (SelectV2); with neither x nor y, the int64 coordinates of the true elements (Where).

        tf.where_v2([True, False], 1.0, [[2.0], [3.0]])   # [[1., 2.], [1., 3.]]
    """
    if x is None and y is None:
        return where(condition, name=name)
    if x is None or y is None:
        raise ValueError("x and y must both be non-None or both be None.")
    with name_scope(name, "SelectV2", [condition, x, y]) as scope:
        condition = convert_to_tensor(condition, name="condition")
        x = convert_to_tensor(x, name="t")
        y = convert_to_tensor(y, dtype=x.dtype.base_dtype, name="e")
        return apply_op_1("SelectV2", [condition, x, y], {"T": x.dtype.base_dtype}, name=scope)


# --- OneHot ---------------------------------------------------------------------------------------------------------
def _one_hot_infer(inputs, attrs, name):
    indices, depth_t, on, off = inputs
    check_dtype("OneHot", "indices", indices._dtype, (_dtypes.uint8, _dtypes.int32, _dtypes.int64))
    check_dtype("OneHot", "depth", depth_t._dtype, (_dtypes.int32,))
    dtype = check_same_dtype("OneHot", [on, off], ("on_value", "off_value"))
    axis = attrs["axis"]
    if axis < -1:
        raise ValueError(f"axis must be >= -1 for '{name}' (op: 'OneHot') with input shapes: {shapes_text(inputs)}.")
    for t in (depth_t, on, off):
        if t._shape.ndims not in (None, 0):
            raise ValueError(f"Shape must be rank 0 but is rank {t._shape.ndims} for '{name}' (op: 'OneHot') with "
                             f"input shapes: {shapes_text(inputs)}.")
    dims, depth = indices._shape.as_tuple(), constant_value(depth_t)
    if dims is None:
        return [(dtype, unknown_shape())]
    at = len(dims) if axis == -1 else axis
    if at > len(dims):
        raise ValueError(f"Expected axis to be -1 or between [0, {len(dims) + 1}).  But received: {axis} for "
                         f"'{name}' (op: 'OneHot') with input shapes: {shapes_text(inputs)}.")
    depth = None if depth is None else int(depth)
    return [(dtype, TensorShape(dims[:at] + (depth,) + dims[at:]))]


register_op("OneHot", _one_hot_infer)


def _dtype_text(dtype) -> str:
    """A dtype as TF1 prints one in messages: <dtype: 'float32'>."""
    return f"<dtype: '{_dtypes.as_dtype(dtype).name}'>"


def one_hot(indices, depth, on_value=None, off_value=None, axis=None, dtype=None,
            name: str | None = None) -> Tensor:
    """A one-hot tensor: `on_value` where the new axis' position equals the index, else `off_value` (tf.one_hot).

    The new axis of size `depth` goes at `axis` (last when None or -1). The dtype is `dtype`, else on_value's or
    off_value's, else float32; an index outside [0, depth) gives a row of `off_value`.

        tf.one_hot([0, 2, -1], 3)   # [[1., 0., 0.], [0., 0., 1.], [0., 0., 0.]]

    Raises:
      TypeError: on_value, off_value and `dtype` disagree.
    """
    with name_scope(name, "one_hot", [indices, depth, on_value, off_value]) as scope:
        on = None if on_value is None else convert_to_tensor(on_value, name="on_value")
        off = None if off_value is None else convert_to_tensor(off_value, name="off_value")
        if on is not None or off is not None:
            if dtype is not None:
                for value, label in ((on, "on_value"), (off, "off_value")):
                    if value is not None and value.dtype.base_dtype != _dtypes.as_dtype(dtype):
                        raise TypeError(f"dtype {_dtype_text(value.dtype.base_dtype)} of {label} does not match "
                                        f"dtype parameter {_dtype_text(dtype)}")
            else:
                dtype = (on if on is not None else off).dtype.base_dtype
        elif dtype is None:
            dtype = _dtypes.float32
        dtype = _dtypes.as_dtype(dtype).base_dtype
        on = convert_to_tensor(1, dtype, name="on_value") if on is None else on
        off = convert_to_tensor(0, dtype, name="off_value") if off is None else off
        if on.dtype.base_dtype != off.dtype.base_dtype:
            raise TypeError(f"dtype {_dtype_text(on.dtype.base_dtype)} of on_value does not match dtype "
                            f"{_dtype_text(off.dtype.base_dtype)} of off_value")
        indices = convert_to_tensor(indices, name="indices")
        depth_t = convert_to_tensor(depth, name="depth")
        return apply_op_1("OneHot", [indices, depth_t, on, off],
                          {"axis": -1 if axis is None else int(axis), "T": dtype, "TI": indices.dtype.base_dtype},
                          name=scope)




# --- sequence_mask, boolean_mask: composites, as TF builds them -----------------------------------------------------
def sequence_mask(lengths, maxlen=None, dtype=_dtypes.bool, name: str | None = None) -> Tensor:
    """mask[i..., j] = j < lengths[i...], for j in [0, maxlen) (tf.sequence_mask); maxlen defaults to the largest
    length. Built as TF builds it: range(maxlen) < expand_dims(lengths, -1), cast to `dtype`.

        tf.sequence_mask([1, 3], 4)   # [[True, False, False, False], [True, True, True, False]]
    """
    from adplace.ops import reduction_ops  # reduction_ops imports this module
    with name_scope(name, "SequenceMask", [lengths, maxlen]):
        lengths = convert_to_tensor(lengths)
        if maxlen is None:
            maxlen = reduction_ops.reduce_max(lengths)
            maxlen = math_ops.maximum(convert_to_tensor(0, dtype=maxlen.dtype.base_dtype), maxlen)
        else:
            maxlen = convert_to_tensor(maxlen)
        if maxlen.shape.ndims not in (None, 0):
            raise ValueError("maxlen must be scalar for sequence_mask")
        index_dtype = maxlen.dtype.base_dtype
        row_vector = math_ops.range(convert_to_tensor(0, dtype=index_dtype), maxlen,
                                    convert_to_tensor(1, dtype=index_dtype))
        matrix = math_ops.cast(array_ops.expand_dims(lengths, -1), index_dtype)
        result = math_ops.less(row_vector, matrix)
        dtype = _dtypes.as_dtype(dtype).base_dtype
        return result if dtype is _dtypes.bool else math_ops.cast(result, dtype)


def boolean_mask(tensor, mask, name: str = "boolean_mask", axis=None) -> Tensor:
    """The slices of `tensor` where `mask` is True (tf.boolean_mask): mask's K dims match tensor's dims
    axis..axis+K-1, which become one dim of the selected positions, in row-major order.

        tf.boolean_mask([[1, 2], [3, 4], [5, 6]], [True, False, True])   # [[1, 2], [5, 6]]

    Raises:
      ValueError: mask is a scalar, has unknown rank, or its shape does not fit tensor's.
    """
    from adplace.ops import reduction_ops  # reduction_ops imports this module
    with name_scope(name, values=[tensor, mask]):
        tensor = convert_to_tensor(tensor, name="tensor")
        mask = convert_to_tensor(mask, name="mask")
        mask_dims, t_shape = mask.shape.as_tuple(), tensor.shape
        if mask_dims == ():
            raise ValueError("mask cannot be scalar.")
        if mask_dims is None:
            raise ValueError("Number of mask dimensions must be specified, even if some dimensions are None.  E.g. "
                             "shape=[None] is ok, but shape=None is not.")
        k, axis = len(mask_dims), 0 if axis is None else axis
        t_dims = t_shape.as_tuple()
        if t_dims is not None:
            covered = TensorShape(t_dims[axis:axis + k])
            if not covered.is_compatible_with(mask.shape):
                raise ValueError(f"Shapes {covered} and {mask.shape} are incompatible")
        dims_t = array_ops.shape(tensor)
        leading = reduction_ops.reduce_prod(dims_t[axis:axis + k], [0])
        tensor = array_ops.reshape(tensor, array_ops.concat([dims_t[:axis], [leading], dims_t[axis + k:]], 0))
        if t_dims is not None:
            known = t_dims[axis:axis + k]
            first = None if None in known else int(math.prod(known))
            tensor.set_shape(TensorShape(t_dims[:axis] + (first,) + t_dims[axis + k:]))
        indices = array_ops.squeeze(where(array_ops.reshape(mask, [-1])), axis=[1])
        return slicing_ops.gather(tensor, indices, axis=axis)
