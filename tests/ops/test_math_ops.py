"""Tests for adplace.ops.math_ops: elementwise ops with broadcasting, matmul, reductions, add_n, cast and the
Python operators on Tensor. Static inference and TF1's build-time errors, and values through Session.run."""

import warnings

import numpy as np
import pytest

import adplace as tf
from adplace.ops import math_ops


def run(fetches, feed_dict=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed_dict)


A = np.array([[1.0, -2.0, 3.0], [0.5, 4.0, -6.0]], np.float32)
ROW = np.array([2.0, 0.5, -1.0], np.float32)


# --- binary ops with broadcasting ---------------------------------------------------------------------------------

@pytest.mark.parametrize("fn, op_type, expected", [
    (tf.add, "Add", lambda x, y: x + y),
    (tf.subtract, "Sub", lambda x, y: x - y),
    (tf.multiply, "Mul", lambda x, y: x * y),
    (tf.divide, "RealDiv", lambda x, y: x / y),
    (tf.maximum, "Maximum", np.maximum),
    (tf.minimum, "Minimum", np.minimum),
    (tf.squared_difference, "SquaredDifference", lambda x, y: (x - y) ** 2),
])
def test_binary_ops_broadcast(fn, op_type, expected):
    y = fn(tf.constant(A), tf.constant(ROW))
    assert y.op.type == op_type
    assert y.shape.as_list() == [2, 3]
    assert y.dtype == tf.float32
    np.testing.assert_allclose(run(y), expected(A, ROW), rtol=1e-6)


def test_pow_values():
    base = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    y = tf.pow(tf.constant(base), tf.constant([2.0, 0.5]))
    assert y.op.type == "Pow"
    np.testing.assert_allclose(run(y), base ** np.array([2.0, 0.5]), rtol=1e-6)
    np.testing.assert_array_equal(run(tf.pow(tf.constant([2, 3]), 3)), [8, 27])


def test_binary_op_with_python_scalar_takes_tensor_dtype():
    x = tf.constant([1.0, 2.0], dtype=tf.float64)
    y = tf.add(x, 1)
    assert y.dtype == tf.float64
    np.testing.assert_allclose(run(y), [2.0, 3.0])
    z = tf.multiply(3, tf.constant([1, 2]))
    assert z.dtype == tf.int32
    np.testing.assert_array_equal(run(z), [3, 6])


def test_python_value_divided_by_tensor_takes_the_tensor_dtype():
    """TF's `1.0 / y` and `tf.divide(1.0, y)` convert the Python value with y's dtype (ops named as TF names them)."""
    y = tf.constant([2.0, 4.0], dtype=tf.float64)
    z = 1.0 / y
    assert z.dtype == tf.float64 and z.op.name == "truediv" and z.op.inputs[0].op.name == "truediv/x"
    np.testing.assert_allclose(run([z, tf.divide(2.0, y)]), [[0.5, 0.25], [1.0, 0.5]])


def test_binary_broadcast_both_sides():
    col = np.array([[1.0], [2.0]], np.float32)
    y = tf.add(tf.constant(col), tf.constant(ROW))
    assert y.shape.as_list() == [2, 3]
    np.testing.assert_allclose(run(y), col + ROW)


def test_broadcast_with_unknown_dims():
    p = tf.placeholder(tf.float32, shape=[None, 3])
    assert tf.add(p, tf.zeros([3])).shape.as_list() == [None, 3]
    q = tf.placeholder(tf.float32, shape=[None, 1])
    assert tf.add(q, tf.zeros([4])).shape.as_list() == [None, 4]
    r = tf.placeholder(tf.float32, shape=[5, None])
    assert tf.add(p, r).shape.as_list() == [5, 3]
    assert tf.add(p, tf.placeholder(tf.float32)).shape.ndims is None
    np.testing.assert_allclose(run(tf.add(q, tf.ones([4])), {q: [[1.0], [2.0]]}),
                               [[2.0] * 4, [3.0] * 4])


def test_broadcast_mismatch_raises_naming_op():
    with pytest.raises(ValueError, match="Dimensions must be equal, but are 2 and 3 for 'my_add' \\(op: 'Add'\\) "
                                         "with input shapes: \\[2\\], \\[3\\]"):
        tf.add(tf.zeros([2]), tf.zeros([3]), name="my_add")
    with pytest.raises(ValueError, match="Dimensions must be equal.*'Mul'"):
        tf.multiply(tf.zeros([2, 4]), tf.zeros([3, 4]))


