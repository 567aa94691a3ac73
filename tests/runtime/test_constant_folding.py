"""Plan-time constant folding (adplace/runtime/constant_folding.py): folded plans against unfolded ones."""
import functools

import numpy as np
import pytest

import adplace as tf
from adplace.ops.broadcast_ops import broadcast_gradient_args
from folding_support import unfolded_config, unnumbered
from thread_support import run_threads


def _config(folding: bool, **kwargs) -> tf.ConfigProto:
    return tf.ConfigProto(**kwargs) if folding else unfolded_config(**kwargs)


def _sessions(**kwargs) -> tuple:
    """(folding session, non-folding session) on the default graph."""
    return tf.Session(config=_config(True, **kwargs)), tf.Session(config=_config(False, **kwargs))


def _step_types(plan) -> list:
    return [s.op.type for s in plan.steps]


def _computing_types(plan) -> set:
    """The op types of the steps that compute something each run: not those returning a value folded at build."""
    folded = set(plan.folded_ops)
    stored = [s for s in plan.steps if s.op in folded]
    assert all(not s.in_slots for s in stored)  # a stored value's step reads nothing: what it read is gone
    return {s.op.type for s in plan.steps if s.op not in folded}


def _assert_same_runs(fetches, feed_dict=None, runs: int = 3) -> tuple:
    """Run `fetches` in a folding and a non-folding session; both give the same values each run; returns the plans."""
    on, off = _sessions()
    for _ in range(runs):
        for got, want in zip(on.run(fetches, feed_dict), off.run(fetches, feed_dict)):
            np.testing.assert_array_equal(got, want)
            assert np.asarray(got).dtype == np.asarray(want).dtype
    return on.plan_for(fetches, feed_dict), off.plan_for(fetches, feed_dict)


def test_shape_subgraphs_of_static_shapes_are_folded_out_of_the_plan():
    v = tf.Variable(np.arange(6, dtype=np.float32).reshape(2, 3), name="v")
    shape = tf.shape(v, optimize=False)  # a Shape op, as graphs built by TF 1.x or imported from TF hold
    flat = tf.reshape(v, tf.stack([tf.reduce_prod(shape)]))
    rows = tf.cast(tf.size(v, optimize=False), tf.float32) / tf.cast(tf.rank(v), tf.float32)
    out = tf.reduce_sum(flat) * rows + tf.cast(shape[1], tf.float32)
    on, off = _sessions()
    for sess in (on, off):
        sess.run(v.initializer)
    assert on.run(out) == off.run(out) == pytest.approx(15.0 * 3.0 + 3.0)
    plan, unfolded = on.plan_for(out), off.plan_for(out)
    assert unfolded.folded_ops == []
    folded = {op.type for op in plan.folded_ops}
    assert {"Shape", "Size", "Prod", "Pack", "StridedSlice", "Cast", "RealDiv"} <= folded
    assert not {"Shape", "Size", "Prod", "Pack", "StridedSlice"} & _computing_types(plan)
    assert len(plan.steps) <= len(unfolded.steps) - 8
    assert {"Shape", "Size", "Prod", "Pack"} <= set(_step_types(unfolded))


def _tf1_add_grad(x, y, grad) -> list:
    """TF 1.x's gradient of a broadcasting x + y: Shape ops, BroadcastGradientArgs, Sum and Reshape (adplace's
    tf.gradients computes those axes when it builds the graph; graphs built by TF 1.x hold the ops)."""
    sx, sy = tf.shape(x, optimize=False), tf.shape(y, optimize=False)
    rx, ry = broadcast_gradient_args(sx, sy)
    return [tf.reshape(tf.reduce_sum(grad, rx), sx), tf.reshape(tf.reduce_sum(grad, ry), sy)]


def test_gradients_of_broadcasting_adds_fold_broadcast_gradient_args():
    a = tf.Variable(np.ones((4, 3), np.float32), name="a")
    b = tf.Variable(np.arange(3, dtype=np.float32), name="b")
    c = tf.Variable(np.float32(2.0), name="c")
    total = a + b
    loss = tf.reduce_sum(tf.square(total * c - b))
    g_total, g_b, g_c = tf.gradients(loss, [total, b, c])
    g_a, g_b_add = _tf1_add_grad(a, b, g_total)
    grads = [g_a, g_b + g_b_add, g_c]
    on, off = _sessions()
    for sess in (on, off):
        sess.run(tf.global_variables_initializer())
    for got, want in zip(on.run(grads), off.run(grads)):
        np.testing.assert_array_equal(got, want)
    plan, unfolded = on.plan_for(grads), off.plan_for(grads)
    assert "BroadcastGradientArgs" in _step_types(unfolded)
    assert "BroadcastGradientArgs" in {op.type for op in plan.folded_ops}
    assert not {"Shape", "BroadcastGradientArgs"} & _computing_types(plan)
    assert len(plan.steps) < len(unfolded.steps)


