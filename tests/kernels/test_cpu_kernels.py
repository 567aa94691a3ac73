"""Tests for adplace.kernels.cpu and the kernel registry (adplace.framework.registry): every op type has a CPU
kernel, GPU dtype support follows TF's registrations, and the NumPy kernels compute the right values (called
directly, and through sessions on the CPU and on a virtual GPU)."""

import warnings

import numpy as np
import pytest

import adplace as tf
from adplace.framework import registry
from adplace.runtime.kernel_context import KernelContext


def kernel_for(tensor_or_op, device_type="CPU"):
    """The kernel function the session would bind for an op that needs nothing from the context but NumPy."""
    op = tensor_or_op if isinstance(tensor_or_op, tf.Operation) else tensor_or_op.op
    return registry.kernel_factory(op.type, device_type)(op, KernelContext(None))


# --- registry -----------------------------------------------------------------------------------------------------

def test_registered_op_types_is_sorted_and_covers_the_ops():
    types = registry.registered_op_types()
    assert types == sorted(types)
    for expected in ("Const", "Placeholder", "VariableV2", "Assign", "AssignAdd", "AssignSub", "Identity", "Add",
                     "Sub", "Mul", "RealDiv", "Neg", "Pow", "Maximum", "Minimum", "Sin", "Cos", "Tan", "Exp", "Log",
                     "Sqrt", "Square", "Abs", "Tanh", "Sigmoid", "Relu", "MatMul", "Sum", "Mean", "Max", "Min",
                     "Reshape", "Transpose", "Split", "SplitV", "ConcatV2", "Pack", "Unpack", "Squeeze",
                     "ExpandDims", "Fill", "ZerosLike", "AddN", "Cast", "RandomUniform",
                     "RandomStandardNormal", "TruncatedNormal", "NoOp", "StridedSlice"):
        assert expected in types, expected


@pytest.mark.parametrize("op_type", registry.registered_op_types())
def test_every_registered_op_type_has_a_cpu_kernel(op_type):
    assert registry.has_kernel(op_type, "CPU")
    assert "CPU" in registry.kernel_device_types(op_type, None)


@pytest.mark.parametrize("op_type", ["TanhGrad", "SigmoidGrad", "SqrtGrad", "RsqrtGrad", "ReciprocalGrad", "ReluGrad"])
def test_gradient_ops_of_unary_ops_have_cpu_and_gpu_kernels_for_floats(op_type):
    for device_type in ("CPU", "GPU"):
        for dtype in (tf.float32, tf.float64):
            assert tf.config.has_kernel(op_type, device_type, dtype), (device_type, dtype)


def test_variable_gpu_kernel_dtypes_follow_tf():
    assert registry.has_kernel("VariableV2", "GPU", tf.float32)
    assert not registry.has_kernel("VariableV2", "GPU", tf.int32)
    assert registry.has_kernel("VariableV2", "GPU", tf.int64)
    assert registry.has_kernel("VariableV2", "CPU", tf.int32)
    # ref dtypes are looked up by their base dtype
    assert registry.has_kernel("VariableV2", "GPU", tf.float32_ref)
    assert not registry.has_kernel("Assign", "GPU", tf.int32)


def test_matmul_has_no_int32_gpu_kernel():
    assert not registry.has_kernel("MatMul", "GPU", tf.int32)
    assert registry.has_kernel("MatMul", "GPU", tf.float32)
    assert registry.has_kernel("MatMul", "CPU", tf.int32)


def test_strings_have_no_gpu_kernels():
    assert not registry.has_kernel("Const", "GPU", tf.string)
    assert registry.has_kernel("Const", "CPU", tf.string)


def test_kernel_device_types():
    assert registry.kernel_device_types("MatMul", tf.int32) == frozenset({"CPU"})
    assert registry.kernel_device_types("MatMul", tf.float32) == frozenset({"CPU", "GPU"})
    assert registry.kernel_device_types("VariableV2", tf.int32) == frozenset({"CPU"})
    assert registry.kernel_device_types("NoOp", None) == frozenset({"CPU", "GPU"})
    assert registry.kernel_device_types("NotAnOp", tf.float32) == frozenset()


def test_has_kernel_unknown_op_or_device():
    assert not registry.has_kernel("NotAnOp", "CPU")
    assert not registry.has_kernel("Add", "TPU")


