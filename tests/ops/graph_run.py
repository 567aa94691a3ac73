"""What the op tests share: run fetches in a fresh session, and the gradient check's maximum error."""
import adplace as tf


def run(fetches, feed_dict=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed_dict)


def gradient_error(x, x_shape, y, y_shape, x_init_value=None) -> float:
    with tf.Session():
        return tf.test.compute_gradient_error(x, x_shape, y, y_shape, x_init_value=x_init_value)
