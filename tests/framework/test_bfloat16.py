"""tf.bfloat16: the DType, value conversion, and CPU kernels computed in bfloat16 against float32 references."""
import pickle
import subprocess
import sys

import numpy as np
import pytest

import adplace as tf
from adplace.framework import dtypes
from adplace.framework.registry import has_kernel

ml_dtypes = pytest.importorskip("ml_dtypes", reason="bfloat16 values need the optional ml-dtypes package")

# bfloat16 keeps 8 significant bits: one rounding is a relative error of at most 2**-8.
RTOL, ATOL = 2e-2, 2e-2


def run(*fetches, feed_dict=None):
    with tf.Session() as sess:
        return sess.run(list(fetches), feed_dict)


def test_dtype_properties():
    bf = tf.bfloat16
    assert bf.name == "bfloat16" and bf.as_datatype_enum == 14 and bf._as_ref.as_datatype_enum == 114
    assert bf.is_floating and not (bf.is_integer or bf.is_complex or bf.is_bool or bf.is_unsigned)
    assert bf.size == 2 and bf.as_numpy_dtype is ml_dtypes.bfloat16
    assert float(bf.max) == pytest.approx(3.38953e38, rel=1e-5) and float(bf.min) == -float(bf.max)
    assert repr(bf) == "tf.bfloat16" and str(bf) == "<dtype: 'bfloat16'>"
    assert bf in dtypes.FLOATING and bf.base_dtype is bf and bf._as_ref.base_dtype is bf
    assert pickle.loads(pickle.dumps(bf)) is bf


def test_as_dtype_accepts_names_and_numpy_types():
    for spelling in ("bfloat16", ml_dtypes.bfloat16, np.dtype(ml_dtypes.bfloat16)):
        assert tf.as_dtype(spelling) is tf.bfloat16
    assert tf.bfloat16 == "bfloat16" and tf.bfloat16 != tf.float16
    assert tf.as_dtype(np.zeros(2, ml_dtypes.bfloat16).dtype) is tf.bfloat16


def test_constants_placeholders_and_feeds_hold_bfloat16():
    c = tf.constant([1.0, 2.5, 1.0 / 3.0], dtype=tf.bfloat16)
    p = tf.placeholder(tf.bfloat16, [None])
    numpy_value = tf.constant(np.array([0.1], ml_dtypes.bfloat16))
    got_c, got_p, got_np = run(c, p * 2, numpy_value, feed_dict={p: [1.5, 3.0]})
    assert got_c.dtype == ml_dtypes.bfloat16 and numpy_value.dtype is tf.bfloat16
    np.testing.assert_array_equal(got_c.astype(np.float32), [1.0, 2.5, 0.333984375])  # 1/3 rounded to 8 bits
    np.testing.assert_array_equal(got_p.astype(np.float32), [3.0, 6.0])
    assert got_np.dtype == ml_dtypes.bfloat16


def _compare(build, *values, rtol=RTOL, atol=ATOL):
    """Run build() on bfloat16 and float32 constants: the output keeps bfloat16 and matches the float32 result."""
    low = build(*(tf.constant(v, dtype=tf.bfloat16) for v in values))
    high = build(*(tf.constant(v, dtype=tf.float32) for v in values))
    assert low.dtype is tf.bfloat16
    got, want = run(low, high)
    assert got.dtype == ml_dtypes.bfloat16
    np.testing.assert_allclose(got.astype(np.float32), want, rtol=rtol, atol=atol)
    return got


RNG = np.random.RandomState(7)
X = RNG.randn(4, 5).astype(np.float32)
Y = RNG.randn(5, 3).astype(np.float32)


@pytest.mark.parametrize("name, build, values", [
    ("add", lambda a, b: a + b, (X, X[::-1])),
    ("scalar multiply", lambda a: a * 0.5 - 1.0, (X,)),  # a Python float must not promote the result to float32
    ("matmul", tf.matmul, (X, Y)),
    ("softmax", tf.nn.softmax, (X,)),
    ("log_softmax", tf.nn.log_softmax, (X,)),
    ("relu", tf.nn.relu, (X,)),
    ("relu6", tf.nn.relu6, (X * 4,)),
    ("sigmoid", tf.sigmoid, (X,)),
    ("bias_add", tf.nn.bias_add, (X, Y[:, 0])),
    ("reduce_sum", lambda a: tf.reduce_sum(a, 1), (X,)),
    ("reduce_mean", tf.reduce_mean, (X,)),
    ("reduce_max", lambda a: tf.reduce_max(a, 0), (X,)),
    ("einsum", lambda a, b: tf.einsum("ij,jk->ik", a, b), (X, Y)),
])
def test_ops_compute_in_bfloat16(name, build, values):
    _compare(build, *values)


def test_long_sums_accumulate_in_float32():
    """A bfloat16 running sum stops growing once the total dwarfs each term; the kernel accumulates in float32."""
    ones = np.ones(4096, np.float32)
    total, mean = run(tf.reduce_sum(tf.constant(ones, tf.bfloat16)), tf.reduce_mean(tf.constant(ones, tf.bfloat16)))
    assert float(total) == 4096.0 and float(mean) == 1.0


