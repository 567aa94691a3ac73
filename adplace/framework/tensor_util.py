"""Values of tensors known while the graph is built (TF's framework/tensor_util.constant_value): shape functions,
IndexedSlices.shape and gradients read them without running anything."""
from __future__ import annotations

import contextlib
from typing import Iterator

import numpy as np

from adplace.framework import dtypes as _dtypes
from adplace.framework.operation import Tensor
from adplace.framework.tensor_shape import TensorShape, unknown_shape


# Stand-in tensors -> their values, while a plan pass re-runs shape functions on values it computed (the runtime's
# shape specialization). Keys are tensors made for that pass alone (hashed by identity), so other threads building
# graphs meanwhile never find theirs here.
_KNOWN_VALUES: dict = {}


@contextlib.contextmanager
def values_known(values: dict) -> Iterator[None]:
    """Within the block, `constant_value(t)` is `values[t]` for each stand-in tensor `t` of `values`."""
    _KNOWN_VALUES.update(values)
    try:
        yield
    finally:
        for t in values:
            _KNOWN_VALUES.pop(t, None)


def constant_value(tensor: Tensor):
    """The value of `tensor` if it is known when the graph is built: a Const, the Shape of a static shape, or an
    Identity or Cast of such a value (TF's shape functions evaluate these small constant subgraphs too)."""
    if _KNOWN_VALUES and tensor in _KNOWN_VALUES:
        return _KNOWN_VALUES[tensor]
    op = tensor._op
    if op._type == "Const":
        return op._attrs["value"]
    if op._type == "Shape" and op._inputs[0]._shape.is_fully_defined():
        return np.array(op._inputs[0]._shape.as_list(), dtype=op._attrs["out_type"].as_numpy_dtype)
    if op._type == "ShapeN" and op._inputs[tensor._value_index]._shape.is_fully_defined():
        return np.array(op._inputs[tensor._value_index]._shape.as_list(), dtype=op._attrs["out_type"].as_numpy_dtype)
    if op._type == "Identity":
        return constant_value(op._inputs[0])
    if op._type == "Cast" and op._outputs[0]._dtype.base_dtype is not _dtypes.string:
        value = constant_value(op._inputs[0])
        return None if value is None else value.astype(op._outputs[0]._dtype.base_dtype.as_numpy_dtype)
    return None


def shape_from_tensor(tensor: Tensor) -> TensorShape:
    """The static shape a shape-valued tensor describes (unknown dims where its value is unknown)."""
    value = constant_value(tensor)
    if value is not None:
        return TensorShape([None if d < 0 else int(d) for d in np.reshape(value, [-1])])
    dims = tensor._shape.as_tuple()
    return unknown_shape(dims[0] if dims else None)


# --- TensorProto (TF's framework/tensor_util.make_tensor_proto / MakeNdarray) ------------------------------------
# The typed repeated field each dtype's values live in when a proto does not use tensor_content.
_VAL_FIELDS = {"float32": "float_val", "float64": "double_val", "int32": "int_val", "int16": "int_val",
               "int8": "int_val", "uint8": "int_val", "uint16": "int_val", "int64": "int64_val",
               "uint32": "uint32_val", "uint64": "uint64_val", "bool": "bool_val", "float16": "half_val",
               "bfloat16": "half_val", "complex64": "scomplex_val", "complex128": "dcomplex_val",
               "string": "string_val"}


def dtype_from_enum(enum: int) -> _dtypes.DType:
    """The DType of a DataType enum value (reference enums, 101 and up, give the `_ref` dtypes)."""
    for dtype in _dtypes._BY_NAME.values():
        if dtype.as_datatype_enum == enum:
            return dtype
    raise TypeError(f"Unsupported DataType enum {enum} (adplace has no such dtype).")


def shape_to_proto(shape):
    """A TensorShapeProto: unknown rank as `unknown_rank: true`, unknown dimensions as size -1."""
    from adplace.lib import protos

    shape = TensorShape(None) if shape is None else TensorShape(shape) if not isinstance(shape, TensorShape) \
        else shape
    proto = protos.tensor_shape_pb2.TensorShapeProto()
    dims = shape.as_tuple()
    if dims is None:
        proto.unknown_rank = True
    for d in dims or ():
        proto.dim.add(size=-1 if d is None else int(d))
    return proto


def shape_from_proto(proto) -> TensorShape:
    """The TensorShape a TensorShapeProto describes (size -1 is an unknown dimension)."""
    if proto.unknown_rank:
        return TensorShape(None)
    return TensorShape([None if d.size < 0 else d.size for d in proto.dim])


