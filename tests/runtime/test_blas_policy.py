"""The BLAS thread policy (adplace.kernels.blas_threads, StepRunner): the count a step's kernels see, restored after
the step; and the kernels it touched (MatMul, BatchMatMul, softmax cross-entropy, BiasAdd, ReluGrad) computing the
values of plain NumPy formulas without ever writing into their inputs. No timings."""
import signal
import threading

import numpy as np
import pytest

import adplace as tf
from adplace.framework import registry
from adplace.kernels import blas_threads
from adplace.runtime.kernel_context import KernelContext
from sigint_points import SigintPoints

threadpoolctl = pytest.importorskip("threadpoolctl", reason="the BLAS thread policy needs threadpoolctl")
SEQUENTIAL = dict(inter_op_parallelism_threads=1)


def blas_counts() -> list:
    return [info["num_threads"] for info in threadpoolctl.threadpool_info() if info["user_api"] == "blas"]


@pytest.fixture
def two_blas_threads():
    """BLAS at two threads for the test (so that a policy choosing one is visible), restored afterwards."""
    if not blas_counts():
        pytest.skip("no BLAS library loaded that threadpoolctl can see")
    policy = blas_threads.POLICY
    before = (policy._active, dict(policy._bounded))
    with threadpoolctl.threadpool_limits(limits=2, user_api="blas"):
        yield
    assert (policy._active, policy._bounded) == before


def _seen_by_py_func(seen: list, after):
    """A py_func reading the BLAS thread counts, run after `after`; returns `after` unchanged."""
    def read(x):
        seen.append(blas_counts())
        return x
    return tf.py_func(read, [after], tf.float32)


