"""Array ops: placeholders, identity, shapes, reshape/transpose/squeeze/expand_dims, split/concat/stack,
fill/zeros/ones and invert_permutation.

Their neighbours: slicing_ops (indexing, tf.slice, gather, pad, reverse), selection_ops (where, one_hot and masks)
and broadcast_ops (tile, broadcast_to).
"""
from __future__ import annotations

import numpy as np

from adplace.framework import dtypes as _dtypes
from adplace.framework.conversion import convert_to_tensor
from adplace.framework.default_graph import name_scope
from adplace.framework.operation import Tensor
from adplace.framework.sparse_tensor import SparseTensor
from adplace.framework.registry import register_op
from adplace.framework.tensor_shape import TensorShape, as_shape, dims_text, unknown_shape
from adplace.ops.constant_op import constant
from adplace.ops.op_builder import (SCALAR, apply_op, apply_op_1, check_same_dtype,
                                    constant_value, int_const, merged_shape, normalize_axis, shape_from_tensor,
                                    shapes_text, to_tensors)


def _same(inputs, attrs, name):
    return [(inputs[0]._dtype.base_dtype, inputs[0]._shape)]


# --- Placeholder, Identity, StopGradient ----------------------------------------------------------------------
register_op("Placeholder", lambda inputs, attrs, name: [(attrs["dtype"], attrs["shape"])])
register_op("Identity", _same, is_view=True)
register_op("StopGradient", _same, is_view=True)
register_op("PreventGradient", _same, is_view=True)


def placeholder(dtype, shape=None, name: str | None = None) -> Tensor:
    """A tensor that must be fed at run time (tf.placeholder); `shape=None` accepts any shape."""
    return apply_op_1("Placeholder", [], {"dtype": _dtypes.as_dtype(dtype).base_dtype, "shape": as_shape(shape)},
                      name=name or "Placeholder")


def _placeholder_with_default_infer(inputs, attrs, name):
    """TF merges input's shape with `shape` only to check them; the output keeps the (less specific) `shape`."""
    x, wanted = inputs[0], attrs["shape"]
    have, want = x._shape.as_tuple(), wanted.as_tuple()
    where_text = f" for '{name}' (op: 'PlaceholderWithDefault') with input shapes: {shapes_text(inputs)}."
    if have is not None and want is not None:
        if len(have) != len(want):
            raise ValueError(f"Shapes must be equal rank, but are {len(have)} and {len(want)}{where_text}")
        for i, (a, b) in enumerate(zip(have, want)):
            if a is not None and b is not None and a != b:
                raise ValueError(f"Dimension {i} in both shapes must be equal, but are {a} and {b}. Shapes are "
                                 f"{dims_text(have)} and {dims_text(want)}.{where_text}")
    return [(x._dtype.base_dtype, wanted)]


register_op("PlaceholderWithDefault", _placeholder_with_default_infer, is_view=True)


def placeholder_with_default(input, shape, name: str | None = None) -> Tensor:  # noqa: A002 - TF's argument name
    """`input`, unless a value is fed for it (tf.placeholder_with_default). The output has the static `shape`, which
    may be less specific than input's, so a fed value may have any shape compatible with it.

        batch = tf.placeholder_with_default([[1., 2.]], shape=[None, 2])
        sess.run(batch)                                     # [[1., 2.]]
        sess.run(batch, {batch: np.zeros([3, 2])})          # three rows

    Raises:
      ValueError: `shape` is incompatible with input's shape.
    """
    with name_scope(name, "PlaceholderWithDefault", [input]) as op_name:  # TF names the constant "<name>/input"
        x = convert_to_tensor(input, name="input")
        return apply_op_1("PlaceholderWithDefault", [x], {"dtype": x.dtype.base_dtype, "shape": as_shape(shape)},
                          name=op_name)


def identity(input, name: str | None = None) -> Tensor:  # noqa: A002 - TF's argument name
    """The same value, as a new op (tf.identity); reads a variable's current value."""
    return apply_op_1("Identity", [convert_to_tensor(input)], name=name or "Identity")


def stop_gradient(input, name: str | None = None) -> Tensor:  # noqa: A002
    return apply_op_1("StopGradient", [convert_to_tensor(input)], name=name or "StopGradient")


