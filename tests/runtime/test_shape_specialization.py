"""Plans specialized to their fed values' shapes (adplace/runtime/shape_specialization.py) against unspecialized
plans: the same values, errors and traces, fewer steps."""
import functools

import numpy as np
import pytest

import adplace as tf
from adplace.framework.operation import Tensor
from adplace.framework.tensor_shape import TensorShape
from adplace.runtime import shape_specialization
from folding_support import unfolded_config, unnumbered
from thread_support import run_threads


def _fit():
    """A least-squares step on batches of any size: its gradients do their shape arithmetic at run time."""
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    y = tf.placeholder(tf.float32, [None], name="y")
    w = tf.Variable(np.array([[0.5], [-0.25], [1.0]], np.float32), name="w")
    b = tf.Variable(np.float32(0.1), name="b")
    err = tf.squeeze(tf.matmul(x, w), 1) + b - y
    loss = tf.reduce_mean(tf.square(err))
    train = tf.train.AdamOptimizer(0.05).minimize(loss)
    return x, y, loss, train


def _batch(rng, n: int) -> tuple:
    x = rng.normal(size=(n, 3)).astype(np.float32)
    return x, (x @ np.array([1.0, 2.0, -1.0], np.float32) + 0.5).astype(np.float32)


def _session(config=None) -> tf.Session:
    sess = tf.Session(config=config)
    sess.run(tf.global_variables_initializer())
    return sess


def _general(sess, fetches, feed) -> object:
    return sess._cached(fetches, feed).plan


def test_the_second_run_of_a_shape_builds_a_plan_that_folds_its_shape_arithmetic():
    x, y, loss, train = _fit()
    sess, plain = _session(), _session(unfolded_config())
    rng = np.random.default_rng(0)
    xv, yv = _batch(rng, 8)
    feed = {x: xv, y: yv}
    general = _general(sess, [train, loss], feed)
    assert general.variants is not None and general.keyed_ops
    for run in range(4):
        assert sess.run([train, loss], feed)[1] == plain.run([train, loss], feed)[1]
        plan = sess.plan_for([train, loss], feed)
        assert (plan is general) == (run == 0)  # the first run takes the general plan, the second builds one
    assert plan.runs == 3 and not plan.keyed_ops and plan.simplified_ops
    assert {"Shape", "BroadcastGradientArgs"} <= {op.type for op in plan.folded_ops}
    assert not {"Shape", "BroadcastGradientArgs"} & {s.op.type for s in plan.steps if s.op not in plan.folded_ops}
    assert len(plan.steps) < len(general.steps)
    assert "Neg" in {op.type for op in plan.unread_ops}  # y's gradient, behind simplified steps: not computed
    for var in tf.global_variables():
        np.testing.assert_array_equal(sess.run(var), plain.run(var))


def test_each_shape_runs_its_own_plan_with_the_values_of_an_unspecialized_one():
    x, y, loss, train = _fit()
    sess, plain = _session(), _session(unfolded_config())
    rng = np.random.default_rng(1)
    sizes = [4, 7, 4, 7, 1, 4, 7, 1, 12, 4, 1, 7]
    for n in sizes:
        feed = dict(zip((x, y), _batch(rng, n)))
        assert sess.run([train, loss], feed)[1] == plain.run([train, loss], feed)[1]
    variants = _general(sess, [train, loss], feed).variants
    specialized = {key[0] for key, plan in variants.table.items() if plan is not variants.generic}
    assert specialized == {(4, 3), (7, 3), (1, 3)}  # 12 was seen once
    for var in tf.global_variables():
        np.testing.assert_array_equal(sess.run(var), plain.run(var))


