"""Optimizers given IndexedSlices gradients (an embedding's): TF's sparse update ops and results, from many threads."""
import threading

import numpy as np
import pytest

import adplace as tf

IDS = [1, 3, 1]
WEIGHTS = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.5], [-2.0, 1.0, 0.75]])
START = np.arange(15.0).reshape(5, 3) / 10.0


def _embedding_step(optimizer, steps: int = 2):
    """Train an embedding whose loss reads rows IDS (row 1 twice); returns the graph's op types and the values."""
    table = tf.Variable(START, name="table")
    loss = tf.reduce_sum(tf.gather(table, IDS) * WEIGHTS)
    grads_and_vars = optimizer.compute_gradients(loss, [table])
    assert isinstance(grads_and_vars[0][0], tf.IndexedSlices)
    train = optimizer.apply_gradients(grads_and_vars)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(steps):
            sess.run(train)
        slots = {name: sess.run(optimizer.get_slot(table, name)) for name in optimizer.get_slot_names()}
        return {op.type for op in tf.get_default_graph().get_operations()}, sess.run(table), slots


def _dedup_grad():
    """The summed gradient rows: row 1 gets WEIGHTS[0] + WEIGHTS[2], row 3 gets WEIGHTS[1]."""
    return {1: WEIGHTS[0] + WEIGHTS[2], 3: WEIGHTS[1]}


def test_gradient_descent_scatter_subs_every_row_including_repeats():
    types, table, _ = _embedding_step(tf.train.GradientDescentOptimizer(0.1))
    assert "ScatterSub" in types and "ApplyGradientDescent" not in types
    expected = START.copy()
    for _ in range(2):
        for i, row in zip(IDS, WEIGHTS):
            expected[i] -= 0.1 * row
    np.testing.assert_allclose(table, expected, rtol=1e-6)


@pytest.mark.parametrize("nesterov", [False, True])
def test_momentum_uses_sparse_apply_momentum_on_summed_rows(nesterov):
    types, table, slots = _embedding_step(tf.train.MomentumOptimizer(0.1, 0.9, use_nesterov=nesterov))
    assert "SparseApplyMomentum" in types and "Unique" in types
    expected, accum = START.copy(), np.zeros_like(START)
    for _ in range(2):
        for i, g in _dedup_grad().items():
            accum[i] = accum[i] * 0.9 + g
            expected[i] -= 0.1 * g + 0.1 * 0.9 * accum[i] if nesterov else 0.1 * accum[i]
    np.testing.assert_allclose(table, expected, rtol=1e-6)
    np.testing.assert_allclose(slots["momentum"], accum)


def test_adagrad_uses_sparse_apply_adagrad():
    types, table, slots = _embedding_step(tf.train.AdagradOptimizer(0.1, initial_accumulator_value=0.5))
    assert "SparseApplyAdagrad" in types
    expected, accum = START.copy(), np.full_like(START, 0.5)
    for _ in range(2):
        for i, g in _dedup_grad().items():
            accum[i] += g * g
            expected[i] -= 0.1 * g / np.sqrt(accum[i])
    np.testing.assert_allclose(table, expected, rtol=1e-6)
    np.testing.assert_allclose(slots["accumulator"], accum)


@pytest.mark.parametrize("centered", [False, True])
def test_rmsprop_uses_sparse_apply_rms_prop(centered):
    optimizer = tf.train.RMSPropOptimizer(0.1, decay=0.8, momentum=0.5, epsilon=1e-3, centered=centered)
    types, table, _ = _embedding_step(optimizer)
    assert ("SparseApplyCenteredRMSProp" if centered else "SparseApplyRMSProp") in types
    expected, ms, mg, mom = START.copy(), np.ones_like(START), np.zeros_like(START), np.zeros_like(START)
    for _ in range(2):
        for i, g in _dedup_grad().items():
            ms[i] += (g * g - ms[i]) * 0.2
            mg[i] += (g - mg[i]) * 0.2
            denominator = ms[i] - mg[i] * mg[i] if centered else ms[i]
            mom[i] = mom[i] * 0.5 + 0.1 * g / np.sqrt(denominator + 1e-3)
            expected[i] -= mom[i]
    np.testing.assert_allclose(table, expected, rtol=1e-6)


