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
from adplace.ops import array_ops, math_ops
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
    if not dims and consumed:
        raise ValueError(f"Attempting to slice scalar input. for '{name}' (op: 'StridedSlice') with input shapes: "
                         f"{shapes_text(inputs)}.")
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


def _is_dynamic(k) -> bool:
    """An index whose value is a Tensor: a scalar Tensor, or a slice with a Tensor bound."""
    return isinstance(k, Tensor) or (isinstance(k, slice) and any(isinstance(p, Tensor) for p in
                                                                   (k.start, k.stop, k.step)))


def _getitem(tensor: Tensor, key) -> Tensor:
    """tensor[key] with ints, slices, None (newaxis) and Ellipsis; an index or slice bound may be a scalar int
    Tensor, as in TF (`x[i]`, `x[i:i + 1]` with `i` computed at run time)."""
    key = key if isinstance(key, tuple) else (key,)
    key = tuple(int(k) if isinstance(k, np.ndarray) and k.ndim == 0 and k.dtype.kind in "iu" else k for k in key)
    for k in key:
        if not (k is None or k is Ellipsis or isinstance(k, (int, np.integer, slice)) or _is_dynamic(k)):
            raise TypeError(f"Only integers, slices (`:`), ellipsis (`...`) and tf.newaxis (`None`) are valid "
                            f"indices, got {k!r}")
    if any(_is_dynamic(k) for k in key):
        with name_scope(None, "strided_slice", [tensor]):
            return _getitem_dynamic(tensor, key)
    return apply_op_1("StridedSlice", [tensor], {"slice_spec": key}, name="strided_slice")


def _getitem_dynamic(x: Tensor, key: tuple) -> Tensor:
    """tensor[key] when some index is a Tensor, one axis at a time: static parts stay StridedSlice, a Tensor index
    becomes a GatherV2 and a Tensor-bounded slice (step 1) a Slice, so gradients flow as through TF's StridedSlice.
    Negative indices count from the end, and slice bounds are clipped to the axis, as in Python."""
    rank = x.shape.ndims
    if Ellipsis in key:
        if rank is None:
            raise ValueError(f"Indexing {x.name!r} with a Tensor and `...` needs a known rank")
        at = key.index(Ellipsis)
        fill = rank - sum(1 for k in key if k is not None and k is not Ellipsis)
        key = key[:at] + (slice(None),) * fill + key[at + 1:]
    axis = 0
    for k in key:
        lead = (slice(None),) * axis
        if k is None:
            x = array_ops.expand_dims(x, axis)
            axis += 1
        elif not _is_dynamic(k):
            x = _getitem(x, lead + (k,))
            axis += isinstance(k, slice)
        elif isinstance(k, Tensor):
            x = gather(x, _wrap(k, _dim(x, axis, k.dtype)), axis=axis)
        else:
            x = _dynamic_slice(x, axis, k)
            axis += 1
    return x


def _dim(x: Tensor, axis: int, dtype) -> Tensor:
    return array_ops.shape(x, out_type=dtype)[axis]


def _wrap(index: Tensor, dim: Tensor) -> Tensor:
    """index + dim where index < 0 (Python's negative indices)."""
    return math_ops.add(index, math_ops.multiply(dim, math_ops.cast(math_ops.less(index, 0), index.dtype)))


def _dynamic_slice(x: Tensor, axis: int, k: slice) -> Tensor:
    """x[..., k.start:k.stop, ...] along `axis` with Tensor bounds, as one Slice op."""
    if k.step not in (None, 1):
        raise TypeError(f"Slicing {x.name!r} with Tensor bounds needs a step of 1, got {k.step!r}")
    rank = x.shape.ndims
    if rank is None:
        raise ValueError(f"Slicing {x.name!r} with Tensor bounds needs a known rank")
    dtype = next(p.dtype.base_dtype for p in (k.start, k.stop) if isinstance(p, Tensor))
    dim = _dim(x, axis, dtype)

    def bound(value, default):
        if value is None:
            return default
        value = _wrap(convert_to_tensor(value, dtype=dtype), dim)
        return math_ops.minimum(math_ops.maximum(value, convert_to_tensor(0, dtype=dtype)), dim)
    start = bound(k.start, convert_to_tensor(0, dtype=dtype))
    size = math_ops.maximum(math_ops.subtract(bound(k.stop, dim), start), convert_to_tensor(0, dtype=dtype))
    begin = array_ops.stack([convert_to_tensor(0, dtype=dtype)] * axis + [start] +
                            [convert_to_tensor(0, dtype=dtype)] * (rank - axis - 1))
    sizes = array_ops.stack([convert_to_tensor(-1, dtype=dtype)] * axis + [size] +
                            [convert_to_tensor(-1, dtype=dtype)] * (rank - axis - 1))
    return slice_(x, begin, sizes)


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
    dtype, batch_dims = params._dtype.base_dtype, attrs.get("batch_dims", 0)
    if axis is None:
        known = p_dims is not None and i_dims is not None
        return [(dtype, unknown_shape(len(p_dims) + len(i_dims) - 1 - batch_dims if known else None))]
    axis = int(axis)
    if p_dims is not None and len(p_dims) < (-axis if axis < 0 else axis + 1):
        raise ValueError(f"Shape must be at least rank {-axis if axis < 0 else axis + 1} but is rank {len(p_dims)} "
                         f"for '{name}' (op: 'GatherV2') with input shapes: {shapes_text(inputs)}"
                         f"{computed_inputs_text(inputs, [2])}.")
    if p_dims is None or i_dims is None:
        return [(dtype, unknown_shape())]
    axis %= len(p_dims)
    if batch_dims:
        where_text = f" for '{name}' (op: 'GatherV2') with input shapes: {shapes_text(inputs)}."
        if batch_dims > axis:
            raise ValueError(f"batch_dims ({batch_dims}) must be less than or equal to axis ({axis}){where_text}")
        if batch_dims > len(i_dims):
            raise ValueError(f"Shape must be at least rank {batch_dims} but is rank {len(i_dims)}{where_text}")
        for p, q in zip(p_dims[:batch_dims], i_dims[:batch_dims]):
            if p is not None and q is not None and p != q:
                raise ValueError(f"Dimensions must be equal, but are {p} and {q}{where_text}")
    return [(dtype, TensorShape(p_dims[:axis] + i_dims[batch_dims:] + p_dims[axis + 1:]))]


