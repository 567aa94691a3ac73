"""A client of a queue shared by name on a cluster's ps task, run as its own process by test_training.py:

    queue_client.py TARGET fill COUNT      enqueues 0 .. COUNT-1, one at a time, then prints "filled"
    queue_client.py TARGET drain COUNT     dequeues COUNT elements, printing them on one line

Every client that builds the queue with the same shared_name on the same task gets the same queue.
"""
import sys

import adplace as tf


def main() -> None:
    target, mode, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    with tf.device("/job:ps/task:0"):
        queue = tf.FIFOQueue(1000, tf.int64, shapes=[[]], shared_name="q", name="shared_queue")
    value = tf.placeholder(tf.int64, [])
    enqueue, dequeue = queue.enqueue(value), queue.dequeue()
    with tf.Session(target) as sess:
        if mode == "fill":
            for i in range(count):
                sess.run(enqueue, {value: i})
            print("filled", flush=True)
        else:
            print(" ".join(str(sess.run(dequeue)) for _ in range(count)), flush=True)


if __name__ == "__main__":
    main()