def test_binary_dtype_not_allowed_raises_type_error():
    with pytest.raises(TypeError, match="RealDiv"):
        tf.constant([True]) / tf.constant([False])
    with pytest.raises(TypeError, match="Maximum"):
        tf.maximum(tf.constant([1 + 2j]), tf.constant([1j]))


def test_comparisons():
    x = tf.constant([1.0, 2.0, 3.0])
    y = tf.constant([2.0, 2.0, 2.0])
    ops = [tf.less(x, y), tf.less_equal(x, y), tf.greater(x, y), tf.greater_equal(x, y), tf.equal(x, y),
           tf.not_equal(x, y)]
    assert all(o.dtype == tf.bool for o in ops)
    got = run(ops)
    xv, yv = np.array([1.0, 2.0, 3.0]), np.array([2.0] * 3)
    for g, w in zip(got, [xv < yv, xv <= yv, xv > yv, xv >= yv, xv == yv, xv != yv]):
        np.testing.assert_array_equal(g, w)


def test_floordiv_and_mod():
    x = tf.constant([7, -7])
    y = tf.constant([2, 2])
    got = run([tf.floordiv(x, y), tf.floormod(x, y)])
    np.testing.assert_array_equal(got[0], [3, -4])
    np.testing.assert_array_equal(got[1], [1, 1])


# --- unary ops ---------------------------------------------------------------------------------------------------

X = np.array([0.1, 0.5, 1.0, 2.5], np.float32)


@pytest.mark.parametrize("fn, op_type, expected", [
    (tf.sin, "Sin", np.sin), (tf.cos, "Cos", np.cos), (tf.tan, "Tan", np.tan), (tf.exp, "Exp", np.exp),
    (tf.log, "Log", np.log), (tf.sqrt, "Sqrt", np.sqrt), (tf.square, "Square", np.square),
    (tf.tanh, "Tanh", np.tanh), (tf.sigmoid, "Sigmoid", lambda v: 1 / (1 + np.exp(-v))),
    (tf.rsqrt, "Rsqrt", lambda v: 1 / np.sqrt(v)), (tf.reciprocal, "Reciprocal", lambda v: 1 / v),
    (tf.log1p, "Log1p", np.log1p), (tf.floor, "Floor", np.floor), (tf.ceil, "Ceil", np.ceil),
])
def test_unary_float_ops(fn, op_type, expected):
    y = fn(tf.constant(X))
    assert y.op.type == op_type
    assert y.op.name == op_type
    assert y.dtype == tf.float32
    assert y.shape.as_list() == [4]
    out = run(y)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, expected(X.astype(np.float64)), rtol=1e-5)


@pytest.mark.parametrize("fn, expected", [
    (tf.negative, lambda v: -v), (tf.abs, np.abs), (tf.relu, lambda v: np.maximum(v, 0)), (tf.sign, np.sign),
])
def test_unary_signed_ops(fn, expected):
    value = np.array([[-2.0, 0.0], [3.5, -0.25]], np.float32)
    np.testing.assert_allclose(run(fn(tf.constant(value))), expected(value))
    ints = np.array([-3, 0, 4], np.int32)
    out = run(fn(tf.constant(ints)))
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, expected(ints))


