"""Ops that take parts of a tensor: Python indexing (StridedSlice), tf.slice, tf.gather, tf.pad (Pad, PadV2,
MirrorPad) and tf.reverse. Indexing a Tensor (`x[1:, None]`) is installed here as `Tensor.__getitem__`.
"""
from __future__ import annotations

import numpy as np

from adplace.framework import dtypes as _dtypes
from adplace.framework.conversion import convert_to_tensor
from adplace.framework.default_graph import name_scope
from adplace.framework.operation import Tensor
from adplace.framework.registry import register_op
from adplace.framework.tensor_shape import TensorShape, dims_text, unknown_shape
from adplace.ops.op_builder import (apply_op_1, check_dtype, check_same_dtype, constant_value, int_const,
                                    normalize_axis, shape_from_tensor, shapes_text)


# --- StridedSlice (Python indexing) --------------------------------------------------------------------------------
def _slice_infer(inputs, attrs, name):
    """The shape of x[spec], dimension by dimension, so unknown dims stay unknown instead of losing the rank."""
    x = inputs[0]
    dims = x._shape.as_tuple()
    if dims is None:
        return [(x._dtype.base_dtype, unknown_shape())]
    spec = list(attrs["slice_spec"])
    consumed = sum(1 for k in spec if k is not None and k is not Ellipsis)
    if Ellipsis in spec:
        at = spec.index(Ellipsis)
        spec[at:at + 1] = [slice(None)] * (len(dims) - consumed)
    spec += [slice(None)] * (len(dims) - sum(1 for k in spec if k is not None))
    out, axis = [], 0
    for k in spec:
        if k is None:
            out.append(1)
            continue
        if axis >= len(dims):
            raise ValueError(f"Index out of range using input dim {axis}; input has only {len(dims)} dims for "
                             f"'{name}' (op: 'StridedSlice')")
        d = dims[axis]
        if isinstance(k, slice):
            out.append(None if d is None else len(range(*k.indices(d))))
        elif d is not None and not -d <= int(k) < d:
            raise ValueError(f"slice index {int(k)} of dimension {axis} out of bounds for '{name}' (op: "
                             f"'StridedSlice') with input shape {dims_text(dims)}")
        axis += 1
    return [(x._dtype.base_dtype, TensorShape(out))]


register_op("StridedSlice", _slice_infer, is_view=True)


def _getitem(tensor: Tensor, key) -> Tensor:
    """tensor[key] with ints, slices, None (newaxis) and Ellipsis."""
    key = key if isinstance(key, tuple) else (key,)
    for k in key:
        if isinstance(k, Tensor) or (isinstance(k, slice) and any(isinstance(p, Tensor) for p in
                                                                      (k.start, k.stop, k.step))):
            raise TypeError(f"Indexing {tensor.name!r} with a Tensor is not supported; use tf.gather or constants.")
        if not (k is None or k is Ellipsis or isinstance(k, (int, np.integer, slice))):
            raise TypeError(f"Only integers, slices (`:`), ellipsis (`...`) and tf.newaxis (`None`) are valid "
                            f"indices, got {k!r}")
    return apply_op_1("StridedSlice", [tensor], {"slice_spec": key}, name="strided_slice")


Tensor.__getitem__ = _getitem
newaxis = None


def strided_slice_grad(shape_t: Tensor, dy: Tensor, slice_spec: tuple, name: str | None = None) -> Tensor:
    """Zeros of `shape_t` with `dy` written at `slice_spec` (the gradient of x[slice_spec])."""
    return apply_op_1("StridedSliceGrad", [shape_t, dy], {"slice_spec": slice_spec, "T": dy.dtype.base_dtype},
                      name=name or "StridedSliceGrad")


register_op("StridedSliceGrad", lambda inputs, attrs, name: [(inputs[1]._dtype.base_dtype,
                                                               shape_from_tensor(inputs[0]))])


