"""tf.gradients: what it returns, how it sums, where it stops, how it names and places the gradient ops."""
import numpy as np
import pytest

import adplace as tf
from adplace.kernels.registration import fixed
from adplace.ops.op_builder import apply_op_1

def run(fetches, feed_dict=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed_dict)


# --- values ---------------------------------------------------------------------------------------------------------
def test_unconnected_x_gives_none_or_zeros():
    x, z = tf.constant([1.0, 2.0]), tf.constant([[3.0]])
    y = tf.sin(x)
    assert tf.gradients(y, [x, z])[1] is None
    dz = tf.gradients(y, z, unconnected_gradients="zero")[0]
    dz_enum = tf.gradients(y, z, unconnected_gradients=tf.UnconnectedGradients.ZERO)[0]
    np.testing.assert_array_equal(run(dz), [[0.0]])
    np.testing.assert_array_equal(run(dz_enum), [[0.0]])
    with pytest.raises(ValueError, match="Unknown value for unconnected_gradients: 'sometimes'"):
        tf.gradients(y, x, unconnected_gradients="sometimes")


def test_gradients_of_several_paths_are_summed():
    x = tf.constant([0.5, 2.0], dtype=tf.float64)
    y = x * x + tf.sin(x) + 3.0 * x
    dx, = tf.gradients(y, x)
    np.testing.assert_allclose(run(dx), 2 * np.array([0.5, 2.0]) + np.cos([0.5, 2.0]) + 3.0)


def test_gradients_of_several_ys_are_summed_and_weighted_by_grad_ys():
    x = tf.constant([1.0, 2.0])
    y1, y2 = x * x, 5.0 * x
    dx, = tf.gradients([y1, y2], x, grad_ys=[tf.constant([1.0, 10.0]), None])
    np.testing.assert_allclose(run(dx), [1.0 * 2.0 + 5.0, 10.0 * 4.0 + 5.0])
    assert [op.name for op in tf.get_default_graph().get_operations() if op.name.endswith("grad_ys_0")] == \
        ["gradients/grad_ys_0"]


def test_grad_ys_count_must_match_ys():
    x = tf.constant(1.0)
    with pytest.raises(ValueError, match="Passed 2 grad_ys for 1 ys"):
        tf.gradients(x * 2.0, x, grad_ys=[tf.constant(1.0), tf.constant(2.0)])


def test_stop_gradients_argument_and_stop_gradient_op():
    x = tf.constant(3.0)
    a = x * x
    b = a + x
    da, dx = tf.gradients(b, [a, x], stop_gradients=[a])
    assert run([da, dx]) == [1.0, 1.0]  # a is a constant to the walk: no 2x through it
    c = tf.stop_gradient(x * x) + 4.0 * x
    assert run(tf.gradients(c, x)) == [4.0]
    assert tf.gradients(tf.stop_gradient(x), x) == [None]


def test_integer_tensors_stop_gradients():
    x = tf.constant([1.5, 2.5])
    y = tf.cast(tf.cast(x, tf.int32), tf.float32) * x
    np.testing.assert_allclose(run(tf.gradients(y, x)[0]), [1.0, 2.0])  # only the float path: the truncated value
    i = tf.constant([1, 2])
    assert tf.gradients(tf.cast(i, tf.float32) * 2.0, i) == [None]


def test_variables_as_xs():
    v = tf.Variable([1.0, -2.0])
    y = tf.reduce_sum(v * v)
    dv, = tf.gradients(y, v)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_allclose(sess.run(dv), [2.0, -4.0])


def test_gradient_of_x_with_respect_to_itself_is_grad_ys():
    x = tf.constant([[1.0, 2.0]])
    np.testing.assert_array_equal(run(tf.gradients(x, x)[0]), [[1.0, 1.0]])
    np.testing.assert_array_equal(run(tf.gradients(x, x, grad_ys=tf.constant([[3.0, 4.0]]))[0]), [[3.0, 4.0]])


def test_missing_output_gradients_are_zero_filled():
    x = tf.constant([1.0, 2.0, 3.0, 4.0])
    first, _ = tf.split(x, 2)
    np.testing.assert_array_equal(run(tf.gradients(first * 3.0, x)[0]), [3.0, 3.0, 0.0, 0.0])


