"""tf.train.AdadeltaOptimizer and its ops ApplyAdadelta / SparseApplyAdadelta: TF's update rule (a NumPy reference of
training_ops.cc's kernels), TF's slots and their names, the same values as real TensorFlow's optimizer after several
steps (run in a subprocess: tf_adadelta_peer.py), checkpoints TF restores, locked updates from many threads, and TF's
errors for bad inputs."""
import importlib.util
import json
import threading
from pathlib import Path

import numpy as np
import pytest

import adplace as tf
from adplace.ops import training_ops
from tf_peer import needs_tf, run_peer

PEER = Path(__file__).with_name("tf_adadelta_peer.py")
_spec = importlib.util.spec_from_file_location("tf_adadelta_peer", PEER)
peer = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(peer)  # only its constants and build(): it imports TensorFlow inside main() alone


def _adadelta_rows(var, accum, accum_update, lr, rho, epsilon, grad, indices=None):
    """TF's ApplyAdadelta on copies (on rows `indices`, one index after another, when given); returns the copies."""
    var, accum, accum_update = (np.array(a, dtype=np.float64) for a in (var, accum, accum_update))
    rows = [slice(None)] if indices is None else [slice(i, i + 1) for i in indices]
    grads = [grad] if indices is None else [grad[k:k + 1] for k in range(len(indices))]
    for at, g in zip(rows, grads):
        accum[at] = rho * accum[at] + (1 - rho) * g * g
        update = np.sqrt(accum_update[at] + epsilon) / np.sqrt(accum[at] + epsilon) * g
        accum_update[at] = rho * accum_update[at] + (1 - rho) * update * update
        var[at] -= lr * update
    return var, accum, accum_update


def _f32(*hyper) -> list:
    """Hyper-parameters as the optimizer feeds them: float32 constants cast to the variable's dtype."""
    return [float(np.float32(h)) for h in hyper]


def _run(fetch, *variables, steps: int = 1):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(steps):
            sess.run(fetch)
        return sess.run(list(variables))


def test_defaults_and_slots_follow_tf():
    optimizer = tf.train.AdadeltaOptimizer()
    assert (optimizer._lr, optimizer._rho, optimizer._epsilon, optimizer.get_name()) == (0.001, 0.95, 1e-08,
                                                                                          "Adadelta")
    w = tf.Variable([[1.0, 2.0]], name="layer/w")
    optimizer.minimize(tf.reduce_sum(w * w))
    assert sorted(optimizer.get_slot_names()) == ["accum", "accum_update"]
    accum, accum_update = optimizer.get_slot(w, "accum"), optimizer.get_slot(w, "accum_update")
    assert (accum.op.name, accum_update.op.name) == ("layer/w/Adadelta", "layer/w/Adadelta_1")
    assert accum.get_shape() == w.get_shape() and accum.dtype == w.dtype
    assert all(op.colocation_groups() == w.op.colocation_groups() for op in (accum.op, accum_update.op))
    np.testing.assert_array_equal(_run([], accum, accum_update)[0], [[0.0, 0.0]])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dense_steps_follow_tfs_rule(dtype):
    start, x = np.array([[0.5, -1.0], [2.0, 0.25]], dtype), np.array([[1.0, 2.0], [-0.5, 1.5]], dtype)
    w = tf.Variable(start, name="w")
    optimizer = tf.train.AdadeltaOptimizer(0.5, rho=0.8, epsilon=1e-4)
    train = optimizer.minimize(tf.reduce_sum(tf.square(tf.matmul(x, w) - 1.0)))
    assert "ApplyAdadelta" in {op.type for op in tf.get_default_graph().get_operations()}
    expected = (start.astype(np.float64), np.zeros((2, 2)), np.zeros((2, 2)))
    got = []
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(4):
            grad = 2 * x.T @ (x @ expected[0] - 1.0)
            expected = _adadelta_rows(*expected, *_f32(0.5, 0.8, 1e-4), grad)
            sess.run(train)
        got = sess.run([w, optimizer.get_slot(w, "accum"), optimizer.get_slot(w, "accum_update")])
    assert got[0].dtype == dtype
    for value, want in zip(got, expected):
        np.testing.assert_allclose(value, want, rtol=1e-5 if dtype == np.float32 else 1e-12)