def test_adam_is_not_lazy_every_row_moves_once_it_has_momentum():
    types, table, slots = _embedding_step(tf.train.AdamOptimizer(0.1), steps=3)
    assert "ScatterAdd" in types and "ApplyAdam" not in types
    expected, m, v = START.copy(), np.zeros_like(START), np.zeros_like(START)
    grad = np.zeros_like(START)
    for i, g in _dedup_grad().items():
        grad[i] = g
    for step in range(1, 4):
        m = m * 0.9 + grad * 0.1
        v = v * 0.999 + grad * grad * 0.001
        lr = 0.1 * np.sqrt(1 - 0.999 ** step) / (1 - 0.9 ** step)
        expected -= lr * m / (np.sqrt(v) + 1e-8)
    np.testing.assert_allclose(table, expected, atol=1e-5)  # beta1, beta2 are float32 tensors cast to float64
    np.testing.assert_allclose(slots["m"], m, rtol=1e-6)
    np.testing.assert_array_equal(table[0], START[0])  # never looked up: m and v stay zero there


def test_adam_moves_rows_whose_gradient_was_in_an_earlier_step_only():
    """Non-lazy: after a step on rows 1 and 3, a step on row 0 alone still moves rows 1 and 3 (decayed m, v)."""
    table = tf.Variable(START, name="table")
    optimizer = tf.train.AdamOptimizer(0.5)
    first = optimizer.minimize(tf.reduce_sum(tf.gather(table, [1, 3])))
    second = optimizer.minimize(tf.reduce_sum(tf.gather(table, [0])))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(first)
        after_first = sess.run(table)
        sess.run(second)
        after_second = sess.run(table)
    m, v = np.zeros_like(START), np.zeros_like(START)
    expected = START.copy()
    for step, rows in ((1, [1, 3]), (2, [0])):
        grad = np.zeros_like(START)
        grad[rows] = 1.0
        m = m * 0.9 + grad * 0.1
        v = v * 0.999 + grad * grad * 0.001
        expected -= 0.5 * np.sqrt(1 - 0.999 ** step) / (1 - 0.9 ** step) * m / (np.sqrt(v) + 1e-8)
        np.testing.assert_allclose(after_first if step == 1 else after_second, expected, atol=1e-5)
    assert np.all(after_second[[1, 3]] != after_first[[1, 3]])


def test_a_constraint_cannot_apply_to_a_sparse_update():
    table = tf.get_variable("table", initializer=tf.constant(START), constraint=lambda t: tf.clip_by_value(t, 0, 1))
    loss = tf.reduce_sum(tf.gather(table, [0]))
    with pytest.raises(RuntimeError, match="Cannot use a constraint function on a sparse variable."):
        tf.train.GradientDescentOptimizer(0.1).minimize(loss)


def test_compute_gradients_calls_a_callable_loss_and_finds_its_variables():
    used = tf.Variable(2.0, name="used")
    tf.Variable(5.0, name="unused")
    grads_and_vars = tf.train.GradientDescentOptimizer(0.1).compute_gradients(lambda: used * used)
    assert [v.op.name for _, v in grads_and_vars] == ["used"]
    assert run_value(grads_and_vars[0][0]) == 4.0


def run_value(t):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return sess.run(t)


@pytest.mark.parametrize("make", [lambda: tf.train.GradientDescentOptimizer(1.0, use_locking=True),
                                  lambda: tf.train.AdagradOptimizer(1.0, initial_accumulator_value=1.0,
                                                                    use_locking=True),
                                  lambda: tf.train.MomentumOptimizer(1.0, 0.0, use_locking=True)])
def test_locked_sparse_updates_from_many_threads_count_exactly(make):
    """8 threads x 40 steps of one session on one embedding: no update is lost with use_locking."""
    threads, steps = 8, 40
    table = tf.Variable(np.zeros((3, 2)), name="table")
    optimizer = make()
    train = optimizer.minimize(tf.reduce_sum(tf.gather(table, [0, 0, 2])))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        errors = []

        def worker():
            try:
                for _ in range(steps):
                    sess.run(train)
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(e)
        pool = [threading.Thread(target=worker) for _ in range(threads)]
        for t in pool:
            t.start()
        for t in pool:
            t.join()
        assert not errors
        value = sess.run(table)
        slot = {name: sess.run(optimizer.get_slot(table, name)) for name in optimizer.get_slot_names()}
    n = threads * steps
    if isinstance(optimizer, tf.train.AdagradOptimizer):
        np.testing.assert_array_equal(slot["accumulator"], [[1 + 4 * n] * 2, [1, 1], [1 + n] * 2])
        assert value[1].tolist() == [0, 0] and np.all(value[0] < 0)
    else:  # GD and Momentum(0): each step subtracts 2 from row 0 and 1 from row 2
        np.testing.assert_array_equal(value, [[-2 * n] * 2, [0, 0], [-n] * 2])
