"""JAX's contestant for benchmarks/speed.py: a worker process running every row as a `jax.jit`-compiled function on
JAX's CPU backend (inputs fed from NumPy arrays each call, results waited for with block_until_ready), answering
common.serve's JSON requests. Optimizer state is donated to the update, so XLA may update it in place.

    python benchmarks/peers/jax_peer.py

Threads are JAX's own choice unless the benchmark starts this process with XLA_FLAGS (its one-thread rows do)."""
import os
import sys

os.environ.setdefault("JAX_PLATFORMS", "cpu")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

from peers import common  # noqa: E402


def make(row: str, p: dict) -> common.Contestant:
    import jax
    import jax.numpy as jnp
    family = common.kind(row)
    d = common.data(row, p)
    if family == "trivial":
        add = jax.jit(lambda a, b: a + b)
        return common.Contestant(lambda: add(d["a"], d["b"]).block_until_ready())
    if family == "tower_fit":
        return _tower_fit(jax, jnp, d)
    if family == "opt":
        return _dense_opt(jax, jnp, row[len("opt_"):], d)
    if family == "opt_sparse":
        return _sparse_adagrad(jax, jnp, d)
    if family in ("chain1000", "chain1000_arith"):
        if family == "chain1000":
            unary = (jnp.sin, jnp.cos, jnp.square)
            fns = [unary[i % 3] for i in range(p["n"])]
        else:
            binary = {np.multiply: jnp.multiply, np.add: jnp.add, np.subtract: jnp.subtract}
            fns = [_bind(binary[f], np.float32(c)) for f, c in (common.CHAIN_ARITH[i % 4] for i in range(p["n"]))]

        def chain(a):
            for f in fns:
                a = f(a)
            return a
        jitted = jax.jit(chain)
        return common.Contestant(lambda: jitted(d["x"]).block_until_ready())
    raise ValueError(f"unknown row {row!r}")


def _bind(f, c):
    """a -> f(a, c)."""
    return lambda a: f(a, c)


def _adam(jnp, h: dict):
    """TF's Adam on a pytree: returns update(params, grads, m, v, b1p, b2p) -> (params, m, v, b1p, b2p)."""
    import jax
    lr, b1, b2, eps = (np.float32(h[k]) for k in ("lr", "beta1", "beta2", "epsilon"))

    def update(params, grads, m, v, b1p, b2p):
        lr_t = lr * jnp.sqrt(1 - b2p) / (1 - b1p)
        m = jax.tree_util.tree_map(lambda m, g: m + (g - m) * (1 - b1), m, grads)
        v = jax.tree_util.tree_map(lambda v, g: v + (g * g - v) * (1 - b2), v, grads)
        params = jax.tree_util.tree_map(lambda p, m, v: p - lr_t * m / (jnp.sqrt(v) + eps), params, m, v)
        return params, m, v, b1p * b1, b2p * b2
    return update


def _tower_fit(jax, jnp, d: dict) -> common.Contestant:
    adam = _adam(jnp, common.ADAM)

    def losses(w, x, y):
        f = jnp.stack([jnp.square(x), x, jnp.ones_like(x)], 1)
        return jnp.square(jnp.squeeze(f @ w, 1) - y)

    def step(state, x, y):
        w, m, v, b1p, b2p = state
        (_, loss), g = jax.value_and_grad(lambda w: (jnp.mean(losses(w, x, y)), losses(w, x, y)), has_aux=True)(w)
        return adam(w, g, m, v, b1p, b2p), loss

    jitted = jax.jit(step, donate_argnums=0)
    zeros = np.zeros_like(d["w0"])
    a = common.ADAM
    state = [(jnp.asarray(d["w0"]), jnp.asarray(zeros), jnp.asarray(zeros), jnp.float32(a["beta1"]),
              jnp.float32(a["beta2"]))]
    nxt = common.cycle(list(zip(d["x"], d["y"])))

    def run():
        state[0], loss = jitted(state[0], *nxt())
        return loss.block_until_ready()
    return common.Contestant(run, probe=lambda: np.asarray(state[0][0]))


