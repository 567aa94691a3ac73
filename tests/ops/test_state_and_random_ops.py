"""Tests for adplace.ops.variables, adplace.ops.state_ops, adplace.ops.random_ops and adplace.ops.control_flow_ops:
variables and their initializers, the Assign family, seeded random ops, no_op and group."""

import numpy as np
import pytest

import adplace as tf


# --- Variable structure --------------------------------------------------------------------------------------

def test_variable_builds_tf1_ops():
    v = tf.Variable([1.0, 2.0], name="v")
    names = {op.name: op.type for op in tf.get_default_graph().get_operations()}
    assert names == {"v/initial_value": "Const", "v": "VariableV2", "v/Assign": "Assign", "v/read": "Identity"}
    assert v.name == "v:0"
    assert v.op.type == "VariableV2"
    assert v.dtype == tf.float32_ref
    assert v.shape.as_list() == [2]
    assert v.get_shape().as_list() == [2]
    assert v.initializer.name == "v/Assign"
    assert v.value().name == "v/read:0"
    assert v.value().dtype == tf.float32


def test_variable_default_name_and_uniqueness():
    a = tf.Variable(1.0)
    b = tf.Variable(1.0)
    assert (a.name, b.name) == ("Variable:0", "Variable_1:0")


def test_variable_in_name_scope():
    with tf.name_scope("layer"):
        v = tf.Variable(1.0, name="w")
    assert v.name == "layer/w:0"
    assert v.value().op.name == "layer/w/read"


def test_variable_requires_initial_value():
    with pytest.raises(ValueError, match="initial_value must be specified"):
        tf.Variable()


def test_variable_dtype_argument_and_callable_initial_value():
    v = tf.Variable(lambda: tf.ones([2, 2]), name="c")
    w = tf.Variable(3, dtype=tf.float64, name="d")
    assert v.shape.as_list() == [2, 2]
    assert w.dtype == tf.float64_ref
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_allclose(sess.run(v), np.ones((2, 2)))
        assert sess.run(w) == 3.0


def test_variable_validate_shape_false_has_unknown_shape():
    v = tf.Variable([1.0, 2.0], validate_shape=False)
    assert v.shape.ndims is None
    with tf.Session() as sess:
        sess.run(v.initializer)
        np.testing.assert_allclose(sess.run(v), [1.0, 2.0])
        sess.run(tf.assign(v, [1.0, 2.0, 3.0], validate_shape=False))
        np.testing.assert_allclose(sess.run(v), [1.0, 2.0, 3.0])


# --- initialization -----------------------------------------------------------------------------------------

def test_global_variables_initializer_initializes_all():
    a = tf.Variable([1.0, 2.0], name="a")
    b = tf.Variable(5, name="b")
    init = tf.global_variables_initializer()
    assert init.type == "NoOp"
    assert init.name == "init"
    assert set(init.control_inputs) == {a.initializer, b.initializer}
    with tf.Session() as sess:
        sess.run(init)
        got = sess.run([a, b])
    np.testing.assert_allclose(got[0], [1.0, 2.0])
    assert got[1] == 5


def test_variables_initializer_only_initializes_listed():
    a = tf.Variable(1.0, name="a")
    b = tf.Variable(2.0, name="b")
    with tf.Session() as sess:
        sess.run(tf.variables_initializer([a]))
        assert sess.run(a) == 1.0
        assert not sess.run(tf.is_variable_initialized(b))
        assert sess.run(tf.is_variable_initialized(a))
        with pytest.raises(tf.errors.FailedPreconditionError, match="b"):
            sess.run(b)


def test_empty_variables_initializer_is_a_no_op():
    init = tf.variables_initializer([])
    assert init.type == "NoOp"
    with tf.Session() as sess:
        assert sess.run(init) is None


def test_uninitialized_read_raises_failed_precondition_naming_variable():
    v = tf.Variable([1.0], name="weights")
    y = v * 2.0
    with tf.Session() as sess:
        with pytest.raises(tf.errors.FailedPreconditionError,
                           match="Attempting to use uninitialized value weights"):
            sess.run(y)


