"""Cluster benchmark: training steps per second of between-graph replication on a local Ray cluster (adplace's
tf.train.Server) against TensorFlow's own gRPC runtime on the same ClusterSpec and graph, and the bytes a step moves
between tasks against the minimum.

    python benchmarks/cluster.py            # full run (minutes on 2 cores); writes benchmarks/results/cluster.json
    python benchmarks/cluster.py --quick    # smoke run: 2 cluster shapes, fewer steps and samples (JSON to $TMPDIR)
    python benchmarks/cluster.py --out PATH # write the JSON elsewhere

Models (the same graph-building code for both runtimes, given the `tf` module: adplace, or tf.compat.v1):
  poly   w float32[3,1] on the ps, stack([x², x, 1])·w against a fed batch of 1,000 points, mean squared error.
  mlp    784-256-10 with ReLU (W1, b1, W2, b2 on the ps tasks), a fed random batch of 64 images and int labels,
         sparse softmax cross entropy.
Each worker builds its own graph under tf.train.replica_device_setter(cluster=spec, worker_device=its task) and
trains it with GradientDescentOptimizer.minimize (asynchronous updates, TF's default): variables round robin over the
ps tasks, the forward and backward pass on the worker, the update on the ps. Cluster shapes: 1, 2 and 4 workers
with 1 and 2 ps tasks (--quick: 1 worker + 1 ps, 2 workers + 2 ps).

One sample: every worker's client thread (its own graph and tf.Session(worker target)) runs `steps` training steps,
the threads released together; steps/s = all steps / wall time. The number is the MEDIAN of `samples` samples;
adplace and TF samples alternate, so machine noise hits both alike. Warm-up steps (plans cached, kernels loaded)
precede the samples.

adplace: one ClusterSpec of localhost addresses, its tasks started by adplace.distributed.start_cluster on a local
Ray cluster (ray_backend.connect(): $ADPLACE_RAY_ADDRESS or a new single node on 127.0.0.1); the addresses only name
tasks. TF: the same ClusterSpec, one subprocess per task running tf.compat.v1.train.Server(...).join() on those
localhost ports, and one client subprocess running the workers' threads (this script with --tf-server / --tf-client;
TF is never imported next to adplace). Without TensorFlow the TF columns say "-".

Bytes per step: what one worker's step moved between tasks (the session's last_step_transfers: values crossing
tasks, the client's feeds and fetches left out) against the minimum a parameter-server step needs: every parameter
down to the worker and its gradient back up (2 x the parameters' bytes). Nothing here asserts a time.
"""
from __future__ import annotations

import datetime
import importlib.util
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time

import numpy as np

MODELS = ("poly", "mlp")
SHAPES = ((1, 1), (2, 1), (4, 1), (1, 2), (2, 2), (4, 2))  # (workers, ps tasks)
QUICK_SHAPES = ((1, 1), (2, 2))
POLY_BATCH, MLP_BATCH, MLP_SIZES = 1000, 64, (784, 256, 10)
LEARNING_RATE = 0.01


# --- the model, for either runtime --------------------------------------------------------------------------------
def model_data(model: str, worker: int) -> tuple:
    """A worker's fed batch (fixed per worker)."""
    rng = np.random.default_rng(worker)
    if model == "poly":
        x = rng.uniform(-1, 1, POLY_BATCH).astype(np.float32)
        return x, (3 * x * x - 2 * x + 0.5).astype(np.float32)
    return (rng.standard_normal((MLP_BATCH, MLP_SIZES[0])).astype(np.float32),
            rng.integers(0, MLP_SIZES[2], MLP_BATCH).astype(np.int32))


def model_parameters(model: str) -> list:
    """The initial parameter values (fixed)."""
    if model == "poly":
        return [np.zeros((3, 1), np.float32)]
    rng = np.random.default_rng(42)
    n_in, n_hidden, n_out = MLP_SIZES
    return [(rng.standard_normal((n_in, n_hidden)) / np.sqrt(n_in)).astype(np.float32),
            np.zeros(n_hidden, np.float32),
            (rng.standard_normal((n_hidden, n_out)) / np.sqrt(n_hidden)).astype(np.float32),
            np.zeros(n_out, np.float32)]


