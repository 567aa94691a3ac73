"""Every row of benchmarks/speed.py as a TF1 graph, built through whichever TF1-style module is passed: adplace
(`import adplace`) in the benchmark's own process, `tensorflow.compat.v1` in tf_peer.py's. One source, so both run
the very same graph."""
from __future__ import annotations

import numpy as np

from . import common


def make(tf, row: str, p: dict, config) -> common.Contestant:
    """The contestant of `row` for the TF1-style module `tf`, its session made with `config` (a ConfigProto)."""
    family = common.kind(row)
    d = common.data(row, p)
    graph = tf.Graph()
    with graph.as_default():
        fetches, feeds, probe, init = _BUILD[family](tf, row, p, d)
    sess = tf.Session(graph=graph, config=config)
    for op in init:
        sess.run(op)
    nxt = common.cycle(feeds)
    if isinstance(fetches, list):  # [train_op, value]: the step returns the value

        def step():
            return sess.run(fetches, nxt())[1]
    else:
        def step():
            return sess.run(fetches, nxt())
    contestant = common.Contestant(step, probe=(lambda: sess.run(probe)) if probe is not None else None,
                                   close=sess.close)
    contestant.session, contestant.run_args = sess, (fetches, feeds[0])  # for a caller that inspects the plan
    return contestant


def _trivial(tf, row, p, d):
    a = tf.placeholder(tf.float32, [4], name="a")
    b = tf.placeholder(tf.float32, [4], name="b")
    return a + b, [{a: d["a"], b: d["b"]}], None, []


def make_parallel(tf, fn, num_gpus: int, **kwargs):
    """The seed's make_parallel: split every input in num_gpus, one tower a GPU sharing its variables, concat."""
    in_splits = {k: tf.split(v, num_gpus) for k, v in kwargs.items()}
    out_split = []
    for i in range(num_gpus):
        with tf.device(tf.DeviceSpec(device_type="GPU", device_index=i)):
            with tf.variable_scope(tf.get_variable_scope(), reuse=i > 0):
                out_split.append(fn(**{k: v[i] for k, v in in_splits.items()}))
    return tf.concat(out_split, axis=0)


def _tower_fit(tf, row, p, d):
    def model(x, y):  # the seed's model, as written there
        w = tf.get_variable("w", shape=[3, 1])
        f = tf.stack([tf.square(x), x, tf.ones_like(x)], 1)
        yhat = tf.squeeze(tf.matmul(f, w), 1)
        loss = tf.square(yhat - y)
        return loss

    x = tf.placeholder(tf.float32)
    y = tf.placeholder(tf.float32)
    loss = make_parallel(tf, model, p["towers"], x=x, y=y)
    a = common.ADAM
    train_op = tf.train.AdamOptimizer(a["lr"], a["beta1"], a["beta2"], a["epsilon"]).minimize(
        tf.reduce_mean(loss), colocate_gradients_with_ops=True)
    w = next(v for v in tf.global_variables() if v.op.name == "w")
    set_w = tf.assign(w, d["w0"])  # the same start in every contestant (get_variable's default is random)
    feeds = [{x: xv, y: yv} for xv, yv in zip(d["x"], d["y"])]
    return [train_op, loss], feeds, w, [tf.global_variables_initializer(), set_w]


def optimizer(tf, name: str):
    """TF1's optimizer `name` with the rows' hyperparameters (common.OPT_HYPER)."""
    h = common.OPT_HYPER[name]
    if name == "adam":
        return tf.train.AdamOptimizer(h["lr"], h["beta1"], h["beta2"], h["epsilon"])
    if name == "rmsprop":
        return tf.train.RMSPropOptimizer(h["lr"], decay=h["decay"], momentum=h["momentum"], epsilon=h["epsilon"])
    if name == "momentum":
        return tf.train.MomentumOptimizer(h["lr"], h["momentum"])
    if name == "adagrad":
        return tf.train.AdagradOptimizer(h["lr"], initial_accumulator_value=h["initial_accumulator_value"])
    if name == "adadelta":
        return tf.train.AdadeltaOptimizer(h["lr"], rho=h["rho"], epsilon=h["epsilon"])
    if name == "ftrl":
        if not hasattr(tf.train, "FtrlOptimizer"):
            raise NotImplementedError("tf.train.FtrlOptimizer is missing")
        return tf.train.FtrlOptimizer(h["lr"], learning_rate_power=h["learning_rate_power"],
                                      initial_accumulator_value=h["initial_accumulator_value"],
                                      l1_regularization_strength=h["l1"], l2_regularization_strength=h["l2"])
    raise ValueError(f"unknown optimizer {name!r}")


def _opt(tf, row, p, d):
    opt = optimizer(tf, row[len("opt_"):])
    var = tf.Variable(d["var"], name="var")
    g = tf.placeholder(tf.float32, [p["n"]], name="g")
    update = opt.apply_gradients([(g, var)])
    return update, [{g: gv} for gv in d["g"]], var, [tf.global_variables_initializer()]


def _opt_sparse(tf, row, p, d):
    opt = optimizer(tf, row[len("opt_"):-len("_sparse")])
    var = tf.Variable(d["var"], name="table")
    values = tf.placeholder(tf.float32, [p["nnz"], p["cols"]], name="values")
    indices = tf.placeholder(tf.int64, [p["nnz"]], name="indices")
    update = opt.apply_gradients([(tf.IndexedSlices(values, indices, tf.constant([p["rows"], p["cols"]],
                                                                                  tf.int64)), var)])
    feeds = [{values: gv, indices: iv} for iv, gv in zip(d["idx"], d["g"])]
    return update, feeds, var, [tf.global_variables_initializer()]


def _chain(tf, row, p, d):
    x = tf.placeholder(tf.float32, [p["size"]], name="x")
    t = x
    if common.kind(row) == "chain1000":
        unary = (tf.sin, tf.cos, tf.square)
        for i in range(p["n"]):
            t = unary[i % 3](t)
    else:
        binary = {np.multiply: tf.multiply, np.add: tf.add, np.subtract: tf.subtract}
        for i in range(p["n"]):
            f, c = common.CHAIN_ARITH[i % 4]
            t = binary[f](t, np.float32(c))
    return t, [{x: d["x"]}], None, []


_BUILD = {"trivial": _trivial, "tower_fit": _tower_fit, "opt": _opt, "opt_sparse": _opt_sparse,
          "chain1000": _chain, "chain1000_arith": _chain}
