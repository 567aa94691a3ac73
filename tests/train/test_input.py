"""TF1's input producers and batchers (tf.train.string_input_producer, slice_input_producer, batch, shuffle_batch,
batch_join, maybe_*, limit_epochs) run by queue runners under a Coordinator: exact epochs, exact element counts,
alignment, shapes, padding, the smaller final batch; and tf.QueueBase.from_list choosing a queue at run time."""
import collections

import numpy as np
import pytest

import adplace as tf

pytestmark = pytest.mark.usefixtures("no_leaked_threads")


def _drain(fetches, init_local=True, before=None):
    """Every value of `fetches` until OutOfRangeError, with the default graph's queue runners running under a
    Coordinator that is joined at the end."""
    got = []
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        if init_local:
            sess.run(tf.local_variables_initializer())
        if before is not None:
            sess.run(before)
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess, coord=coord)
        try:
            while True:
                got.append(sess.run(fetches))
        except tf.errors.OutOfRangeError:
            pass
        finally:
            coord.request_stop()
            coord.join(threads, stop_grace_period_secs=5)
    return got


def _strings(seed, shuffle):
    with tf.Graph().as_default():
        queue = tf.train.string_input_producer([b"a", b"b", b"c", b"d", b"e"], num_epochs=2, shuffle=shuffle,
                                               seed=seed)
        return _drain(queue.dequeue())


def test_string_input_producer_yields_each_string_once_per_epoch_then_out_of_range():
    assert _strings(None, shuffle=False) == [b"a", b"b", b"c", b"d", b"e"] * 2
    shuffled = _strings(7, shuffle=True)
    assert len(shuffled) == 10
    for epoch in (shuffled[:5], shuffled[5:]):  # shuffled within each epoch, never across
        assert sorted(epoch) == [b"a", b"b", b"c", b"d", b"e"]
    assert _strings(7, shuffle=True) == shuffled  # the seed fixes the order
    assert shuffled != [b"a", b"b", b"c", b"d", b"e"] * 2


def test_producer_graph_follows_tf_names_collections_and_summary():
    with tf.Graph().as_default():
        queue = tf.train.string_input_producer(["x"], num_epochs=1, capacity=8)
        assert queue.name == "input_producer"
        [epochs] = tf.local_variables()
        assert epochs.op.name == "input_producer/limit_epochs/epochs"
        assert not tf.trainable_variables()
        [runner] = tf.get_collection(tf.GraphKeys.QUEUE_RUNNERS)
        assert runner.queue is queue
        [summary] = tf.get_collection(tf.GraphKeys.SUMMARIES)
        assert summary.op.name == "input_producer/fraction_of_8_full"


def test_string_input_producer_checks_its_input():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="non-null input tensor"):
            tf.train.string_input_producer([])
        empty = tf.constant([], dtype=tf.string)  # a tensor: checked when the producer runs
        queue = tf.train.string_input_producer(empty, shuffle=False)
        assert queue.shapes == [tf.TensorShape([])]
        with tf.Session() as sess:
            coord = tf.train.Coordinator()
            threads = tf.train.start_queue_runners(sess, coord=coord)
            with pytest.raises(tf.errors.InvalidArgumentError):
                coord.join(threads, stop_grace_period_secs=5)


def test_limit_epochs_raises_after_the_limit_and_checks_num_epochs():
    with tf.Graph().as_default():
        value = tf.train.limit_epochs(tf.constant(3), num_epochs=2)
        with pytest.raises(ValueError, match="must be > 0"):
            tf.train.limit_epochs(tf.constant(3), num_epochs=0)
        same = tf.constant(1)
        assert tf.train.limit_epochs(same) is same
        with tf.Session() as sess:
            sess.run(tf.local_variables_initializer())
            assert sess.run(value) == 3 and sess.run(value) == 3
            with pytest.raises(tf.errors.OutOfRangeError):
                sess.run(value)


def test_range_input_producer_counts_each_number_per_epoch():
    with tf.Graph().as_default():
        queue = tf.train.range_input_producer(6, num_epochs=3, seed=1)
        got = _drain(queue.dequeue())
    assert sorted(got) == sorted(list(range(6)) * 3)


def test_slice_input_producer_keeps_the_tensors_aligned():
    n = 20
    with tf.Graph().as_default():
        labels = np.arange(n, dtype=np.int32)
        images = np.stack([labels * 10, labels * 10 + 1], axis=1).astype(np.float32)
        image, label = tf.train.slice_input_producer([images, labels], num_epochs=2, shuffle=True, seed=3)
        assert image.shape.as_list() == [2] and label.shape.as_list() == []
        got = _drain([image, label])
    assert len(got) == 2 * n
    for img, lab in got:
        np.testing.assert_array_equal(img, [lab * 10, lab * 10 + 1])
    assert collections.Counter(int(lab) for _, lab in got) == {i: 2 for i in range(n)}
    assert [int(lab) for _, lab in got[:n]] != list(range(n))  # shuffled


