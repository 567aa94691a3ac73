"""The hand-written NumPy baseline of every row of benchmarks/speed.py: the computation as a careful NumPy
programmer writes it (in-place ufuncs with out=, temporaries allocated once, hand-derived gradients)."""
from __future__ import annotations

import contextlib

import numpy as np

from . import common

F32 = np.float32


# --- optimizer updates, in place (TF1's formulas) ----------------------------------------------------------------------
class Adam:
    """TF's Adam: lr_t = lr sqrt(1 - b2^t) / (1 - b1^t); m += (g - m)(1 - b1); v += (g² - v)(1 - b2);
    var -= lr_t m / (sqrt(v) + eps). The beta powers start at b1, b2 and advance after each update."""

    def __init__(self, shapes: list, lr: float, beta1: float, beta2: float, epsilon: float):
        self.lr, self.b1, self.b2, self.eps = F32(lr), F32(beta1), F32(beta2), F32(epsilon)
        self.b1p, self.b2p = F32(beta1), F32(beta2)
        self.slots = [(np.zeros(s, F32), np.zeros(s, F32), np.empty(s, F32)) for s in shapes]

    def apply(self, pairs: list) -> None:
        lr_t = self.lr * np.sqrt(F32(1) - self.b2p) / (F32(1) - self.b1p)
        for (var, g), (m, v, t) in zip(pairs, self.slots):
            np.subtract(g, m, out=t)
            t *= F32(1) - self.b1
            m += t
            np.multiply(g, g, out=t)
            t -= v
            t *= F32(1) - self.b2
            v += t
            np.sqrt(v, out=t)
            t += self.eps
            np.divide(m, t, out=t)
            t *= lr_t
            var -= t
        self.b1p, self.b2p = self.b1p * self.b1, self.b2p * self.b2


def dense_update(name: str, var: np.ndarray, hyper: dict):
    """An in-place update function u(g) of `var` for TF1's optimizer `name` with its slots, initialised as TF does."""
    n = var.shape
    t, u = np.empty(n, F32), np.empty(n, F32)
    h = {k: F32(v) for k, v in hyper.items()}
    if name == "adam":
        adam = Adam([n], hyper["lr"], hyper["beta1"], hyper["beta2"], hyper["epsilon"])
        return lambda g: adam.apply([(var, g)])
    if name == "rmsprop":  # ms (initialised to ones) += (g² - ms)(1 - decay); mom = mom·momentum + lr g / sqrt(ms + eps)
        ms, mom = np.ones(n, F32), np.zeros(n, F32)

        def rmsprop(g):
            np.multiply(g, g, out=t)
            np.subtract(t, ms, out=t)
            np.multiply(t, F32(1) - h["decay"], out=t)
            np.add(ms, t, out=ms)
            np.add(ms, h["epsilon"], out=t)
            np.sqrt(t, out=t)
            np.divide(g, t, out=t)
            np.multiply(t, h["lr"], out=t)
            np.multiply(mom, h["momentum"], out=mom)
            np.add(mom, t, out=mom)
            np.subtract(var, mom, out=var)
        return rmsprop
    if name == "momentum":  # accum = accum·momentum + g; var -= lr accum
        accum = np.zeros(n, F32)

        def momentum(g):
            np.multiply(accum, h["momentum"], out=accum)
            np.add(accum, g, out=accum)
            np.multiply(accum, h["lr"], out=t)
            np.subtract(var, t, out=var)
        return momentum
    if name == "adagrad":  # accum += g²; var -= lr g / sqrt(accum)
        accum = np.full(n, h["initial_accumulator_value"], F32)

        def adagrad(g):
            np.multiply(g, g, out=t)
            np.add(accum, t, out=accum)
            np.sqrt(accum, out=t)
            np.divide(g, t, out=t)
            np.multiply(t, h["lr"], out=t)
            np.subtract(var, t, out=var)
        return adagrad
    if name == "adadelta":  # accum = ρ accum + (1-ρ) g²; upd = sqrt(au + eps) / sqrt(accum + eps) g; au likewise
        accum, accum_upd = np.zeros(n, F32), np.zeros(n, F32)

        def adadelta(g):
            np.multiply(g, g, out=t)
            np.multiply(t, F32(1) - h["rho"], out=t)
            np.multiply(accum, h["rho"], out=accum)
            np.add(accum, t, out=accum)
            np.add(accum, h["epsilon"], out=t)
            np.sqrt(t, out=t)
            np.add(accum_upd, h["epsilon"], out=u)
            np.sqrt(u, out=u)
            np.divide(u, t, out=u)
            np.multiply(u, g, out=u)
            np.multiply(u, u, out=t)
            np.multiply(t, F32(1) - h["rho"], out=t)
            np.multiply(accum_upd, h["rho"], out=accum_upd)
            np.add(accum_upd, t, out=accum_upd)
            np.multiply(u, h["lr"], out=u)
            np.subtract(var, u, out=var)
        return adadelta
    if name == "ftrl":  # learning_rate_power -0.5: TF's ApplyFtrl with its square roots
        assert hyper["learning_rate_power"] == -0.5
        accum, linear = np.full(n, h["initial_accumulator_value"], F32), np.zeros(n, F32)
        small = np.empty(n, bool)

        def ftrl(g):
            np.sqrt(accum, out=t)  # sqrt of the old accumulator
            np.multiply(g, g, out=u)
            np.add(accum, u, out=accum)
            np.sqrt(accum, out=u)  # sqrt of the new one
            np.subtract(t, u, out=t)
            np.divide(t, h["lr"], out=t)
            np.multiply(t, var, out=t)
            np.add(t, g, out=t)
            np.add(linear, t, out=linear)  # linear += g - (sqrt(new) - sqrt(old)) / lr · var
            np.divide(u, h["lr"], out=u)
            np.add(u, F32(2) * h["l2"], out=u)  # quadratic
            np.sign(linear, out=t)
            np.multiply(t, h["l1"], out=t)
            np.subtract(t, linear, out=t)
            np.divide(t, u, out=var)
            np.abs(linear, out=t)
            np.less_equal(t, h["l1"], out=small)
            np.copyto(var, F32(0), where=small)
        return ftrl
    raise ValueError(f"unknown optimizer {name!r}")