def make_tensor_proto(values, dtype=None, shape=None, verify_shape: bool = False, allow_broadcast: bool = False):
    """A TensorProto holding `values` (tf.make_tensor_proto), written as TF writes it: numeric arrays as
    little-endian `tensor_content`, single values (scalars, or one value splatted to `shape`) in the typed
    `*_val` field, strings in `string_val`.

        make_ndarray(make_tensor_proto([[1, 2]], tf.float32))   # array([[1., 2.]], dtype=float32)
    """
    from adplace.lib import protos

    if isinstance(values, protos.tensor_pb2.TensorProto):
        return values
    dtype = None if dtype is None else _dtypes.as_dtype(dtype).base_dtype
    if dtype is _dtypes.string or (dtype is None and np.asarray(values).dtype.kind in "USO"):
        array, dtype = _dtypes.string_array(values), _dtypes.string
    else:
        array = np.asarray(values) if dtype is None else np.asarray(values, dtype=dtype.as_numpy_dtype)
        if dtype is None:
            python = not isinstance(values, (np.ndarray, np.generic))
            narrow = python and not (array.dtype == np.int64 and array.size and
                                     (array.min() < -2 ** 31 or array.max() >= 2 ** 31))
            dtype = _dtypes.as_dtype(_DEFAULT_NP.get(array.dtype, array.dtype) if narrow else array.dtype)
            array = array.astype(dtype.as_numpy_dtype, copy=False)
    shape = list(array.shape) if shape is None else [int(d) for d in shape]
    size = int(np.prod(shape, dtype=np.int64))
    if list(array.shape) != shape:
        if verify_shape or (allow_broadcast is False and array.size not in (1, size)):
            raise ValueError(f"Expected Tensor's shape: {tuple(shape)}, but got {array.shape}.")
        if array.size != size and array.size != 1:
            array = np.broadcast_to(array, shape)
    proto = protos.tensor_pb2.TensorProto(dtype=dtype.as_datatype_enum, tensor_shape=shape_to_proto(shape))
    flat = array.reshape(-1)
    if dtype is _dtypes.string:
        proto.string_val.extend(flat.tolist())
    elif array.size == 1 and size >= 1:  # a scalar or a splat: TF writes the one value in the typed field
        _append_values(proto, dtype, flat[:1])
    elif size:
        proto.tensor_content = np.ascontiguousarray(flat).astype(flat.dtype.newbyteorder("<"), copy=False).tobytes()
    return proto


# Python ints and floats become int32 and float32, as TF converts them (NumPy values keep their dtype).
_DEFAULT_NP = {np.dtype(np.int64): np.int32, np.dtype(np.float64): np.float32}


def _append_values(proto, dtype: _dtypes.DType, flat: np.ndarray) -> None:
    field = getattr(proto, _VAL_FIELDS[dtype.name])
    if dtype in (_dtypes.float16, _dtypes.bfloat16):
        field.extend(flat.view(np.uint16).tolist())
    elif dtype.is_complex:
        field.extend(np.stack([flat.real, flat.imag], -1).reshape(-1).tolist())
    else:
        field.extend(flat.tolist())


def make_ndarray(tensor) -> np.ndarray:
    """The NumPy array a TensorProto holds (tf.make_ndarray): from `tensor_content`, or from the typed `*_val`
    field, where fewer values than elements mean the last one repeats (TF's splats) and none means zeros."""
    dtype = dtype_from_enum(tensor.dtype).base_dtype
    shape = tuple(d.size for d in tensor.tensor_shape.dim)
    size = int(np.prod(shape, dtype=np.int64))
    if dtype is _dtypes.string:
        values = list(tensor.string_val)
        np_dtype = object
    elif tensor.tensor_content:
        np_dtype = np.dtype(dtype.as_numpy_dtype)
        array = np.frombuffer(tensor.tensor_content, dtype=np_dtype.newbyteorder("<"))
        if array.size != size:
            raise ValueError(f"TensorProto's tensor_content holds {array.size} values for shape {list(shape)}")
        return array.astype(np_dtype).reshape(shape)
    else:
        np_dtype = np.dtype(dtype.as_numpy_dtype)
        raw = list(getattr(tensor, _VAL_FIELDS[dtype.name]))
        if dtype in (_dtypes.float16, _dtypes.bfloat16):
            values = np.asarray(raw, dtype=np.uint16).view(np_dtype)
        elif dtype.is_complex:
            pairs = np.asarray(raw, dtype=np.float64).reshape(-1, 2)
            values = pairs[:, 0] + 1j * pairs[:, 1]
        else:
            values = raw
    if len(values) > size:
        raise ValueError(f"TensorProto holds {len(values)} values for shape {list(shape)}")
    out = np.empty(size, dtype=np_dtype) if dtype is _dtypes.string else np.zeros(size, dtype=np_dtype)
    if len(values):
        out[:len(values)] = values
        out[len(values):] = values[-1]
    elif dtype is _dtypes.string:
        out[:] = b""
    return out.reshape(shape)


MakeNdarray = make_ndarray  # TF's other name (tensor_util.MakeNdarray)