def test_get_op_def_unknown_type_raises_key_error():
    with pytest.raises(KeyError, match="Op type not registered: 'NotAnOp'"):
        registry.get_op_def("NotAnOp")
    with pytest.raises(KeyError, match="NotAnOp"):
        tf.get_default_graph().create_op("NotAnOp", [])


def test_op_defs_record_ref_inputs_and_statefulness():
    assert registry.get_op_def("Assign").ref_inputs == (0,)
    assert registry.get_op_def("VariableV2").is_stateful
    assert registry.get_op_def("RandomUniform").is_stateful
    assert not registry.get_op_def("Add").is_stateful


def test_registering_an_op_twice_raises():
    with pytest.raises(KeyError, match="already registered"):
        registry.register_op("Add", lambda inputs, attrs, name: [])


def test_registered_kernels_text_lists_devices():
    text = registry.registered_kernels_text("MatMul")
    assert "device='CPU'" in text and "device='GPU'" in text
    assert "int32" in text.split("device='GPU'")[0]  # CPU line lists int32
    assert "int32" not in text.split("device='GPU'")[1]
    assert registry.registered_kernels_text("NotAnOp") == "  <no registered kernels>"


def test_kernel_dtype_uses_t_then_dtype_then_output():
    add = tf.add(tf.constant(1.0), 2.0)
    var = tf.Variable(1, name="v")
    assert registry.kernel_dtype(add.op) is tf.float32
    assert registry.kernel_dtype(var.op) is tf.int32  # attr dtype, not the _ref output
    assert registry.kernel_dtype(tf.constant([1.0], dtype=tf.float64).op) is tf.float64
    assert registry.kernel_dtype(tf.no_op()) is None


# --- kernels called directly ------------------------------------------------------------------------------------

def test_sigmoid_kernel_is_stable_for_large_inputs():
    y = tf.sigmoid(tf.placeholder(tf.float32))
    fn = kernel_for(y)
    x = np.array([-1e4, -88.0, -10.0, 0.0, 10.0, 88.0, 1e4], np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = fn(x)
    assert out.dtype == np.float32
    want = 1.0 / (1.0 + np.exp(-x.astype(np.float64).clip(-700, 700)))
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-38)


def test_relu_kernel():
    fn = kernel_for(tf.relu(tf.placeholder(tf.float32)))
    np.testing.assert_allclose(fn(np.array([-1.0, 0.0, 2.0])), [0.0, 0.0, 2.0])


@pytest.mark.parametrize("ta, tb", [(False, False), (True, False), (False, True), (True, True)])
def test_matmul_kernel_transposes(ta, tb):
    a, b = np.arange(6.0).reshape(2, 3), np.arange(12.0).reshape(3, 4)
    p = tf.placeholder(tf.float64)
    fn = kernel_for(tf.matmul(p, p, transpose_a=ta, transpose_b=tb))
    np.testing.assert_allclose(fn(a.T if ta else a, b.T if tb else b), a @ b)


def test_matmul_kernel_size_mismatch_raises_invalid_argument():
    p = tf.placeholder(tf.float64, [None, None])
    fn = kernel_for(tf.matmul(p, p))
    with pytest.raises(tf.errors.InvalidArgumentError, match="Matrix size-incompatible: In\\[0\\]: \\[2,3\\], "
                                                             "In\\[1\\]: \\[2,3\\]"):
        fn(np.ones((2, 3)), np.ones((2, 3)))


def test_reduction_kernels_keep_dtype_and_truncate_int_mean():
    p = tf.placeholder(tf.int32, shape=[2, 2])
    mean = kernel_for(tf.reduce_mean(p, axis=1))
    out = mean(np.array([[1, 2], [-3, -4]], np.int32), np.array([1], np.int32))
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, [1, -3])
    q = tf.placeholder(tf.float32, shape=[2, 2])
    total = kernel_for(tf.reduce_sum(q, axis=0, keepdims=True))
    out = total(np.array([[1.0, 2.0], [3.0, 4.0]], np.float32), np.array([0], np.int32))
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, [[4.0, 6.0]])