def test_dynamic_shapes_are_not_folded_but_computed_once_per_shape():
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    b = tf.Variable(np.arange(3, dtype=np.float32), name="b")
    loss = tf.reduce_mean(tf.square(x + b))
    grads = tf.gradients(loss, [x, b])
    on, off = _sessions()
    for sess in (on, off):
        sess.run(b.initializer)
    for rows in (1, 5, 2, 5, 1, 0):
        feed = {x: np.arange(rows * 3, dtype=np.float32).reshape(rows, 3)}
        for got, want in zip(on.run(grads, feed), off.run(grads, feed)):
            np.testing.assert_array_equal(got, want)
    plan, unfolded = on.plan_for(grads, feed), off.plan_for(grads, feed)
    assert not any(op.type in ("Shape", "BroadcastGradientArgs") for op in plan.folded_ops)
    keyed = {op.type for op in plan.keyed_ops}
    assert {"Shape", "BroadcastGradientArgs"} <= keyed and not unfolded.keyed_ops
    # a keyed step that later steps read stays, reading only the values whose shapes it follows (here x)
    bga = next(s for s in plan.steps if s.op.type == "BroadcastGradientArgs")
    assert bga.in_slots == (0,) and plan.feed_tensors == [x]
    assert len(plan.steps) < len(unfolded.steps)


def test_an_error_in_a_step_computed_once_per_shape_names_its_op():
    x = tf.placeholder(tf.float32, [None], name="x")
    dims = tf.shape(x, optimize=False) * 2
    r = tf.reshape(tf.range(6), dims, name="bad")
    out = tf.reduce_sum(x) + tf.cast(tf.reduce_sum(r + 1), tf.float32)
    on, off = _sessions()
    for sess in (on, off):
        assert sess.run(out, {x: np.ones(3, np.float32)}) == 24.0
    assert "bad" in {op.name for op in on.plan_for(out, {x: np.ones(3)}).keyed_ops}
    messages = []
    for sess in (on, off):
        for _ in range(2):
            with pytest.raises(tf.errors.InvalidArgumentError, match="Input to reshape") as info:
                sess.run(out, {x: np.ones(2, np.float32)})
            assert info.value.op.name == "bad"
            messages.append(str(info.value))
        assert sess.run(out, {x: np.ones(3, np.float32)}) == 24.0
    assert len(set(messages)) == 1


def test_a_step_computed_once_per_shape_that_only_guards_another_still_raises():
    x = tf.placeholder(tf.float32, [None], name="x")
    bad = tf.reshape(tf.range(6), tf.shape(x, optimize=False) * 2, name="bad")
    with tf.control_dependencies([bad]):
        out = tf.identity(x)
    sess = tf.Session()
    np.testing.assert_array_equal(sess.run(out, {x: np.ones(3, np.float32)}), np.ones(3))
    assert "bad" in {op.name for op in sess.plan_for(out, {x: np.ones(3)}).keyed_ops}
    with pytest.raises(tf.errors.InvalidArgumentError, match="Input to reshape") as info:
        sess.run(out, {x: np.ones(2, np.float32)})
    assert info.value.op.name == "bad"


def test_fetched_values_are_fresh_arrays_and_never_the_stored_ones():
    base = tf.constant(np.arange(6, dtype=np.int32), name="base")
    shape = tf.shape(tf.reshape(base, [2, 3]), optimize=False)  # folded: read by the fetched ops below
    doubled = shape * 2
    same = tf.identity(shape)
    sess = tf.Session()
    first = sess.run([base, doubled, same, shape])
    for value in first:
        value[...] = -1
    again = sess.run([base, doubled, same, shape])
    np.testing.assert_array_equal(again[0], np.arange(6))
    np.testing.assert_array_equal(again[1], [4, 6])
    np.testing.assert_array_equal(again[2], [2, 3])
    np.testing.assert_array_equal(again[3], [2, 3])
    other = sess.run([doubled, same])
    other[1][...] = 0
    np.testing.assert_array_equal(sess.run(same), [2, 3])
    plan = sess.plan_for([doubled, same])
    assert "Shape" in {op.type for op in plan.folded_ops}   # fetched ops themselves run
    assert {"Mul", "Identity"} <= set(_step_types(plan))