register_op("GatherV2", _gather_infer)


def gather(params, indices, validate_indices=None, name: str | None = None, axis=None,
           batch_dims: int = 0) -> Tensor:
    """Slices of `params` along `axis` at `indices` (tf.gather): output shape
    params.shape[:axis] + indices.shape[batch_dims:] + params.shape[axis + 1:]. `axis` defaults to `batch_dims`.

    With batch_dims = b, the first b dims of params and indices are batch dims gathered in step: output[i..., ...]
    gathers params[i...] at indices[i...] (a negative b counts from indices' rank).

        tf.gather([[1, 2], [3, 4], [5, 6]], [2, 0])                 # [[5, 6], [1, 2]]
        tf.gather([[1, 2], [3, 4]], [[1], [0]], batch_dims=1)       # [[2], [3]]

    An index outside [0, params.shape[axis]) is an InvalidArgumentError on the CPU ("indices[1] = 7 is not in
    [0, 5)") and gives zeros on a GPU, as in TF. `validate_indices` is ignored, as in TF.
    """
    del validate_indices
    with name_scope(name, "GatherV2", [params, indices]) as scope:
        params = convert_to_tensor(params, name="params")
        indices = convert_to_tensor(indices, name="indices")
        batch_dims = int(batch_dims)
        if batch_dims < 0:
            if indices.shape.ndims is None:
                raise ValueError("Currently, it is unsupported to take the gradient of tf.gather when batch_dims < 0 "
                                 "and the rank of the indices is unknown; give the indices a static rank")
            batch_dims += indices.shape.ndims
        axis = batch_dims if axis is None else axis
        axis_t = axis if isinstance(axis, Tensor) else convert_to_tensor(axis, name="axis")
        attrs = {"T": params.dtype.base_dtype, "Tparams": params.dtype.base_dtype,
                 "Tindices": indices.dtype.base_dtype, "Taxis": axis_t.dtype.base_dtype}
        if batch_dims:
            attrs["batch_dims"] = batch_dims
        return apply_op_1("GatherV2", [params, indices, axis_t], attrs, name=scope)


# --- Slice, Pad, MirrorPad, ReverseV2 -------------------------------------------------------------------------------
def _int_vector(t: Tensor):
    """A constant int tensor's values as a list of Python ints, else None."""
    value = constant_value(t)
    return None if value is None else [int(v) for v in np.reshape(value, [-1])]


def _partial_int_vector(t: Tensor):
    """A 1-D int tensor's values, None for each element unknown when the graph is built (a Pack of scalars, as
    `tf.slice(x, [i, 0], [n, 2])` builds, keeps its constant elements); None when nothing is known."""
    values = _int_vector(t)
    if values is not None:
        return values
    if t._op._type == "Pack" and t._shape.ndims == 1:
        parts = [constant_value(p) for p in t._op._inputs]
        return [None if v is None or np.ndim(v) else int(v) for v in parts]
    return None