def test_sigmoid_large_magnitude_without_overflow():
    value = np.array([-1000.0, -100.0, 0.0, 100.0, 1000.0], np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an overflow RuntimeWarning would fail the test
        out = run(tf.sigmoid(tf.constant(value)))
        out64 = run(tf.sigmoid(tf.constant(value.astype(np.float64))))
    assert out.dtype == np.float32
    assert np.all(np.isfinite(out))
    np.testing.assert_allclose(out, [0.0, 0.0, 0.5, 1.0, 1.0], atol=1e-30)
    np.testing.assert_allclose(out64, [0.0, 1 / (1 + np.exp(100.0)), 0.5, 1.0, 1.0], rtol=1e-12, atol=1e-300)


def test_tanh_large_magnitude():
    np.testing.assert_allclose(run(tf.tanh(tf.constant([-1000.0, 1000.0]))), [-1.0, 1.0])


@pytest.mark.parametrize("fn, op_type", [(tf.sin, "Sin"), (tf.exp, "Exp"), (tf.sqrt, "Sqrt"), (tf.log, "Log"),
                                         (tf.sigmoid, "Sigmoid")])
def test_float_unary_of_int_raises_type_error(fn, op_type):
    with pytest.raises(TypeError, match=f"DataType int32 not in list of allowed values.*'{op_type}'"):
        fn(tf.constant([1, 2]))


def test_unary_preserves_unknown_shape():
    p = tf.placeholder(tf.float32, shape=[None, 2])
    assert tf.exp(p).shape.as_list() == [None, 2]


# --- gradient ops of unary ops (TanhGrad, ...): inputs of one dtype and one shape --------------------------------

Y = np.array([-0.5, 0.25, 0.8, 2.0], np.float32)
DY = np.array([1.5, -2.0, 0.5, 3.0], np.float32)
UNARY_GRAD_OPS = [  # (builder, op type, expected value of op(a, b))
    (math_ops.tanh_grad, "TanhGrad", lambda y, dy: dy * (1 - y * y)),
    (math_ops.sigmoid_grad, "SigmoidGrad", lambda y, dy: dy * y * (1 - y)),
    (math_ops.sqrt_grad, "SqrtGrad", lambda y, dy: dy * 0.5 / y),
    (math_ops.rsqrt_grad, "RsqrtGrad", lambda y, dy: dy * -0.5 * y ** 3),
    (math_ops.reciprocal_grad, "ReciprocalGrad", lambda y, dy: -dy * y * y),
    (math_ops.relu_grad, "ReluGrad", lambda dy, features: dy * (features > 0)),
]


@pytest.mark.parametrize("fn, op_type, expected", UNARY_GRAD_OPS, ids=[c[1] for c in UNARY_GRAD_OPS])
def test_unary_gradient_ops_values_names_and_shapes(fn, op_type, expected):
    out = fn(tf.constant(Y), tf.constant(DY))
    assert (out.op.type, out.op.name, out.dtype, out.shape.as_list()) == (op_type, op_type, tf.float32, [4])
    value = run(out)
    assert value.dtype == np.float32
    np.testing.assert_allclose(value, expected(Y.astype(np.float64), DY.astype(np.float64)), rtol=1e-6)


def test_relu_grad_passes_the_gradient_only_where_features_are_positive():
    value = run(math_ops.relu_grad(tf.constant([1.0, 2.0, 3.0, 4.0]), tf.constant([-1.0, 0.0, 0.5, np.nan])))
    np.testing.assert_array_equal(value, [0.0, 0.0, 3.0, 0.0])


@pytest.mark.parametrize("fn, op_type", [c[:2] for c in UNARY_GRAD_OPS], ids=[c[1] for c in UNARY_GRAD_OPS])
def test_unary_gradient_ops_merge_shapes_and_do_not_broadcast(fn, op_type):
    a, b = tf.placeholder(tf.float32, [None, 3]), tf.placeholder(tf.float32, [2, None])
    assert fn(a, b).shape.as_list() == [2, 3]
    with pytest.raises(ValueError, match=f"Shapes must be equal for 'bad' \\(op: '{op_type}'\\) with input "
                                         "shapes: \\[2,3\\], \\[3\\]"):
        fn(tf.zeros([2, 3]), tf.zeros([3]), name="bad")


@pytest.mark.parametrize("fn, op_type", [c[:2] for c in UNARY_GRAD_OPS], ids=[c[1] for c in UNARY_GRAD_OPS])
def test_unary_gradient_ops_need_one_floating_dtype(fn, op_type):
    first = "gradients" if op_type == "ReluGrad" else "y"
    second = "features" if op_type == "ReluGrad" else "dy"
    with pytest.raises(TypeError, match=f"Input '{second}' of '{op_type}' Op has type float64 that does not match "
                                        f"type float32 of argument '{first}'"):
        fn(tf.zeros([2]), tf.zeros([2], dtype=tf.float64))
    with pytest.raises(TypeError, match=f"DataType bool not in list of allowed values.*'{op_type}'"):
        fn(tf.constant([True]), tf.constant([False]))


# --- matmul ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("ta, tb", [(False, False), (True, False), (False, True), (True, True)])
def test_matmul_transpose_combinations(ta, tb):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((2, 3)).astype(np.float32)
    b = rng.standard_normal((3, 4)).astype(np.float32)
    a_in = a.T if ta else a
    b_in = b.T if tb else b
    y = tf.matmul(tf.constant(a_in), tf.constant(b_in), transpose_a=ta, transpose_b=tb)
    assert y.op.type == "MatMul"
    assert y.op.get_attr("transpose_a") is ta
    assert y.op.get_attr("transpose_b") is tb
    assert y.shape.as_list() == [2, 4]
    np.testing.assert_allclose(run(y), a @ b, rtol=1e-5, atol=1e-6)


def test_matmul_int_and_unknown_dims():
    p = tf.placeholder(tf.int32, shape=[None, 2])
    y = tf.matmul(p, tf.constant([[1, 2], [3, 4]]))
    assert y.shape.as_list() == [None, 2]
    np.testing.assert_array_equal(run(y, {p: [[1, 1]]}), [[4, 6]])


def test_matmul_rank_error():
    with pytest.raises(ValueError, match="Shape must be rank 2 but is rank 1 for 'mm' \\(op: 'MatMul'\\)"):
        tf.matmul(tf.zeros([3]), tf.zeros([3, 2]), name="mm")


def test_matmul_inner_dim_error():
    with pytest.raises(ValueError, match="Dimensions must be equal, but are 3 and 2 for 'MatMul'"):
        tf.matmul(tf.zeros([2, 3]), tf.zeros([2, 3]))
    # fine once b is transposed
    assert tf.matmul(tf.zeros([2, 3]), tf.zeros([2, 3]), transpose_b=True).shape.as_list() == [2, 2]


def test_matmul_run_time_inner_dim_error():
    p = tf.placeholder(tf.float32, shape=[None, None])
    y = tf.matmul(p, tf.ones([3, 2]), name="late_mm")
    with pytest.raises(tf.errors.InvalidArgumentError, match="late_mm"):
        run(y, {p: np.ones((2, 2))})


def test_matmul_bool_raises_type_error():
    with pytest.raises(TypeError, match="MatMul"):
        tf.matmul(tf.constant([[True]]), tf.constant([[True]]))


# --- reductions -------------------------------------------------------------------------------------------------

M = np.arange(24.0, dtype=np.float32).reshape(2, 3, 4) - 10.0


@pytest.mark.parametrize("fn, np_fn, op_type", [
    (tf.reduce_sum, np.sum, "Sum"), (tf.reduce_mean, np.mean, "Mean"), (tf.reduce_max, np.max, "Max"),
    (tf.reduce_min, np.min, "Min"), (tf.reduce_prod, np.prod, "Prod"),
])
@pytest.mark.parametrize("axis", [None, 0, 1, -1, [0, 2], [-1, -3]])
def test_reductions(fn, np_fn, op_type, axis):
    value = M / 10.0 if op_type == "Prod" else M
    y = fn(tf.constant(value), axis=axis)
    np_axis = None if axis is None else tuple(axis) if isinstance(axis, list) else axis
    want = np_fn(value.astype(np.float64), axis=np_axis)
    assert y.op.type == op_type
    assert y.shape.as_list() == list(np.shape(want))
    out = run(y)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, want, rtol=1e-5)


