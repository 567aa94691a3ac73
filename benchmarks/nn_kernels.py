"""NN kernels benchmark: adplace's conv2d, max pool and softmax cross-entropy (forward and training step) on the CPU
against the same work in hand-written NumPy and, when it is installed, JAX (jit-compiled, on its CPU backend).

    python benchmarks/nn_kernels.py            # full run (a few minutes on 2 cores), writes results/nn_kernels.json
    python benchmarks/nn_kernels.py --quick    # smoke run: small shapes, few samples (JSON to $TMPDIR)
    python benchmarks/nn_kernels.py --out PATH # write the JSON elsewhere

Rows (float32, NHWC, SAME padding; --quick shrinks every batch to 4):
  conv_fwd     y = conv2d(x, w), x 64x28x28x32, w 5x5x32x64 (a LeNet/MNIST-tutorial layer). NumPy: the 25 shifted
               views of the padded input stacked into patches and one tensordot with the filter (im2col).
  conv_train   y and both gradients of sum(y * dy): dx (Conv2DBackpropInput) and dw (Conv2DBackpropFilter), one run.
               NumPy: the forward above, dw = patches (x) dy, dx = the patches of the padded dy (x) the flipped filter.
  pool_train   max_pool 2x2 stride 2 of 64x28x28x64 and its gradient. NumPy: reshape to 2x2 blocks, max, and the
               gradient routed to the first maximum of each block, as TF does.
  xent_step    one training step of softmax regression, batch 128, 784 -> 10 features, sparse labels:
               logits = x W + b, loss = mean(sparse_softmax_cross_entropy), GradientDescent on W and b. NumPy: the same
               forward, hand-derived gradient and update.
Each adplace row is one sess.run of a compiled plan, feeds included; each NumPy row one call of a function doing the
same arithmetic. Every time is a MEDIAN over several samples that alternate between the contestants
(dispatch.compare), reported with the ratio adplace / NumPy and adplace / JAX; values are checked to agree (rtol 1e-3)
before timing. Nothing here asserts a time.
"""
from __future__ import annotations

import datetime
import os
import sys
import time

import numpy as np

import adplace as tf

try:  # run as a script (benchmarks/ is sys.path[0]) or imported as benchmarks.nn_kernels
    from dispatch import _fmt_time, _sources_digest, compare, machine_info, parse_args, print_table, source_info, \
        write_results
except ImportError:  # pragma: no cover - the package-style import
    from benchmarks.dispatch import (_fmt_time, _sources_digest, compare, machine_info, parse_args, print_table,
                                     source_info, write_results)

try:
    import jax
    import jax.numpy as jnp
except ImportError:  # JAX is optional: its column then says "-"
    jax = jnp = None

RTOL = 1e-3


# --- NumPy baselines ----------------------------------------------------------------------------------------------
def _patches(x: np.ndarray, k: int) -> np.ndarray:
    """The k x k SAME-padded windows of NHWC `x` as an N x H x W x k x k x C array (im2col)."""
    pad = k // 2
    padded = np.pad(x, ((0, 0), (pad, k - 1 - pad), (pad, k - 1 - pad), (0, 0)))
    h, w = x.shape[1:3]
    return np.stack([np.stack([padded[:, i:i + h, j:j + w] for j in range(k)], 3) for i in range(k)], 3)


def numpy_conv(x, w):
    return np.tensordot(_patches(x, w.shape[0]), w, axes=([3, 4, 5], [0, 1, 2]))


def numpy_conv_train(x, w, dy):
    k = w.shape[0]
    patches = _patches(x, k)
    y = np.tensordot(patches, w, axes=([3, 4, 5], [0, 1, 2]))
    dw = np.tensordot(patches, dy, axes=([0, 1, 2], [0, 1, 2]))
    dx = np.tensordot(_patches(dy, k), w[::-1, ::-1], axes=([3, 4, 5], [0, 1, 3]))
    return y, dx, dw


