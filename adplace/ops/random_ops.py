"""Random ops with TF's seeding: graph seed + op seed give a reproducible stream per op."""
from __future__ import annotations

from adplace.framework import dtypes as _dtypes
from adplace.framework.conversion import convert_to_tensor
from adplace.framework.default_graph import name_scope
from adplace.framework.random_seed import get_seed
from adplace.framework.operation import Tensor
from adplace.framework.registry import register_op
from adplace.ops import math_ops
from adplace.framework.tensor_shape import TensorShape
from adplace.ops.op_builder import apply_op_1, check_dtype, constant_value, int_const, shape_from_tensor, shapes_text


def _random_infer(op_type: str, allowed=_dtypes.FLOATING):
    def infer(inputs, attrs, name):
        check_dtype(op_type, "dtype", attrs["dtype"], allowed)
        return [(attrs["dtype"], shape_from_tensor(inputs[0]))]
    return infer


for _op_type in ("RandomUniform", "RandomStandardNormal", "TruncatedNormal"):
    register_op(_op_type, _random_infer(_op_type), is_stateful=True)


def _random(op_type: str, shape, dtype, seed, extra_inputs=(), name: str | None = None) -> Tensor:
    """A random op with TF's seed pair (graph seed, op seed) in its attrs."""
    seed1, seed2 = get_seed(seed)
    dtype = _dtypes.as_dtype(dtype).base_dtype
    attrs = {"dtype": dtype, "T": dtype, "Tout": dtype, "seed": seed1 or 0, "seed2": seed2 or 0}
    return apply_op_1(op_type, [int_const(shape, name="shape"), *extra_inputs], attrs, name=name or op_type)


register_op("RandomUniformInt", _random_infer("RandomUniformInt", {_dtypes.int32, _dtypes.int64}),
            is_stateful=True)


def random_uniform(shape, minval=0, maxval=None, dtype=_dtypes.float32, seed=None, name: str | None = None):
    """Uniform values in [minval, maxval) (maxval defaults to 1 for floats; required for ints) (tf.random_uniform)."""
    dtype = _dtypes.as_dtype(dtype)
    if dtype.is_integer:
        if maxval is None:
            raise ValueError(f"Must specify maxval for integer dtype {dtype!r}")
        with name_scope(name, "random_uniform") as scope:
            bounds = (convert_to_tensor(minval, dtype=dtype, name="min"),
                      convert_to_tensor(maxval, dtype=dtype, name="max"))
            return _random("RandomUniformInt", shape, dtype, seed, bounds, name=scope)
    with name_scope(name, "random_uniform") as scope:
        minval = convert_to_tensor(minval, dtype=dtype, name="min")
        maxval = convert_to_tensor(1 if maxval is None else maxval, dtype=dtype, name="max")
        span = math_ops.subtract(maxval, minval, name="sub")
        return _scale_shift(_random("RandomUniform", shape, dtype, seed), span, minval, scope)


def _normal(op_type: str, default_name: str, shape, mean, stddev, dtype, seed, name) -> Tensor:
    dtype = _dtypes.as_dtype(dtype)
    with name_scope(name, default_name) as scope:
        mean = convert_to_tensor(mean, dtype=dtype, name="mean")
        stddev = convert_to_tensor(stddev, dtype=dtype, name="stddev")
        return _scale_shift(_random(op_type, shape, dtype, seed), stddev, mean, scope)


def random_normal(shape, mean=0.0, stddev=1.0, dtype=_dtypes.float32, seed=None, name: str | None = None):
    """Normal values with the given mean and stddev (tf.random_normal)."""
    return _normal("RandomStandardNormal", "random_normal", shape, mean, stddev, dtype, seed, name)


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=_dtypes.float32, seed=None, name: str | None = None):
    """Normal values redrawn until within two standard deviations (tf.truncated_normal)."""
    return _normal("TruncatedNormal", "truncated_normal", shape, mean, stddev, dtype, seed, name)


def _scale_shift(x: Tensor, scale: Tensor, shift: Tensor, scope: str) -> Tensor:
    return math_ops.add(math_ops.multiply(x, scale, name="mul"), shift, name=scope)


register_op("RandomShuffle", lambda inputs, attrs, name: [(inputs[0]._dtype.base_dtype, inputs[0]._shape)],
            is_stateful=True)


def random_shuffle(value, seed=None, name: str | None = None) -> Tensor:
    """`value` with its slices along the first dimension in a random order (tf.random_shuffle, tf.random.shuffle).

    Seeded as the other random ops: with tf.set_random_seed or `seed`, the same order in every session."""
    seed1, seed2 = get_seed(seed)
    value = convert_to_tensor(value, name="value")
    return apply_op_1("RandomShuffle", [value], {"T": value.dtype.base_dtype, "seed": seed1 or 0,
                                                 "seed2": seed2 or 0}, name=name or "RandomShuffle")


def _multinomial_infer(inputs, attrs, name):
    logits, num_t = inputs
    check_dtype("Multinomial", "logits", logits._dtype, _dtypes.FLOATING | _dtypes.INTEGER)
    check_dtype("Multinomial", "num_samples", num_t._dtype, (_dtypes.int32,))
    dims, num = logits._shape.as_tuple(), constant_value(num_t)
    if dims is not None and len(dims) != 2:
        raise ValueError(f"Shape must be rank 2 but is rank {len(dims)} for '{name}' (op: 'Multinomial') with input "
                         f"shapes: {shapes_text(inputs)}.")
    return [(attrs["output_dtype"], TensorShape([None if dims is None else dims[0],
                                                 None if num is None else int(num)]))]


register_op("Multinomial", _multinomial_infer, is_stateful=True)


def _categorical(logits, num_samples, dtype, seed, scope_name: str, name) -> Tensor:
    with name_scope(name, scope_name, [logits]):
        logits = convert_to_tensor(logits, name="logits")
        seed1, seed2 = get_seed(seed)
        num_t = convert_to_tensor(num_samples, dtype=_dtypes.int32, name="num_samples")
        dtype = _dtypes.int64 if dtype is None else _dtypes.as_dtype(dtype).base_dtype
        if dtype not in (_dtypes.int32, _dtypes.int64):
            raise TypeError(f"Value passed to parameter 'output_dtype' has DataType {dtype.name} not in list of "
                            f"allowed values: int32, int64")
        return apply_op_1("Multinomial", [logits, num_t], {"T": logits.dtype.base_dtype, "output_dtype": dtype,
                                                           "seed": seed1 or 0, "seed2": seed2 or 0},
                          name="Multinomial")


def multinomial(logits, num_samples, seed=None, name: str | None = None, output_dtype=None) -> Tensor:
    """`num_samples` class indices per row of `logits` [batch, classes], drawn with probabilities softmax(logits)
    (tf.multinomial); int64 unless `output_dtype`. A logit of -inf is never drawn."""
    return _categorical(logits, num_samples, output_dtype, seed, "multinomial", name)


def categorical(logits, num_samples, dtype=None, seed=None, name: str | None = None) -> Tensor:
    """tf.random.categorical: tf.multinomial with TF2's argument names."""
    return _categorical(logits, num_samples, dtype, seed, "categorical", name)
