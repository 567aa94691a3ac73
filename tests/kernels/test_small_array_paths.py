"""The per-call fast paths of the small-array kernels (Reshape, Squeeze, Split, SplitV, ConcatV2, Pack,
BatchMatMulV2 and the reductions): called directly, each must give the plain NumPy expression's value, dtype and
shape (small, empty, 0-d, negative-axis, non-contiguous inputs, several dtypes), return a fresh array where the op
is no view op, and raise the same errors as before the fast paths existed, also after a memoised call with another
shape (a memo must never hide a check)."""

import numpy as np
import pytest

import adplace as tf
from adplace.framework import registry
from adplace.framework.errors import InvalidArgumentError
from adplace.kernels import blas_threads
from adplace.kernels.cpu import host_int, host_ints
from adplace.kernels.registration import int_tuple
from adplace.runtime.kernel_context import KernelContext

BFLOAT16 = tf.bfloat16.as_numpy_dtype
DTYPES = [np.float32, np.float64, np.int32, np.int64, np.bool_, np.complex64, np.float16, BFLOAT16]


def kernel_for(tensor):
    """The CPU kernel a session would bind for the op of `tensor` (or of the first of a list)."""
    op = (tensor[0] if isinstance(tensor, list) else tensor).op
    return registry.kernel_factory(op.type, "CPU")(op, KernelContext(None))


def f32():
    return tf.placeholder(tf.float32)


def i32():
    return tf.placeholder(tf.int32)


def arr(shape, dtype=np.float32, start=1):
    """A distinct-valued array of `shape` and `dtype`."""
    size = int(np.prod(shape, dtype=np.int64))
    values = np.arange(start, start + size).reshape(shape)
    if np.dtype(dtype) == np.bool_:
        values = values % 2
    return np.asarray(values.astype(dtype))  # a 0-d array, not a NumPy scalar


def non_contiguous(shape, dtype=np.float32):
    """An array of `shape` that is a strided view (every other element of a larger array)."""
    full = arr(shape[:-1] + (2 * shape[-1],), dtype) if shape else arr((2,), dtype)
    view = full[..., ::2] if shape else full[1:].reshape(())  # 0-d: a view into the larger array
    assert not shape or not view.flags.c_contiguous or view.size <= 1
    return view


def same(got, want):
    """Equal values, dtype and shape (NaN-free inputs)."""
    got = np.asarray(got)
    assert got.dtype == np.asarray(want).dtype, (got.dtype, np.asarray(want).dtype)
    assert got.shape == np.shape(want), (got.shape, np.shape(want))
    np.testing.assert_array_equal(got.astype(np.float64) if got.dtype == BFLOAT16 else got,
                                  np.asarray(want).astype(np.float64) if got.dtype == BFLOAT16 else want)


def raises(exc_class, message, fn, *args):
    with pytest.raises(exc_class) as info:
        fn(*args)
    assert str(info.value) == message if exc_class is not InvalidArgumentError else info.value.message == message
    return info.value


# --- host_ints / host_int --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("value", [np.array(3, np.int32), np.array([], np.int32), np.array([2, -1], np.int64),
                                   np.array([[1, 2], [3, 4]], np.int32), [1, 2], 5, (4,), np.int64(7),
                                   np.array([1.5, 2.0]), np.array(True)])
def test_host_ints_is_int_tuple(value):
    got, want = host_ints(value), int_tuple(value)
    assert got == want and [type(v) for v in got] == [type(v) for v in want]
    if want:
        assert host_int(value) == want[0] and type(host_int(value)) is type(want[0])


def test_host_int_of_an_empty_value_raises_index_error_as_before():
    with pytest.raises(IndexError):
        host_int(np.array([], np.int32))


# --- Reshape -----------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("x_shape, shape", [((6,), [2, 3]), ((2, 3), [-1]), ((2, 3), [3, -1]), ((1,), []),
                                            ((), [1, 1]), ((0, 3), [3, 0]), ((0,), [-1, 2]), ((4, 1), [4])])
