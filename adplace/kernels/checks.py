"""Kernels of the assertion and printing ops (Assert and CheckNumerics of adplace.ops.check_ops, Print of
adplace.ops.logging_ops), and TF1's text form of a tensor value (Tensor::SummarizeValue) they share.

Assert and Print run on the CPU only, as in TF; CheckNumerics has a GPU kernel, which copies two flags to the host.

    summarize_value(np.array([1, 2, 3, 4]), 3)             # "1 2 3..."
    summarize_value(np.array([[1., 2.], [3., 4.]]), 3)     # "[1 2][3...]..."
"""
from __future__ import annotations

import sys
import threading

import numpy as np

from adplace.framework import dtypes as _dtypes
from adplace.framework.errors import InvalidArgumentError
from adplace.framework.tensor_shape import dims_text
from adplace.kernels.registration import NO_GPU, kernel

_ESCAPES = {ord("\n"): "\\n", ord("\r"): "\\r", ord("\t"): "\\t", ord("\\"): "\\\\", ord('"'): '\\"', ord("'"): "\\'"}


def _float_text(value, digits: int, retry_digits: int) -> str:
    """TF's FloatToBuffer/DoubleToBuffer: %g with 6 (15) digits, 9 (17) when that does not round-trip."""
    if np.isnan(value):
        return "nan"
    text = "%.*g" % (digits, value)
    if type(value)(float(text)) != value:
        text = "%.*g" % (retry_digits, value)
    return text


def _string_text(value) -> str:
    """A string element C-escaped (UTF-8 kept), as TF prints strings in Assert and Print messages."""
    raw = value.encode() if isinstance(value, str) else bytes(value)
    out = []
    for byte in raw:
        if byte in _ESCAPES:
            out.append(_ESCAPES[byte])
        elif byte < 0x20 or byte == 0x7F:
            out.append(f"\\{byte:03o}")
        else:
            out.append(chr(byte))
    return bytes("".join(out), "latin-1").decode("utf-8", errors="replace")


def _element_formatter(dtype: np.dtype):
    kind = dtype.kind
    if kind == "f":
        if dtype.itemsize <= 4:
            return lambda v: _float_text(np.float32(v), 6, 9)
        return lambda v: _float_text(np.float64(v), 15, 17)
    if kind == "b":
        return lambda v: "1" if v else "0"
    if kind in "iu":
        return lambda v: str(int(v))
    if kind in "OSU":
        return _string_text
    return None  # complex and other types: TF prints "?"


def _print_one_dim(dim: int, shape: tuple, limit: int, flat, fmt, index: list, out: list) -> None:
    """TF's PrintOneDim: nested brackets, elements separated by spaces, stopping after `limit` elements."""
    if index[0] >= limit:
        return
    count = shape[dim]
    if dim == len(shape) - 1:
        for i in range(count):
            if index[0] >= limit:
                if dim != 0:
                    out.append("...")
                return
            if i > 0:
                out.append(" ")
            out.append(fmt(flat[index[0]]))
            index[0] += 1
        return
    for _ in range(count):
        opened = index[0] < limit
        if opened:
            out.append("[")
        _print_one_dim(dim + 1, shape, limit, flat, fmt, index, out)
        if index[0] < limit or opened:
            out.append("]")


def summarize_value(array, max_entries: int = 3) -> str:
    """The first `max_entries` values of `array` (all when negative) as TF1 prints them (Tensor::SummarizeValue)."""
    array = np.asarray(array)
    num_elements = array.size
    if max_entries < 0:
        max_entries = num_elements
    limit = min(max_entries, num_elements)
    flat = array.reshape(-1)
    fmt = _element_formatter(array.dtype)
    if fmt is None:
        return " ".join("?" for _ in range(limit)) + ("..." if max_entries < num_elements else "")
    if array.ndim == 0:
        text = " ".join(fmt(flat[i]) for i in range(limit))
    else:
        parts: list = []
        _print_one_dim(0, array.shape, limit, flat, fmt, [0], parts)
        text = "".join(parts)
    return text + ("..." if num_elements > limit else "")


# --- check_ops ----------------------------------------------------------------------------------------------------
@kernel("Assert", None, NO_GPU)
def _assert(op, ctx):
    summarize = op._attrs["summarize"]

    def assert_(condition, *data):
        condition = np.asarray(condition)
        if condition.size != 1 or condition.ndim > 1:
            raise InvalidArgumentError(None, op, f"In[0] should be a scalar: {dims_text(condition.shape)}")
        if condition.reshape(-1)[0]:
            return None
        values = " ".join(f"[{summarize_value(d, summarize)}]" for d in data)
        raise InvalidArgumentError(None, op, f"assertion failed: {values}")
    return assert_


@kernel("CheckNumerics", _dtypes.FLOATING, _dtypes.FLOATING)
def _check_numerics(op, ctx):
    message, xp = op._attrs["message"], ctx.xp

    def check_numerics(x):
        flags = xp.stack([xp.isinf(x).any(), xp.isnan(x).any()])
        has_inf, has_nan = (flags.get() if hasattr(flags, "get") else flags).tolist()  # one copy to the host
        if has_inf or has_nan:
            status = "Inf and NaN" if has_inf and has_nan else "Inf" if has_inf else "NaN"
            raise InvalidArgumentError(None, op, f"{message} : Tensor had {status} values")
        return x
    return check_numerics


# --- logging_ops --------------------------------------------------------------------------------------------------
@kernel("Print", None, NO_GPU)
def _print(op, ctx):
    attrs = op._attrs
    message, first_n, summarize = attrs["message"], attrs["first_n"], attrs["summarize"]
    lock, calls = threading.Lock(), [0]

    def print_(x, *data):
        if first_n >= 0:
            with lock:
                if calls[0] >= first_n:
                    return x
                calls[0] += 1
        text = message + "".join(f"[{summarize_value(d, summarize)}]" for d in data)
        print(text, file=sys.stderr)
        return x
    return print_
