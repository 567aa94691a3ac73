"""Tests for the sparse training ops of adplace.ops.training_ops (SparseApplyMomentum, SparseApplyAdagrad,
SparseApplyRMSProp, SparseApplyCenteredRMSProp; kernels in adplace.kernels.scatter). The reference is a NumPy loop
over `indices` that updates one row per index in order, as TF's CPU kernels do, so a repeated index is updated
twice, the second time from the first update's result."""
import numpy as np
import pytest

import adplace as tf
from adplace.ops import training_ops


def _momentum(var, accum, lr, g, momentum, use_nesterov=False):
    accum[:] = accum * momentum + g
    var -= (g * lr + accum * momentum * lr) if use_nesterov else accum * lr


def _adagrad(var, accum, lr, g, update_slots=True):
    if update_slots:
        accum += g * g
    var -= lr * g / np.sqrt(accum)


def _rms_prop(var, ms, mom, lr, rho, momentum, epsilon, g):
    ms[:] = ms * rho + g * g * (1 - rho)
    mom[:] = mom * momentum + lr * g / np.sqrt(ms + epsilon)
    var -= mom


def _centered_rms_prop(var, mg, ms, mom, lr, rho, momentum, epsilon, g):
    ms[:] = ms * rho + g * g * (1 - rho)
    mg[:] = mg * rho + g * (1 - rho)
    mom[:] = mom * momentum + lr * g / np.sqrt(ms - mg * mg + epsilon)
    var -= mom


def _numpy_rows(update, slots, grad, indices, *hyper, **attrs):
    """The sparse update by hand: `update` on row views of copies of `slots`, one index after the other."""
    out = [s.copy() for s in slots]
    for i, row in enumerate(indices):
        update(*[s[row:row + 1] for s in out], *hyper, grad[i:i + 1], **attrs)  # slices: views written in place
    return out


CASES = {  # op -> (constructor, number of variables, hyper-parameters before grad, those after indices)
    "momentum": (training_ops.sparse_apply_momentum, 2, (0.1,), (0.9,)),
    "adagrad": (training_ops.sparse_apply_adagrad, 2, (0.1,), ()),
    "rms_prop": (training_ops.sparse_apply_rms_prop, 3, (0.1, 0.9, 0.5, 1e-3), ()),
    "centered_rms_prop": (training_ops.sparse_apply_centered_rms_prop, 4, (0.1, 0.9, 0.5, 4.0), ()),
}
NUMPY = {"momentum": lambda var, accum, lr, momentum, g, **kw: _momentum(var, accum, lr, g, momentum, **kw),
         "adagrad": _adagrad, "rms_prop": _rms_prop, "centered_rms_prop": _centered_rms_prop}


def _build(name, dtype, var_shape, indices, rng, **attrs):
    make, n_slots, before, after = CASES[name]
    slots = [rng.uniform(0.5, 1.5, size=var_shape).astype(dtype) for _ in range(n_slots)]
    grad = rng.standard_normal((len(indices),) + var_shape[1:]).astype(dtype)
    variables = [tf.Variable(s) for s in slots]
    op = make(*variables, *before, grad, indices, *after, **attrs)
    return op, variables, slots, grad, before + after


def _run(op, variables):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        out = sess.run(op)
        return out, sess.run(variables)


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("dtype, tolerance", [(np.float32, 1e-5), (np.float64, 1e-12)])
@pytest.mark.parametrize("var_shape, indices", [((5,), [3, 0, 3]), ((4, 3), [1, 1, 1, 2]), ((3, 2, 2), [2, 0])])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_sparse_apply_updates_rows_in_index_order_as_numpy(name, dtype, tolerance, var_shape, indices, index_dtype):
    rng = np.random.default_rng(len(indices))
    indices = np.array(indices, index_dtype)
    op, variables, slots, grad, hyper = _build(name, dtype, var_shape, indices, rng)
    out, values = _run(op, variables)
    expected = _numpy_rows(NUMPY[name], slots, grad, indices, *hyper)
    for got, want in zip(values, expected):
        assert np.isfinite(want).all()
        np.testing.assert_allclose(got, want, rtol=tolerance, atol=tolerance)
    np.testing.assert_array_equal(out, values[0])  # the op outputs var's new value
    assert op.dtype == variables[0].dtype and op.op.get_attr("Tindices") == tf.as_dtype(index_dtype)


def test_sparse_apply_attrs_nesterov_and_update_slots():
    rng = np.random.default_rng(3)
    indices = np.array([2, 0, 2])
    for name, attrs in (("momentum", {"use_nesterov": True}), ("adagrad", {"update_slots": False})):
        op, variables, slots, grad, hyper = _build(name, np.float64, (4, 2), indices, rng, **attrs)
        _, values = _run(op, variables)
        expected = _numpy_rows(NUMPY[name], slots, grad, indices, *hyper, **attrs)
        for got, want in zip(values, expected):
            np.testing.assert_allclose(got, want, rtol=1e-12)
        assert all(op.op.get_attr(k) is v for k, v in attrs.items())
    assert op.op.get_attr("use_locking") is False


def test_sparse_apply_adagrad_in_bfloat16_stores_bfloat16():
    bf16 = tf.bfloat16.as_numpy_dtype
    var, accum = tf.Variable(np.ones(3, bf16)), tf.Variable(np.ones(3, bf16))
    out, (v, a) = _run(training_ops.sparse_apply_adagrad(var, accum, tf.constant(1.0, tf.bfloat16),
                                                         np.array([3.0, 1.0], bf16), [0, 0]), [var, accum])
    assert v.dtype == bf16 and a.dtype == bf16
    np.testing.assert_allclose(a.astype(np.float32), [11.0, 1.0, 1.0])  # 1 + 9, then + 1
    np.testing.assert_allclose(v.astype(np.float32), [1.0 - 3 / np.sqrt(10) - 1 / np.sqrt(11), 1.0, 1.0], rtol=1e-2)


