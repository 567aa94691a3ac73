"""Tests for adplace.ops.variable_scope: scope names, reuse (True, inherited, AUTO_REUSE), TF's error messages,
default initializers, placement of get_variable under device scopes, and the multi-GPU tower idiom."""
import numpy as np
import pytest

import adplace as tf
from placement_log import CPU0, GPU0, GPU1


def _init_and_run(*fetches):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return sess.run(list(fetches))


# --- names ----------------------------------------------------------------------------------------------------------

def test_nested_scopes_name_variables_and_ops():
    with tf.variable_scope("foo") as foo:
        with tf.variable_scope("bar") as bar:
            v = tf.get_variable("v", [1])
            c = tf.constant(1.0, name="c")
    assert v.name == "foo/bar/v:0"
    assert c.name == "foo/bar/c:0"
    assert (foo.name, bar.name) == ("foo", "foo/bar")
    assert (foo.original_name_scope, bar.original_name_scope) == ("foo/", "foo/bar/")
    assert v.op.type == "VariableV2" and v.shape.as_list() == [1] and v.dtype == tf.float32_ref


def test_variable_names_ignore_name_scopes():
    with tf.name_scope("outer"):
        v = tf.get_variable("v", [2])
        with tf.variable_scope("s"):
            w = tf.get_variable("w", [2])
            c = tf.constant(0.0, name="c")
    assert (v.name, w.name) == ("v:0", "s/w:0")
    assert c.name == "outer/s/c:0"


def test_reopening_a_scope_by_name_gets_a_new_name_scope_but_the_same_variable_scope():
    with tf.variable_scope("foo"):
        tf.get_variable("v", [1])
    with tf.variable_scope("foo", reuse=True) as scope:
        c = tf.constant(1.0, name="c")
        v = tf.get_variable("v", [1])
    assert scope.name == "foo"
    assert c.name == "foo_1/c:0"
    assert v.name == "foo/v:0"


def test_reentering_a_scope_object_keeps_its_name_and_original_name_scope():
    with tf.variable_scope("foo") as foo:
        v = tf.get_variable("v", [1])
    with tf.variable_scope("other"):
        with tf.variable_scope(foo, reuse=True) as again:
            c = tf.constant(1.0, name="c")
            assert tf.get_variable("v", [1]) is v
    assert again.name == "foo"
    assert again.original_name_scope == "foo/"
    assert c.name == "other/foo/c:0"


def test_default_name_is_made_unique_per_scope():
    names = []
    for _ in range(3):
        with tf.variable_scope(None, default_name="layer") as scope:
            names.append((scope.name, tf.get_variable("w", [1]).name))
    with tf.variable_scope("outer"):
        with tf.variable_scope(None, default_name="layer") as inner:
            pass
    assert names == [("layer", "layer/w:0"), ("layer_1", "layer_1/w:0"), ("layer_2", "layer_2/w:0")]
    assert inner.name == "outer/layer"


def test_name_or_scope_and_default_name_errors():
    with pytest.raises(TypeError, match="If default_name is None then name_or_scope is required"):
        tf.variable_scope(None)
    with pytest.raises(TypeError, match="name_or_scope must be a string or VariableScope"):
        tf.variable_scope(3)
    with pytest.raises(ValueError, match="reuse=True cannot be used without a name_or_scope"):
        with tf.variable_scope(None, default_name="d", reuse=True):
            pass
    with pytest.raises(ValueError, match="The reuse parameter must be True or False or None"):
        tf.variable_scope("s", reuse="yes")


def test_scope_state_is_restored_after_an_error():
    with pytest.raises(RuntimeError):
        with tf.variable_scope("broken", reuse=True):
            raise RuntimeError("boom")
    assert tf.get_variable_scope().name == ""
    assert tf.get_variable_scope().reuse is False
    assert tf.get_default_graph().get_name_scope() == ""


# --- reuse ----------------------------------------------------------------------------------------------------------

def test_reuse_true_returns_the_same_variable_object():
    with tf.variable_scope("s"):
        v = tf.get_variable("v", [2, 3])
    with tf.variable_scope("s", reuse=True):
        assert tf.get_variable("v", [2, 3]) is v
        assert tf.get_variable("v") is v  # shape may be omitted when reusing
    assert tf.global_variables() == [v]