# --- GatherV2 -------------------------------------------------------------------------------------------------------
def computed_inputs_text(inputs, positions) -> str:
    """TF's " and with computed input tensors: input[2] = <1>." suffix for the constant inputs a shape function read."""
    parts = []
    for i in positions:
        value = constant_value(inputs[i])
        if value is not None:
            parts.append(f"input[{i}] = <{' '.join(str(v) for v in np.reshape(value, [-1]).tolist())}>")
    return f" and with computed input tensors: {', '.join(parts)}" if parts else ""


def _gather_infer(inputs, attrs, name):
    params, indices, axis_t = inputs
    check_dtype("GatherV2", "indices", indices._dtype, (_dtypes.int32, _dtypes.int64))
    check_dtype("GatherV2", "axis", axis_t._dtype, (_dtypes.int32, _dtypes.int64))
    if axis_t._shape.ndims not in (None, 0):
        raise ValueError(f"Shape must be rank 0 but is rank {axis_t._shape.ndims} for '{name}' (op: 'GatherV2') "
                         f"with input shapes: {shapes_text(inputs)}.")
    p_dims, i_dims, axis = params._shape.as_tuple(), indices._shape.as_tuple(), constant_value(axis_t)
    dtype = params._dtype.base_dtype
    if axis is None:
        known = p_dims is not None and i_dims is not None
        return [(dtype, unknown_shape(len(p_dims) + len(i_dims) - 1 if known else None))]
    axis = int(axis)
    if p_dims is not None and len(p_dims) < (-axis if axis < 0 else axis + 1):
        raise ValueError(f"Shape must be at least rank {-axis if axis < 0 else axis + 1} but is rank {len(p_dims)} "
                         f"for '{name}' (op: 'GatherV2') with input shapes: {shapes_text(inputs)}"
                         f"{computed_inputs_text(inputs, [2])}.")
    if p_dims is None or i_dims is None:
        return [(dtype, unknown_shape())]
    axis %= len(p_dims)
    return [(dtype, TensorShape(p_dims[:axis] + i_dims + p_dims[axis + 1:]))]


register_op("GatherV2", _gather_infer)


def gather(params, indices, validate_indices=None, name: str | None = None, axis=0) -> Tensor:
    """Slices of `params` along `axis` at `indices` (tf.gather): output shape
    params.shape[:axis] + indices.shape + params.shape[axis + 1:].

        tf.gather([[1, 2], [3, 4], [5, 6]], [2, 0])   # [[5, 6], [1, 2]]

    An index outside [0, params.shape[axis]) is an InvalidArgumentError on the CPU ("indices[1] = 7 is not in
    [0, 5)") and gives zeros on a GPU, as in TF. `validate_indices` is ignored, as in TF.
    """
    del validate_indices
    with name_scope(name, "GatherV2", [params, indices]) as scope:
        params = convert_to_tensor(params, name="params")
        indices = convert_to_tensor(indices, name="indices")
        axis_t = axis if isinstance(axis, Tensor) else convert_to_tensor(axis, name="axis")
        return apply_op_1("GatherV2", [params, indices, axis_t],
                          {"T": params.dtype.base_dtype, "Tparams": params.dtype.base_dtype,
                           "Tindices": indices.dtype.base_dtype, "Taxis": axis_t.dtype.base_dtype}, name=scope)


# --- Slice, Pad, MirrorPad, ReverseV2 -------------------------------------------------------------------------------
def _int_vector(t: Tensor):
    """A constant int tensor's values as a list of Python ints, else None."""
    value = constant_value(t)
    return None if value is None else [int(v) for v in np.reshape(value, [-1])]


