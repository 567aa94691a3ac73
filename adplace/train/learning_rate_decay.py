"""Learning-rate schedules of TF1's tf.train (exponential_decay and friends): tensors computed from the global step.

    step = tf.train.get_or_create_global_step()
    lr = tf.train.exponential_decay(0.1, step, decay_steps=1000, decay_rate=0.96, staircase=True)
    train = tf.train.GradientDescentOptimizer(lr).minimize(loss, global_step=step)

Each schedule is built in the learning rate's dtype; the step is cast to it. They are plain graph ops, so the value
follows whatever the global step holds when the training op runs.
"""
from __future__ import annotations

import math

from adplace.framework import dtypes
from adplace.framework.conversion import convert_to_tensor
from adplace.framework.default_graph import name_scope
from adplace.framework.operation import Tensor
from adplace.ops import array_ops, math_ops, random_ops, selection_ops


def _required(global_step, schedule: str) -> None:
    if global_step is None:
        raise ValueError(f"global_step is required for {schedule}.")


def _progress(learning_rate, global_step, decay_steps, staircase: bool):
    """(learning_rate tensor, global_step / decay_steps in its dtype, floored when `staircase`)."""
    learning_rate = convert_to_tensor(learning_rate, name="learning_rate")
    dtype = learning_rate.dtype
    p = math_ops.truediv(math_ops.cast(global_step, dtype), math_ops.cast(decay_steps, dtype))
    return learning_rate, (math_ops.floor(p) if staircase else p)


def exponential_decay(learning_rate, global_step, decay_steps, decay_rate, staircase: bool = False,
                      name: str | None = None) -> Tensor:
    """learning_rate * decay_rate ** (global_step / decay_steps), the exponent floored when `staircase`."""
    _required(global_step, "exponential_decay")
    with name_scope(name, "ExponentialDecay", [learning_rate, global_step, decay_steps, decay_rate]) as scope:
        lr, p = _progress(learning_rate, global_step, decay_steps, staircase)
        return math_ops.multiply(lr, math_ops.pow(math_ops.cast(decay_rate, lr.dtype), p), name=scope)


def natural_exp_decay(learning_rate, global_step, decay_steps, decay_rate, staircase: bool = False,
                      name: str | None = None) -> Tensor:
    """learning_rate * exp(-decay_rate * global_step / decay_steps)."""
    _required(global_step, "natural_exp_decay")
    with name_scope(name, "NaturalExpDecay", [learning_rate, global_step, decay_rate]) as scope:
        lr, p = _progress(learning_rate, global_step, decay_steps, staircase)
        exponent = math_ops.exp(math_ops.multiply(math_ops.negative(math_ops.cast(decay_rate, lr.dtype)), p))
        return math_ops.multiply(lr, exponent, name=scope)


def inverse_time_decay(learning_rate, global_step, decay_steps, decay_rate, staircase: bool = False,
                       name: str | None = None) -> Tensor:
    """learning_rate / (1 + decay_rate * global_step / decay_steps)."""
    _required(global_step, "inverse_time_decay")
    with name_scope(name, "InverseTimeDecay", [learning_rate, global_step, decay_rate]) as scope:
        lr, p = _progress(learning_rate, global_step, decay_steps, staircase)
        denominator = math_ops.add(1.0, math_ops.multiply(math_ops.cast(decay_rate, lr.dtype), p))
        return math_ops.truediv(lr, denominator, name=scope)


