"""The profiling programs of the executor issue, run verbatim: ADCME's run_profile/save_profile of the colocation
example (colocation on and off), the TF way through RunOptions/RunMetadata and client.timeline, and towers."""
import json

import numpy as np
import pytest

import adplace as tf
from adplace import profiler
from adplace.client import timeline
from adplace.runtime.step_stats import transfers

CPU, GPU0 = "/job:localhost/replica:0/task:0/device:CPU:0", "/job:localhost/replica:0/task:0/device:GPU:0"


def _adcme_example():
    with tf.device(tf.assign_to_device("/device:GPU:0")):
        a = tf.Variable(1.0, name="a")
        b = tf.sin(a, name="b")
    with tf.device("/CPU:0"):
        c = tf.cos(b, name="c")
    return a, b, c


@pytest.mark.parametrize("colocate, copies", [
    (True, [("a/read:0", CPU, GPU0), ("b:0", GPU0, CPU), ("gradients/c_grad/mul:0", CPU, GPU0), ("c:0", CPU, GPU0)]),
    (False, [("a/read:0", CPU, GPU0), ("b:0", GPU0, CPU), ("c:0", CPU, GPU0)]),
])
def test_adcme_run_profile_and_save_profile(gpus, tmp_path, colocate, copies):
    a, b, c = _adcme_example()
    g = tf.gradients(c, a, colocate_gradients_with_ops=colocate)
    sess = tf.Session(); sess.run(tf.global_variables_initializer())  # noqa: E702 - as ADCME users write it
    value = tf.run_profile(sess, g[0] + c)
    path = tmp_path / f"{str(colocate).lower()}.json"
    tf.save_profile(str(path))
    assert value == pytest.approx(-np.sin(np.sin(1.0)) * np.cos(1.0) + np.cos(np.sin(1.0)), rel=1e-6)
    stats = profiler.last_run_metadata().step_stats
    assert [(t.tensor_name, t.src_device, t.dst_device) for t in transfers(stats)] == copies
    assert sum(t.bytes for t in transfers(stats)) == 4 * len(copies)  # float32 scalars
    ran_on = {n.node_name: d.device for d in stats.dev_stats for n in d.node_stats}
    assert ran_on["gradients/c_grad/Sin"] == (CPU if colocate else GPU0)  # Cos's gradient: with Cos, or default
    assert ran_on["gradients/b_grad/Cos"] == GPU0
    trace = json.loads(path.read_text())
    processes = {e["args"]["name"] for e in trace["traceEvents"] if e["ph"] == "M"}
    assert {f"{CPU} Compute", f"{GPU0} Compute"} <= processes
    recv_names = {e["args"]["name"] for e in trace["traceEvents"] if e["ph"] == "X" and e["name"] == "_Recv"}
    assert len(recv_names) == len(copies)


def test_the_tf_way_run_metadata_and_timeline(gpus):
    a, b, c = _adcme_example()
    sess = tf.Session()
    sess.run(tf.global_variables_initializer())
    run_options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
    run_metadata = tf.RunMetadata()
    assert sess.run(c, options=run_options, run_metadata=run_metadata) == pytest.approx(np.cos(np.sin(1.0)))
    trace = json.loads(timeline.Timeline(run_metadata.step_stats).generate_chrome_trace_format())
    flows = [e for e in trace["traceEvents"] if e["ph"] in ("s", "t")]
    pids = {e["args"]["name"]: e["pid"] for e in trace["traceEvents"] if e["ph"] == "M"}
    starts = {e["id"]: e["pid"] for e in flows if e["ph"] == "s"}
    ends = {e["id"]: e["pid"] for e in flows if e["ph"] == "t"}
    crossing = {(starts[i], ends[i]) for i in starts if starts[i] != ends[i]}
    assert (pids[f"{CPU} Compute"], pids[f"{GPU0} Compute"]) in crossing  # a/read copied to the GPU
    assert (pids[f"{GPU0} Compute"], pids[f"{CPU} Compute"]) in crossing  # b copied back for cos


def test_cifar_style_towers_run_on_the_thread_pool_and_match_one_device(gpus):
    rng = np.random.default_rng(0)
    x_val = rng.standard_normal((8, 4)).astype(np.float32)
    y_val = rng.standard_normal((8, 1)).astype(np.float32)
    with tf.device("/cpu:0"):
        w = tf.Variable(np.ones((4, 1), np.float32), name="w")
    opt = tf.train.GradientDescentOptimizer(0.1)
    x, y = tf.constant(x_val), tf.constant(y_val)
    tower_grads = []
    for i, (xs, ys) in enumerate(zip(tf.split(x, 2), tf.split(y, 2))):
        with tf.device(f"/gpu:{i}"), tf.name_scope(f"tower_{i}"):
            loss = tf.reduce_mean(tf.square(tf.matmul(xs, w) - ys))
            tower_grads.append(opt.compute_gradients(loss, colocate_gradients_with_ops=True))
    with tf.device("/cpu:0"):
        train = opt.apply_gradients(tf.train.average_gradients(tower_grads))
    sess = tf.Session(config=tf.ConfigProto(inter_op_parallelism_threads=2))
    sess.run(w.initializer)
    sess.run(train)
    assert sess.plan_for(train).mode == "parallel"
    grad = 2 * x_val.T @ (x_val @ np.ones((4, 1)) - y_val) / 8
    np.testing.assert_allclose(sess.run(w), np.ones((4, 1)) - 0.1 * grad, rtol=1e-5)