def test_reshape_matches_numpy(dtype, x_shape, shape):
    reshape = kernel_for(tf.reshape(f32(), i32()))
    for x in (arr(x_shape, dtype), non_contiguous(x_shape, dtype)):
        for dims in (np.array(shape, np.int32), np.array(shape, np.int64), list(shape)):
            same(reshape(x, dims), np.reshape(x, shape))
    if len(shape) == 1:  # a 0-d shape holding the one dimension
        same(reshape(arr(x_shape, dtype), np.array(shape[0], np.int32)), np.reshape(arr(x_shape, dtype), shape))


def test_reshape_of_python_scalars_and_lists():
    reshape = kernel_for(tf.reshape(f32(), i32()))
    same(reshape(np.float32(2), np.array([1], np.int32)), np.array([2], np.float32))
    same(reshape([1.0, 2.0], np.array([2, 1], np.int32)), np.array([[1.0], [2.0]]))


def test_reshape_errors_are_unchanged():
    reshape = kernel_for(tf.reshape(f32(), i32()))
    reshape(arr((6,)), np.array([2, 3], np.int32))
    raises(InvalidArgumentError, "Input to reshape is a tensor with 6 values, but the requested shape has 8",
           reshape, arr((6,)), np.array([4, 2], np.int32))
    raises(InvalidArgumentError, "Input to reshape is a tensor with 7 values, but the requested shape requires a "
           "multiple of 2", reshape, arr((7,)), np.array([-1, 2], np.int32))


# --- Squeeze -----------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("axes, shapes", [([1], [(5, 1), (3, 1, 2), (0, 1)]), ([-1], [(4, 1), (2, 3, 1)]),
                                          ([0, 2], [(1, 3, 1), (1, 0, 1, 2)]), (None, [(1, 3, 1), (1,), (), (2, 3)])])
def test_squeeze_matches_numpy_on_every_call(dtype, axes, shapes):
    squeeze = kernel_for(tf.squeeze(f32(), axis=axes))
    for _ in range(2):  # the second round runs on remembered output shapes
        for shape in shapes:
            for x in (arr(shape, dtype), non_contiguous(shape, dtype)):
                got = squeeze(x)
                same(got, np.squeeze(x, axis=None if axes is None else tuple(axes)))
                assert np.shares_memory(got, x) or x.size == 0  # a view, as np.squeeze's


def test_squeeze_checks_run_for_every_new_shape():
    squeeze = kernel_for(tf.squeeze(f32(), axis=[1]))
    squeeze(arr((2, 1)))
    raises(InvalidArgumentError, "Can not squeeze dim[1], expected a dimension of 1, got 3", squeeze, arr((2, 3)))
    squeeze(arr((2, 1)))
    raises(IndexError, "tuple index out of range", squeeze, arr((2,)))
    raises(IndexError, "tuple index out of range", kernel_for(tf.squeeze(f32(), axis=[-3])), arr((2, 1)))


# --- Split / SplitV ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, axis, n", [((100,), 0, 2), ((6, 4), 1, 2), ((6, 4), -1, 4), ((6, 4), -2, 3),
                                            ((0, 4), 0, 2), ((2, 3, 6), 2, 3), ((4,), 0, 1)])
def test_split_matches_numpy_on_every_call(dtype, shape, axis, n):
    split = kernel_for(tf.split(f32(), n, axis=0))
    for _ in range(2):
        for x in (arr(shape, dtype), non_contiguous(shape, dtype)):
            got = split(np.array(axis, np.int32), x)
            want = np.split(x, n, axis=axis)
            if n == 1:
                same(got, want[0])  # a one-output op's value is the piece itself
            else:
                assert isinstance(got, list) and len(got) == n
                for g, w in zip(got, want):
                    same(g, w)
                    assert g.size == 0 or np.shares_memory(g, x)


def test_split_checks_run_for_every_new_shape():
    split = kernel_for(tf.split(f32(), 2, axis=0))
    split(np.array(0, np.int32), arr((4,)))
    raises(InvalidArgumentError, "Number of ways to split should evenly divide the split dimension, but got "
           "split_dim 0 (size = 5) and num_split 2", split, np.array(0, np.int32), arr((5,)))
    raises(IndexError, "tuple index out of range", split, np.array(2, np.int32), arr((4,)))
    raises(IndexError, "tuple index out of range", split, np.array(0, np.int32), np.float32(1))
    same(split(np.array([0], np.int32), arr((4,)))[1], arr((4,))[2:])  # a 1-D axis, as int_tuple takes it