def polynomial_decay(learning_rate, global_step, decay_steps, end_learning_rate=0.0001, power=1.0,
                     cycle: bool = False, name: str | None = None) -> Tensor:
    """(learning_rate - end) * (1 - step / decay_steps) ** power + end, the step capped at decay_steps; with
    `cycle`, decay_steps grows to the next multiple of itself past the step instead (1 at step 0)."""
    _required(global_step, "polynomial_decay")
    with name_scope(name, "PolynomialDecay", [learning_rate, global_step, decay_steps, end_learning_rate,
                                              power]) as scope:
        lr = convert_to_tensor(learning_rate, name="learning_rate")
        dtype = lr.dtype
        step = math_ops.cast(global_step, dtype)
        steps = math_ops.cast(decay_steps, dtype)
        end = math_ops.cast(end_learning_rate, dtype)
        if cycle:
            multiplier = selection_ops.where(math_ops.equal(step, 0), array_ops.ones_like(step),
                                         math_ops.ceil(step / steps))
            steps = math_ops.multiply(steps, multiplier)
        else:
            step = math_ops.minimum(step, steps)
        fraction = math_ops.pow(1 - step / steps, math_ops.cast(power, dtype))
        return math_ops.add(math_ops.multiply(lr - end, fraction), end, name=scope)


def cosine_decay(learning_rate, global_step, decay_steps, alpha=0.0, name: str | None = None) -> Tensor:
    """learning_rate * ((1 - alpha) * 0.5 * (1 + cos(pi * step / decay_steps)) + alpha), the step capped."""
    _required(global_step, "cosine_decay")
    with name_scope(name, "CosineDecay", [learning_rate, global_step]) as scope:
        lr = convert_to_tensor(learning_rate, name="learning_rate")
        dtype = lr.dtype
        steps = math_ops.cast(decay_steps, dtype)
        step = math_ops.minimum(math_ops.cast(global_step, dtype), steps)
        cosine = 0.5 * (1.0 + math_ops.cos(math.pi * step / steps))
        alpha = math_ops.cast(alpha, dtype)
        return math_ops.multiply(lr, (1 - alpha) * cosine + alpha, name=scope)


def cosine_decay_restarts(learning_rate, global_step, first_decay_steps, t_mul=2.0, m_mul=1.0, alpha=0.0,
                          name: str | None = None) -> Tensor:
    """Cosine decay with warm restarts (SGDR): period i lasts first_decay_steps * t_mul**i steps and starts from
    m_mul**i times the initial rate; within a period the rate falls as in cosine_decay to alpha (a fraction)."""
    _required(global_step, "cosine_decay_restarts")
    with name_scope(name, "SGDRDecay", [learning_rate, global_step]) as scope:
        lr = convert_to_tensor(learning_rate, name="initial_learning_rate")
        dtype = lr.dtype
        fraction = math_ops.cast(global_step, dtype) / math_ops.cast(first_decay_steps, dtype)
        t_mul, m_mul, alpha = (math_ops.cast(v, dtype) for v in (t_mul, m_mul, alpha))
        # Equal periods (t_mul == 1): the restart count is the whole part of the fraction. Growing periods: invert
        # their geometric partial sums. TF picks one with tf.cond; both are cheap scalars, so select with where.
        equal_restart = math_ops.floor(fraction)
        grown_restart = math_ops.floor(math_ops.log(1.0 - fraction * (1.0 - t_mul)) / math_ops.log(t_mul))
        grown_elapsed = (1.0 - math_ops.pow(t_mul, grown_restart)) / (1.0 - t_mul)
        is_equal = math_ops.equal(t_mul, 1.0)
        restart = selection_ops.where(is_equal, equal_restart, grown_restart)
        fraction = selection_ops.where(is_equal, fraction - equal_restart,
                                       (fraction - grown_elapsed) / math_ops.pow(t_mul, grown_restart))
        cosine = 0.5 * math_ops.pow(m_mul, restart) * (1.0 + math_ops.cos(math.pi * fraction))
        return math_ops.multiply(lr, (1.0 - alpha) * cosine + alpha, name=scope)


def _linear_cosine(lr: Tensor, global_step, decay_steps, num_periods, alpha, beta, noise=None):
    """(alpha + linear [+ noise]) * cosine + beta, times lr: the shared body of the two linear-cosine schedules."""
    dtype = lr.dtype
    steps = math_ops.cast(decay_steps, dtype)
    step = math_ops.minimum(math_ops.cast(global_step, dtype), steps)
    linear = (steps - step) / steps
    if noise is not None:
        linear = linear + noise(step)
    cosine = 0.5 * (1.0 + math_ops.cos(math.pi * 2.0 * math_ops.cast(num_periods, dtype) * step / steps))
    return (math_ops.cast(alpha, dtype) + linear) * cosine + math_ops.cast(beta, dtype)