# --- registry ---------------------------------------------------------------------------------------------------------
def _register_square_op(scratch_registry, op_type: str) -> None:
    """A throwaway elementwise op type computing x**2 on the CPU, with no gradient entry yet."""
    scratch_registry.register_op(op_type, lambda inputs, attrs, name: [(inputs[0]._dtype.base_dtype,
                                                                       inputs[0]._shape)])
    scratch_registry.register_kernel(op_type, "CPU", [tf.float32, tf.float64])(fixed(np.square))


def test_op_without_registered_gradient_raises_lookup_error(scratch_registry):
    _register_square_op(scratch_registry, "GradTestNoGradient")
    x = tf.constant([1.0])
    y = apply_op_1("GradTestNoGradient", [x], name="mystery")
    assert run(y) == [1.0]
    with pytest.raises(LookupError, match=r"No gradient defined for operation 'mystery' \(op type: "
                                          r"GradTestNoGradient\)"):
        tf.gradients(y, x)


def test_user_registered_gradient_is_used(scratch_registry):
    _register_square_op(scratch_registry, "GradTestUserGradient")

    @tf.RegisterGradient("GradTestUserGradient")
    def _user_gradient(op, grad):
        return [grad * 10.0]  # deliberately not 2x: the test sees that this function, not a formula, ran
    x = tf.constant([2.0])
    y = apply_op_1("GradTestUserGradient", [x], name="custom")
    np.testing.assert_allclose(run(tf.gradients(y * 3.0, x)[0]), [30.0])
    with pytest.raises(KeyError, match="Registering two gradient with name 'GradTestUserGradient'"):
        tf.RegisterGradient("GradTestUserGradient")(_user_gradient)


def test_not_differentiable_op_passes_no_gradient():
    x = tf.constant([1.0, 2.0])
    assert tf.gradients(tf.cast(tf.equal(x, 1.0), tf.float32), x) == [None]


# --- options ----------------------------------------------------------------------------------------------------------
def _fan_in_graph():
    """x reaches y along 4 paths, so its gradient aggregates 4 terms."""
    x = tf.constant([0.5, 1.5], dtype=tf.float64)
    y = tf.sin(x) + tf.square(x) + 2.0 * x + tf.exp(x)
    return x, y


@pytest.mark.parametrize("method", [None, tf.AggregationMethod.ADD_N, tf.AggregationMethod.EXPERIMENTAL_TREE,
                                    tf.AggregationMethod.EXPERIMENTAL_ACCUMULATE_N])
def test_aggregation_methods_agree(method):
    x, y = _fan_in_graph()
    dx, = tf.gradients(y, x, aggregation_method=method)
    x0 = np.array([0.5, 1.5])
    np.testing.assert_allclose(run(dx), np.cos(x0) + 2 * x0 + 2.0 + np.exp(x0))
    add_n_inputs = sorted(len(op.inputs) for op in tf.get_default_graph().get_operations() if op.type == "AddN")
    assert add_n_inputs == ([4] if method in (None, tf.AggregationMethod.ADD_N) else [2, 2, 2])


def test_invalid_aggregation_method():
    x, y = _fan_in_graph()
    with pytest.raises(ValueError, match=r"^Invalid aggregation_method specified 7\.$"):
        tf.gradients(y, x, aggregation_method=7)


def test_gate_gradients_gives_the_same_values_through_a_tuple():
    a, b = tf.constant([[1.0, 2.0]]), tf.constant([[3.0], [4.0]])
    y = tf.matmul(a, b)
    ungated = run(tf.gradients(y, [a, b]))
    gated = tf.gradients(y, [a, b], gate_gradients=True)
    for got, want in zip(run(gated), ungated):
        np.testing.assert_array_equal(got, want)
    gate_ops = [op for op in tf.get_default_graph().get_operations() if op.name.startswith("gradients_1/MatMul_grad/tuple")]
    assert {op.type for op in gate_ops} == {"NoOp", "Identity"}
    assert all(op.device == "" for op in gate_ops)


def test_gradient_ops_are_named_under_the_gradients_scope():
    x = tf.constant(1.0)
    y = tf.sin(x)
    dx, = tf.gradients(y, x)
    assert dx.name.startswith("gradients/Sin_grad/")
    dx2, = tf.gradients(y, x)
    assert dx2.name.startswith("gradients_1/Sin_grad/")
    dx3, = tf.gradients(y, x, name="my_grads")
    assert dx3.name.startswith("my_grads/Sin_grad/")
    grad_names = [op.name for op in tf.get_default_graph().get_operations() if op.name.startswith("gradients/")]
    assert "gradients/grad_ys_0" in grad_names and "gradients/Sin_grad/Cos" in grad_names


