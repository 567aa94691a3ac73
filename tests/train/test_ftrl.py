"""tf.train.FtrlOptimizer and its ops ApplyFtrl(V2) / SparseApplyFtrl(V2): TF's update rule (a float64 NumPy
reference of training_ops.cc's kernels), TF 1.15's arguments, slots and their names, TF's errors for bad inputs, and
the same values as real TensorFlow's optimizer after several steps (a subprocess: tf_ftrl_peer.py)."""
import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

import adplace as tf
from adplace.ops import training_ops
from tf_peer import needs_tf, run_peer

PEER = Path(__file__).with_name("tf_ftrl_peer.py")
_spec = importlib.util.spec_from_file_location("tf_ftrl_peer", PEER)
peer = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(peer)  # only its constants and build(): it imports TensorFlow in __main__ alone


def _ftrl64(var, accum, linear, grad, lr, l1, l2, lr_power, shrinkage=0.0):
    """One FTRL step in float64 (TF's formula); returns new var, accum, linear."""
    var, accum, linear, grad = (np.asarray(a, np.float64) for a in (var, accum, linear, grad))
    new_accum = accum + grad * grad
    sigma = (new_accum ** -lr_power - accum ** -lr_power) / lr
    linear = linear + grad + 2 * shrinkage * var - sigma * var
    quadratic = new_accum ** -lr_power / lr + 2 * l2
    var = np.where(np.abs(linear) > l1, (l1 * np.sign(linear) - linear) / quadratic, 0.0)
    return var, new_accum, linear


@pytest.mark.parametrize("lr_power, shrinkage", [(-0.5, 0.0), (-0.25, 0.0), (-0.5, 0.3), (0.0, 0.1)])
def test_dense_and_sparse_ops_follow_tfs_formula(lr_power, shrinkage):
    rng = np.random.default_rng(3)
    start = [rng.standard_normal((4, 3)), rng.uniform(0.1, 1.0, (4, 3)), rng.standard_normal((4, 3))]
    grad, rows, indices = rng.standard_normal((4, 3)), rng.standard_normal((3, 3)), np.array([2, 0, 2])
    hyper = (0.2, 0.05, 0.1)
    dense, sparse = [[tf.Variable(v) for v in start] for _ in range(2)]
    if shrinkage:
        steps = [training_ops.apply_ftrl_v2(*dense, grad, *hyper, shrinkage, lr_power),
                 training_ops.sparse_apply_ftrl_v2(*sparse, rows, indices, *hyper, shrinkage, lr_power)]
    else:
        steps = [training_ops.apply_ftrl(*dense, grad, *hyper, lr_power),
                 training_ops.sparse_apply_ftrl(*sparse, rows, indices, *hyper, lr_power)]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(steps)
        got_dense, got_sparse = sess.run(dense), sess.run(sparse)
    for have, want in zip(got_dense, _ftrl64(*start, grad, *hyper, lr_power, shrinkage)):
        np.testing.assert_allclose(have, want, rtol=1e-12, atol=1e-12)
    want = [v.copy() for v in start]
    for row, i in zip(rows, indices):
        for v, new in zip(want, _ftrl64(*(v[i] for v in want), row, *hyper, lr_power, shrinkage)):
            v[i] = new
    for have, w in zip(got_sparse, want):
        np.testing.assert_allclose(have, w, rtol=1e-12, atol=1e-12)


def test_arguments_slots_and_names_follow_tf():
    opt = tf.train.FtrlOptimizer(0.1)
    assert (opt._learning_rate_power, opt._initial_accumulator_value, opt.get_name()) == (-0.5, 0.1, "Ftrl")
    w = tf.Variable([[1.0, 2.0]], name="layer/w")
    opt.minimize(tf.reduce_sum(w * w))
    assert sorted(opt.get_slot_names()) == ["accum", "linear"]
    accum, linear = opt.get_slot(w, "accum"), opt.get_slot(w, "linear")
    assert (accum.op.name, linear.op.name) == ("layer/w/Ftrl", "layer/w/Ftrl_1")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_allclose(sess.run(accum), [[0.1, 0.1]])
        np.testing.assert_array_equal(sess.run(linear), [[0.0, 0.0]])
    named = tf.train.FtrlOptimizer(0.1, accum_name="acc", linear_name="lin")
    v = tf.Variable([1.0], name="v")
    named.minimize(tf.reduce_sum(v))
    assert (named.get_slot(v, "accum").op.name, named.get_slot(v, "linear").op.name) == ("v/acc", "v/lin")
    shrinking = tf.train.FtrlOptimizer(0.1, l2_shrinkage_regularization_strength=0.1)
    u = tf.Variable([1.0], name="u")
    shrinking.minimize(tf.reduce_sum(u))
    assert [op.type for op in tf.get_default_graph().get_operations() if op.type.startswith("ApplyFtrl")] == [
        "ApplyFtrl", "ApplyFtrl", "ApplyFtrlV2"]


