"""Initializers (tf.zeros_initializer, tf.glorot_uniform_initializer, ...): callables that build a variable's
initial value from its shape and dtype, with TF1's defaults and formulas.

Each is called as `init(shape, dtype=None, partition_info=None)` and returns a Tensor made of ordinary ops, so the
value is built inside the variable's `Initializer` name scope and colocated with it:

    w = tf.get_variable("w", shape=[784, 10], initializer=tf.glorot_uniform_initializer(seed=1))
    # uniform in [-sqrt(6 / (784 + 10)), +sqrt(6 / (784 + 10))]
"""
from __future__ import annotations

import math
import types

import numpy as np

from adplace.framework import dtypes as _dtypes
from adplace.framework.operation import Tensor
from adplace.ops import array_ops, constant_op, linalg_ops, random_ops, variables
from adplace.ops.slicing_ops import slice_


def _assert_float_dtype(dtype) -> _dtypes.DType:
    dtype = _dtypes.as_dtype(dtype)
    if not dtype.is_floating:
        raise ValueError(f"Expected floating point type, got {dtype}.")
    return dtype


class Initializer:
    """Base class of initializers (tf.keras.initializers.Initializer in TF1's init_ops)."""

    def __call__(self, shape, dtype=None, partition_info=None) -> Tensor:
        raise NotImplementedError

    def get_config(self) -> dict:
        return {}

    @classmethod
    def from_config(cls, config: dict) -> "Initializer":
        return cls(**config)


class Zeros(Initializer):
    """All zeros (False for bool, b"" for strings)."""

    def __init__(self, dtype=_dtypes.float32):
        self.dtype = _dtypes.as_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None) -> Tensor:
        return array_ops.zeros(shape, self.dtype if dtype is None else dtype)

    def get_config(self) -> dict:
        return {"dtype": self.dtype.name}


class Ones(Initializer):
    """All ones (True for bool)."""

    def __init__(self, dtype=_dtypes.float32):
        self.dtype = _dtypes.as_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None) -> Tensor:
        return array_ops.ones(shape, self.dtype if dtype is None else dtype)

    def get_config(self) -> dict:
        return {"dtype": self.dtype.name}


class Constant(Initializer):
    """A fixed value: a scalar fills the shape; a shorter list is padded with its last element (TF1's constant)."""

    def __init__(self, value=0, dtype=_dtypes.float32, verify_shape: bool = False):
        if not (np.isscalar(value) or isinstance(value, (list, tuple, np.ndarray))):
            raise TypeError(f"Invalid type for initial value: {type(value)} (expected Python scalar, list or tuple of "
                            "values, or numpy.ndarray).")
        self.value = value
        self.dtype = _dtypes.as_dtype(dtype)
        self._verify_shape = verify_shape

    def __call__(self, shape, dtype=None, partition_info=None, verify_shape=None) -> Tensor:
        return constant_op.constant(self.value, dtype=self.dtype if dtype is None else dtype, shape=shape,
                                    verify_shape=self._verify_shape if verify_shape is None else verify_shape)

    def get_config(self) -> dict:
        return {"value": self.value, "dtype": self.dtype.name}


class RandomUniform(Initializer):
    """Uniform in [minval, maxval) (maxval defaults to 1 for floats)."""

    def __init__(self, minval=0, maxval=None, seed=None, dtype=_dtypes.float32):
        self.minval, self.maxval, self.seed = minval, maxval, seed
        self.dtype = _dtypes.as_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None) -> Tensor:
        return random_ops.random_uniform(shape, self.minval, self.maxval, self.dtype if dtype is None else dtype,
                                         seed=self.seed)

    def get_config(self) -> dict:
        return {"minval": self.minval, "maxval": self.maxval, "seed": self.seed, "dtype": self.dtype.name}


