"""Tests for Session.run's fast path: fed arrays used without a copy where the plan lets none escape (feeds.py
`borrowable_feeds`), cache keys straight from the fetches (fetches.py `structure_key`), flat fetch builders, and
straight-line feed conversion (feeds.py `feeds_converter`).

Every fast path is checked against the slow one it replaces: the same values and dtypes, the same errors, and no
fetched value or stored state that shares memory with a caller's array. The slow path is a session whose plans may
borrow no feed (`borrowable_feeds` patched to say no).
"""
import collections
import dataclasses
import threading

import numpy as np
import pytest

import adplace as tf
from adplace.runtime import session as session_module
from adplace.runtime.feeds import borrowable_feeds
from adplace.runtime.fetches import REGISTERED_EXPANSIONS, register_session_run_conversion_functions, structure_key


@pytest.fixture
def slow_session(monkeypatch):
    """A factory of sessions that copy every feed, as before the fast path."""
    def never_borrow(plan):
        return [False] * len(plan.feed_slots)

    def make(**kwargs):
        monkeypatch.setattr(session_module, "borrowable_feeds", never_borrow)
        return tf.Session(**kwargs)
    return make


def _converted(sess, fetches, feed_dict):
    """The values the plan would get for `feed_dict`, through the compiled run's converters."""
    compiled = sess._cached(fetches, feed_dict)
    return compiled.convert(feed_dict.values())


# --- which feeds are borrowed ----------------------------------------------------------------------------------------

def _graphs():
    """name -> (build() -> (fetches, placeholder), whether the plan may use the fed array itself)."""
    def add():
        x = tf.placeholder(tf.float32, [4], name="x")
        return x + tf.constant(1.0), x

    def fetched_itself():
        x = tf.placeholder(tf.float32, [4], name="x")
        return [x, x * 2.0], x

    def identity_fetched():  # a view op's fetch is copied: the feed itself need not be
        x = tf.placeholder(tf.float32, [4], name="x")
        return tf.identity(tf.reshape(x, [2, 2])), x

    def slice_fetched():  # Slice returns a view of its input: a view op, so its fetch is a copy
        x = tf.placeholder(tf.float32, [4], name="x")
        return tf.slice(x, [1], [2]), x

    def cond_fetched():  # a cond's Merge forwards its live input: a view op, so its fetch is a copy
        x = tf.placeholder(tf.float32, [4], name="x")
        return tf.cond(tf.constant(True), lambda: tf.identity(x), lambda: x * 2.0), x

    def assigned_through_a_view():
        x = tf.placeholder(tf.float32, [4], name="x")
        v = tf.Variable(tf.zeros([2, 2]), name="v")
        return tf.assign(v, tf.reshape(x, [2, 2])), x

    def assigned_after_a_computation():  # sin's output is a new array: the Assign keeps that, not the feed
        x = tf.placeholder(tf.float32, [4], name="x")
        v = tf.Variable(tf.zeros([4]), name="v")
        return tf.assign(v, tf.sin(x)), x

    def enqueued():
        x = tf.placeholder(tf.float32, [4], name="x")
        q = tf.FIFOQueue(4, [tf.float32], shapes=[[4]])
        return q.enqueue([x]), x

    def in_a_while_loop():
        x = tf.placeholder(tf.float32, [4], name="x")
        _, out = tf.while_loop(lambda i, y: i < 2, lambda i, y: (i + 1, y * 1.0), [tf.constant(0), x])
        return out, x

    def applied_as_a_gradient():  # training ops only read their gradients
        x = tf.placeholder(tf.float32, [4], name="x")
        v = tf.Variable(tf.zeros([4]), name="v")
        return tf.train.AdamOptimizer(0.1).apply_gradients([(x, v)]), x

    return {"add": (add, True), "fetched_itself": (fetched_itself, False),
            "applied_as_a_gradient": (applied_as_a_gradient, True),
            "identity_fetched": (identity_fetched, True), "slice_fetched": (slice_fetched, True),
            "cond_fetched": (cond_fetched, True), "assigned_through_a_view": (assigned_through_a_view, False),
            "assigned_after_a_computation": (assigned_after_a_computation, True), "enqueued": (enqueued, False),
            "in_a_while_loop": (in_a_while_loop, False)}


@pytest.mark.parametrize("name", list(_graphs()))
def test_a_feed_is_borrowed_only_where_the_plan_lets_no_view_of_it_escape(name):
    build, expected = _graphs()[name]
    fetches, x = build()
    sess = tf.Session()
    sess.run(tf.global_variables_initializer())
    feed = np.arange(4, dtype=np.float32)
    assert borrowable_feeds(sess.plan_for(fetches, {x: feed})) == [expected]
    (value,) = _converted(sess, fetches, {x: feed})
    assert (value is feed) == expected
    if not expected:
        assert not np.shares_memory(value, feed)