def prevent_gradient(input, message: str = "", name: str | None = None) -> Tensor:  # noqa: A002
    """`input` unchanged, but asking for a gradient through it raises LookupError naming `message`."""
    x = convert_to_tensor(input)
    return apply_op_1("PreventGradient", [x], {"T": x.dtype.base_dtype, "message": message},
                      name=name or "PreventGradient")


# --- Shape, Size, Rank ------------------------------------------------------------------------------------------
def _shape_infer(inputs, attrs, name):
    rank = inputs[0]._shape.ndims
    return [(attrs["out_type"], TensorShape([rank]))]


register_op("Shape", _shape_infer)
register_op("Size", lambda inputs, attrs, name: [(attrs["out_type"], SCALAR)])
register_op("Rank", lambda inputs, attrs, name: [(_dtypes.int32, SCALAR)])
register_op("ShapeN", lambda inputs, attrs, name: [(attrs["out_type"], TensorShape([t._shape.ndims]))
                                                     for t in inputs])


def shape(input, name: str | None = None, out_type=_dtypes.int32, optimize: bool = True) -> Tensor:  # noqa: A002
    """The shape of a tensor (tf.shape): as in TF1 graph mode, a Const when the static shape is fully known (and
    `optimize`), else a Shape op computed at run time."""
    if isinstance(input, SparseTensor):  # its dense shape, cast to out_type as TF's shape_internal does
        dense_shape, out_type = input.dense_shape, _dtypes.as_dtype(out_type)
        source = dense_shape.dtype.base_dtype
        return apply_op_1("Cast", [dense_shape], {"SrcT": source, "DstT": out_type, "T": source}, name=name or "Cast")
    input = convert_to_tensor(input)  # noqa: A001
    if optimize and input.shape.is_fully_defined():
        return constant(input.shape.as_list(), dtype=out_type, name=name or "Shape")
    return apply_op_1("Shape", [input], {"out_type": _dtypes.as_dtype(out_type)}, name=name or "Shape")


def shape_n(input, out_type=_dtypes.int32, name: str | None = None) -> list[Tensor]:  # noqa: A002
    """The shapes of a list of tensors, as the outputs of one ShapeN op (tf.shape_n); computed at run time even
    where static, as in TF (conv gradients use it)."""
    tensors = [convert_to_tensor(t) for t in input]
    out_type = _dtypes.as_dtype(out_type).base_dtype
    return list(apply_op("ShapeN", tensors, {"N": len(tensors), "out_type": out_type, "T": tensors[0].dtype.base_dtype},
                         name=name or "ShapeN").outputs)


def size(input, name: str | None = None, out_type=_dtypes.int32, optimize: bool = True) -> Tensor:  # noqa: A002
    """The number of elements (tf.size): a Const when the static shape is fully known or has a 0 dimension, as in
    TF1."""
    input = convert_to_tensor(input)  # noqa: A001
    dims = input.shape.as_list() if input.shape.ndims is not None else None
    if optimize and dims is not None and (None not in dims or 0 in dims):
        return constant(0 if 0 in dims else input.shape.num_elements(), dtype=out_type, name=name or "Size")
    return apply_op_1("Size", [input], {"out_type": _dtypes.as_dtype(out_type)}, name=name or "Size")


def rank(input, name: str | None = None) -> Tensor:  # noqa: A002
    """The number of dimensions (tf.rank): a Const when the static rank is known, as in TF1."""
    input = convert_to_tensor(input)  # noqa: A001
    if input.shape.ndims is not None:
        return constant(input.shape.ndims, dtype=_dtypes.int32, name=name or "Rank")
    return apply_op_1("Rank", [input], name=name or "Rank")


