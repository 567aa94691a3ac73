"""The fused in-place training kernels (kernels/state.py `*_into`, kernels/ftrl.py) against the whole-array
expressions they replace, and the buffer recycling of VariableCell (take_spare): the same values bit for bit, the
previous step's arrays reused only when nothing else refers to them, failed and interrupted steps undone exactly,
locked updates from many threads counted exactly, fetched values never overwritten."""
import threading

import numpy as np
import pytest

import adplace as tf
from adplace.kernels import ftrl, state
from adplace.ops import training_ops as ops
from step_checks import assert_ctrl_c_anywhere_is_all_or_nothing, assert_failing_steps_change_nothing, assert_same


LR, MOM, RHO, EPS = 0.05, 0.9, 0.8, 1e-3
# (id, number of refs, op function, scalars before grad, scalars after grad, attrs, reference expression)
DENSE = [
    ("gd", 1, ops.apply_gradient_descent, (LR,), (), {}, state._gradient_descent),
    ("momentum", 2, ops.apply_momentum, (LR,), (MOM,), {}, state._momentum),
    ("momentum_nesterov", 2, ops.apply_momentum, (LR,), (MOM,), {"use_nesterov": True}, state._momentum),
    ("adam", 3, ops.apply_adam, (0.9 ** 3, 0.999 ** 3, LR, 0.9, 0.999, 1e-7), (), {}, state._adam),
    ("adam_nesterov", 3, ops.apply_adam, (0.9 ** 3, 0.999 ** 3, LR, 0.9, 0.999, 1e-7), (), {"use_nesterov": True},
     state._adam),
    ("rmsprop", 3, ops.apply_rms_prop, (LR, RHO, MOM, EPS), (), {}, state._rms_prop),
    ("centered_rmsprop", 4, ops.apply_centered_rms_prop, (LR, RHO, MOM, 1.0), (), {}, state._centered_rms_prop),
    ("adagrad", 2, ops.apply_adagrad, (LR,), (), {}, state._adagrad),
    ("adagrad_no_slots", 2, ops.apply_adagrad, (LR,), (), {"update_slots": False}, state._adagrad),
    ("adadelta", 3, ops.apply_adadelta, (1.0, RHO, EPS), (), {}, state._adadelta),
    ("ftrl", 3, ops.apply_ftrl, (), (LR, 0.01, 0.1, -0.5), {}, ftrl._ftrl),
    ("ftrl_power", 3, ops.apply_ftrl, (), (LR, 0.0, 0.1, -0.3), {}, ftrl._ftrl),
    ("ftrl_v2", 3, ops.apply_ftrl_v2, (), (LR, 0.01, 0.1, 0.2, -0.5), {}, ftrl._ftrl_v2),
]
SPARSE = [
    ("momentum", 2, ops.sparse_apply_momentum, (LR,), (MOM,), {"use_nesterov": True}, state._momentum),
    ("adagrad", 2, ops.sparse_apply_adagrad, (LR,), (), {}, state._adagrad),
    ("adadelta", 3, ops.sparse_apply_adadelta, (1.0, RHO, EPS), (), {}, state._adadelta),
    ("rmsprop", 3, ops.sparse_apply_rms_prop, (LR, RHO, MOM, EPS), (), {}, state._rms_prop),
    ("centered_rmsprop", 4, ops.sparse_apply_centered_rms_prop, (LR, RHO, MOM, 1.0), (), {},
     state._centered_rms_prop),
    ("ftrl", 3, ops.sparse_apply_ftrl, (), (LR, 0.01, 0.1, -0.5), {}, ftrl._ftrl),
    ("ftrl_v2", 3, ops.sparse_apply_ftrl_v2, (), (LR, 0.01, 0.1, 0.2, -0.4), {}, ftrl._ftrl_v2),
]
SHAPE = (6, 5)


@pytest.fixture(autouse=True)
def _recycle_small_variables(monkeypatch):
    """These tests use small variables: let them recycle buffers as large ones do (state.RECYCLE_MIN_ELEMENTS)."""
    monkeypatch.setattr(state, "RECYCLE_MIN_ELEMENTS", 0)


def _start(n, dtype, rng):
    return [rng.uniform(0.1, 1.0, SHAPE).astype(dtype) for _ in range(n)]


def _scalars(values, dtype):
    return [np.array(v, dtype) for v in values]


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("name, n, apply, before, after, attrs, reference", DENSE, ids=[c[0] for c in DENSE])
def test_each_fused_kernel_equals_the_whole_array_expressions_bit_for_bit(name, n, apply, before, after, attrs,
                                                                           reference, dtype):
    rng = np.random.default_rng(0)
    olds = _start(n, dtype, rng)
    before, after = _scalars(before, dtype), _scalars(after, dtype)
    g = tf.placeholder(dtype, SHAPE)
    refs = [tf.Variable(v) for v in olds]
    train = apply(*refs, *before, g, *after, **attrs)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(4):
            grad = rng.standard_normal(SHAPE).astype(dtype)
            sess.run(train.op, {g: grad})
            olds = [np.asarray(x) for x in reference(np, attrs, *olds, *before, grad, *after)]
            for want, have in zip(olds, sess.run(refs)):
                assert have.dtype == want.dtype
                np.testing.assert_array_equal(have, want)