class RandomNormal(Initializer):
    """Normal with the given mean and stddev."""

    _sample = staticmethod(random_ops.random_normal)

    def __init__(self, mean=0.0, stddev=1.0, seed=None, dtype=_dtypes.float32):
        self.mean, self.stddev, self.seed = mean, stddev, seed
        self.dtype = _assert_float_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None) -> Tensor:
        return self._sample(shape, self.mean, self.stddev, self.dtype if dtype is None else dtype, seed=self.seed)

    def get_config(self) -> dict:
        return {"mean": self.mean, "stddev": self.stddev, "seed": self.seed, "dtype": self.dtype.name}


class TruncatedNormal(RandomNormal):
    """Normal with the given mean and stddev, redrawn beyond two standard deviations."""

    _sample = staticmethod(random_ops.truncated_normal)


def _compute_fans(shape) -> tuple[int, int]:
    """(fan_in, fan_out) as TF computes them; kernels of rank > 2 are (..., input_depth, depth) convolutions."""
    shape = list(shape)
    if len(shape) < 1:
        return 1, 1
    if len(shape) == 1:
        return int(shape[0]), int(shape[0])
    receptive_field_size = int(np.prod(shape[:-2], dtype=np.int64))
    return int(shape[-2]) * receptive_field_size, int(shape[-1]) * receptive_field_size


class VarianceScaling(Initializer):
    """Samples with variance `scale / n`, n the fan-in, fan-out or their average (`mode`).

    distribution "truncated_normal" (or its old name "normal") draws a truncated normal whose stddev is corrected
    for the truncation; "untruncated_normal" a normal; "uniform" draws from [-limit, limit], limit = sqrt(3 * var).
    """

    def __init__(self, scale: float = 1.0, mode: str = "fan_in", distribution: str = "truncated_normal", seed=None,
                 dtype=_dtypes.float32):
        if scale <= 0.0:
            raise ValueError("`scale` must be positive float.")
        if mode not in {"fan_in", "fan_out", "fan_avg"}:
            raise ValueError(f"Invalid `mode` argument: {mode}")
        distribution = distribution.lower()
        if distribution not in {"normal", "uniform", "truncated_normal", "untruncated_normal"}:
            raise ValueError(f"Invalid `distribution` argument: {distribution}")
        self.scale, self.mode, self.distribution, self.seed = scale, mode, distribution, seed
        self.dtype = _assert_float_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None) -> Tensor:
        dtype = self.dtype if dtype is None else dtype
        fan_in, fan_out = _compute_fans(shape if partition_info is None else partition_info.full_shape)
        fan = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2.0}[self.mode]
        scale = self.scale / max(1.0, fan)
        if self.distribution in ("normal", "truncated_normal"):
            stddev = math.sqrt(scale) / 0.87962566103423978  # stddev of a unit normal truncated to [-2, 2]
            return random_ops.truncated_normal(shape, 0.0, stddev, dtype, seed=self.seed)
        if self.distribution == "untruncated_normal":
            return random_ops.random_normal(shape, 0.0, math.sqrt(scale), dtype, seed=self.seed)
        limit = math.sqrt(3.0 * scale)
        return random_ops.random_uniform(shape, -limit, limit, dtype, seed=self.seed)

    def get_config(self) -> dict:
        return {"scale": self.scale, "mode": self.mode, "distribution": self.distribution, "seed": self.seed,
                "dtype": self.dtype.name}


class GlorotUniform(VarianceScaling):
    """Uniform in [-limit, limit], limit = sqrt(6 / (fan_in + fan_out)): TF1's default for float variables."""

    def __init__(self, seed=None, dtype=_dtypes.float32):
        super().__init__(scale=1.0, mode="fan_avg", distribution="uniform", seed=seed, dtype=dtype)

    def get_config(self) -> dict:
        return {"seed": self.seed, "dtype": self.dtype.name}


class GlorotNormal(VarianceScaling):
    """Truncated normal with stddev sqrt(2 / (fan_in + fan_out)) (before the truncation correction)."""

    def __init__(self, seed=None, dtype=_dtypes.float32):
        super().__init__(scale=1.0, mode="fan_avg", distribution="truncated_normal", seed=seed, dtype=dtype)

    def get_config(self) -> dict:
        return {"seed": self.seed, "dtype": self.dtype.name}


