"""The plan pass that stops computing values nothing reads (runtime/dependency_optimizer.py, grappler's NoOp
conversion): which steps it converts, that values and traces stay as without it, that what waited on a converted op
still waits on its inputs (in turn and on the inter-op pool), and what it never converts."""
import json
import pathlib
import time

import numpy as np
import pytest

import adplace as tf
from adplace.runtime.options import RewriterConfig
from tf_peer import needs_tf, run_peer


def _config(on: bool = True, inter: int = 0):
    config = tf.ConfigProto(inter_op_parallelism_threads=inter)
    if not on:
        config.graph_options.rewrite_options.dependency_optimization = RewriterConfig.OFF
    return config


def _mlp_step(seed: int = 0):
    rng = np.random.default_rng(seed)
    x = tf.placeholder(tf.float32, [8, 6], name="x")
    y = tf.placeholder(tf.float32, [8, 3], name="y")
    w0 = tf.Variable(rng.standard_normal((6, 5)).astype(np.float32), name="w0")
    w1 = tf.Variable(rng.standard_normal((5, 3)).astype(np.float32), name="w1")
    logits = tf.matmul(tf.nn.relu(tf.matmul(x, w0)), w1)
    loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(labels=y, logits=logits))
    train = tf.train.AdamOptimizer(0.05).minimize(loss)
    feeds = {x: rng.standard_normal((8, 6)).astype(np.float32),
             y: np.eye(3, dtype=np.float32)[rng.integers(0, 3, 8)]}
    return train, loss, [w0, w1], feeds


def test_the_gradient_of_an_undifferentiated_input_is_not_computed():
    train, loss, _, feeds = _mlp_step()
    sess = tf.Session(config=_config())
    sess.run(tf.global_variables_initializer())
    plan = sess.plan_for([train, loss], feeds)
    names = {op.name for op in plan.unread_ops}
    assert "gradients/MatMul_grad/MatMul" in names  # d loss / d x: only the gradient tuple's gate waits on it
    assert "gradients/MatMul_grad/MatMul_1" not in names  # d loss / d w0: Adam reads it
    assert all(not op.op_def.is_stateful for op in plan.unread_ops)


@pytest.mark.parametrize("inter", [0, 4])
def test_training_gives_the_same_values_bit_for_bit_as_without_the_pass(inter):
    results = []
    for on in (True, False):
        with tf.Graph().as_default():
            train, loss, weights, feeds = _mlp_step()
            sess = tf.Session(config=_config(on, inter))
            sess.run(tf.global_variables_initializer())
            losses = [sess.run([train, loss], feeds)[1] for _ in range(12)]
            results.append((losses, sess.run(weights), sess.plan_for([train, loss], feeds).unread_ops))
    (on_losses, on_weights, on_unread), (off_losses, off_weights, off_unread) = results
    assert on_unread and not off_unread
    np.testing.assert_array_equal(on_losses, off_losses)
    for a, b in zip(on_weights, off_weights):
        np.testing.assert_array_equal(a, b)


def test_an_op_only_waited_on_is_not_run_as_grappler_makes_it_a_noop():
    x = tf.placeholder(tf.float32, [None], name="x")
    bad = tf.reshape(x, [4, -1], name="bad")  # fails for 6 elements, but no one reads its value
    with tf.control_dependencies([bad]):
        out = tf.identity(x * 2.0, name="out")
    feed = {x: np.arange(6, dtype=np.float32)}
    np.testing.assert_array_equal(tf.Session(config=_config()).run(out, feed), np.arange(6) * 2.0)
    with pytest.raises(tf.errors.InvalidArgumentError, match="bad"):
        tf.Session(config=_config(on=False)).run(out, feed)
    with pytest.raises(tf.errors.InvalidArgumentError, match="bad"):  # fetched: computed, as grappler keeps fetches
        tf.Session(config=_config()).run([out, bad], feed)


def test_checks_and_asserts_only_waited_on_still_run():
    x = tf.placeholder(tf.float32, [3], name="x")
    with tf.control_dependencies([tf.check_numerics(x, "x has a NaN")]):
        checked = tf.identity(x)
    with tf.control_dependencies([tf.Assert(tf.reduce_all(x < 10.0), [x], name="small")]):
        asserted = tf.identity(x)
    sess = tf.Session(config=_config())
    assert not sess.plan_for(checked, {x: np.zeros(3, np.float32)}).unread_ops
    with pytest.raises(tf.errors.InvalidArgumentError, match="x has a NaN"):
        sess.run(checked, {x: np.array([1.0, np.nan, 2.0], np.float32)})
    with pytest.raises(tf.errors.InvalidArgumentError, match="small"):
        sess.run(asserted, {x: np.array([1.0, 20.0, 2.0], np.float32)})


def test_a_multi_output_op_with_one_output_read_is_computed():
    x = tf.placeholder(tf.float32, [4], name="x")
    a, b = tf.split(x, 2, name="halves")
    with tf.control_dependencies([b]):
        out = a + 1.0
    sess = tf.Session(config=_config())
    plan = sess.plan_for(out, {x: np.arange(4, dtype=np.float32)})
    assert "halves" not in {op.name for op in plan.unread_ops}
    np.testing.assert_array_equal(sess.run(out, {x: np.arange(4, dtype=np.float32)}), [1.0, 2.0])


@pytest.mark.parametrize("inter", [0, 4])
def test_what_waits_on_a_converted_op_still_waits_on_its_inputs(inter):
    q = tf.FIFOQueue(100, [tf.float32], shapes=[[]])
    fill = q.enqueue_many([tf.range(20, dtype=tf.float32)])
    slow = tf.py_func(lambda: time.sleep(0.005) or np.float32(0), [], tf.float32)  # on the pool: the dequeue comes late
    with tf.control_dependencies([slow]):
        item = q.dequeue()
    doubled = tf.multiply(item, 2.0, name="doubled")  # stateless, only waited on: converted
    twice = tf.add(doubled, 1.0, name="twice")                # converted too: it waits, through doubled, on the dequeue
    with tf.control_dependencies([twice]):
        seen = tf.identity(q.size(), name="seen")
    sess = tf.Session(config=_config(inter=inter))
    sess.run(fill)
    plan = sess.plan_for(seen, {})
    assert {"doubled", "twice"} <= {op.name for op in plan.unread_ops}
    assert [int(sess.run(seen)) for _ in range(20)] == list(range(19, -1, -1))


def test_step_stats_still_list_a_converted_op():
    x = tf.placeholder(tf.float32, [4], name="x")
    unread = tf.square(x, name="unread")
    with tf.control_dependencies([unread]):
        out = tf.identity(x, name="out")
    sess = tf.Session(config=_config())
    metadata = tf.RunMetadata()
    sess.run(out, {x: np.ones(4, np.float32)}, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
             run_metadata=metadata)
    nodes = {n.node_name for dev in metadata.step_stats.dev_stats for n in dev.node_stats}
    assert {"unread", "out"} <= nodes
    assert [op.name for op in sess.plan_for(out, {x: np.ones(4, np.float32)}).unread_ops] == ["unread"]


@needs_tf
def test_tensorflow_runs_and_skips_the_same_ops():
    got = json.loads(run_peer(pathlib.Path(__file__).with_name("tf_dependency_peer.py")))
    assert got == {"waited_on_reshape": [0.0, 2.0, 4.0, 6.0, 8.0, 10.0], "check_numerics": "InvalidArgumentError"}