@pytest.mark.parametrize("name, n, apply, before, after, attrs, reference", SPARSE, ids=[c[0] for c in SPARSE])
def test_each_fused_sparse_kernel_equals_the_expressions_on_its_rows(name, n, apply, before, after, attrs,
                                                                     reference):
    rng = np.random.default_rng(1)
    olds = _start(n, np.float32, rng)
    before, after = _scalars(before, np.float32), _scalars(after, np.float32)
    indices = np.array([4, 0, 4, 2])  # row 4 twice: updated once per occurrence, in order
    rows = rng.standard_normal((4, SHAPE[1])).astype(np.float32)
    refs = [tf.Variable(v) for v in olds]
    train = apply(*refs, *before, rows, indices, *after, **attrs)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train.op)
        got = sess.run(refs)
    want = [v.copy() for v in olds]
    for row, index in zip(rows, indices):
        news = reference(np, attrs, *[v[index] for v in want], *before, row, *after)
        for v, new in zip(want, news):
            v[index] = new
    for w, h in zip(want, got):
        np.testing.assert_array_equal(h, w)


def _adam_graph(shape=SHAPE, use_locking=False):
    w = tf.Variable(np.ones(shape, np.float32), name="w")
    loss = tf.reduce_sum(tf.square(w - 3.0))
    opt = tf.train.AdamOptimizer(0.1, use_locking=use_locking)
    return w, opt, opt.minimize(loss)


def _cells(sess, w, opt):
    return [sess._ctx.variable(v.op) for v in (w, opt.get_slot(w, "m"), opt.get_slot(w, "v"))]


def test_a_step_computes_into_the_arrays_the_step_before_replaced():
    w, opt, train = _adam_graph()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        cells = _cells(sess, w, opt)
        sess.run(train)
        addresses = [set() for _ in cells]
        for _ in range(6):
            sess.run(train)
            for seen, cell in zip(addresses, cells):
                seen.add(cell.value.ctypes.data)
        assert [len(seen) for seen in addresses] == [2, 2, 2]  # two arrays per variable, taking turns


def test_only_variables_of_the_recycling_size_take_their_spares(monkeypatch):
    from adplace.runtime.variable_state import VariableCell
    taken = []
    take_spare = VariableCell.take_spare
    monkeypatch.setattr(VariableCell, "take_spare", lambda cell, like: taken.append(cell) or take_spare(cell, like))

    def train_with(limit):
        monkeypatch.setattr(state, "RECYCLE_MIN_ELEMENTS", limit)
        del taken[:]
        with tf.Graph().as_default():
            w, _, train = _adam_graph((6, 5))
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                for _ in range(3):
                    sess.run(train)
                return len(taken), sess.run(w)

    takes, recycled = train_with(30)
    assert takes == 9  # var, m and v each step: 30 elements reach the limit
    takes, fresh = train_with(31)
    assert takes == 0
    np.testing.assert_array_equal(fresh, recycled)
    assert np.all(recycled > 1.29)  # three Adam steps of about lr each, toward 3


def test_an_array_someone_holds_is_never_written_again():
    w, opt, train = _adam_graph()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        cells = _cells(sess, w, opt)
        held, copies = [], []
        for _ in range(5):
            sess.run(train)
            held.append([cell.value for cell in cells])  # a reader keeping the arrays (as a fetch or Saver would)
            copies.append([cell.value.copy() for cell in cells])
        for arrays, kept in zip(held, copies):
            for array, copy in zip(arrays, kept):
                np.testing.assert_array_equal(array, copy)
        assert len({id(a) for arrays in held for a in arrays}) == 15


def test_fetched_values_are_never_overwritten_by_later_steps():
    w, opt, train = _adam_graph()
    w2 = tf.Variable(np.zeros(4, np.float32), name="w2")
    step2 = ops.apply_gradient_descent(w2, np.float32(0.5), np.ones(4, np.float32))  # w2's value after the step
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        fetched = [sess.run([train, w, step2]) for _ in range(5)]
        kept = [(np.copy(a), np.copy(b)) for _, a, b in fetched]
        for _ in range(4):
            sess.run([train, step2])
    for (_, a, b), (a0, b0) in zip(fetched, kept):
        np.testing.assert_array_equal(a, a0)
        np.testing.assert_array_equal(b, b0)
    assert [float(b[0]) for _, _, b in fetched] == [-0.5, -1.0, -1.5, -2.0, -2.5]


