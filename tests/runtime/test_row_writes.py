"""Row writes (Scatter*, SparseApply*) change a variable's stored array in place only when nothing else refers to it:
fetched values never change under the user, a failed step is undone from the journaled old rows, and a concurrent
reader never sees half a write (adplace/runtime/variable_state.py, kernels/state.py `_write_rows`)."""
import threading

import numpy as np
import pytest

import adplace as tf
from adplace.runtime.variable_state import RowsUndo, VariableCell, rollback


def _cell_of(sess, variable) -> VariableCell:
    return sess._ctx.variable(variable.op)


def test_a_row_write_keeps_the_stored_array_when_nothing_else_holds_it():
    table = tf.Variable(np.zeros((1000, 4)), name="table")
    add = tf.scatter_add(table, [3, 3, 7], np.ones((3, 4))).op
    with tf.Session() as sess:
        sess.run(table.initializer)
        cell = _cell_of(sess, table)
        stored = id(cell.value)
        for _ in range(5):
            sess.run(add)
        assert id(cell.value) == stored and cell.version == 6  # written in place 5 times, each a new version
        value = sess.run(table)
    assert value[3].tolist() == [10.0] * 4 and value[7].tolist() == [5.0] * 4 and value.sum() == 60.0


def test_a_fetched_value_never_changes_under_the_user():
    table = tf.Variable(np.zeros((5, 2)), name="table")
    add = tf.scatter_add(table, [1], [[1.0, 1.0]])
    with tf.Session() as sess:
        sess.run(table.initializer)
        before = sess.run(table)          # may alias the stored array: the next write must copy
        returned = sess.run(add)          # the op's output is the new stored array
        sess.run(add)
        after = sess.run(table)
    assert before[1].tolist() == [0.0, 0.0]
    assert returned[1].tolist() == [1.0, 1.0]
    assert after[1].tolist() == [2.0, 2.0]


@pytest.mark.parametrize("make_update", [
    lambda t: tf.scatter_add(t, [0, 2, 0], np.full((3, 3), 5.0)),
    lambda t: tf.scatter_nd_update(t, [[1, 1], [2, 0]], [7.0, 8.0]),
    lambda t: tf.train.AdagradOptimizer(1.0).apply_gradients(
        [(tf.IndexedSlices(tf.ones([2, 3], tf.float64), tf.constant([2, 1])), t)])])
def test_a_failed_step_restores_rows_written_in_place(make_update):
    table = tf.Variable(np.arange(12.0).reshape(4, 3), name="table")
    update = make_update(table)
    bad = tf.placeholder(tf.float64, [])
    with tf.control_dependencies([update]):
        failing = tf.check_numerics(bad, "bad value")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        original = sess.run(table).copy()
        with pytest.raises(tf.errors.InvalidArgumentError, match="bad value"):
            sess.run(failing, {bad: np.nan})
        np.testing.assert_array_equal(sess.run(table), original)
        sess.run(update)
        assert not np.array_equal(sess.run(table), original)


def test_rollback_undoes_rows_and_whole_writes_newest_first_on_a_copy():
    cell = VariableCell("v", device=None)
    base = np.zeros((3, 2))
    cell.value = base
    journal: list = []
    with cell.lock:
        cell.store(np.ones((3, 2)), journal)           # a whole write: the old array is journaled
    current = cell.value
    undo = cell.rows_undo((3, 2), np.array([1]))
    current[1] = [5.0, 5.0]                            # then a row write in place
    cell.wrote_in_place(undo, journal)
    assert isinstance(journal[1][1], RowsUndo) and cell.version == 2
    assert rollback(journal) == []
    assert cell.value is base and cell.version == 0
    assert current[1].tolist() == [5.0, 5.0]           # a reader holding the current array sees it unchanged


def test_an_error_inside_a_row_write_leaves_the_variable_as_it_was():
    table = tf.Variable(np.zeros((4, 2), np.float32), name="table")
    indices = tf.placeholder(tf.int32, [None])
    update = tf.scatter_add(table, indices, tf.ones([2, 2]))
    with tf.Session() as sess:
        sess.run(table.initializer)
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"indices\[1\] = 9 is not in \[0, 4\)"):
            sess.run(update, {indices: [0, 9]})
        cell = _cell_of(sess, table)
        assert not cell.mutating
        np.testing.assert_array_equal(sess.run(table), np.zeros((4, 2)))


def test_readers_never_see_half_of_a_row_write():
    """One thread adds 1 to every row in place (each write makes all rows equal again); readers in other threads
    must always see rows that are all equal: the whole write or none of it."""
    rows, writes = 20_000, 300
    table = tf.Variable(np.zeros((rows, 8), np.float32), name="table")
    add = tf.scatter_add(table, np.arange(rows), np.ones((rows, 8), np.float32)).op
    first_and_last = tf.stack([table[0, 0], table[rows - 1, 7]])
    torn, done = [], threading.Event()
    with tf.Session() as sess:
        sess.run(table.initializer)

        def read():
            while not done.is_set():
                first, last = sess.run(first_and_last)
                if first != last:
                    torn.append((first, last))
        readers = [threading.Thread(target=read) for _ in range(2)]
        for t in readers:
            t.start()
        try:
            for _ in range(writes):
                sess.run(add)
        finally:
            done.set()
            for t in readers:
                t.join()
        final = sess.run(table)
    assert torn == []
    assert final.min() == final.max() == writes
