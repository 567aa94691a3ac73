"""Maximum, Minimum and Relu against a 0-d operand (kernels/math.py `_min_max`, `filled`): NumPy's SIMD loop needs
two arrays, so the kernels compare with a kept read-only array of the scalar's value. They must give the plain
ufunc's bits (NaN, infinities and signed zeros included, either operand order, every size around the threshold,
float and integer types), keep a bounded number of values, never hand out a writeable array, and stay exact when
threads ask for many values at once."""
import functools

import numpy as np
import pytest

import adplace as tf
from adplace.framework import registry
from adplace.kernels import math as math_kernels
from adplace.runtime.kernel_context import KernelContext
from thread_support import run_threads

SPECIAL = [0.0, -0.0, np.nan, np.inf, -np.inf, 1.0, -1.0, 2.5]
FLOATS = [np.float16, np.float32, np.float64]
SIZES = [math_kernels._FILLED_MIN - 1, math_kernels._FILLED_MIN, 65536 + 3]


def _kernel(fn, dtype):
    x = tf.placeholder(tf.as_dtype(dtype))
    op = (fn(x, x) if fn is not tf.nn.relu else fn(x)).op
    return registry.kernel_factory(op.type, "CPU")(op, KernelContext(None))


def _values(dtype, size, seed=0):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        return rng.choice(np.array(SPECIAL, dtype), size)
    return rng.integers(-5, 6, size).astype(dtype)


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("dtype", FLOATS + [np.int32, np.int64])
@pytest.mark.parametrize("fn", [tf.maximum, tf.minimum], ids=["maximum", "minimum"])
def test_a_scalar_operand_gives_the_ufuncs_bits_in_either_order(fn, dtype, size):
    kernel = _kernel(fn, dtype)
    ufunc = np.maximum if fn is tf.maximum else np.minimum
    x = _values(dtype, size)
    scalars = SPECIAL if np.dtype(dtype).kind == "f" else [0, -3, 7]
    for value in scalars:
        c = np.array(value, dtype)
        for got, want in ((kernel(x, c), ufunc(x, c)), (kernel(c, x), ufunc(c, x)),
                          (kernel(x.reshape(1, -1), c), ufunc(x.reshape(1, -1), c))):
            assert got.dtype == want.dtype and got.shape == want.shape
            assert got.tobytes() == want.tobytes()
            assert got.flags.writeable


@pytest.mark.parametrize("dtype", FLOATS)
def test_relu_gives_the_ufuncs_bits(dtype):
    kernel = _kernel(tf.nn.relu, dtype)
    for size in SIZES:
        x = _values(dtype, size, seed=size).reshape(-1, 1)
        got, want = kernel(x), np.maximum(x, 0)
        assert got.tobytes() == want.tobytes() and got.shape == want.shape and got.flags.writeable


def test_kept_values_are_bounded_read_only_and_grow_to_the_largest_size():
    for value in range(3 * math_kernels._FILLED_KEPT):
        view = math_kernels.filled(np.array(value, np.float32), (4, 1024))
        assert not view.flags.writeable and float(view[3, 1023]) == value
        assert len(math_kernels._filled) <= math_kernels._FILLED_KEPT
    small = math_kernels.filled(np.array(-7.0), (2048,))
    large = math_kernels.filled(np.array(-7.0), (8192,))
    again = math_kernels.filled(np.array(-7.0), (2048,))
    assert again.base is large.base and small.base is not large.base  # the kept array grew once
    with pytest.raises(ValueError):
        large[0] = 1.0
    for rows in range(1, 2 * math_kernels._FILLED_VIEWS):
        assert math_kernels.filled(np.array(-7.0), (rows, 4)).shape == (rows, 4)
        assert len(math_kernels._filled_views) <= math_kernels._FILLED_VIEWS


def test_threads_asking_for_many_values_get_exact_results():
    kernel = _kernel(tf.maximum, np.float32)
    x = np.linspace(-50, 50, 8192, dtype=np.float32)

    def worker(offset):
        for k in range(200):
            c = np.array((offset * 7 + k) % 40 - 20, np.float32)
            assert kernel(x, c).tobytes() == np.maximum(x, c).tobytes(), (offset, k)
    run_threads(*(functools.partial(worker, i) for i in range(6)))


def test_clip_by_value_in_a_session_matches_numpy():
    x = tf.placeholder(tf.float32, [64, 128])
    clipped = tf.clip_by_value(tf.sin(x) * 3.0, -1.0, 1.5)
    value = np.linspace(-4, 4, 64 * 128, dtype=np.float32).reshape(64, 128)
    with tf.Session() as sess:
        for _ in range(3):
            got = sess.run(clipped, {x: value})
    want = np.minimum(np.maximum(np.sin(value) * np.float32(3.0), np.float32(-1.0)), np.float32(1.5))
    np.testing.assert_array_equal(got, want)
