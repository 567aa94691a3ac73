"""A sparse optimizer step costs the rows it touches (issue #24, opt_adagrad_sparse): NumPy's `ufunc.at` on rows of
a 2-D array (UnsortedSegmentSum of the IndexedSlices' deduplication, Scatter*) runs as rounds of gather, ufunc,
scatter (kernels/repeated_index.py), the step writes the table in place, journaling the old rows it gathered anyway,
and updates the gathered rows with the compiled loops of kernels/fused_updates.py. Values equal the dense NumPy
reference on the touched rows, untouched rows and fetched values never change, a failed step is undone."""
import numpy as np
import pytest

import adplace as tf
from adplace.kernels import fused_updates, repeated_index
from adplace.ops import training_ops as ops
from adplace.runtime import variable_state

ROWS, COLS, LR, INITIAL = 5000, 16, 0.1, 0.1


@pytest.fixture
def calls(monkeypatch) -> list:
    """The names of the compiled update loops run (kernels/fused_updates.py), in order."""
    names, real = [], fused_updates._loop
    monkeypatch.setattr(fused_updates, "_loop", lambda name, dtype: names.append(name) or real(name, dtype))
    return names


@pytest.fixture
def round_plans(monkeypatch) -> list:
    """The `limit` of each `rounds` call (None for the kernels' own rounds, the limit for the ufunc.at path)."""
    limits, real = [], repeated_index.rounds
    monkeypatch.setattr(repeated_index, "rounds", lambda rows, limit=None: limits.append(limit) or real(rows, limit))
    return limits


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")  # int32/float32 products, in both forms
@pytest.mark.parametrize("ufunc", ["add", "subtract", "multiply", "maximum", "minimum"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
@pytest.mark.parametrize("repeats", [1, 3, 8, 9, 40])  # over 8 rounds: NumPy's ufunc.at itself
def test_ufunc_at_on_rows_equals_numpy_bit_for_bit(round_plans, ufunc, dtype, repeats):
    rng = np.random.default_rng(repeats)
    target = (rng.standard_normal((50, 7)) * 10).astype(dtype)
    rows = np.concatenate([rng.permutation(50)[:20], np.full(repeats - 1, 4)]).astype(np.int64)
    rng.shuffle(rows)
    values = (rng.standard_normal((rows.size, 7)) * 10).astype(dtype)
    expected = target.copy()
    getattr(np, ufunc).at(expected, rows, values)
    repeated_index.ufunc_at(np, ufunc, target, rows, values)
    np.testing.assert_array_equal(target, expected)
    assert round_plans == [repeated_index._MAX_ROUNDS]


@pytest.mark.parametrize("case", ["negative rows", "other dtype", "broadcast values", "1-D target"])
def test_ufunc_at_keeps_numpy_where_rounds_would_differ(round_plans, case):
    target = np.arange(12.0).reshape(4, 3)
    rows, values = np.array([0, 3, 1]), np.ones((3, 3))
    if case == "negative rows":
        rows = np.array([-1, 3, 1])  # -1 and 3 name the same row: it gets both updates
    elif case == "other dtype":
        values = values.astype(np.float32)
    elif case == "broadcast values":
        values = np.ones(3)
    else:
        target, values = target[:, 0].copy(), np.ones(3)
    expected = target.copy()
    np.add.at(expected, rows, values)
    repeated_index.ufunc_at(np, "add", target, rows, values)
    np.testing.assert_array_equal(target, expected)
    assert round_plans == []


def _adagrad_graph(dtype=np.float32):
    table = tf.Variable(np.random.default_rng(0).standard_normal((ROWS, COLS)).astype(dtype), name="table")
    values = tf.placeholder(dtype, [None, COLS], name="values")
    indices = tf.placeholder(tf.int64, [None], name="indices")
    opt = tf.train.AdagradOptimizer(LR, initial_accumulator_value=INITIAL)
    train = opt.apply_gradients([(tf.IndexedSlices(values, indices, tf.constant([ROWS, COLS], tf.int64)), table)])
    return table, opt.get_slot(table, "accumulator"), values, indices, train


def _reference_step(var, accum, grad, indices):
    """Adagrad on the deduplicated rows, as whole NumPy arrays: the sum of a row's gradients, then the dense step."""
    dense = np.zeros_like(var)
    np.add.at(dense, indices, grad)
    touched = np.unique(indices)
    g = dense[touched]
    accum[touched] = accum[touched] + g * g
    lr = var.dtype.type(np.float32(LR))  # the optimizer's float32 learning rate, cast to the variable's type
    var[touched] = var[touched] - g * lr / np.sqrt(accum[touched])


def _feeds(rng, steps, nnz=300, dtype=np.float32):
    feeds = []
    for _ in range(steps):
        indices = rng.choice(ROWS, nnz, replace=False)
        indices[:40] = indices[40:80]  # repeated rows: the deduplication sums them
        feeds.append((rng.standard_normal((nnz, COLS)).astype(dtype), indices.astype(np.int64)))
    return feeds


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sparse_adagrad_equals_the_numpy_reference_and_leaves_other_rows_alone(dtype):
    table, accum, values, indices, train = _adagrad_graph(dtype)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        var_np, accum_np = sess.run([table, accum])
        var_np, accum_np = var_np.copy(), accum_np.copy()
        cell = sess._ctx.variable(table.op)
        stored = id(cell.value)
        touched = np.zeros(ROWS, bool)
        for grad, idx in _feeds(np.random.default_rng(1), 5, dtype=dtype):
            sess.run(train, {values: grad, indices: idx})
            _reference_step(var_np, accum_np, grad, idx)
            touched[idx] = True
        assert id(cell.value) == stored  # written in place: no copy of the table per step
        have_var, have_accum = sess.run([table, accum])
    np.testing.assert_allclose(have_var[touched], var_np[touched], rtol=1e-6)
    np.testing.assert_allclose(have_accum[touched], accum_np[touched], rtol=1e-6)
    np.testing.assert_array_equal(have_var[~touched], var_np[~touched])  # never touched: the initial values
    np.testing.assert_array_equal(have_accum[~touched], np.full((np.count_nonzero(~touched), COLS), INITIAL, dtype))


def test_a_failed_sparse_step_leaves_table_and_accumulator_exactly_as_before():
    table, accum, values, indices, train = _adagrad_graph()
    bad = tf.placeholder(tf.float32, [])
    with tf.control_dependencies([train]):
        failing = tf.check_numerics(bad, "bad value")  # runs after the row writes: the step fails late
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for grad, idx in _feeds(np.random.default_rng(2), 3):
            feed = {values: grad, indices: idx}
            before = [a.copy() for a in sess.run([table, accum])]
            with pytest.raises(tf.errors.InvalidArgumentError, match="bad value"):
                sess.run(failing, {**feed, bad: np.nan})
            for have, want in zip(sess.run([table, accum]), before):
                np.testing.assert_array_equal(have, want)
            sess.run(failing, {**feed, bad: 1.0})
            assert not np.array_equal(sess.run(table)[idx], before[0][idx])


def test_a_value_fetched_before_a_sparse_step_keeps_its_values():
    table, accum, values, indices, train = _adagrad_graph()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        fetched, kept = [], []
        for grad, idx in _feeds(np.random.default_rng(3), 4):
            value, slot = sess.run([table, accum])
            fetched.append((value, slot))
            kept.append((value.copy(), slot.copy()))
            sess.run(train, {values: grad, indices: idx})
            assert not np.array_equal(sess.run(table)[idx], value[idx])
    for (value, slot), (value0, slot0) in zip(fetched, kept):
        np.testing.assert_array_equal(value, value0)
        np.testing.assert_array_equal(slot, slot0)


def test_the_undo_record_holds_each_touched_row_once():
    rows = np.array([9, 2, 9, 5, 2, 2], np.int64)
    np.testing.assert_array_equal(variable_state._distinct(rows), [2, 5, 9])
    np.testing.assert_array_equal(variable_state._distinct(np.array([4])), [4])
    assert variable_state._distinct(np.array([], np.int64)).size == 0


LR_, MOM, RHO, EPS = 0.05, 0.9, 0.8, 1e-3
# (id, number of refs, op function, scalars before grad, scalars after grad)
SPARSE = [
    ("momentum", 2, ops.sparse_apply_momentum, (LR_,), (MOM,)),
    ("adagrad", 2, ops.sparse_apply_adagrad, (LR_,), ()),
    ("adadelta", 3, ops.sparse_apply_adadelta, (1.0, RHO, EPS), ()),
    ("rmsprop", 3, ops.sparse_apply_rms_prop, (LR_, RHO, MOM, EPS), ()),
    ("centered_rmsprop", 4, ops.sparse_apply_centered_rms_prop, (LR_, RHO, MOM, 1.0), ()),
    ("ftrl", 3, ops.sparse_apply_ftrl, (), (LR_, 0.01, 0.1, -0.5)),
    ("ftrl_power", 3, ops.sparse_apply_ftrl, (), (LR_, 0.01, 0.1, -0.6)),
    ("ftrl_v2", 3, ops.sparse_apply_ftrl_v2, (), (LR_, 0.01, 0.1, 0.2, -0.5)),
]


def _sparse_run(n, apply, before, after, indices, dtype):
    rng = np.random.default_rng(4)
    refs = [tf.Variable(rng.uniform(0.1, 1.0, (40, 8)).astype(dtype)) for _ in range(n)]
    grad = rng.standard_normal((indices.size, 8)).astype(dtype)
    train = apply(*refs, *[np.asarray(x, dtype) for x in before], grad, indices,
                  *[np.asarray(x, dtype) for x in after])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(3):
            sess.run(train.op)
        return sess.run(refs)


@pytest.mark.skipif(not fused_updates.cpu_fusion.available(), reason="needs Numba (the jit extra)")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("indices", [[3, 17, 0, 39, 8], [3, 17, 3, 0, 3, 8]], ids=["distinct", "repeated"])
@pytest.mark.parametrize("name, n, apply, before, after", SPARSE, ids=[case[0] for case in SPARSE])
def test_sparse_kernels_with_the_compiled_loops_equal_them_without(monkeypatch, calls, name, n, apply, before,
                                                                   after, indices, dtype):
    monkeypatch.setattr(fused_updates, "LOOP_MIN_ELEMENTS", 1)  # the gathered rows here are small
    indices = np.array(indices, np.int64)
    fused = _sparse_run(n, apply, before, after, indices, dtype)
    assert calls  # the loops ran on the gathered rows
    monkeypatch.setenv("ADPLACE_CPU_FUSION", "0")
    for a, b in zip(fused, _sparse_run(n, apply, before, after, indices, dtype), strict=True):
        np.testing.assert_array_equal(a, b)
