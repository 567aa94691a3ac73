"""tf.contrib.layers' weight initializers: Xavier (Glorot) and He-style variance scaling, with contrib's formulas.

These are contrib's own, not tf.glorot_uniform_initializer: fans are counted as floats, and the normal case draws a
truncated normal with stddev sqrt(1.3 * factor / n), so that after truncation at two standard deviations the
variance is about factor / n.

    w = tf.get_variable("w", [784, 10], initializer=tf.contrib.layers.xavier_initializer())
    # uniform in [-sqrt(6 / (784 + 10)), +sqrt(6 / (784 + 10))]
"""
from __future__ import annotations

import math
from typing import Callable

from adplace.framework import dtypes as _dtypes
from adplace.framework.operation import Tensor
from adplace.ops import random_ops

_MODES = ("FAN_IN", "FAN_OUT", "FAN_AVG")


def xavier_initializer(uniform: bool = True, seed=None, dtype=_dtypes.float32) -> Callable[..., Tensor]:
    """Glorot initialization: uniform in [-x, x] with x = sqrt(6 / (fan_in + fan_out)), or a truncated normal with
    stddev sqrt(1.3 * 2 / (fan_in + fan_out)) when `uniform` is False.

    Args:
      uniform: uniform (default) or truncated-normal samples.
      seed: the op-level random seed.
      dtype: the (floating) dtype of the values.
    Returns:
      An initializer `init(shape, dtype=dtype, partition_info=None)`.
    """
    return variance_scaling_initializer(factor=1.0, mode="FAN_AVG", uniform=uniform, seed=seed, dtype=dtype)


xavier_initializer_conv2d = xavier_initializer


def _fans(shape) -> tuple[float, float]:
    """(fan_in, fan_out) as contrib counts them: a conv kernel's spatial dims multiply both."""
    shape = [float(d) for d in shape]
    fan_in = shape[-2] if len(shape) > 1 else shape[-1]
    fan_out = shape[-1]
    for dim in shape[:-2]:
        fan_in *= dim
        fan_out *= dim
    return fan_in, fan_out


def variance_scaling_initializer(factor: float = 2.0, mode: str = "FAN_IN", uniform: bool = False, seed=None,
                                 dtype=_dtypes.float32) -> Callable[..., Tensor]:
    """Samples with variance factor / n, n = fan_in, fan_out or their mean (`mode`); the default is He et al.'s.

    Uniform samples lie in [-sqrt(3 * factor / n), sqrt(3 * factor / n)]; normal ones come from a truncated normal
    with stddev sqrt(1.3 * factor / n).

    Args:
      factor: the multiplicative factor.
      mode: "FAN_IN", "FAN_OUT" or "FAN_AVG".
      uniform: uniform or truncated-normal samples.
      seed: the op-level random seed.
      dtype: the (floating) dtype of the values.
    Returns:
      An initializer `init(shape, dtype=dtype, partition_info=None)`.
    Raises:
      TypeError: `dtype` is not floating point, or `mode` is not one of the three.
    """
    dtype = _dtypes.as_dtype(dtype)
    if not dtype.is_floating:
        raise TypeError("Cannot create initializer for non-floating point type.")
    if mode not in _MODES:
        raise TypeError(f"Unknow mode {mode} [FAN_IN, FAN_OUT, FAN_AVG]")

    def _initializer(shape, dtype=dtype, partition_info=None) -> Tensor:
        dtype = _dtypes.as_dtype(dtype)
        if not dtype.is_floating:
            raise TypeError("Cannot create initializer for non-floating point type.")
        fan_in, fan_out = _fans(shape)
        n = {"FAN_IN": fan_in, "FAN_OUT": fan_out, "FAN_AVG": (fan_in + fan_out) / 2.0}[mode]
        if uniform:
            limit = math.sqrt(3.0 * factor / n)
            return random_ops.random_uniform(shape, -limit, limit, dtype, seed=seed)
        return random_ops.truncated_normal(shape, 0.0, math.sqrt(1.3 * factor / n), dtype, seed=seed)

    return _initializer
