"""Tests for adplace/runtime/partial_run.py: Session.partial_run_setup / partial_run, with TF's semantics and errors
(tensorflow/python/client/session_partial_run_test.py, DirectSession::PRun)."""
import numpy as np
import pytest

import adplace as tf
from adplace.errors import InvalidArgumentError

pytestmark = pytest.mark.usefixtures("virtual_gpus_only")


@pytest.fixture
def abc():
    a, b, c = (tf.placeholder(tf.float32, [], name=n) for n in "abc")
    return a, b, c


def test_feeds_over_several_calls(abc):
    a, b, c = abc
    r1 = tf.add(a, b, name="r1")
    r2 = tf.multiply(r1, c, name="r2")
    sess = tf.Session()
    for factor in (17, 18):  # a second handle on the same graph
        h = sess.partial_run_setup([r1, r2], [a, b, c])
        res = sess.partial_run(h, r1, feed_dict={a: 1, b: 2})
        assert res == 3
        assert sess.partial_run(h, r2, feed_dict={c: res * factor}) == 3 * 3 * factor


def test_interleaved_handles(abc):
    a, b, c = abc
    r1 = a + b
    r2 = r1 * c
    sess = tf.Session()
    h1 = sess.partial_run_setup([r1], [a, b, c])
    h2 = sess.partial_run_setup([r1, r2], [a, b, c])
    assert sess.partial_run(h1, r1, feed_dict={a: 1, b: 2}) == 3
    assert sess.partial_run(h2, r1, feed_dict={a: 57, b: 9}) == 66
    assert sess.partial_run(h2, r2, feed_dict={c: 7}) == 462


def test_many_steps_run_each_op_once():
    inputs, outputs = [], []
    x = tf.constant(2.0)
    for _ in range(50):
        inputs.append(tf.placeholder(tf.float32, []))
        x = x * inputs[-1]
        outputs.append(x)
    sess = tf.Session()
    h = sess.partial_run_setup(outputs, inputs)
    for i in range(50):
        res = sess.partial_run(h, outputs[i], feed_dict={inputs[i]: 1.0})
    assert res == 2.0
    assert sess.run(outputs, dict.fromkeys(inputs, 1.0))[-1] == 2.0


def test_random_values_are_computed_once_per_handle():
    p = tf.placeholder(tf.float32, [], name="p")
    q = tf.placeholder(tf.float32, [], name="q")
    r = tf.random_uniform([4], name="r")
    first, second = r + p, r * q
    sess = tf.Session()
    h = sess.partial_run_setup([first, second, r], [p, q])
    v1 = sess.partial_run(h, first, {p: 1.0})
    v2 = sess.partial_run(h, [second, r], {q: 2.0})
    np.testing.assert_allclose(v1 - 1.0, v2[1], atol=1e-6)  # (r + 1) - 1 rounds in float32
    np.testing.assert_allclose(v2[0], 2.0 * v2[1], rtol=1e-6)
    h2 = sess.partial_run_setup([r])
    assert not np.allclose(sess.partial_run(h2, r), v2[1])  # a new handle is a new step


def test_variable_writes_happen_once_and_reads_are_consistent():
    v = tf.Variable(0.0, name="v")
    p = tf.placeholder(tf.float32, [], name="p")
    q = tf.placeholder(tf.float32, [], name="q")
    inc = tf.assign_add(v, 1.0, name="inc")
    with tf.control_dependencies([inc]):
        seen = tf.identity(v.value(), name="seen")
    out1, out2 = seen + p, seen * q
    sess = tf.Session()
    sess.run(v.initializer)
    h = sess.partial_run_setup([out1, out2], [p, q])
    assert sess.partial_run(h, out1, {p: 10.0}) == 11.0
    assert sess.partial_run(h, out2, {q: 3.0}) == 3.0
    assert sess.run(v) == 1.0  # the assign ran once for the whole handle