@pytest.mark.parametrize("shape, sizes, axis", [((5,), [2, 3], 0), ((5,), [-1, 3], 0), ((2, 5), [1, -1, 0], -1),
                                                ((4, 3), [4], 0), ((3, 0), [0, 0], 1)])
def test_split_v_matches_numpy_on_every_call(shape, sizes, axis):
    split_v = kernel_for(tf.split(f32(), [1, 1], axis=0))
    for _ in range(2):
        for dtype in (np.float32, np.int64, np.complex64):
            x = arr(shape, dtype)
            got = split_v(x, np.array(sizes, np.int32), np.array(axis, np.int32))
            known = [s for s in sizes if s != -1]
            resolved = [s if s != -1 else shape[axis] - sum(known) for s in sizes]
            want = np.split(x, np.cumsum(resolved)[:-1], axis=axis)
            for g, w in zip(got if len(sizes) > 1 else [got], want):
                same(g, w)


def test_split_v_error_is_unchanged():
    split_v = kernel_for(tf.split(f32(), [1, 1], axis=0))
    split_v(arr((4,)), np.array([2, 2], np.int32), np.array(0, np.int32))
    raises(InvalidArgumentError, "Determined shape must either match input shape along split_dim exactly if fully "
           "specified, or be less than the size of the input along split_dim if not fully specified. Got: 4 vs 5",
           split_v, arr((5,)), np.array([2, 2], np.int32), np.array(0, np.int32))


# --- ConcatV2 ----------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
def test_concat_matches_numpy(dtype):
    concat = kernel_for(tf.concat([f32(), f32()], axis=0))
    for a, b, axis in ((arr((2, 3), dtype), arr((4, 3), dtype), 0), (arr((2, 3), dtype), arr((2, 1), dtype), -1),
                       (arr((0, 3), dtype), arr((2, 3), dtype), 0), (non_contiguous((2, 3), dtype), arr((2, 3), dtype), 1)):
        got = concat(a, b, np.array(axis, np.int32))
        same(got, np.concatenate([a, b], axis=axis))
        assert not np.shares_memory(got, a) and not np.shares_memory(got, b)
    same(concat(arr((2,), dtype), arr((1,), dtype), np.array([0], np.int64)),
         np.concatenate([arr((2,), dtype), arr((1,), dtype)]))


def test_concat_errors_are_unchanged():
    concat = kernel_for(tf.concat([f32(), f32()], axis=0))
    raises(ValueError, "all the input array dimensions except for the concatenation axis must match exactly, but "
           "along dimension 1, the array at index 0 has size 2 and the array at index 1 has size 3",
           concat, arr((2, 2)), arr((2, 3)), np.array(0, np.int32))
    raises(np.exceptions.AxisError, "axis 1 is out of bounds for array of dimension 1",
           concat, arr((2,)), arr((3,)), np.array(1, np.int32))


# --- Pack --------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES + [object])
@pytest.mark.parametrize("shape, axis", [((50,), 1), ((50,), -1), ((50,), 0), ((), 0), ((), -1), ((2, 3), 1),
                                         ((2, 3), -3), ((2, 3), 2), ((0,), 1), ((4, 0), 0)])
def test_pack_matches_numpy_on_every_call(dtype, shape, axis):
    pack = kernel_for(tf.stack([f32(), f32(), f32()], axis=axis))
    for _ in range(3):  # the first call learns the layout, the next ones take the fast path
        for xs in ([arr(shape, dtype, start=1 + 100 * i) for i in range(3)],
                   [non_contiguous(shape, dtype) for _ in range(3)]):
            if dtype is object:
                xs = [x.astype(bytes).astype(object) if x.size else x for x in xs]
            got = pack(*xs)
            want = np.stack(xs, axis=axis)
            assert got.dtype == want.dtype and got.shape == want.shape and got.flags.c_contiguous
            assert got.tolist() == want.tolist()
            assert [type(v) for v in got.ravel().tolist()] == [type(v) for v in want.ravel().tolist()]
            assert not any(np.shares_memory(got, x) for x in xs)