def test_a_fold_that_would_raise_raises_tfs_error_at_run_in_both_modes():
    c = tf.constant([1, 2, 3])
    dims = tf.constant([2, 2]) + tf.constant([0, 0])      # a shape only known once computed
    bad = tf.reshape(c, dims, name="bad") + 1
    good = tf.shape(c) * 3
    on, off = _sessions()
    messages = []
    for sess in (on, off):
        np.testing.assert_array_equal(sess.run(good), [9])  # building a plan beside the bad op still works
        for _ in range(2):
            with pytest.raises(tf.errors.InvalidArgumentError, match="Input to reshape") as info:
                sess.run(bad)
            assert info.value.op.name == "bad"
            messages.append(str(info.value))
    assert messages[0] == messages[2]
    assert "Reshape" in _step_types(on.plan_for(bad))


def test_stateful_random_and_variable_reads_are_not_folded():
    r = tf.random_uniform([3], seed=1)
    v = tf.Variable([1.0, 2.0, 3.0], name="v")
    out = r * 0.0 + tf.cast(tf.shape(r)[0], tf.float32) + v
    sess = tf.Session()
    sess.run(v.initializer)
    np.testing.assert_array_equal(sess.run(out), [4.0, 5.0, 6.0])
    sess.run(v.assign([0.0, 0.0, 1.0]))
    np.testing.assert_array_equal(sess.run(out), [3.0, 3.0, 4.0])
    folded = {op.type for op in sess.plan_for(out).folded_ops}
    assert "RandomUniform" not in folded and "VariableV2" not in folded and "Identity" not in folded
    assert "RandomUniform" in _step_types(sess.plan_for(out))


def test_control_inputs_from_running_ops_block_folding():
    v = tf.Variable(1.0, name="v")
    bump = tf.assign_add(v, 1.0)
    with tf.control_dependencies([bump]):
        waits = tf.constant(5.0, name="waits") * 2.0
    free = tf.constant(7.0) * 3.0
    total = waits + free
    sess = tf.Session()
    sess.run(v.initializer)
    assert sess.run(total) == 31.0
    assert sess.run(v) == 2.0                           # the bump still runs before the constant it guards
    assert sess.run(total) == 31.0 and sess.run(v) == 3.0
    names = {op.name for op in sess.plan_for(total).folded_ops}
    assert "waits" not in names and free.op.name in names


def test_cond_and_while_plans_give_the_same_values():
    x = tf.placeholder(tf.float32, [], name="x")
    shape = tf.shape(tf.zeros([2, 3]), optimize=False)
    picked = tf.cond(x > 0, lambda: tf.cast(shape * 2, tf.float32) * x,
                     lambda: tf.cast(tf.reverse(shape, [0]), tf.float32) - x)
    i0 = tf.constant(0)
    _, total = tf.while_loop(lambda i, t: i < tf.reduce_prod(shape),
                             lambda i, t: (i + 1, t + tf.cast(tf.size(tf.ones([i + 1])), tf.float32) * x),
                             [i0, tf.constant(0.0)])
    for value in (2.0, -1.0):
        _assert_same_runs([picked, total], {x: value})
    on, _ = _sessions()
    np.testing.assert_array_equal(on.run(picked, {x: 2.0}), [8.0, 12.0])
    np.testing.assert_array_equal(on.run(picked, {x: -1.0}), [4.0, 3.0])
    assert on.run(total, {x: 1.0}) == 21.0


def test_virtual_gpus_fold_in_place_and_keep_their_transfers(gpus):
    with tf.device("/cpu:0"):
        dims = tf.constant([2, 3]) * 1
    with tf.device("/gpu:0"):
        y = tf.fill(dims, 2.0) + tf.cast(tf.reduce_prod(tf.constant([1, 2, 3])), tf.float32)
    with tf.device("/gpu:1"):
        z = tf.reduce_sum(y * 3.0)
    plan, unfolded = _assert_same_runs([y, z])
    assert plan.num_transfers == unfolded.num_transfers
    assert [str(t) for t in plan.transfers] == [str(t) for t in unfolded.transfers]
    on, off = _sessions()
    assert on.placement_table() == off.placement_table()
    assert len(plan.steps) < len(unfolded.steps)


