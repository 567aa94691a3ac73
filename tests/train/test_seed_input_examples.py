"""The seed's CSV reading example and its timeout examples (seed 003, "Reading data from graph with reader
operations" and "RunOptions ... timeout_in_ms"), run as written there apart from `import adplace as tf`.

The seed elides parts with `[...]`; each filled part is marked `# [...] filled:` below and kept minimal. The graph the
seed loads ("TO LOAD A GRAPH") needs `features` and `target`, which its text does not define: they come from a
filename queue fed by a placeholder, a TextLineReader and decode_csv (the seed's bullets name them). The checks are
exact counts: every CSV record reaches the instance queue once, and a timed-out dequeue loses no element."""
import threading
import time

import numpy as np
import pytest

import adplace as tf

# Records written to the CSV: (x1, x2, target); x2 is left empty in some lines (decode_csv's default, -5., applies).
RECORDS = [(float(i), None if i % 3 == 0 else float(10 * i), i) for i in range(1, 9)]


def _write_csv(path, records) -> str:
    with open(path, "w") as fh:
        fh.write("x1, x2, target\n")  # a header line, skipped by the reader
        for x1, x2, target in records:
            fh.write(f"{x1},{'' if x2 is None else x2},{target}\n")
    return str(path)


def _expected(records) -> list:
    return sorted((x1, -5.0 if x2 is None else x2, t) for x1, x2, t in records)


def _load_graph():
    """The seed's "TO LOAD A GRAPH" text, after the (elided) reader part; returns the names its other snippets use."""
    # [...] filled: the filename queue fed by a placeholder and closed, a TextLineReader, decode_csv -> features, target.
    filename_queue = tf.FIFOQueue(capacity=10, dtypes=[tf.string], shapes=[()])
    filename = tf.placeholder(tf.string)
    enqueue_filename = filename_queue.enqueue([filename])
    close_filename_queue = filename_queue.close()
    reader = tf.TextLineReader(skip_header_lines=1)
    key, value = reader.read(filename_queue)
    x1, x2, target = tf.decode_csv(value, record_defaults=[[-1.], [-5.], [5]])
    features = tf.stack([x1, x2])
    # The seed, verbatim:
    instance_queue = tf.RandomShuffleQueue(
        capacity=10,
        min_after_dequeue=2,
        dtypes=[tf.float32, tf.int32],
        shapes=[[2], []],
        name="instance_q",
        shared_name="shared_instance_q")

    enqueue_instance = instance_queue.enqueue([features, target])
    close_instance_queue = instance_queue.close()
    return {"filename": filename, "enqueue_filename": enqueue_filename, "close_filename_queue": close_filename_queue,
            "enqueue_instance": enqueue_instance, "close_instance_queue": close_instance_queue,
            "instance_queue": instance_queue}


def _drain(sess, queue) -> list:
    """Every element left in a closed queue, as (x1, x2, target) tuples."""
    dequeue, out = queue.dequeue(), []
    while True:
        try:
            feats, target = sess.run(dequeue)
        except tf.errors.OutOfRangeError:
            return out
        out.append((float(feats[0]), float(feats[1]), int(target)))


def test_the_seed_reads_every_csv_record_into_the_instance_queue_once(tmp_path):
    g = _load_graph()
    enqueue_filename, close_filename_queue = g["enqueue_filename"], g["close_filename_queue"]
    enqueue_instance, close_instance_queue, filename = g["enqueue_instance"], g["close_instance_queue"], g["filename"]
    csv = _write_csv(tmp_path / "my_test.csv", RECORDS)
    assert g["instance_queue"].queue_ref.op.name == "instance_q"
    # The seed's "TO RUN THE GRAPH", verbatim but for the file's path; `[...]` (the session's target) filled: none.
    with tf.Session() as sess:
        sess.run(enqueue_filename, feed_dict={filename: csv})
        sess.run(close_filename_queue)
        try:
            while True:
                sess.run(enqueue_instance)
        except tf.errors.OutOfRangeError as ex:  # noqa: F841 - the seed names it
            pass  # no more records in the current file and no more files to read
        sess.run(close_instance_queue)
        got = _drain(sess, g["instance_queue"])
    assert sorted(got) == _expected(RECORDS)  # each record once, x2's default where the CSV left it empty