def test_past_max_variants_new_shapes_run_the_general_plan(monkeypatch):
    monkeypatch.setattr(shape_specialization, "MAX_VARIANTS", 2)
    x, y, loss, train = _fit()
    sess, plain = _session(), _session(unfolded_config())
    rng = np.random.default_rng(2)
    for n in (2, 2, 3, 3, 5, 5, 6, 6, 2, 5):
        feed = dict(zip((x, y), _batch(rng, n)))
        assert sess.run([train, loss], feed)[1] == plain.run([train, loss], feed)[1]
    general = _general(sess, [train, loss], feed)
    assert len(general.variants.table) == 2
    assert sess.plan_for([train, loss], feed) is general  # 5 came after the table was full


def test_a_bad_shape_raises_the_unspecialized_error_and_changes_nothing():
    x, y, loss, train = _fit()
    sess, plain = _session(), _session(unfolded_config())
    rng = np.random.default_rng(3)
    good = dict(zip((x, y), _batch(rng, 6)))
    for _ in range(3):
        sess.run(train, good)
        plain.run(train, good)
    bad = {x: good[x], y: good[y][:5]}  # 6 predictions, 5 targets
    before = [sess.run(v) for v in tf.global_variables()]
    for _ in range(3):  # the general plan, then the plan for these shapes (built on the second run)
        with pytest.raises(tf.errors.InvalidArgumentError) as got:
            sess.run(train, bad)
        with pytest.raises(tf.errors.InvalidArgumentError) as want:
            plain.run(train, bad)
        assert got.value.op.name == want.value.op.name and got.value.message == want.value.message
    for var, old in zip(tf.global_variables(), before):
        np.testing.assert_array_equal(sess.run(var), old)


def test_threads_feeding_their_own_shapes_get_exact_values():
    x = tf.placeholder(tf.float32, [None, 4], name="x")
    w = tf.constant(np.linspace(-1, 1, 4, dtype=np.float32).reshape(4, 1))
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - tf.reduce_sum(x, axis=1, keepdims=True)))
    grad = tf.gradients(loss, x)[0]
    inputs = [np.full((1 + k % 5, 4), k, np.float32) for k in range(10)]
    plain = tf.Session(config=unfolded_config())
    want = [plain.run([loss, grad], {x: v}) for v in inputs]
    sess = tf.Session()

    def worker(k):
        for _ in range(100):
            got = sess.run([loss, grad], {x: inputs[k]})
            assert got[0] == want[k][0] and np.array_equal(got[1], want[k][1]), k
    run_threads(*(functools.partial(worker, k) for k in range(10)))
    general = _general(sess, [loss, grad], {x: inputs[0]})
    assert len([p for p in general.variants.table.values() if p is not general]) == 5


def test_make_callable_runs_the_specialized_plan():
    x, y, loss, train = _fit()
    sess, plain = _session(), _session(unfolded_config())
    step = sess.make_callable([train, loss], [x, y])
    rng = np.random.default_rng(4)
    for _ in range(4):
        xv, yv = _batch(rng, 5)
        assert step(xv, yv)[1] == plain.run([train, loss], {x: xv, y: yv})[1]
    plan = sess.plan_for([train, loss], {x: xv, y: yv})
    assert plan is not _general(sess, [train, loss], {x: xv, y: yv}) and plan.runs == 3


def test_traces_of_a_specialized_plan_list_the_same_nodes_on_the_same_devices(gpus):
    x, y, loss, train = _fit()
    rng = np.random.default_rng(5)
    feed = dict(zip((x, y), _batch(rng, 4)))
    options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
    nodes = []
    for sess in (_session(), _session(unfolded_config())):
        sess.run(train, feed)
        sess.run(train, feed)
        metadata = tf.RunMetadata()
        sess.run(train, feed, options=options, run_metadata=metadata)
        nodes.append({(d.device, unnumbered(n.node_name)) for d in metadata.step_stats.dev_stats
                      for n in d.node_stats})
    assert nodes[0] == nodes[1]