def test_incompatible_gradient_shape_is_reported(scratch_registry):
    _register_square_op(scratch_registry, "GradTestBadShape")
    tf.RegisterGradient("GradTestBadShape")(lambda op, grad: [tf.constant([1.0, 2.0, 3.0])])
    x = tf.constant([1.0, 2.0])
    y = apply_op_1("GradTestBadShape", [x], name="bad")
    with pytest.raises(ValueError, match="Incompatible shapes between op input and calculated input gradient. "
                                         "Forward operation: bad. Input index: 0"):
        tf.gradients(y, x)


# --- devices ----------------------------------------------------------------------------------------------------------
def _forward_op_name(grad_op_name: str) -> str:
    """'gradients/tower1/Cos_grad/Sin' -> 'tower1/Cos'."""
    return grad_op_name.split("/", 1)[1].split("_grad/")[0]


def _two_device_chain():
    x = tf.constant([0.3, 0.7], name="x")
    with tf.device("/gpu:0"):
        a = tf.sin(x, name="a")
    with tf.device("/gpu:1"):
        b = tf.cos(a, name="b")
    with tf.device("/cpu:0"):
        y = tf.reduce_sum(b * b, name="y")
    return x, y


def test_colocated_gradients_run_on_their_forward_ops_device(gpus):
    x, y = _two_device_chain()
    with tf.device("/gpu:1"):  # ignored for gradient ops: colocation clears device scopes
        dx, = tf.gradients(y, x, colocate_gradients_with_ops=True)
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(dx), -2 * np.cos(np.sin([0.3, 0.7])) * np.sin(np.sin([0.3, 0.7]))
                                   * np.cos([0.3, 0.7]), rtol=1e-5)
        grad_ops = [op for op in sess.graph.get_operations() if "_grad/" in op.name]
        forward = {_forward_op_name(op.name) for op in grad_ops}
        assert forward == {"a", "b", "y", "mul"}
        for op in grad_ops:
            assert sess.placement(op) == sess.placement(_forward_op_name(op.name)), op.name
        assert sess.placement("gradients/a_grad/Cos") == "/job:localhost/replica:0/task:0/device:GPU:0"
        assert sess.placement("gradients/b_grad/Sin") == "/job:localhost/replica:0/task:0/device:GPU:1"


@pytest.mark.parametrize("scope, expected", [("/gpu:1", "GPU:1"), ("/cpu:0", "CPU:0"), (None, "GPU:0")])
def test_uncolocated_gradients_take_the_device_scope_of_the_call(gpus, scope, expected):
    x, y = _two_device_chain()
    with tf.device(scope):
        dx, = tf.gradients(y, x)
    with tf.Session() as sess:
        grad_ops = [op for op in sess.graph.get_operations() if op.name.startswith("gradients/")]
        assert len(grad_ops) > 5
        assert {sess.placement(op).rsplit("device:", 1)[1] for op in grad_ops} == {expected}
        assert sess.run(dx).shape == (2,)


def test_gradients_from_two_devices_are_summed_per_device_first(gpus):
    x = tf.constant([1.0, 2.0], name="x")
    terms = []
    for gpu, factors in ((0, (2.0, 3.0)), (1, (4.0, 5.0))):
        with tf.device(f"/gpu:{gpu}"):
            terms += [tf.multiply(x, f, name=f"scale{gpu}") for f in factors]
    y = tf.add_n(terms, name="y")
    dx, = tf.gradients(y, x, colocate_gradients_with_ops=True)
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(dx), [14.0, 14.0])
        add_ns = [op for op in sess.graph.get_operations() if op.type == "AddN" and op.name.startswith("gradients/")]
        partial = sorted((sess.placement(op).rsplit("device:", 1)[1], len(op.inputs)) for op in add_ns
                         if op is not dx.op)
        assert partial == [("GPU:0", 2), ("GPU:1", 2)]
        assert dx.op.type == "AddN" and len(dx.op.inputs) == 2
        assert {t.op for t in dx.op.inputs} == {op for op in add_ns if op is not dx.op}