def test_conv2d_and_pooling():
    images = RNG.randn(2, 6, 6, 3).astype(np.float32)
    filters = RNG.randn(3, 3, 3, 4).astype(np.float32)
    _compare(lambda x, f: tf.nn.conv2d(x, f, [1, 1, 1, 1], "SAME"), images, filters, rtol=3e-2, atol=5e-2)
    _compare(lambda x: tf.nn.max_pool(x, [1, 2, 2, 1], [1, 2, 2, 1], "VALID"), images)
    _compare(lambda x: tf.nn.avg_pool(x, [1, 3, 3, 1], [1, 1, 1, 1], "SAME"), images)


def test_cast_argmax_and_top_k():
    x = tf.constant(X, tf.bfloat16)
    as_float, as_bf16, argmax, top = run(tf.cast(x, tf.float32), tf.cast(tf.constant(X), tf.bfloat16),
                                         tf.argmax(x, 1), tf.nn.top_k(x, 2))
    assert as_float.dtype == np.float32 and as_bf16.dtype == ml_dtypes.bfloat16
    np.testing.assert_allclose(as_float, X, rtol=2 ** -8)
    np.testing.assert_array_equal(argmax, np.argmax(X.astype(ml_dtypes.bfloat16).astype(np.float32), 1))
    np.testing.assert_array_equal(top.values.astype(np.float32), -np.sort(-as_float, 1)[:, :2])


def test_softmax_cross_entropy():
    labels = np.eye(5, dtype=np.float32)[[0, 2, 4, 1]]
    _compare(lambda x, y: tf.nn.softmax_cross_entropy_with_logits_v2(labels=y, logits=x), X, labels)
    _compare(lambda x: tf.nn.sparse_softmax_cross_entropy_with_logits(labels=[0, 2, 4, 1], logits=x), X)


def test_gradients_are_bfloat16_and_match_float32():
    def grads(dtype):
        x, w = tf.constant(X, dtype), tf.constant(Y, dtype)
        loss = tf.reduce_sum(tf.nn.relu(tf.matmul(x, w)) + tf.sqrt(tf.square(tf.matmul(x, w)) + 1.0))
        return tf.gradients(loss, [x, w])

    low, high = grads(tf.bfloat16), grads(tf.float32)
    assert all(g.dtype is tf.bfloat16 for g in low)
    for got, want in zip(run(*low), run(*high)):
        assert got.dtype == ml_dtypes.bfloat16
        np.testing.assert_allclose(got.astype(np.float32), want, rtol=3e-2, atol=5e-2)


def test_variables_train_in_bfloat16():
    v = tf.Variable(tf.constant([1.0, -2.0], tf.bfloat16))
    step = tf.train.GradientDescentOptimizer(0.5).minimize(tf.reduce_sum(tf.square(v)))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(step)
        value = sess.run(v)
    assert value.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(value.astype(np.float32), [0.0, 0.0])  # v - 0.5 * 2v


def test_no_gpu_kernels_for_bfloat16():
    """CuPy has no bfloat16, so bfloat16 ops have CPU kernels only (soft placement moves them to the CPU)."""
    assert has_kernel("MatMul", "CPU", tf.bfloat16) and not has_kernel("MatMul", "GPU", tf.bfloat16)
    assert has_kernel("MatMul", "GPU", tf.float16)


def test_without_ml_dtypes_graphs_build_and_conversion_names_the_package():
    """In a process where ml_dtypes cannot be imported, tf.bfloat16 builds graphs; values raise an ImportError."""
    script = (
        "import sys; sys.modules['ml_dtypes'] = None\n"
        "import adplace as tf\n"
        "p = tf.placeholder(tf.bfloat16, [2]); y = tf.nn.relu(p) + tf.nn.softmax(p)\n"
        "assert y.dtype is tf.bfloat16 and tf.bfloat16.is_floating and tf.bfloat16.size == 2\n"
        "try:\n"
        "    tf.constant([1.0], tf.bfloat16)\n"
        "except ImportError as e:\n"
        "    print(e)\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert "pip install ml-dtypes" in out and "adplace[bfloat16]" in out


def test_the_gradient_checker_takes_bfloat16_and_keeps_its_jacobians_in_float32():
    x = tf.placeholder(tf.bfloat16, [2, 3])
    y = tf.reduce_sum(x * x, axis=1)
    with tf.Session():
        theoretical, numerical = tf.test.compute_gradient(x, [2, 3], y, [2], delta=0.25,
                                                          x_init_value=np.array([[1, 2, 3], [4, 5, 6]], np.float32))
    assert theoretical.dtype == numerical.dtype == np.float32
    expected = np.zeros((6, 2), np.float32)
    expected[np.arange(6), [0, 0, 0, 1, 1, 1]] = 2 * np.arange(1, 7)
    np.testing.assert_allclose(theoretical, expected)
    np.testing.assert_allclose(numerical, expected, rtol=0.05)
