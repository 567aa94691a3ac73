"""DType: TF's element types, their NumPy equivalents, and the reference (`*_ref`) variants variables output.

bfloat16's NumPy type comes from the optional ml_dtypes package (TF's own, 3 ms to import). Without it tf.bfloat16
still builds graphs; only turning values into bfloat16 arrays raises an ImportError saying what to install.
"""
from __future__ import annotations

import numpy as np

try:
    import ml_dtypes as _ml_dtypes
except ImportError:  # optional: pip install ml-dtypes (or adplace[bfloat16])
    _ml_dtypes = None

_BFLOAT16_ENUM = 14


class DType:
    """An element type (tf.DType). `float32_ref` is what a VariableV2 outputs; its `base_dtype` is float32."""

    __slots__ = ("_name", "_np", "_is_ref", "_enum")

    def __init__(self, name: str, np_type, enum: int, is_ref: bool = False):
        self._name, self._np, self._enum, self._is_ref = name, np_type, enum, is_ref

    name = property(lambda self: self._name)

    @property
    def as_numpy_dtype(self):
        if self._np is None:
            raise ImportError(f"tf.{self._name} values need the ml_dtypes package (NumPy has no bfloat16): "
                              "pip install ml-dtypes (or adplace[bfloat16]).")
        return self._np
    as_datatype_enum = property(lambda self: self._enum + (100 if self._is_ref else 0))
    is_ref_dtype = property(lambda self: self._is_ref)
    base_dtype = property(lambda self: _BY_NAME[self._name[:-4]] if self._is_ref else self)
    real_dtype = base_dtype

    @property
    def _as_ref(self) -> "DType":
        return self if self._is_ref else _BY_NAME[self._name + "_ref"]

    @property
    def is_floating(self) -> bool:
        return self._enum == _BFLOAT16_ENUM or np.issubdtype(self._np, np.floating)

    @property
    def is_integer(self) -> bool:
        return self._np is not None and np.issubdtype(self._np, np.integer)

    @property
    def is_complex(self) -> bool:
        return self._np is not None and np.issubdtype(self._np, np.complexfloating)

    @property
    def is_bool(self) -> bool:
        return self._np is np.bool_

    @property
    def is_unsigned(self) -> bool:
        return self._np is not None and np.issubdtype(self._np, np.unsignedinteger)

    @property
    def size(self) -> int:
        if self._enum == _BFLOAT16_ENUM:
            return 2
        return np.dtype(self._np).itemsize if self._np is not object else 1

    @property
    def min(self):
        return self._info().min

    @property
    def max(self):
        return self._info().max

    def _info(self):
        """np.finfo/np.iinfo of the NumPy type (ml_dtypes.finfo for bfloat16, which np.finfo does not know)."""
        if self._enum == _BFLOAT16_ENUM:
            return _ml_dtypes.finfo(self.as_numpy_dtype)
        return np.finfo(self._np) if self.is_floating else np.iinfo(self._np)

    def is_compatible_with(self, other) -> bool:
        return self.base_dtype is as_dtype(other).base_dtype

    def __eq__(self, other) -> bool:
        """TF's equality: a DType equals anything as_dtype maps to it ("float32", np.float32, ...)."""
        if other is self:
            return True
        try:
            return as_dtype(other) is self
        except TypeError:
            return False

    def __ne__(self, other) -> bool:
        return not self.__eq__(other)

    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return f"tf.{self._name}"

    def __str__(self) -> str:
        """TF's form in "%s" messages: <dtype: 'float32'> (repr stays tf.float32)."""
        return f"<dtype: '{self._name}'>"

    def __reduce__(self):
        return as_dtype, (self._name,)


_BY_NAME: dict[str, DType] = {}
_BY_NP: dict[np.dtype, DType] = {}


def _define(name: str, np_type, enum: int) -> DType:
    dtype = DType(name, np_type, enum)
    _BY_NAME[name] = dtype
    _BY_NAME[name + "_ref"] = DType(name + "_ref", np_type, enum, is_ref=True)
    if np_type is not object and np_type is not None:
        _BY_NP.setdefault(np.dtype(np_type), dtype)
    return dtype


float32 = _define("float32", np.float32, 1)
float64 = _define("float64", np.float64, 2)
int32 = _define("int32", np.int32, 3)
uint8 = _define("uint8", np.uint8, 4)
int16 = _define("int16", np.int16, 5)
int8 = _define("int8", np.int8, 6)
string = _define("string", object, 7)
complex64 = _define("complex64", np.complex64, 8)
int64 = _define("int64", np.int64, 9)
bool = _define("bool", np.bool_, 10)  # noqa: A001 - TF's public name
bfloat16 = _define("bfloat16", None if _ml_dtypes is None else _ml_dtypes.bfloat16, _BFLOAT16_ENUM)
uint16 = _define("uint16", np.uint16, 17)
complex128 = _define("complex128", np.complex128, 18)
float16 = _define("float16", np.float16, 19)
resource = _define("resource", object, 20)  # a handle to per-run state (a TensorArray): never a numeric value
variant = _define("variant", object, 21)  # an opaque value (a tf.data dataset): never a numeric value
uint32 = _define("uint32", np.uint32, 22)
uint64 = _define("uint64", np.uint64, 23)
half, double = float16, float64
float32_ref, float64_ref, int32_ref, int64_ref = (_BY_NAME[n + "_ref"] for n in ("float32", "float64", "int32", "int64"))

_BY_NAME.update({"float": float32, "double": float64, "half": float16, "float_ref": float32_ref,
                 "double_ref": float64_ref})

FLOATING = frozenset({float16, bfloat16, float32, float64})
COMPLEX = frozenset({complex64, complex128})
INTEGER = frozenset({int8, int16, int32, int64, uint8, uint16, uint32, uint64})
NUMERIC = FLOATING | COMPLEX | INTEGER
ALL = NUMERIC | {bool, string}

_PY_TYPES = {float: float32, int: int32, complex: complex128, str: string, bytes: string}
_PY_TYPES[type(True)] = bool


def string_array(value) -> np.ndarray:
    """An object array of bytes, as TF returns strings (str elements are UTF-8 encoded)."""
    array = np.array(value, dtype=object)
    flat = [v.encode() if isinstance(v, str) else v for v in array.reshape(-1)]
    out = np.empty(len(flat), dtype=object)
    out[:] = flat
    return out.reshape(array.shape)


def as_dtype(type_value) -> DType:
    """Convert a DType, name ("float32"), NumPy dtype/type or Python type to a DType (tf.as_dtype)."""
    if isinstance(type_value, DType):
        return type_value
    if isinstance(type_value, str) and type_value in _BY_NAME:
        return _BY_NAME[type_value]
    if type_value in _PY_TYPES:
        return _PY_TYPES[type_value]
    try:
        np_dtype = np.dtype(type_value)
        return string if np_dtype.kind in "USO" else _BY_NP[np_dtype]
    except (TypeError, KeyError):
        raise TypeError(f"Cannot convert value {type_value!r} to a TensorFlow DType.") from None