def _tower_fit(folding: bool, steps: int) -> tuple:
    """The seed's fit of a polynomial on two towers (make_parallel, Adam, colocated gradients)."""
    tf.reset_default_graph()
    graph = tf.get_default_graph()

    def model(x, y):
        w = tf.get_variable("w", shape=[3, 1], initializer=tf.constant_initializer([[0.5], [-0.3], [0.1]]))
        f = tf.stack([tf.square(x), x, tf.ones_like(x)], 1)
        yhat = tf.squeeze(tf.matmul(f, w), 1)
        return tf.square(yhat - y)

    x = tf.placeholder(tf.float32, name="x")
    y = tf.placeholder(tf.float32, name="y")
    splits = {"x": tf.split(x, 2), "y": tf.split(y, 2)}
    out = []
    for i in range(2):
        with tf.device(tf.DeviceSpec(device_type="GPU", device_index=i)):
            with tf.variable_scope(tf.get_variable_scope(), reuse=i > 0):
                out.append(model(**{k: v[i] for k, v in splits.items()}))
    loss = tf.concat(out, axis=0)
    train = tf.train.AdamOptimizer(0.1).minimize(tf.reduce_mean(loss), colocate_gradients_with_ops=True)
    sess = tf.Session(graph=graph, config=_config(folding))
    sess.run(tf.global_variables_initializer())
    rng = np.random.default_rng(3)
    losses = []
    for _ in range(steps):
        x_val = rng.uniform(-10.0, 10.0, size=100).astype(np.float32)
        _, loss_val = sess.run([train, loss], {x: x_val, y: 5 * np.square(x_val) + 3})
        losses.append(loss_val)
    w = sess.run(graph.get_tensor_by_name("w:0"))
    return w, losses, sess.plan_for([train, loss], {x: x_val, y: x_val}), sess._cached([train, loss], {x: x_val, y: x_val}).plan


def test_tower_fit_trains_to_the_same_weights_with_and_without_folding(gpus):
    w_on, losses_on, plan, general = _tower_fit(True, 20)
    w_off, losses_off, unfolded, _ = _tower_fit(False, 20)
    np.testing.assert_allclose(w_on, w_off, rtol=1e-6)
    np.testing.assert_allclose(losses_on, losses_off, rtol=1e-6)
    assert plan.folded_ops and not unfolded.folded_ops
    assert plan is not general and not plan.keyed_ops  # runs of one batch shape take a plan specialized to it
    assert {"BroadcastGradientArgs", "Shape", "Size", "Rank"} <= {op.type for op in general.keyed_ops}
    assert {"BroadcastGradientArgs", "Shape", "Size", "Rank"} <= {op.type for op in plan.folded_ops}
    assert len(general.steps) < len(unfolded.steps) - 30
    assert len(plan.steps) < len(general.steps) - 10
    assert plan.num_transfers == unfolded.num_transfers


def test_many_threads_on_a_folded_plan_get_exact_values():
    x = tf.placeholder(tf.float32, [None, 4], name="x")
    w = tf.constant(np.linspace(-1, 1, 4, dtype=np.float32).reshape(4, 1))
    scale = tf.cast(tf.reduce_prod(tf.shape(w, optimize=False)), tf.float32)       # folded: 4
    rows = tf.shape(x, optimize=False)[0]                                           # keyed on x's shape
    out = tf.reshape(tf.matmul(x, w) * scale, tf.stack([rows, tf.shape(w, optimize=False)[1]]))
    inputs = [np.full((1 + k % 5, 4), k, np.float32) for k in range(16)]
    want = [tf.Session(config=_config(False)).run(out, {x: value}) for value in inputs]
    sess = tf.Session()
    plan = sess.plan_for(out, {x: inputs[0]})
    assert plan.folded_ops and plan.keyed_ops

    def worker(k):
        for _ in range(200):
            got = sess.run(out, {x: inputs[k]})
            assert np.array_equal(got, want[k]), (k, got)
    run_threads(*(functools.partial(worker, k) for k in range(16)))


def test_traced_runs_list_the_same_nodes_and_partitions_with_and_without_folding(gpus):
    v = tf.Variable(np.ones((2, 3), np.float32), name="v")
    x = tf.placeholder(tf.float32, [None], name="x")
    with tf.device("/gpu:0"):
        flipped = tf.reshape(v, tf.shape(v, optimize=False)[::-1], name="flipped")
        keyed = tf.cast(tf.reduce_prod(tf.shape(x, optimize=False) * 2), tf.float32, name="keyed")
    with tf.device("/gpu:1"):
        out = tf.reduce_sum(flipped, name="out") + tf.reduce_sum(x) * keyed
    on, off = _sessions()
    traces, partitions = [], []
    feed = {x: np.ones(4, np.float32)}
    options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE, output_partition_graphs=True)
    for sess in (on, off):
        sess.run(v.initializer)
        metadata = tf.RunMetadata()
        assert sess.run(out, feed, options=options, run_metadata=metadata) == 6.0 + 4.0 * 8.0
        traces.append({(d.device, unnumbered(n.node_name)) for d in metadata.step_stats.dev_stats
                       for n in d.node_stats})
        partitions.append({(g.node[0].device, unnumbered(n.name)) for g in metadata.partition_graphs for n in g.node})
    plan = on.plan_for(out, feed)
    assert "Shape" in {op.type for op in plan.folded_ops} and "keyed" in {op.name for op in plan.keyed_ops}
    assert len(plan.steps) < len(off.plan_for(out, feed).steps)
    assert traces[0] == traces[1]          # folded ops show as nodes of no time, on their devices
    assert partitions[0] == partitions[1]
