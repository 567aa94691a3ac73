"""Every gradient function against central finite differences (tf.test.compute_gradient), in float64.

Inputs are drawn away from the points where an op is not differentiable (Abs/Relu at 0, ties of Max/Maximum,
Sqrt/Log of non-positives, FloorMod's jumps), so the two Jacobians must agree to ~1e-6.
"""
import types

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import adplace as tf
from adplace import gradient_checker
from adplace.framework import registry
from adplace.ops import math_ops, slicing_ops
from adplace.ops.op_builder import apply_op_1

CHECK = settings(max_examples=25, deadline=None)
FEW = settings(max_examples=15, deadline=None)
SHAPES = hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=3)
NONEMPTY_RANK = hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=3)
BROADCAST_PAIRS = hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=3)


def values(shape, low: float = 0.2, high: float = 2.0, signed: bool = True):
    """Float64 arrays whose magnitudes lie in [low, high], with random signs when `signed`."""
    magnitudes = hnp.arrays(np.float64, shape, elements=st.floats(low, high))
    if not signed:
        return magnitudes
    signs = hnp.arrays(np.float64, shape, elements=st.sampled_from([-1.0, 1.0]))
    return st.builds(np.multiply, magnitudes, signs)


def distinct_values(shape):
    """Float64 arrays whose elements differ pairwise by at least 0.1 (no ties within a finite-difference step)."""
    return hnp.arrays(np.int64, shape, elements=st.integers(-60, 60), unique=True).map(lambda a: a / 10.0)


def dynamic(value) -> tf.Tensor:
    """An int32 tensor whose value the graph builder cannot see (so gradients take their dynamic-shape path)."""
    return tf.add(tf.constant(value, dtype=tf.int32), 0)


def check_gradients(build, *inputs, static: bool = True, delta: float = 1e-6, tol: float = 1e-6) -> list:
    """Build y = build(*xs) on float64 placeholders for `inputs` (shape unknown unless `static`) and assert that the
    theoretical and numerical Jacobians of y with respect to every x agree; returns the (theoretical, numerical)
    pairs."""
    inputs = [np.asarray(v, dtype=np.float64) for v in inputs]
    with tf.Graph().as_default():
        xs = [tf.placeholder(tf.float64, shape=v.shape if static else None) for v in inputs]
        y = build(*xs)
        feeds = dict(zip(xs, inputs))
        with tf.Session() as sess:
            y_shape = np.shape(sess.run(y, feeds))
            pairs = tf.test.compute_gradient(xs, [v.shape for v in inputs], y, y_shape, x_init_value=inputs,
                                             delta=delta, extra_feed_dict=feeds)
    for theoretical, numerical in pairs:
        np.testing.assert_allclose(theoretical, numerical, rtol=tol, atol=tol)
    return pairs


