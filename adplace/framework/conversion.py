"""convert_to_tensor: Tensors pass through, Variables give their snapshot, other values use registered converters."""
from __future__ import annotations

from typing import Callable

from adplace.framework import dtypes as _dtypes
from adplace.framework.operation import Operation, Tensor


# --- conversion ---------------------------------------------------------------------------------------------
_conversion_functions: list[tuple[int, type, Callable]] = []


def register_tensor_conversion_function(base_type, conversion_func: Callable, priority: int = 100) -> None:
    """Register `conversion_func(value, dtype=None, name=None, as_ref=False) -> Tensor` for `base_type`; lower
    `priority` values are tried first, as in TF."""
    _conversion_functions.append((priority, base_type, conversion_func))
    _conversion_functions.sort(key=lambda entry: entry[0])


def convert_to_tensor(value, dtype=None, name: str | None = None, preferred_dtype=None, as_ref: bool = False) -> Tensor:
    """Convert a Tensor, Variable, NumPy array or Python value to a Tensor (new Const ops for constants)."""
    dtype = None if dtype is None else _dtypes.as_dtype(dtype)
    if isinstance(value, Tensor):
        if dtype is not None and not dtype.is_compatible_with(value._dtype):
            raise ValueError(f"Tensor conversion requested dtype {dtype.name} for Tensor with dtype "
                             f"{value._dtype.name}: {value!r}")
        return value
    if value is None:
        raise ValueError("None values not supported.")
    if isinstance(value, Operation):  # TF's message: an op has no value; fetch or depend on it instead
        raise TypeError(f"Can't convert Operation '{value.name}' to Tensor (target dtype={dtype!r}, name={name!r}, "
                        f"as_ref={as_ref!r})")
    for _, base_type, fn in _conversion_functions:
        if isinstance(value, base_type):
            if dtype is None and preferred_dtype is not None:
                try:
                    return fn(value, dtype=_dtypes.as_dtype(preferred_dtype), name=name, as_ref=as_ref)
                except (TypeError, ValueError):
                    pass
            return fn(value, dtype=dtype, name=name, as_ref=as_ref)
    raise TypeError(f"Failed to convert object of type {type(value)} to Tensor. Contents: {value!r}.")
