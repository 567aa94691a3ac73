"""A client killed mid-training by test_faults.py: each step adds 1 to two variables of the ps task in one piece
(after a matrix product there, so that the piece takes a while), looping until the process is killed.

    pair_client.py TARGET      prints "running" after its first step
"""
import sys

import adplace as tf


def build() -> tuple:
    """The two variables and the step, in the default graph (test_faults.py builds the same to read them)."""
    with tf.device("/job:worker/task:0"):
        one = tf.ones([]) * 1.0
    with tf.device("/job:ps/task:0"):
        first = tf.Variable(0.0, name="first")
        second = tf.Variable(0.0, name="second")
        bump_first = tf.assign_add(first, one)
        with tf.control_dependencies([bump_first]):
            work = tf.reduce_sum(tf.matmul(tf.ones([300, 300]), tf.ones([300, 300])))
        with tf.control_dependencies([work]):
            bump_second = tf.assign_add(second, one)
    return first, second, tf.group(bump_first, bump_second)


def main() -> None:
    _, _, step = build()
    with tf.Session(sys.argv[1]) as sess:
        sess.run(step)
        print("running", flush=True)
        while True:
            sess.run(step)


if __name__ == "__main__":
    main()