# --- Reshape, Transpose, Squeeze, ExpandDims -------------------------------------------------------------------
def _reshape_infer(inputs, attrs, name):
    tensor, shape_t = inputs
    target = shape_from_tensor(shape_t)
    dims = target.as_tuple()
    value = constant_value(shape_t)
    if value is not None and tensor._shape.is_fully_defined():
        total = tensor._shape.num_elements()
        wanted = [int(d) for d in np.reshape(value, [-1])]
        if wanted.count(-1) > 1:
            raise ValueError(f"Cannot infer multiple unknown dimensions in shape {wanted} for '{name}' (op: "
                             "'Reshape')")
        known = int(np.prod([d for d in wanted if d != -1], dtype=np.int64))
        if -1 in wanted:
            if known == 0 or total % known:
                raise ValueError(f"Cannot reshape a tensor with {total} elements to shape {wanted} for '{name}' "
                                 f"(op: 'Reshape') with input shapes: {shapes_text(inputs)}.")
            wanted[wanted.index(-1)] = total // known
        elif known != total:
            raise ValueError(f"Cannot reshape a tensor with {total} elements to shape {wanted} ({known} elements) "
                             f"for '{name}' (op: 'Reshape') with input shapes: {shapes_text(inputs)}.")
        dims = tuple(wanted)
    return [(tensor._dtype.base_dtype, TensorShape(dims))]


register_op("Reshape", _reshape_infer, is_view=True)


def reshape(tensor, shape, name: str | None = None) -> Tensor:  # noqa: A002
    """tf.reshape; one dimension may be -1."""
    with name_scope(name, "Reshape", [tensor]) as scope:
        tensor = convert_to_tensor(tensor, name="tensor")
        return apply_op_1("Reshape", [tensor, int_const(shape, name="shape")], name=scope)


def _transpose_infer(inputs, attrs, name):
    x, perm_t = inputs
    perm = constant_value(perm_t)
    dims = x._shape.as_tuple()
    if perm is None or dims is None:
        return [(x._dtype.base_dtype, unknown_shape(None if dims is None else len(dims)))]
    perm = [int(p) for p in perm]
    if sorted(perm) != list(range(len(dims))):
        raise ValueError(f"Dimension must be {len(dims)} but is {len(perm)} for '{name}' (op: 'Transpose') with "
                         f"input shapes: {shapes_text(inputs)}; perm={perm} is not a permutation")
    return [(x._dtype.base_dtype, TensorShape([dims[p] for p in perm]))]


register_op("Transpose", _transpose_infer, is_view=True)


def transpose(a, perm=None, name: str = "transpose") -> Tensor:
    """tf.transpose; reverses the dimensions when `perm` is None."""
    from adplace.ops import math_ops
    a = convert_to_tensor(a)
    with name_scope(name) as scope:
        if perm is None:
            if a._shape.ndims is not None:
                perm_t = int_const(list(range(a._shape.ndims - 1, -1, -1)), name="perm")
            else:
                perm_t = math_ops.range(rank(a) - 1, -1, -1, name="perm")
        else:
            perm_t = perm if isinstance(perm, Tensor) else int_const(perm, name="perm")
        return apply_op_1("Transpose", [a, perm_t], name=scope)


def _squeeze_infer(inputs, attrs, name):
    x = inputs[0]
    dims = x._shape.as_tuple()
    axes = attrs["squeeze_dims"]
    if dims is None:
        return [(x._dtype.base_dtype, unknown_shape())]
    axes = [normalize_axis(a, len(dims), name, "Squeeze") for a in axes]
    for a in axes:
        if dims[a] is not None and dims[a] != 1:
            raise ValueError(f"Can not squeeze dim[{a}], expected a dimension of 1, got {dims[a]} for '{name}' "
                             f"(op: 'Squeeze') with input shapes: {shapes_text(inputs)}.")
    if axes:
        out = [d for i, d in enumerate(dims) if i not in axes]
    elif None in dims:
        return [(x._dtype.base_dtype, unknown_shape())]
    else:
        out = [d for d in dims if d != 1]
    return [(x._dtype.base_dtype, TensorShape(out))]


register_op("Squeeze", _squeeze_infer, is_view=True)


def squeeze(input, axis=None, name: str | None = None, squeeze_dims=None) -> Tensor:  # noqa: A002
    """Remove size-1 dimensions (all, or those in `axis`)."""
    axis = squeeze_dims if axis is None else axis
    axis = [] if axis is None else [axis] if isinstance(axis, int) else list(axis)
    return apply_op_1("Squeeze", [convert_to_tensor(input)], {"squeeze_dims": tuple(axis)}, name=name or "Squeeze")


def _expand_dims_infer(inputs, attrs, name):
    x, dim_t = inputs
    dims, dim = x._shape.as_tuple(), constant_value(dim_t)
    if dims is None or dim is None:
        return [(x._dtype.base_dtype, unknown_shape(None if dims is None else len(dims) + 1))]
    axis = normalize_axis(int(dim), len(dims) + 1, name, "ExpandDims")
    return [(x._dtype.base_dtype, TensorShape(dims[:axis] + (1,) + dims[axis:]))]