def test_only_ndarrays_of_the_exact_dtype_and_a_fitting_shape_are_borrowed():
    x = tf.placeholder(tf.float32, [None, 2], name="x")
    y = x * 2.0
    sess = tf.Session()
    exact = np.ones((3, 2), np.float32)
    assert _converted(sess, y, {x: exact})[0] is exact
    for other in (np.ones((3, 2)), np.ones((3, 2), np.float32).view(np.matrix), [[1.0, 2.0]],
                  np.ones((3, 2), np.dtype(">f4"))):
        (value,) = _converted(sess, y, {x: other})
        assert value is not other and value.dtype == np.float32 and type(value) is np.ndarray
        assert not np.shares_memory(value, np.asarray(other))


# --- the same results as the slow path -------------------------------------------------------------------------------

FEEDS = {
    "float32 array": np.array([1.5, -2.0, 3.25, 4.0], np.float32),
    "float64 array": np.array([1.5, -2.0, 3.25, 4.0]),
    "int array": np.array([1, 2, 3, 4]),
    "list": [1.0, 2.0, 3.0, 4.0],
    "strided view": np.arange(8, dtype=np.float32)[::2],
    "reversed view": np.arange(4, dtype=np.float32)[::-1],
    "read-only array": np.broadcast_to(np.float32(2.0), (4,)),
}


def _model():
    a = tf.placeholder(tf.float32, [4], name="a")
    b = tf.placeholder(tf.float32, [None], name="b")
    s = tf.placeholder(tf.float32, [], name="s")
    u = tf.placeholder(tf.float32, None, name="u")
    c = a + b
    return (a, b, s, u), [c, c * s + tf.reduce_sum(u), tf.identity(a), tf.reshape(b, [2, 2]), tf.cast(c, tf.int32)]


@pytest.mark.parametrize("kind", list(FEEDS))
def test_fast_and_slow_paths_give_the_same_values_and_dtypes(kind, slow_session):
    (a, b, s, u), fetches = _model()
    feed = {a: FEEDS[kind], b: FEEDS[kind], s: 0.5, u: np.float32(3.0)}
    fast = tf.Session().run(fetches, feed)
    for scalar in (np.float32(0.5), np.array(0.5, np.float32), 1):
        feed[s] = scalar
        tf.Session().run(fetches, feed)
    feed[s] = 0.5
    slow = slow_session().run(fetches, feed)
    for got, want in zip(fast, slow):
        assert type(got) is type(want) and got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(fast[0], np.asarray(FEEDS[kind], np.float32) * 2)


@pytest.mark.parametrize("value, error, pattern", [
    (np.ones(3, np.float32), ValueError, r"Cannot feed value of shape \(3,\) for Tensor 'x:0', which has shape '\(4,\)'"),
    (np.ones((2, 2), np.float32), ValueError, r"Cannot feed value of shape \(2, 2\) for Tensor 'x:0'"),
    (np.ones(4, np.complex64), TypeError, "imaginary part"),
    (np.array(["a", "b", "c", "d"]), ValueError, "could not convert string to float"),
    (None, TypeError, "Cannot feed None for Tensor 'x:0'"),
])
def test_wrong_feeds_raise_the_same_errors_on_both_paths(value, error, pattern, slow_session):
    x = tf.placeholder(tf.float32, [4], name="x")
    y = x + 1.0
    fast = tf.Session()
    fast.run(y, {x: np.zeros(4, np.float32)})  # the run signature is cached and borrows
    with pytest.raises(error, match=pattern) as fast_error:
        fast.run(y, {x: value})
    with pytest.raises(error) as slow_error:
        slow_session().run(y, {x: value})
    assert str(fast_error.value) == str(slow_error.value)


@pytest.mark.parametrize("value", [np.ones((3, 3), np.float32), np.ones(6, np.float32), np.ones((1, 2, 2), np.float32)])
def test_a_partly_known_shape_rejects_what_does_not_fit_with_the_same_message(value, slow_session):
    x = tf.placeholder(tf.float32, [None, 2], name="x")
    y = x * 2.0
    fast = tf.Session()
    assert fast.run(y, {x: np.ones((5, 2), np.float32)}).shape == (5, 2)
    with pytest.raises(ValueError) as fast_error:
        fast.run(y, {x: value})
    with pytest.raises(ValueError) as slow_error:
        slow_session().run(y, {x: value})
    assert str(fast_error.value) == str(slow_error.value)
    assert f"Cannot feed value of shape {value.shape!r} for Tensor 'x:0'" in str(fast_error.value)