def test_assign_add_on_uninitialized_variable_fails():
    v = tf.Variable(1.0, name="counter")
    inc = tf.assign_add(v, 1.0)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.FailedPreconditionError, match="counter"):
            sess.run(inc)


def test_initialized_value_chains_initialization():
    v = tf.Variable([1.0, 2.0], name="v")
    w = tf.Variable(v.initialized_value() * 2.0, name="w")
    with tf.Session() as sess:
        sess.run(w.initializer)  # v itself is not initialized, its initial value is used
        np.testing.assert_allclose(sess.run(w), [2.0, 4.0])
        sess.run(v.initializer)
        sess.run(tf.assign(v, [10.0, 20.0]))
        sess.run(w.initializer)  # now v's current value is used
        np.testing.assert_allclose(sess.run(w), [20.0, 40.0])


def test_variables_are_per_session():
    v = tf.Variable(1.0)
    inc = tf.assign_add(v, 1.0)
    s1, s2 = tf.Session(), tf.Session()
    try:
        s1.run(v.initializer)
        s2.run(v.initializer)
        s1.run(inc)
        s1.run(inc)
        assert s1.run(v) == 3.0
        assert s2.run(v) == 1.0
    finally:
        s1.close()
        s2.close()


# --- assign family ----------------------------------------------------------------------------------------------

def test_assign_assign_add_assign_sub():
    v = tf.Variable([1.0, 2.0], name="v")
    set_op = tf.assign(v, [10.0, 20.0])
    add_op = tf.assign_add(v, [1.0, 1.0])
    sub_op = tf.assign_sub(v, [0.5, 0.5])
    assert [o.op.type for o in (set_op, add_op, sub_op)] == ["Assign", "AssignAdd", "AssignSub"]
    assert set_op.dtype == tf.float32_ref
    with tf.Session() as sess:
        sess.run(v.initializer)
        np.testing.assert_allclose(sess.run(set_op), [10.0, 20.0])
        np.testing.assert_allclose(sess.run(add_op), [11.0, 21.0])
        np.testing.assert_allclose(sess.run(add_op), [12.0, 22.0])
        np.testing.assert_allclose(sess.run(sub_op), [11.5, 21.5])
        np.testing.assert_allclose(sess.run(v), [11.5, 21.5])


def test_variable_methods_assign():
    v = tf.Variable(5.0)
    with tf.Session() as sess:
        sess.run(v.initializer)
        sess.run(v.assign(1.0))
        assert sess.run(v) == 1.0
        sess.run(v.assign_add(2.0))
        assert sess.run(v) == 3.0
        sess.run(v.assign_sub(0.5))
        assert sess.run(v) == 2.5


def test_use_locking_defaults_follow_tf():
    """TF: the Assign op locks by default, AssignAdd/AssignSub do not, and Variable.assign* pass use_locking=False."""
    v = tf.Variable(1.0, name="v")
    defaults = {"tf.assign": tf.assign(v, 2.0), "tf.assign_add": tf.assign_add(v, 1.0),
                "tf.assign_sub": tf.assign_sub(v, 1.0), "v.assign": v.assign(2.0), "v.assign_add": v.assign_add(1.0),
                "v.assign_sub": v.assign_sub(1.0)}
    assert {name: t.op.get_attr("use_locking") for name, t in defaults.items()} == {
        "tf.assign": True, "tf.assign_add": False, "tf.assign_sub": False, "v.assign": False, "v.assign_add": False,
        "v.assign_sub": False}
    assert v.initializer.get_attr("use_locking") is True  # the initializer is a tf.assign


