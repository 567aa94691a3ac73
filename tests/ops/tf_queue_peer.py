"""Real TensorFlow runs a queue GraphDef adplace wrote (tests/ops/test_queues.py): fill, take two, close, count;
prints the results as JSON."""
import json
import sys

import tensorflow.compat.v1 as tf

tf.disable_eager_execution()
graph_def = tf.GraphDef()
with open(sys.argv[1], "rb") as f:
    graph_def.ParseFromString(f.read())
with tf.Graph().as_default() as graph:
    tf.import_graph_def(graph_def, name="")
    with tf.Session(graph=graph) as sess:
        sess.run("fill")
        values, labels = sess.run(["take:0", "take:1"])
        sess.run("shut")
        size = sess.run("count:0")
print(json.dumps({"values": values.tolist(), "labels": labels.tolist(), "size": int(size)}))
