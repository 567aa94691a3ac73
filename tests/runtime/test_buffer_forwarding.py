"""Buffer forwarding (runtime/buffer_forwarding.py, kernels/forwarding.py): a step computes into the array of an
input it reads last when nobody else holds it. Values must be bit for bit those of the plain kernels, memory must
really be reused, and no array anyone else can see (fetched, fed, a variable's, a constant, a view's base, a
py_func's own, another reader's) may ever be written."""
import functools
import tracemalloc

import numpy as np
import pytest

import adplace as tf
from adplace.kernels import forwarding
from adplace.runtime import buffer_forwarding
from adplace.runtime.options import RewriterConfig
from thread_support import run_threads

N32 = forwarding.MIN_BYTES // 4  # the smallest float32 array that forwards
pytestmark = pytest.mark.skipif(forwarding.FREE_REFS is None, reason="reference counts say nothing here")


def _config(on: bool = True, inter: int = 1):
    config = tf.ConfigProto(inter_op_parallelism_threads=inter)
    if not on:
        config.graph_options.rewrite_options.memory_optimization = RewriterConfig.NO_MEM_OPT
    return config


def _bits(value) -> bytes:
    return np.ascontiguousarray(value).tobytes()


def _run_both(build, feeds_of=lambda placeholders: {}, runs: int = 3, inter: int = 1):
    """The fetched values of `build()` with forwarding on and off, each over `runs` runs (plans compile at the
    third), and the types of the ops whose steps may forward."""
    out = []
    for on in (True, False):
        with tf.Graph().as_default():
            fetches, placeholders = build()
            sess = tf.Session(config=_config(on, inter))
            feeds = feeds_of(placeholders)
            values = [sess.run(fetches, feeds) for _ in range(runs)]
            plan = sess.plan_for(fetches, feeds)
            out.append((values, sorted(plan.ops[i].type for i in buffer_forwarding.forwarding_kernels(plan))))
    return out


def _values(rng, dtype, n, low=-3.0, high=3.0):
    return rng.uniform(low, high, n).astype(dtype)


# (op, input range) per unary op forwarding knows
UNARY = [(tf.negative, None), (tf.abs, None), (tf.square, None), (tf.sqrt, (0.0, 9.0)), (tf.reciprocal, (0.5, 3.0)),
         (tf.exp, None), (tf.log, (0.1, 9.0)), (tf.log1p, (-0.5, 9.0)), (tf.sin, None), (tf.cos, None), (tf.tan, None),
         (tf.tanh, None), (tf.floor, None), (tf.ceil, None), (tf.rint, None), (tf.atan, None),
         (tf.asin, (-1.0, 1.0)), (tf.acos, (-1.0, 1.0)), (tf.sinh, None), (tf.cosh, None), (tf.asinh, None),
         (tf.acosh, (1.0, 9.0)), (tf.atanh, (-0.9, 0.9)), (tf.expm1, None), (tf.sign, None), (tf.nn.relu, None)]
BINARY = [tf.add, tf.subtract, tf.multiply, tf.truediv, tf.maximum, tf.minimum, tf.pow, tf.atan2]
DTYPES = [(np.float16, tf.float16), (np.float32, tf.float32), (np.float64, tf.float64)]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d[1].name)
@pytest.mark.parametrize("op", UNARY, ids=lambda o: o[0].__name__)
def test_unary_ops_give_the_plain_kernels_bits(op, dtype):
    fn, domain = op
    np_type, tf_type = dtype
    n = forwarding.MIN_BYTES // np.dtype(np_type).itemsize + 3  # an odd tail for the SIMD loops
    low, high = domain or (-3.0, 3.0)
    value = _values(np.random.default_rng(1), np_type, n, low, high)
    span = np_type(0.5 if domain is None else 0.0)  # a step between the feed and the op, so its input dies there

    def build():
        x = tf.placeholder(tf_type, [n])
        return fn(x + span), x
    (on, chosen), (off, _) = _run_both(build, lambda x: {x: value})
    assert chosen == [fn(tf.constant(value[:1])).op.type]  # the op computes into the sum's array
    for a, b in zip(on, off):
        assert _bits(a) == _bits(b)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d[1].name)