def _slice_op_infer(inputs, attrs, name):
    x, begin_t, size_t = inputs
    check_same_dtype("Slice", [begin_t, size_t], ("begin", "size"))
    dims, begin, sizes = x._shape.as_tuple(), _partial_int_vector(begin_t), _partial_int_vector(size_t)
    n = len(dims) if dims is not None else len(sizes) if sizes is not None else size_t._shape.as_tuple()
    if sizes is None:
        n = n if isinstance(n, int) or n is None else (n[0] if n else None)
        return [(x._dtype.base_dtype, unknown_shape(n))]
    if dims is not None and len(sizes) != len(dims):
        raise ValueError(f"Shape must be rank {len(dims)} but is rank {len(sizes)} for '{name}' (op: 'Slice') with "
                         f"input shapes: {shapes_text(inputs)}.")
    out = []
    for i, s in enumerate(sizes):
        d, b = (dims[i] if dims else None), (begin[i] if begin is not None else None)
        if s == -1:
            s = None if d is None or b is None else d - b
        if d is not None and b is not None and s is not None and (b < 0 or s < 0 or b + s > d):
            raise ValueError(f"Expected size[{i}] in [0, {d - b}], but got {sizes[i]} for '{name}' (op: 'Slice') "
                             f"with input shapes: {shapes_text(inputs)}.")
        out.append(s)
    return [(x._dtype.base_dtype, TensorShape(out))]


register_op("Slice", _slice_op_infer, is_view=True)  # a NumPy view: fetches copy


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


def _holds_tensor(value) -> bool:
    """A Tensor, or a (nested) list holding one, which tf.convert_to_tensor packs (`[[1, 2], [0, n]]`)."""
    return isinstance(value, Tensor) or (isinstance(value, (list, tuple)) and any(_holds_tensor(v) for v in value))


def _partial_pairs(paddings_t: Tensor):
    """The [before, after] pairs of a paddings matrix, None where a value is unknown when the graph is built: a
    Pack of rows (`[[1, 2], row]`) keeps its constant rows and elements, as TF's shape inference does."""
    values = _int_vector(paddings_t)
    if values is not None:
        return [values[i:i + 2] for i in range(0, len(values), 2)]
    if paddings_t._op._type != "Pack" or paddings_t._op._attrs.get("axis", 0) != 0:
        return None
    return [(_partial_int_vector(row) or [None, None]) if row._shape.ndims != 0 else [None, None]
            for row in paddings_t._op._inputs]


def _pad_infer(op_type):
    def infer(inputs, attrs, name):
        x, paddings_t = inputs[:2]
        check_dtype(op_type, "paddings", paddings_t._dtype, (_dtypes.int32, _dtypes.int64))
        dims, p_dims = x._shape.as_tuple(), paddings_t._shape.as_tuple()
        where_text = f" for '{name}' (op: '{op_type}') with input shapes: {shapes_text(inputs)}."
        if p_dims is not None and len(p_dims) != 2:
            raise ValueError(f"Shape must be rank 2 but is rank {len(p_dims)}{where_text}")
        if p_dims is not None and p_dims[1] not in (None, 2):
            raise ValueError(f"Dimension must be 2 but is {p_dims[1]}{where_text}")
        if op_type == "PadV2":
            check_same_dtype(op_type, [x, inputs[2]], ("input", "constant_values"))
            if inputs[2]._shape.ndims not in (None, 0):
                raise ValueError(f"Shape must be rank 0 but is rank {inputs[2]._shape.ndims}{where_text}")
        n = len(dims) if dims is not None else p_dims[0] if p_dims is not None else None
        if dims is not None and p_dims is not None and p_dims[0] is not None and p_dims[0] != len(dims):
            raise ValueError(f"Shape must be rank {p_dims[0]} but is rank {len(dims)}{where_text}")
        pairs = _partial_pairs(paddings_t)
        if pairs is None or n is None or len(pairs) != n:
            return [(x._dtype.base_dtype, unknown_shape(n))]
        if any(p is not None and p < 0 for pair in pairs for p in pair):
            raise ValueError(f"Paddings must be non-negative{where_text}")
        out = [None if dims is None or None in (dims[i], a, b) else dims[i] + a + b for i, (a, b) in enumerate(pairs)]
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
        raise ValueError(f"Unknown padding mode: {mode_name}")
    default = "Pad" if mode_name == "CONSTANT" else "MirrorPad"
    is_zero = not isinstance(constant_values, Tensor) and np.all(np.asarray(constant_values) == 0)
    if mode_name == "CONSTANT" and not is_zero:
        default = "PadV2"
    with name_scope(name, default, [tensor, paddings]) as scope:
        x = convert_to_tensor(tensor, name="input")
        paddings_t = (convert_to_tensor(paddings, name="paddings") if _holds_tensor(paddings)
                      else int_const(paddings, name="paddings"))
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


register_op("ReverseV2", _reverse_infer, is_view=True)


def reverse(tensor, axis, name: str | None = None) -> Tensor:
    """`tensor` with the order of elements along each axis in `axis` reversed (tf.reverse, op ReverseV2)."""
    with name_scope(name, "ReverseV2", [tensor, axis]) as scope:
        x = convert_to_tensor(tensor, name="tensor")
        axis_t = int_const(axis, name="axis")
        return apply_op_1("ReverseV2", [x, axis_t], {"T": x.dtype.base_dtype, "Tidx": axis_t.dtype.base_dtype},
                          name=scope)


