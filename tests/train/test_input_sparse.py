"""SparseTensor inputs to tf.train.batch and friends (through TF's SparseTensorsMap ops): batches of VarLenFeature
examples equal hand-computed ones and real TensorFlow's (a subprocess running tf_input_sparse_peer.py with the same
pipeline); the map ops alone, their errors, and keep_input, joins, shuffling and dynamic padding with sparse inputs."""
import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

import adplace as tf
from adplace.ops import sparse_tensors_map_ops as maps
from tf_peer import needs_tf, run_peer

PEER = Path(__file__).with_name("tf_input_sparse_peer.py")
_spec = importlib.util.spec_from_file_location("tf_input_sparse_peer", PEER)
peer = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(peer)

pytestmark = pytest.mark.usefixtures("no_leaked_threads")


def _sparse_batch(rows: list, width: int | None = None) -> dict:
    """The SparseTensor value of `rows` stacked: row b's values at [b, 0..]; dim 1 is `width` or the longest."""
    indices = [[b, j] for b, row in enumerate(rows) for j in range(len(row))]
    return {"indices": indices, "values": [x for row in rows for x in row],
            "shape": [len(rows), width or max((len(r) for r in rows), default=0)]}


EXPECTED_SINGLE = [{"n": [2.0, 0.0], "v": _sparse_batch([[1, 2], []])},
                   {"n": [1.0, 3.0], "v": _sparse_batch([[3], [4, 5, 6]])},
                   {"n": [1.0], "v": _sparse_batch([[7]])}]
# with enqueue_many each row keeps the minibatch's dim 1 (3, the longest of all five)
EXPECTED_MANY = [{"n": [2.0, 0.0, 1.0], "v": _sparse_batch([[1, 2], [], [3]], 3)},
                 {"n": [3.0, 1.0], "v": _sparse_batch([[4, 5, 6], [7]], 3)}]


@pytest.fixture(scope="module")
def ours():
    return peer.run(tf)


def test_batches_of_var_len_features_are_sparse_tensors(ours):
    assert ours["single"] == EXPECTED_SINGLE
    assert ours["many"] == EXPECTED_MANY


def test_static_shapes_and_ops():
    with tf.Graph().as_default() as graph:
        st = tf.SparseTensor([[0, 1]], [1.5], [2, 3])
        dense = tf.constant([1, 2])
        sparse_out, dense_out = tf.train.batch([st, dense], batch_size=4)
        assert isinstance(sparse_out, tf.SparseTensor) and sparse_out.indices.shape.as_list() == [None, 3]
        assert sparse_out.dense_shape.shape.as_list() == [3] and sparse_out.values.dtype == tf.float32
        assert dense_out.shape.as_list() == [4, 2]
        types = {op.type for op in graph.get_operations()}
        assert {"AddSparseToTensorsMap", "TakeManySparseFromTensorsMap"} <= types
        single = tf.train.batch([st], batch_size=2)  # a list of one gives the one
        assert isinstance(single, tf.SparseTensor)


def test_map_ops_store_and_take():
    with tf.Graph().as_default():
        a = tf.SparseTensor([[0], [2]], [1, 2], [3])
        b = tf.SparseTensor([[1]], [5], [2])
        first = maps.add_sparse_to_tensors_map(a)
        handles = [first, maps.add_sparse_to_tensors_map(b, shared_name=first.op.name)]  # into first's map
        many = maps.add_many_sparse_to_tensors_map(tf.SparseTensor([[0, 1], [2, 0]], [7, 8], [3, 2]),
                                                   shared_name=handles[0].op.name)
        fed = tf.placeholder(tf.int64, [None])
        taken = maps.take_many_sparse_from_tensors_map(first.op, fed)
        with tf.Session() as sess:
            h = sess.run(handles)
            stored = sess.run(many)
            got = sess.run(taken, {fed: h})
            assert got.indices.tolist() == [[0, 0], [0, 2], [1, 1]] and got.values.tolist() == [1, 2, 5]
            assert got.dense_shape.tolist() == [2, 3] and len(stored) == 3 and len(set(stored.tolist())) == 3
            with pytest.raises(tf.errors.InvalidArgumentError, match=f"Unable to find SparseTensor: {h[0]}"):
                sess.run(taken, {fed: h})  # taken already
            rows = sess.run(taken, {fed: stored})  # the minibatch's rows, one of them empty
            assert rows.indices.tolist() == [[0, 1], [2, 0]] and rows.dense_shape.tolist() == [3, 2]
        with pytest.raises(TypeError, match="AddSparseToTensorsMap"):
            maps.take_many_sparse_from_tensors_map(tf.no_op(), [1])
        bad = maps.add_many_sparse_to_tensors_map(tf.SparseTensor([[0]], [1], [3]))
        with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError, match="should be > 1"):
            sess.run(bad)


