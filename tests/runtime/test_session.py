"""Tests for adplace/runtime/session.py: TF1's Session.run contract (fetches, feeds, errors, life cycle, state)."""
import collections

import numpy as np
import pytest

import adplace as tf
from adplace.errors import FailedPreconditionError, InvalidArgumentError
from placement_log import CPU0, GPU0, GPU1

Pair = collections.namedtuple("Pair", "first second")


pytestmark = pytest.mark.usefixtures("virtual_gpus_only")


@pytest.fixture
def abc():
    a = tf.constant(1.0, name="a")
    b = tf.constant(2, name="b")
    c = tf.add(a, 3.0, name="c")
    return a, b, c


# --- fetches -------------------------------------------------------------------------------------------------------

def test_fetch_single_tensor(abc):
    a, b, c = abc
    assert tf.Session().run(c) == 4.0


def test_fetch_list_and_tuple_keep_their_type(abc):
    a, b, c = abc
    sess = tf.Session()
    as_list = sess.run([a, b, c])
    assert type(as_list) is list and as_list == [1.0, 2, 4.0]
    as_tuple = sess.run((c, a))
    assert type(as_tuple) is tuple and as_tuple == (4.0, 1.0)
    assert sess.run([]) == []


def test_fetch_dict_namedtuple_and_nesting(abc):
    a, b, c = abc
    sess = tf.Session()
    assert sess.run({"a": a, "rest": [b, (c,)]}) == {"a": 1.0, "rest": [2, (4.0,)]}
    pair = sess.run(Pair(a, {"c": c}))
    assert type(pair) is Pair and pair.first == 1.0 and pair.second == {"c": 4.0}
    ordered = sess.run(collections.OrderedDict([("z", c), ("y", a)]))
    assert type(ordered) is collections.OrderedDict and list(ordered.items()) == [("z", 4.0), ("y", 1.0)]


def test_fetching_an_op_gives_none_and_runs_it():
    v = tf.Variable(1.0)
    inc = tf.assign_add(v, 1.0)
    sess = tf.Session()
    assert sess.run(v.initializer) is None
    assert sess.run([inc.op]) == [None]
    assert sess.run(v) == 2.0
    assert sess.run({"step": tf.group(inc)}) == {"step": None}
    assert sess.run(v) == 3.0
    k = tf.constant(5.0, name="k")
    assert sess.run([k, k.op]) == [5.0, None]  # (an op fetched BEFORE a tensor hits a known bug: see the report)


def test_fetch_by_tensor_and_op_names(abc):
    a, b, c = abc
    sess = tf.Session()
    assert sess.run("c:0") == 4.0
    assert sess.run("c") is None  # an op name fetches the op
    assert sess.run(["a:0", {"k": "b:0"}, "c"]) == [1.0, {"k": 2}, None]


def test_rank0_fetch_is_a_numpy_scalar_of_the_tensor_dtype(abc):
    a, b, c = abc
    sess = tf.Session()
    value_a, value_b = sess.run([a, b])
    assert type(value_a) is np.float32 and type(value_b) is np.int32
    assert type(sess.run(tf.constant(1.0, dtype=tf.float64))) is np.float64
    assert type(sess.run(tf.constant([1.0]))) is np.ndarray


def test_fetch_none_is_a_type_error(abc):
    with pytest.raises(TypeError, match="None"):
        tf.Session().run(None)
    with pytest.raises(TypeError):
        tf.Session().run([abc[0], None])


def test_fetch_of_unconvertible_object_is_a_type_error(abc):
    with pytest.raises(TypeError, match="invalid type"):
        tf.Session().run(3)


def test_fetch_of_a_tensor_from_another_graph_is_a_value_error(abc):
    other = tf.Graph()
    with other.as_default():
        foreign = tf.constant(1.0, name="foreign")
    with pytest.raises(ValueError, match="not an element of this graph"):
        tf.Session().run(foreign)


def test_fetch_of_an_unknown_name_is_a_value_error(abc):
    with pytest.raises(ValueError, match="nope"):
        tf.Session().run("nope:0")


# --- feeds ---------------------------------------------------------------------------------------------------------