def test_explicit_use_locking_is_kept():
    v = tf.Variable(1.0, name="v")
    explicit = [tf.assign(v, 2.0, use_locking=False), tf.assign_add(v, 1.0, use_locking=True),
                tf.assign_sub(v, 1.0, use_locking=True), v.assign(2.0, use_locking=True),
                v.assign_add(1.0, use_locking=True), v.assign_sub(1.0, use_locking=True)]
    assert [t.op.get_attr("use_locking") for t in explicit] == [False, True, True, True, True, True]
    with tf.Session() as sess:  # the attr changes how the write is made, not what it computes
        sess.run(v.initializer)
        assert [sess.run(t) for t in explicit] == [2.0, 3.0, 2.0, 2.0, 3.0, 2.0]


def test_assign_ops_sit_with_their_variable_whatever_the_device_scope():
    with tf.device("/job:ps"):
        v = tf.Variable(0, name="v")
    with tf.device("/job:worker/task:7"):
        updates = [v.assign(1), tf.assign(v, 2), v.assign_add(1), tf.assign_sub(v, 1)]
        initialized = v.initialized_value()
        doubled = v * 2
    for update in updates:
        assert update.device == "/job:ps"
        assert update.op.colocation_groups() == [b"loc:@v"]
        assert update.op.get_attr("_class") == [b"loc:@v"]
    assert v.initializer.device == "/job:ps" and v.initializer.colocation_groups() == [b"loc:@v"]
    assert initialized.device == v.op.device == "/job:ps"
    assert doubled.device == "/job:worker/task:7"  # an ordinary reader follows the scope


def test_read_value_sees_latest_value():
    v = tf.Variable(1.0)
    read = v.read_value()
    assert read.op.type == "Identity"
    assert read.dtype == tf.float32
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert sess.run(read) == 1.0
        sess.run(v.assign(4.0))
        assert sess.run(read) == 4.0
        assert v.eval(session=sess) == 4.0


def test_variable_load():
    v = tf.Variable([0.0, 0.0])
    with tf.Session() as sess:
        sess.run(v.initializer)
        v.load([3.0, 4.0], sess)
        np.testing.assert_allclose(sess.run(v), [3.0, 4.0])
        with sess.as_default():
            v.load([5.0, 6.0])
        np.testing.assert_allclose(sess.run(v), [5.0, 6.0])


def test_variable_load_without_session_raises():
    v = tf.Variable(1.0)
    with pytest.raises(ValueError, match="No default session"):
        v.load(2.0)