@pytest.mark.parametrize("axis", [None, 1, [0, 2]])
def test_reductions_keepdims(axis):
    y = tf.reduce_sum(tf.constant(M), axis=axis, keepdims=True)
    np_axis = None if axis is None else tuple(axis) if isinstance(axis, list) else axis
    want = np.sum(M, axis=np_axis, keepdims=True)
    assert y.shape.as_list() == list(want.shape)
    np.testing.assert_allclose(run(y), want)


def test_reduction_legacy_keep_dims_and_reduction_indices():
    y = tf.reduce_max(tf.constant(M), reduction_indices=[1], keep_dims=True)
    assert y.shape.as_list() == [2, 1, 4]
    np.testing.assert_allclose(run(y), np.max(M, axis=1, keepdims=True))


def test_reduction_names():
    x = tf.constant(M)
    assert tf.reduce_sum(x).op.name == "Sum"
    assert tf.reduce_mean(x).op.name == "Mean"
    assert tf.reduce_sum(x, name="total").op.name == "total"


def test_integer_mean_truncates():
    x = tf.constant([[1, 2], [3, 6], [-1, -2]])
    y = tf.reduce_mean(x, axis=1)
    assert y.dtype == tf.int32
    out = run(y)
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, [1, 4, -1])  # 1.5 -> 1, 4.5 -> 4, -1.5 -> -1 (toward zero)
    assert run(tf.reduce_mean(tf.constant([1, 2]))) == 1