def _matrix(rows: int, cols: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((rows, cols)).astype(np.float32)


def test_intra_op_one_holds_every_blas_call_of_a_step_to_one_thread_and_is_restored(two_blas_threads):
    seen: list = []
    a = tf.constant(_matrix(256, 256))
    y = _seen_by_py_func(seen, tf.matmul(a, a))
    sess = tf.Session(config=tf.ConfigProto(intra_op_parallelism_threads=1, **SEQUENTIAL))
    for _ in range(4):  # the first runs and the compiled (tiered-up) plan
        sess.run(y)
    assert seen and all(counts and set(counts) == {1} for counts in seen)
    assert set(blas_counts()) == {2}


def test_the_default_sizes_each_product_and_restores_the_count(two_blas_threads):
    seen: list = []
    small = tf.constant(_matrix(64, 64))              # 64^3 = 2**18 multiply-adds: one thread
    big = tf.constant(_matrix(256, 256))              # 256^3 = 2**24: every thread the bound allows
    first = _seen_by_py_func(seen, tf.matmul(small, small))
    with tf.control_dependencies([first]):
        second = _seen_by_py_func(seen, tf.matmul(big, big))
    sess = tf.Session(config=tf.ConfigProto(**SEQUENTIAL))
    sess.run(second)
    policy = blas_threads.POLICY
    assert policy.threads_for(64 ** 3) == 1 and policy.threads_for(256 ** 3) == 2
    # the library's count is back after each product: code between kernels (a py_func) sees its own setting
    assert [set(counts) for counts in seen] == [{2}, {2}]
    assert set(blas_counts()) == {2}
    for _ in range(4):
        seen.clear()
        sess.run(second)
        assert [set(counts) for counts in seen] == [{2}, {2}]
        assert set(blas_counts()) == {2}


def test_a_kernel_keeps_the_count_that_measured_faster_and_re_times_the_other(two_blas_threads, monkeypatch):
    blas_threads.POLICY.attach(threadpoolctl.ThreadpoolController())
    clock = [0]
    monkeypatch.setattr(blas_threads, "time", type("FakeTime", (), {"perf_counter_ns": lambda: clock[0]}))
    monkeypatch.setattr(blas_threads.POLICY, "probe_after", 0)
    monkeypatch.setattr(blas_threads.POLICY, "blas_ns", 0)
    slow_count = [2]
    used = []

    def product():  # a stand-in whose (fake) cost depends on the thread count it runs on
        used.append(blas_threads.POLICY.current)
        clock[0] += 5_000_000 if blas_threads.POLICY.current == slow_count[0] else 1_000
    kernel = blas_threads.BlasKernel()
    mnk = 1 << 24  # the size rule: two threads (the bound)
    for _ in range(12):
        kernel(product, mnk)
    assert used[:2] == [2, 1]                 # both timed first
    assert used[2:].count(1) > used[2:].count(2) >= 1  # one kept, two re-timed now and then
    assert used[2:].count(2) == 1             # ... in at most 1/20 of the BLAS time: 5 ms on two threads, 100 ms
    slow_count[0] = 1                         # the machine changes: now one thread is the slow one
    used.clear()
    for _ in range(60):
        kernel(product, mnk)
    assert used[-10:].count(2) >= 8
    assert set(blas_counts()) == {2}


def test_one_slow_call_does_not_move_a_kernel_to_one_thread_but_a_run_of_them_does(two_blas_threads, monkeypatch):
    """Each count's estimate is the median of its recent calls: a call another process slowed (20x here) leaves
    the kernel on the rule's count; when most recent calls are slow, it moves."""
    blas_threads.POLICY.attach(threadpoolctl.ThreadpoolController())
    clock = [0]
    monkeypatch.setattr(blas_threads, "time", type("FakeTime", (), {"perf_counter_ns": lambda: clock[0]}))
    monkeypatch.setattr(blas_threads.POLICY, "probe_after", 0)
    monkeypatch.setattr(blas_threads.POLICY, "blas_ns", 0)
    slow_left = [0]  # how many of the next calls on two threads take 20x their time
    used = []

    def product():  # two threads: 100 us; one thread: 180 us
        two = blas_threads.POLICY.current == 2
        used.append(blas_threads.POLICY.current)
        slow = two and slow_left[0] > 0
        slow_left[0] -= slow
        clock[0] += (100_000 if two else 180_000) * (20 if slow else 1)
    kernel = blas_threads.BlasKernel()
    mnk = 1 << 24
    for _ in range(8):
        kernel(product, mnk)
    assert used[:2] == [2, 1] and used[2:].count(2) >= 5 and kernel.best == 2
    slow_left[0] = 1
    for _ in range(10):
        kernel(product, mnk)
    assert slow_left[0] == 0 and used[8:].count(1) <= 1 and kernel.best == 2  # at most a re-timing on one thread
    slow_left[0] = 3  # three in a row: 3 of the last 5
    while slow_left[0]:
        kernel(product, mnk)
    assert kernel.best == 1


def test_a_kernel_leaves_the_rules_count_below_leave_and_takes_it_back_only_at_gain(two_blas_threads, monkeypatch):
    """Hysteresis: two threads 1.15x faster than one are kept (over LEAVE, 1.05x); once a run of slow calls moved
    the kernel to one thread, the same 1.15x does not bring it back (under GAIN, 1.25x), and 1.5x does."""
    blas_threads.POLICY.attach(threadpoolctl.ThreadpoolController())
    clock = [0]
    monkeypatch.setattr(blas_threads, "time", type("FakeTime", (), {"perf_counter_ns": lambda: clock[0]}))
    monkeypatch.setattr(blas_threads.POLICY, "probe_after", 0)
    monkeypatch.setattr(blas_threads.POLICY, "blas_ns", 0)
    cost = {1: 115_000, 2: 100_000}
    used = []

    def product():
        used.append(blas_threads.POLICY.current)
        clock[0] += cost[blas_threads.POLICY.current]
    kernel = blas_threads.BlasKernel()
    mnk = 1 << 24
    for _ in range(40):
        kernel(product, mnk)
    assert kernel.best == 2 and used[2:].count(2) >= 33  # kept: 1.15x faster; one thread only re-timed
    cost[2] = 300_000
    while kernel.best == 2:
        kernel(product, mnk)
    cost[2] = 100_000  # 1.15x faster again: not enough to go back
    used.clear()
    for _ in range(200):
        kernel(product, mnk)
    assert kernel.best == 1 and used.count(2) >= 2 and used[-20:].count(1) >= 19  # re-timed, not taken back
    cost[2] = 76_000  # 1.5x faster
    for _ in range(600):
        kernel(product, mnk)
    assert kernel.best == 2


def test_the_rule_by_size():
    policy = blas_threads.BlasThreads()
    policy.bound = 8
    assert policy.threads_for(blas_threads.SMALL_MNK - 1) == 1
    assert policy.threads_for(blas_threads.SMALL_MNK) == 2
    assert policy.threads_for(3 * blas_threads.MNK_PER_THREAD) == 3
    assert policy.threads_for(1 << 40) == 8


def test_steps_in_flight_share_the_smallest_bound_and_the_last_one_restores(two_blas_threads):
    policy = blas_threads.POLICY
    blas_threads.POLICY.attach(threadpoolctl.ThreadpoolController())
    policy.begin_step(0)
    assert policy.bound == 2
    policy.begin_step(1)
    assert policy.bound == 1 and set(blas_counts()) == {1}
    policy.end_step(0)
    assert policy.bound == 1
    policy.end_step(1)
    assert set(blas_counts()) == {2}


def test_the_count_is_not_changed_while_a_blas_call_is_in_flight(two_blas_threads):
    policy = blas_threads.POLICY
    policy.attach(threadpoolctl.ThreadpoolController())
    policy.begin_step(0)
    entered, release, done = threading.Event(), threading.Event(), []
    try:
        policy.enter(2)
        assert policy.current == 2

        def small_call():
            entered.set()
            policy.enter(1)  # wants fewer threads: waits for the call in flight
            done.append(set(blas_counts()))
            policy.exit()
        worker = threading.Thread(target=small_call)
        worker.start()
        entered.wait(5)
        assert not release.wait(0.05) and done == [] and set(blas_counts()) == {2}
        policy.exit()
        worker.join(10)
        assert done == [{1}]
        policy.enter(4)  # wants more while nothing is in flight: set
        assert policy.current == 4
        policy.exit()
    finally:
        policy.end_step(0)
    assert set(blas_counts()) == {2}


@pytest.mark.parametrize("intra", [1, 0], ids=["bounded", "unbounded"])
def test_a_ctrl_c_anywhere_in_a_step_leaves_no_count_behind(two_blas_threads, intra):
    a = tf.constant(_matrix(128, 128))
    product = tf.matmul(a, a + 1.0)
    sess = tf.Session(config=tf.ConfigProto(intra_op_parallelism_threads=intra, **SEQUENTIAL))
    want = sess.run(product)
    policy, hook = blas_threads.POLICY, SigintPoints()
    previous = signal.signal(signal.SIGINT, hook.handler)
    try:
        at, outcomes = 0, set()
        while True:
            outcomes.add(hook.run(sess, product, at, budget=1, counting=True))
            # a leaked call in flight would make every later call wanting fewer threads wait WAIT_S for it
            assert (policy._bounded, policy._active) == ({}, 0), f"Ctrl-C at point {at}"
            if not hook.fired:
                break
            at += 1
        assert at > 20 and outcomes == {"ok", "interrupted"}
    finally:
        signal.signal(signal.SIGINT, previous)
    np.testing.assert_allclose(sess.run(product), want, rtol=1e-5, atol=1e-3)  # 1 or 2 threads: other sum orders
    assert policy.bound == policy.original and set(blas_counts()) == {2}


def test_a_parallel_run_gives_each_product_the_pool_share(two_blas_threads):
    seen: list = []
    a = tf.constant(_matrix(256, 256))
    ys = [_seen_by_py_func(seen, tf.matmul(a, a + i)) for i in range(2)]
    sess = tf.Session(config=tf.ConfigProto(inter_op_parallelism_threads=2))
    sess.run(ys)
    share = min(2, sess._runner.parallel_blas_threads)
    assert len(seen) == 2 and all(set(counts) == {share} for counts in seen)
    assert set(blas_counts()) == {2}


# --- kernels: NumPy's values, inputs untouched ---------------------------------------------------------------------
def _kernel(tensor):
    op = tensor.op if hasattr(tensor, "op") else tensor
    return registry.kernel_factory(op.type, "CPU")(op, KernelContext(None))


def _call_unmodified(fn, *args):
    """fn(*args), asserting that no argument was written into."""
    before = [np.array(a, copy=True) for a in args]
    for a in args:
        if isinstance(a, np.ndarray):
            a.flags.writeable = False  # a write raises at once
    try:
        out = fn(*args)
    finally:
        for a in args:
            if isinstance(a, np.ndarray):
                a.flags.writeable = True
    for a, b in zip(args, before):
        np.testing.assert_array_equal(a, b)
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
@pytest.mark.parametrize("m,k,n", [(3, 5, 4), (128, 64, 512), (300, 200, 260)])
def test_matmul_with_transposes_equals_numpy(dtype, ta, tb, m, k, n):
    a = np.random.default_rng(1).standard_normal((k, m) if ta else (m, k)).astype(dtype)
    b = np.random.default_rng(2).standard_normal((n, k) if tb else (k, n)).astype(dtype)
    g = tf.Graph()
    with g.as_default():
        y = tf.matmul(tf.placeholder(dtype, a.shape), tf.placeholder(dtype, b.shape), transpose_a=ta, transpose_b=tb)
    kernel = _kernel(y)
    expected = (a.T if ta else a) @ (b.T if tb else b)
    for _ in range(3):  # the reused output buffer too
        got = _call_unmodified(kernel, a, b)
        np.testing.assert_allclose(got, expected, rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-5)


@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
@pytest.mark.parametrize("adj_x,adj_y", [(False, False), (True, False), (False, True), (True, True)])
def test_batch_matmul_adjoints_equal_numpy(dtype, adj_x, adj_y):
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((4, 70, 60)) + (1j * rng.standard_normal((4, 70, 60)) if dtype == np.complex64 else 0))
    y = (rng.standard_normal((4, 70, 60)) + (1j * rng.standard_normal((4, 70, 60)) if dtype == np.complex64 else 0))
    x, y = x.astype(dtype), y.astype(dtype)
    xs = x if adj_x else np.conj(np.swapaxes(x, -1, -2)).copy()  # shapes that multiply either way
    ys = np.conj(np.swapaxes(y, -1, -2)).copy() if adj_y else y
    g = tf.Graph()
    with g.as_default():
        out = tf.matmul(tf.placeholder(dtype, xs.shape), tf.placeholder(dtype, ys.shape), adjoint_a=adj_x,
                        adjoint_b=adj_y)
    got = _call_unmodified(_kernel(out), xs, ys)
    adj = (lambda t: np.conj(np.swapaxes(t, -1, -2)))
    expected = np.matmul(adj(xs) if adj_x else xs, adj(ys) if adj_y else ys)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("labels_shape", [(16, 10), (1, 10)])