register_op("ExpandDims", _expand_dims_infer, is_view=True)


def expand_dims(input, axis=None, name: str | None = None, dim=None) -> Tensor:  # noqa: A002
    axis = dim if axis is None else axis
    if axis is None:
        raise ValueError("expand_dims requires `axis`")
    with name_scope(name, "ExpandDims", [input]) as scope:
        return apply_op_1("ExpandDims", [convert_to_tensor(input, name="input"), int_const(axis, name="dim")],
                          name=scope)


# --- Split, SplitV, ConcatV2, Pack, Unpack ---------------------------------------------------------------------
def _split_infer(inputs, attrs, name):
    axis_t, value = inputs
    n, dims, axis = attrs["num_split"], value._shape.as_tuple(), constant_value(axis_t)
    dtype = value._dtype.base_dtype
    if dims is None or axis is None:
        return [(dtype, unknown_shape(None if dims is None else len(dims)))] * n
    axis = normalize_axis(int(axis), len(dims), name, "Split")
    if dims[axis] is not None and dims[axis] % n:
        raise ValueError(f"Dimension size must be evenly divisible by {n} but is {dims[axis]} for '{name}' (op: "
                         f"'Split') with input shapes: {shapes_text(inputs)}.")
    piece = None if dims[axis] is None else dims[axis] // n
    return [(dtype, TensorShape(dims[:axis] + (piece,) + dims[axis + 1:]))] * n


register_op("Split", _split_infer, is_view=True)


def _split_v_infer(inputs, attrs, name):
    value, sizes_t, axis_t = inputs
    sizes, dims, axis = constant_value(sizes_t), value._shape.as_tuple(), constant_value(axis_t)
    n, dtype = attrs["num_split"], value._dtype.base_dtype
    if dims is None or axis is None or sizes is None:
        return [(dtype, unknown_shape(None if dims is None else len(dims)))] * n
    axis = normalize_axis(int(axis), len(dims), name, "SplitV")
    sizes = [int(s) for s in sizes]
    if dims[axis] is not None:
        known = sum(s for s in sizes if s != -1)
        if -1 in sizes:
            sizes[sizes.index(-1)] = dims[axis] - known
        if sum(sizes) != dims[axis] or min(sizes) < 0:
            raise ValueError(f"Determined shape must either match input shape along split_dim exactly if fully "
                             f"specified, or be less than the size of the input along split_dim if not fully "
                             f"specified. Got: {sum(sizes)} vs {dims[axis]} for '{name}' (op: 'SplitV')")
    return [(dtype, TensorShape(dims[:axis] + (None if s == -1 else s,) + dims[axis + 1:])) for s in sizes]


register_op("SplitV", _split_v_infer, is_view=True)


def split(value, num_or_size_splits, axis=0, num=None, name: str = "split") -> list[Tensor]:
    """Split along `axis` into `num_or_size_splits` equal pieces, or pieces of the given sizes (tf.split)."""
    value = convert_to_tensor(value)
    with name_scope(name) as scope:
        axis_t = axis if isinstance(axis, Tensor) else int_const(axis, name="split_dim")
        if isinstance(num_or_size_splits, (int, np.integer)):
            n = int(num_or_size_splits)
            if n < 1:
                raise ValueError(f"num_or_size_splits must be >= 1, got {n} for '{scope[:-1]}'")
            return apply_op("Split", [axis_t, value], {"num_split": n}, name=scope).outputs
        if isinstance(num_or_size_splits, Tensor):
            sizes_t, n = num_or_size_splits, num
            if n is None:
                n = sizes_t._shape.as_tuple()[0] if sizes_t._shape.ndims == 1 else None
                if n is None:
                    raise ValueError(f"Cannot infer num from shape {sizes_t.shape} of size_splits in "
                                     f"'{scope[:-1]}'; pass num")
        else:  # a list of sizes; it may hold scalar tensors (auto-packed)
            sizes_t = int_const(list(num_or_size_splits), name="size_splits")
            n = int(num if num is not None else len(num_or_size_splits))
        return apply_op("SplitV", [value, sizes_t, axis_t], {"num_split": n}, name=scope).outputs