def test_reuse_is_inherited_and_false_does_not_turn_it_off():
    with tf.variable_scope("a"):
        with tf.variable_scope("b"):
            v = tf.get_variable("v", [1])
    with tf.variable_scope("a", reuse=True):
        with tf.variable_scope("b", reuse=False) as inner:
            assert inner.reuse is True
            assert tf.get_variable("v", [1]) is v


def test_auto_reuse_creates_then_reuses():
    def make():
        with tf.variable_scope("shared", reuse=tf.AUTO_REUSE):
            return tf.get_variable("w", [3])
    first, second = make(), make()
    assert first is second
    assert [v.name for v in tf.global_variables()] == ["shared/w:0"]
    with tf.variable_scope("shared", reuse=tf.AUTO_REUSE) as scope:
        assert scope.reuse is tf.AUTO_REUSE


def test_reuse_variables_on_the_current_scope():
    with tf.variable_scope("model") as scope:
        v = tf.get_variable("v", [1])
        scope.reuse_variables()
        assert tf.get_variable_scope().reuse is True
        assert tf.get_variable("v", [1]) is v


def test_existing_variable_without_reuse_is_an_error():
    tf.get_variable("w", [3, 1])
    with pytest.raises(ValueError) as info:
        tf.get_variable("w", [3, 1])
    assert str(info.value) == ("Variable w already exists, disallowed. Did you mean to set reuse=True or "
                               "reuse=tf.AUTO_REUSE in VarScope?")


def test_reusing_a_missing_variable_is_an_error():
    with tf.variable_scope(tf.get_variable_scope(), reuse=True):
        with pytest.raises(ValueError) as info:
            tf.get_variable("w", [3, 1])
    assert str(info.value) == ("Variable w does not exist, or was not created with tf.get_variable(). Did you mean "
                               "to set reuse=tf.AUTO_REUSE in VarScope?")


def test_shape_and_dtype_mismatch_on_reuse():
    tf.get_variable("w", shape=[3, 1])
    with tf.variable_scope(tf.get_variable_scope(), reuse=True):
        with pytest.raises(ValueError) as info:
            tf.get_variable("w", shape=[2])
        assert str(info.value) == "Trying to share variable w, but specified shape (2,) and found shape (3, 1)."
        with pytest.raises(ValueError, match="Trying to share variable w, but specified dtype float64 and found "
                                             "dtype float32"):
            tf.get_variable("w", shape=[3, 1], dtype=tf.float64)


def test_tf_variable_is_not_visible_to_get_variable():
    tf.Variable(1.0, name="v")
    with tf.variable_scope(tf.get_variable_scope(), reuse=True):
        with pytest.raises(ValueError, match="Variable v does not exist, or was not created with tf.get_variable"):
            tf.get_variable("v", [])


# --- initializers ---------------------------------------------------------------------------------------------------

def test_missing_shape_with_an_initializer_instance_is_an_error():
    with pytest.raises(ValueError) as info:
        tf.get_variable("w", initializer=tf.zeros_initializer())
    assert str(info.value) == ("The initializer passed is not valid. It should be a callable with no arguments and "
                               "the shape should not be provided or an instance of `tf.keras.initializers.*' and "
                               "`shape` should be fully defined.")
    with pytest.raises(ValueError, match="The initializer passed is not valid"):
        tf.get_variable("w2", shape=[None, 3])


def test_initializer_forms_and_values():
    a = tf.get_variable("a", shape=[2, 2], initializer=tf.constant_initializer(3.0))
    b = tf.get_variable("b", initializer=tf.constant([[1.0, 2.0]]))  # a value: its shape becomes the variable's
    c = tf.get_variable("c", initializer=lambda: tf.ones([3]))      # a callable taking no arguments
    d = tf.get_variable("d", shape=[2], initializer=tf.ones_initializer)  # an initializer class is instantiated
    e = tf.get_variable("e", initializer=4, dtype=tf.int32)
    assert (b.shape.as_list(), c.shape.as_list(), e.dtype) == ([1, 2], [3], tf.int32_ref)
    va, vb, vc, vd, ve = _init_and_run(a, b, c, d, e)
    np.testing.assert_array_equal(va, np.full((2, 2), 3.0))
    np.testing.assert_array_equal(vb, [[1.0, 2.0]])
    np.testing.assert_array_equal(vc, np.ones(3))
    np.testing.assert_array_equal(vd, np.ones(2))
    assert ve == 4


