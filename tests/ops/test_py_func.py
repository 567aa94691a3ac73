"""Tests for adplace.ops.script_ops and adplace.kernels.script (tf.py_func, tf.numpy_function): return types,
value conversion, TF's errors, statefulness, gradients through gradient_override_map, CPU-only placement and calls
from several threads at once."""
import functools
import queue
import threading

import numpy as np
import pytest

import adplace as tf
from adplace.errors import (InvalidArgumentError, OutOfRangeError, ResourceExhaustedError, UnimplementedError,
                            UnknownError)
from adplace.framework.registry import get_gradient_function
from adplace.runtime.thread_pool import available_cpus
from thread_support import run_threads

CPU0 = "/job:localhost/replica:0/task:0/device:CPU:0"


def run(fetches, feed_dict=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed_dict)


# --- building ------------------------------------------------------------------------------------------------------

def test_a_single_dtype_gives_a_tensor_of_unknown_shape_and_a_list_gives_a_list():
    x = tf.constant([1.0, 2.0])
    y = tf.py_func(np.sinh, [x], tf.float32)
    assert isinstance(y, tf.Tensor) and y.dtype == tf.float32 and y.shape.ndims is None
    assert y.op.type == "PyFunc" and y.op.name == "PyFunc"
    assert y.op.get_attr("token").startswith("pyfunc_")
    assert y.op.get_attr("Tin") == [tf.float32] and y.op.get_attr("Tout") == [tf.float32]
    pair = tf.py_func(lambda v: (v, v * 2), (x,), (tf.float32, tf.float32), name="pair")
    assert isinstance(pair, list) and [t.name for t in pair] == ["pair:0", "pair:1"]
    one = tf.py_func(np.cosh, [x], [tf.float32])
    assert isinstance(one, list) and len(one) == 1
    np.testing.assert_allclose(run(y), np.sinh([1.0, 2.0]), rtol=1e-6)
    np.testing.assert_allclose(run(pair), [[1.0, 2.0], [2.0, 4.0]])
    np.testing.assert_allclose(run(one)[0], np.cosh([1.0, 2.0]), rtol=1e-6)


def test_tokens_are_unique_and_each_graph_keeps_its_functions():
    tokens = set()
    for _ in range(3):
        with tf.Graph().as_default():
            tokens.add(tf.py_func(lambda: 1.0, [], tf.float64).op.get_attr("token"))
    assert len(tokens) == 3


def test_stateful_and_stateless_op_types_and_numpy_function():
    x = tf.constant(1.0)
    assert tf.py_func(np.exp, [x], tf.float32, stateful=False).op.type == "PyFuncStateless"
    assert tf.numpy_function(np.exp, [x], tf.float32).op.type == "PyFunc"  # stateful in TF 1.15
    assert tf.numpy_function(np.exp, [x], tf.float32, name="np_exp").op.name == "np_exp"
    assert tf.get_default_graph().get_operation_by_name("PyFunc").op_def.is_stateful
    assert not tf.get_default_graph().get_operation_by_name("PyFuncStateless").op_def.is_stateful


def test_inputs_are_converted_in_the_name_scope():
    with tf.name_scope("outer"):
        y = tf.py_func(lambda a, b: a + b, [1.0, np.float32(2.0)], tf.float32)
    assert y.op.name == "outer/PyFunc"
    assert [t.op.name for t in y.op.inputs] == ["outer/PyFunc/input", "outer/PyFunc/input_1"]
    assert run(y) == 3.0


def test_bad_arguments():
    with pytest.raises(ValueError, match="Expected func to be callable, got func of type <class 'int'>"):
        tf.py_func(3, [], tf.float32)
    with pytest.raises(TypeError, match="Expected list for 'input' argument to 'PyFunc' Op"):
        tf.py_func(np.exp, tf.constant(1.0), tf.float32)


def test_no_outputs_stateful_gives_the_op_and_stateless_gives_an_empty_list():
    state = {"value": np.array([1], np.int64)}

    def increment(diff):
        state["value"] = state["value"] + diff

    op = tf.py_func(increment, [tf.constant(2, tf.int64)], [])
    assert isinstance(op, tf.Operation) and op.type == "PyFunc" and op.outputs == []
    assert run(op) is None
    np.testing.assert_array_equal(state["value"], [3])
    assert tf.py_func(lambda x: None, [tf.constant(3, tf.int64)], [], stateful=False) == []
    assert tf.numpy_function(lambda: None, [], []).type == "PyFunc"


# --- values --------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [tf.float16, tf.float32, tf.float64, tf.uint8, tf.int8, tf.uint16, tf.int16,
                                   tf.int32, tf.int64, tf.complex64, tf.complex128])