def test_a_step_failing_after_the_update_leaves_variable_and_slots_exactly_as_before():
    w, opt, train = _adam_graph()
    x = tf.placeholder(tf.float32, ())
    with tf.control_dependencies([train]):
        checked = tf.debugging.check_numerics(x, "bad input")  # runs after the update: the step fails late
    variables = [w, opt.get_slot(w, "m"), opt.get_slot(w, "v"), *opt._get_beta_accumulators()]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert_failing_steps_change_nothing(sess, variables, lambda: sess.run(checked, {x: np.nan}),
                                            lambda: sess.run(checked, {x: 1.0}), [0], times=6)
        # the same values as a session that never failed
        with tf.Session() as clean:
            clean.run(tf.global_variables_initializer())
            for _ in range(6):
                clean.run(train)
            assert_same(sess, variables, clean.run(variables))


def test_ctrl_c_anywhere_in_an_adam_step_leaves_it_all_or_nothing():
    assert threading.current_thread() is threading.main_thread()
    g = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    refs = [tf.Variable(np.full((3, 4), v, np.float32)) for v in (1.0, 0.5, 0.25)]
    scalars = _scalars((0.5, 0.9, 0.1, 0.9, 0.999, 1e-7), np.float32)
    train = ops.apply_adam(*refs, *scalars, g)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train.op)
        points = assert_ctrl_c_anywhere_is_all_or_nothing(
            sess, train.op, refs, lambda before: state._adam(np, {}, *before, *scalars, g))
        assert points > 10


@pytest.mark.parametrize("optimizer", ["gd", "momentum", "adam"])
def test_locked_updates_from_many_threads_count_exactly(optimizer):
    threads, steps = 4, 60
    w = tf.Variable(np.zeros(1000, np.float32), name="w")
    if optimizer == "gd":
        train = ops.apply_gradient_descent(w, np.float32(1.0), np.ones(1000, np.float32), use_locking=True)
    elif optimizer == "momentum":  # momentum 0: each step subtracts exactly lr * grad
        accum = tf.Variable(np.zeros(1000, np.float32))
        train = ops.apply_momentum(w, accum, np.float32(1.0), np.ones(1000, np.float32), np.float32(0.0),
                                   use_locking=True)
    else:  # beta1 = beta2 = epsilon = 0 and powers 0: m = v = grad = 1, so each step subtracts exactly lr
        m, v = tf.Variable(np.zeros(1000, np.float32)), tf.Variable(np.zeros(1000, np.float32))
        train = ops.apply_adam(w, m, v, *_scalars((0.0, 0.0, 1.0, 0.0, 0.0, 0.0), np.float32),
                               np.ones(1000, np.float32), use_locking=True)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        errors = []

        def work():
            try:
                for _ in range(steps):
                    sess.run(train.op)
            except Exception as exc:  # noqa: BLE001 - reported below
                errors.append(exc)
        workers = [threading.Thread(target=work) for _ in range(threads)]
        for t in workers:
            t.start()
        for t in workers:
            t.join()
        assert not errors
        value = sess.run(w)
    np.testing.assert_array_equal(value, np.full(1000, -threads * steps, np.float32))


def test_unlocked_writers_never_share_a_buffer():
    # Hogwild: updates may be lost, but each stored array is one writer's whole result, never two writers' mix.
    threads, steps, size = 4, 40, 200_000
    w = tf.Variable(np.zeros(size, np.float32), name="w")
    train = ops.apply_gradient_descent(w, np.float32(1.0), np.ones(size, np.float32))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        seen = []

        def work():
            for _ in range(steps):
                seen.append(sess.run(train))
        workers = [threading.Thread(target=work) for _ in range(threads)]
        for t in workers:
            t.start()
        for t in workers:
            t.join()
        final = sess.run(w)
    for value in [*seen, final]:
        assert value.min() == value.max() and -threads * steps <= value[0] <= -1


def test_a_saver_snapshot_and_restore_keep_their_values_while_steps_recycle_buffers(tmp_path):
    w, opt, train = _adam_graph()
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(3):
            sess.run(train)
        variables = [w, opt.get_slot(w, "m"), opt.get_slot(w, "v")]
        saved_values = sess.run(variables)
        path = saver.save(sess, str(tmp_path / "model"))
        after_save = []
        for _ in range(3):
            sess.run(train)
            after_save.append(sess.run(variables))
        saver.restore(sess, path)
        assert_same(sess, variables, saved_values)
        for expected in after_save:  # the restored values step on exactly as before
            sess.run(train)
            assert_same(sess, variables, expected)


def test_a_scalar_variable_steps_in_place():
    w = tf.Variable(np.float32(2.0))
    m, v = tf.Variable(np.float32(0.0)), tf.Variable(np.float32(0.0))
    train = ops.apply_adam(w, m, v, *_scalars((0.0, 0.0, 1.0, 0.0, 0.0, 0.0), np.float32), np.float32(1.0))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert [float(sess.run(train)) for _ in range(3)] == [1.0, 0.0, -1.0]