def test_setup_targets_run_when_their_feeds_arrive():
    v = tf.Variable(0.0)
    p = tf.placeholder(tf.float32, [], name="p")
    q = tf.placeholder(tf.float32, [], name="q")
    write = tf.assign(v, p, name="write")
    out = q * 2.0
    sess = tf.Session()
    sess.run(v.initializer)
    h = sess.partial_run_setup([out, write.op], [p, q])
    assert sess.partial_run(h, out, {q: 4.0}) == 8.0
    assert sess.run(v) == 0.0
    assert sess.partial_run(h, [], {p: 5.0}) == []
    assert sess.run(v) == 5.0
    counter = tf.Variable(0, name="counter")
    bump = tf.assign_add(counter, 1)
    sess.run(counter.initializer)
    sess.partial_run_setup([bump.op])  # needs no feed: runs at setup, as TF's executors start at once
    assert sess.run(counter) == 1


def test_run_and_partial_run_agree():
    a = tf.constant(2.0)
    b = a * 2
    c = b * 3
    sess = tf.Session()
    h = sess.partial_run_setup([b, c], [])
    assert sess.partial_run(h, [b, c]) == sess.run([b, c]) == [4.0, 12.0]


def test_fetch_structures_and_fetching_fed_values():
    a = tf.placeholder(tf.float32, name="a")
    b = a * 2.0
    sess = tf.Session()
    h = sess.partial_run_setup(fetches=[b], feeds=[a])
    assert sess.partial_run(h, [], {a: 3.0}) == []
    assert sess.partial_run(h, {"b": [b]}, {}) == {"b": [6.0]}
    h = sess.partial_run_setup([b], [a])
    assert sess.partial_run(h, (a, b), {a: 1.5}) == (1.5, 3.0)


def test_setup_without_feeds():
    r1 = tf.constant([6.0])
    sess = tf.Session()
    h = sess.partial_run_setup([r1])
    np.testing.assert_array_equal(sess.partial_run(h, r1), [6.0])


# --- TF's errors -------------------------------------------------------------------------------------------------

def test_missing_placeholder_feed():
    x = tf.placeholder(tf.float32, shape=(), name="x")
    fetches = [x * 2, x * 3]
    sess = tf.Session()
    h = sess.partial_run_setup(fetches=fetches, feeds=[])
    with pytest.raises(InvalidArgumentError, match="You must feed a value for placeholder tensor 'x'"):
        sess.partial_run(h, fetches[0])


def test_unspecified_feed_and_fetch(abc):
    a, b, c = abc
    r1, r2 = a + b, a * c
    sess = tf.Session()
    h = sess.partial_run_setup([r1], [a, b])
    with pytest.raises(InvalidArgumentError, match="^The feed c:0 was not specified in partial_run_setup.$"):
        sess.partial_run(h, r1, feed_dict={a: 1, b: 2, c: 3})
    h = sess.partial_run_setup([r1], [a, b, c])
    with pytest.raises(InvalidArgumentError, match=f"^The fetch {r2.name} was not specified in partial_run_setup.$"):
        sess.partial_run(h, r2, feed_dict={a: 1, c: 3})


def test_feeding_twice_and_fetching_twice(abc):
    a, b, c = abc
    r1, r2 = a + b, a * c
    sess = tf.Session()
    h = sess.partial_run_setup([r1, r2], [a, b, c])
    sess.partial_run(h, r1, feed_dict={a: 1, b: 2})
    with pytest.raises(InvalidArgumentError, match="^The feed a:0 has already been fed.$"):
        sess.partial_run(h, r2, feed_dict={a: 1, c: 3})
    with pytest.raises(InvalidArgumentError, match=f"^The fetch {r1.name} has already been fetched.$"):
        sess.partial_run(h, r1, feed_dict={c: 3})
    assert sess.partial_run(h, r2, feed_dict={c: 3}) == 3.0  # errors before running leave the handle usable


def test_a_fetch_needing_an_unfed_feed(abc):
    a, b, c = abc
    r1 = (a + b) * c
    sess = tf.Session()
    h = sess.partial_run_setup([r1], [a, b, c])
    with pytest.raises(InvalidArgumentError, match="^Fetch c:0 can't be computed from the feeds that have been fed "
                                                   "so far.$"):
        sess.partial_run(h, r1, feed_dict={a: 1, b: 2})
    assert sess.partial_run(h, r1, feed_dict={a: 1, b: 2, c: 3}) == 9.0  # the failed call fed nothing