# --- the checker itself ---------------------------------------------------------------------------------------------
def test_compute_gradient_jacobian_layout_is_x_size_by_y_size():
    x = tf.placeholder(tf.float64, [2])
    w = tf.constant([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=tf.float64)
    y = tf.matmul(tf.expand_dims(x, 0), w)  # y[j] = sum_i x[i] w[i, j], so d y[j] / d x[i] = w[i, j]
    with tf.Session():
        theoretical, numerical = tf.test.compute_gradient(x, [2], y, [1, 3], x_init_value=np.array([0.5, -1.0]))
    assert theoretical.shape == numerical.shape == (2, 3)
    np.testing.assert_allclose(theoretical, [[1, 2, 3], [4, 5, 6]])
    np.testing.assert_allclose(numerical, [[1, 2, 3], [4, 5, 6]], rtol=1e-9)


def test_compute_gradient_error_finds_a_wrong_gradient(scratch_registry):
    op_type = "GradCheckWrongSquare"
    scratch_registry.register_op(op_type, lambda inputs, attrs, name: [(inputs[0]._dtype.base_dtype,
                                                                       inputs[0]._shape)])
    scratch_registry.register_kernel(op_type, "CPU", [tf.float64])(lambda op, ctx: np.square)
    scratch_registry.RegisterGradient(op_type)(lambda op, grad: [grad * op.inputs[0]])  # missing the factor 2
    x = tf.placeholder(tf.float64, [3])
    y = apply_op_1(op_type, [x], name="wrong")
    with tf.Session():
        error = tf.test.compute_gradient_error(x, [3], y, [3], x_init_value=np.array([1.0, 2.0, 3.0]))
    assert error == pytest.approx(3.0, rel=1e-6)  # |x - 2x| at x = 3


def test_compute_gradient_with_list_of_xs_returns_one_pair_each_and_unconnected_is_zero():
    a, b = tf.placeholder(tf.float64, [2]), tf.placeholder(tf.float64, [2])
    y = tf.sin(a)
    with tf.Session():
        pairs = tf.test.compute_gradient([a, b], [[2], [2]], y, [2], x_init_value=[np.zeros(2), np.ones(2)],
                                         extra_feed_dict={a: np.zeros(2), b: np.ones(2)})
    (ta, na), (tb, nb) = pairs
    np.testing.assert_allclose(ta, np.eye(2))
    np.testing.assert_allclose(na, np.eye(2), atol=1e-6)
    assert not tb.any() and not nb.any()


def test_compute_gradient_runs_init_targets_and_checks_variables():
    v = tf.Variable(np.array([1.0, 2.0]), dtype=tf.float64)
    x = tf.placeholder(tf.float64, [2])
    y = x * v
    with tf.Session():
        error = tf.test.compute_gradient_error(x, [2], y, [2], init_targets=[tf.global_variables_initializer()])
    assert error < 1e-8


def test_compute_gradient_handles_empty_y():
    x = tf.placeholder(tf.float64, [2, 0])
    y = tf.sin(x)
    with tf.Session():
        theoretical, numerical = tf.test.compute_gradient(x, [2, 0], y, [2, 0])
    assert theoretical.shape == numerical.shape == (0, 0)


def test_compute_gradient_needs_a_default_session():
    x = tf.placeholder(tf.float64, [2])
    with pytest.raises(ValueError, match="with tf.Session"):
        tf.test.compute_gradient(x, [2], tf.sin(x), [2])
    sess = tf.Session()
    with sess.as_default():
        assert tf.test.compute_gradient_error(x, [2], tf.sin(x), [2]) < 1e-6


def test_compute_gradient_rejects_a_session_of_another_graph():
    x = tf.placeholder(tf.float64, [2])
    with tf.Session(graph=tf.Graph()):
        with pytest.raises(ValueError, match="different graph"):
            tf.test.compute_gradient(x, [2], tf.sin(x), [2])


def test_compute_gradient_rejects_integer_tensors_and_a_misshapen_init_value():
    x = tf.placeholder(tf.int32, [2])
    f = tf.placeholder(tf.float64, [2])
    with tf.Session():
        with pytest.raises(TypeError, match="int32"):
            tf.test.compute_gradient(x, [2], tf.cast(x, tf.float64), [2])
        with pytest.raises(ValueError, match=r"shape \[3\], but x_shape is \[2\]"):
            tf.test.compute_gradient(f, [2], tf.sin(f), [2], x_init_value=np.zeros(3))


def test_checker_is_exposed_as_tf_test():
    assert tf.test.compute_gradient is gradient_checker.compute_gradient
    assert tf.test.compute_gradient_error is gradient_checker.compute_gradient_error


# --- registry -------------------------------------------------------------------------------------------------------
def _op_types_without_gradient_entry() -> list:
    missing = []
    for op_type in registry.registered_op_types():
        try:
            registry.get_gradient_function(types.SimpleNamespace(type=op_type, name=op_type))
        except LookupError:
            missing.append(op_type)
    return missing


def test_every_registered_op_type_has_a_gradient_entry():
    """A new op must decide its gradient: a function, or NotDifferentiable."""
    assert _op_types_without_gradient_entry() == []


def test_an_op_type_without_a_gradient_decision_is_reported(scratch_registry):
    scratch_registry.register_op("GradCheckUndecided", lambda inputs, attrs, name: [])
    assert _op_types_without_gradient_entry() == ["GradCheckUndecided"]
    tf.NotDifferentiable("GradCheckUndecided")
    assert _op_types_without_gradient_entry() == []


# --- unary ----------------------------------------------------------------------------------------------------------
UNARY = {  # op -> (builder, (low, high, signed) of |x|)
    "Neg": (tf.negative, (0.0, 2.0, True)), "Abs": (tf.abs, (0.1, 2.0, True)), "Sign": (tf.sign, (0.1, 2.0, True)),
    "Square": (tf.square, (0.0, 2.0, True)), "Sqrt": (tf.sqrt, (0.2, 2.0, False)),
    "Rsqrt": (tf.rsqrt, (0.3, 2.0, False)), "Reciprocal": (tf.reciprocal, (0.3, 2.0, True)),
    "Exp": (tf.exp, (0.0, 2.0, True)), "Log": (tf.log, (0.2, 2.0, False)), "Log1p": (tf.log1p, (0.0, 0.7, True)),
    "Sin": (tf.sin, (0.0, 3.0, True)), "Cos": (tf.cos, (0.0, 3.0, True)), "Tan": (tf.tan, (0.0, 1.2, True)),
    "Tanh": (tf.tanh, (0.0, 3.0, True)), "Sigmoid": (tf.sigmoid, (0.0, 4.0, True)),
    "Relu": (tf.nn.relu, (0.1, 2.0, True)),
}


@pytest.mark.parametrize("op_type", sorted(UNARY))
@FEW
@given(data=st.data())
def test_unary_gradient(op_type, data):
    fn, (low, high, signed) = UNARY[op_type]
    x = data.draw(SHAPES.flatmap(lambda s: values(s, low, high, signed)))
    check_gradients(fn, x)


# Tanh, Sigmoid, Sqrt, Rsqrt, Reciprocal and Relu differentiate to one op of their own (TanhGrad(y, dy), ...)
GRADIENT_OPS = {  # op -> (builder, strategies of its two inputs)
    "TanhGrad": (math_ops.tanh_grad, (values, values)),
    "SigmoidGrad": (math_ops.sigmoid_grad, (values, values)),
    "SqrtGrad": (math_ops.sqrt_grad, (lambda s: values(s, 0.3, 2.0), values)),  # y = sqrt(x) is never 0
    "RsqrtGrad": (math_ops.rsqrt_grad, (values, values)),
    "ReciprocalGrad": (math_ops.reciprocal_grad, (values, values)),
    "ReluGrad": (math_ops.relu_grad, (values, values)),  # features away from 0, where ReluGrad jumps
}


@pytest.mark.parametrize("op_type", sorted(GRADIENT_OPS))
@FEW
@given(data=st.data())
def test_gradient_op_gradient(op_type, data):
    """Both inputs of TanhGrad etc. vary independently, so each of TF's _TanhGradGrad outputs is checked."""
    fn, (a_elems, b_elems) = GRADIENT_OPS[op_type]
    a, b = data.draw(SHAPES.flatmap(lambda s: st.tuples(a_elems(s), b_elems(s))))
    check_gradients(fn, a, b)


@pytest.mark.parametrize("op_type", ["Tanh", "Sigmoid", "Sqrt", "Rsqrt", "Reciprocal", "Relu"])
@FEW
@given(data=st.data())
def test_second_order_gradient(op_type, data):
    """tf.gradients(f(x), x, grad_ys=dy) is dy * f'(x); its derivatives are dy * f''(x) and f'(x)."""
    fn, (low, high, signed) = UNARY[op_type]
    x, dy = data.draw(SHAPES.flatmap(lambda s: st.tuples(values(s, low, high, signed), values(s))))
    check_gradients(lambda t, d: tf.gradients(fn(t), t, grad_ys=d)[0], x, dy)


def test_floor_and_ceil_pass_no_gradient():
    x = tf.placeholder(tf.float64, [2])
    assert tf.gradients(tf.floor(x) + tf.ceil(x), x) == [None]


# --- binary, with broadcasting --------------------------------------------------------------------------------------
def _binary_inputs(x_elems, y_elems):
    return BROADCAST_PAIRS.flatmap(lambda r: st.tuples(x_elems(r.input_shapes[0]), y_elems(r.input_shapes[1])))


def _offset_grid(shape, offset):
    return hnp.arrays(np.int64, shape, elements=st.integers(-20, 20)).map(lambda a: a / 10.0 + offset)


def _floormod_dividends(shape):
    """Integers plus a fraction in [0.1, 0.4]: x / y is at least 0.05 from an integer for y in +-{0.5, 1, 2}."""
    return st.builds(np.add, hnp.arrays(np.float64, shape, elements=st.integers(-3, 3).map(float)),
                     values(shape, 0.1, 0.4, signed=False))


BINARY = {  # op -> (builder, x strategy, y strategy)
    "Add": (tf.add, values, values),
    "Sub": (tf.subtract, values, values),
    "Mul": (tf.multiply, values, values),
    "RealDiv": (tf.truediv, values, lambda s: values(s, 0.5, 2.0)),
    "FloorMod": (tf.floormod, _floormod_dividends,
                 lambda s: hnp.arrays(np.float64, s, elements=st.sampled_from([-2.0, -1.0, -0.5, 0.5, 1.0, 2.0]))),
    "Pow": (tf.pow, lambda s: values(s, 0.5, 2.0, signed=False), lambda s: values(s, 0.0, 2.0)),
    "Maximum": (tf.maximum, lambda s: _offset_grid(s, 0.0), lambda s: _offset_grid(s, 0.05)),
    "Minimum": (tf.minimum, lambda s: _offset_grid(s, 0.0), lambda s: _offset_grid(s, 0.05)),
    "SquaredDifference": (tf.squared_difference, values, values),
}


@pytest.mark.parametrize("static", [True, False], ids=["static", "unknown_shape"])
@pytest.mark.parametrize("op_type", sorted(BINARY))
@FEW
@given(data=st.data())
def test_binary_gradient_with_broadcasting(op_type, static, data):
    fn, x_elems, y_elems = BINARY[op_type]
    x, y = data.draw(_binary_inputs(x_elems, y_elems))
    check_gradients(fn, x, y, static=static)


def test_floordiv_passes_no_gradient():
    x, y = tf.placeholder(tf.float64, [2]), tf.placeholder(tf.float64, [2])
    assert tf.gradients(tf.floordiv(x, y), [x, y]) == [None, None]


def test_pow_gradient_for_y_is_zero_where_x_is_zero():
    x, y = tf.constant([0.0, 2.0], dtype=tf.float64), tf.constant([2.0, 3.0], dtype=tf.float64)
    dx, dy = tf.gradients(tf.pow(x, y), [x, y])
    with tf.Session() as sess:
        gx, gy = sess.run([dx, dy])
    np.testing.assert_allclose(gx, [0.0, 12.0])
    np.testing.assert_allclose(gy, [0.0, 8.0 * np.log(2.0)])


# --- matmul ---------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("transpose_a", [False, True])
@pytest.mark.parametrize("transpose_b", [False, True])
@FEW
@given(dims=st.tuples(*[st.integers(1, 4)] * 3), data=st.data())
def test_matmul_gradient(transpose_a, transpose_b, dims, data):
    m, k, n = dims
    a = data.draw(values((k, m) if transpose_a else (m, k)))
    b = data.draw(values((n, k) if transpose_b else (k, n)))
    check_gradients(lambda x, y: tf.matmul(x, y, transpose_a=transpose_a, transpose_b=transpose_b), a, b)


@CHECK
@given(batch=hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=2, max_side=3),
       dims=st.tuples(*[st.integers(1, 3)] * 3), adj=st.tuples(st.booleans(), st.booleans()), static=st.booleans(),
       data=st.data())