def test_gathered_rows_update_only_those_rows_with_sparse_apply_adadelta():
    start = np.arange(10.0).reshape(5, 2) / 3 + 0.5
    table = tf.Variable(start, name="table")
    optimizer = tf.train.AdadeltaOptimizer(1.0, rho=0.9, epsilon=1e-6)
    weights = np.array([[1.0, -2.0], [0.5, 3.0], [2.0, 1.0]])
    grads_and_vars = optimizer.compute_gradients(tf.reduce_sum(tf.gather(table, [1, 3, 1]) * weights), [table])
    assert isinstance(grads_and_vars[0][0], tf.IndexedSlices)
    train = optimizer.apply_gradients(grads_and_vars)
    assert "SparseApplyAdadelta" in {op.type for op in tf.get_default_graph().get_operations()}
    slots = [optimizer.get_slot(table, "accum"), optimizer.get_slot(table, "accum_update")]
    got = _run(train, table, *slots, steps=3)
    summed = np.array([weights[0] + weights[2], weights[1]])  # the optimizer sums a repeated row's gradients
    expected = (start, np.zeros_like(start), np.zeros_like(start))
    for _ in range(3):
        expected = _adadelta_rows(*expected, *_f32(1.0, 0.9, 1e-6), summed, indices=[1, 3])
    for value, want in zip(got, expected):
        np.testing.assert_allclose(value, want, rtol=1e-12)
    np.testing.assert_array_equal(got[0][[0, 2, 4]], start[[0, 2, 4]])


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_sparse_apply_adadelta_applies_a_repeated_index_in_order(index_dtype):
    rng = np.random.default_rng(3)
    start = [rng.uniform(0.1, 1.0, (4, 3)) for _ in range(3)]
    grad, indices = rng.uniform(-2, 2, (3, 3)), np.array([2, 0, 2], index_dtype)
    refs = [tf.Variable(s) for s in start]
    out = training_ops.sparse_apply_adadelta(*refs, 0.5, 0.9, 1e-3, grad, indices, use_locking=True)
    assert out.op.type == "SparseApplyAdadelta" and out.op.get_attr("Tindices") == tf.as_dtype(index_dtype)
    got = _run(out, *refs)
    for value, want in zip(got, _adadelta_rows(*start, 0.5, 0.9, 1e-3, grad, indices=indices)):
        np.testing.assert_allclose(value, want, rtol=1e-12)


def test_apply_adadelta_op_outputs_the_updated_variable():
    refs = [tf.Variable(np.full(3, v, np.float32)) for v in (1.0, 0.5, 0.25)]
    grad = np.array([1.0, -2.0, 0.5], np.float32)
    out = training_ops.apply_adadelta(*refs, 0.1, 0.95, 1e-6, grad)
    assert out.op.type == "ApplyAdadelta" and out.dtype == tf.float32_ref
    assert out.op.get_attr("use_locking") is False
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        first = sess.run(out)
        got = sess.run(refs)
    want = _adadelta_rows(*(np.full(3, v) for v in (1.0, 0.5, 0.25)), 0.1, 0.95, 1e-6, grad.astype(np.float64))
    np.testing.assert_allclose(first, want[0], rtol=1e-6)
    for value, expected in zip(got, want):
        np.testing.assert_allclose(value, expected, rtol=1e-6)