def test_reduction_of_scalar_and_unknown_rank():
    assert run(tf.reduce_sum(tf.constant(3.0))) == 3.0
    p = tf.placeholder(tf.float32)
    y = tf.reduce_sum(p)
    np.testing.assert_allclose(run(y, {p: np.ones((2, 3))}), 6.0)
    np.testing.assert_allclose(run(tf.reduce_max(p, axis=0), {p: [[1.0, 5.0], [3.0, 2.0]]}), [3.0, 5.0])


def test_reduction_axis_out_of_range_raises():
    with pytest.raises(ValueError, match=r"Invalid reduction dimension 2 for input with 2 dimensions. for 'Sum' "
                                         r"\(op: 'Sum'\) with input shapes: \[2,3\], \[\] and with computed input "
                                         r"tensors: input\[1\] = <2>."):
        tf.reduce_sum(tf.zeros([2, 3]), axis=2)
    with pytest.raises(ValueError, match="Invalid reduction dimension -3 for input with 2 dimensions"):
        tf.reduce_sum(tf.zeros([2, 3]), axis=[0, -3])
    with pytest.raises(ValueError, match="Shape must be at most rank 1 but is rank 2 for 'Sum"):
        tf.reduce_sum(tf.placeholder(tf.float32), [[1], [2]])


def test_a_scalar_has_no_axis_to_reduce():
    """TF's shape function and kernel both reject axis 0 and -1 of a 0-d input (TF 2.21 compat.v1, checked)."""
    for axis in (0, -1):
        with pytest.raises(ValueError, match=f"Invalid reduction dimension {axis} for input with 0 dimensions"):
            tf.reduce_sum(tf.constant(3.0), axis=axis)
    p = tf.placeholder(tf.float32)
    for reduce in (tf.reduce_sum, tf.reduce_mean, tf.reduce_max, tf.reduce_prod):
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"Invalid reduction dimension \(0 for input with 0 dimension\(s\)"):
            run(reduce(p, axis=0), {p: 3.0})
    flag = tf.placeholder(tf.bool)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"Invalid reduction dimension \(-1 for input with 0 "):
        run(tf.reduce_any(flag, axis=-1), {flag: True})
    assert run(tf.reduce_sum(p, axis=[]), {p: 3.0}) == 3.0


def test_reduction_with_unknown_axis_tensor():
    p = tf.placeholder(tf.int32, shape=[])
    y = tf.reduce_sum(tf.constant(M), axis=p)
    assert y.shape.ndims is None
    np.testing.assert_allclose(run(y, {p: 1}), M.sum(axis=1))


# --- add_n, cast ------------------------------------------------------------------------------------------------

def test_add_n():
    values = [np.array([1.0, 2.0], np.float32), np.array([3.0, 4.0], np.float32), np.array([5.0, 6.0], np.float32)]
    y = tf.add_n([tf.constant(v) for v in values])
    assert y.op.type == "AddN"
    assert y.shape.as_list() == [2]
    np.testing.assert_allclose(run(y), sum(values))


def test_add_n_single_input_and_errors():
    np.testing.assert_allclose(run(tf.add_n([tf.constant([1.0, 2.0])])), [1.0, 2.0])
    with pytest.raises(ValueError, match="non-empty list"):
        tf.add_n([])
    with pytest.raises(ValueError, match="AddN"):
        tf.add_n([tf.zeros([2]), tf.zeros([3])])


def test_cast_values_and_dtype():
    x = tf.constant([1.7, -1.7, 2.5])
    y = tf.cast(x, tf.int32)
    assert y.op.type == "Cast"
    assert y.dtype == tf.int32
    out = run(y)
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, [1, -1, 2])  # truncation toward zero
    z = tf.cast(tf.constant([0, 3]), tf.bool)
    np.testing.assert_array_equal(run(z), [False, True])
    assert run(tf.to_float(tf.constant([1, 2]))).dtype == np.float32