def _drain(fetch, init_local: bool = True) -> list:
    got = []
    with tf.Session() as sess:
        if init_local:
            sess.run(tf.local_variables_initializer())
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess, coord=coord)
        try:
            while True:
                got.append(sess.run(fetch))
        except tf.errors.OutOfRangeError:
            pass
        coord.request_stop()
        coord.join(threads)
    return got


def _rows(value) -> list:
    """Each row of a 2-D SparseTensorValue as a list of its values."""
    rows = [[] for _ in range(int(value.dense_shape[0]))]
    for (b, _), v in zip(value.indices.tolist(), value.values.tolist()):
        rows[b].append(v)
    return rows


def _examples():
    """A minibatch of peer.VALUES as one SparseTensor, and the row numbers, limited to one epoch."""
    flat = _sparse_batch(peer.VALUES)
    st = tf.SparseTensor(np.array(flat["indices"], np.int64), np.array(flat["values"], np.int64), flat["shape"])
    ids = tf.train.limit_epochs(tf.range(len(peer.VALUES)), num_epochs=1)
    return st, ids


def test_maybe_batch_keeps_the_chosen_rows():
    with tf.Graph().as_default():
        st, ids = _examples()
        keep = tf.constant([True, False, True, True, False])
        batches = _drain(tf.train.maybe_batch([st, ids], keep, batch_size=3, enqueue_many=True,
                                              allow_smaller_final_batch=True))
    (value, got_ids), = batches
    assert got_ids.tolist() == [0, 2, 3] and _rows(value) == [[1, 2], [3], [4, 5, 6]]


def test_batch_join_stores_both_lists_in_one_map():
    with tf.Graph().as_default() as graph:
        first = [tf.SparseTensor([[0]], tf.constant([1], tf.int64), [1]), tf.constant(1)]
        second = [tf.SparseTensor([[0], [1]], tf.constant([2, 3], tf.int64), [2]), tf.constant(2)]
        sparse_out, ids = tf.train.batch_join([first, second], batch_size=2)
        stores = [op for op in graph.get_operations() if op.type == "AddSparseToTensorsMap"]
        assert len(stores) == 2 and stores[1].get_attr("shared_name") == stores[0].name
        with pytest.raises(ValueError, match="Inconsistent SparseTensors list"):
            tf.train.batch_join([first, [tf.constant([5], tf.int64), tf.constant(3)]], batch_size=2)
        with tf.Session() as sess:
            coord = tf.train.Coordinator()
            threads = tf.train.start_queue_runners(sess, coord=coord)
            value, got = sess.run([sparse_out, ids])
            coord.request_stop()
            coord.join(threads)
    for row, i in zip(_rows(value), got.tolist()):
        assert row == ([1] if i == 1 else [2, 3])


def test_shuffle_batch_keeps_each_examples_values_together():
    with tf.Graph().as_default():
        st, ids = _examples()
        batches = _drain(tf.train.shuffle_batch([st, ids], batch_size=2, capacity=10, min_after_dequeue=0, seed=3,
                                                enqueue_many=True, allow_smaller_final_batch=True))
    seen = {}
    for value, got_ids in batches:
        seen.update(zip(got_ids.tolist(), _rows(value)))
    assert seen == dict(enumerate(peer.VALUES))


def test_dynamic_pad_with_sparse_and_dense_inputs():
    with tf.Graph().as_default():
        st, ids = _examples()
        dense = tf.train.limit_epochs(tf.ones([5, 2]), num_epochs=1)
        (value, padded), = _drain(tf.train.batch([st, dense], batch_size=5, enqueue_many=True, dynamic_pad=True))
    assert _rows(value) == peer.VALUES and padded.shape == (5, 2)


@needs_tf
def test_same_batches_as_tensorflow(ours):
    assert json.loads(run_peer(PEER)) == ours
