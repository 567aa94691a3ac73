"""Tests for adplace/runtime/callables.py: Session.make_callable with TF's call signature."""
import collections

import numpy as np
import pytest

import adplace as tf

pytestmark = pytest.mark.usefixtures("virtual_gpus_only")

ABC = collections.namedtuple("ABC", "a b c")


def test_callables_return_what_run_returns():
    a, c = tf.constant(42.0), tf.constant(44.0)
    b = tf.no_op()
    sess = tf.Session()
    assert sess.make_callable(a)() == 42.0
    assert sess.make_callable(a.op)() is None
    assert sess.make_callable([a, b, c, a.name])() == [42.0, None, 44.0, 42.0]
    assert sess.make_callable((a, b))() == (42.0, None)
    assert sess.make_callable(ABC(a, b, c))() == ABC(42.0, None, 44.0)


def test_feeds_by_position_and_fetching_a_fed_tensor():
    x = tf.placeholder(tf.float32, [3], name="x")
    y = tf.identity(x)
    run = tf.Session().make_callable([y, x], [x])
    for _ in range(3):  # the compiled plan is reused
        out, fed = run(np.array([1.0, 2.0, 3.0]))
        np.testing.assert_array_equal(out, [1.0, 2.0, 3.0])
        np.testing.assert_array_equal(fed, [1.0, 2.0, 3.0])


def test_the_plan_is_compiled_once_and_shared_with_run():
    x = tf.placeholder(tf.float32, [], name="x")
    y = x + 1.0
    sess = tf.Session()
    run = sess.make_callable(y, [x])
    assert run(1.0) == 2.0 and run(2.0) == 3.0
    assert sess.plan_for(y, {x: 0.0}) is sess.plan_for(y, {x: 5.0})
    assert sess.plan_for(y, {x: 0.0}).runs == 2


def test_feed_list_by_names_and_nested_tuple_keys():
    a, b = tf.placeholder(tf.float32, [], name="a"), tf.placeholder(tf.float32, [], name="b")
    sess = tf.Session()
    assert sess.make_callable(a * b, ["a:0", b])(3.0, 4.0) == 12.0
    assert sess.make_callable(a - b, [(a, b)])((5.0, 1.0)) == 4.0


def test_argument_count_errors():
    x = tf.placeholder(tf.float32, [], name="x")
    sess = tf.Session()
    unfed = sess.make_callable(x + 1.0)  # TF reports an unfed placeholder when the callable runs
    with pytest.raises(TypeError, match="takes 0 positional arguments but 1 were given"):
        unfed(1.0)
    with pytest.raises(tf.errors.InvalidArgumentError, match="You must feed a value for placeholder tensor 'x'"):
        unfed()
    run = sess.make_callable(x + 1.0, [x])
    with pytest.raises(ValueError, match=r"Expected 1 feed values, got 2: .*\(x:0\)"):
        run(1.0, 2.0)
    with pytest.raises(TypeError, match="`feed_list` must be a list or tuple."):
        sess.make_callable(x, feed_list=x)


def test_options_only_when_accepted():
    v = tf.Variable(42.0)
    inc = tf.assign_add(v, 1.0)
    sess = tf.Session()
    sess.run(v.initializer)
    options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
    metadata = tf.RunMetadata()
    with pytest.raises(TypeError, match="unexpected keyword argument 'options'"):
        sess.make_callable(inc.op)(options=options)
    runner = sess.make_callable(inc.op, accept_options=True)
    assert runner(options=options, run_metadata=metadata) is None
    assert sess.run(v) == 43.0 and len(metadata.step_stats.dev_stats) > 0
    positional = tf.RunMetadata()
    runner(options, positional)  # TF's accept_options callable binds them positionally too
    assert sess.run(v) == 44.0 and len(positional.step_stats.dev_stats) > 0
    with pytest.raises(TypeError, match="unexpected keyword argument 'timeout'"):
        runner(timeout=1)


def test_a_feed_list_callable_takes_run_options_like_run():
    ph = tf.placeholder(tf.float32, name="ph")
    a = ph + 1.0
    runner = tf.Session().make_callable(a, feed_list=[ph.name])  # TF passes keywords on to run()
    metadata = tf.RunMetadata()
    assert runner(41.0, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), run_metadata=metadata) == 42.0
    assert len(metadata.step_stats.dev_stats) > 0


def test_a_callable_of_a_failed_step_rolls_back():
    v = tf.Variable(1.0)
    x = tf.placeholder(tf.float32, [None])
    step = [tf.assign_add(v, 1.0).op, tf.reshape(x, [2])]  # fetched: a reshape only grouped would not run (grappler)
    sess = tf.Session()
    sess.run(v.initializer)
    run = sess.make_callable(step, [x])
    run([1.0, 2.0])
    with pytest.raises(tf.errors.InvalidArgumentError):
        run([1.0, 2.0, 3.0])
    assert sess.run(v) == 2.0