def test_numeric_types_round_trip(dtype):
    x, y = tf.constant(1, dtype=dtype), tf.constant(2, dtype=dtype)
    z = tf.py_func(lambda a, b: a + b, [x, y], dtype)
    value = run(z)
    assert value == 3 and value.dtype == dtype.as_numpy_dtype


def test_scalars_arrive_as_numpy_scalars_and_python_values_come_back():
    seen = []

    def both(flag, other):
        seen.append((type(flag), type(other)))
        return flag and other

    z = tf.py_func(both, [tf.constant(True), tf.constant(False)], tf.bool)
    assert run(z) == False  # noqa: E712 - a NumPy bool
    assert seen == [(np.bool_, np.bool_)]
    literal = tf.py_func(lambda x: 1.0 if float(x) == 0.0 else 0.0, [tf.constant(0.0, tf.float64)], tf.float64)
    assert run(literal) == 1.0
    assert run(tf.py_func(lambda: 42, [], tf.int64)) == 42


def test_lists_tuples_and_fortran_order():
    x = tf.constant(0.0, tf.float64)
    np.testing.assert_allclose(run(tf.py_func(lambda v: [v, v + 1], [x], [tf.float64] * 2)), [0.0, 1.0])
    np.testing.assert_allclose(run(tf.py_func(lambda v: (v, v + 1), (x,), (tf.float64, tf.float64))), [0.0, 1.0])
    val = [[1, 2], [3, 4]]
    np.testing.assert_array_equal(run(tf.py_func(lambda: np.array(val, order="F"), [], [tf.int64]))[0], val)


def test_strings_are_bytes_in_and_out():
    x = tf.constant(["hello", "hi"])
    seen = []

    def concat(a, b):
        seen.append(a.dtype)
        return a + b

    suffix = tf.py_func(lambda: np.array([" there"]), [], tf.string)  # a NumPy unicode array comes back as bytes
    z = tf.py_func(concat, [x, suffix], tf.string)
    assert run(z).tolist() == [b"hello there", b"hi there"]
    assert seen == [np.dtype(object)]
    mixed = tf.py_func(lambda: np.array([b" there", " ya"], dtype=object), [], [tf.string])[0]
    assert run(tf.py_func(concat, [x, mixed], tf.string)).tolist() == [b"hello there", b"hi ya"]


def test_strings_are_neither_padded_nor_stripped():
    words = [b"this", b"is", b"a", b"test\x00"]
    s, = tf.py_func(lambda: [words], [], [tf.string])
    assert run(s).tolist() == words
    t, = tf.py_func(lambda: [["this", "is"]], [], [tf.string])
    assert run(t).tolist() == [b"this", b"is"]


def test_a_returned_unicode_string_is_utf8_bytes():
    z, = tf.py_func(lambda: "你好 世界", [], [tf.string])
    assert run(z) == "你好 世界".encode("utf8")
    assert run(tf.py_func(lambda: b"raw", [], tf.string)) == b"raw"  # one value, not a sequence of bytes


def test_the_function_gets_copies_so_constants_and_variables_stay_intact():
    c = tf.constant([1.0, 2.0])
    v = tf.Variable([5.0, 6.0])

    def clobber(a, b):
        a[:] = 0.0
        b[:] = 0.0
        return a + b

    z = tf.py_func(clobber, [c, v], tf.float32)
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert sess.run(z).tolist() == [0.0, 0.0]
        assert sess.run(c).tolist() == [1.0, 2.0] and sess.run(v).tolist() == [5.0, 6.0]


def test_a_returned_array_is_not_written_by_later_ops():
    kept = np.array([1.0, 2.0], dtype=np.float32)
    out = tf.py_func(lambda: kept, [], [tf.float32])[0]
    assert run(out + tf.constant([2.0, 3.0])).tolist() == [3.0, 5.0]
    assert kept.tolist() == [1.0, 2.0]


def test_large_inputs_run_repeatedly():
    x = tf.zeros([1_000_000], dtype=tf.float32)
    y = tf.py_func(lambda v: v + 1, [x], [tf.float32])
    z = tf.py_func(lambda v: v * 2, [x], [tf.float32])
    with tf.Session() as sess:
        for _ in range(5):
            a, b = sess.run([y[0], z[0]])
    assert a.shape == (1_000_000,) and a[0] == 1.0 and b[-1] == 0.0


# --- statefulness --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("stateful", [True, False])
def test_the_function_runs_on_every_session_run(stateful):
    """TF constant-folds a stateless py_func without inputs (0, 0, 0); adplace folds nothing, so both count up."""
    producer = iter(range(3))
    x, = tf.py_func(lambda: next(producer), [], [tf.int64], stateful=stateful)
    with tf.Session() as sess:
        assert [sess.run(x) for _ in range(3)] == [0, 1, 2]