# --- rows --------------------------------------------------------------------------------------------------------------
def make(row: str, p: dict) -> common.Contestant:
    """The NumPy contestant of `row` with the row family's parameters `p`."""
    family = common.kind(row)
    d = common.data(row, p)
    if family == "trivial":
        a_val, b_val = d["a"], d["b"]
        return common.Contestant(lambda: np.asarray(a_val, np.float32) + np.asarray(b_val, np.float32))
    if family == "tower_fit":
        return _tower_fit(d)
    if family == "opt":
        name = row[len("opt_"):]
        var = d["var"].copy()
        update, nxt = dense_update(name, var, common.OPT_HYPER[name]), common.cycle(d["g"])
        return common.Contestant(lambda: update(np.asarray(nxt(), np.float32)), probe=lambda: var)
    if family == "opt_sparse":
        return _sparse_adagrad(d)
    if family in ("chain1000", "chain1000_arith"):
        return _chain(family, d["x"], p["n"])
    raise ValueError(f"unknown row {row!r}")


def _tower_fit(d: dict) -> common.Contestant:
    """The seed's polynomial fit: f = [x², x, 1], loss_i = (f_i w - y_i)², Adam on the mean; gradient 2/n fᵀ r."""
    w = d["w0"].copy()
    adam = Adam([w.shape], **{k: v for k, v in common.ADAM.items()})
    nxt = common.cycle(list(zip(d["x"], d["y"])))

    def step():
        x, y = nxt()
        f = np.stack([np.square(x), x, np.ones_like(x)], 1)
        r = np.squeeze(f @ w, 1) - y
        loss = np.square(r)
        r *= F32(2.0 / r.size)
        adam.apply([(w, f.T @ r[:, None])])
        return loss
    return common.Contestant(step, probe=lambda: w)


def _sparse_adagrad(d: dict) -> common.Contestant:
    """Adagrad on 1,000 unique rows: acc[i] += g²; var[i] -= lr g / sqrt(acc[i])."""
    var = d["var"].copy()
    hyper = common.OPT_HYPER["adagrad"]
    acc = np.full(var.shape, F32(hyper["initial_accumulator_value"]), F32)
    lr = F32(hyper["lr"])
    nxt = common.cycle(list(zip(d["idx"], d["g"])))
    tmp = np.empty_like(d["g"][0])

    def step():
        idx, g = nxt()
        a = acc[idx]
        np.multiply(g, g, out=tmp)
        a += tmp
        acc[idx] = a
        np.sqrt(a, out=a)
        np.divide(g, a, out=a)
        a *= lr
        var[idx] -= a
    return common.Contestant(step, probe=lambda: var)


CHAIN_UNARY = (np.sin, np.cos, np.square)


def _chain(family: str, x: np.ndarray, n: int) -> common.Contestant:
    """The NumPy loop of the same n calls: sin/cos/square in turn, or the arithmetic cycle with float32 constants."""
    if family == "chain1000":
        fns = [CHAIN_UNARY[i % 3] for i in range(n)]

        def loop():
            a = x
            for f in fns:
                a = f(a)
            return a
        return common.Contestant(loop)
    ops = [(f, F32(c)) for f, c in (common.CHAIN_ARITH[i % 4] for i in range(n))]

    def arith_loop():
        a = x
        for f, c in ops:
            a = f(a, c)
        return a
    return common.Contestant(arith_loop)


def make_mlp(data: dict, threads: str, lr: float, beta1: float, beta2: float, eps: float) -> common.Contestant:
    """The 784-512-512-10 ReLU MLP's Adam step on the fed batch (softmax cross-entropy, mean over the batch), written
    by hand; threads "1" limits BLAS to one thread around every sample (threadpoolctl)."""
    layers = sorted(k for k in data if k.startswith("w"))
    params = [(data[w].copy(), data["b" + w[1:]].copy()) for w in layers]
    adam = Adam([a.shape for pair in params for a in pair], lr, beta1, beta2, eps)
    x, y = data["x"], data["y"]
    batch = F32(x.shape[0])

    def step():
        acts = [x]
        for i, (w, b) in enumerate(params):
            h = acts[-1] @ w
            h += b
            if i < len(params) - 1:
                np.maximum(h, 0, out=h)
            acts.append(h)
        z = acts.pop()
        z -= z.max(axis=1, keepdims=True)
        e = np.exp(z)
        s = e.sum(axis=1, keepdims=True)
        loss = -np.sum(y * (z - np.log(s))) / batch
        e /= s
        e -= y
        e /= batch  # d loss / d logits
        grads, dh = [], e
        for i in range(len(params) - 1, -1, -1):
            grads.append((acts[i].T @ dh, dh.sum(axis=0)))
            if i:
                dh = dh @ params[i][0].T
                dh *= acts[i] > 0
        pairs = [(p, g) for (w, b), (gw, gb) in zip(params, reversed(grads)) for p, g in ((w, gw), (b, gb))]
        adam.apply(pairs)
        return loss

    around = None
    if threads == "1":
        from threadpoolctl import threadpool_limits
        around = lambda: threadpool_limits(1, user_api="blas")  # noqa: E731
    return common.Contestant(step, probe=lambda: params[-1][0], around=around or contextlib.nullcontext)