def test_softmax_cross_entropy_equals_the_numpy_formula(dtype, labels_shape):
    rng = np.random.default_rng(4)
    logits = (rng.standard_normal((16, 10)) * 5).astype(dtype)
    logits[3, 2] = 80  # a confident row
    labels = rng.random(labels_shape).astype(dtype)
    g = tf.Graph()
    with g.as_default():
        tf.nn.softmax_cross_entropy_with_logits_v2(labels=tf.placeholder(dtype, labels_shape),
                                                          logits=tf.placeholder(dtype, logits.shape))
    xent_op = next(op for op in g.get_operations() if op.type == "SoftmaxCrossEntropyWithLogits")
    got_loss, got_backprop = _call_unmodified(_kernel(xent_op), logits, labels)
    lab = np.broadcast_to(labels, logits.shape)
    shifted = logits - logits.max(axis=-1, keepdims=True)
    log_sum = np.log(np.sum(np.exp(shifted), axis=-1, keepdims=True))
    probs = np.exp(shifted - log_sum)
    np.testing.assert_array_equal(got_loss, np.sum(lab * (log_sum - shifted), axis=-1))
    if dtype == np.float32:
        np.testing.assert_array_equal(got_backprop, probs - lab)
    else:
        np.testing.assert_allclose(got_backprop, probs - lab, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("log", [False, True])
def test_softmax_and_log_softmax_equal_the_numpy_formula(log):
    logits = (np.random.default_rng(5).standard_normal((8, 7)) * 4).astype(np.float32)
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, logits.shape)
        y = tf.nn.log_softmax(x) if log else tf.nn.softmax(x)
    got = _call_unmodified(_kernel(y), logits)
    shifted = logits - logits.max(axis=-1, keepdims=True)
    log_sum = np.log(np.sum(np.exp(shifted), axis=-1, keepdims=True))
    np.testing.assert_array_equal(got, shifted - log_sum if log else np.exp(shifted - log_sum))


