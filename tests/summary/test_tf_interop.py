"""Interop with real TensorFlow (run in a subprocess: tf_summary_peer.py): TF reads adplace's event files, adplace
reads TF's, and adplace's summary ops produce what TF's do on the same inputs (images and audio compared decoded)."""
import glob
import json
import os


import adplace as tf
from adplace.lib import protos
from summary_inputs import build
from tf_peer import needs_tf, run_peer

pytestmark = needs_tf
PEER = os.path.join(os.path.dirname(__file__), "tf_summary_peer.py")


def _peer(*args) -> str:
    return run_peer(PEER, *args)


def _write_adplace_events(logdir: str) -> str:
    with tf.device("/cpu:0"):
        x = tf.placeholder(tf.float32, [None], name="x")
    mean = tf.reduce_mean(x, name="avg")
    tf.summary.scalar("mean", mean)
    tf.summary.histogram("inputs", x)
    merged = tf.summary.merge_all()
    with tf.Session() as sess, tf.summary.FileWriter(logdir, sess.graph) as writer:
        for step in range(3):
            metadata = tf.RunMetadata()
            writer.add_summary(sess.run(merged, {x: [step, step + 1.0]},
                                        options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
                                        run_metadata=metadata), step)
        writer.add_run_metadata(metadata, "last", 2)
    (path,) = glob.glob(os.path.join(logdir, "events.out.tfevents.*"))
    return path


def test_tf_reads_adplace_event_files(tmp_path):
    events = json.loads(_peer("read", _write_adplace_events(str(tmp_path))))
    assert events[0] == {"kind": "file_version", "step": 0, "version": "brain.Event:2"}
    summaries = [e for e in events if e["kind"] == "summary"]
    assert [(e["step"], e["values"][0]) for e in summaries] == [(s, ["mean", "simple_value", s + 0.5])
                                                                for s in range(3)]
    assert all(e["values"][1][:2] == ["inputs", "histo"] for e in summaries)
    (tagged,) = [e for e in events if e["kind"] == "tagged_run_metadata"]
    assert tagged["tag"] == "last" and any(d.endswith("device:CPU:0") for d in tagged["devices"])
    graphs = [e for e in events if e["kind"] == "graph_def"]
    assert ["x", "Placeholder", "/device:CPU:0"] in graphs[0]["nodes"]


def test_adplace_reads_tf_event_files(tmp_path):
    _peer("write", str(tmp_path))
    (path,) = glob.glob(str(tmp_path / "events.out.tfevents.*"))
    events = list(tf.train.summary_iterator(path))
    assert events[0].file_version == "brain.Event:2"
    scalars = [(e.step, v.tag, v.simple_value) for e in events for v in e.summary.value]
    assert scalars == [(0, "mean", 0.5), (1, "mean", 1.5), (2, "mean", 2.5)]
    (graph_event,) = [e for e in events if e.graph_def]  # TF's graph parses as a GraphDef here
    nodes = protos.graph_pb2.GraphDef.FromString(graph_event.graph_def).node
    assert ["x", "Placeholder", "/device:CPU:0"] in [[n.name, n.op, n.device] for n in nodes]


def test_summary_ops_match_tfs(tmp_path):
    merged = tf.summary.merge(build(tf.summary, tf.constant))
    with tf.Session() as sess:
        serialized = sess.run(merged)
    path = tmp_path / "adplace.summary"
    path.write_bytes(serialized)
    mismatches = json.loads(_peer("compare", str(path)))
    assert mismatches == []
