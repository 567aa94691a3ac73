"""MLP training step benchmark: one `sess.run([train_op, loss], feeds)` of a 784-512-512-10 ReLU network (softmax
cross-entropy, batch 128, float32, tf.train.AdamOptimizer) in adplace, against the same step in TF 2.21 compat.v1
and in JAX (a jit-compiled step with a hand-written Adam, on the CPU).

    python benchmarks/mlp_step.py              # default threads and one thread; writes results/mlp_step.json
    python benchmarks/mlp_step.py --quick      # smoke run: few samples (JSON to $TMPDIR)
    python benchmarks/mlp_step.py --out PATH   # write the JSON elsewhere

Thread settings (`threads`): "default" is ConfigProto() for adplace and TF and JAX's own choice; "1" is
ConfigProto(intra_op_parallelism_threads=1, inter_op_parallelism_threads=1) for adplace and TF, and for JAX
XLA_FLAGS="--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1" with the process pinned to one CPU.

TF and JAX each run in a SUBPROCESS of this script (`--peer tf|jax`), never in the adplace process: the peer builds
the same model from the same data and initial weights (an .npz file), checks in with its first step's loss (compared
with adplace's), then times batches of steps when asked on stdin, so that samples of every contestant interleave.
A peer that is not installed is skipped. Every number is a median over samples, in microseconds per step; each sample
starts SETTLE_S after the one before, once the threads the previous contestant left spinning have gone to sleep.
"""
from __future__ import annotations

import datetime
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

try:  # run as a script (benchmarks/ is sys.path[0]) or imported as benchmarks.mlp_step
    from peers.common import batch_ns
except ImportError:  # pragma: no cover - the package-style import
    from benchmarks.peers.common import batch_ns

SIZES = (784, 512, 512, 10)
BATCH = 128
LR, BETA1, BETA2, EPS = 1e-3, 0.9, 0.999, 1e-8
WARMUP = 30  # steps before timing: plans tier up, kernels settle their BLAS thread counts
# Pause before each sample: the contestant before may leave threads spinning (OpenBLAS's workers spin ~0.1 s after a
# product, TF's and XLA's pools too), which on 2 cores slowed the next contestant's sample by up to 1.4x (TF's most).
SETTLE_S = 0.3
ONE_THREAD_XLA_FLAGS = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"


def make_data(seed: int = 0) -> dict:
    """Inputs, one-hot labels and He-initialised weights and zero biases, float32."""
    rng = np.random.default_rng(seed)
    data = {"x": rng.random((BATCH, SIZES[0]), dtype=np.float32),
            "y": np.eye(SIZES[-1], dtype=np.float32)[rng.integers(0, SIZES[-1], BATCH)]}
    for i, (n_in, n_out) in enumerate(zip(SIZES[:-1], SIZES[1:])):
        data[f"w{i}"] = (rng.standard_normal((n_in, n_out)) * np.sqrt(2.0 / n_in)).astype(np.float32)
        data[f"b{i}"] = np.zeros(n_out, np.float32)
    return data


def _layers(data: dict) -> int:
    return len(SIZES) - 1


# --- graph-mode model (adplace and TF compat.v1 share this code) ------------------------------------------------
def build_graph_step(tf, data: dict, threads: str):
    """A session and a zero-argument step running [train_op, loss] on the fed batch, for a TF1-style module."""
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [BATCH, SIZES[0]], name="x")
        y = tf.placeholder(tf.float32, [BATCH, SIZES[-1]], name="y")
        h = x
        for i in range(_layers(data)):
            w = tf.Variable(data[f"w{i}"], name=f"w{i}")
            b = tf.Variable(data[f"b{i}"], name=f"b{i}")
            h = tf.nn.bias_add(tf.matmul(h, w), b)
            if i < _layers(data) - 1:
                h = tf.nn.relu(h)
        loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(labels=y, logits=h))
        train = tf.train.AdamOptimizer(LR, BETA1, BETA2, EPS).minimize(loss)
        init = tf.global_variables_initializer()
    config = tf.ConfigProto()
    if threads == "1":
        config = tf.ConfigProto(intra_op_parallelism_threads=1, inter_op_parallelism_threads=1)
    sess = tf.Session(graph=graph, config=config)
    sess.run(init)
    feeds = {x: data["x"], y: data["y"]}
    fetches = [train, loss]
    return sess, (lambda: sess.run(fetches, feeds)[1])