def test_cast_to_same_dtype_returns_same_tensor():
    x = tf.constant([1.0, 2.0])
    assert tf.cast(x, tf.float32) is x
    assert tf.cast(x, "float32") is x
    assert len(tf.get_default_graph().get_operations()) == 1


def test_range():
    np.testing.assert_array_equal(run(tf.range(5)), np.arange(5))
    np.testing.assert_allclose(run(tf.range(1.0, 2.0, 0.25)), np.arange(1.0, 2.0, 0.25))
    assert tf.range(0, 10, 3).shape.as_list() == [4]


# --- operator overloads ------------------------------------------------------------------------------------------

def test_operator_types_and_names():
    a = tf.constant([1.0, 2.0])
    b = tf.constant([3.0, 4.0])
    cases = [(a + b, "Add", "add"), (a - b, "Sub", "sub"), (a * b, "Mul", "mul"), (a / b, "RealDiv", "truediv"),
             (a ** b, "Pow", "pow"), (a // b, "FloorDiv", "floordiv"), (a % b, "FloorMod", "mod"),
             (-a, "Neg", "Neg"), (abs(a), "Abs", "Abs"), (a < b, "Less", "Less"), (a >= b, "GreaterEqual",
                                                                                    "GreaterEqual")]
    for tensor, op_type, name in cases:
        assert (tensor.op.type, tensor.op.name) == (op_type, name)


def test_matmul_operator():
    a = tf.constant([[1.0, 2.0]])
    b = tf.constant([[3.0], [4.0]])
    y = a @ b
    assert (y.op.type, y.op.name) == ("MatMul", "matmul")
    np.testing.assert_allclose(run(y), [[11.0]])


def test_reverse_operators():
    a = tf.constant([1.0, 2.0])
    y = 2.0 * a
    assert (y.op.type, y.op.name) == ("Mul", "mul")
    assert y.op.inputs[1] is a
    assert y.op.inputs[0].op.type == "Const"
    z = 10.0 - a
    w = 1.0 / a
    got = run([y, z, w])
    np.testing.assert_allclose(got[0], [2.0, 4.0])
    np.testing.assert_allclose(got[1], [9.0, 8.0])
    np.testing.assert_allclose(got[2], [1.0, 0.5])


def test_numpy_array_on_left_defers_to_tensor():
    a = tf.constant([1.0, 2.0])
    y = np.array([10.0, 20.0], np.float32) + a
    assert isinstance(y, tf.Tensor)
    assert y.op.type == "Add"
    np.testing.assert_allclose(run(y), [11.0, 22.0])


def test_int_tensor_true_division_casts_to_float64():
    a = tf.constant([1, 3])
    b = tf.constant([2, 4])
    y = a / b
    assert y.op.type == "RealDiv"
    assert y.dtype == tf.float64
    assert y.op.inputs[0].op.type == "Cast"
    out = run(y)
    assert out.dtype == np.float64
    np.testing.assert_allclose(out, [0.5, 0.75])


def test_int_floor_division_stays_int():
    y = tf.constant([7, 8]) // 2
    assert y.dtype == tf.int32
    np.testing.assert_array_equal(run(y), [3, 4])


def test_operators_compute_values():
    a = np.array([1.5, -2.0], np.float32)
    b = np.array([0.5, 4.0], np.float32)
    ta, tb = tf.constant(a), tf.constant(b)
    got = run([ta + tb, ta - tb, ta * tb, ta / tb, -ta, abs(ta), ta ** 2.0])
    for g, w in zip(got, [a + b, a - b, a * b, a / b, -a, np.abs(a), a ** 2]):
        np.testing.assert_allclose(g, w, rtol=1e-6)


def test_operator_on_variable_reads_snapshot():
    v = tf.Variable([1.0, 2.0], name="v")
    y = v * 3.0
    assert y.op.inputs[0] is v.value()
    with tf.Session() as sess:
        sess.run(v.initializer)
        np.testing.assert_allclose(sess.run(y), [3.0, 6.0])


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_ieee_special_values():
    got = run([tf.sqrt(tf.constant(-1.0)), tf.log(tf.constant(0.0)), tf.constant(1.0) / 0.0,
               tf.exp(tf.constant(1000.0))])
    assert np.isnan(got[0])
    assert got[1] == -np.inf
    assert got[2] == np.inf
    assert got[3] == np.inf and got[3].dtype == np.float32


def test_reduce_sum_with_empty_axis_list_is_identity():
    value = np.arange(6.0).reshape(2, 3)
    y = tf.reduce_sum(tf.constant(value), axis=[])
    assert y.shape.as_list() == [2, 3]
    np.testing.assert_allclose(run(y), value)


def test_int_pow_negative_exponent_raises_invalid_argument():
    y = tf.pow(tf.constant(2), -1)
    with pytest.raises(tf.errors.InvalidArgumentError, match="Pow"):
        run(y)


def test_mixed_dtypes_raise_tf_type_error():
    f, i = tf.constant(1.0), tf.constant(1)
    with pytest.raises(TypeError, match="Input 'y' of 'Add' Op has type int32 that does not match type float32"):
        f + i
    with pytest.raises(TypeError, match="MatMul"):
        tf.matmul(tf.constant([[1.0]]), tf.constant([[1]]))


def test_integer_floor_division_by_zero_is_an_op_error():
    z = tf.floordiv(tf.constant(1), tf.constant(0), name="fdiv")
    with pytest.raises(tf.errors.InvalidArgumentError, match="(?s)Integer division by zero.*fdiv"):
        tf.Session().run(z)


def test_nan_and_inf_come_back_silently(recwarn):
    out = tf.Session().run([tf.sqrt(tf.constant(-1.0)), tf.log(tf.constant(0.0)), tf.exp(tf.constant(1000.0))])
    assert np.isnan(out[0]) and out[1] == -np.inf and out[2] == np.inf
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]