def test_max_and_min_of_empty_tensors_give_the_reduction_identity():
    p = tf.placeholder(tf.float32, shape=[None])
    i = tf.placeholder(tf.int32, shape=[None])
    with tf.Session() as sess:
        out = sess.run([tf.reduce_max(p), tf.reduce_min(p), tf.reduce_max(i), tf.reduce_min(i)],
                       {p: np.zeros(0, np.float32), i: np.zeros(0, np.int32)})
    assert out == [-np.inf, np.inf, np.iinfo(np.int32).min, np.iinfo(np.int32).max]


def test_split_v_kernel_resolves_minus_one():
    p = tf.placeholder(tf.float32, shape=[None])
    parts = tf.split(p, [1, -1, 2])
    fn = kernel_for(parts[0])
    got = fn(np.arange(6.0), np.array([1, -1, 2], np.int32), np.int32(0))
    assert [g.tolist() for g in got] == [[0.0], [1.0, 2.0, 3.0], [4.0, 5.0]]


def test_split_kernel_uneven_at_run_time_raises():
    p = tf.placeholder(tf.float32, shape=[None])
    parts = tf.split(p, 2, name="halves")
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="halves"):
            sess.run(parts, {p: np.zeros(5)})
        got = sess.run(parts, {p: np.arange(4.0)})
    np.testing.assert_allclose(got[0], [0.0, 1.0])
    np.testing.assert_allclose(got[1], [2.0, 3.0])


def test_squeeze_kernel_rejects_non_one_dim_at_run_time():
    p = tf.placeholder(tf.float32)
    y = tf.squeeze(p, axis=[0], name="sq")
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="sq"):
            sess.run(y, {p: np.zeros((2, 1))})
        assert sess.run(y, {p: np.zeros((1, 2))}).shape == (2,)


def test_unpack_kernel_checks_num_at_run_time():
    p = tf.placeholder(tf.float32, shape=[None])
    parts = tf.unstack(p, num=3, name="un")
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="un"):
            sess.run(parts, {p: np.zeros(2)})


@pytest.mark.parametrize("split", [lambda t: tf.split(t, 1, axis=0), lambda t: tf.split(t, [1], axis=0),
                                   lambda t: tf.unstack(t, axis=0)], ids=["Split", "SplitV", "Unpack"])
def test_one_output_split_kernels_return_the_piece_itself(split):
    piece, = split(tf.constant([[1.0, 2.0]]))
    with tf.Session() as sess:
        got = sess.run(piece)
    assert got.shape == tuple(piece.shape.as_list())
    np.testing.assert_array_equal(got, np.array([[1.0, 2.0]]).reshape(got.shape))


def test_integer_floormod_by_zero_raises_only_when_an_element_divides():
    x, y = tf.placeholder(tf.int32), tf.placeholder(tf.int32)
    z = tf.floormod(x, y, name="imod")
    with tf.Session() as sess:
        assert sess.run(z, {x: np.zeros(0, np.int32), y: np.int32(0)}).shape == (0,)
        with pytest.raises(tf.errors.InvalidArgumentError, match="imod"):
            sess.run(z, {x: np.ones(2, np.int32), y: np.int32(0)})


def test_strided_slice_out_of_range_at_run_time():
    p = tf.placeholder(tf.float32)
    y = p[3]
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="strided_slice"):
            sess.run(y, {p: np.zeros(2)})


def test_assign_kernel_shape_mismatch_at_run_time():
    v = tf.Variable([1.0, 2.0], name="v")
    p = tf.placeholder(tf.float32)
    set_op = tf.assign(v, p, name="set_v")
    with tf.Session() as sess:
        sess.run(v.initializer)
        with pytest.raises(tf.errors.InvalidArgumentError, match="set_v"):
            sess.run(set_op, {p: [1.0, 2.0, 3.0]})
        np.testing.assert_allclose(sess.run(v), [1.0, 2.0])


def test_cast_kernel_and_fill_kernel():
    p = tf.placeholder(tf.float32)
    cast = kernel_for(tf.cast(p, tf.int64))
    out = cast(np.array([1.9, -1.9], np.float32))
    assert out.dtype == np.int64
    np.testing.assert_array_equal(out, [1, -1])
    fill = kernel_for(tf.fill(tf.placeholder(tf.int32, [2]), 1.5))
    out = fill(np.array([2, 3], np.int32), np.float32(1.5))
    assert out.shape == (2, 3) and out.dtype == np.float32


