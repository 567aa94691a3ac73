"""Kernel of PyFunc and PyFuncStateless (adplace.ops.script_ops): call the op's Python function on NumPy arrays and
convert what it returns to the op's `Tout`, with TF's errors (tensorflow/python/lib/core/py_func.cc).

CPU only, as in TF: under `tf.device("/gpu:0")` the op needs allow_soft_placement, which puts it on the CPU. The
function may run on several session threads at once; it gets copies of its inputs, so writing to them in place
cannot change a constant or a variable.

    y = tf.py_func(lambda x: x.astype(np.float64), [x], tf.float32)
    sess.run(y)     # InvalidArgumentError: 0-th value returned by pyfunc_0 is double, but expects float
"""
from __future__ import annotations

import traceback

import numpy as np

from adplace.framework import dtypes as _dtypes
from adplace.framework import errors
from adplace.kernels.registration import NO_GPU, kernel, multi_output

# Python exception -> the TF error it becomes (subclasses match too); any other exception is an UnknownError.
_ERRORS = (((ValueError, TypeError), errors.InvalidArgumentError), (StopIteration, errors.OutOfRangeError),
           (MemoryError, errors.ResourceExhaustedError), (NotImplementedError, errors.UnimplementedError))
_C_NAMES = {_dtypes.float32: "float", _dtypes.float64: "double", _dtypes.float16: "half"}  # TF's DataTypeString


def _type_name(dtype: _dtypes.DType) -> str:
    return _C_NAMES.get(dtype, dtype.name)


def _python_error(op, exc: Exception) -> errors.OpError:
    """TF's error for an exception raised by the function: its class by the exception's, with the traceback."""
    error_class = next((tf_error for py_error, tf_error in _ERRORS if isinstance(exc, py_error)), errors.UnknownError)
    summary = f"{type(exc).__name__}: {exc}"
    frames = "\n".join(traceback.format_tb(exc.__traceback__))
    return error_class(None, op, f"{summary}\nTraceback (most recent call last):\n\n{frames}\n{summary}\n")


def _argument(value):
    """What the function gets for one input: a private copy, 0-d inputs as NumPy scalars (TF's PyArray_Return)."""
    array = np.array(value)
    return array[()] if array.ndim == 0 else array


def _as_array(value) -> np.ndarray:
    """One returned value as an array; Python text becomes an object array, so NumPy neither pads nor strips it
    (TF's FuncRegistry._convert)."""
    array = np.asarray(value, order="C")
    if array.dtype.kind in "SU" and array is not value:
        return np.asarray(value, order="C", dtype=object)
    return array


def _is_single_none(array: np.ndarray) -> bool:
    return array.dtype == object and array.ndim == 0 and array[()] is None


def _to_bytes(op, element) -> bytes:
    if isinstance(element, bytes):
        return element
    if isinstance(element, str):
        return element.encode("utf-8")
    raise errors.InternalError(None, op, f"Unsupported object type {type(element).__name__}")


def _tensor_value(op, array: np.ndarray) -> tuple[np.ndarray, _dtypes.DType]:
    """The array as a tensor value and its dtype (TF's NdarrayToTensor): text as an object array of bytes."""
    if array.dtype.kind in "OSU":
        strings = np.empty(array.shape, dtype=object)
        strings.ravel()[:] = [_to_bytes(op, e) for e in array.ravel().tolist()]
        return strings, _dtypes.string
    try:
        return array, _dtypes.as_dtype(array.dtype)
    except TypeError:  # structured and other NumPy types with no TF dtype
        raise errors.InternalError(None, op, f"Unsupported numpy data type {array.dtype.num}") from None


def _results(func_result) -> list[np.ndarray]:
    """The function's return value as a list of arrays (TF's FuncRegistry.__call__ and DoCallPyFunc)."""
    if isinstance(func_result, bytes):
        func_result = [func_result]
    if isinstance(func_result, (list, tuple)):
        return [_as_array(v) for v in func_result]
    array = _as_array(func_result)
    return [] if _is_single_none(array) else [array]


def _py_func_kernel(op, ctx):
    token, out_types = op._attrs["token"], op._attrs["Tout"]
    func = getattr(op._graph, "_py_funcs_by_token", {}).get(token)  # none in a graph imported from a GraphDef

    def py_func(*inputs):
        if func is None:
            raise errors.UnknownError(None, op, f"ValueError: callback {token} is not found")
        try:
            returned = func(*[_argument(x) for x in inputs])
        except Exception as exc:  # noqa: BLE001 - every Python error becomes the TF error its class maps to
            raise _python_error(op, exc) from exc
        values = [_tensor_value(op, a) for a in _results(returned)]
        if len(values) != len(out_types):
            raise errors.InvalidArgumentError(None, op, f"{token} returns {len(values)} values, but expects to see "
                                              f"{len(out_types)} values.")
        for i, ((_, got), want) in enumerate(zip(values, out_types)):
            if got != want:
                raise errors.InvalidArgumentError(None, op, f"{i}-th value returned by {token} is {_type_name(got)}, "
                                                  f"but expects {_type_name(want)}")
        return multi_output(tuple(value for value, _ in values)) if values else None
    return py_func


kernel("PyFunc", None, NO_GPU)(_py_func_kernel)
kernel("PyFuncStateless", None, NO_GPU)(_py_func_kernel)