def test_finished_and_bogus_handles(abc):
    a, b, c = abc
    r1 = a + b
    sess = tf.Session()
    with pytest.raises(InvalidArgumentError, match="^Must run 'setup' before performing partial runs!$") as info:
        sess.partial_run("foo", r1, feed_dict={a: 1, b: 2})
    assert info.value.op is None and info.value.node_def is None
    h = sess.partial_run_setup([r1], [a, b])
    assert sess.partial_run(h, r1, {a: 1, b: 2}) == 3.0
    with pytest.raises(InvalidArgumentError, match="Must run 'setup' before performing partial runs!"):
        sess.partial_run(h, r1, {a: 1, b: 2})  # every feed fed and every fetch fetched: the handle is gone


def test_a_failed_step_ends_the_handle():
    x = tf.placeholder(tf.float32, [None], name="x")
    y = tf.reshape(x, [2])
    z = y * 2.0
    sess = tf.Session()
    h = sess.partial_run_setup([y, z], [x])
    with pytest.raises(InvalidArgumentError):
        sess.partial_run(h, y, {x: [1.0, 2.0, 3.0]})
    with pytest.raises(InvalidArgumentError, match="Must run 'setup'"):
        sess.partial_run(h, z)


def test_setup_and_call_errors(abc):
    a, b, c = abc
    sess = tf.Session()
    with pytest.raises(InvalidArgumentError, match="Must specify at least one target to fetch or execute."):
        sess.partial_run_setup(fetches=[], feeds=[a])
    with pytest.raises(KeyError, match="Cannot interpret feed_list key as Tensor: "):  # TF keeps the error's class
        sess.partial_run_setup([a + b], ["nope:0"])
    noop = tf.no_op()
    h = sess.partial_run_setup([a + b, noop], [a, b])
    with pytest.raises(RuntimeError, match="partial_run\\(\\) requires empty target_list."):
        sess.partial_run(h, noop, {a: 1.0})
    with pytest.raises(ValueError, match="Cannot feed value of shape"):
        sess.partial_run(h, [], {a: [1.0, 2.0]})


def test_a_closed_session_refuses_partial_runs(abc):
    a, b, c = abc
    sess = tf.Session()
    h = sess.partial_run_setup([a + b], [a, b])
    sess.close()
    with pytest.raises(RuntimeError, match="Attempted to use a closed Session."):
        sess.partial_run(h, [], {a: 1.0})


def test_a_setup_target_that_fails_is_reported_by_the_next_call(abc):
    a, b, c = abc
    sess = tf.Session()
    h = sess.partial_run_setup([a + b, c.op], [a, b])  # c is not fed: TF's executor fails in the background
    with pytest.raises(InvalidArgumentError, match="You must feed a value for placeholder tensor 'c'"):
        sess.partial_run(h, [], {a: 1.0})
    with pytest.raises(InvalidArgumentError, match="Must run 'setup'"):
        sess.partial_run(h, [], {b: 1.0})


def test_partial_runs_across_devices(gpus):
    p = tf.placeholder(tf.float32, [2], name="p")
    q = tf.placeholder(tf.float32, [2], name="q")
    with tf.device("/gpu:0"):
        r = tf.random_normal([2], name="r")
        first = tf.add(r, p, name="first")
    with tf.device("/gpu:1"):
        second = tf.multiply(r, q, name="second")
    sess = tf.Session()
    h = sess.partial_run_setup([first, second], [p, q])
    v1 = sess.partial_run(h, first, {p: [0.0, 0.0]})
    v2 = sess.partial_run(h, second, {q: [1.0, 1.0]})
    np.testing.assert_array_equal(v1, v2)  # one value of r, on both GPUs


def test_an_assign_output_fetched_after_it_ran():
    v = tf.Variable(1.0)
    p = tf.placeholder(tf.float32, [], name="p")
    q = tf.placeholder(tf.float32, [], name="q")
    assigned = tf.assign(v, p, name="assigned")
    doubled = assigned * 2.0
    later = q + 0.0
    sess = tf.Session()
    sess.run(v.initializer)
    h = sess.partial_run_setup([doubled, assigned, later], [p, q])
    assert sess.partial_run(h, doubled, {p: 3.0}) == 6.0
    assert sess.partial_run(h, [assigned, later], {q: 1.0}) == [3.0, 1.0]
    assert sess.run(v) == 3.0