@pytest.mark.parametrize("data_format", ["NHWC", "NCHW"])
def test_bias_add_equals_numpy(data_format):
    value = np.random.default_rng(6).standard_normal((2, 3, 4, 5)).astype(np.float32)
    bias = np.arange(3 if data_format == "NCHW" else 5, dtype=np.float32)
    g = tf.Graph()
    with g.as_default():
        y = tf.nn.bias_add(tf.placeholder(tf.float32, value.shape), tf.placeholder(tf.float32, bias.shape),
                           data_format=data_format)
    got = _call_unmodified(_kernel(y), value, bias)
    expected = value + (bias.reshape(-1, 1, 1) if data_format == "NCHW" else bias)
    np.testing.assert_array_equal(got, expected)
    with pytest.raises(tf.errors.InvalidArgumentError, match="Biases must be 1D"):
        _kernel(y)(value, bias[None])


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_relu_equals_numpy_maximum_for_each_shape_it_sees(dtype):
    g = tf.Graph()
    with g.as_default():
        y = tf.nn.relu(tf.placeholder(dtype, None))
    relu = _kernel(y)
    rng = np.random.default_rng(8)
    for shape in [(64, 100), (64, 100), (3,), (2048,), (64, 100)]:
        x = (rng.standard_normal(shape) * 10).astype(dtype)
        if x.dtype.kind == "f":
            x.reshape(-1)[::7], x.reshape(-1)[::11], x.reshape(-1)[::13] = -0.0, np.nan, -np.inf
        got = _call_unmodified(relu, x)
        expected = np.maximum(x, 0)
        assert got.dtype == expected.dtype and got.shape == expected.shape
        np.testing.assert_array_equal(got, expected)
        assert np.array_equal(np.signbit(got), np.signbit(expected))