def test_batch_matmul_gradient_with_broadcast_batch_dims(batch, dims, adj, static, data):
    (bx, by), (m, k, n), (adj_x, adj_y) = batch.input_shapes, dims, adj
    if len(bx) + len(by) == 0:
        by = (2,)  # at least one rank-3 operand, so this is a BatchMatMulV2
    x = data.draw(values(bx + ((k, m) if adj_x else (m, k))))
    y = data.draw(values(by + ((n, k) if adj_y else (k, n))))

    def build(a, b):
        out = tf.matmul(a, b, transpose_a=adj_x, transpose_b=adj_y)
        assert out.op.type == "BatchMatMulV2"
        return out
    check_gradients(build, x, y, static=static)


# --- reductions -----------------------------------------------------------------------------------------------------
REDUCTIONS = {  # op -> (builder, elements)
    "Sum": (tf.reduce_sum, values), "Mean": (tf.reduce_mean, values), "Max": (tf.reduce_max, distinct_values),
    "Min": (tf.reduce_min, distinct_values),
    "Prod": (tf.reduce_prod, lambda s: hnp.arrays(np.float64, s, elements=st.sampled_from(
        [-1.5, -0.5, 0.0, 0.7, 1.2]))),  # products are linear in each element: zeros are fine
}


@st.composite
def _reduction_case(draw, elements):
    shape = draw(SHAPES)
    rank = len(shape)
    some_axes = st.tuples(st.permutations(range(rank)), st.integers(0, rank)).flatmap(  # [] reduces nothing
        lambda pn: st.tuples(*[st.sampled_from([i, i - rank]) for i in pn[0][:pn[1]]]).map(list))
    axes = draw(st.none() | some_axes | (st.integers(-rank, rank - 1) if rank else st.nothing()))
    return draw(elements(shape)), axes, draw(st.booleans())