# --- no aliasing --------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["add", "fetched_itself", "identity_fetched", "slice_fetched", "cond_fetched",
                                  "in_a_while_loop"])
def test_fetched_values_never_share_memory_with_the_fed_array(name):
    fetches, x = _graphs()[name][0]()
    sess = tf.Session()
    feed = np.arange(4, dtype=np.float32)
    first = sess.run(fetches, {x: feed})
    values = first if isinstance(first, list) else [first]
    kept = [v.copy() for v in values]
    for value in values:
        assert not np.shares_memory(value, feed)
    feed[:] = -7.0  # the caller reuses its buffer: what it fetched before stays as it was
    for value, before in zip(values, kept):
        np.testing.assert_array_equal(value, before)
    for value in values:  # and writing into a fetched value changes nothing the next run sees
        value[...] = 99.0
    again = sess.run(fetches, {x: np.arange(4, dtype=np.float32)})
    for value, before in zip(again if isinstance(again, list) else [again], kept):
        np.testing.assert_array_equal(value, before)


def test_variables_and_queues_never_keep_the_callers_array():
    x = tf.placeholder(tf.float32, [4], name="x")
    v = tf.Variable(tf.zeros([2, 2]), name="v")
    w = tf.Variable(tf.zeros([4]), name="w")
    q = tf.FIFOQueue(4, [tf.float32], shapes=[[4]])
    sess = tf.Session()
    sess.run(tf.global_variables_initializer())
    feed = np.arange(4, dtype=np.float32)
    sess.run([tf.assign(v, tf.reshape(x, [2, 2])), tf.assign(w, tf.sin(x))], {x: feed})
    sess.run(q.enqueue([x]), {x: feed})
    sess.run(q.enqueue([tf.identity(x)]), {x: feed})
    feed[:] = -1.0
    np.testing.assert_array_equal(sess.run(v), [[0.0, 1.0], [2.0, 3.0]])
    np.testing.assert_allclose(sess.run(w), np.sin(np.arange(4, dtype=np.float32)))
    np.testing.assert_array_equal(sess.run(q.dequeue()), [0.0, 1.0, 2.0, 3.0])
    np.testing.assert_array_equal(sess.run(q.dequeue()), [0.0, 1.0, 2.0, 3.0])


OPTIMIZERS = {"sgd": lambda: tf.train.GradientDescentOptimizer(0.1),
              "momentum": lambda: tf.train.MomentumOptimizer(0.1, 0.9, use_nesterov=True),
              "adam": lambda: tf.train.AdamOptimizer(0.1), "rmsprop": lambda: tf.train.RMSPropOptimizer(0.1),
              "centered": lambda: tf.train.RMSPropOptimizer(0.1, momentum=0.5, centered=True),
              "adagrad": lambda: tf.train.AdagradOptimizer(0.1), "adadelta": lambda: tf.train.AdadeltaOptimizer(1.0),
              "ftrl": lambda: tf.train.FtrlOptimizer(0.1, l1_regularization_strength=0.01)}


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_training_ops_borrow_fed_gradients_and_never_keep_them(name, sparse):
    n = 5000  # over the compiled loops' size: both the loops and the NumPy forms read the borrowed array
    v = tf.Variable(np.linspace(-1.0, 1.0, n, dtype=np.float32).reshape(1000, 5), name="v")
    g = tf.placeholder(tf.float32, [4, 5] if sparse else [1000, 5], name="g")
    grad = tf.IndexedSlices(g, tf.constant([3, 1, 999, 0]), tf.constant([1000, 5])) if sparse else g
    opt = OPTIMIZERS[name]()
    train = opt.apply_gradients([(grad, v)])
    variables = tf.global_variables()
    sess = tf.Session()
    sess.run(tf.global_variables_initializer())
    feed = np.random.default_rng(0).standard_normal(g.shape.as_list()).astype(np.float32)
    assert borrowable_feeds(sess.plan_for(train, {g: feed})) == [True]
    sess.run(train, {g: feed})
    after = sess.run(variables)
    feed[...] = np.nan  # the caller reuses its array: no variable or slot may see it
    for value, want in zip(sess.run(variables), after):
        np.testing.assert_array_equal(value, want)
    assert not np.isnan(after[0]).any() and not np.array_equal(after[0], sess.run(v.initial_value))


