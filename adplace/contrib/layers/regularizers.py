"""tf.contrib.layers' regularizers: functions weights -> scalar penalty, for get_variable(regularizer=...) or the
layers' `weights_regularizer`, plus `apply_regularization` to sum one over a list of weights.

A regularizer passed to get_variable runs in the name scope `<variable>/Regularizer/`, and its result goes to
GraphKeys.REGULARIZATION_LOSSES:

    w = tf.get_variable("w", [3], regularizer=tf.contrib.layers.l2_regularizer(0.1))
    tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)   # [w/Regularizer/l2_regularizer:0] = 0.1 * sum(w**2) / 2
"""
from __future__ import annotations

import logging
import numbers
from typing import Callable

from adplace.framework.conversion import convert_to_tensor
from adplace.framework.default_graph import add_to_collection, get_collection, name_scope
from adplace.framework.graph import GraphKeys
from adplace.framework.operation import Tensor
from adplace.ops import constant_op, math_ops, nn_ops, reduction_ops


Regularizer = Callable[[Tensor], "Tensor | None"]


def _checked_scale(scale, end: str) -> bool:
    """Whether `scale` (a Python number or a Tensor) leaves the regularizer on; integers and negatives raise (the
    message ends with `end`: TF's l1 and l2 messages differ by a full stop)."""
    if isinstance(scale, numbers.Integral):
        raise ValueError(f"scale cannot be an integer: {scale}")
    if isinstance(scale, numbers.Real):
        if scale < 0.0:
            raise ValueError(f"Setting a scale less than 0 on a regularizer: {scale:g}{end}")
        if scale == 0.0:
            logging.getLogger("adplace").info("Scale of 0 disables regularizer.")
            return False
    return True


def l1_regularizer(scale, scope: str | None = None) -> Regularizer:
    """A regularizer `scale * sum(|w|)` (tf.contrib.layers.l1_regularizer); scale 0.0 gives one returning None.

    Raises:
      ValueError: `scale` is an integer or negative.
    """
    if not _checked_scale(scale, ""):
        return lambda _: None

    def l1(weights, name=None) -> Tensor:
        with name_scope(scope, "l1_regularizer", [weights]) as name:
            my_scale = convert_to_tensor(scale, dtype=weights.dtype.base_dtype, name="scale")
            return math_ops.multiply(my_scale, reduction_ops.reduce_sum(math_ops.abs(weights)), name=name)

    return l1


def l2_regularizer(scale, scope: str | None = None) -> Regularizer:
    """A regularizer `scale * sum(w ** 2) / 2` (tf.contrib.layers.l2_regularizer, through tf.nn.l2_loss); scale 0.0
    gives one returning None.

    Raises:
      ValueError: `scale` is an integer or negative.
    """
    if not _checked_scale(scale, "."):
        return lambda _: None

    def l2(weights) -> Tensor:
        with name_scope(scope, "l2_regularizer", [weights]) as name:
            my_scale = convert_to_tensor(scale, dtype=weights.dtype.base_dtype, name="scale")
            return math_ops.multiply(my_scale, nn_ops.l2_loss(weights), name=name)

    return l2


def sum_regularizer(regularizer_list, scope: str | None = None) -> Regularizer | None:
    """A regularizer adding up those in `regularizer_list` (None entries dropped); None if none is left."""
    regularizer_list = [reg for reg in regularizer_list if reg is not None]
    if not regularizer_list:
        return None

    def sum_reg(weights) -> Tensor:
        with name_scope(scope, "sum_regularizer", [weights]) as name:
            return math_ops.add_n([reg(weights) for reg in regularizer_list], name=name)

    return sum_reg


def l1_l2_regularizer(scale_l1=1.0, scale_l2=1.0, scope: str | None = None) -> Regularizer | None:
    """The sum of an L1 and an L2 regularizer, in scope `l1_l2_regularizer` by default."""
    return sum_regularizer([l1_regularizer(scale_l1), l2_regularizer(scale_l2)], scope=scope or "l1_l2_regularizer")


def apply_regularization(regularizer: Regularizer, weights_list=None) -> Tensor:
    """The summed penalty of `regularizer` over `weights_list` (default: the GraphKeys.WEIGHTS collection), also
    added to GraphKeys.REGULARIZATION_LOSSES. A regularizer returning None counts as 0.

        penalty = tf.contrib.layers.apply_regularization(tf.contrib.layers.l1_regularizer(0.01), [w1, w2])
        # penalty.op.name == "get_regularization_penalty"

    Raises:
      ValueError: there are no weights, or the regularizer returns a non-scalar.
    """
    if not weights_list:
        weights_list = get_collection(GraphKeys.WEIGHTS)
    if not weights_list:
        raise ValueError("No weights to regularize.")
    with name_scope("get_regularization_penalty", values=weights_list) as scope:
        penalties = [regularizer(w) for w in weights_list]
        penalties = [p if p is not None else constant_op.constant(0.0) for p in penalties]
        for p in penalties:
            if p.shape.ndims != 0:
                raise ValueError(f"regularizer must return a scalar Tensor instead of a Tensor with rank "
                                 f"{p.shape.ndims}.")
        summed_penalty = math_ops.add_n(penalties, name=scope)
        add_to_collection(GraphKeys.REGULARIZATION_LOSSES, summed_penalty)
        return summed_penalty
