"""Numerical gradient checks (TF 1.x tf.test.compute_gradient / compute_gradient_error).

The theoretical Jacobian comes from tf.gradients, one column per element of y (a one-hot grad_ys fed through a
placeholder); the numerical one from central differences, feeding x perturbed by +-delta one element at a time.
Both run in the default session, as in TF:

    x = tf.placeholder(tf.float64, [3])
    y = tf.sin(x)
    with tf.Session():
        err = tf.test.compute_gradient_error(x, [3], y, [3])   # ~1e-7: Sin's gradient agrees with the differences
"""
from __future__ import annotations

import numpy as np

from adplace.framework import dtypes as _dtypes
from adplace.framework.operation import Tensor
from adplace.framework.session_stack import get_default_session
from adplace.framework.conversion import convert_to_tensor
from adplace.gradients import gradients
from adplace.ops.array_ops import placeholder

_CHECKABLE = (_dtypes.float16, _dtypes.bfloat16, _dtypes.float32, _dtypes.float64)


def _jacobian_dtype(t: Tensor):
    """The NumPy dtype a Jacobian of `t` is kept in: t's own, float32 for bfloat16 (NumPy cannot accumulate it)."""
    dtype = t.dtype.base_dtype
    return np.float32 if dtype is _dtypes.bfloat16 else dtype.as_numpy_dtype


def _session_for(graph):
    """The default session, which must run `graph`; ValueError naming the fix otherwise."""
    sess = get_default_session()
    if sess is None:
        raise ValueError("compute_gradient runs in the default session, and none is registered. Wrap the call in "
                         "`with tf.Session():` or `with sess.as_default():`")
    if sess.graph is not graph:
        raise ValueError("compute_gradient: the default session runs a different graph than the tensors checked; "
                         "use `with tf.Session(graph=x.graph):`")
    return sess


def _check_dtype(t: Tensor, role: str) -> None:
    if t.dtype.base_dtype not in _CHECKABLE:
        raise TypeError(f"compute_gradient supports float16, bfloat16, float32 and float64 tensors; {role} {t.name!r} has type "
                        f"{t.dtype.base_dtype.name}. Cast it to tf.float64 first.")


def _dx_and_dy(x: Tensor, y: Tensor, y_shape) -> tuple[Tensor, Tensor]:
    """The gradient of y with respect to x, weighted by a fed grad_ys placeholder (zeros when unconnected; an
    IndexedSlices gradient densified, its repeated rows summed)."""
    with y.graph.as_default():
        dy = placeholder(y.dtype.base_dtype, shape=list(y_shape), name="compute_gradient_dy")
        dx, = gradients(y, x, grad_ys=dy, unconnected_gradients="zero")
        return convert_to_tensor(dx), dy


def _feeds(extra_feed_dict: dict | None, feeds: dict) -> dict:
    return {**extra_feed_dict, **feeds} if extra_feed_dict else feeds


def _theoretical_jacobian(sess, x, x_data, dx, dy, y_shape, extra_feed_dict) -> np.ndarray:
    """Column j is the gradient of y.flat[j]: backprop of a one-hot grad_ys."""
    y_size = int(np.prod(y_shape, dtype=np.int64))
    jacobian = np.zeros((x_data.size, y_size), dtype=_jacobian_dtype(x))
    dy_data = np.zeros(y_shape, dtype=dy.dtype.base_dtype.as_numpy_dtype)
    dy_flat = dy_data.reshape(-1)
    for col in range(y_size):
        dy_flat[col] = 1
        jacobian[:, col] = np.reshape(sess.run(dx, _feeds(extra_feed_dict, {x: x_data, dy: dy_data})), -1)
        dy_flat[col] = 0
    if not y_size:  # an empty y: its gradient must still have x's shape and be all zeros
        backprop = np.asarray(sess.run(dx, _feeds(extra_feed_dict, {x: x_data, dy: dy_data})))
        if backprop.shape != x_data.shape:
            raise ValueError(f"Empty gradient has wrong shape: expected {x_data.shape}, got {backprop.shape}")
        if np.any(backprop):
            raise ValueError("Empty tensor with nonzero gradients")
    return jacobian