@pytest.mark.parametrize("static", [True, False], ids=["static", "unknown_rank"])
@pytest.mark.parametrize("op_type", sorted(REDUCTIONS))
@FEW
@given(data=st.data())
def test_reduction_gradient(op_type, static, data):
    fn, elements = REDUCTIONS[op_type]
    x, axes, keepdims = data.draw(_reduction_case(elements))
    check_gradients(lambda t: fn(t, axis=axes, keepdims=keepdims), x, static=static)


def test_reduction_gradient_with_axes_known_only_at_run_time():
    x = np.arange(1.0, 7.0).reshape(2, 3) / 3
    for fn in (tf.reduce_sum, tf.reduce_mean, tf.reduce_max):
        check_gradients(lambda t, fn=fn: fn(t, axis=dynamic([-1])), x)


def test_max_gradient_splits_ties_evenly():
    x = tf.constant([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]], dtype=tf.float64)
    dx, = tf.gradients(tf.reduce_max(x, axis=1), x)
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(dx), [[0.0, 0.5, 0.5], [1 / 3, 1 / 3, 1 / 3]])


# --- AddN, Cast, cumulative ops -------------------------------------------------------------------------------------
@FEW
@given(data=st.data(), n=st.integers(2, 4))
def test_add_n_gradient(data, n):
    xs = data.draw(SHAPES.flatmap(lambda s: st.tuples(*[values(s)] * n)))
    check_gradients(lambda *ts: tf.add_n([t * (i + 1.0) for i, t in enumerate(ts)]), *xs)


