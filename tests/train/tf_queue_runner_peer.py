"""Real TensorFlow's side of tests/train/test_queue_runner_proto.py, run in a subprocess:

    python tf_queue_runner_peer.py write FILE   # build() below, export its MetaGraphDef to FILE
    python tf_queue_runner_peer.py read FILE    # run(): import FILE, run its queue runner; print one JSON line

build() and run() take the TF1 API module (tf.compat.v1 here, adplace in the test) so both sides do the same.
"""
import json
import sys

ELEMENTS = [3, 1, 4, 1, 5, 9, 2, 6]


def build(tf1) -> None:
    """A closed-after-filling queue "source" drained by a QueueRunner's two enqueue ops into a queue "out"; the
    runner also treats CancelledError as closed."""
    source = tf1.FIFOQueue(len(ELEMENTS), tf1.int64, shapes=[[]], name="source")
    source.enqueue_many([ELEMENTS], name="fill")
    source.close(name="close_source")
    out = tf1.FIFOQueue(4, tf1.int64, shapes=[[]], name="out")
    qr = tf1.train.QueueRunner(out, [out.enqueue([source.dequeue()]), out.enqueue([source.dequeue()])],
                               queue_closed_exception_types=(tf1.errors.OutOfRangeError, tf1.errors.CancelledError))
    tf1.train.add_queue_runner(qr)
    out.dequeue(name="take")


def run(tf1, path: str) -> dict:
    """Import the MetaGraphDef at `path` into the default graph, fill and close "source", run the queue runner and
    take from "out" until it closes; the runner's names and error types, and the elements taken (sorted)."""
    tf1.train.import_meta_graph(path)
    (qr,) = tf1.get_collection(tf1.GraphKeys.QUEUE_RUNNERS)
    got = []
    with tf1.Session() as sess:
        sess.run("fill")
        sess.run("close_source")
        coord = tf1.train.Coordinator()
        threads = tf1.train.start_queue_runners(sess, coord=coord)
        try:
            while True:
                got.append(int(sess.run("take:0")))
        except tf1.errors.OutOfRangeError:
            pass
        coord.request_stop()
        coord.join(threads)
    return {"queue": qr.queue.name, "enqueue": [op.name for op in qr.enqueue_ops], "close": qr.close_op.name,
            "cancel": qr.cancel_op.name, "errors": [t.__name__ for t in qr.queue_closed_exception_types],
            "got": sorted(got)}


def main(mode: str, path: str) -> None:
    import tensorflow as tf
    tf1 = tf.compat.v1
    tf1.disable_eager_execution()
    with tf1.Graph().as_default():
        if mode == "read":
            print(json.dumps(run(tf1, path)))
        else:
            build(tf1)
            tf1.train.export_meta_graph(path)
            print("ok")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