def test_div_is_floor_division_for_integers():
    sess = tf.Session()
    assert sess.run(tf.div(7, 2)) == 3 and sess.run(tf.div(7, 2)).dtype == np.int32
    assert sess.run(tf.div(7.0, 2.0)) == 3.5


def test_batched_matmul_broadcasts_batch_dims():
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    b = np.arange(20, dtype=np.float32).reshape(4, 5)
    c = tf.matmul(tf.constant(a), tf.constant(np.stack([b, b])))
    assert c.op.type == "BatchMatMulV2" and c.shape.as_list() == [2, 3, 5]
    np.testing.assert_allclose(tf.Session().run(c), a @ b)
    t = tf.matmul(tf.constant(a), tf.constant(a), transpose_b=True)
    np.testing.assert_allclose(tf.Session().run(t), a @ np.swapaxes(a, 1, 2))


def test_reduction_axes_checked_at_run_time():
    axes = tf.placeholder(tf.int32, [None])
    total = tf.reduce_sum(tf.constant(M[0]), axes)
    with pytest.raises(tf.errors.InvalidArgumentError, match="Axes contains duplicate dimension: 1"):
        run(total, {axes: [1, -1]})
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"Invalid reduction dimension \(2 for input with 2 "):
        run(total, {axes: [2]})
    with pytest.raises(tf.errors.InvalidArgumentError, match="Axes contains duplicate dimension: 0"):
        run(tf.reduce_all(tf.constant([[True]]), axes), {axes: [0, 0]})


def test_reduction_over_all_axes_of_unknown_rank_is_a_scalar():
    p = tf.placeholder(tf.float32)
    for fn in (tf.reduce_sum, tf.reduce_mean, tf.reduce_max, tf.math.reduce_euclidean_norm):
        assert fn(p).shape.as_list() == []
    assert tf.reduce_sum(p, keepdims=True).shape.ndims is None
    np.testing.assert_allclose(run(tf.reduce_sum(p), {p: np.ones((2, 3))}), 6.0)


