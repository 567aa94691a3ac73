"""`adplace demo --cluster`: a TF1 cluster script on a local Ray cluster, start to finish.

    adplace demo --cluster                 # 2 Ray nodes on 127.0.0.1, 1 ps + 2 workers, between-graph training
    adplace demo --cluster --nodes 1       # one Ray node
    ADPLACE_RAY_ADDRESS=head:6379 adplace demo --cluster     # the same on a running Ray cluster (no nodes started)

It starts the Ray nodes (ray.cluster_utils.Cluster, every node on 127.0.0.1), a ClusterSpec of one ps task and two
worker tasks (adplace.distributed.start_cluster), and one client thread per worker that builds its own graph under
tf.train.replica_device_setter(cluster=spec) and trains the polynomial fit y = 5x^2 + 3 asynchronously (w and the
global step on the ps); it prints each worker's steps and loss, the bytes a step moves between tasks, saves a traced
step as a Chrome trace, and stops everything it started. Without Ray it says so and does nothing.
"""
from __future__ import annotations

import importlib.util
import os
import threading
import time

import numpy as np

CLUSTER = {"ps": ["localhost:2222"], "worker": ["localhost:2223", "localhost:2224"]}
MISSING_RAY = "adplace demo --cluster skipped: Ray is not installed (pip install 'adplace[distributed]')."


def _worker_graph(tf, spec, index: int) -> dict:
    """Worker `index`'s between-graph replica: variables on the ps, the rest on the worker."""
    graph = tf.Graph()
    with graph.as_default():
        with tf.device(tf.train.replica_device_setter(worker_device=f"/job:worker/task:{index}", cluster=spec)):
            global_step = tf.train.get_or_create_global_step()
            w = tf.Variable(np.zeros((3, 1), np.float32), name="w")
            x = tf.placeholder(tf.float32, [None], name="x")
            y = tf.placeholder(tf.float32, [None], name="y")
            features = tf.stack([tf.square(x), x, tf.ones_like(x)], 1)
            loss = tf.reduce_mean(tf.square(tf.squeeze(tf.matmul(features, w), 1) - y))
            train = tf.train.AdamOptimizer(0.1).minimize(loss, global_step=global_step)
        init = tf.global_variables_initializer()
    return {"graph": graph, "x": x, "y": y, "w": w, "loss": loss, "train": train, "step": global_step,
            "init": init}


def _train(tf, replica: dict, sess, index: int, steps: int, log_every: int, lock: threading.Lock) -> None:
    rng = np.random.default_rng(index)
    for step in range(1, steps + 1):
        x = rng.uniform(-3.0, 3.0, 100).astype(np.float32)
        _, loss, global_step = sess.run([replica["train"], replica["loss"], replica["step"]],
                                        {replica["x"]: x, replica["y"]: 5 * x * x + 3})
        if step % log_every == 0 or step == steps:
            with lock:
                print(f"worker {index}  step {step:5d}  global step {global_step:5d}  loss {loss:10.4f}", flush=True)


def _start_ray(nodes: int):
    """Connect to $ADPLACE_RAY_ADDRESS, else start `nodes` local Ray nodes on 127.0.0.1; the Cluster to shut down
    afterwards (None when the cluster was already running)."""
    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # every local node on 127.0.0.1
    from adplace.distributed import ray_backend
    address = os.environ.get(ray_backend.ADDRESS_ENV)
    if address:
        ray_backend.connect(address)
        print(f"Ray cluster: {address} ($ADPLACE_RAY_ADDRESS)")
        return None
    from ray.cluster_utils import Cluster
    nodes_started = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    try:
        for _ in range(nodes - 1):
            nodes_started.add_node(num_cpus=1)
        ray_backend.connect(nodes_started.address)
    except BaseException:
        nodes_started.shutdown()
        raise
    print(f"Ray cluster: {nodes} local node(s) on 127.0.0.1 at {nodes_started.address}")
    return nodes_started


def run_demo(steps: int = 200, nodes: int = 2, trace_dir: str | None = None) -> int:
    """The demo (see the module); 0 when it ran or was skipped for want of Ray."""
    if importlib.util.find_spec("ray") is None:
        print(MISSING_RAY)
        return 0
    nodes_started = _start_ray(nodes)
    import adplace as tf
    from adplace.distributed import ray_backend, start_cluster
    ray = ray_backend.ray_module()
    servers = []
    try:
        spec = tf.train.ClusterSpec(CLUSTER)
        servers = start_cluster(spec)
        print(f"cluster spec {spec.as_dict()}: one Ray actor per task (tf.train.Server), the addresses only name them")
        replicas = [_worker_graph(tf, spec, i) for i in range(len(CLUSTER["worker"]))]
        sessions = [tf.Session(server_target, graph=r["graph"]) for server_target, r in
                    zip([f"grpc://{a}" for a in CLUSTER["worker"]], replicas)]
        try:
            sessions[0].run(replicas[0]["init"])  # the chief initialises the ps's variables
            lock = threading.Lock()
            threads = [threading.Thread(target=_train, args=(tf, r, s, i, steps, max(1, steps // 5), lock))
                       for i, (r, s) in enumerate(zip(replicas, sessions))]
            started = time.perf_counter()
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            wall = time.perf_counter() - started
            chief, sess = replicas[0], sessions[0]
            w, global_step = sess.run([chief["w"], chief["step"]])
            print(f"{global_step} steps in {wall:.1f} s ({global_step / wall:.0f} steps/s); w = "
                  f"{np.array2string(w.ravel(), precision=3)} (target [5, 0, 3])")
            _report_a_step(tf, chief, sess, trace_dir)
        finally:
            for s in sessions:
                s.close()
    finally:
        for server in servers:
            server._stop()
        ray.shutdown()
        if nodes_started is not None:
            nodes_started.shutdown()
    print("cluster stopped")
    return 0


def _report_a_step(tf, replica: dict, sess, trace_dir: str | None) -> None:
    """One traced step: the bytes it moved between tasks, and its Chrome trace in `trace_dir`."""
    from adplace.client.timeline import Timeline
    x = np.linspace(-3.0, 3.0, 100, dtype=np.float32)
    metadata = tf.RunMetadata()
    sess.run(replica["train"], {replica["x"]: x, replica["y"]: 5 * x * x + 3},
             options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), run_metadata=metadata)
    for (src, dst), n in sorted(sess._remote.last_step_transfers.items()):
        print(f"  one step moved {n:6d} bytes {src} -> {dst}")
    if trace_dir:
        os.makedirs(trace_dir, exist_ok=True)
        path = os.path.join(trace_dir, "cluster_step.json")
        with open(path, "w") as fh:
            fh.write(Timeline(metadata.step_stats).generate_chrome_trace_format())
        print(f"traced step (ops per task device, transfers between tasks) saved to {path}")