def test_a_fed_array_is_left_as_it_was():
    x = tf.placeholder(tf.float32, [3], name="x")
    y = tf.nn.relu(x) * 2.0 + tf.reverse(x, [0])
    feed = np.array([-1.0, 2.0, 3.0], np.float32)
    before = feed.copy()
    result = tf.Session().run(y, {x: feed})
    np.testing.assert_array_equal(feed, before)
    np.testing.assert_array_equal(result, np.maximum(before, 0) * 2 + before[::-1])


def test_a_fed_intermediate_tensor_is_borrowed_and_its_fetch_is_copied():
    a = tf.placeholder(tf.float32, [2], name="a")
    c = tf.square(a, name="c")
    d = c * 2.0
    sess = tf.Session()
    feed = np.array([3.0, 4.0], np.float32)
    assert borrowable_feeds(sess.plan_for(d, {c: feed})) == [True]
    np.testing.assert_array_equal(sess.run(d, {c: feed}), [6.0, 8.0])
    assert borrowable_feeds(sess.plan_for([c, d], {c: feed})) == [False]
    c_value, d_value = sess.run([c, d], {c: feed})
    assert not np.shares_memory(c_value, feed)
    np.testing.assert_array_equal(c_value, feed)


def test_a_feed_crossing_to_another_device_is_counted_and_not_aliased(gpus):
    with tf.device("/cpu:0"):
        x = tf.placeholder(tf.float32, [4], name="x")
    with tf.device("/gpu:0"):
        y = tf.identity(x)
        z = x * 3.0
    sess = tf.Session()
    feed = np.arange(4, dtype=np.float32)
    assert borrowable_feeds(sess.plan_for([y, z], {x: feed})) == [True]
    y_value, z_value = sess.run([y, z], {x: feed})
    assert not np.shares_memory(y_value, feed)
    transfers = sess.plan_for([y, z], {x: feed}).num_transfers
    assert transfers >= 1 and sess.transfers_executed == transfers
    sess.run([y, z], {x: feed})
    assert sess.transfers_executed == 2 * transfers
    np.testing.assert_array_equal(z_value, feed * 3.0)


# --- cache keys and fetch structures ------------------------------------------------------------------------------

def test_structure_keys_of_flat_lists_are_taken_without_recursion_and_stay_distinct():
    a, b = tf.constant(1.0, name="a"), tf.constant(2.0, name="b")
    pair = collections.namedtuple("pair", "x y")
    assert structure_key(a) is a and structure_key("a:0") == "a:0"
    assert structure_key([a, b]) == (a, b)  # the common list: no other fetch structure's key is a tuple of leaves
    assert structure_key((a, "b:0")) == (tuple, (a, "b:0"))
    keys = [structure_key(f) for f in ([a, b], (a, b), pair(a, b), [a, (a, b)], [a, pair(a, b)], [a, [b]], [[a, b]],
                                       {"x": a, "y": b}, [a, b.op])]
    assert len(set(keys)) == len(keys)


def test_fetch_structures_keep_their_types_and_values():
    a = tf.placeholder(tf.float32, [], name="a")
    b, c = a * 2.0, a * 3.0
    pair = collections.namedtuple("pair", "x y")

    class Fetches(list):
        pass
    sess = tf.Session()
    feed = {a: 1.0}
    assert sess.run([b, c], feed) == [2.0, 3.0]
    assert sess.run((b, c), feed) == (2.0, 3.0)
    assert sess.run([b, [c, b], (c,)], feed) == [2.0, [3.0, 2.0], (3.0,)]
    assert sess.run([[b, c], [c]], feed) == [[2.0, 3.0], [3.0]]
    assert sess.run(pair(b, c), feed) == pair(2.0, 3.0) and type(sess.run(pair(b, c), feed)) is pair
    assert type(sess.run(Fetches([b, c]), feed)) is list
    assert sess.run([b, b.op, c], feed) == [2.0, None, 3.0]
    assert sess.run([], feed) == [] and sess.run((), feed) == ()
    assert sess.run({"b": [b, c], "c": (c,)}, feed) == {"b": [2.0, 3.0], "c": (3.0,)}


def test_an_unhashable_fetch_runs_uncached_and_nested_feed_keys_are_flattened():
    @dataclasses.dataclass(eq=True)  # eq without frozen: instances are unhashable
    class Doubled:
        tensor: object

    register_session_run_conversion_functions(Doubled, lambda d: ([d.tensor * 2.0], lambda values: values[0]))
    try:
        a = tf.placeholder(tf.float32, [2], name="a")
        b = tf.placeholder(tf.float32, [2], name="b")
        sess = tf.Session()
        feed = np.array([1.0, 2.0], np.float32)
        for _ in range(3):
            np.testing.assert_array_equal(sess.run(Doubled(a + b), {(a, b): (feed, feed)}), [4.0, 8.0])
        assert len(sess._runs) == 0
        result = sess.run([a + b, b], {(a, (b,)): (feed, (feed,))})
        np.testing.assert_array_equal(result[0], [2.0, 4.0])
        assert not np.shares_memory(result[1], feed)
    finally:
        REGISTERED_EXPANSIONS[:] = [e for e in REGISTERED_EXPANSIONS if e[0] is not Doubled]


