"""Real TensorFlow's side of tests/train/test_meta_graph_interop.py, run in a subprocess:

    python tf_meta_graph_peer.py write PREFIX   # build, train one step, save PREFIX (+ PREFIX.meta); print losses
    python tf_meta_graph_peer.py read PREFIX    # import PREFIX.meta, restore PREFIX, train one step; print losses

Both print one JSON line: the loss at the checkpoint and after one more training step, on FEED below.
"""
import json
import sys

import numpy as np

FEED_X = np.array([[1.0, 2.0], [3.0, -1.0], [0.5, 0.5]], np.float32)
FEED_Y = np.array([[1.0], [0.0], [2.0]], np.float32)


def build(tf):
    """Variables on the CPU, a two-layer net, GradientDescent with a global step (the model the adplace side builds
    the same way)."""
    x = tf.compat.v1.placeholder(tf.float32, [None, 2], name="x")
    y = tf.compat.v1.placeholder(tf.float32, [None, 1], name="y")
    with tf.device("/cpu:0"):
        w1 = tf.compat.v1.Variable([[0.5, -0.2, 0.1], [0.3, 0.8, -0.5]], name="w1")
        w2 = tf.compat.v1.Variable([[1.0], [-1.0], [0.5]], name="w2")
    step = tf.compat.v1.train.get_or_create_global_step()
    h = tf.tanh(tf.matmul(x, w1), name="h")
    loss = tf.reduce_mean(tf.square(tf.matmul(h, w2) - y), name="loss")
    tf.compat.v1.add_to_collection(tf.compat.v1.GraphKeys.LOSSES, loss)
    tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step, name="train")
    return loss


def main(mode: str, prefix: str) -> None:
    import tensorflow as tf
    tf.compat.v1.disable_v2_behavior()  # TF1 semantics: graph mode and reference variables, as TF 1.15
    feed = {"x:0": FEED_X, "y:0": FEED_Y}
    with tf.compat.v1.Graph().as_default():
        if mode == "write":
            build(tf)
            saver = tf.compat.v1.train.Saver()
        else:
            saver = tf.compat.v1.train.import_meta_graph(prefix + ".meta")
        train_op = tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.TRAIN_OP)[0]
        with tf.compat.v1.Session() as sess:
            if mode == "write":
                sess.run(tf.compat.v1.global_variables_initializer())
                sess.run(train_op, feed)
                saver.save(sess, prefix)
            else:
                saver.restore(sess, prefix)
            at_checkpoint = float(sess.run("loss:0", feed))
            sess.run(train_op, feed)
            after = float(sess.run("loss:0", feed))
            step = int(sess.run(tf.compat.v1.train.get_global_step()))
    print(json.dumps({"at_checkpoint": at_checkpoint, "after": after, "step": step}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