def test_feed_by_tensor_and_by_name():
    x = tf.placeholder(tf.float32, [None, 2], name="x")
    y = x * 2.0
    sess = tf.Session()
    np.testing.assert_array_equal(sess.run(y, {x: [[1.0, 2.0]]}), [[2.0, 4.0]])
    np.testing.assert_array_equal(sess.run(y, feed_dict={"x:0": [[3.0, 4.0]]}), [[6.0, 8.0]])


def test_feed_values_are_converted_to_the_placeholder_dtype():
    x = tf.placeholder(tf.float32, [2], name="x")
    i = tf.placeholder(tf.int32, [2], name="i")
    sess = tf.Session()
    fed_float = sess.run(tf.identity(x), {x: np.array([1, 2], dtype=np.int64)})
    assert fed_float.dtype == np.float32 and fed_float.tolist() == [1.0, 2.0]
    fed_int = sess.run(i + 1, {i: [1.5, 2.7]})  # np.asarray(value, dtype): truncates, as TF1 does
    assert fed_int.dtype == np.int32 and fed_int.tolist() == [2, 3]
    with pytest.raises(ValueError, match="i:0"):
        sess.run(i + 1, {i: ["a", "b"]})


def test_feed_shape_mismatch_is_a_value_error():
    x = tf.placeholder(tf.float32, [None, 2], name="x")
    with pytest.raises(ValueError, match=r"Cannot feed value of shape \(3,\) for Tensor 'x:0'"):
        tf.Session().run(x * 2.0, {x: [1.0, 2.0, 3.0]})


def test_feeding_a_tensor_is_a_type_error():
    x = tf.placeholder(tf.float32, [], name="x")
    with pytest.raises(TypeError, match="cannot be a tf.Tensor"):
        tf.Session().run(x * 2.0, {x: tf.constant(1.0)})


def test_feed_key_naming_an_op_is_a_type_error():
    x = tf.placeholder(tf.float32, [], name="x")
    with pytest.raises(TypeError, match="feed_dict key"):
        tf.Session().run(x * 2.0, {"x": 1.0})


def test_unfed_placeholder_is_an_error_naming_it():
    x = tf.placeholder(tf.float32, [None, 2], name="inputs")
    with pytest.raises(InvalidArgumentError, match="You must feed a value for placeholder tensor 'inputs'") as info:
        tf.Session().run(x + 1.0)
    assert "float32" in str(info.value) and info.value.op is x.op


def test_feeding_an_intermediate_tensor_replaces_it():
    x = tf.placeholder(tf.float32, [None], name="x")
    a = tf.sin(x)
    c = a * 2.0
    np.testing.assert_array_equal(tf.Session().run(c, {a: [3.0]}), [6.0])  # x is not needed


def test_fetching_a_fed_value():
    x = tf.placeholder(tf.float32, [2], name="x")
    feed = np.array([1.0, 2.0], dtype=np.float32)
    result = tf.Session().run(x, {x: feed})
    np.testing.assert_array_equal(result, feed)


# --- values belong to the session, fetches are copies ----------------------------------------------------------

def test_mutating_a_fetched_variable_value_does_not_change_the_variable():
    v = tf.Variable([1.0, 2.0], name="v")
    inc = tf.assign_add(v, [1.0, 1.0])
    sess = tf.Session()
    sess.run(v.initializer)
    sess.run(inc)
    for element in (v, v.value(), v.read_value(), tf.identity(v)):
        fetched = sess.run(element)
        fetched[...] = 99.0
        np.testing.assert_array_equal(sess.run(v), [2.0, 3.0])
    fetched = sess.run(inc)  # the value an assign returns is the variable's new value, as a copy
    np.testing.assert_array_equal(fetched, [3.0, 4.0])
    fetched[...] = 99.0
    np.testing.assert_array_equal(sess.run(v), [3.0, 4.0])


def test_mutating_a_fetched_constant_does_not_change_the_next_fetch():
    k = tf.constant([1.0, 2.0], name="k")
    r = tf.reshape(k, [2, 1])
    sess = tf.Session()
    for element in (k, tf.identity(k), r):
        first = sess.run(element)
        first[...] = -1.0
        np.testing.assert_array_equal(sess.run(element).ravel(), [1.0, 2.0])