def test_plans_that_cannot_gain_are_not_specialized():
    x = tf.placeholder(tf.float32, [None], name="x")
    fixed = tf.placeholder(tf.float32, [3], name="fixed")
    sess = tf.Session()
    assert sess.plan_for(tf.reduce_sum(x), {x: np.ones(3, np.float32)}).variants is None  # no shape arithmetic
    grad = tf.gradients(tf.reduce_mean(fixed * 2.0), fixed)[0]
    assert sess.plan_for(grad, {fixed: np.ones(3, np.float32)}).variants is None          # shapes all known
    flag = tf.placeholder(tf.bool, [], name="flag")
    branch = tf.cond(flag, lambda: tf.gradients(tf.reduce_mean(x * x), x)[0], lambda: x)
    assert sess.plan_for(branch, {x: np.ones(3, np.float32), flag: True}).variants is None  # a cond
    off = tf.Session(config=unfolded_config())
    grad_x = tf.gradients(tf.reduce_mean(x * x), x)[0]
    assert off.plan_for(grad_x, {x: np.ones(3, np.float32)}).variants is None               # folding off


def test_a_shape_that_simplifies_nothing_keeps_the_general_plan():
    x = tf.placeholder(tf.float32, [None, None], name="x")
    codes = tf.placeholder(tf.int32, [None], name="codes")
    values = tf.unique(codes)[0]  # a shape known only once it has run: nothing to refine past it
    out = tf.reshape(values, tf.shape(x, optimize=False))
    sess = tf.Session()
    feed = {x: np.zeros((2, 3), np.float32), codes: np.array([5, 1, 5, 2, 3, 4, 6, 1], np.int32)}
    for _ in range(3):
        np.testing.assert_array_equal(sess.run(out, feed), [[5, 1, 2], [3, 4, 6]])
    general = _general(sess, out, feed)
    assert general.keyed_ops and general.variants.table == {((2, 3), (8,)): general}
    assert sess.plan_for(out, feed) is general


def test_the_refiner_refines_only_what_a_shape_function_accepts():
    a = tf.placeholder(tf.float32, [None], name="a")
    b = tf.placeholder(tf.float32, [None], name="b")
    total = a + b
    refiner = shape_specialization.Refiner({0: TensorShape([5]), 1: TensorShape([5])})
    refiner.step(total.op, (0, 1), (2,), {}, False)
    assert refiner.shape(2, total) == TensorShape([5])
    refiner = shape_specialization.Refiner({0: TensorShape([5]), 1: TensorShape([4])})
    refiner.step(total.op, (0, 1), (2,), {}, False)  # 5 against 4: the add's shape function raises
    assert refiner.shape(2, total).as_tuple() == (None,)
    pinned = tf.placeholder(tf.float32, [None, 3], name="pinned")
    doubled = pinned * 2.0
    refiner = shape_specialization.Refiner({0: TensorShape([2, 4])})  # disagrees with the static [?, 3]
    refiner.step(doubled.op, (0, 1), (2,), {}, False)
    assert refiner.shape(2, doubled).as_tuple() == (None, 3)
    refiner.step(doubled.op, (2,), (3,), {}, True)  # a transfer passes on what its input has
    assert 3 not in refiner.shapes


def test_the_refiner_reads_folded_values_where_shape_functions_want_constants():
    n = tf.placeholder(tf.int32, [], name="n")
    filled = tf.fill(tf.stack([n, 2]), 1.0)
    refiner = shape_specialization.Refiner({})
    refiner.step(filled.op, (0, 1), (2,), {0: np.array([3, 2], np.int32), 1: np.float32(1.0)}, False)
    assert refiner.shape(2, filled) == TensorShape([3, 2])
    assert filled.shape.as_tuple() == (None, None)  # what the graph holds is left as it was
    assert Tensor not in {type(t) for t in refiner.shapes}


