"""Clipping ops (TF's clip_ops.py): clip_by_value, clip_by_norm, global_norm, clip_by_global_norm and
clip_by_average_norm, composed from math ops as TF1 composes them (so they need no kernels or gradients of their own).

    grads, norm = tf.clip_by_global_norm(grads, 5.0)   # every gradient scaled by min(1, 5 / norm)
"""
from __future__ import annotations

from collections.abc import Sequence

from adplace.framework.conversion import convert_to_tensor
from adplace.framework.default_graph import name_scope
from adplace.framework.indexed_slices import IndexedSlices
from adplace.framework.operation import Tensor
from adplace.ops import array_ops, math_ops, nn_ops, reduction_ops, selection_ops
from adplace.ops.constant_op import constant


def clip_by_value(t, clip_value_min, clip_value_max, name: str | None = None) -> Tensor:
    """`t` with values below `clip_value_min` set to it and values above `clip_value_max` set to it
    (tf.clip_by_value): TF1's Minimum then Maximum, so the gradient flows where `t` is inside the range.

        tf.clip_by_value([-2.0, 0.5, 3.0], -1.0, 1.0)   # [-1., 0.5, 1.]

    Raises:
      ValueError: the bounds would broadcast `t` to a larger shape ("Shapes (2,) and (2, 2) are not compatible").
    """
    with name_scope(name, "clip_by_value", [t, clip_value_min, clip_value_max]) as scope:
        values = convert_to_tensor(_values_of(t), name="t")
        t_min = math_ops.minimum(values, clip_value_max)
        values.shape.merge_with(t_min.shape)  # TF's guard against the bounds broadcasting t to a larger shape
        clipped = math_ops.maximum(t_min, clip_value_min, name=scope)
        values.shape.merge_with(clipped.shape)
        return _like(t, clipped)


def clip_by_norm(t, clip_norm, axes=None, name: str | None = None) -> Tensor:
    """`t` scaled so its L2 norm (over `axes`, all when None) is at most `clip_norm` (tf.clip_by_norm):
    t * clip_norm / max(l2norm(t), clip_norm). A zero tensor stays zero (no NaN, and a NaN-free gradient)."""
    with name_scope(name, "clip_by_norm", [t, clip_norm]) as scope:
        values = convert_to_tensor(_values_of(t), name="t")
        l2sum = reduction_ops.reduce_sum(values * values, axes, keepdims=True)
        positive = math_ops.greater(l2sum, 0)
        l2sum_safe = selection_ops.where(positive, l2sum, array_ops.ones_like(l2sum))
        l2norm = selection_ops.where(positive, math_ops.sqrt(l2sum_safe), l2sum)
        intermediate = values * clip_norm
        values.shape.merge_with(intermediate.shape)
        return _like(t, array_ops.identity(intermediate / math_ops.maximum(l2norm, clip_norm), name=scope))


def _values_of(t):
    """The values clipping acts on: an IndexedSlices' rows (its absent rows are zero), else `t` itself."""
    return t.values if isinstance(t, IndexedSlices) else t


def _like(t, values):
    """`values` in the form of `t`: an IndexedSlices with t's indices, or the tensor."""
    return IndexedSlices(values, t.indices, t.dense_shape) if isinstance(t, IndexedSlices) else values


def _checked_list(t_list) -> list:
    if not isinstance(t_list, Sequence) or isinstance(t_list, (str, bytes)):
        raise TypeError("t_list should be a sequence")
    return list(t_list)


def global_norm(t_list, name: str | None = None) -> Tensor:
    """sqrt(sum of l2norm(t)**2 over the tensors of `t_list`), None entries ignored (tf.global_norm).

    Raises:
      TypeError: `t_list` is not a sequence.
    """
    t_list = _checked_list(t_list)
    with name_scope(name, "global_norm", t_list):
        values = [convert_to_tensor(_values_of(t), name=f"t_{i}") for i, t in enumerate(t_list) if t is not None]
        half_squared_norm = reduction_ops.reduce_sum(array_ops.stack([nn_ops.l2_loss(v) for v in values]))
        return math_ops.sqrt(half_squared_norm * constant(2.0, dtype=half_squared_norm.dtype), name="global_norm")


def clip_by_global_norm(t_list, clip_norm, use_norm=None, name: str | None = None) -> tuple[list, Tensor]:
    """Scale every tensor of `t_list` by clip_norm / max(global_norm, clip_norm) (tf.clip_by_global_norm).

    Returns (the clipped list, the global norm). None entries stay None. An infinite or NaN global norm makes
    every output NaN, as in TF, so a diverged step shows instead of being silently clipped.

        clipped, norm = tf.clip_by_global_norm([g1, None, g2], 1.0)   # clipped[1] is None

    Raises:
      TypeError: `t_list` is not a sequence.
    """
    t_list = _checked_list(t_list)
    use_norm = global_norm(t_list, name) if use_norm is None else use_norm
    with name_scope(name, "clip_by_global_norm", t_list + [clip_norm]) as scope:
        scale = clip_norm * math_ops.minimum(1.0 / use_norm, constant(1.0, dtype=use_norm.dtype) / clip_norm)
        scale = scale + (use_norm - use_norm)  # NaN when the norm is inf or NaN, 0 otherwise
        clipped = []
        for i, t in enumerate(t_list):
            if t is None:
                clipped.append(None)
                continue
            values = convert_to_tensor(_values_of(t), name=f"t_{i}")
            scaled = array_ops.identity(values * math_ops.cast(scale, values.dtype), name=f"{scope}_{i}")
            clipped.append(_like(t, scaled))
        return clipped, use_norm


def clip_by_average_norm(t, clip_norm, name: str | None = None) -> Tensor:
    """`t` scaled so its L2 norm divided by its number of elements is at most `clip_norm`
    (tf.clip_by_average_norm): t * clip_norm * min(size(t) / l2norm(t), 1 / clip_norm)."""
    with name_scope(name, "clip_by_average_norm", [t, clip_norm]) as scope:
        t = convert_to_tensor(t, name="t")
        n_element = math_ops.cast(array_ops.size(t), t.dtype)
        l2norm_inv = math_ops.rsqrt(reduction_ops.reduce_sum(t * t, math_ops.range(array_ops.rank(t))))
        scale = math_ops.minimum(l2norm_inv * n_element, constant(1.0, dtype=t.dtype) / clip_norm)
        return array_ops.identity(t * clip_norm * scale, name=scope)