def test_a_fed_array_is_not_aliased_by_the_variable_it_assigns():
    v = tf.Variable([0.0, 0.0], name="v")
    x = tf.placeholder(tf.float32, [2], name="x")
    assign = tf.assign(v, x)
    sess = tf.Session()
    feed = np.array([1.0, 2.0], dtype=np.float32)
    sess.run(assign, {x: feed})
    feed[0] = 42.0
    np.testing.assert_array_equal(sess.run(v), [1.0, 2.0])


def test_variables_are_per_session():
    v = tf.Variable(1.0, name="v")
    inc = tf.assign_add(v, 10.0)
    first, second = tf.Session(), tf.Session()
    first.run(v.initializer)
    second.run(v.initializer)
    first.run(inc)
    first.run(inc)
    assert first.run(v) == 21.0 and second.run(v) == 1.0
    third = tf.Session()
    with pytest.raises(FailedPreconditionError, match="uninitialized value v"):
        third.run(v)


def test_variable_value_keeps_its_dtype_and_shape():
    v = tf.Variable(np.arange(6, dtype=np.float64).reshape(2, 3), name="v")
    sess = tf.Session()
    sess.run(v.initializer)
    value = sess.run(v)
    assert value.dtype == np.float64 and value.shape == (2, 3)


# --- failing steps -------------------------------------------------------------------------------------------------

def _failing_step(chain_length: int):
    """A step that increments v, then fails at run time in a reshape of a fed placeholder; and the pieces."""
    v = tf.Variable(1.0, name="v")
    x = tf.placeholder(tf.float32, [None], name="x")
    h = x
    for _ in range(chain_length):
        h = tf.sin(h)
    # CheckNumerics reads the reshape: a value only grouped would not be computed (grappler's NoOp conversion)
    train = tf.group(tf.assign_add(v, 1.0), tf.check_numerics(tf.reshape(h, [3], name="bad_reshape"), "read"))
    return v, x, train


@pytest.mark.parametrize("chain_length, compiled", [(0, True), (80, False)])
def test_a_failing_step_leaves_variables_unchanged(gpus, chain_length, compiled):
    v, x, train = _failing_step(chain_length)
    sess = tf.Session()
    sess.run(v.initializer)
    plan = sess.plan_for(train, {x: [1.0, 2.0]})
    assert plan.is_compiled is compiled
    assert [s.op.type for s in plan.steps].index("AssignAdd") < [s.op.name for s in plan.steps].index("bad_reshape")
    before = sess.run(v)
    for _ in range(3):  # again and again: no tier-up or cache makes a later failure leak
        with pytest.raises(InvalidArgumentError, match="bad_reshape") as info:
            sess.run(train, {x: [1.0, 2.0]})
        assert GPU0 in str(info.value)  # the failing op's device
        assert info.value.op.name == "bad_reshape"
        assert sess.run(v) == before
    sess.run(train, {x: [1.0, 2.0, 3.0]})  # the same step succeeds with a good feed
    assert sess.run(v) == before + 1.0


def test_a_failing_step_restores_every_variable_it_wrote():
    v = tf.Variable([1.0, 2.0], name="v")
    w = tf.Variable(5, name="w")
    x = tf.placeholder(tf.float32, [None], name="x")
    step = tf.group(tf.assign(v, [7.0, 7.0]), tf.assign_add(w, 1), tf.assign_sub(v, [1.0, 1.0]),
                    tf.check_numerics(tf.reshape(x, [3], name="bad"), "read"))
    sess = tf.Session()
    sess.run([v.initializer, w.initializer])
    with pytest.raises(InvalidArgumentError, match="bad"):
        sess.run(step, {x: [1.0]})
    np.testing.assert_array_equal(sess.run(v), [1.0, 2.0])
    assert sess.run(w) == 5