def test_a_second_session_trains_from_the_shared_instance_queue_while_the_seed_fills_it(tmp_path):
    """More records than the queue's capacity (10): the seed's enqueue loop blocks until a consumer - here another
    session, reaching the queue through its shared_name "shared_instance_q" - dequeues; every record arrives once."""
    records = [(float(i), float(-i), i) for i in range(57)]
    g = _load_graph()
    enqueue_filename, close_filename_queue = g["enqueue_filename"], g["close_filename_queue"]
    enqueue_instance, close_instance_queue, filename = g["enqueue_instance"], g["close_instance_queue"], g["filename"]
    consumer_queue = tf.RandomShuffleQueue(capacity=10, min_after_dequeue=2, dtypes=[tf.float32, tf.int32],
                                           shapes=[[2], []], name="trainer_q", shared_name="shared_instance_q")
    received = []
    trainer = tf.Session()
    consumer = threading.Thread(target=lambda: received.extend(_drain(trainer, consumer_queue)))
    consumer.start()
    try:  # (a deadline, so that a queue not shared would fail the test instead of blocking the enqueue forever)
        with tf.Session(config=tf.ConfigProto(operation_timeout_in_ms=60_000)) as sess:
            sess.run(enqueue_filename, feed_dict={filename: _write_csv(tmp_path / "my_test.csv", records)})
            sess.run(close_filename_queue)
            try:
                while True:
                    sess.run(enqueue_instance)
            except tf.errors.OutOfRangeError:
                pass  # no more records in the current file and no more files to read
            sess.run(close_instance_queue)
            consumer.join(timeout=60)
    finally:
        trainer.close()
    assert not consumer.is_alive()
    assert sorted(received) == _expected(records)


def _filled_graph_and_session(tmp_path, records, config=None):
    """The seed's elided `[...]` before its timeout examples: the graph loaded, a session (with `config`) that has
    read `records` into the instance queue (not closed), and `dequeue_prediction`: a dequeue from that queue, which
    waits while it holds no more than min_after_dequeue (2) elements."""
    g = _load_graph()
    dequeue_prediction = g["instance_queue"].dequeue()
    sess = tf.Session(config=config)
    sess.run(g["enqueue_filename"], feed_dict={g["filename"]: _write_csv(tmp_path / "my_test.csv", records)})
    sess.run(g["close_filename_queue"])
    for _ in records:
        sess.run(g["enqueue_instance"])
    return g, dequeue_prediction, sess


def _after_timeout(sess, g, records) -> None:
    """No element was lost: the queue still holds every record, and once closed hands each out once."""
    assert sess.run(g["instance_queue"].size()) == len(records)
    sess.run(g["close_instance_queue"])
    assert sorted(_drain(sess, g["instance_queue"])) == _expected(records)


def test_run_options_timeout_in_ms_ends_a_waiting_dequeue_with_deadline_exceeded(tmp_path):
    records = RECORDS[:2]
    g, dequeue_prediction, sess = _filled_graph_and_session(tmp_path, records)
    timed_out = False
    with sess:
        # The seed, verbatim from here ([...] before: _filled_graph_and_session; [...] in the handler: the flag).
        run_options = tf.RunOptions()
        run_options.timeout_in_ms = 1000  # 1s timeout
        started = time.monotonic()
        try:
            pred = sess.run(dequeue_prediction, options=run_options)
        except tf.errors.DeadlineExceededError as ex:
            timed_out = ex  # the dequeue operation timed out after 1s
        waited = time.monotonic() - started
        assert timed_out and "pred" not in locals()
        assert 0.5 <= waited < 30  # it waited for the deadline, and the deadline ended the wait
        _after_timeout(sess, g, records)


def test_config_operation_timeout_in_ms_ends_a_waiting_dequeue_with_deadline_exceeded(tmp_path):
    records = RECORDS[:2]
    # The seed, verbatim ([...] after the session: the records read, as in _filled_graph_and_session).
    config = tf.ConfigProto()
    config.operation_timeout_in_ms = 1000
    # 1s timeout for every operation
    g, dequeue_prediction, sess = _filled_graph_and_session(tmp_path, records, config=config)
    timed_out = False
    with sess:
        started = time.monotonic()
        try:
            pred = sess.run(dequeue_prediction)
        except tf.errors.DeadlineExceededError as ex:
            timed_out = ex  # the dequeue operation timed out after 1s
        waited = time.monotonic() - started
        assert timed_out and "pred" not in locals()
        assert 0.5 <= waited < 30
        # Every operation has the deadline: a blocked enqueue (the queue full at its capacity of 10) times out too.
        for i in range(8):
            sess.run(g["instance_queue"].enqueue([np.float32([100 + i, 0]), 100 + i]))
        with pytest.raises(tf.errors.DeadlineExceededError):
            sess.run(g["instance_queue"].enqueue([np.float32([0, 0]), -1]))
        assert sess.run(g["instance_queue"].size()) == 10
        sess.run(g["close_instance_queue"])
        assert sorted(_drain(sess, g["instance_queue"])) == sorted(
            _expected(records) + [(100.0 + i, 0.0, 100 + i) for i in range(8)])


def test_a_dequeue_that_can_complete_is_not_cut_short_by_the_timeout(tmp_path):
    """With more than min_after_dequeue elements the same dequeue returns at once under the same 1 s RunOptions."""
    records = RECORDS[:5]
    g, dequeue_prediction, sess = _filled_graph_and_session(tmp_path, records)
    run_options = tf.RunOptions()
    run_options.timeout_in_ms = 1000
    with sess:
        feats, target = sess.run(dequeue_prediction, options=run_options)
        assert (float(feats[0]), float(feats[1]), int(target)) in _expected(records)
        assert sess.run(g["instance_queue"].size()) == 4