# --- JAX model --------------------------------------------------------------------------------------------------
def build_jax_step(data: dict):
    """A jit-compiled forward, backward and Adam update (TF's formula), donating the old state."""
    import jax
    import jax.numpy as jnp

    def loss_fn(params, x, y):
        h = x
        for i, (w, b) in enumerate(params):
            h = h @ w + b
            if i < len(params) - 1:
                h = jnp.maximum(h, 0)
        return jnp.mean(-jnp.sum(y * jax.nn.log_softmax(h), axis=-1))

    def step(state, x, y):
        params, m, v, t = state
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
        t = t + 1
        lr_t = LR * jnp.sqrt(1 - BETA2 ** t) / (1 - BETA1 ** t)
        m = jax.tree_util.tree_map(lambda m, g: BETA1 * m + (1 - BETA1) * g, m, grads)
        v = jax.tree_util.tree_map(lambda v, g: BETA2 * v + (1 - BETA2) * g * g, v, grads)
        params = jax.tree_util.tree_map(lambda p, m, v: p - lr_t * m / (jnp.sqrt(v) + EPS), params, m, v)
        return (params, m, v, t), loss

    params = [(jnp.asarray(data[f"w{i}"]), jnp.asarray(data[f"b{i}"])) for i in range(_layers(data))]
    zeros = jax.tree_util.tree_map(jnp.zeros_like, params)
    state = [(params, zeros, jax.tree_util.tree_map(jnp.zeros_like, params), jnp.float32(0))]
    jitted = jax.jit(step, donate_argnums=0)
    x, y = jnp.asarray(data["x"]), jnp.asarray(data["y"])

    def run():
        state[0], loss = jitted(state[0], x, y)
        return loss.block_until_ready()
    return run


# --- peers (subprocesses) ---------------------------------------------------------------------------------------
def peer_main(kind: str, data_path: str, threads: str) -> None:
    """A peer process: build, warm up, print the first loss, then answer each stdin line "N" with N steps' ns."""
    with np.load(data_path, allow_pickle=False) as npz:
        data = {k: npz[k] for k in npz.files}
    if kind == "tf":
        import tensorflow.compat.v1 as tf1
        tf1.disable_eager_execution()
        _, step = build_graph_step(tf1, data, threads)
    elif kind == "adplace":  # another adplace checkout (PYTHONPATH), e.g. to compare two versions side by side
        import adplace
        _, step = build_graph_step(adplace, data, threads)
    else:
        step = build_jax_step(data)
    first = float(step())
    for _ in range(WARMUP):
        step()
    print(json.dumps({"ready": True, "first_loss": first}), flush=True)
    for line in sys.stdin:
        n = int(line)
        if n <= 0:
            return
        print(batch_ns(step, n), flush=True)