def test_a_plan_that_cannot_be_specialized_leaves_the_general_plan_running(monkeypatch, caplog):
    x, y, loss, train = _fit()
    sess, plain = _session(), _session(unfolded_config())

    def broken(*args, **kwargs):
        raise RuntimeError("no plan")
    monkeypatch.setattr(sess, "_specialized", broken)
    rng = np.random.default_rng(6)
    feed = dict(zip((x, y), _batch(rng, 3)))
    for _ in range(3):
        assert sess.run([train, loss], feed)[1] == plain.run([train, loss], feed)[1]
    general = _general(sess, [train, loss], feed)
    assert sess.plan_for([train, loss], feed) is general and list(general.variants.table.values()) == [general]
    assert "could not specialize" in caplog.text


def test_a_plan_that_would_keep_a_lent_array_is_not_taken():
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    axes = tf.range(tf.shape(x, optimize=False)[0] - 4)  # no axes for 4 rows: the sum passes x on once specialized
    queue = tf.FIFOQueue(4, tf.float32, shapes=[[4, 3]])
    enqueue = queue.enqueue([tf.reduce_sum(x, axis=axes)])
    sess = tf.Session()
    fed = np.arange(12, dtype=np.float32).reshape(4, 3)
    for _ in range(3):
        sess.run(enqueue, {x: fed})
    general = _general(sess, enqueue, {x: fed})
    assert general.keyed_ops and list(general.variants.table.values()) == [general]
    for _ in range(3):
        np.testing.assert_array_equal(sess.run(queue.dequeue()), fed)


def _broadcast(x):
    return tf.reduce_sum(tf.square(x * tf.constant([1.0, -2.0, 0.5]) + tf.reduce_mean(x, axis=1, keepdims=True)))


def _reshapes(x):
    flat = tf.reshape(x, [-1])
    back = tf.reshape(flat, tf.shape(x, optimize=False))
    return tf.reduce_sum(tf.expand_dims(back, 0) * tf.squeeze(tf.expand_dims(x, -1), -1))


def _tile_and_transpose(x):
    tiled = tf.tile(x, [2, 1])
    return tf.reduce_sum(tf.matmul(tf.transpose(tiled), tiled)) + tf.reduce_sum(tf.broadcast_to(x[:1], tf.shape(x)))


def _concat_and_split(x):
    joined = tf.concat([x, 2.0 * x], axis=0)
    first, second = tf.split(joined, 2, axis=0)
    return tf.reduce_sum(first * second) + tf.reduce_sum(tf.stack([x, x], axis=1))


def _classifier(x):
    logits = tf.matmul(x, tf.constant(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)))
    labels = tf.one_hot(tf.argmax(logits, axis=1), 4)
    return tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=tf.nn.relu(logits) + 0.1))


def _slices_and_gathers(x):
    rows = tf.range(tf.shape(x)[0])
    picked = tf.gather(x, tf.reverse(rows, [0]))
    return tf.reduce_sum(picked[:, 1:] * x[:, :-1]) + tf.reduce_max(tf.reduce_min(x, axis=0))


@pytest.mark.filterwarnings("ignore:Converting sparse IndexedSlices")
@pytest.mark.parametrize("model", [_broadcast, _reshapes, _tile_and_transpose, _concat_and_split, _classifier,
                                   _slices_and_gathers])
def test_gradients_of_many_ops_are_the_same_in_every_specialized_plan(model):
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    value = model(x)
    grad = tf.convert_to_tensor(tf.gradients(value, x)[0])  # a gather's gradient is IndexedSlices
    sess, plain = tf.Session(), tf.Session(config=unfolded_config())
    rng = np.random.default_rng(7)
    for rows in (1, 4, 1, 4, 6, 6, 4, 1):
        feed = {x: rng.normal(size=(rows, 3)).astype(np.float32)}
        got, want = sess.run([value, grad], feed), plain.run([value, grad], feed)
        assert got[0] == want[0] and got[0].dtype == want[0].dtype
        np.testing.assert_array_equal(got[1], want[1])
    general = _general(sess, [value, grad], feed)
    assert general.variants is not None and len(general.variants.table) == 3
    assert all(plan is not general for plan in general.variants.table.values())
