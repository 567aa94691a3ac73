"""TF1 programs of the kinds new users try first, written as TF1 code (`import adplace as tf`) and run unchanged:
softmax regression with tf.app.flags, a convnet on tf.nn, a tf.layers classifier with tf.losses and tf.metrics, a
word2vec-style NCE model and a clipped RNN-style update. Data are synthetic (no network), built so a correct model
learns them: each test asserts what training must reach, not just that it ran.
"""
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import adplace as tf


def _blobs(rng, n, classes, dim, spread=0.3):
    """Separable data: one Gaussian blob per class, labels one-hot and sparse."""
    centres = rng.normal(size=(classes, dim)) * 3.0
    labels = rng.integers(0, classes, size=n)
    x = (centres[labels] + spread * rng.normal(size=(n, dim))).astype(np.float32)
    return x, np.eye(classes, dtype=np.float32)[labels], labels.astype(np.int64)


def test_softmax_regression_reaches_full_accuracy():
    rng = np.random.default_rng(0)
    data, onehot, _ = _blobs(rng, 600, 10, 64)
    x = tf.placeholder(tf.float32, [None, 64])
    y_ = tf.placeholder(tf.float32, [None, 10])
    W = tf.Variable(tf.zeros([64, 10]))
    b = tf.Variable(tf.zeros([10]))
    y = tf.matmul(x, W) + b
    cross_entropy = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(labels=y_, logits=y))
    train_step = tf.train.GradientDescentOptimizer(0.5).minimize(cross_entropy)
    correct = tf.equal(tf.argmax(y, 1), tf.argmax(y_, 1))
    accuracy = tf.reduce_mean(tf.cast(correct, tf.float32))
    with tf.Session() as sess:
        tf.global_variables_initializer().run()
        first = sess.run(cross_entropy, {x: data, y_: onehot})
        for i in range(0, 600, 100):
            sess.run(train_step, {x: data[i:i + 100], y_: onehot[i:i + 100]})
        last, acc = sess.run([cross_entropy, accuracy], {x: data, y_: onehot})
    assert first == pytest.approx(np.log(10.0), rel=1e-5)  # zero weights: uniform predictions
    assert last < 0.1 * first and acc == 1.0


def test_deep_convnet_with_dropout_learns_the_classes():
    rng = np.random.default_rng(1)
    classes = 4
    images = rng.normal(scale=0.2, size=(64, 12, 12, 1)).astype(np.float32)
    labels = rng.integers(0, classes, size=64)
    for k in range(classes):  # class k: a bright 4x4 square in quadrant k
        r, c = divmod(k, 2)
        images[labels == k, 6 * r + 1:6 * r + 5, 6 * c + 1:6 * c + 5, 0] += 1.0
    onehot = np.eye(classes, dtype=np.float32)[labels]

    tf.set_random_seed(7)
    x = tf.placeholder(tf.float32, [None, 12, 12, 1])
    y_ = tf.placeholder(tf.float32, [None, classes])
    keep_prob = tf.placeholder(tf.float32)
    W1 = tf.Variable(tf.truncated_normal([3, 3, 1, 8], stddev=0.1))
    b1 = tf.Variable(tf.constant(0.1, shape=[8]))
    h1 = tf.nn.max_pool(tf.nn.relu(tf.nn.conv2d(x, W1, strides=[1, 1, 1, 1], padding='SAME') + b1),
                        ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding='SAME')
    assert h1.shape.as_list() == [None, 6, 6, 8]
    flat = tf.reshape(h1, [-1, 6 * 6 * 8])
    W2 = tf.Variable(tf.truncated_normal([6 * 6 * 8, classes], stddev=0.1))
    b2 = tf.Variable(tf.constant(0.1, shape=[classes]))
    logits = tf.matmul(tf.nn.dropout(flat, keep_prob), W2) + b2
    loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(labels=y_, logits=logits))
    train = tf.train.AdamOptimizer(1e-2).minimize(loss)
    accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1), tf.argmax(y_, 1)), tf.float32))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(40):
            sess.run(train, {x: images, y_: onehot, keep_prob: 0.5})
        acc = sess.run(accuracy, {x: images, y_: onehot, keep_prob: 1.0})
    assert acc == 1.0