@pytest.mark.parametrize("fn, names", [
    (tf.sin, ["Sin_grad/Cos", "Sin_grad/mul"]),
    (tf.cos, ["Cos_grad/Neg", "Cos_grad/Sin", "Cos_grad/mul"]),
    (tf.exp, ["Exp_grad/mul"]),
    (tf.log, ["Log_grad/Reciprocal", "Log_grad/mul"]),
    (tf.tan, ["Tan_grad/Cos", "Tan_grad/Reciprocal", "Tan_grad/Square", "Tan_grad/mul"]),
    (tf.abs, ["Abs_grad/Sign", "Abs_grad/mul"]),
    (tf.square, ["Square_grad/Const", "Square_grad/Mul", "Square_grad/Mul_1"]),
    (tf.tanh, ["Tanh_grad/TanhGrad"]), (tf.sigmoid, ["Sigmoid_grad/SigmoidGrad"]), (tf.sqrt, ["Sqrt_grad/SqrtGrad"]),
    (tf.rsqrt, ["Rsqrt_grad/RsqrtGrad"]), (tf.reciprocal, ["Reciprocal_grad/ReciprocalGrad"]),
    (tf.nn.relu, ["Relu_grad/ReluGrad"]),
], ids=["sin", "cos", "exp", "log", "tan", "abs", "square", "tanh", "sigmoid", "sqrt", "rsqrt", "reciprocal", "relu"])
def test_unary_gradient_ops_are_named_and_ordered_as_tf1_builds_them(fn, names):
    """TF's math_grad writes `grad * cos(x)` (an operator: "mul"), `-grad * sin(x)` for Cos, and math_ops.multiply for
    Square ("Mul"); placement logs and colocation show these names."""
    x = tf.constant(0.5)
    tf.gradients(fn(x), x)
    built = [op.name for op in tf.get_default_graph().get_operations() if "_grad/" in op.name]
    assert built == ["gradients/" + n for n in names]


GRADIENT_OPS = [(tf.tanh, "TanhGrad"), (tf.sigmoid, "SigmoidGrad"), (tf.sqrt, "SqrtGrad"), (tf.rsqrt, "RsqrtGrad"),
                (tf.reciprocal, "ReciprocalGrad"), (tf.nn.relu, "ReluGrad")]


@pytest.mark.parametrize("fn, op_type", GRADIENT_OPS, ids=[t for _, t in GRADIENT_OPS])
def test_gradient_ops_read_the_forward_output_not_the_input(fn, op_type):
    """TanhGrad(y, dy) etc. take the forward op's output y; ReluGrad(gradients, features) takes Relu's output."""
    x = tf.placeholder(tf.float32, [2], name="x")
    y = fn(x)
    dy = tf.placeholder(tf.float32, [2], name="dy")
    dx, = tf.gradients(y, x, grad_ys=dy)
    forward, grad = dx.op.inputs[::-1] if op_type == "ReluGrad" else dx.op.inputs
    assert (dx.op.type, forward.name, grad.name) == (op_type, y.name, "gradients/grad_ys_0:0")
    assert grad.op.inputs[0] is dy


@pytest.mark.parametrize("fn, names", [
    (tf.tanh, ["mul/y", "mul", "mul_1", "mul_2", "TanhGrad"]),
    (tf.sigmoid, ["mul", "mul_1/x", "mul_1", "mul_2", "sub", "SigmoidGrad"]),
    (tf.sqrt, ["truediv", "Neg", "mul", "mul_1/x", "mul_1"]),
    (tf.rsqrt, ["mul/x", "mul", "mul_1", "Square", "mul_2", "RsqrtGrad"]),
    (tf.reciprocal, ["mul/y", "mul", "mul_1", "mul_2", "ReciprocalGrad"]),
    (tf.nn.relu, ["ReluGrad", "Shape", "zeros/Const", "zeros"]),
], ids=["tanh", "sigmoid", "sqrt", "rsqrt", "reciprocal", "relu"])
def test_second_order_gradient_ops_are_named_as_tf1_builds_them(fn, names):
    """The gradients of TanhGrad etc. are TF's _TanhGradGrad etc.: Python operators ("mul", "sub") and gen ops."""
    x = tf.constant(0.5)
    dx, = tf.gradients(fn(x), x)
    tf.gradients(dx, x)
    scope = f"gradients_1/{dx.op.name}_grad/"
    built = [op.name[len(scope):] for op in tf.get_default_graph().get_operations() if op.name.startswith(scope)]
    assert built == names


