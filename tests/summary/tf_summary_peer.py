"""Real TensorFlow's side of tests/summary/test_tf_interop.py, run in a subprocess (never imported by pytest).

    python tf_summary_peer.py read EVENT_FILE          -> JSON: what TF's summary_iterator reads from adplace's file
    python tf_summary_peer.py write LOGDIR             -> TF's FileWriter writes an event file there
    python tf_summary_peer.py compare SUMMARY_FILE     -> JSON: TF's summaries of the shared inputs vs adplace's
"""
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from summary_inputs import build  # noqa: E402

tf1 = tf.compat.v1
tf1.disable_eager_execution()


def read(path):
    out = []
    for event in tf1.train.summary_iterator(path):
        kind = event.WhichOneof("what")
        item = {"kind": kind, "step": event.step}
        if kind == "summary":
            item["values"] = [[v.tag, v.WhichOneof("value"), v.simple_value] for v in event.summary.value]
        elif kind == "graph_def":
            graph_def = tf1.GraphDef.FromString(event.graph_def)
            item["nodes"] = [[n.name, n.op, n.device] for n in graph_def.node]
        elif kind == "file_version":
            item["version"] = event.file_version
        elif kind == "tagged_run_metadata":
            metadata = tf1.RunMetadata.FromString(event.tagged_run_metadata.run_metadata)
            item["tag"] = event.tagged_run_metadata.tag
            item["devices"] = [d.device for d in metadata.step_stats.dev_stats]
        out.append(item)
    print(json.dumps(out))


def write(logdir):
    with tf1.Graph().as_default() as graph:
        with tf1.device("/cpu:0"):
            x = tf1.placeholder(tf.float32, [None], name="x")
        tf1.summary.scalar("mean", tf.reduce_mean(x, name="avg"))
        merged = tf1.summary.merge_all()
        with tf1.Session() as sess:
            writer = tf1.summary.FileWriter(logdir, graph)
            for step in range(3):
                writer.add_summary(sess.run(merged, {x: [step, step + 1.0]}), step)
            writer.close()


def compare(path):
    with open(path, "rb") as f:
        theirs = tf1.Summary.FromString(f.read())
    with tf1.Graph().as_default():
        with tf1.Session() as sess:
            ours = tf1.Summary.FromString(sess.run(tf1.summary.merge(build(tf1.summary, tf.constant))))
            mismatches = []
            if [v.tag for v in ours.value] != [v.tag for v in theirs.value]:
                mismatches.append(["tags", [v.tag for v in ours.value], [v.tag for v in theirs.value]])
            for a, b in zip(ours.value, theirs.value):
                kind = a.WhichOneof("value")
                if kind == "image":
                    same = (a.image.height, a.image.width, a.image.colorspace) == \
                        (b.image.height, b.image.width, b.image.colorspace) and np.array_equal(
                            *sess.run([tf.image.decode_png(a.image.encoded_image_string, channels=0),
                                       tf.image.decode_png(b.image.encoded_image_string, channels=0)]))
                elif kind == "audio":
                    decoded = sess.run([tf.audio.decode_wav(a.audio.encoded_audio_string).audio,
                                        tf.audio.decode_wav(b.audio.encoded_audio_string).audio])
                    a_meta, b_meta = tf1.Summary.Audio(), tf1.Summary.Audio()
                    a_meta.CopyFrom(a.audio)
                    b_meta.CopyFrom(b.audio)
                    a_meta.ClearField("encoded_audio_string")
                    b_meta.ClearField("encoded_audio_string")
                    same = a_meta == b_meta and np.array_equal(*decoded)
                else:
                    same = a == b
                if not same:
                    mismatches.append([a.tag, str(a)[:2000], str(b)[:2000]])
    print(json.dumps(mismatches))


if __name__ == "__main__":
    {"read": read, "write": write, "compare": compare}[sys.argv[1]](sys.argv[2])