# --- make_callable, threads, tier-up ----------------------------------------------------------------------------------

def test_make_callable_borrows_converts_and_rejects_as_run_does():
    a = tf.placeholder(tf.float32, [4], name="a")
    b = tf.placeholder(tf.float32, [4], name="b")
    sess = tf.Session()
    add = sess.make_callable([a + b, a], [a, b])
    av, bv = np.ones(4, np.float32), np.arange(4.0)
    total, a_value = add(av, bv)
    np.testing.assert_array_equal(total, 1.0 + np.arange(4.0))
    assert total.dtype == np.float32 and not np.shares_memory(a_value, av)
    np.testing.assert_array_equal(add([1.0, 1.0, 1.0, 1.0], bv)[0], total)
    with pytest.raises(ValueError, match=r"Cannot feed value of shape \(3,\) for Tensor 'a:0'"):
        add(np.ones(3, np.float32), bv)


def test_threads_running_one_signature_get_exact_results():
    a = tf.placeholder(tf.float32, [64], name="a")
    b = tf.placeholder(tf.float32, [64], name="b")
    c = a * b + a
    sess = tf.Session()
    failures = []
    start = threading.Barrier(8)

    def work(seed):
        rng = np.random.default_rng(seed)
        av, bv = np.empty(64, np.float32), np.empty(64, np.float32)
        start.wait()
        for _ in range(200):
            av[:] = rng.standard_normal(64)
            bv[:] = rng.standard_normal(64)
            want = av * bv + av
            got = sess.run(c, {a: av, b: bv})
            av[:] = np.nan  # the caller's next fill must not reach the value it got
            if not np.array_equal(got, want):
                failures.append(seed)

    threads = [threading.Thread(target=work, args=(seed,)) for seed in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert failures == [] and not any(thread.is_alive() for thread in threads)


def test_large_plans_still_tier_up_and_runs_are_counted():
    x = tf.placeholder(tf.float32, [4], name="x")
    y = x
    for _ in range(80):
        y = tf.sin(y)
    sess = tf.Session()
    feed = {x: np.zeros(4, np.float32)}
    plan = sess.plan_for(y, feed)
    assert not plan.is_compiled
    for _ in range(2):
        sess.run(y, feed)
    assert plan.is_compiled and plan.runs == 2
    np.testing.assert_array_equal(sess.run(y, feed), np.zeros(4, np.float32))
    assert plan.runs == 3


def test_nested_structures_with_ops_and_many_short_lists_build_right():
    a = tf.placeholder(tf.float32, [], name="a")
    b, c = a * 2.0, a * 3.0
    group = tf.no_op(name="group")
    sess = tf.Session()
    fetches = [[b, c], [group], [[b], [group, c]], ([c], (group,)), [b] * 3]
    assert sess.run(fetches, {a: 1.0}) == [[2.0, 3.0], [None], [[2.0], [None, 3.0]], ([3.0], (None,)),
                                           [2.0, 2.0, 2.0]]


def test_feeds_of_every_kind_in_one_signature_match_the_slow_path(slow_session):
    text = tf.placeholder(tf.string, [2], name="text")
    count = tf.placeholder(tf.int32, [2], name="count")
    flag = tf.placeholder(tf.bool, [2], name="flag")
    wide = tf.placeholder(tf.float64, [None], name="wide")
    z = tf.placeholder(tf.complex64, [2], name="z")
    fetches = [tf.identity(text), count * 2, tf.logical_not(flag), wide + 1.0, z * 2]
    feeds = [{text: ["a", b"b"], count: np.array([1, 2], np.int32), flag: np.array([True, False]),
              wide: np.array([0.5]), z: np.array([1 + 1j, 2], np.complex64)},
             {text: np.array([b"c", b"d"], object), count: [3, 4], flag: [False, False], wide: [1, 2, 3],
              z: np.array([1, 2])}]
    fast, slow = tf.Session(), slow_session()
    for feed in feeds:
        for got, want in zip(fast.run(fetches, feed), slow.run(fetches, feed)):
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)
    assert borrowable_feeds(fast.plan_for(fetches, feeds[0])) == [True] * 5
