"""QueueRunnerDef: QueueRunner.to_proto/from_proto, the queue_runners collection of a MetaGraphDef, and the same
through real TensorFlow (a subprocess, tf_queue_runner_peer.py): each side imports and runs the other's runner."""
import importlib.util
import json
from pathlib import Path

import pytest

import adplace as tf
from adplace.lib import protos
from tf_peer import needs_tf, run_peer

PEER = Path(__file__).with_name("tf_queue_runner_peer.py")
_spec = importlib.util.spec_from_file_location("tf_queue_runner_peer", PEER)
peer = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(peer)

pytestmark = pytest.mark.usefixtures("no_leaked_threads")

OUT_RANGE, CANCELLED = tf.errors.OutOfRangeError.error_code, tf.errors.CancelledError.error_code
EXPECTED_NAMES = {"queue": "out", "enqueue": ["out_enqueue", "out_enqueue_1"], "close": "out_Close",
                  "cancel": "out_Close_1", "errors": ["OutOfRangeError", "CancelledError"]}


def _runner(exception_types=None):
    """A runner of two enqueue ops on a queue "q" (with a dequeue op "take")."""
    queue = tf.FIFOQueue(2, tf.float32, shapes=[[]], name="q")
    queue.dequeue(name="take")
    return tf.train.QueueRunner(queue, [queue.enqueue([1.0]), queue.enqueue([2.0])],
                                queue_closed_exception_types=exception_types)


def test_to_proto_names_the_ops_and_error_codes():
    with tf.Graph().as_default():
        with tf.name_scope("scope"):
            qr = _runner((tf.errors.OutOfRangeError, tf.errors.AbortedError))
        proto = qr.to_proto()
        assert isinstance(proto, protos.queue_runner_pb2.QueueRunnerDef)
        assert proto.queue_name == "scope/q" and list(proto.enqueue_op_name) == ["scope/q_enqueue", "scope/q_enqueue_1"]
        assert (proto.close_op_name, proto.cancel_op_name) == ("scope/q_Close", "scope/q_Close_1")
        assert list(proto.queue_closed_exception_types) == [OUT_RANGE, tf.errors.AbortedError.error_code]
        scoped = qr.to_proto(export_scope="scope")
        assert scoped.queue_name == "q" and scoped.close_op_name == "q_Close"
        assert qr.to_proto(export_scope="other") is None


def test_from_proto_finds_the_ops_under_the_import_scope():
    with tf.Graph().as_default() as graph:
        with tf.name_scope("copy"):
            qr = _runner()
        proto = qr.to_proto(export_scope="copy")
        back = tf.train.QueueRunner.from_proto(proto, import_scope="copy")
        assert back.queue is qr.queue.queue_ref.op and back.name == "copy/q"
        assert back.enqueue_ops == qr.enqueue_ops and back.close_op is qr.close_op and back.cancel_op is qr.cancel_op
        assert back.queue_closed_exception_types == (tf.errors.OutOfRangeError,)
        legacy = protos.queue_runner_pb2.QueueRunnerDef()
        legacy.CopyFrom(proto)
        del legacy.queue_closed_exception_types[:]  # written before the field existed: TF's default
        same = tf.train.QueueRunner(queue_runner_def=legacy, import_scope="copy")
        assert same.queue_closed_exception_types == (tf.errors.OutOfRangeError,)
        with pytest.raises(KeyError, match="'q'"):
            tf.train.QueueRunner.from_proto(proto)  # no scope: "q" is not in the graph
        with pytest.raises(ValueError, match="mutually exclusive"):
            tf.train.QueueRunner(qr.queue, queue_runner_def=proto)
        with pytest.raises(TypeError, match="QueueRunnerDef"):
            tf.train.QueueRunner(queue_runner_def=object())
        bad = protos.queue_runner_pb2.QueueRunnerDef()
        bad.CopyFrom(proto)
        bad.queue_closed_exception_types.append(99)
        with pytest.raises(ValueError, match="error code 99"):
            tf.train.QueueRunner(queue_runner_def=bad, import_scope="copy")
        assert graph.get_collection(tf.GraphKeys.QUEUE_RUNNERS) == []


def test_meta_graph_round_trip_runs_the_imported_runner(tmp_path):
    with tf.Graph().as_default():
        peer.build(tf)
        meta = tf.train.export_meta_graph(str(tmp_path / "qr.meta"))
    (serialized,) = meta.collection_def["queue_runners"].bytes_list.value
    proto = protos.queue_runner_pb2.QueueRunnerDef.FromString(serialized)
    assert proto.queue_name == "out" and list(proto.queue_closed_exception_types) == [OUT_RANGE, CANCELLED]
    with tf.Graph().as_default():
        got = peer.run(tf, str(tmp_path / "qr.meta"))
    assert got == {**EXPECTED_NAMES, "got": sorted(peer.ELEMENTS)}


def test_meta_graph_import_under_a_scope():
    with tf.Graph().as_default():
        tf.train.add_queue_runner(_runner())
        meta = tf.train.export_meta_graph()
    with tf.Graph().as_default() as graph:
        tf.train.import_meta_graph(meta, import_scope="imported")
        (qr,) = graph.get_collection(tf.GraphKeys.QUEUE_RUNNERS)
        assert qr.name == "imported/q" and [op.name for op in qr.enqueue_ops] == ["imported/q_enqueue",
                                                                                  "imported/q_enqueue_1"]
        coord = tf.train.Coordinator()
        with tf.Session() as sess:
            threads = tf.train.start_queue_runners(sess, coord=coord)
            taken = {float(sess.run("imported/take:0")) for _ in range(6)}
            coord.request_stop()
            coord.join(threads)  # the cancel op, found by name, wakes the enqueues blocked on the full queue
        assert taken <= {1.0, 2.0} and taken


@needs_tf
def test_tensorflow_runs_the_runner_adplace_exported(tmp_path):
    with tf.Graph().as_default():
        peer.build(tf)
        tf.train.export_meta_graph(str(tmp_path / "qr.meta"))
    got = json.loads(run_peer(PEER, "read", tmp_path / "qr.meta"))
    assert got == {**EXPECTED_NAMES, "got": sorted(peer.ELEMENTS)}


@needs_tf
def test_adplace_runs_the_runner_tensorflow_exported(tmp_path):
    assert run_peer(PEER, "write", tmp_path / "qr.meta") == "ok"
    with tf.Graph().as_default():
        got = peer.run(tf, str(tmp_path / "qr.meta"))
    assert got == {**EXPECTED_NAMES, "got": sorted(peer.ELEMENTS)}