def test_relu_grad_equals_numpy_with_special_values():
    features = np.array([[-1.0, 0.0, -0.0, 2.0, np.nan, np.inf, -np.inf, 3.0]], np.float32)
    dy = np.array([[5.0, -2.0, 7.0, -0.0, 1.0, np.nan, np.nan, -4.0]], np.float32)
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, features.shape)
        y = tf.nn.relu(x)
        grad, = tf.gradients(y, x, grad_ys=tf.placeholder(tf.float32, dy.shape))
    got = _call_unmodified(_kernel(grad), dy, features)
    expected = dy * (features > 0)
    np.testing.assert_array_equal(got, expected)
    assert np.array_equal(np.signbit(got), np.signbit(expected))


def test_the_mlp_step_still_trains_the_same_under_each_policy():
    """One Adam step of a small MLP gives the same loss and weights with the default policy and with one thread."""
    rng = np.random.default_rng(7)
    x_v, w_v = rng.random((64, 300), dtype=np.float32), (rng.standard_normal((300, 200)) * 0.05).astype(np.float32)
    labels_v = np.eye(10, dtype=np.float32)[rng.integers(0, 10, 64)]
    results = []
    for config in (tf.ConfigProto(), tf.ConfigProto(intra_op_parallelism_threads=1, **SEQUENTIAL)):
        g = tf.Graph()
        with g.as_default():
            x, labels = tf.placeholder(tf.float32, x_v.shape), tf.placeholder(tf.float32, labels_v.shape)
            w, v = tf.Variable(w_v), tf.Variable(np.full((200, 10), 0.01, np.float32))
            logits = tf.matmul(tf.nn.relu(tf.nn.bias_add(tf.matmul(x, w), tf.Variable(np.zeros(200, np.float32)))),
                               v)
            loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits))
            train = tf.train.AdamOptimizer(0.01).minimize(loss)
            init = tf.global_variables_initializer()
        with tf.Session(graph=g, config=config) as sess:
            sess.run(init)
            losses = [sess.run([train, loss], {x: x_v, labels: labels_v})[1] for _ in range(3)]
            results.append((losses, sess.run(w)))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-5)
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-4, atol=1e-5)  # Adam: m / sqrt(v) ~ 1
