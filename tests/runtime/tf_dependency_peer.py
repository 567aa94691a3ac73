"""Real TensorFlow's side of test_dependency_optimizer.py, run in a subprocess by tests/tf_peer.py's run_peer: which
ops TF 1.x graph mode runs when their values are only waited on. Prints one JSON line."""
import json

import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_eager_execution()
x = tf.placeholder(tf.float32, [None], name="x")
bad = tf.reshape(x, [4, -1], name="bad")
with tf.control_dependencies([bad]):
    out = tf.identity(x * 2.0, name="out")
with tf.control_dependencies([tf.check_numerics(x, "x has a NaN")]):
    checked = tf.identity(x)
result = {}
with tf.Session() as sess:
    try:
        result["waited_on_reshape"] = sess.run(out, {x: np.arange(6, dtype=np.float32)}).tolist()
    except tf.errors.InvalidArgumentError:
        result["waited_on_reshape"] = "InvalidArgumentError"
    try:
        sess.run(checked, {x: np.array([1.0, np.nan], np.float32)})
        result["check_numerics"] = "ran nothing"
    except tf.errors.InvalidArgumentError:
        result["check_numerics"] = "InvalidArgumentError"
print(json.dumps(result))