@pytest.mark.parametrize("fn", BINARY, ids=lambda f: f.__name__)
@pytest.mark.parametrize("other", ["same", "scalar", "row"])
def test_binary_ops_give_the_plain_kernels_bits_into_either_operand(fn, dtype, other):
    np_type, tf_type = dtype
    rows = forwarding.MIN_BYTES // np.dtype(np_type).itemsize // 64 + 1
    rng = np.random.default_rng(2)
    a, b = _values(rng, np_type, (rows, 64), 0.2, 3.0), _values(rng, np_type, (rows, 64), 0.2, 3.0)
    small = {"same": None, "scalar": np_type(1.25), "row": _values(rng, np_type, 64, 0.2, 2.0)}[other]

    def build():
        x = tf.placeholder(tf_type, [rows, 64])
        y = tf.placeholder(tf_type, [rows, 64])
        first, second = tf.sqrt(x), tf.sqrt(x + 1.0)  # fresh arrays read once: the op may write into them
        held = tf.sqrt(y) if small is None else tf.constant(small)  # fetched (or a constant): never written
        other = tf.sqrt(y + 1.0) if small is None else tf.constant(small)
        results = [fn(first, other), fn(held, second)]
        op_type.append(results[0].op.type)
        return [*results, held], (x, y)
    op_type = []
    (on, chosen), (off, _) = _run_both(build, lambda p: {p[0]: a, p[1]: b})
    assert chosen.count(op_type[0]) == 2  # into the first operand of one product, into the second of the other
    for fetched_on, fetched_off in zip(on, off):
        for u, v in zip(fetched_on, fetched_off):
            assert _bits(u) == _bits(v)


@pytest.mark.parametrize("data_format", ["NHWC", "NCHW"])
def test_bias_add_relu_and_relu_grad_forward_and_keep_their_bits(data_format):
    rng = np.random.default_rng(3)
    shape = (8, 16, 32, 32)
    value = rng.standard_normal(shape).astype(np.float32)
    channels = shape[-1] if data_format == "NHWC" else shape[1]
    bias = rng.standard_normal(channels).astype(np.float32)

    def build():
        x = tf.placeholder(tf.float32, shape)
        h = tf.nn.relu(tf.nn.bias_add(x * 1.5, tf.constant(bias), data_format=data_format))
        grad = tf.gradients(tf.reduce_sum(h * h), x)[0]
        return [h, grad], x
    (on, chosen), (off, _) = _run_both(build, lambda x: {x: value})
    assert {"BiasAdd", "Relu", "ReluGrad"} <= set(chosen)  # into the product, the sum, the incoming gradient
    for fetched_on, fetched_off in zip(on, off):
        for u, v in zip(fetched_on, fetched_off):
            assert _bits(u) == _bits(v)


def _peak_bytes(sess, fetch, feeds) -> int:
    sess.run(fetch, feeds)
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        sess.run(fetch, feeds)
        return tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("static", [True, False], ids=["static shape", "None batch dimension"])
def test_a_chain_reuses_one_array_instead_of_allocating_one_per_op(static):
    n = 1 << 20  # 4 MB of float32
    x = tf.placeholder(tf.float32, [n] if static else [None])
    y = x * 0.5
    for _ in range(8):
        y = tf.tanh(tf.sin(y) + 0.25)
    value = np.linspace(-1, 1, n, dtype=np.float32)
    peaks = {}
    for on in (True, False):
        sess = tf.Session(config=_config(on))
        for _ in range(3):
            sess.run(y, {x: value})
        peaks[on] = _peak_bytes(sess, y, {x: value})
    nbytes = value.nbytes
    assert peaks[True] < 1.5 * nbytes   # one array from the first product to the fetch
    assert peaks[False] >= 2 * nbytes   # each op's result next to its input