# --- errors --------------------------------------------------------------------------------------------------------

def test_a_wrong_dtype_or_count_is_invalid_argument():
    x = tf.constant([1.0, 2.0])
    wrong = tf.py_func(lambda v: v.astype(np.float64), [x], tf.float32, name="wrong")
    token = wrong.op.get_attr("token")
    with pytest.raises(InvalidArgumentError, match=f"0-th value returned by {token} is double, but expects float") \
            as info:
        run(wrong)
    assert info.value.op is wrong.op and "wrong" in str(info.value)
    second = tf.py_func(lambda v: (v, v), [x], [tf.float32, tf.int32])
    with pytest.raises(InvalidArgumentError, match="1-th value returned by .* is float, but expects int32"):
        run(second)
    many = tf.py_func(lambda v: [v, v], [x], tf.float32)
    with pytest.raises(InvalidArgumentError, match=r"pyfunc_\d+ returns 2 values, but expects to see 1 values\."):
        run(many)
    nothing = tf.py_func(lambda v: None, [x], tf.float32)
    with pytest.raises(InvalidArgumentError, match="returns 0 values, but expects to see 1 values"):
        run(nothing)


def test_unsupported_return_types_are_internal_errors():
    structured, = tf.py_func(lambda: np.array([], dtype=[("foo", np.float32)]), [], [tf.float32])
    with pytest.raises(tf.errors.InternalError, match="Unsupported numpy data type"):
        run(structured)
    mapping, = tf.py_func(lambda: {"foo": tf.float32}, [], [tf.int64])
    with pytest.raises(tf.errors.InternalError, match="Unsupported object type dict"):
        run(mapping)


class WeirdError(Exception):
    pass


@pytest.mark.parametrize("py_error, tf_error", [(ValueError, InvalidArgumentError), (TypeError, InvalidArgumentError),
                                                (StopIteration, OutOfRangeError),
                                                (MemoryError, ResourceExhaustedError),
                                                (NotImplementedError, UnimplementedError), (WeirdError, UnknownError)])
def test_python_exceptions_become_tf_errors_with_the_traceback(py_error, tf_error):
    def inner_exception():
        raise py_error("blah")

    def raise_exception():
        inner_exception()

    f = tf.py_func(raise_exception, [], [])
    with pytest.raises(tf_error, match=r"(?s)^\w+: blah.*in raise_exception.*in inner_exception.*: blah") as info:
        run(f)
    assert type(info.value) is tf_error and info.value.op is f


def test_a_failed_step_changes_no_variable():
    def refuse():
        raise ValueError("no")

    v = tf.Variable(10.0)
    bump = tf.assign_add(v, 1.0)
    with tf.control_dependencies([bump]):  # the write happens first, then the py_func fails
        fail = tf.py_func(refuse, [], tf.float32)
    with tf.Session() as sess:
        sess.run(v.initializer)
        with pytest.raises(InvalidArgumentError, match="ValueError: no"):
            sess.run(fail)
        assert sess.run(v) == 10.0


# --- gradients -----------------------------------------------------------------------------------------------------

def test_no_gradient_unless_overridden():
    a = tf.constant(0)
    x, = tf.py_func(lambda a: 0, [a], [tf.int64])
    y, = tf.py_func(lambda a: 0, [a], [tf.int64], stateful=False)
    assert get_gradient_function(x.op) is None and get_gradient_function(y.op) is None
    p = tf.constant(2.0)
    assert tf.gradients(tf.py_func(np.square, [p], tf.float32), p) == [None]


def test_a_gradient_given_by_gradient_override_map():
    @tf.RegisterGradient("PyFuncCubeGrad")
    def _cube_grad(op, dy):
        x = op.inputs[0]
        return tf.py_func(lambda v, d: 3 * v * v * d, [x, dy], tf.float32, name="cube_grad")

    x = tf.placeholder(tf.float32, [3])
    with tf.get_default_graph().gradient_override_map({"PyFunc": "PyFuncCubeGrad"}):
        y = tf.py_func(lambda v: v ** 3, [x], tf.float32)
    y.set_shape([3])
    loss = tf.reduce_sum(y * 2.0)
    g, = tf.gradients(loss, x)
    assert y.op.get_attr("_gradient_op_type") == "PyFuncCubeGrad"
    assert g.op.type == "PyFunc" and g.op.name == "gradients/PyFunc_grad/cube_grad"
    np.testing.assert_allclose(run(g, {x: [1.0, 2.0, -3.0]}), [6.0, 24.0, 54.0])