def test_cast_gradient_float64_to_float32_and_back():
    x = np.array([[0.3, -1.2], [2.0, 0.7]])
    pairs = check_gradients(lambda t: tf.cast(tf.cast(t, tf.float32), tf.float64) * 3.0, x, delta=1e-2, tol=1e-4)
    np.testing.assert_allclose(pairs[0][0], 3.0 * np.eye(4))


@pytest.mark.parametrize("op_type", ["Cumsum", "Cumprod"])
@FEW
@given(shape=NONEMPTY_RANK, exclusive=st.booleans(), reverse=st.booleans(), data=st.data())
def test_cumulative_gradient(op_type, shape, exclusive, reverse, data):
    fn = tf.cumsum if op_type == "Cumsum" else tf.cumprod
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    x = data.draw(values(shape, 0.5, 1.5))
    check_gradients(lambda t: fn(t, axis=axis, exclusive=exclusive, reverse=reverse), x)


# --- shape ops ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("static", [True, False], ids=["static", "unknown_shape"])
@FEW
@given(shape=SHAPES, data=st.data())
def test_reshape_and_identity_gradients(static, shape, data):
    x = data.draw(values(shape))
    check_gradients(lambda t: tf.identity(tf.reshape(t, [-1, 1])) * np.arange(1.0, x.size + 1)[:, None], x,
                    static=static)