def test_reduce_euclidean_norm_values_dtypes_and_gradient():
    x = np.array([[3.0, 4.0], [6.0, 8.0]])
    y = tf.math.reduce_euclidean_norm(x, 1)
    assert y.op.type == "EuclideanNorm" and y.op.name == "EuclideanNorm"
    np.testing.assert_allclose(run(y), [5.0, 10.0])
    assert tf.math.reduce_euclidean_norm(x, 0, keepdims=True).shape.as_list() == [1, 2]
    np.testing.assert_array_equal(run(tf.math.reduce_euclidean_norm(np.array([2, 3], np.int32))), 3)  # floor(3.6)
    np.testing.assert_allclose(run(tf.math.reduce_euclidean_norm(np.array([3 + 4j], np.complex64))), 5.0)
    p = tf.placeholder(tf.float64, [2, 2])
    with tf.Session():
        for keep in (False, True):
            norm = tf.math.reduce_euclidean_norm(p, 0, keepdims=keep)
            assert tf.test.compute_gradient_error(p, [2, 2], norm, norm.shape.as_list(), x_init_value=x) < 1e-7


def test_reduced_shape():
    from adplace.ops.reduction_ops import reduced_shape
    np.testing.assert_array_equal(run(reduced_shape([5, 3], [0])), [1, 3])
    np.testing.assert_array_equal(run(reduced_shape([10, 10, 10], [-1, 0])), [1, 10, 1])
    shape, axes = tf.placeholder(tf.int32, [None]), tf.placeholder(tf.int32, [None])
    np.testing.assert_array_equal(run(reduced_shape(shape, axes), {shape: [0, 3], axes: [-1]}), [0, 1])


def test_matmul_adjoints_conjugate_and_reject_transpose_with_adjoint():
    a = np.array([[1 + 2j, 3 - 1j], [0 + 1j, 2 + 0j]], np.complex128)
    b = np.array([[2 - 1j, 1j], [1 + 1j, 4 + 0j]], np.complex128)
    np.testing.assert_allclose(run(tf.matmul(a, b, adjoint_a=True)), a.conj().T @ b)
    np.testing.assert_allclose(run(tf.matmul(a, b, adjoint_b=True)), a @ b.conj().T)
    np.testing.assert_allclose(run(tf.matmul(a, b, transpose_a=True)), a.T @ b)
    a3, b3 = np.stack([a, 2 * a]), np.stack([b, b])
    np.testing.assert_allclose(run(tf.matmul(a3, b3, adjoint_a=True)), np.conj(np.swapaxes(a3, 1, 2)) @ b3)
    np.testing.assert_allclose(run(tf.matmul(a3, b3, transpose_b=True)), a3 @ np.swapaxes(b3, 1, 2))
    m = M[0]
    np.testing.assert_allclose(run(tf.matmul(m, m, adjoint_b=True, a_is_sparse=True)), m @ m.T)
    with pytest.raises(ValueError, match="Only one of transpose_a and adjoint_a can be True."):
        tf.matmul(m, m, transpose_a=True, adjoint_a=True)


def test_conj_and_its_gradient():
    z = tf.constant([1 + 2j, -3j])
    assert tf.conj(z).op.type == "Conj" and tf.math.conj is tf.conj
    np.testing.assert_allclose(run(tf.conj(z)), [1 - 2j, 3j])
    real = tf.constant([1.0, 2.0])
    assert tf.conj(real) is real
    with pytest.raises(TypeError, match="Expected numeric or variant tensor"):
        tf.conj(tf.constant([True]))
    g = tf.gradients(tf.conj(z), z, grad_ys=tf.constant([1j, 1 + 0j]))[0]
    np.testing.assert_allclose(run(g), [-1j, 1])


def test_range_promotes_like_tf_and_keeps_a_static_length_through_its_casts():
    cases = [(tf.range(5.0), np.arange(5.0), tf.float32), (tf.range(0.0, 1.0, 0.25), np.arange(0, 1, 0.25), tf.float32),
             (tf.range(10, 0, -3), np.arange(10, 0, -3), tf.int32),
             (tf.range(tf.constant(1), 5, dtype=tf.int64), np.arange(1, 5), tf.int64)]
    sess = tf.Session()
    for r, expected, dtype in cases:
        assert r.dtype == dtype and r.shape.as_list() == [len(expected)]
        np.testing.assert_array_equal(sess.run(r), expected)
    start = tf.range(5.0).op.inputs[0]  # Python 0 is an int32 Const, cast to the range's float32 as in TF
    assert start.op.type == "Cast" and [t.op.type for t in start.op.inputs] == ["Const"]