def numpy_pool_train(x, dy):
    n, h, w, c = x.shape
    blocks = x.reshape(n, h // 2, 2, w // 2, 2, c).transpose(0, 1, 3, 5, 2, 4).reshape(n, h // 2, w // 2, c, 4)
    first = blocks.argmax(-1)
    y = np.take_along_axis(blocks, first[..., None], -1)[..., 0]
    grad = (np.arange(4) == first[..., None]) * dy[..., None]
    dx = grad.reshape(n, h // 2, w // 2, c, 2, 2).transpose(0, 1, 4, 2, 5, 3).reshape(n, h, w, c)
    return y, dx.astype(x.dtype)


def numpy_xent_step(params, x, labels, lr):
    w, b = params
    logits = x @ w + b
    shifted = logits - logits.max(1, keepdims=True)
    exp = np.exp(shifted)
    probs = exp / exp.sum(1, keepdims=True)
    loss = np.mean(np.log(exp.sum(1)) - shifted[np.arange(len(labels)), labels])
    dlogits = probs
    dlogits[np.arange(len(labels)), labels] -= 1
    dlogits /= len(labels)
    params[0] = w - lr * (x.T @ dlogits)
    params[1] = b - lr * dlogits.sum(0)
    return loss


# --- JAX baselines (jit on the CPU) -------------------------------------------------------------------------------
def _jax_conv(x, w):
    return jax.lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))


def _jax_pool(x):
    return jax.lax.reduce_window(x, -jnp.inf, jax.lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")


def _jax_vjp(fn):
    """fn's output and its input gradients for the cotangent dy, jit-compiled."""
    def run(*args):
        *inputs, dy = args
        y, pullback = jax.vjp(fn, *inputs)
        return (y, *pullback(dy))
    return jax.jit(run)


def _jax_xent_step():
    def loss_fn(w, b, x, labels):
        logits = x @ w + b
        return jnp.mean(jax.nn.logsumexp(logits, 1) - jnp.take_along_axis(logits, labels[:, None], 1)[:, 0])

    @jax.jit
    def step(w, b, x, labels, lr):
        loss, (gw, gb) = jax.value_and_grad(loss_fn, (0, 1))(w, b, x, labels)
        return w - lr * gw, b - lr * gb, loss
    return step


def _ready(values):
    return [v.block_until_ready() for v in values] if isinstance(values, (tuple, list)) else values.block_until_ready()


# --- rows ---------------------------------------------------------------------------------------------------------
def _check(name: str, got, want) -> None:
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), w, rtol=RTOL, atol=RTOL * float(np.abs(w).max()),
                                   err_msg=f"{name}: adplace/JAX disagree with NumPy")


def bench_conv(batch: int, samples: int, train: bool) -> dict:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((batch, 28, 28, 32), dtype=np.float32)
    w = (rng.standard_normal((5, 5, 32, 64), dtype=np.float32) / 20).astype(np.float32)
    dy = rng.standard_normal((batch, 28, 28, 64), dtype=np.float32)
    g = tf.Graph()
    with g.as_default():
        xp, wp, dyp = (tf.placeholder(tf.float32, a.shape) for a in (x, w, dy))
        y = tf.nn.conv2d(xp, wp, [1, 1, 1, 1], "SAME")
        fetches = [y, *tf.gradients(y, [xp, wp], grad_ys=dyp)] if train else y
    sess = tf.Session(graph=g)
    feeds = {xp: x, wp: w, dyp: dy} if train else {xp: x, wp: w}
    want = numpy_conv_train(x, w, dy) if train else (numpy_conv(x, w),)
    _check("conv", sess.run(fetches, feeds) if train else [sess.run(fetches, feeds)], want)
    fns = {"numpy": (lambda: numpy_conv_train(x, w, dy)) if train else (lambda: numpy_conv(x, w))}
    if jax is not None:
        jx, jw, jdy = jnp.asarray(x), jnp.asarray(w), jnp.asarray(dy)
        jitted = _jax_vjp(_jax_conv) if train else jax.jit(_jax_conv)
        args = (jx, jw, jdy) if train else (jx, jw)
        got = _ready(jitted(*args))
        _check("conv (JAX)", got if train else [got], want)
        fns["jax"] = lambda: _ready(jitted(*args))
    return compare(lambda: sess.run(fetches, feeds), fns, samples, target_s=0.3, cap=50)