@FEW
@given(shape=NONEMPTY_RANK, data=st.data(), static_perm=st.booleans())
def test_transpose_gradient(shape, data, static_perm):
    perm = data.draw(st.permutations(range(len(shape))))
    x = data.draw(values(shape))
    weights = np.arange(1.0, x.size + 1).reshape([shape[p] for p in perm])
    check_gradients(lambda t: tf.transpose(t, perm if static_perm else dynamic(perm)) * weights, x)


@pytest.mark.parametrize("static", [True, False], ids=["static", "unknown_shape"])
@FEW
@given(shape=NONEMPTY_RANK, data=st.data())
def test_squeeze_and_expand_dims_gradients(static, shape, data):
    axis = data.draw(st.integers(-len(shape) - 1, len(shape)))
    x = data.draw(values(shape))
    check_gradients(lambda t: tf.squeeze(tf.expand_dims(t, axis), [axis]) * np.arange(1.0, x.size + 1).reshape(shape),
                    x, static=static)
    check_gradients(lambda t: tf.squeeze(t) * 2.0, x[..., None], static=static)


@pytest.mark.parametrize("sizes", [None, [1, -1, 2], [2, 2, 0]], ids=["Split", "SplitV", "SplitV_empty_piece"])
@pytest.mark.parametrize("axis", [0, -1])
@pytest.mark.parametrize("static", [True, False], ids=["static", "unknown_shape"])
def test_split_gradient_with_unused_outputs(sizes, axis, static):
    x = np.arange(1.0, 17.0).reshape(4, 4) / 5 if axis == 0 else np.arange(1.0, 25.0).reshape(2, 3, 4) / 7

    def build(t):
        pieces = tf.split(t, 2 if sizes is None else sizes, axis=axis)
        assert pieces[0].op.type == ("Split" if sizes is None else "SplitV")
        return tf.concat(pieces[::-2], axis) * 3.0  # the last piece (and every other one) only
    check_gradients(build, x, static=static)


@pytest.mark.parametrize("static", [True, False], ids=["static", "unknown_shape"])
@FEW
@given(shape=NONEMPTY_RANK, n=st.integers(2, 3), data=st.data())
def test_concat_gradient(static, shape, n, data):
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    widths = data.draw(st.lists(st.integers(1, 3), min_size=n, max_size=n))
    pieces = [data.draw(values(shape[:axis % len(shape)] + (w,) + shape[axis % len(shape) + 1:])) for w in widths]
    total = sum(p.size for p in pieces)

    def build(*ts):
        out = tf.concat(list(ts), axis)
        return out * np.arange(1.0, total + 1).reshape(np.concatenate(pieces, axis).shape)
    check_gradients(build, *pieces, static=static)


def test_concat_gradient_with_axis_known_only_at_run_time():
    a, b = np.arange(6.0).reshape(2, 3), np.arange(4.0).reshape(2, 2) + 0.5
    weights = np.arange(1.0, 11.0).reshape(2, 5)
    check_gradients(lambda s, t: tf.concat([s, t], dynamic(-1)) * weights, a, b)
    check_gradients(lambda s, t: tf.concat([s, t], dynamic(1)) * weights, a, b, static=False)