def test_add_n_of_one_tensor_is_that_tensor_and_its_kernel_copies():
    p = tf.placeholder(tf.float32, shape=[2])
    assert tf.add_n([p]) is p  # as TF: no AddN op for a single input
    assert tf.add_n([p], name="named").op.type == "Identity"
    fn = kernel_for(tf.get_default_graph().create_op("AddN", [p], attrs={"N": 1, "T": tf.float32}).outputs[0])
    x = np.array([1.0, 2.0], np.float32)
    out = fn(x)
    assert out is not x
    np.testing.assert_allclose(out, x)


# --- the same kernels on a virtual GPU ---------------------------------------------------------------------------

def _build_value_graph():
    x = tf.constant(np.array([[0.5, -1.0], [2.0, 3.0]], np.float32))
    return [tf.sin(x), tf.sigmoid(x), tf.matmul(x, x, transpose_b=True), tf.reduce_sum(x, axis=1),
            tf.reshape(x, [-1]), tf.transpose(x), tf.concat([x, x], axis=0), x * 2.0 + 1.0]


def test_virtual_gpu_kernels_match_cpu_kernels():
    cpu_graph = tf.Graph()
    with cpu_graph.as_default(), tf.device("/cpu:0"):
        cpu_fetches = _build_value_graph()
    with tf.Session(graph=cpu_graph) as sess:
        cpu_values = sess.run(cpu_fetches)
    tf.config.set_virtual_gpus(1)
    gpu_graph = tf.Graph()
    with gpu_graph.as_default(), tf.device("/gpu:0"):
        gpu_fetches = _build_value_graph()
    with tf.Session(graph=gpu_graph) as sess:
        gpu_values = sess.run(gpu_fetches)
        assert sess.placement(gpu_fetches[2]).endswith("/device:GPU:0")
    for c, g in zip(cpu_values, gpu_values):
        assert c.dtype == g.dtype
        np.testing.assert_allclose(g, c, rtol=1e-6)


def test_int32_variable_soft_placed_on_cpu_when_gpu_requested():
    tf.config.set_virtual_gpus(1)
    with tf.device("/gpu:0"):
        iv = tf.Variable(3, name="iv")
        fv = tf.Variable(3.0, name="fv")
    config = tf.ConfigProto(allow_soft_placement=True)
    with tf.Session(config=config) as sess:
        assert sess.placement(iv.op).endswith("/device:CPU:0")
        assert sess.placement(fv.op).endswith("/device:GPU:0")
        sess.run(tf.global_variables_initializer())
        assert sess.run(iv) == 3


def test_int32_matmul_on_gpu_without_soft_placement_raises():
    tf.config.set_virtual_gpus(1)
    with tf.device("/gpu:0"):
        y = tf.matmul(tf.constant([[1]]), tf.constant([[2]]), name="int_mm")
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="int_mm"):
            sess.run(y)


# --- output buffers reused across runs ---------------------------------------------------------------------------------
def test_output_buffer_is_reused_only_when_nothing_holds_it():
    from adplace.kernels.output_buffer import _FREE_REFS, OutputBuffer
    if _FREE_REFS is None:
        pytest.skip("reference counts do not prove an array is free on this Python")
    reuse = OutputBuffer()
    first = reuse.get((256, 256), np.float32)
    first_id = id(first)
    del first
    assert id(reuse.get((256, 256), np.float32)) == first_id        # nobody held it: the same memory again
    held = reuse.get((256, 256), np.float32)
    view = held[:1]
    del held
    assert reuse.get((256, 256), np.float32).base is not view.base  # a view keeps it: a new array
    assert reuse.get((4, 4), np.float32) is None                     # small outputs: plain allocation


def test_matmul_results_fetched_earlier_are_never_overwritten():
    x = tf.placeholder(tf.float32, [300, 300])
    y = tf.matmul(x, x)
    total = tf.reduce_sum(y)
    sess = tf.Session()
    ones = np.ones((300, 300), np.float32)
    kept = [sess.run(y, {x: ones * k}) for k in (1, 2, 3)]
    sums = [sess.run(total, {x: ones * k}) for k in (1, 2, 3, 1)]  # these runs may reuse y's buffer
    for k, value in zip((1, 2, 3), kept):
        assert np.all(value == 300 * k * k)
    assert sums == [300 ** 3 * k * k for k in (1, 2, 3, 1)]
