"""The small training graph the MonitoredSession and Supervisor tests run: a global step, one weight, a scalar
summary of its loss and a gradient-descent step."""
import adplace as tf


def small_training_graph():
    """(graph, global_step, w, train_op): w starts at 1.0 and descends on w², 0.1 per step."""
    graph = tf.Graph()
    with graph.as_default():
        step = tf.train.get_or_create_global_step()
        w = tf.Variable(1.0, name="w")
        loss = w * w
        tf.summary.scalar("loss", loss)
        train = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step)
    return graph, step, w, train