class Peer:
    """A running peer subprocess; `batch(n)` times n of its steps, in nanoseconds."""

    def __init__(self, kind: str, data_path: str, threads: str):
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", JAX_PLATFORMS="cpu")
        cmd = [sys.executable, os.path.abspath(__file__), "--peer", kind, "--data", data_path, "--threads", threads]
        if threads == "1":
            env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + " " + ONE_THREAD_XLA_FLAGS).strip()
            if kind == "jax" and hasattr(os, "sched_getaffinity"):
                cpu = min(os.sched_getaffinity(0))
                cmd = ["taskset", "-c", str(cpu), *cmd]
        self.kind = kind
        self.stderr = tempfile.TemporaryFile("w+")  # a file, not a pipe: a chatty peer never blocks on it
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr,
                                     text=True, env=env)
        line = self.proc.stdout.readline()
        if not line:
            self.proc.wait()
            self.stderr.seek(0)
            raise RuntimeError(f"{kind} peer failed: {self.stderr.read()[-2000:]}")
        self.first_loss = json.loads(line)["first_loss"]

    def batch(self, n: int) -> int:
        self.proc.stdin.write(f"{n}\n")
        self.proc.stdin.flush()
        return int(self.proc.stdout.readline())

    def close(self) -> None:
        try:
            self.proc.stdin.write("0\n")
            self.proc.stdin.close()
            self.proc.wait(timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()
        self.stderr.close()


def available_peers() -> list[str]:
    """The peers installed here (their packages importable)."""
    found = {"tf": importlib.util.find_spec("tensorflow"), "jax": importlib.util.find_spec("jax")}
    return [kind for kind, spec in found.items() if spec is not None]


PEER_NAMES = {"tf": "tensorflow", "jax": "jax"}


def measure(samples: int, threads: str, target_s: float = 0.1, peers: list[str] | None = None) -> dict:
    """Median microseconds per training step of adplace and of each installed peer, samples interleaved.

    threads: "default" or "1" (see the module docstring). Returns {"adplace": us, "tensorflow": us, "jax": us,
    "steps_per_sample": n, "first_loss": {...}}; a peer not installed is missing from the result.
    """
    import adplace as tf
    from adplace.runtime import fusion
    data = make_data()
    sess, step = build_graph_step(tf, data, threads)
    first = {"adplace": float(step())}
    for _ in range(WARMUP):
        step()
    fusion.wait_cpu_fusion(120)  # what adplace compiles in the background (CPU fusion, small update loops) is ready
    step()
    runners = {"adplace": lambda n: batch_ns(step, n)}
    started: list[Peer] = []
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "mlp_data.npz")
        np.savez(path, **data)
        try:
            for kind in (available_peers() if peers is None else peers):
                peer = Peer(kind, path, threads)
                started.append(peer)
                name = PEER_NAMES[kind]
                first[name] = peer.first_loss
                runners[name] = peer.batch
            per_step = batch_ns(step, 3) / 3 / 1e9
            n = max(1, int(target_s / max(per_step, 1e-6)))
            times: dict[str, list[float]] = {name: [] for name in runners}
            names = list(runners)
            for i in range(samples):
                for name in names[i % len(names):] + names[:i % len(names)]:
                    time.sleep(SETTLE_S)
                    times[name].append(runners[name](n) / n / 1000.0)
        finally:
            for peer in started:
                peer.close()
            sess.close()
    result = {name: statistics.median(ts) for name, ts in times.items()}
    result.update(steps_per_sample=n, samples=samples, threads=threads, first_loss=first,
                  min_us={name: min(ts) for name, ts in times.items()})
    for name, loss in first.items():
        if not np.isclose(loss, first["adplace"], rtol=1e-4):
            raise AssertionError(f"{name}'s first loss {loss} differs from adplace's {first['adplace']}")
    return result


def blas_info() -> list:
    """NumPy's BLAS libraries as threadpoolctl sees them (its kernel `architecture` matters: OpenBLAS 0.3.31 runs
    AVX2 ("Haswell") kernels on AMD Zen 5 unless OPENBLAS_CORETYPE names an AVX-512 core, ~1.8x slower GEMM)."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return []
    keys = ("internal_api", "version", "architecture", "num_threads", "threading_layer")
    return [{k: info.get(k) for k in keys} for info in threadpool_info() if info.get("user_api") == "blas"]


def main(argv: list[str]) -> None:
    import argparse
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="5 samples of about 30 ms")
    parser.add_argument("--out", default=None)
    parser.add_argument("--samples", type=int, default=None)
    parser.add_argument("--threads", default=None, help='"default" or "1" (both when not given)')
    parser.add_argument("--peer", choices=("tf", "jax", "adplace"), help=argparse.SUPPRESS)
    parser.add_argument("--data", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.peer:
        peer_main(args.peer, args.data, args.threads)
        return
    samples = args.samples or (5 if args.quick else 15)
    target = 0.03 if args.quick else 0.1
    rows = {}
    for threads in ([args.threads] if args.threads else ["default", "1"]):
        row = rows[threads] = measure(samples, threads, target)
        peers = " ".join(f"{name} {row[name]:8.0f} us ({row['adplace'] / row[name]:.2f}x)"
                         for name in PEER_NAMES.values() if name in row)
        print(f"mlp_step threads={threads:<8} adplace {row['adplace']:8.0f} us   {peers}", flush=True)
    out = args.out or (os.path.join(tempfile.gettempdir(), "mlp_step.json") if args.quick else
                       os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "mlp_step.json"))
    result = {"benchmark": "mlp_step", "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
              "model": {"sizes": SIZES, "batch": BATCH, "optimizer": "Adam", "lr": LR}, "rows": rows,
              "unit": "median microseconds per step", "blas": blas_info()}
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "w") as fh:
        json.dump(result, fh, indent=2)
        fh.write("\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main(sys.argv[1:])