def _dense_opt(jax, jnp, name: str, d: dict) -> common.Contestant:
    h = {k: np.float32(v) for k, v in common.OPT_HYPER[name].items()}
    n = d["var"].shape
    if name == "adam":
        adam = _adam(jnp, common.OPT_HYPER["adam"])
        slots = (np.zeros(n, np.float32), np.zeros(n, np.float32), np.float32(h["beta1"]), np.float32(h["beta2"]))

        def update(var, slots, g):
            var, m, v, b1p, b2p = adam(var, g, *slots)
            return var, (m, v, b1p, b2p)
    elif name == "rmsprop":
        slots = (np.ones(n, np.float32), np.zeros(n, np.float32))

        def update(var, slots, g):
            ms, mom = slots
            ms = ms + (g * g - ms) * (1 - h["decay"])
            mom = mom * h["momentum"] + h["lr"] * g / jnp.sqrt(ms + h["epsilon"])
            return var - mom, (ms, mom)
    elif name == "momentum":
        slots = (np.zeros(n, np.float32),)

        def update(var, slots, g):
            accum = slots[0] * h["momentum"] + g
            return var - h["lr"] * accum, (accum,)
    elif name == "adagrad":
        slots = (np.full(n, h["initial_accumulator_value"], np.float32),)

        def update(var, slots, g):
            accum = slots[0] + g * g
            return var - h["lr"] * g / jnp.sqrt(accum), (accum,)
    elif name == "adadelta":
        slots = (np.zeros(n, np.float32), np.zeros(n, np.float32))

        def update(var, slots, g):
            accum, accum_upd = slots
            accum = accum * h["rho"] + g * g * (1 - h["rho"])
            upd = jnp.sqrt(accum_upd + h["epsilon"]) / jnp.sqrt(accum + h["epsilon"]) * g
            accum_upd = accum_upd * h["rho"] + upd * upd * (1 - h["rho"])
            return var - upd * h["lr"], (accum, accum_upd)
    elif name == "ftrl":
        slots = (np.full(n, h["initial_accumulator_value"], np.float32), np.zeros(n, np.float32))

        def update(var, slots, g):
            accum, linear = slots
            new_accum = accum + g * g
            linear = linear + g - (jnp.sqrt(new_accum) - jnp.sqrt(accum)) / h["lr"] * var
            quadratic = jnp.sqrt(new_accum) / h["lr"] + 2 * h["l2"]
            var = jnp.where(jnp.abs(linear) > h["l1"], (jnp.sign(linear) * h["l1"] - linear) / quadratic, 0.0)
            return var.astype(jnp.float32), (new_accum, linear)
    else:
        raise ValueError(f"unknown optimizer {name!r}")
    jitted = jax.jit(update, donate_argnums=(0, 1))
    state = [jnp.asarray(d["var"]), jax.tree_util.tree_map(jnp.asarray, slots)]
    nxt = common.cycle(d["g"])

    def run():
        state[0], state[1] = jitted(state[0], state[1], nxt())
        state[0].block_until_ready()
    return common.Contestant(run, probe=lambda: np.asarray(state[0]))


def _sparse_adagrad(jax, jnp, d: dict) -> common.Contestant:
    h = {k: np.float32(v) for k, v in common.OPT_HYPER["adagrad"].items()}

    def update(var, acc, idx, g):
        a = acc[idx] + g * g
        return var.at[idx].add(-h["lr"] * g / jnp.sqrt(a)), acc.at[idx].set(a)

    jitted = jax.jit(update, donate_argnums=(0, 1))
    state = [jnp.asarray(d["var"]), jnp.full(d["var"].shape, h["initial_accumulator_value"], jnp.float32)]
    nxt = common.cycle(list(zip(d["idx"], d["g"])))

    def run():
        idx, g = nxt()
        state[0], state[1] = jitted(state[0], state[1], idx, g)
        state[0].block_until_ready()
    return common.Contestant(run, probe=lambda: np.asarray(state[0]))


def info() -> dict:
    import jax
    return {"jax": jax.__version__, "devices": [str(dev) for dev in jax.devices()], "blas": common.blas_info(),
            "env": common.thread_env(), "affinity": common.affinity(), "pid": os.getpid()}


if __name__ == "__main__":
    common.serve(make, info)