def test_constant_initializer_errors():
    with pytest.raises(ValueError, match="If initializer is a constant, do not specify shape."):
        tf.get_variable("x", shape=[2], initializer=[1.0, 2.0])
    with pytest.raises(ValueError, match="Initializer type '<dtype: 'int32'>' and explicit dtype '<dtype: 'float32'>' don't match."):
        tf.get_variable("y", initializer=4, dtype=tf.float32)


def test_default_initializers_glorot_for_floats_zeros_for_ints():
    w = tf.get_variable("w", shape=[40, 60])
    n = tf.get_variable("n", shape=[5], dtype=tf.int32)
    flag = tf.get_variable("flag", shape=[2], dtype=tf.bool)
    ops = {op.name: op.type for op in tf.get_default_graph().get_operations()}
    assert ops["w/Initializer/random_uniform/RandomUniform"] == "RandomUniform"
    assert "n/Initializer/zeros" in ops
    vw, vn, vflag = _init_and_run(w, n, flag)
    limit = np.sqrt(6.0 / (40 + 60))
    assert np.all(np.abs(vw) <= limit) and vw.std() > 0.8 * limit / np.sqrt(3)
    np.testing.assert_array_equal(vn, np.zeros(5))
    np.testing.assert_array_equal(vflag, [False, False])
    with pytest.raises(ValueError, match="An initializer for variable c of <dtype: 'complex64'> is required"):
        tf.get_variable("c", shape=[1], dtype=tf.complex64)


def test_scope_initializer_and_dtype_are_inherited():
    with tf.variable_scope("s", initializer=tf.constant_initializer(7.0), dtype=tf.float64):
        with tf.variable_scope("inner"):
            v = tf.get_variable("v", [2])
            w = tf.get_variable("w", [2], initializer=tf.zeros_initializer())
    assert v.dtype == tf.float64_ref
    vv, vw = _init_and_run(v, w)
    np.testing.assert_array_equal(vv, [7.0, 7.0])
    np.testing.assert_array_equal(vw, [0.0, 0.0])


def test_initializer_ops_are_colocated_with_the_variable_and_ignore_control_dependencies():
    gate = tf.no_op(name="gate")
    with tf.control_dependencies([gate]):
        v = tf.get_variable("v", [2])
    init_ops = [op for op in tf.get_default_graph().get_operations() if op.name.startswith("v/Initializer/")]
    assert init_ops and all(op.colocation_groups() == [b"loc:@v"] for op in init_ops)
    assert all(gate not in op.control_inputs for op in init_ops + [v.op, v.initializer])


# --- collections, regularizers, custom getters -----------------------------------------------------------------------

def test_trainable_and_collections():
    t = tf.get_variable("t", [1])
    frozen = tf.get_variable("frozen", [1], trainable=False)
    local = tf.get_local_variable("local", [1])
    assert tf.trainable_variables() == [t]
    assert tf.global_variables() == [t, frozen]
    assert tf.local_variables() == [local]


def test_scope_collection_helpers():
    with tf.variable_scope("net") as net:
        a = tf.get_variable("a", [1])
        b = tf.get_variable("b", [1], trainable=False)
    tf.get_variable("netx", [1])
    assert net.global_variables() == [a, b]
    assert net.trainable_variables() == [a]


def test_regularizer_adds_a_loss_in_the_variable_scope():
    with tf.variable_scope("s", regularizer=lambda v: tf.reduce_sum(tf.square(v))):
        w = tf.get_variable("w", initializer=tf.constant([1.0, 2.0]))
    losses = tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)
    assert len(losses) == 1 and losses[0].op.name.startswith("s/w/Regularizer/")
    with tf.Session() as sess:
        sess.run(w.initializer)
        assert sess.run(losses[0]) == 5.0


def test_custom_getters_nest_outer_first():
    calls = []

    def getter(tag):
        def custom(getter, name, *args, **kwargs):
            calls.append((tag, name))
            return getter(name, *args, **kwargs)
        return custom
    with tf.variable_scope("outer", custom_getter=getter("outer")):
        with tf.variable_scope("inner", custom_getter=getter("inner")):
            v = tf.get_variable("v", [1])
    assert v.name == "outer/inner/v:0"
    assert calls == [("inner", "outer/inner/v"), ("outer", "outer/inner/v")]


def test_variable_scope_uses_the_graph_of_its_values():
    other = tf.Graph()
    with other.as_default():
        x = tf.constant(1.0)
    with tf.variable_scope("s", values=[x]):
        v = tf.get_variable("v", [1])
    assert v.graph is other
    assert tf.get_default_graph().get_operations() == []


# --- devices ----------------------------------------------------------------------------------------------------------