def test_locked_steps_from_many_threads_equal_as_many_steps_in_turn():
    """A constant gradient and use_locking=True: every step holds the variable's and slots' locks from read to store,
    so 4 threads x 25 steps leave exactly the values of 100 steps in turn."""
    start, grad = np.array([1.0, -2.0, 0.5]), np.array([0.5, -1.0, 3.0])
    w = tf.Variable(start)
    optimizer = tf.train.AdadeltaOptimizer(1.0, rho=0.9, epsilon=1e-6, use_locking=True)
    train = optimizer.apply_gradients([(tf.constant(grad), w)])
    assert all(op.get_attr("use_locking") for op in tf.get_default_graph().get_operations()
               if op.type == "ApplyAdadelta")
    expected = (start, np.zeros(3), np.zeros(3))
    for _ in range(100):
        expected = _adadelta_rows(*expected, *_f32(1.0, 0.9, 1e-6), grad)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        threads = [threading.Thread(target=lambda: [sess.run(train) for _ in range(25)]) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        got = sess.run([w, optimizer.get_slot(w, "accum"), optimizer.get_slot(w, "accum_update")])
    for value, want in zip(got, expected):
        np.testing.assert_allclose(value, want, rtol=1e-12)


def test_bad_inputs_raise_tfs_errors():
    f32 = tf.Variable(np.ones((2, 3), np.float32), name="f32")
    slots = [tf.Variable(np.zeros((2, 3), np.float32)) for _ in range(2)]
    with pytest.raises(TypeError, match="Input 'grad' of 'ApplyAdadelta' Op has type float64"):
        training_ops.apply_adadelta(f32, *slots, 0.1, 0.9, 1e-6, tf.constant(np.ones((2, 3), np.float64)))
    with pytest.raises(ValueError, match="Dimension 1 in both shapes must be equal, but are 3 and 4"):
        training_ops.apply_adadelta(f32, *slots, 0.1, 0.9, 1e-6, np.ones((2, 4), np.float32))
    with pytest.raises(ValueError, match="Shape must be rank 0 but is rank 1"):
        training_ops.apply_adadelta(f32, *slots, [0.1], 0.9, 1e-6, np.ones((2, 3), np.float32))
    with pytest.raises(TypeError, match="Tindices"):
        training_ops.sparse_apply_adadelta(f32, *slots, 0.1, 0.9, 1e-6, np.ones((1, 3), np.float32), [0.5])
    with pytest.raises(ValueError, match="Dimensions must be equal, but are 2 and 1"):
        training_ops.sparse_apply_adadelta(f32, *slots, 0.1, 0.9, 1e-6, np.ones((1, 3), np.float32), [0, 1])
    with pytest.raises(TypeError):
        training_ops.apply_adadelta(tf.constant(np.ones((2, 3), np.float32)), *slots, 0.1, 0.9, 1e-6,
                                    np.ones((2, 3), np.float32))


def test_bad_values_at_run_time_raise_tfs_errors_and_change_nothing():
    start = np.ones((2, 3), np.float32)
    var = tf.Variable(start, name="var")
    accum, accum_update = (tf.Variable(np.zeros((2, 3), np.float32), name=n) for n in ("accum", "accum_update"))
    grad, lr = tf.placeholder(tf.float32), tf.placeholder(tf.float32)
    indices = tf.placeholder(tf.int32)
    dense = training_ops.apply_adadelta(var, accum, accum_update, lr, 0.9, 1e-6, grad)
    sparse = training_ops.sparse_apply_adadelta(var, accum, accum_update, 0.1, 0.9, 1e-6, grad, indices)
    uninitialized = training_ops.apply_adadelta(tf.Variable(start, name="fresh"), accum, accum_update, 0.1, 0.9,
                                                1e-6, start)
    with tf.Session() as sess:
        sess.run([var.initializer, accum.initializer, accum_update.initializer])
        with pytest.raises(tf.errors.InvalidArgumentError, match="var and grad do not have the same shape"):
            sess.run(dense, {grad: np.ones((3, 2), np.float32), lr: 0.1})
        with pytest.raises(tf.errors.InvalidArgumentError, match="lr is not a scalar"):
            sess.run(dense, {grad: start, lr: [0.1]})
        with pytest.raises(tf.errors.InvalidArgumentError, match="Index 5 at offset 1 in indices is out of range"):
            sess.run(sparse, {grad: np.ones((2, 3), np.float32), indices: [0, 5]})
        with pytest.raises(tf.errors.FailedPreconditionError, match="fresh"):
            sess.run(uninitialized)
        for value, want in zip(sess.run([var, accum, accum_update]), (start, 0.0, 0.0)):
            np.testing.assert_array_equal(value, np.broadcast_to(want, (2, 3)))


@needs_tf
def test_steps_match_real_tensorflows_adadelta_optimizer():
    train, variables = peer.build(tf)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(peer.STEPS):
            sess.run(train)
        ours = peer.values(sess, variables)
    theirs = json.loads(run_peer(PEER, "train"))
    assert sorted(ours) == sorted(theirs) == sorted(
        [f"{v}{slot}" for v in ("dense/w", "embedding/table") for slot in ("", "/Adadelta", "/Adadelta_1")])
    for name, value in theirs.items():
        np.testing.assert_allclose(ours[name], value, rtol=1e-6, err_msg=name)
    assert ours["embedding/table"][:2] == theirs["embedding/table"][:2] == [0.5, 0.5 + 1 / 3]  # row 0: no gradient


@needs_tf
def test_a_checkpoint_with_adadelta_slots_restores_in_tensorflow(tmp_path):
    """Saved after a few steps by adplace, restored by TF's Saver into TF's AdadeltaOptimizer graph (every slot found
    by its name), then one more step on each side: the same values."""
    train, variables = peer.build(tf)
    prefix = str(tmp_path / "model")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(3):
            sess.run(train)
        tf.train.Saver().save(sess, prefix)
        sess.run(train)
        ours = peer.values(sess, variables)
    theirs = json.loads(run_peer(PEER, "restore", prefix))
    assert sorted(theirs) == sorted(ours)
    for name, value in theirs.items():
        np.testing.assert_allclose(ours[name], value, rtol=1e-6, err_msg=name)