class UniformUnitScaling(Initializer):
    """Uniform in [-limit, limit], limit = factor * sqrt(3 / input_size), input_size the product of all dimensions
    but the last (of the full shape when partitioned): keeps a linear layer's output scale (TF1's deprecated
    tf.uniform_unit_scaling_initializer)."""

    def __init__(self, factor: float = 1.0, seed=None, dtype=_dtypes.float32):
        self.factor, self.seed = factor, seed
        self.dtype = _assert_float_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None) -> Tensor:
        scale_shape = list(shape if partition_info is None else partition_info.full_shape)
        input_size = max(float(np.prod(scale_shape[:-1], dtype=np.float64)), 1.0)
        limit = math.sqrt(3.0 / input_size) * self.factor
        return random_ops.random_uniform(shape, -limit, limit, self.dtype if dtype is None else dtype, seed=self.seed)

    def get_config(self) -> dict:
        return {"factor": self.factor, "seed": self.seed, "dtype": self.dtype.name}


class Identity(Initializer):
    """`gain` times the identity matrix; 2-D shapes only (tf.initializers.identity; non-square: ones on the main
    diagonal)."""

    def __init__(self, gain: float = 1.0, dtype=_dtypes.float32):
        self.gain = gain
        self.dtype = _assert_float_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None) -> Tensor:
        full_shape = list(shape if partition_info is None else partition_info.full_shape)
        if len(full_shape) != 2:
            raise ValueError("Identity matrix initializer can only be used for 2D matrices.")
        dtype = self.dtype if dtype is None else _dtypes.as_dtype(dtype)
        initializer = linalg_ops.eye(*full_shape, dtype=dtype)
        if partition_info is not None:
            initializer = slice_(initializer, partition_info.var_offset, list(shape))
        return self.gain * initializer

    def get_config(self) -> dict:
        return {"gain": self.gain, "dtype": self.dtype.name}


def lecun_normal(seed=None) -> VarianceScaling:
    return VarianceScaling(scale=1.0, mode="fan_in", distribution="truncated_normal", seed=seed)


def lecun_uniform(seed=None) -> VarianceScaling:
    return VarianceScaling(scale=1.0, mode="fan_in", distribution="uniform", seed=seed)


def he_normal(seed=None) -> VarianceScaling:
    return VarianceScaling(scale=2.0, mode="fan_in", distribution="truncated_normal", seed=seed)


def he_uniform(seed=None) -> VarianceScaling:
    return VarianceScaling(scale=2.0, mode="fan_in", distribution="uniform", seed=seed)


# TF1's public names: the classes themselves, called with their constructor arguments.
zeros_initializer = Zeros
ones_initializer = Ones
constant_initializer = Constant
random_uniform_initializer = RandomUniform
random_normal_initializer = RandomNormal
truncated_normal_initializer = TruncatedNormal
variance_scaling_initializer = VarianceScaling
glorot_uniform_initializer = GlorotUniform
glorot_normal_initializer = GlorotNormal
uniform_unit_scaling_initializer = UniformUnitScaling
identity_initializer = Identity

# tf.initializers: the initializers under their short TF1 names, and the variable-initializer ops.
initializers = types.SimpleNamespace(
    zeros=Zeros, ones=Ones, constant=Constant, random_uniform=RandomUniform, random_normal=RandomNormal,
    truncated_normal=TruncatedNormal, variance_scaling=VarianceScaling, glorot_uniform=GlorotUniform,
    glorot_normal=GlorotNormal, uniform_unit_scaling=UniformUnitScaling, identity=Identity, lecun_normal=lecun_normal, lecun_uniform=lecun_uniform, he_normal=he_normal,
    he_uniform=he_uniform, global_variables=variables.global_variables_initializer,
    local_variables=variables.local_variables_initializer, variables=variables.variables_initializer)