def test_get_variable_is_placed_by_the_device_scope_active_at_the_call(gpus):
    with tf.device("/gpu:1"):
        v = tf.get_variable("v", [2])
    with tf.device(tf.assign_to_device("/gpu:0")):
        w = tf.get_variable("w", [2])
        y = w * 2.0
    assert v.device == "/device:GPU:1"
    assert w.device == "/device:CPU:0"
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.placement(v) == GPU1
        assert sess.placement(v.initializer) == GPU1
        assert sess.placement(v.initial_value) == GPU1  # the initializer's ops are colocated with the variable
        assert sess.placement(w) == CPU0
        assert sess.placement(y) == GPU0


def test_tower_loop_shares_one_variable_across_gpus(gpus):
    towers = []
    for i in range(2):
        with tf.device(f"/gpu:{i}"):
            with tf.variable_scope(tf.get_variable_scope(), reuse=i > 0):
                w = tf.get_variable("w", shape=[3, 1])
                towers.append((w, tf.matmul(tf.ones([2, 3]), w)))
    (w0, y0), (w1, y1) = towers
    assert w0 is w1
    assert [v.name for v in tf.global_variables()] == ["w:0"]
    assert tf.get_variable_scope().reuse is False  # the root scope is unchanged after the loop
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        vw, v0, v1 = sess.run([w0, y0, y1])
        np.testing.assert_allclose(v0, np.ones((2, 3)) @ vw, rtol=1e-6)
        np.testing.assert_allclose(v1, v0)
        assert sess.placement(w0) == GPU0
        assert (sess.placement(y0), sess.placement(y1)) == (GPU0, GPU1)


def test_tower_loop_with_name_scopes_and_reuse_variables(gpus):
    outputs = []
    with tf.variable_scope(tf.get_variable_scope()):
        for i in range(2):
            with tf.device(f"/gpu:{i}"), tf.name_scope(f"tower_{i}"):
                w = tf.get_variable("w", initializer=tf.constant([2.0]))
                outputs.append(tf.multiply(w, float(i + 1), name="y"))
                tf.get_variable_scope().reuse_variables()
    assert [v.name for v in tf.global_variables()] == ["w:0"]
    assert [o.name for o in outputs] == ["tower_0/y:0", "tower_1/y:0"]
    np.testing.assert_array_equal(_init_and_run(*outputs), [[2.0], [4.0]])


# --- TF's argument checks and custom getters -----------------------------------------------------------------------

def test_variable_constraint_must_be_callable_and_is_kept():
    with pytest.raises(ValueError, match=r"^The `constraint` argument must be a callable.$"):
        tf.Variable(1.0, constraint=3)
    clip = lambda x: tf.clip_by_value(x, 0.0, 1.0)  # noqa: E731
    assert tf.Variable(1.0, constraint=clip).constraint is clip
    assert tf.Variable(1.0).constraint is None
    with pytest.raises(ValueError, match="collections argument to Variable constructor must be a list, tuple, or set"):
        tf.Variable(1.0, collections="my_vars")
    assert len(tf.global_variables()) == 2  # the failed calls added no variable


def test_non_callable_custom_getter_fails_in_get_variable():
    with pytest.raises(ValueError, match=r"^Passed a custom_getter which is not callable: 3$"):
        with tf.variable_scope("scope0", custom_getter=3):
            tf.get_variable("name0", [1])
    with pytest.raises(ValueError, match="custom_getter .* not callable:"):
        tf.get_variable("name1", [1], custom_getter=3)
    assert tf.global_variables() == []


def test_custom_getter_is_kept_on_reentry_and_sees_reuse():
    calls = []

    def getter(getter, name, *args, **kwargs):
        calls.append((name, kwargs["reuse"]))
        return getter(name, *args, **kwargs)

    with tf.variable_scope("s", custom_getter=getter) as scope:
        v = tf.get_variable("v", [1])
    with tf.variable_scope(scope, reuse=True):
        v2 = tf.get_variable("v", [1])
    with tf.variable_scope("plain") as plain:
        w = tf.get_variable("w", [1])
    with tf.variable_scope(plain, reuse=True, custom_getter=getter):
        w2 = tf.get_variable("w", [1])
    assert v is v2 and w is w2
    assert calls == [("s/v", False), ("s/v", True), ("plain/w", True)]