def linear_cosine_decay(learning_rate, global_step, decay_steps, num_periods=0.5, alpha=0.0, beta=0.001,
                        name: str | None = None) -> Tensor:
    """learning_rate * ((alpha + (decay_steps - step) / decay_steps) * 0.5 * (1 + cos(2 pi num_periods step /
    decay_steps)) + beta), the step capped at decay_steps (tf.train.linear_cosine_decay)."""
    _required(global_step, "linear_cosine_decay")
    with name_scope(name, "LinearCosineDecay", [learning_rate, global_step]) as scope:
        lr = convert_to_tensor(learning_rate, name="learning_rate")
        decayed = _linear_cosine(lr, global_step, decay_steps, num_periods, alpha, beta)
        return math_ops.multiply(lr, decayed, name=scope)


def noisy_linear_cosine_decay(learning_rate, global_step, decay_steps, initial_variance=1.0, variance_decay=0.55,
                              num_periods=0.5, alpha=0.0, beta=0.001, name: str | None = None) -> Tensor:
    """linear_cosine_decay with Gaussian noise added to the linear part, of variance
    initial_variance / (1 + step)**variance_decay (tf.train.noisy_linear_cosine_decay); a new draw each run."""
    _required(global_step, "noisy_linear_cosine_decay")
    with name_scope(name, "NoisyLinearCosineDecay", [learning_rate, global_step]) as scope:
        lr = convert_to_tensor(learning_rate, name="learning_rate")
        dtype = lr.dtype

        def noise(step: Tensor) -> Tensor:
            variance = math_ops.cast(initial_variance, dtype) / math_ops.pow(1.0 + step,
                                                                             math_ops.cast(variance_decay, dtype))
            return random_ops.random_normal(array_ops.shape(step), stddev=math_ops.sqrt(variance), dtype=dtype)

        decayed = _linear_cosine(lr, global_step, decay_steps, num_periods, alpha, beta, noise)
        return math_ops.multiply(lr, decayed, name=scope)


def _boundary_like(boundary: Tensor, x: Tensor) -> Tensor:
    """A boundary of x's dtype. As in TF, only int32 widens (to int64, losslessly); any other mismatch is a
    ValueError rather than a silent cast, which could compare floats as truncated integers."""
    have, want = boundary.dtype.base_dtype, x.dtype.base_dtype
    if have == want:
        return boundary
    if have == dtypes.int32 and want == dtypes.int64:
        return math_ops.cast(boundary, dtypes.int64)
    raise ValueError(f"Boundaries ({have}) must have the same dtype as x ({want}).")


def piecewise_constant(x, boundaries, values, name: str | None = None) -> Tensor:
    """values[0] while x <= boundaries[0], values[i] while boundaries[i-1] < x <= boundaries[i], values[-1] after.

    Raises:
      ValueError: len(values) != len(boundaries) + 1, values of different dtypes, or a boundary whose dtype is
        not x's (int32 boundaries widen to an int64 x).
    """
    if len(boundaries) != len(values) - 1:
        raise ValueError("The length of boundaries should be 1 less than the length of values")
    with name_scope(name, "PiecewiseConstant", [x, *boundaries, *values]) as scope:
        x = convert_to_tensor(x)
        values = [convert_to_tensor(v) for v in values]
        if len({v.dtype.base_dtype for v in values}) > 1:
            raise ValueError(f"Values must have elements all with the same dtype "
                             f"({[v.dtype.base_dtype.name for v in values]}).")
        boundaries = [_boundary_like(convert_to_tensor(b), x) for b in boundaries]
        result = values[-1]
        for boundary, value in zip(reversed(boundaries), reversed(values[:-1])):
            result = selection_ops.where(math_ops.less_equal(x, boundary), value, result)
        return array_ops.identity(result, name=scope)