def test_gradient_of_a_full_static_mean_is_built_as_tf1_builds_it():
    """TF's _SumGrad fast path (every axis, in order): Reshape to ones, a Const of the input shape, Tile; then
    _MeanGrad's factor Const and truediv."""
    x = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    (g,) = tf.gradients(tf.reduce_mean(x), x)
    built = [(op.name, op.type) for op in tf.get_default_graph().get_operations() if "_grad/" in op.name]
    assert built == [("gradients/Mean_grad/Reshape/shape", "Const"), ("gradients/Mean_grad/Reshape", "Reshape"),
                     ("gradients/Mean_grad/Const", "Const"), ("gradients/Mean_grad/Tile", "Tile"),
                     ("gradients/Mean_grad/Const_1", "Const"), ("gradients/Mean_grad/truediv", "RealDiv")]
    with tf.Session() as sess:
        assert (sess.run(g) == 0.25).all()


# --- graphs ---------------------------------------------------------------------------------------------------------
def _two_graphs():
    g1, g2 = tf.Graph(), tf.Graph()
    with g1.as_default():
        x = tf.placeholder(tf.float32, [2], name="x")
        y = tf.sin(x, name="y")
    with g2.as_default():
        z = tf.placeholder(tf.float32, [2], name="z")
        w = tf.Variable(1.0, name="w")
    return g1, g2, x, y, z, w


@pytest.mark.parametrize("case", ["xs", "grad_ys", "stop_gradients", "variable"])
def test_tensors_from_different_graphs_are_a_value_error_adding_no_op(case):
    g1, g2, x, y, z, w = _two_graphs()
    args = {"xs": ((y, [x, z]), {}), "grad_ys": ((y, x), {"grad_ys": z}),
            "stop_gradients": ((y, x), {"stop_gradients": [z]}), "variable": ((y, w), {})}[case]
    other = "w:0" if case == "variable" else "z:0"
    counts = [len(g.get_operations()) for g in (g1, g2, tf.get_default_graph())]
    with pytest.raises(ValueError, match=rf'Tensor\("{other}".* must be from the same graph as Tensor\("y:0"') as info:
        tf.gradients(*args[0], **args[1])
    assert len(str(info.value)) < 1024
    assert [len(g.get_operations()) for g in (g1, g2, tf.get_default_graph())] == counts


def test_gradients_of_another_graph_than_the_default_are_built_in_that_graph():
    g1, _, x, y, _, _ = _two_graphs()
    dx, = tf.gradients(y, x, grad_ys=[[1.0, 2.0]])  # a Python grad_y belongs to any graph
    assert dx.graph is g1 and tf.get_default_graph().get_operations() == []
    with tf.Session(graph=g1) as sess:
        np.testing.assert_allclose(sess.run(dx, {x: [0.0, 0.0]}), [1.0, 2.0])


# --- tf.hessians, the Hessian-vector product, _original_op and the complex-ys message ------------------------------

def test_hessians_of_a_quadratic_form_and_of_a_matrix_variable():
    rng = np.random.RandomState(7)
    a = rng.randn(3, 3).astype(np.float32)
    x0 = rng.randn(3).astype(np.float32)
    with tf.Graph().as_default():
        x = tf.constant(x0)
        quad = tf.reduce_sum(x[:, None] * tf.constant(a) * x[None, :])
        m = tf.constant(rng.randn(2, 3).astype(np.float32))
        half_sq = tf.reduce_sum(tf.matmul(tf.transpose(m), m) * 0.5)
        hess_x, = tf.hessians(quad, x)
        hess_m, = tf.hessians(half_sq, [m])
        with tf.Session() as sess:
            hx, hm = sess.run([hess_x, hess_m])
    np.testing.assert_allclose(hx, a + a.T, rtol=1e-5)
    assert hm.shape == (2, 3, 2, 3)
    np.testing.assert_allclose(hm.reshape(6, 6), np.kron(np.eye(2), np.ones((3, 3))), rtol=1e-6)


def test_hessians_reject_unknown_shapes_and_unconnected_second_derivatives():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="fully defined"):
            tf.hessians(tf.placeholder(tf.float32, None) * 2.0, tf.placeholder(tf.float32, None))
        x = tf.placeholder(tf.float32, [2, 2])
        with pytest.raises(ValueError, match="second derivative"):
            tf.hessians(x, x)


def test_hessian_vector_product_matches_explicit_hessian():
    from adplace.gradients import _hessian_vector_product
    rng = np.random.RandomState(3)
    a, v0, x0 = rng.randn(4, 4), rng.randn(4, 1), rng.randn(4, 1)
    with tf.Graph().as_default():
        x = tf.constant(x0)
        xax = tf.matmul(tf.transpose(x), tf.matmul(tf.constant(a), x))
        hv, = _hessian_vector_product(xax, [x], [tf.constant(v0)])
        with tf.Session() as sess:
            np.testing.assert_allclose(sess.run(hv), (a + a.T) @ v0, rtol=1e-10)