def _concat_infer(inputs, attrs, name):
    *values, axis_t = inputs
    dtype = check_same_dtype("ConcatV2", values, ("values",))
    axis = constant_value(axis_t)
    ranks = {t._shape.ndims for t in values} - {None}
    if len(ranks) > 1:
        raise ValueError(f"Shape must be rank {min(ranks)} but is rank {max(ranks)} for '{name}' (op: 'ConcatV2') "
                         f"with input shapes: {shapes_text(values)}.")
    if not ranks:
        return [(dtype, unknown_shape())]
    r = ranks.pop()
    if axis is None:
        return [(dtype, unknown_shape(r))]
    axis = normalize_axis(int(axis), r, name, "ConcatV2")
    out = [None] * r
    total = 0
    for t in values:
        dims = t._shape.as_tuple()
        if dims is None:
            total = None
            continue
        for i, d in enumerate(dims):
            if i == axis:
                continue
            if out[i] is None:
                out[i] = d
            elif d is not None and d != out[i]:
                raise ValueError(f"Dimension {i} in both shapes must be equal, but are {out[i]} and {d}. Shapes are "
                                 f"{shapes_text(values)} for '{name}' (op: 'ConcatV2').")
        total = None if total is None or dims[axis] is None else total + dims[axis]
    out[axis] = total
    return [(dtype, TensorShape(out))]


register_op("ConcatV2", _concat_infer)


def concat(values, axis, name: str = "concat") -> Tensor:
    """Join tensors along `axis` (tf.concat)."""
    values = to_tensors(values)
    if len(values) == 1:
        return identity(values[0], name=name)
    with name_scope(name) as scope:
        axis_t = axis if isinstance(axis, Tensor) else int_const(axis, name="axis")
        return apply_op_1("ConcatV2", values + [axis_t], {"N": len(values)}, name=scope)


def _pack_infer(inputs, attrs, name):
    dtype = check_same_dtype("Pack", inputs, ("values",))
    merged = merged_shape("Pack", name, inputs)
    dims = merged.as_tuple()
    if dims is None:
        return [(dtype, unknown_shape())]
    axis = normalize_axis(attrs["axis"], len(dims) + 1, name, "Pack")
    return [(dtype, TensorShape(dims[:axis] + (len(inputs),) + dims[axis:]))]


register_op("Pack", _pack_infer)


def stack(values, axis: int = 0, name: str = "stack") -> Tensor:
    """Stack rank-R tensors into one rank-(R+1) tensor (tf.stack)."""
    values = to_tensors(values)
    return apply_op_1("Pack", values, {"axis": axis, "N": len(values)}, name=name)


def _unpack_infer(inputs, attrs, name):
    x, num, axis = inputs[0], attrs["num"], attrs["axis"]
    dims = x._shape.as_tuple()
    if dims is None:
        return [(x._dtype.base_dtype, unknown_shape())] * num
    axis = normalize_axis(axis, len(dims), name, "Unpack")
    if dims[axis] is not None and dims[axis] != num:
        raise ValueError(f"Dimension {axis} has size {dims[axis]} but num={num} for '{name}' (op: 'Unpack')")
    return [(x._dtype.base_dtype, TensorShape(dims[:axis] + dims[axis + 1:]))] * num


register_op("Unpack", _unpack_infer, is_view=True)


def unstack(value, num: int | None = None, axis: int = 0, name: str = "unstack") -> list[Tensor]:
    """Split a tensor into its slices along `axis` (tf.unstack)."""
    value = convert_to_tensor(value)
    if num is None:
        dims = value._shape.as_tuple()
        if dims is None or dims[axis] is None:
            raise ValueError(f"Cannot infer num from shape {value._shape}")
        num = dims[axis]
    return apply_op("Unpack", [value], {"num": num, "axis": axis}, name=name).outputs


# --- Fill, ZerosLike, zeros/ones -----------------------------------------------------------------------------------
def _fill_infer(inputs, attrs, name):
    dims_t, value = inputs
    if value._shape.ndims not in (None, 0):
        raise ValueError(f"Shape must be rank 0 but is rank {value._shape.ndims} for '{name}' (op: 'Fill')")
    return [(value._dtype.base_dtype, shape_from_tensor(dims_t))]