def test_kernel_error_names_the_op_and_device(gpus):
    a = tf.placeholder(tf.float32, [None], name="a")
    b = tf.placeholder(tf.float32, [None], name="b")
    with tf.device("/gpu:1"):
        total = tf.add(a, b, name="total")
    with pytest.raises(InvalidArgumentError, match="total") as info:
        tf.Session().run(total, {a: [1.0, 2.0], b: [1.0, 2.0, 3.0]})
    assert GPU1 in str(info.value)
    assert info.value.op is total.op


def test_uninitialized_variable_is_a_failed_precondition_naming_it():
    v = tf.Variable(1.0, name="weights")
    with pytest.raises(FailedPreconditionError, match="weights"):
        tf.Session().run(v * 2.0)


# --- plans, callables ----------------------------------------------------------------------------------------------

def test_same_fetches_reuse_one_cached_plan():
    x = tf.placeholder(tf.float32, [2], name="x")
    y = tf.sin(x)
    sess = tf.Session()
    sess.run(y, {x: [1.0, 2.0]})
    sess.run(y, {x: [3.0, 4.0]})
    assert len(sess._runs) == 1
    plan = next(iter(sess._runs.values())).plan
    assert plan.runs == 2
    sess.run([y], {x: [1.0, 2.0]})
    assert len(sess._runs) == 2  # another fetch structure is another signature
    assert [s.op.name for s in sess.plan_for(y, {x: [0.0, 0.0]}).steps] == [y.op.name]


def test_plan_for_lists_only_the_needed_ops():
    a = tf.constant(1.0, name="a")
    b = tf.sin(a, name="b")
    tf.cos(a, name="unused")
    plan = tf.Session().plan_for(b)
    assert [s.op.name for s in plan.steps] == ["a", "b"]