def test_assign_shape_mismatch_raises_at_build_time():
    v = tf.Variable([1.0, 2.0], name="v")
    with pytest.raises(ValueError, match="Assign"):
        tf.assign(v, [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="AssignAdd"):
        tf.assign_add(v, [[1.0, 2.0]])


def test_assign_to_non_variable_raises_type_error():
    with pytest.raises(TypeError, match="mutable tensor"):
        tf.assign(tf.constant(1.0), 2.0)


def test_fetched_variable_value_is_a_copy():
    v = tf.Variable([1.0, 2.0])
    with tf.Session() as sess:
        sess.run(v.initializer)
        got = sess.run(v)
        got[0] = 100.0
        np.testing.assert_allclose(sess.run(v), [1.0, 2.0])


def test_failed_step_leaves_variables_unchanged():
    v = tf.Variable(1.0, name="v")
    p = tf.placeholder(tf.float32)
    inc = tf.assign_add(v, 1.0)
    with tf.control_dependencies([inc]):
        bad = tf.reshape(p, [3], name="bad_reshape")
    with tf.Session() as sess:
        sess.run(v.initializer)
        before = sess.run(v)
        with pytest.raises(tf.errors.InvalidArgumentError, match="bad_reshape"):
            sess.run(bad, {p: [1.0, 2.0]})
        assert sess.run(v) == before


# --- collections: trainable -----------------------------------------------------------------------------------

def test_trainable_variables_excludes_trainable_false():
    w = tf.Variable(1.0, name="w")
    step = tf.Variable(0, trainable=False, name="global_step")
    assert tf.trainable_variables() == [w]
    assert tf.global_variables() == [w, step]
    assert w.trainable and not step.trainable


def test_custom_collections():
    v = tf.Variable(1.0, collections=[tf.GraphKeys.LOCAL_VARIABLES], name="local")
    assert tf.local_variables() == [v]
    assert tf.global_variables() == []
    assert tf.trainable_variables() == [v]  # trainable=True adds the trainable collection
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        assert sess.run(v) == 1.0


def test_variable_scope_filter():
    with tf.name_scope("enc"):
        a = tf.Variable(1.0, name="a")
    with tf.name_scope("dec"):
        tf.Variable(1.0, name="b")
    assert tf.global_variables(scope="enc") == [a]
    assert tf.trainable_variables(scope="enc") == [a]


# --- random ops -------------------------------------------------------------------------------------------------

def test_random_uniform_shape_dtype_range():
    r = tf.random_uniform([50, 4], minval=-2.0, maxval=3.0)
    assert r.shape.as_list() == [50, 4]
    assert r.dtype == tf.float32
    with tf.Session() as sess:
        out = sess.run(r)
    assert out.shape == (50, 4)
    assert out.dtype == np.float32
    assert out.min() >= -2.0 and out.max() < 3.0
    assert out.std() > 0.5  # spread over the range, not a constant


def test_random_uniform_default_range_and_float64():
    r = tf.random_uniform([1000], dtype=tf.float64)
    assert r.dtype == tf.float64
    with tf.Session() as sess:
        out = sess.run(r)
    assert out.dtype == np.float64
    assert 0.0 <= out.min() and out.max() < 1.0
    assert abs(out.mean() - 0.5) < 0.1


def test_random_normal_moments():
    r = tf.random_normal([4000], mean=3.0, stddev=2.0)
    assert r.shape.as_list() == [4000]
    with tf.Session() as sess:
        out = sess.run(r)
    assert out.dtype == np.float32
    assert abs(out.mean() - 3.0) < 0.2
    assert abs(out.std() - 2.0) < 0.2


def test_truncated_normal_within_two_stddev():
    r = tf.truncated_normal([5000], mean=1.0, stddev=0.5)
    with tf.Session() as sess:
        out = sess.run(r)
    assert out.shape == (5000,)
    assert out.min() >= 1.0 - 2 * 0.5 and out.max() <= 1.0 + 2 * 0.5
    assert abs(out.mean() - 1.0) < 0.05
    assert out.std() < 0.5  # truncation narrows the distribution


def test_random_op_types_and_names():
    u = tf.random_uniform([2])
    n = tf.random_normal([2])
    t = tf.truncated_normal([2])
    assert (u.op.name, n.op.name, t.op.name) == ("random_uniform", "random_normal", "truncated_normal")
    ops = {op.type for op in tf.get_default_graph().get_operations()}
    assert {"RandomUniform", "RandomStandardNormal", "TruncatedNormal"} <= ops


def test_random_with_placeholder_shape():
    shape = tf.placeholder(tf.int32, shape=[2])
    r = tf.random_normal(shape)
    assert r.shape.as_list() == [None, None]
    with tf.Session() as sess:
        assert sess.run(r, {shape: [3, 5]}).shape == (3, 5)


def test_random_non_float_dtype_raises():
    with pytest.raises(TypeError, match="RandomStandardNormal"):
        tf.random_normal([2], dtype=tf.int32)


def test_successive_runs_of_random_op_differ():
    r = tf.random_uniform([8])
    with tf.Session() as sess:
        first, second = sess.run(r), sess.run(r)
    assert not np.array_equal(first, second)


def _first_value_in_fresh_graph(graph_seed=None, op_seed=None):
    g = tf.Graph()
    with g.as_default():
        if graph_seed is not None:
            tf.set_random_seed(graph_seed)
        tf.constant(0.0)  # some unrelated op before the random one
        r = tf.random_uniform([4], seed=op_seed)
        with tf.Session() as sess:
            return sess.run(r), sess.run(r)


def test_graph_seed_reproducible_across_graphs_and_sessions():
    first_a, second_a = _first_value_in_fresh_graph(graph_seed=42)
    first_b, second_b = _first_value_in_fresh_graph(graph_seed=42)
    np.testing.assert_array_equal(first_a, first_b)
    np.testing.assert_array_equal(second_a, second_b)
    assert not np.array_equal(first_a, second_a)
    other, _ = _first_value_in_fresh_graph(graph_seed=43)
    assert not np.array_equal(first_a, other)


def test_graph_seed_same_graph_fresh_session_restarts_stream():
    tf.set_random_seed(7)
    r = tf.random_normal([3])
    with tf.Session() as sess:
        a = sess.run(r)
    with tf.Session() as sess:
        b = sess.run(r)
    np.testing.assert_array_equal(a, b)


def test_op_seed_reproducible():
    first_a, _ = _first_value_in_fresh_graph(op_seed=5)
    first_b, _ = _first_value_in_fresh_graph(op_seed=5)
    np.testing.assert_array_equal(first_a, first_b)
    first_c, _ = _first_value_in_fresh_graph(op_seed=6)
    assert not np.array_equal(first_a, first_c)


def test_graph_seed_gives_distinct_streams_per_op():
    tf.set_random_seed(1)
    a = tf.random_uniform([5])
    b = tf.random_uniform([5])
    with tf.Session() as sess:
        va, vb = sess.run([a, b])
    assert not np.array_equal(va, vb)


def test_unseeded_graphs_differ():
    first_a, _ = _first_value_in_fresh_graph()
    first_b, _ = _first_value_in_fresh_graph()
    assert not np.array_equal(first_a, first_b)


def test_random_initializer_for_variable():
    tf.set_random_seed(0)
    v = tf.Variable(tf.random_normal([3, 3], stddev=0.1))
    with tf.Session() as sess:
        sess.run(v.initializer)
        first = sess.run(v)
        assert np.array_equal(first, sess.run(v))  # reading does not re-sample
        assert np.abs(first).max() < 1.0


# --- no_op and group ---------------------------------------------------------------------------------------------

def test_no_op():
    op = tf.no_op(name="nothing")
    assert op.type == "NoOp"
    assert op.name == "nothing"
    assert op.outputs == []
    with tf.Session() as sess:
        assert sess.run(op) is None


def test_group_runs_all_inputs():
    a = tf.Variable(0.0, name="a")
    b = tf.Variable(0.0, name="b")
    inc_a = tf.assign_add(a, 1.0)
    inc_b = tf.assign_add(b, 10.0)
    both = tf.group(inc_a, inc_b)
    assert both.type == "NoOp"
    assert both.name == "group_deps"
    assert both.control_inputs == [inc_a.op, inc_b.op]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(both) is None
        sess.run(both)
        assert sess.run([a, b]) == [2.0, 20.0]


def test_group_makes_one_no_op_per_device_under_a_root(gpus):
    """TF's group: inputs on one device give one NoOp on that device; several devices give a NoOp per device
    (sorted by device string) under a root NoOp that follows the caller's device scope."""
    with tf.device("/gpu:1"):
        a = tf.constant(1.0)
    with tf.device("/gpu:0"):
        b = tf.constant(2.0)
    with tf.device("/cpu:0"):
        root = tf.group(a, b, name="both")
        single = tf.group(a, name="single")
    assert (root.name, root.device) == ("both", "/device:CPU:0")
    assert [(op.name, op.device) for op in root.control_inputs] == [("both/NoOp", "/device:GPU:0"),
                                                                   ("both/NoOp_1", "/device:GPU:1")]
    assert (single.name, single.device) == ("single", "/device:GPU:1")
    tf.Session().run(root)


def test_group_accepts_nested_lists_and_name():
    a = tf.Variable(0.0)
    ops = [tf.assign_add(a, 1.0), [tf.assign_add(a, 2.0).op]]
    g = tf.group(*ops, name="step")
    assert g.name == "step"
    with tf.Session() as sess:
        sess.run(a.initializer)
        sess.run(g)
        assert sess.run(a) == 3.0


def test_control_dependency_orders_assignments():
    v = tf.Variable(1.0)
    reset = tf.assign(v, 5.0)
    with tf.control_dependencies([reset]):
        inc = tf.assign_add(v, 1.0)
    # the control input lands on the `value` Const made in the block; AssignAdd is pruned (TF does the same)
    assert inc.op.inputs[1].op.control_inputs == [reset.op]
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert sess.run(inc) == 6.0
        assert sess.run(inc) == 6.0
        assert sess.run(v) == 6.0


def test_read_under_control_dependency_sees_the_assignment():
    v = tf.Variable(1.0)
    inc = tf.assign_add(v, 1.0)
    with tf.control_dependencies([inc]):
        r = v.read_value()
    sess = tf.Session()
    sess.run(v.initializer)
    assert sess.run(r) == 2.0 and sess.run(r) == 3.0


def test_identity_of_variable_under_control_dependency_counts_up():
    x = tf.Variable(0.0)
    x_plus_1 = tf.assign_add(x, 1.0)
    with tf.control_dependencies([x_plus_1]):
        y = tf.identity(x)
    sess = tf.Session()
    sess.run(x.initializer)
    assert [float(sess.run(y)) for _ in range(3)] == [1.0, 2.0, 3.0]


def test_read_before_a_dependent_assign_sees_the_old_value():
    v = tf.Variable(1.0)
    old = v.read_value()
    with tf.control_dependencies([old]):
        write = tf.assign(v, 5.0)
    sess = tf.Session()
    sess.run(v.initializer)
    assert sess.run([old, write]) == [1.0, 5.0]


def test_random_uniform_int():
    values = tf.Session().run(tf.random_uniform([200], maxval=10, dtype=tf.int32))
    assert values.dtype == np.int32 and values.min() >= 0 and values.max() < 10 and len(set(values)) > 5
    with pytest.raises(ValueError, match="Must specify maxval"):
        tf.random_uniform([2], dtype=tf.int64)


def test_variable_created_under_control_dependencies_does_not_inherit_them():
    v = tf.Variable(0.0, name="v")
    inc = tf.assign_add(v, 1.0)
    with tf.control_dependencies([inc]):
        w = tf.Variable(0.0, name="w")
    sess = tf.Session()
    sess.run(tf.global_variables_initializer())
    assert sess.run(v) == 0.0 and w.initializer.control_inputs == []


def test_callable_initial_value_joins_the_variables_colocation_group():
    with tf.device("/cpu:0"):
        v = tf.Variable(lambda: tf.ones([2]), name="v")
    init_op = v.initial_value.op
    assert init_op.name.startswith("v/Initializer/") and init_op.colocation_groups() == [b"loc:@v"]
    assert init_op.device == ""


def test_fetched_values_never_alias_variable_state():
    v = tf.Variable([0.0, 0.0])
    c = tf.constant([1.0, 2.0]) + 1.0
    p = tf.placeholder(tf.float32, [2])
    assign_c, assign_p = tf.assign(v, c), tf.assign(v, p)
    sess = tf.Session()
    fetched_c, _ = sess.run([c, assign_c.op])
    fetched_c += 100.0
    np.testing.assert_array_equal(sess.run(v), [2.0, 3.0])
    fed = np.array([5.0, 6.0], np.float32)
    fetched_p, _ = sess.run([p, assign_p.op], {p: fed})
    fetched_p += 100.0
    np.testing.assert_array_equal(sess.run(v), [5.0, 6.0])


def test_feeding_a_variable_replaces_its_value_for_the_step():
    v = tf.Variable(1.0)
    y = v * 2.0
    sess = tf.Session()
    sess.run(v.initializer)
    assert sess.run(y, {v: 10.0}) == 20.0 and sess.run(y) == 2.0


def test_running_an_uninitialized_variable_op_as_a_target_is_fine():
    v = tf.Variable(1.0)
    sess = tf.Session()
    assert sess.run(v.op) is None
    with pytest.raises(tf.errors.FailedPreconditionError, match="uninitialized value Variable"):
        sess.run(v)


def test_variables_are_not_iterable():
    with pytest.raises(TypeError, match="not iterable"):
        list(tf.Variable(tf.zeros([3])))


def test_variable_op_is_a_raw_variable_that_an_assign_initializes():
    from adplace.ops import state_ops
    with tf.Graph().as_default():
        step = state_ops.variable_op([], tf.int32)
        loose = state_ops.variable_op([2], tf.float32, name="loose", set_shape=False)
        assert step.op.type == "VariableV2" and step.dtype == tf.int32._as_ref
        assert step.get_shape().as_list() == [] and loose.get_shape().ndims is None
        assign = state_ops.assign(step, 7)
        with tf.Session() as sess:
            assert sess.run(assign) == 7 and sess.run(step) == 7


# --- synchronization/aggregation, uninitialized-variable reports (TF1 API parity) ----------------------------------

def test_on_read_synchronization_makes_a_variable_non_trainable_unless_asked():
    on_read = tf.VariableSynchronization.ON_READ
    plain = tf.Variable(0.5)
    quiet = tf.Variable(0.5, synchronization=on_read)
    loud = tf.Variable(0.5, synchronization=on_read, trainable=True)
    assert (plain.trainable, quiet.trainable, loud.trainable) == (True, False, True)
    assert quiet.synchronization is on_read
    assert tf.trainable_variables() == [plain, loud]
    assert tf.Variable(0.5).aggregation == tf.VariableAggregation.NONE


def test_aggregation_enums_of_both_versions_compare_and_hash_alike():
    from adplace.ops.variables import VariableAggregationV2
    assert tf.VariableAggregation.ONLY_FIRST_TOWER == VariableAggregationV2.ONLY_FIRST_REPLICA
    assert VariableAggregationV2.MEAN == tf.VariableAggregation.MEAN
    assert hash(tf.VariableAggregation.SUM) == hash(VariableAggregationV2.SUM)
    assert tf.Variable(1.0, aggregation=2).aggregation == tf.VariableAggregation.MEAN
    with pytest.raises(ValueError, match="Invalid variable aggregation mode: 9 for variable: bad"):
        tf.Variable(1.0, aggregation=9, name="bad")


def test_variable_shared_name_and_operator_metadata_follow_tensor():
    v = tf.Variable(3.0, name="counter")
    assert v._shared_name == "counter"
    assert v._distribute_strategy is None
    for attr in ("__module__", "__name__", "__qualname__", "__doc__"):
        assert getattr(tf.Variable.__mul__, attr) == getattr(tf.Tensor.__mul__, attr)
        assert getattr(tf.Variable.__getitem__, attr) == getattr(tf.Tensor.__getitem__, attr)
    with pytest.raises(TypeError, match="not allowed in Graph mode"):
        iter(v)


def test_report_uninitialized_variables_names_what_is_left():
    a = tf.Variable([1, 2], name="a")
    b = tf.Variable([3.0], name="b")
    report = tf.report_uninitialized_variables()
    assert report.op.name.startswith("report_uninitialized_variables/")
    with tf.Session() as sess:
        assert list(sess.run(report)) == [b"a", b"b"]
        sess.run(b.initializer)
        assert list(sess.run(report)) == [b"a"]
        sess.run(a.initializer)
        assert sess.run(report).shape == (0,)
        assert sess.run(tf.report_uninitialized_variables([])).shape == (0,)


def test_assert_variables_initialized_fails_until_every_listed_variable_is():
    assert tf.assert_variables_initialized() is None
    a = tf.Variable([1, 2], name="a")
    b = tf.Variable(5.0, name="b")
    check_a = tf.assert_variables_initialized([a])
    check_all = tf.assert_variables_initialized()
    with tf.Session() as sess:
        with pytest.raises(tf.errors.FailedPreconditionError, match="uninitialized value a"):
            sess.run(check_a)
        sess.run(a.initializer)
        sess.run(check_a)
        with pytest.raises(tf.errors.FailedPreconditionError, match="uninitialized value b"):
            sess.run(check_all)
        sess.run(b.initializer)
        assert list(sess.run(check_all)) == [1, 0]