def _slice_op_infer(inputs, attrs, name):
    x, begin_t, size_t = inputs
    check_same_dtype("Slice", [begin_t, size_t], ("begin", "size"))
    dims, begin, sizes = x._shape.as_tuple(), _int_vector(begin_t), _int_vector(size_t)
    n = len(dims) if dims is not None else len(sizes) if sizes is not None else None
    if sizes is None or dims is None and -1 in sizes:
        return [(x._dtype.base_dtype, unknown_shape(n))]
    if dims is not None and len(sizes) != len(dims):
        raise ValueError(f"Shape must be rank {len(dims)} but is rank {len(sizes)} for '{name}' (op: 'Slice') with "
                         f"input shapes: {shapes_text(inputs)}.")
    out = []
    for i, s in enumerate(sizes):
        d, b = (dims[i] if dims else None), (begin[i] if begin is not None else None)
        if s == -1:
            s = None if d is None or b is None else d - b
        if d is not None and b is not None and (b < 0 or s is None or s < 0 or b + s > d):
            raise ValueError(f"Expected size[{i}] in [0, {d - b}], but got {sizes[i]} for '{name}' (op: 'Slice') "
                             f"with input shapes: {shapes_text(inputs)}.")
        out.append(s)
    return [(x._dtype.base_dtype, TensorShape(out))]


register_op("Slice", _slice_op_infer)


def slice_(input_, begin, size, name: str | None = None) -> Tensor:
    """The part of `input_` of shape `size` starting at `begin` (tf.slice); a size of -1 takes the rest. Named
    `slice_` here so the builtin `slice` stays usable in this module.

        tf.slice([[1, 2, 3], [4, 5, 6]], [0, 1], [2, -1])   # [[2, 3], [5, 6]]
    """
    with name_scope(name, "Slice", [input_, begin, size]) as scope:
        x = convert_to_tensor(input_, name="input")
        begin_t = convert_to_tensor(begin, name="begin")
        size_t = convert_to_tensor(size, dtype=begin_t.dtype.base_dtype, name="size")
        return apply_op_1("Slice", [x, begin_t, size_t], {"T": x.dtype.base_dtype, "Index": begin_t.dtype.base_dtype},
                          name=scope)


def _pad_infer(op_type):
    def infer(inputs, attrs, name):
        x, paddings_t = inputs[:2]
        check_dtype(op_type, "paddings", paddings_t._dtype, (_dtypes.int32, _dtypes.int64))
        dims, p_dims = x._shape.as_tuple(), paddings_t._shape.as_tuple()
        where_text = f" for '{name}' (op: '{op_type}') with input shapes: {shapes_text(inputs)}."
        if p_dims is not None and (len(p_dims) != 2 or p_dims[1] not in (None, 2)):
            raise ValueError(f"Shape must be rank 2 with 2 columns but is {dims_text(p_dims)}{where_text}")
        if op_type == "PadV2":
            check_same_dtype(op_type, [x, inputs[2]], ("input", "constant_values"))
            if inputs[2]._shape.ndims not in (None, 0):
                raise ValueError(f"Shape must be rank 0 but is rank {inputs[2]._shape.ndims}{where_text}")
        n = len(dims) if dims is not None else p_dims[0] if p_dims is not None else None
        if dims is not None and p_dims is not None and p_dims[0] is not None and p_dims[0] != len(dims):
            raise ValueError(f"Dimensions must be equal, but are {len(dims)} and {p_dims[0]}{where_text}")
        paddings = _int_vector(paddings_t)
        if paddings is None or n is None:
            return [(x._dtype.base_dtype, unknown_shape(n))]
        pairs = [paddings[2 * i:2 * i + 2] for i in range(n)]
        if any(p < 0 for pair in pairs for p in pair):
            raise ValueError(f"Paddings must be non-negative{where_text}")
        out = [None if dims is None or dims[i] is None else dims[i] + a + b for i, (a, b) in enumerate(pairs)]
        return [(x._dtype.base_dtype, TensorShape(out))]
    return infer


for _op_type in ("Pad", "PadV2", "MirrorPad"):
    register_op(_op_type, _pad_infer(_op_type))