def build_model(tf, model: str, spec, worker: int) -> dict:
    """Worker `worker`'s graph of `model` (see the module), built with the `tf` module given."""
    graph = tf.Graph()
    with graph.as_default():
        with tf.device(tf.train.replica_device_setter(worker_device=f"/job:worker/task:{worker}", cluster=spec)):
            params = [tf.Variable(v, name=f"{model}_p{i}") for i, v in enumerate(model_parameters(model))]
            if model == "poly":
                x = tf.placeholder(tf.float32, [POLY_BATCH], name="x")
                y = tf.placeholder(tf.float32, [POLY_BATCH], name="y")
                features = tf.stack([x * x, x, tf.ones_like(x)], axis=1)
                loss = tf.reduce_mean(tf.square(tf.matmul(features, params[0])[:, 0] - y))
            else:
                x = tf.placeholder(tf.float32, [MLP_BATCH, MLP_SIZES[0]], name="x")
                y = tf.placeholder(tf.int32, [MLP_BATCH], name="y")
                hidden = tf.nn.relu(tf.matmul(x, params[0]) + params[1])
                logits = tf.matmul(hidden, params[2]) + params[3]
                loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
            train = tf.train.GradientDescentOptimizer(LEARNING_RATE).minimize(loss)
        init = tf.variables_initializer(params)
    x_value, y_value = model_data(model, worker)
    return {"graph": graph, "train": train, "loss": loss, "init": init, "feed": {x: x_value, y: y_value},
            "param_bytes": sum(v.nbytes for v in model_parameters(model))}


def run_threads(workers: list, steps: int) -> float:
    """Every worker's `steps` training steps on threads released together; the wall time in seconds."""
    barrier = threading.Barrier(len(workers) + 1)
    errors: list = []

    def loop(w: dict) -> None:
        barrier.wait()
        try:
            for _ in range(steps):
                w["sess"].run(w["train"], w["feed"])
        except Exception as exc:  # noqa: BLE001 - reported by the caller
            errors.append(exc)

    threads = [threading.Thread(target=loop, args=(w,)) for w in workers]
    for t in threads:
        t.start()
    barrier.wait()
    start = time.perf_counter()
    for t in threads:
        t.join()
    wall = time.perf_counter() - start
    if errors:
        raise errors[0]
    return wall


class Runtime:
    """A cluster shape's workers (graphs, sessions) for one model: open, warm up, sample, close."""

    def __init__(self, tf, model: str, spec, n_workers: int, warmup: int):
        self.workers = []
        for i in range(n_workers):
            w = build_model(tf, model, spec, i)
            w["sess"] = tf.Session(f"grpc://{spec.task_address('worker', i)}", graph=w["graph"])
            self.workers.append(w)
        self.workers[0]["sess"].run(self.workers[0]["init"])  # the chief initialises the ps's variables
        self.loss_before = float(self.workers[0]["sess"].run(self.workers[0]["loss"], self.workers[0]["feed"]))
        run_threads(self.workers, warmup)

    def sample(self, steps: int) -> float:
        return len(self.workers) * steps / run_threads(self.workers, steps)

    def loss(self) -> float:
        return float(self.workers[0]["sess"].run(self.workers[0]["loss"], self.workers[0]["feed"]))

    def close(self) -> None:
        for w in self.workers:
            w["sess"].close()


# --- TF's side (subprocesses; TF is never imported next to adplace) ------------------------------------------------
def _tf_v1():
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf_module
    tf = tf_module.compat.v1
    tf.disable_v2_behavior()
    return tf


def tf_server_main(arg: str) -> None:
    """--tf-server '{"cluster": ..., "job": ..., "task": ...}': one TF task, until killed."""
    request = json.loads(arg)
    tf = _tf_v1()
    server = tf.train.Server(tf.train.ClusterSpec(request["cluster"]), job_name=request["job"],
                             task_index=request["task"],
                             config=tf.ConfigProto(inter_op_parallelism_threads=2, intra_op_parallelism_threads=2))
    print("ready", flush=True)
    server.join()


def tf_client_main(arg: str) -> None:
    """--tf-client '{"cluster": ..., "workers": n, "warmup": k}': reads `<model>` lines (open that model's workers),
    `sample <steps>` and `loss` lines; answers each with one JSON line."""
    request = json.loads(arg)
    tf = _tf_v1()
    spec = tf.train.ClusterSpec(request["cluster"])
    runtime = None
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        command = line.split()
        if not command or command[0] == "quit":
            break
        if command[0] == "sample":
            answer = {"steps_per_s": runtime.sample(int(command[1]))}
        elif command[0] == "loss":
            answer = {"loss": runtime.loss(), "loss_before": runtime.loss_before}
        else:
            if runtime is not None:
                runtime.close()
            runtime = Runtime(tf, command[0], spec, request["workers"], request["warmup"])
            answer = {"opened": command[0]}
        print(json.dumps(answer), flush=True)