def test_gradient_ops_record_their_forward_op_as_original_op():
    with tf.Graph().as_default():
        w = tf.constant(np.ones((3, 2), np.float32))
        xw = tf.matmul(tf.constant(np.ones((4, 3), np.float32)), w, name="xw")
        dw, = tf.gradients(xw, w)
    assert dw.op.type == "MatMul" and dw.op._original_op is xw.op
    assert xw.op._original_op is None


def test_complex_ys_need_grad_ys_and_the_message_names_the_dtype_as_tf_does():
    with tf.Graph().as_default():
        x = tf.constant(1 + 2j, dtype=tf.complex64)
        with pytest.raises(TypeError, match=r"must set grad_ys \(y\.dtype = tf\.complex64\)"):
            tf.gradients(tf.square(x), x)


# --- gradient_override_map, tf.custom_gradient, get_dependent_variables -------------------------------------------

def test_gradient_override_map_swaps_the_gradient_of_ops_built_in_the_block():
    @tf.RegisterGradient("TestTripleSquareGrad")
    def _triple(op, grad):
        return [3.0 * grad]

    with tf.Graph().as_default() as g:
        x = tf.constant(2.0)
        with g.gradient_override_map({"Square": "TestTripleSquareGrad"}):
            overridden = tf.square(x)
        plain = tf.square(x)
        assert overridden.op.get_attr("_gradient_op_type") == "TestTripleSquareGrad"
        with pytest.raises(ValueError, match="has no attr"):
            plain.op.get_attr("_gradient_op_type")
        with pytest.raises(TypeError, match="mapping strings to strings"):
            with g.gradient_override_map({"Square": 1}):
                pass
        with tf.Session() as sess:
            assert sess.run(tf.gradients(overridden, x)) == [3.0]
            assert sess.run(tf.gradients(plain, x)) == [4.0]


def test_custom_gradient_replaces_the_gradient_of_the_wrapped_function():
    @tf.custom_gradient
    def clipped_identity(x):
        return tf.identity(x), lambda dy: tf.clip_by_value(dy, -1.0, 1.0)

    @tf.custom_gradient
    def swapped_product(a, b):
        return a * b, lambda dy: [dy * a, dy * b]          # deliberately swapped, so the rule is visibly used

    class Model:
        @tf.custom_gradient
        def double(self, x):
            return 2.0 * x, lambda dy: [10.0 * dy]

    with tf.Graph().as_default():
        x, a, b = tf.constant(3.0), tf.constant(3.0), tf.constant(5.0)
        dx, = tf.gradients(5.0 * clipped_identity(x), x)
        da, db = tf.gradients(swapped_product(a, b), [a, b])
        dm, = tf.gradients(Model().double(x), x)
        with tf.Session() as sess:
            assert sess.run([dx, da, db, dm]) == [1.0, 3.0, 5.0, 10.0]
        with pytest.raises(ValueError, match="keywords arguments only when eager"):
            swapped_product(a, b=b)


def test_custom_gradient_rejects_variables_it_cannot_hand_to_grad_fn():
    @tf.custom_gradient
    def makes_a_variable(x):
        v = tf.Variable(1.0)
        return x * v, lambda dy: [dy]

    @tf.custom_gradient
    def wants_variables(x):
        return tf.identity(x), lambda dy, variables=None: [dy]

    with tf.Graph().as_default():
        with pytest.raises(TypeError, match="must be `ResourceVariable`s"):
            makes_a_variable(tf.constant(1.0))
        with pytest.raises(TypeError, match="must have use_resource=True"):
            wants_variables(tf.constant(1.0))


def test_get_dependent_variables_follows_differentiable_paths_to_trainable_variables():
    from adplace.gradients import get_dependent_variables
    with tf.Graph().as_default():
        v = tf.Variable(100.0)
        frozen = tf.Variable(1.0, trainable=False)
        x = tf.constant(2.0)
        assert get_dependent_variables([x], [tf.identity(x) + 5.0 + v + frozen]) == [v]
        cut = tf.identity(v) * 5.0
        assert get_dependent_variables([cut], [cut + 1.0]) == []
        assert get_dependent_variables({"x": x}, {"y": x + v}) == [v]
        shaped = tf.Variable(tf.zeros([3]))
        assert get_dependent_variables([x], [x + tf.ones_like(shaped)]) == []   # only through a shape
