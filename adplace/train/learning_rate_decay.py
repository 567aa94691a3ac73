"""Learning-rate schedules of TF1's tf.train (exponential_decay and friends): tensors computed from the global step.

    step = tf.train.get_or_create_global_step()
    lr = tf.train.exponential_decay(0.1, step, decay_steps=1000, decay_rate=0.96, staircase=True)
    train = tf.train.GradientDescentOptimizer(lr).minimize(loss, global_step=step)

Each schedule is built in the learning rate's dtype; the step is cast to it. They are plain graph ops, so the value
follows whatever the global step holds when the training op runs.
"""
from __future__ import annotations

import math

from adplace.framework.conversion import convert_to_tensor
from adplace.framework.default_graph import name_scope
from adplace.framework.operation import Tensor
from adplace.ops import array_ops, math_ops, selection_ops


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


def piecewise_constant(x, boundaries, values, name: str | None = None) -> Tensor:
    """values[0] while x <= boundaries[0], values[i] while boundaries[i-1] < x <= boundaries[i], values[-1] after.

    Raises:
      ValueError: len(values) != len(boundaries) + 1, or values of different dtypes.
    """
    if len(boundaries) != len(values) - 1:
        raise ValueError("The length of boundaries should be 1 less than the length of values")
    with name_scope(name, "PiecewiseConstant", [x, *boundaries, *values]) as scope:
        x = convert_to_tensor(x)
        values = [convert_to_tensor(v) for v in values]
        if len({v.dtype.base_dtype for v in values}) > 1:
            raise ValueError(f"Values must have elements all with the same dtype "
                             f"({[v.dtype.base_dtype.name for v in values]}).")
        boundaries = [convert_to_tensor(b, dtype=x.dtype.base_dtype) for b in boundaries]
        result = values[-1]
        for boundary, value in zip(reversed(boundaries), reversed(values[:-1])):
            result = selection_ops.where(math_ops.less_equal(x, boundary), value, result)
        return array_ops.identity(result, name=scope)