def test_layers_classifier_with_losses_and_streaming_accuracy():
    rng = np.random.default_rng(2)
    images = rng.normal(size=(48, 8, 8, 3)).astype(np.float32)
    labels = (images[:, :4].mean(axis=(1, 2, 3)) > images[:, 4:].mean(axis=(1, 2, 3))).astype(np.int32)

    x = tf.placeholder(tf.float32, [None, 8, 8, 3])
    y = tf.placeholder(tf.int32, [None])
    training = tf.placeholder_with_default(False, [])
    net = tf.layers.conv2d(x, 8, 3, padding="same", activation=tf.nn.relu)
    net = tf.layers.max_pooling2d(net, 2, 2)
    net = tf.layers.flatten(net)
    net = tf.layers.dropout(net, rate=0.25, training=training)
    logits = tf.layers.dense(net, 2)
    loss = tf.losses.sparse_softmax_cross_entropy(labels=y, logits=logits)
    train = tf.train.AdamOptimizer(0.01).minimize(loss)
    acc, acc_update = tf.metrics.accuracy(labels=y, predictions=tf.argmax(logits, 1))
    assert {v.name for v in tf.trainable_variables()} == {"conv2d/kernel:0", "conv2d/bias:0", "dense/kernel:0",
                                                          "dense/bias:0"}
    assert tf.get_collection(tf.GraphKeys.LOSSES) == [loss]
    with tf.Session() as sess:
        sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
        for _ in range(60):
            sess.run(train, {x: images, y: labels, training: True})
        for i in range(0, 48, 16):  # streaming: three batches add up to the whole set
            sess.run(acc_update, {x: images[i:i + 16], y: labels[i:i + 16]})
        predicted = sess.run(tf.argmax(logits, 1), {x: images})
        assert sess.run(acc) == pytest.approx(np.mean(predicted == labels))
    assert np.mean(predicted == labels) >= 0.95


def test_word2vec_style_nce_training_lowers_the_loss():
    rng = np.random.default_rng(3)
    vocabulary, dim, batch = 50, 8, 32
    pairs = rng.integers(0, vocabulary, size=(256,))
    contexts = (pairs + 1) % vocabulary  # each word predicts its successor

    tf.set_random_seed(3)
    train_inputs = tf.placeholder(tf.int32, shape=[batch])
    train_labels = tf.placeholder(tf.int32, shape=[batch, 1])
    embeddings = tf.Variable(tf.random_uniform([vocabulary, dim], -1.0, 1.0))
    embed = tf.gather(embeddings, train_inputs)
    nce_weights = tf.Variable(tf.truncated_normal([vocabulary, dim], stddev=1.0 / np.sqrt(dim)))
    nce_biases = tf.Variable(tf.zeros([vocabulary]))
    loss = tf.reduce_mean(tf.nn.nce_loss(weights=nce_weights, biases=nce_biases, labels=train_labels,
                                         inputs=embed, num_sampled=8, num_classes=vocabulary))
    optimizer = tf.train.GradientDescentOptimizer(1.0).minimize(loss)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        losses = []
        for step in range(200):
            i = (step * batch) % 256
            feed = {train_inputs: pairs[i:i + batch], train_labels: contexts[i:i + batch, None]}
            _, value = sess.run([optimizer, loss], feed)
            losses.append(value)
    assert np.isfinite(losses).all()
    assert np.mean(losses[-20:]) < 0.5 * np.mean(losses[:20])


def test_clipped_gradients_keep_their_global_norm_under_the_cap():
    x = tf.Variable([[3.0, 4.0], [0.0, 12.0]])
    loss = tf.reduce_sum(x * x)  # gradient 2x: global norm 2 * 13 = 26
    optimizer = tf.train.GradientDescentOptimizer(1.0)
    grads, variables = zip(*optimizer.compute_gradients(loss))
    clipped, norm = tf.clip_by_global_norm(grads, 5.0)
    step = optimizer.apply_gradients(zip(clipped, variables))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        n, c = sess.run([norm, clipped[0]])
        sess.run(step)
        after = sess.run(x)
    assert n == pytest.approx(26.0)
    np.testing.assert_allclose(c, 2 * np.array([[3.0, 4.0], [0.0, 12.0]]) * 5.0 / 26.0, rtol=1e-6)
    np.testing.assert_allclose(after, np.array([[3.0, 4.0], [0.0, 12.0]]) * (1 - 10.0 / 26.0), rtol=1e-6)


def test_app_run_with_flags_runs_a_training_script(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent("""
        import sys
        import adplace as tf

        flags = tf.app.flags
        flags.DEFINE_integer("steps", 5, "Number of steps.")
        flags.DEFINE_float("learning_rate", 0.1, "Learning rate.")
        flags.DEFINE_string("name", "run", "A label.")
        FLAGS = flags.FLAGS

        def main(argv):
            w = tf.Variable(4.0)
            step = tf.train.GradientDescentOptimizer(FLAGS.learning_rate).minimize(tf.square(w))
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                for _ in range(FLAGS.steps):
                    sess.run(step)
                print(FLAGS.name, FLAGS.steps, round(float(sess.run(w)), 6), argv[1:])
            return 3

        if __name__ == "__main__":
            tf.app.run()
    """))
    done = subprocess.run([sys.executable, str(script), "--steps=2", "--learning_rate", "0.25", "extra"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 3, done.stderr
    assert done.stdout.split("\n")[0] == "run 2 1.0 ['extra']"  # 4 * (1 - 2*0.25)^2