@pytest.mark.parametrize("kwargs, text", [
    ({"initial_accumulator_value": -0.1}, "initial_accumulator_value -0.100000 needs to be positive or zero"),
    ({"learning_rate_power": 0.5}, "learning_rate_power 0.500000 needs to be negative or zero"),
    ({"l1_regularization_strength": -1.0}, "l1_regularization_strength -1.000000 needs to be positive or zero"),
    ({"l2_regularization_strength": -1.0}, "l2_regularization_strength -1.000000 needs to be positive or zero"),
    ({"l2_shrinkage_regularization_strength": -1.0},
     "l2_shrinkage_regularization_strength -1.000000 needs to be positive or zero")])
def test_bad_arguments_raise_tfs_value_errors(kwargs, text):
    with pytest.raises(ValueError, match=text):
        tf.train.FtrlOptimizer(0.1, **kwargs)


@pytest.mark.parametrize("at, value, text", [
    (0, -0.1, "lr is not a positive scalar: []"), (0, [0.1, 0.1], "lr is not a positive scalar: [2]"),
    (1, -1.0, "l1 regularization strength is not a non-negative scalar: []"),
    (2, -1.0, "l2 regularization strength is not a non-negative scalar: []"),
    (3, 0.5, "lr_power is not a non-positive scalar: []")])
def test_bad_hyper_parameters_are_tfs_errors_and_change_nothing(at, value, text):
    hyper = [np.float32(0.1), np.float32(0.0), np.float32(0.0), np.float32(-0.5)]
    hyper[at] = fed = tf.placeholder(tf.float32)  # any shape: the kernel checks it
    refs = [tf.Variable(np.ones(3, np.float32)) for _ in range(3)]
    step = training_ops.apply_ftrl(*refs, np.ones(3, np.float32), *hyper)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        with pytest.raises(tf.errors.InvalidArgumentError, match=text.replace("[", r"\[").replace("]", r"\]")):
            sess.run(step, {fed: np.asarray(value, np.float32)})
        for value in sess.run(refs):
            np.testing.assert_array_equal(value, np.ones(3))


def test_shrinkage_must_be_non_negative():
    refs = [tf.Variable(np.ones(3, np.float32)) for _ in range(3)]
    step = training_ops.apply_ftrl_v2(*refs, np.ones(3, np.float32), 0.1, 0.0, 0.0, -1.0, -0.5)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"l2 shrinkage regularization strength is not a non-negative scalar: \[\]"):
            sess.run(step)


@needs_tf
def test_steps_match_real_tensorflows_ftrl_optimizer():
    ours = {}
    for name, config in peer.CONFIGS.items():
        graph = tf.Graph()
        with graph.as_default():
            step, variables = peer.build(tf, config)
            with tf.Session(graph=graph) as sess:
                sess.run(tf.global_variables_initializer())
                for _ in range(peer.STEPS):
                    sess.run(step)
                ours[name] = peer.values(sess, variables)
    theirs = json.loads(run_peer(PEER))
    assert sorted(ours) == sorted(theirs)
    for config, values in theirs.items():
        assert sorted(ours[config]) == sorted(values) == sorted(
            f"{v}{slot}" for v in ("dense/w", "embedding/table") for slot in ("", "/Ftrl", "/Ftrl_1"))
        for name, value in values.items():
            np.testing.assert_allclose(ours[config][name], value, rtol=2e-6, atol=1e-7, err_msg=f"{config} {name}")