def test_make_callable_with_positional_feeds():
    x = tf.placeholder(tf.float32, [None], name="x")
    y = x * 2.0
    sess = tf.Session()
    run = sess.make_callable([y, y.op], [x])
    result, none = run([1.0, 2.0])
    np.testing.assert_array_equal(result, [2.0, 4.0])
    assert none is None
    np.testing.assert_array_equal(run(np.zeros(3))[0], [0.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="Expected 1 feed values, got 0"):
        run()
    with pytest.raises(ValueError, match="Cannot feed value of shape"):
        run([[1.0]])


def test_run_accepts_run_options_and_metadata(abc):
    a, b, c = abc
    options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
    metadata = tf.RunMetadata()
    assert tf.Session().run(c, options=options, run_metadata=metadata) == 4.0


def test_run_on_empty_graph_is_a_runtime_error():
    with pytest.raises(RuntimeError, match="graph is empty"):
        tf.Session().run([])


# --- life cycle ----------------------------------------------------------------------------------------------------

def test_closed_session_raises_runtime_error(abc):
    sess = tf.Session()
    sess.close()
    with pytest.raises(RuntimeError, match="closed Session"):
        sess.run(abc[2])
    with pytest.raises(RuntimeError, match="closed Session"):
        sess.placement(abc[2])


def test_context_manager_sets_default_session_and_closes(abc):
    a, b, c = abc
    with tf.Session() as sess:
        assert tf.get_default_session() is sess
        assert c.eval() == 4.0
        assert c.op.run() is None
    assert tf.get_default_session() is None
    with pytest.raises(RuntimeError):
        sess.run(c)


def test_as_default_does_not_close(abc):
    a, b, c = abc
    sess = tf.Session()
    with sess.as_default():
        assert tf.get_default_session() is sess
        assert a.eval() == 1.0
    assert tf.get_default_session() is None
    assert sess.run(c) == 4.0  # still open


def test_eval_without_default_session_is_an_error(abc):
    with pytest.raises(ValueError):
        abc[2].eval()


def test_interactive_session_installs_itself(abc):
    a, b, c = abc
    sess = tf.InteractiveSession()
    try:
        assert tf.get_default_session() is sess
        assert c.eval() == 4.0
    finally:
        sess.close()
    assert tf.get_default_session() is None


def test_session_on_an_explicit_graph():
    graph = tf.Graph()
    with graph.as_default():
        k = tf.constant(5.0, name="k")
    sess = tf.Session(graph=graph)
    assert sess.graph is graph and sess.run(k) == 5.0
    assert sess.run("k:0") == 5.0


def test_list_devices_names(gpus):
    listed = tf.Session().list_devices()
    assert [d.name for d in listed] == [CPU0, GPU0, GPU1]
    assert [d.device_type for d in listed] == ["CPU", "GPU", "GPU"]


# --- configuration -------------------------------------------------------------------------------------------------

def test_config_proto_rejects_unknown_fields():
    with pytest.raises(ValueError, match="bogus"):
        tf.ConfigProto(bogus=1)
    config = tf.ConfigProto()
    with pytest.raises(AttributeError):
        config.bogus = 1


def test_config_proto_fields_and_nesting():
    config = tf.ConfigProto(allow_soft_placement=True)
    config.gpu_options.allow_growth = True
    assert config.allow_soft_placement and not config.log_device_placement
    assert config.gpu_options.allow_growth
    assert not tf.ConfigProto().gpu_options.allow_growth  # defaults are not shared between messages


def test_session_rejects_a_non_config(abc):
    with pytest.raises(TypeError):
        tf.Session(config={"allow_soft_placement": True})


def test_fetching_an_op_before_a_tensor_keeps_positions():
    a = tf.constant(1.0, name="a")
    assert tf.Session().run([a.op, a, {"k": a.op, "v": a}]) == [None, 1.0, {"k": None, "v": 1.0}]


def test_fetched_initialized_value_is_a_copy():
    v = tf.Variable([1.0, 2.0])
    inc = tf.assign_add(v, [1.0, 1.0])
    iv = v.initialized_value()
    sess = tf.Session()
    sess.run(v.initializer)
    sess.run(inc)
    fetched = sess.run(iv)
    fetched[0] = 99.0
    np.testing.assert_array_equal(sess.run(v), [2.0, 3.0])


def test_callable_from_a_closed_session_refuses_to_run():
    x = tf.placeholder(tf.float32, [2])
    sess = tf.Session()
    double = sess.make_callable(x * 2.0, [x])
    np.testing.assert_array_equal(double([1.0, 2.0]), [2.0, 4.0])
    sess.close()
    with pytest.raises(RuntimeError, match="closed Session"):
        double([1.0, 2.0])


def test_defaultdict_fetch_and_commit_only_after_the_result_is_built():
    v = tf.Variable(0.0)
    inc = tf.assign_add(v, 1.0)
    sess = tf.Session()
    sess.run(v.initializer)
    out = sess.run(collections.defaultdict(list, {"inc": inc}))
    assert isinstance(out, collections.defaultdict) and out["inc"] == 1.0 and out["missing"] == []


def test_concurrent_steps_do_not_undo_each_other():
    import threading
    a, b = tf.Variable(0.0, name="a"), tf.Variable(0.0, name="b")
    bad = tf.placeholder(tf.float32, [None])
    failing = tf.group(tf.assign_add(a, 1.0), tf.check_numerics(tf.reshape(bad, [3]), "read"))
    good = tf.assign_add(b, 1.0)
    sess = tf.Session()
    sess.run(tf.global_variables_initializer())
    errors = []

    def fail_many():
        for _ in range(200):
            try:
                sess.run(failing, {bad: [1.0, 2.0]})
            except InvalidArgumentError as e:
                errors.append(e)
    threads = [threading.Thread(target=fail_many)] + [threading.Thread(target=lambda: [sess.run(good)
                                                                                       for _ in range(200)])]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(errors) == 200 and sess.run(a) == 0.0 and sess.run(b) == 200.0


def test_run_options_are_type_checked():
    c = tf.constant(1.0)
    sess = tf.Session()
    with pytest.raises(TypeError, match="RunOptions"):
        sess.run(c, options="junk")
    assert sess.run(c, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
                    run_metadata=tf.RunMetadata()) == 1.0


def test_an_oversized_int_feed_is_a_type_error():
    i = tf.placeholder(tf.int32, [])
    with pytest.raises(TypeError, match="not compatible with Tensor type .* of Tensor 'Placeholder:0'"):
        tf.Session().run(tf.identity(i), {i: 2 ** 40})