def bench_pool(batch: int, samples: int) -> dict:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((batch, 28, 28, 64), dtype=np.float32)
    dy = rng.standard_normal((batch, 14, 14, 64), dtype=np.float32)
    g = tf.Graph()
    with g.as_default():
        xp, dyp = tf.placeholder(tf.float32, x.shape), tf.placeholder(tf.float32, dy.shape)
        y = tf.nn.max_pool(xp, [1, 2, 2, 1], [1, 2, 2, 1], "SAME")
        fetches = [y, tf.gradients(y, xp, grad_ys=dyp)[0]]
    sess = tf.Session(graph=g)
    feeds = {xp: x, dyp: dy}
    want = numpy_pool_train(x, dy)
    _check("pool", sess.run(fetches, feeds), want)
    fns = {"numpy": lambda: numpy_pool_train(x, dy)}
    if jax is not None:
        jitted, args = _jax_vjp(_jax_pool), (jnp.asarray(x), jnp.asarray(dy))
        _check("pool (JAX)", _ready(jitted(*args)), want)
        fns["jax"] = lambda: _ready(jitted(*args))
    return compare(lambda: sess.run(fetches, feeds), fns, samples, target_s=0.2, cap=200)


def bench_xent(batch: int, samples: int) -> dict:
    rng = np.random.default_rng(2)
    x = rng.standard_normal((batch, 784), dtype=np.float32)
    labels = rng.integers(0, 10, batch).astype(np.int64)
    lr = np.float32(0.1)
    g = tf.Graph()
    with g.as_default():
        xp, yp = tf.placeholder(tf.float32, [None, 784]), tf.placeholder(tf.int64, [None])
        w, b = tf.Variable(tf.zeros([784, 10])), tf.Variable(tf.zeros([10]))
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=yp, logits=tf.matmul(xp, w) + b))
        step = tf.train.GradientDescentOptimizer(lr).minimize(loss)
        init = tf.global_variables_initializer()
    sess = tf.Session(graph=g)
    sess.run(init)
    feeds = {xp: x, yp: labels}
    params = [np.zeros((784, 10), np.float32), np.zeros(10, np.float32)]
    want = [numpy_xent_step(params, x, labels, lr) for _ in range(3)]
    got = [sess.run([step, loss], feeds)[1] for _ in range(3)]
    _check("xent", [got, sess.run(w)], [np.array(want), params[0]])
    fns = {"numpy": lambda: numpy_xent_step(params, x, labels, lr)}
    if jax is not None:
        jstep, state = _jax_xent_step(), [jnp.zeros((784, 10)), jnp.zeros(10)]
        jx, jl = jnp.asarray(x), jnp.asarray(labels)

        def jax_step():
            state[0], state[1], value = jstep(state[0], state[1], jx, jl, lr)
            return value.block_until_ready()
        jax_step()
        fns["jax"] = jax_step
    return compare(lambda: sess.run([step, loss], feeds), fns, samples, target_s=0.05, cap=500)


def main(argv=None) -> int:
    args = parse_args(argv, "nn_kernels", __doc__.splitlines()[0], "batch 4, 5 samples")
    batch, samples = (4, 5) if args.quick else (64, 11)
    sources_at_start = _sources_digest(os.path.dirname(os.path.abspath(tf.__file__)))
    started = time.perf_counter()
    runs = {"conv_fwd": bench_conv(batch, samples, train=False), "conv_train": bench_conv(batch, samples, train=True),
            "pool_train": bench_pool(batch, samples), "xent_step": bench_xent(128 if not args.quick else 8, samples)}
    header = ("row", "adplace", "numpy", "jax", "adplace/numpy", "adplace/jax")
    rows, results = [], {"benchmarks": {}}
    for name, r in runs.items():
        med = r["median_us"]
        jax_us = med.get("jax")
        ratios = {"adplace_over_numpy": med["adplace"] / med["numpy"],
                  "adplace_over_jax": med["adplace"] / jax_us if jax_us else None}
        rows.append((name, _fmt_time(med["adplace"]), _fmt_time(med["numpy"]), _fmt_time(jax_us) if jax_us else "-",
                     f"{ratios['adplace_over_numpy']:.2f}x",
                     f"{ratios['adplace_over_jax']:.2f}x" if jax_us else "-"))
        results["benchmarks"][name] = {**r, **ratios}
    print_table(header, rows)
    print(f"\nmedians over {samples} samples; batch {batch}; JAX {jax.__version__ if jax else 'not installed'}")
    results.update({"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                    "seconds": time.perf_counter() - started, "quick": args.quick, "machine": machine_info(),
                    "jax": jax.__version__ if jax else None, "table": [dict(zip(header, row)) for row in rows],
                    "adplace_source": {**source_info(), "sources_sha1_at_start": sources_at_start}})
    write_results(results, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