def test_pack_promotes_and_accepts_what_np_stack_does():
    pack = kernel_for(tf.stack([f32(), f32()], axis=1))
    pack(arr((3,)), arr((3,)))
    for xs in ((arr((3,), np.float32), arr((3,), np.float64)), (arr((3,), np.int8), arr((3,), np.uint8)),
               (arr((3,)), [1.0, 2.0, 3.0])):
        same(pack(*xs), np.stack(xs, axis=1))
    pack0 = kernel_for(tf.stack([f32(), f32()], axis=0))
    pack0(arr(()), arr(()))
    for xs in ((np.float32(1), np.float32(2)), (arr(()), np.float64(2)), (arr((), np.int32), arr((), np.int64))):
        same(pack0(*xs), np.stack(xs))


def test_pack_rejects_shapes_numpy_would_broadcast_after_the_fast_path_is_set():
    pack = kernel_for(tf.stack([f32(), f32()], axis=1))
    pack(arr((3,)), arr((3,)))
    raises(ValueError, "all input arrays must have the same shape", pack, arr((3,)), arr((1,)))
    raises(ValueError, "all input arrays must have the same shape", pack, arr((3,)), np.float32(1))
    raises(np.exceptions.AxisError, "axis 2 is out of bounds for array of dimension 2",
           kernel_for(tf.stack([f32(), f32()], axis=2)), arr((2,)), arr((2,)))


def test_pack_of_a_different_count_than_learned():
    pack = kernel_for(tf.stack([f32(), f32(), f32()], axis=1))
    pack(arr((2,)), arr((2,)), arr((2,)))
    same(pack(arr((2,)), arr((2,), start=9)), np.stack([arr((2,)), arr((2,), start=9)], axis=1))


# --- BatchMatMulV2 -----------------------------------------------------------------------------------------------------
def _adjoint(t):
    t = np.swapaxes(t, -1, -2)
    return np.conj(t) if t.dtype.kind == "c" else t


def _bmm(adj_x, adj_y):
    x, y = f32(), f32()
    op = tf.matmul(x, y, adjoint_a=adj_x, adjoint_b=adj_y).op
    assert op.type == "BatchMatMulV2" and (op._attrs["adj_x"], op._attrs["adj_y"]) == (adj_x, adj_y)
    return kernel_for(op.outputs[0])


@pytest.mark.parametrize("adj_x", [False, True])
@pytest.mark.parametrize("adj_y", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128, np.float16, np.int32])
def test_batch_matmul_matches_numpy(adj_x, adj_y, dtype):
    bmm = _bmm(adj_x, adj_y)
    for x_shape, y_shape in (((50, 3), (3, 1)), ((50, 1), (1, 3)), ((3, 50), (50, 1)), ((0, 3), (3, 2)),
                             ((2, 0), (0, 3)), ((2, 4, 3), (3, 5)), ((1, 4, 3), (2, 3, 5)), ((4, 3), (2, 3, 5))):
        x_shape = x_shape[:-2] + x_shape[-2:][::-1] if adj_x else x_shape
        y_shape = y_shape[:-2] + y_shape[-2:][::-1] if adj_y else y_shape
        x, y = arr(x_shape, np.int32) % 7, arr(y_shape, np.int32, start=3) % 5
        if dtype in (np.complex64, np.complex128):
            x, y = x + 1j * (x % 3), y - 2j * (y % 2)
        x, y = x.astype(dtype), y.astype(dtype)
        for xs, ys in ((x, y), (np.asfortranarray(x), y[..., ::1]), (np.ascontiguousarray(x), np.asfortranarray(y))):
            want = np.matmul(_adjoint(xs) if adj_x else xs, _adjoint(ys) if adj_y else ys)
            got = bmm(xs, ys)
            assert got.dtype == want.dtype and got.shape == want.shape
            np.testing.assert_allclose(got, want, rtol=1e-3 if dtype == np.float16 else 1e-6)
            assert not np.shares_memory(got, xs) and not np.shares_memory(got, ys)