@FEW
@given(shape=SHAPES, n=st.integers(1, 3), data=st.data())
def test_pack_and_unpack_gradients(shape, n, data):
    axis = data.draw(st.integers(-len(shape) - 1, len(shape)))
    xs = data.draw(st.tuples(*[values(shape)] * n))
    stacked = np.stack(xs, axis)
    weights = np.arange(1.0, stacked.size + 1).reshape(stacked.shape)
    check_gradients(lambda *ts: tf.stack(list(ts), axis=axis) * weights, *xs)
    unstack_axis = axis % stacked.ndim
    check_gradients(lambda t: tf.stack(tf.unstack(t, axis=unstack_axis)[::-1], axis=0) * 2.0, stacked)


def test_fill_gradient_is_the_sum_for_the_value():
    pairs = check_gradients(lambda v: tf.fill([2, 3], v) * np.arange(1.0, 7.0).reshape(2, 3), np.array(0.5))
    np.testing.assert_allclose(pairs[0][0], [np.arange(1.0, 7.0)])


SLICES = [
    np.s_[1], np.s_[-1], np.s_[1:], np.s_[::2], np.s_[::-1], np.s_[3:0:-2], np.s_[:, 1], np.s_[..., 0],
    np.s_[None, 1:3], np.s_[1, ..., None], np.s_[:, None, ::-2], np.s_[-2:, 0:1, 1], np.s_[..., None, 1:],
]


@pytest.mark.parametrize("static", [True, False], ids=["static", "unknown_shape"])
@pytest.mark.parametrize("key", SLICES, ids=[str(k) for k in SLICES])
def test_strided_slice_gradient(key, static):
    x = np.arange(1.0, 25.0).reshape(4, 3, 2) / 5
    weights = np.arange(1.0, x[key].size + 1).reshape(x[key].shape)
    pairs = check_gradients(lambda t: t[key] * weights, x, static=static)
    expected = np.zeros_like(x)
    expected[key] = weights
    np.testing.assert_allclose(pairs[0][0].sum(axis=1), expected.reshape(-1))


@pytest.mark.parametrize("key", SLICES[:6], ids=[str(k) for k in SLICES[:6]])
def test_strided_slice_grad_gradient(key):
    shape = (4, 3, 2)
    dy = np.arange(1.0, np.zeros(shape)[key].size + 1).reshape(np.zeros(shape)[key].shape)
    weights = np.arange(1.0, 25.0).reshape(shape)
    check_gradients(lambda t: slicing_ops.strided_slice_grad(tf.constant(shape), t, key) * weights, dy)


@pytest.mark.parametrize("static", [True, False], ids=["static", "unknown_shape"])
@FEW
@given(shape=NONEMPTY_RANK, data=st.data())
def test_tile_gradient(static, shape, data):
    multiples = data.draw(st.lists(st.integers(1, 3), min_size=len(shape), max_size=len(shape)))
    x = data.draw(values(shape))
    tiled = np.tile(x, multiples)
    weights = np.arange(1.0, tiled.size + 1).reshape(tiled.shape)
    check_gradients(lambda t: tf.tile(t, multiples) * weights, x, static=static)


@FEW
@given(shape=NONEMPTY_RANK, data=st.data(), rows=st.booleans())
def test_select_gradient(shape, data, rows):
    cond = data.draw(hnp.arrays(np.bool_, shape[:1] if rows else shape))
    x, y = data.draw(st.tuples(values(shape), values(shape)))
    pairs = check_gradients(lambda s, t: tf.where(tf.constant(cond), s, t) * 2.0, x, y)
    full = np.broadcast_to(cond.reshape(cond.shape + (1,) * (len(shape) - cond.ndim)), shape).reshape(-1)
    np.testing.assert_allclose(np.diag(pairs[0][0]), 2.0 * full)
    np.testing.assert_allclose(np.diag(pairs[1][0]), 2.0 * ~full)