def test_sparse_apply_index_out_of_range_is_an_error_and_changes_no_variable():
    var, accum = tf.Variable([1.0, 2.0, 3.0]), tf.Variable([0.1, 0.1, 0.1])
    op = training_ops.sparse_apply_adagrad(var, accum, 0.5, [1.0, 1.0], [0, 7])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        with pytest.raises(tf.errors.InvalidArgumentError, match="Index 7 at offset 1 in indices is out of range"):
            sess.run(op)
        with pytest.raises(tf.errors.InvalidArgumentError, match="Index -1 at offset 0 in indices is out of range"):
            sess.run(training_ops.sparse_apply_momentum(var, accum, 0.5, [1.0], [-1], 0.9))
        np.testing.assert_array_equal(sess.run(var), np.float32([1.0, 2.0, 3.0]))
        np.testing.assert_array_equal(sess.run(accum), np.float32([0.1, 0.1, 0.1]))


def test_sparse_apply_shape_errors_at_graph_construction():
    var, accum = tf.Variable(np.zeros([4, 3], np.float32)), tf.Variable(np.zeros([4, 3], np.float32))
    with pytest.raises(ValueError, match=r"Dimension 1 in both shapes must be equal, but are 3 and 2.*"
                                         r"'SparseApplyAdagrad' \(op: 'SparseApplyAdagrad'\) with input shapes: "
                                         r"\[4,3\], \[4,3\], \[\], \[2,2\], \[2\]\."):
        training_ops.sparse_apply_adagrad(var, accum, 0.1, np.zeros([2, 2], np.float32), [0, 1])
    with pytest.raises(ValueError, match="Dimensions must be equal, but are 3 and 2"):
        training_ops.sparse_apply_adagrad(var, accum, 0.1, np.zeros([2, 3], np.float32), [0, 1, 2])
    with pytest.raises(ValueError, match="Shape must be rank 1 but is rank 2"):
        training_ops.sparse_apply_momentum(var, accum, 0.1, np.zeros([2, 3], np.float32), [[0, 1]], 0.9)
    with pytest.raises(ValueError, match="Shape must be rank 0 but is rank 1"):
        training_ops.sparse_apply_momentum(var, accum, [0.1], np.zeros([1, 3], np.float32), [0], 0.9)


def test_sparse_apply_dtype_errors_at_graph_construction():
    var, accum = tf.Variable(np.zeros([4], np.float32)), tf.Variable(np.zeros([4], np.float32))
    with pytest.raises(TypeError, match="parameter 'Tindices' has DataType float32 not in list"):
        training_ops.sparse_apply_adagrad(var, accum, 0.1, [1.0], tf.constant([0.0]))
    with pytest.raises(TypeError, match="Input 'grad' of 'SparseApplyAdagrad' Op has type float64"):
        training_ops.sparse_apply_adagrad(var, accum, 0.1, tf.constant([1.0], tf.float64), [0])
    with pytest.raises(TypeError, match="'SparseApplyAdagrad' Op requires that input 'accum' be a mutable tensor"):
        training_ops.sparse_apply_adagrad(var, accum.value(), 0.1, [1.0], [0])


def test_sparse_apply_run_time_checks_of_unknown_shapes():
    var, accum = tf.Variable(np.zeros([4, 3], np.float32)), tf.Variable(np.ones([4, 3], np.float32))
    lr, grad, indices = tf.placeholder(tf.float32), tf.placeholder(tf.float32), tf.placeholder(tf.int32)
    op = training_ops.sparse_apply_adagrad(var, accum, lr, grad, indices)
    cases = [(0.1, np.ones([2, 3]), [0, 1, 2], r"grad must be the same size as indices in the first dimension\."),
             (0.1, np.ones([2, 2]), [0, 1], "var and grad must match in dimension 1"),
             (0.1, np.ones([1, 1, 3]), [[0]], "indices must be one-dimensional"),
             ([0.1, 0.2], np.ones([1, 3]), [0], r"lr is not a scalar: \[2\]")]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for lr_value, grad_value, indices_value, message in cases:
            with pytest.raises(tf.errors.InvalidArgumentError, match=message):
                sess.run(op, {lr: lr_value, grad: grad_value, indices: indices_value})
        np.testing.assert_array_equal(sess.run(accum), np.ones([4, 3]))


def test_sparse_apply_of_an_uninitialized_slot_is_a_failed_precondition():
    var, accum = tf.Variable([1.0]), tf.Variable([1.0], name="accum")
    op = training_ops.sparse_apply_adagrad(var, accum, 0.1, [1.0], [0])
    with tf.Session() as sess:
        sess.run(var.initializer)
        with pytest.raises(tf.errors.FailedPreconditionError, match="uninitialized variables: accum"):
            sess.run(op)


def test_sparse_apply_ops_are_not_differentiable():
    var, accum = tf.Variable([1.0, 2.0]), tf.Variable([1.0, 1.0])
    grad = tf.constant([1.0])
    op = training_ops.sparse_apply_momentum(var, accum, 0.1, grad, [1], 0.9, use_locking=True)
    assert op.op.get_attr("use_locking") is True
    assert tf.gradients(tf.reduce_sum(op), grad) == [None]