class TFCluster:
    """TF's servers for a cluster spec (one subprocess per task) and a client subprocess driving its workers."""

    def __init__(self, cluster: dict, n_workers: int, warmup: int):
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
        script = os.path.abspath(__file__)
        self.servers = [subprocess.Popen([sys.executable, script, "--tf-server",
                                          json.dumps({"cluster": cluster, "job": job, "task": i})],
                                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
                        for job, addresses in cluster.items() for i in range(len(addresses))]
        try:
            for server in self.servers:
                if server.stdout.readline().strip() != "ready":
                    raise RuntimeError("a TF server did not start")
            self.client = subprocess.Popen([sys.executable, script, "--tf-client",
                                            json.dumps({"cluster": cluster, "workers": n_workers, "warmup": warmup})],
                                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                           text=True, env=env)
            self._ask(None)
        except BaseException:
            self.close()
            raise

    def _ask(self, line: str | None) -> dict:
        if line is not None:
            self.client.stdin.write(line + "\n")
            self.client.stdin.flush()
        answer = self.client.stdout.readline()
        if not answer:
            raise RuntimeError("the TF client failed: " + self.client.stderr.read()[-2000:])
        return json.loads(answer)

    def open(self, model: str) -> None:
        self._ask(model)

    def sample(self, steps: int) -> float:
        return self._ask(f"sample {steps}")["steps_per_s"]

    def losses(self) -> tuple[float, float]:
        answer = self._ask("loss")
        return answer["loss_before"], answer["loss"]

    def close(self) -> None:
        client = getattr(self, "client", None)
        if client is not None and client.poll() is None:
            from dispatch import stop_worker  # main()'s process only: dispatch imports adplace
            stop_worker(client, "quit\n")
        for server in self.servers:
            server.kill()
            server.wait()


# --- adplace's side ---------------------------------------------------------------------------------------------------
def cross_task_bytes(transfers: dict) -> int:
    """Bytes a step moved between two different tasks (the client's feeds and fetches left out)."""
    return sum(n for (src, dst), n in transfers.items() if "client" not in (src, dst) and src != dst)


def free_ports(n: int) -> list[int]:
    """`n` free localhost ports (for TF's servers; adplace's tasks only take them as names)."""
    sockets = [socket.socket() for _ in range(n)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def measure_shape(n_workers: int, n_ps: int, steps: dict, samples: int, warmup: int, with_tf: bool) -> dict:
    """Every model on one cluster shape, adplace and TF samples alternating."""
    import adplace as tf
    from adplace.distributed import start_cluster
    ports = free_ports(n_workers + n_ps)
    cluster = {"ps": [f"localhost:{p}" for p in ports[:n_ps]],
               "worker": [f"localhost:{p}" for p in ports[n_ps:]]}
    spec = tf.train.ClusterSpec(cluster)
    started = time.perf_counter()
    servers = start_cluster(spec)
    tf_cluster = TFCluster(cluster, n_workers, warmup) if with_tf else None
    results = {"cluster": cluster, "startup_s": time.perf_counter() - started}
    try:
        for model in MODELS:
            ours = Runtime(tf, model, spec, n_workers, warmup)
            if tf_cluster is not None:
                tf_cluster.open(model)
            ours_samples, tf_samples = [], []
            for _ in range(samples):
                ours_samples.append(ours.sample(steps[model]))
                if tf_cluster is not None:
                    tf_samples.append(tf_cluster.sample(steps[model]))
            chief = ours.workers[0]
            chief["sess"].run(chief["train"], chief["feed"])  # one step alone: what a step moves
            moved = dict(chief["sess"]._remote.last_step_transfers)
            param_bytes = chief["param_bytes"]
            entry = {"steps_per_sample": steps[model], "samples": samples,
                     "adplace_steps_per_s": statistics.median(ours_samples), "adplace_all": ours_samples,
                     "adplace_loss": [ours.loss_before, ours.loss()],
                     "bytes_per_step": cross_task_bytes(moved), "min_bytes_per_step": 2 * param_bytes,
                     "feed_bytes_per_step": sum(n for (src, _), n in moved.items() if src == "client"),
                     "transfers": {f"{src} -> {dst}": n for (src, dst), n in sorted(moved.items())}}
            if tf_samples:
                entry.update(tf_steps_per_s=statistics.median(tf_samples), tf_all=tf_samples,
                             tf_loss=list(tf_cluster.losses()))
            ours.close()
            results[model] = entry
    finally:
        if tf_cluster is not None:
            tf_cluster.close()
        for server in servers:
            server._stop()
    return results


def start_local_ray():
    """A new single-node Ray on 127.0.0.1 for this run (the ray module), unless $ADPLACE_RAY_ADDRESS names a cluster
    (None). Never a cluster someone else started on this machine, which a bare ray.init() would join."""
    from adplace.distributed import ray_backend
    if os.environ.get(ray_backend.ADDRESS_ENV):
        return None
    ray = ray_backend.ray_module()
    ray.init(address="local", _node_ip_address="127.0.0.1", namespace=ray_backend.NAMESPACE, include_dashboard=False,
             log_to_driver=False)
    return ray


# --- report -------------------------------------------------------------------------------------------------------
def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--tf-server"]:
        tf_server_main(argv[1])
        return 0
    if argv[:1] == ["--tf-client"]:
        tf_client_main(argv[1])
        return 0
    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # every local node on 127.0.0.1
    if importlib.util.find_spec("ray") is None:
        print("skipped: Ray is not installed (pip install 'adplace[distributed]')")
        return 0
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import adplace as tf
    from dispatch import _sources_digest, machine_info, parse_args, print_table, source_info, write_results
    args = parse_args(argv, "cluster", __doc__.splitlines()[0], "2 cluster shapes, fewer steps and samples")
    shapes = QUICK_SHAPES if args.quick else SHAPES
    steps = {"poly": 10, "mlp": 5} if args.quick else {"poly": 100, "mlp": 40}
    samples, warmup = (2, 3) if args.quick else (5, 5)
    with_tf = importlib.util.find_spec("tensorflow") is not None
    sources_at_start = _sources_digest(os.path.dirname(os.path.abspath(tf.__file__)))
    started = time.perf_counter()
    results = {"benchmark": "cluster", "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
               "quick": args.quick, "machine": machine_info(), "tensorflow": with_tf,
               "settings": {"steps_per_sample": steps, "samples": samples, "warmup_steps": warmup,
                            "ray_address": os.environ.get("ADPLACE_RAY_ADDRESS") or "local (127.0.0.1)"},
               "benchmarks": {}}
    rows = []
    own_ray = start_local_ray()
    try:
        measured_shapes = [(shape, measure_shape(*shape, steps, samples, warmup, with_tf)) for shape in shapes]
    finally:
        if own_ray is not None:
            own_ray.shutdown()
    for (n_workers, n_ps), measured in measured_shapes:
        for model in MODELS:
            entry = measured[model]
            entry["startup_s"] = measured["startup_s"]
            results["benchmarks"][f"{model}_w{n_workers}_ps{n_ps}"] = entry
            ours, theirs = entry["adplace_steps_per_s"], entry.get("tf_steps_per_s")
            rows.append([model, n_workers, n_ps, f"{ours:.1f}", f"{theirs:.1f}" if theirs else "-",
                         f"{ours / theirs:.2f}x" if theirs else "-", entry["bytes_per_step"],
                         entry["min_bytes_per_step"], f"{entry['bytes_per_step'] / entry['min_bytes_per_step']:.2f}x"])
    results["table"] = [dict(zip(("model", "workers", "ps", "adplace_steps_per_s", "tf_steps_per_s", "ratio",
                                  "bytes_per_step", "min_bytes_per_step", "bytes_ratio"), map(str, row)))
                        for row in rows]
    print_table(["model", "workers", "ps", "adplace steps/s", "TF steps/s", "adplace/TF", "bytes/step", "minimum",
                 "bytes/min"], rows)
    if not with_tf:
        print("TensorFlow is not installed: no TF rows")
    print(f"(steps/s: all workers' steps per second, median of {samples} samples; bytes/step: one worker's step "
          f"between tasks, minimum = parameters down + gradients up)")
    results["elapsed_s"] = time.perf_counter() - started
    results["adplace_source"] = dict(source_info(), sources_sha1_at_start=sources_at_start)
    write_results(results, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