# --- placement -----------------------------------------------------------------------------------------------------

@pytest.mark.usefixtures("virtual_gpus_only")
def test_cpu_only_kernel_under_a_gpu_scope(gpus):
    assert tf.config.has_kernel("PyFunc", "CPU") and not tf.config.has_kernel("PyFunc", "GPU")
    assert not tf.config.has_kernel("PyFuncStateless", "GPU")
    x = tf.constant([1.0, 2.0])
    with tf.device("/gpu:0"):
        y = tf.py_func(np.sinh, [x], tf.float32, name="on_gpu")
    with pytest.raises(InvalidArgumentError, match="Cannot assign a device for operation on_gpu") as info:
        tf.Session().run(y)
    assert "no supported kernel for GPU devices" in str(info.value)
    sess = tf.Session(config=tf.ConfigProto(allow_soft_placement=True))
    np.testing.assert_allclose(sess.run(y), np.sinh([1.0, 2.0]), rtol=1e-6)
    assert sess.placement(y) == CPU0
    with tf.Graph().as_default():
        free = tf.py_func(np.cosh, [tf.constant(1.0)], tf.float32)  # no request: the only device with a kernel
        assert tf.Session().placement(free) == CPU0


# --- threads -------------------------------------------------------------------------------------------------------

def test_concurrent_session_runs_call_the_function_exactly_once_each(fast_switching):
    lock, calls = threading.Lock(), []

    def record(v):
        with lock:
            calls.append(int(v))
        return v * 2

    p = tf.placeholder(tf.int64, [])
    y = tf.py_func(record, [p], tf.int64)
    sess = tf.Session()
    results = {}

    def worker(k):
        for i in range(25):
            results[(k, i)] = sess.run(y, {p: 100 * k + i})
    run_threads(*(functools.partial(worker, k) for k in range(6)))
    assert sorted(calls) == sorted(100 * k + i for k in range(6) for i in range(25))
    assert all(results[(k, i)] == 2 * (100 * k + i) for k in range(6) for i in range(25))


def test_independent_py_funcs_run_in_parallel_on_the_inter_op_pool():
    handoff = queue.Queue(1)

    def blocking_put():
        handoff.put(42, timeout=10)
        handoff.join()  # returns once blocking_get took the item: both ran at once
        return 42

    def blocking_get():
        value = handoff.get(timeout=10)  # raises queue.Empty (an UnknownError) instead of hanging if run alone
        handoff.task_done()
        return value

    x, = tf.py_func(blocking_put, [], [tf.int64])
    y, = tf.py_func(blocking_get, [], [tf.int64])
    sess = tf.Session(config=tf.ConfigProto(inter_op_parallelism_threads=2))
    assert sess.run([y, x]) == [42, 42]


def test_values_cross_between_a_cuda_gpu_and_the_cpu_py_func(fake_gpu):
    seen = []

    def double(v):
        seen.append(type(v))
        return v * 2

    with tf.device("/gpu:0"):
        a = tf.sin(tf.constant([0.5, 1.0]))
    y = tf.py_func(double, [a], tf.float32)
    with tf.device("/gpu:0"):
        z = tf.cos(y)
    sess = tf.Session()
    np.testing.assert_allclose(sess.run(z), np.cos(2 * np.sin([0.5, 1.0])), rtol=1e-6)
    assert sess.placement(y) == CPU0 and sess.placement(z).endswith("GPU:0")
    assert seen == [np.ndarray]  # a host array, copied back from the device


@pytest.mark.skipif(available_cpus() < 2,
                    reason="one CPU: the default session has one inter-op thread, so (as in TF) they would wait forever")
def test_py_funcs_that_wait_for_each_other_run_concurrently_by_default():
    """TF runs independent ops on its inter-op threads, so a producer py_func and a consumer py_func of one run
    meet; run in turn they would wait forever. Default ConfigProto, no explicit thread count."""
    handoff = queue.Queue(1)

    def put():
        handoff.put(42)
        handoff.join()
        return np.int64(42)

    def get():
        value = handoff.get()
        handoff.task_done()
        return np.int64(value)
    x = tf.py_func(put, [], tf.int64)
    y = tf.py_func(get, [], tf.int64)
    results = []
    with tf.Session() as sess:
        worker = threading.Thread(target=lambda: results.append(sess.run([x, y])), daemon=True)
        worker.start()
        worker.join(timeout=20)
        if worker.is_alive():  # a daemon thread: left blocked, it cannot hold up the test process
            pytest.fail("the two py_funcs ran one after the other and waited for each other")
    assert results == [[42, 42]]