def pad(tensor, paddings, mode: str = "CONSTANT", name: str | None = None, constant_values=0) -> Tensor:
    """Pad `tensor` by paddings[i] = [before, after] along each axis i (tf.pad).

    Modes: "CONSTANT" (with `constant_values`: op Pad, or PadV2 for a value other than 0), "REFLECT" (mirror without
    the edge) and "SYMMETRIC" (mirror with the edge) (op MirrorPad); case-insensitive as in TF.

        tf.pad([[1, 2]], [[1, 0], [0, 1]])   # [[0, 0, 0], [1, 2, 0]]
    """
    mode_name = mode.upper()
    if mode_name not in ("CONSTANT", "REFLECT", "SYMMETRIC"):
        raise ValueError(f"Unknown padding mode: {mode}")
    default = "Pad" if mode_name == "CONSTANT" else "MirrorPad"
    is_zero = not isinstance(constant_values, Tensor) and np.all(np.asarray(constant_values) == 0)
    if mode_name == "CONSTANT" and not is_zero:
        default = "PadV2"
    with name_scope(name, default, [tensor, paddings]) as scope:
        x = convert_to_tensor(tensor, name="input")
        paddings_t = int_const(paddings, name="paddings") if not isinstance(paddings, Tensor) else paddings
        attrs = {"T": x.dtype.base_dtype, "Tpaddings": paddings_t.dtype.base_dtype}
        if default == "PadV2":
            values = convert_to_tensor(constant_values, dtype=x.dtype.base_dtype, name="constant_values")
            return apply_op_1("PadV2", [x, paddings_t, values], attrs, name=scope)
        if default == "MirrorPad":
            attrs["mode"] = mode_name
        return apply_op_1(default, [x, paddings_t], attrs, name=scope)


def mirror_pad_grad(grad, paddings, mode: str, name: str | None = None) -> Tensor:
    """The gradient of MirrorPad: the padded borders of `grad` folded back onto the positions they mirror."""
    return apply_op_1("MirrorPadGrad", [grad, paddings], {"T": grad.dtype.base_dtype, "mode": mode,
                                                          "Tpaddings": paddings.dtype.base_dtype},
                      name=name or "MirrorPadGrad")


def _mirror_pad_grad_infer(inputs, attrs, name):
    grad, paddings_t = inputs
    dims, paddings = grad._shape.as_tuple(), _int_vector(paddings_t)
    if dims is None or paddings is None:
        return [(grad._dtype.base_dtype, unknown_shape(None if dims is None else len(dims)))]
    return [(grad._dtype.base_dtype, TensorShape([None if d is None else d - paddings[2 * i] - paddings[2 * i + 1]
                                                  for i, d in enumerate(dims)]))]


register_op("MirrorPadGrad", _mirror_pad_grad_infer)


def _reverse_infer(inputs, attrs, name):
    x, axis_t = inputs
    check_dtype("ReverseV2", "axis", axis_t._dtype, (_dtypes.int32, _dtypes.int64))
    dims, axes = x._shape.as_tuple(), _int_vector(axis_t)
    if dims is not None and axes is not None:
        normalized = [normalize_axis(a, len(dims), name, "ReverseV2") for a in axes]
        if len(set(normalized)) != len(normalized):
            raise ValueError(f"axis {normalized[0]} specified more than once for '{name}' (op: 'ReverseV2')")
    return [(x._dtype.base_dtype, x._shape)]


register_op("ReverseV2", _reverse_infer)


def reverse(tensor, axis, name: str | None = None) -> Tensor:
    """`tensor` with the order of elements along each axis in `axis` reversed (tf.reverse, op ReverseV2)."""
    with name_scope(name, "ReverseV2", [tensor, axis]) as scope:
        x = convert_to_tensor(tensor, name="tensor")
        axis_t = int_const(axis, name="axis")
        return apply_op_1("ReverseV2", [x, axis_t], {"T": x.dtype.base_dtype, "Tidx": axis_t.dtype.base_dtype},
                          name=scope)