def test_batch_with_enqueue_many_gives_shapes_values_and_the_remainder():
    with tf.Graph().as_default():
        data = tf.train.limit_epochs(np.arange(10, dtype=np.int64).reshape(5, 2), num_epochs=1)
        names = tf.train.limit_epochs(tf.constant([b"a", b"b", b"c", b"d", b"e"]), num_epochs=1)
        full = tf.train.batch([data, names], batch_size=2, enqueue_many=True)
        assert full[0].shape.as_list() == [2, 2] and full[1].shape.as_list() == [2]
    with tf.Graph().as_default():
        data = tf.train.limit_epochs(np.arange(10, dtype=np.int64).reshape(5, 2), num_epochs=1)
        x = tf.train.batch([data], batch_size=2, enqueue_many=True, allow_smaller_final_batch=True)
        assert isinstance(x, tf.Tensor) and x.shape.as_list() == [None, 2]  # one tensor in, the tensor out (TF)
        got = _drain(x)
    np.testing.assert_array_equal(got[0], [[0, 1], [2, 3]])
    np.testing.assert_array_equal(got[1], [[4, 5], [6, 7]])
    np.testing.assert_array_equal(got[2], [[8, 9]])
    assert len(got) == 3


def test_batch_without_smaller_final_batch_drops_the_remainder():
    with tf.Graph().as_default():
        x = tf.train.limit_epochs(tf.range(7), num_epochs=1)
        b = tf.train.batch([x], batch_size=3, enqueue_many=True)
        got = _drain(b)
    assert [v.tolist() for v in got] == [[0, 1, 2], [3, 4, 5]]


def test_batch_of_single_examples_with_a_dict_and_several_threads_counts_each_once():
    n = 300
    with tf.Graph().as_default():
        counter = tf.train.range_input_producer(n, num_epochs=1, shuffle=False).dequeue()
        out = tf.train.batch({"i": counter, "sq": counter * counter}, batch_size=7, num_threads=4, capacity=16,
                             allow_smaller_final_batch=True)
        assert set(out) == {"i", "sq"}
        assert len(tf.get_collection(tf.GraphKeys.QUEUE_RUNNERS)[-1].enqueue_ops) == 4
        got = _drain(out)
    seen = np.concatenate([g["i"] for g in got])
    np.testing.assert_array_equal(np.sort(seen), np.arange(n))
    for g in got:
        np.testing.assert_array_equal(g["sq"], g["i"] ** 2)
    assert all(len(g["i"]) == 7 for g in got[:-1])


def test_shuffle_batch_with_a_seed_holds_exactly_the_inputs():
    n = 50

    def run():
        with tf.Graph().as_default():
            x = tf.train.limit_epochs(tf.range(n), num_epochs=1)
            b = tf.train.shuffle_batch([x], batch_size=10, capacity=40, min_after_dequeue=20, seed=5,
                                         enqueue_many=True)
            assert b.shape.as_list() == [10]
            [summary] = tf.get_collection(tf.GraphKeys.SUMMARIES)
            assert summary.op.name == "shuffle_batch/fraction_over_20_of_20_full"
            return np.concatenate(_drain(b))

    got = run()
    np.testing.assert_array_equal(np.sort(got), np.arange(n))
    assert got.tolist() != list(range(n))
    np.testing.assert_array_equal(run(), got)  # single-threaded and seeded: reproducible
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="must be bigger than min_after_dequeue"):
            tf.train.shuffle_batch([tf.constant(1)], batch_size=2, capacity=10, min_after_dequeue=10)


def test_shuffle_batch_with_smaller_final_batch_returns_every_element():
    with tf.Graph().as_default():
        x = tf.train.limit_epochs(tf.range(23), num_epochs=1)
        b = tf.train.shuffle_batch([x], batch_size=5, capacity=30, min_after_dequeue=10, seed=1,
                                     enqueue_many=True, allow_smaller_final_batch=True)
        got = _drain(b)
    assert [len(g) for g in got] == [5, 5, 5, 5, 3]
    np.testing.assert_array_equal(np.sort(np.concatenate(got)), np.arange(23))


def test_dynamic_pad_pads_each_batch_to_its_longest_example():
    with tf.Graph().as_default():
        n = tf.train.range_input_producer(4, num_epochs=1, shuffle=False).dequeue()
        ragged = tf.range(n + 1)  # [0], [0, 1], [0, 1, 2], ...
        length = tf.size(ragged)
        b, lengths = tf.train.batch([ragged, length], batch_size=2, dynamic_pad=True)
        assert b.shape.as_list() == [2, None]
        got = _drain([b, lengths])
    np.testing.assert_array_equal(got[0][0], [[0, 0], [0, 1]])
    np.testing.assert_array_equal(got[1][0], [[0, 1, 2, 0], [0, 1, 2, 3]])
    assert [g[1].tolist() for g in got] == [[1, 2], [3, 4]]