def test_values_others_hold_are_never_written():
    n = N32
    rng = np.random.default_rng(4)
    fed = rng.standard_normal(n).astype(np.float32)
    fed_copy = fed.copy()
    const_value = rng.standard_normal(n).astype(np.float32)
    var = tf.Variable(rng.standard_normal(n).astype(np.float32))
    kept = {}

    def keep_and_return(a):
        kept["array"] = a * 2  # the py_func keeps the very array it returns
        return kept["array"]

    x = tf.placeholder(tf.float32, [n])
    constant = tf.constant(const_value)
    shared = tf.sin(x)  # two readers: the last one may not write into it while the first still reads
    from_py = tf.py_func(keep_and_return, [x], tf.float32)
    view_base = tf.sin(x) + 1.0
    viewed = tf.reshape(view_base, [n // 64, 64])  # a view of the sum: the sum is read later, through the view
    fetched = tf.cos(x) * 3.0
    outs = [tf.exp(x), tf.exp(constant), tf.exp(var.read_value()), tf.exp(shared) + tf.cos(shared),
            tf.exp(from_py), tf.exp(viewed), view_base * 2.0, fetched, tf.exp(fetched)]
    sess = tf.Session(config=_config())
    sess.run(var.initializer)
    var_value = sess.run(var)
    results = [sess.run(outs, {x: fed}) for _ in range(4)]
    np.testing.assert_array_equal(fed, fed_copy)
    np.testing.assert_array_equal(sess.run(constant), const_value)
    np.testing.assert_array_equal(sess.run(var), var_value)
    np.testing.assert_array_equal(kept["array"], fed * 2)
    expected = [np.exp(fed), np.exp(const_value), np.exp(var_value),
                np.exp(np.sin(fed)) + np.cos(np.sin(fed)), np.exp(fed * 2),
                np.exp((np.sin(fed) + 1.0).reshape(n // 64, 64)), (np.sin(fed) + 1.0) * 2.0,
                np.cos(fed) * 3.0, np.exp(np.cos(fed) * 3.0)]
    for run in results:
        for got, want in zip(run, expected):
            np.testing.assert_allclose(got, want.astype(np.float32), rtol=2e-6, atol=1e-6)


def test_which_steps_forward():
    x = tf.placeholder(tf.float32, [N32], name="x")
    small = tf.placeholder(tf.float32, [16], name="small")
    a = tf.exp(x, name="exp_of_feed")          # its input is fed: never
    b = tf.sin(a, name="sin")                  # a dies here: forwards
    c = tf.cos(b, name="cos") + tf.sin(b, name="last_reader")  # b has two readers: only the last may write it
    d = tf.exp(tf.sin(small) + 1.0, name="small_exp")  # too small to pay
    e = tf.cast(c, tf.float64, name="cast")    # another type: no form
    sess = tf.Session(config=_config())
    plan = sess.plan_for([c, d, e], {x: np.zeros(N32, np.float32), small: np.zeros(16, np.float32)})
    names = {plan.ops[i].name for i in buffer_forwarding.forwarding_kernels(plan)}
    assert {"sin", "last_reader", "add"} <= names
    assert not names & {"exp_of_feed", "cos", "small_exp", "cast"}
    off = tf.Session(config=_config(False)).plan_for([c], {x: np.zeros(N32, np.float32)})
    assert buffer_forwarding.forwarding_kernels(off) == {}


def test_the_pool_and_traced_runs_use_the_plain_kernels_and_agree():
    n = N32
    x = tf.placeholder(tf.float32, [n])
    branches = [tf.tanh(tf.sin(x * float(k)) + 1.0) for k in range(1, 5)]
    total = tf.add_n(branches)
    value = np.linspace(-2, 2, n, dtype=np.float32)
    want = tf.Session(config=_config(False)).run(total, {x: value})
    pooled = tf.Session(config=_config(True, inter=4))
    for _ in range(3):
        assert _bits(pooled.run(total, {x: value})) == _bits(want)
    assert pooled.plan_for(total, {x: value}).mode == "parallel"
    traced = tf.Session(config=_config())
    options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
    for _ in range(3):
        metadata = tf.RunMetadata()
        assert _bits(traced.run(total, {x: value}, options=options, run_metadata=metadata)) == _bits(want)
        assert metadata.step_stats.dev_stats


def test_threads_sharing_a_session_each_get_exact_results():
    n = N32
    x = tf.placeholder(tf.float32, [n])
    y = tf.exp(tf.sin(x * 0.5) + 0.25) - 1.0
    sess = tf.Session(config=_config())
    inputs = [np.full(n, k / 10, np.float32) for k in range(8)]
    wants = [tf.Session(config=_config(False)).run(y, {x: v}) for v in inputs]

    def worker(k):
        for _ in range(25):
            assert _bits(sess.run(y, {x: inputs[k]})) == _bits(wants[k]), k
    run_threads(*(functools.partial(worker, k) for k in range(8)))


def test_an_interpreted_plan_forwards_and_a_failing_step_is_still_named():
    n = N32
    x = tf.placeholder(tf.float32, [n])
    y = x * 1.0
    for k in range(40):  # over 64 steps: the first runs are interpreted
        y = tf.sin(y) + float(k % 3)
    shape = tf.placeholder(tf.int32, [2])
    bad = tf.reshape(tf.exp(y), shape, name="bad_reshape")
    value = np.linspace(-1, 1, n, dtype=np.float32)
    sess = tf.Session(config=_config())
    plan = sess.plan_for(y, {x: value})
    assert not plan.is_compiled and len(buffer_forwarding.forwarding_kernels(plan)) >= 40
    want = tf.Session(config=_config(False)).run(y, {x: value})
    assert _bits(sess.run(y, {x: value})) == _bits(want)  # interpreted
    with pytest.raises(tf.errors.InvalidArgumentError) as info:
        sess.run(bad, {x: value, shape: [3, -1]})  # N32 is not a multiple of 3
    assert "{{node bad_reshape}} = Reshape on" in str(info.value)  # the plan found its failed step


def test_steps_of_unknown_shape_forward_only_arrays_large_enough():
    x = tf.placeholder(tf.float32, [None])
    y = tf.exp(tf.sin(x) * 2.0)
    sess = tf.Session(config=_config())
    chosen = buffer_forwarding.forwarding_kernels(sess.plan_for(y, {x: np.zeros(4, np.float32)}))
    assert len(chosen) == 2 and not any(f.always for f in chosen.values())
    for n in (16, N32 - 1, N32, 3 * N32):
        value = np.linspace(-1, 1, n, dtype=np.float32)
        for _ in range(3):
            assert _bits(sess.run(y, {x: value})) == _bits(np.exp(np.sin(value) * np.float32(2.0)))