def test_batch_matmul_of_non_contiguous_matrices():
    bmm = _bmm(True, False)
    x, y = arr((6, 8))[::2, ::2], arr((6, 4))[::2, 1::2]
    np.testing.assert_allclose(bmm(x, y), x.T @ y, rtol=1e-6)


def test_batch_matmul_above_the_tiny_size_goes_through_the_blas_policy(monkeypatch):
    calls = []
    real = blas_threads.BlasKernel.__call__
    monkeypatch.setattr(blas_threads.BlasKernel, "__call__", lambda self, *a, **k: calls.append(a[1]) or
                        real(self, *a, **k))
    bmm = _bmm(False, True)
    x, y = arr((64, 64)) / 4096, arr((64, 64)) / 4096
    np.testing.assert_allclose(bmm(x, y), x @ y.T, rtol=1e-5)
    assert calls == [64 ** 3] and 64 ** 3 >= blas_threads.TINY_MNK
    bmm(arr((2, 3)), arr((4, 3)))
    assert calls == [64 ** 3]  # a tiny product skips the policy, as BlasKernel itself would


def test_batch_matmul_errors_are_unchanged():
    bmm = _bmm(False, False)
    raises(InvalidArgumentError, "In[0] and In[1] must have compatible batch dimensions and matrix sizes: [2,3] vs. "
           "[2,3]", bmm, arr((2, 3)), arr((2, 3)))
    raises(InvalidArgumentError, "In[0] and In[1] must have compatible batch dimensions and matrix sizes: [2,2,3] "
           "vs. [3,3,2]", bmm, arr((2, 2, 3)), arr((3, 3, 2)))
    raises(InvalidArgumentError, "In[0] and In[1] must have compatible batch dimensions and matrix sizes: [3,2] vs. "
           "[2,3]", _bmm(True, False), arr((3, 2)), arr((2, 3)))


# --- reductions ---------------------------------------------------------------------------------------------------------
REDUCTIONS = {"Sum": (tf.reduce_sum, np.sum), "Prod": (tf.reduce_prod, np.prod), "Max": (tf.reduce_max, np.max),
              "Min": (tf.reduce_min, np.min), "Mean": (tf.reduce_mean, np.mean)}


def _reducer(name, dtype, keepdims):
    make = REDUCTIONS[name][0]
    return kernel_for(make(tf.placeholder(tf.as_dtype(dtype)), axis=i32(), keepdims=keepdims))


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int8, np.int32, np.int64, np.float16, BFLOAT16])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reductions_match_numpy_on_every_call(name, dtype, keepdims):
    reduce, np_fn = _reducer(name, dtype, keepdims), REDUCTIONS[name][1]
    for _ in range(2):  # the second round runs on remembered axes
        for x_shape, axes in (((50,), []), ((50, 1), []), ((), []), ((0, 3), []), ((2, 3), [1]), ((2, 3), [-1]),
                              ((2, 3), [0, -1]), ((2, 3, 4), [-3, 2]), ((2, 1), [0])):
            for x in (np.asarray(arr(x_shape, dtype) % 5), np.asarray(non_contiguous(x_shape, dtype) % 5)):
                if name in ("Max", "Min", "Mean") and x.size == 0 and axes:
                    continue
                got = reduce(x, np.array(axes, np.int32))
                wide = x.astype(np.float64) if dtype in (BFLOAT16, np.float16) else x
                want = np_fn(wide, axis=tuple(a % max(x.ndim, 1) for a in axes) if x.ndim else None,
                             keepdims=keepdims) if axes or name == "Mean" else wide
                if name == "Mean" and np.dtype(dtype).kind in "iu":
                    want = np.trunc(want)
                got = np.asarray(got)
                assert got.dtype == np.dtype(dtype) and got.shape == np.shape(want), (got.dtype, got.shape)
                np.testing.assert_allclose(got.astype(np.float64), np.asarray(want, np.float64), rtol=1e-2)


