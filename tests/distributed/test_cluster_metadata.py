"""What a cluster step reports: the bytes that crossed tasks (`last_step_transfers`), and for a traced run the tasks'
step stats with a `_Recv` node per value crossing tasks, as the profiler and the Chrome trace read them."""
import json

import numpy as np
import pytest

import adplace as tf
from adplace.client.timeline import Timeline
from adplace.profiler import step_summary
from adplace.runtime.step_stats import transfers

PS, WORKER = "/job:ps/replica:0/task:0", "/job:worker/replica:0/task:0"


def _regression():
    """w (4x3 float32, 48 bytes) on the ps; the loss and its gradient on worker 0; the update on the ps."""
    with tf.device("/job:ps/task:0"):
        w = tf.Variable(np.ones((4, 3), np.float32), name="w")
    with tf.device("/job:worker/task:0"):
        x = tf.placeholder(tf.float32, [None, 4], name="x")
        loss = tf.reduce_sum(tf.square(tf.matmul(x, w)), name="loss")
        grad = tf.gradients(loss, w)[0]
    with tf.device("/job:ps/task:0"):
        step = tf.assign_sub(w, 0.01 * grad, name="step")
    return w, x, loss, step


def test_each_step_counts_the_bytes_crossing_tasks(cluster):
    w, x, loss, step = _regression()
    feed = {x: np.ones((5, 4), np.float32)}
    with tf.Session(cluster.target("worker", 0)) as sess:
        sess.run(w.initializer)
        sess.run(step.op, feed)
        moved = sess._remote.last_step_transfers
        assert moved[(PS, WORKER)] == 48            # the parameters down
        assert moved[(WORKER, PS)] == 48            # the gradient up
        assert moved[("client", WORKER)] == 5 * 4 * 4  # the fed batch
        assert not any(dst == "client" for _, dst in moved)  # nothing fetched
        sess.run(loss, feed)
        moved = sess._remote.last_step_transfers
        assert moved[(PS, WORKER)] == 48 and (WORKER, PS) not in moved and moved[(WORKER, "client")] == 4


def test_a_traced_step_shows_each_task_device_and_the_transfers_between_them(cluster):
    w, x, loss, step = _regression()
    feed = {x: np.ones((5, 4), np.float32)}
    with tf.Session(cluster.target("worker", 0)) as sess:
        sess.run(w.initializer)
        metadata = tf.RunMetadata()
        before = sess.run(w)
        sess.run([step, loss], feed, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE,
                                                           output_partition_graphs=True), run_metadata=metadata)
        assert not np.array_equal(sess.run(w), before)  # the traced step did its work
    devices = {dev.device: [n.node_name for n in dev.node_stats] for dev in metadata.step_stats.dev_stats}
    assert set(devices) == {f"{PS}/device:CPU:0", f"{WORKER}/device:CPU:0"}
    assert "step" in devices[f"{PS}/device:CPU:0"] and "loss" in devices[f"{WORKER}/device:CPU:0"]
    moved = {(t.tensor_name, t.src_device.rpartition("/device")[0], t.dst_device.rpartition("/device")[0]): t.bytes
             for t in transfers(metadata.step_stats)}
    grad = next(name for name, src, _ in moved if src == WORKER)
    assert moved == {("w/read:0", PS, WORKER): 48, (grad, WORKER, PS): 48}
    nodes = {n.node_name: n for dev in metadata.step_stats.dev_stats for n in dev.node_stats}
    recv = next(n for n in nodes.values() if n.timeline_label.endswith("= _Recv(w/read)"))
    assert list(recv.output[0].tensor_description.shape.dim) and recv.all_start_micros > 0
    assert nodes["MatMul"].timeline_label == f"MatMul = MatMul(x, {recv.node_name})"  # reads the copy
    partitions = {node.device.rpartition("/device")[0] for graph_def in metadata.partition_graphs
                  for node in graph_def.node if node.op in ("AssignSub", "MatMul")}
    assert partitions == {PS, WORKER}  # each task's piece of the step
    summary = step_summary(metadata.step_stats)
    assert summary["transfers"] == 2 and summary["transfer_bytes"] == 96


def test_the_chrome_trace_draws_the_transfers_between_task_processes(cluster):
    w, x, loss, step = _regression()
    with tf.Session(cluster.target("worker", 0)) as sess:
        sess.run(w.initializer)
        metadata = tf.RunMetadata()
        sess.run(step.op, {x: np.ones((2, 4), np.float32)},  # the last piece hands nothing on
                 options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), run_metadata=metadata)
    trace = json.loads(Timeline(metadata.step_stats).generate_chrome_trace_format())
    pids = {e["args"]["name"]: e["pid"] for e in trace["traceEvents"] if e.get("name") == "process_name"}
    ps_pid, worker_pid = pids[f"{PS}/device:CPU:0 Compute"], pids[f"{WORKER}/device:CPU:0 Compute"]
    starts = {e["id"]: e["pid"] for e in trace["traceEvents"] if e["ph"] == "s"}
    flows = {(starts[e["id"]], e["pid"]) for e in trace["traceEvents"] if e["ph"] == "t"}
    assert (ps_pid, worker_pid) in flows and (worker_pid, ps_pid) in flows


def test_an_untraced_run_leaves_the_metadata_empty(cluster):
    with tf.device("/job:ps/task:0"):
        v = tf.Variable(2.0)
    with tf.device("/job:worker/task:1"):
        doubled = v * 2.0
    with tf.Session(cluster.target("worker", 1)) as sess:
        sess.run(v.initializer)
        metadata = tf.RunMetadata()
        metadata.step_stats.dev_stats.add(device="stale")
        assert sess.run(doubled, run_metadata=metadata) == 4.0
        assert not metadata.HasField("step_stats")
        assert sess._remote.last_step_transfers == {(PS, "/job:worker/replica:0/task:1"): 4,
                                                    ("/job:worker/replica:0/task:1", "client"): 4}


@pytest.mark.parametrize("cluster", [{"ps": 2, "worker": 1}], indirect=True)
def test_between_graph_training_over_two_ps_moves_each_parameter_and_gradient_once(cluster):
    with tf.device(tf.train.replica_device_setter(cluster=cluster.spec, worker_device="/job:worker/task:0")):
        w = tf.Variable(np.ones((8, 4), np.float32), name="w")  # ps 0 (round robin)
        b = tf.Variable(np.zeros(4, np.float32), name="b")      # ps 1
        x = tf.placeholder(tf.float32, [2, 8], name="x")
        loss = tf.reduce_sum(tf.square(tf.matmul(x, w) + b))
        train = tf.train.GradientDescentOptimizer(0.01).minimize(loss)
    ps0, ps1 = PS, "/job:ps/replica:0/task:1"
    with tf.Session(cluster.target("worker", 0)) as sess:
        sess.run([w.initializer, b.initializer])
        metadata = tf.RunMetadata()
        sess.run(train, {x: np.ones((2, 8), np.float32)},
                 options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), run_metadata=metadata)
        moved = sess._remote.last_step_transfers
    assert moved[(ps0, WORKER)] == 128 and moved[(ps1, WORKER)] == 16       # w and b down
    assert moved[(WORKER, ps0)] == 128 + 4 and moved[(WORKER, ps1)] == 16 + 4  # their gradients (+ the rate) up
    traced: dict = {}
    for t in transfers(metadata.step_stats):
        key = (t.src_device.rpartition("/device")[0], t.dst_device.rpartition("/device")[0])
        traced[key] = traced.get(key, 0) + t.bytes
    assert traced == {k: v for k, v in moved.items() if "client" not in k}  # the trace shows what was counted