def test_batch_join_takes_every_example_of_two_producers():
    with tf.Graph().as_default():
        a = tf.train.range_input_producer(10, num_epochs=1, shuffle=False).dequeue()
        b = tf.train.range_input_producer(5, num_epochs=1, shuffle=False).dequeue() + 100
        out = tf.train.batch_join([[a, tf.constant(0)], [b, tf.constant(1)]], batch_size=3,
                                  allow_smaller_final_batch=True)
        [runner] = [r for r in tf.get_collection(tf.GraphKeys.QUEUE_RUNNERS) if len(r.enqueue_ops) == 2]
        assert runner.queue.name.startswith("batch_join")
        got = _drain(out)
    values = np.concatenate([g[0] for g in got])
    sources = np.concatenate([g[1] for g in got])
    assert sorted(values.tolist()) == list(range(10)) + list(range(100, 105))
    np.testing.assert_array_equal(sources, (values >= 100).astype(np.int32))
    with tf.Graph().as_default():
        with pytest.raises(TypeError, match="Expected types to be consistent"):
            tf.train.batch_join([[tf.constant(1)], [tf.constant(1.0)]], batch_size=2)


def test_shuffle_batch_join_with_dicts():
    with tf.Graph().as_default():
        a = tf.train.range_input_producer(8, num_epochs=1, shuffle=False).dequeue()
        b = tf.train.range_input_producer(8, num_epochs=1, shuffle=False).dequeue() + 8
        out = tf.train.shuffle_batch_join([{"v": a}, {"v": b}], batch_size=4, capacity=12, min_after_dequeue=4,
                                          seed=2)
        assert set(out) == {"v"} and out["v"].shape.as_list() == [4]
        got = _drain(out)
    np.testing.assert_array_equal(np.sort(np.concatenate([g["v"] for g in got])), np.arange(16))


def test_maybe_batch_keeps_only_what_keep_input_selects():
    with tf.Graph().as_default():
        x = tf.train.limit_epochs(tf.range(10), num_epochs=1)
        evens = tf.train.maybe_batch([x], keep_input=tf.equal(x % 2, 0), batch_size=2, enqueue_many=True,
                                       allow_smaller_final_batch=True)
        got = _drain(evens)
    assert np.concatenate(got).tolist() == [0, 2, 4, 6, 8]
    with tf.Graph().as_default():
        i = tf.train.range_input_producer(10, num_epochs=1, shuffle=False).dequeue()
        odd = tf.train.maybe_shuffle_batch([i], batch_size=2, capacity=10, min_after_dequeue=0,
                                             keep_input=tf.equal(i % 2, 1), seed=1, allow_smaller_final_batch=True)
        got = _drain(odd)
    assert sorted(np.concatenate(got).tolist()) == [1, 3, 5, 7, 9]
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="cannot be a vector"):
            tf.train.maybe_batch([tf.constant(1)], keep_input=[True], batch_size=1)


def test_queue_from_list_selects_the_queue_at_run_time():
    with tf.Graph().as_default():
        q0 = tf.FIFOQueue(4, tf.int32, shapes=[[]])
        q1 = tf.FIFOQueue(4, tf.int32, shapes=[[]])
        which = tf.placeholder(tf.int32, [])
        chosen = tf.QueueBase.from_list(which, [q0, q1])
        enqueue = chosen.enqueue(which + 10)
        dequeue = chosen.dequeue()
        sizes = [q0.size(), q1.size()]
        with tf.Session() as sess:
            sess.run(enqueue, {which: 1})
            sess.run(enqueue, {which: 1})
            sess.run(enqueue, {which: 0})
            assert sess.run(sizes) == [1, 2]
            assert sess.run(dequeue, {which: 0}) == 10
            assert sess.run(dequeue, {which: 1}) == 11
            assert sess.run(sizes) == [0, 1]
            with pytest.raises(tf.errors.InvalidArgumentError):
                sess.run(dequeue, {which: 2})


def test_csv_files_through_shuffle_batch(tmp_path):
    if not hasattr(tf, "TextLineReader"):
        pytest.skip("tf.TextLineReader is not in adplace yet")
    paths = []
    for f in range(2):
        path = tmp_path / f"part{f}.csv"
        path.write_text("".join(f"{10 * f + r},{(10 * f + r) * 0.5}\n" for r in range(10)))
        paths.append(str(path))
    with tf.Graph().as_default():
        files = tf.train.string_input_producer(paths, num_epochs=1, seed=4)
        _, line = tf.TextLineReader().read(files)
        key, value = tf.decode_csv(line, record_defaults=[[0], [0.0]])
        keys, values = tf.train.shuffle_batch([key, value], batch_size=4, capacity=20, min_after_dequeue=5, seed=4,
                                              allow_smaller_final_batch=True)
        got = _drain([keys, values])
    keys = np.concatenate([g[0] for g in got])
    values = np.concatenate([g[1] for g in got])
    np.testing.assert_array_equal(np.sort(keys), np.arange(20))
    np.testing.assert_allclose(values, keys * 0.5)