@pytest.mark.parametrize("name", ["Sum", "Prod", "Max", "Min"])
def test_reducing_no_axis_gives_a_fresh_copy_of_the_input(name):
    reduce = _reducer(name, np.int64, False)
    x = np.array([2 ** 62 + 1, -3, 7], np.int64)  # exact: no float round trip
    for axes in (np.array([], np.int32), np.zeros(0, np.int64), []):
        got = reduce(x, axes)
        assert got.dtype == np.int64 and got.tolist() == x.tolist() and not np.shares_memory(got, x)
        got[0] = 0
        assert x[0] == 2 ** 62 + 1


def test_mean_of_no_axis_keeps_its_rounding():
    reduce = _reducer("Mean", np.int64, False)
    x = np.array([2 ** 62 + 1], np.int64)
    assert reduce(x, np.array([], np.int32)).tolist() == np.trunc(np.mean(x, axis=())).astype(np.int64).tolist()


def test_reduction_errors_are_unchanged_and_checked_per_rank():
    reduce = _reducer("Sum", np.float32, False)
    assert reduce(arr((2, 3, 4)), np.array([2], np.int32)).shape == (2, 3)  # remembers ([2], rank 3)
    raises(InvalidArgumentError, "Invalid reduction dimension (2 for input with 2 dimension(s)",
           reduce, arr((2, 3)), np.array([2], np.int32))
    raises(InvalidArgumentError, "Invalid reduction dimension (-3 for input with 2 dimension(s)",
           reduce, arr((2, 3)), np.array([-3], np.int32))
    raises(InvalidArgumentError, "Axes contains duplicate dimension: 1", reduce, arr((2, 3)), np.array([1, -1]))
    raises(InvalidArgumentError, "Invalid reduction dimension (1 for input with 0 dimension(s)",
           reduce, np.float32(2), np.array([1], np.int32))
    raises(InvalidArgumentError, "Invalid reduction dimension (-1 for input with 0 dimension(s)",
           reduce, arr(()), np.array([-1], np.int32))
    raises(InvalidArgumentError, "Invalid reduction dimension (2 for input with 2 dimension(s)",
           reduce, arr((2, 3)), np.array([2], np.int32))  # still checked on the second failure


def test_tower_fit_shaped_gradient_chain_matches_numpy():
    """The small-array steps of a polynomial fit's gradient, run through a session twice (plans tier up)."""
    x, y = tf.placeholder(tf.float32, [None]), tf.placeholder(tf.float32, [None])
    w = tf.Variable(np.array([[0.5], [-1.0], [2.0]], np.float32))
    xs, ys = tf.split(x, 2), tf.split(y, 2)
    losses = []
    for xi, yi in zip(xs, ys):
        features = tf.stack([tf.square(xi), xi, tf.ones_like(xi)], axis=1)
        losses.append(tf.square(tf.squeeze(tf.matmul(features, w), axis=[1]) - yi))
    loss = tf.reduce_mean(tf.concat(losses, 0))
    grad, = tf.gradients(loss, [w])
    xv, yv = np.linspace(-1, 1, 100).astype(np.float32), np.cos(np.linspace(0, 3, 100)).astype(np.float32)
    feats = np.stack([xv ** 2, xv, np.ones_like(xv)], axis=1).astype(np.float64)
    w0 = np.array([[0.5], [-1.0], [2.0]])
    want = feats.T @ (2 * (feats @ w0 - yv[:, None].astype(np.float64))) / 100
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(6):
            got = sess.run(grad, {x: xv, y: yv})
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


# --- AddN ---------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("count", [2, 3, 4])
@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.complex64, BFLOAT16])
def test_add_n_matches_numpy(count, dtype):
    add_n = kernel_for(tf.add_n([f32() for _ in range(count)]))
    for shape in ((3, 1), (), (0, 2)):
        xs = [arr(shape, dtype, start=1 + 10 * i) for i in range(count)]
        got = add_n(*xs)
        want = xs[0].copy()
        for x in xs[1:]:
            want = np.add(want, x)
        same(got, want)
        assert isinstance(got, np.generic) or not any(np.shares_memory(got, x) for x in xs)