register_op("Fill", _fill_infer)
register_op("ZerosLike", _same)


def fill(dims, value, name: str | None = None) -> Tensor:
    """A tensor of shape `dims` filled with `value` (tf.fill)."""
    with name_scope(name, "Fill", [dims, value]) as scope:
        return apply_op_1("Fill", [int_const(dims, name="dims"), convert_to_tensor(value, name="value")],
                          name=scope)


def _filled(shape, dtype, value, name):
    """TF's zeros/ones: a Const when the shape is static and small (< 1000 elements), else a Fill."""
    dtype = _dtypes.as_dtype(dtype).base_dtype
    value = {_dtypes.bool: bool(value), _dtypes.string: b"" if value == 0 else None}.get(dtype, value)
    if value is None:
        raise TypeError(f"tf.ones has no value for dtype {dtype.name}")
    if not isinstance(shape, Tensor) and not (isinstance(shape, (list, tuple)) and
                                              any(isinstance(d, Tensor) for d in shape)):
        dims = as_shape(shape).as_list()
        if int(np.prod(dims, dtype=np.int64)) < 1000:
            return constant(value, dtype=dtype, shape=dims, name=name)
    with name_scope(name) as scope:  # a scope name (ending in "/") is re-entered, as ones_like passes
        dims_t = int_const(shape, name="shape_as_tensor")
        return apply_op_1("Fill", [dims_t, constant(value, dtype=dtype, name="Const")], name=scope)


def zeros(shape, dtype=_dtypes.float32, name: str = "zeros") -> Tensor:
    """Zeros of `shape` (tf.zeros): False for bool, b"" for strings."""
    return _filled(shape, dtype, 0, name)


def ones(shape, dtype=_dtypes.float32, name: str = "ones") -> Tensor:
    """Ones of `shape` (tf.ones); True for bool."""
    return _filled(shape, dtype, 1, name)


def shape_internal(tensor: Tensor, optimize: bool = True):
    """The static shape as a list when fully known (and `optimize`), else a Shape op (TF's shape_internal)."""
    if optimize and tensor.shape.is_fully_defined():
        return tensor.shape.as_list()
    return shape(tensor, optimize=optimize)


def zeros_like(tensor, dtype=None, name: str | None = None, optimize: bool = True) -> Tensor:
    """Zeros with the shape of `tensor` (tf.zeros_like): a ZerosLike op, or zeros() when the dtype changes."""
    with name_scope(name, "zeros_like", [tensor]) as scope:
        tensor = convert_to_tensor(tensor, name="tensor")
        if dtype is not None and _dtypes.as_dtype(dtype) is not tensor.dtype.base_dtype:
            return zeros(shape_internal(tensor, optimize), dtype=dtype, name=scope)
        return apply_op_1("ZerosLike", [tensor], name=scope)


def ones_like(tensor, dtype=None, name: str | None = None, optimize: bool = True) -> Tensor:
    """Ones with the shape of `tensor` (tf.ones_like): as in TF1, ones() of its static shape, else Shape + Fill."""
    with name_scope(name, "ones_like", [tensor]) as scope:
        tensor = convert_to_tensor(tensor, name="tensor")
        return ones(shape_internal(tensor, optimize), dtype=dtype or tensor.dtype.base_dtype, name=scope)


# --- InvertPermutation, IdentityN --------------------------------------------------------------------------------
def invert_permutation(x, name: str | None = None) -> Tensor:
    """y with y[x[i]] = i (tf.invert_permutation)."""
    x = convert_to_tensor(x)
    return apply_op_1("InvertPermutation", [x], {"T": x.dtype.base_dtype}, name=name or "InvertPermutation")


register_op("InvertPermutation", _same)
register_op("IdentityN", lambda inputs, attrs, name: [(t._dtype.base_dtype, t._shape) for t in inputs],
            is_view=True)


def identity_n(input, name: str | None = None) -> list[Tensor]:  # noqa: A002 - TF's argument name
    """Each tensor of the list `input` as an output of one IdentityN op (tf.identity_n)."""
    with name_scope(name, "IdentityN", input) as scope:
        tensors = [convert_to_tensor(t, name="input") for t in input]
        return list(apply_op("IdentityN", tensors, {"dtypes": [t.dtype.base_dtype for t in tensors]},
                             name=scope).outputs)