def test_nested_custom_getters_compose_outer_around_inner():
    def suffix(tag):
        def getter(getter, name, *args, **kwargs):
            return getter(f"{name}/{tag}", *args, **kwargs)
        return getter

    with tf.variable_scope("outer", custom_getter=suffix("o")):
        with tf.variable_scope("inner", custom_getter=suffix("i")):
            v = tf.get_variable("v", [1])
    assert v.name == "outer/inner/v/i/o:0"  # the inner getter runs first and calls the outer one


# --- synchronization, no_regularizer, nesting checks, creator scopes (TF1 API parity) ------------------------------

def test_get_variable_on_read_is_non_trainable_and_custom_getters_see_enums():
    seen = []

    def watch(getter, *args, **kwargs):
        seen.append((kwargs["synchronization"], kwargs["aggregation"]))
        return getter(*args, **kwargs)

    with tf.variable_scope("s", custom_getter=watch):
        tf.get_variable("a", [])
        quiet = tf.get_variable("b", [], synchronization=tf.VariableSynchronization.ON_READ, aggregation=1)
    assert seen == [(tf.VariableSynchronization.AUTO, tf.VariableAggregation.NONE),
                    (tf.VariableSynchronization.ON_READ, tf.VariableAggregation.SUM)]
    assert [v.name for v in tf.trainable_variables()] == ["s/a:0"]
    assert quiet.aggregation == tf.VariableAggregation.SUM


def test_no_regularizer_switches_off_the_scope_regularizer():
    from adplace.ops.variable_scope import no_regularizer
    with tf.variable_scope("r", regularizer=lambda v: tf.reduce_sum(v)):
        tf.get_variable("kept", [2])
        tf.get_variable("free", [2], regularizer=no_regularizer)
        with tf.variable_scope("inner", regularizer=no_regularizer):
            tf.get_variable("free_too", [2])
    losses = tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)
    assert [loss.op.name for loss in losses] == ["r/kept/Regularizer/Sum"]


def test_exiting_a_variable_scope_out_of_order_raises_and_changes_nothing():
    outer = tf.variable_scope("outer")
    outer.__enter__()
    with tf.variable_scope("inner"):
        with pytest.raises(RuntimeError, match="Improper nesting of variable_scope"):
            outer.__exit__(None, None, None)
        assert tf.get_variable_scope().name == "outer/inner"
    outer.__exit__(None, None, None)
    assert tf.get_variable_scope().name == ""


def test_get_local_variable_takes_get_variable_arguments():
    import inspect
    from adplace.ops.variable_scope import get_local_variable
    assert list(inspect.signature(get_local_variable).parameters) == list(inspect.signature(tf.get_variable).parameters)
    v = get_local_variable("counter", [], dtype=tf.int32, validate_shape=False)
    assert v in tf.local_variables() and v not in tf.trainable_variables()


def test_variable_creator_scope_runs_innermost_creator_first():
    from adplace.ops.variable_scope import variable_creator_scope
    names = []

    def record(next_creator, **kwargs):
        names.append(kwargs["name"])
        return next_creator(**kwargs)

    def rename(next_creator, **kwargs):
        kwargs["name"] = "forced"
        return next_creator(**kwargs)

    with variable_creator_scope(record), variable_creator_scope(rename):
        v = tf.Variable(2.0, name="mine")
        w = tf.get_variable("got", [], synchronization=tf.VariableSynchronization.ON_WRITE)
    assert names == ["forced", "forced"]
    assert (v.name, w.name) == ("forced:0", "forced_1:0")
    assert tf.Variable(1.0, name="plain").name == "plain:0"


def test_variable_creator_scopes_must_exit_in_order():
    from adplace.ops.variable_scope import variable_creator_scope
    outer = variable_creator_scope(lambda next_creator, **kwargs: next_creator(**kwargs))
    outer.__enter__()
    with variable_creator_scope(lambda next_creator, **kwargs: next_creator(**kwargs)):
        with pytest.raises(RuntimeError, match="without proper nesting"):
            outer.__exit__(None, None, None)


def test_a_scalar_variable_ignores_the_scope_partitioner():
    with tf.variable_scope("p", partitioner=lambda shape, **_: [2] + [1] * (len(shape) - 1)):
        v = tf.get_variable("scalar", shape=[])
        vector = tf.get_variable("vector", shape=[4])
    assert v.name == "p/scalar:0" and v.shape.as_list() == []
    assert isinstance(vector, tf.PartitionedVariable) and [p.name for p in vector] == ["p/vector/part_0:0",
                                                                                        "p/vector/part_1:0"]