def _numeric_jacobian(sess, x, x_data, y, y_shape, delta, extra_feed_dict) -> np.ndarray:
    """Row i is (y(x + delta e_i) - y(x - delta e_i)) / (2 delta)."""
    y_size = int(np.prod(y_shape, dtype=np.int64))
    jacobian = np.zeros((x_data.size, y_size), dtype=_jacobian_dtype(x))
    scale = np.asarray(2 * delta, dtype=_jacobian_dtype(y))
    for row in range(x_data.size):
        x_pos, x_neg = x_data.copy(), x_data.copy()
        x_pos.reshape(-1)[row] += delta
        x_neg.reshape(-1)[row] -= delta
        y_pos = np.asarray(sess.run(y, _feeds(extra_feed_dict, {x: x_pos})), dtype=scale.dtype)
        y_neg = np.asarray(sess.run(y, _feeds(extra_feed_dict, {x: x_neg})), dtype=scale.dtype)
        jacobian[row, :] = np.reshape((y_pos - y_neg) / scale, -1)
    return jacobian


def _initial_value(x: Tensor, x_shape, x_init_value) -> np.ndarray:
    dtype = x.dtype.base_dtype.as_numpy_dtype
    if x_init_value is None:
        return np.random.random_sample(list(x_shape)).astype(dtype)
    x_data = np.array(x_init_value, dtype=dtype)
    if list(x_data.shape) != list(x_shape):
        raise ValueError(f"x_init_value for {x.name!r} has shape {list(x_data.shape)}, but x_shape is "
                         f"{list(x_shape)}; pass a value of shape x_shape")
    return x_data


def compute_gradient(x: Tensor | list[Tensor], x_shape, y: Tensor, y_shape, x_init_value=None, delta: float = 1e-3,
                     init_targets=None, extra_feed_dict: dict | None = None) -> tuple | list[tuple]:
    """The theoretical and numerical Jacobians of y with respect to x, run in the default session.

    Args:
      x: a tensor (usually a placeholder) or a list of tensors; each is fed.
      x_shape: x's dimensions, or a list of them when x is a list.
      y: a tensor.
      y_shape: y's dimensions.
      x_init_value: where to evaluate (an array of shape x_shape, or a list); random in [0, 1) when None.
      delta: the central-difference step.
      init_targets: ops to run first (variable initializers).
      extra_feed_dict: other feeds held fixed during the computation.

    Returns:
      (theoretical, numerical): two arrays of shape [x size, y size], entry [i, j] = d y.flat[j] / d x.flat[i];
      a list of such pairs when x is a list.

    Raises:
      ValueError: no default session, or x_init_value does not have shape x_shape.
      TypeError: x or y is not float16, bfloat16, float32 or float64.
    """
    xs = list(x) if isinstance(x, (list, tuple)) else [x]
    x_shapes = list(x_shape) if isinstance(x, (list, tuple)) else [x_shape]
    x_inits = [None] * len(xs) if x_init_value is None else (list(x_init_value) if isinstance(x, (list, tuple))
                                                             else [x_init_value])
    if not len(xs) == len(x_shapes) == len(x_inits):
        raise ValueError(f"compute_gradient got {len(xs)} tensors x, {len(x_shapes)} shapes and {len(x_inits)} "
                         f"initial values; pass one of each per x")
    for t in xs:
        _check_dtype(t, "x")
    _check_dtype(y, "y")
    sess = _session_for(y.graph)
    pairs = [_dx_and_dy(t, y, y_shape) for t in xs]
    for target in init_targets or ():
        sess.run(target)
    results = []
    for t, t_shape, t_init, (dx, dy) in zip(xs, x_shapes, x_inits, pairs, strict=True):
        x_data = _initial_value(t, t_shape, t_init)
        results.append((_theoretical_jacobian(sess, t, x_data, dx, dy, y_shape, extra_feed_dict),
                        _numeric_jacobian(sess, t, x_data, y, y_shape, delta, extra_feed_dict)))
    return results if isinstance(x, (list, tuple)) else results[0]


def compute_gradient_error(x: Tensor | list[Tensor], x_shape, y: Tensor, y_shape, x_init_value=None,
                           delta: float = 1e-3, init_targets=None, extra_feed_dict: dict | None = None) -> float:
    """The largest absolute difference between the theoretical and numerical Jacobians (see compute_gradient)."""
    result = compute_gradient(x, x_shape, y, y_shape, x_init_value, delta, init_targets, extra_feed_dict)
    pairs = result if isinstance(result, list) else [result]
    return max((float(np.max(np.abs(j_t - j_n))) for j_t, j_n in pairs if j_t.size), default=0.0)
